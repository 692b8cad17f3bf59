//! Apple's compact unwind (`__unwind_info`): one 32-bit encoding per function, turned
//! into a single STACK CFI INIT record with the rules in force in the function's body.
//! Encodings that defer to DWARF are left to `__eh_frame`.
//!
//! Hand-written: no crate parses `__unwind_info` into rules. The format is Apple's
//! `compact_unwind_encoding.h`; the decoding follows what libunwind's compact unwinders
//! do with it.

use super::regs::CfiArch;
use crate::model::cfi::{Key, Value};

/// One function's entry: absolute start and end, and its encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompactEntry {
    pub start: u64,
    pub end: u64,
    pub encoding: u32,
}

const MODE_MASK: u32 = 0x0F00_0000;

/// Why an `__unwind_info` section cannot be read: what was expected, and the offset in
/// the section where it was not found.
#[derive(Debug, thiserror::Error)]
pub enum SectionError {
    #[error("__unwind_info: unknown version {0}")]
    Version(u32),
    #[error("__unwind_info: truncated {part} at {offset:#x}")]
    Truncated { part: &'static str, offset: usize },
    #[error("__unwind_info: index too large")]
    IndexTooLarge,
    #[error("__unwind_info: second-level pages overlap: more entries than the section holds")]
    PagesOverlap,
    #[error("__unwind_info: unknown second-level page kind {kind:?} at {offset:#x}")]
    PageKind { kind: Option<u32>, offset: usize },
    #[error("__unwind_info: encoding index {index} out of range in the page at {page:#x}")]
    EncodingIndex { index: usize, page: usize },
}

/// Why one function's encoding cannot be turned into rules.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum EncodingError {
    #[error("compact unwind on {0:?}")]
    Arch(CfiArch),
    #[error("unknown encoding mode {0:#x}")]
    Mode(u32),
    #[error("bad register number {0}")]
    Register(usize),
    #[error("unreadable stack size instruction at +{0:#x}")]
    StackSize(u32),
    #[error("more than 6 saved registers ({0})")]
    SavedCount(usize),
    #[error("bad register permutation {0:#x}")]
    Permutation(u32),
}

fn u32_at(data: &[u8], offset: usize) -> Option<u32> {
    Some(u32::from_le_bytes(
        data.get(offset..offset.checked_add(4)?)?.try_into().ok()?,
    ))
}

fn u16_at(data: &[u8], offset: usize) -> Option<u16> {
    Some(u16::from_le_bytes(
        data.get(offset..offset.checked_add(2)?)?.try_into().ok()?,
    ))
}

/// Reads every function entry of an `__unwind_info` section (little-endian, as on every
/// architecture it exists for). Function offsets are relative to `image_base`.
pub fn entries(data: &[u8], image_base: u64) -> Result<Vec<CompactEntry>, SectionError> {
    let header = Header::read(data)?;
    // (function offset, encoding), from the second-level pages.
    let mut found: Vec<(u32, u32)> = Vec::new();
    let mut end_of_last = None;
    let mut pages = std::collections::HashSet::new();
    for i in 0..header.index_count {
        let entry = header
            .index_offset
            .checked_add(i.checked_mul(12).ok_or(SectionError::IndexTooLarge)?)
            .ok_or(SectionError::IndexTooLarge)?;
        let function_offset = u32_at(data, entry).ok_or(truncated("index", entry))?;
        let page = u32_at(data, entry.saturating_add(4))
            .ok_or(truncated("index", entry.saturating_add(4)))? as usize;
        if page == 0 {
            // The sentinel: the end of the last function.
            end_of_last = Some(function_offset);
            continue;
        }
        // Each page is read once: index entries of a crafted section could all name the
        // same full page and make a few KB into millions of entries.
        if !pages.insert(page) {
            continue;
        }
        // Pages may not share entries: at 4 bytes the smallest, a section holds at most
        // a quarter of its size in entries. 4,000 pages at distinct but overlapping
        // offsets, each claiming 65,535 entries, made 614 KB into 2.1 GB.
        if found.len() > data.len() / 4 {
            return Err(SectionError::PagesOverlap);
        }
        match u32_at(data, page) {
            Some(2) => regular_page(data, page, &mut found)?,
            Some(3) => header.compressed_page(data, page, function_offset, &mut found)?,
            kind => return Err(SectionError::PageKind { kind, offset: page }),
        }
    }
    Ok(functions(found, end_of_last, image_base))
}

fn truncated(part: &'static str, offset: usize) -> SectionError {
    SectionError::Truncated { part, offset }
}

/// The fields of the section header that the pages are read with.
struct Header {
    common_offset: usize,
    common_count: usize,
    index_offset: usize,
    index_count: usize,
}

