//! The library's entry points for one file: [`dump`] a path or [`dump_bytes`] bytes in
//! memory (through pipeline.rs), list a file's [`architectures`], read an
//! `--extra-info` argument.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, WarningKind};
use crate::model::ids::Arch;
use crate::options::{Dump, Options};
use crate::{demangle, load, locate, pdb, pipeline, workers};

/// The architectures in `path`: a universal Mach-O's slices, else its one.
pub fn architectures(path: &Path) -> Result<Vec<Arch>, Error> {
    let path = locate::resolve_dsym_bundle(path)?;
    let input = load::Input::open(&path)?;
    if pdb::is_pdb(input.bytes()) {
        return Ok(vec![Arch::from_name(
            pdb::identify(&path, input.bytes())?.arch,
        )]);
    }
    load::architectures(&input)
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
        dump_opened(&load::Input::open(&resolved)?, opts)
    });
    on_workers.map_err(|e| Error::new(path, ErrorKind::Threads(e)))?
}

/// [`dump`] of a file already opened (and an MSFZ PDB unpacked): a store run's look at
/// it and its dump share one map.
pub(crate) fn dump_opened(input: &load::Input, opts: &Options) -> Result<Dump, Error> {
    let dump = pipeline::dump_input(input, opts, true);
    input.intact()?;
    dump.map(warn_of_deep_names)
}

/// Dumps a file held in memory, as [`dump`] dumps one on disk; `name` stands for its path
/// in messages and gives the module name. Nothing on disk is read: no separate debug
/// file, `.dwo`/`.dwp` file or dwz alternate file is looked for, so the result depends
/// on the bytes alone (what fuzzing and services dumping uploads need).
pub fn dump_bytes(name: &str, bytes: Vec<u8>, opts: &Options) -> Result<Dump, Error> {
    let on_workers = workers::run(opts.jobs, || {
        let input = load::Input::from_bytes(PathBuf::from(name), bytes).msfz_unpacked()?;
        pipeline::dump_input(&input, opts, false).map(warn_of_deep_names)
    });
    on_workers.map_err(|e| Error::new(Path::new(name), ErrorKind::Threads(e)))?
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
             none of (dumpsyms::swift_demangler)"
        };
        dump.warnings.push(
            WarningKind::Names,
            format!("{swift} Swift name(s) left mangled: {why}"),
        );
    }
    dump
}
