//! What the fetchers share that is not the network: the names they send, how a download
//! ends, how a file is checked, and the caches' rule for a file that fails its check.
//! The same with or without the `net` feature.

use std::path::Path;

use crate::error::NotTheFile;

/// The user agent of our own requests.
pub(crate) const OUR_AGENT: &str = concat!("dumpsyms/", env!("CARGO_PKG_VERSION"));

/// The user agent Microsoft's symbol client (symsrv.dll) sends, which symbol servers
/// expect (some answer other agents differently, or not at all).
pub(crate) const SYMSRV_AGENT: &str = "Microsoft-Symbol-Server/10.0.0.0";

/// What a download did.
// Without `net`, every download fails (`offline.rs`).
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub(crate) enum Download {
    /// Saved at the target path, and verified.
    Saved,
    /// The server does not have it (404).
    Missing,
    /// Why it could not be had: a failing or unreachable server, a file that is not
    /// what was asked for, or a cache that cannot be written. One line, for a warning.
    Failed(String),
}

/// Why a request gave no answer to use (a download's failures are [`Download`]'s).
#[derive(Debug, thiserror::Error)]
// Without `net`, every request is `Offline`.
#[cfg_attr(not(feature = "net"), allow(dead_code))]
pub(crate) enum HttpError {
    /// An answer other than the one wanted, and the first line of its body when asked
    /// for (an empty body quoted as nothing).
    #[error("answered {code}{}", line.as_ref().map(|l| format!(": {l}")).unwrap_or_default())]
    Answered { code: u16, line: Option<String> },
    /// The transport's words (redacted), or why the server is not asked.
    #[error("unreachable: {0}")]
    Unreachable(String),
    #[error("the answer was not sent within {:.0} s", .0.as_secs_f64())]
    NotInTime(std::time::Duration),
    #[error("the answer broke off: {0}")]
    BrokeOff(#[source] std::io::Error),
    #[error("the answer is not text")]
    NotText,
    #[error("this build of dumpsyms has no network support (the `net` feature)")]
    #[cfg_attr(feature = "net", allow(dead_code))]
    Offline,
}

/// A check of a downloaded (or cached) file: `Err` says what it is instead.
pub(crate) type Verify<'a> = &'a dyn Fn(&Path) -> Result<(), NotTheFile>;

/// A cached file that `verify` rejects is removed, so that it is fetched again rather
/// than trusted on every later run; true when the cached file is good.
pub(crate) fn cached_is_good(path: &Path, verify: Verify) -> bool {
    if !path.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
        return false;
    }
    match verify(path) {
        Ok(()) => true,
        Err(_) => {
            let _ = std::fs::remove_file(path);
            false
        }
    }
}

/// The first line of `s`, at most 200 bytes: what a message quotes of a server's answer.
pub(crate) fn first_line(s: &str) -> &str {
    let line = s.lines().next().unwrap_or("");
    let mut end = line.len().min(200);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    &line[..end]
}
