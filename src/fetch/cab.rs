//! Symbol servers' compressed answers: `<name>/<id>/<name with its last letter
//! replaced by _>` (`ntdll.pd_`) is a cabinet holding the one file, compressed with MSZIP
//! or LZX (the `cab` crate decodes both).

use std::io::{Read, Seek, Write};
use std::path::Path;

use super::http::Verify;
use crate::contain::Panicked;
use crate::error::NotTheFile;

/// Why a server's cabinet gives no file: what it holds instead, or where it broke.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CabError {
    #[error("{0}")]
    Open(#[source] std::io::Error),
    #[error("not a cabinet file: {0}")]
    NotCabinet(#[source] std::io::Error),
    #[error("the cabinet holds {count} files and none is {name}")]
    NoneNamed { count: usize, name: String },
    #[error("the cabinet's {inner} is {size} bytes, over the limit of {max} bytes")]
    TooLarge { inner: String, size: u64, max: u64 },
    #[error("cannot read {inner} in the cabinet: {source}")]
    Entry {
        inner: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the cabinet is damaged: {0}")]
    Damaged(#[source] std::io::Error),
    #[error("the cabinet's {inner} inflates to {copied}{} bytes where it says {size}", if copied > size { "+" } else { "" })]
    Size {
        inner: String,
        copied: u64,
        size: u64,
    },
    #[error("cannot cache it in {}: {source}", target.display())]
    Cache {
        target: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    NotTheFile(#[from] NotTheFile),
    #[error(transparent)]
    Panicked(#[from] Panicked),
}

/// The cabinet name a server stores `name` under: its last character replaced by `_`.
pub(crate) fn compressed_name(name: &str) -> Option<String> {
    let last = name.char_indices().next_back()?.0;
    (last > 0).then(|| format!("{}_", &name[..last]))
}

/// Extracts the file of the cabinet at `cab` into `target`, atomically and only once
/// `verify` accepts it (see [`inflate_one`] for what is refused).
pub(crate) fn extract(
    cab: &Path,
    name: &str,
    target: &Path,
    max_size: u64,
    verify: Verify,
) -> Result<(), CabError> {
    let file = std::fs::File::open(cab).map_err(CabError::Open)?;
    let cache = |source| CabError::Cache {
        target: target.to_path_buf(),
        source,
    };
    let mut out = crate::output::AtomicFile::create(target).map_err(cache)?;
    inflate_one(std::io::BufReader::new(file), name, max_size, out.writer())?;
    out.flush().map_err(cache)?;
    verify(out.written_path())?;
    out.commit().map_err(cache)
}

/// Writes the file a cabinet holds to `out`: its one file, or the one named `name` (any
/// case). At most `max_size` bytes by the size its entry states, and no more than that
/// size is read: a decompression bomb either admits its size and is refused, or is cut
/// at the size it admits to (and then fails the check of what it holds). The size
/// written is the size stated.
pub(crate) fn inflate_one<R: Read + Seek>(
    reader: R,
    name: &str,
    max_size: u64,
    out: &mut dyn Write,
) -> Result<u64, CabError> {
    // The cab crate indexes its tables with counts read from the file, and a damaged
    // cabinet can panic inside it (an index out of bounds, found by the cabinet fuzz
    // target): contained, that is an error like any other damage.
    crate::contain::contained_as("the cabinet reader", || {
        inflate(reader, name, max_size, out)
    })?
}

fn inflate<R: Read + Seek>(
    reader: R,
    name: &str,
    max_size: u64,
    out: &mut dyn Write,
) -> Result<u64, CabError> {
    let mut cabinet = cab::Cabinet::new(reader).map_err(CabError::NotCabinet)?;
    let entries: Vec<(String, u64)> = cabinet
        .folder_entries()
        .flat_map(|folder| folder.file_entries())
        .map(|f| (f.name().to_string(), u64::from(f.uncompressed_size())))
        .collect();
    let (inner, size) = match entries.as_slice() {
        [one] => one.clone(),
        many => many
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .cloned()
            .ok_or_else(|| CabError::NoneNamed {
                count: many.len(),
                name: name.to_string(),
            })?,
    };
    if size > max_size {
        return Err(CabError::TooLarge {
            inner,
            size,
            max: max_size,
        });
    }
    let reader = cabinet
        .read_file(&inner)
        .map_err(|source| CabError::Entry {
            inner: inner.clone(),
            source,
        })?;
    // The crate stops at the entry's size; one byte more would tell if it did not.
    let copied = std::io::copy(&mut reader.take(size + 1), out).map_err(CabError::Damaged)?;
    if copied != size {
        return Err(CabError::Size {
            inner,
            copied,
            size,
        });
    }
    Ok(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_names_replace_the_last_letter() {
        assert_eq!(compressed_name("ntdll.pdb").as_deref(), Some("ntdll.pd_"));
        assert_eq!(compressed_name("app.exe").as_deref(), Some("app.ex_"));
        assert_eq!(compressed_name("x"), None);
    }
}

#[cfg(test)]
mod damaged {
    /// Found by the cabinet fuzz target: a folder table the cab crate indexes past its
    /// end (it panicked with "index out of bounds: the len is 3 but the index is 3").
    #[test]
    fn a_cabinet_that_breaks_the_cab_crate_is_an_error() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/regress/cab-folder-index.pd_");
        let data = std::fs::read(path).unwrap();
        let mut out = Vec::new();
        let r = super::inflate_one(
            std::io::Cursor::new(&data[..]),
            "app.pdb",
            1 << 20,
            &mut out,
        );
        let err = r.unwrap_err();
        assert!(matches!(err, super::CabError::Panicked(_)), "{err:?}");
        assert!(
            err.to_string()
                .contains("the cabinet reader failed on damaged data"),
            "{err}"
        );
    }
}
