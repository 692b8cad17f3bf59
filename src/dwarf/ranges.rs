//! A DIE's code ranges: `DW_AT_low_pc`/`DW_AT_high_pc`, or `DW_AT_ranges` (DWARF 5 range
//! lists read by a reader of our own where it can, gimli's otherwise), restricted to the
//! image's code and bounded per unit.

use gimli::{AttributeValue, Section as _, constants};

use super::drafts::{Drafts, Span};
use super::facts::Facts;
use super::skim;
use super::{Context, R};

/// The code ranges of a DIE (`DW_AT_low_pc`/`DW_AT_high_pc` or `DW_AT_ranges`), sorted and
/// merged, restricted to the image's code: empty ranges, tombstones and ranges starting
/// outside the code are dropped, and an end past the code is cut back.
pub(super) fn die_ranges(
    cx: &Context<'_, '_>,
    unit: &gimli::Unit<R<'_>>,
    facts: &Facts<'_>,
    drafts: &mut Drafts,
) -> gimli::Result<Span> {
    let begin = drafts.ranges.len();
    let (out, limit, cut) = (
        &mut drafts.ranges,
        drafts.ranges_limit,
        &mut drafts.ranges_cut,
    );
    let keep = |out: &mut Vec<(u64, u64)>, cut: &mut bool, lo: u64, hi: u64| {
        if lo >= hi || unit.header.is_tombstone_address(lo) || *cut {
            return;
        }
        if out.len() >= limit {
            *cut = true;
            return;
        }
        if lo == 0 && cx.layout.code_spans.is_empty() {
            return;
        }
        if let Some(span_end) = cx.layout.code_span_end(lo) {
            out.push((lo, hi.min(span_end)));
        }
    };
    if let Some(v) = facts.ranges {
        let cut_before = *cut;
        let read = match v {
            AttributeValue::RangeListsRef(at) if unit.header.version() >= 5 => {
                let rnglists = cx.dwarf.ranges.debug_rnglists().reader().slice();
                let address_size = unit.header.address_size();
                let endian = cx.endian;
                let give = |lo, hi| keep(out, cut, lo, hi);
                rle_ranges(rnglists, at.0, unit.low_pc, address_size, endian, give)
            }
            _ => false,
        };
        if !read {
            // What the entries before the one it could not read gave is taken back.
            out.truncate(begin);
            *cut = cut_before;
            if let Some(iter) = cx.dwarf.attr_ranges(unit, v)? {
                for r in iter {
                    let r = r?;
                    keep(out, cut, r.begin, r.end);
                }
            }
        }
    } else if let Some(low) = facts.low_pc
        && let Some(low) = cx.dwarf.attr_address(unit, low)?
    {
        let high = match facts.high_pc {
            Some(AttributeValue::Udata(n)) => low.checked_add(n),
            Some(v) => cx.dwarf.attr_address(unit, v)?,
            None => None,
        };
        if let Some(high) = high {
            keep(out, cut, low, high);
        }
    }
    if *cut {
        // The DIE that reached the bound gets no ranges rather than some of them.
        out.truncate(begin);
    }
    let mine = &mut out[begin..];
    if mine.len() > 1 {
        // Sorted and merged so that the pieces of a function come out in address order.
        mine.sort_unstable();
        let mut merged = 0;
        for i in 1..mine.len() {
            let (lo, hi) = mine[i];
            if lo <= mine[merged].1 {
                mine[merged].1 = mine[merged].1.max(hi);
            } else {
                merged += 1;
                mine[merged] = (lo, hi);
            }
        }
        out.truncate(begin + merged + 1);
    }
    // A unit's ranges fit in u32 indexes: it would need 64 GiB of them to overflow, and
    // the unit itself is far smaller than that.
    Ok((begin as u32, out.len() as u32))
}

