//! MSFZ ("PDZ"): Microsoft's compressed PDB container. The streams are those of an MSF
//! PDB, stored as fragments, each either in place or inside a compressed chunk (zstd or
//! raw deflate); see `docs/pdb/msfz.md` in Microsoft's `pdb-rs`.
//!
//! An MSFZ PDB is read by writing its streams back out as an MSF 7.00 file (the loader
//! puts it into an unnamed temporary file and maps that), after which it is read like
//! any PDB: nothing downstream has to know, and the dump is byte-identical to the plain
//! PDB's. A container, as an archive is, not a debug format: this module knows the MSF
//! layout it writes and nothing of the PDB inside, so the loader can use it without
//! knowing PDBs.
//!
//! Hand-written rather than Microsoft's `ms-pdb-msfz` crate: that crate inflates zstd
//! with the C library (no C parser stands in front of untrusted input here), allocates
//! whatever sizes the header claims (a stream directory or chunk of 4 GiB from a file
//! of 100 bytes), and keeps every chunk it has decompressed for the file's lifetime.
//! Here every size is checked against the file and a budget before anything is
//! allocated, one chunk at a time is held, and decoding is ruzstd's and flate2's
//! (zlib-rs), both Rust.

use std::io::{self, Read, Write};

/// Every MSFZ file starts with this.
pub(crate) const SIGNATURE: &[u8; 32] = b"Microsoft MSFZ Container\r\n\x1aALD\0\0";

/// Every PDB 7 file (MSF 7.00, the "big" MSF) starts with this; `pdb/` tells a PDB by it.
pub(crate) const MSF_MAGIC: &[u8; 32] = b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0";

const HEADER_LEN: usize = 80;
const CHUNK_ENTRY_LEN: usize = 20;
const NIL: u32 = u32::MAX;

/// The stream directory, decompressed, at most: a real one lists a few thousand streams
/// in a few hundred KB; each fragment costs 12 bytes of it.
const MAX_DIRECTORY: u64 = 16 << 20;
/// One chunk, decompressed, at most (Microsoft's writer makes chunks of a few MB). Only
/// one is held at a time.
const MAX_CHUNK: u64 = 256 << 20;
/// What the streams may add up to: this many times the file, plus [`SLACK`]. PDB streams
/// compress 3–10x; a file claiming more is a bomb.
const MAX_RATIO: u64 = 100;
const SLACK: u64 = 256 << 20;

/// The MSF page sizes tried for the file written back, smallest first: the smallest
/// whose one block-map page can list every page of the stream directory.
const PAGE_SIZES: [u64; 4] = [4096, 8192, 16384, 32768];

/// What is wrong with an MSFZ file: where, and what was expected there.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MsfzError {
    #[error("truncated: its {what} at offset {offset} needs {len} bytes, the file has {file}")]
    Outside {
        what: &'static str,
        offset: u64,
        len: u64,
        file: u64,
    },
    #[error("MSFZ version {0} is not read (only version 0 is)")]
    Version(u64),
    #[error(
        "its {what} uses compression {code}, which is not one MSFZ defines (0, 1 zstd, 2 deflate)"
    )]
    Compression { what: String, code: u32 },
    #[error("its {what} claims {claimed} bytes, over the limit of {limit}")]
    TooLarge {
        what: String,
        claimed: u64,
        limit: u64,
    },
    #[error("its {what} decompresses to {got} bytes, not the {want} it claims")]
    WrongSize { what: String, got: u64, want: u64 },
    #[error("its {what} does not decompress: {why}")]
    Undecodable { what: String, why: String },
    #[error("its stream directory is malformed at byte {at}: {why}")]
    Directory { at: usize, why: &'static str },
    #[error("stream {stream}: a fragment {why}")]
    Fragment { stream: u32, why: String },
    #[error("its chunk table is malformed: {0}")]
    Chunks(String),
    #[error("writing the PDB it holds: {0}")]
    Write(#[from] io::Error),
}

/// True when `bytes` begin as an MSFZ file does.
pub(crate) fn is_msfz(bytes: &[u8]) -> bool {
    bytes.starts_with(SIGNATURE)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    None,
    Zstd,
    Deflate,
}

impl Codec {
    fn from_code(code: u32, what: impl Fn() -> String) -> Result<Codec, MsfzError> {
        match code {
            0 => Ok(Codec::None),
            1 => Ok(Codec::Zstd),
            2 => Ok(Codec::Deflate),
            code => Err(MsfzError::Compression { what: what(), code }),
        }
    }
}

struct Chunk {
    offset: u64,
    codec: Codec,
    compressed: u64,
    size: u64,
    /// Where its bytes begin in the chunks' decompressed bytes laid end to end.
    start: u64,
}

#[derive(Clone, Copy)]
enum Place {
    /// At this offset of the file.
    File(u64),
    /// At this offset of the chunks' decompressed bytes laid end to end (a fragment may
    /// run on from one chunk into the next).
    Chunks(u64),
}

#[derive(Clone, Copy)]
struct Fragment {
    size: u32,
    place: Place,
}

/// One stream: nil, or its fragments (a range of [`Msfz::fragments`]).
#[derive(Clone)]
enum Stream {
    Nil,
    Fragments { first: usize, end: usize, size: u64 },
}

/// An MSFZ file's directory and chunk table, checked against the file.
pub(crate) struct Msfz<'a> {
    bytes: &'a [u8],
    /// What the streams, and the MSF file written back (their pages), may come to.
    budget: u64,
    chunks: Vec<Chunk>,
    streams: Vec<Stream>,
    fragments: Vec<Fragment>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from(u32_at(b, at)) | (u64::from(u32_at(b, at + 4)) << 32)
}

