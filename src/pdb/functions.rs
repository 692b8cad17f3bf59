//! Functions, line rows and inline sites from a PDB's module streams.
//!
//! Modules are read in parallel, a contiguous run of them per task: the `pdb` crate's
//! readers are neither `Send` nor shareable, so each task opens its own view of the
//! (memory-mapped) file. Tasks hand back string-table offsets and IPI indexes rather
//! than names; [`extract`] resolves them once, in module order, so the result does not
//! depend on how the work was split.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;

use pdb2::FallibleIterator as _;
use rayon::prelude::*;

use super::signatures::{LF_ARGLIST, NoModuleInfo, Signatures, Streams, lists_fit};
use super::{Pdb, corrupt, names, open};
use crate::error::{Error, WarningKind, Warnings};
use crate::model::body::{BodyRef, UnitBodies};
use crate::model::debuginfo::{DebugInfo, FunctionRecord, InlineSite, LineRow, intersect_ranges};

/// Inline nesting deeper than this is cut off: real code stays far below it, and a
/// crafted stream of unterminated sites cannot grow the stack without bound.
const MAX_INLINE_DEPTH: usize = 256;

/// Modules per task: enough tasks to balance uneven modules over every core, few
/// enough that each task's own view of the DBI stream stays cheap.
const TASKS_PER_THREAD: usize = 8;

/// One procedure of a module.
struct Piece {
    start: u64,
    end: u64,
    name: String,
    body: (usize, usize),
}

/// What a task finds in one module.
#[derive(Default)]
struct ModuleResult {
    pieces: Vec<Piece>,
    bytes: Vec<u8>,
    /// File slot -> string-table offset of its name.
    files: Vec<u32>,
    /// Name slot -> IPI index of the inlined function.
    origins: Vec<u32>,
    warnings: Vec<String>,
}

/// Reads every module's functions; `stored`: the PDB has its image's section headers
/// (see `sections.rs`).
pub(super) fn extract(
    path: &Path,
    bytes: &[u8],
    inlines: bool,
    stored: bool,
    release: &super::Release,
    warnings: &mut Warnings,
) -> Result<DebugInfo, Error> {
    let done_with = super::msf::module_releaser(bytes, release);
    let weights = crate::contain::contained(|| -> Result<Vec<u64>, Error> {
        let mut pdb = open(path, bytes)?;
        let dbi = pdb
            .debug_information()
            .map_err(|e| corrupt(path, "DBI stream", e))?;
        let mut modules = dbi.modules().map_err(|e| corrupt(path, "module list", e))?;
        let mut weights = Vec::new();
        while let Ok(Some(_)) = modules.next() {
            weights.push(0u64);
        }
        // A module's work follows its code: its procedures, rows and sites.
        if let Ok(mut contributions) = dbi.section_contributions() {
            while let Ok(Some(c)) = contributions.next() {
                if let Some(w) = weights.get_mut(c.module) {
                    *w = w.saturating_add(u64::from(c.size));
                }
            }
        }
        Ok(weights)
    })
    .unwrap_or_else(|why| {
        Err(Error::new(
            path,
            crate::error::ErrorKind::Corrupt(Box::new(why)),
        ))
    })?;
    let tasks = rayon::current_num_threads() * TASKS_PER_THREAD;
    let ranges = balanced_ranges(&weights, tasks);
    // One formatter of signatures for every task (it keeps what it has parsed).
    let mut head = open(path, bytes)?;
    let lists_fit =
        crate::contain::contained(|| lists_fit(&mut head, 2, LF_ARGLIST)).unwrap_or(false);
    if !lists_fit {
        warnings.push(
            WarningKind::Pdb,
            "PDB type stream: an argument list claims more entries than its record holds; \
             functions are named without their parameter lists",
        );
    }
    let streams = crate::contain::contained(|| Streams::read(&mut head))
        .ok()
        .flatten()
        .filter(|_| lists_fit);
    let dbi = crate::contain::contained(|| head.debug_information().ok())
        .ok()
        .flatten();
    let provider = NoModuleInfo;
    let sigs = match (&streams, &dbi) {
        (Some(s), Some(d)) => crate::contain::contained(|| Signatures::new(&provider, d, s))
            .ok()
            .flatten(),
        _ => None,
    };
    let sigs = sigs.as_ref();
    let results: Vec<Vec<ModuleResult>> = ranges
        .into_par_iter()
        .map(|(first, end)| {
            crate::contain::contained(|| {
                read_modules(path, bytes, (first, end), inlines, stored, sigs, &done_with)
            })
            .unwrap_or_else(|why| {
                vec![ModuleResult {
                    warnings: vec![format!(
                        "PDB modules {first}..{end}: {why}; their functions are left out"
                    )],
                    ..Default::default()
                }]
            })
        })
        .collect();
    let results: Vec<ModuleResult> = results.into_iter().flatten().collect();

    let mut pdb = open(path, bytes)?;
    let mut wanted: Vec<u32> = results
        .iter()
        .flat_map(|r| r.origins.iter().copied())
        .collect();
    wanted.sort_unstable();
    wanted.dedup();
    let mut w = Warnings::default();
    let names =
        crate::contain::contained(|| names::InlineeNames::read(&mut pdb, &wanted, sigs, &mut w))
            .unwrap_or_else(|why| {
                warnings.push(
                    WarningKind::Pdb,
                    format!("PDB IPI stream: {why}; inlined functions are unnamed"),
                );
                names::InlineeNames::default()
            });
    warnings.extend(w);
    let strings = crate::contain::contained(|| pdb.string_table().ok())
        .ok()
        .flatten();
    let mut allowance = crate::untrusted::Allowance::for_input(bytes.len());
    Ok(merge(
        results,
        strings.as_ref(),
        &names,
        &mut allowance,
        warnings,
    ))
}

