//! A Microsoft symbol server client: PDBs by name and debug id from the stores of a
//! symbol path in `_NT_SYMBOL_PATH` syntax (`srv*C:\cache*https://server/symbols;D:\pdbs`),
//! in the symstore layout `<name>/<GUID><age>/<name>`. Fetched files are cached in the
//! entry's first local store, so that each is downloaded once.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::http::{self, Download, Verify};
use super::{Fetched, Limits};

/// One `;`-separated element of a symbol path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Store {
    /// A local directory: flat (`dir/<name>`) or in the symstore layout.
    Dir(PathBuf),
    /// `srv*[cache*...]*url`: local stores tried first, in order, then the server; what
    /// the server has is saved into the first local store.
    Server {
        /// The local stores given before the URL.
        caches: Vec<PathBuf>,
        /// The server.
        url: String,
    },
}

/// A parsed symbol path.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SymbolPath {
    /// The stores, in the order they are tried.
    pub stores: Vec<Store>,
    /// How long and how much a download may take (`--server-timeout` and the like).
    pub limits: Limits,
    /// The time spent on servers that gave nothing, shared by every clone of this path
    /// (every module of a run).
    unanswered: Unanswered,
}

/// The most a run spends asking symbol servers that give nothing (down, unreachable,
/// failing, or without the file): twenty dead servers in a symbol path cost a dump
/// 12 s, each lookup paying them all again. A download that delivers is not counted.
pub(crate) const MAX_UNANSWERED: Duration = Duration::from_secs(5);

/// Time spent on servers that gave nothing, and whether the bound was said.
#[derive(Debug, Clone, Default)]
struct Unanswered(Arc<Mutex<(Duration, bool)>>);

