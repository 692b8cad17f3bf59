//! Function names: an index of the DIEs that names are built from, and the resolution
//! of a DIE to a name across `DW_AT_specification` / `DW_AT_abstract_origin` chains,
//! enclosing namespaces and classes, and compilation units.

use std::sync::{Arc, Mutex};

use super::keyed::KeyedMap;

use crate::demangle::across::Across;
use crate::demangle::{Cache, Lang, demangle, sanitize_shared};

/// Marks "no parent" and "no target".
pub(crate) const NONE: u32 = u32::MAX;

/// How far reference chains are followed; real chains are 1–3 hops, cycles in damaged
/// DWARF would otherwise loop forever.
pub(crate) const MAX_HOPS: usize = 16;
/// How many enclosing scopes a qualified name may have.
const MAX_SCOPES: usize = 64;

/// What a DIE contributes to a qualified name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScopeKind {
    Namespace,
    Type,
    Function,
}

/// A DIE's string attribute, kept as a reference and read only when a name is built
/// from it: most indexed DIEs (declarations, scopes of unused functions) never are, and
/// reading every string up front was a fifth of a large dump's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LazyStr<'a> {
    /// The bytes themselves (`DW_FORM_string`, or already read).
    Bytes(&'a [u8]),
    /// An offset in the unit's `.debug_str`.
    Str(usize),
    /// An offset in dwz's alternate file's `.debug_str`.
    SupStr(usize),
}

/// The naming facts of one DIE.
#[derive(Debug, Clone)]
pub(crate) struct DieInfo<'a> {
    /// Offset in `.debug_info`.
    pub offset: usize,
    /// Index of the nearest enclosing indexed DIE in the same unit, or [`NONE`].
    pub parent: u32,
    pub kind: ScopeKind,
    pub name: Option<LazyStr<'a>>,
    pub linkage: Option<LazyStr<'a>>,
    /// `DW_AT_specification` or `DW_AT_abstract_origin`, as a `.debug_info` offset.
    pub target: Option<usize>,
}

/// A resolved function name, made writable in a record (see [`sanitize_shared`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedName {
    /// Shared with the demangling cache (and, for inline origins, the INLINE_ORIGIN
    /// table) rather than copied for every unit that names the function.
    pub name: Arc<str>,
    /// True when it came from a linkage name; false for a name built from the DIE tree.
    pub from_linkage: bool,
    /// Its key in [`LinkageNames`], where it is cached there.
    pub key: Option<u64>,
    /// Its INLINE_ORIGIN id, where the cache had one (a unit before interned it): read
    /// with the name, so that an inline origin's costs one probe of the cache, not two.
    pub origin: Option<u32>,
}

impl ResolvedName {
    /// A name made from a linkage name, keyed `key` in [`LinkageNames`] where it is.
    fn linkage(name: Arc<str>, key: Option<u64>, origin: Option<u32>) -> ResolvedName {
        ResolvedName {
            name,
            from_linkage: true,
            key,
            origin,
        }
    }
}

/// The indexed DIEs of one unit, sorted by offset (the order a DIE walk produces).
#[derive(Debug, Default)]
pub(crate) struct UnitDies<'a> {
    pub start: usize,
    pub end: usize,
    pub lang: Option<Lang>,
    pub dies: Vec<DieInfo<'a>>,
    /// The DIEs' offsets from `start`, for lookups (see [`UnitDies::seal`]); empty when
    /// not made.
    pub keys: Vec<u32>,
    /// The `.debug_str` sections that [`LazyStr`] offsets point into: the unit's own
    /// file's, and dwz's alternate file's.
    pub strings: &'a [u8],
    pub sup_strings: &'a [u8],
}

impl<'a> UnitDies<'a> {
    /// Makes the lookup keys once the DIEs are all in. Names are looked up by DIE offset,
    /// a binary search: over the DIEs themselves (80 bytes apart) nearly every probe
    /// missed the cache, half of the name resolution of a dump with `--inlines`.
    pub(crate) fn seal(&mut self) {
        let start = self.start;
        let keys: Option<Vec<u32>> = self
            .dies
            .iter()
            .map(|d| u32::try_from(d.offset.checked_sub(start)?).ok())
            .collect();
        self.keys = keys.unwrap_or_default();
    }

