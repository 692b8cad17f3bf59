//! Dumping as the command does it: one input to standard output, a file or a symbol
//! store, or whole trees into a store in parallel (universal binaries slice by slice,
//! `--skip-existing`), then optionally uploading what was written. What happens is told
//! to a [`Report`] as [`Event`]s; the command alone turns them into words.

pub mod byid;
mod census;
pub mod missing;
mod report;
pub mod shard;
pub(crate) mod tree;
mod unpack;

pub use report::{Counts, Event, Failure, Progress, Report, Skip};

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use rayon::prelude::*;

use crate::batch::byid::{ById, Unavailable};
use crate::batch::shard::Shard;
use crate::error::{Warning, WarningKind, Warnings};
use crate::model::module::Module;
use crate::options::Dump;
use crate::options::Options;
use crate::output::AtomicFile;
#[cfg(feature = "net")]
use crate::upload::{Remote, Sent, SymbolFile, Uploader};

/// Where a symbol file goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// Standard output, streamed as it is written.
    Stdout,
    /// This file, replaced atomically.
    File(PathBuf),
    /// `<store>/<name>/<debug id>/<name>.sym` (see [`crate::breakpad::store::store_path`]).
    Store(PathBuf),
    /// Both a file and its place in a store (Mozilla's `-o FILE -s DIR`).
    FileAndStore {
        /// The file, replaced atomically.
        file: PathBuf,
        /// The store.
        store: PathBuf,
    },
}

/// The options of a dump and where its events go. Made by [`Batch::new`]; the other
/// fields are set after.
#[non_exhaustive]
pub struct Batch<'a> {
    /// How each input is dumped.
    pub opts: &'a Options,
    /// `--shard`: only this share of the modules is written.
    pub shard: Option<Shard>,
    /// Where every event goes.
    pub report: &'a dyn Report,
    /// `--soname-copies`: a shared library's symbol file is also written in a store
    /// under its `DT_SONAME` when that differs from its file name, the same bytes, as
    /// Mozilla's symbol scrapers file them (crash reports name a library either way).
    pub soname_copies: bool,
    /// `--skip-existing` with a server to ask: modules it has are not dumped.
    #[cfg(feature = "net")]
    pub remote: Option<&'a Remote>,
}

/// What a batch into a store did.
#[derive(Debug, Default)]
pub struct Summary {
    /// The symbol files written (a universal binary's slices make several per input).
    pub written: Vec<PathBuf>,
    /// Inputs that failed, each already told as [`Event::Failed`].
    pub failures: Vec<Failure>,
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
    /// Asked for by id and not on any server.
    NotFound(Unavailable),
    /// An object file that is not a module of its own (`-v` says why).
    Companion,
    /// Not an object file, met while walking a directory.
    NotObject,
    Failed(Failure),
}

impl<'a> Batch<'a> {
    /// Dumps as `opts` says, telling `report`: no shard, no SONAME copies, no server
    /// asked before dumping.
    pub fn new(opts: &'a Options, report: &'a dyn Report) -> Batch<'a> {
        Batch {
            opts,
            shard: None,
            report,
            soname_copies: false,
            #[cfg(feature = "net")]
            remote: None,
        }
    }
}

