//! Finding a stripped binary's separate debug file: by GNU build ID under `.build-id`
//! directories, and by `.gnu_debuglink` (name and CRC32) in the places GDB looks.

use std::path::{Path, PathBuf};

use object::{Object as _, ObjectSection as _};

use super::{SYSTEM_DEBUG_DIR, Search, dsym};
use crate::error::{Error, Warning, WarningKind, Warnings};
use crate::identity;
use crate::load::{Input, Object};
use crate::options::Options;

/// A debug file found for a binary.
pub(crate) struct DebugFile {
    pub path: PathBuf,
    pub input: Input,
}

/// What looking for a binary's debug file came to.
#[derive(Default)]
pub(crate) struct Located {
    pub file: Option<DebugFile>,
    /// Where it was looked for (not for a dSYM, which is only beside the binary or
    /// named).
    pub search: Option<Search>,
}

/// The separate debug file of a binary without DWARF: a dSYM for Mach-O; else by build
/// ID and debug link, then from debuginfod.
pub(crate) fn locate_debug_file(
    obj: &Object,
    arch: &str,
    opts: &Options,
    warnings: &mut Warnings,
) -> Result<Located, Error> {
    if obj.file.format() == object::BinaryFormat::MachO {
        let file = dsym::find_dsym(obj, obj.path, &opts.debug_dirs, arch)?;
        return Ok(Located { file, search: None });
    }
    let mut search = Search::default();
    let file = find(obj, obj.path, &opts.debug_dirs, warnings, &mut search)
        .or_else(|| from_debuginfod(obj, opts, &mut search, warnings));
    Ok(Located {
        file,
        search: Some(search),
    })
}

/// The debug file of `obj` from the debuginfod servers, if they are configured and have
/// it.
fn from_debuginfod(
    obj: &Object,
    opts: &Options,
    search: &mut Search,
    warnings: &mut Warnings,
) -> Option<DebugFile> {
    let client = opts.debuginfod.as_ref()?;
    search.debuginfod = Some(client.servers.clone());
    let build_id = identity::build_id(obj).filter(|id| id.len() >= 2)?;
    let fetched = client.debuginfo(build_id, &|p| super::has_build_id(p, build_id));
    search.tried.extend(fetched.asked);
    search.servers.extend(fetched.problems);
    open_matching(&fetched.path?, identity::build_id(obj), None, warnings)
}

/// True when `obj` has no DWARF of its own worth reading.
pub(crate) fn lacks_dwarf(obj: &Object) -> bool {
    obj.file
        .section_by_name(".debug_info")
        .is_none_or(|s| s.size() == 0 || s.kind() == object::SectionKind::UninitializedData)
}

/// Looks for the debug file of `obj` (read from `binary`): first by build ID, then by
/// debug link. `debug_dirs` are searched before the system directory; what was tried
/// goes into `search`. A file that is there but does not match (CRC, build ID) is a
/// warning.
fn find(
    obj: &Object,
    binary: &Path,
    debug_dirs: &[PathBuf],
    warnings: &mut Warnings,
    search: &mut Search,
) -> Option<DebugFile> {
    let build_id = identity::build_id(obj).filter(|id| id.len() >= 2);
    let mut roots: Vec<PathBuf> = debug_dirs.to_vec();
    roots.push(PathBuf::from(SYSTEM_DEBUG_DIR));
    if let Some(id) = build_id
        && let Some(found) = by_build_id(id, &roots, warnings, search)
    {
        return Some(found);
    }
    let (name, crc) = debuglink(obj)?;
    search.debuglink = Some(name.clone());
    for candidate in &debuglink_candidates(&name, binary, &roots) {
        search
            .tried
            .push(format!("{} (CRC {crc:08x})", candidate.display()));
        if let Some(found) = open_matching(candidate, build_id, Some(crc), warnings) {
            return Some(found);
        }
    }
    None
}

/// `<root>/.build-id/xx/yyyy.debug` under each root, for the build ID `id`.
fn by_build_id(
    id: &[u8],
    roots: &[PathBuf],
    warnings: &mut Warnings,
    search: &mut Search,
) -> Option<DebugFile> {
    let hex = identity::hex_upper(id).to_lowercase();
    search.build_id = Some(hex.clone());
    search.build_id_roots = roots.to_vec();
    for root in roots {
        let candidate = super::build_id_path(root, &hex);
        search.tried.push(candidate.display().to_string());
        if let Some(found) = open_matching(&candidate, Some(id), None, warnings) {
            return Some(found);
        }
    }
    None
}