/// Gives `give` the ranges of the DWARF 5 range list at `offset` in `.debug_rnglists`
/// (`data`), as gimli's iterator gives them: the base address (`base`, the unit's
/// `DW_AT_low_pc`, until an entry sets another) added to offset pairs and every address
/// cut to `address_size`, and entries that are empty, reversed or start at a tombstone
/// (or follow a tombstone base) skipped. `false` at an entry this cannot read (one that
/// indexes `.debug_addr`, an unknown or cut one, an address size other than 4 or 8),
/// having given the entries before it: gimli then reads the list, and reports what is
/// wrong with it. Hand-written because gimli's iterator decodes each entry into a
/// general form and converts it, which was most of the time spent on ranges with
/// `--inlines`, where every inlined call has a list. `rle_ranges_are_gimlis` holds it to
/// gimli's iterator.
pub(super) fn rle_ranges(
    data: &[u8],
    offset: usize,
    mut base: u64,
    address_size: u8,
    endian: gimli::RunTimeEndian,
    mut give: impl FnMut(u64, u64),
) -> bool {
    use gimli::Endianity as _;
    let mask = match address_size {
        4 => u64::from(u32::MAX),
        8 => u64::MAX,
        _ => return false,
    };
    // gimli's smallest tombstone: -2 at the address size.
    let tombstone = mask - 1;
    let Some(data) = data.get(offset..) else {
        return false;
    };
    let size = usize::from(address_size);
    let address = |pos: &mut usize| -> Option<u64> {
        let bytes = data.get(*pos..*pos + size)?;
        *pos += size;
        Some(match size {
            4 => u64::from(endian.read_u32(bytes)),
            _ => endian.read_u64(bytes),
        })
    };
    let mut pos = 0;
    // The data's end ends the list, as in gimli.
    while let Some(&kind) = data.get(pos) {
        pos += 1;
        let (begin, end) = match constants::DwRle(kind) {
            constants::DW_RLE_end_of_list => return true,
            constants::DW_RLE_offset_pair => {
                let (Some(b), Some(e)) = (skim::uleb(data, &mut pos), skim::uleb(data, &mut pos))
                else {
                    return false;
                };
                if base >= tombstone {
                    continue;
                }
                (base.wrapping_add(b) & mask, base.wrapping_add(e) & mask)
            }
            constants::DW_RLE_base_address => {
                let Some(b) = address(&mut pos) else {
                    return false;
                };
                base = b;
                continue;
            }
            constants::DW_RLE_start_end => {
                let (Some(b), Some(e)) = (address(&mut pos), address(&mut pos)) else {
                    return false;
                };
                (b, e)
            }
            constants::DW_RLE_start_length => {
                let (Some(b), Some(n)) = (address(&mut pos), skim::uleb(data, &mut pos)) else {
                    return false;
                };
                (b, b.wrapping_add(n) & mask)
            }
            _ => return false,
        };
        if begin < tombstone && begin < end {
            give(begin, end);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A range list of random entries: every kind (the ones `rle_ranges` leaves to gimli
    /// too), tombstones, wrapping sums, and sometimes a cut or an unknown kind.
    fn random_list(
        next: &mut impl FnMut() -> u64,
        size: u8,
        endian: gimli::RunTimeEndian,
    ) -> Vec<u8> {
        let mask = if size == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };
        let value = |next: &mut dyn FnMut() -> u64| match next() % 6 {
            0 => mask,
            1 => mask - 1,
            2 => 0,
            3 => next() % 0x100,
            4 => next() & mask,
            _ => 0x1000 + next() % 0x10_0000,
        };
        let mut out = Vec::new();
        let uleb = |out: &mut Vec<u8>, mut v: u64| loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                break;
            }
            out.push(byte | 0x80);
        };
        let address = |out: &mut Vec<u8>, v: u64| match (size, endian) {
            (4, gimli::RunTimeEndian::Little) => out.extend((v as u32).to_le_bytes()),
            (4, _) => out.extend((v as u32).to_be_bytes()),
            (_, gimli::RunTimeEndian::Little) => out.extend(v.to_le_bytes()),
            _ => out.extend(v.to_be_bytes()),
        };
        for _ in 0..next() % 8 {
            let kind = match next() % 20 {
                0 => 1,
                1 => 2,
                2 => 3,
                3 => next() as u8,
                k => 4 + (k % 4) as u8,
            };
            out.push(kind);
            match kind {
                1 => uleb(&mut out, next() % 4),
                2 => (0..2).for_each(|_| uleb(&mut out, next() % 4)),
                3 => {
                    uleb(&mut out, next() % 4);
                    uleb(&mut out, value(next));
                }
                4 => (0..2).for_each(|_| uleb(&mut out, value(next))),
                5 => address(&mut out, value(next)),
                6 => (0..2).for_each(|_| address(&mut out, value(next))),
                7 => {
                    address(&mut out, value(next));
                    uleb(&mut out, value(next));
                }
                _ => {}
            }
        }
        if !next().is_multiple_of(3) {
            out.push(0);
        }
        if next().is_multiple_of(5) {
            let cut = (next() as usize) % (out.len() + 1);
            out.truncate(cut);
        }
        out
    }

    #[test]
    fn rle_ranges_are_gimlis() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let (mut read, mut left) = (0, 0);
        for round in 0..20_000 {
            let size = if round % 2 == 0 { 8 } else { 4 };
            let endian = if round % 3 == 0 {
                gimli::RunTimeEndian::Big
            } else {
                gimli::RunTimeEndian::Little
            };
            let mask = if size == 4 {
                u64::from(u32::MAX)
            } else {
                u64::MAX
            };
            let lead = (next() % 3) as usize;
            let mut data = vec![0xee; lead];
            data.extend(random_list(&mut next, size, endian));
            let base = match next() % 4 {
                0 => mask - 1,
                1 => 0,
                _ => 0x40_0000 + next() % 0x1000,
            };
            let mut ours = Vec::new();
            if !rle_ranges(&data, lead, base, size, endian, |b, e| ours.push((b, e))) {
                left += 1;
                continue;
            }
            read += 1;
            let encoding = gimli::Encoding {
                format: gimli::Format::Dwarf32,
                version: 5,
                address_size: size,
            };
            let lists = gimli::RangeLists::new(
                gimli::DebugRanges::new(&[], endian),
                gimli::DebugRngLists::new(&data, endian),
            );
            let addr = gimli::DebugAddr::from(gimli::EndianSlice::new(&[], endian));
            let offset = gimli::RangeListsOffset(lead);
            let iter = lists.ranges(offset, encoding, base, &addr, gimli::DebugAddrBase(0));
            let theirs: Vec<(u64, u64)> = iter
                .unwrap()
                .map(|r| r.map(|r| (r.begin, r.end)))
                .collect::<gimli::Result<_>>()
                .unwrap_or_else(|e| panic!("gimli: {e} where we read {data:02x?}"));
            assert_eq!(ours, theirs, "{data:02x?} base {base:#x} size {size}");
        }
        // Both kinds of lists were met often.
        assert!(
            read > 5_000 && left > 2_000,
            "{read} read, {left} left to gimli"
        );
    }
}
