//! Owns the input bytes (memory-mapped) and the container parsing: everything downstream
//! asks this module for sections by name and gets bytes back.

use std::borrow::Cow;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use memmap2::{Mmap, UncheckedAdvice};
use object::read::elf::{FileHeader, SectionHeader as _};
use object::{Endianness, Object as _, ObjectSection as _, elf};
use rayon::prelude::*;

use crate::error::{Error, ErrorKind, Warning, WarningKind, Warnings};

/// A decompressed section may be at most this many times larger than the whole input
/// file. Real DWARF compresses 3–10x; a header claiming more is corrupt, and trusting it
/// would let a few bytes of input allocate gigabytes.
const MAX_DECOMPRESSION_RATIO: u64 = 256;

/// Why a path is not a file the loader reads.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum NotAFile {
    #[error("empty file")]
    Empty,
    #[error("is a directory")]
    Directory,
    #[error("not a regular file (a pipe, socket or device); only regular files are read")]
    Special,
    #[error("not a regular file (it was replaced while being opened); only regular files are read")]
    Replaced,
    /// A member of a static library said to lie where its file does not reach.
    #[error("{len} bytes at {offset} do not lie within its {size}-byte file")]
    Outside { len: u64, offset: u64, size: u64 },
}

/// Why the code asked for is not in a file: its slices (or its one architecture) are
/// others', or the file is of a kind with no code to dump.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Slices {
    #[error("no {want} code: this is a thin {have} file")]
    Thin { want: String, have: &'static str },
    #[error("{0:?} files are not supported")]
    Kind(object::FileKind),
    #[error("universal binary with {count} slices ({names}); choose one with --arch")]
    Choose { count: usize, names: String },
    #[error("no {want} slice; the slices are {have}")]
    Missing { want: String, have: String },
}

/// An MSFZ container's damage, as the messages name it.
#[derive(Debug, thiserror::Error)]
#[error("MSFZ (compressed PDB) container: {0}")]
struct Msfz(#[source] crate::msfz::MsfzError);

/// An input file: mapped into memory, or held in a buffer when it was itself extracted
/// from another file (MiniDebugInfo).
pub struct Input {
    path: PathBuf,
    /// Declared before `bytes`, so that the map is no longer watched when it goes.
    watch: Option<crate::mapguard::Watch>,
    bytes: Bytes,
    /// A copy of the file with its unreadable symbol tables' section headers blanked,
    /// made only when the file cannot be parsed with them (see [`Object::parse`]).
    patched: OnceLock<Vec<u8>>,
}

enum Bytes {
    Mapped(Mmap),
    Owned(Vec<u8>),
}

/// `path` opened for reading without blocking: a FIFO with no writer opens at once (and
/// its metadata then says what it is) instead of holding the run forever.
pub(crate) fn open_nonblocking(path: &Path) -> std::io::Result<std::fs::File> {
    std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::OpenOptions::new().read(true),
        libc::O_NONBLOCK,
    )
    .open(path)
}

impl Input {
    /// Opens and maps `path`.
    pub fn open(path: &Path) -> Result<Input, Error> {
        Self::open_as_it_is(path)?.msfz_unpacked()
    }

    /// Opens and maps `path`, an MSFZ PDB left packed: enough to tell what a file is
    /// (a store run's look at each of its files) without unpacking one that is not read.
    pub(crate) fn open_as_it_is(path: &Path) -> Result<Input, Error> {
        let (file, len) = Self::open_regular(path)?;
        if len == 0 {
            return Err(Error::new(
                path,
                ErrorKind::NotObject(Box::new(NotAFile::Empty)),
            ));
        }
        Self::map_as_it_is(path, &file, 0, len)
    }

