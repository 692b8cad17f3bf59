//! dwz's alternate file, which a debug file's `.gnu_debugaltlink` or `.debug_sup` names:
//! as named, by build ID, beside the debug file, then from debuginfod.

use std::path::{Path, PathBuf};

use super::SYSTEM_DEBUG_DIR;
use crate::dwarf::AltLink;
use crate::error::{WarningKind, Warnings};
use crate::fetch::debuginfod::Debuginfod;
use crate::identity;
use crate::load::{Input, Object};

/// Finds and opens the alternate file: as named (relative names are relative to the
/// file that names it), by build ID under `.build-id` trees, by its file name beside
/// the file that names it, or last from debuginfod by its build ID.
pub(super) fn find(
    link: &AltLink,
    source: &Path,
    debug_dirs: &[PathBuf],
    debuginfod: Option<&Debuginfod>,
    warnings: &mut Warnings,
) -> Option<Input> {
    let candidates = candidates(link, source, debug_dirs);
    for candidate in &candidates {
        if let Some(input) = open_if_linked(link, candidate, warnings) {
            return Some(input);
        }
    }
    let mut searched: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    if let Some(client) = debuginfod.filter(|_| link.build_id.len() >= 2) {
        let fetched = client.debuginfo(&link.build_id, &|p| super::has_build_id(p, &link.build_id));
        for problem in fetched.problems {
            warnings.add(problem);
        }
        searched.extend(fetched.asked);
        if let Some(path) = fetched.path
            && let Some(input) = open_if_linked(link, &path, warnings)
        {
            return Some(input);
        }
    }
    warnings.push(
        WarningKind::Companion,
        format!(
            "alternate debug file {:?} (dwz) not found; searched {}; names it holds are missing",
            link.path,
            searched.join(", ")
        ),
    );
    None
}

/// Where the alternate file may be on disk: as named (relative names are relative to
/// the file that names it), by build ID under `.build-id` trees, by its file name
/// beside the file that names it.
fn candidates(link: &AltLink, source: &Path, debug_dirs: &[PathBuf]) -> Vec<PathBuf> {
    let dir = source.parent().unwrap_or(Path::new("."));
    let named = Path::new(&link.path);
    let mut candidates = vec![if named.is_absolute() {
        named.to_path_buf()
    } else {
        dir.join(named)
    }];
    if link.build_id.len() >= 2 {
        let hex = identity::hex_upper(&link.build_id).to_lowercase();
        for root in debug_dirs
            .iter()
            .map(PathBuf::as_path)
            .chain([Path::new(SYSTEM_DEBUG_DIR)])
        {
            candidates.push(super::build_id_path(root, &hex));
        }
    }
    if let Some(name) = named.file_name() {
        candidates.push(dir.join(name));
    }
    candidates
}

/// `candidate`, if it is a file and the alternate file `link` names (by build ID).
fn open_if_linked(link: &AltLink, candidate: &Path, warnings: &mut Warnings) -> Option<Input> {
    if !candidate.is_file() {
        return None;
    }
    let input = Input::open(candidate).ok()?;
    let matches = match Object::parse_any(&input) {
        Ok(obj) => {
            link.build_id.is_empty()
                || identity::build_id(&obj) == Some(&link.build_id[..])
                || crate::dwarf::debug_sup(&obj, true)
                    .is_some_and(|own| own.build_id == link.build_id)
        }
        Err(_) => false,
    };
    if !matches {
        warnings.push(
            WarningKind::Companion,
            format!(
                "{}: not the alternate debug file this file links to (build ID differs); not used",
                candidate.display()
            ),
        );
        return None;
    }
    Some(input)
}
