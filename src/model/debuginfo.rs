//! The records every debug-info reader produces, whatever the format: functions with
//! their line rows and inline sites, the files and inline origins they refer to. DWARF
//! ([`crate::dwarf`]) and PDB ([`crate::pdb`]) both fill a [`DebugInfo`]; the model
//! (`assemble.rs`) takes it without knowing which one did.

use crate::model::body::{BodyRef, UnitBodies};
pub use crate::model::body::{InlineSite, LineRow};

/// One contiguous piece of a function, with absolute addresses.
#[derive(Debug, Clone)]
pub struct FunctionRecord {
    pub start: u64,
    pub end: u64,
    /// `None` when the debug info gives the function no name.
    pub name: Option<String>,
    /// The name is a demangled linkage name (not one built from the DIE tree, which has
    /// no parameter list).
    pub name_from_linkage: bool,
    /// Bytes of arguments the callee pops or the caller pushed (x86 `FUNC` param_size);
    /// 0 where unknown.
    pub param_size: u32,
    /// Its line and inline records, in [`DebugInfo::bodies`].
    pub body: BodyRef,
}

/// All functions of a module, in unit (or PDB module) order.
#[derive(Debug, Default)]
pub struct DebugInfo {
    pub functions: Vec<FunctionRecord>,
    pub files: Vec<String>,
    pub origins: Vec<std::sync::Arc<str>>,
    /// Per unit: the encoded records, with maps to ids of `files` and `origins`.
    pub bodies: Vec<UnitBodies>,
}

impl DebugInfo {
    /// Moves each function by the move whose range (`start, end, delta`, sorted) holds
    /// its start: a debug map's object file into the binary's addresses. A function in
    /// none was left out of the link, and is dropped.
    pub fn relocate(&mut self, moves: &[(u64, u64, u64)]) {
        self.functions.retain_mut(|f| {
            let i = moves.partition_point(|m| m.0 <= f.start);
            let Some(&(_, end, delta)) = i.checked_sub(1).and_then(|i| moves.get(i)) else {
                return false;
            };
            if f.start >= end {
                return false;
            }
            f.start = f.start.wrapping_add(delta);
            f.end = f.end.wrapping_add(delta);
            true
        });
    }

    /// Appends `other`'s functions (another object file's), its files and inline
    /// origins merged into these by name.
    pub fn append(&mut self, other: DebugInfo) {
        fn merged<T: Clone + Eq + std::hash::Hash>(ours: &mut Vec<T>, theirs: Vec<T>) -> Vec<u32> {
            let mut index: std::collections::HashMap<T, u32> = ours
                .iter()
                .enumerate()
                .map(|(i, x)| (x.clone(), i as u32))
                .collect();
            theirs
                .into_iter()
                .map(|x| {
                    *index.entry(x.clone()).or_insert_with(|| {
                        ours.push(x);
                        (ours.len() - 1) as u32
                    })
                })
                .collect()
        }
        let files = merged(&mut self.files, other.files);
        let origins = merged(&mut self.origins, other.origins);
        let units = self.bodies.len() as u32;
        for mut unit in other.bodies {
            for id in &mut unit.files {
                *id = files.get(*id as usize).copied().unwrap_or(*id);
            }
            for id in &mut unit.origins {
                if *id != u32::MAX {
                    *id = origins.get(*id as usize).copied().unwrap_or(*id);
                }
            }
            self.bodies.push(unit);
        }
        self.functions
            .extend(other.functions.into_iter().map(|mut f| {
                f.body.unit += units;
                f
            }));
    }
}

/// The parts of `a` inside `b` (both sorted by address, each disjoint), appended to
/// `out`. DWARF clips inline sites to their parents with it, PDB its child sites.
pub fn intersect_ranges(a: &[(u64, u64)], b: &[(u64, u64)], out: &mut Vec<(u64, u64)>) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let lo = a[i].0.max(b[j].0);
        let hi = a[i].1.min(b[j].1);
        if lo < hi {
            out.push((lo, hi));
        }
        if a[i].1 < b[j].1 {
            i += 1;
        } else {
            j += 1;
        }
    }
}
