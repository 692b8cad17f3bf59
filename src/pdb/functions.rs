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

use pdb::FallibleIterator as _;
use rayon::prelude::*;

use super::{Pdb, corrupt, names, open};
use crate::body::{BodyRef, UnitBodies};
use crate::debuginfo::{DebugInfo, FunctionRecord, InlineSite, LineRow};
use crate::error::{Error, WarningKind, Warnings};

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

/// Reads every module's functions.
pub(super) fn extract(
    path: &Path,
    bytes: &[u8],
    inlines: bool,
    warnings: &mut Warnings,
) -> Result<DebugInfo, Error> {
    let count = super::contain::contained(|| -> Result<usize, Error> {
        let mut pdb = open(path, bytes)?;
        let dbi = pdb
            .debug_information()
            .map_err(|e| corrupt(path, "DBI stream", e))?;
        let mut modules = dbi.modules().map_err(|e| corrupt(path, "module list", e))?;
        let mut n = 0usize;
        while let Ok(Some(_)) = modules.next() {
            n += 1;
        }
        Ok(n)
    })
    .unwrap_or_else(|why| Err(Error::new(path, crate::error::ErrorKind::Corrupt(why))))?;
    let tasks = (rayon::current_num_threads() * TASKS_PER_THREAD).clamp(1, count.max(1));
    let per_task = count.div_ceil(tasks).max(1);
    let ranges: Vec<(usize, usize)> = (0..count)
        .step_by(per_task)
        .map(|s| (s, (s + per_task).min(count)))
        .collect();
    let results: Vec<Vec<ModuleResult>> = ranges
        .into_par_iter()
        .map(|(first, end)| {
            super::contain::contained(|| read_modules(path, bytes, first, end, inlines))
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
    let names = super::contain::contained(|| names::InlineeNames::read(&mut pdb, &wanted, &mut w))
        .unwrap_or_else(|why| {
            warnings.push(
                WarningKind::Pdb,
                format!("PDB IPI stream: {why}; inlined functions are unnamed"),
            );
            names::InlineeNames::default()
        });
    warnings.extend(w);
    let strings = super::contain::contained(|| pdb.string_table().ok())
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

/// Reads modules `first..end` with a view of the file of its own.
fn read_modules(
    path: &Path,
    bytes: &[u8],
    first: usize,
    end: usize,
    inlines: bool,
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
    let address_map = match pdb.address_map() {
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
            let read =
                super::contain::contained(|| read_module(&mut pdb, &address_map, &module, inlines));
            out.push(read.unwrap_or_else(|why| ModuleResult {
                warnings: vec![format!(
                    "PDB module {}: {why}; its functions are left out",
                    module.module_name()
                )],
                ..Default::default()
            }));
        }
        index += 1;
    }
    out
}

/// The procedures of one module with their line rows and inline sites.
fn read_module(
    pdb: &mut Pdb<'_>,
    address_map: &pdb::AddressMap<'_>,
    module: &pdb::Module<'_>,
    inlines: bool,
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
    let inlinees: HashMap<pdb::IdIndex, pdb::Inlinee<'_>> = if inlines {
        info.inlinees()
            .and_then(|it| it.map(|i| Ok((i.index(), i))).collect())
            .unwrap_or_default()
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
    symbols: &mut pdb::SymbolIter<'_>,
    inlinees: &HashMap<pdb::IdIndex, pdb::Inlinee<'_>>,
    inlines: bool,
    name: &str,
) -> usize {
    let mut current: Option<Proc> = None;
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
            Ok(pdb::SymbolData::Procedure(p)) => {
                if let Some(done) = current.take() {
                    cx.finish(done);
                }
                current = cx.begin(&p);
            }
            Ok(pdb::SymbolData::InlineSite(site)) if inlines => {
                if let Some(proc) = current.as_mut()
                    && !cx.enter_site(proc, &site, inlinees)
                {
                    bad_sites += 1;
                }
            }
            Ok(pdb::SymbolData::InlineSiteEnd) => {
                if let Some(proc) = current.as_mut() {
                    proc.open_sites.pop();
                }
            }
            Ok(pdb::SymbolData::ScopeEnd) => {
                if current
                    .as_ref()
                    .is_some_and(|p| p.end_symbol == symbol.index())
                    && let Some(done) = current.take()
                {
                    cx.finish(done);
                }
            }
            _ => {}
        }
    }
    if let Some(done) = current.take() {
        cx.finish(done);
    }
    bad_sites
}

/// A line row as read: address, length, line, file.
type RawRow = (u64, Option<u32>, u32, pdb::FileIndex);

/// Line records a module may give beyond twice the rows it reads (as DWARF units may).
const MIN_ROW_ALLOWANCE: u64 = 65_536;

/// A procedure being read: its rows and the inline sites seen so far.
struct Proc {
    start: u64,
    end: u64,
    name: String,
    offset: pdb::PdbInternalSectionOffset,
    end_symbol: pdb::SymbolIndex,
    /// `(start, end, line, file slot)`, by address.
    lines: Vec<(u64, u64, u32, u32)>,
    /// Pre-order.
    sites: Vec<Site>,
    /// Indexes into `sites` of the sites not yet closed, innermost last.
    open_sites: Vec<usize>,
}

