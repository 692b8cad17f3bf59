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
    /// Parses the container and rejects kinds this tool cannot dump.
    pub fn parse(input: &'a Input) -> Result<Object<'a>, Error> {
        let obj = Object::parse_any(input)?;
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
        let path = input.path();
        let data = input.bytes();
        let kind = object::FileKind::parse(data).map_err(|_| {
            Error::new(
                path,
                ErrorKind::NotObject("unrecognised file format (expected ELF)".into()),
            )
        })?;
        match kind {
            object::FileKind::Elf32 | object::FileKind::Elf64 => {}
            other => {
                return Err(Error::new(
                    path,
                    ErrorKind::Unsupported(format!("{other:?} files are not supported yet")),
                ));
            }
        }
        let file = object::File::parse(data).map_err(|e| {
            Error::new(
                path,
                ErrorKind::Corrupt(format!(
                    "bad ELF headers ({e}); is the file truncated? it has {} bytes",
                    data.len()
                )),
            )
        })?;
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
