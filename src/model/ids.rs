//! What a symbol file is named and found by, as types rather than strings: the debug id
//! and code id a crash report gives for a module, and the CPU it was built for.
//!
//! The ids are kept exactly as they are written (`MODULE`, `INFO CODE_ID`, a symbol
//! store's directory), so a dump's bytes do not depend on how an id is held: their only
//! rule is the one the symbol file's line imposes, one word. Breakpad's dumpers, and a
//! user's `-b`, write ids that are not GUIDs (Mach-O's UUID with a zero age, an ELF
//! build ID cut to 16 bytes, a hand-chosen name), so no narrower form is enforced.

use std::fmt;
use std::str::FromStr;

use crate::error::ArgumentError;

/// A module's debug id as a symbol file's `MODULE` record writes it (for the files this
/// crate writes: 32 upper-case hex digits of a GUID and the age in hex), and the
/// directory of a symbol store the file goes in.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DebugId(String);

/// A module's code id as `INFO CODE_ID` writes it: a PE's `TimeDateStamp` and
/// `SizeOfImage`, an ELF file's GNU build ID, or a Mach-O UUID, in hex.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CodeId(String);

/// One word of a record's line: not empty, no whitespace or control character.
fn one_word(s: &str) -> bool {
    !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control())
}

macro_rules! id_type {
    ($ty:ident, $err:ident) => {
        impl $ty {
            /// An id this crate computed: always one word.
            pub(crate) fn computed(id: String) -> $ty {
                debug_assert!(one_word(&id), "{id:?}");
                $ty(id)
            }
        }

        impl FromStr for $ty {
            type Err = ArgumentError;

            /// Any single word (no space, no control character): ids are written and
            /// looked up as given.
            fn from_str(s: &str) -> Result<$ty, ArgumentError> {
                match one_word(s) {
                    true => Ok($ty(s.to_string())),
                    false => Err(ArgumentError::$err(s.to_string())),
                }
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl AsRef<str> for $ty {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $ty {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $ty {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }
    };
}

id_type!(DebugId, DebugId);
id_type!(CodeId, CodeId);

/// The CPU a module was built for, as Breakpad names it in the `MODULE` record. New
/// architectures may be added.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Arch {
    /// 32-bit x86 (`x86`; also read as `i386`, `i686`).
    X86,
    /// x86-64 (`x86_64`; also read as `amd64`, `x86_64h`).
    X86_64,
    /// 32-bit Arm (`arm`; also read as `armv7` and Apple's other Arm names).
    Arm,
    /// 64-bit Arm (`arm64`; also read as `aarch64`, `arm64e`, `arm64_32`).
    Arm64,
    /// 32-bit PowerPC (`ppc`).
    Ppc,
    /// 64-bit PowerPC (`ppc64`; either byte order).
    Ppc64,
    /// 32-bit MIPS (`mips`, also the N32 ABI).
    Mips,
    /// 64-bit MIPS (`mips64`).
    Mips64,
    /// 32-bit RISC-V (`riscv`).
    Riscv,
    /// 64-bit RISC-V (`riscv64`).
    Riscv64,
    /// IBM Z (`s390x`).
    S390x,
    /// 32-bit SPARC (`sparc`).
    Sparc,
    /// 64-bit SPARC (`sparcv9`).
    Sparcv9,
    /// A machine Breakpad has no name for (`unknown`).
    #[default]
    Unknown,
}

/// Every architecture with its Breakpad name, in the order they are listed.
const NAMES: &[(Arch, &str)] = &[
    (Arch::X86, "x86"),
    (Arch::X86_64, "x86_64"),
    (Arch::Arm, "arm"),
    (Arch::Arm64, "arm64"),
    (Arch::Ppc, "ppc"),
    (Arch::Ppc64, "ppc64"),
    (Arch::Mips, "mips"),
    (Arch::Mips64, "mips64"),
    (Arch::Riscv, "riscv"),
    (Arch::Riscv64, "riscv64"),
    (Arch::S390x, "s390x"),
    (Arch::Sparc, "sparc"),
    (Arch::Sparcv9, "sparcv9"),
    (Arch::Unknown, "unknown"),
];

/// Other tools' names for the same CPUs: Apple's slice names (`lipo`, Breakpad Mac's
/// `-a`), GNU triples' first part, Windows' `amd64`.
const ALIASES: &[(&str, Arch)] = &[
    ("i386", Arch::X86),
    ("i486", Arch::X86),
    ("i586", Arch::X86),
    ("i686", Arch::X86),
    ("amd64", Arch::X86_64),
    ("x86_64h", Arch::X86_64),
    ("aarch64", Arch::Arm64),
    ("arm64e", Arch::Arm64),
    ("arm64_32", Arch::Arm64),
    ("armv6", Arch::Arm),
    ("armv7", Arch::Arm),
    ("armv7s", Arch::Arm),
    ("armv7k", Arch::Arm),
    ("armv7f", Arch::Arm),
    ("armv7m", Arch::Arm),
    ("armv7em", Arch::Arm),
    ("thumbv7", Arch::Arm),
    ("ppc7400", Arch::Ppc),
    ("ppc970", Arch::Ppc),
    ("powerpc", Arch::Ppc),
    ("powerpc64", Arch::Ppc64),
    ("ppc64le", Arch::Ppc64),
    ("powerpc64le", Arch::Ppc64),
];

impl Arch {
    /// Breakpad's name: what the `MODULE` record writes.
    pub(crate) fn name(self) -> &'static str {
        NAMES
            .iter()
            .find(|(a, _)| *a == self)
            .map_or("unknown", |(_, n)| n)
    }

    /// The architecture Breakpad names `name` (exactly, as the readers give it).
    pub(crate) fn from_name(name: &str) -> Arch {
        NAMES
            .iter()
            .find(|(_, n)| *n == name)
            .map_or(Arch::Unknown, |(a, _)| *a)
    }
}

impl FromStr for Arch {
    type Err = ArgumentError;

    /// Breakpad's name, or another tool's for the same CPU (`i386`, `aarch64`,
    /// `arm64e`, `armv7`, …), in any case.
    fn from_str(s: &str) -> Result<Arch, ArgumentError> {
        let lower = s.to_ascii_lowercase();
        NAMES
            .iter()
            .find(|(_, n)| *n == lower)
            .map(|(a, _)| *a)
            .or_else(|| ALIASES.iter().find(|(n, _)| *n == lower).map(|(_, a)| *a))
            .ok_or_else(|| ArgumentError::Arch(s.to_string()))
    }
}

impl fmt::Display for Arch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_breakpad_name_reads_back_as_its_arch() {
        for (arch, name) in NAMES {
            assert_eq!(arch.name(), *name);
            assert_eq!(Arch::from_name(name), *arch);
            assert_eq!(name.parse::<Arch>().unwrap(), *arch);
            assert_eq!(name.to_ascii_uppercase().parse::<Arch>().unwrap(), *arch);
        }
        for (alias, arch) in ALIASES {
            assert_eq!(alias.parse::<Arch>().unwrap(), *arch, "{alias}");
        }
        assert!("vax".parse::<Arch>().is_err());
        assert_eq!(Arch::from_name("vax"), Arch::Unknown);
    }

    #[test]
    fn ids_are_one_word_kept_as_written() {
        let id: DebugId = "abc-DEF0".parse().unwrap();
        assert_eq!(id.to_string(), "abc-DEF0");
        assert_eq!(id, "abc-DEF0");
        for bad in ["", "a b", "a\tb", "a\u{7}"] {
            assert!(bad.parse::<DebugId>().is_err(), "{bad:?}");
            assert!(bad.parse::<CodeId>().is_err(), "{bad:?}");
        }
        let code: CodeId = "5F8A1B2C1d000".parse().unwrap();
        assert_eq!(code.as_ref(), "5F8A1B2C1d000");
    }
}
