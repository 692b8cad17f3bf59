//! `dumpsyms symbolize`: raw addresses from crash reports to function, file:line and
//! inlined calls, read from Breakpad symbol files.
//!
//! One entry: a [`Symbolizer`] reading from [`Sources`], whose [`Symbolizer::run`]
//! takes a report and a writer and gives the [`Tally`] of its frames.
//!
//! Inside, `input` and `ondevice` find the frames in a report and say what their offsets
//! count from; `store` finds each module's symbol file; breakpad's `symfile` reads it
//! once and answers lookups; the [`Symbolizer`] ties them together, loading each
//! module's file once.

mod emit;
mod firmware;
pub(crate) mod input;
mod ips;
mod live;
pub(crate) mod maps;
pub(crate) mod ondevice;
mod pseudo;
pub(crate) mod render;
pub(crate) mod run;
mod scan;
pub(crate) mod sources;
mod spool;
pub(crate) mod store;
pub(crate) use crate::breakpad::symfile;

pub use emit::Format;
pub use render::Tally;
pub use sources::Sources;

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use input::{Base, Pc};
use sources::{Source, Wanted};
use symfile::SymFile;

use crate::error::{Warning, WarningKind};
use crate::load::Input;

/// A symbol file's bytes: mapped from a store (and watched for truncation, see
/// `mapguard`), or written in memory by a dump on the fly.
pub(crate) struct Bytes(Input);

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self.0.bytes()
    }
}

/// One resolved frame, innermost first; owned, so that a report can be written while
/// further modules load.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The function's name.
    pub function: String,
    /// The source file, when known.
    pub file: Option<String>,
    /// The source line, when known.
    pub line: Option<u32>,
    /// An inlined call (every frame of an address but its last).
    pub inlined: bool,
    /// From the function's start to the address looked up (for a return address, the
    /// byte before it), for the outermost frame; None for an inlined call.
    pub offset: Option<u64>,
}

/// Where a report's module was looked for and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The address resolved to these frames. `unverified`: from a local file the report
    /// does not identify (no build ID), which is right only if it is the same build.
    Frames {
        /// Innermost first: each inlined call, then the function.
        frames: Vec<Resolved>,
        /// Resolved from a file found by name alone.
        unverified: bool,
    },
    /// The module's symbol file was read, but no record covers the address.
    NoSymbol,
    /// No symbol file for the module.
    NoModule,
    /// An absolute address that nothing places in its module: the report lists no
    /// module map, and the module is not a position-dependent executable at hand. Not
    /// a frame that can be counted.
    Unplaced,
}

/// A module of a report, once its symbols are found.
#[derive(Clone)]
struct Module {
    sym: Option<Arc<SymFile<Bytes>>>,
    /// What the symbol file's addresses count from, in the ELF's virtual addresses: its
    /// first `PT_LOAD`'s address, read from the module's binary or debug file when one
    /// is on this machine. None when neither is: 0 is assumed, what PIE programs and
    /// shared libraries have.
    load_address: Option<u64>,
    /// Set when the symbols come from a local file found by name alone: the report
    /// gave no build ID to check it against. Its executable spans (virtual addresses)
    /// bound what it may answer.
    unverified: Option<Arc<Unverified>>,
    /// Its binary or debug file here is a position-dependent ELF executable: an
    /// absolute address in it is its virtual address.
    fixed: bool,
}

impl Module {
    /// A module whose symbols are `sym`, laid out as the local file `local` says.
    fn new(sym: Option<Arc<SymFile<Bytes>>>, local: Option<&sources::Local>) -> Module {
        Module {
            sym,
            load_address: local.map(|l| l.layout.load_address),
            unverified: None,
            fixed: local.is_some_and(|l| l.fixed),
        }
    }
}

/// A file found by the name a report gives, with no build ID to check it by: a local
/// binary or debug file, or a store's only symbol file of that name.
#[derive(Clone)]
struct Unverified {
    path: PathBuf,
    /// A local file's executable sections' spans, in virtual addresses, sorted and
    /// merged; None for a symbol file, whose code is not known.
    code: Option<Arc<[(u64, u64)]>>,
}