/// Where GDB looks for a debug link's `name`: beside the binary, in its `.debug/`, and
/// under each root by the binary's directory and by the name alone. Between those two,
/// under each root by the binary's directory less its leading components, longest
/// first: a binary unpacked from a package (`<unpacked>/usr/lib/libfoo.so.1`) is looked
/// for where its debug package puts it (`<debug root>/usr/lib/libfoo.so.1.debug`, as
/// Alpine's, Arch's and Fedora's debug packages do), which its absolute directory does
/// not say. A file found so must still have the link's CRC.
fn debuglink_candidates(name: &str, binary: &Path, roots: &[PathBuf]) -> Vec<PathBuf> {
    let dir = binary
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let absolute_dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    let relative_dir = absolute_dir.strip_prefix("/").unwrap_or(&absolute_dir);
    let mut candidates = vec![dir.join(name), dir.join(".debug").join(name)];
    let parts: Vec<_> = relative_dir.components().collect();
    for root in roots {
        for skip in 0..parts.len() {
            let suffix: PathBuf = parts[skip..].iter().collect();
            candidates.push(root.join(suffix).join(name));
        }
        candidates.push(root.join(name));
    }
    candidates
}

/// The debug-link name of the ELF file `input`, if it has one.
pub(crate) fn debuglink_name(input: &Input) -> Option<String> {
    let obj = Object::parse(input).ok()?;
    debuglink(&obj).map(|(name, _)| name)
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
    let shown = path.display().to_string();
    let candidate = |why: String| Warning::new(WarningKind::Companion, why).on(shown.clone());
    let input = match Input::open(path) {
        Ok(i) => i,
        Err(e) => {
            warnings.add(candidate(format!("debug file candidate {e}")));
            return None;
        }
    };
    let obj = match Object::parse(&input) {
        Ok(o) => o,
        Err(e) => {
            warnings.add(candidate(format!("debug file candidate {e}")));
            return None;
        }
    };
    if let Some(why) = mismatch(&input, &obj, build_id, crc) {
        warnings.add(candidate(format!("{shown}: {why}; not used")));
        return None;
    }
    drop(obj);
    Some(DebugFile {
        path: path.to_path_buf(),
        input,
    })
}

/// Why `obj` (read from `input`) is not the debug file wanted: its CRC is not the debug
/// link's, or its build ID not the binary's.
fn mismatch(
    input: &Input,
    obj: &Object,
    build_id: Option<&[u8]>,
    crc: Option<u32>,
) -> Option<String> {
    // Two build IDs settle it without reading the file: an 8 GB sparse candidate cost
    // 19 s to hash.
    if let (Some(want), Some(have)) = (build_id, identity::build_id(obj)) {
        return (want != have).then(|| {
            format!(
                "build ID {} does not match the binary's {}",
                identity::hex_upper(have),
                identity::hex_upper(want)
            )
        });
    }
    // An object file ends where its last section or segment does (its section headers
    // follow): bytes far past that are no debug file's, and are not hashed.
    let size = input.bytes().len() as u64;
    let end = contents_end(obj);
    if size > end.saturating_add(TRAILING_SLACK) {
        return Some(format!(
            "{size} bytes, where its sections end at {end}: not a debug file"
        ));
    }
    // Only once it is known to be an object file: a candidate can be anything of any
    // size (an 8 GB sparse file cost 10 s and 8.4 GB of resident pages to hash).
    if let Some(expected) = crc {
        let actual = crc_released(input);
        if actual != expected {
            return Some(format!(
                "CRC {actual:08x} does not match the debug link's {expected:08x}"
            ));
        }
    }
    None
}

/// What an object file may hold past its last section's or segment's bytes: its section
/// headers (64 bytes each) and what tools leave between them.
const TRAILING_SLACK: u64 = 16 << 20;

/// Where the last section or segment with bytes in the file ends.
fn contents_end(obj: &Object) -> u64 {
    use object::{Object as _, ObjectSection as _, ObjectSegment as _};
    let sections = obj.file.sections().filter_map(|s| s.file_range());
    let segments = obj.file.segments().map(|s| s.file_range());
    sections
        .chain(segments)
        .map(|(offset, size)| offset.saturating_add(size))
        .max()
        .unwrap_or(0)
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
pub(crate) fn mini_debuginfo(
    obj: &Object,
    binary: &Path,
    warnings: &mut Warnings,
) -> Option<Input> {
    let section = obj.file.section_by_name(".gnu_debugdata")?;
    let compressed = section.data().ok()?;
    let mut out = LimitedWriter(Vec::new());
    if let Err(e) = lzma_rs::xz_decompress(&mut std::io::BufReader::new(compressed), &mut out) {
        warnings.push(
            WarningKind::Companion,
            format!(".gnu_debugdata: cannot decompress (xz): {e}"),
        );
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
