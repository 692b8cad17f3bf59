//! Where a module's symbols come from, in order: store directories, symbol servers over
//! HTTP (their files cached in a store), then an object file dumped on the fly — the
//! binary at the report's path or in a debug directory, a debug file under a debug
//! directory's `.build-id`, or one from debuginfod.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::store::{Found, Stores, debug_ids, file_name, spellings};
use crate::error::{Warning, WarningKind};
use crate::fetch::Limits;
use crate::fetch::debuginfod::Debuginfod;
use crate::fetch::symbols::SymbolServers;
use crate::load::{Input, Object};
use object::Object as _;

/// Everything a run may read symbols from: `Sources::default()` reads nothing, each
/// field adds a place.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Sources {
    /// `--store` directories.
    pub stores: Vec<PathBuf>,
    /// `--symbols-url`: none when empty.
    pub servers: Option<SymbolServers>,
    /// `--debug-dir`: binaries by name, debug files by `.build-id`.
    pub debug_dirs: Vec<PathBuf>,
    /// Whether the files at the paths a report names are read (the command does; a
    /// service symbolizing others' reports, or a fuzzer, need not).
    pub module_paths: bool,
    /// Debug files by build ID (`DEBUGINFOD_URLS`), unless turned off.
    pub debuginfod: Option<Debuginfod>,
    /// `--verified-only`: no module is resolved from a local file that the report does
    /// not identify by build ID.
    pub verified_only: bool,
    /// The most time the run spends on servers in all (symbol servers and debuginfod
    /// alike), from its first request; None for no limit.
    pub network_time: Option<Duration>,
    /// The run's time on the network so far.
    pub(crate) clock: NetworkClock,
    /// `--firmware`: the ELF whose addresses an ESP-IDF `Backtrace:` gives.
    pub firmware: Option<PathBuf>,
}

/// When a run's first request was sent, and whether its time on the network has been
/// said to be spent.
#[derive(Debug, Clone, Default)]
pub(crate) struct NetworkClock {
    started: Option<Instant>,
    spent: bool,
}

/// What was found for a module.
pub(crate) enum Source {
    /// A symbol file, from a store or a server's cache.
    SymFile(PathBuf),
    /// An object file to dump: a binary, or a debug file.
    Object(PathBuf),
    /// Nothing anywhere.
    Missing,
}

/// A module as a report names it.
#[derive(Clone, Copy)]
pub(crate) struct Wanted<'a> {
    /// A path or a file name; None when the report gives only a build ID.
    pub module: Option<&'a str>,
    /// GNU build ID, hex.
    pub build_id: Option<&'a str>,
}

impl Sources {
    /// Stores and debug directories that are not directories (a typo is otherwise
    /// only a report with nothing resolved).
    pub(crate) fn missing_dirs(&self) -> Vec<Warning> {
        let stores = self.stores.iter().map(|d| ("--store", d));
        let debug = self.debug_dirs.iter().map(|d| ("--debug-dir", d));
        stores
            .chain(debug)
            .filter(|(_, d)| !d.is_dir())
            .map(|(flag, d)| {
                let message = format!("{flag} {}: not a directory", d.display());
                Warning::new(WarningKind::Lookup, message)
            })
            .collect()
    }

    /// The first source of `want`'s symbols; what went wrong on the way (an ambiguous
    /// name, failing servers) goes to `warnings`.
    pub(crate) fn find(&mut self, want: Wanted, warnings: &mut Vec<Warning>) -> Source {
        match Stores::new(self.stores.clone()).find(want.module, want.build_id) {
            Found::File(path) => return Source::SymFile(path),
            Found::Ambiguous(ids) => {
                warnings.push(Warning::new(
                    WarningKind::Lookup,
                    format!(
                        "{}: no build ID given and the stores hold {} builds of it ({}): \
                     not resolved",
                        crate::untrusted::for_terminal(want.module.unwrap_or("")),
                        ids.len(),
                        ids.join(", ")
                    ),
                ));
                return Source::Missing;
            }
            Found::Missing => {}
        }
        if let Some(path) = self.on_servers(want, warnings) {
            return Source::SymFile(path);
        }
        if let Some(path) = self.local_object(want) {
            return Source::Object(path);
        }
        match self.on_debuginfod(want, warnings) {
            Some(path) => Source::Object(path),
            None => Source::Missing,
        }
    }

    /// What is left of the run's time on the network (starting its clock), or None
    /// when it is spent (said once).
    fn network_left(&mut self, warnings: &mut Vec<Warning>) -> Option<Option<Duration>> {
        let Some(total) = self.network_time else {
            return Some(None);
        };
        let started = *self.clock.started.get_or_insert_with(Instant::now);
        let left = total.saturating_sub(started.elapsed());
        if left.is_zero() {
            if !self.clock.spent {
                self.clock.spent = true;
                warnings.push(Warning::new(
                    WarningKind::Server,
                    format!(
                        "the run's {} s on symbol servers and debuginfod are spent: no \
                         server is asked for the other modules",
                        total.as_secs()
                    ),
                ));
            }
            return None;
        }
        Some(Some(left))
    }

