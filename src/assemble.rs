//! A module assembled from what the readers found (`Sources`: identity, debug
//! information, symbol table, exports, unwind tables, frame data): which function is
//! kept at each address, how each is named from its debug information and the symbols
//! there (demangled), PUBLIC records where no function is, and FILE and INLINE_ORIGIN
//! ids renumbered densely in name order. The model (`model/`) holds the result and
//! knows none of the readers.

use rayon::prelude::*;

use crate::error::{Warning, WarningKind, Warnings};
use crate::identity::Identity;
use crate::model::body::{self, UnitBodies};
use crate::model::cfi::CfiTables;
use crate::model::debuginfo::{DebugInfo, FunctionRecord};
use crate::model::ids::{Arch, CodeId, DebugId};
use crate::model::module::{Function, Module, Public, body_bytes, covered};
use crate::symbols::{Exports, Symbol};

/// Fallback name for a function that neither DWARF nor the symbol table names, as
/// Breakpad writes it.
const NAME_OMITTED: &str = "<name omitted>";

/// A module with only its identity.
pub(crate) fn header(identity: Identity) -> Module {
    Module {
        os: identity.os,
        arch: Arch::from_name(identity.arch),
        debug_id: DebugId::computed(identity.debug_id),
        code_id: identity.code_id.map(CodeId::computed),
        code_file: identity.code_file,
        name: identity.name,
        soname: identity.soname,
        ..Default::default()
    }
}

/// Builds the model from every source a reader found; nothing edits it afterwards.
pub(crate) fn build(sources: Sources, warnings: &mut Warnings) -> Module {
    let Sources {
        identity,
        debug_info,
        symbols,
        bias,
        exports,
        stack_win,
        cfi,
        extra_info,
        prefer_symbol_names,
    } = sources;
    let mut m = from_debug_info(
        identity,
        debug_info,
        symbols,
        bias,
        prefer_symbol_names,
        warnings,
    );
    if let Some(exports) = exports {
        add_exports(&mut m, exports, warnings);
    }
    // x86: a PUBLIC's argument bytes are those of the frame data at its address.
    for p in &mut m.publics {
        let i = stack_win.partition_point(|r| u64::from(r.rva) < p.address);
        if let Some(r) = stack_win.get(i).filter(|r| u64::from(r.rva) == p.address) {
            p.param_size = r.params_size;
        }
    }
    m.stack_win = stack_win;
    m.cfi = cfi.map(|c| std::sync::Arc::new(c) as std::sync::Arc<dyn CfiTables>);
    m.extra_info = extra_info;
    m
}

/// FUNC and PUBLIC records from the debug information and the symbols. `bias` is
/// subtracted from every address (the load address, or 0 to keep absolute
/// addresses).
fn from_debug_info(
    identity: Identity,
    dwarf: DebugInfo,
    symbols: Vec<Symbol>,
    bias: u64,
    prefer_symbol_names: bool,
    warnings: &mut Warnings,
) -> Module {
    let mut m = header(identity);
    let index = SymbolIndex::new(&symbols);
    // Which functions are kept is decided in address order (each against the one
    // before); naming them, which demangles symbols, is done in parallel after.
    let (groups, overlaps) = first_of_each_address(dwarf.functions, bias);
    let kept: Vec<Function> = groups
        .into_par_iter()
        .map(|(first, dwarf_names)| {
            let f = name_function(first, dwarf_names, &index, bias);
            match prefer_symbol_names {
                true => named_as_the_symbol_table_does(f, &index, bias),
                false => f,
            }
        })
        .collect();
    if overlaps > 0 {
        warnings.push(
            WarningKind::Symbols,
            format!("{overlaps} functions overlap an earlier function and were left out"),
        );
    }

    // FILE and INLINE_ORIGIN ids: dense, in sorted name order, so that the output
    // does not depend on the order units were read in. Only what the kept functions
    // use is written.
    let (used_files, used_origins) =
        usage(&kept, &dwarf.bodies, dwarf.files.len(), dwarf.origins.len());
    let file_map = renumber(&dwarf.files, &used_files, &mut m.files);
    let origin_map = renumber(&dwarf.origins, &used_origins, &mut m.origins);
    m.bodies = dwarf.bodies;
    for u in &mut m.bodies {
        for id in &mut u.files {
            *id = file_map.get(*id as usize).copied().unwrap_or(u32::MAX);
        }
        for id in &mut u.origins {
            *id = origin_map.get(*id as usize).copied().unwrap_or(u32::MAX);
        }
    }
    m.bias = bias;
    m.publics = index.publics(&kept, bias);
    m.functions = kept;
    m
}

