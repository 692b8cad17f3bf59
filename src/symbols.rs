//! Function symbols from the ELF symbol tables: the source of `PUBLIC` records and of
//! names for functions the DWARF leaves unnamed.

use object::{Architecture, Object as _, ObjectSymbol as _, SymbolKind};

use crate::demangle::{Lang, demangle, sanitize};
use crate::load::Object;

/// A defined function symbol, demangled, at its absolute address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Symbol {
    pub address: u64,
    pub name: String,
    /// The raw name was mangled (so `name` carries a C++ parameter list or Rust path).
    pub mangled: bool,
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
            let raw = String::from_utf8_lossy(raw);
            let demangled = demangle(&raw, Lang::Other);
            let mangled = demangled != raw;
            let Some(name) = sanitize(&demangled) else {
                continue;
            };
            out.push(Symbol {
                address,
                name,
                mangled,
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