    /// The index of the DIE at `offset`. Keys are the offsets less one constant, so both
    /// searches compare alike at every probe and find the same DIE.
    fn position(&self, offset: usize) -> Option<usize> {
        if self.keys.len() == self.dies.len() {
            let key = u32::try_from(offset.checked_sub(self.start)?).ok()?;
            self.keys.binary_search(&key).ok()
        } else {
            self.dies.binary_search_by_key(&offset, |d| d.offset).ok()
        }
    }

    /// The bytes of a string attribute; `None` for an offset outside its section.
    pub(crate) fn string(&self, s: LazyStr<'a>) -> Option<&'a [u8]> {
        let (section, offset) = match s {
            LazyStr::Bytes(b) => return Some(b),
            LazyStr::Str(o) => (self.strings, o),
            LazyStr::SupStr(o) => (self.sup_strings, o),
        };
        let rest = section.get(offset..)?;
        // Unterminated or empty strings name nothing, as when gimli reads them.
        let s = &rest[..memchr::memchr(0, rest)?];
        (!s.is_empty()).then_some(s)
    }
}

/// Names made from linkage names, by where the linkage name lies in the module's
/// `.debug_str` (or dwz's alternate file's). A C++ header's functions are named again
/// in every unit that calls or inlines them, by the same string: reading the string,
/// looking its demangling up by content and cleaning it each time was 6% of ceph-osd's
/// dump with `--inlines`. Strings of other files (split units' `.dwo`, which come and
/// go) are not keyed: their offsets could meet another file's at the same address.
pub(crate) struct LinkageNames {
    /// Address and length of the string sections whose offsets are keys.
    strings: (usize, usize),
    sup_strings: (usize, usize),
    shards: [Mutex<(KeyedMap<u64, Linked>, usize)>; 16],
    /// The names of the batch's modules before this one, asked on a miss here.
    across: Option<Arc<Across>>,
}

/// A cached linkage name: the name made of it (`None` where no demangler reads it),
/// and its INLINE_ORIGIN id once a unit has interned it ([`NO_ORIGIN`] until then):
/// interning by content hashed and compared names of hundreds of bytes for each unit
/// that inlines them.
#[derive(Debug, Clone, PartialEq)]
struct Linked {
    name: Option<Option<Arc<str>>>,
    origin: u32,
}

const NO_ORIGIN: u32 = u32::MAX;

/// What the cache may hold, names counted in full; a shard past its part is emptied,
/// as the demangling cache does. Names it keys skip the demangling cache, which would
/// only hold them a second time (12 MiB of Mozilla's dump_syms's 150 with `--inlines`).
/// Most of what it counts is not its own: the names are shared with the FUNC and
/// INLINE_ORIGIN records they were made for, which hold them until written. ceph-osd's
/// 130,000 with `--inlines` count about 70 MB: at 48 MiB, emptied shards had 12,800 of
/// them demangled again (9% of its demangling), and at 128 its peak RSS did not move.
const LINKAGE_BUDGET: usize = 128 << 20;
const LINKAGE_ENTRY: usize = 40;

impl LinkageNames {
    pub(crate) fn new(strings: &[u8], sup_strings: &[u8]) -> Self {
        LinkageNames {
            strings: (strings.as_ptr() as usize, strings.len()),
            sup_strings: (sup_strings.as_ptr() as usize, sup_strings.len()),
            shards: Default::default(),
            across: crate::demangle::across::current(),
        }
    }

    /// The batch's name for a mangled linkage name this module has not read before,
    /// if a module before it had.
    fn read_before(&self, raw: &str, lang: Lang) -> Option<Arc<str>> {
        self.across.as_ref()?.get(raw, lang)
    }

    /// [`demangle`], through the batch's names (see [`Across`]).
    fn demangle(&self, raw: &str, lang: Lang) -> Arc<str> {
        match &self.across {
            Some(across) => across.demangle(raw, lang),
            None => demangle(raw, lang).into(),
        }
    }

    /// The key of linkage name `s` of `unit` read as `lang`; `None` when it is not in
    /// a keyed section.
    fn key(&self, unit: &UnitDies, s: LazyStr, lang: Lang) -> Option<u64> {
        let place = |b: &[u8]| (b.as_ptr() as usize, b.len());
        let (tag, offset) = match s {
            LazyStr::Str(o) if place(unit.strings) == self.strings => (0, o),
            LazyStr::SupStr(o) if place(unit.sup_strings) == self.sup_strings => (1, o),
            _ => return None,
        };
        let offset = u64::try_from(offset).ok().filter(|&o| o < 1 << 61)?;
        Some(offset << 2 | tag << 1 | u64::from(lang == Lang::Rust))
    }

