//! Owns the input bytes (memory-mapped) and the container parsing: everything downstream
//! asks this module for sections by name and gets bytes back.

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use memmap2::Mmap;
use object::{Object as _, ObjectSection as _};

use crate::error::{Error, ErrorKind, Warnings};

/// A decompressed section may be at most this many times larger than the whole input
/// file. Real DWARF compresses 3–10x; a header claiming more is corrupt, and trusting it
/// would let a few bytes of input allocate gigabytes.
const MAX_DECOMPRESSION_RATIO: u64 = 256;

/// An input file: mapped into memory, or held in a buffer when it was itself extracted
/// from another file (MiniDebugInfo).
pub struct Input {
    path: PathBuf,
    bytes: Bytes,
}

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

impl Input {
    /// Opens and maps `path`.
    pub fn open(path: &Path) -> Result<Input, Error> {
        let io = |e| Error::new(path, ErrorKind::Io(e));
        let file = File::open(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if meta.is_dir() {
            return Err(Error::new(
                path,
                ErrorKind::NotObject("is a directory".into()),
            ));
        }
        if meta.len() == 0 {
            return Err(Error::new(path, ErrorKind::NotObject("empty file".into())));
        }
        // SAFETY: the map is read-only. If another process truncates the file while we
        // read it the process may fault; every symbol dumper and debugger shares that
        // risk, and copying whole binaries into memory would cost far more.
        let map = unsafe { Mmap::map(&file) }.map_err(io)?;
        Ok(Input {
            path: path.to_path_buf(),
            bytes: Bytes::Mapped(map),
        })
    }

    /// An input held in memory; `path` names it in messages.
    pub fn from_bytes(path: PathBuf, bytes: Vec<u8>) -> Input {
        Input {
            path,
            bytes: Bytes::Owned(bytes),
        }
    }

    /// The file's path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file.
    pub fn bytes(&self) -> &[u8] {
        match &self.bytes {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// A parsed ELF file over the bytes of an [`Input`].
pub struct Object<'a> {
    /// The input's path, for messages.
    pub path: &'a Path,
    /// The parsed container.
    pub file: object::File<'a>,
    /// The raw bytes.
    pub data: &'a [u8],
}

impl<'a> Object<'a> {
    /// Parses the container and rejects kinds this tool cannot dump. A universal
    /// (fat) Mach-O must have a single slice; see [`Object::parse_arch`].
    pub fn parse(input: &'a Input) -> Result<Object<'a>, Error> {
        Object::parse_arch(input, None)
    }

    /// Like [`Object::parse`], selecting the slice of a universal Mach-O by Breakpad
    /// architecture name (`x86_64`, `arm64`, `x86`; `i386` too).
    pub fn parse_arch(input: &'a Input, arch: Option<&str>) -> Result<Object<'a>, Error> {
        let obj = Object::parse_any_arch(input, arch)?;
        if obj.file.kind() == object::ObjectKind::Relocatable {
            return Err(Error::new(
                input.path(),
                ErrorKind::Unsupported(
                    "relocatable object (.o): its debug info is not relocated; dump the linked binary"
                        .into(),
                ),
            ));
        }
        Ok(obj)
    }

    /// Parses an ELF file of any kind: dwz's alternate files are `ET_REL`, yet need no
    /// relocation (they hold no code).
    pub fn parse_any(input: &'a Input) -> Result<Object<'a>, Error> {
        Object::parse_any_arch(input, None)
    }

    fn parse_any_arch(input: &'a Input, arch: Option<&str>) -> Result<Object<'a>, Error> {
        let path = input.path();
        let data = input.bytes();
        let kind = file_kind(input)?;
        let data = match kind {
            object::FileKind::Elf32 | object::FileKind::Elf64 => data,
            object::FileKind::MachO32 | object::FileKind::MachO64 => {
                if let Some(want) = arch {
                    let file = object::File::parse(data).map_err(|e| corrupt(path, e))?;
                    let have = slice_name(file.architecture());
                    if have != canonical_arch(want) {
                        return Err(Error::new(
                            path,
                            ErrorKind::Unsupported(format!(
                                "no {want} code: this is a thin {have} file"
                            )),
                        ));
                    }
                }
                data
            }
            object::FileKind::MachOFat32 | object::FileKind::MachOFat64 => {
                select_slice(path, data, kind, arch)?
            }
            other => {
                return Err(Error::new(
                    path,
                    ErrorKind::Unsupported(format!("{other:?} files are not supported")),
                ));
            }
        };
        let file = object::File::parse(data).map_err(|e| corrupt(path, e))?;
        if file.architecture() == object::Architecture::Unknown
            && file.format() == object::BinaryFormat::MachO
        {
            return Err(Error::new(
                path,
                ErrorKind::Unsupported("unknown Mach-O CPU type".into()),
            ));
        }
        Ok(Object { path, file, data })
    }

    /// The contents of the named section, decompressed if needed (`SHF_COMPRESSED` with
    /// zlib or zstd, or the older `.zdebug_*` form). A missing section is empty; one that
    /// cannot be read is empty with a warning.
    pub fn section_data(&self, name: &str, warnings: &mut Warnings) -> Cow<'a, [u8]> {
        section_data(&self.file, self.data.len(), name, warnings)
    }

    /// True for big-endian files.
    pub fn is_big_endian(&self) -> bool {
        !self.file.is_little_endian()
    }
}

fn file_kind(input: &Input) -> Result<object::FileKind, Error> {
    object::FileKind::parse(input.bytes()).map_err(|_| {
        Error::new(
            input.path(),
            ErrorKind::NotObject("unrecognised file format (expected ELF or Mach-O)".into()),
        )
    })
}

fn corrupt(path: &Path, e: object::Error) -> Error {
    Error::new(
        path,
        ErrorKind::Corrupt(format!("bad headers ({e}); is the file truncated?")),
    )
}

/// Breakpad's name for a Mach-O slice's architecture.
pub fn slice_name(arch: object::Architecture) -> &'static str {
    match arch {
        object::Architecture::X86_64 | object::Architecture::X86_64_X32 => "x86_64",
        object::Architecture::Aarch64 | object::Architecture::Aarch64_Ilp32 => "arm64",
        object::Architecture::I386 => "x86",
        object::Architecture::Arm => "arm",
        object::Architecture::PowerPc => "ppc",
        object::Architecture::PowerPc64 => "ppc64",
        _ => "unknown",
    }
}

fn canonical_arch(name: &str) -> &str {
    match name {
        "i386" => "x86",
        "aarch64" | "arm64e" => "arm64",
        other => other,
    }
}

/// The architectures of a universal Mach-O's slices, in file order.
fn fat_slices(data: &[u8], kind: object::FileKind) -> object::Result<Vec<(&'static str, &[u8])>> {
    use object::read::macho::{FatArch, MachOFatFile32, MachOFatFile64};
    let mut out = Vec::new();
    match kind {
        object::FileKind::MachOFat32 => {
            for a in MachOFatFile32::parse(data)?.arches() {
                out.push((slice_name(a.architecture()), a.data(data)?));
            }
        }
        _ => {
            for a in MachOFatFile64::parse(data)?.arches() {
                out.push((slice_name(a.architecture()), a.data(data)?));
            }
        }
    }
    Ok(out)
}

fn select_slice<'a>(
    path: &Path,
    data: &'a [u8],
    kind: object::FileKind,
    arch: Option<&str>,
) -> Result<&'a [u8], Error> {
    let slices = fat_slices(data, kind).map_err(|e| corrupt(path, e))?;
    let names: Vec<&str> = slices.iter().map(|s| s.0).collect();
    let chosen = match arch {
        Some(want) => slices.iter().find(|s| s.0 == canonical_arch(want)),
        None if slices.len() == 1 => slices.first(),
        None => {
            return Err(Error::new(
                path,
                ErrorKind::Unsupported(format!(
                    "universal binary with {} slices ({}); choose one with --arch",
                    slices.len(),
                    names.join(", ")
                )),
            ));
        }
    };
    chosen.map(|s| s.1).ok_or_else(|| {
        Error::new(
            path,
            ErrorKind::Unsupported(format!(
                "no {} slice; the slices are {}",
                arch.unwrap_or_default(),
                names.join(", ")
            )),
        )
    })
}

/// The architectures in a file: its slices for a universal Mach-O, else its one.
pub fn architectures(input: &Input) -> Result<Vec<String>, Error> {
    let path = input.path();
    let data = input.bytes();
    match file_kind(input)? {
        kind @ (object::FileKind::MachOFat32 | object::FileKind::MachOFat64) => {
            Ok(fat_slices(data, kind)
                .map_err(|e| corrupt(path, e))?
                .into_iter()
                .map(|s| s.0.to_string())
                .collect())
        }
        _ => {
            let file = object::File::parse(data).map_err(|e| corrupt(path, e))?;
            Ok(vec![slice_name(file.architecture()).to_string()])
        }
    }
}

/// The contents of section `name` of `file` (whose bytes are `file_len` long),
/// decompressed if needed; empty when missing or unreadable (with a warning).
pub fn section_data<'a>(
    file: &object::File<'a>,
    file_len: usize,
    name: &str,
    warnings: &mut Warnings,
) -> Cow<'a, [u8]> {
    let Some(section) = file.section_by_name(name) else {
        return Cow::Borrowed(&[]);
    };
    let compressed = match section.compressed_data() {
        Ok(c) => c,
        Err(e) => {
            warnings.push(format!("section {name}: cannot read: {e}"));
            return Cow::Borrowed(&[]);
        }
    };
    let limit = (file_len as u64).saturating_mul(MAX_DECOMPRESSION_RATIO);
    if compressed.format != object::CompressionFormat::None && compressed.uncompressed_size > limit
    {
        warnings.push(format!(
            "section {name}: claims an uncompressed size of {} bytes, more than this file could hold; ignored",
            compressed.uncompressed_size
        ));
        return Cow::Borrowed(&[]);
    }
    match compressed.decompress() {
        Ok(bytes) => bytes,
        Err(e) => {
            warnings.push(format!("section {name}: cannot decompress: {e}"));
            Cow::Borrowed(&[])
        }
    }
}
