//! Windows modules: a PE with its PDB (found from the CodeView record), a PDB with the
//! PE beside it, or a PE carrying DWARF (MinGW, Cygwin). Identity and unwind tables come
//! from the PE; functions, lines, publics and x86 frame data from the PDB.

use std::path::{Path, PathBuf};

use crate::error::{Error, ErrorKind, Warnings};
use crate::identity::{self, Identity, PdbRef};
use crate::load::{Input, Object};
use crate::module::Module;
use crate::pdb::{self, PdbId, PdbOptions};
use crate::{Dump, Options};

/// Where a PE's PDB was looked for.
#[derive(Debug, Default)]
struct PdbSearch {
    tried: Vec<String>,
    /// A PDB of the right name but another id, with that id.
    mismatch: Option<(PathBuf, String)>,
    /// Files of the right name that could not be read, and why.
    unusable: Vec<String>,
    servers: Vec<String>,
}

/// Dumps a PE file: with its PDB when one is found, else from the DWARF or the export
/// table and unwind tables in the image.
pub(crate) fn dump_pe(
    obj: &Object,
    identity: Identity,
    opts: &Options,
    on_disk: bool,
    warnings: Warnings,
) -> Result<Dump, Error> {
    let facts = identity::pe_facts(obj)
        .ok_or_else(|| Error::new(obj.path, ErrorKind::Corrupt("not a PE image".into())))?;
    let mut search = PdbSearch::default();
    let pdb_path = match (&facts.pdb, on_disk) {
        (_, false) => None,
        (Some(want), true) => find_pdb(obj.path, want, opts, &mut search)?,
        (None, true) => explicit_pdb(opts).map(|p| p.to_path_buf()),
    };
    let mut servers = std::mem::take(&mut search.servers);
    if let Some(path) = pdb_path {
        let input = Input::open(&path)?;
        let dump = with_pdb(obj, identity, &input, opts, warnings, servers);
        input.intact()?;
        return dump;
    }
    if let (Some((path, found)), Some(want)) = (&search.mismatch, &facts.pdb) {
        return Err(mismatch(obj.path, path, want, found));
    }
    let mut dump = crate::dump_object(obj, identity, opts, warnings, false)?;
    if let Some(want) = facts
        .pdb
        .as_ref()
        .filter(|_| crate::debugfile::lacks_dwarf(obj))
    {
        dump.no_debug_info = Some(crate::debugfile::Search {
            tried: search.tried,
            unusable: search.unusable,
            pdb: Some(format!("{} {}", want.file_name(), want.debug_id())),
            ..Default::default()
        });
    }
    dump.servers.append(&mut servers);
    add_exports(obj, &mut dump.module, &mut dump.warnings);
    Ok(dump)
}

/// The PDB given on the command line beside the PE, if any.
fn explicit_pdb(opts: &Options) -> Option<&Path> {
    opts.companion.as_deref().filter(|p| starts_like_pdb(p))
}

/// Whether the file at `path` begins with the PDB magic (read without mapping it).
fn starts_like_pdb(path: &Path) -> bool {
    let mut head = [0u8; 32];
    std::fs::File::open(path)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
        .is_ok_and(|()| pdb::is_pdb(&head))
}

