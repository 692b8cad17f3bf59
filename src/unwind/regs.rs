//! Register names for STACK CFI, by DWARF register number, per architecture: the names
//! Breakpad's and rust-minidump's stack walkers look up. x86 and MIPS names carry `$`;
//! ARM, RISC-V and PowerPC names do not, as Breakpad writes them (Breakpad's
//! `dwarf_cfi_to_module.cc` register tables; its walkers `stackwalker_arm.cc`,
//! `stackwalker_mips.cc` and `stackwalker_riscv64.cc` read the same names, and
//! rust-minidump's walker drops a leading `$` before it looks a name up in its contexts,
//! which name the registers the same way: `r4`-`r12`, `sp`, `lr`, `pc` on ARM, `s0`-`s7`,
//! `gp`, `sp`, `fp`, `ra`, `pc` on MIPS).

/// Which register numbering a CIE uses. Only PowerPC has two: GCC's own (lr 65), which
/// it writes to `.eh_frame` and, since GCC 10 or so, to `.debug_frame` too, and the ELF
/// ABI's DWARF numbering (lr 108) that older GCC wrote to `.debug_frame`. The CIE's
/// return-address column tells them apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Numbering {
    Gcc,
    ElfAbi,
}

impl Numbering {
    /// The numbering of a CIE whose return address is in column `ra`.
    pub fn for_cie(arch: CfiArch, ra: u16) -> Numbering {
        match arch {
            CfiArch::Ppc | CfiArch::Ppc64 if ra == 108 => Numbering::ElfAbi,
            _ => Numbering::Gcc,
        }
    }
}

/// The architectures STACK CFI is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CfiArch {
    X86,
    X86_64,
    Arm64,
    Ppc,
    Ppc64,
    /// 32-bit ARM (AArch32), ARM and Thumb code alike.
    Arm,
    /// RISC-V, 32- and 64-bit: the same DWARF numbering.
    Riscv,
    /// MIPS, 32- and 64-bit, either byte order: the same DWARF numbering.
    Mips,
}

impl CfiArch {
    /// The CFI architecture for a Breakpad architecture name, if supported.
    pub fn from_breakpad(arch: &str) -> Option<CfiArch> {
        Some(match arch {
            "x86" => CfiArch::X86,
            "x86_64" => CfiArch::X86_64,
            "arm64" => CfiArch::Arm64,
            "ppc" => CfiArch::Ppc,
            "ppc64" => CfiArch::Ppc64,
            "arm" => CfiArch::Arm,
            "riscv" | "riscv64" => CfiArch::Riscv,
            "mips" | "mips64" => CfiArch::Mips,
            _ => return None,
        })
    }

    /// The DWARF number of the program counter, which expressions may read (the x86_64
    /// PLT's CFA depends on `rip`). Only x86 keeps it in a numbered column.
    pub fn pc_register(self) -> Option<u16> {
        match self {
            CfiArch::X86 => Some(8),
            CfiArch::X86_64 => Some(16),
            _ => None,
        }
    }

    /// The name of DWARF register `reg` in `numbering`, if it has one.
    pub fn name(self, numbering: Numbering, reg: u16) -> Option<&'static str> {
        let reg = usize::from(reg);
        match self {
            CfiArch::X86 => X86.get(reg).copied().flatten(),
            CfiArch::X86_64 => X86_64.get(reg).copied().flatten(),
            CfiArch::Arm64 => match reg {
                0..=31 => ARM64.get(reg).copied(),
                64..=95 => ARM64_V.get(reg - 64).copied(),
                _ => None,
            },
            CfiArch::Ppc | CfiArch::Ppc64 => ppc_name(numbering, reg),
            CfiArch::Arm => match reg {
                0..=15 => ARM.get(reg).copied(),
                64..=95 => ARM_S.get(reg - 64).copied(),
                256..=287 => ARM_D.get(reg - 256).copied(),
                _ => None,
            },
            // x0 is the zero register: no rule ever restores it (Breakpad's table puts
            // "pc" in its slot, which is where its RISC-V context keeps the pc).
            CfiArch::Riscv => match reg {
                1..=31 => RISCV.get(reg).copied(),
                32..=63 => RISCV_F.get(reg - 32).copied(),
                _ => None,
            },
            // GCC's numbering: $f0-$f31 are 32-63, hi and lo 64 and 65. (Breakpad's table
            // goes astray after $ra, with "$lo", "$hi", "$pc" at 32-34; its walker only
            // restores general registers, which agree.)
            CfiArch::Mips => match reg {
                0..=31 => MIPS.get(reg).copied(),
                32..=63 => MIPS_F.get(reg - 32).copied(),
                64 => Some("$hi"),
                65 => Some("$lo"),
                _ => None,
            },
        }
    }

    /// Whether the return address arrives in a register (the link register) rather
    /// than on the stack: then a function with no rule for it returns to that register.
    pub fn has_link_register(self) -> bool {
        !matches!(self, CfiArch::X86 | CfiArch::X86_64)
    }
}

