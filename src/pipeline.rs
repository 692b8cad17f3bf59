//! One dump, for every format, top-down: identify the input (format, architecture,
//! slice) → locate its companion files → read its sources (debug information, symbols,
//! exports, unwind tables, frame data) → [`Module::build`] once → the [`Dump`].
//!
//! ELF, Mach-O and a PE carrying DWARF (MinGW) share the object path; a PE with its PDB
//! and a PDB (with the PE beside it, when there is one) take their records from
//! [`crate::windows`] and [`crate::pdb`]. Nothing is added to a module after it is
//! built, and no reader calls back into this file.

use crate::debugfile::{self, DebugFile, Search};
use crate::error::{Error, ErrorKind, Warnings};
use crate::identity::{self, Identity, Layout};
use crate::load::{Input, Object};
use crate::module::{Module, Sources};
use crate::windows::{self, PdbSearch};
use crate::{Dump, Options, basename, demangle, dwarf, pdb, symbols, unwind};

/// Dumps `input`; `on_disk`: whether companion files are looked for beside it.
pub(crate) fn dump_input(input: &Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    if pdb::is_pdb(input.bytes()) {
        return pdb_dump(input, opts, on_disk);
    }
    let obj = Object::parse_arch(input, opts.arch.as_deref())?;
    // Written into the MODULE record: a newline in a file name would end it early.
    let name = opts.name.clone().unwrap_or_else(|| basename(input.path()));
    let name = demangle::sanitize(&name).unwrap_or_else(|| "unnamed".into());
    let mut identity = identity::identity(&obj, name);
    override_identity(&mut identity, opts);
    let mut warnings = Warnings::default();
    warnings.0.extend(obj.damage.iter().cloned());
    if opts.header_only {
        return Ok(header_dump(identity, opts, warnings));
    }
    if obj.file.format() == object::BinaryFormat::Pe {
        return pe_dump(&obj, identity, opts, on_disk, warnings);
    }
    let read = read_object(&obj, identity, opts, &mut warnings, on_disk)?;
    finish(read, opts, warnings)
}

