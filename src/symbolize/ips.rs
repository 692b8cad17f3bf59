//! Apple's `.ips` crash and hang reports (macOS 12 and iOS 15 on): a JSON header line
//! (`bug_type`, `app_name`, …), then a JSON body whose `usedImages` list each image's
//! UUID, load address and path, and whose threads' `frames` (and the
//! `lastExceptionBacktrace`) give each frame as `imageIndex` and `imageOffset`, the
//! offset from the image's `__TEXT`, as its symbol file counts.
//!
//! Written back as the same document, its frames given what Apple's own symbolication
//! adds (`symbol`, `symbolLocation`, `sourceFile`, `sourceLine`) and each inlined call
//! a frame of its own marked `"inline": true` before its caller, as Apple writes them.

use std::io::{self, Write};

use serde_json::{Map, Value};

use super::emit::{Bounded, Format, JsonLines, Record};
use super::input::{Base, Pc};
use super::render::Tally;
use super::{Outcome, Resolved, Symbolizer};

/// The largest report read as `.ips`: a crash report is tens of KiB, a hang report's
/// spindump a few MiB; the body is held as a JSON tree, several times its size.
pub(super) const MAX_IPS: usize = 16 << 20;

/// A report read as `.ips`: its header line as it came, and its body.
pub(super) struct Ips<'a> {
    header: &'a [u8],
    body: Map<String, Value>,
    /// What follows the body (a copy's trailing text, blank lines), written back as
    /// it came.
    rest: &'a [u8],
}

/// The most JSON values an `.ips` body may hold to be read as a tree: a crash report
/// holds thousands, a hang report's spindump some hundreds of thousands. Each costs
/// 50–90 bytes in the tree (a body of 7 million numbers, 14.7 MB, took 619 MB); a body
/// of more is read as text, line by line.
pub(super) const MAX_IPS_VALUES: usize = 2_000_000;

/// What [`parse`] made of a document.
pub(super) enum Parsed<'a> {
    /// An `.ips` report.
    Ips(Ips<'a>),
    /// An `.ips` header whose body holds more than [`MAX_IPS_VALUES`] values: how many.
    TooLarge(usize),
    /// Not an `.ips` report.
    Not,
}

/// `doc` as an `.ips` report, if it is one: a header line that is a JSON object with
/// `bug_type`, then a JSON object with `usedImages`.
pub(super) fn parse(doc: &[u8]) -> Parsed<'_> {
    match parse_within(doc) {
        Ok(Some(ips)) => Parsed::Ips(ips),
        Ok(None) => Parsed::Not,
        Err(values) => Parsed::TooLarge(values),
    }
}

fn parse_within(doc: &[u8]) -> Result<Option<Ips<'_>>, usize> {
    if doc.len() > MAX_IPS {
        return Ok(None);
    }
    let Some(end) = memchr::memchr(b'\n', doc) else {
        return Ok(None);
    };
    let Ok(header) = serde_json::from_slice::<Map<String, Value>>(&doc[..end]) else {
        return Ok(None);
    };
    if !header.contains_key("bug_type") {
        return Ok(None);
    }
    let values = values(&doc[end + 1..]);
    if values > MAX_IPS_VALUES {
        return Err(values);
    }
    Ok(body(doc, end))
}

/// About how many values the JSON text `doc` holds, counted without building them: the
/// separators and openings outside strings (each value but the first of its container
/// follows a `,`; each key is followed by a `:`).
fn values(doc: &[u8]) -> usize {
    let (mut n, mut in_string, mut escaped) = (0usize, false, false);
    for &b in doc {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' | b'[' | b'{' | b':' => n += 1,
            _ => {}
        }
    }
    n
}

/// The body after the header line ending at `end`, when it is an `.ips` body: the
/// first JSON document there, whatever follows it (a report pasted with more text
/// after it, another document).
fn body(doc: &[u8], end: usize) -> Option<Ips<'_>> {
    let after = &doc[end + 1..];
    let mut documents =
        serde_json::Deserializer::from_slice(after).into_iter::<Map<String, Value>>();
    let body = documents.next()?.ok()?;
    let rest = &after[documents.byte_offset()..];
    if !body.get("usedImages").is_some_and(Value::is_array) {
        return None;
    }
    Some(Ips {
        header: &doc[..=end],
        body,
        rest,
    })
}

