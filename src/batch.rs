//! Dumping as the command does it: one input to standard output, a file or a symbol
//! store, or whole trees into a store in parallel (universal binaries slice by slice,
//! `--skip-existing`), then optionally uploading what was written. Every line for the
//! user goes to a [`Report`], so that the command only decides how lines are shown.

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::byid::ById;
use crate::error::{Warning, WarningKind, Warnings};
use crate::output::AtomicFile;
use crate::shard::Shard;
use crate::upload::{Remote, Sent, SymbolFile, Uploader};
use crate::{Dump, Options, tree};

/// Where a symbol file goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// Standard output, streamed as it is written.
    Stdout,
    /// This file, replaced atomically.
    File(PathBuf),
    /// `<store>/<name>/<debug id>/<name>.sym` (see [`crate::store_path`]).
    Store(PathBuf),
}

/// Where the lines for the user go. A line is one message, without the program's name.
pub trait Report: Sync {
    /// Something that failed, or that the user must see (a server that is down, a
    /// binary without debug information): shown even when the user asked for quiet.
    fn error(&self, line: &str);
    /// A warning, a summary or a detail: may be dropped (`-q`).
    fn note(&self, line: &str);
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

/// Why an input produced no symbol file.
#[derive(Debug)]
pub enum Failure {
    /// Standard output was closed by its reader: stop quietly.
    BrokenPipe,
    /// Anything else, in words, naming the input.
    Message(String),
    /// A module asked for by id that no server has.
    NotFound(String),
}

/// The options of a dump and how much to say about it.
pub struct Batch<'a> {
    /// How each input is dumped.
    pub opts: &'a Options,
    /// `--shard`: only this share of the modules is written.
    pub shard: Option<Shard>,
    /// Every warning, every path tried, every file written (`-v`), rather than a
    /// count.
    pub verbose: bool,
    /// Where every line for the user goes.
    pub report: &'a dyn Report,
    /// `--skip-existing` with a server to ask: modules it has are not dumped.
    pub remote: Option<&'a Remote>,
}

/// What a batch into a store did.
#[derive(Debug, Default)]
pub struct Summary {
    /// The symbol files written (a universal binary's slices make several per input).
    pub written: Vec<PathBuf>,
    /// Inputs that failed, with the message already reported.
    pub failures: Vec<String>,
}

/// What became of one file of a store batch.
enum Stored {
    /// Dumped into these symbol files.
    Dumped(Vec<PathBuf>),
    /// Its symbol file was already in the store (`--skip-existing`).
    Existing,
    /// A server said it has the symbol file (`--skip-existing` with a server to ask).
    OnServer,
    /// Another shard's (`--shard`).
    OtherShard,
    /// Asked for by id and not on any server: what.
    NotFound(String),
    /// An object file that is not a module of its own (`-v` says why).
    Companion,
    /// Not an object file, met while walking a directory.
    NotObject,
    Failed(String),
}

