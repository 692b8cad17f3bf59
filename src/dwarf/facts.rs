//! The attributes of a DIE that the walk uses (the others are skipped unparsed), and
//! the strings and references they hold.

use gimli::{AttributeSpecification, AttributeValue, constants};

use super::names::LazyStr;
use super::{Context, R};

/// The attributes of a DIE that the walk uses; the others are skipped unparsed.
#[derive(Default)]
pub(super) struct Facts<'a> {
    pub(super) name: Option<AttributeValue<R<'a>>>,
    pub(super) linkage_name: Option<AttributeValue<R<'a>>>,
    pub(super) mips_linkage_name: Option<AttributeValue<R<'a>>>,
    pub(super) specification: Option<AttributeValue<R<'a>>>,
    pub(super) abstract_origin: Option<AttributeValue<R<'a>>>,
    pub(super) low_pc: Option<AttributeValue<R<'a>>>,
    pub(super) high_pc: Option<AttributeValue<R<'a>>>,
    pub(super) ranges: Option<AttributeValue<R<'a>>>,
    pub(super) call_file: Option<AttributeValue<R<'a>>>,
    pub(super) call_line: Option<AttributeValue<R<'a>>>,
    pub(super) language: Option<AttributeValue<R<'a>>>,
}

impl<'a> Facts<'a> {
    /// An inlined call's file index (when given) and line (0 when not).
    pub(super) fn call_site(&self) -> (Option<u64>, u32) {
        let call_file = self.call_file.and_then(|v| match v {
            AttributeValue::FileIndex(i) => Some(i),
            other => other.udata_value(),
        });
        let call_line = self
            .call_line
            .and_then(|v| v.udata_value())
            .and_then(|l| u32::try_from(l).ok())
            .unwrap_or(0);
        (call_file, call_line)
    }

    /// The slot of an attribute the walk uses, for [`Facts::set`].
    pub(super) fn slot_of(name: constants::DwAt) -> Option<u8> {
        Some(match name {
            constants::DW_AT_name => 0,
            constants::DW_AT_linkage_name => 1,
            constants::DW_AT_MIPS_linkage_name => 2,
            constants::DW_AT_specification => 3,
            constants::DW_AT_abstract_origin => 4,
            constants::DW_AT_low_pc => 5,
            constants::DW_AT_high_pc => 6,
            constants::DW_AT_ranges => 7,
            constants::DW_AT_call_file => 8,
            constants::DW_AT_call_line => 9,
            constants::DW_AT_language => 10,
            _ => return None,
        })
    }

    pub(super) fn set(&mut self, slot: u8, value: AttributeValue<R<'a>>) {
        let field = match slot {
            0 => &mut self.name,
            1 => &mut self.linkage_name,
            2 => &mut self.mips_linkage_name,
            3 => &mut self.specification,
            4 => &mut self.abstract_origin,
            5 => &mut self.low_pc,
            6 => &mut self.high_pc,
            7 => &mut self.ranges,
            8 => &mut self.call_file,
            9 => &mut self.call_line,
            _ => &mut self.language,
        };
        // A repeated attribute (damaged input): the first one counts.
        if field.is_none() {
            *field = Some(value);
        }
    }

    /// Reads into `slot` the attribute `spec` at position `p` of the unit's DIEs (which
    /// start at unit offset `root` and run for `len` bytes) through gimli, for the forms
    /// `skim::Read::value` leaves; returns the position after it. Out of line: rare,
    /// and kept out of the walk's inlined loop.
    #[inline(never)]
    pub(super) fn read_by_gimli(
        &mut self,
        unit: &gimli::Unit<R<'a>>,
        (root, len): (usize, usize),
        p: usize,
        spec: AttributeSpecification,
        slot: u8,
    ) -> Result<usize, Option<gimli::Error>> {
        // At the very end, gimli's error is the one to give.
        if p >= len {
            return Err(None);
        }
        let mut e = unit.entries_raw(Some(gimli::UnitOffset(root + p)))?;
        self.set(slot, e.read_attribute_inline(spec)?.value());
        Ok(e.next_offset().0 - root)
    }

    /// Reads the attributes of the DIE whose abbreviation `specs` are. Runs of unused
    /// attributes are skipped by their sizes: parsing every attribute of every indexed
    /// DIE (a member function's declaration has ten) into a list, then searching the
    /// list, was a fifth of a large dump's time.
    pub(super) fn read(
        &mut self,
        entries: &mut gimli::EntriesRaw<'_, R<'a>>,
        specs: &[AttributeSpecification],
    ) -> gimli::Result<()> {
        *self = Facts::default();
        let mut skipped = 0;
        for (i, spec) in specs.iter().enumerate() {
            let Some(slot) = Facts::slot_of(spec.name()) else {
                continue;
            };
            if skipped < i {
                entries.skip_attributes(&specs[skipped..i])?;
            }
            skipped = i + 1;
            self.set(slot, entries.read_attribute_inline(*spec)?.value());
        }
        if skipped < specs.len() {
            entries.skip_attributes(&specs[skipped..])?;
        }
        Ok(())
    }
}

/// A string attribute as a reference into its string section, not yet read.
pub(super) fn string<'a>(
    cx: &Context<'_, 'a>,
    unit: &gimli::Unit<R<'a>>,
    value: Option<AttributeValue<R<'a>>>,
) -> Option<LazyStr<'a>> {
    match value? {
        AttributeValue::DebugStrRef(o) => Some(LazyStr::Str(o.0)),
        AttributeValue::DebugStrRefSup(o) => Some(LazyStr::SupStr(o.0)),
        AttributeValue::DebugStrOffsetsIndex(i) => cx
            .dwarf
            .string_offset(unit, i)
            .ok()
            .map(|o| LazyStr::Str(o.0)),
        value => {
            let bytes = cx.dwarf.attr_string(unit, value).ok()?.slice();
            (!bytes.is_empty()).then_some(LazyStr::Bytes(bytes))
        }
    }
}

/// A reference attribute as an offset in the name index. References into other units
/// (and dwz's alternate file) are only followed when allowed (`-r` turns them off);
/// references into type units are not followed.
pub(super) fn reference(
    cx: &Context<'_, '_>,
    start: usize,
    value: Option<AttributeValue<R<'_>>>,
) -> Option<usize> {
    match value? {
        AttributeValue::UnitRef(o) => start.checked_add(o.0),
        AttributeValue::DebugInfoRef(o) if cx.cross_unit_refs => cx.space.checked_add(o.0),
        // dwz: a DIE in the alternate file.
        AttributeValue::DebugInfoRefSup(o) if cx.cross_unit_refs => {
            super::SUP_SPACE.checked_add(o.0)
        }
        _ => None,
    }
}