impl Batch<'_> {
    /// Dumps `input` and writes its symbol file to `to`, on the library's worker
    /// threads; the paths written (none when it went to standard output; two when a
    /// SONAME copy was made).
    pub fn one(&self, input: &Path, to: &Destination) -> Result<Vec<PathBuf>, Failure> {
        crate::workers::run(self.opts.jobs, || {
            self.dump_and_write(self.opts, input, to, None)
        })
        .map_err(Failure::Threads)?
    }

    /// Fetches the module `want` names by id (see [`crate::batch::byid`]) and writes its
    /// symbol file to `to`, as [`Batch::one`] does for a file on disk.
    pub fn by_id(&self, want: &ById, to: &Destination) -> Result<Vec<PathBuf>, Failure> {
        let local = want.fetch(self.opts).map_err(Failure::Unavailable)?;
        for problem in &local.problems {
            self.report.event(&Event::Server {
                about: Some(Path::new(&want.file)),
                warning: problem,
            });
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
        .map_err(Failure::Threads)?
    }

    /// Every module of a missing-symbols list (see [`crate::batch::missing`]) fetched by id
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
        let mut outcomes = outcomes.unwrap_or_else(|e| vec![Stored::Failed(Failure::Threads(e))]);
        outcomes.extend(elsewhere.iter().map(|_| Stored::OtherShard));
        self.summarize(outcomes, Vec::new(), started)
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
            && let Some(id) = &debug_id
            && self.on_server(&row.file, id)
        {
            return Stored::OnServer;
        }
        let to = Destination::Store(store.to_path_buf());
        match self.by_id(row, &to) {
            Ok(written) => Stored::Dumped(written),
            Err(Failure::BrokenPipe) => Stored::Dumped(Vec::new()),
            Err(Failure::Unavailable(u)) if u.not_found() => Stored::NotFound(u),
            Err(e) => self.failed(e),
        }
    }

    /// Every input, and every object file under the directories and in the archives
    /// among them, into the symbol store `store`, in parallel. At most as many files are
    /// in flight as there are threads, so memory stays bounded by the largest few
    /// inputs. Debug files whose binary is not in the run are dumped on their own.
    pub fn store(&self, paths: &[PathBuf], store: &Path, skip_existing: bool) -> Summary {
        let started = Instant::now();
        let inputs = unpack::inputs(paths, store, self.opts.jobs, self.report);
        let mut opts = self.opts.clone();
        opts.debug_dirs.extend(inputs.debug_dirs.iter().cloned());
        let run = Batch {
            opts: &opts,
            shard: self.shard,
            report: self.report,
            soname_copies: self.soname_copies,
            #[cfg(feature = "net")]
            remote: self.remote,
        };
        // An input given by itself is dumped whatever it is; an archive given is read
        // as its members, so found again in a directory given beside it, it is a file
        // of that directory like any other.
        let walked = |f: &Path| !inputs.given.iter().any(|p| p == f);
        let early = (inputs.failures, started);
        run.store_files(&inputs.paths, &walked, store, skip_existing, early)
    }

    fn store_files(
        &self,
        paths: &[PathBuf],
        walked: &(dyn Fn(&Path) -> bool + Sync),
        store: &Path,
        skip_existing: bool,
        (early, started): (Vec<Failure>, Instant),
    ) -> Summary {
        let (files, unreadable) = tree::files(paths);
        let census = crate::workers::run(self.opts.jobs, || {
            census::Census::take(self.opts, &files, walked)
        })
        .unwrap_or_else(|_| census::Census::take(self.opts, &files, walked));
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
                                        let look = &census.looks[i];
                                        self.store_one(store, file, look, &census, &claim)
                                    })
                                };
                                let outcome = match &own {
                                    Some(pool) => pool.install(one),
                                    None => crate::workers::run(self.opts.jobs, one)
                                        .unwrap_or_else(|e| Stored::Failed(Failure::Threads(e))),
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
                let e = Failure::Threads(e);
                self.report.event(&Event::Failed(&e));
                return Summary {
                    written: Vec::new(),
                    failures: vec![e],
                };
            }
        };
        let mut early = early;
        early.extend(
            unreadable
                .into_iter()
                .map(|(path, source)| Failure::Directory { path, source }),
        );
        self.summarize(outcomes, early, started)
    }

    /// Tells that an input failed; its outcome.
    fn failed(&self, e: Failure) -> Stored {
        self.report.event(&Event::Failed(&e));
        Stored::Failed(e)
    }

    /// Whether `--skip-existing` has a server to ask.
    fn asks_a_server(&self) -> bool {
        #[cfg(feature = "net")]
        return self.remote.is_some();
        #[cfg(not(feature = "net"))]
        false
    }

    /// Whether the server asked (if any) has the symbol file of module `name`, `id`; a
    /// server that cannot answer is told, once.
    fn on_server(&self, name: &str, id: &str) -> bool {
        #[cfg(feature = "net")]
        if let Some(remote) = self.remote {
            let tell = |warning: &Warning| {
                self.report.event(&Event::Server {
                    about: None,
                    warning,
                })
            };
            return remote.has(name, id, &tell);
        }
        let _ = (name, id);
        false
    }

    /// Counts the outcomes, tells the failures met outside any input's dump (unreadable
    /// directories; damaged archives, told before) and what the batch did.
    fn summarize(&self, outcomes: Vec<Stored>, early: Vec<Failure>, started: Instant) -> Summary {
        let count = |f: fn(&Stored) -> bool| outcomes.iter().filter(|o| f(o)).count();
        let mut counts = Counts {
            dumped: count(|o| matches!(o, Stored::Dumped(_))),
            not_on_any_server: count(|o| matches!(o, Stored::NotFound(_))),
            in_store: count(|o| matches!(o, Stored::Existing)),
            on_server: self
                .asks_a_server()
                .then(|| count(|o| matches!(o, Stored::OnServer))),
            companions: count(|o| matches!(o, Stored::Companion)),
            other_shards: self
                .shard
                .map(|shard| (count(|o| matches!(o, Stored::OtherShard)), shard)),
            ..Counts::default()
        };
        let mut summary = Summary::default();
        for o in outcomes {
            match o {
                Stored::Dumped(paths) => summary.written.extend(paths),
                Stored::Failed(e) => summary.failures.push(e),
                Stored::NotFound(u) => self.report.event(&Event::NotOnServer(&u)),
                Stored::Existing
                | Stored::OnServer
                | Stored::Companion
                | Stored::NotObject
                | Stored::OtherShard => {}
            }
        }
        for e in early {
            if matches!(e, Failure::Directory { .. }) {
                self.report.event(&Event::Failed(&e));
            }
            summary.failures.push(e);
        }
        counts.failed = summary.failures.len();
        counts.elapsed = started.elapsed();
        self.report.event(&Event::Finished {
            counts: &counts,
            failures: &summary.failures,
        });
        summary
    }

    /// One file of a store batch, as its look found it: opened again only to be dumped
    /// (its look and its census, shard and store checks read nothing more of it).
    fn store_one(
        &self,
        store: &Path,
        file: &Path,
        look: &census::Look,
        census: &census::Census,
        claim: &Claim,
    ) -> Stored {
        if let Some(role) = &look.role
            && let Some(passed_over) = self.pass_over(file, role)
        {
            return passed_over;
        }
        let mut dumps: Vec<&(Options, Option<Module>)> = look.dumps.iter().collect();
        if let Some(tree::Role::DebugFile(why)) = &look.role {
            dumps.retain(|(_, header)| !census.claims(file, header.as_ref()));
            if dumps.is_empty() {
                self.report.event(&Event::Skipped {
                    input: file,
                    why: *why,
                });
                return Stored::Companion;
            }
        }
        if let Some(shard) = self.shard {
            dumps.retain(|(_, header)| in_shard(shard, header.as_ref(), file));
            if dumps.is_empty() {
                return Stored::OtherShard;
            }
        }
        if claim.first_wins {
            let found: Vec<Found> = dumps
                .iter()
                .map(|(_, header)| self.already_there(header.as_ref(), store, claim))
                .collect();
            if found.iter().all(|f| *f == Found::InStore) {
                return Stored::Existing;
            }
            if found.iter().all(|f| *f != Found::Nowhere) {
                return Stored::OnServer;
            }
        }
        // A .dSYM bundle given stands for the DWARF file inside it.
        let input = match crate::locate::resolve_dsym_bundle(file)
            .and_then(|f| crate::load::Input::open(&f))
        {
            Ok(input) => input,
            Err(e) => return self.failed(e.into()),
        };
        let to = Destination::Store(store.to_path_buf());
        let mut written = Vec::new();
        let result = dumps.iter().try_for_each(|(o, _)| {
            let dump = crate::dumping::dump_opened(&input, o)?;
            written.extend(self.write_dump(o, file, dump, &to, Some(claim))?);
            Ok(())
        });
        match result {
            Ok(()) | Err(Failure::BrokenPipe) => Stored::Dumped(written),
            Err(e) => self.failed(e),
        }
    }

    /// Where the symbol file of the dump whose header is `header` already is: in
    /// `store`, on the server asked, or nowhere. A file in the store that an input of
    /// this run wrote does not count: that input and this one are the same module, and
    /// the claim rule picks which of them stays, whichever finished first.
    fn already_there(&self, header: Option<&Module>, store: &Path, claim: &Claim) -> Found {
        let Some(module) = header else {
            return Found::Nowhere;
        };
        let Ok(path) = crate::breakpad::store::store_path(store, module) else {
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
        match self.on_server(&module.name, module.debug_id.as_ref()) {
            true => Found::OnServer,
            false => Found::Nowhere,
        }
    }

    /// What a file met in a tree is, when it is not a module to dump (a debug file is
    /// decided by the caller).
    fn pass_over(&self, file: &Path, role: &tree::Role) -> Option<Stored> {
        match role {
            tree::Role::Module | tree::Role::DebugFile(_) => None,
            tree::Role::NotObject => Some(Stored::NotObject),
            tree::Role::Unreadable(source) => Some(self.failed(Failure::Unreadable {
                path: file.to_path_buf(),
                source: io::Error::new(source.kind(), source.to_string()),
            })),
            tree::Role::Companion(why) => {
                self.report.event(&Event::Skipped {
                    input: file,
                    why: *why,
                });
                Some(Stored::Companion)
            }
        }
    }

    /// Dumps `input` and writes its symbol file; the paths written.
    fn dump_and_write(
        &self,
        opts: &Options,
        input: &Path,
        to: &Destination,
        claim: Option<&Claim>,
    ) -> Result<Vec<PathBuf>, Failure> {
        let dump = crate::dumping::dump(input, opts)?;
        self.write_dump(opts, input, dump, to, claim)
    }

    /// Writes the symbol file of `input`'s `dump`; the paths written.
    fn write_dump(
        &self,
        opts: &Options,
        input: &Path,
        result: Dump,
        to: &Destination,
        claim: Option<&Claim>,
    ) -> Result<Vec<PathBuf>, Failure> {
        if opts.require_stack_records && !result.module.has_stack_records() {
            // Mozilla's `--check-cfi`: nothing is written.
            return Err(Failure::NoStackRecords {
                input: input.to_path_buf(),
                why: result.no_stack_records,
            });
        }
        self.tell_where_debug_info_came_from(input, &result);
        let mut warnings = result.warnings;
        // Warnings are told after writing: it finds some of them.
        let written = self.write(input, &result.module, to, claim, &mut warnings);
        self.tell_warnings(input, &warnings);
        written
    }

    /// The debug file used, servers that failed, and where debug information was looked
    /// for when none was found.
    fn tell_where_debug_info_came_from(&self, input: &Path, dump: &Dump) {
        if let Some(debug_file) = &dump.debug_file {
            self.report.event(&Event::DebugFile { input, debug_file });
        }
        for warning in dump
            .warnings
            .iter()
            .filter(|w| w.kind == WarningKind::Server)
        {
            self.report.event(&Event::Server {
                about: Some(input),
                warning,
            });
        }
        if let Some(why) = &dump.no_stack_records {
            self.report.event(&Event::NoStackRecords { input, why });
        }
        if let Some(search) = &dump.no_debug_info {
            self.report.event(&Event::NoDebugInfo { input, search });
        }
    }

    /// The file's own problems (a server's were told before).
    fn tell_warnings(&self, input: &Path, warnings: &Warnings) {
        let warnings: Vec<&Warning> = warnings
            .iter()
            .filter(|w| w.kind != WarningKind::Server)
            .collect();
        self.report.event(&Event::Warnings {
            input,
            warnings: &warnings,
        });
    }

    /// Writes `module` to `to`, adding what writing left out to `warnings`; in a store
    /// run, only if `claim` wins its path. The paths written.
    fn write(
        &self,
        input: &Path,
        module: &crate::model::module::Module,
        to: &Destination,
        claim: Option<&Claim>,
        warnings: &mut Warnings,
    ) -> Result<Vec<PathBuf>, Failure> {
        let in_store = |dir: &Path| {
            crate::breakpad::store::store_path(dir, module).map_err(|source| Failure::StorePath {
                input: input.to_path_buf(),
                source,
            })
        };
        let mut written = Vec::new();
        let (path, store) = match to {
            Destination::Stdout => {
                warnings.extend(write_stdout(module, &self.opts.into())?);
                return Ok(written);
            }
            Destination::File(file) => (file.clone(), None),
            Destination::Store(dir) => (in_store(dir)?, Some(dir)),
            Destination::FileAndStore { file, store } => {
                // The store's copy first, as Mozilla's dumper writes them; what writing
                // left out is told once, with the file's.
                let stored = in_store(store)?;
                if self.write_file(input, module, &stored, None)?.1 {
                    written.extend(self.soname_copy(input, module, store, &stored, warnings)?);
                }
                (file.clone(), None)
            }
        };
        let (left_out, committed) = self.write_file(input, module, &path, claim)?;
        warnings.extend(left_out);
        written.push(path.clone());
        if let Some(store) = store.filter(|_| committed) {
            written.extend(self.soname_copy(input, module, store, &path, warnings)?);
        }
        Ok(written)
    }

    /// With `--soname-copies`, the symbol file `stored` of the shared library `module`
    /// copied under its `DT_SONAME` in `store` when that is not its name: where it went.
    /// A SONAME that cannot be a store path (`..`, a separator) makes no copy, and a
    /// warning says so: the symbol file under the module's own name stands.
    fn soname_copy(
        &self,
        input: &Path,
        module: &crate::model::module::Module,
        store: &Path,
        stored: &Path,
        warnings: &mut Warnings,
    ) -> Result<Option<PathBuf>, Failure> {
        let Some(soname) = module
            .soname
            .as_deref()
            .filter(|s| self.soname_copies && *s != module.name)
        else {
            return Ok(None);
        };
        let path = match crate::breakpad::store::store_path_as(store, module, soname) {
            Ok(path) => path,
            Err(unsafe_name) => {
                warnings.add(
                    Warning::new(
                        WarningKind::Output,
                        format!("no copy under its SONAME: {unsafe_name}"),
                    )
                    .on("DT_SONAME"),
                );
                return Ok(None);
            }
        };
        let fail = |source: io::Error| Failure::Write {
            path: path.clone(),
            source,
        };
        // The bytes written, not the module written again: the copy is the same file.
        let mut from = std::fs::File::open(stored).map_err(fail)?;
        let mut file = AtomicFile::create(&path).map_err(fail)?;
        io::copy(&mut from, file.writer()).map_err(fail)?;
        file.commit().map_err(fail)?;
        self.report.event(&Event::Written { input, path: &path });
        Ok(Some(path))
    }

    /// Writes `module` at `path` atomically, in a store run only if `claim` wins it, and
    /// tells where it went; gives back what writing left out.
    fn write_file(
        &self,
        input: &Path,
        module: &crate::model::module::Module,
        path: &Path,
        claim: Option<&Claim>,
    ) -> Result<(Warnings, bool), Failure> {
        let path = path.to_path_buf();
        let fail = |source: io::Error| Failure::Write {
            path: path.clone(),
            source,
        };
        let mut file = AtomicFile::create(&path).map_err(fail)?;
        let how = crate::breakpad::WriteOptions::from(self.opts);
        let left_out = crate::breakpad::write_module(module, &how, file.writer()).map_err(fail)?;
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
        self.report.event(&match committed {
            true => Event::Written { input, path: &path },
            false => Event::SameModule { input, kept: &path },
        });
        Ok((left_out, committed))
    }

    /// Sends the symbol files at `paths`; false if any failed (each failure is told).
    #[cfg(feature = "net")]
    pub fn upload(&self, uploader: &Uploader, paths: &[PathBuf]) -> bool {
        let mut files = Vec::with_capacity(paths.len());
        let mut failed = 0usize;
        for p in paths {
            match SymbolFile::read(p) {
                Ok(f) => files.push(f),
                Err(e) => {
                    self.report.event(&Event::NotSent(&e));
                    failed += 1;
                }
            }
        }
        let (mut sent, mut already_there) = (0usize, 0usize);
        for (what, result) in uploader.send(&files) {
            match result {
                Ok(Sent::Uploaded) => sent += 1,
                Ok(Sent::AlreadyThere) => already_there += 1,
                Err(_) => failed += 1,
            }
            self.report.event(&Event::Sent {
                what: &what,
                result: &result,
            });
        }
        self.report.event(&Event::Uploaded {
            url: &crate::fetch::redact::url(&uploader.url),
            sent,
            already_there,
            failed,
        });
        failed == 0
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
fn contained(report: &dyn Report, input: &str, dump: impl FnOnce() -> Stored) -> Stored {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(dump)) {
        Ok(stored) => stored,
        Err(payload) => {
            let e = Failure::Panicked {
                input: input.to_string(),
                why: crate::contain::panic_message(payload.as_ref()).unwrap_or_default(),
            };
            report.event(&Event::Failed(&e));
            Stored::Failed(e)
        }
    }
}

/// Whether the dump whose header is `header` is `shard`'s, by the name and debug id
/// that header gives. A file whose header cannot be read goes by its path, so that one
/// shard, and only one, reports it.
fn in_shard(shard: Shard, header: Option<&Module>, file: &Path) -> bool {
    match header {
        Some(h) => shard.takes(&h.name, h.debug_id.as_ref()),
        None => shard.takes(&file.to_string_lossy(), ""),
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
fn write_stdout(
    module: &crate::model::module::Module,
    how: &crate::breakpad::WriteOptions,
) -> Result<Warnings, Failure> {
    let stdout = io::stdout();
    let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
    let written = crate::breakpad::write_module(module, how, &mut out);
    match written.and_then(|left_out| out.flush().map(|()| left_out)) {
        Ok(left_out) => Ok(left_out),
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
        Err(e) => Err(Failure::Stdout(e)),
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

    struct Failures(Mutex<Vec<String>>);

    impl Report for Failures {
        fn event(&self, event: &Event<'_>) {
            if let Event::Failed(e) = event {
                self.0.lock().unwrap().push(e.to_string());
            }
        }
    }

    #[test]
    fn a_panic_fails_its_input_only() {
        let told = Failures(Mutex::new(Vec::new()));
        let failed = contained(&told, "m.so", || panic!("boom"));
        assert!(matches!(
            &failed,
            Stored::Failed(Failure::Panicked { input, why }) if input == "m.so" && why == "boom"
        ));
        let fine = contained(&told, "n.so", || Stored::Existing);
        assert!(matches!(fine, Stored::Existing));
        let told = told.0.into_inner().unwrap();
        assert_eq!(told.len(), 1);
        assert!(told[0].starts_with("m.so: internal error") && told[0].ends_with(": boom"));
    }
}
