//! dwz's shared debug info: the alternate ("supplementary") file that
//! `.gnu_debugaltlink` (or DWARF 5's `.debug_sup`) names, holding the DIEs and strings
//! several debug files share, referred to by `DW_FORM_GNU_ref_alt` / `DW_FORM_ref_sup*`
//! and `DW_FORM_GNU_strp_alt` / `DW_FORM_strp_sup`.

use std::path::{Path, PathBuf};

use object::{Object as _, ObjectSection as _};

use crate::debugfile::SYSTEM_DEBUG_DIR;
use crate::error::Warnings;
use crate::fetch::debuginfod::Debuginfod;
use crate::identity;
use crate::load::{Input, Object};

/// The alternate file a debug file links to: where it says, and the build ID it must
/// have (empty when the link gives none).
pub struct AltLink {
    pub path: String,
    pub build_id: Vec<u8>,
}

/// Reads `.gnu_debugaltlink` (path, NUL, build ID) or `.debug_sup` (version, flag, path,
/// NUL, checksum length and bytes).
pub fn alt_link(obj: &Object) -> Option<AltLink> {
    if let Some(data) = obj
        .file
        .section_by_name(".gnu_debugaltlink")
        .and_then(|s| s.data().ok())
    {
        return parse_debugaltlink(data);
    }
    debug_sup(obj, false)
}

/// Reads a `.gnu_debugaltlink` section: path, NUL, build ID.
pub(crate) fn parse_debugaltlink(data: &[u8]) -> Option<AltLink> {
    let nul = data.iter().position(|&b| b == 0)?;
    Some(AltLink {
        path: String::from_utf8_lossy(&data[..nul]).into_owned(),
        build_id: data[nul + 1..].to_vec(),
    })
}

/// The `.debug_sup` of `obj` if its is_supplementary flag is `supplementary`: in a file
/// that uses a supplement, the supplement's name and checksum; in the supplement itself,
/// its own checksum (which dwz writes instead of a build ID).
pub(crate) fn debug_sup(obj: &Object, supplementary: bool) -> Option<AltLink> {
    let data = obj.file.section_by_name(".debug_sup")?.data().ok()?;
    parse_debug_sup(data, supplementary)
}

/// Reads a `.debug_sup` section whose is_supplementary flag is `supplementary`.
pub(crate) fn parse_debug_sup(data: &[u8], supplementary: bool) -> Option<AltLink> {
    // version (2 bytes), is_supplementary (1 byte)
    if data.get(2) != Some(&u8::from(supplementary)) {
        return None;
    }
    let rest = data.get(3..)?;
    let nul = rest.iter().position(|&b| b == 0)?;
    let mut checksum = &rest[nul + 1..];
    let mut len = 0usize;
    let mut shift = 0;
    while let Some((&b, tail)) = checksum.split_first() {
        checksum = tail;
        len |= usize::from(b & 0x7f).checked_shl(shift)?;
        shift += 7;
        if b & 0x80 == 0 {
            break;
        }
    }
    Some(AltLink {
        path: String::from_utf8_lossy(&rest[..nul]).into_owned(),
        build_id: checksum.get(..len)?.to_vec(),
    })
}

/// Finds and opens the alternate file: as named (relative names are relative to the
/// file that names it), by build ID under `.build-id` trees, by its file name beside
/// the file that names it, or last from debuginfod by its build ID.
pub fn find(
    link: &AltLink,
    source: &Path,
    debug_dirs: &[PathBuf],
    debuginfod: Option<&Debuginfod>,
    warnings: &mut Warnings,
) -> Option<(PathBuf, Input)> {
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
            candidates.push(
                root.join(".build-id")
                    .join(&hex[..2])
                    .join(format!("{}.debug", &hex[2..])),
            );
        }
    }
    if let Some(name) = named.file_name() {
        candidates.push(dir.join(name));
    }
    for candidate in &candidates {
        if let Some(input) = open_if_linked(link, candidate, warnings) {
            return Some((candidate.clone(), input));
        }
    }
    let mut searched: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    if let Some(client) = debuginfod.filter(|_| link.build_id.len() >= 2) {
        let fetched = client.debuginfo(&link.build_id);
        warnings.0.extend(fetched.problems);
        searched.extend(fetched.asked);
        if let Some(path) = fetched.path
            && let Some(input) = open_if_linked(link, &path, warnings)
        {
            return Some((path, input));
        }
    }
    warnings.push(format!(
        "alternate debug file {:?} (dwz) not found; searched {}; names it holds are missing",
        link.path,
        searched.join(", ")
    ));
    None
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
                || debug_sup(&obj, true).is_some_and(|own| own.build_id == link.build_id)
        }
        Err(_) => false,
    };
    if !matches {
        warnings.push(format!(
            "{}: not the alternate debug file this file links to (build ID differs); not used",
            candidate.display()
        ));
        return None;
    }
    Some(input)
}