const X86: [Option<&str>; 37] = [
    Some("$eax"),
    Some("$ecx"),
    Some("$edx"),
    Some("$ebx"),
    Some("$esp"),
    Some("$ebp"),
    Some("$esi"),
    Some("$edi"),
    Some("$eip"),
    Some("$eflags"),
    None,
    Some("$st0"),
    Some("$st1"),
    Some("$st2"),
    Some("$st3"),
    Some("$st4"),
    Some("$st5"),
    Some("$st6"),
    Some("$st7"),
    None,
    None,
    Some("$xmm0"),
    Some("$xmm1"),
    Some("$xmm2"),
    Some("$xmm3"),
    Some("$xmm4"),
    Some("$xmm5"),
    Some("$xmm6"),
    Some("$xmm7"),
    Some("$mm0"),
    Some("$mm1"),
    Some("$mm2"),
    Some("$mm3"),
    Some("$mm4"),
    Some("$mm5"),
    Some("$mm6"),
    Some("$mm7"),
];

const X86_64: [Option<&str>; 50] = [
    Some("$rax"),
    Some("$rdx"),
    Some("$rcx"),
    Some("$rbx"),
    Some("$rsi"),
    Some("$rdi"),
    Some("$rbp"),
    Some("$rsp"),
    Some("$r8"),
    Some("$r9"),
    Some("$r10"),
    Some("$r11"),
    Some("$r12"),
    Some("$r13"),
    Some("$r14"),
    Some("$r15"),
    Some("$rip"),
    Some("$xmm0"),
    Some("$xmm1"),
    Some("$xmm2"),
    Some("$xmm3"),
    Some("$xmm4"),
    Some("$xmm5"),
    Some("$xmm6"),
    Some("$xmm7"),
    Some("$xmm8"),
    Some("$xmm9"),
    Some("$xmm10"),
    Some("$xmm11"),
    Some("$xmm12"),
    Some("$xmm13"),
    Some("$xmm14"),
    Some("$xmm15"),
    Some("$st0"),
    Some("$st1"),
    Some("$st2"),
    Some("$st3"),
    Some("$st4"),
    Some("$st5"),
    Some("$st6"),
    Some("$st7"),
    Some("$mm0"),
    Some("$mm1"),
    Some("$mm2"),
    Some("$mm3"),
    Some("$mm4"),
    Some("$mm5"),
    Some("$mm6"),
    Some("$mm7"),
    Some("$rflags"),
];

const ARM64: [&str; 32] = [
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
    "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "x29", "x30", "sp",
];

const ARM64_V: [&str; 32] = [
    "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
    "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",
    "v28", "v29", "v30", "v31",
];

/// ARM IHI 0040 (DWARF for the ARM architecture): r0-r15, the obsolete VFP s0-s31 at
/// 64-95, and d0-d31 at 256-287, which GCC and clang use for saved VFP registers.
const ARM: [&str; 16] = [
    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "sp", "lr",
    "pc",
];

const ARM_S: [&str; 32] = [
    "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "s12", "s13", "s14",
    "s15", "s16", "s17", "s18", "s19", "s20", "s21", "s22", "s23", "s24", "s25", "s26", "s27",
    "s28", "s29", "s30", "s31",
];

const ARM_D: [&str; 32] = [
    "d0", "d1", "d2", "d3", "d4", "d5", "d6", "d7", "d8", "d9", "d10", "d11", "d12", "d13", "d14",
    "d15", "d16", "d17", "d18", "d19", "d20", "d21", "d22", "d23", "d24", "d25", "d26", "d27",
    "d28", "d29", "d30", "d31",
];

/// The RISC-V psABI's ABI names for x0-x31 (x0 unused, see above) and f0-f31 as Breakpad
/// names them.
const RISCV: [&str; 32] = [
    "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4",
    "a5", "a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4",
    "t5", "t6",
];

const RISCV_F: [&str; 32] = [
    "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12", "f13", "f14",
    "f15", "f16", "f17", "f18", "f19", "f20", "f21", "f22", "f23", "f24", "f25", "f26", "f27",
    "f28", "f29", "f30", "f31",
];

const MIPS: [&str; 32] = [
    "$zero", "$at", "$v0", "$v1", "$a0", "$a1", "$a2", "$a3", "$t0", "$t1", "$t2", "$t3", "$t4",
    "$t5", "$t6", "$t7", "$s0", "$s1", "$s2", "$s3", "$s4", "$s5", "$s6", "$s7", "$t8", "$t9",
    "$k0", "$k1", "$gp", "$sp", "$fp", "$ra",
];

const MIPS_F: [&str; 32] = [
    "$f0", "$f1", "$f2", "$f3", "$f4", "$f5", "$f6", "$f7", "$f8", "$f9", "$f10", "$f11", "$f12",
    "$f13", "$f14", "$f15", "$f16", "$f17", "$f18", "$f19", "$f20", "$f21", "$f22", "$f23", "$f24",
    "$f25", "$f26", "$f27", "$f28", "$f29", "$f30", "$f31",
];