/// Splits modules `0..weights.len()` into at most about `tasks` runs of similar weight
/// (a module's bytes of code), so that the last task is not one holding most of
/// the work: real PDBs put the program's modules first and hundreds of nearly empty
/// library ones after them. Opening the PDB for a task costs about 1.5 ms (measured on
/// the real-PDB bench), so a task is never smaller than a module.
fn balanced_ranges(weights: &[u64], tasks: usize) -> Vec<(usize, usize)> {
    // One more byte a module, so that empty modules still count and weights of 0 split.
    let total: u64 = weights.iter().map(|w| w.saturating_add(1)).sum();
    let target = total.div_ceil(tasks.max(1) as u64).max(1);
    let mut ranges = Vec::new();
    let (mut first, mut acc) = (0usize, 0u64);
    for (i, w) in weights.iter().enumerate() {
        acc = acc.saturating_add(w.saturating_add(1));
        if acc >= target {
            ranges.push((first, i + 1));
            (first, acc) = (i + 1, 0);
        }
    }
    if first < weights.len() {
        ranges.push((first, weights.len()));
    }
    ranges
}

/// Reads modules `first..end` with a view of the file of its own.
fn read_modules(
    path: &Path,
    bytes: &[u8],
    (first, end): (usize, usize),
    inlines: bool,
    stored: bool,
    sigs: Option<&Signatures>,
    done_with: &(dyn Fn(usize) + Sync),
) -> Vec<ModuleResult> {
    let failed = |why: String| {
        vec![ModuleResult {
            warnings: vec![why],
            ..Default::default()
        }]
    };
    let mut pdb = match open(path, bytes) {
        Ok(p) => p,
        Err(e) => return failed(e.to_string()),
    };
    // Without section headers nothing is placed (told once, by the caller).
    let address_map = match super::sections::address_map(&mut pdb, stored) {
        Ok(m) => m,
        Err(e) => return failed(format!("PDB section headers: {e}")),
    };
    let dbi = match pdb.debug_information() {
        Ok(d) => d,
        Err(e) => return failed(format!("PDB DBI stream: {e}")),
    };
    let mut modules = match dbi.modules() {
        Ok(m) => m,
        Err(e) => return failed(format!("PDB module list: {e}")),
    };
    let mut out = Vec::new();
    let mut index = 0usize;
    while index < end {
        let module = match modules.next() {
            Ok(Some(m)) => m,
            _ => break,
        };
        if index >= first {
            let name_of = |name: &str, ty| sigs.and_then(|s| s.function(name, index, ty));
            let read = crate::contain::contained(|| {
                read_module(&mut pdb, &address_map, &module, inlines, &name_of)
            });
            out.push(read.unwrap_or_else(|why| ModuleResult {
                warnings: vec![format!(
                    "PDB module {}: {why}; its functions are left out",
                    module.module_name()
                )],
                ..Default::default()
            }));
            done_with(index);
        }
        index += 1;
    }
    out
}

