//! Names for a unit's functions and inlined calls, resolved by the worker that read the
//! unit while its DIEs are at hand, and a second pass for the few whose reference chains
//! lead into other units (LTO's cross-unit abstract origins, damaged references).

use std::collections::{BTreeSet, HashMap};
use std::hash::{BuildHasher, BuildHasherDefault};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use rayon::prelude::*;
use rustc_hash::{FxHashMap, FxHasher};

use super::names::{DieIndex, MAX_HOPS, ResolvedName, Unindexed, UnitDies};
use super::stream::{self, UnitSpan};
use super::unit::{self, UnitOutput};
use super::unit_warning;
use super::{Context, Job, R};
use crate::error::{WarningKind, Warnings};
use crate::load::{Input, SectionBytes};
use crate::model::body;

/// A name and whether it came from a linkage name.
pub(crate) type Name = (Arc<str>, bool);

/// A function's or inline origin's name as a unit's worker found it.
#[derive(Debug, Clone)]
pub(crate) enum NameSlot {
    /// The name; `None` when DWARF has none.
    Known(Option<Name>),
    /// The chain from this DIE (a `.debug_info` offset) leads into another unit.
    Deferred(usize),
}

/// One piece of a function: its range, its name and its encoded records.
#[derive(Debug, Clone)]
pub(crate) struct PieceHead {
    pub start: u64,
    pub end: u64,
    pub name: NameSlot,
    pub body: (usize, usize),
}

/// What a unit's worker hands back: owned, small, free of borrows into the unit.
#[derive(Debug, Default)]
pub(crate) struct UnitResult {
    pub pieces: Vec<PieceHead>,
    /// By name slot (the ids in the encoded inline records): the [`Origins`] id, or
    /// `u32::MAX` for slots that are no inline origin and, until the merge fills them
    /// in, for `deferred_origins`.
    pub origins: Vec<u32>,
    /// Name slots of inline origins whose names need other units, with their DIE offset.
    pub deferred_origins: Vec<(u32, usize)>,
    /// Paths by file slot.
    pub files: Vec<String>,
    /// The pieces' encoded line and inline records.
    pub bytes: Vec<u8>,
    pub warnings: Warnings,
}

/// How a name slot's INLINE_ORIGIN id is found (see [`ResolvedName::origin`]).
#[derive(Clone, Copy)]
enum OriginId {
    Known(u32),
    /// Through the linkage-name cache, which interns the name once for all units.
    Keyed(u64),
    Intern,
}

/// A name slot as the DIE at `o` resolved, and how its INLINE_ORIGIN id is found.
fn slot_of(name: Result<Option<ResolvedName>, Unindexed>, o: usize) -> (NameSlot, OriginId) {
    match name {
        Ok(name) => {
            let id = match &name {
                Some(ResolvedName {
                    origin: Some(id), ..
                }) => OriginId::Known(*id),
                Some(ResolvedName { key: Some(k), .. }) => OriginId::Keyed(*k),
                _ => OriginId::Intern,
            };
            (NameSlot::Known(clean(name)), id)
        }
        Err(Unindexed(_)) => (NameSlot::Deferred(o), OriginId::Intern),
    }
}

/// The INLINE_ORIGIN id of `name`, found as `id` says.
fn origin_id(job: &Job, name: Option<&Name>, id: OriginId) -> u32 {
    match id {
        OriginId::Known(id) => id,
        OriginId::Keyed(k) => job.linkage.origin(k, || job.origins.intern_name(name)),
        OriginId::Intern => job.origins.intern_name(name),
    }
}

/// Marks an origin slot whose name the second pass will give.
const PENDING: u32 = u32::MAX - 1;

/// The name INLINE_ORIGIN records get when DWARF names no function.
const NAME_OMITTED: &str = "<name omitted>";

/// INLINE_ORIGIN names, interned by the workers as their units finish, so that each
/// distinct name is held once (shared with the demangling cache) and no unit keeps a
/// copy until a serial merge. Ids are given in whatever order workers arrive; the
/// module renumbers them by name, so the output does not depend on that order.
#[derive(Default)]
pub(crate) struct Origins {
    shards: [Mutex<FxHashMap<Arc<str>, u32>>; 16],
    next: AtomicU32,
}

/// What [`Origins::for_units`] sizes for: a name per this many bytes of `.debug_info`
/// (ceph-osd and ceph-osdomap-tool write one per 3.4 KB, libjvm one per 6.7), at most
/// [`ORIGINS_RESERVED`] in all, so that a section that claims to be huge reserves little.
const INFO_BYTES_PER_ORIGIN: usize = 4096;
const ORIGINS_RESERVED: usize = 1 << 18;

impl Origins {
    /// Sized for the names of `.debug_info` of `info_len` bytes, when `inlines` (they
    /// are only interned then): grown from nothing, the maps were rehashed, each name
    /// hashed again, several times over.
    pub(crate) fn for_units(info_len: usize, inlines: bool) -> Origins {
        let origins = Origins::default();
        if inlines {
            let per_shard =
                (info_len / INFO_BYTES_PER_ORIGIN).min(ORIGINS_RESERVED) / origins.shards.len();
            for shard in &origins.shards {
                let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
                map.reserve(per_shard);
            }
        }
        origins
    }

