//! DWARF: functions, their lines and inline trees, extracted per compilation unit in
//! parallel as `.debug_info` streams in (`stream.rs`), each unit's names resolved by the
//! worker that read it (`resolve.rs`), and merged into compact records
//! ([`crate::model::body`]). Memory holds the sections read at random (strings, line
//! programs, ranges, abbreviations), the units in flight and the encoded records, never
//! all of `.debug_info` or an index of all its DIEs.

mod clip;
mod cursor;
mod drafts;
mod facts;
mod keyed;
mod line_program;
mod lines;
mod names;
mod ranges;
mod resolve;
mod skim;
mod split;
mod stream;
pub(crate) mod sup;
mod unit;

#[cfg(feature = "fuzzing")]
pub(crate) use line_program::check_against_gimli as check_line_program;
#[cfg(any(feature = "fuzzing", test))]
pub(crate) use stream::split_streamed;

#[cfg(any(feature = "fuzzing", test))]
/// Reads `data` as `.gnu_debugaltlink` and as `.debug_sup` (both flags): the path each
/// names. For the fuzz targets.
pub(crate) fn parse_link(data: &[u8]) -> Vec<String> {
    [
        sup::parse_debugaltlink(data),
        sup::parse_debug_sup(data, false),
        sup::parse_debug_sup(data, true),
    ]
    .into_iter()
    .flatten()
    .map(|l| l.path)
    .collect()
}

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use gimli::{EndianSlice, Reader as _, RunTimeEndian, Section as _};
use rayon::prelude::*;
use rustc_hash::FxHashMap;

use crate::error::{Warning, WarningKind, Warnings};
use crate::identity::Layout;
use crate::load::{Input, Object, SectionBytes};
use crate::model::body::{BodyRef, UnitBodies};
pub(crate) use crate::model::debuginfo::{DebugInfo, FunctionRecord};
use names::UnitDies;
use resolve::{Name, NameSlot, Origins, UnitResult};
pub(crate) use split::{DwoFile, DwpFile};
pub(crate) use sup::{AltLink, debug_sup};

/// The files beside the one being read that its DWARF points to. The reader asks for
/// each when it meets the need, as addr2line returns a request to load a split unit;
/// finding and opening them is its caller's business ([`crate::locate`]), so that the
/// reader does no I/O of its own.
pub(crate) trait Companions: Sync {
    /// dwz's alternate file that `link` names, opened; why it was not found or not
    /// used goes to `warnings`.
    fn alternate(&self, link: &AltLink, warnings: &mut Warnings) -> Option<Input>;
    /// The module's `.dwp` package, if it has one.
    fn package(&self, warnings: &mut Warnings) -> Option<DwpFile>;
    /// Where the `.dwo` of a skeleton unit may be, in the order to try.
    fn split_unit_places(&self, comp_dir: Option<&str>, dwo_name: &str) -> Vec<PathBuf>;
    /// The first of `places` that is there, read.
    fn split_unit(&self, places: &[PathBuf], warnings: &mut Warnings) -> Option<DwoFile>;
}

pub(crate) type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// A warning about the compilation unit at `at` in `.debug_info`.
pub(crate) fn unit_warning(kind: WarningKind, at: usize, what: String) -> Warning {
    Warning::new(kind, format!("compilation unit at {at:#x}: {what}"))
        .on(".debug_info")
        .at(at as u64)
}

/// What the per-unit workers share.
#[derive(Clone, Copy)]
pub(crate) struct Context<'d, 'a> {
    pub dwarf: &'d gimli::Dwarf<R<'a>>,
    pub layout: &'d Layout,
    pub inlines: bool,
    pub cross_unit_refs: bool,
    /// Only the name index is wanted (the second pass): no line tables, no pieces.
    pub index_only: bool,
    pub endian: RunTimeEndian,
    pub companions: &'d dyn Companions,
    /// Where this unit's `.dwo` is kept while the unit is processed; `None` for units
    /// that cannot have one (dwz's alternate file).
    pub dwo: Option<&'a OnceLock<Option<split::DwoFile>>>,
    pub dwp: Option<&'d gimli::DwarfPackage<R<'a>>>,
    /// Added to `.debug_info` offsets read in this file: 0 for the main file, a range of
    /// its own for a split unit's `.dwo` and for dwz's alternate file.
    pub space: usize,
}

