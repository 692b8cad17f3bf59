//! PDB: the second source of debug information beside DWARF. Functions, their line
//! rows and inline sites come from the module streams, read in parallel
//! (`functions.rs`); inline origins are named from the IPI and TPI streams (`names.rs`);
//! publics from the global symbol stream; x86 frame data becomes STACK WIN records
//! (`frames.rs`). Everything comes out as the format-neutral records of
//! [`crate::model::debuginfo`], with RVAs for addresses.

use crate::contain;
mod frames;
mod functions;
mod msf;
mod names;
mod sections;
mod signatures;

use std::io::Cursor;
use std::path::Path;

use pdb2::FallibleIterator as _;

use crate::error::{Error, ErrorKind, WarningKind, Warnings};
use crate::model::debuginfo::DebugInfo;
use crate::model::stack_win::StackWin;
use crate::symbols::Symbol;

/// Every PDB 7 file starts with this (the MSF "big" header).
const MAGIC: &[u8] = crate::msfz::MSF_MAGIC;

/// True when `bytes` are a PDB (MSF 7.00) file.
pub fn is_pdb(bytes: &[u8]) -> bool {
    bytes.starts_with(MAGIC)
}

/// Checks the MSF container of `bytes` as [`open`] does before reading it.
#[cfg(feature = "fuzzing")]
pub(crate) fn check_container(bytes: &[u8]) -> Result<(), msf::MsfError> {
    msf::check(bytes)
}

pub(crate) type Pdb<'a> = pdb2::PDB<'a, Cursor<&'a [u8]>>;

/// Tells the loader that a part of the mapped file will not be read again soon.
pub(crate) type Release<'r> = dyn Fn(&[u8]) + Sync + 'r;

/// A PDB's identity: what a PE's CodeView record must name for the two to match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PdbId {
    /// The GUID in its stored (little-endian fields) layout.
    pub guid: [u8; 16],
    pub age: u32,
    /// Breakpad's architecture name from the DBI stream's machine type.
    pub arch: &'static str,
}

impl PdbId {
    /// The Breakpad debug id.
    pub fn debug_id(&self) -> String {
        crate::identity::pdb_debug_id(&self.guid, self.age)
    }
}

/// What a PDB gives a symbol file.
#[derive(Debug, Default)]
pub struct PdbOutput {
    pub info: DebugInfo,
    /// Code publics, at their RVAs, with their decorated names.
    pub publics: Vec<Symbol>,
    /// x86 frame data, by RVA.
    pub frames: Vec<StackWin>,
}

/// What to extract.
#[derive(Debug, Clone, Copy)]
pub struct PdbOptions {
    pub inlines: bool,
    /// The module is 32-bit x86 (C names carry calling-convention decorations).
    pub x86: bool,
    /// STACK WIN records (x86 frame data).
    pub frames: bool,
}

fn corrupt(path: &Path, what: &str, source: pdb2::Error) -> Error {
    let kind = ErrorKind::PdbStream {
        stream: what.to_string(),
        detail: describe(&source),
        source: Box::new(source),
    };
    Error::new(path, kind)
}

/// A `pdb` crate error as a reader can act on it: its own words for most, but a stream
/// that ends early is the file being truncated or damaged, not "UnexpectedEof", and a
/// failed read of the (mapped, whole) file can only be one past its end.
pub(crate) fn describe(e: &pdb2::Error) -> String {
    match e {
        pdb2::Error::UnexpectedEof => "truncated or damaged: a stream ends early".into(),
        pdb2::Error::IoError(io) if io.kind() == std::io::ErrorKind::UnexpectedEof => {
            "truncated: a page lies past the end of the file".into()
        }
        pdb2::Error::UnrecognizedFileFormat => "not a PDB (MSF 7.00) file".into(),
        e => e.to_string(),
    }
}

/// A PDB container's damage, as the messages name it.
#[derive(Debug, thiserror::Error)]
#[error("PDB container: {0}")]
struct Container(#[source] msf::MsfError);

/// Opens the PDB in `bytes`.
pub(crate) fn open<'a>(path: &Path, bytes: &'a [u8]) -> Result<Pdb<'a>, Error> {
    msf::check(bytes)
        .map_err(|why| Error::new(path, ErrorKind::Corrupt(Box::new(Container(why)))))?;
    pdb2::PDB::open(Cursor::new(bytes)).map_err(|e| corrupt(path, "container", e))
}

/// Reads the identity of the PDB in `bytes`. The age is the DBI stream's, which is what
/// a linker writes into the image and what DIA and symbol servers go by; the PDB info
/// stream's may be higher after incremental links.
pub fn identify(path: &Path, bytes: &[u8]) -> Result<PdbId, Error> {
    contain::contained(|| identify_unguarded(path, bytes))
        .unwrap_or_else(|why| Err(Error::new(path, ErrorKind::Corrupt(Box::new(why)))))
}

