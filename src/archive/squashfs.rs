//! squashfs 4.0 images: snaps (Firefox's, Thunderbird's, the GNOME SDK's), AppImages'
//! payloads, firmware root filesystems. The directory tree is walked from the root
//! inode and every regular file handed to the sink, its blocks decompressed one at a
//! time (gzip, LZMA, LZO, xz, LZ4 or zstd, as the superblock says).
//!
//! Hand-written: `backhand`, the squashfs crate, decodes xz and zstd with the C
//! libraries, reads the inode and directory tables whole at the sizes an image claims,
//! and keeps the tree of every file in memory; a store run needs one file's block at a
//! time, within the archive's budget.

use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Seek, SeekFrom};
use std::rc::Rc;
use std::time::{Duration, UNIX_EPOCH};

use super::{Budget, Sink, Source};

const MAGIC: &[u8; 4] = b"hsqs";
/// A metadata block decompresses to at most this.
const METADATA: usize = 8192;
/// Directories inside directories, at most: Linux paths end at 4096 bytes, so at ~2,000
/// levels; no real image comes near this, and a cycle is caught before it.
const MAX_DEPTH: usize = 512;
/// Directory entries read, at most: a GNOME SDK snap has about 60,000.
const MAX_ENTRIES: usize = 2_000_000;
/// Decompressed metadata blocks kept (inodes and directories are read through them).
const MAX_CACHED: usize = 64;

/// Whether `head` starts like a squashfs image.
pub(super) fn starts_like_squashfs(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// How the image's blocks are compressed (the superblock's compressor id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Gzip,
    Lzma,
    Lzo,
    Xz,
    Lz4,
    Zstd,
}

impl Codec {
    fn of(id: u16) -> Result<Codec, SuperError> {
        Ok(match id {
            1 => Codec::Gzip,
            2 => Codec::Lzma,
            3 => Codec::Lzo,
            4 => Codec::Xz,
            5 => Codec::Lz4,
            6 => Codec::Zstd,
            other => return Err(SuperError::Codec(other)),
        })
    }

    /// `bytes` decompressed, to at most `most` bytes (a block's length is not always
    /// recorded, only that it is at most a block).
    fn decompress(self, bytes: &[u8], most: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let limit = most as u64 + 1;
        match self {
            Codec::Lz4 | Codec::Lzo => {
                out.resize(most, 0);
                let n = match self {
                    Codec::Lz4 => lz4_flex::block::decompress_into(bytes, &mut out)
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
                    _ => super::lzo::decompress(bytes, &mut out)?,
                };
                out.truncate(n);
            }
            Codec::Gzip => {
                flate2::read::ZlibDecoder::new(bytes)
                    .take(limit)
                    .read_to_end(&mut out)?;
            }
            Codec::Xz => {
                lzma_rust2::XzReader::new_mem_limit(bytes, false, super::tar::MEM_LIMIT_KB)
                    .take(limit)
                    .read_to_end(&mut out)?;
            }
            Codec::Lzma => {
                lzma_rust2::LzmaReader::new_mem_limit(bytes, super::tar::MEM_LIMIT_KB, None)?
                    .take(limit)
                    .read_to_end(&mut out)?;
            }
            Codec::Zstd => {
                super::tar::zstd(bytes).take(limit).read_to_end(&mut out)?;
            }
        }
        if out.len() > most {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a block decompresses past {most} bytes"),
            ));
        }
        Ok(out)
    }
}

/// What the superblock says, as far as reading files needs.
struct Super {
    block_size: u32,
    fragments: u32,
    codec: Codec,
    root: u64,
    inode_table: u64,
    directory_table: u64,
    fragment_table: u64,
    /// The fields `UNCOMPRESSED_*` flags say are stored as they are.
    raw_data: bool,
    raw_fragments: bool,
    mtime: u32,
}

/// Why an image's superblock is not one read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SuperError {
    #[error("its superblock: {0}")]
    Read(#[source] io::Error),
    #[error("no squashfs superblock")]
    Magic,
    #[error(
        "squashfs {major}.{minor}: dumpsyms reads squashfs 4.0 (every image since Linux 2.6.29)"
    )]
    Version { major: u16, minor: u16 },
    #[error("its superblock gives a block size of {0} bytes (a power of two from 4 KiB to 1 MiB)")]
    BlockSize(u32),
    #[error("its blocks use compressor {0}, which is none of squashfs's six")]
    Codec(u16),
    #[error("its superblock says it is {used} bytes, but the file is {len}: truncated?")]
    Truncated { used: u64, len: u64 },
    #[error("its superblock places its tables past its end")]
    Tables,
}