impl Header {
    fn read(data: &[u8]) -> Result<Header, SectionError> {
        let version = u32_at(data, 0).ok_or(truncated("header", 0))?;
        if version != 1 {
            return Err(SectionError::Version(version));
        }
        let field = |i: usize| {
            u32_at(data, 4 * i)
                .map(|v| v as usize)
                .ok_or(truncated("header", 4 * i))
        };
        Ok(Header {
            common_offset: field(1)?,
            common_count: field(2)?,
            index_offset: field(5)?,
            index_count: field(6)?,
        })
    }

    /// A compressed page's entries: 24-bit offset from the index entry, 8-bit encoding
    /// index into the common encodings, then the page's own.
    fn compressed_page(
        &self,
        data: &[u8],
        page: usize,
        function_offset: u32,
        found: &mut Vec<(u32, u32)>,
    ) -> Result<(), SectionError> {
        let field = |at: usize| {
            u16_at(data, page.saturating_add(at))
                .map(usize::from)
                .ok_or(truncated("page", page.saturating_add(at)))
        };
        let (first, count, own) = (field(4)?, field(6)?, field(8)?);
        for k in 0..count {
            let at = page.saturating_add(first).saturating_add(4 * k);
            let word = u32_at(data, at).ok_or(truncated("page", at))?;
            let index = (word >> 24) as usize;
            let encoding = if index < self.common_count {
                self.common_offset
                    .checked_add(4 * index)
                    .and_then(|at| u32_at(data, at))
            } else {
                u32_at(
                    data,
                    page.saturating_add(own)
                        .saturating_add(4 * (index - self.common_count)),
                )
            }
            .ok_or(SectionError::EncodingIndex { index, page })?;
            found.push((function_offset.wrapping_add(word & 0x00FF_FFFF), encoding));
        }
        Ok(())
    }
}

/// A regular page's entries: (function offset, encoding) pairs.
fn regular_page(data: &[u8], page: usize, found: &mut Vec<(u32, u32)>) -> Result<(), SectionError> {
    let field = |at: usize| {
        u16_at(data, page.saturating_add(at))
            .map(usize::from)
            .ok_or(truncated("page", page.saturating_add(at)))
    };
    let (first, count) = (field(4)?, field(6)?);
    for k in 0..count {
        let at = page.saturating_add(first).saturating_add(8 * k);
        let f = u32_at(data, at).ok_or(truncated("page", at))?;
        let e =
            u32_at(data, at.saturating_add(4)).ok_or(truncated("page", at.saturating_add(4)))?;
        found.push((f, e));
    }
    Ok(())
}

/// The entries as functions, by address, each ending where the next begins (the last
/// where the index's sentinel says).
fn functions(
    mut found: Vec<(u32, u32)>,
    end_of_last: Option<u32>,
    image_base: u64,
) -> Vec<CompactEntry> {
    found.sort_unstable_by_key(|e| e.0);
    found.dedup_by_key(|e| e.0);
    let mut out = Vec::with_capacity(found.len());
    for (k, &(f, encoding)) in found.iter().enumerate() {
        let next = found.get(k + 1).map(|n| n.0).or(end_of_last).unwrap_or(f);
        if next <= f {
            continue;
        }
        out.push(CompactEntry {
            // Wrapping, as addresses do: a crafted base near the top of the address
            // space must not overflow (the entry then lies outside the code and is
            // dropped).
            start: image_base.wrapping_add(u64::from(f)),
            end: image_base.wrapping_add(u64::from(next)),
            encoding,
        });
    }
    out
}

/// What an encoding says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decoded {
    /// The rules, `.cfa` and `.ra` first.
    Rules(Vec<(Key, Value)>),
    /// The function's unwind information is an FDE in `__eh_frame`.
    Dwarf,
}

/// Turns an encoding into rules. `indirect_stack_size` reads the 32-bit stack size a
/// frameless x86 function's `sub` instruction holds, at the given offset into the
/// function (x86 and x86_64 "stack indirect" mode).
pub fn decode(
    arch: CfiArch,
    encoding: u32,
    indirect_stack_size: impl Fn(u32) -> Option<u32>,
) -> Result<Decoded, EncodingError> {
    let mode = encoding & MODE_MASK;
    match arch {
        CfiArch::X86_64 => x86(
            encoding,
            mode,
            8,
            &X86_64_SAVED,
            "$rsp",
            "$rbp",
            indirect_stack_size,
        ),
        CfiArch::X86 => x86(
            encoding,
            mode,
            4,
            &X86_SAVED,
            "$esp",
            "$ebp",
            indirect_stack_size,
        ),
        CfiArch::Arm64 => arm64(encoding, mode),
        other => Err(EncodingError::Arch(other)),
    }
}