/// An export's name, demangled and printable.
fn export_name(raw: &[u8]) -> Option<String> {
    let name =
        crate::demangle::demangle(&String::from_utf8_lossy(raw), crate::demangle::Lang::Other);
    crate::demangle::sanitize(&name)
}

/// Symbols by address; stable, so that at one address the symbol-table order (whose
/// first symbol names a PUBLIC) is kept.
struct SymbolIndex<'s> {
    symbols: &'s [Symbol],
    order: Vec<usize>,
}

impl<'s> SymbolIndex<'s> {
    fn new(symbols: &'s [Symbol]) -> Self {
        let mut order: Vec<usize> = (0..symbols.len()).collect();
        order.sort_by_key(|&i| symbols[i].address);
        SymbolIndex { symbols, order }
    }

    /// The symbols at `addr`, one per name.
    fn at(&self, addr: u64) -> Vec<&'s Symbol> {
        let symbols = self.symbols;
        let first = self.order.partition_point(|&i| symbols[i].address < addr);
        let mut out: Vec<&Symbol> = Vec::new();
        for &i in self.order[first..]
            .iter()
            .take_while(|&&i| symbols[i].address == addr)
        {
            if !out.iter().any(|o| o.raw == symbols[i].raw) {
                out.push(&symbols[i]);
            }
        }
        out
    }

    /// PUBLIC: the first symbol at each address not covered by a function, named in
    /// parallel (each demangles its symbols), by address.
    fn publics(&self, functions: &[Function], bias: u64) -> Vec<Public> {
        let mut addresses: Vec<u64> = self
            .order
            .iter()
            .map(|&i| self.symbols[i].address)
            .collect();
        addresses.dedup();
        addresses.retain(|&a| !covered(functions, a.wrapping_sub(bias)));
        let mut publics: Vec<Public> = addresses
            .into_par_iter()
            .filter_map(|address| {
                let here = self.at(address);
                let name = here.iter().find_map(|s| s.display_name())?;
                Some(Public {
                    address: address.wrapping_sub(bias),
                    name,
                    multiple: distinct_names(&here) > 1,
                    param_size: 0,
                })
            })
            .collect();
        // By address, for the same order on every run and the order readers expect.
        publics.sort_by_key(|p| p.address);
        publics
    }
}

/// The first function at each address with how many DWARF names the functions there
/// have, in address order, leaving out (and counting) those that overlap the one kept
/// before them.
fn first_of_each_address(
    mut funcs: Vec<FunctionRecord>,
    bias: u64,
) -> (Vec<(FunctionRecord, usize)>, usize) {
    // Stable: of several functions at one address the first in DWARF order wins,
    // which is also the one llvm-symbolizer reports.
    funcs.sort_by_key(|f| f.start);
    let mut groups: Vec<(FunctionRecord, usize)> = Vec::with_capacity(funcs.len());
    let mut overlaps = 0usize;
    let mut iter = funcs.into_iter().peekable();
    while let Some(first) = iter.next() {
        let mut dwarf_names: Vec<String> = first.name.iter().cloned().collect();
        while let Some(same) = iter.next_if(|f| f.start == first.start) {
            dwarf_names.extend(same.name);
        }
        dwarf_names.sort_unstable();
        dwarf_names.dedup();
        if let Some((prev, _)) = groups.last()
            && first.start.wrapping_sub(bias)
                < prev.start.wrapping_sub(bias) + (prev.end - prev.start)
        {
            overlaps += 1;
            continue;
        }
        groups.push((first, dwarf_names.len()));
    }
    (groups, overlaps)
}

