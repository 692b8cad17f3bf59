//! Lists of missing symbols (`--missing FILE`): the modules crash reports named and no
//! store had, as Socorro's and Tecken's missing-symbols CSV gives them (header
//! `debug_file,debug_id,code_file,code_id`, further columns ignored) or as plain lines of
//! those four fields separated by white space.

use std::path::Path;

use crate::batch::byid::ById;
use crate::error::ArgumentError;

/// One row of a list that cannot be used, by its line number (from 1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRow {
    /// Its line number, from 1.
    pub line: usize,
    /// What is wrong with it.
    pub problem: RowProblem,
}

/// What is wrong with a row of a list. New problems may be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RowProblem {
    /// A header row that lacks one of the four columns.
    #[error("the header has no {0} column")]
    NoColumn(&'static str),
    /// A row with no module name.
    #[error("no debug_file")]
    NoDebugFile,
    /// A row with neither id: nothing to fetch it by.
    #[error("{0}: neither a debug id nor a code id")]
    NoId(String),
    /// An id that is not one word.
    #[error(transparent)]
    BadId(#[from] ArgumentError),
}

/// Why a list cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ListError {
    /// It cannot be opened or read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The list.
        path: std::path::PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// A device, a FIFO or a directory.
    #[error("{}: not a regular file (a list is read from a file)", .0.display())]
    NotAFile(std::path::PathBuf),
    /// Over 128 MiB (`MAX_LIST`).
    #[error("{}: {len} bytes, over the limit of {MAX_LIST} bytes for a list", path.display())]
    TooLarge {
        /// The list.
        path: std::path::PathBuf,
        /// Its size.
        len: u64,
    },
}

/// The largest list read: about 1.8M rows of Socorro's (a day's list holds thousands).
pub(crate) const MAX_LIST: u64 = 128 << 20;

/// The modules of the list at `path`, in its order, each once; and the rows that could
/// not be read. The list is a regular file of at most 128 MiB (a device or a FIFO is
/// refused at once, as tree inputs are, rather than read forever).
pub fn read(path: &Path) -> Result<(Vec<ById>, Vec<BadRow>), ListError> {
    Ok(parse(&text(path)?))
}

/// The text of the list at `path`.
fn text(path: &Path) -> Result<String, ListError> {
    let fail = |source| ListError::Unreadable {
        path: path.to_path_buf(),
        source,
    };
    let file = crate::load::open_nonblocking(path).map_err(fail)?;
    let meta = file.metadata().map_err(fail)?;
    if !meta.is_file() {
        return Err(ListError::NotAFile(path.to_path_buf()));
    }
    if meta.len() > MAX_LIST {
        return Err(ListError::TooLarge {
            path: path.to_path_buf(),
            len: meta.len(),
        });
    }
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::Read::take(file, MAX_LIST), &mut text)
        .map_err(fail)?;
    Ok(text)
}

/// The modules of a list, in its order, each once; and the rows that could not be read.
pub(crate) fn parse(text: &str) -> (Vec<ById>, Vec<BadRow>) {
    let mut rows = Vec::new();
    let mut bad = Vec::new();
    let mut columns: Option<Columns> = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let fields: Vec<&str> = if line.contains(',') {
            line.split(',').map(str::trim).collect()
        } else {
            line.split_whitespace().collect()
        };
        if columns.is_none() && fields.iter().any(|f| f.eq_ignore_ascii_case("debug_file")) {
            match Columns::from_header(&fields) {
                Ok(c) => columns = Some(c),
                Err(problem) => bad.push(BadRow {
                    line: n + 1,
                    problem,
                }),
            }
            continue;
        }
        match columns.unwrap_or_default().row(&fields) {
            Ok(row) => rows.push(row),
            Err(problem) => bad.push(BadRow {
                line: n + 1,
                problem,
            }),
        }
    }
    (first_of_each(rows), bad)
}

/// `rows` without repeats, in order: a row is kept where it first appears.
fn first_of_each(rows: Vec<ById>) -> Vec<ById> {
    let mut seen = std::collections::HashSet::with_capacity(rows.len());
    let first: Vec<bool> = rows.iter().map(|row| seen.insert(row)).collect();
    drop(seen);
    rows.into_iter()
        .zip(first)
        .filter_map(|(row, first)| first.then_some(row))
        .collect()
}

