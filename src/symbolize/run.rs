//! One `dumpsyms symbolize` run: a report in, the same report with its frames resolved
//! out (or, with `--json`, the frames as records).
//!
//! Bounded whatever the report: a line is read up to [`MAX_LINE`] bytes (a longer one is
//! copied through unread), and what is written stays within [`OUTPUT_FACTOR`] times what
//! was read (the report and the symbol files) plus [`OUTPUT_SLACK`]; past that, frames
//! are left as the report has them.

use std::io::{self, BufRead, Read, Write};

use super::input::{self, Context, Pc};
use super::render::{Renderer, Tally};
use super::{Outcome, Resolved, Symbolizer, ondevice};

/// How a run writes its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The report, its frames resolved in place.
    Text,
    /// A JSON array: one record per frame found, the same fields for every kind of
    /// report (docs/GUIDE.md, "Symbolizing crash reports").
    Json,
}

/// The longest line read as text: sanitizer lines with long C++ names run to a few KiB,
/// logcat's are cut at 4 KiB. A longer line is copied through as it is.
pub const MAX_LINE: usize = 1 << 20;

/// The largest on-device trace read: a device's trace of every thread is a few KiB.
pub const MAX_TRACE: u64 = 64 << 20;

/// What is written may be this many times what was read (the report and the symbol
/// files), plus [`OUTPUT_SLACK`].
pub const OUTPUT_FACTOR: u64 = 99;
/// See [`OUTPUT_FACTOR`].
pub const OUTPUT_SLACK: u64 = 16 << 20;

/// Reads the report from `report` and writes it resolved to `out`. A report whose
/// first character is `{` is the on-device stack-trace JSON; any other is read line
/// by line.
pub fn run(
    symbolizer: &mut Symbolizer,
    report: &mut dyn BufRead,
    out: &mut dyn Write,
    format: Format,
) -> io::Result<Tally> {
    let mut out = Bounded {
        out,
        written: 0,
        read: 0,
        symbols: 0,
        cut: false,
    };
    // Leading blank lines are kept in text mode.
    let mut first = Vec::new();
    let mut blank = Vec::new();
    loop {
        first.clear();
        match read_line(report, &mut first)? {
            Line::End => break,
            Line::Whole if first.trim_ascii().is_empty() => blank.push(first.clone()),
            Line::Whole | Line::Long => break,
        }
    }
    if first.trim_ascii_start().starts_with(b"{") {
        let mut doc = first;
        Read::take(&mut *report, MAX_TRACE.saturating_sub(doc.len() as u64) + 1)
            .read_to_end(&mut doc)?;
        if doc.len() as u64 > MAX_TRACE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "an on-device stack trace over {} MiB: no device writes one so large",
                    MAX_TRACE >> 20
                ),
            ));
        }
        // Only a JSON document of the trace's shape (an object with `symbols` or
        // `threads`) is a trace. Apple's `.ips` reports (a JSON header line, then a JSON
        // body), a shell prompt such as `{0}% ` and any other text that merely starts
        // with `{` are read as text.
        if !trace_shaped(&doc) {
            if let Some(why) = broken_trace(&doc) {
                symbolizer.warnings.push(format!(
                    "the report starts like an on-device stack trace but is not JSON ({why}): read as text"
                ));
            }
            let mut pending = blank.into_iter();
            let tally = lines(symbolizer, &mut &doc[..], &mut pending, &mut out, format);
            warn_if_cut(symbolizer, &out);
            return tally;
        }
        out.read = doc.len() as u64;
        let doc = String::from_utf8(doc).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "an on-device stack trace: not UTF-8 (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        let tally = trace(symbolizer, &doc, &mut out, format);
        warn_if_cut(symbolizer, &out);
        return tally;
    }
    let mut pending = blank
        .into_iter()
        .chain((!first.is_empty()).then_some(first));
    let tally = lines(symbolizer, report, &mut pending, &mut out, format);
    warn_if_cut(symbolizer, &out);
    tally
}

/// Whether `doc` is one JSON object with the on-device trace's `symbols` or `threads`.
fn trace_shaped(doc: &[u8]) -> bool {
    // The top-level keys only; every value is stepped over, not built.
    type Keys = std::collections::HashMap<String, serde::de::IgnoredAny>;
    serde_json::from_slice::<Keys>(doc)
        .is_ok_and(|keys| keys.contains_key("symbols") || keys.contains_key("threads"))
}

