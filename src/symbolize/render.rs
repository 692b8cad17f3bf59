//! Writing a report back with its frames resolved. Each input format keeps its own
//! shape: a sanitizer report gets the lines its runtime prints when it symbolizes
//! (`#N 0xPC in function file:line`, an inlined call a frame of its own, the frames
//! after it renumbered); other lines are kept and followed by their frames as
//! `llvm-symbolizer --pretty-print` writes them (`function at file:line`, then
//! ` (inlined by) caller at file:line`).

use std::fmt::Write as _;

use super::Resolved;
use super::input::{Family, Frame};

/// Counts of a report's frames.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Tally {
    /// Frames resolved.
    pub resolved: u64,
    /// Frames found but not resolved.
    pub unresolved: u64,
}

/// Renders a report line by line, keeping what spans lines (a sanitizer stack's
/// renumbering).
#[derive(Default)]
pub struct Renderer {
    /// Frames inserted so far in the current sanitizer stack (inlined calls).
    shift: u64,
    /// The frames' count so far.
    pub tally: Tally,
}

impl Renderer {
    /// `line` (without its newline) as it is written out, given the frame found in it
    /// (if any) and what that frame resolved to (empty when nothing did).
    pub fn line(&mut self, line: &str, frame: Option<&Frame<'_>>, frames: &[Resolved]) -> String {
        let Some(frame) = frame else {
            return line.to_string();
        };
        if frames.is_empty() {
            self.tally.unresolved += 1;
        } else {
            self.tally.resolved += 1;
        }
        match sanitizer_parts(line).filter(|_| frame.family == Family::Sanitizer) {
            Some(parts) => self.sanitizer(line, &parts, frame, frames),
            None => pretty(line, frames),
        }
    }

    /// `line`, which holds several frames (ESP-IDF's `Backtrace:`), as written out:
    /// followed by each resolved PC and its frames, `0x400d1234: function at
    /// file:line`, the inlined calls' after it as llvm-symbolizer writes them.
    pub fn several(&mut self, line: &str, found: &[(u64, Vec<Resolved>)]) -> String {
        let mut out = line.to_string();
        for (pc, frames) in found {
            if frames.is_empty() {
                self.tally.unresolved += 1;
                continue;
            }
            self.tally.resolved += 1;
            let head = format!("    {pc:#x}: ");
            push_frames(&mut out, &head, &" ".repeat(head.len()), frames);
        }
        out
    }

    fn sanitizer(
        &mut self,
        line: &str,
        parts: &SanitizerParts<'_>,
        frame: &Frame<'_>,
        frames: &[Resolved],
    ) -> String {
        if parts.index == 0 {
            self.shift = 0;
        }
        let first = parts.index + self.shift;
        if frames.is_empty() {
            // Renumbered only where frames were inserted before it: as it came
            // otherwise, `#00` and all.
            if self.shift == 0 {
                return line.to_string();
            }
            return format!("{}#{first}{}", parts.indent, &line[parts.after_index..]);
        }
        let mut out = String::new();
        for (j, f) in frames.iter().enumerate() {
            if j > 0 {
                out.push('\n');
            }
            let _ = write!(
                out,
                "{}#{} {} in {}",
                parts.indent,
                first + j as u64,
                parts.pc,
                f.function
            );
            match (&f.file, f.line) {
                (Some(file), Some(l)) => {
                    let _ = write!(out, " {file}:{l}");
                }
                (Some(file), None) => {
                    let _ = write!(out, " {file}");
                }
                // No source: the module and offset, and what follows them (the build
                // ID), as the runtime prints such frames.
                _ => {
                    let _ = write!(out, " {}", line[frame.span.start..].trim_end());
                }
            }
        }
        self.shift += frames.len() as u64 - 1;
        out
    }
}

/// A sanitizer frame line's pieces: what stands before its `#` (indentation, or a log's
/// prefix, repeated on the lines of inlined calls), frame number, PC, and where the
/// text after the number starts.
struct SanitizerParts<'a> {
    indent: &'a str,
    index: u64,
    pc: &'a str,
    after_index: usize,
}

fn sanitizer_parts(line: &str) -> Option<SanitizerParts<'_>> {
    line.match_indices('#').find_map(|(hash, _)| {
        let rest = &line[hash + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let index = rest[..digits].parse().ok()?;
        let after_index = hash + 1 + digits;
        let pc = line[after_index..].split_whitespace().next()?;
        pc.strip_prefix("0x")?;
        Some(SanitizerParts {
            indent: &line[..hash],
            index,
            pc,
            after_index,
        })
    })
}

