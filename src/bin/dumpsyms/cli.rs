//! The command line: flags parsed by clap, then checked and turned into what to do
//! ([`Mode`]) and the library's [`Options`].

use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueHint};
use clap_complete::Shell;
use dumpsyms::batch::Destination;
use dumpsyms::batch::byid::ById;
use dumpsyms::batch::shard::Shard;
use dumpsyms::fetch::Limits;
use dumpsyms::fetch::debuginfod::Debuginfod;
use dumpsyms::fetch::symbols::SymbolServers;
use dumpsyms::fetch::symsrv::SymbolPath;
use dumpsyms::symbolize::Sources;
use dumpsyms::upload::Uploader;
use dumpsyms::{Arch, CodeId, DebugId, Options};

/// `symbolize`'s time on servers in all unless `--server-max-time` says otherwise: a
/// dripping or stalled server costs a run no more, however many modules it is asked
/// for.
const NETWORK_TIME: Duration = Duration::from_secs(30);

/// Writes Breakpad symbol files (.sym) from ELF, Mach-O and PE binaries with their DWARF
/// or PDB debug info.
///
/// Without --store, the first PATH is the binary and any further PATHs are directories to
/// search for its separate debug file, as with Breakpad's dump_syms; a further PATH that
/// is a file is the PDB of a PE (or the PE of a PDB). With --store, every
/// PATH is a binary to dump, a directory whose object files are all dumped, or an
/// archive or package (ZIP, APK, AAB, AAR, IPA, tar with gzip/xz/zstd/bzip2, .deb,
/// .ddeb) whose members are.
///
/// A PATH named like a command (`man`, `completions`) is written `./man`.
#[derive(Parser, Debug)]
#[command(
    name = "dumpsyms",
    // The version and, when built from a checkout, its commit (build.rs).
    version = env!("DUMPSYMS_VERSION"),
    max_term_width = 100,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    // Each command is a word no PATH can be without ./: as few as needed.
    disable_help_subcommand = true
)]
pub struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
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
    /// Operating system to write in the MODULE record instead of the format's (Linux,
    /// mac, windows). `-o` takes an OS name; any other value is Mozilla's output file
    #[arg(short = 'o', long = "os", value_name = "OS")]
    os: Option<String>,
    /// Debug id to write instead of the one computed from the build ID
    #[arg(short = 'b', value_name = "ID")]
    id: Option<DebugId>,
    /// Keep absolute addresses instead of making them relative to the load address
    #[arg(short = 'a')]
    keep_load_address: bool,
    /// Do not follow DWARF references between compilation units
    #[arg(short = 'r')]
    no_cross_unit_refs: bool,
    /// Print every warning (damaged or unsupported debug info) to stderr
    #[arg(short = 'v')]
    verbose: bool,
    /// Write the symbol file to FILE (atomically) instead of standard output; with
    /// --store and one PATH, to both (Mozilla's -o FILE -s DIR)
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    output: Option<PathBuf>,
    /// Fail (exit 1, nothing written) when the dump would write no STACK record
    /// (Mozilla's --check-cfi)
    #[arg(long = "check-cfi")]
    check_cfi: bool,
    /// Leave out the INFO GENERATOR record
    #[arg(long = "no-generator")]
    no_generator: bool,
    /// Name functions by their symbol-table name where the debug information names them
    /// otherwise (Breakpad Mac's -x)
    #[arg(long = "prefer-symbol-names")]
    prefer_symbol_names: bool,
    /// Read a PE image alone, without looking for its PDB (Breakpad Windows' --pe)
    #[arg(long = "pe")]
    pe_alone: bool,
    /// A variable for --mapping-dest and --mapping-file templates, e.g. rev=1a2b3c
    /// (repeatable; Mozilla's)
    #[arg(long = "mapping-var", value_name = "NAME=VALUE")]
    mapping_var: Vec<String>,
    /// A regular expression a FILE path is searched with, its groups for
    /// --mapping-dest (repeatable, paired with --mapping-dest in order; Mozilla's)
    #[arg(long = "mapping-src", value_name = "REGEX")]
    mapping_src: Vec<String>,
    /// What a FILE path that --mapping-src matches is written as: {1} a group, {NAME} a
    /// variable, {digest} / {DIGEST} the source file's SHA-512 (Mozilla's)
    #[arg(long = "mapping-dest", value_name = "TEMPLATE")]
    mapping_dest: Vec<String>,
    /// Mappings in Mozilla's JSON (variables, and mappings of source, destination and
    /// files), tried before the command line's
    #[arg(long = "mapping-file", value_name = "JSON", value_hint = ValueHint::FilePath)]
    mapping_file: Option<PathBuf>,
    /// Write each symbol file to DIR/<name>/<debug id>/<name>.sym, the symbol-server layout;
    /// a PATH that is a directory is walked and each object file in it dumped
    #[arg(long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    store: Option<PathBuf>,
    /// Send each symbol file written to the symbol server at URL (with --store or
    /// --output); a key or token comes from DUMPSYMS_UPLOAD_TOKEN
    #[arg(long, value_name = "URL", value_hint = ValueHint::Url)]
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
    /// Files (Tecken: zips) uploaded at once [default: 4]
    #[arg(long = "upload-jobs", value_name = "N", requires = "upload", value_parser = clap::value_parser!(u16).range(1..=64))]
    upload_jobs: Option<u16>,
    /// Give up on the upload server, for the rest of the run, after it takes or answers
    /// nothing for SECS seconds [default: 60]
    #[arg(long = "upload-timeout", value_name = "SECS", requires = "upload", value_parser = clap::value_parser!(u64).range(1..))]
    upload_timeout: Option<u64>,
    /// Stop uploading after SECS in all, rate-limit pauses included; files not sent by
    /// then are reported as not sent [default: 600]
    #[arg(long = "upload-max-time", value_name = "SECS", requires = "upload", value_parser = clap::value_parser!(u64).range(1..))]
    upload_max_time: Option<u64>,
    /// With --store: fetch, dump and store every module of a missing-symbols list
    /// (Socorro's CSV, debug_file,debug_id,code_file,code_id, or those four fields per
    /// line) instead of PATHs
    #[arg(
        long,
        value_name = "FILE",
        requires = "store",
        conflicts_with = "paths",
        value_hint = ValueHint::FilePath
    )]
    missing: Option<PathBuf>,
    /// With --store: leave inputs whose symbol file is already in the store alone, or
    /// (asked before dumping, by the headers' identity) on the sym-upload-v2 server of
    /// --upload or a server of --symbols-url
    #[arg(long = "skip-existing", requires = "store")]
    skip_existing: bool,
    /// With --skip-existing: a symbol server's download URL (Tecken's, or a store served
    /// over HTTP), asked with a HEAD of <name>/<id>/<name>.sym whether it has a module
    /// already; repeatable
    #[arg(long = "symbols-url", value_name = "URL", requires = "skip_existing", value_hint = ValueHint::Url)]
    symbols_urls: Vec<String>,
    /// With --store: write only shard K of N (K from 1; auto/N takes K from
    /// JOB_COMPLETION_INDEX + 1), by module name and debug id, so that N runs split the
    /// work and together write what one run writes
    #[arg(long, value_name = "K/N", requires = "store", value_parser = <Shard as std::str::FromStr>::from_str)]
    shard: Option<Shard>,
    /// With --store: also file each shared library's symbol file under its DT_SONAME
    /// when that differs from its file name (libfoo.so.1/<id>/libfoo.so.1.sym beside
    /// libfoo.so.1.2.3/<id>/libfoo.so.1.2.3.sym, the same bytes), as Mozilla's symbol
    /// scrapers do; uploads send both
    #[arg(long = "soname-copies", requires = "store")]
    soname_copies: bool,
    /// No progress bar, summary or warnings; errors only
    #[arg(short = 'q', long = "quiet", conflicts_with = "verbose")]
    quiet: bool,
    /// A directory to search for separate debug files (repeatable)
    #[arg(long = "debug-dir", value_name = "DIR", value_hint = ValueHint::DirPath)]
    debug_dirs: Vec<PathBuf>,
    /// Rewrite FILE paths starting with OLD to start with NEW instead, after normalizing
    /// them (repeatable; the first match wins, as with -fdebug-prefix-map)
    #[arg(long = "prefix-map", value_name = "OLD=NEW", value_parser = crate::args::parse_prefix_map)]
    prefix_map: Vec<(String, String)>,
    /// Add an 'INFO KEY value' record, e.g. --extra-info 'VERSION 1.2.3' (repeatable)
    #[arg(long = "extra-info", value_name = "'KEY value'", value_parser = crate::args::parse_extra_info)]
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
    /// Fetch the module by this debug id instead of reading PATH: a PDB (PATH is its
    /// name, e.g. ntdll.pdb) from the symbol servers
    #[arg(long = "debug-id", value_name = "ID")]
    fetch_debug_id: Option<DebugId>,
    /// Fetch the module by this code id instead of reading PATH: a PE image's
    /// (TimeDateStamp and SizeOfImage) from the symbol servers, or an ELF file's GNU
    /// build ID from debuginfod (PATH is the module's file name, e.g. libc.so.6)
    #[arg(long = "code-id", value_name = "ID")]
    fetch_code_id: Option<CodeId>,
    /// With --debug-id and --code-id: the image's file name [default: the PDB's name
    /// with .dll]
    #[arg(long = "code-file", value_name = "NAME", requires = "fetch_code_id")]
    code_file: Option<String>,
    /// The slice of a universal (fat) Mach-O binary to dump: x86_64, arm64, x86 (i386)
    #[arg(long, value_name = "ARCH")]
    arch: Option<Arch>,
    /// Print the architectures of each input (the slices of a universal binary) and exit
    #[arg(long = "list-arch")]
    list_arch: bool,
    /// Number of threads (default: one per CPU); the output is the same for any number
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// The binary [and debug directories], or with --store the binaries, trees and
    /// archives
    #[arg(required_unless_present = "missing", value_name = "PATH", value_hint = ValueHint::AnyPath)]
    paths: Vec<PathBuf>,
}

