//! ELF: the GNU build ID (or Breakpad's hash of `.text`) and the `PT_LOAD` layout.

use object::elf;
use object::read::elf::{Dyn as _, ElfFile, FileHeader, ProgramHeader};
use object::{Object as _, ObjectSection as _, SectionKind};

use super::{Identity, Layout, arch_name, debug_id, hex_upper, merge_spans};
use crate::load::Object;

pub(super) fn identity(obj: &Object, name: String) -> Identity {
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
        code_file: None,
        name,
        soname: soname(obj),
    }
}

/// The `DT_SONAME` of a shared library, from its dynamic section.
fn soname(obj: &Object) -> Option<String> {
    fn of<E: FileHeader>(f: &ElfFile<'_, E>) -> Option<String> {
        let (endian, data) = (f.endian(), f.data());
        let sections = f.elf_section_table();
        // The entries, and the index of the string table they name.
        let (entries, link) = sections.dynamic(endian, data).ok()??;
        let strings = sections.strings(endian, data, link).ok()?;
        let name = entries
            .iter()
            .take_while(|d| d.tag(endian) != elf::DT_NULL)
            .find(|d| d.tag(endian) == elf::DT_SONAME)?
            .string(endian, strings)
            .ok()?;
        std::str::from_utf8(name)
            .ok()
            .filter(|n| !n.is_empty())
            .map(str::to_string)
    }
    match &obj.file {
        object::File::Elf32(f) => of(f),
        object::File::Elf64(f) => of(f),
        _ => None,
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

pub(super) fn layout<E: FileHeader>(f: &ElfFile<'_, E>) -> Layout {
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
