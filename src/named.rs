//! Files that an input names, rather than the user: a DWARF file table's sources (hashed
//! for `{digest}`), a mapping file, the configuration file, a debug map's object files.
//!
//! Such a path is untrusted text. It can name a FIFO nobody writes (opening it blocks
//! for ever), a device that never ends (`/dev/zero`), a terminal, or a sparse file of
//! any size. So every one is opened without blocking, asked what it is once open (the
//! path may have changed since it was looked at), refused unless it is a regular file,
//! and read within a bound: whole only where what it holds is small by nature, else
//! streamed.

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;

/// Why a named file was not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Refused {
    /// It could not be opened or read.
    #[error("cannot be read: {0}")]
    Io(#[from] io::Error),
    /// It is a FIFO, a device, a socket or a directory: only regular files are read.
    #[error("is {0}, not a regular file: only regular files are read")]
    NotRegular(&'static str),
    /// It is larger than what is read of it.
    #[error("is {size} bytes, more than the {limit} read of such a file")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The bound.
        limit: u64,
    },
}

/// What a file that is not regular is, in words.
fn what(meta: &std::fs::Metadata) -> &'static str {
    use std::os::unix::fs::FileTypeExt as _;
    let t = meta.file_type();
    if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// `path` opened for reading without blocking (`O_NONBLOCK`, so a FIFO with no writer
/// opens at once; `O_NOCTTY`, so a terminal named by an input never becomes ours),
/// and its size: refused unless what was opened is a regular file.
pub(crate) fn open(path: &Path) -> Result<(File, u64), Refused> {
    let file = std::os::unix::fs::OpenOptionsExt::custom_flags(
        std::fs::OpenOptions::new().read(true),
        libc::O_NONBLOCK | libc::O_NOCTTY,
    )
    .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(Refused::NotRegular(what(&meta)));
    }
    Ok((file, meta.len()))
}

/// The whole of the regular file `path`, refused when it holds more than `limit` bytes
/// (a file that grows while it is read is cut at `limit + 1` and refused too).
pub(crate) fn read(path: &Path, limit: u64) -> Result<Vec<u8>, Refused> {
    let (file, size) = open(path)?;
    if size > limit {
        return Err(Refused::TooLarge { size, limit });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(Refused::TooLarge {
            size: bytes.len() as u64,
            limit,
        });
    }
    Ok(bytes)
}

/// The regular file `path` read through `sink` a buffer at a time, refused before
/// anything is read when it holds more than `limit` bytes (and when it grows past it).
pub(crate) fn stream(path: &Path, limit: u64, mut sink: impl FnMut(&[u8])) -> Result<u64, Refused> {
    let (file, size) = open(path)?;
    if size > limit {
        return Err(Refused::TooLarge { size, limit });
    }
    let mut file = file.take(limit.saturating_add(1));
    let mut buf = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        total += n as u64;
        if total > limit {
            return Err(Refused::TooLarge { size: total, limit });
        }
        sink(&buf[..n]);
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("dumpsyms-named-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_fifo_nobody_writes_is_refused_at_once() {
        let dir = scratch("fifo");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a NUL-terminated path and a mode.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let started = Instant::now();
        assert!(matches!(
            read(&fifo, 1 << 20),
            Err(Refused::NotRegular("a FIFO"))
        ));
        // Through a link too.
        std::os::unix::fs::symlink(&fifo, dir.join("link")).unwrap();
        assert!(matches!(
            stream(&dir.join("link"), 1 << 20, |_| {}),
            Err(Refused::NotRegular("a FIFO"))
        ));
        assert!(started.elapsed() < Duration::from_secs(2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn devices_and_directories_are_refused() {
        for (path, kind) in [
            ("/dev/zero", "a character device"),
            ("/dev/urandom", "a character device"),
            ("/", "a directory"),
        ] {
            match read(Path::new(path), 1 << 20) {
                Err(Refused::NotRegular(k)) => assert_eq!(k, kind, "{path}"),
                other => panic!("{path}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_sparse_file_past_the_bound_is_refused_unread() {
        let dir = scratch("sparse");
        let path = dir.join("big");
        let f = File::create(&path).unwrap();
        f.set_len(4 << 30).unwrap();
        let started = Instant::now();
        let mut seen = 0usize;
        match stream(&path, 1 << 20, |b| seen += b.len()) {
            Err(Refused::TooLarge { size, limit }) => {
                assert_eq!((size, limit), (4 << 30, 1 << 20));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(seen, 0);
        assert!(started.elapsed() < Duration::from_secs(2));
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(read(&path, 3).unwrap(), b"abc");
        assert!(matches!(read(&path, 2), Err(Refused::TooLarge { .. })));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
