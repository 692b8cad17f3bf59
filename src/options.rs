//! What a dump is asked to do ([`Options`]) and what it gives back ([`Dump`]): the types
//! the library's entry points take and return, in a module of their own so that the
//! readers that fill them import them from here, not from the code that calls them.

use std::path::{Path, PathBuf};

use crate::error::Warnings;
use crate::model::ids::{Arch, DebugId};
use crate::model::module::Module;
use crate::{fetch, locate, paths};

/// What to dump and how. Start from [`Options::default`] and set fields: new fields
/// may be added, so the struct cannot be written out whole outside the crate.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
    pub debug_id: Option<DebugId>,
    /// Keep absolute addresses instead of making them relative to the load address (`-a`).
    pub keep_load_address: bool,
    /// Follow DWARF references between compilation units (`-r` turns this off).
    pub cross_unit_refs: bool,
    /// Extra directories to search for separate debug files (and `.dSYM` bundles).
    pub debug_dirs: Vec<PathBuf>,
    /// The slice of a universal Mach-O to dump (`--arch`).
    pub arch: Option<Arch>,
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
#[non_exhaustive]
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

/// A path's file name, or the path where it has none: the module name a dump gives.
pub(crate) fn basename(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}
