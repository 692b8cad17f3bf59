//! Split DWARF: skeleton units whose DIEs live in `.dwo` files (DWARF 5 and the GNU
//! DWARF 4 extension) or in a `.dwp` package next to the binary or its debug file. Here
//! they are read once handed over; [`crate::locate`] finds and opens them.

use std::path::PathBuf;

use gimli::{DwarfPackage, DwarfPackageSections, DwarfSections, EndianSlice, RunTimeEndian};

use super::R;
use crate::error::{WarningKind, Warnings};
use crate::load::{Input, section_data};

/// A loaded `.dwo` file: its sections, owned.
pub(crate) struct DwoFile {
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
pub(crate) struct DwpFile {
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

impl DwoFile {
    /// Reads the `.dwo` sections of `input`, decompressed.
    pub(crate) fn read(input: &Input, warnings: &mut Warnings) -> Option<DwoFile> {
        let sections = load_sections(input, |f| DwarfSections::load(f), warnings)?;
        Some(DwoFile { sections })
    }
}

impl DwpFile {
    /// Reads the sections of the `.dwp` package `input`, decompressed.
    pub(crate) fn read(input: &Input, warnings: &mut Warnings) -> Option<DwpFile> {
        let sections = load_sections(input, |f| DwarfPackageSections::load(f), warnings)?;
        Some(DwpFile {
            path: input.path().to_path_buf(),
            sections,
        })
    }
}

/// Reads the `.dwo` sections of an object file (a `.dwo` or `.dwp`), decompressed.
fn load_sections<T>(
    input: &Input,
    load: impl FnOnce(
        &mut dyn FnMut(gimli::SectionId) -> Result<Vec<u8>, gimli::Error>,
    ) -> Result<T, gimli::Error>,
    warnings: &mut Warnings,
) -> Option<T> {
    let path = input.path();
    let file = match object::File::parse(input.bytes()) {
        Ok(f) => f,
        Err(e) => {
            warnings.push(
                WarningKind::Companion,
                format!("{}: not an object file: {e}", path.display()),
            );
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
    warnings.extend_under(&format!("{}: ", path.display()), w);
    result
        .map_err(|e| warnings.push(WarningKind::Companion, format!("{}: {e}", path.display())))
        .ok()
}
