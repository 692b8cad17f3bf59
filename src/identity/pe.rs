//! PE: the CodeView record (which PDB the image was linked with), the code id a symbol
//! server files the image under, and the image-base layout.

use object::Object as _;

use super::{Identity, Layout, arch_name, debug_id, text_spans};
use crate::load::Object;

/// What a PE's headers say about it: its CodeView record (which PDB it was linked
/// with) and the two header fields a symbol server files the image itself under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PeFacts {
    /// The PDB's path as the linker wrote it, its GUID (as stored) and age.
    pub pdb: Option<PdbRef>,
    pub timestamp: u32,
    pub size_of_image: u32,
    pub image_base: u64,
}

/// A PDB as a CodeView record names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdbRef {
    pub path: String,
    pub guid: [u8; 16],
    pub age: u32,
}

impl PdbRef {
    /// The PDB's file name: the last component of the recorded path, which was
    /// written on Windows (`\`) or by a cross linker (`/`).
    pub fn file_name(&self) -> &str {
        self.path.rsplit(['\\', '/']).next().unwrap_or(&self.path)
    }

    /// The Breakpad debug id: the GUID's fields in uppercase hex, then the age in
    /// lowercase hex, as Breakpad's `GenerateDebugIdentifier` and the symbol server's
    /// directory names have it.
    pub fn debug_id(&self) -> String {
        pdb_debug_id(&self.guid, self.age)
    }
}

/// The Breakpad debug id of a PDB GUID (in its stored, little-endian field layout) and
/// age.
pub fn pdb_debug_id(guid: &[u8; 16], age: u32) -> String {
    let mut id = debug_id(guid, false);
    id.pop();
    id.push_str(&format!("{age:x}"));
    id
}

/// The CodeView record and header fields of a PE file; `None` for other formats.
pub fn pe_facts(obj: &Object) -> Option<PeFacts> {
    use object::read::pe::ImageNtHeaders;
    fn of<H: ImageNtHeaders>(f: &object::read::pe::PeFile<'_, H>) -> PeFacts {
        let optional = f.nt_headers().optional_header();
        use object::read::pe::ImageOptionalHeader as _;
        PeFacts {
            pdb: f.pdb_info().ok().flatten().map(|cv| PdbRef {
                path: String::from_utf8_lossy(cv.path()).into_owned(),
                guid: cv.guid(),
                age: cv.age(),
            }),
            timestamp: f
                .nt_headers()
                .file_header()
                .time_date_stamp
                .get(object::LittleEndian),
            size_of_image: optional.size_of_image(),
            image_base: optional.image_base(),
        }
    }
    match &obj.file {
        object::File::Pe32(f) => Some(of(f)),
        object::File::Pe64(f) => Some(of(f)),
        _ => None,
    }
}

/// The code id a symbol server files a PE under and Breakpad writes in `INFO CODE_ID`:
/// `TimeDateStamp` as eight uppercase hex digits, then `SizeOfImage` (pe_util.cc's
/// `%08X%X`).
pub fn pe_code_id(timestamp: u32, size_of_image: u32) -> String {
    format!("{timestamp:08X}{size_of_image:X}")
}

/// PE: the PDB named in the CodeView record gives the debug id and the module name, as
/// in Breakpad's and Mozilla's Windows dumpers; `INFO CODE_ID` has the image's code id
/// and file name. Without a CodeView record (MinGW without `--build-id`), the debug id
/// is zero and the module is named after the image. `name` is the image's file name.
pub(super) fn identity(obj: &Object, name: String) -> Identity {
    let facts = pe_facts(obj).unwrap_or(PeFacts {
        pdb: None,
        timestamp: 0,
        size_of_image: 0,
        image_base: 0,
    });
    let code_id = pe_code_id(facts.timestamp, facts.size_of_image);
    let code_file = Some(name.clone());
    let (debug_id, module_name) = match &facts.pdb {
        Some(pdb) if !pdb.file_name().is_empty() => (pdb.debug_id(), pdb.file_name().to_string()),
        Some(pdb) => (pdb.debug_id(), name),
        None => (format!("{}0", "0".repeat(32)), name),
    };
    Identity {
        os: "windows".into(),
        arch: arch_name(obj),
        debug_id,
        code_id: Some(code_id),
        code_file,
        name: crate::demangle::sanitize(&module_name).unwrap_or_else(|| "unnamed".into()),
        soname: None,
    }
}

/// PE: addresses are RVAs, relative to the image base; code is in the executable
/// sections.
pub(super) fn layout(obj: &Object, file: &object::File) -> Layout {
    let load_address = pe_facts(obj).map_or(0, |f| f.image_base);
    Layout {
        load_address,
        code_spans: text_spans(file),
    }
}