    /// Opens and maps the bytes `offset..offset + len` of `path` (a member of a static
    /// library, mapped where it lies rather than copied out); `name` names it in
    /// messages. The range must lie within the file.
    pub(crate) fn open_part(
        path: &Path,
        name: PathBuf,
        offset: u64,
        len: u64,
    ) -> Result<Input, Error> {
        let (file, size) = Self::open_regular(path)?;
        if len == 0 || offset.checked_add(len).is_none_or(|end| end > size) {
            return Err(Error::new(
                &name,
                ErrorKind::Corrupt(Box::new(NotAFile::Outside { len, offset, size })),
            ));
        }
        let mut input = Self::map(path, &file, offset, len)?;
        input.path = name;
        Ok(input)
    }

    /// `path` opened when it is a regular file, and its size.
    fn open_regular(path: &Path) -> Result<(std::fs::File, u64), Error> {
        let io = |e| Error::new(path, ErrorKind::Io(e));
        // Looked at before it is opened: opening a FIFO with no writer blocks forever,
        // and a device or socket is no object file either.
        let meta = std::fs::metadata(path).map_err(io)?;
        if meta.is_dir() {
            return Err(Error::new(
                path,
                ErrorKind::NotObject(Box::new(NotAFile::Directory)),
            ));
        }
        if !meta.is_file() {
            return Err(Error::new(
                path,
                ErrorKind::NotObject(Box::new(NotAFile::Special)),
            ));
        }
        // Non-blocking, and asked again of what was opened: the path may have become a
        // FIFO since it was looked at (a tree being rewritten while it is walked).
        let file = open_nonblocking(path).map_err(io)?;
        let meta = file.metadata().map_err(io)?;
        if !meta.is_file() {
            return Err(Error::new(
                path,
                ErrorKind::NotObject(Box::new(NotAFile::Replaced)),
            ));
        }
        Ok((file, meta.len()))
    }

    /// `len` bytes at `offset` of `file` mapped; an MSFZ (compressed) PDB is read as the
    /// MSF PDB it holds.
    fn map(path: &Path, file: &std::fs::File, offset: u64, len: u64) -> Result<Input, Error> {
        Self::map_as_it_is(path, file, offset, len)?.msfz_unpacked()
    }

    /// When the input is an MSFZ ("PDZ") PDB: the MSF PDB it holds, written to an unnamed
    /// temporary file and mapped in its place (its pages are the page cache's, as a plain
    /// PDB's are), under the same path. Any other input as it is.
    pub(crate) fn msfz_unpacked(self) -> Result<Input, Error> {
        if !crate::msfz::is_msfz(self.bytes()) {
            return Ok(self);
        }
        let io = |e| Error::new(&self.path, ErrorKind::Io(e));
        let file = crate::scratch::unnamed_file("msfz").map_err(io)?;
        let mut out = std::io::BufWriter::with_capacity(1 << 20, &file);
        crate::msfz::unpack(self.bytes(), &mut out)
            .map_err(|why| Error::new(&self.path, ErrorKind::Corrupt(Box::new(Msfz(why)))))?;
        drop(out);
        let len = file.metadata().map_err(io)?.len();
        Self::map_as_it_is(&self.path, &file, 0, len)
    }

    fn map_as_it_is(
        path: &Path,
        file: &std::fs::File,
        offset: u64,
        len: u64,
    ) -> Result<Input, Error> {
        let io = |e| Error::new(path, ErrorKind::Io(e));
        let len = usize::try_from(len)
            .map_err(|_| io(std::io::Error::other("too large to map on this machine")))?;
        // SAFETY: the map is read-only. If another process truncates the file while we
        // read it, a read past its new end faults: `mapguard` turns that into zeros and
        // a mark that `Input::intact` reports.
        let map = unsafe {
            memmap2::MmapOptions::new()
                .offset(offset)
                .len(len)
                .map(file)
        }
        .map_err(io)?;
        Ok(Input {
            path: path.to_path_buf(),
            watch: Some(crate::mapguard::Watch::new(map.as_ptr(), map.len())),
            bytes: Bytes::Mapped(map),
            patched: OnceLock::new(),
        })
    }

