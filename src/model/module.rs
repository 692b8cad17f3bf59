//! The in-memory model of one symbol file: module-relative addresses, one function per
//! address, no overlaps, publics only where no function is, dense and sorted file and
//! origin numbering (`assemble.rs` builds it so from what the readers found).

use crate::model::body::{self, BodyRef, UnitBodies};
use crate::model::ids::{Arch, CodeId, DebugId};

/// One `FILE`, `INLINE_ORIGIN`-numbered symbol file, ready to write.
#[derive(Debug, Clone, Default)]
pub struct Module {
    /// The `MODULE` record's operating system field.
    pub os: String,
    /// The `MODULE` record's CPU field.
    pub arch: Arch,
    /// The debug id: 32 hex digits of GUID and the age.
    pub debug_id: DebugId,
    /// The code id (`INFO CODE_ID`): a GNU build ID, or a PE's timestamp and size.
    pub code_id: Option<CodeId>,
    /// The image's file name, written after the code id (Windows modules, as Breakpad
    /// writes them: the PE beside the PDB).
    pub code_file: Option<String>,
    /// The module name.
    pub name: String,
    /// A shared library's `DT_SONAME` (not written: a store run may file the symbol
    /// file under it too).
    pub soname: Option<String>,
    /// Extra `INFO KEY value` records (build metadata), after `CODE_ID` and `GENERATOR`.
    pub extra_info: Vec<(String, String)>,
    /// `FILE` records, by id.
    pub files: Vec<String>,
    /// `INLINE_ORIGIN` records, by id.
    pub origins: Vec<String>,
    /// Sorted by address, non-overlapping.
    pub functions: Vec<Function>,
    /// The functions' encoded line and inline records, with ids mapped to `files` and
    /// `origins` (read them with [`Module::records`]).
    pub(crate) bodies: Vec<UnitBodies>,
    /// Subtracted from the addresses in `bodies`.
    pub(crate) bias: u64,
    /// Sorted by address, none inside a function.
    pub publics: Vec<Public>,
    /// x86 Windows frame data, by address.
    pub(crate) stack_win: Vec<crate::model::stack_win::StackWin>,
    /// The unwind tables, written as STACK CFI records.
    pub(crate) cfi: Option<std::sync::Arc<dyn crate::model::cfi::CfiTables>>,
}

/// A `FUNC` record; its line and `INLINE` records come from [`Module::records`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Function {
    /// Start, relative to the module's load address.
    pub address: u64,
    /// Length in bytes.
    pub size: u64,
    /// The demangled name.
    pub name: String,
    /// Whether other symbols share this code (the `m` field).
    pub multiple: bool,
    /// Bytes of stack arguments (x86 Windows); 0 elsewhere.
    pub param_size: u32,
    pub(crate) body: BodyRef,
}

/// A line record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Line {
    /// Start, relative to the module's load address.
    pub address: u64,
    /// Length in bytes.
    pub size: u64,
    /// The source line.
    pub line: u32,
    /// The `FILE` record's number.
    pub file: u32,
}

/// An `INLINE` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Inline {
    /// Nesting: 0 for a call inlined straight into the function.
    pub depth: u32,
    /// The line of the call.
    pub call_line: u32,
    /// The `FILE` record's number of the call.
    pub call_file: u32,
    /// The `INLINE_ORIGIN` record's number of the inlined function.
    pub origin: u32,
    /// The inlined code's ranges, as (start, length).
    pub ranges: Vec<(u64, u64)>,
}

/// A `PUBLIC` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Public {
    /// The symbol's address, relative to the module's load address.
    pub address: u64,
    /// The demangled name.
    pub name: String,
    /// Whether other symbols share this address (the `m` field).
    pub multiple: bool,
    /// Bytes of stack arguments (x86 Windows); 0 elsewhere.
    pub param_size: u32,
}

impl Module {
    /// Whether STACK records will be written: unwind tables or frame data cover code.
    pub(crate) fn has_stack_records(&self) -> bool {
        !self.stack_win.is_empty() || self.cfi.as_ref().is_some_and(|c| !c.is_empty())
    }
}

impl Module {
    /// Whether a FUNC covers the module-relative `address`.
    pub(crate) fn covers(&self, address: u64) -> bool {
        covered(&self.functions, address)
    }

    /// The encoded records of `f` and its unit's id maps (see [`crate::model::body::visit`]);
    /// `None` only for a function whose body reference is out of range.
    pub(crate) fn body_of(&self, f: &Function) -> Option<(&UnitBodies, &[u8])> {
        body_bytes(&self.bodies, f.body)
    }

    /// The line and `INLINE` records of `f`, with module-relative addresses and the
    /// module's FILE and INLINE_ORIGIN ids.
    pub fn records(&self, f: &Function) -> (Vec<Line>, Vec<Inline>) {
        let Some((unit, bytes)) = body_bytes(&self.bodies, f.body) else {
            return (Vec::new(), Vec::new());
        };
        let start = f.address.wrapping_add(self.bias);
        let (lines, sites) = body::decode(start, bytes);
        let lines = lines
            .into_iter()
            .map(|l| Line {
                address: l.address.wrapping_sub(self.bias),
                size: l.size,
                line: l.line,
                file: unit.file(l.file),
            })
            .collect();
        let inlines = sites
            .into_iter()
            .map(|s| Inline {
                depth: s.depth,
                call_line: s.call_line,
                call_file: unit.file(s.call_file),
                origin: unit.origin(s.origin),
                ranges: s
                    .ranges
                    .iter()
                    .map(|&(lo, hi)| (lo.wrapping_sub(self.bias), hi.wrapping_sub(lo)))
                    .collect(),
            })
            .collect();
        (lines, inlines)
    }
}

pub(crate) fn body_bytes(bodies: &[UnitBodies], b: BodyRef) -> Option<(&UnitBodies, &[u8])> {
    let unit = bodies.get(b.unit as usize)?;
    Some((unit, unit.bytes.get(b.start as usize..b.end as usize)?))
}

pub(crate) fn covered(funcs: &[Function], addr: u64) -> bool {
    let i = funcs.partition_point(|f| f.address <= addr);
    i > 0 && addr < funcs[i - 1].address.saturating_add(funcs[i - 1].size)
}
