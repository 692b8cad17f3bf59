//! STACK WIN: x86 frame data from a PDB (FPO records and `FrameData` program strings),
//! the form Breakpad's and rust-minidump's x86 walkers read for Windows code.

use std::io::{self, Write};

/// One `STACK WIN` record.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct StackWin {
    pub rva: u32,
    /// 4 (`FrameData`, with a program string) or 0 (FPO).
    pub kind: u8,
    pub code_size: u32,
    pub prolog_size: u32,
    pub epilog_size: u32,
    pub params_size: u32,
    pub saved_regs_size: u32,
    pub locals_size: u32,
    pub max_stack_size: u32,
    /// The program string of a `FrameData` record.
    pub program: Option<String>,
    /// FPO: whether the function uses `ebp` as a general register.
    pub allocates_base_pointer: bool,
}

/// Writes `records` (sorted by address).
pub fn write(records: &[StackWin], w: &mut dyn Write) -> io::Result<()> {
    for r in records {
        write!(
            w,
            "STACK WIN {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} ",
            r.kind,
            r.rva,
            r.code_size,
            r.prolog_size,
            r.epilog_size,
            r.params_size,
            r.saved_regs_size,
            r.locals_size,
            r.max_stack_size
        )?;
        match &r.program {
            Some(p) => writeln!(w, "1 {p}")?,
            None => writeln!(w, "0 {}", u8::from(r.allocates_base_pointer))?,
        }
    }
    Ok(())
}
