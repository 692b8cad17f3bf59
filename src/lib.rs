//! dumpsyms: reads an ELF binary with its DWARF debug info and writes a Breakpad text
//! symbol file.
//!
//! ```no_run
//! let dump = dumpsyms::dump(std::path::Path::new("app"), &dumpsyms::Options::default())?;
//! dumpsyms::write_module(&dump.module, &mut std::io::stdout().lock())?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod batch;
pub mod body;
pub mod breakpad;
pub mod debugfile;
pub mod debuginfo;
pub mod demangle;
pub mod dwarf;
pub mod error;
pub mod fetch;
/// Entry points for the fuzz targets (`fuzz/`): built only for them and the tests
/// (feature `fuzzing`).
#[cfg(any(feature = "fuzzing", test))]
#[doc(hidden)]
pub mod fuzzing;
pub mod identity;
pub mod load;
mod mapguard;
pub mod module;
pub mod output;
pub mod paths;
pub mod pdb;
pub mod symbols;
pub mod tree;
pub mod untrusted;
pub mod unwind;
pub mod upload;
mod windows;
mod workers;

use std::path::{Path, PathBuf};

pub use breakpad::store::{store_path, sym_file_name};
pub use breakpad::write_module;
pub use error::{Error, ErrorKind, Warnings};
pub use module::Module;

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
        }
    }
}

/// The result of dumping one file: the model and what was lost on the way.
#[derive(Debug)]
pub struct Dump {
    pub module: Module,
    pub warnings: Warnings,
    /// The separate debug file the DWARF came from, if one was used.
    pub debug_file: Option<PathBuf>,
    /// Set when the binary has no DWARF and no debug file was found: where it was
    /// looked for. Not a problem in the file, so not among the warnings.
    pub no_debug_info: Option<debugfile::Search>,
    /// Servers that could not be used (down, failing): about the network, not the file.
    pub servers: Vec<String>,
}

/// The architectures in `path`: a universal Mach-O's slices, else its one.
pub fn architectures(path: &Path) -> Result<Vec<String>, Error> {
    let path = debugfile::resolve_dsym_bundle(path)?;
    let input = load::Input::open(&path)?;
    if pdb::is_pdb(input.bytes()) {
        return Ok(vec![pdb::identify(&path, input.bytes())?.arch.to_string()]);
    }
    load::architectures(&input)
}

/// Parses an `--extra-info` argument, `KEY value`: the key is upper-cased and must be one
/// word; the value is the rest, on one line.
pub fn parse_extra_info(arg: &str) -> Result<(String, String), String> {
    let (key, value) = arg
        .trim()
        .split_once(char::is_whitespace)
        .unwrap_or((arg.trim(), ""));
    let value = value.trim();
    if key.is_empty() || value.is_empty() {
        return Err(format!("{arg:?} is not 'KEY value'"));
    }
    if arg.contains(['\n', '\r']) {
        return Err(format!("{arg:?} spans lines; an INFO record is one line"));
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
        let resolved = debugfile::resolve_dsym_bundle(path)?;
        let input = load::Input::open(&resolved)?;
        let dump = dump_input(&input, opts, true);
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
        dump_input(&input, opts, false).map(warn_of_deep_names)
    });
    on_workers.map_err(|e| Error::new(Path::new(name), ErrorKind::Threads(e)))?
}

/// One warning for the names left mangled because they are longer than a compiler
/// writes ([`demangle::too_deep`]): counted on the finished model, so that every reader
/// that names things (symbol tables, exports, DWARF, PDB) is covered by one check.
fn warn_of_deep_names(mut dump: Dump) -> Dump {
    let m = &dump.module;
    let names = m.functions.iter().map(|f| f.name.as_str());
    let names = names.chain(m.publics.iter().map(|p| p.name.as_str()));
    let names = names.chain(m.origins.iter().map(String::as_str));
    let deep = names.filter(|n| demangle::too_deep(n)).count();
    if deep > 0 {
        dump.warnings.push(format!(
            "{deep} name(s) left mangled: longer than any compiler writes, they could nest \
             deeper than a demangler may safely follow"
        ));
    }
    dump
}

/// Dumps `input`; `on_disk`: whether companion files are looked for beside it.
fn dump_input(input: &load::Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    if pdb::is_pdb(input.bytes()) {
        return windows::dump_pdb(input, opts, on_disk);
    }
    let path = input.path();
    let obj = load::Object::parse_arch(input, opts.arch.as_deref())?;
    // Written into the MODULE record: a newline in a file name would end it early.
    let name = opts.name.clone().unwrap_or_else(|| basename(path));
    let name = demangle::sanitize(&name).unwrap_or_else(|| "unnamed".into());
    let mut identity = identity::identity(&obj, name);
    override_identity(&mut identity, opts);
    let mut warnings = Warnings::default();
    warnings.0.extend(obj.damage.iter().cloned());
    if opts.header_only {
        return Ok(header_dump(identity, opts, warnings));
    }
    if obj.file.format() == object::BinaryFormat::Pe {
        return windows::dump_pe(&obj, identity, opts, on_disk, warnings);
    }
    dump_object(&obj, identity, opts, warnings, on_disk)
}

