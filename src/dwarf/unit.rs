//! One compilation unit: a single walk over its DIEs collects the naming index, the
//! functions with their address ranges and inline trees, then lines are attached and
//! everything is cut into one piece per contiguous range.

use gimli::{AttributeSpecification, AttributeValue, Section as _, UnitHeader, constants};

use super::lines::{self, FileTable, RawRow};
use super::names::{DieInfo, LazyStr, NONE, ScopeKind, UnitDies};
use super::skim;
use super::unit_warning;
use super::{Context, R};
use crate::debuginfo::{InlineSite, LineRow, intersect_ranges};
use crate::demangle::Lang;
use crate::error::{WarningKind, Warnings};

/// One contiguous range of a function: it becomes one `FUNC` record.
#[derive(Debug, Clone)]
pub struct Piece {
    /// `.debug_info` offset of the function's DIE, for its name.
    pub die: usize,
    pub start: u64,
    pub end: u64,
    pub lines: Vec<LineRow>,
    /// In pre-order: every site follows its parent.
    pub inlines: Vec<InlineSite>,
}

/// Everything one unit yields.
#[derive(Debug, Default)]
pub struct UnitOutput<'a> {
    pub(crate) dies: UnitDies<'a>,
    pub pieces: Vec<Piece>,
    /// Paths of the file slots used by `pieces`.
    pub files: Vec<String>,
    pub warnings: Warnings,
}

/// `[start, end)` of a DIE's ranges in the unit's [`Drafts::ranges`].
type Span = (u32, u32);

struct SiteDraft {
    /// The function it is in (in [`Drafts::funcs`]).
    func: u32,
    depth: u32,
    origin: usize,
    call_file: Option<u64>,
    call_line: u32,
    ranges: Span,
}

struct FuncDraft {
    die: usize,
    ranges: Span,
    /// Its inlined calls in [`Drafts::sites`], once they are grouped.
    sites: Span,
}

/// A unit's functions as the walk finds them. Their ranges share one buffer: a large
/// program has millions of inlined calls, and one allocation each was a tenth of the
/// walk's time.
#[derive(Default)]
struct Drafts {
    funcs: Vec<FuncDraft>,
    /// The inlined calls of all functions, in the walk's order until
    /// [`Drafts::group_sites`] groups them by function (each function's in pre-order):
    /// a vector per function, grown by doubling, was a reallocation per few sites.
    sites: Vec<SiteDraft>,
    ranges: Vec<(u64, u64)>,
    /// How many ranges `ranges` may hold (see [`MAX_RANGES_PER_UNIT_BYTE`]).
    ranges_limit: usize,
    /// Bounds that were reached, for one warning each.
    ranges_cut: bool,
    depth_cut: bool,
}

/// Bounds on what one unit may expand to, so that a few bytes of crafted DWARF cannot
/// become gigabytes of records; each is far above what real compilers produce (the
/// largest values seen on a Debian system's /usr/lib and /usr/bin, ceph-osd, vmlinux and
/// Mozilla's dump_syms are noted).
///
/// Address ranges kept for a unit's DIEs: this many per byte of the unit, plus
/// [`BASE_RANGES`]. Range lists are shared, so without a bound every DIE of a unit could
/// name the same list of a million ranges. Real units need well under one per byte.
const MAX_RANGES_PER_UNIT_BYTE: usize = 4;
const BASE_RANGES: usize = 1 << 16;
/// FUNC records (contiguous ranges) of one function. Real maximum: a handful (hot and
/// cold parts); each FUNC re-clips every inlined call, so this bounds that work too.
const MAX_PIECES_PER_FUNCTION: usize = 4096;
/// Nesting of inlined calls. Real maximum: 46 (ceph-osd).
const MAX_INLINE_DEPTH: u32 = 512;
/// Line records written for a unit: this many per row of its line table, plus
/// [`BASE_RANGES`]. Each row belongs to one function unless functions overlap, which only
/// damaged or crafted DWARF does at scale.
const MAX_LINES_PER_ROW: usize = 2;

impl Drafts {
    fn ranges(&self, span: Span) -> &[(u64, u64)] {
        self.ranges
            .get(span.0 as usize..span.1 as usize)
            .unwrap_or_default()
    }

    fn sites(&self, span: Span) -> &[SiteDraft] {
        self.sites
            .get(span.0 as usize..span.1 as usize)
            .unwrap_or_default()
    }

    /// Groups the sites by function, each function's in the walk's order (a stable
    /// sort: a function's sites are already together, but for those of a function
    /// nested in it), and points each function at its own.
    fn group_sites(&mut self) {
        self.sites.sort_by_key(|s| s.func);
        let mut at = 0;
        for (i, f) in self.funcs.iter_mut().enumerate() {
            let from = at;
            while self.sites.get(at).is_some_and(|s| s.func as usize == i) {
                at += 1;
            }
            f.sites = (from as u32, at as u32);
        }
    }
}

#[derive(Clone, Copy)]
enum Ctx {
    None,
    Func(u32),
    /// Inside an inlined call: its function, and the call's nesting depth.
    Inline(u32, u32),
}

struct Frame {
    depth: isize,
    scope: u32,
    ctx: Ctx,
}

/// Processes one unit: the unit at offset `at` (up to `end`) of its file's
/// `.debug_info`, whose header may have been parsed from a copy of the unit alone;
/// `index` is its position in `.debug_info`. Damage is reported in the output's warnings;
/// what was read before it is kept.
pub(crate) fn process<'a>(
    cx: &Context<'_, 'a>,
    header: UnitHeader<R<'a>>,
    at: usize,
    end: usize,
    index: usize,
) -> UnitOutput<'a> {
    // Offsets in the name index: this file's range plus the `.debug_info` offset.
    let start = cx.space + at;
    let end = cx.space + end;
    let mut out = UnitOutput {
        dies: UnitDies {
            start,
            end,
            ..Default::default()
        },
        ..Default::default()
    };
    let Some(unit) = open_unit(cx.dwarf, header, start, &mut out.warnings) else {
        return out;
    };
    match unit.dwo_id {
        Some(id) => split(cx, &unit, id, at, index, &mut out),
        None => build(cx, cx.dwarf, &unit, start, cx.space, &unit, &mut out),
    }
    out.dies.seal();
    out
}

/// The unit of `header`: whole, else without its line table when only that cannot be
/// read; `None` (warned of) when it cannot be read at all.
fn open_unit<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    header: UnitHeader<R<'a>>,
    start: usize,
    warnings: &mut Warnings,
) -> Option<gimli::Unit<R<'a>>> {
    let e = match dwarf.unit(header) {
        Ok(u) => return Some(u),
        Err(e) => e,
    };
    let Some((u, offset, line_error)) = without_line_table(dwarf, header) else {
        warnings.add(unit_warning(
            WarningKind::Dwarf,
            start,
            format!("{e}; skipped"),
        ));
        return None;
    };
    warnings.add(unit_warning(WarningKind::Dwarf, start, format!("its line table (.debug_line at {offset:#x}) cannot be read: {line_error}; its functions are kept without line records"
    )));
    Some(u)
}

/// The unit of `header` without its line program, when that program's header is what
/// could not be read: gimli gives up on the whole unit then, but its DIEs (and so its
/// functions) are intact. Returns the unit, the line table's offset and why it failed;
/// `None` when the unit fails for another reason.
///
/// Mirrors what `gimli::Unit::new` reads from the root DIE, minus `DW_AT_stmt_list`.
fn without_line_table<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    header: UnitHeader<R<'a>>,
) -> Option<(gimli::Unit<R<'a>>, usize, gimli::Error)> {
    let encoding = header.encoding();
    let abbreviations = dwarf.abbreviations(&header).ok()?;
    let mut unit = gimli::Unit {
        abbreviations,
        name: None,
        comp_dir: None,
        low_pc: 0,
        str_offsets_base: gimli::DebugStrOffsetsBase::default_for_encoding_and_file(
            encoding,
            dwarf.file_type,
        ),
        addr_base: gimli::DebugAddrBase(0),
        loclists_base: gimli::DebugLocListsBase::default_for_encoding_and_file(
            encoding,
            dwarf.file_type,
        ),
        rnglists_base: gimli::DebugRngListsBase::default_for_encoding_and_file(
            encoding,
            dwarf.file_type,
        ),
        line_program: None,
        dwo_id: match header.type_() {
            gimli::UnitType::Skeleton(id) | gimli::UnitType::SplitCompilation(id) => Some(id),
            _ => None,
        },
        header,
    };
    let (mut name, mut comp_dir, mut low_pc, mut line_offset) = (None, None, None, None);
    {
        let mut cursor = unit.header.entries(&unit.abbreviations);
        let root = cursor.next_dfs().ok()??;
        for attr in root.attrs() {
            match (attr.name(), attr.value()) {
                (constants::DW_AT_name, v) => name = Some(v),
                (constants::DW_AT_comp_dir, v) => comp_dir = Some(v),
                (constants::DW_AT_low_pc, v) => low_pc = Some(v),
                (constants::DW_AT_stmt_list, AttributeValue::DebugLineRef(o)) => {
                    line_offset = Some(o)
                }
                (_, AttributeValue::DebugStrOffsetsBase(b)) => unit.str_offsets_base = b,
                (_, AttributeValue::DebugAddrBase(b)) => unit.addr_base = b,
                (_, AttributeValue::DebugLocListsBase(b)) => unit.loclists_base = b,
                (_, AttributeValue::DebugRngListsBase(b)) => unit.rnglists_base = b,
                (constants::DW_AT_GNU_dwo_id, AttributeValue::DwoId(id)) => {
                    unit.dwo_id = unit.dwo_id.or(Some(id))
                }
                _ => {}
            }
        }
    }
    unit.name = name.and_then(|v| dwarf.attr_string(&unit, v).ok());
    unit.comp_dir = comp_dir.and_then(|v| dwarf.attr_string(&unit, v).ok());
    let line_offset = line_offset?;
    let line_error = dwarf
        .debug_line
        .program(
            line_offset,
            unit.header.address_size(),
            unit.comp_dir,
            unit.name,
        )
        .err()?;
    if let Some(low_pc) = low_pc {
        unit.low_pc = dwarf.attr_address(&unit, low_pc).ok()??;
    }
    Some((unit, line_offset.0, line_error))
}

