//! The library's error type: which file, and what kind of problem it has.

use std::path::{Path, PathBuf};

/// What went wrong with an input. New kinds may be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file could not be opened or read.
    #[error("cannot read file: {0}")]
    Io(std::io::Error),
    /// The bytes are not an object file this tool understands.
    #[error("not an object file: {0}")]
    NotObject(String),
    /// A valid object file of a kind that is not supported.
    #[error("unsupported file: {0}")]
    Unsupported(String),
    /// The file is damaged beyond what can be salvaged.
    #[error("corrupt file: {0}")]
    Corrupt(String),
    /// No worker threads could be started to dump it.
    #[error("{0}")]
    Threads(String),
}

/// An error tied to the input file it concerns.
#[derive(Debug, thiserror::Error)]
#[error("{}: {kind}", path.display())]
pub struct Error {
    /// The input file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl Error {
    pub(crate) fn new(path: &Path, kind: ErrorKind) -> Self {
        Error {
            path: path.to_path_buf(),
            kind,
        }
    }
}

/// Problems that did not stop the dump but lost some information.
///
/// Kept as plain strings in the order they were found; parallel stages collect their own
/// and are merged in input order so that the list is the same on every run.
#[derive(Debug, Default, Clone)]
pub struct Warnings(pub Vec<String>);

impl Warnings {
    /// Records one warning.
    pub fn push(&mut self, message: impl Into<String>) {
        self.0.push(message.into());
    }

    /// Appends another list, keeping its order.
    pub fn extend(&mut self, other: Warnings) {
        self.0.extend(other.0);
    }
}
