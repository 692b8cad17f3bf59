//! What each container says about a module: its identity (the `MODULE` and `INFO
//! CODE_ID` fields) and its layout (load address, executable address spans), which later
//! stages rely on. One room per container: `elf.rs`, `macho.rs`, `pe.rs`.

pub(crate) mod elf;
mod macho;
mod pe;

use object::{Architecture, BinaryFormat, Object as _, ObjectSection as _, SectionKind};

pub use elf::build_id;
pub use macho::mach_uuid;
pub use pe::{PdbRef, pdb_debug_id, pe_code_id, pe_facts};

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
    /// The image's file name, which `INFO CODE_ID` writes after a PE's code id.
    pub code_file: Option<String>,
    /// The module name (the file's basename unless overridden).
    pub name: String,
    /// A shared library's `DT_SONAME`, the name the dynamic loader (and so a crash
    /// report) may know it by.
    pub soname: Option<String>,
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

/// True for a 32-bit x86 PE or COFF file, whose names carry calling-convention
/// decorations ([`crate::demangle::x86`]).
pub fn is_x86_coff(obj: &Object) -> bool {
    matches!(obj.file.format(), BinaryFormat::Pe | BinaryFormat::Coff)
        && obj.file.architecture() == Architecture::I386
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
        BinaryFormat::MachO => macho::identity(obj, name),
        BinaryFormat::Pe => pe::identity(obj, name),
        _ => elf::identity(obj, name),
    }
}

/// The bytes of a hex string (either case; an even number of digits, at least two),
/// as reports and lists give build IDs.
pub fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() < 2 || !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
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
        object::File::Elf32(f) => elf::layout(f),
        object::File::Elf64(f) => elf::layout(f),
        file if file.format() == BinaryFormat::MachO => macho::layout(file),
        file if file.format() == BinaryFormat::Pe => pe::layout(obj, file),
        _ => Layout::default(),
    }
}

/// The address spans of the executable sections, sorted and merged.
pub(super) fn text_spans(file: &object::File) -> Vec<(u64, u64)> {
    let mut spans: Vec<(u64, u64)> = file
        .sections()
        .filter(|s| s.kind() == SectionKind::Text && s.size() > 0)
        .map(|s| (s.address(), s.address().saturating_add(s.size())))
        .collect();
    // Sorted and merged so that lookups can binary-search.
    spans.sort_unstable();
    merge_spans(spans)
}

pub(super) fn merge_spans(spans: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(spans.len());
    for (s, e) in spans {
        match merged.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => merged.push((s, e)),
        }
    }
    merged
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
