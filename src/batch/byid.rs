//! Modules asked for by id rather than by file (`--debug-id`, `--code-id`): what crash
//! reports name and nobody has locally. Each is fetched — a PDB and its image from the
//! symbol servers, an ELF executable and its debug file from debuginfod — and then
//! dumped exactly as the same files would be dumped from disk.

use std::path::{Path, PathBuf};

use crate::fetch::Fetched;
use crate::options::Options;

/// A module as a crash report or a missing-symbols list names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ById {
    /// The debug file (`ntdll.pdb`) or, for ELF, the module's file name (`libc.so.6`).
    pub file: String,
    /// A PDB's debug id (GUID and age).
    pub debug_id: Option<String>,
    /// A PE's code id (`TimeDateStamp` and `SizeOfImage`), or an ELF file's GNU build ID.
    pub code_id: Option<String>,
    /// The image a PDB belongs to (default: the PDB's name with `.dll`).
    pub code_file: Option<String>,
}

/// What to dump for a module asked for by id.
#[derive(Debug)]
pub struct Local {
    /// The file to dump (a PDB, a PE, an ELF executable or debug file).
    pub input: PathBuf,
    /// The other half of a Windows module, when one was asked for.
    pub companion: Option<PathBuf>,
    /// The module name to write: the fetched file's cache name is not the module's.
    pub name: Option<String>,
    /// Servers that failed on the way (for warnings).
    pub problems: Vec<String>,
}

/// Why a module could not be had: on no server (`not_found`), a server that failed, or a
/// request that cannot be answered.
#[derive(Debug)]
pub struct Unavailable {
    /// Why, naming the module and where it was looked for.
    pub message: String,
    /// True when every server asked answered that it does not have it.
    pub not_found: bool,
}

impl ById {
    /// A PDB by name (`.pdb`, any case).
    fn is_pdb(&self) -> bool {
        has_extension(&self.file, "pdb")
    }

    /// A Windows image by name.
    fn is_pe(&self) -> bool {
        ["dll", "exe", "sys", "drv", "ocx", "cpl", "efi", "scr"]
            .iter()
            .any(|e| has_extension(&self.file, e))
    }

    /// The debug id its symbol file is stored under, when the row tells it: given, or
    /// for an ELF module computed from its build ID as the dumper computes it (for a
    /// little-endian file, which nearly every ELF target is).
    pub fn store_debug_id(&self) -> Option<String> {
        if let Some(id) = &self.debug_id {
            return Some(id.to_ascii_uppercase());
        }
        if self.is_pdb() || self.is_pe() {
            return None;
        }
        let bytes = crate::identity::unhex(self.code_id.as_deref()?)?;
        Some(crate::identity::debug_id(&bytes, false))
    }

    /// Fetches what dumping this module needs.
    pub fn fetch(&self, opts: &Options) -> Result<Local, Unavailable> {
        crate::untrusted::path_component(&self.file, "module name")
            .map_err(|e| usage(e.to_string()))?;
        if self.is_pdb() {
            self.fetch_pdb(opts)
        } else if self.is_pe() {
            self.fetch_pe(opts)
        } else {
            self.fetch_elf(opts)
        }
    }

    /// A PDB by its debug id, and its image too when a code id is given (for the
    /// image's `.pdata` unwind tables).
    fn fetch_pdb(&self, opts: &Options) -> Result<Local, Unavailable> {
        let id = self
            .debug_id
            .as_deref()
            .ok_or_else(|| usage(format!("{}: a PDB is fetched by --debug-id", self.file)))?
            .to_ascii_uppercase();
        let servers = symbol_path(opts, &self.file)?;
        let verify = |p: &Path| crate::locate::verify_pdb(p, &id);
        let pdb = servers.find(&self.file, &id, &verify);
        let mut problems = pdb.problems.clone();
        let input = found(pdb, &format!("{} {id}", self.file))?;
        let companion = match &self.code_id {
            Some(code_id) => {
                let image = self
                    .code_file
                    .clone()
                    .unwrap_or_else(|| with_extension(&self.file, "dll"));
                crate::untrusted::path_component(&image, "code file")
                    .map_err(|e| usage(e.to_string()))?;
                let code_id = code_id.to_ascii_uppercase();
                let verify = |p: &Path| crate::locate::verify_pe(p, &code_id);
                let fetched = servers.find(&image, &code_id, &verify);
                problems.extend(fetched.problems.iter().cloned());
                Some(found(fetched, &format!("{image} {code_id}"))?)
            }
            None => None,
        };
        Ok(Local {
            input,
            companion,
            name: None,
            problems,
        })
    }