impl Batch<'_> {
    /// Dumps `input` and writes its symbol file to `to`, on the library's worker
    /// threads; the path written, unless it went to standard output.
    pub fn one(&self, input: &Path, to: &Destination) -> Result<Option<PathBuf>, Failure> {
        crate::workers::run(self.opts.jobs, || {
            self.dump_and_write(self.opts, input, to, None)
        })
        .map_err(Failure::Message)?
    }

    /// Fetches the module `want` names by id (see [`crate::byid`]) and writes its
    /// symbol file to `to`, as [`Batch::one`] does for a file on disk.
    pub fn by_id(&self, want: &ById, to: &Destination) -> Result<Option<PathBuf>, Failure> {
        let local = want.fetch(self.opts).map_err(|u| match u.not_found {
            true => Failure::NotFound(u.message),
            false => Failure::Message(u.message),
        })?;
        for problem in &local.problems {
            self.report
                .error(&format!("warning: {}: {problem}", want.file));
        }
        let opts = Options {
            companion: local
                .companion
                .clone()
                .or_else(|| self.opts.companion.clone()),
            name: self.opts.name.clone().or_else(|| local.name.clone()),
            ..self.opts.clone()
        };
        crate::workers::run(opts.jobs, || {
            self.dump_and_write(&opts, &local.input, to, None)
        })
        .map_err(Failure::Message)?
    }

    /// Every module of a missing-symbols list (see [`crate::missing`]) fetched by id
    /// and written into `store`, rows in parallel as [`Batch::store`] runs files.
    pub fn missing(&self, rows: &[ById], store: &Path, skip_existing: bool) -> Summary {
        let started = Instant::now();
        // Another shard's rows are counted, not walked through the workers one by one.
        let (rows, elsewhere): (Vec<&ById>, Vec<&ById>) =
            rows.iter().partition(|row| self.in_shard(row));
        self.report.progress(Progress::Start { files: rows.len() });
        let _names = (rows.len() > 1).then(crate::demangle::across::scope);
        let outcomes = crate::workers::run(self.opts.jobs, || {
            let mut outcomes: Vec<Stored> = Vec::with_capacity(rows.len());
            for chunk in rows.chunks(rayon::current_num_threads().max(1)) {
                let done: Vec<Stored> = chunk
                    .par_iter()
                    .map(|row| {
                        self.report.progress(Progress::File(Path::new(&row.file)));
                        let outcome = contained(self.report, &row.file, || {
                            self.store_by_id(store, row, skip_existing)
                        });
                        self.report.progress(Progress::Done);
                        outcome
                    })
                    .collect();
                outcomes.extend(done);
            }
            outcomes
        });
        self.report.progress(Progress::Finish);
        let mut outcomes = outcomes.unwrap_or_else(|e| vec![Stored::Failed(e)]);
        outcomes.extend(elsewhere.iter().map(|_| Stored::OtherShard));
        let summary = self.summarize(outcomes, &[], started);
        for m in &summary.failures {
            self.report.error(&format!("failed: {m}"));
        }
        summary
    }

    /// Whether a row of a missing-symbols list is this shard's (a row whose store id is
    /// not known before fetching is every shard's: it cannot be split by it).
    fn in_shard(&self, row: &ById) -> bool {
        match (self.shard, row.store_debug_id()) {
            (Some(shard), Some(id)) => shard.takes(&row.file, &id),
            _ => true,
        }
    }

    /// One row of a missing-symbols list.
    fn store_by_id(&self, store: &Path, row: &ById, skip_existing: bool) -> Stored {
        let debug_id = row.store_debug_id();
        if skip_existing
            && let Some(id) = &debug_id
            && crate::untrusted::path_component(&row.file, "module name").is_ok()
            && crate::untrusted::path_component(id, "debug id").is_ok()
            && store
                .join(crate::breakpad::store::relative_path(&row.file, id))
                .is_file()
        {
            return Stored::Existing;
        }
        if skip_existing
            && let (Some(remote), Some(id)) = (self.remote, &debug_id)
            && remote.has(&row.file, id, &|m| {
                self.report.error(&format!("warning: {m}"))
            })
        {
            return Stored::OnServer;
        }
        let to = Destination::Store(store.to_path_buf());
        match self.by_id(row, &to) {
            Ok(written) => Stored::Dumped(written.into_iter().collect()),
            Err(Failure::BrokenPipe) => Stored::Dumped(Vec::new()),
            Err(Failure::NotFound(m)) => Stored::NotFound(m),
            Err(Failure::Message(m)) => {
                self.report.error(&format!("error: {m}"));
                Stored::Failed(m)
            }
        }
    }

    /// Every input, and every object file under the directories among them, into the
    /// symbol store `store`, in parallel. At most as many files are in flight as there
    /// are threads, so memory stays bounded by the largest few inputs.
    pub fn store(&self, paths: &[PathBuf], store: &Path, skip_existing: bool) -> Summary {
        let started = Instant::now();
        let (files, unreadable) = tree::files(paths);
        let walked = |f: &Path| !paths.iter().any(|p| p == f);
        let claims = Mutex::new(HashMap::new());
        self.report.progress(Progress::Start { files: files.len() });
        // One feeder thread per worker takes the next file as soon as its last is done:
        // as many files in flight as threads, and no file waits for the slowest of a
        // batch (batches in lockstep left a core idle through each large file's serial
        // steps). Each feeder dumps on a pool of its own (`workers::for_one_file`), so
        // that a worker waiting inside one dump cannot take another file's.
        // Largest first: a large file's serial steps (inflating its `.debug_info`,
        // writing its records) then overlap with the small files, instead of running
        // alone at the end with a core idle. The order of the outcomes, and which of one
        // module's inputs stays (see `Claim`), is the files' all the same.
        let order = largest_first(&files);
        // A name demangled for one module is read, not demangled again, for the next.
        let _names = (files.len() > 1).then(crate::demangle::across::scope);
        let outcomes =
            crate::workers::run(self.opts.jobs, rayon::current_num_threads).map(|threads| {
                let next = AtomicUsize::new(0);
                let done: Mutex<Vec<(usize, Stored)>> = Mutex::new(Vec::new());
                let tail = std::sync::Arc::new(crate::workers::Tail::default());
                std::thread::scope(|scope| {
                    for _ in 0..threads.clamp(1, files.len().max(1)) {
                        scope.spawn(|| {
                            let _stopped = crate::workers::BeginOnDrop(&tail);
                            // The shared pool where a pool of its own cannot be had.
                            let own = crate::workers::for_one_file(threads, &tail).ok();
                            loop {
                                let n = next.fetch_add(1, Ordering::Relaxed);
                                let Some(&i) = order.get(n) else { break };
                                if n + 1 == order.len() {
                                    tail.begin();
                                }
                                let file = &files[i];
                                self.report.progress(Progress::File(file));
                                let claim = Claim {
                                    claims: &claims,
                                    rank: i,
                                    first_wins: skip_existing,
                                };
                                let one = || {
                                    contained(self.report, &file.display().to_string(), || {
                                        self.store_one(store, file, walked(file), &claim)
                                    })
                                };
                                let outcome = match &own {
                                    Some(pool) => pool.install(one),
                                    None => crate::workers::run(self.opts.jobs, one)
                                        .unwrap_or_else(Stored::Failed),
                                };
                                self.report.progress(Progress::Done);
                                done.lock()
                                    .unwrap_or_else(|e| e.into_inner())
                                    .push((i, outcome));
                            }
                        });
                    }
                });
                let mut done = done.into_inner().unwrap_or_else(|e| e.into_inner());
                done.sort_unstable_by_key(|d| d.0);
                done.into_iter().map(|d| d.1).collect::<Vec<Stored>>()
            });
        self.report.progress(Progress::Finish);
        let outcomes = match outcomes {
            Ok(o) => o,
            Err(e) => {
                self.report.error(&format!("error: {e}"));
                return Summary {
                    written: Vec::new(),
                    failures: vec![e],
                };
            }
        };
        let summary = self.summarize(outcomes, &unreadable, started);
        for m in &summary.failures {
            self.report.error(&format!("failed: {m}"));
        }
        summary
    }

    /// Counts the outcomes, reports unreadable directories and the one-line summary.
    fn summarize(
        &self,
        outcomes: Vec<Stored>,
        unreadable: &[(PathBuf, io::Error)],
        started: Instant,
    ) -> Summary {
        let count = |f: fn(&Stored) -> bool| outcomes.iter().filter(|o| f(o)).count();
        let dumped = count(|o| matches!(o, Stored::Dumped(_)));
        let existing = count(|o| matches!(o, Stored::Existing));
        let on_server = count(|o| matches!(o, Stored::OnServer));
        let companions = count(|o| matches!(o, Stored::Companion));
        let elsewhere = count(|o| matches!(o, Stored::OtherShard));
        let not_found = count(|o| matches!(o, Stored::NotFound(_)));
        let mut summary = Summary::default();
        for o in outcomes {
            match o {
                Stored::Dumped(paths) => summary.written.extend(paths),
                Stored::Failed(m) => summary.failures.push(m),
                Stored::NotFound(m) => self.report.note(&format!("not on any server: {m}")),
                Stored::Existing
                | Stored::OnServer
                | Stored::Companion
                | Stored::NotObject
                | Stored::OtherShard => {}
            }
        }
        for (dir, e) in unreadable {
            let m = format!("{}: cannot read directory: {e}", dir.display());
            self.report.error(&format!("error: {m}"));
            summary.failures.push(m);
        }
        let absent = match not_found {
            0 => String::new(),
            n => format!(", {n} not on any server"),
        };
        let shard = match self.shard {
            Some(shard) => format!(", {elsewhere} left to the other shards (this is {shard})"),
            None => String::new(),
        };
        let server = match self.remote {
            Some(_) => format!(", {on_server} already on the server"),
            None => String::new(),
        };
        self.report.note(&format!(
            "{dumped} dumped{absent}, {} skipped ({existing} already in the store{server}, {companions} not modules of their own){shard}, {} failed, in {:.1} s",
            existing + on_server + companions,
            summary.failures.len(),
            started.elapsed().as_secs_f64()
        ));
        summary
    }

    /// One file of a store batch. `walked`: found under a directory (so files that are
    /// not modules are passed over rather than refused).
    fn store_one(&self, store: &Path, file: &Path, walked: bool, claim: &Claim) -> Stored {
        if walked && let Some(passed_over) = self.pass_over(file) {
            return passed_over;
        }
        let mut variants = slices(self.opts, file);
        if let Some(shard) = self.shard {
            variants.retain(|o| in_shard(shard, o, file));
            if variants.is_empty() {
                return Stored::OtherShard;
            }
        }
        if claim.first_wins {
            let found: Vec<Found> = variants
                .iter()
                .map(|o| self.already_there(o, store, file, claim))
                .collect();
            if found.iter().all(|f| *f == Found::InStore) {
                return Stored::Existing;
            }
            if found.iter().all(|f| *f != Found::Nowhere) {
                return Stored::OnServer;
            }
        }
        let to = Destination::Store(store.to_path_buf());
        let mut written = Vec::new();
        let result = variants.iter().try_for_each(|o| {
            written.extend(self.dump_and_write(o, file, &to, Some(claim))?);
            Ok(())
        });
        match result {
            Ok(()) | Err(Failure::BrokenPipe) => Stored::Dumped(written),
            Err(Failure::Message(m) | Failure::NotFound(m)) => {
                self.report.error(&format!("error: {m}"));
                Stored::Failed(m)
            }
        }
    }

    /// Where the symbol file of `file` (as `opts` dumps it) already is: in `store`, on
    /// the server asked, or nowhere. Only its headers are read for that. A file in the
    /// store that an input of this run wrote does not count: that input and this one are
    /// the same module, and the claim rule picks which of them stays, whichever
    /// finished first.
    fn already_there(&self, opts: &Options, store: &Path, file: &Path, claim: &Claim) -> Found {
        let header = Options {
            header_only: true,
            ..opts.clone()
        };
        let Ok(module) = crate::dump(file, &header).map(|d| d.module) else {
            return Found::Nowhere;
        };
        let Ok(path) = crate::store_path(store, &module) else {
            return Found::Nowhere;
        };
        let claimed = claim
            .claims
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(&path);
        if path.is_file() && !claimed {
            return Found::InStore;
        }
        let tell = |m: &str| self.report.error(&format!("warning: {m}"));
        match self.remote {
            Some(remote) if remote.has(&module.name, &module.debug_id, &tell) => Found::OnServer,
            _ => Found::Nowhere,
        }
    }

    /// What a file met in a tree is, when it is not a module to dump.
    fn pass_over(&self, file: &Path) -> Option<Stored> {
        match tree::role(file) {
            tree::Role::Module => None,
            tree::Role::NotObject => Some(Stored::NotObject),
            tree::Role::Unreadable(why) => {
                let m = format!("{}: {why}", file.display());
                self.report.error(&format!("error: {m}"));
                Some(Stored::Failed(m))
            }
            tree::Role::Companion(why) => {
                if self.verbose {
                    self.report
                        .note(&format!("{}: skipped: {why}", file.display()));
                }
                Some(Stored::Companion)
            }
        }
    }

    /// Dumps `input` and writes its symbol file; the path written, unless it went to
    /// standard output.
    fn dump_and_write(
        &self,
        opts: &Options,
        input: &Path,
        to: &Destination,
        claim: Option<&Claim>,
    ) -> Result<Option<PathBuf>, Failure> {
        let result = crate::dump(input, opts).map_err(|e| Failure::Message(e.to_string()))?;
        self.tell_where_debug_info_came_from(input, &result);
        let mut warnings = result.warnings;
        // Warnings are told after writing: it finds some of them.
        let written = self.write(input, &result.module, to, claim, &mut warnings);
        self.tell_warnings(input, &warnings);
        written
    }

    /// The debug file used (`-v`), servers that failed, and where debug information was
    /// looked for when none was found.
    fn tell_where_debug_info_came_from(&self, input: &Path, dump: &Dump) {
        let shown = input.display();
        if self.verbose
            && let Some(debug) = &dump.debug_file
        {
            self.report
                .note(&format!("{shown}: using debug file {}", debug.display()));
        }
        // About the network, not the file: told whether or not -v is given.
        for problem in dump
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Server)
        {
            self.report.error(&format!("warning: {shown}: {problem}"));
        }
        if let Some(why) = &dump.no_stack_records {
            self.report.error(&format!(
                "{shown}: no STACK records (stack walkers cannot unwind through it): {why}"
            ));
        }
        let Some(search) = &dump.no_debug_info else {
            return;
        };
        self.report.error(&format!(
            "{shown}: no debug info found; looked for {}. Writing what the binary itself has: symbol-table names and unwind tables{}",
            search.summary(),
            if self.verbose {
                ""
            } else {
                " (-v lists every path tried)"
            }
        ));
        if self.verbose {
            for place in &search.tried {
                self.report.error(&format!("{shown}: looked in {place}"));
            }
        }
    }

    /// Each warning (`-v`), or how many there were.
    fn tell_warnings(&self, input: &Path, warnings: &Warnings) {
        let shown = input.display();
        let warnings: Vec<&Warning> = warnings
            .iter()
            .filter(|w| w.kind != WarningKind::Server)
            .collect();
        if self.verbose {
            for w in warnings {
                self.report.note(&format!("warning: {shown}: {w}"));
            }
        } else if !warnings.is_empty() {
            self.report.note(&format!(
                "warning: {shown}: {} problem(s) in the file (damaged or unsupported sections); some records may be missing (-v lists them)",
                warnings.len()
            ));
        }
    }

    /// Writes `module` to `to`, adding what writing left out to `warnings`; in a store
    /// run, only if `claim` wins its path.
    fn write(
        &self,
        input: &Path,
        module: &crate::Module,
        to: &Destination,
        claim: Option<&Claim>,
        warnings: &mut Warnings,
    ) -> Result<Option<PathBuf>, Failure> {
        let path = match to {
            Destination::Stdout => {
                warnings.extend(write_stdout(module)?);
                return Ok(None);
            }
            Destination::File(file) => file.clone(),
            Destination::Store(dir) => crate::store_path(dir, module)
                .map_err(|e| Failure::Message(format!("{}: {e}", input.display())))?,
        };
        let fail =
            |e: io::Error| Failure::Message(format!("{}: cannot write: {e}", path.display()));
        let mut file = AtomicFile::create(&path).map_err(fail)?;
        let left_out = crate::write_module(module, file.writer()).map_err(fail)?;
        // Decided and renamed under the lock, so that a loser finishing last cannot
        // replace the winner's file. A loser's temporary file goes when it is dropped.
        let committed = match claim {
            Some(claim) => {
                // Synced before the lock, which every file's commit takes: a large file's
                // sync held the small files' commits behind it.
                file.sync().map_err(fail)?;
                let mut claims = claim.claims.lock().unwrap_or_else(|e| e.into_inner());
                let wins = claim.wins(claims.get(&path).copied());
                if wins {
                    file.commit().map_err(fail)?;
                    claims.insert(path.clone(), claim.rank);
                }
                wins
            }
            None => {
                file.commit().map_err(fail)?;
                true
            }
        };
        warnings.extend(left_out);
        if self.verbose {
            let shown = path.display();
            self.report.note(&if committed {
                format!("wrote {shown}")
            } else {
                format!(
                    "{}: same module as another input, whose {shown} is kept",
                    input.display()
                )
            });
        }
        Ok(Some(path))
    }

    /// Sends the symbol files at `paths`; false if any failed (each failure is named).
    pub fn upload(&self, uploader: &Uploader, paths: &[PathBuf]) -> bool {
        let mut files = Vec::with_capacity(paths.len());
        let mut failed = 0usize;
        for p in paths {
            match SymbolFile::read(p) {
                Ok(f) => files.push(f),
                Err(e) => {
                    self.report.error(&format!("error: upload: {e}"));
                    failed += 1;
                }
            }
        }
        let (mut sent, mut there) = (0usize, 0usize);
        for (what, result) in uploader.send(&files) {
            match result {
                Ok(Sent::Uploaded) => sent += 1,
                Ok(Sent::AlreadyThere) => there += 1,
                Err(_) => failed += 1,
            }
            self.tell_sent(&what, &result);
        }
        self.report.note(&format!(
            "upload to {}: {sent} sent, {there} already there, {failed} failed",
            uploader.url
        ));
        failed == 0
    }

    fn tell_sent(&self, what: &str, result: &Result<Sent, String>) {
        match result {
            Ok(Sent::Uploaded) if self.verbose => self.report.note(&format!("uploaded {what}")),
            Ok(Sent::AlreadyThere) if self.verbose => {
                self.report.note(&format!("{what}: already on the server"))
            }
            Ok(_) => {}
            Err(e) => self.report.error(&format!("error: uploading {what}: {e}")),
        }
    }
}

