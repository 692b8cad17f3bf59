//! x86 frame data (the PDB's FPO and `FrameData` tables) as STACK WIN records.

use std::collections::HashMap;

use pdb2::FallibleIterator as _;

use super::Pdb;

use crate::error::{WarningKind, Warnings};
use crate::model::stack_win::StackWin;

/// The frame data records Breakpad's processor reads (FPO and `FrameData`), by RVA,
/// without duplicates. Program strings count against the file's
/// [`Allowance`](crate::untrusted::Allowance): 10,000 records naming one 60 KB program
/// were 572 MB of STACK WIN from 463 KB.
pub(super) fn extract(
    pdb: &mut Pdb<'_>,
    address_map: &pdb2::AddressMap<'_>,
    input_len: usize,
    warnings: &mut Warnings,
) -> Vec<StackWin> {
    let table = match pdb.frame_table() {
        Ok(t) => t,
        Err(e) => {
            warnings.push(
                WarningKind::Pdb,
                format!("PDB frame data: {e}; no STACK WIN records"),
            );
            return Vec::new();
        }
    };
    let mut programs = Programs {
        strings: pdb.string_table().ok(),
        allowance: crate::untrusted::Allowance::for_input(input_len),
        refused: HashMap::new(),
        unnamed: 0,
    };
    let mut out = Vec::new();
    let mut iter = table.iter();
    loop {
        let frame = match iter.next() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                warnings.push(
                    WarningKind::Pdb,
                    format!("PDB frame data: {e}; the records after this point are skipped"),
                );
                break;
            }
        };
        let kind = match frame.ty {
            pdb2::FrameType::FrameData => 4,
            pdb2::FrameType::FPO => 0,
            _ => continue,
        };
        let Some(rva) = frame.code_start.to_rva(address_map) else {
            continue;
        };
        let program = match frame.program {
            Some(r) if kind == 4 => match programs.text(r) {
                Some(text) => Some(text),
                None => continue,
            },
            _ => None,
        };
        out.push(StackWin {
            rva: rva.0,
            kind,
            code_size: frame.code_size,
            prolog_size: u32::from(frame.prolog_size),
            epilog_size: 0,
            params_size: frame.params_size,
            saved_regs_size: u32::from(frame.saved_regs_size),
            locals_size: frame.locals_size,
            max_stack_size: frame.max_stack_size.unwrap_or(0),
            program,
            allocates_base_pointer: frame.uses_base_pointer,
        });
    }
    programs.warn(warnings);
    // By address (then the rest of the record) so that the output order is fixed;
    // identical records, which several modules' tables can repeat, are written once.
    out.sort();
    out.dedup();
    out
}

/// The program strings of FrameData records, read within the input's allowance.
struct Programs<'s> {
    strings: Option<pdb2::StringTable<'s>>,
    allowance: crate::untrusted::Allowance,
    /// The lengths of strings refused for the allowance, by string offset.
    refused: HashMap<u32, usize>,
    /// Records whose string cannot be read.
    unnamed: usize,
}

impl Programs<'_> {
    /// The program string at `r`; `None` when its record is to be left out.
    fn text(&mut self, r: pdb2::StringRef) -> Option<String> {
        // Records share program strings, and finding one is a scan for its end: a
        // refused string's length is remembered (the allowance only shrinks, so it is
        // refused again) rather than looked up per record.
        if let Some(&len) = self.refused.get(&r.0) {
            self.allowance.take(len);
            return None;
        }
        let Some(raw) = self.strings.as_ref().and_then(|s| s.get(r).ok()) else {
            self.unnamed += 1;
            return None;
        };
        if !self.allowance.take(raw.len()) {
            self.refused.insert(r.0, raw.len());
            return None;
        }
        let text = crate::demangle::sanitize(raw.to_string().trim());
        if text.is_none() {
            self.unnamed += 1;
        }
        text
    }

    /// One warning for each kind of record left out.
    fn warn(&self, warnings: &mut Warnings) {
        if self.allowance.cut > 0 {
            warnings.push(
                WarningKind::Pdb,
                format!(
                    "PDB frame data: {} records left out: their program strings add up to more \
                     than 16 times the file (one string shared by many records)",
                    self.allowance.cut
                ),
            );
        }
        if self.unnamed > 0 {
            warnings.push(
                WarningKind::Pdb,
                format!(
                    "PDB frame data: {} records whose program string cannot be read left out",
                    self.unnamed
                ),
            );
        }
    }
}
