//! RPM packages (Fedora, RHEL, openSUSE, Mageia, and their `-debuginfo` packages): a
//! lead, a signature header and a header, then the payload, a cpio archive compressed as
//! the header's `PAYLOADCOMPRESSOR` says.
//!
//! Hand-written: the `rpm` crate reads every header entry into memory and pulls in
//! signature checking; a store run needs two strings of the header and where it ends.

use std::io::{self, Read, Seek, SeekFrom};

use super::{Budget, Counted, Packing, Sink, Source, cpio};

const LEAD: u64 = 96;
const LEAD_MAGIC: [u8; 4] = [0xED, 0xAB, 0xEE, 0xDB];
const HEADER_MAGIC: [u8; 4] = [0x8E, 0xAD, 0xE8, 0x01];

/// rpm's own bounds on a header (`hdrchkTags`, `hdrchkData`): more entries or a larger
/// store is no package's.
const MAX_ENTRIES: u32 = 0xFFFF;
const MAX_STORE: u32 = 0x0FFF_FFFF;

const TAG_PAYLOAD_FORMAT: u32 = 1124;
const TAG_PAYLOAD_COMPRESSOR: u32 = 1125;
const TYPE_STRING: u32 = 6;

/// Whether `head` starts like an RPM package (its lead's magic).
pub(super) fn starts_like_rpm(head: &[u8]) -> bool {
    head.starts_with(&LEAD_MAGIC)
}