/// x86 compact register numbers 1-6.
const X86_64_SAVED: [&str; 7] = ["", "$rbx", "$r12", "$r13", "$r14", "$r15", "$rbp"];
const X86_SAVED: [&str; 7] = ["", "$ebx", "$ecx", "$edx", "$edi", "$esi", "$ebp"];

/// A saved register's rule: its compact number (which orders it), name and slot.
fn saved_reg(number: u16, name: &'static str, offset_from_cfa: i64) -> (Key, Value) {
    (Key::Reg(number, name), saved_at(offset_from_cfa))
}

fn saved_at(offset_from_cfa: i64) -> Value {
    Value::At(".cfa", offset_from_cfa)
}

fn x86(
    encoding: u32,
    mode: u32,
    word: i64,
    saved: &[&'static str; 7],
    sp: &'static str,
    fp: &'static str,
    indirect_stack_size: impl Fn(u32) -> Option<u32>,
) -> Result<Decoded, EncodingError> {
    let mut rules = Vec::new();
    match mode {
        0 => {
            // No unwind information: a leaf whose return address is on top of the stack.
            rules.push((Key::Cfa, Value::Plus(sp, word)));
            rules.push((Key::Ra, saved_at(-word)));
        }
        0x0100_0000 => {
            // Frame pointer: CFA = fp + 2 words; registers saved below the frame.
            let offset = i64::from((encoding >> 16) & 0xFF);
            let regs = encoding & 0x7FFF;
            rules.push((Key::Cfa, Value::Plus(fp, 2 * word)));
            rules.push((Key::Ra, saved_at(-word)));
            rules.push(saved_reg(6, fp, -2 * word));
            for i in 0..5 {
                let r = ((regs >> (3 * i)) & 7) as usize;
                if r == 0 {
                    continue;
                }
                let name = saved
                    .get(r)
                    .filter(|n| !n.is_empty())
                    .ok_or(EncodingError::Register(r))?;
                rules.push(saved_reg(
                    r as u16,
                    name,
                    -2 * word - offset * word + i64::from(i) * word,
                ));
            }
        }
        0x0200_0000 | 0x0300_0000 => {
            // Frameless, the stack size immediate or read from the `sub` instruction.
            let stack_size = if mode == 0x0200_0000 {
                i64::from((encoding >> 16) & 0xFF) * word
            } else {
                let at = (encoding >> 16) & 0xFF;
                let adjust = i64::from((encoding >> 13) & 7) * word;
                i64::from(indirect_stack_size(at).ok_or(EncodingError::StackSize(at))?) + adjust
            };
            let count = ((encoding >> 10) & 7) as usize;
            if count > 6 {
                return Err(EncodingError::SavedCount(count));
            }
            rules.push((Key::Cfa, Value::Plus(sp, stack_size)));
            rules.push((Key::Ra, saved_at(-word)));
            for (i, r) in permutation(count, encoding & 0x3FF).into_iter().enumerate() {
                let name = saved
                    .get(r)
                    .filter(|n| !n.is_empty())
                    .ok_or(EncodingError::Permutation(encoding & 0x3FF))?;
                rules.push(saved_reg(
                    r as u16,
                    name,
                    -word - word * count as i64 + word * i as i64,
                ));
            }
        }
        0x0400_0000 => return Ok(Decoded::Dwarf),
        _ => return Err(EncodingError::Mode(mode)),
    }
    Ok(Decoded::Rules(rules))
}

/// The saved registers of a frameless function, in stack order, from the permutation's
/// Lehmer code (compact register numbers 1-6).
fn permutation(count: usize, mut perm: u32) -> Vec<usize> {
    // The factorial-base digits, as libunwind reads them.
    let divisors: &[u32] = match count {
        6 | 5 => &[120, 24, 6, 2, 1],
        4 => &[60, 12, 3, 1],
        3 => &[20, 4, 1],
        2 => &[5, 1],
        1 => &[1],
        _ => &[],
    };
    let mut digits = Vec::with_capacity(6);
    for &d in divisors {
        digits.push(perm / d);
        perm %= d;
    }
    if count == 6 {
        digits.push(0);
    }
    let mut used = [false; 7];
    let mut out = Vec::with_capacity(count);
    for &digit in digits.iter().take(count) {
        let mut seen = 0;
        for (reg, slot) in used.iter_mut().enumerate().skip(1) {
            if *slot {
                continue;
            }
            if seen == digit {
                *slot = true;
                out.push(reg);
                break;
            }
            seen += 1;
        }
    }
    out
}

fn arm64(encoding: u32, mode: u32) -> Result<Decoded, EncodingError> {
    let mut rules = Vec::new();
    match mode {
        0 => {
            // No unwind information: a leaf; the return address is in the link register.
            rules.push((Key::Cfa, Value::Plus("sp", 0)));
            rules.push((Key::Ra, Value::Reg("x30")));
        }
        0x0200_0000 => {
            // Frameless: only the stack pointer moved; the return address is in lr.
            let size = i64::from((encoding >> 12) & 0xFFF) * 16;
            rules.push((Key::Cfa, Value::Plus("sp", size)));
            rules.push((Key::Ra, Value::Reg("x30")));
        }
        0x0300_0000 => return Ok(Decoded::Dwarf),
        0x0400_0000 => {
            // Frame: x29 and x30 at the top of the frame, register pairs below them.
            rules.push((Key::Cfa, Value::Plus("x29", 16)));
            rules.push((Key::Ra, saved_at(-8)));
            rules.push(saved_reg(29, "x29", -16));
            let mut at = -24;
            for (bit, (a, b)) in [
                ("x19", "x20"),
                ("x21", "x22"),
                ("x23", "x24"),
                ("x25", "x26"),
                ("x27", "x28"),
            ]
            .into_iter()
            .enumerate()
            {
                if encoding & (1 << bit) != 0 {
                    let first = 19 + 2 * bit as u16;
                    rules.push(saved_reg(first, a, at));
                    rules.push(saved_reg(first + 1, b, at - 8));
                    at -= 16;
                }
            }
        }
        _ => return Err(EncodingError::Mode(mode)),
    }
    Ok(Decoded::Rules(rules))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(arch: CfiArch, encoding: u32) -> Vec<(String, String)> {
        match decode(arch, encoding, |_| Some(0x1234)).unwrap() {
            Decoded::Rules(r) => crate::breakpad::cfi::to_strings(&r),
            Decoded::Dwarf => panic!("dwarf"),
        }
    }

    fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn arm64_frame_with_two_pairs() {
        // 0x04000003: frame, x19/x20 and x21/x22 saved.
        assert_eq!(
            rules(CfiArch::Arm64, 0x0400_0003),
            pairs(&[
                (".cfa", "x29 16 +"),
                (".ra", ".cfa 8 - ^"),
                ("x29", ".cfa 16 - ^"),
                ("x19", ".cfa 24 - ^"),
                ("x20", ".cfa 32 - ^"),
                ("x21", ".cfa 40 - ^"),
                ("x22", ".cfa 48 - ^"),
            ])
        );
        assert_eq!(
            rules(CfiArch::Arm64, 0x0200_2000),
            pairs(&[(".cfa", "sp 32 +"), (".ra", "x30")])
        );
        assert_eq!(
            decode(CfiArch::Arm64, 0x0300_0010, |_| None),
            Ok(Decoded::Dwarf)
        );
    }

    #[test]
    fn x86_64_rbp_frame_and_frameless() {
        // rbp frame, registers rbx, r12 saved 2 words below rbp.
        let enc = 0x0100_0000 | (2 << 16) | 1 | (2 << 3);
        assert_eq!(
            rules(CfiArch::X86_64, enc),
            pairs(&[
                (".cfa", "$rbp 16 +"),
                (".ra", ".cfa 8 - ^"),
                ("$rbp", ".cfa 16 - ^"),
                ("$rbx", ".cfa 32 - ^"),
                ("$r12", ".cfa 24 - ^"),
            ])
        );
        // Frameless, 3 words of stack, rbx saved (one register, permutation 0).
        let enc = 0x0200_0000 | (3 << 16) | (1 << 10);
        assert_eq!(
            rules(CfiArch::X86_64, enc),
            pairs(&[
                (".cfa", "$rsp 24 +"),
                (".ra", ".cfa 8 - ^"),
                ("$rbx", ".cfa 16 - ^")
            ])
        );
        // Stack indirect: the sub's immediate (0x1234) plus 1 word of adjustment.
        let enc = 0x0300_0000 | (4 << 16) | (1 << 13);
        assert_eq!(
            rules(CfiArch::X86_64, enc)[0],
            (".cfa".into(), "$rsp 4668 +".into())
        );
        assert_eq!(
            rules(CfiArch::X86_64, 0),
            pairs(&[(".cfa", "$rsp 8 +"), (".ra", ".cfa 8 - ^")])
        );
    }

    #[test]
    fn permutations_decode_like_libunwind() {
        assert_eq!(permutation(1, 0), vec![1]);
        assert_eq!(permutation(2, 5 + 1), vec![2, 3]);
        assert_eq!(permutation(3, 0), vec![1, 2, 3]);
        // The last of 6! orderings reverses all six.
        assert_eq!(permutation(6, 719), vec![6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn damaged_sections_are_errors() {
        assert!(entries(&[], 0).is_err());
        assert!(entries(&[2, 0, 0, 0], 0).is_err());
        let mut header = vec![0u8; 28];
        header[0] = 1;
        header[24] = 5; // 5 index entries, none present
        header[20] = 28;
        assert!(entries(&header, 0).is_err());
    }
}
