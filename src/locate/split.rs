//! Split DWARF's files: a skeleton unit's `.dwo` and the module's `.dwp` package.

use std::path::{Path, PathBuf};

use crate::dwarf::{DwoFile, DwpFile};
use crate::error::{WarningKind, Warnings};
use crate::load::Input;

/// Loads the `.dwo` file at `path`.
pub(super) fn load_dwo(path: &Path, warnings: &mut Warnings) -> Option<DwoFile> {
    let input = Input::open(path)
        .map_err(|e| warnings.push(WarningKind::Companion, e.to_string()))
        .ok()?;
    DwoFile::read(&input, warnings)
}

/// Loads the first `.dwp` package found: `<binary>.dwp`, then `<debug file>.dwp`.
pub(super) fn find_dwp(
    binary: &Path,
    debug_file: Option<&Path>,
    warnings: &mut Warnings,
) -> Option<DwpFile> {
    let mut candidates = vec![with_suffix(binary, ".dwp")];
    if let Some(debug) = debug_file {
        candidates.push(with_suffix(debug, ".dwp"));
    }
    let path = candidates.into_iter().find(|p| p.is_file())?;
    let input = Input::open(&path)
        .map_err(|e| warnings.push(WarningKind::Companion, e.to_string()))
        .ok()?;
    DwpFile::read(&input, warnings)
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Where to look for a skeleton's `.dwo`: the name as recorded (relative to the
/// compilation directory), then, for build trees that moved (or whose `comp_dir` a
/// `-fdebug-prefix-map` rewrote), the file name beside the binary and in each debug
/// directory.
pub(super) fn dwo_candidates(
    comp_dir: Option<&str>,
    dwo_name: &str,
    binary: &Path,
    debug_dirs: &[PathBuf],
) -> Vec<PathBuf> {
    let name = Path::new(dwo_name);
    let mut out = Vec::new();
    match comp_dir {
        Some(dir) if name.is_relative() => out.push(Path::new(dir).join(name)),
        _ => out.push(name.to_path_buf()),
    }
    if let Some(file) = name.file_name() {
        for dir in binary
            .parent()
            .into_iter()
            .chain(debug_dirs.iter().map(PathBuf::as_path))
        {
            out.push(dir.join(file));
        }
    }
    out
}
