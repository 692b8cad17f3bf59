//! A PE's PDB (given, at its recorded path, beside the image, in debug directories, on
//! symbol servers) and a PDB's PE (given or beside it), each checked to be of the same
//! build.

use std::path::{Path, PathBuf};

use super::Search;
use crate::error::NotTheFile;
use crate::error::{Error, ErrorKind, Warning, WarningKind};
use crate::identity::{self, Identity, PdbRef};
use crate::load::{Input, Object};
use crate::options::Options;
use crate::pdb::{self, PdbId};

/// The PDB of the PE `obj`, when one is found (`None` without looking when `on_disk`
/// is false), and where it was looked for. A PDB of the right name but another build
/// found where no other is: an error naming both.
pub(crate) fn locate_pdb(
    obj: &Object,
    linked: Option<&PdbRef>,
    opts: &Options,
    on_disk: bool,
    search: &mut Search,
) -> Result<Option<PathBuf>, Error> {
    let found = match (linked, on_disk) {
        (_, false) => None,
        (Some(want), true) => find_pdb(obj.path, want, opts, search)?,
        (None, true) => explicit_pdb(opts).map(|p| p.to_path_buf()),
    };
    if found.is_none()
        && let (Some((path, id)), Some(want)) = (&search.mismatch, linked)
    {
        return Err(mismatch(obj.path, path, want, id));
    }
    Ok(found)
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
        .is_ok_and(|()| crate::magic::starts_like_pdb(&head))
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
    search: &mut Search,
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
        let verify = |p: &Path| verify_pdb(p, &want_id);
        let found = symbols.find(name, &want_id, &verify);
        search.tried.extend(found.asked);
        search.servers.extend(found.problems);
        if let Some(p) = found.path {
            match id_of(&p) {
                Ok(id) if id.debug_id() == want_id => return Ok(Some(p)),
                Ok(id) => {
                    search.mismatch.get_or_insert((p, id.debug_id()));
                }
                Err(e) => search.servers.push(Warning::new(
                    WarningKind::Server,
                    format!("symbol server file {e}"),
                )),
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
        ErrorKind::Unsupported(Box::new(Mismatch {
            other: other.to_path_buf(),
            linked: format!("{} {}", linked.file_name(), linked.debug_id()),
            pdb: pdb_id.to_string(),
        })),
    )
}

/// An image and a PDB that are not each other's.
#[derive(Debug, thiserror::Error)]
#[error("{} does not match: the image was linked with PDB {linked}, the PDB is {pdb}", other.display())]
struct Mismatch {
    other: PathBuf,
    /// The PDB's name and debug id, as the image's CodeView record gives them.
    linked: String,
    pdb: String,
}

/// Whether the file at `path` is the PDB with debug id `want` (upper case): what a
/// symbol server must send for it.
pub(crate) fn verify_pdb(path: &Path, want: &str) -> Result<(), NotTheFile> {
    match id_of(path) {
        Ok(id) if id.debug_id() == want => Ok(()),
        Ok(id) => Err(NotTheFile::WrongBuild {
            what: "the file's id",
            have: id.debug_id(),
        }),
        Err(e) => Err(NotTheFile::Unreadable(Box::new(e.kind))),
    }
}

/// Whether the file at `path` is a PE image with code id `want` (upper case).
pub(crate) fn verify_pe(path: &Path, want: &str) -> Result<(), NotTheFile> {
    let unreadable = |e: Error| NotTheFile::Unreadable(Box::new(e.kind));
    let input = Input::open(path).map_err(unreadable)?;
    let obj = Object::parse(&input).map_err(unreadable)?;
    let facts = identity::pe_facts(&obj).ok_or(NotTheFile::NotA("a PE image"))?;
    match identity::pe_code_id(facts.timestamp, facts.size_of_image) {
        have if have == want => Ok(()),
        have => Err(NotTheFile::WrongBuild {
            what: "the image's code id",
            have,
        }),
    }
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

/// The PE a PDB belongs to, beside it (same name, `.exe`, `.dll`, `.sys`, …, or the
/// one given) and naming this PDB in its CodeView record, with its identity. One given
/// on the command line that names another PDB is an error.
pub(crate) fn find_pe(
    input: &Input,
    id: &PdbId,
    opts: &Options,
) -> Result<Option<(Input, Identity)>, Error> {
    let path = input.path();
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
        let Some(cv) = identity::pe_facts(&obj).and_then(|f| f.pdb) else {
            continue;
        };
        if cv.debug_id() != id.debug_id() {
            if explicit {
                return Err(mismatch(path, &c, &cv, &id.debug_id()));
            }
            continue;
        }
        let identity = identity::identity(&obj, crate::options::basename(&c));
        drop(obj);
        return Ok(Some((pe_input, identity)));
    }
    Ok(None)
}