struct Site {
    depth: u32,
    origin: u32,
    call_line: u32,
    call_file: u32,
    ranges: Vec<(u64, u64)>,
    lines: Vec<(u64, u64, u32, u32)>,
}

struct ModuleCx<'c, 'm, 'p> {
    address_map: &'c pdb::AddressMap<'m>,
    program: Option<&'c pdb::LineProgram<'p>>,
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
}

impl ModuleCx<'_, '_, '_> {
    fn rva(&self, offset: pdb::PdbInternalSectionOffset) -> Option<u64> {
        offset.to_rva(self.address_map).map(|r| u64::from(r.0))
    }

    /// The line rows of the symbol at `offset`, by address (stable: the row a later one
    /// ends), read once.
    fn rows_at(&mut self, offset: pdb::PdbInternalSectionOffset) -> Rc<[RawRow]> {
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

    fn file_slot(&mut self, index: pdb::FileIndex) -> Option<u32> {
        if let Some(&slot) = self.file_slots.get(&index.0) {
            return Some(slot);
        }
        let name = self.program?.get_file_info(index).ok()?.name;
        let slot = self.out.files.len() as u32;
        self.out.files.push(name.0);
        self.file_slots.insert(index.0, slot);
        Some(slot)
    }

    fn origin_slot(&mut self, inlinee: pdb::IdIndex) -> u32 {
        let next = self.out.origins.len() as u32;
        let slot = *self.origin_slots.entry(inlinee.0).or_insert(next);
        if slot == next {
            self.out.origins.push(inlinee.0);
        }
        slot
    }

    /// Starts a procedure: its own line rows, clipped to it and sized by the next row.
    fn begin(&mut self, p: &pdb::ProcedureSymbol<'_>) -> Option<Proc> {
        let start = self.rva(p.offset)?;
        if p.len == 0 {
            return None;
        }
        let end = start + u64::from(p.len);
        let raw = self.rows_at(p.offset);
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
            name: p.name.to_string().into_owned(),
            offset: p.offset,
            end_symbol: p.end,
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
        site: &pdb::InlineSiteSymbol<'_>,
        inlinees: &HashMap<pdb::IdIndex, pdb::Inlinee<'_>>,
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
        let Some(&(first, ..)) = rows.first() else {
            proc.open_sites.push(usize::MAX);
            return false;
        };
        // The call is where the parent (the procedure or the enclosing site) was when
        // the inlined code began.
        let parent_rows = match proc.open_sites.iter().rev().find(|&&i| i != usize::MAX) {
            Some(&i) => &proc.sites[i].lines,
            None => &proc.lines,
        };
        let at = parent_rows
            .iter()
            .find(|r| r.0 <= first && first < r.1)
            .or_else(|| parent_rows.iter().rev().find(|r| r.0 <= first))
            .or(parent_rows.first());
        let Some(&(_, _, call_line, call_file)) = at else {
            proc.open_sites.push(usize::MAX);
            return false;
        };
        let depth = proc.open_sites.iter().filter(|&&i| i != usize::MAX).count() as u32;
        let origin = self.origin_slot(site.inlinee);
        proc.sites.push(Site {
            depth,
            origin,
            call_line,
            call_file,
            ranges,
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
        let sites: Vec<InlineSite> = proc
            .sites
            .into_iter()
            .map(|s| InlineSite {
                depth: s.depth,
                origin: s.origin as usize,
                call_file: s.call_file,
                call_line: s.call_line,
                ranges: s.ranges,
            })
            .collect();
        let body = crate::body::encode(proc.start, &rows, &sites, &mut self.out.bytes);
        self.out.pieces.push(Piece {
            start: proc.start,
            end: proc.end,
            name: proc.name,
            body,
        });
    }
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
    strings: Option<&pdb::StringTable<'_>>,
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
                    let raw = strings.and_then(|s| s.get(pdb::StringRef(offset)).ok());
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
                name: Some(p.name).filter(|n| !n.is_empty()),
                name_from_linkage: false,
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
mod tests {
    use super::*;

    fn segments(map: &BTreeMap<u64, (u64, u32, u32)>) -> Vec<(u64, u64, u32)> {
        map.iter().map(|(&s, &(e, l, _))| (s, e, l)).collect()
    }

    #[test]
    fn overlay_splits_and_replaces() {
        let mut m = BTreeMap::new();
        overlay(&mut m, 0, 10, 1, 0);
        overlay(&mut m, 10, 20, 2, 0);
        overlay(&mut m, 5, 12, 3, 0);
        assert_eq!(segments(&m), vec![(0, 5, 1), (5, 12, 3), (12, 20, 2)]);
        overlay(&mut m, 6, 8, 4, 0);
        assert_eq!(
            segments(&m),
            vec![(0, 5, 1), (5, 6, 3), (6, 8, 4), (8, 12, 3), (12, 20, 2)]
        );
        overlay(&mut m, 0, 20, 9, 0);
        assert_eq!(segments(&m), vec![(0, 20, 9)]);
        overlay(&mut m, 7, 7, 1, 0);
        assert_eq!(segments(&m), vec![(0, 20, 9)]);
    }
}
