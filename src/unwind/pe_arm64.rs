//! Windows arm64 unwind tables: `.pdata` entries with packed unwind data or `.xdata`
//! records of unwind codes, turned into STACK CFI rows.
//!
//! Hand-written: no crate decodes them. Each unwind code stands for one instruction,
//! listed in the order an unwinder undoes them; being `k` instructions into a prologue
//! means only the last `k` codes have taken effect, and being `j` instructions into an
//! epilogue means only the codes from its `j`-th on are still to be undone. So every
//! prologue instruction, the body and every epilogue instruction get the rules of the
//! codes then in force, as `RtlVirtualUnwind` reads them. Packed entries describe the
//! canonical prologue the format defines; it is expanded into the same codes.

use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use super::pe_x64::Image;

/// One `.pdata` entry: function start (RVA) and its packed data or `.xdata` RVA.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub start: u32,
    pub word: u32,
    /// Bytes up to the next function: an `.xdata` record claiming more is cut there.
    pub limit: u32,
}

impl Entry {
    fn flag(&self) -> u32 {
        self.word & 3
    }

    /// The RVA of its `.xdata` record, for unpacked entries.
    pub(crate) fn xdata(&self) -> Option<u32> {
        (self.flag() == 0).then_some(self.word)
    }

    /// The function's length in bytes, when the entry itself says (packed entries).
    fn packed_len(&self) -> Option<u32> {
        (self.flag() != 0).then_some(((self.word >> 2) & 0x7FF) * 4)
    }
}

/// The entries of an arm64 `.pdata`, in table order.
pub(crate) fn entries(pdata: &[u8]) -> Vec<Entry> {
    pdata
        .chunks_exact(8)
        .map(|c| Entry {
            start: u32::from_le_bytes([c[0], c[1], c[2], c[3]]),
            word: u32::from_le_bytes([c[4], c[5], c[6], c[7]]),
            limit: u32::MAX,
        })
        .filter(|e| e.flag() != 3)
        .collect()
}

/// A register a code saves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Reg {
    X(u8),
    D(u8),
}

/// One instruction's effect, as the unwinder undoes it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Op {
    /// `sub sp, sp, #n`.
    Alloc(u32),
    /// Registers `first..first+count` stored from `sp + 8*pos` (`pos >= 0`), or with
    /// `sp` lowered by `-8*pos` first (pre-indexed, `pos < 0`).
    Save { first: Reg, count: u8, pos: i32 },
    /// Several saves in one instruction (`stp xN, lr`).
    Multi(Vec<Op>),
    /// `mov x29, sp`.
    SetFp,
    /// `add x29, sp, #8*n`.
    AddFp(u32),
    /// The next pair save covers two more registers.
    SaveNext,
    /// No effect on the rules (`nop`, `pacibsp`, homing parameters).
    Nop,
}

/// A decoded `.xdata` record: the prologue's codes and each epilogue's, and its
/// function's length.
struct Record {
    len: u32,
    prologue: Vec<Op>,
    /// The function starts with the prologue (not a fragment starting in the body).
    in_prologue: bool,
    /// `(start offset in bytes, codes)`, by offset.
    /// Scopes that start at the same code index share their codes: a crafted record
    /// lists 65,535 of them, which decoded one by one held 1.85 GB.
    epilogues: Vec<(u32, Rc<[Op]>)>,
}

use crate::model::cfi::{Key, Row, Value};

/// Why a function's arm64 unwind information cannot be read: what was expected, and
/// the RVA or code byte where it was not found.
#[derive(Debug, thiserror::Error)]
pub(crate) enum XdataError {
    #[error("its length is zero")]
    ZeroLength,
    #[error("its .xdata at {0:#x} is outside the image")]
    Outside(u32),
    #[error(".xdata version {version} at {rva:#x}")]
    Version { version: u32, rva: u32 },
    #[error("its unwind codes at {0:#x} run past the image")]
    CodesOutside(u32),
    #[error("an unwind code runs past its record (byte {0})")]
    CodePastRecord(usize),
    #[error("unwind code {0:#04x} is not supported")]
    Unsupported(u32),
    #[error("the frame pointer is set twice")]
    FramePointerTwice,
}

