//! `multipart/form-data` bodies (RFC 7578), streamed: text fields, then one file read
//! from disk as it is sent, so that a symbol file of gigabytes is never held in memory.
//! ureq has no multipart support, and the body is simple enough to write here.

use std::io::Read;

pub(crate) struct Form {
    boundary: String,
    head: Vec<u8>,
}

impl Form {
    /// A form whose boundary is derived from `seed` (so requests are reproducible) and
    /// cannot occur in text fields of this tool's making.
    pub(crate) fn new(seed: &str) -> Form {
        let hash = xxhash_rust::xxh3::xxh3_64(seed.as_bytes());
        Form {
            boundary: format!("------------------------{hash:016x}"),
            head: Vec::new(),
        }
    }

    pub(crate) fn content_type(&self) -> String {
        format!("multipart/form-data; boundary={}", self.boundary)
    }

    pub(crate) fn text(&mut self, name: &str, value: &str) {
        self.head.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n",
                self.boundary
            )
            .as_bytes(),
        );
    }

    /// The body with `file` (read from where it stands to its end) as the last part:
    /// its length, and a reader over it.
    pub(crate) fn with_file(
        &self,
        name: &str,
        filename: &str,
        content_type: &str,
        f: std::fs::File,
    ) -> std::io::Result<(u64, impl Read + use<>)> {
        let mut head = self.head.clone();
        head.extend_from_slice(
            format!(
                "--{}\r\nContent-Disposition: form-data; name=\"{name}\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n",
                self.boundary
            )
            .as_bytes(),
        );
        let tail = format!("\r\n--{}--\r\n", self.boundary).into_bytes();
        let mut f = f;
        let at = std::io::Seek::stream_position(&mut f)?;
        let len = head.len() as u64 + f.metadata()?.len().saturating_sub(at) + tail.len() as u64;
        Ok((
            len,
            std::io::Cursor::new(head)
                .chain(f)
                .chain(std::io::Cursor::new(tail)),
        ))
    }
}