/// `len` bytes at `offset` of `bytes`, or why not.
fn within<'a>(
    bytes: &'a [u8],
    what: &'static str,
    offset: u64,
    len: u64,
) -> Result<&'a [u8], MsfzError> {
    let file = bytes.len() as u64;
    let outside = || MsfzError::Outside {
        what,
        offset,
        len,
        file,
    };
    let end = offset.checked_add(len).ok_or_else(outside)?;
    if end > file {
        return Err(outside());
    }
    Ok(&bytes[offset as usize..end as usize])
}

/// `data` decompressed by `codec`, which must give exactly `size` bytes.
fn decompress(codec: Codec, data: &[u8], size: u64, what: &str) -> Result<Vec<u8>, MsfzError> {
    let undecodable = |why: String| MsfzError::Undecodable {
        what: what.to_string(),
        why,
    };
    let mut reader: Box<dyn Read + '_> = match codec {
        Codec::None => Box::new(data),
        Codec::Zstd => Box::new(
            ruzstd::decoding::StreamingDecoder::new(data)
                .map_err(|e| undecodable(e.to_string()))?,
        ),
        Codec::Deflate => Box::new(flate2::read::DeflateDecoder::new(data)),
    };
    // One byte past the claim is asked for: a chunk that decompresses past its size is
    // refused rather than cut.
    // Grown as it decompresses, not reserved at the claim: a claim is only a claim.
    let mut out = Vec::with_capacity(size.min(1 << 20) as usize);
    let got = (&mut reader)
        .take(size + 1)
        .read_to_end(&mut out)
        .map_err(|e| undecodable(e.to_string()))? as u64;
    if got != size {
        return Err(MsfzError::WrongSize {
            what: what.to_string(),
            got,
            want: size,
        });
    }
    Ok(out)
}

/// What the decompressed streams of a file of `len` bytes may add up to.
fn budget(len: u64) -> u64 {
    len.saturating_mul(MAX_RATIO).saturating_add(SLACK)
}

/// Writes the MSF PDB that the MSFZ file `bytes` holds into `out`: every stream checked
/// against the file and a budget of 100 times its size before it is decompressed.
pub(crate) fn unpack(bytes: &[u8], out: &mut impl Write) -> Result<(), MsfzError> {
    unpack_within(bytes, budget(bytes.len() as u64), out)
}

/// [`unpack`] with the streams, and the file written, held to `budget` bytes.
pub(crate) fn unpack_within(
    bytes: &[u8],
    budget: u64,
    out: &mut impl Write,
) -> Result<(), MsfzError> {
    Msfz::parse(bytes, budget)?.write_msf(out)
}

