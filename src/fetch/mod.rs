//! The network: fetching debug files from debuginfod servers and PDBs from symbol
//! servers. Everything that talks HTTP lives here, so that the rest of the dumper reads
//! only local files. Without the `net` feature the same fetchers read their local
//! stores and caches, and a server is one that cannot be used (`offline.rs`).

#[cfg(feature = "net")]
pub(crate) mod cab;
pub mod debuginfod;
#[cfg(feature = "net")]
pub(crate) mod http;
mod local;
// The fetchers call one transport whichever the build has.
#[cfg(not(feature = "net"))]
#[path = "offline.rs"]
pub(crate) mod http;
pub(crate) mod redact;
pub mod symbols;
pub mod symsrv;

use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Warning, WarningKind};
use crate::untrusted::{UnsafeName, path_component};

/// `segment` as one path segment of a request: every byte but the unreserved ones
/// percent-encoded, `%` included, so that a server decodes it back to the name itself:
/// a module named `%2e%2e%2fx.pdb` (report and `--missing` names come from crash
/// reports) must not reach a server as `../x.pdb`, and a `#` or `?` must not cut the
/// request short.
pub(crate) fn encode_segment(segment: &str) -> String {
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

/// `name` if it can be one segment of a request and of a cache path: a safe path
/// component as written and also once percent-decoded (a server or proxy that decodes
/// twice must not see `..` or a separator either).
pub(crate) fn request_segment<'a>(
    name: &'a str,
    what: &'static str,
) -> Result<&'a str, UnsafeName> {
    path_component(name, what)?;
    let decoded = redact::percent_decoded(name);
    if decoded != name {
        path_component(&decoded, what).map_err(|e| UnsafeName {
            name: name.to_string(),
            ..e
        })?;
    }
    Ok(name)
}

/// What a lookup did, on any kind of server: the file, or where it was asked for and
/// what went wrong.
#[derive(Debug, Default)]
pub(crate) struct Fetched {
    /// The file, in the local cache.
    pub path: Option<PathBuf>,
    /// Every place asked (servers, caches, stores), for "where it was looked for".
    pub asked: Vec<String>,
    /// One warning ([`WarningKind::Server`]) per server that could not be used (down,
    /// failing).
    pub problems: Vec<Warning>,
}

impl Fetched {
    /// Records a server that could not be used.
    pub(crate) fn failed(&mut self, why: impl Into<String>) {
        self.problems.push(Warning::new(WarningKind::Server, why));
    }
}

/// How long and how much one download may take, with elfutils' meanings
/// (`DEBUGINFOD_TIMEOUT`, `DEBUGINFOD_MAXTIME`, `DEBUGINFOD_MAXSIZE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Without progress: no answer, or less than 100 bytes a second on average,
    /// for this long gives up on the server for the rest of the run (a retry would only
    /// cost as much again).
    pub timeout: Duration,
    /// The whole download, when set.
    pub max_time: Option<Duration>,
    /// The file's size: a larger one is refused (by its `Content-Length` before any of
    /// it is read, else when it grows past it).
    pub max_size: u64,
}

/// Bytes a second a server must average over each [`Limits::timeout`] to count as making
/// progress, as elfutils' client sets curl's low-speed limit: a server dripping 100
/// bytes every 9 s held a run for as long as it liked under a per-window byte count.
#[cfg(feature = "net")]
pub(crate) const MIN_RATE: u64 = 100;

/// Connecting gives up after this long (or the timeout, if shorter): a server that does
/// not even accept the connection is not coming back in the next minute.
#[cfg(feature = "net")]
pub(crate) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

impl Default for Limits {
    /// 10 s without progress (elfutils waits 90 s, which, with retries, kept a run
    /// waiting 4.5 minutes on a dead server), no limit on the whole time, 4 GiB: more
    /// than the largest debug files and PDBs of real products.
    fn default() -> Self {
        Limits {
            timeout: Duration::from_secs(10),
            max_time: None,
            max_size: 4 << 30,
        }
    }
}
