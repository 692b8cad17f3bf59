//! sym-upload-v1: one multipart POST per file, the fields Breakpad's `sym_upload` sends
//! in its order. Success is 200.

use super::multipart::Form;
use super::{Sent, SymbolFile, Uploader, refused};
use crate::fetch::http::{self, Outcome};

pub(super) fn send(up: &Uploader, agent: &ureq::Agent, f: &SymbolFile) -> Result<Sent, String> {
    let mut form = Form::new(&f.store_path());
    form.text("code_file", &f.name);
    form.text("cpu", &f.cpu);
    form.text("debug_file", &f.name);
    form.text("debug_identifier", &f.debug_id);
    form.text("os", &f.os);
    let filename = format!("{}.sym", f.name);
    let outcome = http::with_retries(up.retries, || {
        let (len, body) = form
            .with_file(
                "symbol_file",
                &filename,
                "application/octet-stream",
                &f.path,
            )
            .map_err(|e| Box::new(ureq::Error::from(e)))?;
        agent
            .post(&up.url)
            .set("Content-Type", &form.content_type())
            .set("Content-Length", &len.to_string())
            .send(body)
            .map_err(Box::new)
    });
    match outcome {
        Outcome::Ok(r) if r.status() == 200 => Ok(Sent::Uploaded),
        Outcome::Ok(r) => Err(refused(&up.url, r.status(), "")),
        Outcome::Status(code, body) => Err(refused(&up.url, code, &body)),
        Outcome::Unreachable(e) => Err(format!("{}: {e}", up.url)),
    }
}