/// Why a squashfs image is not read to its end; paths as they may be shown.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SquashfsError {
    #[error("not a readable squashfs image: {0}")]
    NotSquashfs(#[source] SuperError),
    #[error("the directory {0} is inside itself: a damaged image")]
    Loop(String),
    #[error("the directory {path}: {source}")]
    Directory {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error("{0} is no directory")]
    NotDirectory(String),
    #[error("{0} lies more than {MAX_DEPTH} directories deep")]
    Deep(String),
    #[error("{path}: {source}")]
    File {
        path: String,
        #[source]
        source: io::Error,
    },
}

impl Super {
    fn read(source: &mut Source) -> Result<Super, SuperError> {
        let mut raw = [0u8; 96];
        source.read_exact(&mut raw).map_err(SuperError::Read)?;
        if &raw[..4] != MAGIC {
            return Err(SuperError::Magic);
        }
        let u16_at = |i: usize| u16::from_le_bytes([raw[i], raw[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(raw[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(raw[i..i + 8].try_into().unwrap());
        let (major, minor) = (u16_at(28), u16_at(30));
        if (major, minor) != (4, 0) {
            return Err(SuperError::Version { major, minor });
        }
        let block_size = u32_at(12);
        if !(4096..=1 << 20).contains(&block_size)
            || !block_size.is_power_of_two()
            || u32::from(u16_at(22)) != block_size.trailing_zeros()
        {
            return Err(SuperError::BlockSize(block_size));
        }
        let flags = u16_at(24);
        let sb = Super {
            block_size,
            fragments: u32_at(16),
            codec: Codec::of(u16_at(20))?,
            root: u64_at(32),
            inode_table: u64_at(64),
            directory_table: u64_at(72),
            fragment_table: u64_at(80),
            raw_data: flags & 0x0002 != 0,
            raw_fragments: flags & 0x0008 != 0,
            mtime: u32_at(8),
        };
        let used = u64_at(40);
        if used > source.len() {
            return Err(SuperError::Truncated {
                used,
                len: source.len(),
            });
        }
        if sb.inode_table >= used || sb.directory_table >= used {
            return Err(SuperError::Tables);
        }
        Ok(sb)
    }
}

/// A regular file's inode, as far as reading its bytes needs.
struct FileInode {
    size: u64,
    blocks_start: u64,
    /// The fragment holding its tail, and where in the fragment; `None` when its last
    /// block is a block of its own.
    fragment: Option<(u32, u32)>,
    /// Where its list of block sizes begins (in the inode table's metadata).
    sizes: Cursor,
    mtime: u32,
}

/// What an inode is, as far as the walk cares.
enum Inode {
    Dir { block: u32, offset: u16, size: u32 },
    File(FileInode),
    Other,
}

/// A position in a table of metadata blocks: the block's place in the file, and the
/// offset into what it decompresses to.
#[derive(Debug, Clone, Copy)]
struct Cursor {
    block: u64,
    offset: usize,
}

/// The image being read: its file, superblock, and the metadata blocks lately read.
struct Image<'b> {
    source: Source,
    sb: Super,
    budget: &'b Budget,
    /// Decompressed metadata blocks, and where the next one starts, by place in the
    /// file.
    cache: HashMap<u64, (Rc<Vec<u8>>, u64)>,
    /// The fragment block lately read (files share them).
    fragment: Option<(u32, Rc<Vec<u8>>)>,
}

impl Image<'_> {
    fn bytes_at(&mut self, at: u64, len: usize) -> io::Result<Vec<u8>> {
        let mut buf = vec![0u8; len];
        self.source.seek(SeekFrom::Start(at))?;
        self.source
            .read_exact(&mut buf)
            .map_err(|e| match e.kind() {
                io::ErrorKind::UnexpectedEof => io::Error::new(
                    e.kind(),
                    format!("{len} bytes at {at} run past the end of the image: truncated?"),
                ),
                _ => e,
            })?;
        Ok(buf)
    }

    /// The metadata block at `at`, decompressed, and where the next one starts.
    fn metadata(&mut self, at: u64) -> io::Result<(Rc<Vec<u8>>, u64)> {
        if let Some(hit) = self.cache.get(&at) {
            return Ok(hit.clone());
        }
        let head = self.bytes_at(at, 2)?;
        let head = u16::from_le_bytes([head[0], head[1]]);
        let (stored, len) = (head & 0x8000 != 0, usize::from(head & 0x7FFF));
        if len == 0 || len > METADATA {
            return Err(bad(at, "a metadata block of no size or over 8 KiB"));
        }
        let raw = self.bytes_at(at + 2, len)?;
        let data = match stored {
            true => raw,
            false => self.sb.codec.decompress(&raw, METADATA).map_err(|e| {
                bad(
                    at,
                    &format!("a metadata block that does not decompress: {e}"),
                )
            })?,
        };
        self.budget.spend(data.len())?;
        if self.cache.len() >= MAX_CACHED {
            self.cache.clear();
        }
        let entry = (Rc::new(data), at + 2 + len as u64);
        self.cache.insert(at, entry.clone());
        Ok(entry)
    }

    /// `n` bytes of metadata from `at`, moving it past them.
    fn read_meta(&mut self, at: &mut Cursor, n: usize) -> io::Result<Vec<u8>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            let (block, next) = self.metadata(at.block)?;
            if at.offset >= block.len() {
                if at.offset > block.len() {
                    return Err(bad(at.block, "an offset past its metadata block"));
                }
                *at = Cursor {
                    block: next,
                    offset: 0,
                };
                continue;
            }
            let take = (n - out.len()).min(block.len() - at.offset);
            out.extend_from_slice(&block[at.offset..at.offset + take]);
            at.offset += take;
        }
        Ok(out)
    }

    /// The inode that the reference `r` (block << 16 | offset) points at.
    fn inode(&mut self, r: u64) -> io::Result<Inode> {
        let mut at = Cursor {
            block: self.sb.inode_table.saturating_add(r >> 16),
            offset: (r & 0xFFFF) as usize,
        };
        let head = self.read_meta(&mut at, 16)?;
        let kind = u16::from_le_bytes([head[0], head[1]]);
        let mtime = le32(&head, 8);
        Ok(match kind {
            1 => {
                let b = self.read_meta(&mut at, 16)?;
                Inode::Dir {
                    block: le32(&b, 0),
                    size: u32::from(u16::from_le_bytes([b[8], b[9]])),
                    offset: u16::from_le_bytes([b[10], b[11]]),
                }
            }
            8 => {
                let b = self.read_meta(&mut at, 24)?;
                Inode::Dir {
                    size: le32(&b, 4),
                    block: le32(&b, 8),
                    offset: u16::from_le_bytes([b[18], b[19]]),
                }
            }
            2 => {
                let b = self.read_meta(&mut at, 16)?;
                let fragment = le32(&b, 4);
                Inode::File(FileInode {
                    blocks_start: le32(&b, 0).into(),
                    fragment: (fragment != u32::MAX).then(|| (fragment, le32(&b, 8))),
                    size: le32(&b, 12).into(),
                    sizes: at,
                    mtime,
                })
            }
            9 => {
                let b = self.read_meta(&mut at, 40)?;
                let fragment = le32(&b, 28);
                Inode::File(FileInode {
                    blocks_start: le64(&b, 0),
                    size: le64(&b, 8),
                    fragment: (fragment != u32::MAX).then(|| (fragment, le32(&b, 32))),
                    sizes: at,
                    mtime,
                })
            }
            3..=7 | 10..=14 => Inode::Other,
            other => return Err(bad(at.block, &format!("an inode of type {other}"))),
        })
    }

    /// The fragment block `index`, decompressed.
    fn fragment(&mut self, index: u32) -> io::Result<Rc<Vec<u8>>> {
        if let Some((i, data)) = &self.fragment
            && *i == index
        {
            return Ok(data.clone());
        }
        if index >= self.sb.fragments {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "a file's tail in fragment {index}, of {} fragments",
                    self.sb.fragments
                ),
            ));
        }
        let slot = self
            .sb
            .fragment_table
            .saturating_add(8 * u64::from(index / 512));
        let block = le64(&self.bytes_at(slot, 8)?, 0);
        let mut at = Cursor {
            block,
            offset: (index % 512) as usize * 16,
        };
        let entry = self.read_meta(&mut at, 16)?;
        let (start, size) = (le64(&entry, 0), le32(&entry, 8));
        let data = self.block(
            start,
            size,
            self.sb.block_size as usize,
            self.sb.raw_fragments,
            true,
        )?;
        let data = Rc::new(data);
        self.fragment = Some((index, data.clone()));
        Ok(data)
    }

    /// The data block at `at`, whose size entry is `entry`: `want` bytes, or for a
    /// fragment (`up_to`) at most `want`.
    fn block(
        &mut self,
        at: u64,
        entry: u32,
        want: usize,
        raw: bool,
        up_to: bool,
    ) -> io::Result<Vec<u8>> {
        let len = (entry & 0x00FF_FFFF) as usize;
        if len > self.sb.block_size as usize {
            return Err(bad(
                at,
                &format!("a data block of {len} bytes, past the block size"),
            ));
        }
        let bytes = self.bytes_at(at, len)?;
        let stored = raw || entry & (1 << 24) != 0;
        let data = match stored {
            true => bytes,
            false => self.sb.codec.decompress(&bytes, want)?,
        };
        // A fragment block's length is not recorded: it is at most a block.
        if data.len() != want && !(up_to && data.len() <= want) {
            return Err(bad(
                at,
                &format!("a data block of {} bytes, not {want}", data.len()),
            ));
        }
        self.budget.spend(data.len())?;
        Ok(data)
    }
}