/// What the command can do besides dumping: the shell's and man's views of these flags.
#[derive(Subcommand, Debug)]
enum Command {
    /// Print the completion script for a shell on standard output, e.g.
    /// `dumpsyms completions bash > /usr/share/bash-completion/completions/dumpsyms`
    Completions {
        #[arg(value_name = "SHELL")]
        shell: Shell,
    },
    /// Print the manual page (roff) on standard output, e.g. `dumpsyms man | man -l -`
    Man,
    /// Resolve the raw addresses of a crash report from symbol files: sanitizer reports
    /// (TSan included), Android tombstones, logcat and ANR traces, GrapheneOS reports,
    /// systemd-coredump stacks, stackwalker text, backtrace_symbols lines, X server logs,
    /// Dr. Memory and Gecko stacks, MODULE+0xOFFSET lines and on-device stack-trace JSON
    Symbolize(SymbolizeArgs),
}

/// `dumpsyms symbolize`: where symbols come from, tried in the order of the flags here.
#[derive(clap::Args, Debug)]
struct SymbolizeArgs {
    /// A symbol store (<name>/<debug id>/<name>.sym) to read symbol files from
    /// (repeatable)
    #[arg(long = "store", value_name = "DIR", value_hint = ValueHint::DirPath)]
    stores: Vec<PathBuf>,
    /// A symbol server to fetch <URL>/<name>/<debug id>/<name>.sym from, as stack
    /// walkers fetch them (repeatable)
    #[arg(long = "symbols-url", value_name = "URL", value_hint = ValueHint::Url)]
    symbols_urls: Vec<String>,
    /// Where fetched symbol files are kept, as a store [default:
    /// $XDG_CACHE_HOME/dumpsyms/symbols]
    #[arg(long = "symbols-cache", value_name = "DIR", value_hint = ValueHint::DirPath)]
    symbols_cache: Option<PathBuf>,
    /// A directory of binaries (by file name) and debug files (by .build-id) to dump
    /// modules from when no symbol file is found; the report's own paths are tried too
    /// (repeatable)
    #[arg(long = "debug-dir", value_name = "DIR", value_hint = ValueHint::DirPath)]
    debug_dirs: Vec<PathBuf>,
    /// Do not fetch debug files from the debuginfod servers in DEBUGINFOD_URLS
    #[arg(long = "no-debuginfod")]
    no_debuginfod: bool,
    /// The firmware ELF (ESP-IDF's app) whose addresses the report's `Backtrace:` lines
    /// give; checked against the report's `ELF file SHA256:`
    #[arg(long = "firmware", value_name = "ELF", value_hint = ValueHint::FilePath)]
    firmware: Option<PathBuf>,
    /// Give up on a symbol server after SECS without progress [default: 10]
    #[arg(long = "server-timeout", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    server_timeout: Option<u64>,
    /// Spend at most SECS on symbol servers and debuginfod in all, however many modules
    /// the report names [default: 30]
    #[arg(long = "server-max-time", value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..))]
    server_max_time: Option<u64>,
    /// Resolve no module from a file found by name alone, which the report does not
    /// identify by build ID (by default such frames are resolved, a local binary's only
    /// where their offsets fall in its code, marked unverified, with a warning)
    #[arg(long = "verified-only")]
    verified_only: bool,
    /// Write the frames found as JSON records instead of the report with its frames
    /// resolved
    #[arg(long)]
    json: bool,
    /// The report [default: standard input]
    #[arg(value_name = "INPUT", value_hint = ValueHint::FilePath)]
    input: Option<PathBuf>,
}

