//! The DIE walk's fast path: stepping over the DIEs it does not read (variables,
//! parameters, types without members, call sites: most of a unit) by a plan made once
//! per abbreviation.
//!
//! Hand-written because gimli steps over a DIE attribute by attribute, deciding each
//! form's size every time (`EntriesRaw::skip_attributes`), and looks the abbreviation
//! up again for every DIE; that was a third of a large dump's CPU. Here each
//! abbreviation's attributes become a short list of moves (consecutive fixed-size forms
//! merged into one), as LLVM's DWARF reader does with its fixed-size fast path.
//! Anything the plan cannot step over with certainty (the end of the unit, an
//! indirect form, a code the abbreviations lack) is left to gimli, whose reading of
//! that DIE gives the same result and the same errors as before.

use std::num::NonZeroU8;

use gimli::{AttributeSpecification, Endianity, RunTimeEndian, UnitHeader, constants};

use super::R;

/// How to step over one attribute, or a run of fixed-size ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Move {
    Bytes(u32),
    Leb,
    Block1,
    Block2,
    Block4,
    BlockLeb,
    CStr,
}

/// One step through the attributes of a DIE the walk reads: over attributes it does
/// not use, or reading one it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Over(Move),
    Read(Read),
}

/// An attribute the walk reads: which slot its value goes to (see [`Plans::new`]), and
/// how to decode it, chosen with the plan from its name and form. Deciding that per
/// attribute read (a match on the form, then on name and form) was most of the cost of
/// reading one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Read {
    pub spec: AttributeSpecification,
    pub slot: u8,
    decode: Decode,
    /// The value's size in bytes, for the decodings other than `Gimli`.
    size: u8,
}

/// The value gimli gives an attribute (`Attribute::value`), for the pairs of attribute
/// and form that nearly every DIE the walk reads has: a fixed-size number, made into a
/// string, unit or range-list reference, address, line, file index or language.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decode {
    StrRef,
    UnitRef,
    Addr,
    Udata,
    FileIndex,
    RangesRef,
    Language,
    /// Any other pair: gimli reads it.
    Gimli,
}

/// What the walk does with the DIEs of an abbreviation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Want {
    /// Steps over them.
    Skip,
    /// Reads them.
    Read,
    /// Steps over them, but notes where they are, to read them later if need be.
    Note,
}

/// What the walk needs of an abbreviation, decided once.
///
/// Kept small: a unit's table of plans is read once per DIE, and at 88 bytes a plan (a
/// few hundred plans a unit) it did not stay in the first-level cache, which made
/// that lookup the walk's costliest stall.
#[derive(Debug)]
pub(super) struct Plan {
    pub want: Want,
    pub has_children: bool,
    pub tag: constants::DwTag,
    /// Where its `DW_AT_sibling` reference is, where the walk reads none of its
    /// children: they are then stepped over all at once, after the DIE itself (read or
    /// not).
    sibling: Option<SiblingAt>,
    /// The same, for a DIE the walk reads whose children it may then decide to step
    /// over (see [`Plan::sibling_of_read`]).
    read_sibling: Option<SiblingAt>,
    /// How to go through its attributes: stepping over all of them (a DIE the walk
    /// does not read), or over the unused ones and reading the others (one it reads);
    /// `None` when gimli must (an indirect form, an unknown one).
    steps: Option<Box<[Step]>>,
    /// The size of its attributes when they are all of fixed-size forms and the walk
    /// steps over them: most of the DIEs it steps over (members, types, parameters).
    fixed: Option<u32>,
}

/// Where a DIE's `DW_AT_sibling` reference is: bytes from the start of its attributes,
/// and its size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct SiblingAt {
    offset: u32,
    size: NonZeroU8,
}

/// Codes below this are planned in a table, grown to the largest code a unit uses;
/// real abbreviation tables number their codes from 1 up, rarely past a thousand.
/// Larger codes are kept in a map: a table sized by them would let one crafted
/// abbreviation, shared by many small units, cost each unit a large table.
const TABLE_CODES: u64 = 1 << 12;