/// Why `doc`, which names the trace's keys near its start, is no JSON; `None` when it
/// does not name them or is JSON (of another shape).
fn broken_trace(doc: &[u8]) -> Option<String> {
    let head = &doc[..doc.len().min(4096)];
    let names_keys = [&b"\"symbols\""[..], b"\"threads\""]
        .iter()
        .any(|key| head.windows(key.len()).any(|w| w == *key));
    if !names_keys {
        return None;
    }
    serde_json::from_slice::<serde::de::IgnoredAny>(doc)
        .err()
        .map(|e| e.to_string())
}

fn warn_if_cut(symbolizer: &mut Symbolizer, out: &Bounded<'_>) {
    if out.cut {
        symbolizer.warnings.push(format!(
            "the output reached {OUTPUT_FACTOR} times the size of the report and symbol \
             files read (plus {} MiB): the frames after that are left as the report \
             has them",
            OUTPUT_SLACK >> 20
        ));
    }
}

/// A report read line by line; `pending` holds the lines already read.
fn lines(
    symbolizer: &mut Symbolizer,
    report: &mut dyn BufRead,
    pending: &mut dyn Iterator<Item = Vec<u8>>,
    out: &mut Bounded<'_>,
    format: Format,
) -> io::Result<Tally> {
    let mut renderer = Renderer::default();
    let mut context = Context::default();
    // Streamed, a record per line, so that a report of any length takes no more
    // memory than one.
    let mut records = JsonLines::default();
    let mut number = 0u64;
    let mut line = Vec::new();
    let mut long_lines = 0u64;
    loop {
        line.clear();
        let read = match pending.next() {
            Some(l) => {
                line = l;
                Line::Whole
            }
            None => read_line(report, &mut line)?,
        };
        number += 1;
        out.read += line.len() as u64;
        match read {
            Line::End => break,
            Line::Long => {
                long_lines += 1;
                let rest = copy_rest_of_line(report, out, format == Format::Text, &line)?;
                out.read += rest;
                continue;
            }
            Line::Whole => {}
        }
        let (bytes, ending) = split_ending(&line);
        // A line that is not UTF-8 is no frame of a known format: written back as it
        // came, byte for byte.
        let Ok(text) = std::str::from_utf8(bytes) else {
            if format == Format::Text {
                out.write_all(&line)?;
            }
            continue;
        };
        let mut unit = Unit {
            symbolizer: &mut *symbolizer,
            context: &mut context,
            renderer: &mut renderer,
            records: &mut records,
            out: &mut *out,
            format,
            number,
        };
        // rsyslog writes a message's newlines as `#012`: a whole backtrace arrives as
        // one line, each of its frames a segment, each followed by what it resolves to.
        let rendered = match text.contains(ESCAPED_NEWLINE) {
            false => unit.segment(text)?,
            true => {
                let mut joined = String::new();
                let mut changed = false;
                for (i, segment) in text.split(ESCAPED_NEWLINE).enumerate() {
                    if i > 0 {
                        joined.push('\n');
                    }
                    match unit.segment(segment)? {
                        Some(shown) => {
                            changed |= shown != segment;
                            joined.push_str(&shown);
                        }
                        None => joined.push_str(segment),
                    }
                }
                changed.then_some(joined)
            }
        };
        if format == Format::Text {
            match rendered.filter(|r| r != text) {
                Some(r) => out.write_lines(&r, ending, &line)?,
                None => out.write_all(&line)?,
            }
        }
    }
    if format == Format::Json {
        records.finish(out)?;
    }
    if long_lines > 0 {
        symbolizer.warnings.push(format!(
            "{long_lines} line(s) longer than {} MiB copied through unread",
            MAX_LINE >> 20
        ));
    }
    Ok(renderer.tally)
}

/// How rsyslog (and syslog daemons after it) escape a newline inside a message.
const ESCAPED_NEWLINE: &str = "#012";

/// What one line (or one `#012`-separated segment of it) is looked up and told with.
struct Unit<'u, 'o> {
    symbolizer: &'u mut Symbolizer,
    context: &'u mut Context,
    renderer: &'u mut Renderer,
    records: &'u mut JsonLines,
    out: &'u mut Bounded<'o>,
    format: Format,
    number: u64,
}

