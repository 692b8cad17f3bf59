//! One dump, for every format, top-down: identify the input (format, architecture,
//! slice) → locate its companion files → read its sources (debug information, symbols,
//! exports, unwind tables, frame data) → [`crate::assemble::build`] once → the [`Dump`].
//!
//! ELF, Mach-O and a PE carrying DWARF (MinGW) share the object path; a PE with its PDB
//! and a PDB (with the PE beside it, when there is one) take their records from
//! [`crate::pdb`]. Companion files (debug files, dSYMs, PDBs, the PE of a PDB, split
//! DWARF, dwz's alternate file) are found by [`crate::locate`]. Nothing is added to a module after it is
//! built, and no reader calls back into this file.

use std::path::Path;

use crate::assemble::Sources;
use crate::error::{Error, ErrorKind, WarningKind, Warnings};
use crate::identity::{self, Identity, Layout};
use crate::load::{Input, Object};
use crate::locate::{self, DebugFile, Located, Search};
use crate::model::ids::Arch;
use crate::model::module::Module;
use crate::options::{Dump, NoStackRecords, Options, basename};
use crate::pdb::{PdbId, PdbOptions};
use crate::{demangle, dwarf, pdb, symbols, unwind};

/// Dumps `input`; `on_disk`: whether companion files are looked for beside it.
pub(crate) fn dump_input(input: &Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    read_input(input, opts, on_disk)
}

fn read_input(input: &Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    if pdb::is_pdb(input.bytes()) {
        return pdb_dump(input, opts, on_disk);
    }
    let obj = Object::parse_arch(input, opts.arch.map(Arch::name))?;
    // Written into the MODULE record: a newline in a file name would end it early.
    let name = opts.name.clone().unwrap_or_else(|| basename(input.path()));
    let name = demangle::sanitize(&name).unwrap_or_else(|| "unnamed".into());
    let mut identity = identity::identity(&obj, name);
    override_identity(&mut identity, opts);
    let mut warnings = Warnings::default();
    for damage in &obj.damage {
        warnings.add(damage.clone());
    }
    if opts.header_only {
        return Ok(header_dump(identity, opts, warnings));
    }
    if obj.file.format() == object::BinaryFormat::Pe {
        return pe_dump(&obj, identity, opts, on_disk, warnings);
    }
    let read = read_object(&obj, identity, opts, &mut warnings, on_disk)?;
    finish(&obj, read, opts, warnings)
}

/// `-o`, `-b` and `-n` over what the file says. (`-n` for a PE names the module, which
/// is otherwise the PDB's name.)
fn override_identity(identity: &mut Identity, opts: &Options) {
    if let Some(os) = &opts.os {
        identity.os = os.clone();
    }
    if let Some(id) = &opts.debug_id {
        identity.debug_id = id.to_string();
    }
    if let Some(name) = &opts.name
        && let Some(name) = demangle::sanitize(name)
    {
        identity.name = name;
    }
}