/// The rows of an entry's function and its length in bytes.
pub(crate) fn rows(image: &Image, e: &Entry) -> Result<(u32, Vec<Row>), XdataError> {
    let record = match e.flag() {
        0 => xdata(image, e.word)?,
        1 => packed(e.word, true),
        _ => packed(e.word, false),
    };
    let len = e.packed_len().unwrap_or(record.len).min(e.limit);
    if len == 0 {
        return Err(XdataError::ZeroLength);
    }
    let body = render(&state(&record.prologue)?);
    let mut out: Vec<Row> = Vec::new();
    // The rules are worked out only for a row that is kept: a crafted record lists
    // 65,535 epilogue scopes of 1,019 codes at one place, and working out every row of
    // each (quadratic in its codes) took 125 s for rows that were all dropped.
    type Rules<'a> = &'a dyn Fn() -> Result<Vec<(Key, Value)>, XdataError>;
    let push = |at: u32, rules: Rules, out: &mut Vec<Row>| {
        if at >= len {
            return Ok(());
        }
        match out.last_mut() {
            // Epilogue scopes that overlap (damage) would take rows backwards.
            Some(last) if at < last.0 => {}
            Some(last) if last.0 == at => last.1 = rules()?,
            Some(last) => {
                let rules = rules()?;
                if last.1 != rules {
                    out.push((at, rules));
                }
            }
            None => out.push((at, rules()?)),
        }
        Ok::<(), XdataError>(())
    };
    let n = if record.in_prologue {
        record.prologue.len()
    } else {
        0
    };
    for k in 0..n {
        push(
            4 * k as u32,
            &|| Ok(render(&state(&record.prologue[n - k..])?)),
            &mut out,
        )?;
    }
    push(4 * n as u32, &|| Ok(body.clone()), &mut out)?;
    for (start, codes) in &record.epilogues {
        let end = start + 4 * (codes.len() as u32 + 1);
        if *start < 4 * n as u32 || out.last().is_some_and(|last| end < last.0) {
            continue;
        }
        for j in 0..=codes.len() {
            let rules = || Ok(render(&state(&codes[j..])?));
            push(start + 4 * j as u32, &rules, &mut out)?;
        }
        push(end, &|| Ok(body.clone()), &mut out)?;
    }
    // Rows past the end of the address space (a crafted start) are dropped.
    let out = out
        .into_iter()
        .filter_map(|(at, r)| Some((e.start.checked_add(at)?, r)))
        .collect();
    Ok((len, out))
}

