//! Function names: an index of the DIEs that names are built from, and the resolution
//! of a DIE to a name across `DW_AT_specification` / `DW_AT_abstract_origin` chains,
//! enclosing namespaces and classes, and compilation units.

use crate::demangle::{Lang, demangle};

/// Marks "no parent" and "no target".
pub(crate) const NONE: u32 = u32::MAX;

/// How far reference chains are followed; real chains are 1–3 hops, cycles in damaged
/// DWARF would otherwise loop forever.
const MAX_HOPS: usize = 16;
/// How many enclosing scopes a qualified name may have.
const MAX_SCOPES: usize = 64;

/// What a DIE contributes to a qualified name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScopeKind {
    Namespace,
    Type,
    Function,
}

/// The naming facts of one DIE.
#[derive(Debug, Clone)]
pub(crate) struct DieInfo<'a> {
    /// Offset in `.debug_info`.
    pub offset: usize,
    /// Index of the nearest enclosing indexed DIE in the same unit, or [`NONE`].
    pub parent: u32,
    pub kind: ScopeKind,
    pub name: Option<&'a [u8]>,
    pub linkage: Option<&'a [u8]>,
    /// `DW_AT_specification` or `DW_AT_abstract_origin`, as a `.debug_info` offset.
    pub target: Option<usize>,
}

/// A resolved function name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ResolvedName {
    pub name: String,
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
}

/// All units' indexes, sorted by unit offset.
pub(crate) struct DieIndex<'u, 'a> {
    pub units: Vec<&'u UnitDies<'a>>,
}

impl<'a> DieIndex<'_, 'a> {
    fn lookup(&self, offset: usize) -> Option<(&UnitDies<'a>, usize)> {
        let i = self
            .units
            .partition_point(|u| u.start <= offset)
            .checked_sub(1)?;
        let unit = self.units[i];
        if offset >= unit.end {
            return None;
        }
        let j = unit.dies.binary_search_by_key(&offset, |d| d.offset).ok()?;
        Some((unit, j))
    }

    /// The name of the function whose DIE is at `offset`: the demangled linkage name if
    /// any DIE in its reference chain has one, else its qualified source name (which,
    /// unlike a demangled C++ name, has no parameter list).
    pub(crate) fn function_name(&self, offset: usize) -> Option<ResolvedName> {
        let mut linkage = None;
        let mut named = None;
        let mut cur = offset;
        for _ in 0..MAX_HOPS {
            let Some((unit, i)) = self.lookup(cur) else {
                break;
            };
            let die = &unit.dies[i];
            if named.is_none() && die.name.is_some() {
                named = Some((unit, i));
            }
            if let Some(l) = die.linkage {
                linkage = Some((l, unit.lang.unwrap_or(Lang::Other)));
                break;
            }
            match die.target {
                Some(t) if t != cur => cur = t,
                _ => break,
            }
        }
        if let Some((raw, lang)) = linkage {
            let raw = String::from_utf8_lossy(raw);
            let demangled = demangle(&raw, lang);
            let failed = demangled == raw && (raw.starts_with("_Z") || raw.starts_with("_R"));
            if !failed {
                return Some(ResolvedName {
                    name: demangled,
                    from_linkage: true,
                });
            }
            // A mangled name no demangler accepts: the source name is more readable, if
            // there is one; otherwise the raw symbol still identifies the function.
            if named.is_none() {
                return Some(ResolvedName {
                    name: raw.into_owned(),
                    from_linkage: true,
                });
            }
        }
        named.map(|(u, i)| ResolvedName {
            name: self.qualify(u, i),
            from_linkage: false,
        })
    }

    /// `a::b::name` from the enclosing namespaces and types of DIE `i`.
    fn qualify(&self, unit: &UnitDies<'a>, i: usize) -> String {
        let die = &unit.dies[i];
        let mut parts: Vec<&[u8]> = vec![die.name.unwrap_or(b"")];
        let mut scope = self.parent_of(unit, i);
        let mut steps = 0;
        while let Some((u, j)) = scope {
            steps += 1;
            if steps > MAX_SCOPES {
                break;
            }
            let s = &u.dies[j];
            match s.kind {
                // Breakpad and llvm-symbolizer name local entities without their function.
                ScopeKind::Function => break,
                ScopeKind::Namespace => parts.push(s.name.unwrap_or(b"(anonymous namespace)")),
                ScopeKind::Type => {
                    if let Some(n) = s.name {
                        parts.push(n);
                    }
                }
            }
            // An out-of-line definition (`struct A::B { ... }`) sits outside its scope
            // and points back at its declaration, whose parents are the real scope.
            scope = match s.target.and_then(|t| self.lookup(t)) {
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
        out
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
            name: name.map(str::as_bytes),
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
            dies: vec![
                die(10, NONE, ScopeKind::Namespace, None),
                die(20, 0, ScopeKind::Type, Some("Klass")),
                decl,
                def,
            ],
        };
        let index = DieIndex { units: vec![&unit] };
        assert_eq!(
            index.function_name(50).map(|n| n.name).as_deref(),
            Some("(anonymous namespace)::Klass::method")
        );
    }

    #[test]
    fn undemanglable_linkage_name_falls_back_to_the_source_name() {
        let mut f = die(10, 0, ScopeKind::Function, Some("swap<int>"));
        f.linkage = Some(b"_ZSt4swapIiENSt9enable_ifIXsrSt6__and_IJSt6__not_I");
        let unit = UnitDies {
            start: 0,
            end: 100,
            lang: None,
            dies: vec![die(5, NONE, ScopeKind::Namespace, Some("std")), f],
        };
        let index = DieIndex { units: vec![&unit] };
        assert_eq!(
            index.function_name(10),
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
        d.linkage = Some(b"_ZN2ns1gEv");
        let unit = UnitDies {
            start: 0,
            end: 100,
            lang: None,
            dies: vec![a, b, c, d],
        };
        let index = DieIndex { units: vec![&unit] };
        assert_eq!(
            index.function_name(20).map(|n| n.name).as_deref(),
            Some("f")
        );
        assert_eq!(
            index.function_name(30),
            Some(ResolvedName {
                name: "ns::g()".into(),
                from_linkage: true
            })
        );
        assert_eq!(index.function_name(99), None);
    }
}