/// A dump of the MODULE and INFO records only (`-i`).
fn header_dump(identity: Identity, opts: &Options, warnings: Warnings) -> Dump {
    let mut module = crate::assemble::header(identity);
    module.extra_info = opts.extra_info.clone();
    Dump {
        module,
        warnings,
        debug_file: None,
        no_debug_info: None,
        no_stack_records: None,
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
}

/// Builds the module from what was read; the debug file must still be whole.
fn finish(
    obj: &Object,
    read: ObjectRead,
    opts: &Options,
    mut warnings: Warnings,
) -> Result<Dump, Error> {
    let module = build(read.sources, opts, &mut warnings);
    warnings.extend(read.cfi_warnings);
    if let Some(d) = &read.debug {
        d.input.intact()?;
    }
    let no_stack_records = (opts.cfi && !module.has_stack_records())
        .then(|| object_without_unwind(obj, &module))
        .flatten();
    Ok(Dump {
        module,
        warnings,
        debug_file: read.debug.map(|d| d.path),
        no_debug_info: read.no_debug_info,
        no_stack_records,
    })
}

/// Why an object file gave no STACK records, and what to dump instead; `None` when it
/// has no code to unwind. (Dumps of debug files and dSYMs were uploaded without CFI, and
/// found out only when crashes did not unwind.)
fn object_without_unwind(obj: &Object, module: &Module) -> Option<NoStackRecords> {
    use object::{Object as _, ObjectSection as _};
    if crate::magic::is_dsym(obj.data) {
        return Some(NoStackRecords::Dsym);
    }
    let has_code = obj.file.sections().any(|s| {
        s.kind() == object::SectionKind::Text && s.file_range().is_some_and(|(_, size)| size > 0)
    });
    if !has_code {
        return Some(NoStackRecords::DebugOnly);
    }
    (!module.functions.is_empty() || !module.publics.is_empty())
        .then_some(NoStackRecords::NoUnwindTables)
}

/// [`crate::assemble::build`], with the output options.
fn build(mut sources: Sources, opts: &Options, warnings: &mut Warnings) -> Module {
    sources.extra_info = opts.extra_info.clone();
    sources.prefer_symbol_names = opts.prefer_symbol_names;
    crate::assemble::build(sources, warnings)
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
    let (debug, no_debug_info) = debug_file(obj, identity.arch, opts, on_disk, warnings)?;
    let debug_obj = debug
        .as_ref()
        .and_then(|d| parse_debug_file(d, identity.arch, warnings));
    let dwarf_source = debug_obj.as_ref().unwrap_or(obj);
    let from_map = match debug {
        None => read_debug_map(obj, opts, on_disk, warnings),
        Some(_) => None,
    };
    let debug_info = match from_map {
        Some(info) => info,
        None => read_dwarf(
            dwarf_source,
            obj,
            &layout,
            debug.as_ref(),
            opts,
            on_disk,
            warnings,
        ),
    };
    let symbols = read_symbols(obj, debug_obj.as_ref(), &layout, warnings);
    let bias = if opts.keep_load_address {
        0
    } else {
        layout.load_address
    };
    let (cfi, cfi_warnings) = read_cfi(obj, debug_obj.as_ref(), identity.arch, &layout, bias, opts);
    drop(debug_obj);
    let mut sources = Sources::new(identity, debug_info, symbols, bias);
    sources.cfi = cfi;
    Ok(ObjectRead {
        sources,
        cfi_warnings,
        debug,
        no_debug_info,
    })
}

/// The separate debug file of a binary without DWARF, and where it was looked for when
/// none was found.
fn debug_file(
    obj: &Object,
    arch: &str,
    opts: &Options,
    on_disk: bool,
    warnings: &mut Warnings,
) -> Result<(Option<DebugFile>, Option<Search>), Error> {
    let mut located = match on_disk && locate::lacks_dwarf(obj) {
        false => Located::default(),
        true => locate::locate_debug_file(obj, arch, opts, warnings)?,
    };
    if let Some(search) = &mut located.search {
        tell_servers(search, warnings);
    }
    let debug = located.file;
    let no_debug_info = located.search.filter(|_| debug.is_none());
    Ok((debug, no_debug_info))
}

/// The unwind tables of `obj` (and its debug file), unless `-c`; what indexing them
/// found is told after the model's own warnings.
fn read_cfi(
    obj: &Object,
    debug: Option<&Object>,
    arch: &str,
    layout: &Layout,
    bias: u64,
    opts: &Options,
) -> (Option<unwind::CfiSource>, Warnings) {
    let mut warnings = Warnings::default();
    let cfi = match opts.cfi {
        true => unwind::extract(obj, debug, arch, layout, bias, &mut warnings),
        false => None,
    };
    (cfi, warnings)
}

/// The servers `search` could not use, as warnings of their kind.
fn tell_servers(search: &mut Search, warnings: &mut Warnings) {
    for problem in std::mem::take(&mut search.servers) {
        warnings.add(problem);
    }
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
                warnings.push(
                    WarningKind::Companion,
                    format!("debug file {}: {damage}", d.path.display()),
                );
            }
            Some(o)
        }
        Err(e) => {
            warnings.push(WarningKind::Companion, format!("debug file {e}"));
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
) -> crate::model::debuginfo::DebugInfo {
    let dwarf_opts = dwarf::DwarfOptions {
        inlines: opts.inlines,
        cross_unit_refs: opts.cross_unit_refs,
    };
    let companions = locate::Finder {
        binary: binary.path,
        debug_file: debug.map(|d| d.path.as_path()),
        debug_dirs: &opts.debug_dirs,
        debuginfod: opts.debuginfod.as_ref(),
        on_disk,
    };
    let mut info = dwarf::extract(source, layout, dwarf_opts, &companions, warnings);
    for file in &mut info.files {
        *file = opts.source_paths.apply(file, warnings);
    }
    info
}

