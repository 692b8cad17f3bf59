//! Line programs: rows with sizes, cleaned up, and the file table that names them.

use rustc_hash::FxHashMap;

use gimli::{IncompleteLineProgram, LineProgramHeader, Unit};

use super::R;
use super::line_program::{self, Row};
use crate::error::{WarningKind, Warnings};
use crate::identity::Layout;

/// One line-table row with its extent. `file` is the line program's own file index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RawRow {
    pub address: u64,
    pub end: u64,
    pub line: u32,
    pub file: u64,
}

/// Runs a unit's line program and returns its rows sorted by address, without overlaps,
/// with adjacent rows of the same file and line merged.
///
/// Dropped: rows of line 0 (code the compiler attributes to no line: writing the previous
/// line there would be a guess), empty rows, and whole sequences that start outside the
/// image's code, which is where linkers leave discarded COMDAT copies (address 0 or a
/// tombstone).
pub(crate) fn rows(
    program: &IncompleteLineProgram<R<'_>>,
    layout: &Layout,
    warnings: &mut Warnings,
) -> Vec<RawRow> {
    let mut acc = Sequences::default();
    // Sized once: grown by doubling, a large unit's rows were copied several times over
    // (most of a dump's large reallocations). Real programs make 0.05 to 0.1 rows per
    // byte before merging (Mozilla's dump_syms, libjvm, ceph-osd); small units up to 1.
    // Capped, so that a huge program of few rows reserves no more than a real one.
    let bytes = program.header().raw_program_buf().len();
    acc.out.reserve((bytes / ROW_BYTES).min(MAX_ROWS_RESERVED));
    if line_program::run(program.header(), |row| acc.push(row, layout)).is_err() {
        // What the fast decoder leaves to gimli; its rows so far are discarded.
        acc = Sequences::default();
        let mut rows = program.clone().rows();
        loop {
            match rows.next_row() {
                Ok(Some((_, row))) => acc.push(Row::from(row), layout),
                Ok(None) => break,
                Err(e) => {
                    warnings.push(
                        WarningKind::Dwarf,
                        format!("line program: {e}; rows after this point are lost"),
                    );
                    break;
                }
            }
        }
    }
    acc.finish(layout)
}

/// Line-program bytes per row, for the first reservation of a unit's rows, and the
/// most rows reserved so (32 MiB).
const ROW_BYTES: usize = 8;
const MAX_ROWS_RESERVED: usize = 1 << 20;

/// Rows gathered sequence by sequence.
#[derive(Default)]
struct Sequences {
    out: Vec<RawRow>,
    /// The current sequence's rows: address, line, file.
    sequence: Vec<(u64, u32, u64)>,
}

impl Sequences {
    // Once per row, from the line program's loop: a call here cost more than the push.
    #[inline(always)]
    fn push(&mut self, row: Row, layout: &Layout) {
        if row.end_sequence {
            flush_sequence(&self.sequence, row.address, layout, &mut self.out);
            self.sequence.clear();
        } else {
            let line = u32::try_from(row.line).unwrap_or(0);
            self.sequence.push((row.address, line, row.file));
        }
    }

    fn finish(mut self, layout: &Layout) -> Vec<RawRow> {
        // A sequence cut short by damage has no end_sequence row: its last row has no
        // extent and is dropped, the rest is kept.
        if let Some(&(last, _, _)) = self.sequence.last() {
            flush_sequence(&self.sequence, last, layout, &mut self.out);
        }
        normalize(self.out)
    }
}

#[inline(never)]
fn flush_sequence(seq: &[(u64, u32, u64)], end: u64, layout: &Layout, out: &mut Vec<RawRow>) {
    let Some(&(start, _, _)) = seq.first() else {
        return;
    };
    let Some(span_end) = layout.code_span_end(start) else {
        return;
    };
    if start == 0 && layout.code_spans.is_empty() {
        return;
    }
    let end = end.min(span_end);
    for (i, &(address, line, file)) in seq.iter().enumerate() {
        let next = seq.get(i + 1).map_or(end, |n| n.0).min(end);
        if line != 0 && next > address {
            out.push(RawRow {
                address,
                end: next,
                line,
                file,
            });
        }
    }
}

/// Sorts rows, clips overlaps (the row that starts first keeps its range; overlaps
/// only arise between sequences, from duplicated code) and merges neighbours that say
/// the same thing.
fn normalize(mut rows: Vec<RawRow>) -> Vec<RawRow> {
    // Stable, so that of two rows at one address the one from the earlier sequence wins.
    rows.sort_by_key(|r| r.address);
    // Compacted in place: `kept` rows are done, the rest are still to be read.
    let mut kept = 0usize;
    for i in 0..rows.len() {
        let mut row = rows[i];
        if let Some(prev) = kept.checked_sub(1).map(|k| &mut rows[k]) {
            if row.address < prev.end {
                if row.end <= prev.end {
                    continue;
                }
                row.address = prev.end;
            }
            if row.address == prev.end && row.line == prev.line && row.file == prev.file {
                prev.end = row.end;
                continue;
            }
        }
        rows[kept] = row;
        kept += 1;
    }
    rows.truncate(kept);
    rows
}

/// The referenced part of a unit's file table: file indexes mapped to dense slots, with
/// the joined path of each slot.
pub(crate) struct FileTable<'h, 'a> {
    header: Option<&'h LineProgramHeader<R<'a>>>,
    comp_dir: Option<String>,
    primary: Option<String>,
    /// Looked up for every line row: a fast hash, not a DoS-resistant one (the keys
    /// are small file indexes).
    slots: FxHashMap<u64, Option<u32>>,
    primary_slot: Option<u32>,
    /// Paths by slot.
    pub paths: Vec<String>,
}

