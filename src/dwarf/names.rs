//! Function names: an index of the DIEs that names are built from, and the resolution
//! of a DIE to a name across `DW_AT_specification` / `DW_AT_abstract_origin` chains,
//! enclosing namespaces and classes, and compilation units.

use std::sync::Arc;

use crate::demangle::{Cache, Lang, demangle};

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

/// A resolved function name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedName {
    /// Shared with the demangling cache (and, for inline origins, the INLINE_ORIGIN
    /// table) rather than copied for every unit that names the function.
    pub name: Arc<str>,
    /// True when it came from a linkage name; false for a name built from the DIE tree.
    pub from_linkage: bool,
}

/// The indexed DIEs of one unit, sorted by offset (the order a DIE walk produces).
#[derive(Debug, Default)]
pub(crate) struct UnitDies<'a> {
    pub start: usize,
    pub end: usize,
    pub lang: Option<Lang>,
    pub dies: Vec<DieInfo<'a>>,
    /// The `.debug_str` sections that [`LazyStr`] offsets point into: the unit's own
    /// file's, and dwz's alternate file's.
    pub strings: &'a [u8],
    pub sup_strings: &'a [u8],
}

impl<'a> UnitDies<'a> {
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
        Ok(unit
            .dies
            .binary_search_by_key(&offset, |d| d.offset)
            .ok()
            .map(|j| (unit, j)))
    }

    /// The name of the function whose DIE is at `offset`: the demangled linkage name if
    /// any DIE in its reference chain has one, else its qualified source name (which,
    /// unlike a demangled C++ name, has no parameter list). [`Unindexed`] when the
    /// answer depends on a unit the index does not hold.
    pub(crate) fn function_name(&self, offset: usize) -> Result<Option<ResolvedName>, Unindexed> {
        let mut linkage = None;
        let mut named = None;
        let mut cur = offset;
        for _ in 0..MAX_HOPS {
            let Some((unit, i)) = self.lookup(cur)? else {
                break;
            };
            let die = &unit.dies[i];
            if named.is_none() && die.name.and_then(|n| unit.string(n)).is_some() {
                named = Some((unit, i));
            }
            if let Some(l) = die.linkage.and_then(|l| unit.string(l)) {
                linkage = Some((l, unit.lang.unwrap_or(Lang::Other)));
                break;
            }
            match die.target {
                Some(t) if t != cur => cur = t,
                _ => break,
            }
        }
        if let Some((raw, lang)) = linkage {
            // Strict UTF-8 first: valid names (nearly all) skip the lossy scan.
            let raw = match std::str::from_utf8(raw) {
                Ok(s) => std::borrow::Cow::Borrowed(s),
                Err(_) => String::from_utf8_lossy(raw),
            };
            let raw = self.demangled.map_or(&*raw, |cache| cache.undecorate(&raw));
            let demangled: Arc<str> = match self.demangled {
                Some(cache) => cache.demangle(raw, lang),
                None => demangle(raw, lang).into(),
            };
            let failed = *demangled == *raw && crate::demangle::looks_mangled(raw);
            if !failed {
                return Ok(Some(ResolvedName {
                    name: demangled,
                    from_linkage: true,
                }));
            }
            // A mangled name no demangler accepts: the source name is more readable, if
            // there is one; otherwise the raw symbol still identifies the function.
            if named.is_none() {
                return Ok(Some(ResolvedName {
                    name: Arc::from(raw),
                    from_linkage: true,
                }));
            }
        }
        match named {
            Some((u, i)) => Ok(Some(ResolvedName {
                name: self.qualify(u, i)?.into(),
                from_linkage: false,
            })),
            None => Ok(None),
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
            out.push_str(&String::from_utf8_lossy(p));
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
        };
        let index = DieIndex {
            units: vec![&unit],
            partial_below: 0,
            demangled: None,
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
        };
        let index = DieIndex {
            units: vec![&unit],
            partial_below: 0,
            demangled: None,
        };
        assert_eq!(
            index.function_name(10).unwrap(),
            Some(ResolvedName {
                name: "std::swap<int>".into(),
                from_linkage: false
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
        let unit = UnitDies {
            start: 0,
            end: 100,
            lang: None,
            strings: &[],
            sup_strings: &[],
            dies: vec![a, b, c, d],
        };
        let index = DieIndex {
            units: vec![&unit],
            partial_below: 0,
            demangled: None,
        };
        assert_eq!(
            index.function_name(20).unwrap().map(|n| n.name).as_deref(),
            Some("f")
        );
        assert_eq!(
            index.function_name(30).unwrap(),
            Some(ResolvedName {
                name: "ns::g()".into(),
                from_linkage: true
            })
        );
        assert_eq!(index.function_name(99), Ok(None));
    }
}
