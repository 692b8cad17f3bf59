//! The `dumpsyms` command: flags in, symbol files out, errors to exit codes.

use std::io::{self, IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::Parser;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;

/// See Cargo.toml for why.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use dumpsyms::output::AtomicFile;
use dumpsyms::{Options, dump, write_module};

/// Writes Breakpad symbol files (.sym) from ELF, Mach-O and PE binaries with their DWARF
/// or PDB debug info.
///
/// Without --store, the first PATH is the binary and any further PATHs are directories to
/// search for its separate debug file, as with Breakpad's dump_syms; a further PATH that
/// is a file is the PDB of a PE (or the PE of a PDB). With --store, every
/// PATH is a binary to dump, or a directory whose object files are all dumped.
#[derive(Parser, Debug)]
#[command(name = "dumpsyms", version, max_term_width = 100)]
struct Cli {
    /// Output the module header (MODULE and INFO records) only
    #[arg(short = 'i')]
    header_only: bool,
    /// Do not write STACK CFI records
    #[arg(short = 'c')]
    no_cfi: bool,
    /// Write INLINE_ORIGIN and INLINE records for inlined calls
    #[arg(short = 'd', long = "inlines")]
    inlines: bool,
    /// Write the optional 'm' field on FUNC and PUBLIC records whose address several
    /// symbols share
    #[arg(short = 'm')]
    multiple: bool,
    /// Module name to write instead of the file's basename
    #[arg(short = 'n', value_name = "NAME")]
    name: Option<String>,
    /// Operating system to write instead of Linux
    #[arg(short = 'o', value_name = "OS")]
    os: Option<String>,
    /// Debug id to write instead of the one computed from the build ID
    #[arg(short = 'b', value_name = "ID")]
    id: Option<String>,
    /// Keep absolute addresses instead of making them relative to the load address
    #[arg(short = 'a')]
    keep_load_address: bool,
    /// Do not follow DWARF references between compilation units
    #[arg(short = 'r')]
    no_cross_unit_refs: bool,
    /// Print every warning (damaged or unsupported debug info) to stderr
    #[arg(short = 'v')]
    verbose: bool,
    /// Write the symbol file to FILE (atomically) instead of standard output
    #[arg(long, value_name = "FILE", conflicts_with = "store")]
    output: Option<PathBuf>,
    /// Write each symbol file to DIR/<name>/<debug id>/<name>.sym, the symbol-server layout;
    /// a PATH that is a directory is walked and each object file in it dumped
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
    /// Send each symbol file written to the symbol server at URL (with --store or
    /// --output); a key or token comes from DUMPSYMS_UPLOAD_TOKEN
    #[arg(long, value_name = "URL")]
    upload: Option<String>,
    /// The server's protocol: sym-upload-v1 (Breakpad's multipart POST), sym-upload-v2
    /// (Google's, API key) or tecken (Mozilla's, zips and Auth-Token)
    #[arg(
        long = "upload-protocol",
        value_name = "PROTOCOL",
        default_value = "sym-upload-v1",
        requires = "upload"
    )]
    upload_protocol: dumpsyms::upload::Protocol,
    /// With --store: leave inputs whose symbol file is already in the store alone
    #[arg(long = "skip-existing", requires = "store")]
    skip_existing: bool,
    /// No progress bar, summary or warnings; errors only
    #[arg(short = 'q', long = "quiet", conflicts_with = "verbose")]
    quiet: bool,
    /// A directory to search for separate debug files (repeatable)
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Rewrite FILE paths starting with OLD to start with NEW instead, after normalizing
    /// them (repeatable; the first match wins, as with -fdebug-prefix-map)
    #[arg(long = "prefix-map", value_name = "OLD=NEW", value_parser = dumpsyms::paths::parse_prefix_map)]
    prefix_map: Vec<(String, String)>,
    /// Add an 'INFO KEY value' record, e.g. --extra-info 'VERSION 1.2.3' (repeatable)
    #[arg(long = "extra-info", value_name = "'KEY value'", value_parser = dumpsyms::parse_extra_info)]
    extra_info: Vec<(String, String)>,
    /// Where to find PDBs, in _NT_SYMBOL_PATH syntax: SRV*CACHE*URL fetches
    /// <URL>/<pdb>/<id>/<pdb> into CACHE; a plain directory is searched (repeatable;
    /// default: $_NT_SYMBOL_PATH)
    #[arg(long = "symbol-server", value_name = "SRV*CACHE*URL")]
    symbol_server: Vec<String>,
    /// Give up on a symbol server after SECS without progress (no data, or under 100
    /// bytes); as DEBUGINFOD_TIMEOUT does for debuginfod [default: 10]
    #[arg(long = "server-timeout", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    server_timeout: Option<u64>,
    /// Give up on a symbol-server download after SECS in all (DEBUGINFOD_MAXTIME's rule)
    #[arg(long = "server-max-time", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    server_max_time: Option<u64>,
    /// Refuse symbol-server files larger than BYTES (DEBUGINFOD_MAXSIZE's rule)
    /// [default: 4 GiB]
    #[arg(long = "server-max-size", value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    server_max_size: Option<u64>,
    /// Do not fetch missing debug files from the debuginfod servers in DEBUGINFOD_URLS
    #[arg(long = "no-debuginfod")]
    no_debuginfod: bool,
    /// The slice of a universal (fat) Mach-O binary to dump: x86_64, arm64, x86 (i386)
    #[arg(long, value_name = "ARCH")]
    arch: Option<String>,
    /// Print the architectures of each input (the slices of a universal binary) and exit
    #[arg(long = "list-arch")]
    list_arch: bool,
    /// Number of threads (default: one per CPU); the output is the same for any number
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// The binary [and debug directories], or with --store the binaries
    #[arg(required = true, value_name = "PATH")]
    paths: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (inputs, mut debug_dirs) = if cli.store.is_some() || cli.list_arch {
        (cli.paths.clone(), Vec::new())
    } else {
        (cli.paths[..1].to_vec(), cli.paths[1..].to_vec())
    };
    // Beside a PE, a file (not a directory) is its PDB; beside a PDB, its PE.
    let companion = debug_dirs
        .iter()
        .position(|p| p.is_file())
        .map(|i| debug_dirs.remove(i));
    debug_dirs.extend(cli.debug_dirs.iter().cloned());
    let symbol_spec = if cli.symbol_server.is_empty() {
        std::env::var("_NT_SYMBOL_PATH").unwrap_or_default()
    } else {
        cli.symbol_server.join(";")
    };
    let symbol_path = match dumpsyms::fetch::symsrv::SymbolPath::parse(&symbol_spec) {
        Ok(p) if p.stores.is_empty() => None,
        Ok(mut p) => {
            let limits = &mut p.limits;
            if let Some(t) = cli.server_timeout {
                limits.timeout = std::time::Duration::from_secs(t);
            }
            limits.max_time = cli.server_max_time.map(std::time::Duration::from_secs);
            if let Some(n) = cli.server_max_size {
                limits.max_size = n;
            }
            Some(p)
        }
        Err(e) => {
            say(&format!("dumpsyms: error: --symbol-server: {e}"));
            return ExitCode::from(2);
        }
    };
    let opts = Options {
        header_only: cli.header_only,
        cfi: !cli.no_cfi,
        inlines: cli.inlines,
        multiple_field: cli.multiple,
        name: cli.name.clone(),
        os: cli.os.clone(),
        debug_id: cli.id.clone(),
        keep_load_address: cli.keep_load_address,
        cross_unit_refs: !cli.no_cross_unit_refs,
        debug_dirs,
        arch: cli.arch.clone(),
        source_paths: dumpsyms::paths::SourcePaths {
            prefix_map: cli.prefix_map.clone(),
        },
        extra_info: cli.extra_info.clone(),
        debuginfod: if cli.no_debuginfod {
            None
        } else {
            dumpsyms::fetch::debuginfod::Debuginfod::from_env()
        },
        symbol_path,
        companion,
    };
    if cli.list_arch {
        let mut failed = false;
        for input in &inputs {
            match dumpsyms::architectures(input) {
                Ok(arches) => println!("{}: {}", input.display(), arches.join(" ")),
                Err(e) => {
                    say(&format!("dumpsyms: error: {e}"));
                    failed = true;
                }
            }
        }
        return if failed {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        };
    }
    if let Some(id) = &opts.debug_id
        && (id.is_empty() || id.contains(char::is_whitespace))
    {
        say("dumpsyms: error: -b: a debug id cannot be empty or contain spaces");
        return ExitCode::from(2);
    }
    let uploader = match &cli.upload {
        None => None,
        Some(_) if cli.store.is_none() && cli.output.is_none() => {
            say(
                "dumpsyms: error: --upload sends the files written: use it with --store or --output",
            );
            return ExitCode::from(2);
        }
        Some(url) => match dumpsyms::upload::Uploader::new(url, cli.upload_protocol) {
            Ok(u) => Some(u),
            Err(e) => {
                say(&format!("dumpsyms: error: {e}"));
                return ExitCode::from(2);
            }
        },
    };
    // As large as the main thread's: GNU's demangler parses into stack arrays (up to
    // ~1.2 MiB for the longest name it is given) and recursion on deep names adds more.
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(8 << 20);
    if let Some(n) = cli.jobs {
        pool = pool.num_threads(n.into());
    }
    let pool = match pool.build() {
        Ok(p) => p,
        Err(e) => {
            say(&format!(
                "dumpsyms: error: cannot start worker threads: {e}"
            ));
            return ExitCode::FAILURE;
        }
    };
    if let Some(store) = &cli.store {
        return run_store(&cli, &opts, &pool, store, uploader.as_ref());
    }
    let input = &inputs[0];
    if input.is_dir() && !dumpsyms::tree::is_dsym_bundle(input) {
        say(&format!(
            "dumpsyms: error: {}: is a directory; to dump every object file under it, use --store DIR",
            input.display()
        ));
        return ExitCode::FAILURE;
    }
    let report = Report::plain(&cli);
    match pool.install(|| run_one(&cli, &opts, input, &report)) {
        Ok(written) => match (&uploader, written) {
            (Some(u), Some(path)) if !upload(&cli, u, std::slice::from_ref(&path), &report) => {
                ExitCode::FAILURE
            }
            _ => ExitCode::SUCCESS,
        },
        Err(Failure::BrokenPipe) => ExitCode::SUCCESS,
        Err(Failure::Message(m)) => {
            say(&format!("dumpsyms: error: {m}"));
            ExitCode::FAILURE
        }
    }
}

