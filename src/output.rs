//! Writing an output file atomically: into a temporary file beside it, renamed into
//! place only once complete, so no reader ever sees a half-written symbol file.
//!
//! Only a regular file (or a path where nothing is yet) is replaced that way. A path
//! that is a symbolic link is followed, so the link stays and its target gets the new
//! contents. A device, FIFO or socket (`--output /dev/null`, `/dev/stdout`) is written
//! through: renaming over it would, run as root, destroy `/dev/null`.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; it appears at its path only on [`AtomicFile::commit`].
pub struct AtomicFile {
    target: PathBuf,
    /// `None` when writing through to a file that is not a regular one.
    temp: Option<Temp>,
    writer: Option<BufWriter<File>>,
    /// The contents are on disk already ([`AtomicFile::sync`]).
    synced: bool,
}

/// Symbolic links followed before giving up, as the kernel's own limit (`ELOOP`).
const MAX_LINKS: usize = 40;

impl AtomicFile {
    /// Starts writing `target`. Missing parent directories are created.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        // Asked of the kernel, through every link: `/dev/stdout` leads through
        // `/proc/self/fd/1` to a pipe that has no path to follow by hand.
        if let Ok(meta) = fs::metadata(target)
            && !meta.is_file()
        {
            if meta.is_dir() {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    "is a directory",
                ));
            }
            // A device, FIFO or socket: written through, never replaced.
            let file = fs::OpenOptions::new().write(true).open(target)?;
            return Ok(AtomicFile {
                target: target.to_path_buf(),
                temp: None,
                writer: Some(BufWriter::with_capacity(1 << 16, file)),
                synced: false,
            });
        }
        let named = target;
        let target = follow_links(target)?;
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if target == named {
            fs::create_dir_all(&dir)?;
        } else if !dir.is_dir() {
            // A link's target is not a path the user named: its directories are not
            // made (a dangling link to `/nonexistent/x.sym` must not create
            // `/nonexistent`).
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!(
                    "is a symbolic link to {}, whose directory does not exist",
                    target.display()
                ),
            ));
        }
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name")
        })?;
        // Unnamed until committed, where the file system allows it: a run killed while
        // writing (a download cut by SIGKILL) leaves nothing in the directory.
        if let Some((file, proc_path)) = unnamed(&dir) {
            return Ok(AtomicFile {
                target,
                temp: Some(Temp::Unnamed(proc_path)),
                writer: Some(BufWriter::with_capacity(1 << 16, file)),
                synced: false,
            });
        }
        // The same directory, so that the final rename cannot cross file systems.
        let mut n = 0u32;
        loop {
            let temp = dir.join(format!(
                ".{}.{}.{n}.tmp",
                name.to_string_lossy(),
                std::process::id()
            ));
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&temp)
            {
                Ok(file) => {
                    return Ok(AtomicFile {
                        target,
                        temp: Some(Temp::Named(temp)),
                        writer: Some(BufWriter::with_capacity(1 << 16, file)),
                        synced: false,
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The writer for the contents.
    pub fn writer(&mut self) -> &mut dyn Write {
        // What is written after a sync is synced again at commit.
        self.synced = false;
        self.writer
            .as_mut()
            .expect("writer is present until commit")
    }

    /// Where the contents are until [`AtomicFile::commit`] (the target itself when it
    /// is written through), for checking them before they are committed.
    #[cfg(any(feature = "net", test))]
    pub fn written_path(&self) -> &Path {
        match &self.temp {
            Some(Temp::Named(p) | Temp::Unnamed(p)) => p,
            None => &self.target,
        }
    }

    /// Flushes the contents to disk, so that [`AtomicFile::written_path`] can be read
    /// back whole before committing.
    #[cfg(feature = "net")]
    pub fn flush(&mut self) -> io::Result<()> {
        self.writer().flush()
    }

    /// Flushes the contents and syncs them to disk, leaving [`AtomicFile::commit`] only
    /// the rename: a caller that commits under a lock syncs first, outside it (syncing
    /// a large file takes a tenth of a second).
    pub fn sync(&mut self) -> io::Result<()> {
        let writer = self
            .writer
            .as_mut()
            .expect("writer is present until commit");
        writer.flush()?;
        if self.temp.is_some() {
            writer.get_ref().sync_all()?;
            self.synced = true;
        }
        Ok(())
    }

    /// Flushes, syncs (unless [`AtomicFile::sync`] did) and renames the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        let writer = self.writer.take().expect("commit is called once");
        let file = writer.into_inner().map_err(|e| e.into_error())?;
        let Some(temp) = self.temp.take() else {
            return Ok(());
        };
        if !self.synced {
            file.sync_all()?;
        }
        match temp {
            Temp::Named(temp) => {
                drop(file);
                fs::rename(&temp, &self.target)
            }
            Temp::Unnamed(proc_path) => {
                // Linked under a hidden name, then renamed over the target: a link
                // cannot replace a file that is there.
                let named = link_beside(&proc_path, &self.target)?;
                drop(file);
                fs::rename(&named, &self.target).inspect_err(|_| {
                    let _ = fs::remove_file(&named);
                })
            }
        }
    }
}

/// Where an uncommitted file's contents are.
enum Temp {
    /// A hidden file beside the target.
    Named(PathBuf),
    /// An unnamed file (`O_TMPFILE`), reached through `/proc/self/fd`.
    Unnamed(PathBuf),
}

/// An unnamed file in `dir` and the path that reaches it, where the kernel and the file
/// system support them (Linux's `O_TMPFILE`, and `/proc` to name it by).
#[cfg(target_os = "linux")]
fn unnamed(dir: &Path) -> Option<(fs::File, PathBuf)> {
    use std::os::unix::fs::OpenOptionsExt;
    use std::os::unix::io::AsRawFd;
    let file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_TMPFILE)
        .mode(0o666)
        .open(dir)
        .ok()?;
    let proc_path = PathBuf::from(format!("/proc/self/fd/{}", file.as_raw_fd()));
    proc_path.exists().then_some((file, proc_path))
}

#[cfg(not(target_os = "linux"))]
fn unnamed(_dir: &Path) -> Option<(fs::File, PathBuf)> {
    None
}

/// Links the unnamed file at `proc_path` into `target`'s directory under a hidden name
/// of its own; returns that name.
#[cfg(target_os = "linux")]
fn link_beside(proc_path: &Path, target: &Path) -> io::Result<PathBuf> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let dir = target.parent().unwrap_or(Path::new("."));
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let from = CString::new(proc_path.as_os_str().as_bytes())?;
    for n in 0..100u32 {
        let named = dir.join(format!(".{name}.{}.{n}.tmp", std::process::id()));
        let to = CString::new(named.as_os_str().as_bytes())?;
        // SAFETY: both are NUL-terminated paths that live across the call.
        let rc = unsafe {
            libc::linkat(
                libc::AT_FDCWD,
                from.as_ptr(),
                libc::AT_FDCWD,
                to.as_ptr(),
                libc::AT_SYMLINK_FOLLOW,
            )
        };
        if rc == 0 {
            return Ok(named);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::AlreadyExists {
            return Err(e);
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        "no free temporary name beside the output",
    ))
}

#[cfg(not(target_os = "linux"))]
fn link_beside(_proc_path: &Path, _target: &Path) -> io::Result<PathBuf> {
    unreachable!("unnamed files are made on Linux only")
}

/// `path` with every symbolic link in its last component followed (relative targets
/// against the link's directory), so that the link is kept and its target replaced.
fn follow_links(path: &Path) -> io::Result<PathBuf> {
    let mut path = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        match fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => {
                let to = fs::read_link(&path)?;
                path = match path.parent() {
                    Some(dir) if to.is_relative() => dir.join(to),
                    _ => to,
                };
            }
            _ => return Ok(path),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        "too many levels of symbolic links",
    ))
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            // Not committed: an error happened; leave nothing behind.
            self.writer = None;
            if let Some(Temp::Named(temp)) = &self.temp {
                let _ = fs::remove_file(temp);
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dumpsyms-output-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_link_is_kept_and_its_target_replaced() {
        let dir = scratch("link");
        fs::write(dir.join("real.sym"), "old").unwrap();
        std::os::unix::fs::symlink("real.sym", dir.join("link.sym")).unwrap();
        let mut f = AtomicFile::create(&dir.join("link.sym")).unwrap();
        f.writer().write_all(b"new").unwrap();
        f.commit().unwrap();
        assert!(
            fs::symlink_metadata(dir.join("link.sym"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read_to_string(dir.join("real.sym")).unwrap(), "new");
        // A dangling link gets its target created.
        std::os::unix::fs::symlink("made.sym", dir.join("dangling.sym")).unwrap();
        let mut f = AtomicFile::create(&dir.join("dangling.sym")).unwrap();
        f.writer().write_all(b"x").unwrap();
        f.commit().unwrap();
        assert_eq!(fs::read_to_string(dir.join("made.sym")).unwrap(), "x");
        // But a dangling link into a directory that is not there makes no directory.
        let nowhere = dir.join("nowhere/deeper/x.sym");
        std::os::unix::fs::symlink(&nowhere, dir.join("far.sym")).unwrap();
        let e = AtomicFile::create(&dir.join("far.sym")).err().unwrap();
        assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
        assert!(!dir.join("nowhere").exists());
        // A loop is an error, not a hang.
        std::os::unix::fs::symlink("b", dir.join("a")).unwrap();
        std::os::unix::fs::symlink("a", dir.join("b")).unwrap();
        assert!(AtomicFile::create(&dir.join("a")).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_synced_file_appears_only_when_committed_and_a_dropped_one_never() {
        let dir = scratch("sync");
        fs::write(dir.join("out.sym"), "old").unwrap();
        let mut f = AtomicFile::create(&dir.join("out.sym")).unwrap();
        f.writer().write_all(b"new").unwrap();
        f.sync().unwrap();
        // On disk whole, but not yet in place.
        assert_eq!(fs::read_to_string(f.written_path()).unwrap(), "new");
        assert_eq!(fs::read_to_string(dir.join("out.sym")).unwrap(), "old");
        f.commit().unwrap();
        assert_eq!(fs::read_to_string(dir.join("out.sym")).unwrap(), "new");
        // A loser of a claim: synced, then dropped, leaves nothing behind.
        let mut f = AtomicFile::create(&dir.join("out.sym")).unwrap();
        f.writer().write_all(b"lost").unwrap();
        f.sync().unwrap();
        drop(f);
        assert_eq!(fs::read_to_string(dir.join("out.sym")).unwrap(), "new");
        assert_eq!(fs::read_dir(&dir).unwrap().count(), 1);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_device_is_written_through_not_replaced() {
        let dir = scratch("device");
        std::os::unix::fs::symlink("/dev/null", dir.join("null")).unwrap();
        let mut f = AtomicFile::create(&dir.join("null")).unwrap();
        f.writer().write_all(b"x").unwrap();
        f.commit().unwrap();
        assert!(
            fs::symlink_metadata(dir.join("null"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        fs::remove_dir_all(&dir).unwrap();
        let mut f = AtomicFile::create(Path::new("/dev/null")).unwrap();
        f.writer().write_all(b"MODULE Linux x86_64 0 a\n").unwrap();
        f.commit().unwrap();
        let meta = fs::metadata("/dev/null").unwrap();
        assert!(std::os::unix::fs::FileTypeExt::is_char_device(
            &meta.file_type()
        ));
    }
}
