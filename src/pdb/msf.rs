//! What a PDB's container (MSF 7.00) claims, checked against the file before the `pdb`
//! crate reads it.
//!
//! The crate believes the container: a stream directory claiming 2 GB was allocated
//! (2.1 GB resident for a 20 KB file) before it failed, and a 1.5 GB DBI stream made of
//! one page listed over and over was assembled in memory (3 GB from 1.6 MB). So the
//! superblock, the directory and every stream's size are checked here first: nothing
//! in a real PDB is larger than the file, nor are all its streams together. Only the
//! header fields and the directory's stream sizes are read; the page lists are left to
//! the crate, which bounds-checks them.
//!
//! The page lists are read here only to let a module stream's pages go once the module
//! is read ([`Pages`]): the crate copies a stream out of the map to read it, so the
//! map's pages are needed no more.

/// The fields of the superblock that bound everything else.
struct Superblock {
    block_size: u64,
    num_blocks: u64,
    directory_bytes: u64,
    block_map_block: u64,
}

pub(super) fn u32_at(bytes: &[u8], at: u64) -> Option<u64> {
    let at = usize::try_from(at).ok()?;
    let b = bytes.get(at..at.checked_add(4)?)?;
    Some(u64::from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])))
}

/// What a PDB's container claims that cannot be: the part and the offset in the file
/// where what was expected was not found.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MsfError {
    #[error("truncated: the {part} at {offset:#x} is cut short")]
    Truncated { part: &'static str, offset: u64 },
    #[error("its page size {0} is not one MSF uses")]
    PageSize(u64),
    #[error("truncated: its header says {claimed} bytes ({pages} pages), the file has {len}")]
    Pages { claimed: u64, pages: u64, len: u64 },
    #[error("its stream directory claims {claimed} bytes, more than the whole file ({len})")]
    Directory { claimed: u64, len: u64 },
    #[error("a page number ({page}) at {offset:#x} is past the last page")]
    PagePastEnd { page: u64, offset: u64 },
    #[error("its stream directory lists {streams} streams in {bytes} bytes")]
    StreamCount { streams: u64, bytes: u64 },
    #[error("stream {stream} claims {size} bytes, more than the whole file ({len})")]
    Stream { stream: u64, size: u64, len: u64 },
    #[error(
        "its streams claim {total} bytes together, more than the whole file ({len}): pages are listed more than once"
    )]
    Streams { total: u64, len: u64 },
}

/// The little-endian word of `part` at `offset`.
fn word(bytes: &[u8], offset: u64, part: &'static str) -> Result<u64, MsfError> {
    u32_at(bytes, offset).ok_or(MsfError::Truncated { part, offset })
}

fn superblock(bytes: &[u8]) -> Result<Superblock, MsfError> {
    let field = |at| word(bytes, at, "superblock");
    let sb = Superblock {
        block_size: field(32)?,
        num_blocks: field(40)?,
        directory_bytes: field(44)?,
        block_map_block: field(52)?,
    };
    if !matches!(
        sb.block_size,
        512 | 1024 | 2048 | 4096 | 8192 | 16384 | 32768
    ) {
        return Err(MsfError::PageSize(sb.block_size));
    }
    let claimed = sb.num_blocks.saturating_mul(sb.block_size);
    let len = bytes.len() as u64;
    if claimed > len {
        return Err(MsfError::Pages {
            claimed,
            pages: sb.num_blocks,
            len,
        });
    }
    if sb.directory_bytes > len {
        return Err(MsfError::Directory {
            claimed: sb.directory_bytes,
            len,
        });
    }
    Ok(sb)
}

/// Checks the container of `bytes` (a PDB): an error says what it claims that cannot be.
pub(crate) fn check(bytes: &[u8]) -> Result<(), MsfError> {
    let sb = superblock(bytes)?;
    let bs = sb.block_size;
    // The directory's first page: its number is the first entry of the block map.
    let page = |n: u64, offset: u64| -> Result<u64, MsfError> {
        if n >= sb.num_blocks {
            return Err(MsfError::PagePastEnd { page: n, offset });
        }
        Ok(n * bs)
    };
    let map = page(sb.block_map_block, 52)?;
    let first = word(bytes, map, "block map")?;
    let dir = page(first, map)?;
    // Stream count and sizes are at the start of the directory; only what its first
    // page holds is read here (enough for thousands of streams; the rest is the
    // crate's to bound-check).
    let num_streams = word(bytes, dir, "stream directory")?;
    if num_streams.saturating_mul(4) > sb.directory_bytes {
        return Err(MsfError::StreamCount {
            streams: num_streams,
            bytes: sb.directory_bytes,
        });
    }
    let len = bytes.len() as u64;
    let in_first_page = num_streams.min((bs - 4) / 4);
    let mut total = 0u64;
    for i in 0..in_first_page {
        let size = word(bytes, dir + 4 + 4 * i, "stream directory")?;
        if size == 0xFFFF_FFFF {
            continue;
        }
        if size > len {
            return Err(MsfError::Stream {
                stream: i,
                size,
                len,
            });
        }
        total += size;
    }
    if total > len {
        return Err(MsfError::Streams { total, len });
    }
    Ok(())
}