/// `-o`, `-b` and `-n` over what the file says. (`-n` for a PE names the module, which
/// is otherwise the PDB's name.)
pub(crate) fn override_identity(identity: &mut identity::Identity, opts: &Options) {
    if let Some(os) = &opts.os {
        identity.os = os.clone();
    }
    if let Some(id) = &opts.debug_id {
        identity.debug_id = id.clone();
    }
    if let Some(name) = &opts.name
        && let Some(name) = demangle::sanitize(name)
    {
        identity.name = name;
    }
}

/// A dump of the MODULE and INFO records only (`-i`).
pub(crate) fn header_dump(
    identity: identity::Identity,
    opts: &Options,
    warnings: Warnings,
) -> Dump {
    let mut module = Module::header(identity);
    module.extra_info = opts.extra_info.clone();
    Dump {
        module,
        warnings,
        debug_file: None,
        no_debug_info: None,
        servers: Vec::new(),
    }
}

/// Dumps an ELF, Mach-O or DWARF-carrying PE object whose identity is known.
pub(crate) fn dump_object(
    obj: &load::Object,
    identity: identity::Identity,
    opts: &Options,
    mut warnings: Warnings,
    on_disk: bool,
) -> Result<Dump, Error> {
    let path = obj.path;
    let layout = identity::layout(obj);

    // A stripped binary: DWARF and the full symbol table come from its debug file;
    // identity, layout and the runtime's unwind tables from the binary itself.
    let macho = obj.file.format() == object::BinaryFormat::MachO;
    let mut no_debug_info = None;
    let mut servers = Vec::new();
    let debug = match (debugfile::lacks_dwarf(obj), macho) {
        _ if !on_disk => None,
        (false, _) => None,
        (true, true) => debugfile::find_dsym(obj, path, &opts.debug_dirs, identity.arch)?,
        (true, false) => {
            let mut search = debugfile::Search::default();
            let found = debugfile::find(obj, path, &opts.debug_dirs, &mut warnings, &mut search)
                .or_else(|| from_debuginfod(obj, opts, &mut search, &mut warnings, &mut servers));
            if found.is_none() {
                no_debug_info = Some(search);
            }
            found
        }
    };
    let debug_obj = match &debug {
        Some(d) => match load::Object::parse_arch(&d.input, Some(identity.arch)) {
            Ok(o) => {
                for damage in &o.damage {
                    warnings.push(format!("debug file {}: {damage}", d.path.display()));
                }
                Some(o)
            }
            Err(e) => {
                warnings.push(format!("debug file {e}"));
                None
            }
        },
        None => None,
    };
    let dwarf_source = debug_obj.as_ref().unwrap_or(obj);

    let dwarf_opts = dwarf::DwarfOptions {
        inlines: opts.inlines,
        cross_unit_refs: opts.cross_unit_refs,
    };
    let split_paths = dwarf::SplitPaths {
        binary: path.to_path_buf(),
        debug_file: debug.as_ref().map(|d| d.path.clone()),
        debug_dirs: opts.debug_dirs.clone(),
        on_disk,
        debuginfod: opts.debuginfod.clone(),
    };
    let mut functions = dwarf::extract(
        dwarf_source,
        &layout,
        dwarf_opts,
        &split_paths,
        &mut warnings,
    );
    for file in &mut functions.files {
        *file = opts.source_paths.apply(file);
    }
    let mut symbols = symbols::function_symbols(dwarf_source, &layout);
    if symbols.is_empty() && debug_obj.is_some() {
        symbols = symbols::function_symbols(obj, &layout);
    }
    // No debug file and no .symtab: MiniDebugInfo's symbol table, beside .dynsym.
    let mini = if debug_obj.is_none() && !symbols::has_symtab(obj) {
        debugfile::mini_debuginfo(obj, path, &mut warnings)
    } else {
        None
    };
    if let Some(mini) = &mini {
        match load::Object::parse(mini) {
            Ok(mini_obj) => symbols.extend(symbols::function_symbols(&mini_obj, &layout)),
            Err(e) => warnings.push(format!("MiniDebugInfo {e}")),
        }
    }
    let bias = if opts.keep_load_address {
        0
    } else {
        layout.load_address
    };
    let arch = identity.arch;
    let mut module = Module::build(identity, functions, symbols, bias, &mut warnings);
    module.write_multiple = opts.multiple_field;
    module.extra_info = opts.extra_info.clone();
    if opts.cfi {
        module.cfi = unwind::extract(obj, debug_obj.as_ref(), arch, &layout, bias, &mut warnings);
    }
    if let Some(d) = &debug {
        d.input.intact()?;
    }
    Ok(Dump {
        module,
        warnings,
        debug_file: debug.map(|d| d.path),
        no_debug_info,
        servers,
    })
}

/// The debug file of `obj` from the debuginfod servers, if they are configured and have
/// it. Servers that are down or failing go to `servers`.
fn from_debuginfod(
    obj: &load::Object,
    opts: &Options,
    search: &mut debugfile::Search,
    warnings: &mut Warnings,
    servers: &mut Vec<String>,
) -> Option<debugfile::DebugFile> {
    let client = opts.debuginfod.as_ref()?;
    search.debuginfod = Some(client.servers.clone());
    let build_id = identity::build_id(obj).filter(|id| id.len() >= 2)?;
    let fetched = client.debuginfo(build_id);
    search.tried.extend(fetched.asked);
    servers.extend(fetched.problems);
    debugfile::open_fetched(obj, &fetched.path?, warnings)
}

pub(crate) fn basename(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.to_string_lossy().into_owned())
}
