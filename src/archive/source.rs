//! An archive's bytes as its readers take them: read from the file at positions, never
//! mapped. A mapped archive read to its end counts whole in the run's resident memory
//! (an 841 MB `.tar.zst` made a store run's peak 816 MiB); read, it costs a buffer.

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::FileExt;
use std::sync::Arc;

/// A range of a file, read at positions: each clone (one per thread reading a ZIP
/// archive) has its own position and shares the file.
#[derive(Clone)]
pub(crate) struct Source {
    file: Arc<File>,
    start: u64,
    len: u64,
    pos: u64,
}

impl Source {
    pub(crate) fn new(file: File) -> io::Result<Source> {
        let len = file.metadata()?.len();
        Ok(Source {
            file: Arc::new(file),
            start: 0,
            len,
            pos: 0,
        })
    }

    /// The bytes `offset..offset + len` of this source, as a source of their own.
    pub(crate) fn range(&self, offset: u64, len: u64) -> Source {
        let start = self.start.saturating_add(offset.min(self.len));
        Source {
            file: self.file.clone(),
            start,
            len: len.min(self.len.saturating_sub(offset)),
            pos: 0,
        }
    }

    pub(crate) fn len(&self) -> u64 {
        self.len
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.len.saturating_sub(self.pos);
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.start + self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for Source {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let pos = match to {
            SeekFrom::Start(p) => Some(p),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
        };
        let pos = pos.ok_or_else(|| io::Error::other("seek before the start of the archive"))?;
        self.pos = pos;
        Ok(pos)
    }
}
