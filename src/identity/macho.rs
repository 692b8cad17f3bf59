//! Mach-O: the LC_UUID and the `__TEXT` layout.

use object::{Object as _, ObjectSegment as _};

use super::{Identity, Layout, arch_name, hex_upper, text_spans};
use crate::load::Object;

/// Mach-O: the LC_UUID, unswapped, is the debug id (with age 0) and the code id.
pub(super) fn identity(obj: &Object, name: String) -> Identity {
    let uuid = obj.file.mach_uuid().ok().flatten();
    let hex = uuid.map(|u| hex_upper(&u));
    Identity {
        os: "mac".into(),
        arch: arch_name(obj),
        debug_id: format!("{}0", hex.clone().unwrap_or_else(|| "0".repeat(32))),
        code_id: hex,
        code_file: None,
        name,
        soname: None,
    }
}

/// The Mach-O UUID, if the file has one.
pub fn mach_uuid(obj: &Object) -> Option<[u8; 16]> {
    obj.file.mach_uuid().ok().flatten()
}

/// Mach-O: addresses are relative to the `__TEXT` segment's vmaddr; code is in the
/// executable sections (`__text`, `__stubs`, ...).
pub(super) fn layout(file: &object::File) -> Layout {
    let load_address = file
        .segments()
        .find(|s| s.name().ok().flatten() == Some("__TEXT"))
        .map_or(0, |s| s.address());
    Layout {
        load_address,
        code_spans: text_spans(file),
    }
}
