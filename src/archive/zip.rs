//! ZIP archives and what is built on them (`.apk`, `.aab`, `.aar`, `.ipa`, `.jar`).

use std::sync::atomic::{AtomicUsize, Ordering};

use std::path::PathBuf;

use super::{Budget, Counted, Kind, Sink, Source};
use crate::error::Warning;

/// Why a ZIP archive is not read to its end.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ZipError {
    #[error("not a readable ZIP archive: {0}")]
    NotZip(#[source] ::zip::result::ZipError),
    #[error(
        "its entries overlap (they share their compressed bytes, or claim more than the file holds): a decompression bomb? Not read"
    )]
    Overlapping,
    /// The member that spent the run's budget; `name` as it may be shown.
    #[error("{name}: {source}")]
    Member {
        name: String,
        #[source]
        source: std::io::Error,
    },
}

/// Takes the members of the ZIP archive `bytes`, on `threads` threads: each member is
/// reached through the central directory, so they inflate side by side. One member that
/// cannot be read is a warning; the budget spent stops the archive. What is told comes
/// in the members' order, whichever thread read them.
pub(super) fn read(
    source: Source,
    budget: &Budget,
    sink: &mut Sink,
    threads: usize,
) -> Result<(), ZipError> {
    let mut archive = ::zip::ZipArchive::new(source).map_err(ZipError::NotZip)?;
    // Entries that share their compressed bytes are how a few kilobytes claim
    // terabytes (the overlapping-entry bomb); no archive tool makes them.
    if archive.has_overlapping_files().unwrap_or(true) {
        return Err(ZipError::Overlapping);
    }
    let next = AtomicUsize::new(0);
    let count = archive.len();
    let parts: Vec<Part> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads.clamp(1, count.max(1)))
            .map(|_| {
                let mut archive = archive.clone();
                let mut part = Part {
                    sink: sink.fork(),
                    warnings: Vec::new(),
                    nested: Vec::new(),
                    failed: None,
                };
                let next = &next;
                scope.spawn(move || {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        if i >= count || budget.spent() {
                            break;
                        }
                        part.member(&mut archive, i, budget);
                    }
                    part
                })
            })
            .collect();
        workers.into_iter().filter_map(|w| w.join().ok()).collect()
    });
    let mut warnings = Vec::new();
    let mut nested = Vec::new();
    let mut failed: Option<(usize, ZipError)> = None;
    for part in parts {
        warnings.extend(part.warnings);
        nested.extend(part.nested);
        if let Some((i, why)) = part.failed
            && failed.as_ref().is_none_or(|(j, _)| i < *j)
        {
            failed = Some((i, why));
        }
    }
    // Stable: one member's several warnings keep their order.
    warnings.sort_by_key(|w| w.0);
    nested.sort_by_key(|n| n.0);
    sink.warnings.extend(warnings.into_iter().map(|w| w.1));
    sink.nested.extend(nested.into_iter().map(|n| n.1));
    match failed {
        Some((_, why)) => Err(why),
        None => Ok(()),
    }
}

/// What one thread read, each warning and nested archive with the index of the member
/// it came from, so that they are told in the archive's order.
struct Part<'u> {
    sink: Sink<'u>,
    warnings: Vec<(usize, Warning)>,
    nested: Vec<(usize, (PathBuf, Kind))>,
    failed: Option<(usize, ZipError)>,
}

impl Part<'_> {
    fn member(&mut self, archive: &mut ::zip::ZipArchive<Source>, i: usize, budget: &Budget) {
        match archive.by_index(i) {
            Ok(mut file) => {
                // Directories and symbolic links: a link's target is no member.
                if file.is_file() {
                    let name = file.name_raw().to_vec();
                    let mut counted = Counted {
                        inner: &mut file,
                        budget,
                    };
                    if let Err(e) = self.sink.take(&name, &mut counted, None) {
                        let shown = String::from_utf8_lossy(&name).into_owned();
                        if budget.spent() {
                            let why = ZipError::Member {
                                name: crate::untrusted::name_for_output(&shown).to_string(),
                                source: e,
                            };
                            self.failed = Some((i, why));
                        } else {
                            self.sink.warn(&shown, format!("cannot be read: {e}"));
                        }
                    }
                }
            }
            Err(e) => self
                .sink
                .warn(&format!("entry {i}"), format!("cannot be read: {e}")),
        }
        self.warnings
            .extend(self.sink.warnings.drain(..).map(|w| (i, w)));
        self.nested
            .extend(self.sink.nested.drain(..).map(|n| (i, n)));
    }
}