/// The plans of one unit's abbreviations, made as the walk meets them.
pub(super) struct Plans<'u, 'a> {
    abbreviations: &'u gimli::Abbreviations,
    header: &'u UnitHeader<R<'a>>,
    table: Vec<Option<Plan>>,
    wanted: &'u dyn Fn(&gimli::Abbreviation) -> Want,
    slot: fn(constants::DwAt) -> Option<u8>,
    childless: &'u dyn Fn(&gimli::Abbreviation) -> bool,
    /// For codes beyond the table.
    large: std::collections::HashMap<u64, Plan>,
    /// Where a plan's steps are gathered before being boxed at their final length (a
    /// vector of one step per attribute, shrunk when boxed, was reallocated by nearly
    /// every plan).
    scratch: Vec<Step>,
}

impl<'u, 'a> Plans<'u, 'a> {
    /// Plans for the DIEs of `unit`: those `wanted` says to read are read, the attributes
    /// that `slot` gives a slot to read into; the children of those `childless` accepts
    /// are not read at all.
    pub(super) fn new(
        unit: &'u gimli::Unit<R<'a>>,
        wanted: &'u dyn Fn(&gimli::Abbreviation) -> Want,
        slot: fn(constants::DwAt) -> Option<u8>,
        childless: &'u dyn Fn(&gimli::Abbreviation) -> bool,
    ) -> Self {
        Plans {
            abbreviations: &unit.abbreviations,
            header: &unit.header,
            table: Vec::new(),
            wanted,
            slot,
            childless,
            large: std::collections::HashMap::new(),
            scratch: Vec::new(),
        }
    }

    /// The plan of abbreviation `code`; `None` when the unit has no such abbreviation.
    /// Inlined into the walk, which asks once per DIE; making a plan is not.
    #[inline(always)]
    pub(super) fn get(&mut self, code: u64) -> Option<&Plan> {
        let i = code as usize;
        if matches!(self.table.get(i), Some(Some(_))) {
            return self.table[i].as_ref();
        }
        self.make(code)
    }

    #[inline(never)]
    fn make(&mut self, code: u64) -> Option<&Plan> {
        let (abbreviations, header, wanted, slot, childless) = (
            self.abbreviations,
            self.header,
            self.wanted,
            self.slot,
            self.childless,
        );
        let scratch = &mut self.scratch;
        let mut make = || {
            let abbrev = abbreviations.get(code)?;
            let mut made = plan(abbrev, header, wanted, slot, scratch);
            if made.has_children && childless(abbrev) {
                made.sibling = sibling_at(abbrev.attributes(), header);
            } else if made.has_children && made.want == Want::Read {
                made.read_sibling = sibling_at(abbrev.attributes(), header);
            }
            Some(made)
        };
        if code >= TABLE_CODES {
            return match self.large.entry(code) {
                std::collections::hash_map::Entry::Occupied(e) => Some(e.into_mut()),
                std::collections::hash_map::Entry::Vacant(e) => Some(e.insert(make()?)),
            };
        }
        let made = make()?;
        let i = code as usize;
        if i >= self.table.len() {
            self.table.resize_with(i + 1, || None);
        }
        Some(self.table[i].insert(made))
    }
}

fn plan(
    abbrev: &gimli::Abbreviation,
    header: &UnitHeader<R<'_>>,
    wanted: &dyn Fn(&gimli::Abbreviation) -> Want,
    slot: fn(constants::DwAt) -> Option<u8>,
    scratch: &mut Vec<Step>,
) -> Plan {
    let want = wanted(abbrev);
    let slot = |name| if want == Want::Read { slot(name) } else { None };
    let steps = boxed_steps(scratch, abbrev.attributes(), header, slot);
    let fixed = fixed_size(steps.as_deref());
    Plan {
        want,
        has_children: abbrev.has_children(),
        tag: abbrev.tag(),
        sibling: None,
        read_sibling: None,
        steps,
        fixed,
    }
}

/// The size of the attributes that `steps` step over, when it is the same for every DIE.
fn fixed_size(steps: Option<&[Step]>) -> Option<u32> {
    match steps? {
        [Step::Over(Move::Bytes(n))] => Some(*n),
        _ => None,
    }
}