impl<'a> Msfz<'a> {
    /// Reads the header, chunk table and stream directory of `bytes` and checks every
    /// fragment against them; the streams together may be at most `budget` bytes.
    pub(crate) fn parse(bytes: &'a [u8], budget: u64) -> Result<Msfz<'a>, MsfzError> {
        let header = within(bytes, "header", 0, HEADER_LEN as u64)?;
        let version = u64_at(header, 32);
        if version != 0 {
            return Err(MsfzError::Version(version));
        }
        let dir_offset = u64_at(header, 40);
        let table_offset = u64_at(header, 48);
        let num_streams = u32_at(header, 56);
        let dir_codec = Codec::from_code(u32_at(header, 60), || "stream directory".into())?;
        let dir_compressed = u64::from(u32_at(header, 64));
        let dir_size = u64::from(u32_at(header, 68));
        let num_chunks = u64::from(u32_at(header, 72));
        let table_size = u64::from(u32_at(header, 76));

        if table_size != num_chunks * CHUNK_ENTRY_LEN as u64 {
            return Err(MsfzError::Chunks(format!(
                "{num_chunks} chunks in a table of {table_size} bytes"
            )));
        }
        let table = within(bytes, "chunk table", table_offset, table_size)?;
        let chunks = Self::chunks(bytes, table, budget)?;

        if dir_size > MAX_DIRECTORY {
            return Err(MsfzError::TooLarge {
                what: "stream directory".into(),
                claimed: dir_size,
                limit: MAX_DIRECTORY,
            });
        }
        if dir_codec == Codec::None && dir_compressed != dir_size {
            return Err(MsfzError::Directory {
                at: 0,
                why: "it is stored uncompressed but its two sizes differ",
            });
        }
        let raw = within(bytes, "stream directory", dir_offset, dir_compressed)?;
        let directory = decompress(dir_codec, raw, dir_size, "stream directory")?;
        if u64::from(num_streams) * 4 > dir_size {
            return Err(MsfzError::Directory {
                at: 0,
                why: "it lists more streams than it has bytes for",
            });
        }
        let mut msfz = Msfz {
            bytes,
            budget,
            chunks,
            streams: Vec::with_capacity(num_streams as usize),
            fragments: Vec::new(),
        };
        msfz.read_directory(&directory, num_streams, budget)?;
        Ok(msfz)
    }

    fn chunks(bytes: &[u8], table: &[u8], budget: u64) -> Result<Vec<Chunk>, MsfzError> {
        let mut chunks = Vec::with_capacity(table.len() / CHUNK_ENTRY_LEN);
        let mut start = 0u64;
        for (i, entry) in table.chunks_exact(CHUNK_ENTRY_LEN).enumerate() {
            let chunk = Chunk {
                offset: u64_at(entry, 0),
                codec: Codec::from_code(u32_at(entry, 8), || format!("chunk {i}"))?,
                compressed: u64::from(u32_at(entry, 12)),
                size: u64::from(u32_at(entry, 16)),
                start,
            };
            if chunk.compressed == 0 || chunk.size == 0 {
                return Err(MsfzError::Chunks(format!("chunk {i} is empty")));
            }
            if chunk.size > MAX_CHUNK {
                return Err(MsfzError::TooLarge {
                    what: format!("chunk {i}"),
                    claimed: chunk.size,
                    limit: MAX_CHUNK,
                });
            }
            within(bytes, "compressed chunk", chunk.offset, chunk.compressed)?;
            start += chunk.size;
            if start > budget {
                return Err(MsfzError::TooLarge {
                    what: "chunk table (its chunks decompressed together)".into(),
                    claimed: start,
                    limit: budget,
                });
            }
            chunks.push(chunk);
        }
        Ok(chunks)
    }

    fn read_directory(
        &mut self,
        dir: &[u8],
        num_streams: u32,
        budget: u64,
    ) -> Result<(), MsfzError> {
        let mut at = 0usize;
        let mut next = |why: &'static str| -> Result<u32, MsfzError> {
            if at + 4 > dir.len() {
                return Err(MsfzError::Directory { at, why });
            }
            let v = u32_at(dir, at);
            at += 4;
            Ok(v)
        };
        let in_chunks: u64 = self.chunks.last().map_or(0, |c| c.start + c.size);
        let mut total = 0u64;
        for stream in 0..num_streams {
            let mut size = next("it ends inside a stream's entry")?;
            if size == NIL {
                self.streams.push(Stream::Nil);
                continue;
            }
            let first = self.fragments.len();
            let mut stream_size = 0u64;
            while size != 0 {
                let lo = next("it ends inside a fragment")?;
                let hi = next("it ends inside a fragment")?;
                let bad = |why: String| MsfzError::Fragment { stream, why };
                let place = if hi & (1 << 31) != 0 {
                    let chunk = (hi & !(1 << 31)) as usize;
                    let Some(c) = self.chunks.get(chunk) else {
                        return Err(bad(format!(
                            "names chunk {chunk}; the table has {}",
                            self.chunks.len()
                        )));
                    };
                    if u64::from(lo) >= c.size {
                        return Err(bad(format!(
                            "starts at byte {lo} of chunk {chunk}, which holds {}",
                            c.size
                        )));
                    }
                    let start = c.start + u64::from(lo);
                    if start + u64::from(size) > in_chunks {
                        return Err(bad(format!("of {size} bytes runs past the last chunk")));
                    }
                    Place::Chunks(start)
                } else {
                    let offset = (u64::from(hi) << 32 | u64::from(lo)) & ((1 << 48) - 1);
                    within(self.bytes, "uncompressed fragment", offset, u64::from(size))?;
                    Place::File(offset)
                };
                self.fragments.push(Fragment { size, place });
                stream_size += u64::from(size);
                size = next("it ends before a stream's list of fragments does")?;
                if size == NIL {
                    return Err(bad("after the first is marked nil".into()));
                }
            }
            // MSF writes a stream's size in 32 bits, with all ones meaning nil.
            if stream_size >= u64::from(NIL) {
                return Err(MsfzError::TooLarge {
                    what: format!("stream {stream}"),
                    claimed: stream_size,
                    limit: u64::from(NIL) - 1,
                });
            }
            total += stream_size;
            if total > budget {
                return Err(MsfzError::TooLarge {
                    what: "streams together".into(),
                    claimed: total,
                    limit: budget,
                });
            }
            self.streams.push(Stream::Fragments {
                first,
                end: self.fragments.len(),
                size: stream_size,
            });
        }
        Ok(())
    }

