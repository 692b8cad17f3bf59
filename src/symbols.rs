//! Function symbols from the ELF symbol tables and a PE's export table: the source of
//! `PUBLIC` records and of names for functions the debug info leaves unnamed.

use std::borrow::Cow;

use object::{
    Architecture, FileFlags, Object as _, ObjectSection as _, ObjectSymbol as _, SymbolKind,
};

use crate::demangle::{Lang, demangle, sanitize};
use crate::identity;
use crate::load::Object;

/// A defined function symbol at its absolute address, with its name as the symbol table
/// has it. Names are demangled only when written ([`Symbol::display_name`]): a large
/// binary has tens of thousands of symbols, nearly all covered by DWARF functions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub address: u64,
    pub raw: String,
}

impl Symbol {
    /// True for C++ (Itanium and MSVC), Rust and Swift mangled names.
    pub fn is_mangled(&self) -> bool {
        crate::demangle::looks_mangled(&self.raw) || self.raw.starts_with('?')
    }

    /// The demangled, writable name; `None` when nothing printable is left. An ELF
    /// symbol version (`_ZNSi6ignoreEl@GLIBCXX_3.4`) stays after the demangled name, as
    /// `c++filt` shows it.
    pub fn display_name(&self) -> Option<String> {
        let (base, version) = self.versioned();
        sanitize(&(demangle(base, Lang::Other) + version))
    }

    /// The name and its ELF symbol version (`@VERSION` or `@@VERSION`, else empty).
    pub fn versioned(&self) -> (&str, &str) {
        if self.raw.starts_with('?') {
            // MSVC decoration uses `@` itself; such names carry no ELF version.
            return (&self.raw, "");
        }
        match self.raw.find('@') {
            Some(i) if i > 0 => self.raw.split_at(i),
            _ => (&self.raw, ""),
        }
    }
}

/// True when `obj` has a non-empty `.symtab`.
pub fn has_symtab(obj: &Object) -> bool {
    obj.file.symbols().next().is_some()
}

/// Defined function symbols of `.symtab`, or of `.dynsym` when there is no `.symtab`, in
/// symbol-table order, that lie in the code of `layout`. Mach-O names lose the leading
/// underscore the C ABI adds, x86 COFF names their calling-convention decoration.
pub fn function_symbols(obj: &Object, layout: &crate::identity::Layout) -> Vec<Symbol> {
    let reading = Reading {
        thumb: obj.file.architecture() == Architecture::Arm,
        macho: obj.file.format() == object::BinaryFormat::MachO,
        x86_coff: identity::is_x86_coff(obj),
        opd: FunctionDescriptors::of(obj),
        layout,
    };
    let mut symtab = obj.file.symbols().peekable();
    if symtab.peek().is_some() {
        symtab.filter_map(|sym| reading.function(&sym)).collect()
    } else {
        obj.file
            .dynamic_symbols()
            .filter_map(|sym| reading.function(&sym))
            .collect()
    }
}

/// How a file's symbols are read as functions.
struct Reading<'a, 'l> {
    /// ARM: the low bit of a function symbol marks Thumb code, not an address.
    thumb: bool,
    /// Mach-O: C names carry a leading underscore.
    macho: bool,
    /// 32-bit x86 PE/COFF: names carry the C underscore and stdcall and fastcall
    /// decorations (`_f`, `_f@8`, `@f@8`).
    x86_coff: bool,
    opd: Option<FunctionDescriptors<'a>>,
    layout: &'l crate::identity::Layout,
}

