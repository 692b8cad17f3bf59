//! Modules asked for by id rather than by file (`--debug-id`, `--code-id`): what crash
//! reports name and nobody has locally. Each is fetched — a PDB and its image from the
//! symbol servers, an ELF executable and its debug file from debuginfod — and then
//! dumped exactly as the same files would be dumped from disk.

use std::path::{Path, PathBuf};

use crate::error::{Warning, WarningKind};
use crate::fetch::Fetched;
use crate::model::ids::{CodeId, DebugId};
use crate::options::Options;
use crate::untrusted::UnsafeName;

/// A module as a crash report or a missing-symbols list names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct ById {
    /// The debug file (`ntdll.pdb`) or, for ELF, the module's file name (`libc.so.6`).
    pub file: String,
    /// A PDB's debug id (GUID and age).
    pub debug_id: Option<DebugId>,
    /// A PE's code id (`TimeDateStamp` and `SizeOfImage`), or an ELF file's GNU build ID.
    pub code_id: Option<CodeId>,
    /// The image a PDB belongs to (default: the PDB's name with `.dll`).
    pub code_file: Option<String>,
}

/// What to dump for a module asked for by id.
#[derive(Debug)]
pub(crate) struct Local {
    /// The file to dump (a PDB, a PE, an ELF executable or debug file).
    pub input: PathBuf,
    /// The other half of a Windows module, when one was asked for.
    pub companion: Option<PathBuf>,
    /// The module name to write: the fetched file's cache name is not the module's.
    pub name: Option<String>,
    /// Servers that failed on the way, and what the fetched files lack: warnings of
    /// [`WarningKind::Server`].
    pub problems: Vec<Warning>,
}

/// Why a module could not be had: on no server, a server that failed, or a request that
/// cannot be answered. New reasons may be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Unavailable {
    /// Every server asked answered that it does not have it.
    #[error("{module}: on no server; asked {}", asked.join(", "))]
    NotFound {
        /// The file asked for and its id.
        module: String,
        /// Every place asked (caches and servers).
        asked: Vec<String>,
    },
    /// A server failed (down, failing), so whether it has the file is not known.
    #[error(
        "{module}: could not be fetched ({}); asked {}",
        problems.iter().map(|p| p.message.as_str()).collect::<Vec<_>>().join("; "),
        asked.join(", ")
    )]
    ServerFailed {
        /// The file asked for and its id.
        module: String,
        /// Every place asked (caches and servers).
        asked: Vec<String>,
        /// What each failing server did.
        problems: Vec<Warning>,
    },
    /// A PDB is asked for without its debug id.
    #[error("{file}: a PDB is fetched by --debug-id")]
    NoDebugId {
        /// The module's file name.
        file: String,
    },
    /// An image or an ELF module is asked for without its code id.
    #[error(
        "{file}: {}",
        if *elf { "an ELF module is fetched by --code-id (its GNU build ID)" }
        else { "an image is fetched by --code-id" }
    )]
    NoCodeId {
        /// The module's file name.
        file: String,
        /// An ELF module (whose code id is its GNU build ID), not a Windows image.
        elf: bool,
    },
    /// An ELF module's code id that is not a build ID in hex.
    #[error("{file}: code id {code_id:?} is not a GNU build ID (hex)")]
    NotBuildId {
        /// The module's file name.
        file: String,
        /// The code id given.
        code_id: String,
    },
    /// A Windows module is asked for and no symbol server is set.
    #[error("{file}: no symbol server to fetch it from (--symbol-server or _NT_SYMBOL_PATH)")]
    NoSymbolServer {
        /// The module's file name.
        file: String,
    },
    /// An ELF module is asked for and no debuginfod server is set.
    #[error("{file}: no debuginfod server to fetch it from (DEBUGINFOD_URLS is not set)")]
    NoDebuginfod {
        /// The module's file name.
        file: String,
    },
    /// A name that cannot be a file name in a cache or on a server.
    #[error(transparent)]
    UnsafeName(#[from] UnsafeName),
}

impl Unavailable {
    /// True when every server asked answered that it does not have the module: counted,
    /// not a failure.
    pub(crate) fn not_found(&self) -> bool {
        matches!(self, Unavailable::NotFound { .. })
    }
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
    pub(crate) fn store_debug_id(&self) -> Option<String> {
        if let Some(id) = &self.debug_id {
            return Some(id.as_ref().to_ascii_uppercase());
        }
        if self.is_pdb() || self.is_pe() {
            return None;
        }
        let bytes = crate::identity::unhex(self.code_id.as_ref()?.as_ref())?;
        Some(crate::identity::debug_id(&bytes, false))
    }

    /// Fetches what dumping this module needs.
    pub(crate) fn fetch(&self, opts: &Options) -> Result<Local, Unavailable> {
        crate::untrusted::path_component(&self.file, "module name")?;
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
            .as_ref()
            .map(AsRef::as_ref)
            .ok_or_else(|| Unavailable::NoDebugId {
                file: self.file.clone(),
            })?
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
                crate::untrusted::path_component(&image, "code file")?;
                let code_id = code_id.as_ref().to_ascii_uppercase();
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

    /// The code id an image (or, `elf`, an ELF module) is fetched by, or why there is none.
    fn code_id(&self, elf: bool) -> Result<&str, Unavailable> {
        self.code_id
            .as_ref()
            .map(AsRef::as_ref)
            .ok_or_else(|| Unavailable::NoCodeId {
                file: self.file.clone(),
                elf,
            })
    }

    /// A Windows image by its code id; its PDB is then found as for a local image
    /// (by the CodeView record, on the same servers).
    fn fetch_pe(&self, opts: &Options) -> Result<Local, Unavailable> {
        let code_id = self.code_id(false)?.to_ascii_uppercase();
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
        let hex = self.code_id(true)?;
        let build_id = crate::identity::unhex(hex).ok_or_else(|| Unavailable::NotBuildId {
            file: self.file.clone(),
            code_id: hex.to_string(),
        })?;
        let client = opts
            .debuginfod
            .as_ref()
            .ok_or_else(|| Unavailable::NoDebuginfod {
                file: self.file.clone(),
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
        problems.push(Warning::new(
            WarningKind::Server,
            format!(
                "{}: no server has the executable, only its debug file: no STACK CFI (its \
                 .eh_frame is in the executable)",
                self.file
            ),
        ));
        Ok(Local {
            input,
            companion: None,
            name: Some(self.file.clone()),
            problems,
        })
    }
}

/// The symbol path, or why there is none.
fn symbol_path<'a>(
    opts: &'a Options,
    file: &str,
) -> Result<&'a crate::fetch::symsrv::SymbolPath, Unavailable> {
    opts.symbol_path
        .as_ref()
        .ok_or_else(|| Unavailable::NoSymbolServer {
            file: file.to_string(),
        })
}

/// The file fetched, or why not: on no server (every one asked answered that it does
/// not have it), or a server that failed.
fn found(fetched: Fetched, what: &str) -> Result<PathBuf, Unavailable> {
    let Some(path) = fetched.path else {
        let (module, asked) = (what.to_string(), fetched.asked);
        return Err(match fetched.problems.is_empty() {
            true => Unavailable::NotFound { module, asked },
            false => Unavailable::ServerFailed {
                module,
                asked,
                problems: fetched.problems,
            },
        });
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