/// A skeleton unit: its DIEs are in a `.dwo` file or a `.dwp` package, its line table
/// is here.
fn split<'a>(
    cx: &Context<'_, 'a>,
    skeleton: &gimli::Unit<R<'a>>,
    id: gimli::DwoId,
    at: usize,
    index: usize,
    out: &mut UnitOutput<'a>,
) {
    let dwo_name = skeleton
        .dwo_name()
        .ok()
        .flatten()
        .and_then(|v| cx.dwarf.attr_string(skeleton, v).ok())
        .map(|s| String::from_utf8_lossy(s.slice()).into_owned())
        .unwrap_or_default();
    let Some(dwarf) = split_dwarf(cx, skeleton, id, at, &dwo_name, out) else {
        return;
    };
    let mut unit = match split_unit(&dwarf, id, &dwo_name) {
        Ok(unit) => unit,
        Err(why) => {
            out.warnings.add(unit_warning(WarningKind::Dwarf, at, why));
            return;
        }
    };
    unit.copy_relocated_attributes(skeleton);
    // Each split unit gets its own range of offsets, above every `.debug_info` offset,
    // so that the name index can hold DIEs of many files.
    let space = (index + 1) << SPLIT_SPACE_SHIFT;
    let start = space + unit.header.offset().0;
    out.dies.start = start;
    out.dies.end = start + unit.header.length_including_self();
    build(cx, &dwarf, &unit, start, space, skeleton, out);
}

/// The DWARF holding the split unit `id` of `skeleton`: in the `.dwp` package, else in
/// the `.dwo` file the skeleton names, asked of the caller's companion finder.
fn split_dwarf<'a>(
    cx: &Context<'_, 'a>,
    skeleton: &gimli::Unit<R<'a>>,
    id: gimli::DwoId,
    at: usize,
    dwo_name: &str,
    out: &mut UnitOutput<'a>,
) -> Option<gimli::Dwarf<R<'a>>> {
    if let Some(dwp) = cx.dwp {
        match dwp.find_cu(id, cx.dwarf) {
            Ok(Some(found)) => return Some(found),
            Ok(None) => {}
            Err(e) => out.warnings.add(unit_warning(
                WarningKind::Companion,
                at,
                format!(".dwp package: {e}"),
            )),
        }
    }
    if dwo_name.is_empty() {
        out.warnings.add(unit_warning(
            WarningKind::Dwarf,
            at,
            format!("split DWARF unit {:#x} is not in the .dwp package", id.0),
        ));
        return None;
    }
    // Only `.debug_info` units have a slot; a skeleton elsewhere (in dwz's alternate
    // file, which damaged input could make) is not followed.
    let Some(slot) = cx.dwo else {
        out.warnings.add(unit_warning(
            WarningKind::Dwarf,
            at,
            "a split-DWARF skeleton outside .debug_info; not followed".to_string(),
        ));
        return None;
    };
    let mut w = Warnings::default();
    let comp_dir = skeleton
        .comp_dir
        .map(|d| String::from_utf8_lossy(d.slice()).into_owned());
    let candidates = cx
        .companions
        .split_unit_places(comp_dir.as_deref(), dwo_name);
    let file = slot.get_or_init(|| cx.companions.split_unit(&candidates, &mut w));
    out.warnings
        .extend_under(&format!("compilation unit at {at:#x}: "), w);
    if let Some(f) = file {
        return Some(f.dwarf(cx.endian, cx.dwarf));
    }
    let searched: Vec<String> = candidates.iter().map(|c| c.display().to_string()).collect();
    out.warnings.add(unit_warning(
        WarningKind::Companion,
        at,
        format!(
            "split DWARF file {dwo_name:?} not found (searched {}); its functions are missing",
            searched.join(", ")
        ),
    ));
    None
}

/// The unit of `dwarf` whose DWO id is `id`; why there is none.
fn split_unit<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    id: gimli::DwoId,
    dwo_name: &str,
) -> Result<gimli::Unit<R<'a>>, String> {
    let mut units = dwarf.units();
    loop {
        let header = units.next().map_err(|e| format!("split unit: {e}"))?;
        let Some(header) = header else {
            return Err(format!("no unit with DWO id {:#x} in {dwo_name:?}", id.0));
        };
        let unit = dwarf.unit(header).map_err(|e| format!("split unit: {e}"))?;
        if unit.dwo_id == Some(id) {
            return Ok(unit);
        }
    }
}

/// Where split units' DIE offsets start: `(index + 1) << 40`, far above any real
/// `.debug_info` size.
const SPLIT_SPACE_SHIFT: u32 = if usize::BITS >= 64 { 40 } else { 24 };

/// Walks the DIEs of `unit` (in `dwarf`, its first DIE offset counted from `start`, its
/// file's `.debug_info` offsets from `space`) and attaches the rows of `line_unit`'s line
/// table: the same unit, or a split unit's skeleton.
fn build<'a>(
    cx: &Context<'_, 'a>,
    dwarf: &gimli::Dwarf<R<'a>>,
    unit: &gimli::Unit<R<'a>>,
    start: usize,
    space: usize,
    line_unit: &gimli::Unit<R<'a>>,
    out: &mut UnitOutput<'a>,
) {
    let walk_cx = Context {
        dwarf,
        space,
        ..*cx
    };
    let drafts = walk_unit(&walk_cx, unit, start, out);
    if drafts.funcs.is_empty() || cx.index_only {
        return;
    }
    let program = line_unit.line_program.as_ref();
    let header = program.map(|p| p.header());
    let rows = match program {
        Some(p) => {
            let mut w = Warnings::default();
            let rows = lines::rows(p, cx.layout, &mut w);
            out.warnings
                .extend_under(&format!("compilation unit at {start:#x}: "), w);
            rows
        }
        None => Vec::new(),
    };
    // A split unit's inlined calls name files of its own line table (in the .dwo).
    let split_header = (!std::ptr::eq(unit, line_unit))
        .then(|| unit.line_program.as_ref().map(|p| p.header()))
        .flatten();
    let mut files = UnitFiles {
        main: FileTable::new(line_unit, header),
        split: split_header.map(|h| FileTable::new(unit, Some(h))),
    };
    let sides = Sides {
        dwarf,
        unit,
        line_unit,
    };
    let (pieces, cuts) = cut_pieces(cx, &sides, &drafts, &rows, &mut files);
    out.pieces.extend(pieces);
    if cuts.pieces {
        out.warnings.add(unit_warning(WarningKind::Dwarf, start, format!("a function in more than {MAX_PIECES_PER_FUNCTION} separate ranges; only the first are written"
        )));
    }
    if cuts.lines {
        let lines_limit = cuts.lines_limit;
        out.warnings.add(unit_warning(WarningKind::Dwarf, start, format!("its functions overlap so much that their line records would exceed {lines_limit} ({MAX_LINES_PER_ROW} per line-table row); the functions after that have none"
        )));
    }
    files.join_into(out);
}

/// Walks the unit's DIEs into the name index (`out.dies`) and drafts of its functions;
/// damage and the bounds reached are warned of.
fn walk_unit<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    start: usize,
    out: &mut UnitOutput<'a>,
) -> Drafts {
    out.dies.strings = cx.dwarf.debug_str.reader().slice();
    out.dies.sup_strings = cx.dwarf.sup().map_or(&[], |s| s.debug_str.reader().slice());
    let mut drafts = Drafts {
        ranges_limit: BASE_RANGES.saturating_add(
            MAX_RANGES_PER_UNIT_BYTE.saturating_mul(unit.header.length_including_self()),
        ),
        ..Drafts::default()
    };
    // Sized once from the unit's length, not grown by doubling: the copies of the large
    // units' indexes were 1–2% of a dump. Real units index up to 25 DIEs and name up to 7
    // ranges (with inlined calls) per KB; capped so that a huge crafted length only
    // reserves what real units of that size would fill.
    // Likewise the functions (up to 0.2 per KB), inlined calls (up to 4) and noted
    // declarations (up to 16, in C++).
    let len = unit.header.length_including_self();
    out.dies.dies.reserve((len / 40).min(1 << 20));
    drafts.funcs.reserve((len / 4096).min(1 << 16));
    if cx.inlines {
        drafts.ranges.reserve((len / 128).min(1 << 20));
        drafts.sites.reserve((len / 256).min(1 << 20));
    }
    // The walk's unit offsets are relative to the unit's header.
    let first = start - unit.header.offset().0;
    let mut noted = Vec::with_capacity((len / 64).min(1 << 20));
    if let Err(e) = walk(cx, unit, first, &mut out.dies, &mut drafts, &mut noted) {
        out.warnings.add(unit_warning(
            WarningKind::Dwarf,
            start,
            format!("{e}; the rest of this unit is skipped"),
        ));
    }
    if let Err(e) = index_noted(cx, unit, first, &noted, &mut out.dies, &drafts) {
        out.warnings.add(unit_warning(
            WarningKind::Dwarf,
            start,
            format!("{e}, in a function's declaration; the declarations it leads to are not read"),
        ));
    }
    if drafts.ranges_cut {
        out.warnings.add(unit_warning(WarningKind::Dwarf, start, format!("its DIEs name more than {} address ranges (range lists shared many times over); the DIEs after that have none",
            drafts.ranges_limit
        )));
    }
    if drafts.depth_cut {
        out.warnings.add(unit_warning(WarningKind::Dwarf, start, format!("inlined calls nested more than {MAX_INLINE_DEPTH} deep; the deeper ones are left out"
        )));
    }
    drafts.group_sites();
    drafts
}