    fn on_servers(&mut self, want: Wanted, warnings: &mut Vec<Warning>) -> Option<PathBuf> {
        let name = want.module.and_then(file_name)?;
        let ids = debug_ids(want.build_id?);
        if ids.is_empty() || self.servers.as_ref()?.urls.is_empty() {
            return None;
        }
        let left = self.network_left(warnings)?;
        let servers = self.servers.as_mut()?;
        let mut servers_now = servers.clone();
        servers_now.limits = within(servers.limits, left);
        let fetched = servers_now.find(name, &ids);
        if !fetched.problems.is_empty() {
            warnings.extend(fetched.problems.iter().cloned());
            // A server that failed (down, hanging, refusing) is not asked again in this
            // run: each module would wait for it as long again.
            servers.urls.retain(|u| {
                !fetched
                    .problems
                    .iter()
                    .any(|p| p.message.contains(u.trim_end_matches('/')))
            });
        }
        fetched.path
    }

    /// The object file on this machine that is the module's binary or debug file: at
    /// the report's path, in a debug directory by name, or under a debug directory's
    /// `.build-id`; with a build ID, only a file of that build.
    pub(crate) fn local_object(&self, want: Wanted) -> Option<PathBuf> {
        let mut candidates: Vec<PathBuf> = Vec::new();
        if let Some(module) = want.module
            && self.module_paths
            && module.contains(['/', '\\'])
        {
            candidates.push(PathBuf::from(module));
        }
        let name = want.module.and_then(file_name);
        let hex = want
            .build_id
            .filter(|id| id.len() >= 2 && id.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(str::to_ascii_lowercase);
        for dir in &self.debug_dirs {
            for spelled in name.map(spellings).unwrap_or_default() {
                // A PDB is no object: the image it was found beside is.
                if !spelled.ends_with(".pdb") {
                    candidates.push(dir.join(&*spelled));
                }
            }
            if let Some(hex) = &hex {
                candidates.push(crate::locate::build_id_path(dir, hex));
            }
        }
        if self.verified_only && want.build_id.is_none() {
            // It could not be used (nothing identifies it), so it is not even opened:
            // a report can name any path, a device or a FIFO among them. Found, it is
            // only named in the warning that refuses it.
            return candidates.into_iter().find(|c| c.is_file());
        }
        candidates
            .into_iter()
            .find(|c| is_object_of(c, want.build_id))
    }

    fn on_debuginfod(&mut self, want: Wanted, warnings: &mut Vec<Warning>) -> Option<PathBuf> {
        let id = crate::identity::unhex(want.build_id?)?;
        if self.debuginfod.as_ref()?.servers.is_empty() {
            return None;
        }
        let left = self.network_left(warnings)?;
        let client = self.debuginfod.as_mut()?;
        let mut now = client.clone();
        now.limits = within(client.limits, left);
        let fetched = now.debuginfo(&id, &|p| crate::locate::has_build_id(p, &id));
        // A server that failed (down, stalled, dripping) is not asked again in this
        // run: each build ID would wait for it as long again.
        client.servers.retain(|s| {
            !fetched
                .problems
                .iter()
                .any(|p| p.message.contains(s.as_str()))
        });
        warnings.extend(fetched.problems);
        fetched.path
    }
}

/// `limits` for a download that must end within `left`: a download can last its whole
/// time plus one wait for the read that passes it, so each takes part of what is left.
fn within(limits: Limits, left: Option<Duration>) -> Limits {
    let Some(left) = left else {
        return limits;
    };
    let wait = limits.timeout.min(left / 2);
    Limits {
        timeout: wait,
        max_time: shorter(limits.max_time, Some(left - wait)),
        ..limits
    }
}

/// The shorter of two time limits, None being none.
fn shorter(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Whether `path` is an object file, and of build `build_id` when one is given.
fn is_object_of(path: &Path, build_id: Option<&str>) -> bool {
    let Ok(input) = Input::open(path) else {
        return false;
    };
    let Ok(obj) = Object::parse_any(&input) else {
        return false;
    };
    match build_id {
        None => true,
        // A Mach-O image is named by its UUID where an ELF is by its build ID.
        Some(want) => crate::identity::build_id(&obj)
            .map(crate::identity::hex_upper)
            .or_else(|| crate::identity::mach_uuid(&obj).map(|u| crate::identity::hex_upper(&u)))
            .is_some_and(|have| have.eq_ignore_ascii_case(want)),
    }
}

/// What a local object file says of where its addresses are.
pub(crate) struct Local {
    /// Its load address (for ELF its first `PT_LOAD`'s virtual address, what the dumper
    /// subtracts from every address it writes) and its executable sections.
    pub layout: crate::identity::Layout,
    /// A position-dependent ELF executable (`ET_EXEC`): it runs at the addresses it was
    /// linked at, so an absolute address in it is its own virtual address.
    pub fixed: bool,
}

/// The layout of the object file at `path`.
pub(crate) fn layout(path: &Path) -> Option<Local> {
    let input = Input::open(path).ok()?;
    let obj = Object::parse_any(&input).ok()?;
    let fixed = obj.file.format() == object::BinaryFormat::Elf
        && obj.file.kind() == object::ObjectKind::Executable;
    Some(Local {
        layout: crate::identity::layout(&obj),
        fixed,
    })
}
