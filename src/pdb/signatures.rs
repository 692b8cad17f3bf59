//! Function names as the Windows dumpers write them. A procedure record names the
//! function without its parameters (`main`, `C::f`); Breakpad's DIA-based dumper and
//! Mozilla's both write the parameter list its type record gives (`main(int, char**)`,
//! `C::f() const`, `h(C const&)`), and crash services group Windows crashes by those
//! names, so a dumper that spells them otherwise splits every existing crash group.
//! pdb-addr2line's type formatter is the one Mozilla's dumper uses (through symbolic),
//! with the same flags: no return type, no `static`, a space after each comma, no
//! `class`/`struct` keyword.

use pdb2::FallibleIterator as _;

/// The formatter over the PDB's type and id streams, shared by the tasks that read the
/// modules, and a finder of its own for the guard.
pub(super) struct Signatures<'a, 's> {
    formatter: pdb_addr2line::TypeFormatter<'a, 's>,
    finder: pdb2::TypeFinder<'a>,
}

/// The deepest a function type's records may nest, and the most records it may reach:
/// real signatures nest a few levels (a pointer to a function taking pointers) and
/// reach a few dozen records.
const MAX_DEPTH: usize = 64;
const MAX_RECORDS: usize = 4096;

/// Module information is read by the dumper itself, module by module; the formatter
/// needs it only for cross-module ids (inlined functions' names), which it is not asked
/// for here.
pub(super) struct NoModuleInfo;

impl<'s> pdb_addr2line::ModuleProvider<'s> for NoModuleInfo {
    fn get_module_info(
        &self,
        _module_index: usize,
        _module: &pdb2::Module,
    ) -> Result<Option<&pdb2::ModuleInfo<'s>>, pdb2::Error> {
        Ok(None)
    }
}

/// `LF_ARGLIST` in the type stream, `LF_SUBSTR_LIST` in the id stream: a count of 4-byte
/// entries, then the entries.
pub(super) const LF_ARGLIST: u16 = 0x1201;
pub(super) const LF_SUBSTR_LIST: u16 = 0x1604;

/// Whether every record of kind `kind` in the type or id stream `index` (2 or 4)
/// holds the entries its count claims. The `pdb2` crate reserves room for the count
/// before reading a single entry, so one record claiming 1.6 billion arguments asked
/// for 6.6 GB (found by the `pdb` fuzz target), and pdb-addr2line's formatter parses
/// every record after a forward-declared class's to find its size: a stream with such a
/// record is not handed to either. Read by hand from the stream's bytes, as `pdb2` gives
/// them: its items do not show their data.
pub(super) fn lists_fit(pdb: &mut super::Pdb<'_>, index: u32, kind: u16) -> bool {
    let Ok(Some(stream)) = pdb.raw_stream(pdb2::StreamIndex(index as u16)) else {
        return true;
    };
    let bytes = stream.as_slice();
    let u32_at = |at: usize| -> Option<usize> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?) as usize)
    };
    let (Some(header), Some(records)) = (u32_at(4), u32_at(16)) else {
        return true;
    };
    let end = header.saturating_add(records).min(bytes.len());
    let mut at = header;
    while at + 4 <= end {
        let len = usize::from(u16::from_le_bytes([bytes[at], bytes[at + 1]]));
        let this = u16::from_le_bytes([bytes[at + 2], bytes[at + 3]]);
        if this == kind {
            // Kind (2), count (4), entries: all within the record's length.
            let count = u32_at(at + 4).unwrap_or(usize::MAX);
            if count.saturating_mul(4).saturating_add(6) > len {
                return false;
            }
        }
        at += 2 + len;
    }
    true
}

/// The streams a formatter reads, owned by the task that formats.
pub(super) struct Streams<'s> {
    types: pdb2::TypeInformation<'s>,
    ids: pdb2::IdInformation<'s>,
}

impl<'s> Streams<'s> {
    /// The type (TPI) and id (IPI) streams, when both can be read.
    pub(super) fn read(pdb: &mut super::Pdb<'s>) -> Option<Streams<'s>> {
        Some(Streams {
            types: pdb.type_information().ok()?,
            ids: pdb.id_information().ok()?,
        })
    }
}

impl<'a, 's> Signatures<'a, 's> {
    /// A formatter over `streams`, for the modules of `dbi`.
    pub(super) fn new(
        provider: &'a NoModuleInfo,
        dbi: &'a pdb2::DebugInformation<'s>,
        streams: &'a Streams<'s>,
    ) -> Option<Signatures<'a, 's>> {
        let modules = dbi.modules().ok()?.collect::<Vec<_>>().ok()?;
        let formatter = pdb_addr2line::TypeFormatter::new_from_parts(
            provider,
            modules,
            dbi,
            &streams.types,
            &streams.ids,
            None,
            pdb_addr2line::TypeFormatterFlags::default(),
        )
        .ok()?;
        let mut finder = streams.types.finder();
        let mut types = streams.types.iter();
        while let Ok(Some(_)) = types.next() {
            finder.update(&types);
        }
        Some(Signatures { formatter, finder })
    }

