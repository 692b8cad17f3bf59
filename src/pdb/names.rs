//! Names of inlined functions: an `S_INLINESITE` refers to an IPI record, a function id
//! (with the id of its namespace) or a member function id (with its class in the TPI).
//! Names are qualified the way the PDB's procedure records spell them (`ns::Class::f`).

use std::collections::HashMap;

use pdb2::FallibleIterator as _;

use super::Pdb;
use crate::error::{WarningKind, Warnings};

/// Scope chains longer than this are cut: namespaces nest a few deep.
const MAX_SCOPE_DEPTH: usize = 32;

/// The names of the inlined functions a dump needs, by IPI index.
#[derive(Debug, Default)]
pub(super) struct InlineeNames(HashMap<u32, String>);

impl InlineeNames {
    /// Reads the names of the IPI records `wanted` (sorted).
    pub(super) fn read(
        pdb: &mut Pdb<'_>,
        wanted: &[u32],
        signatures: Option<&super::signatures::Signatures<'_, '_>>,
        warnings: &mut Warnings,
    ) -> Self {
        if wanted.is_empty() {
            return InlineeNames::default();
        }
        // A string list claiming more entries than it holds would have `pdb2` reserve
        // gigabytes when parsed (signatures.rs).
        let fit = crate::contain::contained(|| {
            super::signatures::lists_fit(pdb, 4, super::signatures::LF_SUBSTR_LIST)
        });
        if fit != Ok(true) {
            warnings.push(
                WarningKind::Pdb,
                "PDB IPI stream: a string list claims more entries than its record holds; \
                 inlined functions are unnamed",
            );
            return InlineeNames::default();
        }
        let ipi = match pdb.id_information() {
            Ok(i) => i,
            Err(e) => {
                warnings.push(
                    WarningKind::Pdb,
                    format!("PDB IPI stream: {e}; inlined functions are unnamed"),
                );
                return InlineeNames::default();
            }
        };
        let tpi = pdb.type_information().ok();
        let mut id_finder = ipi.finder();
        let mut ids = ipi.iter();
        while let Ok(Some(_)) = ids.next() {
            id_finder.update(&ids);
        }
        let type_finder = tpi.as_ref().map(|tpi| {
            let mut finder = tpi.finder();
            let mut types = tpi.iter();
            while let Ok(Some(_)) = types.next() {
                finder.update(&types);
            }
            finder
        });
        let id_string = |index: pdb2::IdIndex| -> Option<String> {
            match id_finder.find(index).ok()?.parse().ok()? {
                pdb2::IdData::String(s) => Some(s.name.to_string().into_owned()),
                _ => None,
            }
        };
        let class_name = |index: pdb2::TypeIndex| -> Option<String> {
            let item = type_finder.as_ref()?.find(index).ok()?;
            match item.parse().ok()? {
                pdb2::TypeData::Class(c) => Some(c.name.to_string().into_owned()),
                pdb2::TypeData::Union(u) => Some(u.name.to_string().into_owned()),
                pdb2::TypeData::Enumeration(e) => Some(e.name.to_string().into_owned()),
                _ => None,
            }
        };
        let mut names = HashMap::with_capacity(wanted.len());
        for &index in wanted {
            let Ok(item) = id_finder.find(pdb2::IdIndex(index)) else {
                continue;
            };
            let parsed = item.parse();
            let types = match &parsed {
                Ok(pdb2::IdData::Function(f)) => vec![f.function_type],
                Ok(pdb2::IdData::MemberFunction(m)) => vec![m.function_type, m.parent],
                _ => continue,
            };
            // Spelled as the procedures are, with the parameter list of its type.
            if let Some(name) = signatures
                .and_then(|s| s.inlinee(pdb2::IdIndex(index), &types))
                .and_then(|n| {
                    crate::demangle::sanitize(&crate::demangle::msvc_anonymous_namespace(&n))
                })
            {
                names.insert(index, name);
                continue;
            }
            let name = match parsed {
                Ok(pdb2::IdData::Function(f)) => {
                    let mut scopes = Vec::new();
                    let mut scope = f.scope;
                    // A function id's scope is a string id naming the whole namespace
                    // path; follow it a bounded number of hops all the same.
                    while let Some(s) = scope.filter(|_| scopes.len() < MAX_SCOPE_DEPTH) {
                        match id_string(s) {
                            Some(n) => scopes.push(n),
                            None => break,
                        }
                        scope = None;
                    }
                    qualify(scopes.pop(), &f.name.to_string())
                }
                Ok(pdb2::IdData::MemberFunction(m)) => {
                    qualify(class_name(m.parent), &m.name.to_string())
                }
                _ => continue,
            };
            // One line, not blank: a damaged record can hold anything.
            if let Some(name) = crate::demangle::sanitize(&name) {
                names.insert(index, name);
            }
        }
        InlineeNames(names)
    }

    /// The name of IPI record `index`; Breakpad's placeholder when it could not be
    /// read.
    pub(super) fn name(&self, index: u32) -> &str {
        self.0.get(&index).map_or("<name omitted>", String::as_str)
    }
}

fn qualify(scope: Option<String>, name: &str) -> String {
    match scope {
        Some(s) if !s.is_empty() => format!("{s}::{name}"),
        _ => name.to_string(),
    }
}