    fn shard(&self, key: u64) -> std::sync::MutexGuard<'_, (KeyedMap<u64, Linked>, usize)> {
        let shard = &self.shards[(key >> 2) as usize % self.shards.len()];
        // A poisoned lock only means another worker panicked; the map is still valid.
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// What is cached of the linkage name keyed `key`: its name and INLINE_ORIGIN id.
    fn get(&self, key: u64) -> Option<Linked> {
        self.shard(key).0.get(&key).cloned()
    }

    /// The INLINE_ORIGIN id of the name keyed `key`, from `intern` the first time.
    pub(crate) fn origin(&self, key: u64, intern: impl FnOnce() -> u32) -> u32 {
        if let Some(l) = self.shard(key).0.get(&key)
            && l.origin != NO_ORIGIN
        {
            return l.origin;
        }
        // Interned outside the lock; the id is the same whoever does it.
        let id = intern();
        if let Some(l) = self.shard(key).0.get_mut(&key) {
            l.origin = id;
        }
        id
    }

    fn insert(&self, key: u64, name: Option<Option<Arc<str>>>) {
        let cost = LINKAGE_ENTRY
            + name
                .as_ref()
                .and_then(|n| n.as_ref())
                .map_or(0, |n| n.len());
        let mut guard = self.shard(key);
        let (map, bytes) = &mut *guard;
        *bytes += cost;
        if *bytes > LINKAGE_BUDGET / self.shards.len() {
            map.clear();
            map.shrink_to_fit();
            *bytes = cost;
        }
        map.insert(
            key,
            Linked {
                name,
                origin: NO_ORIGIN,
            },
        );
    }
}

/// A reference that leads into a unit the index does not hold: the name can only be
/// resolved once that unit is indexed too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unindexed(pub usize);

/// Units' indexes, sorted by unit offset.
pub(crate) struct DieIndex<'u, 'a> {
    pub units: Vec<&'u UnitDies<'a>>,
    /// Offsets below this are in `.debug_info`, whose units may not all be indexed: a
    /// reference there that no indexed unit holds is [`Unindexed`], not a dead end.
    /// Zero when the index holds every unit it could need.
    pub partial_below: usize,
    /// Shared by the workers, so that each distinct linkage name is demangled once.
    pub demangled: Option<&'u Cache>,
    /// Shared by the workers, so that each linkage name is read and cleaned once.
    pub linkage: Option<&'u LinkageNames>,
}

impl<'a> DieIndex<'_, 'a> {
    fn lookup(&self, offset: usize) -> Result<Option<(&UnitDies<'a>, usize)>, Unindexed> {
        let unit = self
            .units
            .partition_point(|u| u.start <= offset)
            .checked_sub(1)
            .map(|i| self.units[i])
            .filter(|u| offset < u.end);
        let Some(unit) = unit else {
            return if offset < self.partial_below {
                Err(Unindexed(offset))
            } else {
                Ok(None)
            };
        };
        Ok(unit.position(offset).map(|j| (unit, j)))
    }

    /// The name of the function whose DIE is at `offset`: the demangled linkage name if
    /// any DIE in its reference chain has one, else its qualified source name (which,
    /// unlike a demangled C++ name, has no parameter list). [`Unindexed`] when the
    /// answer depends on a unit the index does not hold.
    pub(crate) fn function_name(&self, offset: usize) -> Result<Option<ResolvedName>, Unindexed> {
        self.name_unless_watched(offset, None).map(Option::flatten)
    }