/// `line`, then its frames as llvm-symbolizer's pretty printer writes them.
fn pretty(line: &str, frames: &[Resolved]) -> String {
    let mut out = line.to_string();
    let indent = " ".repeat(line.len() - line.trim_start().len() + 4);
    push_frames(&mut out, &indent, &indent, frames);
    out
}

/// `frames` written after `out`, a line each, as llvm-symbolizer's pretty printer writes
/// them: the first behind `first`, each inlined call's caller behind `rest` and
/// ` (inlined by) `.
fn push_frames(out: &mut String, first: &str, rest: &str, frames: &[Resolved]) {
    for (j, f) in frames.iter().enumerate() {
        out.push('\n');
        if j == 0 {
            out.push_str(first);
        } else {
            out.push_str(rest);
            out.push_str(" (inlined by) ");
        }
        let _ = write!(
            out,
            "{} at {}:{}",
            f.function,
            f.file.as_deref().unwrap_or("??"),
            f.line.unwrap_or(0)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::input;
    use super::*;

    fn resolved(function: &str, file: &str, line: u32) -> Resolved {
        Resolved {
            function: function.into(),
            file: Some(file.into()),
            line: Some(line),
            inlined: false,
            offset: None,
        }
    }

    #[test]
    fn unresolved_sanitizer_frames_stay_as_they_came() {
        // Found by the `report` fuzz target: `#00000` was written `#0`.
        let mut r = Renderer::default();
        for line in [
            "    #00 0x7a1b2c3d1c  (/system/lib64/libc.so+0x9d1c)",
            "    #01 0x7a1b2c3d1c  (/system/lib64/libc.so+0x9d1c)",
        ] {
            assert_eq!(r.line(line, input::frame(line).as_ref(), &[]), line);
        }
    }

    #[test]
    fn sanitizer_stacks_are_renumbered_as_asan_prints_them() {
        let report = [
            "    #0 0x55c5eeb791af  (/tmp/asan/uaf+0x11af)",
            "    #1 0x55c5eeb791d5  (/tmp/asan/uaf+0x11d5)",
            "    #2 0x7fd134e45249  (/lib/x86_64-linux-gnu/libc.so.6+0x27249)",
            "",
            "    #0 0x7fd1350b76a8  (/lib/x86_64-linux-gnu/libasan.so.8+0xb76a8)",
        ];
        let answers = [
            vec![
                resolved("inner", "/tmp/asan/uaf.c", 2),
                resolved("middle", "/tmp/asan/uaf.c", 3),
                resolved("outer", "/tmp/asan/uaf.c", 4),
            ],
            vec![resolved("main", "/tmp/asan/uaf.c", 5)],
            vec![],
            vec![],
            vec![],
        ];
        let mut r = Renderer::default();
        let out: Vec<String> = report
            .iter()
            .zip(&answers)
            .map(|(line, frames)| r.line(line, input::frame(line).as_ref(), frames))
            .collect();
        assert_eq!(
            out.join("\n"),
            "    #0 0x55c5eeb791af in inner /tmp/asan/uaf.c:2
    #1 0x55c5eeb791af in middle /tmp/asan/uaf.c:3
    #2 0x55c5eeb791af in outer /tmp/asan/uaf.c:4
    #3 0x55c5eeb791d5 in main /tmp/asan/uaf.c:5
    #4 0x7fd134e45249  (/lib/x86_64-linux-gnu/libc.so.6+0x27249)

    #0 0x7fd1350b76a8  (/lib/x86_64-linux-gnu/libasan.so.8+0xb76a8)"
        );
        assert_eq!(
            r.tally,
            Tally {
                resolved: 2,
                unresolved: 2
            }
        );
    }

    #[test]
    fn other_lines_are_followed_by_their_frames() {
        let line = "      #00 pc 000000000004c7d0  /system/lib64/libc.so (abort+164)";
        let frames = [
            resolved("inner", "a.c", 2),
            Resolved {
                function: "abort".into(),
                file: None,
                line: None,
                inlined: false,
                offset: None,
            },
        ];
        let mut r = Renderer::default();
        assert_eq!(
            r.line(line, input::frame(line).as_ref(), &frames),
            format!("{line}\n          inner at a.c:2\n           (inlined by) abort at ??:0")
        );
        assert_eq!(r.line("plain text", None, &[]), "plain text");
        assert_eq!(r.tally.resolved, 1);
    }
}
