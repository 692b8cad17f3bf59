//! What a batch tells as it goes, as values: [`Event`]s to a [`Report`], failures as
//! [`Failure`]s. The command turns them into words (and decides which `-q` drops and
//! which only `-v` shows); a program that embeds the library can count, log or show
//! them as it likes.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::batch::byid::Unavailable;
use crate::batch::shard::Shard;
use crate::error::Warning;
use crate::locate::Search;
#[cfg(feature = "net")]
use crate::upload::{Sent, UploadError};

/// Where a batch's events go.
pub trait Report: Sync {
    /// One thing that happened, as it happened.
    fn event(&self, event: &Event<'_>);
    /// How far a batch has come: for a progress bar.
    fn progress(&self, _step: Progress<'_>) {}
}

/// The steps of a batch, in order: `Start` once, `File` and `Done` per file, `Finish`.
#[derive(Debug, Clone, Copy)]
pub enum Progress<'a> {
    /// The batch begins, with this many files (or rows) to do.
    Start {
        /// How many.
        files: usize,
    },
    /// This file is begun.
    File(&'a Path),
    /// A file is done.
    Done,
    /// The batch is done.
    Finish,
}

/// What a batch did or met, in the order it happened (for one input; inputs of a store
/// run interleave). Not `#[non_exhaustive]`: the command's words match every event, so
/// that a new one cannot go unsaid.
#[derive(Debug)]
pub enum Event<'a> {
    /// The debug file read for `input` (a separate debug file, a dSYM, a PDB).
    DebugFile {
        /// The input.
        input: &'a Path,
        /// The file its debug information came from.
        debug_file: &'a Path,
    },
    /// A server that could not be used (down, failing, stalled): about the network, not
    /// the file. `about` is the input or module on whose behalf it was asked, if any.
    Server {
        /// The input or module.
        about: Option<&'a Path>,
        /// What went wrong (of kind [`crate::error::WarningKind::Server`]).
        warning: &'a Warning,
    },
    /// `input`'s symbol file has no STACK records: stack walkers cannot unwind through
    /// the module.
    NoStackRecords {
        /// The input.
        input: &'a Path,
        /// Why, and what to dump instead.
        why: &'a crate::options::NoStackRecords,
    },
    /// No debug information was found for `input`: what the binary itself has is
    /// written.
    NoDebugInfo {
        /// The input.
        input: &'a Path,
        /// Where it was looked for.
        search: &'a Search,
    },
    /// A symbol file was written.
    Written {
        /// The input.
        input: &'a Path,
        /// The symbol file.
        path: &'a Path,
    },
    /// `input` is the same module as another input of the run, whose symbol file at
    /// `kept` stays.
    SameModule {
        /// The input.
        input: &'a Path,
        /// The other input's symbol file.
        kept: &'a Path,
    },
    /// The file's own problems: damaged or unsupported parts, records left out. Told
    /// once per dump, after its symbol file was written, even when empty.
    Warnings {
        /// The input.
        input: &'a Path,
        /// Every problem, in the order found (server problems were told as
        /// [`Event::Server`]).
        warnings: &'a [&'a Warning],
    },
    /// A file met in a tree that is not a module of its own (a debug file beside its
    /// binary, a dSYM's inner file).
    Skipped {
        /// The file.
        input: &'a Path,
        /// Why.
        why: Skip,
    },
    /// An archive among the inputs (or inside one) was unpacked: its members are dumped
    /// from `into`, a directory of the run's own in the store, removed when the run
    /// ends. Paths under `into` are the members `archive!member`.
    Unpacked {
        /// The archive as given, or `outer!member` for one inside another.
        archive: &'a Path,
        /// Where its members were written.
        into: &'a Path,
        /// Members refused or left (an unsafe name, an archive nested too deep, one that
        /// could not be written), each naming the member.
        warnings: &'a [&'a Warning],
    },
    /// A module asked for by id that no server has: counted, not a failure.
    NotOnServer(&'a Unavailable),
    /// An input produced no symbol file.
    Failed(&'a Failure),
    /// A store or missing-list batch is done: what it did, and every failure (each told
    /// before as [`Event::Failed`]) in the inputs' order.
    Finished {
        /// The tally.
        counts: &'a Counts,
        /// The failures.
        failures: &'a [Failure],
    },
    /// A symbol file that cannot be uploaded (unreadable, or a MODULE record that
    /// cannot name a place on a server).
    #[cfg(feature = "net")]
    NotSent(&'a UploadError),
    /// What came of sending one symbol file (or one Tecken zip, `what` naming its
    /// files).
    #[cfg(feature = "net")]
    Sent {
        /// The file or files.
        what: &'a str,
        /// What the server did, or why it was not sent.
        result: &'a Result<Sent, UploadError>,
    },
    /// An upload is done.
    #[cfg(feature = "net")]
    Uploaded {
        /// The server.
        url: &'a str,
        /// Files (or zips) the server took.
        sent: usize,
        /// Files the server already had.
        already_there: usize,
        /// Files not sent.
        failed: usize,
    },
}

/// Why a file met in a tree is not a module of its own: it is read through another,
/// or holds no code to symbolize. New reasons may be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Skip {
    /// A PDB, read through its image.
    #[error("a PDB: read through its image")]
    Pdb,
    /// The DWARF file inside a dSYM, read through its binary.
    #[error("a dSYM's DWARF file: read through its binary")]
    DsymDwarf,
    /// A separate ELF debug file, read through its binary.
    #[error("a separate debug file (no code): read through its binary")]
    DebugFile,
    /// A relocatable object: `.o`, `.dwo`, `.dwp`, or a dwz file of that kind.
    #[error("a relocatable object (.o, .dwo, .dwp or dwz file)")]
    Relocatable,
    /// A dwz file, read through the debug files that refer to it.
    #[error("a dwz file (DWARF shared by debug files)")]
    Dwz,
    /// A core dump.
    #[error("a core dump")]
    Core,
}

/// The tally of a store or missing-list batch.
#[derive(Debug, Clone, Default)]
pub struct Counts {
    /// Inputs dumped.
    pub dumped: usize,
    /// Modules asked for by id that no server has.
    pub not_on_any_server: usize,
    /// Inputs whose symbol file was in the store already (`--skip-existing`).
    pub in_store: usize,
    /// Inputs a server said it has: `Some` when a server was asked.
    pub on_server: Option<usize>,
    /// Files that are not modules of their own.
    pub companions: usize,
    /// Inputs left to the other shards, with this run's shard.
    pub other_shards: Option<(usize, Shard)>,
    /// Inputs that failed.
    pub failed: usize,
    /// How long the batch took.
    pub elapsed: Duration,
}

/// Why an input produced no symbol file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Failure {
    /// Standard output was closed by its reader: stop quietly.
    #[error("standard output was closed")]
    BrokenPipe,
    /// The input cannot be dumped.
    #[error(transparent)]
    Dump(#[from] crate::error::Error),
    /// A module asked for by id could not be had: no server has it, or a server failed.
    #[error(transparent)]
    Unavailable(Unavailable),
    /// The symbol file cannot be written.
    #[error("{}: cannot write: {source}", path.display())]
    Write {
        /// The symbol file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Standard output failed.
    #[error("standard output: {0}")]
    Stdout(#[source] io::Error),
    /// The module's name or id cannot be a place in a symbol store.
    #[error("{}: {source}", input.display())]
    StorePath {
        /// The input.
        input: PathBuf,
        /// Why.
        #[source]
        source: crate::untrusted::UnsafeName,
    },
    /// A directory of the inputs cannot be read.
    #[error("{}: cannot read directory: {source}", path.display())]
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// A file met in a tree cannot be read.
    #[error("{}: cannot read: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// An archive cannot be read, or not to its end (the members before the damage are
    /// still dumped).
    #[error("{}: {why}", archive.display())]
    Archive {
        /// The archive as given, or `outer!member` for one inside another.
        archive: PathBuf,
        /// Why.
        why: String,
    },
    /// No worker threads could be started.
    #[error("cannot start worker threads: {0}")]
    Threads(#[source] io::Error),
    /// `--check-cfi`: the dump would write no STACK record, so nothing was written.
    #[error(
        "{}: no STACK records (--check-cfi){}",
        input.display(),
        why.as_ref().map_or(String::new(), |w| format!(": {w}"))
    )]
    NoStackRecords {
        /// The input.
        input: PathBuf,
        /// Why it has none, when that is known.
        why: Option<crate::options::NoStackRecords>,
    },
    /// The dump of `input` panicked: a bug in dumpsyms. The other inputs are still done.
    #[error("{input}: internal error (a bug in dumpsyms: please report it): {why}")]
    Panicked {
        /// The input, as given.
        input: String,
        /// The panic's message.
        why: String,
    },
}