    /// Writes the streams out as an MSF 7.00 PDB.
    pub(crate) fn write_msf(&self, out: &mut impl Write) -> Result<(), MsfzError> {
        let layout = Layout::new(&self.streams)?;
        // Pages, not bytes: a million one-byte streams are a million pages.
        let written = layout.pages.saturating_mul(layout.page_size);
        if written > self.budget {
            return Err(MsfzError::TooLarge {
                what: format!(
                    "PDB it holds ({} streams in {} pages of {} bytes)",
                    self.streams.len(),
                    layout.pages,
                    layout.page_size
                ),
                claimed: written,
                limit: self.budget,
            });
        }
        let mut pages = PageWriter {
            out,
            page_size: layout.page_size,
            page: 0,
            in_page: 0,
        };
        pages.write(&layout.superblock())?;
        pages.end_page()?;
        let mut held: Option<(usize, Vec<u8>)> = None;
        for stream in &self.streams {
            let Stream::Fragments { first, end, .. } = stream else {
                continue;
            };
            for f in &self.fragments[*first..*end] {
                self.copy(f, &mut held, &mut pages)?;
            }
            pages.end_page()?;
        }
        pages.write(&layout.directory)?;
        pages.end_page()?;
        let map: Vec<u8> = layout
            .directory_pages
            .iter()
            .flat_map(|p| p.to_le_bytes())
            .collect();
        pages.write(&map)?;
        pages.end_page()?;
        pages.out.flush()?;
        Ok(())
    }

    /// The bytes of `f`, from the file or from the chunks (decompressed one at a time,
    /// the last kept in `held`).
    fn copy(
        &self,
        f: &Fragment,
        held: &mut Option<(usize, Vec<u8>)>,
        pages: &mut PageWriter<impl Write>,
    ) -> Result<(), MsfzError> {
        let mut at = match f.place {
            Place::File(offset) => {
                let start = offset as usize;
                return Ok(pages.write(&self.bytes[start..start + f.size as usize])?);
            }
            Place::Chunks(at) => at,
        };
        let mut left = u64::from(f.size);
        while left > 0 {
            // The chunk holding `at`: the last that starts at or before it.
            let i = self.chunks.partition_point(|c| c.start <= at) - 1;
            if held.as_ref().is_none_or(|(h, _)| *h != i) {
                *held = None;
                let c = &self.chunks[i];
                let raw = &self.bytes[c.offset as usize..(c.offset + c.compressed) as usize];
                *held = Some((i, decompress(c.codec, raw, c.size, &format!("chunk {i}"))?));
            }
            let (_, data) = held.as_ref().expect("just decompressed");
            let from = (at - self.chunks[i].start) as usize;
            let n = (data.len() - from).min(left as usize);
            pages.write(&data[from..from + n])?;
            at += n as u64;
            left -= n as u64;
        }
        Ok(())
    }
}

