//! The DIEs of a unit in order, through their abbreviations' plans ([`super::skim`])
//! or gimli where a plan cannot tell where a DIE ends; and which DIEs the walk reads.

use gimli::constants;

use super::R;
use super::facts::Facts;
use super::skim;

/// One DIE as the walk sees it.
pub(super) enum Die {
    /// The end of a list of children.
    Null,
    /// A DIE the walk does not read.
    Skipped { has_children: bool },
    /// A DIE the walk does not read now, but may later (see [`declaration_only`]).
    Noted { has_children: bool },
    /// A DIE the walk reads: its attributes are in [`Cursor::facts`].
    Read { tag: constants::DwTag },
}

/// The DIEs of a unit in order: through their abbreviations' plans (see [`skim`]), or
/// through gimli where a plan cannot tell where a DIE ends, which then gives the same
/// result and the same errors as gimli alone.
pub(super) struct Cursor<'u, 'a> {
    pub(super) unit: &'u gimli::Unit<R<'a>>,
    pub(super) plans: skim::Plans<'u, 'a>,
    pub(super) wanted: &'u dyn Fn(&gimli::Abbreviation) -> skim::Want,
    /// The unit offset of the first DIE, and the bytes from there.
    pub(super) root: usize,
    pub(super) data: &'a [u8],
    pub(super) endian: gimli::RunTimeEndian,
    pub(super) pos: usize,
    /// As gimli counts it: a DIE with children opens a level, a null entry closes one.
    pub(super) next_depth: isize,
    /// Whether the DIE last returned has children.
    pub(super) had_children: bool,
    /// The abbreviation code of the DIE last read by its plan (0 when gimli read it),
    /// and where its attributes start.
    pub(super) last_read: (u64, usize),
    /// The attributes of the DIE last read. Kept here rather than returned: moving
    /// them (a few hundred bytes) through each call was a quarter of the walk.
    pub(super) facts: Facts<'a>,
}

impl<'u, 'a> Cursor<'u, 'a> {
    pub(super) fn new(
        unit: &'u gimli::Unit<R<'a>>,
        wanted: &'u dyn Fn(&gimli::Abbreviation) -> skim::Want,
        childless: &'u dyn Fn(&gimli::Abbreviation) -> bool,
    ) -> gimli::Result<Self> {
        let root = unit.header.root_offset().0;
        let entries = unit.header.range_from(gimli::UnitOffset(root)..)?;
        Ok(Cursor {
            unit,
            plans: skim::Plans::new(unit, wanted, Facts::slot_of, childless),
            wanted,
            root,
            data: entries.slice(),
            endian: gimli::Reader::endian(&entries),
            pos: 0,
            next_depth: 0,
            had_children: false,
            last_read: (0, 0),
            facts: Facts::default(),
        })
    }

