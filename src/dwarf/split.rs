//! Split DWARF: skeleton units whose DIEs live in `.dwo` files (DWARF 5 and the GNU
//! DWARF 4 extension) or in a `.dwp` package next to the binary or its debug file.

use std::path::{Path, PathBuf};

use gimli::{DwarfPackage, DwarfPackageSections, DwarfSections, EndianSlice, RunTimeEndian};

use super::R;
use crate::error::Warnings;
use crate::load::{Input, section_data};

/// Where a module's split DWARF may be.
#[derive(Debug, Clone, Default)]
pub struct SplitPaths {
    /// The binary given on the command line.
    pub binary: PathBuf,
    /// Its separate debug file, when the DWARF came from one.
    pub debug_file: Option<PathBuf>,
    /// Extra directories to search.
    pub debug_dirs: Vec<PathBuf>,
    /// Whether companion files (`.dwo`, `.dwp`, dwz's alternate file) are looked for on
    /// disk; not for a file dumped from memory.
    pub on_disk: bool,
    /// Where to fetch dwz's alternate file by build ID when it is not on disk.
    pub debuginfod: Option<crate::fetch::debuginfod::Debuginfod>,
}

/// A loaded `.dwo` file: its sections, owned.
pub struct DwoFile {
    sections: DwarfSections<Vec<u8>>,
}

impl DwoFile {
    /// The DWARF of this `.dwo`, completed from its skeleton's file.
    pub fn dwarf<'a>(
        &'a self,
        endian: RunTimeEndian,
        parent: &gimli::Dwarf<R<'a>>,
    ) -> gimli::Dwarf<R<'a>> {
        let mut dwarf = self.sections.borrow(|s| EndianSlice::new(s, endian));
        dwarf.make_dwo(parent);
        dwarf
    }
}

/// Sections of a `.dwp` package, owned.
pub struct DwpFile {
    pub path: PathBuf,
    sections: DwarfPackageSections<Vec<u8>>,
}

impl DwpFile {
    /// The package index, over the owned sections.
    pub fn package(&self, endian: RunTimeEndian) -> gimli::Result<DwarfPackage<R<'_>>> {
        self.sections.borrow(
            |s| EndianSlice::new(s, endian),
            EndianSlice::new(&[], endian),
        )
    }
}

/// Reads the `.dwo` sections of an object file (a `.dwo` or `.dwp`), decompressed.
fn load_sections<T>(
    path: &Path,
    load: impl FnOnce(
        &mut dyn FnMut(gimli::SectionId) -> Result<Vec<u8>, gimli::Error>,
    ) -> Result<T, gimli::Error>,
    warnings: &mut Warnings,
) -> Option<T> {
    let input = Input::open(path)
        .map_err(|e| warnings.push(e.to_string()))
        .ok()?;
    let file = match object::File::parse(input.bytes()) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(format!("{}: not an object file: {e}", path.display()));
            return None;
        }
    };
    let mut w = Warnings::default();
    let result = load(&mut |id| {
        Ok(id
            .dwo_name()
            .map(|name| section_data(&file, input.bytes().len(), name, &mut w).into_owned())
            .unwrap_or_default())
    });
    for msg in w.0 {
        warnings.push(format!("{}: {msg}", path.display()));
    }
    result
        .map_err(|e| warnings.push(format!("{}: {e}", path.display())))
        .ok()
}

/// Loads the `.dwo` file at `path`.
pub fn load_dwo(path: &Path, warnings: &mut Warnings) -> Option<DwoFile> {
    let sections = load_sections(path, |f| DwarfSections::load(f), warnings)?;
    Some(DwoFile { sections })
}

/// Loads the first `.dwp` package found: `<binary>.dwp`, then `<debug file>.dwp`.
pub fn find_dwp(paths: &SplitPaths, warnings: &mut Warnings) -> Option<DwpFile> {
    if !paths.on_disk {
        return None;
    }
    let mut candidates = vec![with_suffix(&paths.binary, ".dwp")];
    if let Some(debug) = &paths.debug_file {
        candidates.push(with_suffix(debug, ".dwp"));
    }
    let path = candidates.into_iter().find(|p| p.is_file())?;
    let sections = load_sections(&path, |f| DwarfPackageSections::load(f), warnings)?;
    Some(DwpFile { path, sections })
}

fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(suffix);
    PathBuf::from(s)
}

/// Where to look for a skeleton's `.dwo`: the name as recorded (relative to the
/// compilation directory), then, for build trees that moved (or whose `comp_dir` a
/// `-fdebug-prefix-map` rewrote), the file name beside the binary and in each debug
/// directory.
pub fn dwo_candidates(comp_dir: Option<&str>, dwo_name: &str, paths: &SplitPaths) -> Vec<PathBuf> {
    let name = Path::new(dwo_name);
    let mut out = Vec::new();
    if !paths.on_disk {
        return out;
    }
    match comp_dir {
        Some(dir) if name.is_relative() => out.push(Path::new(dir).join(name)),
        _ => out.push(name.to_path_buf()),
    }
    if let Some(file) = name.file_name() {
        for dir in paths
            .binary
            .parent()
            .into_iter()
            .chain(paths.debug_dirs.iter().map(PathBuf::as_path))
        {
            out.push(dir.join(file));
        }
    }
    out
}