/// Where everything goes in the MSF file written back: page 0 the superblock, pages 1
/// and 2 of every interval of `page_size` pages the free page maps (left zero: nothing is
/// free), then each stream's pages in order, then the stream directory's, then the one
/// page listing the directory's.
struct Layout {
    page_size: u64,
    pages: u64,
    directory: Vec<u8>,
    directory_pages: Vec<u32>,
}

impl Layout {
    fn new(streams: &[Stream]) -> Result<Layout, MsfzError> {
        let size = PAGE_SIZES
            .into_iter()
            .find(|&size| Self::fits(streams, size))
            .ok_or_else(|| MsfzError::TooLarge {
                what: "PDB it holds (its MSF stream directory in pages of 32 KiB)".into(),
                claimed: streams
                    .iter()
                    .map(|s| match s {
                        Stream::Nil => 0,
                        Stream::Fragments { size, .. } => *size,
                    })
                    .sum(),
                limit: (32768 / 4) * 32768 / 4 * 32768,
            })?;
        Ok(Self::with_page_size(streams, size))
    }

    fn pages_of(bytes: u64, page_size: u64) -> u64 {
        bytes.div_ceil(page_size)
    }

    /// Whether, with pages of `page_size`, one page can list the directory's pages.
    fn fits(streams: &[Stream], page_size: u64) -> bool {
        let data: u64 = streams
            .iter()
            .map(|s| match s {
                Stream::Nil => 0,
                Stream::Fragments { size, .. } => Self::pages_of(*size, page_size),
            })
            .sum();
        let directory = 4 + 4 * streams.len() as u64 + 4 * data;
        Self::pages_of(directory, page_size) <= page_size / 4
    }

    fn with_page_size(streams: &[Stream], page_size: u64) -> Layout {
        let mut next = 3u64;
        let mut take = || {
            // Pages 1 and 2 of each interval hold the free page maps.
            while matches!(next % page_size, 1 | 2) {
                next += 1;
            }
            let p = next;
            next += 1;
            p as u32
        };
        let mut sizes = Vec::with_capacity(4 + 4 * streams.len());
        let mut lists = Vec::new();
        sizes.extend_from_slice(&(streams.len() as u32).to_le_bytes());
        for s in streams {
            match s {
                Stream::Nil => sizes.extend_from_slice(&NIL.to_le_bytes()),
                Stream::Fragments { size, .. } => {
                    sizes.extend_from_slice(&(*size as u32).to_le_bytes());
                    for _ in 0..Self::pages_of(*size, page_size) {
                        lists.extend_from_slice(&take().to_le_bytes());
                    }
                }
            }
        }
        sizes.extend_from_slice(&lists);
        let directory = sizes;
        let directory_pages: Vec<u32> = (0..Self::pages_of(directory.len() as u64, page_size))
            .map(|_| take())
            .collect();
        let map_page = take();
        Layout {
            page_size,
            pages: u64::from(map_page) + 1,
            directory,
            directory_pages,
        }
    }