/// The units a unit's records come from: its DIEs' (`unit`, in `dwarf`) and its line
/// table's (`line_unit`: the skeleton's, for a split unit).
struct Sides<'s, 'a> {
    dwarf: &'s gimli::Dwarf<R<'a>>,
    unit: &'s gimli::Unit<R<'a>>,
    line_unit: &'s gimli::Unit<R<'a>>,
}

/// A unit's file tables: its line table's, and a split unit's own (in the `.dwo`),
/// whose slots are marked with [`SPLIT_FILE`] until the two are joined.
struct UnitFiles<'h, 'a> {
    main: FileTable<'h, 'a>,
    split: Option<FileTable<'h, 'a>>,
}

impl<'a> UnitFiles<'_, 'a> {
    /// The slot of an inlined call's file: in the split unit's own table when it has
    /// one, else the line table's; the unit's primary file when it names none.
    fn call_slot(
        &mut self,
        cx_dwarf: &gimli::Dwarf<R<'a>>,
        sides: &Sides<'_, 'a>,
        i: Option<u64>,
    ) -> Option<u32> {
        match &mut self.split {
            Some(t) => i
                .and_then(|i| t.slot(sides.dwarf, sides.unit, i))
                .or_else(|| t.primary_slot())
                .map(|s| s | SPLIT_FILE),
            None => match i {
                Some(i) => self
                    .main
                    .slot(cx_dwarf, sides.line_unit, i)
                    .or_else(|| self.main.primary_slot()),
                None => self.main.primary_slot(),
            },
        }
    }

    /// Joins the tables into the unit's file list: the split table's slots follow the
    /// line table's.
    fn join_into(self, out: &mut UnitOutput<'_>) {
        let base = self.main.paths.len() as u32;
        for p in &mut out.pieces {
            for s in &mut p.inlines {
                if s.call_file & SPLIT_FILE != 0 {
                    s.call_file = (s.call_file & !SPLIT_FILE) + base;
                }
            }
        }
        out.files = self.main.paths;
        if let Some(t) = self.split {
            out.files.extend(t.paths);
        }
    }
}

/// Bounds reached while cutting a unit's functions into pieces, for one warning each.
struct Cuts {
    pieces: bool,
    lines: bool,
    lines_limit: usize,
    lines_total: usize,
}

impl Cuts {
    /// The line records `clip` gives, while the unit's stay within their limit.
    fn keep_lines(&mut self, clip: impl FnOnce() -> Vec<LineRow>) -> Vec<LineRow> {
        let mut lines = if self.lines_total < self.lines_limit {
            clip()
        } else {
            Vec::new()
        };
        self.lines_total += lines.len();
        if self.lines_total > self.lines_limit {
            self.lines = true;
            lines.clear();
        }
        lines
    }
}

/// A unit's functions as pieces (one per contiguous range) with their line records and
/// inlined calls clipped to each.
fn cut_pieces<'a>(
    cx: &Context<'_, 'a>,
    sides: &Sides<'_, 'a>,
    drafts: &Drafts,
    rows: &[RawRow],
    files: &mut UnitFiles<'_, 'a>,
) -> (Vec<Piece>, Cuts) {
    let lines_limit = BASE_RANGES.saturating_add(MAX_LINES_PER_ROW.saturating_mul(rows.len()));
    let mut cuts = Cuts {
        pieces: false,
        lines: false,
        lines_limit,
        lines_total: 0,
    };
    let mut pieces = Vec::with_capacity(drafts.funcs.len());
    for f in &drafts.funcs {
        let ranges = drafts.ranges(f.ranges);
        if ranges.len() > MAX_PIECES_PER_FUNCTION {
            cuts.pieces = true;
        }
        for &(lo, hi) in ranges.iter().take(MAX_PIECES_PER_FUNCTION) {
            let lines = cuts.keep_lines(|| {
                clip_lines(rows, lo, hi, |i| {
                    files.main.slot(cx.dwarf, sides.line_unit, i)
                })
            });
            let inlines = clip_sites(drafts.sites(f.sites), drafts, lo, hi, |i| {
                files.call_slot(cx.dwarf, sides, i)
            });
            pieces.push(Piece {
                die: f.die,
                start: lo,
                end: hi,
                lines,
                inlines,
            });
        }
    }
    (pieces, cuts)
}

/// Marks a call-file slot of a split unit's own file table until the tables are joined.
const SPLIT_FILE: u32 = 1 << 31;

fn walk<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    start: usize,
    dies: &mut UnitDies<'a>,
    drafts: &mut Drafts,
    noted: &mut Vec<Noted>,
) -> gimli::Result<()> {
    // The second pass indexes units for references from others, which may point at any
    // declaration: it reads them all.
    let wanted_here = |a: &gimli::Abbreviation| want(a, cx.inlines, !cx.index_only);
    let childless_here = |a: &gimli::Abbreviation| childless(a, cx.inlines);
    let mut cursor = Cursor::new(unit, &wanted_here, &childless_here)?;
    let mut stack: Vec<Frame> = Vec::new();
    while let Some((die_offset, depth, die)) = cursor.next()? {
        let tag = match die {
            Die::Null => continue,
            Die::Skipped { has_children } | Die::Noted { has_children } => {
                let is_noted = matches!(die, Die::Noted { .. });
                if has_children || is_noted {
                    let (scope, ctx) = enclosing(&mut stack, depth);
                    if is_noted {
                        noted.push(Noted {
                            offset: start + die_offset,
                            parent: scope,
                        });
                    }
                    // Children of a DIE not read (a lexical block, a variable) inherit
                    // the enclosing scope and function.
                    if has_children {
                        stack.push(Frame { depth, scope, ctx });
                    }
                }
                continue;
            }
            Die::Read { tag } => tag,
        };
        let facts = &cursor.facts;
        let (parent_scope, parent_ctx) = enclosing(&mut stack, depth);
        let (scope, ctx) = match tag {
            constants::DW_TAG_compile_unit | constants::DW_TAG_partial_unit => {
                if let Some(AttributeValue::Language(l)) = facts.language {
                    dies.lang = Some(if l == constants::DW_LANG_Rust {
                        Lang::Rust
                    } else {
                        Lang::Other
                    });
                }
                (parent_scope, parent_ctx)
            }
            constants::DW_TAG_inlined_subroutine => {
                let ctx = inline_site(cx, unit, start, facts, parent_ctx, drafts)?;
                // An inlined call that is no site (in no function with code, as in a
                // copy the linker dropped; or with no code or origin of its own) has
                // none under it either: compilers put there only its parameters,
                // variables, blocks and nested calls (GCC leaves local types and
                // functions to the abstract origin). So its children are stepped over,
                // where it says where they end: 7.5% of the DIEs ceph-osd's walk went
                // through with `--inlines`.
                if matches!(ctx, Ctx::None) && cursor.skip_children() {
                    continue;
                }
                (parent_scope, ctx)
            }
            _ => {
                let at = Placed {
                    offset: start + die_offset,
                    start,
                    parent: parent_scope,
                    parent_ctx,
                };
                scope_die(cx, unit, tag, facts, at, dies, drafts)?
            }
        };
        if cursor.had_children {
            stack.push(Frame { depth, scope, ctx });
        }
    }
    Ok(())
}

/// One DIE as the walk sees it.
enum Die {
    /// The end of a list of children.
    Null,
    /// A DIE the walk does not read.
    Skipped { has_children: bool },
    /// A DIE the walk does not read now, but may later (see [`declaration_only`]).
    Noted { has_children: bool },
    /// A DIE the walk reads: its attributes are in [`Cursor::facts`].
    Read { tag: constants::DwTag },
}

