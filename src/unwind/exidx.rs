//! ARM EHABI unwind tables (`.ARM.exidx` and `.ARM.extab`), the unwind information GCC
//! and clang write for 32-bit ARM instead of `.eh_frame`, turned into one STACK CFI
//! rule per function: the rule that holds in its body, after the prologue, which is all
//! the table describes ("Exception Handling ABI for the ARM Architecture", IHI 0038,
//! sections 6 to 10).
//!
//! Hand-written: no crate decodes EHABI (gimli and object read DWARF CFI only).

use super::regs::{CfiArch, Numbering};
use crate::model::cfi::{Key, Value};

/// One index table entry: the function it covers and where its unwind data is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExidxEntry {
    pub start: u64,
    /// The next entry's start (the table covers everything up to it), or the end of the
    /// code for the last one.
    pub end: u64,
    /// Offset of the entry in `.ARM.exidx`.
    pub offset: usize,
}

/// An unwind table section's bytes and address.
#[derive(Debug, Clone, Default)]
pub struct Table {
    pub data: Vec<u8>,
    pub address: u64,
    pub big_endian: bool,
}

impl Table {
    fn word_at(&self, offset: usize) -> Option<u32> {
        let bytes: [u8; 4] = self
            .data
            .get(offset..offset.checked_add(4)?)?
            .try_into()
            .ok()?;
        Some(if self.big_endian {
            u32::from_be_bytes(bytes)
        } else {
            u32::from_le_bytes(bytes)
        })
    }

    /// The word at `address`, if it lies in this section.
    fn word(&self, address: u64) -> Option<u32> {
        let offset = usize::try_from(address.checked_sub(self.address)?).ok()?;
        self.word_at(offset)
    }
}

/// A "prel31" field: a 31-bit signed offset from the field's own address.
fn prel31(word: u32, place: u64) -> u64 {
    let offset = ((word << 1) as i32 >> 1) as i64;
    place.wrapping_add(offset as u64) & 0xFFFF_FFFF
}

const CANT_UNWIND: u32 = 1;

/// The entries of `exidx`, by address, each ending where the next begins or at
/// `code_end(start)`. Entries outside code are dropped.
pub fn entries(exidx: &Table, code_end: impl Fn(u64) -> Option<u64>) -> Vec<ExidxEntry> {
    let mut starts: Vec<(u64, usize)> = Vec::new();
    for offset in (0..exidx.data.len() / 8).map(|i| i * 8) {
        let Some(word) = exidx.word_at(offset) else {
            break;
        };
        // The low bit of a Thumb function's address marks the instruction set.
        let start = prel31(word, exidx.address.wrapping_add(offset as u64)) & !1;
        starts.push((start, offset));
    }
    // The table is sorted when a linker wrote it; a crafted one need not be.
    starts.sort();
    starts.dedup_by_key(|s| s.0);
    let mut out = Vec::with_capacity(starts.len());
    for (i, &(start, offset)) in starts.iter().enumerate() {
        let Some(limit) = code_end(start) else {
            continue;
        };
        let end = starts.get(i + 1).map_or(limit, |next| next.0.min(limit));
        out.push(ExidxEntry { start, end, offset });
    }
    out
}

/// What an entry says about unwinding its function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unwind {
    /// `EXIDX_CANTUNWIND`, or "refuse to unwind" in its opcodes: no rule.
    Refused,
    /// The rules to write: `.cfa`, `.ra`, then each saved register.
    Rules(Vec<(Key, Value)>),
}

/// Why an EHABI entry cannot be unwound: what was expected, and the table address or
/// the opcode where it was not found.
#[derive(Debug, thiserror::Error)]
pub enum EhabiError {
    #[error("the index entry at +{0:#x} is cut short")]
    IndexCut(usize),
    #[error("an inline entry with personality index {0} (only 0 fits inline)")]
    InlinePersonality(u32),
    #[error("its table entry at {0:#x} is not in .ARM.extab")]
    NotInExtab(u64),
    #[error("personality index {0} is not one of the ARM compact models")]
    Personality(u32),
    #[error("its generic-model data at {0:#x} is cut short")]
    GenericCut(u64),
    #[error("its opcodes run past the end of .ARM.extab at {0:#x}")]
    OpcodesCut(u64),
    #[error("its stack adjustments exceed 1 MiB")]
    StackTooLarge,
    #[error("it pops d{0}, which does not exist")]
    NoSuchVfp(usize),
    #[error("opcode {0:#04x} after sp was popped")]
    AfterSp(u8),
    #[error("opcode {0:#04x} is cut short")]
    OpcodeCut(u8),
    #[error("reserved opcode {0:#04x}")]
    Reserved(u8),
    #[error("vsp = r{0} after r{0} was popped")]
    VspFromPopped(u8),
    #[error("spare opcode {op:#04x} {operand:#04x}")]
    SpareOperand { op: u8, operand: u8 },
    #[error("its vsp adjustment exceeds 1 MiB")]
    VspTooLarge,
    #[error("its vsp adjustment overflows")]
    VspOverflow,
    #[error("spare opcode {0:#04x}")]
    Spare(u8),
}

