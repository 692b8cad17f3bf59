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

fn superblock(bytes: &[u8]) -> Result<Superblock, String> {
    let field = |at| u32_at(bytes, at).ok_or("truncated: the superblock is cut short");
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
        return Err(format!(
            "its page size {} is not one MSF uses",
            sb.block_size
        ));
    }
    let claimed = sb.num_blocks.saturating_mul(sb.block_size);
    let len = bytes.len() as u64;
    if claimed > len {
        return Err(format!(
            "truncated: its header says {claimed} bytes ({} pages), the file has {len}",
            sb.num_blocks
        ));
    }
    if sb.directory_bytes > len {
        return Err(format!(
            "its stream directory claims {} bytes, more than the whole file ({len})",
            sb.directory_bytes
        ));
    }
    Ok(sb)
}

/// Checks the container of `bytes` (a PDB): an error says what it claims that cannot be.
pub(crate) fn check(bytes: &[u8]) -> Result<(), String> {
    let sb = superblock(bytes)?;
    let bs = sb.block_size;
    // The directory's first page: its number is the first entry of the block map.
    let page = |n: u64| -> Result<u64, String> {
        if n >= sb.num_blocks {
            return Err(format!("a page number ({n}) is past the last page"));
        }
        Ok(n * bs)
    };
    let map = page(sb.block_map_block)?;
    let first = u32_at(bytes, map).ok_or("truncated: the block map is cut short")?;
    let dir = page(first)?;
    // Stream count and sizes are at the start of the directory; only what its first
    // page holds is read here (enough for thousands of streams; the rest is the
    // crate's to bound-check).
    let num_streams = u32_at(bytes, dir).ok_or("truncated: the stream directory is cut short")?;
    if num_streams.saturating_mul(4) > sb.directory_bytes {
        return Err(format!(
            "its stream directory lists {num_streams} streams in {} bytes",
            sb.directory_bytes
        ));
    }
    let len = bytes.len() as u64;
    let in_first_page = num_streams.min((bs - 4) / 4);
    let mut total = 0u64;
    for i in 0..in_first_page {
        let size =
            u32_at(bytes, dir + 4 + 4 * i).ok_or("truncated: the stream directory is cut short")?;
        if size == 0xFFFF_FFFF {
            continue;
        }
        if size > len {
            return Err(format!(
                "stream {i} claims {size} bytes, more than the whole file ({len})"
            ));
        }
        total += size;
    }
    if total > len {
        return Err(format!(
            "its streams claim {total} bytes together, more than the whole file ({len}): pages are listed more than once"
        ));
    }
    Ok(())
}
