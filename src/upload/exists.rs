//! Asking symbol servers whether they already have a module, before dumping it
//! (`--skip-existing` with `--upload` or `--symbols-url`): CI runners start with an
//! empty store, so a local check skipped nothing there and every build dumped every
//! system and third-party library again. sym-upload-v2 answers `checkStatus`; Tecken's
//! download API and a plain static store answer a HEAD of the file's store path.

use std::sync::Mutex;

use super::{Protocol, Uploader, v2};
use crate::error::Warning;
use crate::error::WarningKind;
use crate::fetch::http;

/// The servers to ask, and which of them failed (told once, then not asked again).
pub struct Remote {
    /// The uploader, when its protocol can answer (sym-upload-v2).
    check_status: Option<Uploader>,
    /// Base URLs serving the store layout (`<base>/<name>/<id>/<name>.sym`).
    bases: Vec<String>,
    agent: ureq::Agent,
    failed: Mutex<Vec<String>>,
}

impl Remote {
    /// The servers that can say what they have: `uploader` when it speaks
    /// sym-upload-v2, and each of `bases`. `None` when there is none to ask.
    pub fn new(uploader: Option<&Uploader>, bases: &[String]) -> Option<Remote> {
        let timeout = uploader.map_or(crate::fetch::Limits::default().timeout, |u| {
            u.timeout.min(crate::fetch::Limits::default().timeout)
        });
        // The question is a lookup, not an upload: its answer is read within the
        // lookups' time-out, not the upload's (a dripped `checkStatus` held a run 60 s).
        let check_status = uploader
            .filter(|u| u.protocol == Protocol::SymUploadV2)
            .cloned()
            .map(|mut u| {
                u.timeout = timeout;
                u
            });
        if check_status.is_none() && bases.is_empty() {
            return None;
        }
        Some(Remote {
            check_status,
            bases: bases
                .iter()
                .map(|b| b.trim_end_matches('/').to_string())
                .collect(),
            agent: http::agent(timeout),
            failed: Mutex::new(Vec::new()),
        })
    }

    /// Whether a server has the symbol file of module `name` with `debug_id`. A server
    /// that cannot answer counts as not having it (the module is dumped); `tell` hears
    /// why, once per server.
    pub fn has(&self, name: &str, debug_id: &str, tell: &dyn Fn(&Warning)) -> bool {
        if let Some(up) = &self.check_status {
            let what = format!("{} (checkStatus)", crate::fetch::redact::url(&up.url));
            if !self.given_up(&what) {
                match v2::has(up, &self.agent, None, name, debug_id) {
                    Ok(true) => return true,
                    Ok(false) => {}
                    Err(e) => self.fail(&what, &e, tell),
                }
            }
        }
        let path = crate::breakpad::store::relative_path(name, debug_id);
        for base in &self.bases {
            if self.given_up(base) {
                continue;
            }
            let segments: Vec<String> = path.split('/').map(crate::fetch::encode_segment).collect();
            let url = format!("{base}/{}", segments.join("/"));
            match http::exists(&self.agent, 1, &url) {
                Ok(true) => return true,
                Ok(false) => {}
                Err(e) => self.fail(
                    &crate::fetch::redact::url(base),
                    &format!("{}: {e}", crate::fetch::redact::url(&url)),
                    tell,
                ),
            }
        }
        false
    }

    fn given_up(&self, server: &str) -> bool {
        let server = crate::fetch::redact::url(server);
        let failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        failed.iter().any(|f| *f == server)
    }

    fn fail(&self, server: &str, why: &dyn std::fmt::Display, tell: &dyn Fn(&Warning)) {
        let mut failed = self.failed.lock().unwrap_or_else(|e| e.into_inner());
        if !failed.iter().any(|f| f == server) {
            failed.push(server.to_string());
            let message =
                format!("cannot ask {server} what it has, so its modules are dumped: {why}");
            tell(&Warning::new(WarningKind::Server, message).on(server));
        }
    }
}