pub(crate) use symfile::MAX_INLINE_DEPTH;

/// How far past its last record an offset counted in virtual addresses may be before
/// it is taken for a non-PIE program's (whose load address is not known) rather than
/// code at the module's end: a page. A non-PIE program's offsets are its load address
/// (0x10000 on 32-bit ARM and RISC-V, 0x400000 on x86-64, 0x8048000 on x86) beyond.
const PAST_THE_END: u64 = 0x1000;

/// Resolves frames, loading each module's symbols once.
pub struct Symbolizer {
    sources: Sources,
    /// By (module as named, build ID).
    modules: HashMap<(Option<String>, Option<String>), Module>,
    /// The last of them looked up: a report's frames come in runs of one module, and
    /// the map's key costs two copies to build.
    last: Option<(Option<String>, Option<String>, Module)>,
    /// By symbol file or dumped object: two names of one module share it.
    loaded: HashMap<PathBuf, Option<Arc<SymFile<Bytes>>>>,
    /// Modules already warned of offsets past their symbol file's end, of resolution
    /// from an unidentified local file, of inline chains cut.
    warned: HashMap<Warned, HashSet<String>>,
    /// Bytes of the symbol files read (for the output's bound).
    pub(crate) symbol_bytes: u64,
    /// What went wrong, once per module or file, for the report's end.
    pub(crate) warnings: Vec<Warning>,
}

/// What a module has been warned of, once each.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Warned {
    PastTheEnd,
    Unverified,
    Refused,
    OutsideCode,
    Unplaced,
    DeepInlines,
    LargeBody,
    LongNames,
    TooManyModules,
}

/// The most distinct modules a run looks up and keeps: a real process maps hundreds,
/// a report of every frame in a module of its own (3 million) took 584 MB.
const MAX_MODULES: usize = 100_000;

/// The most bytes of names one frame's chain of inlined calls is printed with: a chain
/// of real names takes a few KiB; a crafted one (256 inlined calls of an 8 MiB name)
/// took 6.3 GB before it met the output's bound.
const MAX_FRAME_TEXT: usize = 1 << 20;

/// A lookup's frames as they may be printed: names escaped and cut at
/// [`crate::untrusted::MAX_NAME`] each, the chain cut where its names pass
/// [`MAX_FRAME_TEXT`]; and whether anything was cut. Nothing is copied that is not
/// printed.
fn printable(frames: Vec<symfile::Frame<'_>>) -> (Vec<Resolved>, bool) {
    use crate::untrusted::{MAX_NAME, name_for_output};
    let mut out = Vec::with_capacity(frames.len());
    let (mut text, mut cut) = (0usize, false);
    for f in frames {
        let function = name_for_output(f.function);
        let file = f.file.map(name_for_output);
        cut |= f.function.len() > MAX_NAME || f.file.is_some_and(|n| n.len() > MAX_NAME);
        text += function.len() + file.as_ref().map_or(0, |n| n.len());
        if text > MAX_FRAME_TEXT && !out.is_empty() {
            return (out, true);
        }
        out.push(Resolved {
            function: function.into_owned(),
            file: file.map(std::borrow::Cow::into_owned),
            line: f.line,
            inlined: f.inlined,
            offset: f.offset,
        });
    }
    (out, cut)
}

impl Symbolizer {
    /// Reads symbol files from store directories only.
    #[cfg(test)]
    fn new(stores: Vec<PathBuf>) -> Symbolizer {
        Symbolizer::with_sources(Sources {
            stores,
            ..Sources::default()
        })
    }

    /// Reads `report` and writes it to `out` with its frames resolved (or, as
    /// [`Format::Json`], the frames as records); the count of frames resolved and not.
    /// A report starting with `{` is read as an on-device trace or an Apple `.ips` when
    /// it is one, else line by line. What went wrong on the way is in
    /// [`Symbolizer::warnings`].
    pub fn run(
        &mut self,
        report: &mut dyn std::io::BufRead,
        out: &mut dyn std::io::Write,
        format: Format,
    ) -> std::io::Result<Tally> {
        run::run(self, &mut live::Whole(report), out, format)
    }

