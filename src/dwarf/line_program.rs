//! A line program's rows, decoded in one tight loop over its bytes.
//!
//! gimli's `LineRows::next_row` parses each opcode into an instruction value, then
//! applies it through a reader that checks every byte: 7% of a default dump of a large
//! C++ module. This decoder handles what compilers emit (DWARF 2–5, one operation per
//! instruction, the twelve standard opcodes, `end_sequence`, `set_address`,
//! `set_discriminator`) with gimli's exact semantics, tombstone addresses included. On
//! anything else (a `define_file`, an opcode it does not know, a VLIW header, damage,
//! an address overflow) it gives up and the caller runs gimli over the whole program,
//! so rare and damaged programs give exactly gimli's rows and errors. A test holds the
//! two to the same rows on every fixture and on damaged programs.

use gimli::{LineProgramHeader, Reader, RunTimeEndian};

use super::R;

/// One row of the line table, as gimli's `LineRow` gives it: `line` is the raw line
/// register (0 for none).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Row {
    pub address: u64,
    pub line: u64,
    pub file: u64,
    pub end_sequence: bool,
}

impl From<&gimli::LineRow> for Row {
    /// The row gimli's decoder gives, as this one gives it.
    fn from(row: &gimli::LineRow) -> Row {
        Row {
            address: row.address(),
            line: row.line().map_or(0, |l| l.get()),
            file: row.file_index(),
            end_sequence: row.end_sequence(),
        }
    }
}

/// The program needs gimli: something this decoder does not handle was found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Unusual;

/// The registers rows are made of; the others (column, flags, ISA, discriminator)
/// change no row this tool writes.
struct State {
    address: u64,
    line: u64,
    file: u64,
    /// In a sequence that starts at a tombstone address (see gimli's `SetAddress`):
    /// its rows are not given.
    tombstone: bool,
}

impl State {
    const START: State = State {
        address: 0,
        line: 1,
        file: 1,
        tombstone: false,
    };
}

/// Runs the program of `header`, calling `emit` with each row gimli would return, in
/// order. On `Err`, `emit` has seen rows that gimli would also give, but not all.
pub(crate) fn run(
    header: &LineProgramHeader<R<'_>>,
    mut emit: impl FnMut(Row),
) -> Result<(), Unusual> {
    let encoding = header.line_encoding();
    if encoding.maximum_operations_per_instruction != 1 || encoding.line_range == 0 {
        return Err(Unusual);
    }
    let mask = match header.address_size() {
        4 => u64::from(u32::MAX),
        8 => u64::MAX,
        _ => return Err(Unusual),
    };
    let min_length = u64::from(encoding.minimum_instruction_length);
    let line_base = i64::from(encoding.line_base);
    let line_range = encoding.line_range;
    let opcode_base = header.opcode_base();
    let special = special_opcodes(line_base, line_range, opcode_base);
    let program = header.raw_program_buf();
    let endian = program.endian();
    let data = program.slice();

    let advance = |s: &mut State, operations: u64| -> Result<(), Unusual> {
        if !s.tombstone {
            s.address = add_sized(s.address, min_length.wrapping_mul(operations), mask)?;
        }
        Ok(())
    };
    let mut s = State::START;
    let mut pos = 0usize;
    while let Some(&opcode) = data.get(pos) {
        pos += 1;
        if opcode == 0 {
            let length = usize::try_from(uleb(data, &mut pos)?).map_err(|_| Unusual)?;
            let end = pos.checked_add(length).filter(|&e| e <= data.len());
            let body = &data[pos..end.ok_or(Unusual)?];
            pos += length;
            extended(body, &mut s, mask, endian, &mut emit)?;
        } else if opcode >= opcode_base {
            let (line_advance, operations) = special[usize::from(opcode)];
            advance_line(&mut s, line_advance);
            advance(&mut s, operations)?;
            if !s.tombstone {
                emit(row(&s));
            }
        } else {
            match opcode {
                // copy
                1 => {
                    if !s.tombstone {
                        emit(row(&s));
                    }
                }
                // advance_pc
                2 => advance(&mut s, uleb(data, &mut pos)?)?,
                // advance_line; gimli negates a decrement, which for `i64::MIN`
                // overflows (a panic in a build with overflow checks): its decoder
                // gives what it gives, and fuzzing compares this one with it.
                3 => match sleb(data, &mut pos)? {
                    i64::MIN => return Err(Unusual),
                    increment => advance_line(&mut s, increment),
                },
                // set_file
                4 => s.file = uleb(data, &mut pos)?,
                // set_column, set_isa: their operand only
                5 | 12 => {
                    uleb(data, &mut pos)?;
                }
                // negate_stmt, set_basic_block, set_prologue_end, set_epilogue_begin
                6 | 7 | 10 | 11 => {}
                // const_add_pc
                8 => advance(&mut s, u64::from((255 - opcode_base) / line_range))?,
                // fixed_advance_pc
                9 => {
                    let bytes = data.get(pos..pos + 2).ok_or(Unusual)?;
                    pos += 2;
                    let operand = match endian {
                        RunTimeEndian::Little => u16::from_le_bytes([bytes[0], bytes[1]]),
                        RunTimeEndian::Big => u16::from_be_bytes([bytes[0], bytes[1]]),
                    };
                    if !s.tombstone {
                        s.address = add_sized(s.address, u64::from(operand), mask)?;
                    }
                }
                // An opcode the header declares beyond the standard ones.
                _ => return Err(Unusual),
            }
        }
    }
    Ok(())
}