/// Reads an `.xdata` record.
fn xdata(image: &Image, rva: u32) -> Result<Record, XdataError> {
    let word = |at: u32| -> Result<u32, XdataError> {
        image
            .read(at, 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .ok_or(XdataError::Outside(at))
    };
    let head = word(rva)?;
    let len = (head & 0x3FFFF) * 4;
    if (head >> 18) & 3 != 0 {
        return Err(XdataError::Version {
            version: (head >> 18) & 3,
            rva,
        });
    }
    let single = head >> 21 & 1 == 1;
    let (mut epilogs, mut code_words) = ((head >> 22) & 0x1F, (head >> 27) & 0x1F);
    // RVAs out of the image wrap to addresses no section holds.
    let mut at = rva.wrapping_add(4);
    if epilogs == 0 && code_words == 0 {
        let ext = word(at)?;
        epilogs = ext & 0xFFFF;
        code_words = (ext >> 16) & 0xFF;
        at = at.wrapping_add(4);
    }
    let mut scopes = Vec::new();
    if !single {
        for i in 0..epilogs {
            let s = word(at.wrapping_add(4 * i))?;
            scopes.push(((s & 0x3FFFF) * 4, (s >> 22) as usize));
        }
        at = at.wrapping_add(4 * epilogs);
    }
    let codes = image
        .read(at, code_words as usize * 4)
        .ok_or(XdataError::CodesOutside(at))?;
    let prologue = decode(codes, 0)?;
    let mut epilogues = Vec::new();
    let mut decoded: HashMap<usize, Rc<[Op]>> = HashMap::new();
    if single {
        let ops = decode(codes, epilogs as usize)?;
        let start = len.saturating_sub(4 * (ops.len() as u32 + 1));
        epilogues.push((start, Rc::from(ops)));
    } else {
        for (start, index) in scopes {
            let ops = match decoded.get(&index) {
                Some(ops) => Rc::clone(ops),
                None => {
                    let ops: Rc<[Op]> = Rc::from(decode(codes, index)?);
                    decoded.insert(index, Rc::clone(&ops));
                    ops
                }
            };
            epilogues.push((start, ops));
        }
    }
    // By offset, so that rows come out in address order.
    epilogues.sort_by_key(|e| e.0);
    Ok(Record {
        len,
        prologue,
        in_prologue: true,
        epilogues,
    })
}

/// Decodes codes from byte `index` up to `end`/`end_c`.
fn decode(codes: &[u8], index: usize) -> Result<Vec<Op>, XdataError> {
    let mut ops = Vec::new();
    let mut i = index;
    let byte = |i: usize| -> Result<u32, XdataError> {
        codes
            .get(i)
            .map(|&b| u32::from(b))
            .ok_or(XdataError::CodePastRecord(i))
    };
    loop {
        let b = byte(i)?;
        let two = || -> Result<u32, XdataError> { Ok(b << 8 | byte(i + 1)?) };
        let (op, used) = match b {
            0x00..=0x1F => (Op::Alloc((b & 0x1F) * 16), 1),
            0x20..=0x3F => (save(Reg::X(19), 2, -((b & 0x1F) as i32)), 1),
            0x40..=0x7F => (save(Reg::X(29), 2, (b & 0x3F) as i32), 1),
            0x80..=0xBF => (save(Reg::X(29), 2, -((b & 0x3F) as i32) - 1), 1),
            0xC0..=0xC7 => (Op::Alloc((two()? & 0x7FF) * 16), 2),
            0xC8..=0xCB => {
                let v = two()?;
                (
                    save(Reg::X(19 + ((v >> 6) & 0xF) as u8), 2, (v & 0x3F) as i32),
                    2,
                )
            }
            0xCC..=0xCF => {
                let v = two()?;
                let reg = Reg::X(19 + ((v >> 6) & 0xF) as u8);
                (save(reg, 2, -((v & 0x3F) as i32) - 1), 2)
            }
            0xD0..=0xD3 => {
                let v = two()?;
                (
                    save(Reg::X(19 + ((v >> 6) & 0xF) as u8), 1, (v & 0x3F) as i32),
                    2,
                )
            }
            0xD4 | 0xD5 => {
                let v = two()?;
                let reg = Reg::X(19 + ((v >> 5) & 0xF) as u8);
                (save(reg, 1, -((v & 0x1F) as i32) - 1), 2)
            }
            0xD6 | 0xD7 => {
                let v = two()?;
                let pos = (v & 0x3F) as i32;
                let reg = Reg::X(19 + 2 * ((v >> 6) & 0x7) as u8);
                (
                    Op::Multi(vec![save(reg, 1, pos), save(Reg::X(30), 1, pos + 1)]),
                    2,
                )
            }
            0xD8 | 0xD9 => {
                let v = two()?;
                (
                    save(Reg::D(8 + ((v >> 6) & 0x7) as u8), 2, (v & 0x3F) as i32),
                    2,
                )
            }
            0xDA | 0xDB => {
                let v = two()?;
                let reg = Reg::D(8 + ((v >> 6) & 0x7) as u8);
                (save(reg, 2, -((v & 0x3F) as i32) - 1), 2)
            }
            0xDC | 0xDD => {
                let v = two()?;
                (
                    save(Reg::D(8 + ((v >> 6) & 0x7) as u8), 1, (v & 0x3F) as i32),
                    2,
                )
            }
            0xDE => {
                let v = two()?;
                let reg = Reg::D(8 + ((v >> 5) & 0x7) as u8);
                (save(reg, 1, -((v & 0x1F) as i32) - 1), 2)
            }
            0xE0 => {
                let size = byte(i + 1)? << 16 | byte(i + 2)? << 8 | byte(i + 3)?;
                (Op::Alloc(size.saturating_mul(16)), 4)
            }
            0xE1 => (Op::SetFp, 1),
            0xE2 => (Op::AddFp(byte(i + 1)?), 2),
            0xE3 | 0xFC => (Op::Nop, 1),
            0xE4 | 0xE5 => return Ok(ops),
            0xE6 => (Op::SaveNext, 1),
            _ => return Err(XdataError::Unsupported(b)),
        };
        ops.push(op);
        i += used;
    }
}

fn save(first: Reg, count: u8, pos: i32) -> Op {
    Op::Save { first, count, pos }
}

/// The codes of a packed entry's canonical prologue, in unwinding order (the order of
/// the format's definition, read backwards). `with_prologue`: false for fragments
/// (flag 2), which start in the body.
fn packed(word: u32, with_prologue: bool) -> Record {
    let len = ((word >> 2) & 0x7FF) * 4;
    let reg_f = (word >> 13) & 7;
    let reg_i = (word >> 16) & 0xF;
    let homed = (word >> 20) & 1 == 1;
    let cr = (word >> 21) & 3;
    let frame = ((word >> 23) & 0x1FF) * 16;
    let int_size = reg_i * 8 + if cr == 1 { 8 } else { 0 };
    let fp_size = if reg_f > 0 { reg_f * 8 + 8 } else { 0 };
    let save_size = (int_size + fp_size + if homed { 64 } else { 0 } + 15) & !15;
    let local = frame.saturating_sub(save_size);
    let (int_regs, fp_regs) = ((int_size / 8) as i32, (fp_size / 8) as i32);
    let saved = (save_size / 8) as i32;
    let mut ops = Vec::new();
    let allocs = |ops: &mut Vec<Op>| {
        if local > 0 {
            ops.push(Op::Alloc((local - 1) % 4088 + 1));
            if local > 4088 {
                ops.push(Op::Alloc(4088));
            }
        }
    };
    match cr {
        2 | 3 => {
            ops.push(Op::SetFp);
            if local <= 512 {
                ops.push(save(Reg::X(29), 2, -((local / 8) as i32)));
            } else {
                ops.push(save(Reg::X(29), 2, 0));
                allocs(&mut ops);
            }
        }
        _ => allocs(&mut ops),
    }
    if homed {
        ops.extend(std::iter::repeat_n(Op::Nop, 4));
    }
    if fp_size > 0 {
        if reg_f.is_multiple_of(2) {
            ops.push(save(Reg::D(8 + reg_f as u8), 1, int_regs + fp_regs - 1));
        }
        for i in (0..reg_f.div_ceil(2) as i32).rev() {
            if i == 0 && int_size == 0 {
                ops.push(save(Reg::D(8), 2, -saved));
            } else {
                ops.push(save(Reg::D(8 + 2 * i as u8), 2, int_regs + 2 * i));
            }
        }
    }
    if reg_i % 2 == 1 {
        let pos = if reg_i > 1 { reg_i as i32 - 1 } else { -saved };
        let reg = save(Reg::X(18 + reg_i as u8), 1, pos);
        if cr == 1 {
            ops.push(Op::Multi(vec![save(Reg::X(30), 1, int_regs - 1), reg]));
        } else {
            ops.push(reg);
        }
    } else if cr == 1 {
        let pos = if reg_i > 0 { int_regs - 1 } else { -saved };
        ops.push(save(Reg::X(30), 1, pos));
    }
    for i in (0..(reg_i / 2) as i32).rev() {
        if i > 0 {
            ops.push(save(Reg::X(19 + 2 * i as u8), 2, 2 * i));
        } else {
            ops.push(save(Reg::X(19), 2, -saved));
        }
    }
    if cr == 2 {
        // pacibsp, the prologue's first instruction.
        ops.push(Op::Nop);
    }
    // Fragments (flag 2) start in the body: no prologue or epilogue of their own.
    let epilogues = if with_prologue {
        vec![(
            len.saturating_sub(4 * (ops.len() as u32 + 1)),
            Rc::from(ops.clone()),
        )]
    } else {
        Vec::new()
    };
    Record {
        len,
        prologue: ops,
        in_prologue: with_prologue,
        epilogues,
    }
}

/// Where the unwinder's `sp` is measured from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Base {
    Sp,
    Fp,
}