/// A Mach-O without a dSYM whose symbol table has a debug map (`N_OSO` stabs): the
/// DWARF of the object files it names, each function moved to where the link put it,
/// as `dsymutil` would have linked it into a dSYM. `None` when there is no map.
fn read_debug_map(
    obj: &Object,
    opts: &Options,
    on_disk: bool,
    warnings: &mut Warnings,
) -> Option<crate::model::debuginfo::DebugInfo> {
    use rayon::prelude::*;
    if !on_disk || obj.file.format() != object::BinaryFormat::MachO || !locate::lacks_dwarf(obj) {
        return None;
    }
    let map = locate::debug_map(obj)?;
    let dwarf_opts = dwarf::DwarfOptions {
        inlines: opts.inlines,
        cross_unit_refs: opts.cross_unit_refs,
    };
    let libraries = locate::Libraries::default();
    let parts: Vec<(crate::model::debuginfo::DebugInfo, Warnings)> = map
        .par_iter()
        .map(|object| {
            let mut w = Warnings::default();
            let info = locate::open_map_object(object, &opts.debug_dirs, &libraries, &mut w)
                .and_then(|input| {
                    let oobj = match Object::parse_any(&input) {
                        Ok(o) => o,
                        Err(e) => {
                            w.push(WarningKind::Companion, format!("{}: {e}", object.path));
                            return None;
                        }
                    };
                    let moves = locate::map_moves(object, &oobj, &mut w);
                    let companions = locate::Finder {
                        binary: oobj.path,
                        debug_file: None,
                        debug_dirs: &opts.debug_dirs,
                        debuginfod: None,
                        on_disk,
                    };
                    let layout = identity::layout(&oobj);
                    let mut info = dwarf::extract(&oobj, &layout, dwarf_opts, &companions, &mut w);
                    info.relocate(&moves);
                    Some(info)
                })
                .unwrap_or_default();
            (info, w)
        })
        .collect();
    let mut info = crate::model::debuginfo::DebugInfo::default();
    for (part, w) in parts {
        info.append(part);
        warnings.extend(w);
    }
    for file in &mut info.files {
        *file = opts.source_paths.apply(file, warnings);
    }
    Some(info)
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
    if let Some(mini) = locate::mini_debuginfo(obj, obj.path, warnings) {
        match Object::parse(&mini) {
            Ok(mini_obj) => found.extend(symbols::function_symbols(&mini_obj, layout)),
            Err(e) => warnings.push(WarningKind::Companion, format!("MiniDebugInfo {e}")),
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
    let mut search = Search::default();
    // `--pe`: the image alone, its PDB not looked for.
    let pdb_path = match opts.pe_alone {
        true => None,
        false => locate::locate_pdb(obj, facts.pdb.as_ref(), opts, on_disk, &mut search)?,
    };
    tell_servers(&mut search, &mut warnings);
    if let Some(path) = pdb_path {
        let input = Input::open(&path)?;
        let dump = pe_with_pdb(obj, identity, &input, opts, warnings);
        input.intact()?;
        return dump;
    }
    // The image's own DWARF only: a PE's debug files are PDBs.
    let mut read = read_object(obj, identity, opts, &mut warnings, false)?;
    if let Some(want) = facts
        .pdb
        .filter(|_| !opts.pe_alone && locate::lacks_dwarf(obj))
    {
        search.pdb = Some(format!("{} {}", want.file_name(), want.debug_id()));
        read.no_debug_info = Some(search);
    }
    read.sources.exports = symbols::pe_exports(obj);
    finish(obj, read, opts, warnings)
}

/// A PE with its PDB: records from the PDB, STACK CFI from the image.
fn pe_with_pdb(
    obj: &Object,
    identity: Identity,
    pdb_input: &Input,
    opts: &Options,
    mut warnings: Warnings,
) -> Result<Dump, Error> {
    let layout = identity::layout(obj);
    let arch = identity.arch;
    let mut sources = pdb_sources(pdb_input, identity, opts, &mut warnings)?;
    let (cfi, cfi_warnings) = read_cfi(obj, None, arch, &layout, layout.load_address, opts);
    sources.cfi = cfi;
    let module = build(sources, opts, &mut warnings);
    warnings.extend(cfi_warnings);
    Ok(Dump {
        module,
        warnings,
        debug_file: Some(pdb_input.path().to_path_buf()),
        no_debug_info: None,
        no_stack_records: None,
    })
}

/// A PDB: with the PE beside it when its CodeView record names this PDB, else from the
/// PDB alone (no code id, no STACK CFI).
fn pdb_dump(input: &Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    let id = pdb::identify(input.path(), input.bytes())?;
    let beside = match on_disk {
        true => locate::find_pe(input, &id, opts)?,
        false => None,
    };
    if let Some((pe_input, mut identity)) = beside {
        override_identity(&mut identity, opts);
        if opts.header_only {
            return Ok(header_dump(identity, opts, Warnings::default()));
        }
        let obj = Object::parse(&pe_input)?;
        return pe_with_pdb(&obj, identity, input, opts, Warnings::default());
    }
    let mut identity = pdb_identity(input.path(), id);
    override_identity(&mut identity, opts);
    if opts.header_only {
        return Ok(header_dump(identity, opts, Warnings::default()));
    }
    let mut warnings = Warnings::default();
    let sources = pdb_sources(input, identity, opts, &mut warnings)?;
    let module = build(sources, opts, &mut warnings);
    let no_stack_records =
        (opts.cfi && !module.has_stack_records()).then(|| NoStackRecords::PdbWithoutImage {
            stem: input.path().with_extension(""),
        });
    Ok(Dump {
        module,
        warnings,
        debug_file: Some(input.path().to_path_buf()),
        no_debug_info: None,
        no_stack_records,
    })
}

/// What a PDB holds, as sources under `identity`: functions, lines, publics and (x86,
/// with CFI) frame data. No STACK CFI: that needs the image.
fn pdb_sources(
    input: &Input,
    identity: Identity,
    opts: &Options,
    warnings: &mut Warnings,
) -> Result<Sources, Error> {
    let x86 = identity.arch == "x86";
    let out = pdb::extract(
        input.path(),
        input.bytes(),
        PdbOptions {
            inlines: opts.inlines,
            x86,
            frames: x86 && opts.cfi,
        },
        &|part| input.release(part),
        warnings,
    )?;
    let mut info = out.info;
    for file in &mut info.files {
        *file = opts.source_paths.apply(file, warnings);
    }
    // x86: a function's argument bytes are its frame data's.
    for f in &mut info.functions {
        let i = out.frames.partition_point(|r| u64::from(r.rva) < f.start);
        if let Some(r) = out.frames.get(i).filter(|r| u64::from(r.rva) == f.start) {
            f.param_size = r.params_size;
        }
    }
    let mut sources = Sources::new(identity, info, out.publics, 0);
    sources.stack_win = out.frames;
    Ok(sources)
}

/// A PDB's identity when no PE is found for it: no code id.
fn pdb_identity(path: &Path, id: PdbId) -> Identity {
    let name = crate::options::basename(path);
    Identity {
        os: "windows".into(),
        debug_id: id.debug_id(),
        arch: id.arch,
        code_id: None,
        code_file: None,
        name: crate::demangle::sanitize(&name).unwrap_or_else(|| "unnamed".into()),
        soname: None,
    }
}