fn le32(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
}

fn le64(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

fn bad(at: u64, what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{what} (at byte {at})"))
}

/// Takes the regular files of the squashfs image `source`.
pub(super) fn read(
    mut source: Source,
    budget: &Budget,
    sink: &mut Sink,
) -> Result<(), SquashfsError> {
    let sb = Super::read(&mut source).map_err(SquashfsError::NotSquashfs)?;
    let root = sb.root;
    let mut image = Image {
        source,
        sb,
        budget,
        cache: HashMap::new(),
        fragment: None,
    };
    let mut seen = HashSet::new();
    let mut stack: Vec<(u64, Vec<u8>, usize)> = vec![(root, Vec::new(), 0)];
    let mut entries = 0usize;
    while let Some((dir, path, depth)) = stack.pop() {
        if !seen.insert(dir) {
            return Err(SquashfsError::Loop(shown(&path)));
        }
        let Inode::Dir {
            block,
            offset,
            size,
        } = image
            .inode(dir)
            .map_err(|source| SquashfsError::Directory {
                path: shown(&path),
                source,
            })?
        else {
            return Err(SquashfsError::NotDirectory(shown(&path)));
        };
        let listing = list(&mut image, block, offset, size, &mut entries).map_err(|source| {
            SquashfsError::Directory {
                path: shown(&path),
                source,
            }
        })?;
        let mut dirs = Vec::new();
        for (name, r, kind) in listing {
            let mut full = path.clone();
            if !full.is_empty() {
                full.push(b'/');
            }
            full.extend_from_slice(&name);
            match kind {
                1 | 8 if depth + 1 >= MAX_DEPTH => {
                    return Err(SquashfsError::Deep(shown(&full)));
                }
                1 | 8 => dirs.push((r, full, depth + 1)),
                2 | 9 => take_file(&mut image, r, &full, sink)?,
                _ => {}
            }
        }
        // Depth first, in the listing's (sorted) order, as unsquashfs writes them.
        stack.extend(dirs.into_iter().rev());
    }
    Ok(())
}

fn shown(path: &[u8]) -> String {
    let text = String::from_utf8_lossy(path);
    match text.is_empty() {
        true => "/".into(),
        false => crate::untrusted::name_for_output(&text).into_owned(),
    }
}

/// The entries of a directory: each name, inode reference and type.
fn list(
    image: &mut Image,
    block: u32,
    offset: u16,
    size: u32,
    entries: &mut usize,
) -> io::Result<Vec<(Vec<u8>, u64, u16)>> {
    let mut at = Cursor {
        block: image.sb.directory_table.saturating_add(block.into()),
        offset: offset.into(),
    };
    // The size counts `.` and `..`, which are not listed.
    let mut left = u64::from(size.saturating_sub(3));
    let mut out = Vec::new();
    while left > 0 {
        let header = image.read_meta(&mut at, 12)?;
        let (count, start) = (le32(&header, 0) as usize + 1, le32(&header, 4));
        if count > 256 {
            return Err(bad(at.block, "a directory header of more than 256 entries"));
        }
        left = left.saturating_sub(12);
        for _ in 0..count {
            *entries += 1;
            if *entries > MAX_ENTRIES {
                return Err(bad(
                    at.block,
                    &format!("more than {MAX_ENTRIES} directory entries"),
                ));
            }
            let e = image.read_meta(&mut at, 8)?;
            let inode_offset = u16::from_le_bytes([e[0], e[1]]);
            let kind = u16::from_le_bytes([e[4], e[5]]);
            let name_len = usize::from(u16::from_le_bytes([e[6], e[7]])) + 1;
            if name_len > 256 {
                return Err(bad(at.block, "a name of more than 256 bytes"));
            }
            let name = image.read_meta(&mut at, name_len)?;
            left = left.saturating_sub(8 + name_len as u64);
            out.push((
                name,
                (u64::from(start) << 16) | u64::from(inode_offset),
                kind,
            ));
        }
    }
    Ok(out)
}

/// Hands the regular file at inode `r` to the sink as `path`.
fn take_file(image: &mut Image, r: u64, path: &[u8], sink: &mut Sink) -> Result<(), SquashfsError> {
    let what = |source| SquashfsError::File {
        path: shown(path),
        source,
    };
    let Inode::File(file) = image.inode(r).map_err(what)? else {
        return Ok(());
    };
    let block_size = u64::from(image.sb.block_size);
    let blocks = match file.fragment {
        Some(_) => file.size / block_size,
        None => file.size.div_ceil(block_size),
    };
    let mtime = match file.mtime {
        0 => image.sb.mtime,
        t => t,
    };
    let modified = UNIX_EPOCH.checked_add(Duration::from_secs(mtime.into()));
    let mut data = FileData {
        at: file.blocks_start,
        sizes: file.sizes,
        blocks,
        done: 0,
        left: file.size,
        fragment: file.fragment,
        buffer: Vec::new(),
        pos: 0,
        image,
    };
    sink.take(path, &mut data, modified).map_err(what)
}

/// A regular file's bytes, read block by block.
struct FileData<'i, 'b> {
    image: &'i mut Image<'b>,
    /// Where its next block is in the file.
    at: u64,
    /// Its next block's size entry, in the inode table.
    sizes: Cursor,
    blocks: u64,
    done: u64,
    /// Bytes not yet decompressed.
    left: u64,
    fragment: Option<(u32, u32)>,
    buffer: Vec<u8>,
    pos: usize,
}

impl FileData<'_, '_> {
    /// The next block (or the tail from its fragment) in `buffer`; false at the end.
    fn refill(&mut self) -> io::Result<bool> {
        if self.left == 0 {
            return Ok(false);
        }
        let block_size = u64::from(self.image.sb.block_size);
        let want = self.left.min(block_size) as usize;
        self.buffer = if self.done < self.blocks {
            let entry = le32(&self.image.read_meta(&mut self.sizes, 4)?, 0);
            self.done += 1;
            if entry == 0 {
                // A sparse block: zeros, stored as nothing.
                self.image.budget.spend(want)?;
                vec![0u8; want]
            } else {
                let raw = self.image.sb.raw_data;
                let data = self.image.block(self.at, entry, want, raw, false)?;
                self.at += u64::from(entry & 0x00FF_FFFF);
                data
            }
        } else if let Some((index, offset)) = self.fragment {
            let frag = self.image.fragment(index)?;
            let start = offset as usize;
            let tail = frag.get(start..start.saturating_add(want)).ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a file's tail past the end of fragment {index}"),
                )
            })?;
            tail.to_vec()
        } else {
            return Err(bad(self.at, "a file longer than its blocks"));
        };
        self.left -= want as u64;
        self.pos = 0;
        Ok(true)
    }
}

impl Read for FileData<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.buffer.len() && !self.refill()? {
            return Ok(0);
        }
        let n = buf.len().min(self.buffer.len() - self.pos);
        buf[..n].copy_from_slice(&self.buffer[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