/// One line to stderr, with what came from an input made harmless: control characters
/// escaped, length bounded (see [`dumpsyms::untrusted::for_terminal`]).
fn say(line: &str) {
    eprintln!("{}", dumpsyms::untrusted::for_terminal(line));
}

/// Messages to stderr: above the progress bar when there is one, none but errors with
/// `-q`.
struct Report {
    bar: Option<ProgressBar>,
    quiet: bool,
}

impl Report {
    fn plain(cli: &Cli) -> Report {
        Report {
            bar: None,
            quiet: cli.quiet,
        }
    }

    /// A warning or note; dropped with `-q`.
    fn note(&self, line: String) {
        if !self.quiet {
            self.error(line);
        }
    }

    fn error(&self, line: String) {
        match &self.bar {
            Some(bar) => bar.println(dumpsyms::untrusted::for_terminal(&line)),
            None => say(&line),
        }
    }
}

/// What became of one file of a `--store` run.
enum Stored {
    /// Dumped into these symbol files (a universal binary's slices make several).
    Dumped(Vec<PathBuf>),
    /// Its symbol file was already in the store (`--skip-existing`).
    Existing,
    /// An object file that is not a module of its own (`-v` says why).
    Companion,
    /// Not an object file, met while walking a directory.
    NotObject,
    Failed(String),
}