/// The DIEs of a unit in order: through their abbreviations' plans (see [`skim`]), or
/// through gimli where a plan cannot tell where a DIE ends, which then gives the same
/// result and the same errors as gimli alone.
struct Cursor<'u, 'a> {
    unit: &'u gimli::Unit<R<'a>>,
    plans: skim::Plans<'u, 'a>,
    wanted: &'u dyn Fn(&gimli::Abbreviation) -> skim::Want,
    /// The unit offset of the first DIE, and the bytes from there.
    root: usize,
    data: &'a [u8],
    endian: gimli::RunTimeEndian,
    pos: usize,
    /// As gimli counts it: a DIE with children opens a level, a null entry closes one.
    next_depth: isize,
    /// Whether the DIE last returned has children.
    had_children: bool,
    /// The abbreviation code of the DIE last read by its plan (0 when gimli read it),
    /// and where its attributes start.
    last_read: (u64, usize),
    /// The attributes of the DIE last read. Kept here rather than returned: moving
    /// them (a few hundred bytes) through each call was a quarter of the walk.
    facts: Facts<'a>,
}

impl<'u, 'a> Cursor<'u, 'a> {
    fn new(
        unit: &'u gimli::Unit<R<'a>>,
        wanted: &'u dyn Fn(&gimli::Abbreviation) -> skim::Want,
        childless: &'u dyn Fn(&gimli::Abbreviation) -> bool,
    ) -> gimli::Result<Self> {
        let root = unit.header.root_offset().0;
        let entries = unit.header.range_from(gimli::UnitOffset(root)..)?;
        Ok(Cursor {
            unit,
            plans: skim::Plans::new(unit, wanted, Facts::slot_of, childless),
            wanted,
            root,
            data: entries.slice(),
            endian: gimli::Reader::endian(&entries),
            pos: 0,
            next_depth: 0,
            had_children: false,
            last_read: (0, 0),
            facts: Facts::default(),
        })
    }

    /// The next DIE: its unit offset, depth and what the walk needs of it.
    #[inline(always)]
    fn next(&mut self) -> gimli::Result<Option<(usize, isize, Die)>> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let depth = self.next_depth;
        let offset = self.root + self.pos;
        let die = match self.planned()? {
            Some(die) => die,
            None => self.by_gimli(offset)?,
        };
        match &die {
            Die::Null => self.next_depth -= 1,
            // `had_children` is set by the read.
            Die::Read { .. } => self.next_depth += isize::from(self.had_children),
            Die::Skipped { has_children } | Die::Noted { has_children } => {
                self.had_children = *has_children;
                self.next_depth += isize::from(*has_children);
            }
        }
        Ok(Some((offset, depth, die)))
    }

    /// The DIE at unit offset `offset` (one the walk went through), out of turn.
    fn at(&mut self, offset: usize) -> gimli::Result<Option<Die>> {
        let Some(pos) = offset.checked_sub(self.root) else {
            return Ok(None);
        };
        self.pos = pos;
        Ok(self.next()?.map(|(_, _, die)| die))
    }

    /// The DIE at `pos` by its abbreviation's plan; `None` when the plan cannot tell.
    /// Inlined into the walk: called once per DIE (millions a unit), its call and the
    /// result returned through memory were an eighth of its cost.
    #[inline(always)]
    fn planned(&mut self) -> gimli::Result<Option<Die>> {
        let (data, root, unit) = (self.data, self.root, self.unit);
        let mut at = self.pos;
        let Some(code) = skim::uleb(data, &mut at) else {
            return Ok(None);
        };
        if code == 0 {
            self.pos = at;
            return Ok(Some(Die::Null));
        }
        let Some(plan) = self.plans.get(code) else {
            return Ok(None);
        };
        // With its children, when nothing in them is read and it says where they end
        // (a sibling reference past its own attributes, inside the unit).
        let endian = self.endian;
        let sibling = |end: usize| {
            plan.sibling(data, at, endian)
                .and_then(|s| usize::try_from(s).ok()?.checked_sub(root))
                .filter(|&s| s > end && s <= data.len())
        };
        if plan.want != skim::Want::Read {
            let Some(end) = plan.skip(data, at, endian) else {
                return Ok(None);
            };
            let (next, has_children) = match sibling(end) {
                Some(next) => (next, false),
                None => (end, plan.has_children),
            };
            self.pos = next;
            return Ok(Some(match plan.want {
                skim::Want::Note => Die::Noted { has_children },
                _ => Die::Skipped { has_children },
            }));
        }
        self.last_read = (code, at);
        let facts = &mut self.facts;
        *facts = Facts::default();
        let read = |p: usize, read: &skim::Read| -> Result<usize, Option<gimli::Error>> {
            if let Some((value, end)) = read.value(data, p, endian) {
                facts.set(read.slot, value);
                return Ok(end);
            }
            facts.read_by_gimli(unit, (root, data.len()), p, read.spec, read.slot)
        };
        match plan.go(data, at, endian, read) {
            Ok(Some(end)) => {
                if let Some(next) = sibling(end) {
                    self.pos = next;
                    self.had_children = false;
                    return Ok(Some(Die::Read { tag: plan.tag }));
                }
                self.pos = end;
                self.had_children = plan.has_children;
                Ok(Some(Die::Read { tag: plan.tag }))
            }
            Ok(None) | Err(None) => Ok(None),
            Err(Some(e)) => Err(e),
        }
    }

    /// Steps over the children of the DIE just read to its `DW_AT_sibling` (a reference
    /// past its attributes, inside the unit), where its plan knows where that is;
    /// `false`, and nothing done, where it has no children or no such reference.
    fn skip_children(&mut self) -> bool {
        let (code, at) = self.last_read;
        if !self.had_children || code == 0 {
            return false;
        }
        let (data, root, endian) = (self.data, self.root, self.endian);
        let next = (self.plans.get(code))
            .and_then(|plan| plan.sibling_of_read(data, at, endian))
            .and_then(|s| usize::try_from(s).ok()?.checked_sub(root))
            .filter(|&s| s > self.pos && s <= data.len());
        let Some(next) = next else {
            return false;
        };
        self.pos = next;
        self.had_children = false;
        self.next_depth -= 1;
        true
    }

    /// The DIE at unit offset `offset`, read by gimli.
    fn by_gimli(&mut self, offset: usize) -> gimli::Result<Die> {
        let mut entries = self.unit.entries_raw(Some(gimli::UnitOffset(offset)))?;
        let Some(abbrev) = entries.read_abbreviation()? else {
            self.pos = entries.next_offset().0 - self.root;
            return Ok(Die::Null);
        };
        let has_children = abbrev.has_children();
        let die = match (self.wanted)(abbrev) {
            skim::Want::Read => {
                self.last_read = (0, 0);
                self.had_children = has_children;
                self.facts.read(&mut entries, abbrev.attributes())?;
                Die::Read { tag: abbrev.tag() }
            }
            want => {
                entries.skip_attributes(abbrev.attributes())?;
                match want {
                    skim::Want::Note => Die::Noted { has_children },
                    _ => Die::Skipped { has_children },
                }
            }
        };
        self.pos = entries.next_offset().0 - self.root;
        Ok(die)
    }
}

/// What the walk does with a DIE of this abbreviation: reads it, skips it unparsed, or,
/// where `defer`, notes a function's declaration to read later if the unit's DIEs lead
/// to it ([`declaration_only`]).
fn want(abbrev: &gimli::Abbreviation, inlines: bool, defer: bool) -> skim::Want {
    match wanted(abbrev.tag(), abbrev, inlines) {
        true if defer && declaration_only(abbrev) => skim::Want::Note,
        true => skim::Want::Read,
        false => skim::Want::Skip,
    }
}

/// Whether the walk reads a DIE of this tag and abbreviation; the others are skipped
/// unparsed.
fn wanted(tag: constants::DwTag, abbrev: &gimli::Abbreviation, inlines: bool) -> bool {
    match tag {
        constants::DW_TAG_inlined_subroutine => inlines,
        constants::DW_TAG_compile_unit
        | constants::DW_TAG_partial_unit
        | constants::DW_TAG_subprogram
        | constants::DW_TAG_namespace => true,
        // A type names a function's scope only if it has members, or is the
        // declaration an out-of-line definition (`struct A::B { ... }`) points to.
        // Most types are neither; deciding from the abbreviation saves reading them.
        constants::DW_TAG_class_type
        | constants::DW_TAG_structure_type
        | constants::DW_TAG_union_type
        | constants::DW_TAG_interface_type => {
            abbrev.has_children()
                || abbrev
                    .attributes()
                    .iter()
                    .any(|a| a.name() == constants::DW_AT_declaration)
        }
        _ => false,
    }
}

/// Whether the walk reads nothing under a DIE of this abbreviation, so that its
/// children may be stepped over all at once. Inlined calls hold only their parameters,
/// variables, blocks and nested calls; the others hold only their parts (enumerators,
/// subranges, parameters). A function's declaration (a member function in its class)
/// holds only its parameters: it is read, its children are not. They were most of
/// the DIEs a C++ unit's walk went through one by one, as every unit declares again
/// the classes it uses (libjvm: 9 of 16 million). Not lexical blocks, nor functions
/// with code: a local class's member functions are named through the class, declared
/// inside the block.
fn childless(abbrev: &gimli::Abbreviation, inlines: bool) -> bool {
    match abbrev.tag() {
        constants::DW_TAG_subprogram => abbrev
            .attributes()
            .iter()
            .any(|a| a.name() == constants::DW_AT_declaration),
        constants::DW_TAG_inlined_subroutine => !inlines,
        constants::DW_TAG_call_site
        | constants::DW_TAG_GNU_call_site
        | constants::DW_TAG_enumeration_type
        | constants::DW_TAG_subroutine_type
        | constants::DW_TAG_array_type
        | constants::DW_TAG_formal_parameter
        | constants::DW_TAG_variable => true,
        _ => false,
    }
}

