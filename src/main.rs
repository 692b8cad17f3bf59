//! The `dumpsyms` command: flags in, symbol files out, errors to exit codes.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Parser;

/// See Cargo.toml for why.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;
use dumpsyms::output::AtomicFile;
use dumpsyms::{Options, dump, write_module};

/// Writes Breakpad symbol files (.sym) from ELF binaries with DWARF debug info.
///
/// Without --store, the first PATH is the binary and any further PATHs are directories to
/// search for its separate debug file, as with Breakpad's dump_syms. With --store, every
/// PATH is a binary to dump.
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
    /// Write each symbol file to DIR/<name>/<debug id>/<name>.sym, the symbol-server layout
    #[arg(long, value_name = "DIR")]
    store: Option<PathBuf>,
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
    debug_dirs.extend(cli.debug_dirs.iter().cloned());
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
    };
    if cli.list_arch {
        let mut failed = false;
        for input in &inputs {
            match dumpsyms::architectures(input) {
                Ok(arches) => println!("{}: {}", input.display(), arches.join(" ")),
                Err(e) => {
                    eprintln!("dumpsyms: error: {e}");
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
        eprintln!("dumpsyms: error: -b: a debug id cannot be empty or contain spaces");
        return ExitCode::from(2);
    }
    // As large as the main thread's: GNU's demangler parses into stack arrays (up to
    // ~1.2 MiB for the longest name it is given) and recursion on deep names adds more.
    let mut pool = rayon::ThreadPoolBuilder::new().stack_size(8 << 20);
    if let Some(n) = cli.jobs {
        pool = pool.num_threads(n.into());
    }
    let pool = match pool.build() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("dumpsyms: error: cannot start worker threads: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut failed = false;
    for input in &inputs {
        match pool.install(|| run_one(&cli, &opts, input)) {
            Ok(()) => {}
            Err(Failure::BrokenPipe) => return ExitCode::SUCCESS,
            Err(Failure::Message(m)) => {
                eprintln!("dumpsyms: error: {m}");
                failed = true;
            }
        }
    }
    if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

enum Failure {
    /// Standard output was closed by its reader: stop quietly.
    BrokenPipe,
    Message(String),
}

fn run_one(cli: &Cli, opts: &Options, input: &Path) -> Result<(), Failure> {
    let result = dump(input, opts).map_err(|e| Failure::Message(e.to_string()))?;
    if cli.verbose
        && let Some(debug) = &result.debug_file
    {
        eprintln!(
            "dumpsyms: {}: using debug file {}",
            input.display(),
            debug.display()
        );
    }
    for problem in &result.servers {
        eprintln!("dumpsyms: warning: {}: {problem}", input.display());
    }
    if let Some(search) = &result.no_debug_info {
        eprintln!(
            "dumpsyms: {}: no debug info found; looked for {}. Writing what the binary itself has: symbol-table names and unwind tables{}",
            input.display(),
            search.summary(),
            if cli.verbose {
                ""
            } else {
                " (-v lists every path tried)"
            }
        );
        if cli.verbose {
            for place in &search.tried {
                eprintln!("dumpsyms: {}: looked in {place}", input.display());
            }
        }
    }
    let module = &result.module;
    let written = write_one(cli, module);
    // Reported after writing: unwind records that cannot be expressed are only found
    // while they are rendered.
    let mut warnings = result.warnings.0.clone();
    if let Some(cfi) = &module.cfi {
        warnings.extend(cfi.skipped());
    }
    if cli.verbose {
        for w in &warnings {
            eprintln!("dumpsyms: warning: {}: {w}", input.display());
        }
    } else if !warnings.is_empty() {
        eprintln!(
            "dumpsyms: warning: {}: {} problem(s) in the file (damaged or unsupported sections); some records may be missing (-v lists them)",
            input.display(),
            warnings.len()
        );
    }
    written
}

fn write_one(cli: &Cli, module: &dumpsyms::Module) -> Result<(), Failure> {
    let target = match (&cli.store, &cli.output) {
        (Some(dir), _) => Some(
            dir.join(&module.name)
                .join(&module.debug_id)
                .join(format!("{}.sym", module.name)),
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
                eprintln!("dumpsyms: wrote {}", path.display());
            }
            Ok(())
        }
        None => {
            let stdout = io::stdout();
            let mut out = io::BufWriter::with_capacity(1 << 16, stdout.lock());
            let r = write_module(module, &mut out).and_then(|()| out.flush());
            match r {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::BrokenPipe => Err(Failure::BrokenPipe),
                Err(e) => Err(Failure::Message(format!("standard output: {e}"))),
            }
        }
    }
}