/// A module's inline functions by id, each with the first of its entries. One id can
/// have several: clang names a function template's id without its template arguments,
/// so every instantiation of overloads with one signature shares an id, each with its
/// own start line. Nothing in a site says which it meant; the first is the one
/// llvm-symbolizer reads (on the real-PDB bench, 100 addresses more agree with it than
/// with the last).
fn first_inlinees<'a>(info: &'a pdb2::ModuleInfo<'_>) -> HashMap<pdb2::IdIndex, pdb2::Inlinee<'a>> {
    let mut map = HashMap::new();
    let Ok(mut entries) = info.inlinees() else {
        return map;
    };
    while let Ok(Some(inlinee)) = entries.next() {
        map.entry(inlinee.index()).or_insert(inlinee);
    }
    map
}

/// The procedures of one module with their line rows and inline sites.
fn read_module(
    pdb: &mut Pdb<'_>,
    address_map: &pdb2::AddressMap<'_>,
    module: &pdb2::Module<'_>,
    inlines: bool,
    name_of: &Named,
) -> ModuleResult {
    let mut out = ModuleResult::default();
    let name = module.module_name();
    let info = match pdb.module_info(module) {
        Ok(Some(i)) => i,
        Ok(None) => return out,
        Err(e) => {
            out.warnings.push(format!(
                "PDB module {name}: {e}; its functions are left out"
            ));
            return out;
        }
    };
    let program = info.line_program().ok();
    let inlinees = if inlines {
        first_inlinees(&info)
    } else {
        HashMap::new()
    };
    let mut cx = ModuleCx {
        address_map,
        program: program.as_ref(),
        file_slots: HashMap::new(),
        origin_slots: HashMap::new(),
        rows: HashMap::new(),
        row_allowance: MIN_ROW_ALLOWANCE,
        rows_cut: 0,
        out: &mut out,
        name_of,
    };
    let mut symbols = match info.symbols() {
        Ok(s) => s,
        Err(e) => {
            cx.out.warnings.push(format!(
                "PDB module {name}: {e}; its functions are left out"
            ));
            return out;
        }
    };
    let bad_sites = read_procedures(&mut cx, &mut symbols, &inlinees, inlines, &name);
    let rows_cut = cx.rows_cut;
    if bad_sites > 0 {
        out.warnings.push(format!(
            "PDB module {name}: {bad_sites} inline sites without line information left out"
        ));
    }
    if rows_cut > 0 {
        out.warnings.push(format!(
            "PDB module {name}: {rows_cut} line rows left out: its procedures claim more \
             than twice the rows its line table has (procedures sharing one address)"
        ));
    }
    out
}

/// Reads a module's symbol stream: each procedure with its inline sites, finished when
/// its scope ends (or the next begins). How many inline sites had no line information.
fn read_procedures(
    cx: &mut ModuleCx<'_, '_, '_>,
    symbols: &mut pdb2::SymbolIter<'_>,
    inlinees: &HashMap<pdb2::IdIndex, pdb2::Inlinee<'_>>,
    inlines: bool,
    name: &str,
) -> usize {
    let mut current: Option<Proc> = None;
    // A block of the current procedure's code that PGO moved away (S_SEPCODE): read as
    // a procedure of its own under the parent's name, until its own end.
    let mut separated: Option<Proc> = None;
    let mut bad_sites = 0usize;
    loop {
        let symbol = match symbols.next() {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(e) => {
                cx.out.warnings.push(format!(
                    "PDB module {name}: {e}; the symbols after this point are skipped"
                ));
                break;
            }
        };
        match symbol.parse() {
            Ok(pdb2::SymbolData::Procedure(p)) => {
                for done in [separated.take(), current.take()].into_iter().flatten() {
                    cx.finish(done);
                }
                current = cx.begin(&p);
            }
            Ok(pdb2::SymbolData::SeparatedCode(sep)) => {
                if let Some(done) = separated.take() {
                    cx.finish(done);
                }
                // Only under the procedure it names: one elsewhere has no name to take.
                separated = current
                    .as_ref()
                    .filter(|parent| parent.offset == sep.parent_offset)
                    .and_then(|parent| cx.begin_separated(parent, &sep));
            }
            Ok(pdb2::SymbolData::InlineSite(site)) if inlines => {
                if let Some(proc) = separated.as_mut().or(current.as_mut())
                    && !cx.enter_site(proc, &site, inlinees)
                {
                    bad_sites += 1;
                }
            }
            Ok(pdb2::SymbolData::InlineSiteEnd) => {
                if let Some(proc) = separated.as_mut().or(current.as_mut()) {
                    proc.open_sites.pop();
                }
            }
            Ok(pdb2::SymbolData::ScopeEnd) => {
                let ends =
                    |p: &Option<Proc>| p.as_ref().is_some_and(|p| p.end_symbol == symbol.index());
                if ends(&separated) {
                    if let Some(done) = separated.take() {
                        cx.finish(done);
                    }
                } else if ends(&current) {
                    for done in [separated.take(), current.take()].into_iter().flatten() {
                        cx.finish(done);
                    }
                }
            }
            _ => {}
        }
    }
    for done in [separated.take(), current.take()].into_iter().flatten() {
        cx.finish(done);
    }
    bad_sites
}

