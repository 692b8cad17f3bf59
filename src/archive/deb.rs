//! Debian packages (`.deb`, and Ubuntu's `.ddeb` debug-symbol packages): an `ar`
//! archive whose `data.tar` member, compressed or not, holds the files installed.

use std::io::{Read, Seek, SeekFrom};

use super::{Budget, Packing, Sink, Source, tar};

/// Longest member name read: Debian's are `debian-binary`, `control.tar.*` and
/// `data.tar.*`. A BSD long name (`#1/N`) claiming more is no package's.
const MAX_NAME: u64 = 256;

/// Members looked at before giving up on finding `data.tar`: a package has three.
const MAX_MEMBERS: usize = 64;

/// Takes the members of the package `source`'s `data.tar`.
pub(super) fn read(source: Source, budget: &Budget, sink: &mut Sink) -> Result<(), String> {
    let mut members = Members {
        source: source.clone(),
        at: 8,
    };
    for _ in 0..MAX_MEMBERS {
        let Some((name, offset, size)) = members.next()? else {
            break;
        };
        let Some(suffix) = name.strip_prefix(b"data.tar") else {
            continue;
        };
        if offset.saturating_add(size) > source.len() {
            return Err("its data.tar member runs past the end of the file: truncated?".into());
        }
        let data = source.range(offset, size);
        let packing = match suffix {
            b"" => Packing::Plain,
            b".gz" => Packing::Gzip,
            b".xz" => Packing::Xz,
            b".zst" => Packing::Zstd,
            b".bz2" => Packing::Bzip2,
            other => {
                return Err(format!(
                    "its data member data.tar{} is compressed in a way dumpsyms does not read",
                    String::from_utf8_lossy(other)
                ));
            }
        };
        return tar::read(data, packing, budget, sink);
    }
    Err("no data.tar member: a Debian package's files are in it".to_string())
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
    fn next(&mut self) -> Result<Option<(Vec<u8>, u64, u64)>, String> {
        let bad = |why: String| format!("not a readable Debian package: {why}");
        if self.at >= self.source.len() {
            return Ok(None);
        }
        let mut header = [0u8; 60];
        self.source
            .seek(SeekFrom::Start(self.at))
            .and_then(|_| self.source.read_exact(&mut header))
            .map_err(|e| bad(format!("the member header at {}: {e}", self.at)))?;
        if &header[58..60] != b"`\n" {
            return Err(bad(format!("no member header at {}", self.at)));
        }
        let size = std::str::from_utf8(&header[48..58])
            .ok()
            .and_then(|t| t.trim().parse::<u64>().ok())
            .ok_or_else(|| bad(format!("the member size at {} is not a number", self.at)))?;
        let mut data = self.at + 60;
        let raw = &header[..16];
        let name = if let Some(len) = raw.strip_prefix(b"#1/") {
            let len = std::str::from_utf8(len)
                .ok()
                .and_then(|t| t.trim().parse::<u64>().ok())
                .ok_or_else(|| bad(format!("the long name at {} has no length", self.at)))?;
            if len > MAX_NAME || len > size {
                return Err(bad(format!(
                    "the member at {} claims a {len}-byte name (at most {MAX_NAME})",
                    self.at
                )));
            }
            let mut name = vec![0u8; len as usize];
            self.source
                .read_exact(&mut name)
                .map_err(|e| bad(format!("the long name at {}: {e}", self.at)))?;
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