    /// An error when the file shrank while it was read (its missing pages read as
    /// zeros): what was read from it must not be written.
    pub fn intact(&self) -> Result<(), Error> {
        if self.watch.as_ref().is_some_and(|w| w.truncated()) {
            return Err(Error::new(
                &self.path,
                ErrorKind::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the file was truncated while it was being read; nothing is written from it",
                )),
            ));
        }
        Ok(())
    }

    /// An input held in memory; `path` names it in messages.
    pub fn from_bytes(path: PathBuf, bytes: Vec<u8>) -> Input {
        Input {
            path,
            watch: None,
            bytes: Bytes::Owned(bytes),
            patched: OnceLock::new(),
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

    /// Tells the kernel that `part` (a range of [`Input::bytes`]) will not be read again
    /// soon, so its pages leave this process's resident set. A later read faults them back
    /// in from the file, so this only ever costs time, never correctness. It keeps peak
    /// memory from including every page of a multi-hundred-MB debug file that was read
    /// once (compressed sections after inflating, `.debug_info` units after parsing).
    pub fn release(&self, part: &[u8]) {
        let Bytes::Mapped(map) = &self.bytes else {
            return;
        };
        let base = map.as_ptr() as usize;
        let Some(offset) = (part.as_ptr() as usize).checked_sub(base) else {
            return;
        };
        if part.is_empty() || offset.saturating_add(part.len()) > map.len() {
            return;
        }
        // SAFETY: the map is private and read-only, so MADV_DONTNEED cannot lose data:
        // the dropped pages are read back from the file on the next access, and no
        // reference into the map is invalidated.
        let _ =
            unsafe { map.unchecked_advise_range(UncheckedAdvice::DontNeed, offset, part.len()) };
    }
}

/// A section's decompressed bytes: whole, or as a stream for sections too large to hold
/// inflated at once.
pub enum SectionBytes<'a> {
    Whole(Cow<'a, [u8]>),
    Stream(Box<SectionStream<'a>>),
}

/// The decompressed bytes of a zlib-compressed section, read in order. Consumed
/// compressed input is released from memory as it goes (see [`Input::release`]).
pub struct SectionStream<'a> {
    // Inflated straight from the mapped bytes: a `Read` decoder copies its input into a
    // buffer of its own first (a tenth of a compressed dump's time in copies) and hands
    // the inflater a few KB at a time.
    compressed: ReleasingReader<'a>,
    inflater: flate2::Decompress,
    ended: bool,
    /// The uncompressed size the section header claims.
    pub size: u64,
}

impl<'a> SectionStream<'a> {
    /// Inflates zlib `data`, a part of `input`, which says it inflates to `size` bytes.
    pub(crate) fn zlib(input: &'a Input, data: &'a [u8], size: u64) -> Self {
        SectionStream {
            compressed: ReleasingReader {
                input,
                data,
                pos: 0,
                released: 0,
            },
            inflater: flate2::Decompress::new(true),
            ended: false,
            size,
        }
    }

    /// Appends the next `n` inflated bytes to `out`, or fewer where the stream ends
    /// early; returns how many. They are inflated into `out`'s spare room, not into
    /// memory zeroed first: zeroing each unit's buffer before the inflater overwrote it
    /// was 1% of a compressed dump.
    pub(crate) fn append(&mut self, out: &mut Vec<u8>, n: usize) -> Result<usize, InflateError> {
        out.reserve(n);
        let start = out.len();
        while out.len() - start < n && !self.ended {
            let room = n - (out.len() - start);
            let input = &self.compressed.data[self.compressed.pos..];
            let (consumed, written, status) = inflate_into(&mut self.inflater, input, out, room)
                .map_err(|_| InflateError::Stream)?;
            self.compressed.consume(consumed);
            self.ended = status == flate2::Status::StreamEnd;
            if written == 0 && consumed == 0 {
                // The compressed bytes ran out before the stream's end.
                break;
            }
        }
        Ok(out.len() - start)
    }
}

/// A part of a mapped input, read in place, releasing what it has read every few MB.
struct ReleasingReader<'a> {
    input: &'a Input,
    data: &'a [u8],
    pos: usize,
    released: usize,
}

/// How much consumed compressed input is kept mapped before it is released.
const RELEASE_STEP: usize = 8 << 20;

