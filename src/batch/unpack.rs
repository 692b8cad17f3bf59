//! The archives among a store run's inputs, unpacked (see [`crate::archive`]) so that
//! the run walks their members as it walks a directory's files.

use std::path::{Path, PathBuf};

use super::{Failure, Report};

/// A store run's inputs once its archives are unpacked.
pub(super) struct Inputs {
    /// The inputs, each archive replaced by the directories its members (and those of
    /// the archives inside it) were written to.
    pub paths: Vec<PathBuf>,
    /// The inputs given that are not archives: each dumped whatever it is.
    pub given: Vec<PathBuf>,
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
    use std::os::unix::fs::MetadataExt as _;
    // Each archive once, however often (or by whatever path) it is given.
    let mut seen = std::collections::HashSet::new();
    let archives: Vec<Option<(archive::Kind, u64)>> = paths
        .iter()
        .map(|path| {
            let kind = archive::kind_of_file(path)?;
            let meta = std::fs::metadata(path).ok()?;
            match seen.insert((meta.dev(), meta.ino())) {
                true => Some((kind, meta.len())),
                // Given again: read once, and no longer an input of its own.
                false => Some((kind, u64::MAX)),
            }
        })
        .collect();
    let budget = archive::run_budget(
        archives
            .iter()
            .flatten()
            .filter(|(_, len)| *len != u64::MAX)
            .map(|(_, len)| *len),
    );
    let mut unpacking = archive::Unpacking::new(store, threads, budget);
    let mut out = Vec::with_capacity(paths.len());
    let mut given = Vec::new();
    for (path, archive) in paths.iter().zip(&archives) {
        let Some((kind, len)) = *archive else {
            out.push(path.clone());
            given.push(path.clone());
            continue;
        };
        if len == u64::MAX {
            continue;
        }
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
        given,
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
        given: paths.to_vec(),
        debug_dirs: Vec::new(),
        failures: Vec::new(),
    }
}
