//! STACK WIN: x86 frame data (FPO records and `FrameData` program strings), the form
//! Breakpad's and rust-minidump's x86 walkers read for Windows code. Data only: the PDB
//! reader (`pdb/frames.rs`) makes the rows, breakpad/ writes them.

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