/// The caller's frame as codes describe it: the CFA is `base + cfa`; a saved register
/// is at its base plus its offset. Registers saved after `x29` was set (undone before
/// the unwinder moves to `x29`) stay addressed from `sp`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    base: Base,
    cfa: i64,
    saved: BTreeMap<Reg, (Base, i64)>,
}

/// Undoes `ops` (in unwinding order) symbolically.
fn state(ops: &[Op]) -> Result<State, XdataError> {
    let mut s = State {
        base: Base::Sp,
        cfa: 0,
        saved: BTreeMap::new(),
    };
    let mut next = 2u8;
    for op in ops {
        if *op == Op::SaveNext {
            next = next.saturating_add(2);
            continue;
        }
        undo(&mut s, op, next)?;
        next = 2;
    }
    Ok(s)
}

fn undo(s: &mut State, op: &Op, next: u8) -> Result<(), XdataError> {
    match op {
        Op::Alloc(n) => s.cfa += i64::from(*n),
        Op::Save { first, count, pos } => {
            // A pair save after `save_next` codes covers their registers too.
            let count = if *count == 2 { next } else { *count };
            let at = s.cfa + 8 * i64::from((*pos).max(0));
            for i in 0..count {
                let reg = match *first {
                    Reg::X(n) => Reg::X(n.saturating_add(i)),
                    Reg::D(n) => Reg::D(n.saturating_add(i)),
                };
                // The restore furthest back in the prologue is the caller's value.
                s.saved.insert(reg, (s.base, at + 8 * i64::from(i)));
            }
            if *pos < 0 {
                s.cfa += 8 * i64::from(-pos);
            }
        }
        Op::Multi(parts) => {
            for p in parts {
                undo(s, p, 2)?;
            }
        }
        // The unwinder takes `sp` from x29 (less 8*n for add_fp).
        Op::SetFp | Op::AddFp(_) => {
            if s.base == Base::Fp {
                return Err(XdataError::FramePointerTwice);
            }
            s.base = Base::Fp;
            s.cfa = match op {
                Op::AddFp(n) => -8 * i64::from(*n),
                _ => 0,
            };
        }
        Op::SaveNext | Op::Nop => {}
    }
    Ok(())
}

