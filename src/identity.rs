//! The module's identity: the `MODULE` and `INFO CODE_ID` fields, and the ELF layout
//! facts (load address, executable address spans) that later stages rely on.

use object::elf;
use object::read::elf::{ElfFile, FileHeader, ProgramHeader};
use object::{
    Architecture, BinaryFormat, Object as _, ObjectSection as _, ObjectSegment as _, SectionKind,
};

use crate::load::Object;

/// What the `MODULE` and `INFO` records say about the binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Operating system field (`Linux`).
    pub os: String,
    /// Architecture field (`x86_64`, `arm64`, ...).
    pub arch: &'static str,
    /// Breakpad debug id: 32 uppercase hex digits and the age.
    pub debug_id: String,
    /// The full GNU build ID in uppercase hex, when the binary has one.
    pub code_id: Option<String>,
    /// The module name (the file's basename unless overridden).
    pub name: String,
}

/// Address facts about the ELF image.
#[derive(Debug, Clone, Default)]
pub struct Layout {
    /// The vaddr of the lowest `PT_LOAD` segment: every address written is relative to it.
    pub load_address: u64,
    /// Sorted, merged `[start, end)` spans of executable code. Empty when unknown, in which
    /// case no address is rejected for lying outside them.
    pub code_spans: Vec<(u64, u64)>,
}

impl Layout {
    /// The end of the code span containing `address`, if any. With no known spans every
    /// address is accepted and the span is unbounded.
    pub fn code_span_end(&self, address: u64) -> Option<u64> {
        if self.code_spans.is_empty() {
            return Some(u64::MAX);
        }
        let i = self
            .code_spans
            .partition_point(|&(start, _)| start <= address);
        let (start, end) = *self.code_spans.get(i.checked_sub(1)?)?;
        (start <= address && address < end).then_some(end)
    }
}

/// Breakpad's architecture name for the machine type.
pub fn arch_name(obj: &Object) -> &'static str {
    if obj.file.format() == BinaryFormat::MachO {
        return crate::load::slice_name(obj.file.architecture());
    }
    match obj.file.architecture() {
        Architecture::I386 => "x86",
        Architecture::X86_64 | Architecture::X86_64_X32 => "x86_64",
        Architecture::Aarch64 | Architecture::Aarch64_Ilp32 => "arm64",
        Architecture::Arm => "arm",
        Architecture::PowerPc => "ppc",
        Architecture::PowerPc64 => "ppc64",
        Architecture::Mips | Architecture::Mips64_N32 => "mips",
        Architecture::Mips64 => "mips64",
        Architecture::Riscv32 => "riscv",
        Architecture::Riscv64 => "riscv64",
        Architecture::S390x => "s390x",
        Architecture::Sparc | Architecture::Sparc32Plus => "sparc",
        Architecture::Sparc64 => "sparcv9",
        _ => "unknown",
    }
}

/// Computes the identity of an ELF or Mach-O file. `name` is the module name to write.
pub fn identity(obj: &Object, name: String) -> Identity {
    match obj.file.format() {
        BinaryFormat::MachO => macho_identity(obj, name),
        BinaryFormat::Pe => pe_identity(obj, name),
        _ => elf_identity(obj, name),
    }
}

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
fn pe_identity(obj: &Object, name: String) -> Identity {
    let facts = pe_facts(obj).unwrap_or(PeFacts {
        pdb: None,
        timestamp: 0,
        size_of_image: 0,
        image_base: 0,
    });
    let code_id = format!(
        "{} {name}",
        pe_code_id(facts.timestamp, facts.size_of_image)
    );
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
        name: crate::demangle::sanitize(&module_name).unwrap_or_else(|| "unnamed".into()),
    }
}

/// Mach-O: the LC_UUID, unswapped, is the debug id (with age 0) and the code id.
fn macho_identity(obj: &Object, name: String) -> Identity {
    let uuid = obj.file.mach_uuid().ok().flatten();
    let hex = uuid.map(|u| hex_upper(&u));
    Identity {
        os: "mac".into(),
        arch: arch_name(obj),
        debug_id: format!("{}0", hex.clone().unwrap_or_else(|| "0".repeat(32))),
        code_id: hex,
        name,
    }
}

/// The Mach-O UUID, if the file has one.
pub fn mach_uuid(obj: &Object) -> Option<[u8; 16]> {
    obj.file.mach_uuid().ok().flatten()
}

fn elf_identity(obj: &Object, name: String) -> Identity {
    let build_id = build_id(obj).filter(|id| !id.is_empty());
    let id_bytes: Vec<u8> = match build_id {
        Some(id) => id.to_vec(),
        None => text_hash(obj).to_vec(),
    };
    Identity {
        os: "Linux".into(),
        arch: arch_name(obj),
        debug_id: debug_id(&id_bytes, obj.is_big_endian()),
        code_id: build_id.map(hex_upper),
        name,
    }
}

/// The GNU build ID, from a note section or, for files without section headers, from a
/// `PT_NOTE` segment.
pub fn build_id<'a>(obj: &Object<'a>) -> Option<&'a [u8]> {
    if let Ok(Some(id)) = obj.file.build_id() {
        return Some(id);
    }
    match &obj.file {
        object::File::Elf32(f) => segment_build_id(f, obj.data),
        object::File::Elf64(f) => segment_build_id(f, obj.data),
        _ => None,
    }
}