impl SymbolizeArgs {
    fn sources(&self) -> Sources {
        let mut limits = Limits::default();
        if let Some(t) = self.server_timeout {
            limits.timeout = Duration::from_secs(t);
        }
        let servers = (!self.symbols_urls.is_empty()).then(|| SymbolServers {
            urls: self.symbols_urls.clone(),
            cache: self
                .symbols_cache
                .clone()
                .unwrap_or_else(SymbolServers::default_cache),
            limits,
            retries: 2,
        });
        let mut sources = Sources::default();
        sources.stores = self.stores.clone();
        sources.servers = servers;
        sources.debug_dirs = self.debug_dirs.clone();
        sources.module_paths = true;
        sources.debuginfod = if self.no_debuginfod {
            None
        } else {
            Debuginfod::from_env()
        };
        sources.verified_only = self.verified_only;
        sources.firmware = self.firmware.clone();
        sources.network_time = Some(Duration::from_secs(
            self.server_max_time.unwrap_or(NETWORK_TIME.as_secs()),
        ));
        sources
    }
}

/// What a run does.
pub enum Mode {
    /// Print a shell's completion script.
    Completions(Shell),
    /// Print the manual page.
    Man,
    /// Resolve a crash report's addresses.
    Symbolize {
        sources: Box<Sources>,
        json: bool,
        input: Option<PathBuf>,
    },
    /// Print the architectures of each input.
    ListArch(Vec<PathBuf>),
    /// Dump one input to standard output or a file.
    One { input: PathBuf, to: Destination },
    /// Fetch a module by id, then dump it to standard output, a file or a store.
    ById { want: ById, to: Destination },
    /// Fetch, dump and store every module of a missing-symbols list.
    Missing {
        list: PathBuf,
        store: PathBuf,
        skip_existing: bool,
    },
    /// Dump inputs and trees into a symbol store.
    Store {
        paths: Vec<PathBuf>,
        store: PathBuf,
        skip_existing: bool,
    },
}