impl Reading<'_, '_> {
    /// `sym` as a function symbol, if it is a defined one in the code.
    fn function(&self, sym: &object::Symbol<'_, '_>) -> Option<Symbol> {
        if sym.kind() != SymbolKind::Text || !sym.is_definition() {
            return None;
        }
        let mut address = sym.address();
        if self.thumb {
            address &= !1;
        }
        if let Some(opd) = &self.opd {
            match opd.entry(address) {
                Some(Some(code)) => address = code,
                Some(None) => return None,
                None => {}
            }
        }
        if address == 0 || self.layout.code_span_end(address).is_none() {
            return None;
        }
        let mut raw = sym.name_bytes().ok()?;
        if self.macho {
            raw = raw.strip_prefix(b"_").unwrap_or(raw);
        }
        // Checked by `from_utf8` first: the lossy reader goes byte by byte, and nearly
        // every name is valid.
        let mut raw = match std::str::from_utf8(raw) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        if self.x86_coff {
            raw = crate::demangle::x86::undecorate_symbol(&raw)
                .to_string()
                .into();
        }
        if raw.is_empty() {
            return None;
        }
        Some(Symbol {
            address,
            raw: raw.into_owned(),
        })
    }
}

/// ppc64 ELFv1 function descriptors: a function symbol's value is the address of its
/// descriptor in `.opd`, whose first doubleword is the code address.
struct FunctionDescriptors<'a> {
    address: u64,
    data: &'a [u8],
    big_endian: bool,
}

impl<'a> FunctionDescriptors<'a> {
    fn of(obj: &Object<'a>) -> Option<Self> {
        if obj.file.architecture() != Architecture::PowerPc64 {
            return None;
        }
        // e_flags bits 0-1: 1 is ELFv1, 2 is ELFv2, 0 (old toolchains) means ELFv1.
        if let FileFlags::Elf { e_flags, .. } = obj.file.flags()
            && e_flags.0 & 3 == 2
        {
            return None;
        }
        let section = obj.file.section_by_name(".opd")?;
        Some(FunctionDescriptors {
            address: section.address(),
            data: section.data().ok()?,
            big_endian: obj.is_big_endian(),
        })
    }

    /// `None` when `address` is not in `.opd`; `Some(None)` when it is but the
    /// descriptor cannot be read.
    fn entry(&self, address: u64) -> Option<Option<u64>> {
        let offset = usize::try_from(address.checked_sub(self.address)?).ok()?;
        if offset >= self.data.len() {
            return None;
        }
        let word: [u8; 8] = match self
            .data
            .get(offset..offset + 8)
            .and_then(|b| b.try_into().ok())
        {
            Some(w) => w,
            None => return Some(None),
        };
        let code = if self.big_endian {
            u64::from_be_bytes(word)
        } else {
            u64::from_le_bytes(word)
        };
        Some((code != 0).then_some(code))
    }
}

/// A PE's exports at addresses in its code, by virtual address, as the export table
/// lists them, with the output the file's size allows their names.
pub(crate) struct Exports {
    pub entries: Vec<(u64, Vec<u8>)>,
    pub allowance: crate::untrusted::Allowance,
}

/// The exports of `obj` that point into its code, with their names' allowance (see
/// [`Exports`]). A 32-bit image exports names as the compiler wrote them, stdcall
/// and fastcall decorations included (unless linked with `--kill-at` or a `.def`
/// file): they come off, as in the symbol table.
pub(crate) fn pe_exports(obj: &Object) -> Option<Exports> {
    let exports = obj.file.exports().ok()?;
    let layout = identity::layout(obj);
    let x86 = identity::is_x86_coff(obj);
    let mut entries = Vec::new();
    for e in exports.flatten() {
        let object::read::NameOrOrdinal::Name(mut raw) = e.name() else {
            continue;
        };
        let object::read::ExportTarget::Address { address: va } = e.target() else {
            continue;
        };
        if x86 && let Ok(name) = std::str::from_utf8(raw) {
            raw = crate::demangle::x86::undecorate_linkage(name).as_bytes();
        }
        if layout.code_span_end(va).is_some() {
            entries.push((va, raw.to_vec()));
        }
    }
    Some(Exports {
        entries,
        allowance: crate::untrusted::Allowance::for_input(obj.input.bytes().len()),
    })
}