/// Where a module's symbol file already is, for `--skip-existing`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Found {
    InStore,
    OnServer,
    Nowhere,
}

/// A panic in one input's dump fails that input, not the batch: the other inputs are
/// still done, and the summary still told.
fn contained(report: &dyn Report, what: &str, dump: impl FnOnce() -> Stored) -> Stored {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(dump)) {
        Ok(stored) => stored,
        Err(payload) => {
            let why = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            let m = format!("{what}: internal error (a bug in dumpsyms: please report it): {why}");
            report.error(&format!("error: {m}"));
            Stored::Failed(m)
        }
    }
}

/// The dumps one file makes: one per slice of a universal Mach-O (unless `--arch` picks
/// one), else one.
fn slices(opts: &Options, file: &Path) -> Vec<Options> {
    match (&opts.arch, crate::architectures(file)) {
        (None, Ok(arches)) if arches.len() > 1 => arches
            .into_iter()
            .map(|arch| Options {
                arch: Some(arch),
                ..opts.clone()
            })
            .collect(),
        _ => vec![opts.clone()],
    }
}

/// Whether the module `opts` dumps from `file` is `shard`'s, by the name and debug id
/// its header gives. A file whose header cannot be read goes by its path, so that one
/// shard, and only one, reports it.
fn in_shard(shard: Shard, opts: &Options, file: &Path) -> bool {
    let header = Options {
        header_only: true,
        ..opts.clone()
    };
    match crate::dump(file, &header) {
        Ok(d) => shard.takes(&d.module.name, &d.module.debug_id),
        Err(_) => shard.takes(&file.to_string_lossy(), ""),
    }
}