fn identify_unguarded(path: &Path, bytes: &[u8]) -> Result<PdbId, Error> {
    let mut pdb = open(path, bytes)?;
    let info = pdb
        .pdb_information()
        .map_err(|e| corrupt(path, "info stream", e))?;
    let dbi = pdb
        .debug_information()
        .map_err(|e| corrupt(path, "DBI stream", e))?;
    let (d1, d2, d3, d4) = info.guid.as_fields();
    let mut guid = [0u8; 16];
    guid[0..4].copy_from_slice(&d1.to_le_bytes());
    guid[4..6].copy_from_slice(&d2.to_le_bytes());
    guid[6..8].copy_from_slice(&d3.to_le_bytes());
    guid[8..16].copy_from_slice(d4);
    let arch = match dbi.machine_type() {
        Ok(pdb2::MachineType::X86) => "x86",
        Ok(pdb2::MachineType::Amd64) => "x86_64",
        Ok(pdb2::MachineType::Arm64) => "arm64",
        Ok(pdb2::MachineType::ArmNT | pdb2::MachineType::Arm | pdb2::MachineType::Thumb) => "arm",
        _ => "unknown",
    };
    Ok(PdbId {
        guid,
        age: dbi.age().unwrap_or(info.age),
        arch,
    })
}

/// Extracts functions, publics and (for x86) frame data from the PDB in `bytes`;
/// `release` is told of each module stream's pages once the module is read.
pub fn extract(
    path: &Path,
    bytes: &[u8],
    opts: PdbOptions,
    release: &Release,
    warnings: &mut Warnings,
) -> Result<PdbOutput, Error> {
    contain::contained(|| extract_unguarded(path, bytes, opts, release, warnings))
        .unwrap_or_else(|why| Err(Error::new(path, ErrorKind::Corrupt(Box::new(why)))))
}

fn extract_unguarded(
    path: &Path,
    bytes: &[u8],
    opts: PdbOptions,
    release: &Release,
    warnings: &mut Warnings,
) -> Result<PdbOutput, Error> {
    let mut pdb = open(path, bytes)?;
    let stored = sections::stored(&mut pdb);
    if !stored {
        warnings.push(
            WarningKind::Pdb,
            "PDB stores no section headers of its image: no address can be placed, so its \
             functions, publics and frame data are left out",
        );
    }
    let address_map = sections::address_map(&mut pdb, stored)
        .map_err(|e| corrupt(path, "DBI stream (its section headers)", e))?;
    let x86 = opts.x86;
    let info = functions::extract(path, bytes, opts.inlines, stored, release, warnings)?;
    let mut w = Warnings::default();
    let publics = contain::contained(|| publics(&mut pdb, &address_map, x86, &mut w))
        .unwrap_or_else(|why| {
            warnings.push(
                WarningKind::Pdb,
                format!("PDB global symbols: {why}; no PUBLIC records"),
            );
            Vec::new()
        });
    let frames = if opts.frames {
        contain::contained(|| frames::extract(&mut pdb, &address_map, bytes.len(), &mut w))
            .unwrap_or_else(|why| {
                warnings.push(
                    WarningKind::Pdb,
                    format!("PDB frame data: {why}; no STACK WIN records"),
                );
                Vec::new()
            })
    } else {
        Vec::new()
    };
    warnings.extend(w);
    Ok(PdbOutput {
        info,
        publics,
        frames,
    })
}

/// The code publics of the global symbol stream, in stream order.
fn publics(
    pdb: &mut Pdb<'_>,
    address_map: &pdb2::AddressMap<'_>,
    x86: bool,
    warnings: &mut Warnings,
) -> Vec<Symbol> {
    let table = match pdb.global_symbols() {
        Ok(t) => t,
        Err(e) => {
            warnings.push(
                WarningKind::Pdb,
                format!("PDB global symbols: {e}; no PUBLIC records"),
            );
            return Vec::new();
        }
    };
    let mut out = Vec::new();
    let mut iter = table.iter();
    loop {
        let symbol = match iter.next() {
            Ok(Some(s)) => s,
            Ok(None) => break,
            Err(e) => {
                warnings.push(
                    WarningKind::Pdb,
                    format!("PDB global symbols: {e}; the publics after this point are skipped"),
                );
                break;
            }
        };
        let Ok(pdb2::SymbolData::Public(p)) = symbol.parse() else {
            continue;
        };
        if !(p.function || p.code) {
            continue;
        }
        let Some(rva) = p.offset.to_rva(address_map) else {
            continue;
        };
        let raw = p.name.to_string();
        let raw = if x86 {
            crate::demangle::x86::undecorate_symbol(&raw).to_string()
        } else {
            raw.into_owned()
        };
        out.push(Symbol {
            address: u64::from(rva.0),
            raw,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn magic() {
        assert!(is_pdb(b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0rest"));
        assert!(!is_pdb(b"\x7fELF"));
    }
}