/// A checked command line.
pub struct Run {
    pub mode: Mode,
    pub opts: Options,
    pub shard: Option<Shard>,
    pub soname_copies: bool,
    pub uploader: Option<Uploader>,
    /// `--skip-existing`'s servers to ask.
    pub remote: Option<dumpsyms::upload::Remote>,
    pub verbose: bool,
    pub quiet: bool,
}

/// A command line that cannot run: the message, and whether it is a usage error
/// (exit code 2) rather than a failure.
pub struct Refused {
    pub message: String,
    pub usage: bool,
}

fn usage(message: String) -> Refused {
    Refused {
        message,
        usage: true,
    }
}

impl Cli {
    /// Checks the flags together and builds what the run needs.
    pub fn into_run(self) -> Result<Run, Refused> {
        if let Some(command) = &self.command {
            return Ok(self.describe(command));
        }
        let mode = self.mode()?;
        let symbol_path = self.symbol_path(&mode)?;
        let uploader = match self.list_arch {
            true => None,
            false => self.uploader()?,
        };
        let mappings = dumpsyms::paths::mapping::Mappings::new(
            &self.mapping_var,
            &self.mapping_src,
            &self.mapping_dest,
            self.mapping_file.as_deref(),
        )
        .map_err(|e| Refused {
            message: e.to_string(),
            usage: false,
        })?;
        let mut opts = self.options(symbol_path);
        opts.source_paths.mappings = mappings.map(std::sync::Arc::new);
        let remote = self
            .skip_existing
            .then(|| dumpsyms::upload::Remote::new(uploader.as_ref(), &self.symbols_urls))
            .flatten();
        Ok(Run {
            mode,
            opts,
            shard: self.shard,
            soname_copies: self.soname_copies,
            uploader,
            remote,
            verbose: self.verbose,
            quiet: self.quiet,
        })
    }

