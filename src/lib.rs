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
mod assemble;
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
pub use breakpad::store::store_path;
pub use breakpad::{WriteOptions, write_module};
pub use dumping::{architectures, dump, dump_bytes};
pub use error::{ArgumentError, Error, ErrorKind, Reason, Warning, WarningKind, Warnings};
pub use locate::Search;
pub use model::ids::{Arch, CodeId, DebugId};
pub use model::module::{Function, Inline, Line, Module, Public};
pub use options::{Dump, NoStackRecords, Options};
pub use paths::SourcePaths;
pub use untrusted::{Unsafe, UnsafeName};

/// `s` as it may be shown to a user: each password, key or token that a URL given to
/// [`hide_secrets_of`] holds replaced, every control character and Unicode direction
/// override escaped (`\n`, `\e`, `\u{202e}` …), and at most 4,096 bytes, with what was
/// cut counted.
pub fn for_terminal(s: &str) -> String {
    untrusted::for_terminal(&fetch::redact::text(s))
}

/// Registers the password and the credential query values of `url`, a URL the user
/// gave, as secrets of this run: [`for_terminal`], and every message this library
/// writes, replace them wherever they appear, as written or percent-decoded.
pub fn hide_secrets_of(url: &str) {
    fetch::redact::url_with_secrets(url);
}

/// Where Swift names are demangled: Swift's demangler is a C++ library that malformed
/// names can crash or exhaust memory with, so it runs only in helper processes started
/// from `exe` (the `dumpsyms` executable, or any that calls this first thing in
/// `main`). Started as such a helper (by its first argument), this process serves names
/// on standard input and output until input ends, and the exit code to end with is
/// returned. Otherwise dumps in this process hand Swift names to helpers started from
/// `exe`, and None is returned. Without this call (or without `exe`) Swift names are
/// left raw.
pub fn swift_demangler(exe: Option<PathBuf>) -> Option<u8> {
    let helper = std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == demangle::swift_helper::HELPER_ARG);
    if helper {
        return Some(demangle::swift_helper::serve());
    }
    if let Some(exe) = exe {
        demangle::swift_helper::isolate(exe);
    }
    None
}