// Bookkeeping, not part of what a symbol path is.
impl PartialEq for Unanswered {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for Unanswered {}

/// Largest configuration file read: a symbol path is a line or two.
const MAX_CONFIG: u64 = 64 << 10;

/// `_NT_SYMBOL_PATH` syntax: `srv*` and `symsrv*symsrv.dll*` entries are servers (the
/// last element a URL, or a directory store), `cache*dir` adds a local store, anything
/// else is a directory.
impl std::str::FromStr for SymbolPath {
    type Err = crate::error::ArgumentError;
    fn from_str(spec: &str) -> Result<SymbolPath, Self::Err> {
        SymbolPath::parse(spec)
    }
}

impl SymbolPath {
    /// The symbol path a configuration file holds (Mozilla's dumper's
    /// `$HOME/.dump_syms/config`), `None` when it holds none. Opened without blocking
    /// and read only when a regular file of at most 64 KiB: a config that is a FIFO or a
    /// link to `/dev/zero` is refused, not waited on or read for ever.
    pub fn from_config_file(path: &std::path::Path) -> std::io::Result<Option<SymbolPath>> {
        let bytes = crate::named::read(path, MAX_CONFIG).map_err(|e| match e {
            crate::named::Refused::Io(e) => e,
            other => std::io::Error::new(std::io::ErrorKind::InvalidInput, other),
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let path = SymbolPath::parse(text.trim())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        Ok((!path.stores.is_empty()).then_some(path))
    }

    /// Parses `_NT_SYMBOL_PATH` syntax. `srv*` and `symsrv*symsrv.dll*` entries are
    /// servers (the last element a URL, or a directory store), `cache*dir` adds a local
    /// store, anything else is a directory. Empty elements are ignored.
    pub(crate) fn parse(spec: &str) -> Result<SymbolPath, crate::error::ArgumentError> {
        let mut stores = Vec::new();
        for entry in spec.split(';').map(str::trim).filter(|e| !e.is_empty()) {
            let parts: Vec<&str> = entry.split('*').collect();
            let kind = parts[0].to_ascii_lowercase();
            let rest: Vec<&str> = match kind.as_str() {
                "srv" => parts[1..].to_vec(),
                "symsrv" if parts.len() > 2 => parts[2..].to_vec(),
                "cache" => {
                    let dirs = parts[1..].iter().filter(|p| !p.is_empty());
                    stores.extend(dirs.map(|d| Store::Dir(PathBuf::from(d))));
                    continue;
                }
                _ if parts.len() == 1 => {
                    stores.push(Store::Dir(PathBuf::from(entry)));
                    continue;
                }
                _ => {
                    return Err(crate::error::ArgumentError::SymbolPathEntry(
                        entry.to_string(),
                    ));
                }
            };
            let rest: Vec<&str> = rest.into_iter().filter(|p| !p.is_empty()).collect();
            let Some((last, caches)) = rest.split_last() else {
                return Err(crate::error::ArgumentError::SymbolPathEmpty(
                    entry.to_string(),
                ));
            };
            let caches: Vec<PathBuf> = caches.iter().map(PathBuf::from).collect();
            if last.starts_with("http://") || last.starts_with("https://") {
                // Its password is never printed.
                super::redact::url_with_secrets(last);
                stores.push(Store::Server {
                    caches,
                    url: last.trim_end_matches('/').to_string(),
                });
            } else {
                // A file-share store: looked in like the caches before it.
                stores.extend(caches.into_iter().map(Store::Dir));
                stores.push(Store::Dir(PathBuf::from(last)));
            }
        }
        Ok(SymbolPath {
            stores,
            limits: Limits::default(),
            unanswered: Unanswered::default(),
        })
    }

    /// The file `name` with debug id `id` (`<GUID><age>`): from a local store, else from
    /// the first server that has it (then cached). `verify` says whether a file is the
    /// one asked for: a fetched file is cached only when it is, and a cached one that is
    /// not is removed and fetched again.
    pub(crate) fn find(&self, name: &str, id: &str, verify: Verify) -> Fetched {
        let mut out = Fetched::default();
        // Both come from the image and become paths in the caches.
        for (part, what) in [(name, "PDB name"), (id, "debug id")] {
            if let Err(e) = super::request_segment(part, what) {
                out.failed(e.to_string());
                return out;
            }
        }
        let pdb = is_pdb_name(name);
        let in_dir = |dir: &PathBuf, out: &mut Fetched| -> Option<PathBuf> {
            let keyed = dir.join(name).join(id).join(name);
            let msfz = pdb.then(|| compressed_pdb_path(&keyed));
            for candidate in [Some(keyed), msfz, Some(dir.join(name))]
                .into_iter()
                .flatten()
            {
                out.asked.push(candidate.display().to_string());
                if candidate.is_file() {
                    return Some(candidate);
                }
            }
            None
        };
        for store in &self.stores {
            let (caches, url) = match store {
                Store::Dir(d) => (std::slice::from_ref(d), None),
                Store::Server { caches, url } => (caches.as_slice(), Some(url)),
            };
            for dir in caches {
                // A server's cache holds only what was verified; a file there that is not
                // the one asked for is passed over (and, at the download target, removed
                // below). A plain store is the user's: its files are judged by the caller.
                if let Some(p) = in_dir(dir, &mut out)
                    && (url.is_none() || verify(&p).is_ok())
                {
                    out.path = Some(p);
                    return out;
                }
            }
            let Some(url) = url else { continue };
            let full = format!("{url}/{}", segments(&[name, id, name]));
            out.asked.push(super::redact::url(&full).into_owned());
            let target = match caches.first() {
                Some(c) => c.join(name).join(id).join(name),
                None => default_cache().join(name).join(id).join(name),
            };
            if http::cached_is_good(&target, verify) {
                out.path = Some(target);
                return out;
            }
            if pdb && http::cached_is_good(&compressed_pdb_path(&target), verify) {
                out.path = Some(compressed_pdb_path(&target));
                return out;
            }
            let entry = Entry {
                url,
                name,
                id,
                target: &target,
                what: &format!("symbol server {}", super::redact::url(url)),
            };
            if !self.may_ask(&mut out) {
                break;
            }
            let started = Instant::now();
            if let Some(p) = self.download(&entry, &full, verify, &mut out) {
                out.path = Some(p);
                return out;
            }
            let mut spent = self.unanswered.0.lock().unwrap_or_else(|e| e.into_inner());
            spent.0 += started.elapsed();
        }
        out
    }

    /// Whether the run's time on servers that gave nothing ([`MAX_UNANSWERED`]) is not
    /// yet spent; said once when it is.
    fn may_ask(&self, out: &mut Fetched) -> bool {
        let mut spent = self.unanswered.0.lock().unwrap_or_else(|e| e.into_inner());
        if spent.0 < MAX_UNANSWERED {
            return true;
        }
        if !spent.1 {
            spent.1 = true;
            out.failed(format!(
                "the run's {} s on symbol servers that gave nothing are spent: no further server is asked in this run",
                MAX_UNANSWERED.as_secs()
            ));
        }
        false
    }

    /// The file from the server of `at`: as it is at `full`, else compressed, else where
    /// a pointer file says. A server that fails ends its turn; why is kept in `out`.
    fn download(
        &self,
        at: &Entry,
        full: &str,
        verify: Verify,
        out: &mut Fetched,
    ) -> Option<PathBuf> {
        let saved = |d: Download, out: &mut Fetched| match d {
            Download::Saved => Some(true),
            Download::Missing => Some(false),
            Download::Failed(why) => {
                out.failed(why);
                None
            }
        };
        // A PDB is asked for as Microsoft's clients ask: MSFZ welcome.
        let is_pdb = is_pdb_name(at.name);
        let as_it_is = http::download_accepting(
            &self.limits,
            http::SYMSRV_AGENT,
            2,
            full,
            is_pdb.then_some(MSFZ_MEDIA_TYPE),
            at.target,
            at.what,
            verify,
        );
        // Not there as it is: servers also answer compressed, or with a pointer.
        if saved(as_it_is, out)? {
            return Some(filed_by_container(at.target));
        }
        #[cfg(feature = "net")]
        if saved(self.compressed(at, verify, out), out)? {
            return Some(filed_by_container(at.target));
        }
        self.pointed_to(at, verify, out)
    }

    /// `<url>/<name>/<id>/<name with _ for its last letter>`: a cabinet holding the
    /// file, downloaded beside the target and extracted into it.
    #[cfg(feature = "net")]
    fn compressed(&self, at: &Entry, verify: Verify, out: &mut Fetched) -> Download {
        let Some(packed) = super::cab::compressed_name(at.name) else {
            return Download::Missing;
        };
        let url = format!("{}/{}", at.url, segments(&[at.name, at.id, &packed]));
        out.asked.push(super::redact::url(&url).into_owned());
        let cab = at.target.with_file_name(format!(".{packed}.download"));
        let is_cab = |p: &std::path::Path| -> Result<(), crate::error::NotTheFile> {
            let mut magic = [0u8; 4];
            std::fs::File::open(p)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
                .map_err(|e| crate::error::NotTheFile::Unreadable(Box::new(e)))?;
            match &magic {
                b"MSCF" => Ok(()),
                _ => Err(crate::error::NotTheFile::NotA(
                    "a cabinet file (no MSCF signature)",
                )),
            }
        };
        let got = http::download(
            &self.limits,
            http::SYMSRV_AGENT,
            2,
            &url,
            &cab,
            at.what,
            &is_cab,
        );
        if !matches!(got, Download::Saved) {
            return got;
        }
        let extracted = super::cab::extract(&cab, at.name, at.target, self.limits.max_size, verify);
        let _ = std::fs::remove_file(&cab);
        match extracted {
            Ok(()) => Download::Saved,
            Err(why) => {
                Download::Failed(format!("{}: {}: {why}", at.what, super::redact::url(&url)))
            }
        }
    }

    /// `<url>/<name>/<id>/file.ptr`: `PATH:<where the file is>` (usually a share the
    /// server's own network reaches) or `MSG:<why there is no file>`. A path reachable
    /// from here is used where it is; anything else is said.
    fn pointed_to(&self, at: &Entry, verify: Verify, out: &mut Fetched) -> Option<PathBuf> {
        let url = format!("{}/{}", at.url, segments(&[at.name, at.id, "file.ptr"]));
        out.asked.push(super::redact::url(&url).into_owned());
        let shown = super::redact::url(&url).into_owned();
        let text = match http::fetch_text(&self.limits, http::SYMSRV_AGENT, &url) {
            Ok(Some(text)) => text,
            Ok(None) => return None,
            Err(why) => {
                out.failed(format!("{}: {shown}: {why}", at.what));
                return None;
            }
        };
        let text = text.trim();
        if let Some(message) = text.strip_prefix("MSG:") {
            out.failed(format!(
                "{} has no {} {}: {}",
                at.what,
                at.name,
                at.id,
                crate::untrusted::for_terminal(message.trim())
            ));
            return None;
        }
        let Some(path) = text.strip_prefix("PATH:").map(str::trim) else {
            out.failed(format!(
                "{}: {shown}: not a file.ptr answer (PATH: or MSG:): {}",
                at.what,
                crate::untrusted::for_terminal(http::first_line(text))
            ));
            return None;
        };
        let local = PathBuf::from(path);
        if !local.is_file() {
            out.failed(format!(
                "{}: {shown} points at {}, which cannot be reached from here",
                at.what,
                crate::untrusted::for_terminal(path)
            ));
            return None;
        }
        match verify(&local) {
            Ok(()) => Some(local),
            Err(why) => {
                out.failed(format!(
                    "{}: {shown} points at {}: {why}",
                    at.what,
                    local.display()
                ));
                None
            }
        }
    }
}

/// The media type Microsoft's symbol clients ask for an MSFZ ("PDZ") PDB with (PerfView's
/// `SymbolReader`, `Accept: application/msfz0`); a server that has one answers with it,
/// any other ignores the header and answers the PDB (or, strictly, 406, and is then
/// asked again without it).
const MSFZ_MEDIA_TYPE: &str = "application/msfz0";

/// Whether `name` is a PDB's (`.pdb`, any case): only a PDB has an MSFZ form.
fn is_pdb_name(name: &str) -> bool {
    name.to_ascii_lowercase().ends_with(".pdb")
}

/// Where a cache keeps the MSFZ copy of the PDB cached at `plain`:
/// `<name>/<id>/msfz0/<name>`, the symbol store key Microsoft's clients and
/// `dotnet-symbol` give an MSFZ PDB, so that a plain and a compressed copy of one PDB
/// never stand in for each other in a cache other tools share.
fn compressed_pdb_path(plain: &std::path::Path) -> PathBuf {
    let name = plain.file_name().unwrap_or_default();
    plain.with_file_name("msfz0").join(name)
}

/// The path a downloaded file at `saved` is kept at: an MSFZ PDB is moved to
/// [`compressed_pdb_path`]; anything else (or an MSFZ that cannot be moved) stays.
fn filed_by_container(saved: &std::path::Path) -> PathBuf {
    let mut head = [0u8; 32];
    let msfz = std::fs::File::open(saved)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| crate::msfz::is_msfz(&head));
    if !msfz {
        return saved.to_path_buf();
    }
    let to = compressed_pdb_path(saved);
    let moved = to
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::rename(saved, &to));
    match moved {
        Ok(()) => to,
        Err(_) => saved.to_path_buf(),
    }
}

/// `parts` as request path segments, each percent-encoded.
fn segments(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| super::encode_segment(p))
        .collect::<Vec<_>>()
        .join("/")
}