    /// The next DIE: its unit offset, depth and what the walk needs of it.
    #[inline(always)]
    pub(super) fn next(&mut self) -> gimli::Result<Option<(usize, isize, Die)>> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let depth = self.next_depth;
        let offset = self.root + self.pos;
        let die = match self.planned()? {
            Some(die) => die,
            None => self.by_gimli(offset)?,
        };
        match &die {
            Die::Null => self.next_depth -= 1,
            // `had_children` is set by the read.
            Die::Read { .. } => self.next_depth += isize::from(self.had_children),
            Die::Skipped { has_children } | Die::Noted { has_children } => {
                self.had_children = *has_children;
                self.next_depth += isize::from(*has_children);
            }
        }
        Ok(Some((offset, depth, die)))
    }

    /// The DIE at unit offset `offset` (one the walk went through), out of turn.
    pub(super) fn at(&mut self, offset: usize) -> gimli::Result<Option<Die>> {
        let Some(pos) = offset.checked_sub(self.root) else {
            return Ok(None);
        };
        self.pos = pos;
        Ok(self.next()?.map(|(_, _, die)| die))
    }

    /// The DIE at `pos` by its abbreviation's plan; `None` when the plan cannot tell.
    /// Inlined into the walk: called once per DIE (millions a unit), its call and the
    /// result returned through memory were an eighth of its cost.
    #[inline(always)]
    pub(super) fn planned(&mut self) -> gimli::Result<Option<Die>> {
        let (data, root, unit) = (self.data, self.root, self.unit);
        let mut at = self.pos;
        let Some(code) = skim::uleb(data, &mut at) else {
            return Ok(None);
        };
        if code == 0 {
            self.pos = at;
            return Ok(Some(Die::Null));
        }
        let Some(plan) = self.plans.get(code) else {
            return Ok(None);
        };
        // With its children, when nothing in them is read and it says where they end
        // (a sibling reference past its own attributes, inside the unit).
        let endian = self.endian;
        let sibling = |end: usize| {
            plan.sibling(data, at, endian)
                .and_then(|s| usize::try_from(s).ok()?.checked_sub(root))
                .filter(|&s| s > end && s <= data.len())
        };
        if plan.want != skim::Want::Read {
            let Some(end) = plan.skip(data, at, endian) else {
                return Ok(None);
            };
            let (next, has_children) = match sibling(end) {
                Some(next) => (next, false),
                None => (end, plan.has_children),
            };
            self.pos = next;
            return Ok(Some(match plan.want {
                skim::Want::Note => Die::Noted { has_children },
                _ => Die::Skipped { has_children },
            }));
        }
        self.last_read = (code, at);
        let facts = &mut self.facts;
        *facts = Facts::default();
        let read = |p: usize, read: &skim::Read| -> Result<usize, Option<gimli::Error>> {
            if let Some((value, end)) = read.value(data, p, endian) {
                facts.set(read.slot, value);
                return Ok(end);
            }
            facts.read_by_gimli(unit, (root, data.len()), p, read.spec, read.slot)
        };
        match plan.go(data, at, endian, read) {
            Ok(Some(end)) => {
                if let Some(next) = sibling(end) {
                    self.pos = next;
                    self.had_children = false;
                    return Ok(Some(Die::Read { tag: plan.tag }));
                }
                self.pos = end;
                self.had_children = plan.has_children;
                Ok(Some(Die::Read { tag: plan.tag }))
            }
            Ok(None) | Err(None) => Ok(None),
            Err(Some(e)) => Err(e),
        }
    }

    /// Steps over the children of the DIE just read to its `DW_AT_sibling` (a reference
    /// past its attributes, inside the unit), where its plan knows where that is;
    /// `false`, and nothing done, where it has no children or no such reference.
    pub(super) fn skip_children(&mut self) -> bool {
        let (code, at) = self.last_read;
        if !self.had_children || code == 0 {
            return false;
        }
        let (data, root, endian) = (self.data, self.root, self.endian);
        let next = (self.plans.get(code))
            .and_then(|plan| plan.sibling_of_read(data, at, endian))
            .and_then(|s| usize::try_from(s).ok()?.checked_sub(root))
            .filter(|&s| s > self.pos && s <= data.len());
        let Some(next) = next else {
            return false;
        };
        self.pos = next;
        self.had_children = false;
        self.next_depth -= 1;
        true
    }

    /// The DIE at unit offset `offset`, read by gimli.
    pub(super) fn by_gimli(&mut self, offset: usize) -> gimli::Result<Die> {
        let mut entries = self.unit.entries_raw(Some(gimli::UnitOffset(offset)))?;
        let Some(abbrev) = entries.read_abbreviation()? else {
            self.pos = entries.next_offset().0 - self.root;
            return Ok(Die::Null);
        };
        let has_children = abbrev.has_children();
        let die = match (self.wanted)(abbrev) {
            skim::Want::Read => {
                self.last_read = (0, 0);
                self.had_children = has_children;
                self.facts.read(&mut entries, abbrev.attributes())?;
                Die::Read { tag: abbrev.tag() }
            }
            want => {
                entries.skip_attributes(abbrev.attributes())?;
                match want {
                    skim::Want::Note => Die::Noted { has_children },
                    _ => Die::Skipped { has_children },
                }
            }
        };
        self.pos = entries.next_offset().0 - self.root;
        Ok(die)
    }
}