/// Why a package's payload is not read to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RpmError {
    #[error("not a readable RPM package: {0}")]
    NotRpm(#[source] LeadError),
    /// The payload's format, as it may be shown.
    #[error("its payload is a {0} archive: dumpsyms reads cpio payloads")]
    Format(String),
    /// The payload's compressor, as it may be shown.
    #[error("its payload is compressed with {0}, which dumpsyms does not read")]
    Compressor(String),
    #[error("its payload: {0}")]
    Decompress(#[source] io::Error),
    #[error("its payload: {0}")]
    Payload(#[source] cpio::CpioError),
}

/// Why a package's lead or headers cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LeadError {
    #[error("its lead: {0}")]
    Lead(#[source] io::Error),
    #[error("no RPM lead")]
    NoLead,
    #[error("its signature {0}")]
    Signature(#[source] HeaderError),
    #[error("its header {0}")]
    Header(#[source] HeaderError),
    #[error(transparent)]
    Tag(#[from] TagError),
}

/// Why a header (the signature or the package's) cannot be read, by where it starts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HeaderError {
    #[error("at byte {at}: {source}")]
    Read {
        at: u64,
        #[source]
        source: io::Error,
    },
    #[error("at byte {0}: no header magic")]
    Magic(u64),
    #[error(
        "at byte {at} claims {count} entries and {store} bytes (at most {MAX_ENTRIES} and {MAX_STORE})"
    )]
    Claims { at: u64, count: u32, store: u32 },
    #[error("at byte {0} runs past the end of the file: truncated?")]
    PastEnd(u64),
}

/// Why a header's string entry cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TagError {
    #[error("its header's tag {0} is no string in its store")]
    NotInStore(u32),
    #[error("its header's tag {tag}: {source}")]
    Read {
        tag: u32,
        #[source]
        source: io::Error,
    },
    #[error("its header's tag {tag} is no string of at most {max} bytes")]
    Unended { tag: u32, max: u64 },
}

/// Takes the members of the package `source`'s payload.
pub(super) fn read(mut source: Source, budget: &Budget, sink: &mut Sink) -> Result<(), RpmError> {
    let bad = RpmError::NotRpm;
    let mut lead = [0u8; LEAD as usize];
    source
        .read_exact(&mut lead)
        .map_err(|e| bad(LeadError::Lead(e)))?;
    if lead[..4] != LEAD_MAGIC {
        return Err(bad(LeadError::NoLead));
    }
    let signature = Header::at(&mut source, LEAD).map_err(|e| bad(LeadError::Signature(e)))?;
    // The signature is padded to eight bytes; the header is not.
    let header_at = (LEAD + signature.len).next_multiple_of(8);
    let header = Header::at(&mut source, header_at).map_err(|e| bad(LeadError::Header(e)))?;
    let payload_at = header_at + header.len;
    let format = header
        .string(&mut source, TAG_PAYLOAD_FORMAT)
        .map_err(|e| bad(e.into()))?;
    // Without the tag, the payload is cpio (rpm before 4.4 wrote none).
    if let Some(format) = format.filter(|f| f != "cpio") {
        return Err(RpmError::Format(
            crate::untrusted::name_for_output(&format).to_string(),
        ));
    }
    let compressor = header
        .string(&mut source, TAG_PAYLOAD_COMPRESSOR)
        .map_err(|e| bad(e.into()))?;
    // Without the tag, gzip: rpm's default.
    let packing = match compressor.as_deref().unwrap_or("gzip") {
        "gzip" => Packing::Gzip,
        "xz" => Packing::Xz,
        "zstd" => Packing::Zstd,
        "bzip2" => Packing::Bzip2,
        "lzma" => Packing::Lzma,
        "identity" => Packing::Plain,
        other => {
            return Err(RpmError::Compressor(
                crate::untrusted::name_for_output(other).to_string(),
            ));
        }
    };
    let payload = source.range(payload_at, source.len().saturating_sub(payload_at));
    let stream = super::tar::decompressed(payload, packing).map_err(RpmError::Decompress)?;
    cpio::read(
        Counted {
            inner: stream,
            budget,
        },
        sink,
    )
    .map_err(RpmError::Payload)
}

/// One of a package's two headers: where its store begins, its entries, and its length.
struct Header {
    /// Where the store of the header begins, in the file.
    store_at: u64,
    store_len: u32,
    /// `(tag, type, offset, count)` of each entry.
    entries: Vec<[u32; 4]>,
    /// The header's length in the file, from its magic to the end of its store.
    len: u64,
}

impl Header {
    fn at(source: &mut Source, at: u64) -> Result<Header, HeaderError> {
        let mut intro = [0u8; 16];
        source
            .seek(SeekFrom::Start(at))
            .and_then(|_| source.read_exact(&mut intro))
            .map_err(|source| HeaderError::Read { at, source })?;
        if intro[..4] != HEADER_MAGIC {
            return Err(HeaderError::Magic(at));
        }
        let word = |i: usize| u32::from_be_bytes(intro[i..i + 4].try_into().unwrap());
        let (count, store_len) = (word(8), word(12));
        if count > MAX_ENTRIES || store_len > MAX_STORE {
            return Err(HeaderError::Claims {
                at,
                count,
                store: store_len,
            });
        }
        let len = 16 + 16 * u64::from(count) + u64::from(store_len);
        if at.saturating_add(len) > source.len() {
            return Err(HeaderError::PastEnd(at));
        }
        let mut raw = vec![0u8; 16 * count as usize];
        source
            .read_exact(&mut raw)
            .map_err(|source| HeaderError::Read { at, source })?;
        let entries = raw
            .chunks_exact(16)
            .map(|e| {
                std::array::from_fn(|i| u32::from_be_bytes(e[4 * i..4 * i + 4].try_into().unwrap()))
            })
            .collect();
        Ok(Header {
            store_at: at + 16 + 16 * u64::from(count),
            store_len,
            entries,
            len,
        })
    }

    /// The string the entry `tag` holds, if the header has one.
    fn string(&self, source: &mut Source, tag: u32) -> Result<Option<String>, TagError> {
        /// Longer than any payload format or compressor name.
        const MAX: u64 = 64;
        let Some(&[_, kind, offset, _]) = self.entries.iter().find(|e| e[0] == tag) else {
            return Ok(None);
        };
        if kind != TYPE_STRING || offset >= self.store_len {
            return Err(TagError::NotInStore(tag));
        }
        let mut text = Vec::new();
        let left = u64::from(self.store_len - offset).min(MAX);
        source
            .seek(SeekFrom::Start(self.store_at + u64::from(offset)))
            .and_then(|_| (&mut *source).take(left).read_to_end(&mut text))
            .map_err(|source| TagError::Read { tag, source })?;
        let end = text
            .iter()
            .position(|&b| b == 0)
            .ok_or(TagError::Unended { tag, max: MAX })?;
        text.truncate(end);
        Ok(Some(String::from_utf8_lossy(&text).into_owned()))
    }
}