impl<'h, 'a> FileTable<'h, 'a> {
    pub(crate) fn new(unit: &Unit<R<'a>>, header: Option<&'h LineProgramHeader<R<'a>>>) -> Self {
        let comp_dir = unit.comp_dir.map(|d| lossy(d.slice()));
        let primary = unit
            .name
            .map(|n| join(comp_dir.as_deref().unwrap_or(""), &lossy(n.slice())));
        FileTable {
            header,
            comp_dir,
            primary,
            slots: FxHashMap::default(),
            primary_slot: None,
            paths: Vec::new(),
        }
    }

    /// The slot of line-program file `index`, creating it on first use. `None` when the
    /// index names no file.
    pub(crate) fn slot(
        &mut self,
        dwarf: &gimli::Dwarf<R<'a>>,
        unit: &Unit<R<'a>>,
        index: u64,
    ) -> Option<u32> {
        if let Some(&s) = self.slots.get(&index) {
            return s;
        }
        let path = self.path_of(dwarf, unit, index);
        let slot = path.and_then(|p| self.push(p));
        self.slots.insert(index, slot);
        slot
    }

    /// The slot of the unit's own source file (`DW_AT_name`), used for inline call sites
    /// that name no file.
    pub(crate) fn primary_slot(&mut self) -> Option<u32> {
        if self.primary_slot.is_none() {
            let p = self.primary.clone()?;
            self.primary_slot = self.push(p);
        }
        self.primary_slot
    }

    /// A slot for `path`, made writable in a FILE record (a newline in a crafted path
    /// would start a record of its own); `None` when nothing of it is left.
    fn push(&mut self, path: String) -> Option<u32> {
        self.paths.push(crate::demangle::sanitize(&path)?);
        Some((self.paths.len() - 1) as u32)
    }

    fn path_of(
        &self,
        dwarf: &gimli::Dwarf<R<'a>>,
        unit: &Unit<R<'a>>,
        index: u64,
    ) -> Option<String> {
        let header = self.header?;
        let file = header.file(index)?;
        let name = lossy(dwarf.attr_string(unit, file.path_name()).ok()?.slice());
        if name.is_empty() {
            return None;
        }
        if is_absolute(&name) {
            return Some(name);
        }
        // DWARF 2-4 directory 0 and DWARF 5 directory 0 both mean the compilation
        // directory; gimli hands back comp_dir for the former.
        let dir = file
            .directory(header)
            .and_then(|d| dwarf.attr_string(unit, d).ok())
            .map(|d| lossy(d.slice()))
            .unwrap_or_default();
        let base = if is_absolute(&dir) {
            dir
        } else {
            join(self.comp_dir.as_deref().unwrap_or(""), &dir)
        };
        Some(join(&base, &name))
    }
}

fn lossy(bytes: &[u8]) -> String {
    crate::demangle::utf8_lossy(bytes).into_owned()
}

fn is_absolute(path: &str) -> bool {
    path.starts_with('/') || path.as_bytes().get(1..3) == Some(b":\\") || path.starts_with('\\')
}

/// Joins two path pieces the way debuggers do: an absolute or empty second piece is
/// taken as it is; no normalisation of `.` or `..`, so the paths match what
/// llvm-symbolizer and addr2line print.
fn join(a: &str, b: &str) -> String {
    if b.is_empty() {
        return a.to_string();
    }
    if a.is_empty() || is_absolute(b) {
        return b.to_string();
    }
    if a.ends_with('/') {
        format!("{a}{b}")
    } else {
        format!("{a}/{b}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(address: u64, end: u64, line: u32, file: u64) -> RawRow {
        RawRow {
            address,
            end,
            line,
            file,
        }
    }

    #[test]
    fn normalize_clips_overlaps_and_merges() {
        let rows = vec![
            row(0x20, 0x30, 5, 1),
            row(0x10, 0x20, 4, 1),
            row(0x18, 0x28, 9, 1), // starts inside 0x10..0x20: keeps 0x20..0x28
            row(0x30, 0x40, 5, 1), // same line as the clipped 0x28..0x30 row: merged
            row(0x40, 0x48, 6, 2),
            row(0x41, 0x44, 7, 2), // entirely inside an earlier row: dropped
        ];
        assert_eq!(
            normalize(rows),
            vec![
                row(0x10, 0x20, 4, 1),
                row(0x20, 0x28, 9, 1),
                row(0x28, 0x40, 5, 1),
                row(0x40, 0x48, 6, 2)
            ]
        );
    }

    #[test]
    fn sequences_outside_code_and_line_zero_are_dropped() {
        let layout = Layout {
            load_address: 0,
            code_spans: vec![(0x1000, 0x2000)],
        };
        let mut out = Vec::new();
        flush_sequence(&[(0, 3, 1), (8, 4, 1)], 0x10, &layout, &mut out);
        assert!(out.is_empty());
        flush_sequence(
            &[(0x1000, 3, 1), (0x1008, 0, 1), (0x1010, 7, 1)],
            0x1020,
            &layout,
            &mut out,
        );
        assert_eq!(
            out,
            vec![row(0x1000, 0x1008, 3, 1), row(0x1010, 0x1020, 7, 1)]
        );
    }

    #[test]
    fn join_paths() {
        assert_eq!(join("/src", "a.c"), "/src/a.c");
        assert_eq!(join("/src/", "a.c"), "/src/a.c");
        assert_eq!(join("/src", "/usr/include/x.h"), "/usr/include/x.h");
        assert_eq!(join("", "a.c"), "a.c");
        assert_eq!(join("/src", "../a.c"), "/src/../a.c");
    }
}