/// An image of `usedImages`, as a symbol file is looked up by.
struct Image {
    /// Its path, or its name where no path is given.
    name: Option<String>,
    /// Its UUID, hex without dashes; None for the all-zero UUID of an unknown image.
    uuid: Option<String>,
}

fn images(body: &Map<String, Value>) -> Vec<Image> {
    let list = body.get("usedImages").and_then(Value::as_array);
    list.into_iter()
        .flatten()
        .map(|image| {
            let text = |key| image.get(key).and_then(Value::as_str);
            let uuid: Option<String> = text("uuid").map(|u| u.replace('-', ""));
            let uuid = uuid.filter(|u| {
                u.len() == 32
                    && u.bytes().all(|b| b.is_ascii_hexdigit())
                    && u.bytes().any(|b| b != b'0')
            });
            let name = text("path").or_else(|| text("name")).map(str::to_string);
            Image {
                name: name.filter(|n| !super::pseudo::is_pseudo_module(n)),
                uuid: uuid.map(|u| u.to_ascii_lowercase()),
            }
        })
        .collect()
}

/// Resolves the report's frames and writes it, or its frames' records with `--json`.
pub(super) fn run(
    symbolizer: &mut Symbolizer,
    mut ips: Ips<'_>,
    original: &[u8],
    out: &mut Bounded<'_>,
    format: Format,
) -> io::Result<Tally> {
    let images = images(&ips.body);
    let mut walk = Walk {
        symbolizer,
        images: &images,
        out,
        format,
        tally: Tally::default(),
        records: JsonLines::default(),
        changed: false,
    };
    if let Some(Value::Array(threads)) = ips.body.get_mut("threads") {
        for (t, thread) in threads.iter_mut().enumerate() {
            if let Some(Value::Array(frames)) = thread.get_mut("frames") {
                walk.frames(t, frames, false)?;
            }
        }
    }
    // Numbered after the threads in `--json`: every one of its frames is a return
    // address.
    let after_threads = ips
        .body
        .get("threads")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if let Some(Value::Array(frames)) = ips.body.get_mut("lastExceptionBacktrace") {
        walk.frames(after_threads, frames, true)?;
    }
    let (tally, changed) = (walk.tally, walk.changed);
    match format {
        Format::Json => walk.records.finish(walk.out)?,
        // Nothing resolved: the report as it came, byte for byte.
        Format::Text if !changed => walk.out.write_all(original)?,
        Format::Text => {
            let mut text = ips.header.to_vec();
            serde_json::to_writer_pretty(&mut text, &ips.body)?;
            match ips.rest.is_empty() {
                true => text.push(b'\n'),
                false => text.extend_from_slice(ips.rest),
            }
            if walk.out.would_pass(text.len()) {
                walk.out.write_all(original)?;
            } else {
                walk.out.write_all(&text)?;
            }
        }
    }
    Ok(tally)
}

/// A walk over the report's frames.
struct Walk<'w, 'o> {
    symbolizer: &'w mut Symbolizer,
    images: &'w [Image],
    out: &'w mut Bounded<'o>,
    format: Format,
    tally: Tally,
    records: JsonLines,
    /// Whether any frame was given symbols.
    changed: bool,
}

impl Walk<'_, '_> {
    /// Resolves thread `t`'s `frames`, each followed by its inlined calls' frames.
    fn frames(&mut self, t: usize, frames: &mut Vec<Value>, all_return: bool) -> io::Result<()> {
        let mut written = Vec::with_capacity(frames.len());
        for (n, mut frame) in std::mem::take(frames).into_iter().enumerate() {
            // Frames this reader wrote itself (a report symbolized twice) are not frames
            // of the stack.
            if frame.get("inline").and_then(Value::as_bool) == Some(true) {
                continue;
            }
            let pc = if n == 0 && !all_return {
                Pc::Exact
            } else {
                Pc::Return
            };
            let resolved = self.frame(t, n, &frame, pc)?;
            if let (Some(found), Value::Object(fields)) = (resolved, &mut frame) {
                let (inlined, outer) = found.split_at(found.len() - 1);
                for call in inlined {
                    let mut f = fields.clone();
                    symbols(&mut f, call, None);
                    f.remove("symbolLocation");
                    f.insert("inline".into(), Value::Bool(true));
                    written.push(Value::Object(f));
                }
                let step = u64::from(pc == Pc::Return);
                symbols(fields, &outer[0], outer[0].offset.map(|o| o + step));
                self.changed = true;
            }
            written.push(frame);
        }
        *frames = written;
        Ok(())
    }