/// The scope and function of the DIE at `depth`: its parent's, once the frames of the
/// DIEs it does not nest in are popped.
fn enclosing(stack: &mut Vec<Frame>, depth: isize) -> (u32, Ctx) {
    while stack.last().is_some_and(|f| f.depth >= depth) {
        stack.pop();
    }
    stack.last().map_or((NONE, Ctx::None), |f| (f.scope, f.ctx))
}

/// What a function, namespace or type DIE contributes to a qualified name.
fn scope_kind(tag: constants::DwTag) -> ScopeKind {
    match tag {
        constants::DW_TAG_subprogram => ScopeKind::Function,
        constants::DW_TAG_namespace => ScopeKind::Namespace,
        _ => ScopeKind::Type,
    }
}

/// Where a DIE sits: its offset in the name index, its unit's, and its parent's scope and
/// function.
struct Placed {
    offset: usize,
    start: usize,
    parent: u32,
    parent_ctx: Ctx,
}

/// An inlined call: a site of the function it is in, when it has code and an origin;
/// the context of its children.
fn inline_site<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    start: usize,
    facts: &Facts<'a>,
    parent_ctx: Ctx,
    drafts: &mut Drafts,
) -> gimli::Result<Ctx> {
    let (func, parent_depth) = match parent_ctx {
        Ctx::Func(f) => (Some(f), None),
        Ctx::Inline(f, d) => (Some(f), Some(d)),
        Ctx::None => (None, None),
    };
    let origin = reference(cx, start, facts.abstract_origin);
    let depth = parent_depth.map_or(0, |d| d + 1);
    if depth > MAX_INLINE_DEPTH {
        drafts.depth_cut = true;
        return Ok(Ctx::None);
    }
    let (Some(func), Some(origin)) = (func, origin) else {
        return Ok(Ctx::None);
    };
    let ranges = die_ranges(cx, unit, facts, drafts)?;
    if ranges.0 >= ranges.1 {
        return Ok(Ctx::None);
    }
    let (call_file, call_line) = facts.call_site();
    drafts.sites.push(SiteDraft {
        func,
        depth,
        origin,
        call_file,
        call_line,
        ranges,
    });
    Ok(Ctx::Inline(func, depth))
}

/// A function, namespace or type: an entry of the name index, and (a function with
/// code) a draft; the scope and context of its children.
fn scope_die<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    tag: constants::DwTag,
    facts: &Facts<'a>,
    at: Placed,
    dies: &mut UnitDies<'a>,
    drafts: &mut Drafts,
) -> gimli::Result<(u32, Ctx)> {
    let kind = scope_kind(tag);
    dies.dies.push(die_info(cx, unit, kind, facts, &at));
    let scope = (dies.dies.len() - 1) as u32;
    if kind != ScopeKind::Function {
        return Ok((scope, at.parent_ctx));
    }
    let ranges = die_ranges(cx, unit, facts, drafts)?;
    if ranges.0 == ranges.1 {
        return Ok((scope, Ctx::None));
    }
    drafts.funcs.push(FuncDraft {
        die: at.offset,
        ranges,
        sites: (0, 0),
    });
    Ok((scope, Ctx::Func((drafts.funcs.len() - 1) as u32)))
}

/// The name index's entry for a DIE of `kind` placed `at`.
fn die_info<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    kind: ScopeKind,
    facts: &Facts<'a>,
    at: &Placed,
) -> DieInfo<'a> {
    let target = reference(cx, at.start, facts.specification)
        .or_else(|| reference(cx, at.start, facts.abstract_origin));
    let linkage =
        string(cx, unit, facts.linkage_name).or_else(|| string(cx, unit, facts.mips_linkage_name));
    DieInfo {
        offset: at.offset,
        parent: at.parent,
        kind,
        name: string(cx, unit, facts.name),
        linkage,
        target,
    }
}

/// A DIE the walk stepped over and may read later: its offset in the name index and
/// its enclosing scope there.
struct Noted {
    offset: usize,
    parent: u32,
}

/// Whether DIEs of this abbreviation are functions' declarations (no code of their
/// own), which the walk notes rather than reads (see [`index_noted`]).
fn declaration_only(abbrev: &gimli::Abbreviation) -> bool {
    abbrev.tag() == constants::DW_TAG_subprogram && {
        let names = || abbrev.attributes().iter().map(|a| a.name());
        names().any(|n| n == constants::DW_AT_declaration)
            && !names().any(|n| {
                matches!(
                    n,
                    constants::DW_AT_low_pc | constants::DW_AT_high_pc | constants::DW_AT_ranges
                )
            })
    }
}

/// Indexes the declarations the walk noted (`noted`, in offset order) that a name may
/// lead to: those that the unit's indexed DIEs and inlined calls refer to, and those
/// they refer to in turn. Every C++ unit declares again the member functions of the
/// classes it uses, and few of them are defined or inlined there: indexing them all
/// was most of the walk (libjvm: 4.2 million declarations, 42 thousand functions).
/// Each is read as the walk would have read it, in the same scope, so names come out
/// the same.
fn index_noted<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    start: usize,
    noted: &[Noted],
    dies: &mut UnitDies<'a>,
    drafts: &Drafts,
) -> gimli::Result<()> {
    let (Some(first), Some(last)) = (noted.first(), noted.last()) else {
        return Ok(());
    };
    let (first, last) = (first.offset, last.offset);
    let sites = drafts.sites.iter();
    let mut refs: Vec<usize> = (dies.dies.iter().filter_map(|d| d.target))
        .chain(sites.map(|s| s.origin))
        .filter(|t| (first..=last).contains(t))
        .collect();
    // Sorted and met against `noted` (in order too) in one pass: the same origins recur
    // in thousands of inlined calls, and a binary search of a large unit's
    // declarations for each was most of this function's time (cache misses, 1.5% of
    // ceph-osd's dump with `--inlines`). The queue holds positions in `noted`.
    refs.sort_unstable();
    refs.dedup();
    let mut queue = Vec::new();
    let mut k = 0;
    for t in refs {
        while noted.get(k).is_some_and(|n| n.offset < t) {
            k += 1;
        }
        if noted.get(k).is_some_and(|n| n.offset == t) {
            queue.push(k);
        }
    }
    // Read by the walk's own means, as it would have read them.
    let read_all = |a: &gimli::Abbreviation| want(a, cx.inlines, false);
    let childless_here = |a: &gimli::Abbreviation| childless(a, cx.inlines);
    let mut cursor = Cursor::new(unit, &read_all, &childless_here)?;
    let mut read = vec![false; noted.len()];
    let mut found = Vec::new();
    while let Some(k) = queue.pop() {
        if std::mem::replace(&mut read[k], true) {
            continue;
        }
        let t = noted[k].offset;
        let Some(Die::Read { tag }) = cursor.at(t - start)? else {
            continue;
        };
        let at = Placed {
            offset: t,
            start,
            parent: noted[k].parent,
            parent_ctx: Ctx::None,
        };
        let info = die_info(cx, unit, scope_kind(tag), &cursor.facts, &at);
        let next = info.target.filter(|t| (first..=last).contains(t));
        queue.extend(next.and_then(|t| noted.binary_search_by_key(&t, |n| n.offset).ok()));
        found.push(info);
    }
    merge_dies(&mut dies.dies, found);
    Ok(())
}

/// Merges `more` into `dies` (both in offset order, as lookups need them), with the
/// parents' indexes moved to match.
fn merge_dies<'a>(dies: &mut Vec<DieInfo<'a>>, mut more: Vec<DieInfo<'a>>) {
    if more.is_empty() {
        return;
    }
    more.sort_unstable_by_key(|d| d.offset);
    let old = std::mem::take(dies);
    let mut moved = Vec::with_capacity(old.len());
    let mut out = Vec::with_capacity(old.len() + more.len());
    let mut more = more.into_iter().peekable();
    for d in old {
        out.extend(std::iter::from_fn(|| more.next_if(|m| m.offset < d.offset)));
        moved.push(out.len() as u32);
        out.push(d);
    }
    out.extend(more);
    for d in &mut out {
        if let Some(&p) = moved.get(d.parent as usize) {
            d.parent = p;
        }
    }
    *dies = out;
}

/// The attributes of a DIE that the walk uses; the others are skipped unparsed.
#[derive(Default)]
struct Facts<'a> {
    name: Option<AttributeValue<R<'a>>>,
    linkage_name: Option<AttributeValue<R<'a>>>,
    mips_linkage_name: Option<AttributeValue<R<'a>>>,
    specification: Option<AttributeValue<R<'a>>>,
    abstract_origin: Option<AttributeValue<R<'a>>>,
    low_pc: Option<AttributeValue<R<'a>>>,
    high_pc: Option<AttributeValue<R<'a>>>,
    ranges: Option<AttributeValue<R<'a>>>,
    call_file: Option<AttributeValue<R<'a>>>,
    call_line: Option<AttributeValue<R<'a>>>,
    language: Option<AttributeValue<R<'a>>>,
}