const X: [&str; 31] = [
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
    "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "x29", "x30",
];
const V: [&str; 32] = [
    "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
    "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",
    "v28", "v29", "v30", "v31",
];

fn render(s: &State) -> Vec<(Key, Value)> {
    let name = |b: Base| match b {
        Base::Sp => "sp",
        Base::Fp => "x29",
    };
    let at = |(base, loc): (Base, i64)| {
        if base == s.base {
            Value::BelowCfa(s.cfa - loc)
        } else {
            Value::At(name(base), loc)
        }
    };
    let mut rules = vec![(Key::Cfa, Value::Plus(name(s.base), s.cfa))];
    let ra = match s.saved.get(&Reg::X(30)) {
        Some(&loc) => at(loc),
        None => Value::Reg("x30"),
    };
    rules.push((Key::Ra, ra));
    for (&reg, &loc) in &s.saved {
        // DWARF numbering: x0-x30 are 0-30, v0-v31 are 64-95.
        let key = match reg {
            Reg::X(30) => continue,
            Reg::X(n) => X.get(usize::from(n)).map(|r| Key::Reg(u16::from(n), r)),
            Reg::D(n) => V
                .get(usize::from(n))
                .map(|r| Key::Reg(64 + u16::from(n), r)),
        };
        // Codes name at most x28+2 and d15+1; anything past the tables is not written.
        if let Some(key) = key {
            rules.push((key, at(loc)));
        }
    }
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(rules: &[(Key, Value)], name: &str) -> Option<String> {
        crate::breakpad::cfi::to_strings(rules)
            .into_iter()
            .find(|r| r.0 == name)
            .map(|r| r.1)
    }

    /// An `.xdata` record at RVA 0x2000 for a function of `len` bytes with one
    /// epilogue scope, and its `.pdata` entry.
    fn record(len_insns: u32, codes: &[u8], epilogue: Option<(u32, u32)>) -> (Image, Entry) {
        let words = codes.len().div_ceil(4) as u32;
        let scopes = u32::from(epilogue.is_some());
        let mut bytes = (len_insns | scopes << 22 | words << 27)
            .to_le_bytes()
            .to_vec();
        if let Some((offset, index)) = epilogue {
            bytes.extend_from_slice(&(offset | index << 22).to_le_bytes());
        }
        bytes.extend_from_slice(codes);
        bytes.resize(bytes.len().next_multiple_of(4), 0xE3);
        (
            Image {
                sections: vec![(0x2000, bytes)],
                base: 0,
            },
            Entry {
                start: 0x1000,
                word: 0x2000,
                limit: u32::MAX,
            },
        )
    }

    #[test]
    fn pairs_save_next_floats_and_frame() {
        // Prologue, first instruction last:
        //   stp x19, x20, [sp, #-96]!   save_r19r20_x 96  (0x2C)
        //   stp x21, x22, [sp, #16]     save_next         (0xE6)
        //   stp d8, d9, [sp, #32]       save_fregp d8 @32 (0xD8 0x04)
        //   str d10, [sp, #48]          save_freg d10 @48 (0xDC 0x86)
        //   stp x29, x30, [sp, #64]     save_fplr @64     (0x48)
        //   add x29, sp, #64            add_fp 8          (0xE2 0x08)
        //   sub sp, sp, #0x10000        alloc_l 4096      (0xE0 0x00 0x10 0x00)
        let codes = [
            0xE0, 0x00, 0x10, 0x00, 0xE2, 0x08, 0x48, 0xDC, 0x86, 0xD8, 0x04, 0xE6, 0x2C, 0xE4,
        ];
        let (image, entry) = record(64, &codes, None);
        let (len, rows) = rows(&image, &entry).unwrap();
        assert_eq!(len, 256);
        let at = |a: u32| &rows.iter().rev().find(|r| r.0 <= a).unwrap().1;
        // After the first instruction.
        assert_eq!(rule(at(0x1004), ".cfa").as_deref(), Some("sp 96 +"));
        assert_eq!(rule(at(0x1004), "x19").as_deref(), Some(".cfa 96 - ^"));
        assert_eq!(rule(at(0x1004), "x21").as_deref(), None);
        // After save_next: x21, x22 at sp+16, sp+24.
        assert_eq!(rule(at(0x1008), "x22").as_deref(), Some(".cfa 72 - ^"));
        assert_eq!(rule(at(0x100c), "v9").as_deref(), Some(".cfa 56 - ^"));
        assert_eq!(rule(at(0x1010), "v10").as_deref(), Some(".cfa 48 - ^"));
        assert_eq!(rule(at(0x1014), ".ra").as_deref(), Some(".cfa 24 - ^"));
        // x29 = sp + 64 = CFA - 32.
        assert_eq!(rule(at(0x1018), ".cfa").as_deref(), Some("x29 32 +"));
        // The body: the large allocation moves sp, not the CFA.
        let body = at(0x1020);
        assert_eq!(rule(body, ".cfa").as_deref(), Some("x29 32 +"));
        assert_eq!(rule(body, "x20").as_deref(), Some(".cfa 88 - ^"));
        assert_eq!(rule(body, "x29").as_deref(), Some(".cfa 32 - ^"));
        // Under x29 the large allocation changes no rule: no row for it.
        assert_eq!(rows.iter().filter(|r| r.0 >= 0x101c).count(), 0);
    }

    #[test]
    fn single_epilogue_packed_in_the_header() {
        //   sub sp, sp, #16      alloc_s 1            (0x01)
        //   stp x19, lr, [sp]    save_lrpair x19 @0   (0xD6 0x00)
        let codes = [0xD6, 0x00, 0x01, 0xE4];
        let words = 1u32;
        // E = 1, Epilog Count field = code index 0 (the epilogue mirrors the prologue).
        let head = 16u32 | 1 << 21 | words << 27;
        let mut bytes = head.to_le_bytes().to_vec();
        bytes.extend_from_slice(&codes);
        let image = Image {
            sections: vec![(0x2000, bytes)],
            base: 0,
        };
        let entry = Entry {
            start: 0x1000,
            word: 0x2000,
            limit: u32::MAX,
        };
        let (len, rows) = rows(&image, &entry).unwrap();
        assert_eq!(len, 64);
        let at = |a: u32| &rows.iter().rev().find(|r| r.0 <= a).unwrap().1;
        assert_eq!(rule(at(0x1008), ".cfa").as_deref(), Some("sp 16 +"));
        assert_eq!(rule(at(0x1008), ".ra").as_deref(), Some(".cfa 8 - ^"));
        // The epilogue is the last three instructions: ldp, add, ret.
        assert_eq!(rule(at(0x1034), ".ra").as_deref(), Some(".cfa 8 - ^"));
        assert_eq!(rule(at(0x1038), ".ra").as_deref(), Some("x30"));
        assert_eq!(rule(at(0x1038), ".cfa").as_deref(), Some("sp 16 +"));
        assert_eq!(rule(at(0x103c), ".cfa").as_deref(), Some("sp"));
    }

    #[test]
    fn packed_with_frame_chain_and_floats() {
        // Flag 1, 100 instructions, RegF 1 (d8, d9), RegI 3 (x19-x21), CR 3, frame 96.
        let word = 1 | 100 << 2 | 1 << 13 | 3 << 16 | 3 << 21 | 6 << 23;
        let image = Image::default();
        let (len, rows) = rows(
            &image,
            &Entry {
                start: 0,
                word,
                limit: u32::MAX,
            },
        )
        .unwrap();
        assert_eq!(len, 400);
        let body = &rows.iter().rev().find(|r| r.0 <= 200).unwrap().1;
        // Saves: x19-x21 and d8-d9 in 48 bytes (rounded); locals 48 with x29/lr at
        // their bottom; x29 = sp.
        assert_eq!(rule(body, ".cfa").as_deref(), Some("x29 96 +"));
        assert_eq!(rule(body, "x19").as_deref(), Some(".cfa 48 - ^"));
        assert_eq!(rule(body, "x21").as_deref(), Some(".cfa 32 - ^"));
        assert_eq!(rule(body, "v8").as_deref(), Some(".cfa 24 - ^"));
        assert_eq!(rule(body, "v9").as_deref(), Some(".cfa 16 - ^"));
        assert_eq!(rule(body, "x29").as_deref(), Some(".cfa 96 - ^"));
        assert_eq!(rule(body, ".ra").as_deref(), Some(".cfa 88 - ^"));
        // Prologue: 5 instructions; the first leaves sp 48 below the CFA.
        assert_eq!(rule(&rows[1].1, ".cfa").as_deref(), Some("sp 48 +"));
        // Fragments start in the body.
        let (_, rows) = rows_of(word & !3 | 2);
        assert_eq!(rows.len(), 1);
        assert_eq!(rule(&rows[0].1, ".cfa").as_deref(), Some("x29 96 +"));
    }

    fn rows_of(word: u32) -> (u32, Vec<Row>) {
        rows(
            &Image::default(),
            &Entry {
                start: 0,
                word,
                limit: u32::MAX,
            },
        )
        .unwrap()
    }

    #[test]
    fn overlapping_epilogues_keep_rows_in_order() {
        // Two scopes at the same place and one starting inside the first: alloc_s 2
        // (sub sp, #32) and end, an epilogue at instruction 4 and another at 5.
        let codes = [0x02, 0xE4];
        let mut bytes = (16u32 | 3 << 22 | 1 << 27).to_le_bytes().to_vec();
        for offset in [4u32, 4, 5] {
            bytes.extend_from_slice(&offset.to_le_bytes());
        }
        bytes.extend_from_slice(&codes);
        bytes.extend_from_slice(&[0xE3, 0xE3]);
        let image = Image {
            sections: vec![(0x2000, bytes)],
            base: 0,
        };
        let (_, rows) = rows(
            &image,
            &Entry {
                start: 0x1000,
                word: 0x2000,
                limit: u32::MAX,
            },
        )
        .unwrap();
        assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "{rows:?}");
    }

    #[test]
    fn bad_records_are_errors() {
        let (image, entry) = record(8, &[0xEF, 0xE4], None);
        assert!(rows(&image, &entry).is_err());
        let (image, entry) = record(8, &[0xE1, 0xE1, 0xE4], None);
        assert!(rows(&image, &entry).is_err());
        // Codes running past the record.
        let (image, entry) = record(8, &[0xC8], None);
        let mut image = image;
        image.sections[0].1.truncate(5);
        assert!(rows(&image, &entry).is_err());
        assert!(
            rows(
                &Image::default(),
                &Entry {
                    start: 0,
                    word: 0x4000,
                    limit: u32::MAX
                }
            )
            .is_err()
        );
    }
}
