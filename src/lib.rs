//! dumpsyms: reads a compiled binary (ELF, Mach-O, PE) with its debug info (DWARF in
//! the binary, a separate debug file or a dSYM; a PDB) and its unwind tables, and writes
//! a Breakpad text symbol file.
//!
//! ```no_run
//! let dump = dumpsyms::dump(std::path::Path::new("app"), &dumpsyms::Options::default())?;
//! let how = dumpsyms::WriteOptions::default();
//! dumpsyms::write_module(&dump.module, &how, &mut std::io::stdout().lock())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

//! The public surface: [`dump`] a path (or [`dump_bytes`] bytes in memory) to a
//! [`Module`], [`write_module`] it, name it in a symbol store ([`store_path`]), dump
//! whole trees into a store ([`batch`]) and send symbol files to a server ([`upload`]).
//! Everything else (the readers of each format, the unwind-table decoders, the finder of
//! companion files) is private to the crate; `docs/ARCHITECTURE.md` shows the house.

#![warn(missing_docs)]
#![warn(clippy::too_many_lines)]

#[cfg(feature = "archives")]
mod archive;
pub mod batch;
pub mod breakpad;
mod contain;
mod demangle;
mod dumping;
mod dwarf;
mod error;
pub mod fetch;
/// Entry points for the fuzz targets (`fuzz/`) and the internals the integration tests
/// drive directly: built only for them (feature `fuzzing`). Not a stable API.
#[cfg(any(feature = "fuzzing", test))]
#[doc(hidden)]
pub mod fuzzing;
mod identity;
mod load;
mod locate;
mod magic;
mod mapguard;
mod model;
mod msfz;
mod named;
mod options;
mod output;
pub mod paths;
mod pdb;
mod pipeline;
mod scratch;
pub mod symbolize;
mod symbols;
mod untrusted;
mod unwind;
#[cfg(feature = "net")]
pub mod upload;
mod workers;

use std::path::PathBuf;

pub use batch::tree::is_dsym_bundle;
pub use breakpad::store::{store_path, sym_file_name};
pub use breakpad::{WriteOptions, write_module};
pub use dumping::{architectures, dump, dump_bytes};
pub use error::{ArgumentError, Error, ErrorKind, Warning, WarningKind, Warnings};
pub use locate::Search;
pub use model::ids::{Arch, CodeId, DebugId};
pub use model::module::{Function, Inline, Line, Module, Public};
pub use options::{Dump, NoStackRecords, Options};
pub use paths::SourcePaths;
pub use untrusted::{Unsafe, UnsafeName, for_terminal};

/// Makes this process hand Swift names to helper processes started from `exe` (the
/// `dumpsyms` executable, or any that calls [`serve_swift_names`] when its first
/// argument is [`SWIFT_HELPER_ARG`]): Swift's demangler is a C++ library that malformed
/// names can crash or exhaust memory with, so it runs nowhere else. The `dumpsyms`
/// command does this; without it Swift names are left raw.
pub fn isolate_swift_demangler(exe: PathBuf) {
    demangle::swift_helper::isolate(exe);
}

/// The first argument that starts the executable as a Swift-name helper.
pub const SWIFT_HELPER_ARG: &str = demangle::swift_helper::HELPER_ARG;

/// Serves Swift names on standard input and output until input ends (see
/// [`isolate_swift_demangler`]); the process's exit code.
pub fn serve_swift_names() -> u8 {
    demangle::swift_helper::serve()
}