    /// The id of `name`, added on first sight.
    pub(crate) fn intern(&self, name: &str, shared: Option<&Arc<str>>) -> u32 {
        let hash = BuildHasherDefault::<FxHasher>::default().hash_one(name);
        let shard = &self.shards[hash as usize % self.shards.len()];
        // A poisoned lock only means another worker panicked; the map is still valid.
        let mut map = shard.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&id) = map.get(name) {
            return id;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        map.insert(shared.cloned().unwrap_or_else(|| name.into()), id);
        id
    }

    /// The id of an origin's name (or of the stand-in for an unnamed one).
    pub(crate) fn intern_name(&self, name: Option<&Name>) -> u32 {
        match name {
            Some((n, _)) => self.intern(n, Some(n)),
            None => self.intern(NAME_OMITTED, None),
        }
    }

    /// The names by id.
    pub(crate) fn into_names(self) -> Vec<Arc<str>> {
        let mut names: Vec<Arc<str>> = vec![Arc::from(""); self.next.into_inner() as usize];
        for shard in self.shards {
            for (name, id) in shard.into_inner().unwrap_or_else(|e| e.into_inner()) {
                if let Some(slot) = names.get_mut(id as usize) {
                    *slot = name;
                }
            }
        }
        names
    }
}

/// Extracts the unit at `.debug_info` offset `at` (`data` is its bytes), resolves its
/// names and encodes its records.
pub(crate) fn unit_result(job: &Job, data: &[u8], at: usize, index: usize) -> UnitResult {
    let dwarf = job.shared.dwarf(data);
    let dwo = OnceLock::new();
    let mut out = process_chunk(job, &dwarf, &dwo, at, data.len(), index, false);

    // Each DIE named (a function's, an inline origin's) gets a slot as first met, and
    // each inlined call its origin's slot, so that each name is resolved (and
    // demangled) once. Sorting every call's origin and searching for it again was 0.9%
    // of ceph-osdomap-tool's instructions with `--inlines`. Sized for a name per eight
    // calls (that program writes an INLINE_ORIGIN per 11 INLINE records).
    let calls: usize = out.pieces.iter().map(|p| p.inlines.len()).sum();
    let guess = out.pieces.len() + calls / 8;
    let mut wanted: Vec<usize> = Vec::with_capacity(guess);
    // Keyed: the offsets are the input's to choose.
    let mut slots = super::keyed::with_capacity(guess);
    let mut slot = |o: usize| {
        *slots.entry(o).or_insert_with(|| {
            wanted.push(o);
            wanted.len() - 1
        })
    };
    let die_slots: Vec<usize> = (out.pieces.iter_mut())
        .map(|p| {
            for s in &mut p.inlines {
                s.origin = slot(s.origin);
            }
            slot(p.die)
        })
        .collect();
    drop(slots);
    let index = index_of(std::iter::once(&out.dies), job);
    // The names GNU's demangler reads on a watched thread are named last, all
    // demangled in one handoff to it.
    let mut watched = Vec::new();
    let mut later = Vec::new();
    let (mut names, mut ids): (Vec<NameSlot>, Vec<OriginId>) = (wanted.iter())
        .enumerate()
        .map(
            |(i, &o)| match index.name_unless_watched(o, Some(&mut watched)) {
                Ok(Some(name)) => slot_of(Ok(name), o),
                Ok(None) => {
                    later.push(i);
                    (NameSlot::Deferred(o), OriginId::Intern)
                }
                Err(e) => slot_of(Err(e), o),
            },
        )
        .unzip();
    if !later.is_empty() {
        crate::demangle::demangle_ahead(watched);
        for i in later {
            (names[i], ids[i]) = slot_of(index.function_name(wanted[i]), wanted[i]);
        }
        crate::demangle::forget_ahead();
    }
    let mut origins = vec![u32::MAX; wanted.len()];
    let mut deferred_origins = Vec::new();
    // Sized once from the records it will hold (a line row takes 4 to 6 bytes, an
    // inline record 6 and 2 to 6 a range): grown by doubling, the large units' buffers
    // were copied several times over.
    let estimate: usize = (out.pieces.iter())
        .map(|p| {
            2 + p.lines.len() * 5
                + p.inlines
                    .iter()
                    .map(|s| 6 + s.ranges.len() * 4)
                    .sum::<usize>()
        })
        .sum();
    let mut bytes = Vec::with_capacity(estimate);
    let mut pieces = Vec::with_capacity(out.pieces.len());
    for (p, die_slot) in out.pieces.into_iter().zip(die_slots) {
        for s in &p.inlines {
            if origins[s.origin] == u32::MAX {
                origins[s.origin] = match &names[s.origin] {
                    NameSlot::Known(n) => origin_id(job, n.as_ref(), ids[s.origin]),
                    NameSlot::Deferred(o) => {
                        deferred_origins.push((s.origin as u32, *o));
                        PENDING
                    }
                };
            }
        }
        let body = body::encode(p.start, &p.lines, &p.inlines, &mut bytes);
        pieces.push(PieceHead {
            start: p.start,
            end: p.end,
            name: names[die_slot].clone(),
            body,
        });
    }
    UnitResult {
        pieces,
        origins,
        deferred_origins,
        files: out.files,
        bytes,
        warnings: out.warnings,
    }
}