    /// A run that prints the command line's own description, and reads nothing.
    fn describe(&self, command: &Command) -> Run {
        let mode = match command {
            Command::Completions { shell } => Mode::Completions(*shell),
            Command::Man => Mode::Man,
            Command::Symbolize(args) => Mode::Symbolize {
                sources: Box::new(args.sources()),
                json: args.json,
                input: args.input.clone(),
            },
        };
        Run {
            mode,
            opts: Options::default(),
            shard: None,
            soname_copies: false,
            uploader: None,
            remote: None,
            verbose: false,
            quiet: true,
        }
    }

    fn mode(&self) -> Result<Mode, Refused> {
        if self.list_arch {
            return Ok(Mode::ListArch(self.paths.clone()));
        }
        if let (Some(list), Some(store)) = (&self.missing, &self.store) {
            return Ok(Mode::Missing {
                list: list.clone(),
                store: store.clone(),
                skip_existing: self.skip_existing,
            });
        }
        if self.fetch_debug_id.is_some() || self.fetch_code_id.is_some() {
            return self.by_id();
        }
        if let (Some(store), Some(file)) = (&self.store, &self.output) {
            let [input] = self.paths.as_slice() else {
                return Err(usage(
                    "--output with --store writes one input's symbol file to both: give one PATH"
                        .into(),
                ));
            };
            return Ok(Mode::One {
                input: input.clone(),
                to: Destination::FileAndStore {
                    file: file.clone(),
                    store: store.clone(),
                },
            });
        }
        if let Some(store) = &self.store {
            return Ok(Mode::Store {
                paths: self.paths.clone(),
                store: store.clone(),
                skip_existing: self.skip_existing,
            });
        }
        let input = self.paths[0].clone();
        if input.is_dir() && !dumpsyms::is_dsym_bundle(&input) {
            return Err(Refused {
                message: format!(
                    "{}: is a directory; to dump every object file under it, use --store DIR",
                    input.display()
                ),
                usage: false,
            });
        }
        let to = match &self.output {
            Some(file) => Destination::File(file.clone()),
            None => Destination::Stdout,
        };
        Ok(Mode::One { input, to })
    }

    /// `--debug-id`/`--code-id`: one module, named by the only PATH.
    fn by_id(&self) -> Result<Mode, Refused> {
        let [file] = self.paths.as_slice() else {
            return Err(usage(
                "--debug-id and --code-id fetch one module: give its name alone".into(),
            ));
        };
        let want = ById {
            file: file.to_string_lossy().into_owned(),
            debug_id: self.fetch_debug_id.clone(),
            code_id: self.fetch_code_id.clone(),
            code_file: self.code_file.clone(),
        };
        let to = match (&self.store, &self.output) {
            (Some(store), _) => Destination::Store(store.clone()),
            (None, Some(file)) => Destination::File(file.clone()),
            (None, None) => Destination::Stdout,
        };
        Ok(Mode::ById { want, to })
    }

    /// Without --store, the paths after the first are debug directories, and a file
    /// among them is the other half of a Windows module (the PDB of a PE, or its PE).
    fn search_paths(&self) -> (Vec<PathBuf>, Option<PathBuf>) {
        if self.store.is_some() || self.list_arch {
            return (self.debug_dirs.clone(), None);
        }
        let mut dirs = self.paths[1..].to_vec();
        let companion = dirs
            .iter()
            .position(|p| p.is_file())
            .map(|i| dirs.remove(i));
        dirs.extend(self.debug_dirs.iter().cloned());
        (dirs, companion)
    }

    fn options(&self, symbol_path: Option<SymbolPath>) -> Options {
        let (debug_dirs, companion) = self.search_paths();
        // Options is non-exhaustive (fields may be added): set field by field.
        let mut o = Options::default();
        o.header_only = self.header_only;
        o.cfi = !self.no_cfi;
        o.inlines = self.inlines;
        o.multiple_field = self.multiple;
        o.name = self.name.clone();
        o.os = self.os.clone();
        o.debug_id = self.id.clone();
        o.keep_load_address = self.keep_load_address;
        o.cross_unit_refs = !self.no_cross_unit_refs;
        o.debug_dirs = debug_dirs;
        o.arch = self.arch;
        o.source_paths.prefix_map = self.prefix_map.clone();
        o.extra_info = self.extra_info.clone();
        o.debuginfod = match self.no_debuginfod {
            true => None,
            false => Debuginfod::from_env(),
        };
        o.symbol_path = symbol_path;
        o.companion = companion;
        o.jobs = self.jobs.map(usize::from);
        o.generator = !self.no_generator;
        o.require_stack_records = self.check_cfi;
        o.prefer_symbol_names = self.prefer_symbol_names;
        o.pe_alone = self.pe_alone;
        o
    }