impl<'a> Facts<'a> {
    /// An inlined call's file index (when given) and line (0 when not).
    fn call_site(&self) -> (Option<u64>, u32) {
        let call_file = self.call_file.and_then(|v| match v {
            AttributeValue::FileIndex(i) => Some(i),
            other => other.udata_value(),
        });
        let call_line = self
            .call_line
            .and_then(|v| v.udata_value())
            .and_then(|l| u32::try_from(l).ok())
            .unwrap_or(0);
        (call_file, call_line)
    }

    /// The slot of an attribute the walk uses, for [`Facts::set`].
    fn slot_of(name: constants::DwAt) -> Option<u8> {
        Some(match name {
            constants::DW_AT_name => 0,
            constants::DW_AT_linkage_name => 1,
            constants::DW_AT_MIPS_linkage_name => 2,
            constants::DW_AT_specification => 3,
            constants::DW_AT_abstract_origin => 4,
            constants::DW_AT_low_pc => 5,
            constants::DW_AT_high_pc => 6,
            constants::DW_AT_ranges => 7,
            constants::DW_AT_call_file => 8,
            constants::DW_AT_call_line => 9,
            constants::DW_AT_language => 10,
            _ => return None,
        })
    }

    fn set(&mut self, slot: u8, value: AttributeValue<R<'a>>) {
        let field = match slot {
            0 => &mut self.name,
            1 => &mut self.linkage_name,
            2 => &mut self.mips_linkage_name,
            3 => &mut self.specification,
            4 => &mut self.abstract_origin,
            5 => &mut self.low_pc,
            6 => &mut self.high_pc,
            7 => &mut self.ranges,
            8 => &mut self.call_file,
            9 => &mut self.call_line,
            _ => &mut self.language,
        };
        // A repeated attribute (damaged input): the first one counts.
        if field.is_none() {
            *field = Some(value);
        }
    }

    /// Reads into `slot` the attribute `spec` at position `p` of the unit's DIEs (which
    /// start at unit offset `root` and run for `len` bytes) through gimli, for the forms
    /// `skim::Read::value` leaves; returns the position after it. Out of line: rare,
    /// and kept out of the walk's inlined loop.
    #[inline(never)]
    fn read_by_gimli(
        &mut self,
        unit: &gimli::Unit<R<'a>>,
        (root, len): (usize, usize),
        p: usize,
        spec: AttributeSpecification,
        slot: u8,
    ) -> Result<usize, Option<gimli::Error>> {
        // At the very end, gimli's error is the one to give.
        if p >= len {
            return Err(None);
        }
        let mut e = unit.entries_raw(Some(gimli::UnitOffset(root + p)))?;
        self.set(slot, e.read_attribute_inline(spec)?.value());
        Ok(e.next_offset().0 - root)
    }

    /// Reads the attributes of the DIE whose abbreviation `specs` are. Runs of unused
    /// attributes are skipped by their sizes: parsing every attribute of every indexed
    /// DIE (a member function's declaration has ten) into a list, then searching the
    /// list, was a fifth of a large dump's time.
    fn read(
        &mut self,
        entries: &mut gimli::EntriesRaw<'_, R<'a>>,
        specs: &[AttributeSpecification],
    ) -> gimli::Result<()> {
        *self = Facts::default();
        let mut skipped = 0;
        for (i, spec) in specs.iter().enumerate() {
            let Some(slot) = Facts::slot_of(spec.name()) else {
                continue;
            };
            if skipped < i {
                entries.skip_attributes(&specs[skipped..i])?;
            }
            skipped = i + 1;
            self.set(slot, entries.read_attribute_inline(*spec)?.value());
        }
        if skipped < specs.len() {
            entries.skip_attributes(&specs[skipped..])?;
        }
        Ok(())
    }
}

/// A string attribute as a reference into its string section, not yet read.
fn string<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    value: Option<AttributeValue<R<'a>>>,
) -> Option<LazyStr<'a>> {
    match value? {
        AttributeValue::DebugStrRef(o) => Some(LazyStr::Str(o.0)),
        AttributeValue::DebugStrRefSup(o) => Some(LazyStr::SupStr(o.0)),
        AttributeValue::DebugStrOffsetsIndex(i) => cx
            .dwarf
            .string_offset(unit, i)
            .ok()
            .map(|o| LazyStr::Str(o.0)),
        value => {
            let bytes = cx.dwarf.attr_string(unit, value).ok()?.slice();
            (!bytes.is_empty()).then_some(LazyStr::Bytes(bytes))
        }
    }
}

/// A reference attribute as an offset in the name index. References into other units
/// (and dwz's alternate file) are only followed when allowed (`-r` turns them off);
/// references into type units are not followed.
fn reference(
    cx: &Context<'_, '_>,
    start: usize,
    value: Option<AttributeValue<R<'_>>>,
) -> Option<usize> {
    match value? {
        AttributeValue::UnitRef(o) => start.checked_add(o.0),
        AttributeValue::DebugInfoRef(o) if cx.cross_unit_refs => cx.space.checked_add(o.0),
        // dwz: a DIE in the alternate file.
        AttributeValue::DebugInfoRefSup(o) if cx.cross_unit_refs => {
            super::SUP_SPACE.checked_add(o.0)
        }
        _ => None,
    }
}

/// The code ranges of a DIE (`DW_AT_low_pc`/`DW_AT_high_pc` or `DW_AT_ranges`), sorted and
/// merged, restricted to the image's code: empty ranges, tombstones and ranges starting
/// outside the code are dropped, and an end past the code is cut back.
fn die_ranges(
    cx: &Context<'_, '_>,
    unit: &gimli::Unit<R<'_>>,
    facts: &Facts<'_>,
    drafts: &mut Drafts,
) -> gimli::Result<Span> {
    let begin = drafts.ranges.len();
    let (out, limit, cut) = (
        &mut drafts.ranges,
        drafts.ranges_limit,
        &mut drafts.ranges_cut,
    );
    let keep = |out: &mut Vec<(u64, u64)>, cut: &mut bool, lo: u64, hi: u64| {
        if lo >= hi || unit.header.is_tombstone_address(lo) || *cut {
            return;
        }
        if out.len() >= limit {
            *cut = true;
            return;
        }
        if lo == 0 && cx.layout.code_spans.is_empty() {
            return;
        }
        if let Some(span_end) = cx.layout.code_span_end(lo) {
            out.push((lo, hi.min(span_end)));
        }
    };
    if let Some(v) = facts.ranges {
        let cut_before = *cut;
        let read = match v {
            AttributeValue::RangeListsRef(at) if unit.header.version() >= 5 => {
                let rnglists = cx.dwarf.ranges.debug_rnglists().reader().slice();
                let address_size = unit.header.address_size();
                let endian = cx.endian;
                let give = |lo, hi| keep(out, cut, lo, hi);
                rle_ranges(rnglists, at.0, unit.low_pc, address_size, endian, give)
            }
            _ => false,
        };
        if !read {
            // What the entries before the one it could not read gave is taken back.
            out.truncate(begin);
            *cut = cut_before;
            if let Some(iter) = cx.dwarf.attr_ranges(unit, v)? {
                for r in iter {
                    let r = r?;
                    keep(out, cut, r.begin, r.end);
                }
            }
        }
    } else if let Some(low) = facts.low_pc
        && let Some(low) = cx.dwarf.attr_address(unit, low)?
    {
        let high = match facts.high_pc {
            Some(AttributeValue::Udata(n)) => low.checked_add(n),
            Some(v) => cx.dwarf.attr_address(unit, v)?,
            None => None,
        };
        if let Some(high) = high {
            keep(out, cut, low, high);
        }
    }
    if *cut {
        // The DIE that reached the bound gets no ranges rather than some of them.
        out.truncate(begin);
    }
    let mine = &mut out[begin..];
    if mine.len() > 1 {
        // Sorted and merged so that the pieces of a function come out in address order.
        mine.sort_unstable();
        let mut merged = 0;
        for i in 1..mine.len() {
            let (lo, hi) = mine[i];
            if lo <= mine[merged].1 {
                mine[merged].1 = mine[merged].1.max(hi);
            } else {
                merged += 1;
                mine[merged] = (lo, hi);
            }
        }
        out.truncate(begin + merged + 1);
    }
    // A unit's ranges fit in u32 indexes: it would need 64 GiB of them to overflow, and
    // the unit itself is far smaller than that.
    Ok((begin as u32, out.len() as u32))
}

