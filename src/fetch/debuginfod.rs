//! A debuginfod client: debug files by build ID (`GET <server>/buildid/<hex>/debuginfo`)
//! from the servers in `DEBUGINFOD_URLS`, cached the way elfutils' own client caches them
//! (`<cache>/<hex>/debuginfo`), so that gdb, perf and dumpsyms share one cache.

use std::path::PathBuf;
use std::time::Duration;

use super::http::{self, Download};
use super::{Fetched, Limits};

/// Where and how to fetch.
#[derive(Debug, Clone)]
pub struct Debuginfod {
    /// Server base URLs, tried in order.
    pub servers: Vec<String>,
    /// The cache directory.
    pub cache: PathBuf,
    /// How long and how much a download may take.
    pub limits: Limits,
    /// Further attempts after a failure that may pass (5xx, network).
    pub retries: u32,
}

impl Debuginfod {
    /// The client `DEBUGINFOD_URLS` configures, as elfutils reads it: space-separated
    /// URLs; `None` when unset or empty. `DEBUGINFOD_CACHE_PATH`, else
    /// `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`;
    /// `DEBUGINFOD_TIMEOUT` (seconds without progress; default 10, where elfutils waits
    /// 90), `DEBUGINFOD_MAXTIME` (seconds for a whole download) and
    /// `DEBUGINFOD_MAXSIZE` (bytes; default 4 GiB) as elfutils reads them.
    pub fn from_env() -> Option<Debuginfod> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let servers: Vec<String> = var("DEBUGINFOD_URLS")?
            .split_whitespace()
            .map(|u| {
                // Its password is never printed.
                super::redact::url_with_secrets(u);
                u.trim_end_matches('/').to_string()
            })
            .collect();
        if servers.is_empty() {
            return None;
        }
        let cache = match var("DEBUGINFOD_CACHE_PATH") {
            Some(p) => PathBuf::from(p),
            None => match var("XDG_CACHE_HOME") {
                Some(x) => PathBuf::from(x).join("debuginfod_client"),
                None => PathBuf::from(var("HOME").unwrap_or_else(|| ".".into()))
                    .join(".cache")
                    .join("debuginfod_client"),
            },
        };
        let number = |name: &str| {
            var(name)
                .and_then(|t| t.trim().parse::<u64>().ok())
                .filter(|&t| t > 0)
        };
        let mut limits = Limits::default();
        if let Some(t) = number("DEBUGINFOD_TIMEOUT") {
            limits.timeout = Duration::from_secs(t);
        }
        limits.max_time = number("DEBUGINFOD_MAXTIME").map(Duration::from_secs);
        if let Some(n) = number("DEBUGINFOD_MAXSIZE") {
            limits.max_size = n;
        }
        Some(Debuginfod {
            servers,
            cache,
            limits,
            retries: 2,
        })
    }

    /// The debug file with build ID `build_id`: from the cache, else from the first
    /// server that has it (then cached). Only a file `verify` accepts is kept, in the
    /// cache or from a server: the network code reads no object files itself.
    pub(crate) fn debuginfo(&self, build_id: &[u8], verify: http::Verify) -> Fetched {
        self.fetch(build_id, Artifact::Debuginfo, verify)
    }

    /// The executable or shared library with build ID `build_id` (its loadable
    /// segments, `.eh_frame` and symbol tables, which a debug file leaves out), as
    /// [`Debuginfod::debuginfo`] fetches the debug file.
    pub(crate) fn executable(&self, build_id: &[u8], verify: http::Verify) -> Fetched {
        self.fetch(build_id, Artifact::Executable, verify)
    }

    fn fetch(&self, build_id: &[u8], artifact: Artifact, verify: http::Verify) -> Fetched {
        let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
        let kind = artifact.name();
        let mut out = Fetched::default();
        let cached = self.cache.join(&hex).join(kind);
        out.asked
            .push(format!("debuginfod cache {}", cached.display()));
        if http::cached_is_good(&cached, verify) {
            out.path = Some(cached);
            return out;
        }
        for server in &self.servers {
            let url = format!("{server}/buildid/{hex}/{kind}");
            out.asked.push(super::redact::url(&url).into_owned());
            let what = format!("debuginfod server {}", super::redact::url(server));
            match http::download(
                &self.limits,
                http::OUR_AGENT,
                self.retries,
                &url,
                &cached,
                &what,
                verify,
            ) {
                Download::Saved => {
                    out.path = Some(cached);
                    return out;
                }
                // Not there: the next server may have it.
                Download::Missing => {}
                Download::Failed(why) => out.failed(why),
            }
        }
        out
    }
}

/// What a debuginfod server serves by build ID, named as in its URLs and as elfutils'
/// client names the cached files.
#[derive(Clone, Copy)]
enum Artifact {
    Debuginfo,
    Executable,
}

impl Artifact {
    fn name(self) -> &'static str {
        match self {
            Artifact::Debuginfo => "debuginfo",
            Artifact::Executable => "executable",
        }
    }
}