/// The FUNC record of `first`, named from its debug info and the symbols at its
/// address.
fn name_function(
    first: FunctionRecord,
    dwarf_names: usize,
    index: &SymbolIndex,
    bias: u64,
) -> Function {
    let syms_here = index.at(first.start);
    // Several names for the same code (identical code folding, aliases), counted
    // within one source: a DWARF name and the symbol of a GCC clone (`f` and
    // `f.constprop.0`) are one function.
    let multiple = dwarf_names > 1 || distinct_names(&syms_here) > 1;
    let name = match first.name {
        Some(n) if first.name_from_linkage => {
            version_alias(&syms_here).filter(|a| *a != n).unwrap_or(n)
        }
        // GCC gives no linkage name to functions in anonymous namespaces: the name
        // built from the DIE tree lacks the parameter list every other C++ FUNC has.
        // The mangled symbol at the same address has it.
        Some(n) => syms_here
            .iter()
            .filter(|s| s.is_mangled())
            .find_map(|s| s.display_name().filter(|d| *d != s.raw))
            .map(|d| strip_clone_suffixes(&d).to_string())
            .or_else(|| extern_c_name(&n, &syms_here))
            .unwrap_or(n),
        None => syms_here
            .iter()
            .find_map(|s| s.display_name())
            .unwrap_or_else(|| NAME_OMITTED.to_string()),
    };
    Function {
        address: first.start.wrapping_sub(bias),
        size: first.end - first.start,
        name,
        multiple,
        param_size: first.param_size,
        body: first.body,
    }
}

/// `f` named by the first symbol at its address where that symbol's name differs (as
/// Breakpad's Mac dumper's `-x` prefers the extern name over the DWARF one).
fn named_as_the_symbol_table_does(mut f: Function, index: &SymbolIndex, bias: u64) -> Function {
    let symbol_name = index
        .at(f.address.wrapping_add(bias))
        .iter()
        .find_map(|s| s.display_name())
        .map(|d| strip_clone_suffixes(&d).to_string());
    if let Some(name) = symbol_name.filter(|n| *n != f.name) {
        f.name = name;
    }
    f
}

/// Everything a module is built from: what the container and debug-info readers found.
pub(crate) struct Sources {
    pub identity: Identity,
    pub debug_info: DebugInfo,
    pub symbols: Vec<Symbol>,
    /// Subtracted from every address: the load address, or 0 to keep absolute ones.
    pub bias: u64,
    /// A PE's exported functions, named as PUBLICs where nothing else names them.
    pub exports: Option<Exports>,
    /// x86 frame data from a PDB (sorted by address).
    pub stack_win: Vec<crate::model::stack_win::StackWin>,
    pub cfi: Option<crate::unwind::CfiSource>,
    /// `INFO KEY value` records after the others.
    pub extra_info: Vec<(String, String)>,
    /// Functions named by the symbol table where it differs (`-x`).
    pub prefer_symbol_names: bool,
}

impl Sources {
    /// Sources with debug information and symbols only.
    pub fn new(identity: Identity, debug_info: DebugInfo, symbols: Vec<Symbol>, bias: u64) -> Self {
        Sources {
            identity,
            debug_info,
            symbols,
            bias,
            exports: None,
            stack_win: Vec::new(),
            cfi: None,
            extra_info: Vec::new(),
            prefer_symbol_names: false,
        }
    }
}