/// A line row as read: address, length, line, file.
type RawRow = (u64, Option<u32>, u32, pdb2::FileIndex);

/// Line records a module may give beyond twice the rows it reads (as DWARF units may).
const MIN_ROW_ALLOWANCE: u64 = 65_536;

/// A procedure being read: its rows and the inline sites seen so far.
struct Proc {
    start: u64,
    end: u64,
    name: String,
    /// Where its inline sites' binary annotations count from: its own start, or for
    /// separated code its parent procedure's.
    offset: pdb2::PdbInternalSectionOffset,
    end_symbol: pdb2::SymbolIndex,
    /// `(start, end, line, file slot)`, by address.
    lines: Vec<(u64, u64, u32, u32)>,
    /// Pre-order.
    sites: Vec<Site>,
    /// Indexes into `sites` of the sites not yet closed, innermost last.
    open_sites: Vec<usize>,
}

/// A site's call from one line of its caller: `(line, file, ranges)`.
type Call = (u32, u32, Vec<(u64, u64)>);

/// A child site (by index) and its ranges inside one record of its parent.
type ChildPart = (usize, Vec<(u64, u64)>);

struct Site {
    depth: u32,
    origin: u32,
    /// `(call line, call file, ranges)`: one per line the caller is at over the site's
    /// code, since a site's code can be spread over several of the caller's lines (a
    /// loop's test and body, say) and a frame's call line is the caller's line there.
    calls: Vec<Call>,
    lines: Vec<(u64, u64, u32, u32)>,
}

struct ModuleCx<'c, 'm, 'p> {
    address_map: &'c pdb2::AddressMap<'m>,
    program: Option<&'c pdb2::LineProgram<'p>>,
    /// Checksum-table offset -> file slot.
    file_slots: HashMap<u32, u32>,
    /// IPI index -> name slot.
    origin_slots: HashMap<u32, u32>,
    /// The line rows of a symbol's offset, by address: read once per offset. 8,000
    /// procedures at one offset with 60,000 rows read them all 8,000 times (> 30 s).
    rows: HashMap<(u16, u32), Rc<[RawRow]>>,
    /// Line records this module may still give: twice the rows read, plus
    /// [`MIN_ROW_ALLOWANCE`]. Real procedures share no rows, so only a crafted module
    /// reaches it.
    row_allowance: u64,
    rows_cut: u64,
    out: &'c mut ModuleResult,
    /// A procedure's name with its parameter list (signatures.rs).
    name_of: &'c Named<'c>,
}

/// A procedure's name and type to its full name, when its type can be read.
type Named<'n> = dyn Fn(&str, pdb2::TypeIndex) -> Option<String> + 'n;

