//! Finding a module's companion files, the one place that does: a stripped binary's
//! separate debug file (build ID, debug link, debuginfod), a Mach-O's dSYM, a PE's PDB
//! (beside it, in debug directories, on symbol servers), and the files its DWARF points
//! to (`.dwo`, `.dwp`, dwz's alternate file), which the DWARF reader asks for through
//! [`crate::dwarf::Companions`]. Readers elsewhere read only what they are handed;
//! downloads go through [`crate::fetch`].

mod debug_file;
mod debug_map;
mod dsym;
mod dwz;
mod pdb;
mod split;

use std::path::{Path, PathBuf};

#[cfg(any(feature = "fuzzing", test))]
pub(crate) use debug_file::parse_debuglink;
pub(crate) use debug_file::{
    DebugFile, Located, debuglink_name, lacks_dwarf, locate_debug_file, mini_debuginfo,
};
pub(crate) use debug_map::{Libraries, debug_map, moves as map_moves, open as open_map_object};
pub(crate) use dsym::resolve_dsym_bundle;
pub(crate) use pdb::{find_pe, locate_pdb, verify_pdb, verify_pe};

use crate::dwarf::{AltLink, Companions, DwoFile, DwpFile};
use crate::error::NotTheFile;
use crate::error::{Warning, Warnings};
use crate::fetch::debuginfod::Debuginfod;
use crate::load::Input;

/// The system-wide debug directory distributions install debug files into.
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// Where a debug directory keeps the file of a build ID (`hex`, lower case, at least two
/// digits): `<root>/.build-id/xx/yyyy.debug`, as GDB and distributions lay it out.
pub(crate) fn build_id_path(root: &Path, hex: &str) -> PathBuf {
    root.join(".build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]))
}

/// The search log of one module: where its debug information was looked for (a
/// separate debug file, a dSYM, a PE's PDB), what was found there but could not be used,
/// and which servers failed. `-v` lists it and the "no debug info" message quotes it.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Search {
    /// The binary's build ID (lower-case hex), if it has one.
    pub build_id: Option<String>,
    /// The directories whose `.build-id` trees were searched.
    pub build_id_roots: Vec<PathBuf>,
    /// The `.gnu_debuglink` name, if the binary has one.
    pub debuglink: Option<String>,
    /// Every path tried, in order.
    pub tried: Vec<String>,
    /// The debuginfod servers asked; `None` when debuginfod is off.
    pub debuginfod: Option<Vec<String>>,
    /// A PE's PDB (`name id`), which is looked for instead of the above.
    pub pdb: Option<String>,
    /// Files of the right name that were found but could not be read, and why.
    pub unusable: Vec<String>,
    /// A PDB of the right name but another build, with that build's id: the error to
    /// give when no other is found.
    pub mismatch: Option<(PathBuf, String)>,
    /// Servers that could not be used (down, failing), each a [`crate::WarningKind::Server`]
    /// warning: about the network, not the file.
    pub servers: Vec<Warning>,
}

/// One sentence saying where the debug info was looked for.
impl std::fmt::Display for Search {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.summary())
    }
}

impl Search {
    fn summary(&self) -> String {
        if let Some(pdb) = &self.pdb {
            let symbol_path = if self.tried.iter().any(|t| t.contains("://")) {
                ""
            } else {
                "; no symbol server (--symbol-server, _NT_SYMBOL_PATH)"
            };
            if !self.unusable.is_empty() {
                return format!(
                    "PDB {pdb}: found {}; no usable copy beside the image, at its recorded path or in the debug directories{symbol_path}",
                    self.unusable.join("; ")
                );
            }
            return format!(
                "PDB {pdb} not found beside the image, at its recorded path or in the debug directories{symbol_path}"
            );
        }
        let mut places = Vec::new();
        if let Some(id) = &self.build_id {
            let roots: Vec<String> = self
                .build_id_roots
                .iter()
                .map(|r| r.join(".build-id").display().to_string())
                .collect();
            places.push(format!("build ID {id} under {}", roots.join(", ")));
        } else {
            places.push("no build ID to look up".to_string());
        }
        if let Some(name) = &self.debuglink {
            places.push(format!(
                "debug link {name} beside the binary, in its .debug/ and under the debug directories"
            ));
        }
        match &self.debuginfod {
            Some(servers) => places.push(format!("debuginfod ({})", servers.join(", "))),
            None => places.push("no debuginfod server (DEBUGINFOD_URLS is not set)".into()),
        }
        places.join("; ")
    }
}

/// Where the files a module's DWARF points to are looked for: beside the binary and its
/// debug file, in the debug directories, and (dwz's alternate file) on debuginfod.
/// Nothing is looked for when the module was not read from disk.
pub(crate) struct Finder<'a> {
    /// The binary given.
    pub binary: &'a Path,
    /// Its separate debug file, when the DWARF came from one.
    pub debug_file: Option<&'a Path>,
    pub debug_dirs: &'a [PathBuf],
    pub debuginfod: Option<&'a Debuginfod>,
    /// False for a file dumped from memory: its result depends on its bytes alone.
    pub on_disk: bool,
}

impl Companions for Finder<'_> {
    fn alternate(&self, link: &AltLink, warnings: &mut Warnings) -> Option<Input> {
        if !self.on_disk {
            return None;
        }
        let source = self.debug_file.unwrap_or(self.binary);
        dwz::find(link, source, self.debug_dirs, self.debuginfod, warnings)
    }

    fn package(&self, warnings: &mut Warnings) -> Option<DwpFile> {
        if !self.on_disk {
            return None;
        }
        split::find_dwp(self.binary, self.debug_file, warnings)
    }

    fn split_unit_places(&self, comp_dir: Option<&str>, dwo_name: &str) -> Vec<PathBuf> {
        if !self.on_disk {
            return Vec::new();
        }
        split::dwo_candidates(comp_dir, dwo_name, self.binary, self.debug_dirs)
    }

    fn split_unit(&self, places: &[PathBuf], warnings: &mut Warnings) -> Option<DwoFile> {
        let path = places.iter().find(|p| p.is_file())?;
        split::load_dwo(path, warnings)
    }
}

/// Whether the file at `path` is an object file with build ID `want` (in its note, or
/// in the `.debug_sup` section of a DWARF 5 supplementary file): what a debuginfod
/// server must send for `/buildid/<want>/debuginfo`, checked here rather than by the
/// network code.
pub(crate) fn has_build_id(path: &Path, want: &[u8]) -> Result<(), NotTheFile> {
    let unreadable = |e: crate::error::Error| NotTheFile::Unreadable(Box::new(e.kind));
    let input = crate::load::Input::open(path).map_err(unreadable)?;
    let obj = crate::load::Object::parse_any(&input).map_err(unreadable)?;
    let own = crate::identity::build_id(&obj);
    let sup = crate::dwarf::sup::debug_sup(&obj, true);
    if own == Some(want) || sup.as_ref().is_some_and(|s| s.build_id == want) {
        return Ok(());
    }
    let hex = |id: &[u8]| crate::identity::hex_upper(id).to_lowercase();
    Err(match own {
        Some(id) => NotTheFile::WrongBuild {
            what: "the file's build ID",
            have: hex(id),
        },
        None => NotTheFile::NoBuildId,
    })
}
