//! A debuginfod client: debug files by build ID (`GET <server>/buildid/<hex>/debuginfo`)
//! from the servers in `DEBUGINFOD_URLS`, cached the way elfutils' own client caches them
//! (`<cache>/<hex>/debuginfo`), so that gdb, perf and dumpsyms share one cache.

use std::path::PathBuf;
use std::time::Duration;

use super::http::{self, Download};

/// Where and how to fetch.
#[derive(Debug, Clone)]
pub struct Debuginfod {
    /// Server base URLs, tried in order.
    pub servers: Vec<String>,
    /// The cache directory.
    pub cache: PathBuf,
    /// Per request: connecting and each read.
    pub timeout: Duration,
    /// Further attempts after a failure that may pass (5xx, network).
    pub retries: u32,
}

/// What a lookup did: the file, or where it was asked for and what went wrong.
#[derive(Debug, Default)]
pub struct Fetched {
    pub path: Option<PathBuf>,
    /// One line per server that could not be used (down, failing), for a warning.
    pub problems: Vec<String>,
    /// The servers asked (or the cache), for "where it was looked for".
    pub asked: Vec<String>,
}

impl Debuginfod {
    /// The client `DEBUGINFOD_URLS` configures, as elfutils reads it: space-separated
    /// URLs; `None` when unset or empty. `DEBUGINFOD_CACHE_PATH`, else
    /// `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`;
    /// `DEBUGINFOD_TIMEOUT` in seconds (default 90, as elfutils').
    pub fn from_env() -> Option<Debuginfod> {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let servers: Vec<String> = var("DEBUGINFOD_URLS")?
            .split_whitespace()
            .map(|u| u.trim_end_matches('/').to_string())
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
        let timeout = var("DEBUGINFOD_TIMEOUT")
            .and_then(|t| t.trim().parse::<u64>().ok())
            .filter(|&t| t > 0)
            .unwrap_or(90);
        Some(Debuginfod {
            servers,
            cache,
            timeout: Duration::from_secs(timeout),
            retries: 2,
        })
    }

    /// The debug file with build ID `build_id`: from the cache, else from the first
    /// server that has it (then cached).
    pub fn debuginfo(&self, build_id: &[u8]) -> Fetched {
        let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
        let mut out = Fetched::default();
        let cached = self.cache.join(&hex).join("debuginfo");
        out.asked
            .push(format!("debuginfod cache {}", cached.display()));
        if cached.metadata().is_ok_and(|m| m.is_file() && m.len() > 0) {
            out.path = Some(cached);
            return out;
        }
        let agent = http::agent(self.timeout);
        for server in &self.servers {
            let url = format!("{server}/buildid/{hex}/debuginfo");
            out.asked.push(url.clone());
            let what = format!("debuginfod server {server}");
            match http::download(&agent, self.retries, &url, &cached, &what) {
                Download::Saved => {
                    out.path = Some(cached);
                    return out;
                }
                // Not there: the next server may have it.
                Download::Missing => {}
                Download::Failed(why) => out.problems.push(why),
            }
        }
        out
    }
}
