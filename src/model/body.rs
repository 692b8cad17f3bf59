//! Compact storage for functions' line and inline records between extraction and
//! writing.
//!
//! Every line and `INLINE` record of a module has to be known before the first `FUNC` is
//! written (FILE and INLINE_ORIGIN ids are numbered over all of them, and FUNCs are sorted
//! by address across units), so they are held until the end. As structs they cost 24 to
//! 48 bytes a row and a heap allocation per function; encoded here as LEB128 deltas they
//! cost 4 to 6 bytes, and each unit's records sit in one buffer. Ids inside are the
//! unit's own (file slots, name slots); [`UnitBodies`] maps them to the module's.

/// A line record for one piece: `file` is a slot of its unit's file table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineRow {
    pub address: u64,
    pub size: u64,
    pub line: u32,
    pub file: u32,
}

/// An inlined call inside a piece, its ranges already clipped to its parent's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InlineSite {
    /// 0 for a call inlined straight into the function.
    pub depth: u32,
    /// The inlined function's name: a `.debug_info` offset (DWARF) or a name slot of
    /// the unit (PDB), resolved to an origin id through [`UnitBodies::origins`].
    pub origin: usize,
    pub call_file: u32,
    pub call_line: u32,
    pub ranges: Vec<(u64, u64)>,
}

/// Where one function piece's records are: a byte range of its unit's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyRef {
    pub unit: u32,
    pub start: u32,
    pub end: u32,
}

impl BodyRef {
    /// The records [`encode`] wrote at `range` of unit `unit`'s buffer. (One unit's
    /// encoded records take a few bytes per line row: far below 4 GiB.)
    pub fn new(unit: usize, range: (usize, usize)) -> BodyRef {
        BodyRef {
            unit: unit as u32,
            start: range.0 as u32,
            end: range.1 as u32,
        }
    }
}

/// One unit's encoded records and the maps from its ids to the module's.
#[derive(Debug, Clone, Default)]
pub struct UnitBodies {
    pub bytes: Vec<u8>,
    /// File slot -> module file id.
    pub files: Vec<u32>,
    /// Name slot -> module origin id (`u32::MAX` for slots that are no inline origin).
    pub origins: Vec<u32>,
}

impl UnitBodies {
    /// The module file id of a file slot; `u32::MAX` for a slot out of range (only a
    /// bug reaches it: the slots are our own).
    pub fn file(&self, slot: u32) -> u32 {
        self.files.get(slot as usize).copied().unwrap_or(u32::MAX)
    }

    /// The module origin id of a name slot; `u32::MAX` likewise.
    pub fn origin(&self, slot: usize) -> u32 {
        self.origins.get(slot).copied().unwrap_or(u32::MAX)
    }
}

/// Appends the records of a piece starting at `start` to `out`; returns their range.
/// Line rows are in address order and inline sites in pre-order, as extraction makes
/// them; `InlineSite::origin` is a name slot.
pub fn encode(
    start: u64,
    lines: &[LineRow],
    inlines: &[InlineSite],
    out: &mut Vec<u8>,
) -> (usize, usize) {
    let begin = out.len();
    put(out, lines.len() as u64);
    let mut cursor = start;
    let mut line = 0i64;
    for l in lines {
        put(out, l.address.wrapping_sub(cursor));
        put(out, l.size);
        put(out, zigzag(i64::from(l.line) - line));
        put(out, u64::from(l.file));
        cursor = l.address.wrapping_add(l.size);
        line = i64::from(l.line);
    }
    put(out, inlines.len() as u64);
    for s in inlines {
        put(out, u64::from(s.depth));
        put(out, u64::from(s.call_line));
        put(out, u64::from(s.call_file));
        put(out, s.origin as u64);
        put(out, s.ranges.len() as u64);
        for &(lo, hi) in &s.ranges {
            put(out, lo.wrapping_sub(start));
            put(out, hi.wrapping_sub(lo));
        }
    }
    (begin, out.len())
}

/// An inline record as [`visit`] hands it over.
#[derive(Debug, Clone, Copy)]
pub struct InlineRef<'a> {
    pub depth: u32,
    pub call_line: u32,
    pub call_file: u32,
    /// A name slot.
    pub origin: usize,
    /// `[start, end)` pairs.
    pub ranges: &'a [(u64, u64)],
}

/// The records [`encode`] wrote for the piece starting at `start`: line rows into
/// `lines` (cleared first), inline records to `inline`, one at a time, so that a writer
/// needs no allocation per record. Ids are left as they were encoded.
pub fn visit(
    start: u64,
    bytes: &[u8],
    lines: &mut Vec<LineRow>,
    mut inline: impl FnMut(InlineRef<'_>),
) {
    let mut r = Reader { bytes, pos: 0 };
    lines.clear();
    let n = r.count();
    // Sized once: a writer's buffers grown by doubling were a realloc per few records.
    lines.reserve(n);
    let mut cursor = start;
    let mut line = 0i64;
    for _ in 0..n {
        let address = cursor.wrapping_add(r.get());
        let size = r.get();
        line += unzigzag(r.get());
        let file = r.get() as u32;
        lines.push(LineRow {
            address,
            size,
            line: line as u32,
            file,
        });
        cursor = address.wrapping_add(size);
    }
    let n = r.count();
    let mut ranges = Vec::new();
    for _ in 0..n {
        let depth = r.get() as u32;
        let call_line = r.get() as u32;
        let call_file = r.get() as u32;
        let origin = r.get() as usize;
        let k = r.count();
        ranges.clear();
        ranges.reserve(k);
        for _ in 0..k {
            let lo = start.wrapping_add(r.get());
            ranges.push((lo, lo.wrapping_add(r.get())));
        }
        inline(InlineRef {
            depth,
            call_line,
            call_file,
            origin,
            ranges: &ranges,
        });
    }
}

/// An id the records [`encode`] wrote use, as [`ids`] hands it over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Id {
    /// A file slot (of a line row or an inline record's call).
    File(u32),
    /// A name slot (an inline record's origin).
    Origin(usize),
}