/// An input's claim to the store paths it writes in a store run. Inputs that are the
/// same module (a binary and its stripped copy, a library installed twice) write the
/// same path, and the one that stays must not depend on which finished last: it is
/// the one a run of one thread leaves, the last in the run's order (a later file
/// replaces an earlier one's symbols), or with `--skip-existing` the first (a later
/// file finds it stored).
struct Claim<'c> {
    /// Store paths written in this run, by the rank of the input whose file is there.
    claims: &'c Mutex<HashMap<PathBuf, usize>>,
    /// The input's position in the run.
    rank: usize,
    first_wins: bool,
}

impl Claim<'_> {
    /// Whether this input's file replaces that of the input ranked `holder` (`None`:
    /// no input of this run wrote there).
    fn wins(&self, holder: Option<usize>) -> bool {
        match holder {
            None => true,
            Some(h) if self.first_wins => self.rank < h,
            Some(h) => self.rank > h,
        }
    }
}

/// Writes `module` to standard output; what writing left out.
fn write_stdout(module: &crate::Module) -> Result<Warnings, Failure> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = crate::write_module(module, &mut out);
    match written.and_then(|left_out| out.flush().map(|()| left_out)) {
        Ok(left_out) => Ok(left_out),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
        Err(e) => Err(Failure::Message(format!("standard output: {e}"))),
    }
}

