//! A Mach-O linked without `dsymutil` keeps its DWARF in the object files it was linked
//! from: its symbol table's stabs (the debug map) name each one (`N_OSO`, with its
//! modification time) and the functions the link took from it (`N_FUN`: name, linked
//! address, size). Every local macOS build and many sanitizer runs are like that.
//! This reads the map, finds the object files (by the path the stab gives, else under
//! each debug directory by file name; `libfoo.a(bar.o)` from the static library), and
//! gives, per object file, where each of its functions went: the relocation `dsymutil`
//! applies when it links the DWARF into a dSYM.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use object::read::macho::{MachHeader, MachOFile, Nlist};
use object::{Object as _, ObjectSymbol as _};

use crate::error::{Warning, WarningKind, Warnings};
use crate::load::{Input, Object};

// The stab types the map is made of (`<mach-o/stab.h>`).
const N_STAB: u8 = 0xe0;
const N_FUN: u8 = 0x24;
const N_SO: u8 = 0x64;
const N_OSO: u8 = 0x66;

/// One object file of a debug map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapObject {
    /// As the stab names it: a path, or `archive.a(member.o)`.
    pub path: String,
    /// Its modification time when it was linked (seconds since 1970), or 0.
    pub mtime: u64,
    /// The functions the link took from it.
    pub functions: Vec<MapFunction>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MapFunction {
    /// The symbol's name as in the object file (`_main`, `__Z3fooi`).
    pub name: Vec<u8>,
    /// Where it is in the binary.
    pub address: u64,
    pub size: u64,
}

/// The debug map of the Mach-O `obj`, if its symbol table has one (`N_OSO` stabs).
pub(crate) fn debug_map(obj: &Object) -> Option<Vec<MapObject>> {
    let map = match &obj.file {
        object::File::MachO64(file) => read_map(file),
        object::File::MachO32(file) => read_map(file),
        _ => return None,
    };
    (!map.is_empty()).then_some(map)
}

fn read_map<'data, Mach: MachHeader<Endian = object::Endianness>>(
    file: &MachOFile<'data, Mach>,
) -> Vec<MapObject> {
    let endian = file.endian();
    let symbols = file.macho_symbol_table();
    let strings = symbols.strings();
    let mut map: Vec<MapObject> = Vec::new();
    // The function whose size the next nameless N_FUN gives.
    let mut open: Option<MapFunction> = None;
    for nlist in symbols.iter() {
        let kind = nlist.n_type().0;
        if kind & N_STAB == 0 {
            continue;
        }
        let name = nlist.name(endian, strings).unwrap_or_default();
        let value: u64 = nlist.n_value(endian).into();
        match kind {
            N_OSO => {
                map.push(MapObject {
                    path: String::from_utf8_lossy(name).into_owned(),
                    mtime: value,
                    functions: Vec::new(),
                });
                open = None;
            }
            N_FUN if !name.is_empty() => {
                open = Some(MapFunction {
                    name: name.to_vec(),
                    address: value,
                    size: 0,
                });
            }
            N_FUN => {
                if let (Some(mut f), Some(object)) = (open.take(), map.last_mut()) {
                    f.size = value;
                    object.functions.push(f);
                }
            }
            // A nameless N_SO closes the object's entries.
            N_SO if name.is_empty() => open = None,
            _ => {}
        }
    }
    map
}

/// The static libraries a debug map's objects come from, each indexed once: a map of
/// thousands of `libx.a(y.o)` entries naming one library of many members reads its
/// member table once, not once per entry.
#[derive(Default)]
pub(crate) struct Libraries {
    read: Mutex<HashMap<PathBuf, Option<Arc<Library>>>>,
}

/// One static library's members: where each lies in its file, and its time.
struct Library {
    members: HashMap<Vec<u8>, (u64, u64, u64)>,
}

impl Libraries {
    /// The member index of the library at `path`, read on first use; `None` when it is
    /// no archive that can be read.
    fn get(&self, path: &Path) -> Option<Arc<Library>> {
        let mut read = self.read.lock().unwrap_or_else(|e| e.into_inner());
        read.entry(path.to_path_buf())
            .or_insert_with(|| Library::read(path).map(Arc::new))
            .clone()
    }
}

impl Library {
    fn read(path: &Path) -> Option<Library> {
        let input = Input::open(path).ok()?;
        let archive = object::read::archive::ArchiveFile::parse(input.bytes()).ok()?;
        let mut members = HashMap::new();
        for member in archive.members().filter_map(Result::ok) {
            let (offset, size) = member.file_range();
            // The first of a name wins, as the linker's `ar` lookup does.
            members.entry(member.name().to_vec()).or_insert((
                offset,
                size,
                member.date().unwrap_or(0),
            ));
        }
        Some(Library { members })
    }
}