/// The ids the records [`encode`] wrote use, and nothing else: counting the ids a
/// module uses went through every address and range too, decoding them into a vector.
pub fn ids(bytes: &[u8], mut seen: impl FnMut(Id)) {
    let mut r = Reader { bytes, pos: 0 };
    for _ in 0..r.count() {
        r.skip(3);
        seen(Id::File(r.get() as u32));
    }
    for _ in 0..r.count() {
        r.skip(2);
        seen(Id::File(r.get() as u32));
        seen(Id::Origin(r.get() as usize));
        let k = r.count();
        r.skip(k.saturating_mul(2));
    }
}

/// The records [`encode`] wrote for the piece starting at `start`, as owned values.
pub fn decode(start: u64, bytes: &[u8]) -> (Vec<LineRow>, Vec<InlineSite>) {
    let mut lines = Vec::new();
    let mut inlines = Vec::new();
    visit(start, bytes, &mut lines, |s| {
        inlines.push(InlineSite {
            depth: s.depth,
            origin: s.origin,
            call_file: s.call_file,
            call_line: s.call_line,
            ranges: s.ranges.to_vec(),
        })
    });
    (lines, inlines)
}

fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    (v >> 1) as i64 ^ -((v & 1) as i64)
}

struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    /// The next value; 0 past the end (the bytes are our own, so only a bug reaches it).
    fn get(&mut self) -> u64 {
        // Most values (deltas, sizes, ids) fit in one byte.
        if let Some(&b) = self.bytes.get(self.pos)
            && b < 0x80
        {
            self.pos += 1;
            return u64::from(b);
        }
        let mut v = 0u64;
        let mut shift = 0u32;
        while let Some(&b) = self.bytes.get(self.pos) {
            self.pos += 1;
            v |= u64::from(b & 0x7f).checked_shl(shift).unwrap_or(0);
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        v
    }

    /// Steps over `n` values.
    fn skip(&mut self, n: usize) {
        let mut left = n;
        while left > 0
            && let Some(&b) = self.bytes.get(self.pos)
        {
            self.pos += 1;
            // Every byte of a value but its last has the high bit set.
            left -= usize::from(b < 0x80);
        }
    }

    /// A count, bounded by the bytes left so that a bug cannot ask for a huge allocation.
    fn count(&mut self) -> usize {
        let n = self.get();
        usize::try_from(n)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len() - self.pos.min(self.bytes.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let start = 0xffff_ffff_ffff_0000;
        let lines = vec![
            LineRow {
                address: start,
                size: 4,
                line: 10,
                file: 0,
            },
            LineRow {
                address: start + 0x10,
                size: 0x200,
                line: 3,
                file: 7,
            },
            LineRow {
                address: start + 0x210,
                size: 1,
                line: u32::MAX,
                file: 1,
            },
        ];
        let inlines = vec![
            InlineSite {
                depth: 0,
                origin: 3,
                call_file: 1,
                call_line: 42,
                ranges: vec![(start + 4, start + 8), (start + 0x20, start + 0x30)],
            },
            InlineSite {
                depth: 1,
                origin: 0,
                call_file: 0,
                call_line: 0,
                ranges: vec![(start + 5, start + 6)],
            },
        ];
        let mut buf = vec![0xAA];
        let (a, b) = encode(start, &lines, &inlines, &mut buf);
        assert_eq!(a, 1);
        // The ids, as decoding finds them: lines' files, then each inline's call file
        // and origin.
        let mut seen = Vec::new();
        ids(&buf[a..b], |id| seen.push(id));
        let mut want: Vec<Id> = lines.iter().map(|l| Id::File(l.file)).collect();
        for s in &inlines {
            want.extend([Id::File(s.call_file), Id::Origin(s.origin)]);
        }
        assert_eq!(seen, want);
        assert_eq!(decode(start, &buf[a..b]), (lines, inlines));
        assert_eq!(decode(0, &[]), (vec![], vec![]));
    }

    #[test]
    fn damaged_bytes_decode_without_panicking() {
        assert_eq!(decode(0, &[0xff, 0xff, 0xff]).0.len(), 0);
        let _ = decode(0, &[5, 1, 2, 3]);
        ids(&[0xff, 0xff, 0xff], |_| {});
        ids(&[5, 1, 2, 3, 0xff], |_| {});
    }
}
