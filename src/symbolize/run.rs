//! One `dumpsyms symbolize` run: a report in, the same report with its frames resolved
//! out (or, with `--json`, the frames as a structured list).

use std::io::{self, BufRead, Write};

use serde_json::{Value, json};

use super::input::{self, Base, Pc};
use super::render::{Renderer, Tally};
use super::{Outcome, Resolved, Symbolizer, ondevice};

/// How a run writes its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// The report, its frames resolved in place.
    Text,
    /// A JSON array: one object per frame found.
    Json,
}

/// Reads the report from `report` and writes it resolved to `out`. A report whose
/// first character is `{` is the on-device stack-trace JSON; any other is read line
/// by line.
pub fn run(
    symbolizer: &mut Symbolizer,
    report: &mut dyn BufRead,
    out: &mut dyn Write,
    format: Format,
) -> io::Result<Tally> {
    // Leading blank lines are kept in text mode.
    let mut first = Vec::new();
    let mut blank = Vec::new();
    loop {
        first.clear();
        if report.read_until(b'\n', &mut first)? == 0 || !first.trim_ascii().is_empty() {
            break;
        }
        blank.push(first.clone());
    }
    if first.trim_ascii_start().starts_with(b"{") {
        let mut doc = first;
        report.read_to_end(&mut doc)?;
        let doc = String::from_utf8(doc).map_err(|e| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!(
                    "an on-device stack trace: not UTF-8 (byte {})",
                    e.utf8_error().valid_up_to()
                ),
            )
        })?;
        return trace(symbolizer, &doc, out, format);
    }
    let mut renderer = Renderer::default();
    // Streamed, a record per line, so that a report of any length takes no more
    // memory than one.
    let mut records = JsonLines::default();
    let mut number = 0u64;
    let mut line = Vec::new();
    let mut pending = blank
        .into_iter()
        .chain((!first.is_empty()).then_some(first));
    loop {
        line.clear();
        match pending.next() {
            Some(l) => line = l,
            None => {
                if report.read_until(b'\n', &mut line)? == 0 {
                    break;
                }
            }
        }
        number += 1;
        let bytes = line.strip_suffix(b"\n").unwrap_or(&line);
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        // A line that is not UTF-8 is no frame of a known format: written back as it
        // came, byte for byte.
        let Ok(text) = std::str::from_utf8(bytes) else {
            if format == Format::Text {
                out.write_all(bytes)?;
                out.write_all(b"\n")?;
            }
            continue;
        };
        let frame = input::frame(text);
        let frames = frame
            .as_ref()
            .map(|f| resolve_line_frame(symbolizer, f))
            .unwrap_or_default();
        match format {
            Format::Text => writeln!(out, "{}", renderer.line(text, frame.as_ref(), &frames))?,
            Format::Json => {
                if let Some(f) = &frame {
                    renderer.line(text, Some(f), &frames);
                    let record = json!({
                        "line": number,
                        "module": f.module,
                        "build_id": f.build_id,
                        "offset": format!("{:#x}", f.offset),
                        "frames": frames_json(&frames),
                    });
                    records.push(out, &record)?;
                }
            }
        }
    }
    if format == Format::Json {
        records.finish(out)?;
    }
    Ok(renderer.tally)
}

/// A JSON array written as it grows: `[`, then one compact record per line.
#[derive(Default)]
struct JsonLines {
    started: bool,
}

impl JsonLines {
    fn push(&mut self, out: &mut dyn Write, record: &Value) -> io::Result<()> {
        out.write_all(if self.started { b",\n" } else { b"[\n" })?;
        self.started = true;
        serde_json::to_writer(&mut *out, record)?;
        Ok(())
    }

    fn finish(self, out: &mut dyn Write) -> io::Result<()> {
        out.write_all(if self.started { b"\n]\n" } else { b"[]\n" })
    }
}

fn resolve_line_frame(symbolizer: &mut Symbolizer, f: &input::Frame<'_>) -> Vec<Resolved> {
    // A module named by its build ID alone has no name to look under.
    let name = (f.build_id != Some(f.module)).then_some(f.module);
    match symbolizer.resolve(name, f.build_id, f.offset, f.base, f.pc) {
        Outcome::Frames(frames) => frames,
        Outcome::NoSymbol | Outcome::NoModule => Vec::new(),
    }
}

/// The on-device trace: each thread's PCs, each followed by its frames.
fn trace(
    symbolizer: &mut Symbolizer,
    doc: &str,
    out: &mut dyn Write,
    format: Format,
) -> io::Result<Tally> {
    let trace = ondevice::parse(doc).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("an on-device stack trace: {e}"),
        )
    })?;
    let mut tally = Tally::default();
    let mut threads = Vec::new();
    for (t, thread) in trace.threads.iter().enumerate() {
        if format == Format::Text {
            writeln!(out, "thread {t}:")?;
        }
        let mut records = Vec::new();
        for (n, f) in thread.iter().enumerate() {
            let module = f.module.map(|i| &trace.modules[i]);
            let outcome = module.map(|m| {
                symbolizer.resolve(
                    Some(&m.path),
                    m.build_id.as_deref(),
                    f.offset,
                    Base::Vaddr,
                    f.kind,
                )
            });
            let frames = match outcome {
                Some(Outcome::Frames(frames)) => frames,
                _ => Vec::new(),
            };
            if frames.is_empty() {
                tally.unresolved += 1;
            } else {
                tally.resolved += 1;
            }
            let place = module.map_or(String::from("??"), |m| {
                format!("{}+{:#x}", m.path, f.offset)
            });
            match format {
                Format::Text => {
                    writeln!(out, "  #{n} {:#x} {place}", f.pc)?;
                    for (j, r) in frames.iter().enumerate() {
                        let by = if j > 0 { " (inlined by) " } else { "" };
                        writeln!(
                            out,
                            "      {by}{} at {}:{}",
                            r.function,
                            r.file.as_deref().unwrap_or("??"),
                            r.line.unwrap_or(0)
                        )?;
                    }
                }
                Format::Json => records.push(json!({
                    "pc": format!("{:#x}", f.pc),
                    "module": module.map(|m| &m.path),
                    "build_id": module.and_then(|m| m.build_id.as_deref()),
                    "offset": module.map(|_| format!("{:#x}", f.offset)),
                    "return_address": f.kind == Pc::Return,
                    "frames": frames_json(&frames),
                })),
            }
        }
        threads.push(Value::Array(records));
    }
    if format == Format::Json {
        serde_json::to_writer_pretty(&mut *out, &json!({ "threads": threads }))?;
        writeln!(out)?;
    }
    Ok(tally)
}

fn frames_json(frames: &[Resolved]) -> Value {
    Value::Array(
        frames
            .iter()
            .map(|f| {
                json!({
                    "function": f.function,
                    "file": f.file,
                    "line": f.line,
                    "inlined": f.inlined,
                })
            })
            .collect(),
    )
}
