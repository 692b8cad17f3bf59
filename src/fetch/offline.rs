//! The transport of a library built without the `net` feature: the same calls as
//! `http.rs`, each request failing with why, so that a debuginfod URL or a symbol
//! server given to such a build is a server that cannot be used (told as a warning of
//! kind `Server`), while local stores and caches are read as ever.

use std::path::Path;

use super::Limits;
pub(crate) use super::local::{
    Download, HttpError, OUR_AGENT, SYMSRV_AGENT, Verify, cached_is_good, first_line,
};

/// Why no request is made.
const NO_NETWORK: &str = "this build of dumpsyms has no network support (the `net` feature)";

/// Fails: no request can be made.
pub(crate) fn download(
    _limits: &Limits,
    _user_agent: &str,
    _retries: u32,
    url: &str,
    _target: &Path,
    what: &str,
    _verify: Verify,
) -> Download {
    Download::Failed(format!("{what}: {url}: {NO_NETWORK}"))
}

/// Fails: no request can be made.
#[allow(clippy::too_many_arguments)]
pub(crate) fn download_accepting(
    limits: &Limits,
    user_agent: &str,
    retries: u32,
    url: &str,
    _accept: Option<&str>,
    target: &Path,
    what: &str,
    verify: Verify,
) -> Download {
    download(limits, user_agent, retries, url, target, what, verify)
}

/// Fails: no request can be made.
pub(crate) fn fetch_text(
    _limits: &Limits,
    _user_agent: &str,
    _url: &str,
) -> Result<Option<String>, HttpError> {
    Err(HttpError::Offline)
}

#[cfg(test)]
mod tests {
    use super::super::symsrv::SymbolPath;

    /// Without the network a symbol path still reads its local stores and caches, and
    /// its server is a problem that names why it was not asked.
    #[test]
    fn a_server_is_not_asked_and_its_cache_is_still_read() {
        let dir = std::env::temp_dir().join(format!("dumpsyms-offline-{}", std::process::id()));
        let cache = dir.join("cache");
        let spec = format!("srv*{}*https://symbols.example/", cache.display());
        let path = SymbolPath::parse(&spec).unwrap();
        let accept = |_: &std::path::Path| Ok(());

        let missing = path.find("app.pdb", "ABCDEF1", &accept);
        assert_eq!(missing.path, None);
        assert_eq!(missing.problems.len(), 1, "{:?}", missing.problems);
        assert!(
            missing.problems[0]
                .message
                .contains("https://symbols.example/app.pdb/ABCDEF1/app.pdb")
                && missing.problems[0].message.contains("no network support"),
            "{:?}",
            missing.problems
        );

        let cached = cache.join("app.pdb").join("ABCDEF1").join("app.pdb");
        std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
        std::fs::write(&cached, b"a PDB").unwrap();
        let found = path.find("app.pdb", "ABCDEF1", &accept);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(found.path.as_deref(), Some(cached.as_path()));
        assert!(found.problems.is_empty(), "{:?}", found.problems);
    }
}
