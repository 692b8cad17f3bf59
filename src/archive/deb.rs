//! Debian packages (`.deb`, and Ubuntu's `.ddeb` debug-symbol packages): an `ar`
//! archive whose `data.tar` member, compressed or not, holds the files installed.

use std::io::{Read, Seek, SeekFrom};

use super::{Budget, Packing, Sink, Source, tar};

/// Longest member name read: Debian's are `debian-binary`, `control.tar.*` and
/// `data.tar.*`. A BSD long name (`#1/N`) claiming more is no package's.
const MAX_NAME: u64 = 256;

/// Members looked at before giving up on finding `data.tar`: a package has three.
const MAX_MEMBERS: usize = 64;

/// Why a Debian package's files are not read to their end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DebError {
    #[error("not a readable Debian package: {0}")]
    NotDeb(#[source] MemberError),
    #[error("its data.tar member runs past the end of the file: truncated?")]
    Truncated,
    /// The data member's suffix, after `data.tar`.
    #[error("its data member data.tar{0} is compressed in a way dumpsyms does not read")]
    Packing(String),
    #[error("no data.tar member: a Debian package's files are in it")]
    NoData,
    #[error(transparent)]
    Tar(#[from] tar::TarError),
}

/// Why an `ar` member header cannot be read, by where it starts.
#[derive(Debug, thiserror::Error)]
pub(crate) enum MemberError {
    #[error("the member header at {at}: {source}")]
    Read {
        at: u64,
        #[source]
        source: std::io::Error,
    },
    #[error("no member header at {0}")]
    NoHeader(u64),
    #[error("the member size at {0} is not a number")]
    Size(u64),
    #[error("the long name at {0} has no length")]
    NameLength(u64),
    #[error("the member at {at} claims a {len}-byte name (at most {MAX_NAME})")]
    LongName { at: u64, len: u64 },
    #[error("the long name at {at}: {source}")]
    Name {
        at: u64,
        #[source]
        source: std::io::Error,
    },
}

/// Takes the members of the package `source`'s `data.tar`.
pub(super) fn read(source: Source, budget: &Budget, sink: &mut Sink) -> Result<(), DebError> {
    let mut members = Members {
        source: source.clone(),
        at: 8,
    };
    for _ in 0..MAX_MEMBERS {
        let Some((name, offset, size)) = members.next().map_err(DebError::NotDeb)? else {
            break;
        };
        let Some(suffix) = name.strip_prefix(b"data.tar") else {
            continue;
        };
        if offset.saturating_add(size) > source.len() {
            return Err(DebError::Truncated);
        }
        let data = source.range(offset, size);
        let packing = match suffix {
            b"" => Packing::Plain,
            b".gz" => Packing::Gzip,
            b".xz" => Packing::Xz,
            b".zst" => Packing::Zstd,
            b".bz2" => Packing::Bzip2,
            other => {
                return Err(DebError::Packing(
                    String::from_utf8_lossy(other).into_owned(),
                ));
            }
        };
        return Ok(tar::read(data, packing, budget, sink)?);
    }
    Err(DebError::NoData)
}

/// The `ar` members of a package, read header by header at their positions. Written by
/// hand rather than with `object`'s archive reader: that one reads a BSD long name
/// (`#1/N`) whole, however long it claims to be, through a cache that keeps it (an
/// 8 KB file claiming a 700 MiB name cost 725 MB), and a package needs only the
/// headers' names, offsets and sizes.
struct Members {
    source: Source,
    /// Where the next header starts.
    at: u64,
}

impl Members {
    /// The next member's name, and where its data lies; `None` at the end.
    fn next(&mut self) -> Result<Option<(Vec<u8>, u64, u64)>, MemberError> {
        let at = self.at;
        if self.at >= self.source.len() {
            return Ok(None);
        }
        let mut header = [0u8; 60];
        self.source
            .seek(SeekFrom::Start(self.at))
            .and_then(|_| self.source.read_exact(&mut header))
            .map_err(|source| MemberError::Read { at, source })?;
        if &header[58..60] != b"`\n" {
            return Err(MemberError::NoHeader(at));
        }
        let size = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .ok_or(MemberError::Size(at))?;
        let mut data = self.at + 60;
        let raw = &header[..16];
        let name = if let Some(len) = raw.strip_prefix(b"#1/") {
            let len = std::str::from_utf8(len)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .ok_or(MemberError::NameLength(at))?;
            if len > MAX_NAME || len > size {
                return Err(MemberError::LongName { at, len });
            }
            let mut name = vec![0u8; len as usize];
            self.source
                .read_exact(&mut name)
                .map_err(|source| MemberError::Name { at, source })?;
            while name.last() == Some(&0) {
                name.pop();
            }
            data += len;
            name
        } else {
            let end = raw.iter().rposition(|&b| b != b' ').map_or(0, |i| i + 1);
            let name = &raw[..end];
            name.strip_suffix(b"/").unwrap_or(name).to_vec()
        };
        let size_of_data = size - (data - self.at - 60);
        // Members start at even offsets.
        self.at = (self.at + 60).saturating_add(size).saturating_add(size & 1);
        Ok(Some((name, data, size_of_data)))
    }
}