    /// As [`Symbolizer::run`], from a file or pipe that may still be written to
    /// (`adb logcat | dumpsyms symbolize`): whenever it has nothing more ready, what
    /// was answered is flushed to `out`, and lines held for a module map that may
    /// follow are written once it pauses for a second.
    pub fn run_live(
        &mut self,
        report: std::fs::File,
        out: &mut dyn std::io::Write,
        format: Format,
    ) -> std::io::Result<Tally> {
        run::run(self, &mut live::Live::new(report), out, format)
    }

    /// What went wrong so far, once per module or file: modules not found, failing
    /// servers, damaged symbol files, files found by name alone, limits met.
    pub fn warnings(&self) -> &[Warning] {
        &self.warnings
    }

    /// A symbolizer reading from `sources`.
    pub fn with_sources(sources: Sources) -> Symbolizer {
        Symbolizer {
            warnings: sources.missing_dirs(),
            sources,
            modules: HashMap::new(),
            last: None,
            loaded: HashMap::new(),
            warned: HashMap::new(),
            symbol_bytes: 0,
        }
    }

    /// What `offset` in the module named `module` (a path, a file name; None for a
    /// build ID alone) with `build_id` resolves to.
    pub(crate) fn resolve(
        &mut self,
        module: Option<&str>,
        build_id: Option<&str>,
        offset: u64,
        base: Base,
        pc: Pc,
    ) -> Outcome {
        let found = self.module(Wanted { module, build_id });
        let name = module.or(build_id).unwrap_or("?");
        self.resolve_in(&found, name, offset, base, pc)
    }

    /// The offset in its module of the function a debugger names `function` (see
    /// [`SymFile::address_of`]), when the module's symbol file is found and one function
    /// there answers to the name.
    pub(crate) fn function_offset(
        &mut self,
        module: Option<&str>,
        build_id: Option<&str>,
        function: &str,
    ) -> Option<u64> {
        let found = self.module(Wanted { module, build_id });
        found.sym.as_ref()?.address_of(function)
    }

    /// Whether a firmware was given (`--firmware`), whose addresses ESP-IDF's
    /// `Backtrace:` lines give.
    pub(crate) fn has_firmware(&self) -> bool {
        self.sources.firmware.is_some()
    }

    /// The firmware's path as given, for the records that name it.
    pub(crate) fn firmware_name(&self) -> Option<String> {
        self.sources
            .firmware
            .as_ref()
            .map(|p| p.display().to_string())
    }

    /// What `pc`, an absolute address in the firmware given with `--firmware` (an
    /// ESP-IDF `Backtrace:` PC), resolves to. `sha256`: the report's `ELF file SHA256:`,
    /// the first digits of the firmware's: a file of other digits is another build and
    /// answers nothing; with none, the file is a guess, said as such.
    pub(crate) fn resolve_firmware(&mut self, pc: u64, sha256: Option<&str>) -> Outcome {
        let Some(path) = self.sources.firmware.clone() else {
            return Outcome::Unplaced;
        };
        let name = path.display().to_string();
        let key = (Some(name.clone()), sha256.map(str::to_ascii_lowercase));
        let found = match self.modules.get(&key) {
            Some(m) => m.clone(),
            None => {
                let found = match sha256 {
                    Some(want) => self.firmware_of(&path, &name, want),
                    None => self.unverified(
                        Wanted {
                            module: Some(&name),
                            build_id: None,
                        },
                        path,
                    ),
                };
                self.modules.insert(key, found.clone());
                found
            }
        };
        self.resolve_in(&found, &name, pc, Base::Absolute, Pc::Exact)
    }