impl Unit<'_, '_> {
    /// The frame in `text`, if any, resolved and told (a JSON record); the text as
    /// rendered, `None` when it holds no frame.
    fn segment(&mut self, text: &str) -> io::Result<Option<String>> {
        self.context.learn(text);
        let mut frame = input::frame(text);
        if let Some(f) = &mut frame {
            self.context.place(f);
        }
        let Some(f) = frame else {
            return Ok(None);
        };
        let (frames, unverified) = match self.out.exhausted() {
            false => resolve_line_frame(self.symbolizer, self.context, &f),
            true => (Vec::new(), false),
        };
        self.out.symbols = self.symbolizer.symbol_bytes;
        let rendered = self.renderer.line(text, Some(&f), &frames);
        if self.format == Format::Json {
            let build_id = f.build_id.or_else(|| self.context.build_id(f.module));
            let record = Record {
                line: Some(self.number),
                thread: None,
                frame: None,
                pc: None,
                module: Some(f.module),
                build_id,
                offset: Some(f.offset),
                return_address: f.pc == Pc::Return,
                unverified,
                frames: &frames,
            };
            self.records.push(self.out, &record)?;
        }
        Ok(Some(rendered))
    }
}

/// What [`read_line`] read.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Line {
    /// A whole line, its ending included (none on the report's last line).
    Whole,
    /// [`MAX_LINE`] bytes of a line that goes on.
    Long,
    /// Nothing: the report has ended.
    End,
}

/// The report's next buffered bytes (empty at its end), reading again when a signal
/// interrupts.
fn fill(report: &mut dyn BufRead) -> io::Result<&[u8]> {
    loop {
        match report.fill_buf() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            // The buffer is read again to return it: the borrow of an `Ok` cannot outlive
            // a loop that may still call `fill_buf` again.
            Ok(_) => return report.fill_buf(),
            Err(e) => return Err(e),
        }
    }
}

/// Reads one line into `line`, at most [`MAX_LINE`] bytes of it.
fn read_line(report: &mut dyn BufRead, line: &mut Vec<u8>) -> io::Result<Line> {
    loop {
        let buf = fill(report)?;
        if buf.is_empty() {
            return Ok(if line.is_empty() {
                Line::End
            } else {
                Line::Whole
            });
        }
        let room = MAX_LINE - line.len();
        let (take, done) = match memchr::memchr(b'\n', &buf[..buf.len().min(room)]) {
            Some(i) => (i + 1, true),
            None => (buf.len().min(room), false),
        };
        line.extend_from_slice(&buf[..take]);
        report.consume(take);
        if done {
            return Ok(Line::Whole);
        }
        if line.len() >= MAX_LINE {
            return Ok(Line::Long);
        }
    }
}

/// Copies an over-long line through (`head`, then the rest up to its newline), or
/// skips it; the bytes read past `head`.
fn copy_rest_of_line(
    report: &mut dyn BufRead,
    out: &mut Bounded<'_>,
    copy: bool,
    head: &[u8],
) -> io::Result<u64> {
    if copy {
        out.write_all(head)?;
    }
    let mut total = 0u64;
    loop {
        let buf = fill(report)?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (take, done) = match memchr::memchr(b'\n', buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        if copy {
            out.write_all(&buf[..take])?;
        }
        report.consume(take);
        total += take as u64;
        if done {
            return Ok(total);
        }
    }
}

/// A line's text and its ending (`\r\n`, `\n`, or none), kept to be written back.
fn split_ending(line: &[u8]) -> (&[u8], &'static str) {
    if let Some(l) = line.strip_suffix(b"\r\n") {
        (l, "\r\n")
    } else if let Some(l) = line.strip_suffix(b"\n") {
        (l, "\n")
    } else {
        (line, "")
    }
}

/// The output, counted against what was read.
struct Bounded<'a> {
    out: &'a mut dyn Write,
    written: u64,
    read: u64,
    /// Bytes of the symbol files read so far.
    symbols: u64,
    /// Whether the bound was met: frames are no longer resolved.
    cut: bool,
}

