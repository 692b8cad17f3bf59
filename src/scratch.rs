//! Unnamed temporary files: what a run must hold that is too large for memory (a report
//! read to its end, the PDB an MSFZ file holds), removed from the directory as soon as
//! they are open, so nothing is left behind however the run ends.
//!
//! Written here rather than with the `tempfile` crate: the library built without its
//! default features (what a program embedding it links) takes none of the command's or
//! the network's crates, `tempfile` among them, and this needs only a file that is
//! removed as soon as it is open.

use std::fs::File;
use std::io;

/// A new file in the temporary directory (`$TMPDIR`, else `/tmp`), already removed from
/// it on systems that allow that (it lives while open); elsewhere it is left for the
/// system's cleaning. `what` goes into its name, for whoever sees it meanwhile.
pub(crate) fn unnamed_file(what: &str) -> io::Result<File> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir();
    for _ in 0..16 {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(
            ".dumpsyms-{what}-{}-{n}-{nanos}",
            std::process::id()
        ));
        match std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(file) => {
                let _ = std::fs::remove_file(&path);
                return Ok(file);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free name for a temporary file",
    ))
}
