//! The `dumpsyms` command: flags in (see `cli.rs`), symbol files out through the
//! library's [`dumpsyms::batch`], lines to stderr, results to exit codes.

mod args;
mod cli;
mod describe;
mod peers;
mod words;

use std::io;
use std::os::fd::AsFd as _;
use std::process::ExitCode;

use clap::Parser;
use dumpsyms::batch::{Batch, Failure};

use cli::{Cli, Mode, Run};
use words::{Stderr, say};

/// See Cargo.toml for why.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's options, read before `main`. By default jemalloc gives allocations of
/// 8 MiB and more an arena of their own that returns their pages to the kernel as soon
/// as they are freed; a large dump frees and allocates such buffers (a unit's inflated
/// bytes, its DIE index) unit after unit, and every one then came back as fresh pages,
/// each a page fault: a quarter of ceph-osd's 111k faults and about a tenth of its
/// system time. In the common arenas they are reused. What is left free there goes back
/// to the kernel after 2 s rather than jemalloc's 10: with the large buffers kept
/// there, a tree's two modules in flight held 540–715 MiB at their peak where they had
/// held 420–630 (docs/PERFORMANCE.md). `MALLOC_CONF` in the environment
/// (`_RJEM_MALLOC_CONF`) is read after this and overrides it.
#[cfg(not(target_env = "msvc"))]
#[unsafe(export_name = "_rjem_malloc_conf")]
static MALLOC_CONF: Option<&'static std::ffi::c_char> =
    // SAFETY: the pointer is to the first byte of a static NUL-terminated string.
    Some(unsafe { &*c"oversize_threshold:0,dirty_decay_ms:2000".as_ptr() });