/// Where each stream's pages lie in the file, from the MSF directory: so that the pages
/// of a module stream, which the `pdb` crate copies out of the map to read, can leave
/// this process's memory once the module is read (a PDB of 4.7 GB kept 4.5 GB of its
/// map resident to the end of the dump without this).
pub(crate) struct Pages {
    block_size: usize,
    /// Each stream's page numbers (none for a nil stream).
    streams: Vec<Vec<u32>>,
}

impl Pages {
    /// The layout of the PDB in `bytes`, if its directory reads (it was checked by
    /// [`check`] before): `None` leaves everything mapped as it is.
    pub(crate) fn read(bytes: &[u8]) -> Option<Pages> {
        let sb = superblock(bytes).ok()?;
        let bs = sb.block_size;
        let dir_pages = sb.directory_bytes.div_ceil(bs);
        // The directory's page numbers, listed on the pages the superblock names.
        let map_pages = (dir_pages * 4).div_ceil(bs);
        let mut directory = Vec::with_capacity(sb.directory_bytes as usize);
        'pages: for m in 0..map_pages {
            let map = u32_at(bytes, 52 + 4 * m)?;
            for i in 0..bs / 4 {
                if directory.len() as u64 >= sb.directory_bytes {
                    break 'pages;
                }
                let page = u32_at(bytes, map.checked_mul(bs)? + 4 * i)?;
                let at = usize::try_from(page.checked_mul(bs)?).ok()?;
                directory.extend_from_slice(bytes.get(at..at + bs as usize)?);
            }
        }
        directory.truncate(sb.directory_bytes as usize);
        let n = u32_at(&directory, 0)?;
        if n.saturating_mul(4) > sb.directory_bytes {
            return None;
        }
        let mut at = 4 + 4 * n;
        let mut streams = Vec::with_capacity(n as usize);
        for i in 0..n {
            let size = u32_at(&directory, 4 + 4 * i)?;
            let count = if size == 0xFFFF_FFFF {
                0
            } else {
                size.div_ceil(bs)
            };
            let mut pages = Vec::with_capacity(count.min(sb.num_blocks) as usize);
            for _ in 0..count {
                pages.push(u32_at(&directory, at)? as u32);
                at += 4;
            }
            streams.push(pages);
        }
        Some(Pages {
            block_size: bs as usize,
            streams,
        })
    }

    /// The runs of consecutive pages of `stream`, as byte ranges of the file.
    pub(crate) fn ranges(&self, stream: u16) -> Vec<std::ops::Range<usize>> {
        let mut out: Vec<std::ops::Range<usize>> = Vec::new();
        let Some(pages) = self.streams.get(usize::from(stream)) else {
            return out;
        };
        for &p in pages {
            let start = p as usize * self.block_size;
            match out.last_mut() {
                Some(last) if last.end == start => last.end += self.block_size,
                _ => out.push(start..start + self.block_size),
            }
        }
        out
    }

    /// Each module's stream number, in the DBI stream's order (`0xFFFF`: none), read
    /// from the DBI stream's module list in `bytes`.
    pub(crate) fn module_streams(&self, bytes: &[u8]) -> Option<Vec<u16>> {
        let mut dbi = Vec::new();
        for r in self.ranges(3) {
            dbi.extend_from_slice(bytes.get(r)?);
        }
        let size = u32_at(&dbi, 24)? as usize;
        let list = dbi.get(64..64 + size)?;
        let mut at = 0usize;
        let mut out = Vec::new();
        while at + 64 <= list.len() {
            out.push(u16::from_le_bytes([list[at + 34], list[at + 35]]));
            // Two NUL-terminated names follow the fixed fields; records are 4-aligned.
            let mut end = at + 64;
            for _ in 0..2 {
                end += list.get(end..)?.iter().position(|&b| b == 0)? + 1;
            }
            at = (end + 3) & !3;
        }
        Some(out)
    }
}

/// What to call once module `i` is read: its stream's pages leave memory (the `pdb`
/// crate copied what it read; a PDB of 4.7 GB kept 4.5 GB of its map resident without
/// this). Does nothing when the MSF directory cannot be followed.
pub(super) fn module_releaser<'a>(
    bytes: &'a [u8],
    release: &'a super::Release,
) -> impl Fn(usize) + Sync + 'a {
    let pages = Pages::read(bytes);
    let module_streams = pages.as_ref().and_then(|p| p.module_streams(bytes));
    move |module: usize| {
        let (Some(pages), Some(streams)) = (&pages, &module_streams) else {
            return;
        };
        for range in streams.get(module).map_or(Vec::new(), |&s| pages.ranges(s)) {
            if let Some(part) = bytes.get(range) {
                release(part);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fixture's module streams as llvm-pdbutil lists them (`dump -modules`:
    /// `debug stream: 11` for the object file, 12 for `* Linker *`), and each stream's
    /// pages within the file.
    #[test]
    fn module_streams_and_their_pages_as_llvm_pdbutil_reads_them() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/fixtures/windows/msvc-x86_64/app.pdb"
        );
        let bytes = std::fs::read(path).unwrap();
        let pages = Pages::read(&bytes).unwrap();
        assert_eq!(pages.module_streams(&bytes), Some(vec![11, 12]));
        for stream in 0..pages.streams.len() as u16 {
            for r in pages.ranges(stream) {
                assert!(
                    r.end <= bytes.len() && r.len() % 4096 == 0,
                    "{stream}: {r:?}"
                );
            }
        }
        // Garbage is no layout, not a panic.
        assert!(Pages::read(&bytes[..100]).is_none());
    }
}
