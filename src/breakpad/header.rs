//! The records at the start of a symbol file that name its module, read the same way
//! wherever a symbol file is looked at: an upload's fields, a download's check, and
//! the reader of [`super::symfile`].

/// The MODULE record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModuleRecord {
    /// The operating system field (`Linux`, `windows`, `mac`, …).
    pub os: String,
    /// The CPU field (`x86_64`, `arm64`, …).
    pub arch: String,
    /// The debug id, as written (33 hex digits, or with hyphens).
    pub id: String,
    /// The module name (the rest of the line: it may hold spaces).
    pub name: String,
}

/// The records at the start of a symbol file that name its module: the `MODULE` record
/// and, when the next line is one, the image name of its `INFO CODE_ID` record. What an
/// upload sends as the module's fields and a download is checked by.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// The `MODULE` record.
    pub module: ModuleRecord,
    /// The image name of the `INFO CODE_ID` record right after it, when there is one.
    pub code_file: Option<String>,
}

/// Why a file has no [`Header`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HeaderError {
    /// It cannot be read.
    #[error(transparent)]
    Unreadable(#[from] std::io::Error),
    /// It does not start with a MODULE record.
    #[error("not a Breakpad symbol file (no MODULE record first)")]
    NoModuleRecord,
}

/// Reads the [`Header`] of the symbol file at `path` from its first 64 KiB.
pub fn read_header(path: &std::path::Path) -> Result<Header, HeaderError> {
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(path).and_then(|f| f.take(64 << 10).read_to_end(&mut head))?;
    header(&head)
}

/// The [`Header`] at the start of `text`.
pub fn header(text: &[u8]) -> Result<Header, HeaderError> {
    let mut lines = text.split(|&b| b == b'\n').map(|l| {
        let l = String::from_utf8_lossy(l);
        l.trim_end_matches(['\r', '\n']).to_string()
    });
    let first = lines.next().unwrap_or_default();
    let fields: Vec<&str> = first.splitn(5, ' ').collect();
    let ["MODULE", os, arch, id, name] = fields[..] else {
        return Err(HeaderError::NoModuleRecord);
    };
    let module = ModuleRecord {
        os: os.into(),
        arch: arch.into(),
        id: id.into(),
        name: name.into(),
    };
    // `INFO CODE_ID <id> <image name>` comes right after MODULE when it is there.
    let code_file = lines
        .next()
        .and_then(|l| {
            let (_, image) = l.strip_prefix("INFO CODE_ID ")?.split_once(' ')?;
            Some(image.to_string())
        })
        .filter(|image| !image.is_empty());
    Ok(Header { module, code_file })
}