/// Opens `object`'s file: the path the stab gives, else by file name under each of
/// `debug_dirs` (a build tree moved). A missing file or one whose time differs from
/// the stab's is a warning (the latter used all the same, as `dsymutil` does). A
/// member of a static library is mapped where it lies in the library, not copied.
pub(crate) fn open(
    object: &MapObject,
    debug_dirs: &[PathBuf],
    libraries: &Libraries,
    warnings: &mut Warnings,
) -> Option<Input> {
    let (file, member) = split_member(&object.path);
    let candidates = std::iter::once(PathBuf::from(file)).chain(
        Path::new(file)
            .file_name()
            .map(|name| debug_dirs.iter().map(|d| d.join(name)).collect::<Vec<_>>())
            .unwrap_or_default(),
    );
    let warn = |why: String| {
        Warning::new(WarningKind::Companion, format!("{}: {why}", object.path))
            .on(object.path.clone())
    };
    let Some(found) = candidates.into_iter().find(|p| p.is_file()) else {
        warnings.add(warn(
            "not found (nor under the debug directories): its functions have no lines".into(),
        ));
        return None;
    };
    let (input, mtime) = match member {
        None => {
            let input = match Input::open(&found) {
                Ok(input) => input,
                Err(e) => {
                    warnings.add(warn(format!("cannot be read: {e}")));
                    return None;
                }
            };
            let mtime = std::fs::metadata(&found)
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_secs());
            (input, mtime)
        }
        Some(member) => {
            let Some(&(offset, size, mtime)) = libraries
                .get(&found)
                .as_deref()
                .and_then(|l| l.members.get(member.as_bytes()))
            else {
                warnings.add(warn(format!("{} has no member {member}", found.display())));
                return None;
            };
            match Input::open_part(&found, PathBuf::from(&object.path), offset, size) {
                Ok(input) => (input, mtime),
                Err(e) => {
                    warnings.add(warn(format!("cannot be read: {e}")));
                    return None;
                }
            }
        }
    };
    if object.mtime != 0 && mtime != object.mtime {
        warnings.add(warn(
            "modified since the link (its time is not the debug map's): its DWARF is read all the same, and may not match".into(),
        ));
    }
    Some(input)
}

/// `libfoo.a(bar.o)` as the archive and the member; a plain path alone.
fn split_member(path: &str) -> (&str, Option<&str>) {
    match path.strip_suffix(')').and_then(|p| p.rsplit_once('(')) {
        Some((archive, member)) if !member.is_empty() => (archive, Some(member)),
        _ => (path, None),
    }
}

/// Where each of `object`'s functions went, by its symbol in the object file `obj`.
/// A function the object file does not define, or whose extent there (to the next
/// symbol of its section) is not the size the map gives, is of another build of the
/// object: it is left out, with a warning, rather than given that build's lines.
pub(crate) fn moves(
    object: &MapObject,
    obj: &Object,
    warnings: &mut Warnings,
) -> Vec<(u64, u64, u64)> {
    let extents = symbol_extents(obj);
    let (mut missing, mut resized) = (0usize, 0usize);
    let mut moves: Vec<(u64, u64, u64)> = object
        .functions
        .iter()
        .filter_map(|f| {
            let Some(&(at, extent)) = extents.get(f.name.as_slice()) else {
                missing += 1;
                return None;
            };
            if extent != f.size {
                resized += 1;
                return None;
            }
            Some((at, at.saturating_add(f.size), f.address.wrapping_sub(at)))
        })
        .collect();
    if missing + resized > 0 {
        warnings.add(
            Warning::new(
                WarningKind::Companion,
                format!(
                    "{}: of the debug map's {} function(s), {missing} not in it and {resized} of another size: another build of it? Those have no lines",
                    object.path,
                    object.functions.len()
                ),
            )
            .on(object.path.clone()),
        );
    }
    moves.sort_unstable();
    moves
}

/// Each symbol defined in a section of `obj`, with its address and extent: to the next
/// symbol at a higher address in its section, or the section's end.
fn symbol_extents<'o>(obj: &'o Object) -> HashMap<&'o [u8], (u64, u64)> {
    use object::ObjectSection as _;
    let mut starts: HashMap<object::SectionIndex, Vec<u64>> = HashMap::new();
    let symbols: Vec<(&[u8], object::SectionIndex, u64)> = obj
        .file
        .symbols()
        .filter(|s| s.is_definition())
        .filter_map(|s| Some((s.name_bytes().ok()?, s.section_index()?, s.address())))
        .collect();
    for &(_, section, at) in &symbols {
        starts.entry(section).or_default().push(at);
    }
    for list in starts.values_mut() {
        list.sort_unstable();
        list.dedup();
    }
    symbols
        .into_iter()
        .filter_map(|(name, section, at)| {
            let list = starts.get(&section)?;
            let next = list.get(list.partition_point(|&a| a <= at)).copied();
            let end = next.or_else(|| {
                let s = obj.file.section_by_index(section).ok()?;
                Some(s.address().saturating_add(s.size()))
            })?;
            Some((name, (at, end.saturating_sub(at))))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_library_members() {
        assert_eq!(
            split_member("/b/libgeo.a(util.o)"),
            ("/b/libgeo.a", Some("util.o"))
        );
        assert_eq!(split_member("/b/util.o"), ("/b/util.o", None));
        assert_eq!(split_member("/b/odd(.o"), ("/b/odd(.o", None));
    }

    #[test]
    fn the_map_of_a_linked_fixture() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/debugmap/arm64-O2/app");
        let input = Input::open(&path).unwrap();
        let obj = Object::parse(&input).unwrap();
        let map = debug_map(&obj).unwrap();
        let names: Vec<&str> = map
            .iter()
            .map(|o| Path::new(&o.path).file_name().unwrap().to_str().unwrap())
            .collect();
        assert_eq!(names, ["shapes.o", "libutil.a(util.o)"]);
        let main = map[0]
            .functions
            .iter()
            .find(|f| f.name == b"_main")
            .unwrap();
        assert!(main.address > 0x1_0000_0000 && main.size > 0, "{main:?}");
    }
}
