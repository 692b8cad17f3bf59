//! Windows x64 unwind tables: `.pdata` (`RUNTIME_FUNCTION`) entries and the
//! `UNWIND_INFO` they point to, turned into STACK CFI rows.
//!
//! Hand-written: `object` reads the directory but no crate decodes the unwind codes
//! into rules. The codes describe the prologue only (Windows finds epilogues by reading
//! the code), so the rows hold from each prologue instruction to the end of the
//! function: exact in the prologue and the body, like Windows' own unwinder there.
//!
//! The rules are the ones `RtlVirtualUnwind` applies: pushes and allocations move the
//! CFA away from `rsp`; `UWOP_SET_FPREG` moves it onto the frame register;
//! `UWOP_SAVE_NONVOL`/`UWOP_SAVE_XMM128` offsets are from the establisher frame (`rsp`
//! after the fixed allocation, or the frame register less its offset); a machine frame
//! puts the return address 40 bytes and the old `rsp` 16 bytes below the CFA. A chained
//! entry starts from its primary entry's complete prologue.

use std::collections::BTreeMap;

/// `UNWIND_INFO` flags.
const UNW_FLAG_CHAININFO: u8 = 4;
/// Chains longer than this are refused: real ones have one or two links, and a crafted
/// table could loop.
const MAX_CHAIN: usize = 32;

/// Register names by x64 unwind register number (`rax`..`r15`), as Breakpad's and
/// rust-minidump's amd64 walkers spell them.
const GPR: [&str; 16] = [
    "$rax", "$rcx", "$rdx", "$rbx", "$rsp", "$rbp", "$rsi", "$rdi", "$r8", "$r9", "$r10", "$r11",
    "$r12", "$r13", "$r14", "$r15",
];
const XMM: [&str; 16] = [
    "$xmm0", "$xmm1", "$xmm2", "$xmm3", "$xmm4", "$xmm5", "$xmm6", "$xmm7", "$xmm8", "$xmm9",
    "$xmm10", "$xmm11", "$xmm12", "$xmm13", "$xmm14", "$xmm15",
];

/// The bytes of the image's sections at their RVAs, for reading `UNWIND_INFO`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Image {
    /// `(rva, bytes)`, sorted by RVA.
    pub sections: Vec<(u32, Vec<u8>)>,
    /// The image base: what RVAs are relative to.
    pub base: u64,
}

impl Image {
    pub(crate) fn read(&self, rva: u32, len: usize) -> Option<&[u8]> {
        let i = self.sections.partition_point(|(a, _)| *a <= rva);
        let (start, bytes) = self.sections.get(i.checked_sub(1)?)?;
        let at = usize::try_from(rva - start).ok()?;
        bytes.get(at..at.checked_add(len)?)
    }

    fn u32_at(&self, rva: u32) -> Option<u32> {
        Some(u32::from_le_bytes(self.read(rva, 4)?.try_into().ok()?))
    }
}

/// One `.pdata` entry: a function (or a fragment of one) and its unwind information.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Entry {
    pub start: u32,
    pub end: u32,
    /// RVA of its `UNWIND_INFO`, or with bit 0 set of another `RUNTIME_FUNCTION` whose
    /// information it shares.
    pub unwind: u32,
}

/// The entries of a `.pdata` table, in table order.
pub(crate) fn entries(pdata: &[u8]) -> Vec<Entry> {
    pdata
        .chunks_exact(12)
        .map(|c| {
            let word = |i: usize| u32::from_le_bytes([c[i], c[i + 1], c[i + 2], c[i + 3]]);
            Entry {
                start: word(0),
                end: word(4),
                unwind: word(8),
            }
        })
        .filter(|e| e.start < e.end)
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Push(u8),
    Alloc(u32),
    SetFp,
    Save(u8, u32),
    SaveXmm(u8, u32),
    /// With an error code pushed.
    MachFrame(bool),
    /// Codes with no effect on the rules (version 2 epilogue markers, the old 64-bit
    /// XMM saves, which no walker restores).
    Skip,
}

/// A decoded `UNWIND_INFO`.
#[derive(Debug)]
struct Info {
    /// `(prologue offset, op)`, in listing order: last prologue instruction first.
    ops: Vec<(u8, Op)>,
    frame_reg: u8,
    /// Scaled by 16 already.
    frame_offset: u32,
    /// The primary entry's `UNWIND_INFO` RVA, for chained information.
    chained: Option<u32>,
}