/// Where one file is asked for on one server.
struct Entry<'a> {
    url: &'a str,
    name: &'a str,
    id: &'a str,
    /// The cache path it is saved to.
    target: &'a std::path::Path,
    /// The server, for messages.
    what: &'a str,
}

/// Where a `srv*url` entry without a local store keeps what it fetches:
/// `$XDG_CACHE_HOME/dumpsyms/symbols`, else `~/.cache/dumpsyms/symbols`.
pub(crate) fn default_cache() -> PathBuf {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    match var("XDG_CACHE_HOME") {
        Some(x) => PathBuf::from(x).join("dumpsyms").join("symbols"),
        None => PathBuf::from(var("HOME").unwrap_or_else(|| ".".into()))
            .join(".cache")
            .join("dumpsyms")
            .join("symbols"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_nt_symbol_path() {
        let p = SymbolPath::parse(
            "srv*/tmp/cache*https://msdl.microsoft.com/download/symbols/;/opt/pdbs;cache*/c2;SRV*http://h/s",
        )
        .unwrap();
        assert_eq!(
            p.stores,
            vec![
                Store::Server {
                    caches: vec![PathBuf::from("/tmp/cache")],
                    url: "https://msdl.microsoft.com/download/symbols".into()
                },
                Store::Dir(PathBuf::from("/opt/pdbs")),
                Store::Dir(PathBuf::from("/c2")),
                Store::Server {
                    caches: vec![],
                    url: "http://h/s".into()
                },
            ]
        );
        assert_eq!(
            SymbolPath::parse("srv*/a*/b").unwrap().stores,
            vec![Store::Dir("/a".into()), Store::Dir("/b".into())]
        );
        assert!(SymbolPath::parse("srv*").is_err());
        assert!(SymbolPath::parse("x*y").is_err());
    }
}