    fn superblock(&self) -> Vec<u8> {
        let mut b = MSF_MAGIC.to_vec();
        for v in [
            self.page_size as u32,
            1, // the free page map in use
            self.pages as u32,
            self.directory.len() as u32,
            0,
            self.pages as u32 - 1, // the page listing the directory's pages
        ] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// Writes pages in order, skipping (zero-filling) the free page maps' pages as
/// [`Layout`] places them.
struct PageWriter<W> {
    out: W,
    page_size: u64,
    /// The page being written.
    page: u64,
    in_page: u64,
}

impl<W: Write> PageWriter<W> {
    fn write(&mut self, mut data: &[u8]) -> io::Result<()> {
        while !data.is_empty() {
            if self.in_page == 0 {
                while matches!(self.page % self.page_size, 1 | 2) {
                    self.out.write_all(&vec![0; self.page_size as usize])?;
                    self.page += 1;
                }
            }
            let n = ((self.page_size - self.in_page) as usize).min(data.len());
            self.out.write_all(&data[..n])?;
            data = &data[n..];
            self.in_page += n as u64;
            if self.in_page == self.page_size {
                self.page += 1;
                self.in_page = 0;
            }
        }
        Ok(())
    }

    /// Zero-fills the rest of the page being written, if it was begun.
    fn end_page(&mut self) -> io::Result<()> {
        if self.in_page > 0 {
            let rest = (self.page_size - self.in_page) as usize;
            self.out.write_all(&vec![0; rest])?;
            self.page += 1;
            self.in_page = 0;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An MSFZ file written field by field: streams given as (bytes, chunked).
    pub(crate) fn build(streams: &[Option<&[u8]>], codec: u32) -> Vec<u8> {
        let mut file = vec![0u8; HEADER_LEN];
        let mut chunk_data = Vec::new();
        let mut dir = Vec::new();
        for s in streams {
            match s {
                None => dir.extend_from_slice(&NIL.to_le_bytes()),
                Some([]) => dir.extend_from_slice(&0u32.to_le_bytes()),
                Some(data) => {
                    let at = chunk_data.len() as u32;
                    chunk_data.extend_from_slice(data);
                    dir.extend_from_slice(&(data.len() as u32).to_le_bytes());
                    dir.extend_from_slice(&at.to_le_bytes());
                    dir.extend_from_slice(&(1u32 << 31).to_le_bytes());
                    dir.extend_from_slice(&0u32.to_le_bytes());
                }
            }
        }
        let packed = match codec {
            0 => chunk_data.clone(),
            2 => {
                let mut e =
                    flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::fast());
                e.write_all(&chunk_data).unwrap();
                e.finish().unwrap()
            }
            _ => unreachable!("the tests build stored or deflated chunks"),
        };
        let chunk_offset = file.len() as u64;
        file.extend_from_slice(&packed);
        let dir_offset = file.len() as u64;
        file.extend_from_slice(&dir);
        let table_offset = file.len() as u64;
        file.extend_from_slice(&chunk_offset.to_le_bytes());
        file.extend_from_slice(&codec.to_le_bytes());
        file.extend_from_slice(&(packed.len() as u32).to_le_bytes());
        file.extend_from_slice(&(chunk_data.len() as u32).to_le_bytes());
        file[..32].copy_from_slice(SIGNATURE);
        let mut h = Vec::new();
        for v in [0u64, dir_offset, table_offset] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            streams.len() as u32,
            0,
            dir.len() as u32,
            dir.len() as u32,
            1,
            CHUNK_ENTRY_LEN as u32,
        ] {
            h.extend_from_slice(&v.to_le_bytes());
        }
        file[32..HEADER_LEN].copy_from_slice(&h);
        file
    }

    /// The streams of the MSF file `msf`, read as the MSF layout says (not by the code
    /// that wrote it): sizes from the directory, bytes from each stream's pages.
    fn msf_streams(msf: &[u8]) -> Vec<Option<Vec<u8>>> {
        let u32_at = |at: u64| u64::from(u32_at(msf, at as usize));
        let page = u32_at(32);
        assert_eq!(msf.len() as u64, page * u32_at(40));
        let dir_len = u32_at(44);
        let map = u32_at(52) * page;
        let mut dir = Vec::new();
        for i in 0..dir_len.div_ceil(page) {
            let p = u32_at(map + 4 * i) * page;
            dir.extend_from_slice(&msf[p as usize..(p + page) as usize]);
        }
        dir.truncate(dir_len as usize);
        let d = |i: u64| u64::from(super::u32_at(&dir, i as usize * 4));
        let n = d(0);
        let mut next = 1 + n;
        (0..n)
            .map(|s| {
                let size = d(1 + s);
                if size == u64::from(NIL) {
                    return None;
                }
                let mut bytes = Vec::new();
                for _ in 0..size.div_ceil(page) {
                    let p = d(next) * page;
                    next += 1;
                    bytes.extend_from_slice(&msf[p as usize..(p + page) as usize]);
                }
                bytes.truncate(size as usize);
                Some(bytes)
            })
            .collect()
    }

    #[test]
    fn streams_come_back_as_an_msf_file_lays_them_out() {
        let big: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let streams: [Option<&[u8]>; 5] = [
            Some(b""),
            Some(b"info stream"),
            None,
            Some(&big),
            Some(b"x"),
        ];
        for codec in [0, 2] {
            let file = build(&streams, codec);
            let msfz = Msfz::parse(&file, budget(file.len() as u64)).unwrap();
            let mut msf = Vec::new();
            msfz.write_msf(&mut msf).unwrap();
            assert!(msf.starts_with(MSF_MAGIC));
            let got = msf_streams(&msf);
            let want: Vec<Option<Vec<u8>>> =
                streams.iter().map(|s| s.map(<[u8]>::to_vec)).collect();
            assert_eq!(got, want, "codec {codec}");
        }
    }

    #[test]
    fn a_chunk_that_decompresses_past_its_claim_is_refused() {
        let mut file = build(&[Some(b"abcdefgh")], 2);
        // The chunk table's last field: its decompressed size, now 4 of its 8 bytes.
        let at = file.len() - 4;
        file[at..].copy_from_slice(&4u32.to_le_bytes());
        let err = Msfz::parse(&file, budget(file.len() as u64)).err();
        // The fragment of 8 bytes no longer fits the chunks: refused at the directory.
        assert!(matches!(err, Some(MsfzError::Fragment { .. })), "{err:?}");
        let mut file = build(&[Some(b"abcd")], 2);
        let at = file.len() - 4;
        file[at..].copy_from_slice(&3u32.to_le_bytes());
        let mut file2 = file.clone();
        // Fragment of 4 from a chunk claiming 3: refused; with the fragment cut to 3, the
        // chunk itself decompresses to 4, past its claim.
        assert!(Msfz::parse(&file, budget(file.len() as u64)).is_err());
        let dir_at = u64_at(&file2, 40) as usize;
        file2[dir_at..dir_at + 4].copy_from_slice(&3u32.to_le_bytes());
        let msfz = Msfz::parse(&file2, budget(file2.len() as u64)).unwrap();
        let err = msfz.write_msf(&mut Vec::new()).err();
        assert!(
            matches!(
                err,
                Some(MsfzError::WrongSize {
                    got: 4,
                    want: 3,
                    ..
                })
            ),
            "{err:?}"
        );
    }

    #[test]
    fn many_tiny_streams_are_bounded_by_the_pages_they_would_take() {
        let streams: Vec<Option<&[u8]>> = vec![Some(b"x"); 2000];
        let file = build(&streams, 2);
        // 2,000 bytes of streams, 2,000 pages of 4 KiB written back.
        let msfz = Msfz::parse(&file, 1 << 20).unwrap();
        let err = msfz.write_msf(&mut Vec::new()).err();
        assert!(matches!(err, Some(MsfzError::TooLarge { .. })), "{err:?}");
        let msfz = Msfz::parse(&file, 16 << 20).unwrap();
        let mut msf = Vec::new();
        msfz.write_msf(&mut msf).unwrap();
        assert_eq!(msf_streams(&msf).len(), 2000);
    }

    #[test]
    fn claims_past_the_file_or_the_budget_are_refused_before_allocating() {
        let file = build(&[Some(b"abcd")], 0);
        // A chunk claiming 200 MB from a file of a hundred bytes: over the budget.
        let mut bomb = file.clone();
        let at = bomb.len() - 4;
        bomb[at..].copy_from_slice(&(200u32 << 20).to_le_bytes());
        let err = Msfz::parse(&bomb, 1 << 20).err();
        assert!(matches!(err, Some(MsfzError::TooLarge { .. })), "{err:?}");
        // A stream directory past the end of the file.
        let mut cut = file.clone();
        cut[40..48].copy_from_slice(&(1u64 << 40).to_le_bytes());
        let err = Msfz::parse(&cut, budget(cut.len() as u64)).err();
        assert!(matches!(err, Some(MsfzError::Outside { .. })), "{err:?}");
        // Truncated inside the header.
        assert!(matches!(
            Msfz::parse(&file[..40], 1 << 20),
            Err(MsfzError::Outside { .. })
        ));
        // Streams listed that the directory has no bytes for.
        let mut many = file.clone();
        many[56..60].copy_from_slice(&1_000_000u32.to_le_bytes());
        assert!(Msfz::parse(&many, budget(many.len() as u64)).is_err());
    }
}
