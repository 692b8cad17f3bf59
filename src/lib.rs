//! dumpsyms: reads an ELF binary with its DWARF debug info and writes a Breakpad text
//! symbol file.
//!
//! ```no_run
//! let dump = dumpsyms::dump(std::path::Path::new("app"), &dumpsyms::Options::default())?;
//! dumpsyms::write_module(&dump.module, &mut std::io::stdout().lock())?;
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
mod body;
mod breakpad;
pub mod byid;
mod contain;
mod debuginfo;
mod demangle;
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
mod mapguard;
pub mod missing;
mod module;
mod output;
pub mod paths;
mod pdb;
mod pipeline;
pub mod shard;
pub mod symbolize;
mod symbols;
mod tree;
mod untrusted;
mod unwind;
#[cfg(feature = "net")]
pub mod upload;
mod workers;

use std::path::{Path, PathBuf};

pub use breakpad::store::{store_path, sym_file_name};
pub use breakpad::write_module;
pub use error::{ArgumentError, Error, ErrorKind, Warning, WarningKind, Warnings};
pub use locate::Search;
pub use module::{Function, Inline, Line, Module, Public};
pub use paths::{SourcePaths, parse_prefix_map};
pub use tree::is_dsym_bundle;
pub use untrusted::{Unsafe, UnsafeName, for_terminal};

/// What to dump and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Only the `MODULE` and `INFO` records (`-i`).
    pub header_only: bool,
    /// Emit `STACK CFI` records (`-c` turns this off).
    pub cfi: bool,
    /// Emit `INLINE_ORIGIN` and `INLINE` records (`-d`, `--inlines`).
    pub inlines: bool,
    /// Write the optional `m` field on `FUNC` and `PUBLIC` (`-m`).
    pub multiple_field: bool,
    /// Module name instead of the file's basename (`-n`).
    pub name: Option<String>,
    /// Operating system field instead of `Linux` (`-o`).
    pub os: Option<String>,
    /// Debug id instead of the computed one (`-b`).
    pub debug_id: Option<String>,
    /// Keep absolute addresses instead of making them relative to the load address (`-a`).
    pub keep_load_address: bool,
    /// Follow DWARF references between compilation units (`-r` turns this off).
    pub cross_unit_refs: bool,
    /// Extra directories to search for separate debug files (and `.dSYM` bundles).
    pub debug_dirs: Vec<PathBuf>,
    /// The slice of a universal Mach-O to dump (`--arch`).
    pub arch: Option<String>,
    /// How FILE paths are written (normalized; `--prefix-map`).
    pub source_paths: paths::SourcePaths,
    /// Extra `INFO KEY value` records (`--extra-info`), written after the others.
    pub extra_info: Vec<(String, String)>,
    /// Where to fetch debug files not found locally (`DEBUGINFOD_URLS`); `None`: off.
    pub debuginfod: Option<fetch::debuginfod::Debuginfod>,
    /// Where to look for and fetch PDBs (`--symbol-server`, `_NT_SYMBOL_PATH`).
    pub symbol_path: Option<fetch::symsrv::SymbolPath>,
    /// The other half of a Windows module, given beside the input: the PDB of a PE, or
    /// the PE of a PDB.
    pub companion: Option<PathBuf>,
    /// Worker threads (`--jobs`; `None`: one per CPU). The output is the same for any
    /// number.
    pub jobs: Option<usize>,
    /// Write `INFO GENERATOR` (`--no-generator` turns this off).
    pub generator: bool,
    /// A dump that writes no STACK record is a failure (`--check-cfi`, Mozilla's).
    pub require_stack_records: bool,
    /// Name a function by its symbol-table name where the debug information names it
    /// otherwise (Breakpad Mac's `-x`).
    pub prefer_symbol_names: bool,
    /// A PE is read alone: its PDB is not looked for (Breakpad Windows' `--pe`).
    pub pe_alone: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            header_only: false,
            cfi: true,
            inlines: false,
            multiple_field: false,
            name: None,
            os: None,
            debug_id: None,
            keep_load_address: false,
            cross_unit_refs: true,
            debug_dirs: Vec::new(),
            arch: None,
            source_paths: paths::SourcePaths::default(),
            extra_info: Vec::new(),
            debuginfod: None,
            symbol_path: None,
            companion: None,
            jobs: None,
            generator: true,
            require_stack_records: false,
            prefer_symbol_names: false,
            pe_alone: false,
        }
    }
}