const PPC_R: [&str; 32] = [
    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
    "r15", "r16", "r17", "r18", "r19", "r20", "r21", "r22", "r23", "r24", "r25", "r26", "r27",
    "r28", "r29", "r30", "r31",
];

const PPC_F: [&str; 32] = [
    "f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9", "f10", "f11", "f12", "f13", "f14",
    "f15", "f16", "f17", "f18", "f19", "f20", "f21", "f22", "f23", "f24", "f25", "f26", "f27",
    "f28", "f29", "f30", "f31",
];

const PPC_V: [&str; 32] = [
    "v0", "v1", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9", "v10", "v11", "v12", "v13", "v14",
    "v15", "v16", "v17", "v18", "v19", "v20", "v21", "v22", "v23", "v24", "v25", "v26", "v27",
    "v28", "v29", "v30", "v31",
];

const PPC_CR: [&str; 8] = ["cr0", "cr1", "cr2", "cr3", "cr4", "cr5", "cr6", "cr7"];

/// PowerPC: GCC's numbering (its internal register numbers: lr 65, ctr 66, cr0-cr7 68-75,
/// xer 76, v0-v31 77-108) and the ELF ABI's DWARF numbering (cr 64, xer 101, lr 108,
/// ctr 109, cr0-cr7 86-93, v0-v31 1124-1155).
fn ppc_name(numbering: Numbering, reg: usize) -> Option<&'static str> {
    match (numbering, reg) {
        (_, 0..=31) => Some(PPC_R[reg]),
        (_, 32..=63) => Some(PPC_F[reg - 32]),
        (Numbering::Gcc, 65) => Some("lr"),
        (Numbering::Gcc, 66) => Some("ctr"),
        (Numbering::Gcc, 68..=75) => Some(PPC_CR[reg - 68]),
        (Numbering::Gcc, 76) => Some("xer"),
        (Numbering::Gcc, 77..=108) => Some(PPC_V[reg - 77]),
        (Numbering::ElfAbi, 64) => Some("cr"),
        (Numbering::ElfAbi, 101) => Some("xer"),
        (Numbering::ElfAbi, 108) => Some("lr"),
        (Numbering::ElfAbi, 109) => Some("ctr"),
        (Numbering::ElfAbi, 86..=93) => Some(PPC_CR[reg - 86]),
        (Numbering::ElfAbi, 1124..=1155) => Some(PPC_V[reg - 1124]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(CfiArch::X86_64.name(Numbering::Gcc, 3), Some("$rbx"));
        assert_eq!(CfiArch::X86_64.name(Numbering::Gcc, 16), Some("$rip"));
        assert_eq!(CfiArch::X86.name(Numbering::Gcc, 5), Some("$ebp"));
        assert_eq!(CfiArch::Arm64.name(Numbering::Gcc, 30), Some("x30"));
        assert_eq!(CfiArch::Arm64.name(Numbering::Gcc, 31), Some("sp"));
        assert_eq!(CfiArch::Arm64.name(Numbering::Gcc, 72), Some("v8"));
        assert_eq!(CfiArch::Ppc64.name(Numbering::Gcc, 65), Some("lr"));
        assert_eq!(CfiArch::Ppc64.name(Numbering::ElfAbi, 108), Some("lr"));
        assert_eq!(CfiArch::Ppc.name(Numbering::Gcc, 70), Some("cr2"));
        assert_eq!(CfiArch::X86_64.name(Numbering::Gcc, 9999), None);
        assert_eq!(Numbering::for_cie(CfiArch::Ppc64, 65), Numbering::Gcc);
        assert_eq!(Numbering::for_cie(CfiArch::Ppc64, 108), Numbering::ElfAbi);
        assert_eq!(Numbering::for_cie(CfiArch::X86_64, 108), Numbering::Gcc);
        assert_eq!(CfiArch::Arm.name(Numbering::Gcc, 11), Some("r11"));
        assert_eq!(CfiArch::Arm.name(Numbering::Gcc, 14), Some("lr"));
        assert_eq!(CfiArch::Arm.name(Numbering::Gcc, 264), Some("d8"));
        assert_eq!(CfiArch::Riscv.name(Numbering::Gcc, 1), Some("ra"));
        assert_eq!(CfiArch::Riscv.name(Numbering::Gcc, 27), Some("s11"));
        assert_eq!(CfiArch::Riscv.name(Numbering::Gcc, 0), None);
        assert_eq!(CfiArch::Mips.name(Numbering::Gcc, 29), Some("$sp"));
        assert_eq!(CfiArch::Mips.name(Numbering::Gcc, 31), Some("$ra"));
        assert_eq!(CfiArch::Mips.name(Numbering::Gcc, 52), Some("$f20"));
        assert_eq!(CfiArch::from_breakpad("mips64"), Some(CfiArch::Mips));
        assert_eq!(CfiArch::from_breakpad("riscv64"), Some(CfiArch::Riscv));
    }
}