/// `-o`, `-b` and `-n` over what the file says. (`-n` for a PE names the module, which
/// is otherwise the PDB's name.)
fn override_identity(identity: &mut Identity, opts: &Options) {
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
fn header_dump(identity: Identity, opts: &Options, warnings: Warnings) -> Dump {
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

/// What reading an object file found, before the module is built.
struct ObjectRead {
    sources: Sources,
    /// Found while indexing the unwind tables; told after the model's own warnings.
    cfi_warnings: Warnings,
    /// The separate debug file the DWARF came from.
    debug: Option<DebugFile>,
    /// Where debug information was looked for, when none was found.
    no_debug_info: Option<Search>,
    /// Servers that could not be used.
    servers: Vec<String>,
}

/// Builds the module from what was read; the debug file must still be whole.
fn finish(read: ObjectRead, opts: &Options, mut warnings: Warnings) -> Result<Dump, Error> {
    let module = build(read.sources, opts, &mut warnings);
    warnings.extend(read.cfi_warnings);
    if let Some(d) = &read.debug {
        d.input.intact()?;
    }
    Ok(Dump {
        module,
        warnings,
        debug_file: read.debug.map(|d| d.path),
        no_debug_info: read.no_debug_info,
        servers: read.servers,
    })
}

/// [`Module::build`], with the output options.
fn build(mut sources: Sources, opts: &Options, warnings: &mut Warnings) -> Module {
    sources.write_multiple = opts.multiple_field;
    sources.extra_info = opts.extra_info.clone();
    Module::build(sources, warnings)
}

/// An ELF, Mach-O or DWARF-carrying PE object whose identity is known: its debug file
/// (a stripped binary's DWARF and full symbol table are there; identity, layout and the
/// runtime's unwind tables stay with the binary), DWARF, symbols and unwind tables.
fn read_object(
    obj: &Object,
    identity: Identity,
    opts: &Options,
    warnings: &mut Warnings,
    on_disk: bool,
) -> Result<ObjectRead, Error> {
    let layout = identity::layout(obj);
    let mut no_debug_info = None;
    let mut servers = Vec::new();
    let debug = match on_disk && debugfile::lacks_dwarf(obj) {
        false => None,
        true => locate_debug_file(
            obj,
            &identity,
            opts,
            warnings,
            &mut no_debug_info,
            &mut servers,
        )?,
    };
    let debug_obj = debug
        .as_ref()
        .and_then(|d| parse_debug_file(d, identity.arch, warnings));
    let dwarf_source = debug_obj.as_ref().unwrap_or(obj);
    let debug_info = read_dwarf(
        dwarf_source,
        obj,
        &layout,
        debug.as_ref(),
        opts,
        on_disk,
        warnings,
    );
    let symbols = read_symbols(obj, debug_obj.as_ref(), &layout, warnings);
    let bias = if opts.keep_load_address {
        0
    } else {
        layout.load_address
    };
    let arch = identity.arch;
    let mut sources = Sources::new(identity, debug_info, symbols, bias);
    let mut cfi_warnings = Warnings::default();
    if opts.cfi {
        sources.cfi = unwind::extract(
            obj,
            debug_obj.as_ref(),
            arch,
            &layout,
            bias,
            &mut cfi_warnings,
        );
    }
    drop(debug_obj);
    Ok(ObjectRead {
        sources,
        cfi_warnings,
        debug,
        no_debug_info,
        servers,
    })
}

/// The separate debug file of a binary without DWARF: a dSYM for Mach-O; else by build
/// ID and debug link, then from debuginfod. When none is found, `no_debug_info` says
/// where it was looked for.
fn locate_debug_file(
    obj: &Object,
    identity: &Identity,
    opts: &Options,
    warnings: &mut Warnings,
    no_debug_info: &mut Option<Search>,
    servers: &mut Vec<String>,
) -> Result<Option<DebugFile>, Error> {
    if obj.file.format() == object::BinaryFormat::MachO {
        return debugfile::find_dsym(obj, obj.path, &opts.debug_dirs, identity.arch);
    }
    let mut search = Search::default();
    let found = debugfile::find(obj, obj.path, &opts.debug_dirs, warnings, &mut search)
        .or_else(|| from_debuginfod(obj, opts, &mut search, warnings, servers));
    if found.is_none() {
        *no_debug_info = Some(search);
    }
    Ok(found)
}

/// The debug file of `obj` from the debuginfod servers, if they are configured and have
/// it. Servers that are down or failing go to `servers`.
fn from_debuginfod(
    obj: &Object,
    opts: &Options,
    search: &mut Search,
    warnings: &mut Warnings,
    servers: &mut Vec<String>,
) -> Option<DebugFile> {
    let client = opts.debuginfod.as_ref()?;
    search.debuginfod = Some(client.servers.clone());
    let build_id = identity::build_id(obj).filter(|id| id.len() >= 2)?;
    let fetched = client.debuginfo(build_id);
    search.tried.extend(fetched.asked);
    servers.extend(fetched.problems);
    debugfile::open_fetched(obj, &fetched.path?, warnings)
}

/// The debug file as an object of `arch`, its damage among the warnings.
fn parse_debug_file<'a>(
    d: &'a DebugFile,
    arch: &str,
    warnings: &mut Warnings,
) -> Option<Object<'a>> {
    match Object::parse_arch(&d.input, Some(arch)) {
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
    }
}

/// Functions, lines and inline records from the DWARF of `source` (the binary or its
/// debug file), FILE paths as `--prefix-map` has them.
fn read_dwarf(
    source: &Object,
    binary: &Object,
    layout: &Layout,
    debug: Option<&DebugFile>,
    opts: &Options,
    on_disk: bool,
    warnings: &mut Warnings,
) -> crate::debuginfo::DebugInfo {
    let dwarf_opts = dwarf::DwarfOptions {
        inlines: opts.inlines,
        cross_unit_refs: opts.cross_unit_refs,
    };
    let split_paths = dwarf::SplitPaths {
        binary: binary.path.to_path_buf(),
        debug_file: debug.map(|d| d.path.clone()),
        debug_dirs: opts.debug_dirs.clone(),
        on_disk,
        debuginfod: opts.debuginfod.clone(),
    };
    let mut info = dwarf::extract(source, layout, dwarf_opts, &split_paths, warnings);
    for file in &mut info.files {
        *file = opts.source_paths.apply(file);
    }
    info
}