/// Each special opcode's line and address advance, divided out once: a division per
/// row was a tenth of the decoding.
fn special_opcodes(line_base: i64, line_range: u8, opcode_base: u8) -> [(i64, u64); 256] {
    let mut special = [(0i64, 0u64); 256];
    for opcode in opcode_base..=255 {
        let adjusted = opcode - opcode_base;
        special[usize::from(opcode)] = (
            line_base + i64::from(adjusted % line_range),
            u64::from(adjusted / line_range),
        );
    }
    special
}

/// An extended opcode; `body` is its bytes after the length.
fn extended(
    body: &[u8],
    s: &mut State,
    mask: u64,
    endian: RunTimeEndian,
    emit: &mut impl FnMut(Row),
) -> Result<(), Unusual> {
    match body.first() {
        None => return Err(Unusual),
        Some(1) => {
            if !s.tombstone {
                emit(Row {
                    end_sequence: true,
                    ..row(s)
                });
            }
            *s = State::START;
        }
        Some(2) => {
            let address = read_address(&body[1..], mask, endian)?;
            // gimli's `min_tombstone` is -2 at the address size.
            s.tombstone = address < s.address || address >= mask - 1;
            if !s.tombstone {
                s.address = address;
            }
        }
        // define_file: entries are added to the file table, which gimli does.
        Some(3) => return Err(Unusual),
        Some(4) => {
            uleb(body, &mut 1)?;
        }
        // Unknown extended opcodes are skipped, as gimli does.
        Some(_) => {}
    }
    Ok(())
}

fn row(s: &State) -> Row {
    Row {
        address: s.address,
        line: s.line,
        file: s.file,
        end_sequence: false,
    }
}

/// gimli's `add_sized`: an address that overflows its size is an error there.
fn add_sized(address: u64, length: u64, mask: u64) -> Result<u64, Unusual> {
    address
        .checked_add(length)
        .filter(|a| a & !mask == 0)
        .ok_or(Unusual)
}

/// gimli's line advance: a decrement stops at 0, an increment wraps. Never given
/// `i64::MIN` (see `run`).
fn advance_line(s: &mut State, increment: i64) {
    if increment < 0 {
        s.line = s.line.saturating_sub(increment.unsigned_abs());
    } else {
        s.line = s.line.wrapping_add(increment as u64);
    }
}

