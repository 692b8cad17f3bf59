//! One compilation unit: a single walk over its DIEs collects the naming index, the
//! functions with their address ranges and inline trees, then lines are attached and
//! everything is cut into one piece per contiguous range.

use gimli::{AttributeValue, Section as _, UnitHeader, constants};

use super::clip::{clip_lines, clip_sites};
use super::cursor::{Cursor, Die, childless, want};
use super::drafts::{
    BASE_RANGES, Drafts, FuncDraft, MAX_INLINE_DEPTH, MAX_LINES_PER_ROW, MAX_PIECES_PER_FUNCTION,
    MAX_RANGES_PER_UNIT_BYTE, SiteDraft,
};
use super::facts::{Facts, reference, string};
use super::lines::{self, FileTable, RawRow};
use super::names::merge_dies;
use super::names::{DieInfo, NONE, ScopeKind, UnitDies};
use super::ranges::die_ranges;
use super::unit_warning;
use super::{Context, R};
use crate::demangle::Lang;
use crate::error::{WarningKind, Warnings};
use crate::model::debuginfo::{InlineSite, LineRow};

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
            out.warnings
                .add(unit_warning(WarningKind::Dwarf, at, why.to_string()));
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

/// Why a split DWARF file gives no unit for its skeleton.
#[derive(Debug, thiserror::Error)]
enum SplitUnitError {
    #[error("split unit: {0}")]
    Read(#[source] gimli::Error),
    #[error("no unit with DWO id {id:#x} in {file:?}")]
    NoUnit { id: u64, file: String },
}

/// The unit of `dwarf` whose DWO id is `id`; why there is none.
fn split_unit<'a>(
    dwarf: &gimli::Dwarf<R<'a>>,
    id: gimli::DwoId,
    dwo_name: &str,
) -> Result<gimli::Unit<R<'a>>, SplitUnitError> {
    let mut units = dwarf.units();
    loop {
        let header = units.next().map_err(SplitUnitError::Read)?;
        let Some(header) = header else {
            return Err(SplitUnitError::NoUnit {
                id: id.0,
                file: dwo_name.to_string(),
            });
        };
        let unit = dwarf.unit(header).map_err(SplitUnitError::Read)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::debuginfo::intersect_ranges;

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
}
