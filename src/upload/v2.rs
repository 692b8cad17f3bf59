//! sym-upload-v2 (Google's crash server): `checkStatus`, then `uploads:create`, a PUT of
//! the file to the URL it returns, and `:complete`. A file the server reports `FOUND` is
//! not sent again.

use serde_json::{Value, json};

use super::{Sent, SymbolFile, UploadError, Uploader, bad_answer, refused, unreachable};
use crate::fetch::http::{self, Outcome};

pub(super) fn send(
    up: &Uploader,
    agent: &ureq::Agent,
    f: &SymbolFile,
) -> Result<Sent, UploadError> {
    up.fits("the file", f.len()?)?;
    if has(up, agent, &f.name, &f.debug_id)? {
        return Ok(Sent::AlreadyThere);
    }
    let key = up.token.as_deref().unwrap_or("");
    // A base URL: the API paths follow it.
    let base = up.url.trim_end_matches('/');

    let create = format!("{base}/v1/uploads:create");
    let created = json_of(
        up,
        &create,
        http::with_retries(up.retries, &create, || {
            agent
                .post(&create)
                .query("key", key)
                .send_bytes(&[])
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

    let len = f.len()?;
    let put = http::with_retries(up.retries, put_url, || {
        let file = std::fs::File::open(&f.path).map_err(|e| Box::new(ureq::Error::from(e)))?;
        agent
            .put(put_url)
            .set("Content-Length", &len.to_string())
            .send(file)
            .map_err(Box::new)
    });
    match put {
        Outcome::Ok(_) => {}
        Outcome::Status(code, body) => return Err(refused(put_url, code, &body)),
        Outcome::Unreachable(e) => return Err(unreachable(put_url, e)),
    }

    let complete = format!("{base}/v1/uploads/{}:complete", encode(upload_key));
    let body = json!({
        "symbol_id": {"debug_file": f.name, "debug_id": f.debug_id},
        "symbol_upload_type": "BREAKPAD",
    });
    let done = json_of(
        up,
        &complete,
        http::with_retries(up.retries, &complete, || {
            agent
                .post(&complete)
                .query("key", key)
                .set("Content-Type", "application/json")
                .send_string(&body.to_string())
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
/// answers `FOUND`).
pub(super) fn has(
    up: &Uploader,
    agent: &ureq::Agent,
    name: &str,
    debug_id: &str,
) -> Result<bool, UploadError> {
    let key = up.token.as_deref().unwrap_or("");
    let base = up.url.trim_end_matches('/');
    let check = format!("{base}/v1/symbols/{}/{debug_id}:checkStatus", encode(name));
    let status = json_of(
        up,
        &check,
        http::with_retries(up.retries, &check, || {
            agent.get(&check).query("key", key).call().map_err(Box::new)
        }),
    )?;
    Ok(status["status"] == "FOUND")
}

/// The JSON answer of a request (at most 1 MiB, within the upload's time-out), or the
/// error it became.
fn json_of(up: &Uploader, url: &str, outcome: Outcome) -> Result<Value, UploadError> {
    match outcome {
        Outcome::Ok(r) => {
            let body = http::read_body(*r, 1 << 20, up.timeout).map_err(|e| unreachable(url, e))?;
            let text = String::from_utf8_lossy(&body);
            serde_json::from_str(&text)
                .map_err(|e| bad_answer(url, format!("not JSON ({e}): {text}")))
        }
        Outcome::Status(code, body) => Err(refused(url, code, &body)),
        Outcome::Unreachable(e) => Err(unreachable(url, e)),
    }
}

/// Percent-encodes a path segment (module names may hold spaces and the like).
pub(super) fn encode(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