impl ModuleCx<'_, '_, '_> {
    fn rva(&self, offset: pdb2::PdbInternalSectionOffset) -> Option<u64> {
        offset.to_rva(self.address_map).map(|r| u64::from(r.0))
    }

    /// The line rows of the symbol at `offset`, by address (stable: the row a later one
    /// ends), read once.
    fn rows_at(&mut self, offset: pdb2::PdbInternalSectionOffset) -> Rc<[RawRow]> {
        let key = (offset.section, offset.offset);
        if let Some(rows) = self.rows.get(&key) {
            return Rc::clone(rows);
        }
        let mut raw: Vec<RawRow> = Vec::new();
        if let Some(program) = self.program {
            let mut lines = program.lines_for_symbol(offset);
            while let Ok(Some(l)) = lines.next() {
                if let Some(a) = self.rva(l.offset) {
                    raw.push((a, l.length, l.line_start, l.file_index));
                }
            }
        }
        raw.sort_by_key(|r| r.0);
        self.row_allowance = self.row_allowance.saturating_add(2 * raw.len() as u64);
        let rows: Rc<[RawRow]> = Rc::from(raw);
        self.rows.insert(key, Rc::clone(&rows));
        rows
    }

    fn file_slot(&mut self, index: pdb2::FileIndex) -> Option<u32> {
        if let Some(&slot) = self.file_slots.get(&index.0) {
            return Some(slot);
        }
        let name = self.program?.get_file_info(index).ok()?.name;
        let slot = self.out.files.len() as u32;
        self.out.files.push(name.0);
        self.file_slots.insert(index.0, slot);
        Some(slot)
    }

    fn origin_slot(&mut self, inlinee: pdb2::IdIndex) -> u32 {
        let next = self.out.origins.len() as u32;
        let slot = *self.origin_slots.entry(inlinee.0).or_insert(next);
        if slot == next {
            self.out.origins.push(inlinee.0);
        }
        slot
    }

    /// Starts a procedure: its own line rows, clipped to it and sized by the next row.
    fn begin(&mut self, p: &pdb2::ProcedureSymbol<'_>) -> Option<Proc> {
        let name = (self.name_of)(&p.name.to_string(), p.type_index)
            .unwrap_or_else(|| p.name.to_string().into_owned());
        self.begin_block(p.offset, p.len, name, p.offset, p.end)
    }

    /// Starts a block of `parent`'s code that PGO separated from it (S_SEPCODE): a
    /// FUNC of its own at the block's address, named as its parent (as symbolic does),
    /// with the block's line rows (MSVC writes it a line block of its own) and the
    /// inline sites nested in it, whose binary annotations count from the parent's start
    /// as every site of the procedure's does.
    fn begin_separated(&mut self, parent: &Proc, sep: &pdb2::SeparatedCodeSymbol) -> Option<Proc> {
        self.begin_block(
            sep.offset,
            sep.len,
            parent.name.clone(),
            parent.offset,
            sep.end,
        )
    }

    /// Starts a block of code at `offset`, `len` bytes, named `name`: its line rows;
    /// its inline sites' annotations count from `sites_from`; `end_symbol` ends it.
    fn begin_block(
        &mut self,
        offset: pdb2::PdbInternalSectionOffset,
        len: u32,
        name: String,
        sites_from: pdb2::PdbInternalSectionOffset,
        end_symbol: pdb2::SymbolIndex,
    ) -> Option<Proc> {
        let start = self.rva(offset)?;
        if len == 0 {
            return None;
        }
        let end = start + u64::from(len);
        let raw = self.rows_at(offset);
        // Only the rows inside the procedure: those before and after it give nothing.
        let raw = &raw[raw.partition_point(|r| r.0 < start)..];
        let raw = &raw[..raw.partition_point(|r| r.0 < end)];
        let mut lines = Vec::with_capacity(raw.len());
        for (i, &(a, len, line, file)) in raw.iter().enumerate() {
            if self.row_allowance == 0 {
                self.rows_cut += (raw.len() - i) as u64;
                break;
            }
            let next = raw.get(i + 1).map_or(end, |r| r.0).min(end);
            let stop = len
                .map_or(next, |l| a.saturating_add(u64::from(l)))
                .min(next);
            if a < start || a >= stop {
                continue;
            }
            let Some(slot) = self.file_slot(file) else {
                continue;
            };
            self.row_allowance -= 1;
            lines.push((a, stop, line, slot));
        }
        Some(Proc {
            start,
            end,
            name,
            offset: sites_from,
            end_symbol,
            lines,
            sites: Vec::new(),
            open_sites: Vec::new(),
        })
    }

    /// Reads an inline site's ranges and rows from its binary annotations; false when it
    /// has none to read.
    fn enter_site(
        &mut self,
        proc: &mut Proc,
        site: &pdb2::InlineSiteSymbol<'_>,
        inlinees: &HashMap<pdb2::IdIndex, pdb2::Inlinee<'_>>,
    ) -> bool {
        if proc.open_sites.len() >= MAX_INLINE_DEPTH {
            return false;
        }
        let Some(inlinee) = inlinees.get(&site.inlinee) else {
            // Still opened, so that its end closes it and not its parent.
            proc.open_sites.push(usize::MAX);
            return false;
        };
        let mut rows: Vec<(u64, u64, u32, u32)> = Vec::new();
        let mut lines = inlinee.lines(proc.offset, site);
        while let Ok(Some(l)) = lines.next() {
            let (Some(a), Some(slot)) = (self.rva(l.offset), self.file_slot(l.file_index)) else {
                continue;
            };
            let stop = a
                .saturating_add(u64::from(l.length.unwrap_or(0)))
                .min(proc.end);
            if a >= proc.start && a < stop {
                rows.push((a, stop, l.line_start, slot));
            }
        }
        // By address, for ranges and for finding the call site of nested sites.
        rows.sort_by_key(|r| r.0);
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for &(s, e, _, _) in &rows {
            match ranges.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => ranges.push((s, e)),
            }
        }
        // The call line is the caller's line at the inlined code, as a stack walker
        // (and llvm-symbolizer) reads it: the procedure's rows, or the enclosing site's.
        let parent_rows = match proc.open_sites.iter().rev().find(|&&i| i != usize::MAX) {
            Some(&i) => &proc.sites[i].lines,
            None => &proc.lines,
        };
        let calls = calls_by_caller_line(&ranges, parent_rows);
        if calls.is_empty() {
            proc.open_sites.push(usize::MAX);
            return false;
        }
        let depth = proc.open_sites.iter().filter(|&&i| i != usize::MAX).count() as u32;
        let origin = self.origin_slot(site.inlinee);
        proc.sites.push(Site {
            depth,
            origin,
            calls,
            lines: rows,
        });
        proc.open_sites.push(proc.sites.len() - 1);
        true
    }

    /// Encodes a finished procedure. Its line rows are the innermost code's: each inline
    /// site's own rows replace the caller's over its ranges, as Breakpad's line records
    /// mean (the INLINE records carry the call sites).
    fn finish(&mut self, proc: Proc) {
        let mut map: BTreeMap<u64, (u64, u32, u32)> = BTreeMap::new();
        for &(s, e, line, file) in &proc.lines {
            overlay(&mut map, s, e, line, file);
        }
        for site in &proc.sites {
            for &(s, e, line, file) in &site.lines {
                overlay(&mut map, s, e, line, file);
            }
        }
        let mut rows: Vec<LineRow> = Vec::with_capacity(map.len());
        for (s, (e, line, file)) in map {
            match rows.last_mut() {
                Some(last)
                    if last.address + last.size == s && last.line == line && last.file == file =>
                {
                    last.size = e - last.address;
                }
                _ => rows.push(LineRow {
                    address: s,
                    size: e - s,
                    line,
                    file,
                }),
            }
        }
        let sites = site_records(proc.sites);
        let body = crate::model::body::encode(proc.start, &rows, &sites, &mut self.out.bytes);
        self.out.pieces.push(Piece {
            start: proc.start,
            end: proc.end,
            name: proc.name,
            body,
        });
    }
}

