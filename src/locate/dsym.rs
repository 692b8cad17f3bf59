//! A Mach-O's debug info: the DWARF file inside a `.dSYM` bundle, named on the command
//! line or beside the binary, checked against the binary's UUID.

use std::path::{Path, PathBuf};

use super::DebugFile;
use crate::identity;
use crate::load::{Input, Object};

/// Why a `.dSYM` bundle is not the debug file of the binary.
#[derive(Debug, thiserror::Error)]
enum DsymError {
    #[error("a .dSYM bundle with no DWARF file")]
    Empty,
    /// The bundle's DWARF files, listed.
    #[error("the .dSYM bundle holds several DWARF files ({0}); name one")]
    Several(String),
    #[error("the dSYM's UUID {have} does not match {}'s {want} ({arch})", binary.display())]
    Uuid {
        have: String,
        binary: PathBuf,
        want: String,
        arch: String,
    },
}

/// The DWARF file inside a `.dSYM` bundle (`App.dSYM/Contents/Resources/DWARF/App`), or
/// `path` itself when it is not a bundle directory.
pub(crate) fn resolve_dsym_bundle(path: &Path) -> Result<PathBuf, crate::error::Error> {
    let dwarf_dir = path.join("Contents/Resources/DWARF");
    if !path.is_dir() || !dwarf_dir.is_dir() {
        return Ok(path.to_path_buf());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dwarf_dir)
        .map_err(|e| crate::error::Error::new(path, crate::error::ErrorKind::Io(e)))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    // Sorted: with several, the message lists them in a fixed order.
    files.sort();
    match files.len() {
        1 => Ok(files.remove(0)),
        0 => Err(crate::error::Error::new(
            path,
            crate::error::ErrorKind::NotObject(Box::new(DsymError::Empty)),
        )),
        _ => Err(crate::error::Error::new(
            path,
            crate::error::ErrorKind::Unsupported(Box::new(DsymError::Several(
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            ))),
        )),
    }
}

/// Finds the `.dSYM` of a Mach-O binary: a bundle among `debug_dirs` (`dumpsyms App
/// App.dSYM`), or `App.dSYM` beside it. Its UUID must match the binary's slice: a
/// mismatch is an error, since its DWARF describes other code.
pub(crate) fn find_dsym(
    obj: &Object,
    binary: &Path,
    debug_dirs: &[PathBuf],
    arch: &str,
) -> Result<Option<DebugFile>, crate::error::Error> {
    let mut beside = binary.as_os_str().to_os_string();
    beside.push(".dSYM");
    // One named on the command line is read (a pipe or device is refused when opened);
    // the one beside the binary is only looked for, and only a bundle or a file counts.
    let named = debug_dirs
        .iter()
        .filter(|d| d.extension().is_some_and(|e| e == "dSYM") || d.is_file())
        .filter(|p| p.exists())
        .cloned();
    let beside = Some(PathBuf::from(beside)).filter(|p| p.is_dir() || p.is_file());
    let mut candidates = named.chain(beside);
    let want = identity::mach_uuid(obj);
    // The first one there is the one meant: a named bundle before the one beside.
    if let Some(bundle) = candidates.next() {
        let path = resolve_dsym_bundle(&bundle)?;
        let input = Input::open(&path)?;
        let dsym = Object::parse_arch(&input, Some(arch))?;
        let have = identity::mach_uuid(&dsym);
        if have != want {
            let show =
                |u: Option<[u8; 16]>| u.map_or("none".to_string(), |u| identity::hex_upper(&u));
            return Err(crate::error::Error::new(
                &path,
                crate::error::ErrorKind::Unsupported(Box::new(DsymError::Uuid {
                    have: show(have),
                    binary: binary.to_path_buf(),
                    want: show(want),
                    arch: arch.to_string(),
                })),
            ));
        }
        drop(dsym);
        return Ok(Some(DebugFile { path, input }));
    }
    Ok(None)
}
