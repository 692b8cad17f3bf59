//! dwz's shared debug info: the alternate ("supplementary") file that
//! `.gnu_debugaltlink` (or DWARF 5's `.debug_sup`) names, holding the DIEs and strings
//! several debug files share, referred to by `DW_FORM_GNU_ref_alt` / `DW_FORM_ref_sup*`
//! and `DW_FORM_GNU_strp_alt` / `DW_FORM_strp_sup`.

use object::{Object as _, ObjectSection as _};

use crate::load::Object;

/// The alternate file a debug file links to: where it says, and the build ID it must
/// have (empty when the link gives none).
pub(crate) struct AltLink {
    pub path: String,
    pub build_id: Vec<u8>,
}

/// Reads `.gnu_debugaltlink` (path, NUL, build ID) or `.debug_sup` (version, flag, path,
/// NUL, checksum length and bytes).
pub(crate) fn alt_link(obj: &Object) -> Option<AltLink> {
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