    /// [`DieIndex::function_name`], except where that means a name GNU's demangler only
    /// reads on a watched helper thread (one with `sr` in it: see `demangle::gnu`) and
    /// `watched` is given: then the name is added to it, and `None` returned, for the
    /// caller to have all such names of a unit demangled at once
    /// ([`crate::demangle::demangle_ahead`]) before asking again. Each one asked alone
    /// costs two thread wake-ups.
    pub(crate) fn name_unless_watched(
        &self,
        offset: usize,
        watched: Option<&mut Vec<String>>,
    ) -> Result<Option<Option<ResolvedName>>, Unindexed> {
        // The chain's DIEs up to the one with a linkage name: the first of them with a
        // name of its own is the fallback, read only if it is needed.
        let mut chain: [Option<(&UnitDies<'a>, usize)>; MAX_HOPS] = [None; MAX_HOPS];
        let mut linkage = None;
        let mut cur = offset;
        for slot in &mut chain {
            let Some((unit, i)) = self.lookup(cur)? else {
                break;
            };
            *slot = Some((unit, i));
            let die = &unit.dies[i];
            if let Some(l) = die.linkage {
                let lang = unit.lang.unwrap_or(Lang::Other);
                let key = self.linkage.and_then(|c| Some((c, c.key(unit, l, lang)?)));
                let cached = key.and_then(|(c, k)| c.get(k));
                // `Some(None)` below: known to be read by no demangler.
                let known = cached.is_some();
                // Taken by value: the name's count is raised once, by `get`.
                if let Some(Linked {
                    name: Some(n),
                    origin,
                }) = cached
                {
                    let origin = (origin != NO_ORIGIN).then_some(origin);
                    let key = key.map(|k| k.1);
                    return Ok(Some(n.map(|n| ResolvedName::linkage(n, key, origin))));
                }
                if let Some(raw) = unit.string(l) {
                    linkage = Some((raw, lang, key, known));
                    break;
                }
            }
            match die.target {
                Some(t) if t != cur => cur = t,
                _ => break,
            }
        }
        let named = || {
            chain
                .iter()
                .map_while(|d| *d)
                .find(|&(u, i)| u.dies[i].name.and_then(|n| u.string(n)).is_some())
        };
        if let Some((raw, lang, key, known_failed)) = linkage {
            let raw = crate::demangle::utf8_lossy(raw);
            let raw = self.demangled.map_or(&*raw, |cache| cache.undecorate(&raw));
            let looks_mangled = crate::demangle::looks_mangled(raw);
            // A name with `sr` is only read on a helper thread, unless a module of the
            // batch before this one read it.
            let mut read_before = None;
            if let Some(watched) = watched
                && !known_failed
                && raw.starts_with("_Z")
                && raw.contains("sr")
            {
                read_before = key.and_then(|(c, _)| c.read_before(raw, lang));
                if read_before.is_none() {
                    watched.push(raw.to_string());
                    return Ok(None);
                }
            }
            let demangled: Arc<str> = match (self.demangled, key, read_before) {
                _ if known_failed => raw.into(),
                (_, _, Some(name)) => name,
                // As the demangling cache reads it, without keeping it a second time.
                (Some(_), Some(_), None) if !looks_mangled => raw.into(),
                (Some(cache), None, None) => cache.demangle(raw, lang),
                (_, Some((linkage, _)), None) => linkage.demangle(raw, lang),
                (None, None, None) => demangle(raw, lang).into(),
            };
            let failed = *demangled == *raw && looks_mangled;
            let name = (!failed).then(|| sanitize_shared(demangled));
            if let Some((cache, k)) = key
                && !known_failed
            {
                cache.insert(k, name.clone());
            }
            if let Some(name) = name {
                let key = key.map(|k| k.1);
                return Ok(Some(name.map(|n| ResolvedName::linkage(n, key, None))));
            }
            // A mangled name no demangler accepts: the source name is more readable, if
            // there is one; otherwise the raw symbol still identifies the function.
            if named().is_none() {
                let name = sanitize_shared(Arc::from(raw));
                return Ok(Some(name.map(|n| ResolvedName::linkage(n, None, None))));
            }
        }
        match named() {
            Some((u, i)) => Ok(Some(sanitize_shared(self.qualify(u, i)?.into()).map(
                |name| ResolvedName {
                    name,
                    from_linkage: false,
                    key: None,
                    origin: None,
                },
            ))),
            None => Ok(Some(None)),
        }
    }

    /// `a::b::name` from the enclosing namespaces and types of DIE `i`.
    fn qualify(&self, unit: &UnitDies<'a>, i: usize) -> Result<String, Unindexed> {
        let die = &unit.dies[i];
        let mut parts: Vec<&[u8]> = vec![die.name.and_then(|n| unit.string(n)).unwrap_or(b"")];
        let mut scope = self.parent_of(unit, i);
        let mut steps = 0;
        while let Some((u, j)) = scope {
            steps += 1;
            if steps > MAX_SCOPES {
                break;
            }
            let s = &u.dies[j];
            let name = s.name.and_then(|n| u.string(n));
            match s.kind {
                // Breakpad and llvm-symbolizer name local entities without their function.
                ScopeKind::Function => break,
                ScopeKind::Namespace => parts.push(name.unwrap_or(b"(anonymous namespace)")),
                ScopeKind::Type => {
                    if let Some(n) = name {
                        parts.push(n);
                    }
                }
            }
            // An out-of-line definition (`struct A::B { ... }`) sits outside its scope
            // and points back at its declaration, whose parents are the real scope.
            let target = match s.target {
                Some(t) => self.lookup(t)?,
                None => None,
            };
            scope = match target {
                Some((tu, tj)) if s.target != Some(s.offset) => self.parent_of(tu, tj),
                _ => self.parent_of(u, j),
            };
        }
        parts.reverse();
        let mut out = String::new();
        for (k, p) in parts.iter().enumerate() {
            if k > 0 {
                out.push_str("::");
            }
            out.push_str(&crate::demangle::utf8_lossy(p));
        }
        Ok(out)
    }

    fn parent_of<'s>(
        &'s self,
        unit: &'s UnitDies<'a>,
        i: usize,
    ) -> Option<(&'s UnitDies<'a>, usize)> {
        let p = unit.dies[i].parent;
        (p != NONE).then_some((unit, p as usize))
    }
}

/// Merges `more` into `dies` (both in offset order, as lookups need them), with the
/// parents' indexes moved to match.
pub(super) fn merge_dies<'a>(dies: &mut Vec<DieInfo<'a>>, mut more: Vec<DieInfo<'a>>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn die(
        offset: usize,
        parent: u32,
        kind: ScopeKind,
        name: Option<&'static str>,
    ) -> DieInfo<'static> {
        DieInfo {
            offset,
            parent,
            kind,
            name: name.map(|n| LazyStr::Bytes(n.as_bytes())),
            linkage: None,
            target: None,
        }
    }

    #[test]
    fn keyed_lookups_find_what_a_search_of_the_dies_finds() {
        let start = (1usize << 30) + 7;
        let dies = [3usize, 9, 10, 200, 70_000]
            .iter()
            .map(|&o| die(start + o, NONE, ScopeKind::Function, None))
            .collect();
        let mut unit = UnitDies {
            start,
            end: start + 80_000,
            dies,
            ..Default::default()
        };
        let unkeyed: Vec<_> = (start - 5..start + 80_005)
            .map(|o| unit.position(o))
            .collect();
        unit.seal();
        assert_eq!(unit.keys, [3, 9, 10, 200, 70_000]);
        let keyed: Vec<_> = (start - 5..start + 80_005)
            .map(|o| unit.position(o))
            .collect();
        assert_eq!(keyed, unkeyed);
        assert_eq!(keyed.iter().flatten().count(), 5);
        // A DIE before the unit's start cannot be keyed: the search over the DIEs stays.
        unit.dies
            .insert(0, die(start - 1, NONE, ScopeKind::Function, None));
        unit.seal();
        assert!(unit.keys.is_empty());
        assert_eq!(unit.position(start - 1), Some(0));
    }

    #[test]
    fn qualified_names_follow_specification_and_scopes() {
        let mut decl = die(30, 1, ScopeKind::Function, Some("method"));
        decl.linkage = None;
        let mut def = die(50, NONE, ScopeKind::Function, None);
        def.target = Some(30);
        let unit = UnitDies {
            start: 0,
            end: 100,
            lang: None,
            strings: &[],
            sup_strings: &[],
            dies: vec![
                die(10, NONE, ScopeKind::Namespace, None),
                die(20, 0, ScopeKind::Type, Some("Klass")),
                decl,
                def,
            ],
            keys: Vec::new(),
        };
        let index = DieIndex {
            units: vec![&unit],
            partial_below: 0,
            demangled: None,
            linkage: None,
        };
        assert_eq!(
            index.function_name(50).unwrap().map(|n| n.name).as_deref(),
            Some("(anonymous namespace)::Klass::method")
        );
    }

    #[test]
    fn undemanglable_linkage_name_falls_back_to_the_source_name() {
        let mut f = die(10, 0, ScopeKind::Function, Some("swap<int>"));
        f.linkage = Some(LazyStr::Bytes(
            b"_ZSt4swapIiENSt9enable_ifIXsrSt6__and_IJSt6__not_I",
        ));
        let unit = UnitDies {
            start: 0,
            end: 100,
            lang: None,
            strings: &[],
            sup_strings: &[],
            dies: vec![die(5, NONE, ScopeKind::Namespace, Some("std")), f],
            keys: Vec::new(),
        };
        let index = DieIndex {
            units: vec![&unit],
            partial_below: 0,
            demangled: None,
            linkage: None,
        };
        assert_eq!(
            index.function_name(10).unwrap(),
            Some(ResolvedName {
                name: "std::swap<int>".into(),
                from_linkage: false,
                key: None,
                origin: None,
            })
        );
    }

    #[test]
    fn linkage_names_win_and_cycles_end() {
        let mut a = die(10, NONE, ScopeKind::Function, Some("f"));
        a.target = Some(20);
        let mut b = die(20, NONE, ScopeKind::Function, None);
        b.target = Some(10);
        let mut c = die(30, NONE, ScopeKind::Function, None);
        c.target = Some(40);
        let mut d = die(40, NONE, ScopeKind::Function, Some("g"));
        d.linkage = Some(LazyStr::Bytes(b"_ZN2ns1gEv"));
        let mut unit = UnitDies {
            start: 0,
            end: 100,
            lang: None,
            strings: &[],
            sup_strings: &[],
            dies: vec![a, b, c, d],
            keys: Vec::new(),
        };
        unit.seal();
        let index = DieIndex {
            units: vec![&unit],
            partial_below: 0,
            demangled: None,
            linkage: None,
        };
        assert_eq!(
            index.function_name(20).unwrap().map(|n| n.name).as_deref(),
            Some("f")
        );
        assert_eq!(
            index.function_name(30).unwrap(),
            Some(ResolvedName {
                name: "ns::g()".into(),
                from_linkage: true,
                key: None,
                origin: None,
            })
        );
        assert_eq!(index.function_name(99), Ok(None));
    }

    #[test]
    fn linkage_names_are_keyed_only_in_the_modules_own_string_sections() {
        let main: &'static [u8] = b"\0_Z1fv\0".to_vec().leak();
        let alt: &'static [u8] = b"\0_Z1gv\0".to_vec().leak();
        // A split unit's `.dwo` strings: the same bytes elsewhere in memory.
        let other: &'static [u8] = b"\0_Z1fv\0".to_vec().leak();
        let cache = LinkageNames::new(main, alt);
        let unit = |strings, sup_strings| UnitDies {
            strings,
            sup_strings,
            ..UnitDies::default()
        };
        let (own, split) = (unit(main, alt), unit(other, alt));
        let c = Lang::Other;
        assert_eq!(cache.key(&own, LazyStr::Str(1), c), Some(1 << 2));
        assert_eq!(
            cache.key(&own, LazyStr::Str(1), Lang::Rust),
            Some(1 << 2 | 1)
        );
        assert_eq!(
            cache.key(&own, LazyStr::SupStr(1), c),
            Some(1 << 2 | 1 << 1)
        );
        assert_eq!(cache.key(&split, LazyStr::Str(1), c), None);
        assert_eq!(cache.key(&own, LazyStr::Bytes(b"_Z1fv"), c), None);
        cache.insert(1 << 2, Some(Some("f()".into())));
        let linked = |name: Option<Option<&str>>, origin| Linked {
            name: name.map(|n| n.map(Arc::from)),
            origin,
        };
        assert_eq!(
            cache.get(1 << 2),
            Some(linked(Some(Some("f()")), NO_ORIGIN))
        );
        // A name no demangler reads is kept as such, not demangled again.
        cache.insert(2 << 2, None);
        assert_eq!(cache.get(2 << 2), Some(linked(None, NO_ORIGIN)));
        assert_eq!(cache.get(1 << 2 | 1), None);
        assert_eq!(cache.origin(1 << 2, || 7), 7);
        assert_eq!(cache.origin(1 << 2, || unreachable!("interned once")), 7);
        // Its origin id comes with the name from then on.
        assert_eq!(cache.get(1 << 2), Some(linked(Some(Some("f()")), 7)));
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
}