/// Why a function's x64 unwind information cannot be read: what was expected, and the
/// RVA or unwind-code slot where it was not found.
#[derive(Debug, thiserror::Error)]
pub(crate) enum UnwindInfoError {
    #[error("its UNWIND_INFO at {0:#x} is outside the image")]
    InfoOutside(u32),
    #[error("UNWIND_INFO version {version} at {rva:#x}")]
    Version { version: u8, rva: u32 },
    #[error("its unwind codes at {0:#x} run past the image")]
    CodesOutside(u32),
    #[error("unwind code {op} needs {need} slots, {left} left")]
    ShortCode { op: u8, need: usize, left: usize },
    #[error("UWOP_ALLOC_LARGE with info {0}")]
    AllocLarge(u8),
    #[error("unknown unwind code {op} (info {info})")]
    UnknownCode { op: u8, info: u8 },
    #[error("its chained RUNTIME_FUNCTION at {0:#x} is outside the image")]
    ChainedOutside(u32),
    #[error("its RUNTIME_FUNCTION references loop")]
    IndirectLoop,
    #[error("its indirect RUNTIME_FUNCTION at {0:#x} is outside the image")]
    IndirectOutside(u32),
    #[error("its chained unwind information loops")]
    ChainLoop,
    #[error("its unwind codes are not in prologue order (offset {0:#x})")]
    Order(u32),
}

#[allow(
    clippy::too_many_lines,
    reason = "the x64 unwind-code decoder: one `match` over the codes"
)]
fn decode(image: &Image, rva: u32) -> Result<Info, UnwindInfoError> {
    let head = image
        .read(rva, 4)
        .ok_or(UnwindInfoError::InfoOutside(rva))?;
    let (version, flags) = (head[0] & 7, head[0] >> 3);
    if !(1..=2).contains(&version) {
        return Err(UnwindInfoError::Version { version, rva });
    }
    let count = usize::from(head[2]);
    let frame_reg = head[3] & 0xF;
    let frame_offset = u32::from(head[3] >> 4) * 16;
    let codes = image
        .read(rva.wrapping_add(4), count * 2)
        .ok_or(UnwindInfoError::CodesOutside(rva.wrapping_add(4)))?;
    let slot = |i: usize| -> Option<u16> {
        Some(u16::from_le_bytes([
            *codes.get(i * 2)?,
            *codes.get(i * 2 + 1)?,
        ]))
    };
    let mut ops = Vec::with_capacity(count);
    let mut i = 0;
    while i < count {
        let offset = codes[i * 2];
        let (op, info) = (codes[i * 2 + 1] & 0xF, codes[i * 2 + 1] >> 4);
        let need = |n: usize| -> Result<(), UnwindInfoError> {
            if i + n > count {
                Err(UnwindInfoError::ShortCode {
                    op,
                    need: n,
                    left: count - i,
                })
            } else {
                Ok(())
            }
        };
        let (decoded, used) = match op {
            0 => (Op::Push(info), 1),
            1 if info == 0 => {
                need(2)?;
                (Op::Alloc(u32::from(slot(i + 1).unwrap_or(0)) * 8), 2)
            }
            1 if info == 1 => {
                need(3)?;
                let lo = u32::from(slot(i + 1).unwrap_or(0));
                let hi = u32::from(slot(i + 2).unwrap_or(0));
                (Op::Alloc(lo | hi << 16), 3)
            }
            1 => return Err(UnwindInfoError::AllocLarge(info)),
            2 => (Op::Alloc(u32::from(info) * 8 + 8), 1),
            3 => (Op::SetFp, 1),
            4 => {
                need(2)?;
                (Op::Save(info, u32::from(slot(i + 1).unwrap_or(0)) * 8), 2)
            }
            5 => {
                need(3)?;
                let lo = u32::from(slot(i + 1).unwrap_or(0));
                let hi = u32::from(slot(i + 2).unwrap_or(0));
                (Op::Save(info, lo | hi << 16), 3)
            }
            // Version 2's UWOP_EPILOG; version 1's UWOP_SAVE_XMM (64-bit half).
            6 => {
                need(2)?;
                (Op::Skip, 2)
            }
            // UWOP_SAVE_XMM_FAR (version 1), spare otherwise.
            7 => {
                need(3)?;
                (Op::Skip, 3)
            }
            8 => {
                need(2)?;
                (
                    Op::SaveXmm(info, u32::from(slot(i + 1).unwrap_or(0)) * 16),
                    2,
                )
            }
            9 => {
                need(3)?;
                let lo = u32::from(slot(i + 1).unwrap_or(0));
                let hi = u32::from(slot(i + 2).unwrap_or(0));
                (Op::SaveXmm(info, lo | hi << 16), 3)
            }
            10 if info <= 1 => (Op::MachFrame(info == 1), 1),
            _ => return Err(UnwindInfoError::UnknownCode { op, info }),
        };
        ops.push((offset, decoded));
        i += used;
    }
    let chained = if flags & UNW_FLAG_CHAININFO != 0 {
        // The primary RUNTIME_FUNCTION follows the codes, padded to an even count.
        // RVAs out of the image wrap to addresses no section holds.
        let at = rva.wrapping_add(4 + (count.next_multiple_of(2) * 2) as u32);
        Some(
            image
                .u32_at(at.wrapping_add(8))
                .ok_or(UnwindInfoError::ChainedOutside(at.wrapping_add(8)))?,
        )
    } else {
        None
    };
    Ok(Info {
        ops,
        frame_reg,
        frame_offset,
        chained,
    })
}

