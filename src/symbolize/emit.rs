//! What a symbolize run writes, kept within its bound: the output counted against what
//! was read, and `--json`'s records, streamed one per frame.

use std::io::{self, Write};

use super::Resolved;

/// How a run writes its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The report, its frames resolved in place.
    Text,
    /// A JSON array: one record per frame found, the same fields for every kind of
    /// report (docs/GUIDE.md, "Symbolizing crash reports").
    Json,
}

/// What is written may be this many times what was read (the report and the symbol
/// files), plus [`OUTPUT_SLACK`].
pub const OUTPUT_FACTOR: u64 = 99;
/// See [`OUTPUT_FACTOR`].
pub const OUTPUT_SLACK: u64 = 16 << 20;

/// The output, counted against what was read.
pub(super) struct Bounded<'a> {
    pub(super) out: &'a mut dyn Write,
    pub(super) written: u64,
    pub(super) read: u64,
    /// Bytes of the symbol files read so far.
    pub(super) symbols: u64,
    /// Whether the bound was met: frames are no longer resolved.
    pub(super) cut: bool,
}

impl<'a> Bounded<'a> {
    /// `out`, nothing written or read yet.
    pub(super) fn new(out: &'a mut dyn Write) -> Bounded<'a> {
        Bounded {
            out,
            written: 0,
            read: 0,
            symbols: 0,
            cut: false,
        }
    }

    pub(super) fn bound(&self) -> u64 {
        OUTPUT_FACTOR
            .saturating_mul(self.read.saturating_add(self.symbols))
            .saturating_add(OUTPUT_SLACK)
    }

    pub(super) fn exhausted(&self) -> bool {
        self.cut
    }

    /// A rendered line, whose lines (split at `\n`) take the original line's ending;
    /// `original` instead if it would pass the bound.
    pub(super) fn write_lines(
        &mut self,
        rendered: &str,
        ending: &str,
        original: &[u8],
    ) -> io::Result<()> {
        let extra = rendered.matches('\n').count() * ending.len().saturating_sub(1);
        if self.would_pass(rendered.len() + extra + ending.len()) {
            return self.write_all(original);
        }
        if ending == "\r\n" {
            self.write_all(rendered.replace('\n', "\r\n").as_bytes())?;
        } else {
            self.write_all(rendered.as_bytes())?;
        }
        self.write_all(ending.as_bytes())
    }

    /// Whether writing `len` more bytes would pass the bound (which then holds from
    /// here on).
    pub(super) fn would_pass(&mut self, len: usize) -> bool {
        if self.written.saturating_add(len as u64) > self.bound() {
            self.cut = true;
        }
        self.cut
    }
}

impl Write for Bounded<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

/// A JSON array written as it grows: `[`, then one compact record per line.
#[derive(Default)]
pub(super) struct JsonLines {
    pub(super) started: bool,
    /// The record being written.
    pub(super) buffer: Vec<u8>,
}

impl JsonLines {
    /// Writes `record`, unless it would pass the output's bound.
    pub(super) fn push(&mut self, out: &mut Bounded<'_>, record: &Record<'_>) -> io::Result<()> {
        self.buffer.clear();
        record.write(&mut self.buffer);
        let text = &self.buffer;
        if out.would_pass(text.len() + 2) {
            return Ok(());
        }
        out.write_all(if self.started { b",\n" } else { b"[\n" })?;
        self.started = true;
        out.write_all(text)
    }

    pub(super) fn finish(self, out: &mut Bounded<'_>) -> io::Result<()> {
        out.write_all(if self.started { b"\n]\n" } else { b"[]\n" })
    }
}

/// One frame found, as `--json` writes it: the same fields whatever the input (null
/// where it has none), keys in alphabetical order.
pub(super) struct Record<'a> {
    /// The report's line (text reports).
    pub(super) line: Option<u64>,
    /// The thread and the frame's number in it (on-device traces).
    pub(super) thread: Option<usize>,
    pub(super) frame: Option<usize>,
    /// The PC the input gives, where it gives one apart from the module's offset.
    pub(super) pc: Option<u64>,
    pub(super) module: Option<&'a str>,
    pub(super) build_id: Option<&'a str>,
    pub(super) offset: Option<u64>,
    pub(super) return_address: bool,
    pub(super) unverified: bool,
    pub(super) frames: &'a [Resolved],
}

impl Record<'_> {
    /// Written by hand rather than through a JSON tree: a trace of millions of PCs
    /// writes as many records.
    fn write(&self, out: &mut Vec<u8>) {
        use std::io::Write as _;
        let string = |out: &mut Vec<u8>, s: Option<&str>| match s {
            Some(s) => {
                let _ = serde_json::to_writer(&mut *out, s);
            }
            None => out.extend_from_slice(b"null"),
        };
        let number = |out: &mut Vec<u8>, n: Option<u64>| match n {
            Some(n) => {
                let _ = write!(out, "{n}");
            }
            None => out.extend_from_slice(b"null"),
        };
        let hex = |out: &mut Vec<u8>, n: Option<u64>| match n {
            Some(n) => {
                let _ = write!(out, "\"{n:#x}\"");
            }
            None => out.extend_from_slice(b"null"),
        };
        out.extend_from_slice(b"{\"build_id\":");
        string(out, self.build_id);
        out.extend_from_slice(b",\"frame\":");
        number(out, self.frame.map(|n| n as u64));
        out.extend_from_slice(b",\"frames\":[");
        for (i, f) in self.frames.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"file\":");
            string(out, f.file.as_deref());
            out.extend_from_slice(b",\"function\":");
            string(out, Some(&f.function));
            let _ = write!(out, ",\"inlined\":{},\"line\":", f.inlined);
            number(out, f.line.map(u64::from));
            out.push(b'}');
        }
        out.extend_from_slice(b"],\"line\":");
        number(out, self.line);
        out.extend_from_slice(b",\"module\":");
        string(out, self.module);
        out.extend_from_slice(b",\"offset\":");
        hex(out, self.offset);
        out.extend_from_slice(b",\"pc\":");
        hex(out, self.pc);
        let _ = write!(
            out,
            ",\"return_address\":{},\"thread\":",
            self.return_address
        );
        number(out, self.thread.map(|n| n as u64));
        let _ = write!(out, ",\"unverified\":{}}}", self.unverified);
    }
}
