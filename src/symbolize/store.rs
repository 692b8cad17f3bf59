//! Finding a module's symbol file in store directories laid out as symbol servers lay
//! them out (`<name>/<debug id>/<name>.sym`), by the name and GNU build ID a crash
//! report gives.

use std::path::{Path, PathBuf};

use crate::breakpad::store::sym_file_name;
use crate::identity::debug_id;

/// The debug ids a GNU build ID can have: the dumper reads the GUID's first three
/// fields in the ELF's byte order, which the build ID alone does not tell, so
/// little-endian (nearly every target) first, then big-endian.
pub fn debug_ids(build_id_hex: &str) -> Vec<String> {
    let Some(bytes) = crate::identity::unhex(build_id_hex) else {
        return Vec::new();
    };
    let mut ids = vec![debug_id(&bytes, false)];
    let big = debug_id(&bytes, true);
    if big != ids[0] {
        ids.push(big);
    }
    ids
}

/// Where a module's symbol file was looked for and what was found.
#[derive(Debug, PartialEq, Eq)]
pub enum Found {
    /// The symbol file.
    File(PathBuf),
    /// No store has it.
    Missing,
    /// Without a build ID, the name alone matches several builds: the ids found.
    Ambiguous(Vec<String>),
}

/// Store directories, searched in order.
pub struct Stores {
    dirs: Vec<PathBuf>,
}

impl Stores {
    /// Stores in `dirs`, tried in order.
    pub fn new(dirs: Vec<PathBuf>) -> Stores {
        Stores { dirs }
    }

    /// The symbol file of the module a report names by `module` (a path or a file
    /// name; None when it gives only a build ID) and `build_id` (hex).
    pub fn find(&self, module: Option<&str>, build_id: Option<&str>) -> Found {
        let name = module.and_then(file_name);
        let ids = build_id.map(debug_ids).unwrap_or_default();
        let Some(name) = name else {
            return match ids.is_empty() {
                false => self.by_id(&ids),
                true => Found::Missing,
            };
        };
        for spelled in spellings(name) {
            let found = match ids.is_empty() {
                false => self.by_name_and_id(&spelled, &ids),
                true => self.by_name(&spelled),
            };
            if found != Found::Missing {
                return found;
            }
        }
        Found::Missing
    }

    fn by_name_and_id(&self, name: &str, ids: &[String]) -> Found {
        for dir in &self.dirs {
            for id in ids {
                let file = dir.join(name).join(id).join(sym_file_name(name));
                if file.is_file() {
                    return Found::File(file);
                }
            }
        }
        Found::Missing
    }

    /// The one build of `name` the stores hold.
    fn by_name(&self, name: &str) -> Found {
        let mut found: Vec<(String, PathBuf)> = Vec::new();
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir.join(name)) else {
                continue;
            };
            for entry in entries.flatten() {
                let id = entry.file_name().to_string_lossy().into_owned();
                let file = entry.path().join(sym_file_name(name));
                if file.is_file() && !found.iter().any(|(i, _)| *i == id) {
                    found.push((id, file));
                }
            }
        }
        match found.len() {
            0 => Found::Missing,
            1 => Found::File(found.remove(0).1),
            _ => {
                let mut ids: Vec<String> = found.into_iter().map(|(id, _)| id).collect();
                ids.sort();
                Found::Ambiguous(ids)
            }
        }
    }

    /// A module named by its build ID alone: every name in the stores is tried.
    fn by_id(&self, ids: &[String]) -> Found {
        for dir in &self.dirs {
            let Ok(entries) = std::fs::read_dir(dir) else {
                continue;
            };
            let mut names: Vec<String> = entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect();
            // The same answer whatever order the directory lists them in.
            names.sort();
            for name in names {
                if let Found::File(f) = self.by_name_and_id_in(dir, &name, ids) {
                    return Found::File(f);
                }
            }
        }
        Found::Missing
    }

    fn by_name_and_id_in(&self, dir: &Path, name: &str, ids: &[String]) -> Found {
        for id in ids {
            let file = dir.join(name).join(id).join(sym_file_name(name));
            if file.is_file() {
                return Found::File(file);
            }
        }
        Found::Missing
    }
}

/// The file name of a module path as a report writes it (`/system/lib64/libc.so`,
/// `C:\app\app.exe`; a library inside an APK as Android names it,
/// `/data/app/…/base.apk!libfoo.so`, by its own name), if it can name a directory in a
/// store.
pub(super) fn file_name(module: &str) -> Option<&str> {
    let leaf = module.rsplit(['/', '\\', '!']).next()?;
    crate::untrusted::path_component(leaf, "module name").ok()
}

/// The names a module may be stored under: its own, and for a name with no extension
/// (Wine names PE modules `ntdll`, `game`) its debug file's and its image's.
pub fn spellings(name: &str) -> Vec<std::borrow::Cow<'_, str>> {
    let mut names = vec![std::borrow::Cow::Borrowed(name)];
    if !name.contains('.') {
        for ext in ["pdb", "exe", "dll"] {
            names.push(std::borrow::Cow::Owned(format!("{name}.{ext}")));
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn store() -> PathBuf {
        let d = std::env::temp_dir().join(format!("dumpsyms-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (name, id) in [
            ("libc.so.6", "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40"),
            ("app", "AAAA0000BBBB1111CCCC2222DDDD33330"),
            ("app", "BBBB0000BBBB1111CCCC2222DDDD33330"),
        ] {
            let dir = d.join(name).join(id);
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join(sym_file_name(name)), "MODULE\n").unwrap();
        }
        d
    }

    #[test]
    fn build_ids_become_debug_ids_in_both_byte_orders() {
        assert_eq!(
            debug_ids("4aea70964ba3f4e6e9f3a6c4d7e1a9b4cafe"),
            [
                "9670EA4AA34BE6F4E9F3A6C4D7E1A9B40",
                "4AEA70964BA3F4E6E9F3A6C4D7E1A9B40"
            ]
        );
        assert!(debug_ids("xyz").is_empty());
        assert!(debug_ids("abc").is_empty());
    }

    #[test]
    fn found_by_name_and_id_by_name_alone_or_by_id_alone() {
        let dir = store();
        let stores = Stores::new(vec![PathBuf::from("/nonexistent"), dir.clone()]);
        let libc = dir.join("libc.so.6/9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40/libc.so.6.sym");
        let id = "4aea7096a43bf4e6e9f3a6c4d7e1a9b4";
        assert_eq!(
            stores.find(Some("/lib/x86_64-linux-gnu/libc.so.6"), Some(id)),
            Found::File(libc.clone())
        );
        assert_eq!(stores.find(None, Some(id)), Found::File(libc.clone()));
        assert_eq!(stores.find(Some("libc.so.6"), None), Found::File(libc));
        assert_eq!(
            stores.find(Some("app"), None),
            Found::Ambiguous(vec![
                "AAAA0000BBBB1111CCCC2222DDDD33330".into(),
                "BBBB0000BBBB1111CCCC2222DDDD33330".into()
            ])
        );
        assert_eq!(stores.find(Some("app"), Some("00")), Found::Missing);
        assert_eq!(stores.find(Some(".."), None), Found::Missing);
        assert_eq!(stores.find(Some("/x/.."), None), Found::Missing);
        assert_eq!(
            stores.find(Some("/data/app/~~x==/base.apk!libc.so.6"), Some(id)),
            stores.find(Some("libc.so.6"), Some(id))
        );
        let _ = std::fs::remove_dir_all(dir);
    }
}