fn read_address(bytes: &[u8], mask: u64, endian: RunTimeEndian) -> Result<u64, Unusual> {
    let little = matches!(endian, RunTimeEndian::Little);
    if mask == u64::MAX {
        let b: [u8; 8] = bytes
            .get(..8)
            .ok_or(Unusual)?
            .try_into()
            .map_err(|_| Unusual)?;
        Ok(if little {
            u64::from_le_bytes(b)
        } else {
            u64::from_be_bytes(b)
        })
    } else {
        let b: [u8; 4] = bytes
            .get(..4)
            .ok_or(Unusual)?
            .try_into()
            .map_err(|_| Unusual)?;
        Ok(u64::from(if little {
            u32::from_le_bytes(b)
        } else {
            u32::from_be_bytes(b)
        }))
    }
}

/// An unsigned LEB128 as gimli reads it: its tenth byte may only be 0 or 1 (bit 63).
#[inline(always)]
fn uleb(data: &[u8], pos: &mut usize) -> Result<u64, Unusual> {
    let mut value = 0u64;
    for shift in (0..=63).step_by(7) {
        let byte = *data.get(*pos).ok_or(Unusual)?;
        *pos += 1;
        if shift == 63 && byte > 1 {
            return Err(Unusual);
        }
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(value);
        }
    }
    Err(Unusual)
}

/// A signed LEB128 as gimli reads it: its tenth byte may only be 0x00 or 0x7f.
#[inline(always)]
fn sleb(data: &[u8], pos: &mut usize) -> Result<i64, Unusual> {
    let mut value = 0i64;
    for shift in (0..=63).step_by(7) {
        let byte = *data.get(*pos).ok_or(Unusual)?;
        *pos += 1;
        if shift == 63 && byte != 0 && byte != 0x7f {
            return Err(Unusual);
        }
        value |= i64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            let width = shift + 7;
            if byte & 0x40 != 0 && width < 64 {
                value |= -1i64 << width;
            }
            return Ok(value);
        }
    }
    Err(Unusual)
}