/// What the walk does with a DIE of this abbreviation: reads it, skips it unparsed, or,
/// where `defer`, notes a function's declaration to read later if the unit's DIEs lead
/// to it ([`declaration_only`]).
pub(super) fn want(abbrev: &gimli::Abbreviation, inlines: bool, defer: bool) -> skim::Want {
    match wanted(abbrev.tag(), abbrev, inlines) {
        true if defer && declaration_only(abbrev) => skim::Want::Note,
        true => skim::Want::Read,
        false => skim::Want::Skip,
    }
}

/// Whether the walk reads a DIE of this tag and abbreviation; the others are skipped
/// unparsed.
pub(super) fn wanted(tag: constants::DwTag, abbrev: &gimli::Abbreviation, inlines: bool) -> bool {
    match tag {
        constants::DW_TAG_inlined_subroutine => inlines,
        constants::DW_TAG_compile_unit
        | constants::DW_TAG_partial_unit
        | constants::DW_TAG_subprogram
        | constants::DW_TAG_namespace => true,
        // A type names a function's scope only if it has members, or is the
        // declaration an out-of-line definition (`struct A::B { ... }`) points to.
        // Most types are neither; deciding from the abbreviation saves reading them.
        constants::DW_TAG_class_type
        | constants::DW_TAG_structure_type
        | constants::DW_TAG_union_type
        | constants::DW_TAG_interface_type => {
            abbrev.has_children()
                || abbrev
                    .attributes()
                    .iter()
                    .any(|a| a.name() == constants::DW_AT_declaration)
        }
        _ => false,
    }
}

/// Whether the walk reads nothing under a DIE of this abbreviation, so that its
/// children may be stepped over all at once. Inlined calls hold only their parameters,
/// variables, blocks and nested calls; the others hold only their parts (enumerators,
/// subranges, parameters). A function's declaration (a member function in its class)
/// holds only its parameters: it is read, its children are not. They were most of
/// the DIEs a C++ unit's walk went through one by one, as every unit declares again
/// the classes it uses (libjvm: 9 of 16 million). Not lexical blocks, nor functions
/// with code: a local class's member functions are named through the class, declared
/// inside the block.
pub(super) fn childless(abbrev: &gimli::Abbreviation, inlines: bool) -> bool {
    match abbrev.tag() {
        constants::DW_TAG_subprogram => abbrev
            .attributes()
            .iter()
            .any(|a| a.name() == constants::DW_AT_declaration),
        constants::DW_TAG_inlined_subroutine => !inlines,
        constants::DW_TAG_call_site
        | constants::DW_TAG_GNU_call_site
        | constants::DW_TAG_enumeration_type
        | constants::DW_TAG_subroutine_type
        | constants::DW_TAG_array_type
        | constants::DW_TAG_formal_parameter
        | constants::DW_TAG_variable => true,
        _ => false,
    }
}

/// Whether DIEs of this abbreviation are functions' declarations (no code of their
/// own), which the walk notes rather than reads (see `unit::index_noted`).
pub(super) fn declaration_only(abbrev: &gimli::Abbreviation) -> bool {
    abbrev.tag() == constants::DW_TAG_subprogram && {
        let names = || abbrev.attributes().iter().map(|a| a.name());
        names().any(|n| n == constants::DW_AT_declaration)
            && !names().any(|n| {
                matches!(
                    n,
                    constants::DW_AT_low_pc | constants::DW_AT_high_pc | constants::DW_AT_ranges
                )
            })
    }
}
