//! The records every debug-info reader produces, whatever the format: functions with
//! their line rows and inline sites, the files and inline origins they refer to. DWARF
//! ([`crate::dwarf`]) and PDB ([`crate::pdb`]) both fill a [`DebugInfo`]; the model
//! (`Module::build`) takes it without knowing which one did.

use crate::body::{BodyRef, UnitBodies};
pub use crate::body::{InlineSite, LineRow};

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