    /// The firmware at `path`, if its SHA-256 begins with `want` (said once if not).
    fn firmware_of(&mut self, path: &Path, name: &str, want: &str) -> Module {
        let have = firmware::sha256_hex(path);
        match have {
            Some(have) if have.starts_with(&want.to_ascii_lowercase()) => {
                let local = sources::layout(path);
                let sym = self.loaded_or(path, Self::dump);
                Module::new(sym, local.as_ref())
            }
            other => {
                let have = other.map_or_else(
                    || "unreadable".to_string(),
                    |h| format!("{}…", &h[..want.len().min(h.len())]),
                );
                self.warn_once(Warned::Refused, name, || {
                    format!(
                        "the report's ELF file SHA256 is {want}, this file's {have}: \
                         another build, not resolved"
                    )
                });
                Module::new(None, None)
            }
        }
    }

    /// What `offset` in the module `found` (called `name` in warnings) resolves to.
    fn resolve_in(
        &mut self,
        found: &Module,
        name: &str,
        offset: u64,
        base: Base,
        pc: Pc,
    ) -> Outcome {
        let base = match base {
            Base::Absolute if found.fixed => Base::Vaddr,
            Base::Absolute => {
                self.warn_once(Warned::Unplaced, name, || {
                    format!(
                        "absolute addresses ({offset:#x}), which the report's own module \
                         map does not place and which are the module's own addresses only \
                         in a position-dependent executable, whose binary is not here \
                         (--debug-dir): not resolved"
                    )
                });
                return Outcome::Unplaced;
            }
            other => other,
        };
        let Some(sym) = found.sym.clone() else {
            return Outcome::NoModule;
        };
        let addr = match base {
            Base::Load => Some(offset),
            Base::Vaddr | Base::Absolute => offset.checked_sub(found.load_address.unwrap_or(0)),
        };
        // 32-bit ARM addresses may carry the Thumb bit: the instruction is at the even
        // address (and a return address less one must land inside the call, not on
        // the instruction after it).
        let thumb = sym
            .module
            .as_ref()
            .is_some_and(|m| m.arch == "arm" || m.arch.starts_with("armv") || m.arch == "thumb");
        let addr = addr.map(|a| if thumb { a & !1 } else { a });
        // A return address is the instruction after the call: one byte back is inside
        // the call instruction, on every architecture.
        let addr = match pc {
            Pc::Exact => addr,
            Pc::Return => addr.and_then(|a| a.checked_sub(1)),
        };
        let Some(addr) = addr else {
            return Outcome::NoSymbol;
        };
        if base == Base::Vaddr
            && found.load_address.is_none()
            && addr >= sym.end().saturating_add(PAST_THE_END)
        {
            // The nearest PUBLIC before such an offset (`_fini`) would be a wrong
            // answer, so none is given.
            self.warn_once(Warned::PastTheEnd, name, || {
                format!(
                    "offset {offset:#x} lies past every record of its symbol file; if it \
                     is a non-PIE program, its offsets count from its load address, which \
                     only its binary or debug file tells (--debug-dir): not resolved"
                )
            });
            return Outcome::NoSymbol;
        }
        if !self.inside_local_code(found, name, offset, addr) {
            return Outcome::NoSymbol;
        }
        let (frames, cut) = sym.lookup_within(addr, MAX_INLINE_DEPTH);
        if frames.is_empty() {
            return Outcome::NoSymbol;
        }
        self.warn_cut(cut, name);
        let unverified = found.unverified.is_some();
        if let Some(local) = &found.unverified {
            let path = local.path.display().to_string();
            self.warn_once(Warned::Unverified, name, || {
                format!(
                    "resolved from {path}, found by name alone: the report does not \
                     identify it by build ID, and the answer is right only if it is the \
                     same build"
                )
            });
        }
        let (frames, long) = printable(frames);
        if long {
            self.warn_once(Warned::LongNames, name, || {
                format!(
                    "names longer than {} KiB, or inlined chains whose names pass {} MiB \
                     (a damaged or crafted symbol file): cut there",
                    crate::untrusted::MAX_NAME >> 10,
                    MAX_FRAME_TEXT >> 20
                )
            });
        }
        Outcome::Frames { frames, unverified }
    }