/// The result of dumping one file: the model and what was lost on the way.
#[derive(Debug)]
pub struct Dump {
    /// The symbol file's contents.
    pub module: Module,
    /// What was lost to damaged or unsupported input, and failing servers.
    pub warnings: Warnings,
    /// The separate debug file the DWARF came from, if one was used.
    pub debug_file: Option<PathBuf>,
    /// Set when the binary has no DWARF and no debug file was found: where it was
    /// looked for. Not a problem in the file, so not among the warnings.
    pub no_debug_info: Option<locate::Search>,
    /// Set when STACK records were asked for and the input has none to give: why, and
    /// what to dump instead. Not a problem in the file, so not among the warnings.
    pub no_stack_records: Option<NoStackRecords>,
}

/// Why a dump that asked for STACK records has none: its input holds no unwind tables
/// for the module's code. Its words say what to dump instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NoStackRecords {
    /// A dSYM: `__unwind_info` and `__eh_frame` stay in the binary.
    #[error(
        "a dSYM holds no unwind tables (__unwind_info and __eh_frame stay in the binary): \
         dump the binary, which finds its dSYM beside it"
    )]
    Dsym,
    /// A debug-only file (`objcopy --only-keep-debug`): its sections have no bytes.
    #[error(
        "a debug-only file (objcopy --only-keep-debug) keeps no unwind tables' bytes \
         (its .eh_frame is empty): dump the binary it belongs to, which finds it by build \
         ID, debug link or --debug-dir"
    )]
    DebugOnly,
    /// A PDB whose image was not found beside it (the image has the `.pdata`).
    #[error(
        "a PDB holds no unwind tables (they are the image's .pdata), and no image of \
         this build was found beside it (looked for {}.exe, .dll, .sys, .ocx, .drv and \
         .efi): give the image after the PDB, or dump the image, or use --code-id to \
         fetch it from a symbol server",
        stem.display()
    )]
    PdbWithoutImage {
        /// The PDB's path without its extension: where the image was looked for.
        stem: PathBuf,
    },
    /// A binary built without unwind tables for its code.
    #[error(
        "the binary has no unwind tables (.eh_frame, .debug_frame, __unwind_info, .ARM.exidx \
         or .pdata) covering its code: it was built without them"
    )]
    NoUnwindTables,
}

/// The architectures in `path`: a universal Mach-O's slices, else its one.
pub fn architectures(path: &Path) -> Result<Vec<String>, Error> {
    let path = locate::resolve_dsym_bundle(path)?;
    let input = load::Input::open(&path)?;
    if pdb::is_pdb(input.bytes()) {
        return Ok(vec![pdb::identify(&path, input.bytes())?.arch.to_string()]);
    }
    load::architectures(&input)
}

/// Parses an `--extra-info` argument, `KEY value`: the key is upper-cased and must be one
/// word; the value is the rest, on one line.
pub fn parse_extra_info(arg: &str) -> Result<(String, String), ArgumentError> {
    let (key, value) = arg
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((arg.trim(), ""));
    let value = value.trim();
    if key.is_empty() || value.is_empty() {
        return Err(ArgumentError::ExtraInfo(arg.to_string()));
    }
    if arg.contains(['\n', '\r']) {
        return Err(ArgumentError::ExtraInfoLines(arg.to_string()));
    }
    Ok((key.to_ascii_uppercase(), value.to_string()))
}