/// The indexes of `files`, largest file first (by size on disk: the binary's, which
/// grows with its debug file's); equal sizes, and files that cannot be read, in their
/// order.
fn largest_first(files: &[PathBuf]) -> Vec<usize> {
    let size = |f: &PathBuf| std::fs::metadata(f).map_or(0, |m| m.len());
    let mut order: Vec<(std::cmp::Reverse<u64>, usize)> = files
        .iter()
        .enumerate()
        .map(|(i, f)| (std::cmp::Reverse(size(f)), i))
        .collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_taken_largest_first_ties_in_order() {
        let dir = std::env::temp_dir().join(format!("dumpsyms-order-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let files: Vec<PathBuf> = [10, 300, 0, 300, 50]
            .iter()
            .enumerate()
            .map(|(i, &len)| {
                let path = dir.join(format!("f{i}"));
                std::fs::write(&path, vec![0u8; len]).unwrap();
                path
            })
            .chain([dir.join("missing")])
            .collect();
        let order = largest_first(&files);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(order, vec![1, 3, 4, 0, 2, 5]);
        assert!(largest_first(&[]).is_empty());
    }

    struct Lines(Mutex<Vec<String>>);

    impl Report for Lines {
        fn error(&self, line: &str) {
            self.0.lock().unwrap().push(line.to_string());
        }
        fn note(&self, _: &str) {}
    }

    #[test]
    fn a_panic_fails_its_input_only() {
        let lines = Lines(Mutex::new(Vec::new()));
        let failed = contained(&lines, "m.so", || panic!("boom"));
        assert!(matches!(&failed, Stored::Failed(m) if m.contains("m.so") && m.contains("boom")));
        let fine = contained(&lines, "n.so", || Stored::Existing);
        assert!(matches!(fine, Stored::Existing));
        assert_eq!(lines.0.lock().unwrap().len(), 1);
    }
}