/// Gives `give` the ranges of the DWARF 5 range list at `offset` in `.debug_rnglists`
/// (`data`), as gimli's iterator gives them: the base address (`base`, the unit's
/// `DW_AT_low_pc`, until an entry sets another) added to offset pairs and every address
/// cut to `address_size`, and entries that are empty, reversed or start at a tombstone
/// (or follow a tombstone base) skipped. `false` at an entry this cannot read (one that
/// indexes `.debug_addr`, an unknown or cut one, an address size other than 4 or 8),
/// having given the entries before it: gimli then reads the list, and reports what is
/// wrong with it. Hand-written because gimli's iterator decodes each entry into a
/// general form and converts it, which was most of the time spent on ranges with
/// `--inlines`, where every inlined call has a list. `rle_ranges_are_gimlis` holds it to
/// gimli's iterator.
fn rle_ranges(
    data: &[u8],
    offset: usize,
    mut base: u64,
    address_size: u8,
    endian: gimli::RunTimeEndian,
    mut give: impl FnMut(u64, u64),
) -> bool {
    use gimli::Endianity as _;
    let mask = match address_size {
        4 => u64::from(u32::MAX),
        8 => u64::MAX,
        _ => return false,
    };
    // gimli's smallest tombstone: -2 at the address size.
    let tombstone = mask - 1;
    let Some(data) = data.get(offset..) else {
        return false;
    };
    let size = usize::from(address_size);
    let address = |pos: &mut usize| -> Option<u64> {
        let bytes = data.get(*pos..*pos + size)?;
        *pos += size;
        Some(match size {
            4 => u64::from(endian.read_u32(bytes)),
            _ => endian.read_u64(bytes),
        })
    };
    let mut pos = 0;
    // The data's end ends the list, as in gimli.
    while let Some(&kind) = data.get(pos) {
        pos += 1;
        let (begin, end) = match constants::DwRle(kind) {
            constants::DW_RLE_end_of_list => return true,
            constants::DW_RLE_offset_pair => {
                let (Some(b), Some(e)) = (skim::uleb(data, &mut pos), skim::uleb(data, &mut pos))
                else {
                    return false;
                };
                if base >= tombstone {
                    continue;
                }
                (base.wrapping_add(b) & mask, base.wrapping_add(e) & mask)
            }
            constants::DW_RLE_base_address => {
                let Some(b) = address(&mut pos) else {
                    return false;
                };
                base = b;
                continue;
            }
            constants::DW_RLE_start_end => {
                let (Some(b), Some(e)) = (address(&mut pos), address(&mut pos)) else {
                    return false;
                };
                (b, e)
            }
            constants::DW_RLE_start_length => {
                let (Some(b), Some(n)) = (address(&mut pos), skim::uleb(data, &mut pos)) else {
                    return false;
                };
                (b, b.wrapping_add(n) & mask)
            }
            _ => return false,
        };
        if begin < tombstone && begin < end {
            give(begin, end);
        }
    }
    true
}

/// The line rows within `[lo, hi)`, clipped to it. Rows whose file cannot be named are
/// dropped.
fn clip_lines(
    rows: &[RawRow],
    lo: u64,
    hi: u64,
    mut slot: impl FnMut(u64) -> Option<u32>,
) -> Vec<LineRow> {
    let first = rows.partition_point(|r| r.end <= lo);
    let last = first + rows[first..].partition_point(|r| r.address < hi);
    // Sized once for the rows that may be kept: grown by doubling, these vectors were
    // half the reallocations of a dump.
    let mut out = Vec::with_capacity(last - first);
    for r in &rows[first..last] {
        let (a, e) = (r.address.max(lo), r.end.min(hi));
        if a >= e {
            continue;
        }
        if let Some(file) = slot(r.file) {
            out.push(LineRow {
                address: a,
                size: e - a,
                line: r.line,
                file,
            });
        }
    }
    out
}

