//! Function symbols from the ELF symbol tables: the source of `PUBLIC` records and of
//! names for functions the DWARF leaves unnamed.

use object::{
    Architecture, FileFlags, Object as _, ObjectSection as _, ObjectSymbol as _, SymbolKind,
};

use crate::demangle::{Lang, demangle, sanitize};
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
    /// True for C++ (Itanium and MSVC) and Rust mangled names.
    pub fn is_mangled(&self) -> bool {
        self.raw.starts_with("_Z") || self.raw.starts_with("_R") || self.raw.starts_with('?')
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
/// underscore the C ABI adds.
pub fn function_symbols(obj: &Object, layout: &crate::identity::Layout) -> Vec<Symbol> {
    let thumb = obj.file.architecture() == Architecture::Arm;
    let macho = obj.file.format() == object::BinaryFormat::MachO;
    let opd = FunctionDescriptors::of(obj);
    let mut out = Vec::new();
    let mut collect = |syms: &mut dyn Iterator<Item = object::Symbol<'_, '_>>| {
        for sym in syms {
            if sym.kind() != SymbolKind::Text || !sym.is_definition() {
                continue;
            }
            let mut address = sym.address();
            if thumb {
                // The low bit of an ARM function symbol marks Thumb code, not an address.
                address &= !1;
            }
            if let Some(opd) = &opd {
                match opd.entry(address) {
                    Some(Some(code)) => address = code,
                    Some(None) => continue,
                    None => {}
                }
            }
            if address == 0 || layout.code_span_end(address).is_none() {
                continue;
            }
            let Ok(mut raw) = sym.name_bytes() else {
                continue;
            };
            if macho {
                raw = raw.strip_prefix(b"_").unwrap_or(raw);
            }
            if raw.is_empty() {
                continue;
            }
            out.push(Symbol {
                address,
                raw: String::from_utf8_lossy(raw).into_owned(),
            });
        }
    };
    let mut symtab = obj.file.symbols().peekable();
    if symtab.peek().is_some() {
        collect(&mut symtab);
    } else {
        collect(&mut obj.file.dynamic_symbols());
    }
    out
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