    /// What frame `n` of thread `t` resolves to (None when nothing does), its record
    /// written with `--json`.
    fn frame(
        &mut self,
        t: usize,
        n: usize,
        frame: &Value,
        pc: Pc,
    ) -> io::Result<Option<Vec<Resolved>>> {
        let index = frame.get("imageIndex").and_then(Value::as_u64);
        let offset = frame.get("imageOffset").and_then(Value::as_u64);
        let image = index.and_then(|i| self.images.get(usize::try_from(i).ok()?));
        let (Some(image), Some(offset)) = (image, offset) else {
            return Ok(None);
        };
        if image.name.is_none() && image.uuid.is_none() {
            return Ok(None);
        }
        let outcome = match self.out.exhausted() {
            false => self.symbolizer.resolve(
                image.name.as_deref(),
                image.uuid.as_deref(),
                offset,
                Base::Load,
                pc,
            ),
            true => Outcome::NoSymbol,
        };
        self.out.symbols = self.symbolizer.symbol_bytes;
        let (frames, unverified) = match outcome {
            Outcome::Frames { frames, unverified } => (frames, unverified),
            _ => (Vec::new(), false),
        };
        if frames.is_empty() {
            self.tally.unresolved += 1;
        } else {
            self.tally.resolved += 1;
        }
        if self.format == Format::Json {
            let record = Record {
                line: None,
                thread: Some(t),
                frame: Some(n),
                pc: None,
                module: image.name.as_deref(),
                build_id: image.uuid.as_deref(),
                offset: Some(offset),
                return_address: pc == Pc::Return,
                unverified,
                frames: &frames,
            };
            self.records.push(self.out, &record)?;
        }
        Ok((!frames.is_empty()).then_some(frames))
    }
}

/// Gives `frame` the symbol fields of `resolved`, `location` its offset in the function.
fn symbols(frame: &mut Map<String, Value>, resolved: &Resolved, location: Option<u64>) {
    frame.insert("symbol".into(), Value::String(resolved.function.clone()));
    match location {
        Some(l) => frame.insert("symbolLocation".into(), Value::from(l)),
        None => frame.remove("symbolLocation"),
    };
    match &resolved.file {
        Some(file) => frame.insert("sourceFile".into(), Value::String(file.clone())),
        None => frame.remove("sourceFile"),
    };
    match resolved.line {
        Some(line) => frame.insert("sourceLine".into(), Value::from(line)),
        None => frame.remove("sourceLine"),
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_header_line_and_a_body_with_images_are_ips() {
        let body = r#"{"usedImages":[{"uuid":"0000","name":"x"}],"threads":[]}"#;
        let is = |doc: &[u8]| matches!(parse(doc), Parsed::Ips(_));
        assert!(is(format!("{{\"bug_type\":\"309\"}}\n{body}").as_bytes()));
        assert!(!is(format!("{{\"app_name\":\"x\"}}\n{body}").as_bytes()));
        assert!(!is(b"{\"bug_type\":\"309\"}\n{\"threads\":[]}"));
        assert!(!is(b"{0}% ls\n"));
    }

    #[test]
    fn values_are_counted_outside_strings() {
        assert_eq!(values(br#"{"a":[1,2,3],"b":"x,y:[{\"z"}"#), 7);
        let big = format!(
            "{{\"bug_type\":\"309\"}}\n{{\"usedImages\":[{}]}}",
            "0,".repeat(MAX_IPS_VALUES) + "0"
        );
        assert!(matches!(parse(big.as_bytes()), Parsed::TooLarge(n) if n > MAX_IPS_VALUES));
    }

    #[test]
    fn images_without_identity_are_no_modules() {
        let body: Map<String, Value> = serde_json::from_str(
            r#"{"usedImages":[
                {"uuid":"00000000-0000-0000-0000-000000000000","base":0,"size":0,"source":"A"},
                {"uuid":"4C4C44E5-5555-3144-A134-288F106B6499","base":4096,"name":"app","path":"/b/app"}]}"#,
        )
        .unwrap();
        let images = images(&body);
        assert_eq!(
            (images[0].name.as_deref(), images[0].uuid.as_deref()),
            (None, None)
        );
        assert_eq!(images[1].name.as_deref(), Some("/b/app"));
        assert_eq!(
            images[1].uuid.as_deref(),
            Some("4c4c44e555553144a134288f106b6499")
        );
    }
}