    /// Whether `addr` (of `offset` in the report) may be answered from `found`: always
    /// from files the report identifies; from a local file found by name alone only
    /// inside its code (another build's offset would land anywhere).
    fn inside_local_code(&mut self, found: &Module, name: &str, offset: u64, addr: u64) -> bool {
        let Some((local, code)) = found
            .unverified
            .as_ref()
            .and_then(|u| Some((u, u.code.as_ref()?)))
        else {
            return true;
        };
        let vaddr = addr.checked_add(found.load_address.unwrap_or(0));
        let in_code = vaddr.is_some_and(|v| {
            let i = code.partition_point(|s| s.1 <= v);
            code.get(i).is_some_and(|s| s.0 <= v)
        });
        if !in_code {
            let path = local.path.display().to_string();
            self.warn_once(Warned::OutsideCode, name, || {
                format!(
                    "offset {offset:#x} lies outside the executable sections of the local \
                     file {path}, which the report does not identify by build ID (another \
                     build's offset lands anywhere): not resolved"
                )
            });
        }
        in_code
    }

    /// Says what a lookup could not follow, once per module.
    fn warn_cut(&mut self, cut: symfile::Cut, name: &str) {
        if cut.depth {
            self.warn_once(Warned::DeepInlines, name, || {
                format!(
                    "a chain of inlined calls deeper than {MAX_INLINE_DEPTH} (a damaged or \
                     crafted symbol file): cut there"
                )
            });
        }
        if cut.body {
            self.warn_once(Warned::LargeBody, name, || {
                format!(
                    "a function whose records take more than {} MiB (a damaged or crafted \
                     symbol file): named without its lines and inlined calls",
                    symfile::MAX_BODY >> 20
                )
            });
        }
    }

    /// Says `what` of `module`, once per kind of warning and module.
    fn warn_once(&mut self, kind: Warned, module: &str, what: impl FnOnce() -> String) {
        let seen = self.warned.entry(kind).or_default();
        // Asked first without allocating: most lookups are of modules warned of already.
        if !seen.contains(module) && seen.insert(module.to_string()) {
            let area = match kind {
                Warned::DeepInlines | Warned::LargeBody => WarningKind::Companion,
                Warned::LongNames => WarningKind::Names,
                Warned::PastTheEnd
                | Warned::Unverified
                | Warned::Refused
                | Warned::OutsideCode
                | Warned::TooManyModules
                | Warned::Unplaced => WarningKind::Lookup,
            };
            let message = format!("{}: {}", crate::untrusted::for_terminal(module), what());
            self.warnings.push(Warning::new(area, message));
        }
    }

    fn module(&mut self, want: Wanted) -> Module {
        if let Some((module, build_id, found)) = &self.last
            && module.as_deref() == want.module
            && build_id.as_deref() == want.build_id
        {
            return found.clone();
        }
        let key = (
            want.module.map(str::to_string),
            want.build_id.map(str::to_string),
        );
        if let Some(m) = self.modules.get(&key) {
            self.last = Some((key.0, key.1, m.clone()));
            return m.clone();
        }
        if self.modules.len() >= MAX_MODULES {
            let said = self.warned.entry(Warned::TooManyModules).or_default();
            if said.is_empty() {
                said.insert(String::new());
                self.warnings.push(Warning::new(
                    WarningKind::Lookup,
                    format!(
                        "the report names more than {MAX_MODULES} modules: the frames of the others are left as they are"
                    ),
                ));
            }
            return Module::new(None, None);
        }
        let found = match self.sources.find(want, &mut self.warnings) {
            Source::SymFile(path) if want.build_id.is_none() => {
                self.unverified_symbol_file(want, path)
            }
            Source::SymFile(path) => {
                let sym = self.loaded_or(&path, Self::load);
                // The symbol file does not say where the module was linked to load:
                // its binary or debug file does, when one is here.
                let local = self.sources.local_object(want);
                Module::new(sym, local.as_deref().and_then(sources::layout).as_ref())
            }
            Source::Object(path) if want.build_id.is_none() => self.unverified(want, path),
            Source::Object(path) => {
                let sym = self.loaded_or(&path, Self::dump);
                Module::new(sym, sources::layout(&path).as_ref())
            }
            Source::Missing => Module::new(None, None),
        };
        self.last = Some((key.0.clone(), key.1.clone(), found.clone()));
        self.modules.insert(key, found.clone());
        found
    }