pub(crate) use crate::model::cfi::Row;
use crate::model::cfi::{Key, Value};

/// The unwind state at one point of a function.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct State {
    /// Bytes from the CFA down to `rsp` (before the frame register takes over).
    depth: u64,
    /// `Some(register, offset)` once the frame register holds the CFA less `offset`.
    frame: Option<(u8, u64)>,
    /// Register -> bytes below the CFA where it is saved.
    saved: BTreeMap<u8, u64>,
    saved_xmm: BTreeMap<u8, u64>,
    machine_frame: bool,
}

/// The rules in force after each prologue instruction: `(address, rules)`, the first at
/// the entry's start. Rules are `(name, postfix)`, `.cfa` and `.ra` first.
pub(crate) fn rows(image: &Image, entry: &Entry) -> Result<Vec<Row>, UnwindInfoError> {
    let mut unwind = entry.unwind;
    let mut hops = 0;
    // An entry may point at another RUNTIME_FUNCTION instead of unwind information.
    while unwind & 1 == 1 {
        hops += 1;
        if hops > MAX_CHAIN {
            return Err(UnwindInfoError::IndirectLoop);
        }
        let at = (unwind & !1).wrapping_add(8);
        unwind = image
            .u32_at(at)
            .ok_or(UnwindInfoError::IndirectOutside(at))?;
    }
    let own = decode(image, unwind)?;
    let mut parents: Vec<Info> = Vec::new();
    let mut next = own.chained;
    while let Some(rva) = next {
        if parents.len() >= MAX_CHAIN {
            return Err(UnwindInfoError::ChainLoop);
        }
        let info = decode(image, rva & !1)?;
        next = info.chained;
        parents.push(info);
    }
    // The establisher frame is `rsp` after the whole fixed allocation: saves are at
    // offsets from it, whatever point of the prologue made them.
    let mut total = 8u64;
    for info in parents.iter().chain(std::iter::once(&own)) {
        for (_, op) in &info.ops {
            total += grows(op);
        }
    }
    let mut state = State {
        depth: 8,
        ..State::default()
    };
    // Primary entries first (outermost first), completely: they ran before this code.
    for info in parents.iter().rev() {
        for (_, op) in info.ops.iter().rev() {
            apply(&mut state, op, info, total);
        }
    }
    let mut out = vec![(entry.start, render(&state))];
    for (offset, op) in own.ops.iter().rev() {
        apply(&mut state, op, &own, total);
        let at = entry.start.saturating_add(u32::from(*offset));
        let rules = render(&state);
        match out.last_mut() {
            // Codes are listed last instruction first: offsets never grow down the list.
            Some(last) if at < last.0 => {
                return Err(UnwindInfoError::Order(at));
            }
            Some(last) if last.0 == at => last.1 = rules,
            // Past the function's end: nothing of it is left to describe.
            _ if at >= entry.end => {}
            _ => out.push((at, rules)),
        }
    }
    Ok(out)
}

/// How far an op moves `rsp`.
fn grows(op: &Op) -> u64 {
    match *op {
        Op::Push(_) => 8,
        Op::Alloc(n) => u64::from(n),
        // The frame replaces the return address the depth started with.
        Op::MachFrame(err) => (if err { 48 } else { 40 }) - 8,
        _ => 0,
    }
}