/// Decodes the entry at `entry.offset` of `exidx` (with `extab` for out-of-line data).
pub fn decode(exidx: &Table, extab: &Table, entry: &ExidxEntry) -> Result<Unwind, EhabiError> {
    let opcodes = match opcodes(exidx, extab, entry.offset)? {
        Some(o) => o,
        None => return Ok(Unwind::Refused),
    };
    match run(&opcodes)? {
        Some(frame) => Ok(Unwind::Rules(frame.rules())),
        None => Ok(Unwind::Refused),
    }
}

/// The opcode bytes of an entry, or `None` for `EXIDX_CANTUNWIND`.
fn opcodes(exidx: &Table, extab: &Table, offset: usize) -> Result<Option<Vec<u8>>, EhabiError> {
    let word = exidx
        .word_at(offset.wrapping_add(4))
        .ok_or(EhabiError::IndexCut(offset))?;
    if word == CANT_UNWIND {
        return Ok(None);
    }
    if word & 0x8000_0000 != 0 {
        // Inline: personality routine 0 with three bytes of opcodes.
        let index = (word >> 24) & 0x0F;
        if index != 0 {
            return Err(EhabiError::InlinePersonality(index));
        }
        return Ok(Some(word.to_be_bytes()[1..].to_vec()));
    }
    let place = exidx.address.wrapping_add(offset as u64).wrapping_add(4);
    let at = prel31(word, place);
    let first = extab.word(at).ok_or(EhabiError::NotInExtab(at))?;
    // The words after the first one that hold opcodes, and the bytes of the first (or
    // second) word that do.
    let (head, count, rest_at) = if first & 0x8000_0000 != 0 {
        match (first >> 24) & 0x0F {
            0 => (first.to_be_bytes()[1..].to_vec(), 0, at),
            1 | 2 => (first.to_be_bytes()[2..].to_vec(), (first >> 16) & 0xFF, at),
            index => {
                return Err(EhabiError::Personality(index));
            }
        }
    } else {
        // The generic model: a personality routine of its own. GCC's and clang's
        // personality routines (C, C++, Objective-C, Rust) take the ARM compact-model
        // opcode stream in the next word: its top byte counts the words that follow.
        let second = extab
            .word(at.wrapping_add(4))
            .ok_or(EhabiError::GenericCut(at.wrapping_add(4)))?;
        (
            second.to_be_bytes()[1..].to_vec(),
            second >> 24,
            at.wrapping_add(4),
        )
    };
    let mut bytes = head;
    for i in 1..=u64::from(count) {
        let at = rest_at.wrapping_add(4 * i);
        let word = extab.word(at).ok_or(EhabiError::OpcodesCut(at))?;
        bytes.extend_from_slice(&word.to_be_bytes());
    }
    Ok(Some(bytes))
}

/// Where a value is: a register plus an offset (`vsp`), or the word stored there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Addr {
    /// The register the address is relative to, as on entry to the unwinder: 13 for sp.
    base: u8,
    offset: i64,
}

/// The caller's frame, as the opcodes leave it.
#[derive(Debug, Clone)]
struct Frame {
    vsp: Addr,
    /// Where r0-r15 were saved, if they were.
    core: [Option<Addr>; 16],
    /// Where d0-d31 were saved, if they were.
    vfp: [Option<Addr>; 32],
    /// Where sp was loaded from, when a pop restores it (signal return trampolines pop
    /// every register): the caller's sp, and so the CFA, is the word there.
    sp_loaded: Option<Addr>,
}

const SP: u8 = 13;
const LR: usize = 14;
const PC: usize = 15;

