//! Breakpad symbol files from symbol servers over HTTP: `GET <url>/<name>/<debug
//! id>/<name>.sym`, the layout rust-minidump's HTTP symbol supplier (and Breakpad's,
//! Mozilla's and Sentry's) fetch, cached in a store of the same layout so that the next
//! run reads it from disk.

use std::path::{Path, PathBuf};

use super::http::{self, Download};
use super::{Fetched, Limits};
use crate::breakpad::store::sym_file_name;
use crate::error::NotTheFile;

/// Symbol servers and the store directory their files are cached in.
#[derive(Debug, Clone)]
pub struct SymbolServers {
    /// Base URLs, tried in order.
    pub urls: Vec<String>,
    /// A store (`<name>/<id>/<name>.sym`) holding what was fetched.
    pub cache: PathBuf,
    /// How long and how much a download may take.
    pub limits: Limits,
    /// Further attempts after a failure that may pass (5xx, network).
    pub retries: u32,
}

impl SymbolServers {
    /// The cache when none is given: the one symbol-server PDBs are kept in
    /// (`$XDG_CACHE_HOME/dumpsyms/symbols`), the layout a server holding both uses.
    pub fn default_cache() -> PathBuf {
        super::symsrv::default_cache()
    }

    /// The symbol file of module `name` whose debug id is one of `ids` (a GNU build ID
    /// gives two, see `symbolize::store::debug_ids`): from the cache, else from the
    /// first server that has it. `name` must already be a safe path component.
    pub(crate) fn find(&self, name: &str, ids: &[String]) -> Fetched {
        let mut out = Fetched::default();
        if let Err(e) = super::request_segment(name, "module name") {
            out.failed(e.to_string());
            return out;
        }
        let file = sym_file_name(name);
        for id in ids {
            let cached = self.cache.join(name).join(id).join(&file);
            let verify = |path: &Path| is_symbol_file_of(path, id);
            if http::cached_is_good(&cached, &verify) {
                out.path = Some(cached);
                return out;
            }
        }
        for url in &self.urls {
            let base = url.trim_end_matches('/');
            for id in ids {
                let cached = self.cache.join(name).join(id).join(&file);
                let verify = |path: &Path| is_symbol_file_of(path, id);
                let at = format!(
                    "{base}/{}/{}/{}",
                    super::encode_segment(name),
                    super::encode_segment(id),
                    super::encode_segment(&file)
                );
                out.asked.push(super::redact::url(&at).into_owned());
                let what = format!("symbol server {}", super::redact::url(base));
                match http::download(
                    &self.limits,
                    http::OUR_AGENT,
                    self.retries,
                    &at,
                    &cached,
                    &what,
                    &verify,
                ) {
                    Download::Saved => {
                        out.path = Some(cached);
                        return out;
                    }
                    Download::Missing => {}
                    Download::Failed(why) => {
                        out.failed(why);
                        // A server that failed once (down, hanging) is not asked for
                        // the other id: it would cost the same wait again.
                        break;
                    }
                }
            }
        }
        out
    }
}

/// Whether `path` starts with the `MODULE` record of debug id `id`: what a server must
/// send (an error page served with 200, or another build's file, is refused).
fn is_symbol_file_of(path: &Path, id: &str) -> Result<(), NotTheFile> {
    let have = crate::breakpad::header::read_header(path)
        .map_err(|e| NotTheFile::Unreadable(Box::new(e)))?
        .module
        .id;
    match have.eq_ignore_ascii_case(id) {
        true => Ok(()),
        false => Err(NotTheFile::WrongBuild {
            what: "its debug id",
            have,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_asked_builds_module_record_is_taken() {
        let dir = std::env::temp_dir().join(format!("dumpsyms-symsrv-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.sym");
        let id = "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40";
        std::fs::write(&f, format!("MODULE Linux x86_64 {id} a\nFUNC 0 1 0 f\n")).unwrap();
        assert!(is_symbol_file_of(&f, id).is_ok());
        let wrong = is_symbol_file_of(&f, "00").unwrap_err();
        assert!(
            matches!(&wrong, NotTheFile::WrongBuild { have, .. } if have == id),
            "{wrong:?}"
        );
        assert_eq!(
            wrong.to_string(),
            format!("wrong build: its debug id is {id}")
        );
        std::fs::write(&f, "<html>Not here</html>\n").unwrap();
        let page = is_symbol_file_of(&f, id).unwrap_err();
        assert!(matches!(page, NotTheFile::Unreadable(_)), "{page:?}");
        assert!(page.to_string().contains("no MODULE"));
        let _ = std::fs::remove_dir_all(dir);
    }
}