/// PUBLIC records for exported functions no FUNC or PUBLIC covers (a PE without debug
/// information still names its entry points).
///
/// The names written count against the file's [`Allowance`](crate::untrusted::Allowance):
/// each export's name is its own string in a real image, but a crafted one pointed
/// 4,096 exports at one 60 KB string (246 MB of PUBLIC records from 100 KB).
fn add_exports(m: &mut Module, exports: Exports, warnings: &mut Warnings) {
    let Exports {
        entries,
        mut allowance,
    } = exports;
    let existing: std::collections::HashSet<u64> = m.publics.iter().map(|p| p.address).collect();
    let mut seen = std::collections::HashSet::new();
    let mut added = false;
    for (va, raw) in entries {
        let address = va.wrapping_sub(m.bias);
        if m.covers(address)
            || existing.contains(&address)
            || seen.contains(&address)
            || !allowance.take(raw.len())
        {
            continue;
        }
        let Some(name) = export_name(&raw) else {
            continue;
        };
        seen.insert(address);
        m.publics.push(Public {
            address,
            name,
            multiple: false,
            param_size: 0,
        });
        added = true;
    }
    if allowance.cut > 0 {
        let why = format!(
            "export table: {} export(s) left out: their names add up to more than 16 times \
             the file (one name shared by many exports)",
            allowance.cut
        );
        warnings.add(Warning::new(WarningKind::Symbols, why).on("export table"));
    }
    if added {
        // By address, as the model keeps them.
        m.publics.sort_by_key(|p| p.address);
    }
}

/// Which files and origins (by extraction id) the records of `funcs` use: only those
/// get FILE and INLINE_ORIGIN records.
fn usage(
    funcs: &[Function],
    bodies: &[UnitBodies],
    files: usize,
    origins: usize,
) -> (Vec<bool>, Vec<bool>) {
    let empty = || (vec![false; files], vec![false; origins]);
    funcs
        .par_chunks(1024)
        .fold(empty, |(mut uf, mut uo), chunk| {
            for f in chunk {
                let Some((unit, bytes)) = body_bytes(bodies, f.body) else {
                    continue;
                };
                let mark = |id: u32, used: &mut Vec<bool>| {
                    if let Some(u) = used.get_mut(id as usize) {
                        *u = true;
                    }
                };
                body::ids(bytes, |id| match id {
                    body::Id::File(slot) => mark(unit.file(slot), &mut uf),
                    body::Id::Origin(slot) => mark(unit.origin(slot), &mut uo),
                });
            }
            (uf, uo)
        })
        .reduce(empty, |(mut af, mut ao), (bf, bo)| {
            af.iter_mut().zip(bf).for_each(|(a, b)| *a |= b);
            ao.iter_mut().zip(bo).for_each(|(a, b)| *a |= b);
            (af, ao)
        })
}

/// `f(int) [clone .constprop.0] [clone .cold]` -> `f(int)`: the symbol of a GCC clone
/// names a part of the source function, and FUNC names the source function.
/// The name a library exports a C++ function under when it renames it with a symbol
/// version: libstdc++'s compatibility shims are compiled as `std::istream::ignoreXX(long)`
/// and exported as `_ZNSi6ignoreEl@GLIBCXX_3.4`; people look for `ignore`. The default
/// version (`@@`) is preferred; `None` without versioned C++ symbols.
fn version_alias(syms: &[&Symbol]) -> Option<String> {
    syms.iter()
        .filter_map(|s| {
            let (base, version) = s.versioned();
            (!version.is_empty() && base.starts_with("_Z"))
                .then_some((!version.starts_with("@@"), base))
        })
        .min()
        .and_then(|(_, base)| {
            crate::demangle::sanitize(&crate::demangle::demangle(
                base,
                crate::demangle::Lang::Other,
            ))
        })
        .filter(|d| !d.starts_with("_Z"))
}