    /// `name` (a procedure's, in module `module_index`) with the parameter list of its
    /// type `type_index`; `None` when the type cannot be read.
    pub(super) fn function(
        &self,
        name: &str,
        module_index: usize,
        type_index: pdb2::TypeIndex,
    ) -> Option<String> {
        // The formatter follows type references recursively, with no bound of its own:
        // a crafted record that points at itself would overflow the stack (an abort no
        // panic guard catches). So the records a type reaches are walked here first,
        // without recursion, and a cycle or a nesting past any real signature's keeps
        // the procedure's own name.
        if !self.acyclic(type_index) {
            return None;
        }
        // A panic inside it (it unwraps what damaged records give it) is contained here,
        // not only by the module's reader: it poisons the formatter's lock, and every
        // later call then fails the same way, leaving the procedures their own names
        // instead of losing the other modules.
        crate::contain::contained_as("the PDB type formatter", || {
            self.formatter
                .format_function(name, module_index, type_index)
        })
        .ok()?
        .ok()
        .filter(|s| !s.is_empty())
    }

    /// The inlined function of IPI record `id` named as the procedures are
    /// ([`Signatures::function`]): qualified, with its parameter list, so that an
    /// inlined frame and its outlined copy read alike. `types` are the type records
    /// the id names (its function type, a member function's class), each walked by the
    /// guard first; `None` when one cannot be read.
    pub(super) fn inlinee(&self, id: pdb2::IdIndex, types: &[pdb2::TypeIndex]) -> Option<String> {
        if !types.iter().all(|&t| self.acyclic(t)) {
            return None;
        }
        crate::contain::contained_as("the PDB type formatter", || self.formatter.format_id(0, id))
            .ok()?
            .ok()
            .filter(|s| !s.is_empty() && !s.starts_with('<'))
    }

    /// Whether the records `root` reaches, through every reference the formatter
    /// follows, form no cycle and stay within [`MAX_DEPTH`] and [`MAX_RECORDS`].
    fn acyclic(&self, root: pdb2::TypeIndex) -> bool {
        // Depth-first, by hand: (index, whether its references were pushed).
        let mut stack: Vec<(pdb2::TypeIndex, bool)> = vec![(root, false)];
        let mut path: Vec<pdb2::TypeIndex> = Vec::new();
        let mut seen = 0usize;
        while let Some((index, expanded)) = stack.pop() {
            if expanded {
                path.pop();
                continue;
            }
            if path.contains(&index) {
                return false;
            }
            seen += 1;
            if seen > MAX_RECORDS || path.len() >= MAX_DEPTH {
                return false;
            }
            path.push(index);
            stack.push((index, true));
            // A record the walk cannot reach (past a damaged one) is one the formatter
            // might still reach by other means: not formatted.
            let Some(next) = self.references(index) else {
                return false;
            };
            stack.extend(next.into_iter().map(|n| (n, false)));
        }
        true
    }

    /// The records `index` refers to that the formatter follows (primitive types, below
    /// 0x1000, are no records); `None` for a record that cannot be found. One that
    /// cannot be parsed refers to nothing: the formatter fails on it too, and returns.
    fn references(&self, index: pdb2::TypeIndex) -> Option<Vec<pdb2::TypeIndex>> {
        use pdb2::TypeData as T;
        if index.0 < 0x1000 {
            return Some(Vec::new());
        }
        let Ok(item) = self.finder.find(index) else {
            return None;
        };
        let Ok(data) = item.parse() else {
            return Some(Vec::new());
        };
        let mut out = match data {
            T::Pointer(p) => [Some(p.underlying_type), p.containing_class]
                .into_iter()
                .flatten()
                .collect(),
            T::Modifier(m) => vec![m.underlying_type],
            T::Array(a) => vec![a.element_type, a.indexing_type],
            T::Bitfield(b) => vec![b.underlying_type],
            // Its size is its underlying type's.
            T::Enumeration(e) => vec![e.underlying_type],
            T::Procedure(p) => [Some(p.argument_list), p.return_type]
                .into_iter()
                .flatten()
                .collect(),
            T::MemberFunction(m) => [
                Some(m.return_type),
                Some(m.class_type),
                Some(m.argument_list),
                m.this_pointer_type,
            ]
            .into_iter()
            .flatten()
            .collect(),
            T::ArgumentList(a) => a.arguments,
            _ => Vec::new(),
        };
        out.retain(|i| i.0 >= 0x1000);
        Some(out)
    }
}