/// The offset range of dwz's alternate file in the name index: above main and split
/// offsets (see `unit::SPLIT_SPACE_SHIFT`).
pub(crate) const SUP_SPACE: usize = if usize::BITS >= 64 { 1 << 62 } else { 1 << 31 };

/// Options for extraction.
#[derive(Debug, Clone, Copy)]
pub struct DwarfOptions {
    /// Collect inline trees.
    pub inlines: bool,
    /// Follow `DW_FORM_ref_addr` references into other units.
    pub cross_unit_refs: bool,
}

/// The sections units read at random, loaded once; `.debug_info` is streamed apart.
pub(crate) struct Shared<'s> {
    sections: gimli::DwarfSections<Cow<'s, [u8]>>,
    /// The sections above that are the input's mapped bytes, not inflated copies.
    mapped: Vec<&'s [u8]>,
    alt: Option<gimli::DwarfSections<Cow<'s, [u8]>>>,
    endian: RunTimeEndian,
}

impl<'s> Shared<'s> {
    /// The sections of `obj` that units read at random, and those of dwz's alternate
    /// file `alt` (its `.debug_info` too: names refer into it).
    fn load(
        obj: &Object<'s>,
        alt: Option<&Object<'s>>,
        endian: RunTimeEndian,
        warnings: &mut Warnings,
    ) -> Shared<'s> {
        let (sections, mapped) = load_sections(obj, warnings);
        Shared {
            sections,
            mapped,
            alt: alt.map(|o| {
                let mut s = load_sections(o, warnings).0;
                s.debug_info = gimli::DebugInfo::from(o.section_data(".debug_info", warnings));
                s
            }),
            endian,
        }
    }

    /// Frees inflated sections and releases mapped ones (see [`crate::load::Input::release`]).
    fn release(self, input: &crate::load::Input) {
        for bytes in &self.mapped {
            input.release(bytes);
        }
    }

    /// A `Dwarf` over the shared sections whose `.debug_info` is `info`: one unit's
    /// bytes, or nothing.
    pub(crate) fn dwarf<'w>(&'w self, info: &'w [u8]) -> gimli::Dwarf<R<'w>> {
        let endian = self.endian;
        let mut dwarf = self.sections.borrow(|s| EndianSlice::new(s, endian));
        dwarf.debug_info = gimli::DebugInfo::new(info, endian);
        if let Some(alt) = &self.alt {
            dwarf.set_sup(alt.borrow(|s| EndianSlice::new(s, endian)));
        }
        dwarf
    }
}

/// Everything a unit worker needs besides its unit.
pub(crate) struct Job<'j, 's> {
    pub shared: &'j Shared<'s>,
    pub layout: &'j Layout,
    pub opts: DwarfOptions,
    pub companions: &'j dyn Companions,
    pub dwp: Option<&'j gimli::DwarfPackage<R<'j>>>,
    /// dwz's alternate file's DIEs, for names that refer into it.
    pub sup_dies: &'j [UnitDies<'j>],
    /// The length of `.debug_info`: references below it may lead into other units.
    pub info_len: usize,
    pub demangled: &'j crate::demangle::Cache,
    pub linkage: &'j names::LinkageNames,
    pub origins: &'j Origins,
}