/// Reads `path` and builds its symbol file model. Fails only when nothing useful can be
/// produced; damage that loses part of the information is reported in the warnings.
///
/// The work runs on the library's own worker threads (see [`Options::jobs`]), whose
/// stacks are as deep as the demanglers need.
pub fn dump(path: &Path, opts: &Options) -> Result<Dump, Error> {
    let on_workers = workers::run(opts.jobs, || {
        // A .dSYM bundle stands for the DWARF file inside it.
        let resolved = locate::resolve_dsym_bundle(path)?;
        let input = load::Input::open(&resolved)?;
        let dump = pipeline::dump_input(&input, opts, true);
        input.intact()?;
        dump.map(warn_of_deep_names)
    });
    on_workers.map_err(|e| Error::new(path, ErrorKind::Threads(e)))?
}

/// Dumps a file held in memory, as [`dump`] dumps one on disk; `name` stands for its path
/// in messages and gives the module name. Nothing on disk is read: no separate debug
/// file, `.dwo`/`.dwp` file or dwz alternate file is looked for, so the result depends
/// on the bytes alone (what fuzzing and services dumping uploads need).
pub fn dump_bytes(name: &str, bytes: Vec<u8>, opts: &Options) -> Result<Dump, Error> {
    let on_workers = workers::run(opts.jobs, || {
        let input = load::Input::from_bytes(PathBuf::from(name), bytes);
        pipeline::dump_input(&input, opts, false).map(warn_of_deep_names)
    });
    on_workers.map_err(|e| Error::new(Path::new(name), ErrorKind::Threads(e)))?
}

/// Makes this process hand Swift names to helper processes started from `exe` (the
/// `dumpsyms` executable, or any that calls [`serve_swift_names`] when its first
/// argument is [`SWIFT_HELPER_ARG`]): Swift's demangler is a C++ library that malformed
/// names can crash or exhaust memory with, so it runs nowhere else. The `dumpsyms`
/// command does this; without it Swift names are left raw.
#[doc(hidden)]
pub fn isolate_swift_demangler(exe: PathBuf) {
    demangle::swift_helper::isolate(exe);
}

/// The first argument that starts the executable as a Swift-name helper.
#[doc(hidden)]
pub const SWIFT_HELPER_ARG: &str = demangle::swift_helper::HELPER_ARG;

/// Serves Swift names on standard input and output until input ends (see
/// [`isolate_swift_demangler`]); the process's exit code.
#[doc(hidden)]
pub fn serve_swift_names() -> u8 {
    demangle::swift_helper::serve()
}

/// One warning for the names left mangled because they are longer than a compiler
/// writes ([`demangle::too_deep`]), and one for the Swift names Swift's demangler could
/// not read: counted on the finished model, so that every reader that names things
/// (symbol tables, exports, DWARF, PDB) is covered by one check.
fn warn_of_deep_names(mut dump: Dump) -> Dump {
    let m = &dump.module;
    let names = m.functions.iter().map(|f| f.name.as_str());
    let names = names.chain(m.publics.iter().map(|p| p.name.as_str()));
    let names = names.chain(m.origins.iter().map(String::as_str));
    let (mut deep, mut swift) = (0, 0);
    for name in names {
        if demangle::too_deep(name) {
            deep += 1;
        } else if demangle::is_swift(name) {
            swift += 1;
        }
    }
    if deep > 0 {
        dump.warnings.push(
            WarningKind::Names,
            format!(
                "{deep} name(s) left mangled: longer than any compiler writes, they could nest \
             deeper than a demangler may safely follow"
            ),
        );
    }
    if swift > 0 {
        let why = if demangle::swift_helper::isolated() {
            "Swift's demangler could not read them"
        } else {
            "Swift's demangler runs only in a helper process, which this program starts \
             none of (dumpsyms::isolate_swift_demangler)"
        };
        dump.warnings.push(
            WarningKind::Names,
            format!("{swift} Swift name(s) left mangled: {why}"),
        );
    }
    dump
}

pub(crate) fn basename(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}
