//! Function symbols from the ELF symbol tables: the source of `PUBLIC` records and of
//! names for functions the DWARF leaves unnamed.

use object::{Architecture, Object as _, ObjectSymbol as _, SymbolKind};

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
    /// True for C++ and Rust mangled names.
    pub fn is_mangled(&self) -> bool {
        self.raw.starts_with("_Z") || self.raw.starts_with("_R")
    }

    /// The demangled, writable name; `None` when nothing printable is left.
    pub fn display_name(&self) -> Option<String> {
        sanitize(&demangle(&self.raw, Lang::Other))
    }
}

/// Defined function symbols of `.symtab`, or of `.dynsym` when there is no `.symtab`, in
/// symbol-table order.
pub fn function_symbols(obj: &Object) -> Vec<Symbol> {
    let thumb = obj.file.architecture() == Architecture::Arm;
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
            if address == 0 {
                continue;
            }
            let Ok(raw) = sym.name_bytes() else { continue };
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