/// Looks for the PDB `want` names: given on the command line, at its recorded path,
/// beside the image, in the debug directories (flat or in the symstore layout), then in
/// the symbol path's stores and servers. A PDB found by name whose id differs is passed
/// over (and remembered, for the error if no other is found); one given explicitly must
/// match.
fn find_pdb(
    pe: &Path,
    want: &PdbRef,
    opts: &Options,
    search: &mut PdbSearch,
) -> Result<Option<PathBuf>, Error> {
    let want_id = want.debug_id();
    if let Some(given) = &opts.companion {
        let found = id_of(given)?.debug_id();
        if found != want_id {
            return Err(mismatch(pe, given, want, &found));
        }
        return Ok(Some(given.clone()));
    }
    let name = want.file_name();
    // Joined to directories below: `..` or a separator would look outside them.
    if let Err(why) = crate::untrusted::path_component(name, "the PDB name in the image") {
        search.tried.push(format!("nowhere: {why}"));
        return Ok(None);
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    // Recorded by a linker on this kind of system (a cross build) or on Windows (only
    // its file name can be used here).
    if !want.path.contains('\\') && Path::new(&want.path).is_absolute() {
        candidates.push(PathBuf::from(&want.path));
    }
    let dir = pe.parent().unwrap_or(Path::new("."));
    candidates.push(dir.join(name));
    for d in &opts.debug_dirs {
        candidates.push(d.join(name));
        candidates.push(d.join(name).join(&want_id).join(name));
    }
    for c in candidates {
        search.tried.push(c.display().to_string());
        if !c.is_file() {
            continue;
        }
        match id_of(&c) {
            Ok(id) if id.debug_id() == want_id => return Ok(Some(c)),
            Ok(id) => {
                search.mismatch.get_or_insert((c, id.debug_id()));
            }
            // Found but unusable: said as such, not left to read as "not found".
            Err(e) => search.unusable.push(format!(
                "{} but it cannot be read ({})",
                e.path.display(),
                e.kind
            )),
        }
    }
    if let Some(symbols) = &opts.symbol_path {
        let verify = |p: &Path| match id_of(p) {
            Ok(id) if id.debug_id() == want_id => Ok(()),
            Ok(id) => Err(format!("wrong build: the file's id is {}", id.debug_id())),
            Err(e) => Err(e.kind.to_string()),
        };
        let found = symbols.find(name, &want_id, &verify);
        search.tried.extend(found.asked);
        search.servers.extend(found.problems);
        if let Some(p) = found.path {
            match id_of(&p) {
                Ok(id) if id.debug_id() == want_id => return Ok(Some(p)),
                Ok(id) => {
                    search.mismatch.get_or_insert((p, id.debug_id()));
                }
                Err(e) => search.servers.push(format!("symbol server file {e}")),
            }
        }
    }
    Ok(None)
}

/// The error for a PE and PDB of different builds, on `input`, naming `other` (the
/// file given or found beside it), the PDB the image was linked with and the PDB's id.
fn mismatch(input: &Path, other: &Path, linked: &PdbRef, pdb_id: &str) -> Error {
    Error::new(
        input,
        ErrorKind::Unsupported(format!(
            "{} does not match: the image was linked with PDB {} {}, the PDB is {pdb_id}",
            other.display(),
            linked.file_name(),
            linked.debug_id()
        )),
    )
}

fn id_of(path: &Path) -> Result<PdbId, Error> {
    let input = Input::open(path)?;
    if !pdb::is_pdb(input.bytes()) {
        return Err(Error::new(
            path,
            ErrorKind::NotObject("not a PDB (MSF 7.00) file".into()),
        ));
    }
    pdb::identify(path, input.bytes())
}

/// Dumps a PE with its PDB.
fn with_pdb(
    obj: &Object,
    identity: Identity,
    pdb_input: &Input,
    opts: &Options,
    warnings: Warnings,
    servers: Vec<String>,
) -> Result<Dump, Error> {
    let layout = identity::layout(obj);
    let mut dump = from_pdb(pdb_input, identity, opts, warnings)?;
    if opts.cfi {
        let mut w = Warnings::default();
        dump.module.cfi = crate::unwind::extract(
            obj,
            None,
            &dump.module.arch.clone(),
            &layout,
            layout.load_address,
            &mut w,
        );
        dump.warnings.0.extend(w.0);
    }
    dump.debug_file = Some(pdb_input.path().to_path_buf());
    dump.servers = servers;
    Ok(dump)
}

/// The model from a PDB, under `identity`; no STACK CFI (that needs the image).
fn from_pdb(
    input: &Input,
    identity: Identity,
    opts: &Options,
    mut warnings: Warnings,
) -> Result<Dump, Error> {
    let path = input.path();
    let x86 = identity.arch == "x86";
    let out = pdb::extract(
        path,
        input.bytes(),
        PdbOptions {
            inlines: opts.inlines,
            x86,
            frames: x86 && opts.cfi,
        },
        &mut warnings,
    )?;
    let mut info = out.info;
    for file in &mut info.files {
        *file = opts.source_paths.apply(file);
    }
    // x86: a function's argument bytes are its frame data's.
    if x86 {
        for f in &mut info.functions {
            let i = out.frames.partition_point(|r| u64::from(r.rva) < f.start);
            if let Some(r) = out.frames.get(i).filter(|r| u64::from(r.rva) == f.start) {
                f.param_size = r.params_size;
            }
        }
    }
    let mut module = Module::build(identity, info, out.publics, 0, &mut warnings);
    if x86 {
        for p in &mut module.publics {
            let i = out.frames.partition_point(|r| u64::from(r.rva) < p.address);
            if let Some(r) = out.frames.get(i).filter(|r| u64::from(r.rva) == p.address) {
                p.param_size = r.params_size;
            }
        }
    }
    module.write_multiple = opts.multiple_field;
    module.extra_info = opts.extra_info.clone();
    module.stack_win = out.frames;
    Ok(Dump {
        module,
        warnings,
        debug_file: Some(path.to_path_buf()),
        no_debug_info: None,
        servers: Vec::new(),
    })
}

/// Dumps a PDB: with the PE beside it (same name, `.exe`, `.dll`, `.sys`, or the one
/// given) when its CodeView record names this PDB, else from the PDB alone (no code id,
/// no STACK CFI).
pub(crate) fn dump_pdb(input: &Input, opts: &Options, on_disk: bool) -> Result<Dump, Error> {
    let path = input.path();
    let id = pdb::identify(path, input.bytes())?;
    let name = crate::basename(path);
    if on_disk {
        let mut candidates: Vec<PathBuf> = opts.companion.iter().cloned().collect();
        let stem = path.with_extension("");
        for ext in ["exe", "dll", "sys", "ocx", "drv", "efi"] {
            candidates.push(stem.with_extension(ext));
        }
        let explicit = opts.companion.is_some();
        for c in candidates {
            if !c.is_file() {
                continue;
            }
            let Ok(pe_input) = Input::open(&c) else {
                continue;
            };
            let Ok(obj) = Object::parse(&pe_input) else {
                continue;
            };
            let facts = identity::pe_facts(&obj);
            let Some(cv) = facts.and_then(|f| f.pdb) else {
                continue;
            };
            if cv.debug_id() != id.debug_id() {
                if explicit {
                    return Err(mismatch(path, &c, &cv, &id.debug_id()));
                }
                continue;
            }
            let pe_name = crate::basename(&c);
            let mut identity = identity::identity(&obj, pe_name);
            crate::override_identity(&mut identity, opts);
            if opts.header_only {
                return Ok(crate::header_dump(identity, opts, Warnings::default()));
            }
            return with_pdb(&obj, identity, input, opts, Warnings::default(), Vec::new());
        }
    }
    let mut identity = Identity {
        os: "windows".into(),
        arch: id.arch,
        debug_id: id.debug_id(),
        code_id: None,
        name: crate::demangle::sanitize(&name).unwrap_or_else(|| "unnamed".into()),
    };
    crate::override_identity(&mut identity, opts);
    if opts.header_only {
        return Ok(crate::header_dump(identity, opts, Warnings::default()));
    }
    from_pdb(input, identity, opts, Warnings::default())
}

/// PUBLIC records for exported functions no FUNC or PUBLIC covers (a PE without debug
/// information still names its entry points).
///
/// The names written count against the file's [`Allowance`](crate::untrusted::Allowance):
/// each export's name is its own string in a real image, but a crafted one pointed 4,096
/// exports at one 60 KB string (246 MB of PUBLIC records from 100 KB).
fn add_exports(obj: &Object, module: &mut Module, warnings: &mut Warnings) {
    use object::Object as _;
    let Ok(exports) = obj.file.exports() else {
        return;
    };
    let layout = identity::layout(obj);
    let bias = module.bias;
    let mut added = false;
    let mut allowance = crate::untrusted::Allowance::for_input(obj.input.bytes().len());
    let existing: std::collections::HashSet<u64> =
        module.publics.iter().map(|p| p.address).collect();
    let mut seen = std::collections::HashSet::new();
    for e in exports.flatten() {
        let object::read::NameOrOrdinal::Name(raw) = e.name() else {
            continue;
        };
        let object::read::ExportTarget::Address { address: va } = e.target() else {
            continue;
        };
        let address = va.wrapping_sub(bias);
        if layout.code_span_end(va).is_none()
            || module.covers(address)
            || existing.contains(&address)
            || seen.contains(&address)
            || !allowance.take(raw.len())
        {
            continue;
        }
        let Some(name) = crate::demangle::sanitize(&crate::demangle::demangle(
            &String::from_utf8_lossy(raw),
            crate::demangle::Lang::Other,
        )) else {
            continue;
        };
        seen.insert(address);
        module.publics.push(crate::module::Public {
            address,
            name,
            multiple: false,
            param_size: 0,
        });
        added = true;
    }
    if allowance.cut > 0 {
        warnings.push(format!(
            "export table: {} export(s) left out: their names add up to more than 16 times \
             the file (one name shared by many exports)",
            allowance.cut
        ));
    }
    if added {
        // By address, as the model keeps them.
        module.publics.sort_by_key(|p| p.address);
    }
}