impl Bounded<'_> {
    fn bound(&self) -> u64 {
        OUTPUT_FACTOR
            .saturating_mul(self.read.saturating_add(self.symbols))
            .saturating_add(OUTPUT_SLACK)
    }

    fn exhausted(&self) -> bool {
        self.cut
    }

    /// A rendered line, whose lines (split at `\n`) take the original line's ending;
    /// `original` instead if it would pass the bound.
    fn write_lines(&mut self, rendered: &str, ending: &str, original: &[u8]) -> io::Result<()> {
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
    fn would_pass(&mut self, len: usize) -> bool {
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
struct JsonLines {
    started: bool,
    /// The record being written.
    buffer: Vec<u8>,
}

impl JsonLines {
    /// Writes `record`, unless it would pass the output's bound.
    fn push(&mut self, out: &mut Bounded<'_>, record: &Record<'_>) -> io::Result<()> {
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

    fn finish(self, out: &mut Bounded<'_>) -> io::Result<()> {
        out.write_all(if self.started { b"\n]\n" } else { b"[]\n" })
    }
}

/// What a line's frame resolves to, and whether from an unidentified local file.
fn resolve_line_frame(
    symbolizer: &mut Symbolizer,
    context: &Context,
    f: &input::Frame<'_>,
) -> (Vec<Resolved>, bool) {
    // A module named by its build ID alone has no name to look under.
    let name = (f.build_id != Some(f.module)).then_some(f.module);
    let build_id = f.build_id.or_else(|| context.build_id(f.module));
    match symbolizer.resolve(name, build_id, f.offset, f.base, f.pc) {
        Outcome::Frames { frames, unverified } => (frames, unverified),
        Outcome::NoSymbol | Outcome::NoModule => (Vec::new(), false),
    }
}

/// The on-device trace: each thread's PCs, each followed by its frames.
fn trace(
    symbolizer: &mut Symbolizer,
    doc: &str,
    out: &mut Bounded<'_>,
    format: Format,
) -> io::Result<Tally> {
    let trace = ondevice::parse(doc).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("an on-device stack trace: {e}"),
        )
    })?;
    symbolizer.warnings.extend(trace.warnings.iter().cloned());
    let mut tally = Tally::default();
    let mut records = JsonLines::default();
    for (t, thread) in trace.threads.iter().enumerate() {
        if format == Format::Text {
            writeln!(out, "thread {t}:")?;
        }
        for (n, &pc) in thread.iter().enumerate() {
            let f = trace.frame(pc, n);
            let module = f.module.map(|i| &trace.modules[i]);
            let outcome = match module {
                Some(m) if !out.exhausted() => Some(symbolizer.resolve(
                    Some(&m.path),
                    m.build_id.as_deref(),
                    f.offset,
                    f.base,
                    f.kind,
                )),
                _ => None,
            };
            out.symbols = symbolizer.symbol_bytes;
            let (frames, unverified) = match outcome {
                Some(Outcome::Frames { frames, unverified }) => (frames, unverified),
                _ => (Vec::new(), false),
            };
            if frames.is_empty() {
                tally.unresolved += 1;
            } else {
                tally.resolved += 1;
            }
            match format {
                Format::Text => {
                    let mut text = String::new();
                    let place = module.map_or(String::from("??"), |m| {
                        format!("{}+{:#x}", ondevice::display_name(&m.path), f.offset)
                    });
                    text.push_str(&format!("  #{n} {:#x} {place}\n", f.pc));
                    for (j, r) in frames.iter().enumerate() {
                        let by = if j > 0 { " (inlined by) " } else { "" };
                        text.push_str(&format!(
                            "      {by}{} at {}:{}\n",
                            r.function,
                            r.file.as_deref().unwrap_or("??"),
                            r.line.unwrap_or(0)
                        ));
                    }
                    if !out.would_pass(text.len()) {
                        out.write_all(text.as_bytes())?;
                    }
                }
                Format::Json => records.push(
                    out,
                    &Record {
                        line: None,
                        thread: Some(t),
                        frame: Some(n),
                        pc: Some(f.pc),
                        module: module.map(|m| m.path.as_str()),
                        build_id: module.and_then(|m| m.build_id.as_deref()),
                        offset: module.map(|_| f.offset),
                        return_address: f.kind == Pc::Return,
                        unverified,
                        frames: &frames,
                    },
                )?,
            }
        }
    }
    if format == Format::Json {
        records.finish(out)?;
    }
    Ok(tally)
}

/// One frame found, as `--json` writes it: the same fields whatever the input (null
/// where it has none), keys in alphabetical order.
struct Record<'a> {
    /// The report's line (text reports).
    line: Option<u64>,
    /// The thread and the frame's number in it (on-device traces).
    thread: Option<usize>,
    frame: Option<usize>,
    /// The PC the input gives, where it gives one apart from the module's offset.
    pc: Option<u64>,
    module: Option<&'a str>,
    build_id: Option<&'a str>,
    offset: Option<u64>,
    return_address: bool,
    unverified: bool,
    frames: &'a [Resolved],
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
