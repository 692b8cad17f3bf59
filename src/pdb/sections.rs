//! The PDB's address map, from the image's section headers the PDB stores.
//!
//! Without them `pdb2` makes sections up from the DBI section map, laid end to end from
//! 0x1000 without the image's alignment: in a real image every section after the first
//! is then misplaced (the x86_64 fixture's `.rdata` would be at 0x17ac; it is at
//! 0x2000), and each entry with an offset is printed to stderr by the crate. A PDB
//! without section headers (an NGEN `.ni.pdb`, or one whose stream was lost) gets an
//! empty map instead, as `pdb` 0.8 gave it: nothing is placed, and the caller says so.

use super::Pdb;
use super::msf::u32_at;

/// The DBI stream's fixed number.
const DBI: u16 = 3;

/// The fixed part of the DBI header (`NewDBIHdr`) before its substreams.
const DBI_HEADER: u64 = 64;

/// The section headers' place among the optional debug header's stream numbers (after
/// FPO, exception, fixup, OMAP to and from source).
const SECTION_HEADERS_SLOT: u64 = 5;

/// Whether the PDB stores its image's section headers. A DBI stream this cannot read
/// counts as storing them: the crate then reads it and says what is wrong.
pub(crate) fn stored(pdb: &mut Pdb<'_>) -> bool {
    has_section_headers(pdb) != Some(false)
}

/// The address map; empty when the section headers are not [`stored`] (see above).
pub(crate) fn address_map<'s>(
    pdb: &mut Pdb<'s>,
    stored: bool,
) -> Result<pdb2::AddressMap<'s>, pdb2::Error> {
    match stored {
        true => pdb.address_map(),
        false => Ok(pdb2::AddressMap::default()),
    }
}

/// Whether the DBI stream names a section-headers stream that exists; `None` when the
/// DBI stream cannot be read this far.
fn has_section_headers(pdb: &mut Pdb<'_>) -> Option<bool> {
    let index = {
        let dbi = pdb.raw_stream(pdb2::StreamIndex(DBI)).ok()??;
        section_headers_index(dbi.as_slice())?
    };
    if index == u16::MAX {
        return Some(false);
    }
    Some(pdb.raw_stream(pdb2::StreamIndex(index)).ok()?.is_some())
}

/// The stream number the DBI stream's optional debug header gives the section headers
/// (`0xFFFF`: none, as is a header too short to hold it).
fn section_headers_index(dbi: &[u8]) -> Option<u16> {
    // Module info, section contributions, section map, file info, type server map and
    // the EC substream come before the optional debug header, in that order.
    let before: u64 = [24, 28, 32, 36, 40, 52]
        .into_iter()
        .map(|at| u32_at(dbi, at))
        .sum::<Option<u64>>()?;
    let header_len = u32_at(dbi, 48)?;
    let slot = SECTION_HEADERS_SLOT * 2;
    if header_len < slot + 2 {
        return Some(u16::MAX);
    }
    let at = usize::try_from(DBI_HEADER + before + slot).ok()?;
    let b = dbi.get(at..at.checked_add(2)?)?;
    Some(u16::from_le_bytes([b[0], b[1]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A DBI stream of the fixed header, `sizes` bytes of substreams and an optional
    /// debug header of `indexes`.
    fn dbi(sizes: [u32; 6], indexes: &[u16]) -> Vec<u8> {
        let mut out = vec![0u8; DBI_HEADER as usize];
        for (at, size) in [24, 28, 32, 36, 40, 52].into_iter().zip(sizes) {
            out[at..at + 4].copy_from_slice(&size.to_le_bytes());
        }
        out[48..52].copy_from_slice(&(indexes.len() as u32 * 2).to_le_bytes());
        out.resize(out.len() + sizes.iter().sum::<u32>() as usize, 0xAA);
        out.extend(indexes.iter().flat_map(|i| i.to_le_bytes()));
        out
    }

    #[test]
    fn the_section_headers_index_is_read_after_the_substreams() {
        let indexes = [u16::MAX, 7, 8, u16::MAX, u16::MAX, 10, 11];
        assert_eq!(
            section_headers_index(&dbi([5, 3, 2, 1, 0, 4], &indexes)),
            Some(10)
        );
        // Too short a header to name them: none.
        assert_eq!(
            section_headers_index(&dbi([5, 3, 2, 1, 0, 4], &indexes[..4])),
            Some(u16::MAX)
        );
        // Sizes that run past the stream, or a stream cut inside the header.
        let mut past = dbi([5, 3, 2, 1, 0, 4], &indexes);
        past[24..28].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(section_headers_index(&past), None);
        assert_eq!(section_headers_index(&past[..40]), None);
    }
}