fn main() -> ExitCode {
    // Swift's demangler runs in helper copies of this executable (src/demangle/
    // swift_helper.rs): this may be one.
    if let Some(code) = dumpsyms::swift_demangler(std::env::current_exe().ok()) {
        return ExitCode::from(code);
    }
    // Every URL the command line gives (`--symbols-url`, `--upload`, a symbol path):
    // its password and keys are never printed, whatever message quotes them.
    for arg in std::env::args_os().skip(1) {
        let arg = arg.to_string_lossy();
        if let Some(at) = arg.find("://") {
            let start = arg[..at].rfind(['=', '*']).map_or(0, |p| p + 1);
            dumpsyms::hide_secrets_of(&arg[start..]);
        }
    }
    // The other dumpers' command lines, read as theirs (peers.rs).
    let mut argv = std::env::args_os();
    let program = argv.next().unwrap_or_else(|| "dumpsyms".into());
    let cwd = std::env::current_dir().unwrap_or_default();
    let translated = match peers::translate(argv.collect(), &cwd) {
        Ok(t) => t,
        Err(why) => {
            say(&format!("dumpsyms: error: {why}"));
            return ExitCode::from(2);
        }
    };
    let run = match Cli::parse_from(std::iter::once(program).chain(translated.args)).into_run() {
        Ok(run) => run,
        Err(refused) => {
            say(&format!("dumpsyms: error: {}", refused.message));
            return ExitCode::from(if refused.usage { 2 } else { 1 });
        }
    };
    if run.verbose {
        for note in &translated.notes {
            say(&format!("dumpsyms: read {note}"));
        }
    }
    let stderr = Stderr::new(&run);
    let mut batch = Batch::new(&run.opts, &stderr);
    batch.shard = run.shard;
    batch.soname_copies = run.soname_copies;
    batch.remote = run.remote.as_ref();
    let ok = match &run.mode {
        Mode::Completions(shell) => describe::print(|out| describe::completions(*shell, out)),
        Mode::Man => describe::print(describe::manual),
        Mode::Symbolize {
            sources,
            json,
            input,
        } => symbolize(sources, *json, input.as_deref()),
        Mode::ListArch(inputs) => list_arch(inputs),
        Mode::One { input, to } => one_written(&batch, &run, batch.one(input, to)),
        Mode::ById { want, to } => one_written(&batch, &run, batch.by_id(want, to)),
        Mode::Missing {
            list,
            store,
            skip_existing,
        } => missing(&batch, &run, list, store, *skip_existing),
        Mode::Store {
            paths,
            store,
            skip_existing,
        } => {
            let summary = batch.store(paths, store, *skip_existing);
            let uploaded = match &run.uploader {
                Some(u) if !summary.written.is_empty() => batch.upload(u, &summary.written),
                _ => true,
            };
            summary.failures.is_empty() && uploaded
        }
    };
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// `--missing`: every row of the list fetched, dumped and stored (and uploaded); false
/// if the list cannot be read, has rows that cannot be, or any row failed. Rows no
/// server has are counted, not failures: most of a crash list's modules are on none.
fn missing(
    batch: &Batch,
    run: &Run,
    list: &std::path::Path,
    store: &std::path::Path,
    skip_existing: bool,
) -> bool {
    let (rows, bad) = match dumpsyms::batch::missing::read(list) {
        Ok(read) => read,
        Err(e) => {
            say(&format!("dumpsyms: error: {e}"));
            return false;
        }
    };
    for b in &bad {
        say(&format!(
            "dumpsyms: error: {}:{}: {}",
            list.display(),
            b.line,
            dumpsyms::for_terminal(&b.problem.to_string())
        ));
    }
    let summary = batch.missing(&rows, store, skip_existing);
    let uploaded = match &run.uploader {
        Some(u) if !summary.written.is_empty() => batch.upload(u, &summary.written),
        _ => true,
    };
    bad.is_empty() && summary.failures.is_empty() && uploaded
}

/// The end of a run that writes one symbol file: uploaded if asked; false on failure.
fn one_written(
    batch: &Batch,
    run: &Run,
    written: Result<Vec<std::path::PathBuf>, Failure>,
) -> bool {
    match written {
        Ok(written) => match &run.uploader {
            Some(u) if !written.is_empty() => batch.upload(u, &written),
            _ => true,
        },
        Err(Failure::BrokenPipe) => true,
        Err(e) => {
            say(&format!("dumpsyms: error: {e}"));
            false
        }
    }
}

/// `dumpsyms symbolize`: false only when the report could not be read or written.
fn symbolize(
    sources: &dumpsyms::symbolize::Sources,
    json: bool,
    input: Option<&std::path::Path>,
) -> bool {
    use dumpsyms::symbolize::{Format, Symbolizer};
    // A file or pipe read as it comes: what is answered goes out whenever the input
    // has nothing more ready, so `adb logcat | dumpsyms symbolize` prints each line
    // at once.
    let report = match input {
        Some(path) if path.as_os_str() != "-" => std::fs::File::open(path),
        _ => io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map(std::fs::File::from),
    };
    let report = match report {
        Ok(f) => f,
        Err(e) => {
            let name = input.map_or("standard input".into(), |p| p.display().to_string());
            say(&format!("dumpsyms: error: {name}: {e}"));
            return false;
        }
    };
    let mut symbolizer = Symbolizer::with_sources(sources.clone());
    let mut out = io::BufWriter::new(io::stdout().lock());
    let format = if json { Format::Json } else { Format::Text };
    let result = symbolizer
        .run_live(report, &mut out, format)
        .and_then(|tally| io::Write::flush(&mut out).map(|()| tally));
    for warning in symbolizer.warnings() {
        say(&format!("dumpsyms: warning: {warning}"));
    }
    match result {
        Ok(tally) => {
            say(&format!(
                "dumpsyms: {} frame(s) resolved, {} not",
                tally.resolved, tally.unresolved
            ));
            true
        }
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => true,
        Err(e) => {
            say(&format!("dumpsyms: error: {e}"));
            false
        }
    }
}

/// `--list-arch`: each input's architectures, a line each; false if any failed.
fn list_arch(inputs: &[std::path::PathBuf]) -> bool {
    let mut ok = true;
    for input in inputs {
        match dumpsyms::architectures(input) {
            Ok(arches) => {
                let names: Vec<String> = arches.iter().map(|a| a.to_string()).collect();
                println!("{}: {}", input.display(), names.join(" "))
            }
            Err(e) => {
                say(&format!("dumpsyms: error: {e}"));
                ok = false;
            }
        }
    }
    ok
}