/// For the fuzz target `line_program`: `data`'s first byte picks the byte order (bit 0)
/// and address size (bit 1: 4, else 8); the rest is a `.debug_line` section. Wherever
/// this decoder gives the rows of its first program, they are gimli's, and gimli
/// finds no error.
#[cfg(feature = "fuzzing")]
pub(crate) fn check_against_gimli(data: &[u8]) {
    let Some((&pick, section)) = data.split_first() else {
        return;
    };
    let endian = if pick & 1 == 0 {
        RunTimeEndian::Little
    } else {
        RunTimeEndian::Big
    };
    let address_size = if pick & 2 == 0 { 8 } else { 4 };
    let Ok(program) = gimli::DebugLine::new(section, endian).program(
        gimli::DebugLineOffset(0),
        address_size,
        None,
        None,
    ) else {
        return;
    };
    let mut fast = Vec::new();
    if run(program.header(), |r| fast.push(r)).is_err() {
        return;
    }
    let mut rows = program.rows();
    for (i, want) in fast.iter().enumerate() {
        match rows.next_row() {
            Ok(Some((_, row))) => assert_eq!(Row::from(row), *want, "row {i}"),
            other => panic!("row {i}: gimli gives {other:?}, this decoder {want:?}"),
        }
    }
    assert!(
        matches!(rows.next_row(), Ok(None)),
        "gimli has more after {} rows",
        fast.len()
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use gimli::{DebugLine, EndianSlice};
    use object::{Object as _, ObjectSection as _};

    /// A fixed sequence of pseudo-random numbers from `seed`.
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// What gimli makes of the program at `offset` of `section`: its rows, and whether it
    /// ended in an error.
    fn gimli_rows(program: gimli::IncompleteLineProgram<R<'_>>) -> (Vec<Row>, bool) {
        let mut rows = program.rows();
        let mut out = Vec::new();
        loop {
            match rows.next_row() {
                Ok(Some((_, row))) => out.push(Row::from(row)),
                Ok(None) => return (out, false),
                Err(_) => return (out, true),
            }
        }
    }

    /// The program at `offset` of `data`, a `.debug_line`, and where its opcodes start.
    fn open(
        data: &[u8],
        endian: RunTimeEndian,
        offset: gimli::DebugLineOffset,
        address_size: u8,
    ) -> gimli::Result<(gimli::IncompleteLineProgram<R<'_>>, usize)> {
        let p = DebugLine::new(data, endian).program(offset, address_size, None, None)?;
        let start = p.header().raw_program_buf().slice().as_ptr() as usize - data.as_ptr() as usize;
        Ok((p, start))
    }

    fn ours(header: &LineProgramHeader<R<'_>>) -> Result<Vec<Row>, Unusual> {
        let mut out = Vec::new();
        run(header, |r| out.push(r))?;
        Ok(out)
    }

    /// Every line program of every fixture binary (both byte orders, 32- and 64-bit,
    /// DWARF 2 to 5, GCC and clang), whole and with bytes of its program overwritten:
    /// wherever this decoder gives rows, they are gimli's, and gimli finds no error.
    #[test]
    fn rows_are_gimlis_on_every_fixture_and_on_damaged_programs() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bin");
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .expect("fixtures/bin")
            .flat_map(|arch| std::fs::read_dir(arch.expect("arch").path()).expect("dir"))
            .map(|f| f.expect("file").path())
            .collect();
        files.sort();
        let (mut whole, mut damaged, mut damaged_fast) = (0, 0, 0);
        let mut random = xorshift(0x9e37_79b9_7f4a_7c15u64);
        for path in &files {
            let bytes = std::fs::read(path).expect("read fixture");
            let Ok(file) = object::File::parse(&*bytes) else {
                continue;
            };
            let endian = if file.is_little_endian() {
                RunTimeEndian::Little
            } else {
                RunTimeEndian::Big
            };
            let load = |id: gimli::SectionId| -> Result<Vec<u8>, ()> {
                Ok(file
                    .section_by_name(id.name())
                    .and_then(|s| s.uncompressed_data().ok())
                    .map(|d| d.into_owned())
                    .unwrap_or_default())
            };
            let sections = gimli::DwarfSections::load(load).expect("sections");
            let dwarf = sections.borrow(|s| EndianSlice::new(s, endian));
            let mut programs = Vec::new();
            let mut units = dwarf.units();
            while let Ok(Some(header)) = units.next() {
                let Ok(unit) = dwarf.unit(header) else {
                    continue;
                };
                if let Some(p) = unit.line_program {
                    programs.push((p.header().offset(), header.address_size()));
                }
            }
            let line: &[u8] = gimli::Section::reader(&dwarf.debug_line).slice();
            for (offset, address_size) in programs {
                let (program, start) =
                    open(line, endian, offset, address_size).expect("a fixture's line program");
                let fast = ours(program.header())
                    .unwrap_or_else(|_| panic!("{}: program at {offset:?}", path.display()));
                assert_eq!((fast, false), gimli_rows(program), "{}", path.display());
                whole += 1;
                let end = start
                    + open(line, endian, offset, address_size)
                        .unwrap()
                        .0
                        .header()
                        .raw_program_buf()
                        .len();
                for _ in 0..24 {
                    let mut copy = line.to_vec();
                    for _ in 0..1 + random() % 3 {
                        let at = start + (random() as usize) % (end - start).max(1);
                        copy[at.min(end - 1)] = random() as u8;
                    }
                    let Ok((program, _)) = open(&copy, endian, offset, address_size) else {
                        continue;
                    };
                    damaged += 1;
                    if let Ok(fast) = ours(program.header()) {
                        damaged_fast += 1;
                        assert_eq!((fast, false), gimli_rows(program), "{}", path.display());
                    }
                }
            }
        }
        eprintln!("{whole} programs; {damaged} damaged, {damaged_fast} decoded here");
        assert!(whole >= 50, "{whole} fixture line programs");
        assert!(
            damaged_fast * 2 > damaged,
            "the damaged programs mostly fell back: {damaged_fast} of {damaged}"
        );
    }

    /// A DWARF 4 `.debug_line` holding one program of `ops` under a header with these
    /// parameters.
    fn section(
        big: bool,
        minimum_instruction_length: u8,
        (line_base, line_range): (i8, u8),
        opcode_base: u8,
        ops: &[u8],
    ) -> Vec<u8> {
        let u16b = |v: u16| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let u32b = |v: u32| {
            if big {
                v.to_be_bytes()
            } else {
                v.to_le_bytes()
            }
        };
        let mut rest = Vec::new();
        rest.extend([
            minimum_instruction_length,
            1,
            1,
            line_base as u8,
            line_range,
            opcode_base,
        ]);
        // Standard opcode lengths: the real ones, then one operand for opcodes past 12.
        let lengths = [0u8, 1, 1, 1, 1, 0, 0, 0, 1, 0, 0, 1];
        for op in 1..opcode_base {
            rest.push(lengths.get(usize::from(op) - 1).copied().unwrap_or(1));
        }
        rest.push(0); // no include directories
        rest.extend(b"a.c\0\0\0\0\0");
        let mut out = Vec::new();
        let header_length = rest.len() as u32;
        let unit_length = 2 + 4 + header_length + ops.len() as u32;
        out.extend(u32b(unit_length));
        out.extend(u16b(4));
        out.extend(u32b(header_length));
        out.extend(rest);
        out.extend(ops);
        out
    }

    fn push_uleb(out: &mut Vec<u8>, mut v: u64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    fn push_sleb(out: &mut Vec<u8>, mut v: i64) {
        loop {
            let byte = (v & 0x7f) as u8;
            v >>= 7;
            if (v == 0 && byte & 0x40 == 0) || (v == -1 && byte & 0x40 != 0) {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    /// A random program of every opcode (see the test below).
    fn random_ops(
        round: u64,
        random: &mut impl FnMut() -> u64,
        address_size: u8,
        big: bool,
        opcode_base: u8,
    ) -> Vec<u8> {
        let mut ops = Vec::new();
        let address = |r: u64| -> u64 {
            match r % 6 {
                0 => 0,
                1 => u64::MAX,
                2 => u64::from(u32::MAX) - 1,
                3 if r.is_multiple_of(8) => u64::MAX - 1 - r % 50,
                _ => 0x1000 + (r >> 8) % 0x10000,
            }
        };
        // A quarter of the programs may hold what this decoder leaves to gimli.
        let unusual = round.is_multiple_of(4);
        for _ in 0..random() % 60 {
            let r = random();
            match r % 20 {
                4 | 13 if !unusual => ops.push(1),
                0 => {
                    ops.push(0);
                    push_uleb(&mut ops, 1 + u64::from(address_size));
                    ops.push(2);
                    let a = address(r >> 5);
                    let bytes = match (address_size, big) {
                        (4, false) => (a as u32).to_le_bytes().to_vec(),
                        (4, true) => (a as u32).to_be_bytes().to_vec(),
                        (_, false) => a.to_le_bytes().to_vec(),
                        (_, true) => a.to_be_bytes().to_vec(),
                    };
                    ops.extend(bytes);
                }
                1 => ops.extend([0, 1, 1]),
                2 => {
                    let mut operand = Vec::new();
                    push_uleb(&mut operand, (r >> 8) % 300);
                    ops.extend([0, 1 + operand.len() as u8, 4]);
                    ops.extend(operand);
                }
                // Ten-byte LEB128 operands, whose last byte gimli checks.
                3 if (r >> 20).is_multiple_of(4) => {
                    ops.push([2, 3, 4][((r >> 8) % 3) as usize]);
                    // Not all zero below the tenth byte: `i64::MIN` as a line increment
                    // panics gimli's decoder in a build with overflow checks (see the test
                    // above).
                    ops.push(0x81);
                    ops.extend([0x80; 8]);
                    ops.push([0, 1, 2, 0x7f][((r >> 12) % 4) as usize]);
                }
                3 => ops.extend([0, 3, 0x80, 9, 9]),
                4 => ops.extend([0, 1, 3]),
                5 => {
                    ops.push(2);
                    push_uleb(&mut ops, if r % 64 == 5 { r >> 9 } else { (r >> 9) % 64 });
                }
                6 => {
                    ops.push(3);
                    let v = match (r >> 5) % 5 {
                        0 => -((r >> 8) as i64 % 40),
                        1 => (r >> 8) as i64 % 40,
                        2 => i64::MIN + 1,
                        3 => -((r >> 8) as i64),
                        _ => (r >> 8) as i64,
                    };
                    push_sleb(&mut ops, v);
                }
                7 => {
                    ops.push(4);
                    push_uleb(&mut ops, (r >> 8) % 4);
                }
                8 => ops.extend([5, 7]),
                9 => ops.push([6, 7, 10, 11, 1][((r >> 8) % 5) as usize]),
                10 => ops.push(8),
                11 => ops.extend([9, (r >> 8) as u8, (r >> 16) as u8]),
                12 => ops.extend([12, 1]),
                13 => ops.push(13),
                _ => ops.push(opcode_base.max(1) + ((r >> 8) as u8 % (255 - opcode_base.max(1)))),
            }
        }
        ops
    }

    /// The smallest line increment, which gimli's decoder cannot negate in a build with
    /// overflow checks, is left to it (where the fuzz target does not compare).
    #[test]
    fn the_smallest_line_increment_is_left_to_gimli() {
        let mut ops = vec![3, 5, 1, 3];
        push_sleb(&mut ops, i64::MIN);
        assert_eq!(ops.len(), 14);
        ops.extend([1, 3, 7, 1]);
        let data = section(false, 1, (-5, 14), 13, &ops);
        let (program, _) =
            open(&data, RunTimeEndian::Little, gimli::DebugLineOffset(0), 8).expect("header");
        assert_eq!(ours(program.header()), Err(Unusual));
        // One short of it is decoded here: a decrement to line 0.
        let mut ops = vec![3, 5, 1, 3];
        push_sleb(&mut ops, i64::MIN + 1);
        ops.extend([1, 3, 7, 1]);
        let data = section(false, 1, (-5, 14), 13, &ops);
        let (program, _) =
            open(&data, RunTimeEndian::Little, gimli::DebugLineOffset(0), 8).expect("header");
        let fast = ours(program.header()).expect("decoded here");
        assert_eq!(fast.iter().map(|r| r.line).collect::<Vec<_>>(), [6, 0, 7]);
        assert_eq!((fast, false), gimli_rows(program));
    }

    /// Random programs of every opcode, with addresses that go backwards, tombstones,
    /// line decrements past 0, addresses that overflow and odd opcode bases: where this
    /// decoder gives rows, they are gimli's, and it gives them for most programs.
    #[test]
    fn rows_are_gimlis_on_random_programs() {
        let mut random = xorshift(0x2545_f491_4f6c_dd1du64);
        let (mut total, mut fast_ok, mut rows_seen) = (0, 0, 0);
        for round in 0..3000u64 {
            let big = round % 2 == 1;
            let address_size = if round % 3 == 0 { 4 } else { 8 };
            let opcode_base = [13u8, 13, 13, 10, 14, 1][(round % 6) as usize];
            let minimum_instruction_length = [1u8, 4, 2][(round % 7 % 3) as usize];
            let mut ops = random_ops(round, &mut random, address_size, big, opcode_base);
            if round % 5 == 0 {
                ops.truncate(ops.len().saturating_sub((round % 3) as usize));
            }
            let lines = [(-5, 14), (-3, 12), (1, 1), (-10, 17)][(round % 11 % 4) as usize];
            let data = section(big, minimum_instruction_length, lines, opcode_base, &ops);
            let endian = if big {
                RunTimeEndian::Big
            } else {
                RunTimeEndian::Little
            };
            let Ok((program, _)) = open(&data, endian, gimli::DebugLineOffset(0), address_size)
            else {
                panic!("round {round}: a header gimli cannot read");
            };
            total += 1;
            if let Ok(fast) = ours(program.header()) {
                fast_ok += 1;
                rows_seen += fast.len();
                assert_eq!(
                    (fast, false),
                    gimli_rows(program),
                    "round {round}: {ops:02x?}"
                );
            }
        }
        eprintln!("{total} programs, {fast_ok} decoded here, {rows_seen} rows");
        assert!(
            fast_ok * 2 > total && rows_seen > 10_000,
            "{fast_ok} of {total}, {rows_seen} rows"
        );
    }
}