/// The INLINE records of a procedure's sites (pre-order, by depth). A site whose code
/// lies on several of its caller's lines gives a record per line; stack walkers take
/// a record's children to be the records one deeper that follow it, so each child is
/// cut to the ranges of the record it follows and written after it.
fn site_records(mut sites: Vec<Site>) -> Vec<InlineSite> {
    // Most procedures: every site on one caller line, nothing to cut.
    if sites.iter().all(|s| s.calls.len() == 1) {
        return sites
            .iter_mut()
            .filter_map(|s| {
                let (call_line, call_file, ranges) = s.calls.pop()?;
                Some(InlineSite {
                    depth: s.depth,
                    origin: s.origin as usize,
                    call_file,
                    call_line,
                    ranges,
                })
            })
            .collect();
    }
    let sites = &sites[..];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); sites.len()];
    let mut roots = Vec::new();
    // The latest site at each depth, for finding a site's parent.
    let mut latest: Vec<usize> = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        let depth = site.depth as usize;
        latest.truncate(depth);
        match depth.checked_sub(1).and_then(|d| latest.get(d)) {
            Some(&parent) => children[parent].push(i),
            None if depth == 0 => roots.push(i),
            // Pre-order from one stream: a deeper site always follows its parent.
            None => continue,
        }
        latest.push(i);
    }
    let mut out = Vec::with_capacity(sites.len());
    for root in roots {
        emit_site(sites, &children, root, None, &mut out);
    }
    out
}