    /// A module found as a local file by name alone: resolved from it only where the
    /// report's offsets fall in its code, and said to be a guess; not at all with
    /// `--verified-only`.
    fn unverified(&mut self, want: Wanted, path: PathBuf) -> Module {
        if let Some(refused) = self.refused(want, &path) {
            return refused;
        }
        let local = sources::layout(&path);
        let sym = self.loaded_or(&path, Self::dump);
        Module {
            unverified: Some(Arc::new(Unverified {
                code: Some(
                    local
                        .as_ref()
                        .map_or_else(Vec::new, |l| l.layout.code_spans.clone())
                        .into(),
                ),
                path,
            })),
            ..Module::new(sym, local.as_ref())
        }
    }

    /// A store's only symbol file of the name a report gives, with no build ID to check
    /// it by: a guess like a local file's, said as such (its code is not known to bound
    /// it); not used at all with `--verified-only`.
    fn unverified_symbol_file(&mut self, want: Wanted, path: PathBuf) -> Module {
        if let Some(refused) = self.refused(want, &path) {
            return refused;
        }
        let local = self.sources.local_object(want);
        let sym = self.loaded_or(&path, Self::load);
        Module {
            unverified: Some(Arc::new(Unverified { code: None, path })),
            ..Module::new(sym, local.as_deref().and_then(sources::layout).as_ref())
        }
    }

    /// With `--verified-only`, a module of no symbols (said once) instead of one read
    /// from `path`, which the report does not identify.
    fn refused(&mut self, want: Wanted, path: &Path) -> Option<Module> {
        if !self.sources.verified_only {
            return None;
        }
        let shown = path.display().to_string();
        self.warn_once(Warned::Refused, want.module.unwrap_or("?"), || {
            format!(
                "the report gives no build ID, and --verified-only refuses {shown}, found \
                 by name alone: not resolved"
            )
        });
        Some(Module::new(None, None))
    }

    fn loaded_or(
        &mut self,
        path: &Path,
        read: fn(&mut Self, &Path) -> Option<Arc<SymFile<Bytes>>>,
    ) -> Option<Arc<SymFile<Bytes>>> {
        if let Some(sym) = self.loaded.get(path) {
            return sym.clone();
        }
        let sym = read(self, path);
        self.loaded.insert(path.to_path_buf(), sym.clone());
        sym
    }

    fn load(&mut self, path: &Path) -> Option<Arc<SymFile<Bytes>>> {
        match Input::open(path) {
            Ok(input) => Some(self.parse(path, Bytes(input))),
            Err(e) => {
                self.warnings
                    .push(Warning::new(WarningKind::Companion, e.to_string()));
                None
            }
        }
    }

    /// Dumps the object file at `path` (a binary, whose debug file is looked for as
    /// the dumper looks for it, or a debug file) into memory, with inlined calls and
    /// without the unwind records a symbolizer does not read.
    fn dump(&mut self, path: &Path) -> Option<Arc<SymFile<Bytes>>> {
        let opts = crate::options::Options {
            inlines: true,
            cfi: false,
            debug_dirs: self.sources.debug_dirs.clone(),
            debuginfod: self.sources.debuginfod.clone(),
            ..crate::options::Options::default()
        };
        let dumped = crate::dumping::dump(path, &opts).and_then(|d| {
            let mut text = Vec::new();
            crate::breakpad::write_module(&d.module, &Default::default(), &mut text)
                .map_err(|e| crate::error::Error::new(path, crate::error::ErrorKind::Io(e)))?;
            Ok(text)
        });
        match dumped {
            Ok(text) => Some(self.parse(path, Bytes(Input::from_bytes(path.into(), text)))),
            Err(e) => {
                self.warnings.push(Warning::new(
                    WarningKind::Companion,
                    format!("cannot dump it: {e}"),
                ));
                None
            }
        }
    }

