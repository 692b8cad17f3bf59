//! The library's error type: which file, and what kind of problem it has.

use std::path::{Path, PathBuf};

/// What went wrong with an input. New kinds may be added.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The file could not be opened or read.
    #[error("cannot read file: {0}")]
    Io(#[source] std::io::Error),
    /// The bytes are not an object file this tool understands.
    #[error("not an object file: {0}")]
    NotObject(#[source] Reason),
    /// A valid object file of a kind that is not supported.
    #[error("unsupported file: {0}")]
    Unsupported(#[source] Reason),
    /// The file is damaged beyond what can be salvaged.
    #[error("corrupt file: {0}")]
    Corrupt(#[source] Reason),
    /// The container's headers (ELF, Mach-O, PE) do not parse. The message repeats the
    /// source's words: the CLI prints one line, not a chain.
    #[error("corrupt file: bad headers ({source}); is the file truncated?")]
    Headers {
        #[source]
        /// What the object-file parser found wrong (boxed: the parser's own error type
        /// is not part of this crate's API).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// A PDB stream that is needed cannot be read.
    #[error("corrupt file: PDB {stream}: {detail}")]
    PdbStream {
        /// Which stream (or table), in words.
        stream: String,
        /// What is wrong, in this tool's words (a truncated stream says so).
        detail: String,
        #[source]
        /// What the PDB parser said (boxed: its error type is not part of this
        /// crate's API).
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// No worker threads could be started to dump it.
    #[error("cannot start worker threads: {0}")]
    Threads(#[source] std::io::Error),
}

/// Why a file found or fetched for a module is not that module's: what a symbol
/// server, a debuginfod server or a cache must give is checked against the id asked
/// for.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotTheFile {
    /// It cannot be opened or read as what it should be.
    #[error("{0}")]
    Unreadable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// It is not that kind of file at all (`what`: "a PE image").
    #[error("not {0}")]
    NotA(&'static str),
    /// Another build's: `what` names the id read (`the file's build ID`), `have` is it.
    #[error("wrong build: {what} is {have}")]
    WrongBuild { what: &'static str, have: String },
    /// An ELF file without the note a debuginfod server is asked by.
    #[error("the file has no build ID")]
    NoBuildId,
}

/// Why a reader gave up on a file: the reader's own error type where it has one (what
/// it expected, and where), which `downcast_ref` reaches, else its words. The messages
/// repeat it: the command prints one line, not a chain.
pub type Reason = Box<dyn std::error::Error + Send + Sync>;

/// An error tied to the input file it concerns. Its `source()` is the underlying error
/// (io, object, pdb) where there is one.
#[derive(Debug)]
pub struct Error {
    /// The input file.
    pub path: PathBuf,
    /// What is wrong with it.
    pub kind: ErrorKind,
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.kind)
    }
}

impl std::error::Error for Error {
    // The kind's own source, not the kind: its words are already in this error's.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.kind)
    }
}

impl Error {
    pub(crate) fn new(path: &Path, kind: ErrorKind) -> Self {
        Error {
            path: path.to_path_buf(),
            kind,
        }
    }
}

/// What part of an input a [`Warning`] is about. New kinds may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum WarningKind {
    /// The container: headers, the section table, a section's bytes or compression.
    Container,
    /// The symbol tables, a PE's exports, MiniDebugInfo.
    Symbols,
    /// DWARF: a compilation unit, a line program, split units and their files.
    Dwarf,
    /// A PDB stream: module symbols, lines, inline sites, publics, frame data.
    Pdb,
    /// Unwind tables: `.eh_frame`, `.debug_frame`, `.ARM.exidx`, `__unwind_info`,
    /// `.pdata`.
    Unwind,
    /// A companion file (separate debug file, dSYM, PDB, `.dwo`/`.dwp`, dwz's alternate
    /// file) that was found but is damaged, of another build, or missing.
    Companion,
    /// Names left mangled or records left out for their size.
    Names,
    /// Records left out of the output, which would pass the size bound.
    Output,
    /// A symbol server or debuginfod server that could not be used (down, failing):
    /// about the network, not the file.
    Server,
    /// A source file a `--mapping-*` template needs (for its digest) that cannot be
    /// read: its FILE path is written unmapped.
    SourceLink,
    /// A crash report being symbolized: a line too long to read, an on-device trace's
    /// damaged parts, a text that looked like JSON and was not.
    Report,
    /// A module of a crash report that cannot be looked up as asked: not found, found by
    /// name alone (a guess, said as such), ambiguous, refused by `--verified-only`, or
    /// an address nothing places in it.
    Lookup,
}

/// One problem that did not stop the dump but lost some information.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Warning {
    /// What the warning is about (its area), for filtering and counting.
    pub kind: WarningKind,
    /// The section, stream or file it is about, when it is about one.
    pub scope: Option<String>,
    /// The offset in [`Warning::scope`] (or the address) it is about, when known.
    pub offset: Option<u64>,
    /// The whole message, as printed: it names the scope and offset itself.
    pub message: String,
}

impl Warning {
    /// A warning of `kind` about no particular place.
    pub fn new(kind: WarningKind, message: impl Into<String>) -> Warning {
        Warning {
            kind,
            scope: None,
            offset: None,
            message: message.into(),
        }
    }

    /// The same warning, about `scope` (a section, stream or file).
    pub(crate) fn on(mut self, scope: impl Into<String>) -> Warning {
        self.scope = Some(scope.into());
        self
    }

    /// The same warning, about `offset` in its scope.
    pub(crate) fn at(mut self, offset: u64) -> Warning {
        self.offset = Some(offset);
        self
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Problems that did not stop the dump but lost some information.
///
/// Kept in the order they were found; parallel stages collect their own and are merged
/// in input order so that the list is the same on every run.
#[derive(Debug, Default, Clone)]
pub struct Warnings(Vec<Warning>);

impl Warnings {
    /// Records one warning of `kind`.
    pub(crate) fn push(&mut self, kind: WarningKind, message: impl Into<String>) {
        self.0.push(Warning::new(kind, message));
    }

    /// Records one warning, with its place.
    pub(crate) fn add(&mut self, warning: Warning) {
        self.0.push(warning);
    }

    /// Appends another list, keeping its order.
    pub(crate) fn extend(&mut self, other: Warnings) {
        self.0.extend(other.0);
    }

    /// Appends another list, each message behind `prefix` (the file or unit they were
    /// found in, seen from here).
    pub(crate) fn extend_under(&mut self, prefix: &str, other: Warnings) {
        self.0.extend(other.0.into_iter().map(|mut w| {
            w.message = format!("{prefix}{}", w.message);
            w
        }));
    }

    /// The warnings, in the order they were found.
    pub fn iter(&self) -> std::slice::Iter<'_, Warning> {
        self.0.iter()
    }

    /// How many warnings there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl IntoIterator for Warnings {
    type Item = Warning;
    type IntoIter = std::vec::IntoIter<Warning>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<'a> IntoIterator for &'a Warnings {
    type Item = &'a Warning;
    type IntoIter = std::slice::Iter<'a, Warning>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

/// A flag's value (or an environment variable it reads) that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArgumentError {
    /// A debug id that is not one word (empty, or with a space or control character).
    #[error("{0:?} is not a debug id (one word, no spaces)")]
    DebugId(String),
    /// An upload protocol none of the three (`--upload-protocol`).
    #[error("{0:?}: the protocols are sym-upload-v1, sym-upload-v2 and tecken")]
    Protocol(String),
    /// A code id that is not one word.
    #[error("{0:?} is not a code id (one word, no spaces)")]
    CodeId(String),
    /// An architecture name neither Breakpad nor Apple's or GNU's tools use.
    #[error(
        "{0:?} is not an architecture (x86, x86_64, arm, arm64, ppc, ppc64, mips, mips64, riscv, riscv64, s390x, sparc, sparcv9, or another tool's name for one: i386, aarch64, arm64e, armv7, …)"
    )]
    Arch(String),
    /// `--shard` is not `K/N`.
    #[error("{0:?} is not K/N (e.g. 2/8, or auto/8)")]
    Shard(String),
    /// `--shard`'s N is not a whole number from 1.
    #[error("{0:?}: N must be a whole number from 1")]
    ShardCount(String),
    /// `--shard`'s K is not a whole number from 1.
    #[error("{0:?}: K must be a whole number from 1")]
    ShardIndex(String),
    /// `--shard auto/N` without the job index in the environment.
    #[error("{spec:?}: auto takes K from {var}, which is not set")]
    ShardAutoUnset {
        /// The flag's value.
        spec: String,
        /// The variable.
        var: &'static str,
    },
    /// `--shard auto/N` with a job index that is not a number.
    #[error("{spec:?}: {var}={index:?} is not a whole number")]
    ShardAutoIndex {
        /// The flag's value.
        spec: String,
        /// The variable.
        var: &'static str,
        /// Its value.
        index: String,
    },
    /// `--shard K/N` with K over N.
    #[error("{spec:?}: shard {k} of {n} does not exist")]
    NoSuchShard {
        /// The flag's value.
        spec: String,
        /// K.
        k: u64,
        /// N.
        n: u32,
    },
    /// A symbol path element that is neither a server entry nor a directory.
    #[error("{0:?}: not a srv*...*URL entry or a directory")]
    SymbolPathEntry(String),
    /// A symbol path's `srv*` entry without a store.
    #[error("{0:?}: names no store")]
    SymbolPathEmpty(String),
}
