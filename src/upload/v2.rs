//! sym-upload-v2 (Google's crash server): `checkStatus`, then `uploads:create`, a PUT of
//! the file to the URL it returns, and `:complete`. A file the server reports `FOUND` is
//! not sent again.

use std::time::Instant;

use serde_json::{Value, json};

use super::{Sent, Session, SymbolFile, UploadError, Uploader, bad_answer, refused, unreachable};
use crate::fetch::http::{self, Outcome};

pub(super) fn send(run: &Session, f: &SymbolFile) -> Result<Sent, UploadError> {
    let (up, agent) = (run.up, &run.agent);
    let deadline = Some(run.deadline);
    up.fits("the file", f.len()?)?;
    if has(up, agent, deadline, &f.name, &f.debug_id)? {
        return Ok(Sent::AlreadyThere);
    }
    let key = up.token.as_deref().unwrap_or("");
    // A base URL: the API paths follow it.
    let base = up.url.trim_end_matches('/');

    let create = format!("{base}/v1/uploads:create");
    let created = json_of(
        up,
        &create,
        http::with_retries(up.retries, &create, deadline, || {
            http::prepared(agent.post(&create), &create, Some(run.left()))
                .query("key", key)
                .send_empty()
                .map_err(Box::new)
        }),
    )?;
    let (Some(put_url), Some(upload_key)) =
        (created["uploadUrl"].as_str(), created["uploadKey"].as_str())
    else {
        return Err(bad_answer(
            &create,
            format!("the answer has no uploadUrl and uploadKey: {created}"),
        ));
    };
    // A presigned URL carries its signature: never printed.
    crate::fetch::redact::url_with_secrets(put_url);

    let len = f.len()?;
    let put = http::with_retries(up.retries, put_url, deadline, || {
        let mut file = std::fs::File::open(&f.path).map_err(|e| Box::new(ureq::Error::from(e)))?;
        // The upload URL's own credentials, if any: never the API server's.
        http::prepared(agent.put(put_url), put_url, Some(run.left()))
            .header("Content-Length", &len.to_string())
            .send(ureq::SendBody::from_reader(&mut file))
            .map_err(Box::new)
    });
    match put {
        Outcome::Ok(_) => {}
        Outcome::Status(code, body) => return Err(refused(put_url, code, &body)),
        Outcome::Unreachable(e) => return Err(unreachable(put_url, e)),
    }

    let complete = format!(
        "{base}/v1/uploads/{}:complete",
        crate::fetch::encode_segment(upload_key)
    );
    let body = json!({
        "symbol_id": {"debug_file": f.name, "debug_id": f.debug_id},
        "symbol_upload_type": "BREAKPAD",
    });
    let done = json_of(
        up,
        &complete,
        http::with_retries(up.retries, &complete, deadline, || {
            http::prepared(agent.post(&complete), &complete, Some(run.left()))
                .query("key", key)
                .header("Content-Type", "application/json")
                .send(body.to_string())
                .map_err(Box::new)
        }),
    )?;
    match done["result"].as_str() {
        Some("OK") => Ok(Sent::Uploaded),
        Some("DUPLICATE_DATA") => Ok(Sent::AlreadyThere),
        _ => Err(bad_answer(&complete, format!("unexpected answer {done}"))),
    }
}

/// Whether the server has the symbol file of module `name`, `debug_id` (`checkStatus`
/// answers `FOUND`), asked by `deadline` when there is one.
pub(super) fn has(
    up: &Uploader,
    agent: &ureq::Agent,
    deadline: Option<Instant>,
    name: &str,
    debug_id: &str,
) -> Result<bool, UploadError> {
    let key = up.token.as_deref().unwrap_or("");
    let base = up.url.trim_end_matches('/');
    let check = format!(
        "{base}/v1/symbols/{}/{}:checkStatus",
        crate::fetch::encode_segment(name),
        crate::fetch::encode_segment(debug_id)
    );
    let status = json_of(
        up,
        &check,
        http::with_retries(up.retries, &check, deadline, || {
            let left = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            http::prepared(agent.get(&check), &check, left)
                .query("key", key)
                .call()
                .map_err(Box::new)
        }),
    )?;
    Ok(status["status"] == "FOUND")
}

/// The JSON answer of a request (at most 1 MiB, within the upload's time-out), or the
/// error it became. A server that drips its answer is given up on for the run, as one
/// that drips a download is: every other file would wait as long again.
fn json_of(up: &Uploader, url: &str, outcome: Outcome) -> Result<Value, UploadError> {
    match outcome {
        Outcome::Ok(r) => {
            let body = http::read_body(*r, 1 << 20, up.timeout).map_err(|e| {
                http::give_up_on(url, "it stalled");
                unreachable(url, e)
            })?;
            let text = String::from_utf8_lossy(&body);
            serde_json::from_str(&text)
                .map_err(|e| bad_answer(url, format!("not JSON ({e}): {text}")))
        }
        Outcome::Status(code, body) => Err(refused(url, code, &body)),
        Outcome::Unreachable(e) => Err(unreachable(url, e)),
    }
}