/// Reads the DWARF sections of `obj` and extracts every function with code.
pub(crate) fn extract(
    obj: &Object,
    layout: &Layout,
    opts: DwarfOptions,
    companions: &dyn Companions,
    warnings: &mut Warnings,
) -> DebugInfo {
    let endian = if obj.is_big_endian() {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    };
    let info = obj.section_bytes(".debug_info", warnings);
    let info_len = match &info {
        SectionBytes::Whole(data) if data.is_empty() => return DebugInfo::default(),
        SectionBytes::Whole(data) => data.len(),
        SectionBytes::Stream(s) => usize::try_from(s.size).unwrap_or(usize::MAX),
    };
    // dwz: the alternate file holding the DIEs and strings several debug files share.
    let alt = sup::alt_link(obj).and_then(|link| companions.alternate(&link, warnings));
    let alt_obj = alt
        .as_ref()
        .and_then(|input| parse_alternate(input, warnings));
    let shared = Shared::load(obj, alt_obj.as_ref(), endian, warnings);
    let dwp_file = companions.package(warnings);
    let dwp = dwp_file
        .as_ref()
        .and_then(|f| open_package(f, endian, warnings));
    let sup_dwarf = shared
        .alt
        .as_ref()
        .map(|alt| alt.borrow(|s| EndianSlice::new(s, endian)));
    let sup_dies = sup_dwarf
        .as_ref()
        .map(|sup| sup_index(sup, layout, companions, opts))
        .unwrap_or_default();
    let demangled = crate::demangle::Cache::new(crate::identity::is_x86_coff(obj));
    let origins = Origins::for_units(info_len, opts.inlines);
    // As the units see them (`unit::walk_unit`), so that their string sections match.
    let seen = shared.dwarf(&[]);
    let linkage = names::LinkageNames::new(
        seen.debug_str.reader().slice(),
        seen.sup().map_or(&[], |s| s.debug_str.reader().slice()),
    );
    let job = Job {
        demangled: &demangled,
        linkage: &linkage,
        origins: &origins,
        shared: &shared,
        layout,
        opts,
        companions,
        dwp: dwp.as_ref(),
        sup_dies: &sup_dies,
        info_len,
    };

    let visit = stream::Visit {
        endian,
        want: &|_| true,
        work: &|chunk| resolve::unit_result(&job, &chunk.data, chunk.offset, chunk.index),
    };
    let (units, spans) = stream::map_units(info, obj.input, &visit, warnings);
    let deferred = deferred_names(&units);
    let late = if deferred.is_empty() {
        HashMap::new()
    } else {
        // Its warnings were given when it was first opened.
        let open = || obj.section_bytes(".debug_info", &mut Warnings::default());
        resolve::deferred_names(&job, &open, obj.input, &spans, deferred)
    };
    drop(demangled);
    drop(linkage);
    // Nothing reads the sections from here on: their memory goes back before the model
    // is built, which would otherwise stack on top of them.
    drop(sup_dies);
    shared.release(obj.input);
    merge(units, &late, origins, warnings)
}

/// dwz's alternate file as an object; why it cannot be read goes to `warnings`.
fn parse_alternate<'i>(input: &'i Input, warnings: &mut Warnings) -> Option<Object<'i>> {
    match Object::parse_any(input) {
        Ok(o) => Some(o),
        Err(e) => {
            let shown = input.path().display();
            warnings.push(
                WarningKind::Companion,
                format!("alternate debug file {shown}: {e}"),
            );
            None
        }
    }
}

/// The index of a `.dwp` package; why it cannot be read goes to `warnings`.
fn open_package<'f>(
    file: &'f DwpFile,
    endian: RunTimeEndian,
    warnings: &mut Warnings,
) -> Option<gimli::DwarfPackage<R<'f>>> {
    match file.package(endian) {
        Ok(p) => Some(p),
        Err(e) => {
            warnings.push(
                WarningKind::Companion,
                format!("{}: {e}", file.path.display()),
            );
            None
        }
    }
}

/// The `.debug_info` offsets of the names the units left to be resolved once all of
/// them are read: functions' and inline origins' names in other units.
fn deferred_names(units: &[UnitResult]) -> Vec<usize> {
    units
        .iter()
        .flat_map(|u| {
            let pieces = u.pieces.iter().filter_map(|p| match p.name {
                NameSlot::Deferred(o) => Some(o),
                NameSlot::Known(_) => None,
            });
            pieces.chain(u.deferred_origins.iter().map(|d| d.1))
        })
        .collect()
}

/// The name index of dwz's alternate file, whose units hold names but no code.
fn sup_index<'a>(
    sup: &'a gimli::Dwarf<R<'a>>,
    layout: &'a Layout,
    companions: &'a dyn Companions,
    opts: DwarfOptions,
) -> Vec<UnitDies<'a>> {
    let cx = Context {
        dwarf: sup,
        layout,
        inlines: false,
        cross_unit_refs: opts.cross_unit_refs,
        index_only: true,
        endian: sup.debug_info.reader().endian(),
        companions,
        dwo: None,
        dwp: None,
        space: SUP_SPACE,
    };
    let mut headers = Vec::new();
    let mut iter = sup.units();
    while let Ok(Some(h)) = iter.next() {
        headers.push(h);
    }
    let total = sup.debug_info.reader().len();
    let ends: Vec<usize> = headers
        .iter()
        .skip(1)
        .map(|h| h.offset().0)
        .chain([total])
        .collect();
    headers
        .into_par_iter()
        .zip(ends)
        .map(|(h, end)| {
            let at = h.offset().0;
            unit::process(&cx, h, at, end, usize::MAX).dies
        })
        .collect()
}

