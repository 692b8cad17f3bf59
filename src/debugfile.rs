//! Finding a stripped binary's separate debug file: by GNU build ID under `.build-id`
//! directories, and by `.gnu_debuglink` (name and CRC32) in the places GDB looks.

use std::path::{Path, PathBuf};

use object::{Object as _, ObjectSection as _};

use crate::error::Warnings;
use crate::identity;
use crate::load::{Input, Object};

/// The system-wide debug directory distributions install debug files into.
pub const SYSTEM_DEBUG_DIR: &str = "/usr/lib/debug";

/// A debug file found for a binary.
pub struct DebugFile {
    pub path: PathBuf,
    pub input: Input,
}

/// True when `obj` has no DWARF of its own worth reading.
pub fn lacks_dwarf(obj: &Object) -> bool {
    obj.file
        .section_by_name(".debug_info")
        .is_none_or(|s| s.size() == 0 || s.kind() == object::SectionKind::UninitializedData)
}

/// Where a debug file was looked for: what to tell the user when none was found.
#[derive(Debug, Clone, Default)]
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
}

impl Search {
    /// One sentence saying where the debug info was looked for.
    pub fn summary(&self) -> String {
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

/// Looks for the debug file of `obj` (read from `binary`): first by build ID, then by
/// debug link. `debug_dirs` are searched before the system directory; what was tried
/// goes into `search`. A file that is there but does not match (CRC, build ID) is a
/// warning.
pub fn find(
    obj: &Object,
    binary: &Path,
    debug_dirs: &[PathBuf],
    warnings: &mut Warnings,
    search: &mut Search,
) -> Option<DebugFile> {
    let build_id = identity::build_id(obj).filter(|id| id.len() >= 2);
    let mut roots: Vec<PathBuf> = debug_dirs.to_vec();
    roots.push(PathBuf::from(SYSTEM_DEBUG_DIR));

    if let Some(id) = build_id {
        let hex = identity::hex_upper(id).to_lowercase();
        search.build_id = Some(hex.clone());
        search.build_id_roots = roots.clone();
        for root in &roots {
            let candidate = root
                .join(".build-id")
                .join(&hex[..2])
                .join(format!("{}.debug", &hex[2..]));
            search.tried.push(candidate.display().to_string());
            if let Some(found) = open_matching(&candidate, Some(id), None, warnings) {
                return Some(found);
            }
        }
    }

    let (name, crc) = debuglink(obj)?;
    search.debuglink = Some(name.clone());
    let dir = binary
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let absolute_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let relative_dir = absolute_dir.strip_prefix("/").unwrap_or(&absolute_dir);
    let mut candidates = vec![dir.join(&name), dir.join(".debug").join(&name)];
    for root in &roots {
        candidates.push(root.join(relative_dir).join(&name));
        candidates.push(root.join(&name));
    }
    for candidate in &candidates {
        search
            .tried
            .push(format!("{} (CRC {crc:08x})", candidate.display()));
        if let Some(found) = open_matching(candidate, build_id, Some(crc), warnings) {
            return Some(found);
        }
    }
    None
}

/// Opens a debug file fetched for `obj` (by its build ID), checking that it is one.
pub fn open_fetched(obj: &Object, path: &Path, warnings: &mut Warnings) -> Option<DebugFile> {
    open_matching(path, identity::build_id(obj), None, warnings)
}

/// The `.gnu_debuglink` file name and CRC32.
fn debuglink(obj: &Object) -> Option<(String, u32)> {
    let data = obj.file.section_by_name(".gnu_debuglink")?.data().ok()?;
    parse_debuglink(data, obj.is_big_endian())
}

/// Reads a `.gnu_debuglink` section: file name, NUL, padding, CRC32.
pub(crate) fn parse_debuglink(data: &[u8], big_endian: bool) -> Option<(String, u32)> {
    let nul = data.iter().position(|&b| b == 0)?;
    let name = String::from_utf8_lossy(&data[..nul]).into_owned();
    // The CRC follows the name, its NUL and padding to a 4-byte boundary.
    let at = (nul + 1).next_multiple_of(4);
    let bytes: [u8; 4] = data.get(at..at + 4)?.try_into().ok()?;
    let crc = if big_endian {
        u32::from_be_bytes(bytes)
    } else {
        u32::from_le_bytes(bytes)
    };
    (!name.is_empty() && !name.contains('/')).then_some((name, crc))
}

/// Opens `path` if it exists and is the right file: the same build ID when both have
/// one, the debug link's CRC when one is given.
fn open_matching(
    path: &Path,
    build_id: Option<&[u8]>,
    crc: Option<u32>,
    warnings: &mut Warnings,
) -> Option<DebugFile> {
    if !path.is_file() {
        return None;
    }
    let input = match Input::open(path) {
        Ok(i) => i,
        Err(e) => {
            warnings.push(format!("debug file candidate {e}"));
            return None;
        }
    };
    let obj = match Object::parse(&input) {
        Ok(o) => o,
        Err(e) => {
            warnings.push(format!("debug file candidate {e}"));
            return None;
        }
    };
    // Only once it is known to be an object file: a candidate can be anything of any
    // size (an 8 GB sparse file cost 10 s and 8.4 GB of resident pages to hash).
    if let Some(expected) = crc {
        let actual = crc_released(&input);
        if actual != expected {
            warnings.push(format!(
                "{}: CRC {actual:08x} does not match the debug link's {expected:08x}; not used",
                path.display()
            ));
            return None;
        }
    }
    if let (Some(want), Some(have)) = (build_id, identity::build_id(&obj))
        && want != have
    {
        warnings.push(format!(
            "{}: build ID {} does not match the binary's {}; not used",
            path.display(),
            identity::hex_upper(have),
            identity::hex_upper(want)
        ));
        return None;
    }
    drop(obj);
    Some(DebugFile {
        path: path.to_path_buf(),
        input,
    })
}

/// The CRC-32 of the whole file, read in pieces that are released as they are hashed,
/// so that hashing a large debug file does not keep all of it resident.
fn crc_released(input: &Input) -> u32 {
    let mut hasher = crc32fast::Hasher::new();
    for piece in input.bytes().chunks(8 << 20) {
        hasher.update(piece);
        input.release(piece);
    }
    hasher.finalize()
}

/// Bounds a decompressed MiniDebugInfo ELF: real ones are a few hundred KiB.
const MAX_MINI_DEBUGINFO: usize = 256 << 20;

/// The ELF embedded xz-compressed in `.gnu_debugdata` (MiniDebugInfo, as Fedora and
/// Android ship it): a symbol table for binaries stripped of everything else.
pub fn mini_debuginfo(obj: &Object, binary: &Path, warnings: &mut Warnings) -> Option<Input> {
    let section = obj.file.section_by_name(".gnu_debugdata")?;
    let compressed = section.data().ok()?;
    let mut out = LimitedWriter(Vec::new());
    if let Err(e) = lzma_rs::xz_decompress(&mut std::io::BufReader::new(compressed), &mut out) {
        warnings.push(format!(".gnu_debugdata: cannot decompress (xz): {e}"));
        return None;
    }
    let mut name = binary.as_os_str().to_os_string();
    name.push(":.gnu_debugdata");
    Some(Input::from_bytes(PathBuf::from(name), out.0))
}

struct LimitedWriter(Vec<u8>);

impl std::io::Write for LimitedWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_MINI_DEBUGINFO {
            return Err(std::io::Error::other(
                "decompressed data larger than 256 MiB",
            ));
        }
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The DWARF file inside a `.dSYM` bundle (`App.dSYM/Contents/Resources/DWARF/App`), or
/// `path` itself when it is not a bundle directory.
pub fn resolve_dsym_bundle(path: &Path) -> Result<PathBuf, crate::Error> {
    let dwarf_dir = path.join("Contents/Resources/DWARF");
    if !path.is_dir() || !dwarf_dir.is_dir() {
        return Ok(path.to_path_buf());
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dwarf_dir)
        .map_err(|e| crate::Error::new(path, crate::ErrorKind::Io(e)))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_file())
        .collect();
    // Sorted: with several, the message lists them in a fixed order.
    files.sort();
    match files.len() {
        1 => Ok(files.remove(0)),
        0 => Err(crate::Error::new(
            path,
            crate::ErrorKind::NotObject("a .dSYM bundle with no DWARF file".into()),
        )),
        _ => Err(crate::Error::new(
            path,
            crate::ErrorKind::Unsupported(format!(
                "the .dSYM bundle holds several DWARF files ({}); name one",
                files
                    .iter()
                    .map(|f| f.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        )),
    }
}

/// Finds the `.dSYM` of a Mach-O binary: a bundle among `debug_dirs` (`dumpsyms App
/// App.dSYM`), or `App.dSYM` beside it. Its UUID must match the binary's slice: a
/// mismatch is an error, since its DWARF describes other code.
pub fn find_dsym(
    obj: &Object,
    binary: &Path,
    debug_dirs: &[PathBuf],
    arch: &str,
) -> Result<Option<DebugFile>, crate::Error> {
    let mut beside = binary.as_os_str().to_os_string();
    beside.push(".dSYM");
    // One named on the command line is read (a pipe or device is refused when opened);
    // the one beside the binary is only looked for, and only a bundle or a file counts.
    let named = debug_dirs
        .iter()
        .filter(|d| d.extension().is_some_and(|e| e == "dSYM") || d.is_file())
        .filter(|p| p.exists())
        .cloned();
    let beside = Some(PathBuf::from(beside)).filter(|p| p.is_dir() || p.is_file());
    let mut candidates = named.chain(beside);
    let want = identity::mach_uuid(obj);
    // The first one there is the one meant: a named bundle before the one beside.
    if let Some(bundle) = candidates.next() {
        let path = resolve_dsym_bundle(&bundle)?;
        let input = Input::open(&path)?;
        let dsym = Object::parse_arch(&input, Some(arch))?;
        let have = identity::mach_uuid(&dsym);
        if have != want {
            let show =
                |u: Option<[u8; 16]>| u.map_or("none".to_string(), |u| identity::hex_upper(&u));
            return Err(crate::Error::new(
                &path,
                crate::ErrorKind::Unsupported(format!(
                    "the dSYM's UUID {} does not match {}'s {} ({arch})",
                    show(have),
                    binary.display(),
                    show(want)
                )),
            ));
        }
        drop(dsym);
        return Ok(Some(DebugFile { path, input }));
    }
    Ok(None)
}
