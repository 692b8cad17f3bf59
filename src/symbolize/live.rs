//! A report that may still be arriving: `adb logcat | dumpsyms symbolize`, a service's
//! log piped in. What has been answered is written out whenever the input has nothing
//! more ready (a read would wait), so a live pipe gets each line at once while a file
//! keeps its buffered speed; and a report held for its module map is released when the
//! input pauses.

use std::fs::File;
use std::io::{self, BufRead, Read};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// A report as `run` reads it: lines, and whether the next read would wait.
pub(super) trait Report: BufRead {
    /// Whether nothing is buffered and nothing is ready to read: the next read would
    /// wait for the writer.
    fn would_wait(&mut self) -> bool {
        false
    }

    /// Waits at most `d` for bytes to read; false when none came.
    fn wait(&mut self, _d: Duration) -> bool {
        true
    }
}

/// A report whose bytes are all there (a buffer, a file, what was held): it never
/// waits.
pub(super) struct Whole<'a>(pub(super) &'a mut dyn BufRead);

impl Read for Whole<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl BufRead for Whole<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.0.fill_buf()
    }

    fn consume(&mut self, n: usize) {
        self.0.consume(n)
    }
}

impl Report for Whole<'_> {}

/// A file or pipe read through a buffer of its own, asked with `poll(2)` whether a read
/// would wait.
pub(super) struct Live {
    file: File,
    buf: Box<[u8]>,
    pos: usize,
    len: usize,
}

impl Live {
    pub(super) fn new(file: File) -> Live {
        Live {
            file,
            buf: vec![0u8; 1 << 16].into_boxed_slice(),
            pos: 0,
            len: 0,
        }
    }

    /// Whether the file has bytes (or its end, or an error) to read within `ms`
    /// milliseconds; an interrupted wait is taken as ready, so the read says what is.
    fn ready(&self, ms: i32) -> bool {
        let mut fds = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd, for the length given.
        let n = unsafe { libc::poll(&mut fds, 1, ms) };
        n != 0
    }
}

impl Read for Live {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = {
            let buf = self.fill_buf()?;
            let n = buf.len().min(out.len());
            out[..n].copy_from_slice(&buf[..n]);
            n
        };
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Live {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len {
            self.len = self.file.read(&mut self.buf)?;
            self.pos = 0;
        }
        Ok(&self.buf[self.pos..self.len])
    }

    fn consume(&mut self, n: usize) {
        self.pos = (self.pos + n).min(self.len);
    }
}

impl Report for Live {
    fn would_wait(&mut self) -> bool {
        self.pos == self.len && !self.ready(0)
    }

    fn wait(&mut self, d: Duration) -> bool {
        self.pos < self.len || self.ready(i32::try_from(d.as_millis()).unwrap_or(i32::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    #[test]
    fn a_pipe_would_wait_until_written_and_a_file_never() {
        let mut fds = [0; 2];
        // SAFETY: two ints for the pipe's ends.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the fds were just made and are owned here alone.
        let (read, mut write) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        let mut live = Live::new(read);
        assert!(live.would_wait());
        assert!(!live.wait(Duration::from_millis(20)));
        write.write_all(b"one\ntwo\n").unwrap();
        assert!(!live.would_wait());
        let mut line = String::new();
        live.read_line(&mut line).unwrap();
        assert_eq!(line, "one\n");
        // The second line is buffered: no wait.
        assert!(!live.would_wait());
        line.clear();
        live.read_line(&mut line).unwrap();
        assert!(live.would_wait());
        drop(write);
        // The end is something to read.
        assert!(!live.would_wait());
        assert_eq!(live.fill_buf().unwrap(), b"");

        let file = File::open(file!()).unwrap();
        let mut live = Live::new(file);
        assert!(!live.would_wait());
    }
}
