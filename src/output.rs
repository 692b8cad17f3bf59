//! Writing an output file atomically: into a temporary file beside it, renamed into
//! place only once complete, so no reader ever sees a half-written symbol file.

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

/// A file being written; it appears at its path only on [`AtomicFile::commit`].
pub struct AtomicFile {
    target: PathBuf,
    temp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Starts writing `target`. Missing parent directories are created.
    pub fn create(target: &Path) -> io::Result<AtomicFile> {
        let dir = match target.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&dir)?;
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(io::ErrorKind::InvalidInput, "output path has no file name")
        })?;
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
                        target: target.to_path_buf(),
                        temp,
                        writer: Some(BufWriter::with_capacity(1 << 16, file)),
                    });
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => return Err(e),
            }
        }
    }

    /// The writer for the contents.
    pub fn writer(&mut self) -> &mut dyn Write {
        self.writer
            .as_mut()
            .expect("writer is present until commit")
    }

    /// Flushes, syncs and renames the file into place.
    pub fn commit(mut self) -> io::Result<()> {
        let writer = self.writer.take().expect("commit is called once");
        let file = writer.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        drop(file);
        fs::rename(&self.temp, &self.target)
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            // Not committed: an error happened; leave nothing behind.
            self.writer = None;
            let _ = fs::remove_file(&self.temp);
        }
    }
}
