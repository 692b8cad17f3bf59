//! DWARF: functions, their lines and inline trees, extracted per compilation unit in
//! parallel and merged into owned records.

mod lines;
mod names;
mod split;
mod sup;
mod unit;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::OnceLock;

use gimli::{EndianSlice, RunTimeEndian, Section as _};
use rayon::prelude::*;

use crate::error::Warnings;
use crate::identity::Layout;
use crate::load::Object;
use names::DieIndex;
pub use split::SplitPaths;
pub use unit::{InlineSite, LineRow};

pub(crate) type R<'a> = EndianSlice<'a, RunTimeEndian>;

/// What the per-unit workers share.
#[derive(Clone, Copy)]
pub(crate) struct Context<'d, 'a> {
    pub dwarf: &'d gimli::Dwarf<R<'a>>,
    pub layout: &'d Layout,
    pub inlines: bool,
    pub cross_unit_refs: bool,
    pub endian: RunTimeEndian,
    pub paths: &'d SplitPaths,
    /// One slot per unit for its `.dwo`, filled by the worker that needs it.
    pub dwos: &'a [OnceLock<Option<split::DwoFile>>],
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

/// One contiguous piece of a function, with absolute addresses.
#[derive(Debug, Clone)]
pub struct FunctionRecord {
    pub start: u64,
    pub end: u64,
    /// `None` when the DWARF gives the function no name.
    pub name: Option<String>,
    /// The name is a demangled linkage name (not one built from the DIE tree, which has
    /// no parameter list).
    pub name_from_linkage: bool,
    /// `file` indexes [`DwarfOutput::files`].
    pub lines: Vec<LineRow>,
    /// `call_file` indexes [`DwarfOutput::files`]; `origin` indexes
    /// [`DwarfOutput::origins`].
    pub inlines: Vec<InlineSite>,
}

/// All functions of a module, in unit and DIE order.
#[derive(Debug, Default)]
pub struct DwarfOutput {
    pub functions: Vec<FunctionRecord>,
    pub files: Vec<String>,
    pub origins: Vec<String>,
}

/// Reads the DWARF sections of `obj` and extracts every function with code.
pub fn extract(
    obj: &Object,
    layout: &Layout,
    opts: DwarfOptions,
    paths: &SplitPaths,
    warnings: &mut Warnings,
) -> DwarfOutput {
    let endian = if obj.is_big_endian() {
        RunTimeEndian::Big
    } else {
        RunTimeEndian::Little
    };
    // dwz: the alternate file holding the DIEs and strings several debug files share.
    let source_path = paths.debug_file.as_deref().unwrap_or(&paths.binary);
    let alt = sup::alt_link(obj)
        .and_then(|link| sup::find(&link, source_path, &paths.debug_dirs, warnings));
    let alt_obj = alt
        .as_ref()
        .and_then(|(p, input)| match Object::parse_any(input) {
            Ok(o) => Some(o),
            Err(e) => {
                warnings.push(format!("alternate debug file {}: {e}", p.display()));
                None
            }
        });
    let alt_sections = alt_obj.as_ref().map(|o| load_sections(o, warnings));
    let sections = load_sections(obj, warnings);
    let mut dwarf = sections.borrow(|s| EndianSlice::new(s, endian));
    if dwarf.debug_info.reader().is_empty() {
        return DwarfOutput::default();
    }
    if let Some(alt) = &alt_sections {
        dwarf.set_sup(alt.borrow(|s| EndianSlice::new(s, endian)));
    }

    let mut headers = Vec::new();
    let mut iter = dwarf.units();
    loop {
        match iter.next() {
            Ok(Some(h)) => headers.push(h),
            Ok(None) => break,
            Err(e) => {
                // A bad unit length leaves no way to find the next unit.
                warnings.push(format!(
                    ".debug_info: unit header after {} good units: {e}; later units are skipped",
                    headers.len()
                ));
                break;
            }
        }
    }
    let total = dwarf.debug_info.reader().len();
    let ends: Vec<usize> = headers
        .iter()
        .skip(1)
        .map(|h| h.offset().0)
        .chain(std::iter::once(total))
        .collect();

    let dwp_file = split::find_dwp(paths, warnings);
    let dwp = dwp_file.as_ref().and_then(|f| match f.package(endian) {
        Ok(p) => Some(p),
        Err(e) => {
            warnings.push(format!("{}: {e}", f.path.display()));
            None
        }
    });
    let dwos: Vec<OnceLock<Option<split::DwoFile>>> =
        headers.iter().map(|_| OnceLock::new()).collect();
    let cx = Context {
        dwarf: &dwarf,
        layout,
        inlines: opts.inlines,
        cross_unit_refs: opts.cross_unit_refs,
        endian,
        paths,
        dwos: &dwos,
        dwp: dwp.as_ref(),
        space: 0,
    };
    // Units are independent; `collect` keeps input order, so the merge below (and the
    // output) does not depend on how rayon schedules them.
    let units: Vec<unit::UnitOutput> = headers
        .into_par_iter()
        .zip(ends.into_par_iter())
        .enumerate()
        .map(|(i, (h, end))| unit::process(&cx, h, end, i))
        .collect();
    for u in &units {
        warnings.extend(u.warnings.clone());
    }
    // The alternate file's units only feed the name index: it holds no code.
    let sup_units: Vec<unit::UnitOutput> = match dwarf.sup() {
        Some(sup) => {
            let sup_cx = Context {
                dwarf: sup,
                space: SUP_SPACE,
                ..cx
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
                .map(|(h, end)| unit::process(&sup_cx, h, end, usize::MAX))
                .collect()
        }
        None => Vec::new(),
    };

    let mut index = DieIndex {
        units: units.iter().chain(&sup_units).map(|u| &u.dies).collect(),
    };
    // Lookups binary-search units by offset; split and alternate files' units have
    // offsets of their own ranges, out of `.debug_info` order.
    index.units.sort_by_key(|u| u.start);
    let mut wanted: Vec<usize> = units
        .iter()
        .flat_map(|u| u.pieces.iter())
        .flat_map(|p| std::iter::once(p.die).chain(p.inlines.iter().map(|s| s.origin)))
        .collect();
    // Sorted and deduplicated: each name is resolved (and demangled) once.
    wanted.sort_unstable();
    wanted.dedup();
    let resolved: Vec<Option<(String, bool)>> = wanted
        .par_iter()
        .map(|&o| {
            let r = index.function_name(o)?;
            Some((crate::demangle::sanitize(&r.name)?, r.from_linkage))
        })
        .collect();
    let name_of = |o: usize| -> Option<&(String, bool)> {
        let i = wanted.binary_search(&o).ok()?;
        resolved[i].as_ref()
    };

    let mut out = DwarfOutput::default();
    let mut file_ids: HashMap<String, u32> = HashMap::new();
    let mut origin_ids: HashMap<String, u32> = HashMap::new();
    // Origin id by index in `wanted`: each DIE's name is interned once, however many
    // inlined calls it has.
    let mut origin_of: Vec<Option<u32>> = vec![None; wanted.len()];
    for u in units {
        let remap: Vec<u32> = u
            .files
            .into_iter()
            .map(|path| intern(&mut file_ids, &mut out.files, path))
            .collect();
        for mut p in u.pieces {
            for l in &mut p.lines {
                l.file = remap[l.file as usize];
            }
            for s in &mut p.inlines {
                s.call_file = remap[s.call_file as usize];
                // Every origin offset is in `wanted`: it was collected from these sites.
                let i = wanted.binary_search(&s.origin).unwrap_or_default();
                let id = *origin_of[i].get_or_insert_with(|| {
                    let name = resolved[i]
                        .as_ref()
                        .map_or_else(|| "<name omitted>".to_string(), |n| n.0.clone());
                    intern(&mut origin_ids, &mut out.origins, name)
                });
                s.origin = id as usize;
            }
            let name = name_of(p.die);
            out.functions.push(FunctionRecord {
                start: p.start,
                end: p.end,
                name: name.map(|n| n.0.clone()),
                name_from_linkage: name.is_some_and(|n| n.1),
                lines: p.lines,
                inlines: p.inlines,
            });
        }
    }
    out
}

/// The DWARF sections of `obj`, decompressed where needed; missing ones are empty.
fn load_sections<'a>(
    obj: &Object<'a>,
    warnings: &mut Warnings,
) -> gimli::DwarfSections<Cow<'a, [u8]>> {
    gimli::DwarfSections::load(|id| -> Result<Cow<[u8]>, ()> {
        Ok(obj.section_data(id.name(), warnings))
    })
    .unwrap_or_else(|()| unreachable!("the section loader never fails"))
}

fn intern(ids: &mut HashMap<String, u32>, list: &mut Vec<String>, s: String) -> u32 {
    if let Some(&id) = ids.get(&s) {
        return id;
    }
    let id = list.len() as u32;
    list.push(s.clone());
    ids.insert(s, id);
    id
}
