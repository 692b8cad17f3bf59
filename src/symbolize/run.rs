//! One `dumpsyms symbolize` run: a report in, the same report with its frames resolved
//! out (or, with `--json`, the frames as records).
//!
//! Bounded whatever the report: a line is read up to [`MAX_LINE`] bytes (a longer one is
//! copied through unread), and what is written stays within [`OUTPUT_FACTOR`] times what
//! was read (the report and the symbol files) plus [`OUTPUT_SLACK`]; past that, frames
//! are left as the report has them.

use std::io::{self, Read, Write};
use std::time::Duration;

use super::emit::{Bounded, JsonLines, Record};
use super::input::{self, Base, Context, Pc};
use super::live::{Report, Whole};
use super::maps::ModuleMap;
use super::render::{Renderer, Tally};
use super::spool::Spool;
use super::{Outcome, Resolved, Symbolizer, ips, ondevice, scan};
use crate::error::{Warning, WarningKind};

pub use super::emit::{Format, OUTPUT_FACTOR, OUTPUT_SLACK};

/// The longest line read as text: sanitizer lines with long C++ names run to a few KiB,
/// logcat's are cut at 4 KiB. A longer line is copied through as it is.
pub const MAX_LINE: usize = 1 << 20;

/// The largest on-device trace read: a device's trace of every thread is a few KiB.
pub const MAX_TRACE: u64 = 64 << 20;

/// Reads the report from `report` and writes it resolved to `out`. A report whose
/// first character is `{` is the on-device stack-trace JSON; any other is read line
/// by line.
pub(super) fn run(
    symbolizer: &mut Symbolizer,
    report: &mut dyn Report,
    out: &mut dyn Write,
    format: Format,
) -> io::Result<Tally> {
    let mut out = Bounded::new(out);
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
            match ips::parse(&doc) {
                ips::Parsed::Ips(ips) => {
                    out.read = doc.len() as u64;
                    let tally = ips::run(symbolizer, ips, &doc, &mut out, format);
                    warn_if_cut(symbolizer, &out);
                    return tally;
                }
                ips::Parsed::TooLarge(values) => {
                    symbolizer.warnings.push(Warning::new(
                        WarningKind::Report,
                        format!(
                            "an .ips report of some {values} JSON values, more than the {} read as one: read as text",
                            ips::MAX_IPS_VALUES
                        ),
                    ));
                }
                ips::Parsed::Not => {}
            }
            if let Some(why) = broken_trace(&doc) {
                symbolizer.warnings.push(Warning::new(
                    WarningKind::Report,
                    format!(
                        "the report starts like an on-device stack trace but is not JSON ({why}): read as text"
                    ),
                ));
            }
            let mut pending = blank.into_iter();
            let tally = lines(
                symbolizer,
                &mut Whole(&mut &doc[..]),
                &mut pending,
                &mut out,
                format,
            );
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
        symbolizer.warnings.push(Warning::new(
            WarningKind::Output,
            format!(
                "the output reached {OUTPUT_FACTOR} times the size of the report and symbol \
             files read (plus {} MiB): the frames after that are left as the report \
             has them",
                OUTPUT_SLACK >> 20
            ),
        ));
    }
}

/// How long a report that is still arriving may pause while lines are held for its
/// module map before they are written as the map read so far places them: a crashing
/// program prints its frames and its map in one burst.
pub(crate) const RELEASE_AFTER: Duration = Duration::from_secs(1);

/// The most that is held for a module map, in bytes and in lines: a glibc map of a
/// large process is a few thousand lines, an Apple `Binary Images` list some hundreds.
/// Past either, what is held is written as the map read so far places it, and reading
/// goes on.
pub(crate) const MAX_HELD: u64 = 64 << 20;
/// See [`MAX_HELD`].
pub(crate) const MAX_HELD_LINES: u64 = 1 << 20;

/// The longest lines are held for a module map while the report keeps arriving
/// without a pause (a busy `adb logcat`): a crash's map follows its frames within
/// moments, and a live log must not wait on it for long.
pub(crate) const MAX_HOLD_TIME: Duration = Duration::from_secs(5);

