//! The archives among a store run's inputs, unpacked (see [`crate::archive`]) so that
//! the run walks their members as it walks a directory's files.

use std::path::{Path, PathBuf};

use super::{Failure, Report};

/// A store run's inputs once its archives are unpacked.
pub(super) struct Inputs {
    /// The inputs, each archive replaced by the directories its members (and those of
    /// the archives inside it) were written to.
    pub paths: Vec<PathBuf>,
    /// The `usr/lib/debug` directories of the archives' members (a Debian `-dbg` or
    /// `-dbgsym` package's): where the binaries of every archive of the run find their
    /// debug files, as `--debug-dir` on the unpacked trees would have them.
    pub debug_dirs: Vec<PathBuf>,
    /// Archives that could not be read, or not to their end.
    pub failures: Vec<Failure>,
    /// Removes the unpacked members when the run is over.
    #[cfg(feature = "archives")]
    _unpacking: Option<crate::archive::Unpacking>,
}

/// Unpacks the archives among `paths` into a directory of the run's own in `store`,
/// telling each as [`Event::Unpacked`] (and its damage as [`Event::Failed`]).
#[cfg(feature = "archives")]
pub(super) fn inputs(
    paths: &[PathBuf],
    store: &Path,
    jobs: Option<usize>,
    report: &dyn Report,
) -> Inputs {
    use super::Event;
    use crate::archive;
    let threads =
        jobs.unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    let mut unpacking = archive::Unpacking::new(store, threads);
    let mut out = Vec::with_capacity(paths.len());
    for path in paths {
        let Some(kind) = archive::kind_of_file(path) else {
            out.push(path.clone());
            continue;
        };
        let first = unpacking.unpacked.len();
        unpacking.unpack(path, path, kind);
        out.extend(unpacking.unpacked[first..].iter().map(|u| u.dir.clone()));
    }
    for unpacked in &unpacking.unpacked {
        let warnings: Vec<&crate::error::Warning> = unpacking
            .warnings
            .iter()
            .filter(|(archive, _)| *archive == unpacked.shown)
            .map(|(_, w)| w)
            .collect();
        report.event(&Event::Unpacked {
            archive: &unpacked.shown,
            into: &unpacked.dir,
            warnings: &warnings,
        });
    }
    let failures: Vec<Failure> = std::mem::take(&mut unpacking.failures)
        .into_iter()
        .map(|(archive, why)| Failure::Archive { archive, why })
        .collect();
    for e in &failures {
        report.event(&Event::Failed(e));
    }
    let debug_dirs = unpacking
        .unpacked
        .iter()
        .map(|u| u.dir.join("usr/lib/debug"))
        .filter(|d| d.is_dir())
        .collect();
    Inputs {
        paths: out,
        debug_dirs,
        failures,
        _unpacking: Some(unpacking),
    }
}

/// Without archive support, the inputs as they are.
#[cfg(not(feature = "archives"))]
pub(super) fn inputs(
    paths: &[PathBuf],
    _store: &Path,
    _jobs: Option<usize>,
    _report: &dyn Report,
) -> Inputs {
    Inputs {
        paths: paths.to_vec(),
        debug_dirs: Vec::new(),
        failures: Vec::new(),
    }
}
