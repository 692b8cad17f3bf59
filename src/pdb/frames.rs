//! x86 frame data (the PDB's FPO and `FrameData` tables) as STACK WIN records.

use pdb::FallibleIterator as _;

use super::Pdb;
use crate::error::Warnings;
use crate::unwind::stack_win::StackWin;

/// The frame data records Breakpad's processor reads (FPO and `FrameData`), by RVA,
/// without duplicates. Program strings count against the file's
/// [`Allowance`](crate::untrusted::Allowance): 10,000 records naming one 60 KB program
/// were 572 MB of STACK WIN from 463 KB.
pub(super) fn extract(
    pdb: &mut Pdb<'_>,
    address_map: &pdb::AddressMap<'_>,
    input_len: usize,
    warnings: &mut Warnings,
) -> Vec<StackWin> {
    let mut allowance = crate::untrusted::Allowance::for_input(input_len);
    let mut refused: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    let table = match pdb.frame_table() {
        Ok(t) => t,
        Err(e) => {
            warnings.push(format!("PDB frame data: {e}; no STACK WIN records"));
            return Vec::new();
        }
    };
    let strings = pdb.string_table().ok();
    let mut out = Vec::new();
    let mut unnamed_programs = 0usize;
    let mut iter = table.iter();
    loop {
        let frame = match iter.next() {
            Ok(Some(f)) => f,
            Ok(None) => break,
            Err(e) => {
                warnings.push(format!(
                    "PDB frame data: {e}; the records after this point are skipped"
                ));
                break;
            }
        };
        let kind = match frame.ty {
            pdb::FrameType::FrameData => 4,
            pdb::FrameType::FPO => 0,
            _ => continue,
        };
        let Some(rva) = frame.code_start.to_rva(address_map) else {
            continue;
        };
        let program = match frame.program {
            Some(r) if kind == 4 => {
                // Records share program strings, and finding one is a scan for its end:
                // a refused string's length is remembered (the allowance only shrinks,
                // so it is refused again) rather than looked up per record.
                if let Some(&len) = refused.get(&r.0) {
                    allowance.take(len);
                    continue;
                }
                let Some(raw) = strings.as_ref().and_then(|s| s.get(r).ok()) else {
                    unnamed_programs += 1;
                    continue;
                };
                if !allowance.take(raw.len()) {
                    refused.insert(r.0, raw.len());
                    continue;
                }
                let Some(text) = crate::demangle::sanitize(raw.to_string().trim()) else {
                    unnamed_programs += 1;
                    continue;
                };
                Some(text)
            }
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
    if allowance.cut > 0 {
        warnings.push(format!(
            "PDB frame data: {} records left out: their program strings add up to more than \
             16 times the file (one string shared by many records)",
            allowance.cut
        ));
    }
    if unnamed_programs > 0 {
        warnings.push(format!(
            "PDB frame data: {unnamed_programs} records whose program string cannot be read left out"
        ));
    }
    // By address (then the rest of the record) so that the output order is fixed;
    // identical records, which several modules' tables can repeat, are written once.
    out.sort();
    out.dedup();
    out
}