/// A stream may not grow the frame by more than this: 1 MiB, far past any real frame,
/// and small enough that offsets never overflow.
const MAX_VSP: i64 = 1 << 20;

impl Frame {
    fn pop(&mut self, bytes: i64) -> Result<Addr, EhabiError> {
        let at = self.vsp;
        self.vsp.offset += bytes;
        if self.vsp.offset.abs() > MAX_VSP {
            return Err(EhabiError::StackTooLarge);
        }
        Ok(at)
    }

    fn pop_core(&mut self, reg: usize) -> Result<(), EhabiError> {
        let slot = self.pop(4)?;
        if reg == usize::from(SP) {
            self.sp_loaded = Some(slot);
        } else {
            self.core[reg] = Some(slot);
        }
        Ok(())
    }

    fn pop_vfp(&mut self, first: usize, count: usize, fstmx: bool) -> Result<(), EhabiError> {
        for reg in first..first + count {
            let slot = self.vfp.get_mut(reg).ok_or(EhabiError::NoSuchVfp(reg))?;
            *slot = Some(self.vsp);
            self.vsp.offset += 8;
        }
        // FSTMFDX leaves a pad word.
        if fstmx {
            self.pop(4)?;
        }
        if self.vsp.offset.abs() > MAX_VSP {
            return Err(EhabiError::StackTooLarge);
        }
        Ok(())
    }

    /// `(register, rule)`: `.cfa`, `.ra`, then r0-r12 and d0-d31 as saved.
    fn rules(&self) -> Vec<(Key, Value)> {
        let name = |reg: u16| CfiArch::Arm.name(Numbering::Gcc, reg);
        let base = |reg: u8| name(u16::from(reg)).unwrap_or("sp");
        // Saved slots relative to the CFA where they share its base register.
        let load = |a: Addr| -> Value {
            if a.base == self.vsp.base && self.sp_loaded.is_none() {
                Value::At(".cfa", a.offset - self.vsp.offset)
            } else {
                Value::At(base(a.base), a.offset)
            }
        };
        let cfa = match self.sp_loaded {
            Some(slot) => load(slot),
            None => Value::Plus(base(self.vsp.base), self.vsp.offset),
        };
        let mut out = vec![(Key::Cfa, cfa)];
        // Without a popped pc, the caller resumes at the (virtual) lr.
        let ra = match (self.core[PC], self.core[LR]) {
            (Some(pc), _) => load(pc),
            (None, Some(lr)) => load(lr),
            (None, None) => Value::Reg("lr"),
        };
        out.push((Key::Ra, ra));
        let saved = self
            .core
            .iter()
            .take(13)
            .enumerate()
            .map(|(r, s)| (r as u16, s));
        // DWARF numbers d0-d31 from 256.
        let vfp = self
            .vfp
            .iter()
            .enumerate()
            .map(|(r, s)| (256 + r as u16, s));
        for (reg, slot) in saved.chain(vfp) {
            if let (Some(a), Some(n)) = (slot, name(reg)) {
                out.push((Key::Reg(reg, n), load(*a)));
            }
        }
        out
    }
}