impl ReleasingReader<'_> {
    fn consume(&mut self, n: usize) {
        self.pos = self.pos.saturating_add(n).min(self.data.len());
        let end = self.pos == self.data.len();
        if self.pos - self.released >= RELEASE_STEP || (end && self.pos > self.released) {
            self.input.release(&self.data[self.released..self.pos]);
            self.released = self.pos;
        }
    }
}

/// A parsed ELF file over the bytes of an [`Input`].
pub struct Object<'a> {
    /// The input the bytes belong to.
    pub input: &'a Input,
    /// The input's path, for messages.
    pub path: &'a Path,
    /// The parsed container.
    pub file: object::File<'a>,
    /// The raw bytes.
    pub data: &'a [u8],
    /// Damage found while parsing that loses part of the file (an unreadable symbol
    /// table), for the dump's warnings.
    pub damage: Vec<Warning>,
}

impl<'a> Object<'a> {
    /// Parses the container and rejects kinds this tool cannot dump. A universal
    /// (fat) Mach-O must have a single slice; see [`Object::parse_arch`].
    pub fn parse(input: &'a Input) -> Result<Object<'a>, Error> {
        Object::parse_arch(input, None)
    }

    /// Like [`Object::parse`], selecting the slice of a universal Mach-O by Breakpad
    /// architecture name (`x86_64`, `arm64`, `x86`): other tools' names (`i386`,
    /// `aarch64`) are read as an [`crate::Arch`] before they get here.
    pub fn parse_arch(input: &'a Input, arch: Option<&str>) -> Result<Object<'a>, Error> {
        let obj = Object::parse_any_arch(input, arch)?;
        if obj.file.kind() == object::ObjectKind::Relocatable {
            return Err(Error::new(
                input.path(),
                ErrorKind::Unsupported(relocatable_kind(&obj.file).into()),
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
            object::FileKind::Elf32
            | object::FileKind::Elf64
            | object::FileKind::Pe32
            | object::FileKind::Pe64 => data,
            object::FileKind::MachO32 | object::FileKind::MachO64 => {
                if let Some(want) = arch {
                    let file = object::File::parse(data).map_err(|e| corrupt(path, e))?;
                    let have = slice_name(file.architecture());
                    if have != want {
                        return Err(Error::new(
                            path,
                            ErrorKind::Unsupported(Box::new(Slices::Thin {
                                want: want.to_string(),
                                have,
                            })),
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
                    ErrorKind::Unsupported(Box::new(Slices::Kind(other))),
                ));
            }
        };
        let mut damage = Vec::new();
        let (file, data) = match object::File::parse(data) {
            Ok(file) => (file, data),
            Err(e) => {
                // object refuses the whole file when a symbol table cannot be read; all
                // that loses is PUBLIC records, so the rest is dumped from a copy in
                // which those tables' headers are blanked.
                let Some((copy, tables)) = elf_without_bad_symbol_tables(data) else {
                    return Err(corrupt(path, e));
                };
                let copy: &'a [u8] = input.patched.get_or_init(|| copy);
                let file = object::File::parse(copy).map_err(|_| corrupt(path, e))?;
                let tables = tables.join(" and ");
                let why = format!("{tables} cannot be read ({e}); no PUBLIC records from it");
                damage.push(Warning::new(WarningKind::Container, why).on(tables));
                (file, copy)
            }
        };
        if file.architecture() == object::Architecture::Unknown
            && file.format() == object::BinaryFormat::MachO
        {
            return Err(Error::new(
                path,
                ErrorKind::Unsupported("unknown Mach-O CPU type".into()),
            ));
        }
        Ok(Object {
            input,
            path,
            file,
            data,
            damage,
        })
    }

    /// The contents of the named section, decompressed if needed (`SHF_COMPRESSED` with
    /// zlib or zstd, or the older `.zdebug_*` form). A missing section is empty; one that
    /// cannot be read is empty with a warning.
    pub fn section_data(&self, name: &str, warnings: &mut Warnings) -> Cow<'a, [u8]> {
        let data = section_data(&self.file, self.data.len(), name, warnings);
        if let Cow::Owned(_) = data
            && let Some(compressed) = self
                .file
                .section_by_name(name)
                .and_then(|s| s.compressed_data().ok())
        {
            self.input.release(compressed.data);
        }
        data
    }

    /// Several sections at once, decompressed in parallel, in the order of `names`.
    pub fn sections_data(&self, names: &[&str], warnings: &mut Warnings) -> Vec<Cow<'a, [u8]>> {
        let loaded: Vec<(Cow<'a, [u8]>, Warnings)> = names
            .par_iter()
            .map(|name| {
                let mut w = Warnings::default();
                (self.section_data(name, &mut w), w)
            })
            .collect();
        loaded
            .into_iter()
            .map(|(data, w)| {
                warnings.extend(w);
                data
            })
            .collect()
    }

    /// The named section's bytes, streamed when it is zlib-compressed: such a section is
    /// read in order, never held whole.
    pub fn section_bytes(&self, name: &str, warnings: &mut Warnings) -> SectionBytes<'a> {
        let compressed = self
            .file
            .section_by_name(name)
            .and_then(|s| s.compressed_data().ok());
        match compressed {
            Some(c)
                if c.format == object::CompressionFormat::Zlib
                    && c.uncompressed_size
                        <= (self.data.len() as u64).saturating_mul(MAX_DECOMPRESSION_RATIO) =>
            {
                SectionBytes::Stream(Box::new(SectionStream::zlib(
                    self.input,
                    c.data,
                    c.uncompressed_size,
                )))
            }
            _ => SectionBytes::Whole(self.section_data(name, warnings)),
        }
    }

    /// Whether the named section has bytes in the file. A dSYM keeps the binary's
    /// section headers (`__unwind_info`, `__eh_frame`) with nothing behind them: their
    /// file offset is 0, where the Mach-O header is, and reading them would parse the
    /// header as unwind tables.
    pub fn section_has_data(&self, name: &str) -> bool {
        let Some((offset, size)) = self.file.section_by_name(name).and_then(|s| s.file_range())
        else {
            return false;
        };
        size > 0 && (offset > 0 || self.file.format() != object::BinaryFormat::MachO)
    }

    /// True for big-endian files.
    pub fn is_big_endian(&self) -> bool {
        !self.file.is_little_endian()
    }
}

/// What an `ET_REL` file is, for the message refusing it: debug-info files that are
/// not dumped on their own are relocatable too, and each is used through the binary.
fn relocatable_kind(file: &object::File) -> &'static str {
    let has = |name: &str| file.section_by_name(name).is_some();
    if has(".debug_cu_index") || has(".debug_tu_index") {
        "a split-DWARF package (.dwp): dump the linked binary, and its package is read from beside it"
    } else if has(".debug_info.dwo") {
        "a split-DWARF object (.dwo): it holds one compilation unit's debug info; dump the linked binary, which names it"
    } else if has(".debug_info")
        && !file
            .sections()
            .any(|s| s.kind() == object::SectionKind::Text)
    {
        "a debug-info file with no code (a dwz common file, shared by the binaries whose .gnu_debugaltlink names it): dump those binaries"
    } else {
        "relocatable object (.o): its debug info is not relocated; dump the linked binary"
    }
}

/// A copy of ELF `data` in which the section headers of the symbol tables object cannot
/// read (`.symtab`, `.dynsym`, with their extended-index tables) are made `SHT_NULL`, and
/// those tables' names; `None` when the symbol tables are not what is wrong.
fn elf_without_bad_symbol_tables(data: &[u8]) -> Option<(Vec<u8>, Vec<&'static str>)> {
    match object::FileKind::parse(data).ok()? {
        object::FileKind::Elf32 => blank_bad_symbol_tables::<elf::FileHeader32<Endianness>>(data),
        object::FileKind::Elf64 => blank_bad_symbol_tables::<elf::FileHeader64<Endianness>>(data),
        _ => None,
    }
}

fn blank_bad_symbol_tables<Elf: FileHeader<Endian = Endianness>>(
    data: &[u8],
) -> Option<(Vec<u8>, Vec<&'static str>)> {
    let header = Elf::parse(data).ok()?;
    let endian = header.endian().ok()?;
    let sections = header.sections(endian, data).ok()?;
    let bad: Vec<(elf::SectionType, &'static str)> =
        [(elf::SHT_SYMTAB, ".symtab"), (elf::SHT_DYNSYM, ".dynsym")]
            .into_iter()
            .filter(|&(kind, _)| sections.symbols(endian, data, kind).is_err())
            .collect();
    if bad.is_empty() {
        return None;
    }
    let shoff: u64 = header.e_shoff(endian).into();
    let entsize = u64::from(header.e_shentsize(endian));
    let mut copy = data.to_vec();
    for (index, section) in sections.iter().enumerate() {
        let kind = section.sh_type(endian);
        let linked = |k: elf::SectionType| {
            kind == elf::SHT_SYMTAB_SHNDX && {
                // An extended-index table belongs to the symbol table it links to.
                let link = section.sh_link(endian) as usize;
                sections
                    .section(object::SectionIndex(link))
                    .is_ok_and(|s| s.sh_type(endian) == k)
            }
        };
        if !bad.iter().any(|&(k, _)| kind == k || linked(k)) {
            continue;
        }
        // sh_type is the second 32-bit field of both ELF32 and ELF64 section headers.
        let at = usize::try_from(
            shoff
                .checked_add((index as u64).checked_mul(entsize)?)?
                .checked_add(4)?,
        )
        .ok()?;
        copy.get_mut(at..at.checked_add(4)?)?
            .copy_from_slice(&[0; 4]);
    }
    Some((copy, bad.into_iter().map(|(_, name)| name).collect()))
}

fn file_kind(input: &Input) -> Result<object::FileKind, Error> {
    object::FileKind::parse(input.bytes()).map_err(|_| {
        Error::new(
            input.path(),
            ErrorKind::NotObject(
                "unrecognised file format (expected ELF, Mach-O, PE or PDB)".into(),
            ),
        )
    })
}

fn corrupt(path: &Path, source: object::Error) -> Error {
    Error::new(
        path,
        ErrorKind::Headers {
            source: Box::new(source),
        },
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
        Some(want) => slices.iter().find(|s| s.0 == want),
        None if slices.len() == 1 => slices.first(),
        None => {
            return Err(Error::new(
                path,
                ErrorKind::Unsupported(Box::new(Slices::Choose {
                    count: slices.len(),
                    names: names.join(", "),
                })),
            ));
        }
    };
    chosen.map(|s| s.1).ok_or_else(|| {
        Error::new(
            path,
            ErrorKind::Unsupported(Box::new(Slices::Missing {
                want: arch.unwrap_or_default().to_string(),
                have: names.join(", "),
            })),
        )
    })
}

/// The architectures in a file: its slices for a universal Mach-O, else its one.
pub fn architectures(input: &Input) -> Result<Vec<crate::model::ids::Arch>, Error> {
    use crate::model::ids::Arch;
    let path = input.path();
    let data = input.bytes();
    match file_kind(input)? {
        kind @ (object::FileKind::MachOFat32 | object::FileKind::MachOFat64) => {
            Ok(fat_slices(data, kind)
                .map_err(|e| corrupt(path, e))?
                .into_iter()
                .map(|s| Arch::from_name(s.0))
                .collect())
        }
        _ => {
            let file = object::File::parse(data).map_err(|e| corrupt(path, e))?;
            Ok(vec![Arch::from_name(slice_name(file.architecture()))])
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
            // object words every failure here as about compressed data; for a section
            // whose own bytes are out of the file, its plain read says what is wrong.
            let why = match section.data() {
                Err(raw) => raw.to_string(),
                Ok(_) => e.to_string(),
            };
            warnings.add(
                Warning::new(
                    WarningKind::Container,
                    format!("section {name}: cannot read: {why}"),
                )
                .on(name),
            );
            return Cow::Borrowed(&[]);
        }
    };
    let limit = (file_len as u64).saturating_mul(MAX_DECOMPRESSION_RATIO);
    if compressed.format != object::CompressionFormat::None && compressed.uncompressed_size > limit
    {
        let why = format!(
            "section {name}: claims an uncompressed size of {} bytes, more than this file could hold; ignored",
            compressed.uncompressed_size
        );
        warnings.add(Warning::new(WarningKind::Container, why).on(name));
        return Cow::Borrowed(&[]);
    }
    match decompress(&compressed) {
        Ok(bytes) => bytes,
        Err(e) => {
            warnings.add(
                Warning::new(
                    WarningKind::Container,
                    format!("section {name}: cannot decompress: {e}"),
                )
                .on(name),
            );
            Cow::Borrowed(&[])
        }
    }
}

/// Output inflated between two requests for its pages (see [`inflate_whole`]); smaller
/// sections are left to `object`.
const POPULATE_STEP: usize = 8 << 20;

/// A section's bytes, decompressed: large zlib sections by [`inflate_whole`], the
/// others by `object`, with the same results and messages.
fn decompress<'a>(c: &object::CompressedData<'a>) -> Result<Cow<'a, [u8]>, InflateError> {
    if c.format == object::CompressionFormat::Zlib && c.uncompressed_size >= POPULATE_STEP as u64 {
        return inflate_whole(c.data, c.uncompressed_size).map(Cow::Owned);
    }
    c.decompress().map_err(InflateError::Object)
}

/// Why a compressed section cannot be inflated. The whole-section inflater's words are
/// `object`'s own, so that a section reads the same whichever inflates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum InflateError {
    #[error("Uncompressed data size is too large.")]
    TooLarge,
    #[error("Uncompressed data allocation failed")]
    Allocation,
    #[error("Invalid zlib compressed data")]
    Invalid,
    #[error("Uncompressed data size does not match compression header")]
    Size,
    /// A section inflated as it is read ([`SectionStream`]).
    #[error("cannot decompress: corrupt deflate stream")]
    Stream,
    /// What `object` said of the sections it inflates.
    #[error("{0}")]
    Object(object::Error),
}

/// A zlib section inflated whole, with the checks and messages of `object`'s
/// `decompress`: a stream that gives more than its header says is cut there, one that
/// gives less is refused. The pages the inflater is about to write are asked of the
/// kernel a step at a time, in one call each, ahead of it: the sections held whole
/// (ceph-osd's `.debug_str`, `.debug_line` and range lists, 160 MB) were otherwise a
/// page fault per 4 KiB as the inflater first wrote them, and a fault costs several
/// times what asking for the same page in bulk does (docs/PERFORMANCE.md). Never more
/// than a step beyond what the stream has given is asked for, so that a section whose
/// header claims far more than its stream holds costs no more memory than before.
fn inflate_whole(data: &[u8], size: u64) -> Result<Vec<u8>, InflateError> {
    let size = usize::try_from(size).map_err(|_| InflateError::TooLarge)?;
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(size)
        .map_err(|_| InflateError::Allocation)?;
    let mut z = flate2::Decompress::new(true);
    let mut read = 0;
    while out.len() < size {
        let step = POPULATE_STEP.min(size - out.len());
        populate(&mut out.spare_capacity_mut()[..step]);
        let (consumed, written, status) = inflate_into(&mut z, &data[read..], &mut out, step)
            .map_err(|_| InflateError::Invalid)?;
        read += consumed;
        if status == flate2::Status::StreamEnd || (written == 0 && consumed == 0) {
            break;
        }
    }
    if out.len() != size {
        return Err(InflateError::Size);
    }
    Ok(out)
}

/// One call of the inflater: `input` inflated into up to `room` bytes of `out`'s spare
/// capacity (reserved by the caller), appended to `out` without being zeroed first.
/// Returns the bytes consumed and written, and the inflater's status.
fn inflate_into(
    z: &mut flate2::Decompress,
    input: &[u8],
    out: &mut Vec<u8>,
    room: usize,
) -> Result<(usize, usize, flate2::Status), flate2::DecompressError> {
    let len = out.len();
    let spare = &mut out.spare_capacity_mut()[..room];
    let before = (z.total_in(), z.total_out());
    let status = z.decompress_uninit(input, spare, flate2::FlushDecompress::None)?;
    // Each at most the length of the slice it was given (`set_len` below relies on it,
    // so that bound is kept explicitly).
    let consumed = ((z.total_in() - before.0) as usize).min(input.len());
    let written = ((z.total_out() - before.1) as usize).min(spare.len());
    // SAFETY: the inflater initialized the first `written` bytes of the spare capacity
    // it was given, which starts at `len`.
    unsafe { out.set_len(len + written) };
    Ok((consumed, written, status))
}

/// Asks the kernel for the pages under `buf` (not yet written) in one call. Only a
/// request: a kernel without `MADV_POPULATE_WRITE` (before Linux 5.14) refuses it, and
/// the pages then come one fault at a time as before.
fn populate(buf: &mut [std::mem::MaybeUninit<u8>]) {
    #[cfg(target_os = "linux")]
    {
        let page = crate::mapguard::page_size();
        let start = buf.as_mut_ptr() as usize;
        let begin = start.next_multiple_of(page);
        let end = (start + buf.len()) / page * page;
        if end > begin {
            // SAFETY: the range is inside `buf`, memory we own and have not yet
            // written; MADV_POPULATE_WRITE only backs it with pages, as the first
            // write would, and changes no contents.
            unsafe {
                libc::madvise(
                    begin as *mut libc::c_void,
                    end - begin,
                    libc::MADV_POPULATE_WRITE,
                )
            };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = buf;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    /// What `object` gives for the same zlib section.
    fn by_object(data: &[u8], size: u64) -> Result<Vec<u8>, String> {
        object::CompressedData {
            format: object::CompressionFormat::Zlib,
            data,
            uncompressed_size: size,
        }
        .decompress()
        .map(Cow::into_owned)
        .map_err(|e| e.to_string())
    }

    fn zlib(bytes: &[u8]) -> Vec<u8> {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        z.write_all(bytes).unwrap();
        z.finish().unwrap()
    }

    #[test]
    fn sections_inflate_as_object_inflates_them_whole_or_damaged() {
        // More than two populate steps of text that compresses about as DWARF does, and
        // a tiny one.
        let big: Vec<u8> = (0..(2 * POPULATE_STEP + 12_345) as u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 27) as u8 | (i as u8 & 0x41))
            .collect();
        for plain in [&big[..], b"abc", b""] {
            let packed = zlib(plain);
            let n = plain.len() as u64;
            let mut cases: Vec<(Vec<u8>, u64)> = vec![
                (packed.clone(), n),
                // The header claims more, or less, than the stream holds.
                (packed.clone(), n + 1),
                (packed.clone(), n.saturating_sub(1)),
                (packed.clone(), 0),
                // Cut short: inside the stream, and inside its checksum.
                (packed[..packed.len() / 2].to_vec(), n),
                (packed[..packed.len() - 2].to_vec(), n),
                (Vec::new(), n),
            ];
            // A wrong checksum, a damaged header, and a flipped byte mid-stream.
            for at in [packed.len() - 1, 0, packed.len() / 3] {
                let mut bad = packed.clone();
                bad[at] ^= 0x5a;
                cases.push((bad, n));
            }
            for (data, size) in cases {
                let ours = decompress(&object::CompressedData {
                    format: object::CompressionFormat::Zlib,
                    data: &data,
                    uncompressed_size: size,
                })
                .map(Cow::into_owned)
                .map_err(|e| e.to_string());
                let theirs = by_object(&data, size);
                assert_eq!(
                    ours.as_ref().map(Vec::len),
                    theirs.as_ref().map(Vec::len),
                    "{} bytes claiming {size}",
                    data.len()
                );
                assert!(ours == theirs, "{} bytes claiming {size}", data.len());
            }
        }
    }
}