/// Where a `DW_AT_sibling` of a fixed-size reference form is, when only fixed-size
/// attributes come before it (GCC writes it last, `DW_FORM_ref4`, after fixed-size
/// ones).
fn sibling_at(specs: &[AttributeSpecification], header: &UnitHeader<R<'_>>) -> Option<SiblingAt> {
    let mut at = 0usize;
    for spec in specs {
        if spec.name() == constants::DW_AT_sibling {
            let size = match spec.form() {
                constants::DW_FORM_ref1 => 1,
                constants::DW_FORM_ref2 => 2,
                constants::DW_FORM_ref4 => 4,
                constants::DW_FORM_ref8 => 8,
                _ => return None,
            };
            return Some(SiblingAt {
                offset: u32::try_from(at).ok()?,
                size: NonZeroU8::new(size)?,
            });
        }
        at += spec.size(header)?;
    }
    None
}

/// The reference a [`Plan`]'s sibling says is in the attributes that start at `pos`.
fn read_reference(data: &[u8], pos: usize, at: SiblingAt, endian: RunTimeEndian) -> Option<u64> {
    let start = pos.checked_add(usize::try_from(at.offset).ok()?)?;
    let bytes = data.get(start..start.checked_add(usize::from(at.size.get()))?)?;
    Some(match bytes.len() {
        1 => u64::from(bytes[0]),
        2 => u64::from(endian.read_u16(bytes)),
        4 => u64::from(endian.read_u32(bytes)),
        _ => endian.read_u64(bytes),
    })
}

/// The steps through attributes `specs`, gathered in `out` (a scratch vector kept
/// between plans) and boxed at their length.
fn boxed_steps(
    out: &mut Vec<Step>,
    specs: &[AttributeSpecification],
    header: &UnitHeader<R<'_>>,
    slot: impl Fn(constants::DwAt) -> Option<u8>,
) -> Option<Box<[Step]>> {
    out.clear();
    for spec in specs {
        if let Some(i) = slot(spec.name()) {
            out.push(Step::Read(Read::new(*spec, i, header.encoding())));
            continue;
        }
        let m = match spec.form() {
            constants::DW_FORM_block1 => Move::Block1,
            constants::DW_FORM_block2 => Move::Block2,
            constants::DW_FORM_block4 => Move::Block4,
            constants::DW_FORM_block | constants::DW_FORM_exprloc => Move::BlockLeb,
            constants::DW_FORM_string => Move::CStr,
            constants::DW_FORM_udata
            | constants::DW_FORM_sdata
            | constants::DW_FORM_ref_udata
            | constants::DW_FORM_strx
            | constants::DW_FORM_GNU_str_index
            | constants::DW_FORM_addrx
            | constants::DW_FORM_GNU_addr_index
            | constants::DW_FORM_loclistx
            | constants::DW_FORM_rnglistx => Move::Leb,
            // Fixed-size forms, by gimli's table; `None` for the others (and for
            // `DW_FORM_indirect`, whose form is in the data).
            _ => Move::Bytes(u32::try_from(spec.size(header)?).ok()?),
        };
        match (out.last_mut(), m) {
            (Some(Step::Over(Move::Bytes(n))), Move::Bytes(k)) => *n += k,
            _ => out.push(Step::Over(m)),
        }
    }
    Some(Box::from(&out[..]))
}

/// Reads an unsigned LEB128 at `data[*pos..]`; `None` at the end of the data or past 64
/// bits.
#[inline(always)]
pub(super) fn uleb(data: &[u8], pos: &mut usize) -> Option<u64> {
    // One byte: nearly every abbreviation code and attribute value the walk reads.
    if let Some(&byte) = data.get(*pos)
        && byte < 0x80
    {
        *pos += 1;
        return Some(u64::from(byte));
    }
    uleb_long(data, pos)
}