/// Writes site `i`'s records, cut to `within` (its ranges inside the parent record it
/// follows), each followed by the parts of its children inside it. A child is cut by
/// looking its ranges up among the records' ranges, not by meeting it with every
/// record: a crafted procedure of many caller lines and many children would otherwise
/// cost their product.
fn emit_site(
    sites: &[Site],
    children: &[Vec<usize>],
    i: usize,
    within: Option<&[(u64, u64)]>,
    out: &mut Vec<InlineSite>,
) {
    let site = &sites[i];
    let records: Vec<Call> = site
        .calls
        .iter()
        .filter_map(|(line, file, ranges)| {
            let ranges = match within {
                Some(parent) => intersect(ranges, parent),
                None => ranges.clone(),
            };
            (!ranges.is_empty()).then_some((*line, *file, ranges))
        })
        .collect();
    // `(start, end, record)` of every record's ranges, by address (they are disjoint).
    let mut pieces: Vec<(u64, u64, usize)> = Vec::new();
    if !children[i].is_empty() {
        for (k, record) in records.iter().enumerate() {
            pieces.extend(record.2.iter().map(|&(s, e)| (s, e, k)));
        }
        pieces.sort_unstable();
    }
    // For each record, the children inside it with their parts there, in child order.
    let mut inside: Vec<Vec<ChildPart>> = vec![Vec::new(); records.len()];
    for &child in &children[i] {
        let mut own: Vec<(u64, u64)> = sites[child]
            .calls
            .iter()
            .flat_map(|c| c.2.iter().copied())
            .collect();
        own.sort_unstable();
        for (s, e) in own {
            let mut p = pieces.partition_point(|piece| piece.1 <= s);
            while let Some(&(ps, pe, k)) = pieces.get(p).filter(|piece| piece.0 < e) {
                let part = (s.max(ps), e.min(pe));
                match inside[k].last_mut() {
                    Some((c, parts)) if *c == child => parts.push(part),
                    _ => inside[k].push((child, vec![part])),
                }
                p += 1;
            }
        }
    }
    for ((call_line, call_file, ranges), children_inside) in records.into_iter().zip(inside) {
        out.push(InlineSite {
            depth: site.depth,
            origin: site.origin as usize,
            call_file,
            call_line,
            ranges,
        });
        for (child, parts) in children_inside {
            emit_site(sites, children, child, Some(&parts), out);
        }
    }
}

/// The parts of `a` inside `b`; both by address and disjoint.
fn intersect(a: &[(u64, u64)], b: &[(u64, u64)]) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    intersect_ranges(a, b, &mut out);
    out
}

/// Splits a site's `ranges` (by address, disjoint) by the caller's line over them:
/// `(line, file, ranges)` in order of first address. `parent_rows` are the caller's
/// `(start, end, line, file)` by address; where they leave a gap, the row before it
/// (or the first row) holds, as it did for the caller's own code. Empty when the caller
/// has no rows.
fn calls_by_caller_line(ranges: &[(u64, u64)], parent_rows: &[(u64, u64, u32, u32)]) -> Vec<Call> {
    let mut calls: Vec<Call> = Vec::new();
    let Some(first) = parent_rows.first() else {
        return calls;
    };
    // Real sites lie on a line or two of their caller; a crafted one can lie on a great
    // many, and is then looked up by line and file.
    let mut index: HashMap<(u32, u32), usize> = HashMap::new();
    let mut add = |line: u32, file: u32, s: u64, e: u64| {
        let found = if calls.len() <= 8 {
            calls.iter().position(|c| c.0 == line && c.1 == file)
        } else {
            if index.is_empty() {
                index.extend(calls.iter().enumerate().map(|(i, c)| ((c.0, c.1), i)));
            }
            index.get(&(line, file)).copied()
        };
        let i = found.unwrap_or_else(|| {
            calls.push((line, file, Vec::new()));
            if calls.len() > 9 {
                index.insert((line, file), calls.len() - 1);
            }
            calls.len() - 1
        });
        match calls[i].2.last_mut() {
            Some(last) if last.1 == s => last.1 = e,
            _ => calls[i].2.push((s, e)),
        }
    };
    for &(s, e) in ranges {
        let mut at = s;
        // The first row not ending at or before `at`.
        let mut i = parent_rows.partition_point(|r| r.1 <= at);
        while at < e {
            while parent_rows.get(i).is_some_and(|r| r.1 <= at) {
                i += 1;
            }
            let (row, until) = match parent_rows.get(i) {
                Some(r) if r.0 <= at => (r, r.1.min(e)),
                Some(r) => (
                    i.checked_sub(1).map_or(first, |j| &parent_rows[j]),
                    r.0.min(e),
                ),
                None => (parent_rows.last().unwrap_or(first), e),
            };
            add(row.2, row.3, at, until);
            at = until;
        }
    }
    calls
}