/// Joins the units' results in unit order: files interned by path, names that needed
/// other units filled in from `late`.
fn merge(
    units: Vec<UnitResult>,
    late: &HashMap<usize, Option<Name>>,
    origins: Origins,
    warnings: &mut Warnings,
) -> DebugInfo {
    let mut out = DebugInfo::default();
    // Sized once: grown by doubling, the copies of a large module's records (and the
    // page faults of each new block) were 2% of its dump.
    out.functions
        .reserve_exact(units.iter().map(|u| u.pieces.len()).sum());
    out.bodies.reserve_exact(units.len());
    let mut file_ids: FxHashMap<String, u32> = FxHashMap::default();
    for (ui, u) in units.into_iter().enumerate() {
        warnings.extend(u.warnings);
        let files = u
            .files
            .iter()
            .map(|path| intern(&mut file_ids, &mut out.files, path))
            .collect();
        let mut unit_origins = u.origins;
        for (slot, offset) in u.deferred_origins {
            let id = origins.intern_name(late.get(&offset).and_then(|n| n.as_ref()));
            if let Some(o) = unit_origins.get_mut(slot as usize) {
                *o = id;
            }
        }
        let functions = u.pieces.into_iter().map(|p| function(p, ui, late));
        out.functions.extend(functions);
        out.bodies.push(UnitBodies {
            bytes: u.bytes,
            files,
            origins: unit_origins,
        });
    }
    out.origins = origins.into_names();
    out
}

/// The function record of a piece of unit `ui`, named now or from `late`.
fn function(
    p: resolve::PieceHead,
    ui: usize,
    late: &HashMap<usize, Option<Name>>,
) -> FunctionRecord {
    let name = match p.name {
        NameSlot::Known(n) => n,
        NameSlot::Deferred(o) => late.get(&o).cloned().flatten(),
    };
    FunctionRecord {
        start: p.start,
        end: p.end,
        name_from_linkage: name.as_ref().is_some_and(|n| n.1),
        name: name.map(|n| n.0.to_string()),
        param_size: 0,
        body: BodyRef::new(ui, p.body),
    }
}

/// The DWARF sections units read at random, decompressed in parallel; `.debug_info` is
/// left out (it is streamed), and so are sections no record is made from (locations,
/// macros, accelerator tables).
fn load_sections<'a>(
    obj: &Object<'a>,
    warnings: &mut Warnings,
) -> (gimli::DwarfSections<Cow<'a, [u8]>>, Vec<&'a [u8]>) {
    use gimli::SectionId as S;
    const NEEDED: [S; 8] = [
        S::DebugAbbrev,
        S::DebugAddr,
        S::DebugLine,
        S::DebugLineStr,
        S::DebugStr,
        S::DebugStrOffsets,
        S::DebugRanges,
        S::DebugRngLists,
    ];
    let names: Vec<&str> = NEEDED.iter().map(|id| id.name()).collect();
    let loaded = obj.sections_data(&names, warnings);
    let mapped = loaded
        .iter()
        .filter_map(|c| match c {
            Cow::Borrowed(b) => Some(*b),
            Cow::Owned(_) => None,
        })
        .collect();
    let mut loaded = loaded.into_iter();
    let mut by_id: HashMap<S, Cow<'a, [u8]>> = NEEDED
        .iter()
        .map(|&id| (id, loaded.next().unwrap_or_default()))
        .collect();
    let sections = gimli::DwarfSections::load(|id| -> Result<Cow<'a, [u8]>, ()> {
        Ok(by_id.remove(&id).unwrap_or_default())
    })
    .unwrap_or_else(|()| unreachable!("the section loader never fails"));
    (sections, mapped)
}

/// The id of `s` in `list`, added on first sight. Looked up by reference, so that the
/// common case (seen before, in an earlier unit) copies nothing.
fn intern(ids: &mut FxHashMap<String, u32>, list: &mut Vec<String>, s: &str) -> u32 {
    if let Some(&id) = ids.get(s) {
        return id;
    }
    let id = list.len() as u32;
    list.push(s.to_string());
    ids.insert(s.to_string(), id);
    id
}