fn segment_build_id<'a, E: FileHeader>(f: &ElfFile<'a, E>, data: &'a [u8]) -> Option<&'a [u8]> {
    let endian = f.endian();
    for phdr in f.elf_program_headers() {
        let Ok(Some(mut notes)) = phdr.notes(endian, data) else {
            continue;
        };
        while let Ok(Some(note)) = notes.next() {
            if note.name() == elf::ELF_NOTE_GNU && note.n_type(endian) == elf::NT_GNU_BUILD_ID {
                return Some(note.desc());
            }
        }
    }
    None
}

/// Breakpad's fallback identifier for binaries without a build ID: the first 4096 bytes
/// of `.text` XORed together in 16-byte blocks.
fn text_hash(obj: &Object) -> [u8; 16] {
    let mut out = [0u8; 16];
    let text = obj
        .file
        .section_by_name(".text")
        .and_then(|s| s.data().ok())
        .unwrap_or(&[]);
    let text = &text[..text.len().min(4096)];
    for chunk in text.chunks(16) {
        for (o, b) in out.iter_mut().zip(chunk) {
            *o ^= b;
        }
    }
    out
}

/// Formats the first 16 bytes of `id` (zero-padded) as a Breakpad debug id: a GUID whose
/// first three fields are read in the file's own byte order, plus the age `0`.
pub fn debug_id(id: &[u8], big_endian: bool) -> String {
    let mut guid = [0u8; 16];
    for (g, b) in guid.iter_mut().zip(id) {
        *g = *b;
    }
    if !big_endian {
        guid[0..4].reverse();
        guid[4..6].reverse();
        guid[6..8].reverse();
    }
    let mut s = hex_upper(&guid);
    s.push('0');
    s
}

/// Uppercase hex of `bytes`.
pub fn hex_upper(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::new(), |mut s, b| {
        let _ = write!(s, "{b:02X}");
        s
    })
}

/// The load address and the code spans of the image.
pub fn layout(obj: &Object) -> Layout {
    match &obj.file {
        object::File::Elf32(f) => elf_layout(f),
        object::File::Elf64(f) => elf_layout(f),
        file if file.format() == BinaryFormat::MachO => macho_layout(file),
        file if file.format() == BinaryFormat::Pe => pe_layout(obj, file),
        _ => Layout::default(),
    }
}

/// Mach-O: addresses are relative to the `__TEXT` segment's vmaddr; code is in the
/// executable sections (`__text`, `__stubs`, ...).
fn macho_layout(file: &object::File) -> Layout {
    let load_address = file
        .segments()
        .find(|s| s.name().ok().flatten() == Some("__TEXT"))
        .map_or(0, |s| s.address());
    Layout {
        load_address,
        code_spans: text_spans(file),
    }
}

/// PE: addresses are RVAs, relative to the image base; code is in the executable
/// sections.
fn pe_layout(obj: &Object, file: &object::File) -> Layout {
    let load_address = pe_facts(obj).map_or(0, |f| f.image_base);
    Layout {
        load_address,
        code_spans: text_spans(file),
    }
}

/// The address spans of the executable sections, sorted and merged.
fn text_spans(file: &object::File) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = file
        .sections()
        .filter(|s| s.kind() == SectionKind::Text && s.size() > 0)
        .map(|s| (s.address(), s.address().saturating_add(s.size())))
        .collect();
    // Sorted and merged so that lookups can binary-search.
    spans.sort_unstable();
    merge_spans(spans)
}

fn merge_spans(spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
}

fn elf_layout<E: FileHeader>(f: &ElfFile<'_, E>) -> Layout {
    let endian = f.endian();
    let mut load_address = None::<u64>;
    let mut spans = Vec::new();
    for phdr in f.elf_program_headers() {
        if phdr.p_type(endian) != elf::PT_LOAD {
            continue;
        }
        let vaddr: u64 = phdr.p_vaddr(endian).into();
        let memsz: u64 = phdr.p_memsz(endian).into();
        load_address = Some(load_address.map_or(vaddr, |a| a.min(vaddr)));
        if phdr.p_flags(endian).contains(elf::PF_X) && memsz > 0 {
            spans.push((vaddr, vaddr.saturating_add(memsz)));
        }
    }
    if spans.is_empty() {
        // No executable segment: a debug-only file whose program headers were dropped, or
        // an odd layout. Fall back to executable sections, which such files keep.
        for section in f.sections() {
            if section.kind() == SectionKind::Text && section.size() > 0 {
                let a = section.address();
                spans.push((a, a.saturating_add(section.size())));
            }
        }
    }
    // Sorted and merged so that lookups can binary-search.
    spans.sort_unstable();
    Layout {
        load_address: load_address.unwrap_or(0),
        code_spans: merge_spans(spans),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_id_swaps_guid_fields_for_little_endian() {
        let id: Vec<u8> = (0u8..20).collect();
        assert_eq!(debug_id(&id, false), "030201000504070608090A0B0C0D0E0F0");
        assert_eq!(debug_id(&id, true), "000102030405060708090A0B0C0D0E0F0");
    }

    #[test]
    fn short_build_id_is_zero_padded() {
        assert_eq!(
            debug_id(&[0xab, 0xcd], true),
            "ABCD00000000000000000000000000000"
        );
    }

    #[test]
    fn code_span_lookup() {
        let l = Layout {
            load_address: 0,
            code_spans: vec![(0x1000, 0x2000), (0x3000, 0x3010)],
        };
        assert_eq!(l.code_span_end(0x1000), Some(0x2000));
        assert_eq!(l.code_span_end(0x1fff), Some(0x2000));
        assert_eq!(l.code_span_end(0x2000), None);
        assert_eq!(l.code_span_end(0xfff), None);
        assert_eq!(l.code_span_end(0x300f), Some(0x3010));
        assert_eq!(Layout::default().code_span_end(0), Some(u64::MAX));
    }
}