/// Sets `[s, e)` to `(line, file)` in a map of disjoint segments `start -> (end, line,
/// file)`, trimming or splitting what it covers.
fn overlay(map: &mut BTreeMap<u64, (u64, u32, u32)>, s: u64, e: u64, line: u32, file: u32) {
    if s >= e {
        return;
    }
    if let Some((&ks, &(ke, l, f))) = map.range(..s).next_back()
        && ke > s
    {
        map.insert(ks, (s, l, f));
        if ke > e {
            map.insert(e, (ke, l, f));
        }
    }
    let inside: Vec<u64> = map.range(s..e).map(|(k, _)| *k).collect();
    for k in inside {
        if let Some((ke, l, f)) = map.remove(&k)
            && ke > e
        {
            map.insert(e, (ke, l, f));
        }
    }
    map.insert(s, (e, line, file));
}

/// Joins the modules' results in module order, naming files and inline origins.
///
/// File and origin names count against `allowance`: a crafted string table names 10,000
/// files by suffixes of one 60 KB string, an IPI 4,000 functions in one 60 KB scope.
/// Past it, a file or origin is written under one shared placeholder name.
fn merge(
    results: Vec<ModuleResult>,
    strings: Option<&pdb2::StringTable<'_>>,
    names: &names::InlineeNames,
    allowance: &mut crate::untrusted::Allowance,
    warnings: &mut Warnings,
) -> DebugInfo {
    let mut out = DebugInfo::default();
    let (mut unnamed_file, mut unnamed_origin) = (None, None);
    let mut file_ids: HashMap<u32, u32> = HashMap::new();
    let mut origin_ids: HashMap<u32, u32> = HashMap::new();
    for (ui, r) in results.into_iter().enumerate() {
        for w in r.warnings {
            warnings.push(WarningKind::Pdb, w);
        }
        let files = r
            .files
            .iter()
            .map(|&offset| {
                *file_ids.entry(offset).or_insert_with(|| {
                    // A FILE record needs a name on one line: an offset the string
                    // table does not have (damage) gets a placeholder.
                    let raw = strings.and_then(|s| s.get(pdb2::StringRef(offset)).ok());
                    // Counted before it is copied: the copies were the cost.
                    if !allowance.take(raw.map_or(0, |r| r.len())) {
                        return *unnamed_file.get_or_insert_with(|| {
                            out.files.push(LEFT_OUT.into());
                            (out.files.len() - 1) as u32
                        });
                    }
                    let name = raw
                        .and_then(|n| crate::demangle::sanitize(&n.to_string()))
                        .unwrap_or_else(|| "<unknown>".into());
                    out.files.push(name);
                    (out.files.len() - 1) as u32
                })
            })
            .collect();
        let origins = r
            .origins
            .iter()
            .map(|&index| {
                *origin_ids.entry(index).or_insert_with(|| {
                    let name = names.name(index);
                    if !allowance.take(name.len()) {
                        return *unnamed_origin.get_or_insert_with(|| {
                            out.origins.push(Arc::from(LEFT_OUT));
                            (out.origins.len() - 1) as u32
                        });
                    }
                    out.origins.push(Arc::from(name));
                    (out.origins.len() - 1) as u32
                })
            })
            .collect();
        for p in r.pieces {
            out.functions.push(FunctionRecord {
                start: p.start,
                end: p.end,
                // A name from the file goes into a record: a newline in it would end
                // the FUNC line (found by fuzzing).
                name: crate::demangle::sanitize(&crate::demangle::msvc_anonymous_namespace(
                    &p.name,
                )),
                // With its parameter list (signatures.rs) the name is as full as a
                // linkage name; without, the public symbol's is used, as both Windows
                // dumpers do.
                name_from_linkage: p.name.contains('('),
                param_size: 0,
                body: BodyRef::new(ui, p.body),
            });
        }
        out.bodies.push(UnitBodies {
            bytes: r.bytes,
            files,
            origins,
        });
    }
    if allowance.cut > 0 {
        warnings.push(
            WarningKind::Pdb,
            format!(
                "PDB: {} file and inline function names written as {LEFT_OUT:?}: together they \
             are more than 16 times the file (strings shared by many records)",
                allowance.cut
            ),
        );
    }
    out
}

/// The name of files and inline functions past the allowance.
const LEFT_OUT: &str = "<name left out>";

#[cfg(test)]
#[path = "functions_tests.rs"]
mod tests;