/// `--store`: every input, and every object file under the directories among them, into
/// the store, in parallel. At most as many files are in flight as there are threads, so
/// memory stays bounded by the largest few inputs.
fn run_store(
    cli: &Cli,
    opts: &Options,
    pool: &rayon::ThreadPool,
    store: &Path,
    uploader: Option<&dumpsyms::upload::Uploader>,
) -> ExitCode {
    let started = Instant::now();
    let (files, unreadable) = dumpsyms::tree::files(&cli.paths);
    let walked = |f: &Path| !cli.paths.iter().any(|p| p == f);
    let bar = (!cli.quiet && io::stderr().is_terminal()).then(|| {
        let bar = ProgressBar::new(files.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{bar:30} {pos}/{len} files {elapsed} {wide_msg}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar
    });
    let report = Report {
        bar,
        quiet: cli.quiet,
    };
    let mut outcomes: Vec<Stored> = Vec::with_capacity(files.len());
    for chunk in files.chunks(pool.current_num_threads().max(1)) {
        let done: Vec<Stored> = pool.install(|| {
            chunk
                .par_iter()
                .map(|file| {
                    if let Some(bar) = &report.bar {
                        bar.set_message(dumpsyms::untrusted::for_terminal(
                            &file.display().to_string(),
                        ));
                    }
                    let outcome = store_one(cli, opts, store, file, walked(file), &report);
                    if let Some(bar) = &report.bar {
                        bar.inc(1);
                    }
                    outcome
                })
                .collect()
        });
        outcomes.extend(done);
    }
    if let Some(bar) = &report.bar {
        bar.finish_and_clear();
    }
    let count = |f: fn(&Stored) -> bool| outcomes.iter().filter(|o| f(o)).count();
    let dumped = count(|o| matches!(o, Stored::Dumped(_)));
    let existing = count(|o| matches!(o, Stored::Existing));
    let companions = count(|o| matches!(o, Stored::Companion));
    let mut failures: Vec<String> = outcomes
        .iter()
        .filter_map(|o| match o {
            Stored::Failed(m) => Some(m.clone()),
            _ => None,
        })
        .collect();
    for (dir, e) in &unreadable {
        let m = format!("{}: cannot read directory: {e}", dir.display());
        say(&format!("dumpsyms: error: {m}"));
        failures.push(m);
    }
    if !cli.quiet {
        say(&format!(
            "dumpsyms: {dumped} dumped, {} skipped ({existing} already in the store, {companions} not modules of their own), {} failed, in {:.1} s",
            existing + companions,
            failures.len(),
            started.elapsed().as_secs_f64()
        ));
    }
    for m in &failures {
        say(&format!("dumpsyms: failed: {m}"));
    }
    let written: Vec<PathBuf> = outcomes
        .into_iter()
        .flat_map(|o| match o {
            Stored::Dumped(paths) => paths,
            _ => Vec::new(),
        })
        .collect();
    let uploaded = match uploader {
        Some(u) if !written.is_empty() => upload(cli, u, &written, &report),
        _ => true,
    };
    if failures.is_empty() && uploaded {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// Sends the symbol files at `paths`; false if any failed (each failure is named).
fn upload(
    cli: &Cli,
    uploader: &dumpsyms::upload::Uploader,
    paths: &[PathBuf],
    report: &Report,
) -> bool {
    use dumpsyms::upload::{Sent, SymbolFile};
    let mut files = Vec::with_capacity(paths.len());
    let mut failed = 0usize;
    for p in paths {
        match SymbolFile::read(p) {
            Ok(f) => files.push(f),
            Err(e) => {
                report.error(format!("dumpsyms: error: upload: {e}"));
                failed += 1;
            }
        }
    }
    let (mut sent, mut there) = (0usize, 0usize);
    for (what, result) in uploader.send(&files) {
        match result {
            Ok(Sent::Uploaded) => {
                sent += 1;
                if cli.verbose {
                    report.note(format!("dumpsyms: uploaded {what}"));
                }
            }
            Ok(Sent::AlreadyThere) => {
                there += 1;
                if cli.verbose {
                    report.note(format!("dumpsyms: {what}: already on the server"));
                }
            }
            Err(e) => {
                report.error(format!("dumpsyms: error: uploading {what}: {e}"));
                failed += 1;
            }
        }
    }
    if !cli.quiet {
        say(&format!(
            "dumpsyms: upload to {}: {sent} sent, {there} already there, {failed} failed",
            uploader.url
        ));
    }
    failed == 0
}

/// One file of a `--store` run. `walked`: found under a directory (so files that are not
/// modules are passed over rather than refused).
fn store_one(
    cli: &Cli,
    opts: &Options,
    store: &Path,
    file: &Path,
    walked: bool,
    report: &Report,
) -> Stored {
    if walked {
        match dumpsyms::tree::role(file) {
            dumpsyms::tree::Role::Module => {}
            dumpsyms::tree::Role::NotObject => return Stored::NotObject,
            dumpsyms::tree::Role::Unreadable(why) => {
                let m = format!("{}: {why}", file.display());
                report.error(format!("dumpsyms: error: {m}"));
                return Stored::Failed(m);
            }
            dumpsyms::tree::Role::Companion(why) => {
                if cli.verbose {
                    report.note(format!("dumpsyms: {}: skipped: {why}", file.display()));
                }
                return Stored::Companion;
            }
        }
    }
    // A universal Mach-O: each slice is a module of its own (unless --arch picks one).
    let variants: Vec<Options> = match (&opts.arch, dumpsyms::architectures(file)) {
        (None, Ok(arches)) if arches.len() > 1 => arches
            .into_iter()
            .map(|arch| Options {
                arch: Some(arch),
                ..opts.clone()
            })
            .collect(),
        _ => vec![opts.clone()],
    };
    if cli.skip_existing
        && variants.iter().all(|o| {
            let header = Options {
                header_only: true,
                ..o.clone()
            };
            dump(file, &header)
                .is_ok_and(|d| dumpsyms::store_path(store, &d.module).is_ok_and(|p| p.is_file()))
        })
    {
        return Stored::Existing;
    }
    let mut written = Vec::new();
    let result = variants.iter().try_for_each(|o| {
        written.extend(run_one(cli, o, file, report)?);
        Ok(())
    });
    match result {
        Ok(()) | Err(Failure::BrokenPipe) => Stored::Dumped(written),
        Err(Failure::Message(m)) => {
            report.error(format!("dumpsyms: error: {m}"));
            Stored::Failed(m)
        }
    }
}

enum Failure {
    /// Standard output was closed by its reader: stop quietly.
    BrokenPipe,
    Message(String),
}

/// Dumps `input` and writes its symbol file; the path written, unless it went to stdout.
fn run_one(
    cli: &Cli,
    opts: &Options,
    input: &Path,
    report: &Report,
) -> Result<Option<PathBuf>, Failure> {
    let result = dump(input, opts).map_err(|e| Failure::Message(e.to_string()))?;
    if cli.verbose
        && let Some(debug) = &result.debug_file
    {
        report.note(format!(
            "dumpsyms: {}: using debug file {}",
            input.display(),
            debug.display()
        ));
    }
    for problem in &result.servers {
        say(&format!(
            "dumpsyms: warning: {}: {problem}",
            input.display()
        ));
    }
    if let Some(search) = &result.no_debug_info {
        say(&format!(
            "dumpsyms: {}: no debug info found; looked for {}. Writing what the binary itself has: symbol-table names and unwind tables{}",
            input.display(),
            search.summary(),
            if cli.verbose {
                ""
            } else {
                " (-v lists every path tried)"
            }
        ));
        if cli.verbose {
            for place in &search.tried {
                say(&format!("dumpsyms: {}: looked in {place}", input.display()));
            }
        }
    }
    let module = &result.module;
    let written = write_one(cli, input, module, report);
    // Reported after writing: unwind records that cannot be expressed are only found
    // while they are rendered.
    let mut warnings = result.warnings.0.clone();
    if let Some(cfi) = &module.cfi {
        warnings.extend(cfi.skipped());
    }
    if cli.verbose {
        for w in &warnings {
            report.note(format!("dumpsyms: warning: {}: {w}", input.display()));
        }
    } else if !warnings.is_empty() {
        report.note(format!(
            "dumpsyms: warning: {}: {} problem(s) in the file (damaged or unsupported sections); some records may be missing (-v lists them)",
            input.display(),
            warnings.len()
        ));
    }
    written
}

fn write_one(
    cli: &Cli,
    input: &Path,
    module: &dumpsyms::Module,
    report: &Report,
) -> Result<Option<PathBuf>, Failure> {
    let target = match (&cli.store, &cli.output) {
        (Some(dir), _) => Some(
            dumpsyms::store_path(dir, module)
                .map_err(|e| Failure::Message(format!("{}: {e}", input.display())))?,
        ),
        (None, Some(file)) => Some(file.clone()),
        (None, None) => None,
    };
    match target {
        Some(path) => {
            let fail =
                |e: io::Error| Failure::Message(format!("{}: cannot write: {e}", path.display()));
            let mut file = AtomicFile::create(&path).map_err(fail)?;
            write_module(module, file.writer()).map_err(fail)?;
            file.commit().map_err(fail)?;
            if cli.verbose {
                report.note(format!("dumpsyms: wrote {}", path.display()));
            }
            Ok(Some(path))
        }
        None => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let r = write_module(module, &mut out).and_then(|()| out.flush());
            match r {
                Ok(()) => Ok(None),
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
                Err(e) => Err(Failure::Message(format!("standard output: {e}"))),
            }
        }
    }
}