#[inline(never)]
fn uleb_long(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut value = 0u64;
    let mut shift = 0u32;
    loop {
        let byte = *data.get(*pos)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return None;
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

impl Move {
    /// The position after the attribute(s) at `pos`; `None` past the data's end.
    #[inline(always)]
    fn over(self, data: &[u8], mut pos: usize, endian: RunTimeEndian) -> Option<usize> {
        let len = match self {
            Move::Bytes(n) => n as usize,
            Move::Leb => {
                let rest = data.get(pos..)?;
                return Some(pos + rest.iter().position(|b| b & 0x80 == 0)? + 1);
            }
            Move::Block1 => {
                let n = *data.get(pos)?;
                pos += 1;
                usize::from(n)
            }
            Move::Block2 => {
                let n = endian.read_u16(data.get(pos..pos + 2)?);
                pos += 2;
                usize::from(n)
            }
            Move::Block4 => {
                let n = endian.read_u32(data.get(pos..pos + 4)?);
                pos += 4;
                usize::try_from(n).ok()?
            }
            Move::BlockLeb => usize::try_from(uleb(data, &mut pos)?).ok()?,
            Move::CStr => {
                let rest = data.get(pos..)?;
                return Some(pos + rest.iter().position(|&b| b == 0)? + 1);
            }
        };
        pos.checked_add(len).filter(|&end| end <= data.len())
    }
}

impl Plan {
    /// The position after the attributes that start at `pos`, reading those the plan
    /// reads with `read(position, attribute)`, which returns the position after
    /// it. `Ok(None)` when the plan cannot tell where an attribute ends (gimli then
    /// reads the DIE, from its start). Inlined into the walk, once per DIE.
    #[inline(always)]
    pub(super) fn go<E>(
        &self,
        data: &[u8],
        mut pos: usize,
        endian: RunTimeEndian,
        mut read: impl FnMut(usize, &Read) -> Result<usize, E>,
    ) -> Result<Option<usize>, E> {
        let Some(steps) = self.steps.as_deref() else {
            return Ok(None);
        };
        for step in steps {
            pos = match *step {
                Step::Over(m) => match m.over(data, pos, endian) {
                    Some(p) => p,
                    None => return Ok(None),
                },
                Step::Read(ref r) => read(pos, r)?,
            };
        }
        Ok(Some(pos))
    }

    /// Where the next sibling of a DIE whose attributes start at `pos` is, as a unit
    /// offset, when the plan steps over its children.
    pub(super) fn sibling(&self, data: &[u8], pos: usize, endian: RunTimeEndian) -> Option<u64> {
        read_reference(data, pos, self.sibling?, endian)
    }

    /// Where the next sibling of a DIE the walk read, whose attributes start at `pos`,
    /// is, as a unit offset, for a walk that then finds nothing to read in its children.
    pub(super) fn sibling_of_read(
        &self,
        data: &[u8],
        pos: usize,
        endian: RunTimeEndian,
    ) -> Option<u64> {
        read_reference(data, pos, self.read_sibling?, endian)
    }

    /// [`Plan::go`] for a DIE the walk does not read.
    #[inline(always)]
    pub(super) fn skip(&self, data: &[u8], pos: usize, endian: RunTimeEndian) -> Option<usize> {
        if let Some(n) = self.fixed {
            return pos.checked_add(n as usize).filter(|&end| end <= data.len());
        }
        self.go(data, pos, endian, |p, _| Ok::<_, ()>(p))
            .ok()
            .flatten()
    }
}

impl Read {
    fn new(spec: AttributeSpecification, slot: u8, encoding: gimli::Encoding) -> Read {
        let (decode, size) = decoding(spec, encoding);
        Read {
            spec,
            slot,
            decode,
            size,
        }
    }

    /// The value gimli would give (`Attribute::value`, after `read_attribute_inline`)
    /// of the attribute at `data[pos..]`, and the position after it; `None` where its
    /// decoding is `Gimli` (or at the end of the data), and gimli then reads it.
    /// Reading every attribute through gimli took a reader per attribute and a general
    /// conversion, most of the walk's time on the DIEs it reads.
    /// `tests::quick_values_are_gimlis` holds every pair to gimli's answer.
    #[inline(always)]
    pub(super) fn value<'a>(
        &self,
        data: &'a [u8],
        pos: usize,
        endian: RunTimeEndian,
    ) -> Option<(gimli::AttributeValue<R<'a>>, usize)> {
        use gimli::AttributeValue as V;
        if self.decode == Decode::Gimli {
            return None;
        }
        let end = pos.checked_add(usize::from(self.size))?;
        let bytes = data.get(pos..end)?;
        let n = match bytes.len() {
            1 => u64::from(bytes[0]),
            2 => u64::from(endian.read_u16(bytes)),
            4 => u64::from(endian.read_u32(bytes)),
            _ => endian.read_u64(bytes),
        };
        let offset = || usize::try_from(n).ok();
        let value = match self.decode {
            Decode::StrRef => V::DebugStrRef(gimli::DebugStrOffset(offset()?)),
            Decode::UnitRef => V::UnitRef(gimli::UnitOffset(offset()?)),
            Decode::Addr => V::Addr(n),
            Decode::Udata => V::Udata(n),
            Decode::FileIndex => V::FileIndex(n),
            Decode::RangesRef => V::RangeListsRef(gimli::RawRangeListsOffset(offset()?)),
            Decode::Language => V::Language(constants::DwLang(u16::try_from(n).ok()?)),
            Decode::Gimli => return None,
        };
        Some((value, end))
    }
}

/// How [`Read::value`] decodes attribute `spec`, and the size of its value.
#[allow(non_upper_case_globals)] // gimli's constants, as DWARF spells them
fn decoding(spec: AttributeSpecification, encoding: gimli::Encoding) -> (Decode, u8) {
    use constants::*;
    let size = match spec.form() {
        DW_FORM_data1 => 1,
        DW_FORM_data2 => 2,
        DW_FORM_data4 | DW_FORM_ref4 => 4,
        DW_FORM_data8 => 8,
        DW_FORM_strp | DW_FORM_sec_offset => encoding.format.word_size(),
        DW_FORM_addr => encoding.address_size,
        _ => return (Decode::Gimli, 0),
    };
    if !matches!(size, 1 | 2 | 4 | 8) {
        return (Decode::Gimli, 0);
    }
    let decode = match (spec.name(), spec.form()) {
        (DW_AT_name | DW_AT_linkage_name | DW_AT_MIPS_linkage_name, DW_FORM_strp) => Decode::StrRef,
        (DW_AT_specification | DW_AT_abstract_origin, DW_FORM_ref4) => Decode::UnitRef,
        (DW_AT_low_pc | DW_AT_high_pc, DW_FORM_addr) => Decode::Addr,
        (
            DW_AT_high_pc | DW_AT_call_line,
            DW_FORM_data1 | DW_FORM_data2 | DW_FORM_data4 | DW_FORM_data8,
        ) => Decode::Udata,
        (DW_AT_call_file, DW_FORM_data1 | DW_FORM_data2 | DW_FORM_data4 | DW_FORM_data8) => {
            Decode::FileIndex
        }
        (DW_AT_ranges, DW_FORM_sec_offset) => Decode::RangesRef,
        (DW_AT_language, DW_FORM_data1 | DW_FORM_data2) => Decode::Language,
        _ => Decode::Gimli,
    };
    (decode, size)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`boxed_steps`] as a vector.
    fn steps(
        specs: &[AttributeSpecification],
        header: &UnitHeader<R<'_>>,
        slot: impl Fn(constants::DwAt) -> Option<u8>,
    ) -> Option<Vec<Step>> {
        boxed_steps(&mut Vec::new(), specs, header, slot).map(Vec::from)
    }

    fn header(version: u16) -> UnitHeader<R<'static>> {
        let encoding = gimli::Encoding {
            format: gimli::Format::Dwarf32,
            version,
            address_size: 8,
        };
        UnitHeader::new(
            encoding,
            0,
            gimli::UnitType::Compilation,
            gimli::DebugAbbrevOffset(0),
            gimli::SectionId::DebugInfo,
            gimli::UnitSectionOffset(0),
            gimli::EndianSlice::new(&[], RunTimeEndian::Little),
        )
    }

    fn spec(form: constants::DwForm) -> AttributeSpecification {
        AttributeSpecification::new(constants::DW_AT_name, form, None)
    }

    #[test]
    fn fixed_runs_merge_and_variable_forms_are_stepped_over() {
        let specs = [
            spec(constants::DW_FORM_strp),
            spec(constants::DW_FORM_data1),
            spec(constants::DW_FORM_exprloc),
            spec(constants::DW_FORM_string),
            spec(constants::DW_FORM_flag_present),
            spec(constants::DW_FORM_sdata),
            spec(constants::DW_FORM_addr),
        ];
        let m = steps(&specs, &header(5), |_| None).unwrap();
        assert_eq!(
            m,
            [
                Move::Bytes(5),
                Move::BlockLeb,
                Move::CStr,
                Move::Bytes(0),
                Move::Leb,
                Move::Bytes(8)
            ]
            .map(Step::Over)
        );
        let plan = Plan {
            want: Want::Skip,
            has_children: false,
            tag: constants::DW_TAG_variable,
            sibling: None,
            read_sibling: None,
            steps: Some(m.into()),
            fixed: None,
        };
        let mut die = vec![1, 2, 3, 4, 5]; // strp, data1
        die.extend([2, 0x91, 0x7f]); // exprloc of 2 bytes
        die.extend(b"ab\0"); // string
        die.extend([0x80, 0x01]); // sdata
        die.extend([0; 8]); // addr
        let end = die.len();
        die.push(0xaa); // the next DIE
        assert_eq!(plan.skip(&die, 0, RunTimeEndian::Little), Some(end));
        // Cut anywhere before its end, the DIE is left to gimli.
        for cut in 0..end {
            assert_eq!(
                plan.skip(&die[..cut], 0, RunTimeEndian::Little),
                None,
                "{cut}"
            );
        }
    }

    #[test]
    fn fixed_sizes_step_as_far_as_the_moves() {
        let fixed = [
            spec(constants::DW_FORM_strp),
            spec(constants::DW_FORM_data2),
        ];
        let varying = [
            spec(constants::DW_FORM_strp),
            spec(constants::DW_FORM_udata),
        ];
        let none = |_| None;
        let slot = |_| Some(0);
        for (specs, read, size) in [
            (&fixed[..], false, Some(6)),
            (&fixed[..0], false, None),
            (&varying[..], false, None),
            (&fixed[..], true, None),
        ] {
            let steps = if read {
                steps(specs, &header(4), slot)
            } else {
                steps(specs, &header(4), none)
            };
            assert_eq!(fixed_size(steps.as_deref()), size, "{specs:?} {read}");
            let by_moves = Plan {
                want: Want::Skip,
                has_children: false,
                tag: constants::DW_TAG_member,
                sibling: None,
                read_sibling: None,
                steps: steps.clone().map(Into::into),
                fixed: None,
            };
            let fast = Plan {
                want: Want::Skip,
                has_children: false,
                tag: constants::DW_TAG_member,
                sibling: None,
                read_sibling: None,
                steps: steps.map(Into::into),
                fixed: size,
            };
            // The whole DIE, cut anywhere, or at an offset past the data's end.
            let die = [1, 2, 3, 4, 5, 0x80, 0x01, 9];
            for cut in 0..=die.len() {
                for at in [0, 1, cut, cut + 1] {
                    let end = RunTimeEndian::Little;
                    assert_eq!(
                        fast.skip(&die[..cut], at, end),
                        by_moves.skip(&die[..cut], at, end),
                        "{specs:?} cut {cut} at {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn read_attributes_are_handed_over_where_they_start() {
        let specs = [
            AttributeSpecification::new(constants::DW_AT_decl_line, constants::DW_FORM_data2, None),
            AttributeSpecification::new(constants::DW_AT_name, constants::DW_FORM_string, None),
            AttributeSpecification::new(constants::DW_AT_external, constants::DW_FORM_flag, None),
        ];
        let slot = |name| (name == constants::DW_AT_name).then_some(7);
        let s = steps(&specs, &header(4), slot).unwrap();
        assert_eq!(
            s,
            [
                Step::Over(Move::Bytes(2)),
                Step::Read(Read::new(specs[1], 7, header(4).encoding())),
                Step::Over(Move::Bytes(1))
            ]
        );
        let plan = Plan {
            want: Want::Read,
            has_children: true,
            tag: constants::DW_TAG_subprogram,
            sibling: None,
            read_sibling: None,
            steps: Some(s.into()),
            fixed: None,
        };
        let die = [0, 9, b'f', b'\0', 1];
        let mut seen = Vec::new();
        let end = plan.go(&die, 0, RunTimeEndian::Little, |pos, read| {
            seen.push((pos, read.spec.name(), read.slot));
            Ok::<_, ()>(pos + 2)
        });
        assert_eq!(end, Ok(Some(5)));
        assert_eq!(seen, [(2, constants::DW_AT_name, 7)]);
    }

    #[test]
    fn forms_gimli_must_read_have_no_plan() {
        let none = |_| None;
        assert!(steps(&[spec(constants::DW_FORM_indirect)], &header(4), none).is_none());
        assert!(steps(&[spec(constants::DwForm(0x7777))], &header(4), none).is_none());
        // DW_FORM_ref_addr is an address in DWARF 2, an offset after.
        let ref_addr = [spec(constants::DW_FORM_ref_addr)];
        let bytes = |n| Some(vec![Step::Over(Move::Bytes(n))]);
        assert_eq!(steps(&ref_addr, &header(2), none), bytes(8));
        assert_eq!(steps(&ref_addr, &header(3), none), bytes(4));
    }

    #[test]
    fn plans_stay_small() {
        // See `Plan`: the table of a unit's plans is read once per DIE.
        assert!(
            size_of::<Option<Plan>>() <= 48,
            "{}",
            size_of::<Option<Plan>>()
        );
    }

    #[test]
    fn uleb_reads_and_refuses_overflow() {
        let mut pos = 0;
        assert_eq!(uleb(&[0xe5, 0x8e, 0x26], &mut pos), Some(624_485));
        assert_eq!(pos, 3);
        let mut pos = 0;
        assert_eq!(uleb(&[0xff; 11], &mut pos), None);
        let mut pos = 0;
        assert_eq!(uleb(&[0x80], &mut pos), None);
    }

    #[test]
    #[allow(non_upper_case_globals)]
    fn quick_values_are_gimlis() {
        use constants::*;
        let names = [
            DW_AT_name,
            DW_AT_linkage_name,
            DW_AT_MIPS_linkage_name,
            DW_AT_specification,
            DW_AT_abstract_origin,
            DW_AT_low_pc,
            DW_AT_high_pc,
            DW_AT_ranges,
            DW_AT_call_file,
            DW_AT_call_line,
            DW_AT_language,
            DW_AT_decl_line,
        ];
        let forms = [
            DW_FORM_data1,
            DW_FORM_data2,
            DW_FORM_data4,
            DW_FORM_data8,
            DW_FORM_ref4,
            DW_FORM_strp,
            DW_FORM_sec_offset,
            DW_FORM_addr,
            DW_FORM_udata,
            DW_FORM_string,
        ];
        let mut quick = 0;
        for format in [gimli::Format::Dwarf32, gimli::Format::Dwarf64] {
            for address_size in [4, 8] {
                for endian in [RunTimeEndian::Little, RunTimeEndian::Big] {
                    let encoding = gimli::Encoding {
                        format,
                        version: 4,
                        address_size,
                    };
                    for name in names {
                        for form in forms {
                            let spec = AttributeSpecification::new(name, form, None);
                            for data in [
                                vec![0x81, 0x82, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0],
                                vec![0xff; 9],
                                vec![0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0],
                                vec![0x00, 0x12, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0],
                            ] {
                                for len in [1, 2, 4, 8, 9] {
                                    let data = &data[..len];
                                    let read = Read::new(spec, 0, encoding);
                                    let Some((value, end)) = read.value(data, 0, endian) else {
                                        continue;
                                    };
                                    quick += 1;
                                    // A unit length past the data, as a real
                                    // header's is: gimli subtracts the data from it.
                                    let header = UnitHeader::new(
                                        encoding,
                                        data.len() + 32,
                                        gimli::UnitType::Compilation,
                                        gimli::DebugAbbrevOffset(0),
                                        gimli::SectionId::DebugInfo,
                                        gimli::UnitSectionOffset(0),
                                        gimli::EndianSlice::new(data, endian),
                                    );
                                    let abbrevs = gimli::Abbreviations::default();
                                    let mut e = header.entries_raw(&abbrevs, None).unwrap();
                                    let start = e.next_offset().0;
                                    let attr = e.read_attribute_inline(spec);
                                    let attr = attr.expect("gimli reads it too");
                                    assert_eq!(value, attr.value(), "{name} {form} {data:?}");
                                    assert_eq!(end, e.next_offset().0 - start, "{name} {form}");
                                }
                            }
                        }
                    }
                }
            }
        }
        assert!(quick > 500, "{quick}");
    }
}
