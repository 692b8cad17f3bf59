//! Where a report is held while its module map is read to its end: in memory up to
//! [`IN_MEMORY`], then in an unnamed temporary file.
//!
//! The file is [`crate::scratch::unnamed_file`]'s: removed as soon as it is open.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Cursor, Seek, Write};

/// How much of a held report stays in memory.
pub(super) const IN_MEMORY: usize = 8 << 20;

/// A report held: its bytes in memory, or past [`IN_MEMORY`] in a file.
pub(super) enum Spool {
    Memory(Vec<u8>),
    File(File),
}

impl Spool {
    pub(super) fn new() -> Spool {
        Spool::Memory(Vec::new())
    }

    /// What was written, to be read from its start.
    pub(super) fn into_reader(self) -> io::Result<Box<dyn BufRead>> {
        match self {
            Spool::Memory(bytes) => Ok(Box::new(Cursor::new(bytes))),
            Spool::File(mut file) => {
                file.rewind()?;
                Ok(Box::new(BufReader::new(file)))
            }
        }
    }
}

impl Write for Spool {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Spool::Memory(bytes) = self
            && bytes.len() + buf.len() > IN_MEMORY
        {
            let mut file = crate::scratch::unnamed_file("report")?;
            file.write_all(bytes)?;
            *self = Spool::File(file);
        }
        match self {
            Spool::Memory(bytes) => bytes.write(buf),
            Spool::File(file) => file.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Spool::Memory(_) => Ok(()),
            Spool::File(file) => file.flush(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_past_the_memory_bound_goes_to_a_file_and_reads_back_whole() {
        let mut spool = Spool::new();
        let line = vec![b'x'; 1 << 20];
        for _ in 0..9 {
            spool.write_all(&line).unwrap();
        }
        assert!(matches!(spool, Spool::File(_)));
        let mut back = Vec::new();
        spool.into_reader().unwrap().read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 9 << 20);
        let mut small = Spool::new();
        small.write_all(b"abc").unwrap();
        assert!(matches!(small, Spool::Memory(_)));
    }
}
