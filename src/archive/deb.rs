//! Debian packages (`.deb`, and Ubuntu's `.ddeb` debug-symbol packages): an `ar`
//! archive whose `data.tar` member, compressed or not, holds the files installed.

use object::read::archive::ArchiveFile;

use super::{Budget, Packing, Sink, Source, tar};

/// Takes the members of the package `source`'s `data.tar`.
pub(super) fn read(source: Source, budget: &Budget, sink: &mut Sink) -> Result<(), String> {
    // Only the member headers are read through the cache; the data member is streamed.
    let cache = object::ReadCache::new(source.clone());
    let ar =
        ArchiveFile::parse(&cache).map_err(|e| format!("not a readable Debian package: {e}"))?;
    for member in ar.members() {
        let member = member.map_err(|e| format!("not a readable Debian package: {e}"))?;
        let name = member.name();
        let Some(suffix) = name.strip_prefix(b"data.tar") else {
            continue;
        };
        let (offset, size) = member.file_range();
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