/// Resolves names whose chains left their unit, with an index of the units they lead
/// to, grown until no chain leads into a unit it lacks (at most [`MAX_HOPS`] rounds, as
/// a chain has at most that many links). The units are read again from `.debug_info`:
/// sliced when it is mapped, inflated again when it is compressed.
pub(crate) fn deferred_names<'s>(
    job: &Job,
    open: &dyn Fn() -> SectionBytes<'s>,
    input: &Input,
    spans: &[UnitSpan],
    deferred: Vec<usize>,
) -> HashMap<usize, Option<Name>> {
    let unit_of = |o: usize| -> Option<usize> {
        let i = spans.partition_point(|s| s.offset <= o).checked_sub(1)?;
        (o < spans[i].offset + spans[i].len).then_some(i)
    };
    let mut needed: BTreeSet<usize> = deferred.iter().filter_map(|&o| unit_of(o)).collect();
    let mut out = HashMap::new();
    let mut pending = deferred;
    for round in 0..=MAX_HOPS {
        let mut w = Warnings::default();
        let visit = stream::Visit {
            endian: job.shared.endian,
            want: &|i| needed.contains(&i),
            work: &|c| (c.index, c.offset, c.data.into_owned()),
        };
        let (chunks, _) = stream::map_units(open(), input, &visit, &mut w);
        let dwarfs: Vec<gimli::Dwarf<R>> = chunks.iter().map(|c| job.shared.dwarf(&c.2)).collect();
        let slots: Vec<OnceLock<_>> = chunks.iter().map(|_| OnceLock::new()).collect();
        let outs: Vec<UnitOutput> = (0..chunks.len())
            .into_par_iter()
            .map(|k| {
                let (index, at, ref data) = chunks[k];
                process_chunk(job, &dwarfs[k], &slots[k], at, data.len(), index, true)
            })
            .collect();
        let mut index = index_of(outs.iter().map(|o| &o.dies), job);
        let last = round == MAX_HOPS;
        if last {
            // Whatever still leads elsewhere leads nowhere that can be read.
            index.partial_below = 0;
        }
        let mut missing = BTreeSet::new();
        pending.retain(|&o| match index.function_name(o) {
            Ok(name) => {
                out.insert(o, clean(name));
                false
            }
            Err(Unindexed(t)) => {
                missing.extend(unit_of(t).filter(|u| !needed.contains(u)));
                true
            }
        });
        if pending.is_empty() {
            break;
        }
        if missing.is_empty() {
            index.partial_below = 0;
            for o in pending.drain(..) {
                out.insert(o, clean(index.function_name(o).unwrap_or_default()));
            }
            break;
        }
        needed.extend(missing);
    }
    out
}

/// An index over `units` and dwz's alternate file, sorted for lookups.
fn index_of<'u, 'a: 'u>(
    units: impl Iterator<Item = &'u UnitDies<'a>>,
    job: &'u Job<'a, '_>,
) -> DieIndex<'u, 'a> {
    let mut units: Vec<&UnitDies> = units.chain(job.sup_dies.iter()).collect();
    // Lookups binary-search units by offset; split and alternate files' units have
    // offsets of their own ranges, out of `.debug_info` order.
    units.sort_by_key(|u| u.start);
    DieIndex {
        units,
        partial_below: job.info_len,
        demangled: Some(job.demangled),
        linkage: Some(job.linkage),
    }
}

fn clean(name: Option<super::names::ResolvedName>) -> Option<Name> {
    name.map(|n| (n.name, n.from_linkage))
}

/// Parses the header of the one unit in `dwarf`'s `.debug_info` (it sits at `at`, `len`
/// bytes long, in the real section) and processes it.
fn process_chunk<'a, 'j: 'a>(
    job: &Job<'j, '_>,
    dwarf: &'a gimli::Dwarf<R<'a>>,
    dwo: &'a OnceLock<Option<super::split::DwoFile>>,
    at: usize,
    len: usize,
    index: usize,
    index_only: bool,
) -> UnitOutput<'a> {
    let header = match dwarf.units().next() {
        Ok(Some(h)) => h,
        Ok(None) => return UnitOutput::default(),
        Err(e) => {
            let mut out = UnitOutput::default();
            out.warnings.add(unit_warning(
                WarningKind::Dwarf,
                at,
                format!("{e}; skipped"),
            ));
            return out;
        }
    };
    let cx = Context {
        dwarf,
        layout: job.layout,
        inlines: job.opts.inlines && !index_only,
        cross_unit_refs: job.opts.cross_unit_refs,
        index_only,
        endian: job.shared.endian,
        companions: job.companions,
        dwo: Some(dwo),
        dwp: job.dwp,
        space: 0,
    };
    unit::process(&cx, header, at, at + len, index)
}