/// Where the four fields are: a header may order them otherwise and add others.
#[derive(Debug, Clone, Copy)]
struct Columns {
    debug_file: usize,
    debug_id: usize,
    code_file: usize,
    code_id: usize,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            debug_file: 0,
            debug_id: 1,
            code_file: 2,
            code_id: 3,
        }
    }
}

impl Columns {
    fn from_header(fields: &[&str]) -> Result<Columns, RowProblem> {
        let at = |name: &'static str| {
            fields
                .iter()
                .position(|f| f.eq_ignore_ascii_case(name))
                .ok_or(RowProblem::NoColumn(name))
        };
        Ok(Columns {
            debug_file: at("debug_file")?,
            debug_id: at("debug_id")?,
            code_file: at("code_file")?,
            code_id: at("code_id")?,
        })
    }

    fn row(&self, fields: &[&str]) -> Result<ById, RowProblem> {
        let get = |i: usize| {
            fields
                .get(i)
                .map(|f| f.trim_matches('"').trim())
                .filter(|f| !f.is_empty())
                .map(str::to_string)
        };
        let debug_file = get(self.debug_file).ok_or(RowProblem::NoDebugFile)?;
        let row = ById {
            file: debug_file,
            debug_id: get(self.debug_id).map(|f| f.parse()).transpose()?,
            code_file: get(self.code_file),
            code_id: get(self.code_id).map(|f| f.parse()).transpose()?,
        };
        if row.debug_id.is_none() && row.code_id.is_none() {
            return Err(RowProblem::NoId(row.file));
        }
        Ok(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_socorros_csv_and_plain_lines() {
        let csv = "debug_file,debug_id,code_file,code_id,count\n\
                   ntdll.pdb,1EB9FACB04EA273BB4BA52C8D8A7D7DD1,ntdll.dll,5FC0EB4F9A000,12\n\
                   libc.so.6,9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40,libc.so.6,4aea7096a43bf4e6e9f3a6c4d7e1a9b4,3\n\
                   ntdll.pdb,1EB9FACB04EA273BB4BA52C8D8A7D7DD1,ntdll.dll,5FC0EB4F9A000,1\n\
                   ,,,\n";
        let (rows, bad) = parse(csv);
        assert_eq!(rows.len(), 2);
        assert_eq!(rows[0].file, "ntdll.pdb");
        assert_eq!(rows[0].code_file.as_deref(), Some("ntdll.dll"));
        assert_eq!(
            rows[1].code_id.as_ref().map(AsRef::as_ref),
            Some("4aea7096a43bf4e6e9f3a6c4d7e1a9b4")
        );
        assert_eq!(
            bad,
            vec![BadRow {
                line: 5,
                problem: RowProblem::NoDebugFile
            }]
        );

        let plain =
            "# from a crash\nxul.pdb 44E4EC8C2F41492B9369D6B9A059577C2 xul.dll 5E3A2B1C7D000\n";
        let (rows, bad) = parse(plain);
        assert!(bad.is_empty());
        assert_eq!(
            rows[0].debug_id.as_ref().map(AsRef::as_ref),
            Some("44E4EC8C2F41492B9369D6B9A059577C2")
        );

        let reordered =
            "code_id,debug_file,debug_id,code_file\n5E3A2B1C7D000,xul.pdb,44E4,xul.dll\n";
        assert_eq!(
            parse(reordered).0[0].code_id.as_ref().map(AsRef::as_ref),
            Some("5E3A2B1C7D000")
        );
        assert_eq!(
            parse("debug_file,code_id\nx,y\n").1[0].problem,
            RowProblem::NoColumn("debug_id")
        );
        // A quoted field may hold a space; an id cannot, and the row says why.
        let spaced = "debug_file,debug_id,code_file,code_id\nxul.pdb,\"44E4 EC8C\",,\n";
        let (rows, bad) = parse(spaced);
        assert!(rows.is_empty());
        assert_eq!(
            bad[0].problem.to_string(),
            "\"44E4 EC8C\" is not a debug id (one word, no spaces)"
        );
        assert_eq!(
            parse("xul.pdb\n").1[0].problem,
            RowProblem::NoId("xul.pdb".into())
        );
    }
}