    /// A Windows image by its code id; its PDB is then found as for a local image
    /// (by the CodeView record, on the same servers).
    fn fetch_pe(&self, opts: &Options) -> Result<Local, Unavailable> {
        let code_id = self
            .code_id
            .as_deref()
            .ok_or_else(|| usage(format!("{}: an image is fetched by --code-id", self.file)))?
            .to_ascii_uppercase();
        let servers = symbol_path(opts, &self.file)?;
        let verify = |p: &Path| crate::locate::verify_pe(p, &code_id);
        let fetched = servers.find(&self.file, &code_id, &verify);
        let problems = fetched.problems.clone();
        Ok(Local {
            input: found(fetched, &format!("{} {code_id}", self.file))?,
            companion: None,
            name: None,
            problems,
        })
    }

    /// An ELF module by its GNU build ID (the code id Breakpad writes for ELF): the
    /// executable from debuginfod, whose debug file the dump then fetches by the same
    /// ID; the debug file alone when no server has the executable.
    fn fetch_elf(&self, opts: &Options) -> Result<Local, Unavailable> {
        let hex = self.code_id.as_deref().ok_or_else(|| {
            usage(format!(
                "{}: an ELF module is fetched by --code-id (its GNU build ID)",
                self.file
            ))
        })?;
        let build_id = crate::identity::unhex(hex).ok_or_else(|| {
            usage(format!(
                "{}: code id {hex:?} is not a GNU build ID (hex)",
                self.file
            ))
        })?;
        let client = opts.debuginfod.as_ref().ok_or_else(|| {
            usage(format!(
                "{}: no debuginfod server to fetch it from (DEBUGINFOD_URLS is not set)",
                self.file
            ))
        })?;
        let verify = |p: &std::path::Path| crate::locate::has_build_id(p, &build_id);
        let executable = client.executable(&build_id, &verify);
        let mut problems = executable.problems.clone();
        if let Some(input) = executable.path {
            return Ok(Local {
                input,
                companion: None,
                name: Some(self.file.clone()),
                problems,
            });
        }
        let debuginfo = client.debuginfo(&build_id, &verify);
        problems.extend(debuginfo.problems.iter().cloned());
        let mut asked = executable.asked;
        asked.extend(debuginfo.asked.iter().cloned());
        let input = found(
            Fetched {
                path: debuginfo.path,
                asked,
                problems: problems.clone(),
            },
            &format!("{} {}", self.file, hex.to_ascii_lowercase()),
        )?;
        problems.push(format!(
            "{}: no server has the executable, only its debug file: no STACK CFI (its \
             .eh_frame is in the executable)",
            self.file
        ));
        Ok(Local {
            input,
            companion: None,
            name: Some(self.file.clone()),
            problems,
        })
    }
}

fn usage(message: String) -> Unavailable {
    Unavailable {
        message,
        not_found: false,
    }
}

/// The symbol path, or why there is none.
fn symbol_path<'a>(
    opts: &'a Options,
    file: &str,
) -> Result<&'a crate::fetch::symsrv::SymbolPath, Unavailable> {
    opts.symbol_path.as_ref().ok_or_else(|| {
        usage(format!(
            "{file}: no symbol server to fetch it from (--symbol-server or _NT_SYMBOL_PATH)"
        ))
    })
}

/// The file fetched, or why not: on no server (every one asked answered that it does
/// not have it), or a server that failed.
fn found(fetched: Fetched, what: &str) -> Result<PathBuf, Unavailable> {
    let Some(path) = fetched.path else {
        let asked = fetched.asked.join(", ");
        let not_found = fetched.problems.is_empty();
        let message = match not_found {
            true => format!("{what}: on no server; asked {asked}"),
            false => format!(
                "{what}: could not be fetched ({}); asked {asked}",
                fetched.problems.join("; ")
            ),
        };
        return Err(Unavailable { message, not_found });
    };
    Ok(path)
}

fn has_extension(name: &str, ext: &str) -> bool {
    name.rsplit_once('.')
        .is_some_and(|(_, e)| e.eq_ignore_ascii_case(ext))
}

fn with_extension(name: &str, ext: &str) -> String {
    match name.rsplit_once('.') {
        Some((stem, _)) => format!("{stem}.{ext}"),
        None => format!("{name}.{ext}"),
    }
}