/// A report read line by line; `pending` holds the lines already read.
///
/// Lines stream through as they are read until one holds an absolute address that
/// the module map read so far does not place: the map may come after the frames (as
/// glibc, Apple, Wine and the stackwalkers print it), so from that line on the report is
/// held (in memory, then in a temporary file) and its map read, to the report's end, a
/// pause of [`RELEASE_AFTER`] in a report still arriving, [`MAX_HELD`] or
/// [`MAX_HOLD_TIME`], before the held lines are resolved; then streaming goes on.
fn lines(
    symbolizer: &mut Symbolizer,
    report: &mut dyn Report,
    pending: &mut dyn Iterator<Item = Vec<u8>>,
    out: &mut Bounded<'_>,
    format: Format,
) -> io::Result<Tally> {
    let mut state = Lines::default();
    while let Some(first) = state.stream(symbolizer, report, pending, out, format, true)? {
        let (spool, end) = hold(report, &first, &mut state.map, out)?;
        let mut held = spool.into_reader()?;
        state.stream(
            symbolizer,
            &mut Whole(&mut *held),
            &mut std::iter::empty(),
            out,
            format,
            false,
        )?;
        match end {
            Held::Ended => break,
            Held::Released => {}
            // Its head was the last thing held; the rest goes through as it comes.
            Held::LongLine => {
                let rest = copy_rest_of_line(report, out, format == Format::Text, &[])?;
                out.read += rest;
            }
        }
    }
    if format == Format::Json {
        state.records.finish(out)?;
    }
    if state.long_lines > 0 {
        symbolizer.warnings.push(Warning::new(
            WarningKind::Report,
            format!(
                "{} line(s) longer than {} MiB copied through unread",
                state.long_lines,
                MAX_LINE >> 20
            ),
        ));
    }
    Ok(state.renderer.tally)
}

/// Why [`hold`] stopped holding.
enum Held {
    /// The report ended.
    Ended,
    /// It paused, or what is held reached its bound.
    Released,
    /// A line longer than [`MAX_LINE`] began: its head was held, the rest is still to
    /// be read.
    LongLine,
}

/// Holds the rest of the report, from `first` on, learning its module map: to the
/// report's end, or until it pauses, what is held reaches its bound, or a line too long
/// to hold begins.
fn hold(
    report: &mut dyn Report,
    first: &[u8],
    map: &mut ModuleMap,
    out: &mut dyn Write,
) -> io::Result<(Spool, Held)> {
    let mut spool = Spool::new();
    spool.write_all(first)?;
    let (mut bytes, mut lines) = (first.len() as u64, 1u64);
    let started = std::time::Instant::now();
    let mut line = Vec::new();
    loop {
        if bytes >= MAX_HELD || lines >= MAX_HELD_LINES || started.elapsed() >= MAX_HOLD_TIME {
            return Ok((spool, Held::Released));
        }
        if report.would_wait() {
            out.flush()?;
            if !report.wait(RELEASE_AFTER) {
                return Ok((spool, Held::Released));
            }
        }
        line.clear();
        match read_line(report, &mut line)? {
            Line::End => return Ok((spool, Held::Ended)),
            Line::Long => {
                spool.write_all(&line)?;
                return Ok((spool, Held::LongLine));
            }
            Line::Whole => {
                if let Ok(text) = std::str::from_utf8(split_ending(&line).0) {
                    learn_map(map, text);
                }
                spool.write_all(&line)?;
            }
        }
        bytes += line.len() as u64;
        lines += 1;
    }
}

/// Learns the module-map entries of `text`, each `#012` segment of it.
fn learn_map(map: &mut ModuleMap, text: &str) {
    scan::split(text, ESCAPED_NEWLINE).for_each(|s| map.learn(s));
}

/// What a text report's reading keeps from line to line.
#[derive(Default)]
struct Lines {
    renderer: Renderer,
    context: Context,
    map: ModuleMap,
    /// Streamed, a record per line, so that a report of any length takes no more
    /// memory than one.
    records: JsonLines,
    number: u64,
    long_lines: u64,
}