/// An `extern "C"` function declared in a namespace: DWARF names it
/// `__cxxabiv1::__cxa_vec_new3`, but it has C linkage, and its symbol (what every other
/// tool shows) is the bare `__cxa_vec_new3`.
fn extern_c_name(qualified: &str, syms: &[&Symbol]) -> Option<String> {
    let (_, last) = qualified.rsplit_once("::")?;
    // A C symbol's GCC clone suffix (`__cxa_vec_cleanup.cold`) starts at its first dot:
    // C identifiers have none.
    syms.iter()
        .any(|s| !s.is_mangled() && s.versioned().0.split('.').next() == Some(last))
        .then(|| last.to_string())
}

fn strip_clone_suffixes(name: &str) -> &str {
    let mut name = name;
    while let Some(rest) = name.strip_suffix(']') {
        match rest.rfind(" [clone .") {
            Some(i) => name = &name[..i],
            None => break,
        }
    }
    name
}

/// How many different names the symbols at one address show: aliases that demangle
/// alike (a C++ constructor's C1 and C2 symbols) are one name.
fn distinct_names(syms: &[&Symbol]) -> usize {
    if syms.len() < 2 {
        return syms.len();
    }
    let mut names: Vec<String> = syms.iter().filter_map(|s| s.display_name()).collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

/// Keeps the used entries of `names`, sorted, in `out`; returns old id -> new id.
fn renumber<S: AsRef<str> + Sync>(names: &[S], used: &[bool], out: &mut Vec<String>) -> Vec<u32> {
    // Each with its name's first 16 bytes, big-endian: ordering those numbers orders
    // the names by their first 16 bytes, and the names themselves, scattered in memory,
    // are only read where those are equal. Compared through the names alone, the sort
    // of ceph-osd's 200,000 INLINE_ORIGIN names missed the cache at nearly every step.
    let prefix = |name: &str| {
        let mut head = [0u8; 16];
        let n = name.len().min(16);
        head[..n].copy_from_slice(&name.as_bytes()[..n]);
        u128::from_be_bytes(head)
    };
    let mut ids: Vec<(u128, usize)> = (0..names.len())
        .filter(|&i| used[i])
        .map(|i| (prefix(names[i].as_ref()), i))
        .collect();
    // By name: the ids must not depend on the order units were read or interned in.
    // Equal names (paths that normalize or remap to one) share an id, so the order
    // among them does not matter and an unstable sort gives the same result. Padded
    // with zeros, a short name's prefix still sorts before those of the longer names
    // it starts; where the padding meets a NUL in another name, the prefixes tie and
    // the names decide.
    ids.par_sort_unstable_by(|&(ka, a), &(kb, b)| {
        ka.cmp(&kb)
            .then_with(|| names[a].as_ref().cmp(names[b].as_ref()))
    });
    let mut map = vec![u32::MAX; names.len()];
    for &(_, old) in &ids {
        let name = names[old].as_ref();
        if out.last().is_none_or(|last| last != name) {
            out.push(name.to_string());
        }
        map[old] = (out.len() - 1) as u32;
    }
    map
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renumbered_names_are_in_str_order() {
        let names = [
            "b",
            "a",
            "ab",
            "ab\0",
            "ab\0c",
            "abcdefghij",
            "abcdefghi",
            "",
            "\0",
            "zz",
            "ab",
            "abcdefgh",
            "abcdefgh\u{e9}",
            "\u{e9}",
            "std::vector<int>",
            "std::vec",
        ];
        let used = vec![true; names.len()];
        let mut out = Vec::new();
        let map = renumber(&names, &used, &mut out);
        let mut want: Vec<&str> = names.to_vec();
        want.sort();
        want.dedup();
        assert_eq!(out, want);
        for (i, name) in names.iter().enumerate() {
            assert_eq!(out[map[i] as usize], *name);
        }
    }

    #[test]
    fn clone_suffixes() {
        assert_eq!(
            strip_clone_suffixes("f(int) [clone .constprop.0] [clone .cold]"),
            "f(int)"
        );
        assert_eq!(strip_clone_suffixes("f(int)"), "f(int)");
        assert_eq!(strip_clone_suffixes("a[3]"), "a[3]");
    }
}