/// The function symbols: the debug file's full table (else the binary's), and with
/// neither a debug file nor `.symtab`, MiniDebugInfo's table beside `.dynsym`.
fn read_symbols(
    obj: &Object,
    debug_obj: Option<&Object>,
    layout: &Layout,
    warnings: &mut Warnings,
) -> Vec<symbols::Symbol> {
    let mut found = symbols::function_symbols(debug_obj.unwrap_or(obj), layout);
    if found.is_empty() && debug_obj.is_some() {
        found = symbols::function_symbols(obj, layout);
    }
    if debug_obj.is_some() || symbols::has_symtab(obj) {
        return found;
    }
    if let Some(mini) = debugfile::mini_debuginfo(obj, obj.path, warnings) {
        match Object::parse(&mini) {
            Ok(mini_obj) => found.extend(symbols::function_symbols(&mini_obj, layout)),
            Err(e) => warnings.push(format!("MiniDebugInfo {e}")),
        }
    }
    found
}

/// A PE: with its PDB when one is found, else from the DWARF (MinGW) or the export
/// table and unwind tables in the image.
fn pe_dump(
    obj: &Object,
    identity: Identity,
    opts: &Options,
    on_disk: bool,
    mut warnings: Warnings,
) -> Result<Dump, Error> {
    let facts = identity::pe_facts(obj)
        .ok_or_else(|| Error::new(obj.path, ErrorKind::Corrupt("not a PE image".into())))?;
    let mut search = PdbSearch::default();
    let pdb_path = windows::locate_pdb(obj, facts.pdb.as_ref(), opts, on_disk, &mut search)?;
    let servers = std::mem::take(&mut search.servers);
    if let Some(path) = pdb_path {
        let input = Input::open(&path)?;
        let dump = pe_with_pdb(obj, identity, &input, opts, warnings, servers);
        input.intact()?;
        return dump;
    }
    // The image's own DWARF only: a PE's debug files are PDBs.
    let mut read = read_object(obj, identity, opts, &mut warnings, false)?;
    if let Some(want) = facts.pdb.filter(|_| debugfile::lacks_dwarf(obj)) {
        read.no_debug_info = Some(Search {
            tried: search.tried,
            unusable: search.unusable,
            pdb: Some(format!("{} {}", want.file_name(), want.debug_id())),
            ..Default::default()
        });
    }
    read.servers.extend(servers);
    read.sources.exports = windows::exports(obj);
    finish(read, opts, warnings)
}

/// A PE with its PDB: records from the PDB, STACK CFI from the image.
fn pe_with_pdb(
    obj: &Object,
    identity: Identity,
    pdb_input: &Input,
    opts: &Options,
    mut warnings: Warnings,
    servers: Vec<String>,
) -> Result<Dump, Error> {
    let layout = identity::layout(obj);
    let arch = identity.arch;
    let mut sources = windows::pdb_sources(pdb_input, identity, opts, &mut warnings)?;
    let mut cfi_warnings = Warnings::default();
    if opts.cfi {
        sources.cfi = unwind::extract(
            obj,
            None,
            arch,
            &layout,
            layout.load_address,
            &mut cfi_warnings,
        );
    }
    let module = build(sources, opts, &mut warnings);
    warnings.extend(cfi_warnings);
    Ok(Dump {
        module,
        warnings,
        debug_file: Some(pdb_input.path().to_path_buf()),
        no_debug_info: None,
        servers,
    })
}

/// A PDB: with the PE beside it when its CodeView record names this PDB, else from the
/// PDB alone (no code id, no STACK CFI).
fn pdb_dump(input: &Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    let id = pdb::identify(input.path(), input.bytes())?;
    let beside = match on_disk {
        true => windows::find_pe(input, &id, opts)?,
        false => None,
    };
    if let Some((pe_input, mut identity)) = beside {
        override_identity(&mut identity, opts);
        if opts.header_only {
            return Ok(header_dump(identity, opts, Warnings::default()));
        }
        let obj = Object::parse(&pe_input)?;
        return pe_with_pdb(&obj, identity, input, opts, Warnings::default(), Vec::new());
    }
    let mut identity = windows::pdb_identity(input.path(), id);
    override_identity(&mut identity, opts);
    if opts.header_only {
        return Ok(header_dump(identity, opts, Warnings::default()));
    }
    let mut warnings = Warnings::default();
    let sources = windows::pdb_sources(input, identity, opts, &mut warnings)?;
    let module = build(sources, opts, &mut warnings);
    Ok(Dump {
        module,
        warnings,
        debug_file: Some(input.path().to_path_buf()),
        no_debug_info: None,
        servers: Vec::new(),
    })
}