impl Lines {
    /// Reads, resolves and writes lines until the report ends (None) or, when `may_hold`,
    /// until a line holds an absolute address that the map read so far does not place:
    /// that line is returned unwritten.
    fn stream(
        &mut self,
        symbolizer: &mut Symbolizer,
        report: &mut dyn Report,
        pending: &mut dyn Iterator<Item = Vec<u8>>,
        out: &mut Bounded<'_>,
        format: Format,
        may_hold: bool,
    ) -> io::Result<Option<Vec<u8>>> {
        let mut line = Vec::new();
        loop {
            line.clear();
            let read = match pending.next() {
                Some(l) => {
                    line = l;
                    Line::Whole
                }
                None => {
                    // What is answered goes out before a read that would wait.
                    if report.would_wait() {
                        out.flush()?;
                    }
                    read_line(report, &mut line)?
                }
            };
            match read {
                Line::End => return Ok(None),
                Line::Long => {
                    self.number += 1;
                    out.read += line.len() as u64;
                    self.long_lines += 1;
                    let rest = copy_rest_of_line(report, out, format == Format::Text, &line)?;
                    out.read += rest;
                    continue;
                }
                Line::Whole => {}
            }
            let (bytes, ending) = split_ending(&line);
            // A line that is not UTF-8 is no frame of a known format: written back as
            // it came, byte for byte.
            let Ok(text) = std::str::from_utf8(bytes) else {
                self.number += 1;
                out.read += line.len() as u64;
                if format == Format::Text {
                    out.write_all(&line)?;
                }
                continue;
            };
            // Each segment's frame, found once.
            let segments: Vec<(&str, Option<input::Frame<'_>>)> =
                scan::split(text, ESCAPED_NEWLINE)
                    .map(|s| (s, input::frame(s)))
                    .collect();
            if may_hold {
                learn_map(&mut self.map, text);
                if self.unplaced(&segments) {
                    return Ok(Some(line));
                }
            }
            self.number += 1;
            out.read += line.len() as u64;
            let rendered = self.line(symbolizer, out, format, text, segments)?;
            if format == Format::Text {
                match rendered.filter(|r| r != text) {
                    Some(r) => out.write_lines(&r, ending, &line)?,
                    None => out.write_all(&line)?,
                }
            }
        }
    }

    /// Whether `text` holds a frame of an absolute address that the map does not place,
    /// or an ESP-IDF backtrace before the firmware's SHA-256 (printed after it).
    fn unplaced(&self, segments: &[(&str, Option<input::Frame<'_>>)]) -> bool {
        segments.iter().any(|(text, frame)| match frame {
            Some(f) => {
                f.base == Base::Absolute && self.map.place(Some(f.module), f.offset).is_none()
            }
            None => self.map.firmware_sha256.is_none() && input::esp::backtrace(text).is_some(),
        })
    }

    /// One line resolved: as rendered, `None` when it holds no frame.
    fn line(
        &mut self,
        symbolizer: &mut Symbolizer,
        out: &mut Bounded<'_>,
        format: Format,
        text: &str,
        segments: Vec<(&str, Option<input::Frame<'_>>)>,
    ) -> io::Result<Option<String>> {
        let mut unit = Unit {
            symbolizer,
            context: &mut self.context,
            map: &self.map,
            renderer: &mut self.renderer,
            records: &mut self.records,
            out,
            format,
            number: self.number,
        };
        // rsyslog writes a message's newlines as `#012`: a whole backtrace arrives as
        // one line, each of its frames a segment, each followed by what it resolves to.
        if segments.len() == 1 {
            let (segment, frame) = segments.into_iter().next().unwrap_or((text, None));
            return unit.segment(segment, frame);
        }
        let mut joined = String::new();
        let mut changed = false;
        for (i, (segment, frame)) in segments.into_iter().enumerate() {
            if i > 0 {
                joined.push('\n');
            }
            match unit.segment(segment, frame)? {
                Some(shown) => {
                    changed |= shown != segment;
                    joined.push_str(&shown);
                }
                None => joined.push_str(segment),
            }
        }
        Ok(changed.then_some(joined))
    }
}

/// How rsyslog (and syslog daemons after it) escape a newline inside a message.
const ESCAPED_NEWLINE: &str = "#012";

/// What one line (or one `#012`-separated segment of it) is looked up and told with.
struct Unit<'u, 'o> {
    symbolizer: &'u mut Symbolizer,
    context: &'u mut Context,
    map: &'u ModuleMap,
    renderer: &'u mut Renderer,
    records: &'u mut JsonLines,
    out: &'u mut Bounded<'o>,
    format: Format,
    number: u64,
}

impl Unit<'_, '_> {
    /// The frame in `text`, if any, resolved and told (a JSON record); the text as
    /// rendered, `None` when it holds no frame.
    fn segment(
        &mut self,
        text: &str,
        found: Option<input::Frame<'_>>,
    ) -> io::Result<Option<String>> {
        self.context.learn(text);
        if found.is_none()
            && let Some(pcs) = input::esp::backtrace(text)
        {
            return self.firmware_frames(text, &pcs);
        }
        // Windows Error Reporting names the module on one line, its offset on another.
        let fault = self.context.fault(text).map(|(m, o)| (m.to_string(), o));
        let mut frame = found.or_else(|| {
            let (module, offset) = fault.as_ref()?;
            Some(input::Frame {
                module,
                build_id: None,
                offset: *offset,
                base: Base::Load,
                pc: Pc::Exact,
                function: None,
                family: input::Family::Other,
                span: text.len()..text.len(),
            })
        });
        if let Some(f) = &mut frame {
            self.context.place(f);
        }
        let Some(mut f) = frame else {
            return Ok(None);
        };
        // An absolute address placed by the report's own map: the module as the map
        // names it (its path, where the frame gives a bundle identifier or a bare name)
        // and the offset from its base.
        let mut named = None;
        if f.base == Base::Absolute
            && let Some(placed) = self.map.place(Some(f.module), f.offset)
        {
            f.offset = placed.offset;
            f.base = Base::Load;
            f.build_id = f.build_id.or(placed.id);
            named = Some(placed.name);
        } else if f.build_id.is_none()
            && self.context.build_id(f.module).is_none()
            && let Some(listed) = self.map.identified(f.module)
        {
            // A frame the report identifies only in its module list (an Apple image's
            // UUID, a tombstone's build ID): looked up by that identity and name.
            f.build_id = Some(listed.1);
            named = Some(listed.0);
        }
        // A bare address that nothing placed names no module to look in or warn of.
        if f.base == Base::Absolute && f.module.is_empty() {
            return Ok(None);
        }
        // A debugger's `module!function+0x1a`: the function found by name makes it a
        // module offset; one not found leaves a frame that resolves to nothing.
        if let Some(function) = f.function {
            let build_id = f.build_id.or_else(|| self.context.build_id(f.module));
            let module = named.or(Some(f.module));
            if let Some(at) = self.symbolizer.function_offset(module, build_id, function) {
                f.offset = at.saturating_add(f.offset);
                f.function = None;
            }
        }
        let (frames, unverified) = match self.out.exhausted() {
            false => match resolve_line_frame(self.symbolizer, self.context, &f, named) {
                Some(found) => found,
                // Nothing places it: no frame to count or tell.
                None => return Ok(None),
            },
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
                module: Some(match f.module {
                    "" => named.unwrap_or_default(),
                    module => module,
                }),
                build_id,
                // An offset from a function not found is no module offset.
                offset: f.function.is_none().then_some(f.offset),
                return_address: f.pc == Pc::Return,
                unverified,
                frames: &frames,
            };
            self.records.push(self.out, &record)?;
        }
        Ok(Some(rendered))
    }
}

impl Unit<'_, '_> {
    /// An ESP-IDF `Backtrace:` line's PCs, resolved in the firmware given with
    /// `--firmware` and told; with none given, the line holds no frame that can be
    /// placed.
    fn firmware_frames(
        &mut self,
        text: &str,
        pcs: &[(u64, std::ops::Range<usize>)],
    ) -> io::Result<Option<String>> {
        if !self.symbolizer.has_firmware() {
            return Ok(None);
        }
        let sha = self.map.firmware_sha256.as_deref();
        let firmware = self.symbolizer.firmware_name();
        let mut found = Vec::with_capacity(pcs.len());
        for &(pc, _) in pcs {
            let (frames, unverified) = match self.out.exhausted() {
                true => (Vec::new(), false),
                false => match self.symbolizer.resolve_firmware(pc, sha) {
                    Outcome::Frames { frames, unverified } => (frames, unverified),
                    _ => (Vec::new(), false),
                },
            };
            self.out.symbols = self.symbolizer.symbol_bytes;
            if self.format == Format::Json {
                let record = Record {
                    line: Some(self.number),
                    thread: None,
                    frame: None,
                    pc: Some(pc),
                    module: firmware.as_deref(),
                    build_id: None,
                    offset: Some(pc),
                    return_address: false,
                    unverified,
                    frames: &frames,
                };
                self.records.push(self.out, &record)?;
            }
            found.push((pc, frames));
        }
        Ok(Some(self.renderer.several(text, &found)))
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
fn fill(report: &mut dyn Report) -> io::Result<&[u8]> {
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
fn read_line(report: &mut dyn Report, line: &mut Vec<u8>) -> io::Result<Line> {
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
    report: &mut dyn Report,
    out: &mut dyn Write,
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

/// What a line's frame resolves to, and whether from an unidentified local file; None
/// for an absolute address that nothing places. `named`: the module's name in the
/// report's map, looked up rather than the frame's.
fn resolve_line_frame(
    symbolizer: &mut Symbolizer,
    context: &Context,
    f: &input::Frame<'_>,
    named: Option<&str>,
) -> Option<(Vec<Resolved>, bool)> {
    // An offset from a function the symbol file does not tell is no module offset.
    if f.function.is_some() {
        return Some((Vec::new(), false));
    }
    // A module named by its build ID alone has no name to look under.
    let name = named.or((f.build_id != Some(f.module)).then_some(f.module));
    let build_id = f.build_id.or_else(|| context.build_id(f.module));
    match symbolizer.resolve(name, build_id, f.offset, f.base, f.pc) {
        Outcome::Frames { frames, unverified } => Some((frames, unverified)),
        Outcome::NoSymbol | Outcome::NoModule => Some((Vec::new(), false)),
        Outcome::Unplaced => None,
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
    symbolizer.warnings.extend(
        trace
            .warnings
            .iter()
            .map(|w| Warning::new(WarningKind::Report, w.clone())),
    );
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