    fn parse(&mut self, path: &Path, bytes: Bytes) -> Arc<SymFile<Bytes>> {
        self.symbol_bytes = self
            .symbol_bytes
            .saturating_add(bytes.as_ref().len() as u64);
        let sym = SymFile::parse_releasing(bytes, |b, part| b.0.release(part));
        let (damage, count) = sym.damage();
        if let Some(first) = damage.first() {
            self.warnings.push(Warning::new(
                WarningKind::Companion,
                format!(
                    "{}:{}: {} ({count} damaged line(s) skipped)",
                    path.display(),
                    first.line,
                    first.problem
                ),
            ));
        }
        Arc::new(sym)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thumb_bits_are_cleared_before_stepping_back() {
        let dir = std::env::temp_dir().join(format!("dumpsyms-thumb-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let id = "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40";
        let at = dir.join("libt.so").join(id);
        std::fs::create_dir_all(&at).unwrap();
        // A 4-byte BL at 0x1230 in caller; the next instruction at 0x1234 is in `after`.
        std::fs::write(
            at.join("libt.so.sym"),
            format!("MODULE Linux arm {id} libt.so\nFUNC 1200 34 0 caller\nFUNC 1234 10 0 after\n"),
        )
        .unwrap();
        let mut s = Symbolizer::new(vec![dir.clone()]);
        let build_id = Some("4aea7096a43bf4e6e9f3a6c4d7e1a9b4");
        let name = |o: Outcome| match o {
            Outcome::Frames { frames, .. } => frames[0].function.clone(),
            other => format!("{other:?}"),
        };
        // The return address 0x1235 (Thumb bit set) is a call in `caller`.
        let r = s.resolve(Some("libt.so"), build_id, 0x1235, Base::Load, Pc::Return);
        assert_eq!(name(r), "caller");
        let r = s.resolve(Some("libt.so"), build_id, 0x1235, Base::Load, Pc::Exact);
        assert_eq!(name(r), "after");
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn each_module_loads_once_and_return_addresses_step_back() {
        let dir = std::env::temp_dir().join(format!("dumpsyms-symbolizer-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let id = "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40";
        let at = dir.join("app").join(id);
        std::fs::create_dir_all(&at).unwrap();
        std::fs::write(
            at.join("app.sym"),
            format!(
                "MODULE Linux x86_64 {id} app\nFILE 0 a.c\nFUNC 1000 10 0 f\n1000 10 7 0\nBAD\n"
            ),
        )
        .unwrap();
        let mut s = Symbolizer::new(vec![dir.clone()]);
        let build_id = Some("4aea7096a43bf4e6e9f3a6c4d7e1a9b4");
        let f = Resolved {
            function: "f".into(),
            file: Some("a.c".into()),
            line: Some(7),
            inlined: false,
            offset: Some(0),
        };
        let r = |s: &mut Symbolizer, off, pc| {
            s.resolve(Some("/bin/app"), build_id, off, Base::Load, pc)
        };
        assert_eq!(
            r(&mut s, 0x1000, Pc::Exact),
            Outcome::Frames {
                frames: vec![f.clone()],
                unverified: false
            }
        );
        // A return address at the function's end is a call at its last byte.
        assert_eq!(
            r(&mut s, 0x1010, Pc::Return),
            Outcome::Frames {
                frames: vec![Resolved {
                    offset: Some(0xf),
                    ..f
                }],
                unverified: false
            }
        );
        assert_eq!(r(&mut s, 0x1010, Pc::Exact), Outcome::NoSymbol);
        assert_eq!(
            // No binary of it here: its offsets count from 0, as a PIE program's.
            s.resolve(Some("/bin/app"), build_id, 0x1000, Base::Vaddr, Pc::Exact),
            r(&mut s, 0x1000, Pc::Exact)
        );
        assert_eq!(
            s.resolve(Some("other"), None, 0, Base::Load, Pc::Exact),
            Outcome::NoModule
        );
        assert_eq!(s.loaded.len(), 1);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        assert_eq!(s.warnings[0].kind, WarningKind::Companion);
        assert!(s.warnings[0].message.ends_with(
            "app.sym:5: not a record of the Breakpad format (1 damaged line(s) skipped)"
        ));
        let _ = std::fs::remove_dir_all(dir);
    }
}