    /// `--symbol-server`, else `_NT_SYMBOL_PATH`, else Mozilla's dumper's configuration
    /// file (`$HOME/.dump_syms/config`, a symbol path), with the server limits. The
    /// file is read once, and only for a run that may ask a symbol server.
    fn symbol_path(&self, mode: &Mode) -> Result<Option<SymbolPath>, Refused> {
        let spec = if self.symbol_server.is_empty() {
            std::env::var("_NT_SYMBOL_PATH")
                .ok()
                .filter(|s| !s.trim().is_empty())
        } else {
            Some(self.symbol_server.join(";"))
        };
        let path = match spec {
            Some(spec) => spec
                .parse::<SymbolPath>()
                .map_err(|e| usage(format!("--symbol-server: {e}")))?,
            None if may_ask_a_symbol_server(mode) => match mozilla_config() {
                Some(path) => path,
                None => return Ok(None),
            },
            None => return Ok(None),
        };
        let mut path = path;
        if path.stores.is_empty() {
            return Ok(None);
        }
        let limits = &mut path.limits;
        if let Some(t) = self.server_timeout {
            limits.timeout = Duration::from_secs(t);
        }
        limits.max_time = self.server_max_time.map(Duration::from_secs);
        if let Some(n) = self.server_max_size {
            limits.max_size = n;
        }
        Ok(Some(path))
    }

    fn uploader(&self) -> Result<Option<Uploader>, Refused> {
        let Some(url) = &self.upload else {
            return Ok(None);
        };
        if self.store.is_none() && self.output.is_none() {
            return Err(usage(
                "--upload sends the files written: use it with --store or --output".into(),
            ));
        }
        let mut uploader =
            Uploader::new(url, self.upload_protocol).map_err(|e| usage(e.to_string()))?;
        if let Some(n) = self.upload_jobs {
            uploader.jobs = n.into();
        }
        if let Some(t) = self.upload_timeout {
            uploader.timeout = Duration::from_secs(t);
        }
        if let Some(t) = self.upload_max_time {
            uploader.max_time = Duration::from_secs(t);
        }
        Ok(Some(uploader))
    }
}

/// The symbol path in Mozilla's dumper's configuration file, `$HOME/.dump_syms/config`,
/// which its users keep: read when neither `--symbol-server` nor `_NT_SYMBOL_PATH` gives
/// one. A file that is not there is no symbol path; one that cannot be used (a FIFO, a
/// device, too large, not a symbol path) is said on stderr and left.
fn mozilla_config() -> Option<SymbolPath> {
    let path = PathBuf::from(std::env::var_os("HOME")?).join(".dump_syms/config");
    match SymbolPath::from_config_file(&path) {
        Ok(found) => found,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => {
            eprintln!(
                "dumpsyms: warning: {}: {e}; no symbol server is read from it",
                path.display()
            );
            None
        }
    }
}

/// Whether a run may need a symbol server (so reads the configuration file): not one
/// that lists architectures or dumps one ELF or Mach-O file (told by its first bytes,
/// read without blocking), which no symbol server has anything for.
fn may_ask_a_symbol_server(mode: &Mode) -> bool {
    match mode {
        Mode::ListArch(_) => false,
        Mode::One { input, .. } => {
            let mut head = [0u8; 4];
            let read = std::os::unix::fs::OpenOptionsExt::custom_flags(
                std::fs::OpenOptions::new().read(true),
                libc::O_NONBLOCK,
            )
            .open(input)
            .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head));
            !(read.is_ok()
                && matches!(
                    head,
                    [0x7F, b'E', b'L', b'F']
                        | [0xFE, 0xED, 0xFA, 0xCE | 0xCF]
                        | [0xCE | 0xCF, 0xFA, 0xED, 0xFE]
                        | [0xCA, 0xFE, 0xBA, 0xBE]
                ))
        }
        _ => true,
    }
}