/// Runs an opcode stream (IHI 0038 section 10.3). `None` when it refuses to unwind.
#[allow(
    clippy::too_many_lines,
    reason = "the EHABI unwind-instruction interpreter: one `match` over the opcodes"
)]
fn run(ops: &[u8]) -> Result<Option<Frame>, EhabiError> {
    let mut f = Frame {
        vsp: Addr {
            base: SP,
            offset: 0,
        },
        core: [None; 16],
        vfp: [None; 32],
        sp_loaded: None,
    };
    let mut i = 0;
    while let Some(&op) = ops.get(i) {
        i += 1;
        // Once sp is loaded from the stack, vsp is a value the rules cannot build on.
        if f.sp_loaded.is_some() && op != 0xB0 {
            return Err(EhabiError::AfterSp(op));
        }
        let mut next = || -> Result<u8, EhabiError> {
            let b = ops.get(i).copied().ok_or(EhabiError::OpcodeCut(op))?;
            i += 1;
            Ok(b)
        };
        match op {
            0x00..=0x3F => {
                f.pop((i64::from(op & 0x3F) << 2) + 4)?;
            }
            0x40..=0x7F => {
                f.pop(-((i64::from(op & 0x3F) << 2) + 4))?;
            }
            0x80..=0x8F => {
                let mask = (u16::from(op & 0x0F) << 8) | u16::from(next()?);
                if mask == 0 {
                    return Ok(None);
                }
                for bit in 0..12 {
                    if mask & (1 << bit) != 0 {
                        f.pop_core(4 + bit)?;
                    }
                }
            }
            0x90..=0x9F => {
                let reg = op & 0x0F;
                if reg == 13 || reg == 15 {
                    return Err(EhabiError::Reserved(op));
                }
                if f.core[usize::from(reg)].is_some() {
                    return Err(EhabiError::VspFromPopped(reg));
                }
                f.vsp = Addr {
                    base: reg,
                    offset: 0,
                };
            }
            0xA0..=0xAF => {
                for reg in 4..=4 + usize::from(op & 0x07) {
                    f.pop_core(reg)?;
                }
                if op & 0x08 != 0 {
                    f.pop_core(LR)?;
                }
            }
            0xB0 => break,
            0xB1 => {
                let mask = next()?;
                if mask == 0 || mask & 0xF0 != 0 {
                    return Err(EhabiError::SpareOperand { op, operand: mask });
                }
                for reg in 0..4 {
                    if mask & (1 << reg) != 0 {
                        f.pop_core(reg)?;
                    }
                }
            }
            0xB2 => {
                let mut value: u64 = 0;
                let mut shift = 0;
                loop {
                    let b = next()?;
                    if shift >= 28 {
                        return Err(EhabiError::VspTooLarge);
                    }
                    value |= u64::from(b & 0x7F) << shift;
                    shift += 7;
                    if b & 0x80 == 0 {
                        break;
                    }
                }
                let bytes = i64::try_from(value)
                    .ok()
                    .and_then(|v| v.checked_mul(4))
                    .and_then(|v| v.checked_add(0x204))
                    .ok_or(EhabiError::VspOverflow)?;
                f.pop(bytes)?;
            }
            0xB3 => {
                let b = next()?;
                f.pop_vfp(usize::from(b >> 4), usize::from(b & 0x0F) + 1, true)?;
            }
            0xB8..=0xBF => f.pop_vfp(8, usize::from(op & 0x07) + 1, true)?,
            0xC0..=0xC5 => {
                // iWMMXt wR10-wR[10+n]: 8 bytes each, registers no walker restores.
                f.pop(8 * (i64::from(op & 0x07) + 1))?;
            }
            0xC6 => {
                let b = next()?;
                f.pop(8 * (i64::from(b & 0x0F) + 1))?;
            }
            0xC7 => {
                let mask = next()?;
                if mask == 0 || mask & 0xF0 != 0 {
                    return Err(EhabiError::SpareOperand { op, operand: mask });
                }
                f.pop(4 * i64::from(mask.count_ones()))?;
            }
            0xC8 => {
                let b = next()?;
                f.pop_vfp(16 + usize::from(b >> 4), usize::from(b & 0x0F) + 1, false)?;
            }
            0xC9 => {
                let b = next()?;
                f.pop_vfp(usize::from(b >> 4), usize::from(b & 0x0F) + 1, false)?;
            }
            0xD0..=0xD7 => f.pop_vfp(8, usize::from(op & 0x07) + 1, false)?,
            _ => return Err(EhabiError::Spare(op)),
        }
    }
    Ok(Some(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(ops: &[u8]) -> Vec<String> {
        run(ops)
            .unwrap()
            .unwrap()
            .rules()
            .iter()
            .map(|&(k, v)| format!("{}: {}", k.name(), crate::breakpad::cfi::value_text(v)))
            .collect()
    }

    #[test]
    fn push_and_stack_adjustment() {
        // sub sp, #32 after push {r4, r5, r6, lr}
        assert_eq!(
            rules(&[0x07, 0xAA, 0xB0]),
            [
                ".cfa: sp 48 +",
                ".ra: .cfa 4 - ^",
                "r4: .cfa 16 - ^",
                "r5: .cfa 12 - ^",
                "r6: .cfa 8 - ^",
            ]
        );
    }

    #[test]
    fn frame_pointer_then_pops() {
        // vsp = r7; vsp -= 12; pop {r4-r10, lr}
        let r = rules(&[0x97, 0x42, 0xAE]);
        assert_eq!(r[0], ".cfa: r7 20 +");
        assert_eq!(r[1], ".ra: .cfa 4 - ^");
        assert_eq!(r[2], "r4: .cfa 32 - ^");
    }

    #[test]
    fn leaf_and_refusal() {
        assert_eq!(rules(&[0xB0, 0xB0, 0xB0]), [".cfa: sp", ".ra: lr"]);
        assert!(run(&[0x80, 0x00]).unwrap().is_none());
    }

    #[test]
    fn masks_vfp_and_long_adjustments() {
        // pop {r4, r7, lr} by mask (12 bytes); vpush {d8-d9} (16); vsp += 0x204 + 4 * 2
        let r = rules(&[0x84, 0x09, 0xC9, 0x81, 0xB2, 0x02]);
        assert_eq!(r[0], ".cfa: sp 552 +");
        assert!(r.contains(&".ra: .cfa 544 - ^".to_string()), "{r:?}");
        assert!(r.contains(&"r7: .cfa 548 - ^".to_string()), "{r:?}");
        assert!(r.contains(&"d9: .cfa 532 - ^".to_string()), "{r:?}");
        // pop {r4-r11, pc} by mask: pc is the return address.
        let r = rules(&[0x88, 0xFF]);
        assert!(r.contains(&".ra: .cfa 4 - ^".to_string()), "{r:?}");
        // A signal return: everything, sp included, from the signal frame.
        assert_eq!(
            rules(&[0x07, 0xB1, 0x0F, 0x8F, 0xFF, 0xB0])[..3],
            [".cfa: sp 84 + ^", ".ra: sp 92 + ^", "r0: sp 32 + ^"]
        );
        // A signal return: everything, sp included, from the signal frame.
        assert_eq!(
            rules(&[0x07, 0xB1, 0x0F, 0x8F, 0xFF, 0xB0])[..3],
            [".cfa: sp 84 + ^", ".ra: sp 92 + ^", "r0: sp 32 + ^"]
        );
        // FSTMFDX leaves a pad word.
        assert_eq!(rules(&[0xB8])[0], ".cfa: sp 12 +");
    }

    #[test]
    fn malformed_streams_are_errors() {
        for ops in [
            &[0x9D][..],
            &[0x9F],
            &[0xB1, 0x00],
            &[0xB1, 0x10],
            &[0xB4],
            &[0xCA],
            &[0xD8],
            &[0x84],
            &[0xB2, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01],
            &[0x82, 0x00, 0x00],
            &[0xC8, 0xF8],
        ] {
            assert!(run(ops).is_err(), "{ops:x?}: {:?}", run(ops));
        }
    }

    #[test]
    fn entries_and_models() {
        // Two entries: an inline one at 0x1000 and one pointing into extab (at 0x2000)
        // with personality index 1 and one extra word.
        let exidx_addr = 0x3000u64;
        let mut exidx = Vec::new();
        let rel = |target: u64, place: u64| (target.wrapping_sub(place) as u32) & 0x7FFF_FFFF;
        exidx.extend_from_slice(&rel(0x1001, exidx_addr).to_le_bytes());
        exidx.extend_from_slice(&0x80AA_B0B0u32.to_le_bytes());
        exidx.extend_from_slice(&rel(0x1100, exidx_addr + 8).to_le_bytes());
        exidx.extend_from_slice(&rel(0x2000, exidx_addr + 12).to_le_bytes());
        let exidx = Table {
            data: exidx,
            address: exidx_addr,
            big_endian: false,
        };
        let mut extab = Vec::new();
        extab.extend_from_slice(&0x8101_9741u32.to_le_bytes());
        extab.extend_from_slice(&0xAAB0_B0B0u32.to_le_bytes());
        let extab = Table {
            data: extab,
            address: 0x2000,
            big_endian: false,
        };
        let e = entries(&exidx, |_| Some(0x1200));
        assert_eq!(
            e,
            [
                ExidxEntry {
                    start: 0x1000,
                    end: 0x1100,
                    offset: 0
                },
                ExidxEntry {
                    start: 0x1100,
                    end: 0x1200,
                    offset: 8
                }
            ]
        );
        let Unwind::Rules(r) = decode(&exidx, &extab, &e[1]).unwrap() else {
            panic!()
        };
        assert_eq!(r[0], (Key::Cfa, Value::Plus("r7", 8)));
        assert_eq!(
            opcodes(&exidx, &extab, 0).unwrap().unwrap(),
            [0xAA, 0xB0, 0xB0]
        );
    }
}