fn apply(state: &mut State, op: &Op, info: &Info, total: u64) {
    match *op {
        Op::Push(reg) => {
            state.depth += 8;
            state.saved.insert(reg, state.depth);
        }
        Op::Alloc(_) => state.depth += grows(op),
        Op::SetFp => {
            let offset = state.depth.saturating_sub(u64::from(info.frame_offset));
            state.frame = Some((info.frame_reg, offset));
        }
        Op::Save(reg, off) => {
            state
                .saved
                .insert(reg, total.saturating_sub(u64::from(off)));
        }
        Op::SaveXmm(reg, off) => {
            state
                .saved_xmm
                .insert(reg, total.saturating_sub(u64::from(off)));
        }
        Op::MachFrame(_) => {
            state.depth += grows(op);
            state.machine_frame = true;
        }
        Op::Skip => {}
    }
}

fn render(state: &State) -> Vec<(Key, Value)> {
    let name = |reg: u8| GPR.get(usize::from(reg)).copied().unwrap_or("$rsp");
    let cfa = match state.frame {
        Some((reg, offset)) => Value::Plus(name(reg), offset as i64),
        None => Value::Plus("$rsp", state.depth as i64),
    };
    let mut rules = vec![(Key::Cfa, cfa)];
    let ra = if state.machine_frame { 40 } else { 8 };
    rules.push((Key::Ra, Value::BelowCfa(ra)));
    if state.machine_frame {
        rules.push((Key::Reg(7, "$rsp"), Value::BelowCfa(16)));
    }
    // By DWARF register number, the order Breakpad's x86_64 DWARF output has.
    const DWARF: [u16; 16] = [0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15];
    for (&reg, &below) in &state.saved {
        if reg != 4 {
            let number = DWARF.get(usize::from(reg)).copied().unwrap_or(u16::MAX);
            rules.push((Key::Reg(number, name(reg)), Value::BelowCfa(below as i64)));
        }
    }
    for (&reg, &below) in &state.saved_xmm {
        if let Some(x) = XMM.get(usize::from(reg)) {
            rules.push((
                Key::Reg(17 + u16::from(reg), x),
                Value::BelowCfa(below as i64),
            ));
        }
    }
    // Sorted by key, as the row writer expects.
    rules.sort_by_key(|r| r.0);
    rules
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An image with one section at RVA 0x2000 holding `bytes`.
    fn image(bytes: Vec<u8>) -> Image {
        Image {
            sections: vec![(0x2000, bytes)],
            base: 0,
        }
    }

    fn info(prolog: u8, frame: u8, codes: &[u16]) -> Vec<u8> {
        let mut v = vec![1, prolog, codes.len() as u8, frame];
        for c in codes {
            v.extend_from_slice(&c.to_le_bytes());
        }
        if codes.len() % 2 == 1 {
            v.extend_from_slice(&[0, 0]);
        }
        v
    }

    fn code(offset: u8, op: u8, info: u8) -> u16 {
        u16::from(offset) | u16::from(op | info << 4) << 8
    }

    fn rule(rules: &[(Key, Value)], name: &str) -> Option<String> {
        crate::breakpad::cfi::to_strings(rules)
            .into_iter()
            .find(|r| r.0 == name)
            .map(|r| r.1)
    }

    #[test]
    fn pushes_alloc_and_frame_pointer() {
        // push rbp (1); push rsi (2); sub rsp, 0x20 (6); lea rbp, [rsp+0x10] (11)
        let bytes = info(
            11,
            5 | 1 << 4,
            &[code(11, 3, 0), code(6, 2, 3), code(2, 0, 6), code(1, 0, 5)],
        );
        let rows = rows(
            &image(bytes),
            &Entry {
                start: 0x1000,
                end: 0x1100,
                unwind: 0x2000,
            },
        )
        .unwrap();
        let at: Vec<u32> = rows.iter().map(|r| r.0).collect();
        assert_eq!(at, vec![0x1000, 0x1001, 0x1002, 0x1006, 0x100b]);
        assert_eq!(rule(&rows[0].1, ".cfa").as_deref(), Some("$rsp 8 +"));
        assert_eq!(rule(&rows[2].1, "$rsi").as_deref(), Some(".cfa 24 - ^"));
        assert_eq!(rule(&rows[3].1, ".cfa").as_deref(), Some("$rsp 56 +"));
        // rbp = rsp + 16 = CFA - 56 + 16.
        assert_eq!(rule(&rows[4].1, ".cfa").as_deref(), Some("$rbp 40 +"));
        assert_eq!(rule(&rows[4].1, "$rbp").as_deref(), Some(".cfa 16 - ^"));
        assert_eq!(rule(&rows[4].1, ".ra").as_deref(), Some(".cfa 8 - ^"));
    }

    #[test]
    fn large_alloc_saves_and_machine_frame() {
        // A machine frame with an error code, alloc 0x1000 (large, 16-bit scaled),
        // then rbx saved at establisher + 0x10 and xmm6 at establisher + 0x20.
        let bytes = info(
            0,
            0,
            &[
                code(20, 8, 6),
                2,
                code(15, 4, 3),
                2,
                code(9, 1, 0),
                0x200,
                code(0, 10, 1),
            ],
        );
        let rows = rows(
            &image(bytes),
            &Entry {
                start: 0,
                end: 0x40,
                unwind: 0x2000,
            },
        )
        .unwrap();
        let last = &rows.last().unwrap().1;
        // CFA - rsp = 48 (frame) + 0x1000.
        assert_eq!(rule(last, ".cfa").as_deref(), Some("$rsp 4144 +"));
        assert_eq!(rule(last, ".ra").as_deref(), Some(".cfa 40 - ^"));
        assert_eq!(rule(last, "$rsp").as_deref(), Some(".cfa 16 - ^"));
        assert_eq!(rule(last, "$rbx").as_deref(), Some(".cfa 4128 - ^"));
        assert_eq!(rule(last, "$xmm6").as_deref(), Some(".cfa 4112 - ^"));
    }

    #[test]
    fn chained_entries_start_from_the_primary_prologue() {
        // Primary at 0x2000: push rbx (1); sub rsp, 0x28 (5).
        let mut bytes = info(5, 0, &[code(5, 2, 4), code(1, 0, 3)]);
        // Fragment info at 0x2000 + len: flag CHAININFO, one code of its own
        // (push rdi at +2), then the primary's RUNTIME_FUNCTION.
        let fragment = bytes.len() as u32 + 0x2000;
        let mut chained = info(2, 0, &[code(2, 0, 7)]);
        chained[0] |= UNW_FLAG_CHAININFO << 3;
        for w in [0x1000u32, 0x1040, 0x2000] {
            chained.extend_from_slice(&w.to_le_bytes());
        }
        bytes.extend_from_slice(&chained);
        // An indirect entry (bit 0) pointing at a RUNTIME_FUNCTION for the fragment.
        let indirect = bytes.len() as u32 + 0x2000;
        for w in [0x1080u32, 0x10c0, fragment] {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        let image = image(bytes);
        let direct = rows(
            &image,
            &Entry {
                start: 0x1080,
                end: 0x10c0,
                unwind: fragment,
            },
        )
        .unwrap();
        // At the fragment's start, the primary's whole prologue is in force.
        assert_eq!(rule(&direct[0].1, ".cfa").as_deref(), Some("$rsp 56 +"));
        assert_eq!(rule(&direct[0].1, "$rbx").as_deref(), Some(".cfa 16 - ^"));
        assert_eq!(direct[1].0, 0x1082);
        assert_eq!(rule(&direct[1].1, ".cfa").as_deref(), Some("$rsp 64 +"));
        assert_eq!(rule(&direct[1].1, "$rdi").as_deref(), Some(".cfa 64 - ^"));
        let through = rows(
            &image,
            &Entry {
                start: 0x1080,
                end: 0x10c0,
                unwind: indirect | 1,
            },
        )
        .unwrap();
        assert_eq!(through, direct);
    }

    #[test]
    fn bad_tables_are_errors() {
        let e = Entry {
            start: 0,
            end: 4,
            unwind: 0x9000,
        };
        assert!(rows(&image(vec![]), &e).is_err());
        // ALLOC_LARGE without its slot.
        let bytes = info(4, 0, &[code(4, 1, 0)]);
        let e = Entry {
            unwind: 0x2000,
            ..e
        };
        assert!(rows(&image(bytes), &e).is_err());
        // An indirect entry pointing at itself.
        let mut bytes = vec![0u8; 12];
        bytes[8..12].copy_from_slice(&0x2001u32.to_le_bytes());
        let e = Entry {
            unwind: 0x2001,
            ..e
        };
        assert!(rows(&image(bytes), &e).is_err());
    }
}