/// The inline sites of a function restricted to `[lo, hi)`: each site is clipped to its
/// parent's clipped ranges, and a site left with nothing (with its whole subtree) is
/// dropped, so children always lie within their parents.
fn clip_sites(
    sites: &[SiteDraft],
    drafts: &Drafts,
    lo: u64,
    hi: u64,
    mut slot: impl FnMut(Option<u64>) -> Option<u32>,
) -> Vec<InlineSite> {
    // Sized for the sites that may be kept, up to a bound: a piece's vectors are held
    // until its unit is encoded, and a function cut into many pieces would hold its
    // sites' room in each.
    let mut out = Vec::with_capacity(sites.len().min(256));
    // Clipped ranges live in `arena`; `stack` holds each depth's span of it: [0] is the
    // piece itself, [d + 1] the current site at d. No allocation per site but its own.
    // Both sized for what real functions fill (a site's clipped ranges are rarely more
    // than its own; inlined calls nest up to 46 deep): grown from nothing for each
    // piece, they were a reallocation per few sites.
    let room: usize = (sites.iter())
        .map(|s| s.ranges.1.saturating_sub(s.ranges.0) as usize)
        .sum();
    let mut arena: Vec<(u64, u64)> = Vec::with_capacity(1 + room.min(1 << 16));
    arena.push((lo, hi));
    let mut stack: Vec<Option<(usize, usize)>> = Vec::with_capacity(64);
    stack.push(Some((0, 1)));
    let mut scratch = Vec::new();
    for s in sites {
        let d = s.depth as usize;
        if stack.len() < d + 1 {
            // A site deeper than its parent allows: damaged nesting.
            continue;
        }
        stack.truncate(d + 1);
        let clipped = stack[d].and_then(|(a, b)| {
            scratch.clear();
            intersect_ranges(drafts.ranges(s.ranges), &arena[a..b], &mut scratch);
            let at = arena.len();
            arena.extend_from_slice(&scratch);
            (!scratch.is_empty()).then_some((at, arena.len()))
        });
        if let Some((a, b)) = clipped
            && let Some(call_file) = slot(s.call_file)
        {
            out.push(InlineSite {
                depth: s.depth,
                origin: s.origin,
                call_file,
                call_line: s.call_line,
                ranges: arena[a..b].to_vec(),
            });
        }
        stack.push(clipped);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range list of random entries: every kind (the ones `rle_ranges` leaves to gimli
    /// too), tombstones, wrapping sums, and sometimes a cut or an unknown kind.
    fn random_list(
        next: &mut impl FnMut() -> u64,
        size: u8,
        endian: gimli::RunTimeEndian,
    ) -> Vec<u8> {
        let mask = if size == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        let value = |next: &mut dyn FnMut() -> u64| match next() % 6 {
            0 => mask,
            1 => mask - 1,
            2 => 0,
            3 => next() % 0x100,
            4 => next() & mask,
            _ => 0x1000 + next() % 0x10_0000,
        };
        let mut out = Vec::new();
        let uleb = |out: &mut Vec<u8>, mut v: u64| loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        };
        let address = |out: &mut Vec<u8>, v: u64| match (size, endian) {
            (4, gimli::RunTimeEndian::Little) => out.extend((v as u32).to_le_bytes()),
            (4, _) => out.extend((v as u32).to_be_bytes()),
            (_, gimli::RunTimeEndian::Little) => out.extend(v.to_le_bytes()),
            _ => out.extend(v.to_be_bytes()),
        };
        for _ in 0..next() % 8 {
            let kind = match next() % 20 {
                0 => 1,
                1 => 2,
                2 => 3,
                3 => next() as u8,
                k => 4 + (k % 4) as u8,
            };
            out.push(kind);
            match kind {
                1 => uleb(&mut out, next() % 4),
                2 => (0..2).for_each(|_| uleb(&mut out, next() % 4)),
                3 => {
                    uleb(&mut out, next() % 4);
                    uleb(&mut out, value(next));
                }
                4 => (0..2).for_each(|_| uleb(&mut out, value(next))),
                5 => address(&mut out, value(next)),
                6 => (0..2).for_each(|_| address(&mut out, value(next))),
                7 => {
                    address(&mut out, value(next));
                    uleb(&mut out, value(next));
                }
                _ => {}
            }
        }
        if !next().is_multiple_of(3) {
            out.push(0);
        }
        if next().is_multiple_of(5) {
            let cut = (next() as usize) % (out.len() + 1);
            out.truncate(cut);
        }
        out
    }

    #[test]
    fn rle_ranges_are_gimlis() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut read, mut left) = (0, 0);
        for round in 0..20_000 {
            let size = if round % 2 == 0 { 8 } else { 4 };
            let endian = if round % 3 == 0 {
                gimli::RunTimeEndian::Big
            } else {
                gimli::RunTimeEndian::Little
            };
            let mask = if size == 4 {
                u64::from(u32::MAX)
            } else {
                u64::MAX
            };
            let lead = (next() % 3) as usize;
            let mut data = vec![0xee; lead];
            data.extend(random_list(&mut next, size, endian));
            let base = match next() % 4 {
                0 => mask - 1,
                1 => 0,
                _ => 0x40_0000 + next() % 0x1000,
            };
            let mut ours = Vec::new();
            if !rle_ranges(&data, lead, base, size, endian, |b, e| ours.push((b, e))) {
                left += 1;
                continue;
            }
            read += 1;
            let encoding = gimli::Encoding {
                format: gimli::Format::Dwarf32,
                version: 5,
                address_size: size,
            };
            let lists = gimli::RangeLists::new(
                gimli::DebugRanges::new(&[], endian),
                gimli::DebugRngLists::new(&data, endian),
            );
            let addr = gimli::DebugAddr::from(gimli::EndianSlice::new(&[], endian));
            let offset = gimli::RangeListsOffset(lead);
            let iter = lists.ranges(offset, encoding, base, &addr, gimli::DebugAddrBase(0));
            let theirs: Vec<(u64, u64)> = iter
                .unwrap()
                .map(|r| r.map(|r| (r.begin, r.end)))
                .collect::<gimli::Result<_>>()
                .unwrap_or_else(|e| panic!("gimli: {e} where we read {data:02x?}"));
            assert_eq!(ours, theirs, "{data:02x?} base {base:#x} size {size}");
        }
        // Both kinds of lists were met often.
        assert!(
            read > 5_000 && left > 2_000,
            "{read} read, {left} left to gimli"
        );
    }

    #[test]
    fn declarations_read_late_take_their_place_and_parents_follow() {
        let die = |offset, parent, name: &'static str| DieInfo {
            offset,
            parent,
            kind: ScopeKind::Function,
            name: Some(LazyStr::Bytes(name.as_bytes())),
            linkage: None,
            target: None,
        };
        // A namespace (0) holding a class (1), a function after it (2), and one at the
        // top (3); the declarations read late sit in the class and the namespace.
        let mut dies = vec![
            die(10, NONE, "ns"),
            die(20, 0, "C"),
            die(90, 0, "f"),
            die(200, NONE, "g"),
        ];
        let late = vec![die(60, 1, "C::m2"), die(30, 1, "C::m1"), die(95, 0, "h")];
        merge_dies(&mut dies, late);
        let got: Vec<(usize, &str)> = dies
            .iter()
            .map(|d| {
                let parent = dies.get(d.parent as usize).map_or(usize::MAX, |p| p.offset);
                let Some(LazyStr::Bytes(n)) = d.name else {
                    unreachable!()
                };
                (parent, std::str::from_utf8(n).unwrap())
            })
            .collect();
        let offsets: Vec<usize> = dies.iter().map(|d| d.offset).collect();
        assert_eq!(offsets, [10, 20, 30, 60, 90, 95, 200]);
        let top = usize::MAX;
        assert_eq!(
            got,
            [
                (top, "ns"),
                (10, "C"),
                (20, "C::m1"),
                (20, "C::m2"),
                (10, "f"),
                (10, "h"),
                (top, "g")
            ]
        );
        // Nothing to merge leaves the index as it was.
        let before: Vec<usize> = dies.iter().map(|d| d.parent as usize).collect();
        merge_dies(&mut dies, Vec::new());
        let after: Vec<usize> = dies.iter().map(|d| d.parent as usize).collect();
        assert_eq!(before, after);
    }

    /// An inlined call that is no site (here, in a copy of a function whose code lies
    /// outside the image's, as linkers leave dropped COMDAT copies) is stepped over
    /// with all it holds, by its `DW_AT_sibling`; one in a function with code is
    /// walked, and the DIEs after either keep their depth and scope. The function
    /// nested in each call is only there to show which subtree was walked.
    #[test]
    fn inlined_calls_that_are_no_sites_are_stepped_over() {
        // Abbreviations: 1 the unit; 2 a function (name, low_pc, high_pc) with
        // children; 3 an inlined call (origin, low_pc, high_pc, sibling) with children;
        // 4 a function without children.
        let abbrev: Vec<u8> = vec![
            1, 0x11, 1, 0, 0, //
            2, 0x2e, 1, 0x03, 0x08, 0x11, 0x01, 0x12, 0x07, 0, 0, //
            3, 0x1d, 1, 0x31, 0x13, 0x11, 0x01, 0x12, 0x07, 0x01, 0x13, 0, 0, //
            4, 0x2e, 0, 0x03, 0x08, 0x11, 0x01, 0x12, 0x07, 0, 0, //
            0,
        ];
        let mut info: Vec<u8> = vec![0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 8];
        let function = |info: &mut Vec<u8>, code: u8, name: &str, low: u64| -> usize {
            let at = info.len();
            info.push(code);
            info.extend(name.as_bytes());
            info.push(0);
            info.extend(low.to_le_bytes());
            info.extend(0x10u64.to_le_bytes());
            at
        };
        // An inlined call of `origin`; returns where its sibling reference goes.
        let call = |info: &mut Vec<u8>, origin: usize| -> usize {
            info.push(3);
            info.extend((origin as u32).to_le_bytes());
            info.extend(0x1000u64.to_le_bytes());
            info.extend(0x10u64.to_le_bytes());
            info.extend([0; 4]);
            info.len() - 4
        };
        let patch = |info: &mut Vec<u8>, at: usize| {
            let to = (info.len() as u32).to_le_bytes();
            info[at..at + 4].copy_from_slice(&to);
        };
        // A function at `low` holding an inlined call of `origin` (itself when `None`),
        // which holds a function at `inner_low`; returns both functions' offsets.
        let with_call = |info: &mut Vec<u8>, name, low, origin: Option<usize>, inner_low| {
            let outer = function(info, 2, name, low);
            let sibling = call(info, origin.unwrap_or(outer));
            let inner = function(info, 4, "inner", inner_low);
            info.push(0);
            patch(info, sibling);
            info.push(0);
            (outer, inner)
        };
        info.push(1);
        let (dropped, hidden) = with_call(&mut info, "dropped", 0, None, 0x2000);
        let (live, walked) = with_call(&mut info, "live", 0x1000, Some(dropped), 0x3000);
        let after = function(&mut info, 4, "after", 0x4000);
        info.push(0);
        let length = (info.len() - 4) as u32;
        info[..4].copy_from_slice(&length.to_le_bytes());

        let endian = gimli::RunTimeEndian::Little;
        let dwarf = gimli::Dwarf::<R>::load(|id| -> gimli::Result<R> {
            Ok(gimli::EndianSlice::new(
                match id {
                    gimli::SectionId::DebugInfo => &info,
                    gimli::SectionId::DebugAbbrev => &abbrev,
                    _ => &[],
                },
                endian,
            ))
        })
        .unwrap();
        let header = dwarf.units().next().unwrap().unwrap();
        let unit = dwarf.unit(header).unwrap();
        let layout = crate::identity::Layout {
            load_address: 0,
            code_spans: vec![(0x1000, 0x5000)],
        };
        let companions = crate::locate::Finder {
            binary: std::path::Path::new("test"),
            debug_file: None,
            debug_dirs: &[],
            debuginfod: None,
            on_disk: false,
        };
        let cx = Context {
            dwarf: &dwarf,
            layout: &layout,
            inlines: true,
            cross_unit_refs: false,
            index_only: false,
            endian,
            companions: &companions,
            dwo: None,
            dwp: None,
            space: 0,
        };
        let mut out = UnitOutput::default();
        let drafts = walk_unit(&cx, &unit, 0, &mut out);
        assert!(out.warnings.is_empty());
        let funcs: Vec<usize> = drafts.funcs.iter().map(|f| f.die).collect();
        assert_eq!(funcs, [live, walked, after]);
        assert!(!funcs.contains(&hidden));
        // The walked call is a site of `live`; the other is none.
        let sites: Vec<(u32, usize)> = drafts.sites.iter().map(|s| (s.func, s.origin)).collect();
        assert_eq!(sites, [(0, dropped)]);
        // `after` is at the top of the unit again, as `live` is.
        let parent = |offset| {
            let dies = &out.dies.dies;
            let d = dies.iter().find(|d| d.offset == offset).unwrap();
            dies.get(d.parent as usize).map(|p| p.offset)
        };
        assert_eq!(parent(after), None);
        assert_eq!(parent(live), None);
        assert_eq!(parent(walked), Some(live));
    }

    #[test]
    fn intersect_appends_the_common_parts() {
        let mut out = vec![(1, 2)];
        intersect_ranges(&[(0, 10), (20, 30)], &[(5, 25)], &mut out);
        assert_eq!(out, vec![(1, 2), (5, 10), (20, 25)]);
        out.clear();
        intersect_ranges(&[(0, 10)], &[(10, 20)], &mut out);
        assert_eq!(out, vec![]);
    }

    fn site(drafts: &mut Drafts, depth: u32, ranges: Vec<(u64, u64)>) -> SiteDraft {
        let at = drafts.ranges.len() as u32;
        drafts.ranges.extend(ranges);
        SiteDraft {
            func: 0,
            depth,
            origin: 1,
            call_file: Some(1),
            call_line: 7,
            ranges: (at, drafts.ranges.len() as u32),
        }
    }

    #[test]
    fn sites_are_clipped_to_piece_and_parents() {
        let mut d = Drafts::default();
        let sites = vec![
            site(&mut d, 0, vec![(0x10, 0x20), (0x100, 0x110)]), // second range is in another piece
            site(&mut d, 1, vec![(0x18, 0x30)]),                 // sticks out of its parent
            site(&mut d, 0, vec![(0x200, 0x210)]),               // entirely outside the piece
            site(&mut d, 1, vec![(0x200, 0x208)]),               // child of a dropped site
        ];
        let out = clip_sites(&sites, &d, 0x0, 0x40, |_| Some(0));
        let got: Vec<(u32, Vec<(u64, u64)>)> =
            out.into_iter().map(|s| (s.depth, s.ranges)).collect();
        assert_eq!(got, vec![(0, vec![(0x10, 0x20)]), (1, vec![(0x18, 0x20)])]);
    }

    #[test]
    fn lines_are_clipped() {
        let rows = vec![
            RawRow {
                address: 0x0,
                end: 0x10,
                line: 1,
                file: 1,
            },
            RawRow {
                address: 0x10,
                end: 0x20,
                line: 2,
                file: 1,
            },
            RawRow {
                address: 0x20,
                end: 0x30,
                line: 3,
                file: 9,
            },
        ];
        let got = clip_lines(&rows, 0x8, 0x30, |f| (f == 1).then_some(0));
        assert_eq!(
            got,
            vec![
                LineRow {
                    address: 0x8,
                    size: 8,
                    line: 1,
                    file: 0
                },
                LineRow {
                    address: 0x10,
                    size: 0x10,
                    line: 2,
                    file: 0
                },
            ]
        );
    }
}
