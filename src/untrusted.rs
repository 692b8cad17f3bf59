//! Text taken from an input file on its way to the file system or the terminal.
//!
//! Module names, debug ids and PDB names come from bytes anyone can craft: a CodeView
//! record naming its PDB `C:\build\..` must not send a symbol file up out of the store,
//! and a PDB name holding `ESC]0;…` must not retitle the user's terminal.

/// Longest path component taken from an input: what Linux, macOS and Windows file
/// systems all accept (255 bytes on ext4 and APFS).
pub const MAX_COMPONENT: usize = 255;

/// `s` as one path component of a store, cache or zip: refused (with why) when it is
/// empty, `.` or `..`, longer than [`MAX_COMPONENT`] bytes, or holds a separator (`/`,
/// `\`), a drive colon, NUL or any control character. Nothing is rewritten: a guessed
/// name would put the file where no reader looks for it.
pub fn path_component<'a>(s: &'a str, what: &'static str) -> Result<&'a str, UnsafeName> {
    let why = if s.is_empty() {
        Some(Unsafe::Empty)
    } else if let Some(dots) = [".", ".."].into_iter().find(|d| *d == s) {
        Some(Unsafe::Dots(dots))
    } else if s.len() > MAX_COMPONENT {
        Some(Unsafe::TooLong(s.len()))
    } else {
        s.chars()
            .find(|&c| matches!(c, '/' | '\\' | ':') || c.is_control())
            .map(Unsafe::Holds)
    };
    match why {
        None => Ok(s),
        Some(why) => Err(UnsafeName {
            what,
            name: s.to_string(),
            why,
        }),
    }
}

/// A name read from an input (a module name, a debug id) that cannot be a file name in
/// a symbol store.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{what} {} {why}: it cannot be a file name in a symbol store",
    for_terminal(name)
)]
pub struct UnsafeName {
    /// What the name is ("module name", "debug id").
    pub what: &'static str,
    /// The name.
    pub name: String,
    /// What makes it unsafe.
    pub why: Unsafe,
}

/// What makes a name unsafe as a path component.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Unsafe {
    /// It is empty.
    #[error("is empty")]
    Empty,
    /// It is `.` or `..`.
    #[error("is {0:?}")]
    Dots(&'static str),
    /// It is longer than 255 bytes, what Linux, macOS and Windows file systems all take.
    #[error("is {0} bytes long (at most {MAX_COMPONENT})")]
    TooLong(usize),
    /// It holds a separator, a drive colon or a control character.
    #[error("holds {0:?}")]
    Holds(char),
}

/// Bytes of names and strings an input may have written for it, where one string in the
/// file can be named by any number of records (a PDB's string table, an export's name, a
/// frame program): 16 times the file's size plus 1 MiB. Real files write each string
/// about once; crafted ones pointed 10,000 records at one 60 KB string and turned
/// 400 KB into 550 MB of output.
#[derive(Debug)]
pub(crate) struct Allowance {
    left: u64,
    /// How many strings were refused.
    pub(crate) cut: usize,
}

impl Allowance {
    pub(crate) fn for_input(len: usize) -> Allowance {
        Allowance {
            left: (len as u64).saturating_mul(16).saturating_add(1 << 20),
            cut: 0,
        }
    }

    /// Takes `n` bytes; false (and counted) when they are more than what is left.
    pub(crate) fn take(&mut self, n: usize) -> bool {
        match self.left.checked_sub(n as u64) {
            Some(left) => {
                self.left = left;
                true
            }
            None => {
                self.cut += 1;
                false
            }
        }
    }
}

/// Longest message line printed: a 64 KB name in a message is cut, not echoed whole.
pub const MAX_MESSAGE: usize = 4096;

/// `s` as it may reach a terminal: every control character escaped (`\n`, `\r`, `\t`,
/// `\e`, `\x7f`, `\u{9b}` …), and Unicode's direction overrides too (they reorder what
/// the reader sees), and at most 4,096 bytes, with what was cut counted.
pub fn for_terminal(s: &str) -> String {
    escaped(s, MAX_MESSAGE)
}

/// Longest function or file name a symbolized frame prints: far past real names (the
/// longest C++ names of large products are a few KiB), so that a served symbol file
/// naming an inlined function with 8 MiB cannot make one frame cost gigabytes.
pub const MAX_NAME: usize = 64 << 10;

/// A name read from a symbol file on its way to standard output: escaped as
/// [`for_terminal`] escapes, and cut at [`MAX_NAME`] bytes with what was cut counted.
/// Names that need neither come back as they are.
pub(crate) fn name_for_output(s: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| !(c.is_control() || is_direction_control(c));
    if s.len() <= MAX_NAME && s.chars().all(plain) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(escaped(s, MAX_NAME))
}

/// `s` with its control characters escaped, cut after `max` bytes.
fn escaped(s: &str, max: usize) -> String {
    let mut out = String::with_capacity(s.len().min(max) + 16);
    for (i, c) in s.char_indices() {
        if out.len() >= max {
            out.push_str(&format!("… ({} more bytes)", s.len() - i));
            break;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if c.is_control() || is_direction_control(c) => {
                out.push_str(&format!("\\u{{{:x}}}", c as u32))
            }
            c => out.push(c),
        }
    }
    out
}

/// The bidirectional formatting characters ("Trojan Source", CVE-2021-42574).
fn is_direction_control(c: char) -> bool {
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_that_would_leave_their_directory_are_refused() {
        for bad in [
            "",
            ".",
            "..",
            "a/b",
            "..\\x",
            "C:",
            "a\0b",
            "a\nb",
            "\u{1b}[31m",
            "\u{9b}2J",
        ] {
            assert!(path_component(bad, "module name").is_err(), "{bad:?}");
        }
        let long = "a".repeat(MAX_COMPONENT + 1);
        assert_eq!(
            path_component(&long, "x").unwrap_err().why,
            Unsafe::TooLong(256)
        );
        assert_eq!(
            path_component("..", "x").unwrap_err().why,
            Unsafe::Dots("..")
        );
        for good in [
            "app.pdb",
            "libc.so.6",
            "..a",
            "a..",
            "ünïcode.dll",
            "E145AB01",
        ] {
            assert_eq!(path_component(good, "x"), Ok(good));
        }
        // The message names the component escaped.
        let e = path_component("a\nb/..", "debug file").unwrap_err();
        assert_eq!(e.why, Unsafe::Holds('\n'));
        let e = e.to_string();
        assert!(e.starts_with("debug file a\\nb/.. holds '\\n'"), "{e}");
    }

    #[test]
    fn terminal_text_has_no_control_characters_and_a_bounded_length() {
        assert_eq!(
            for_terminal("a\nb\rc\u{1b}]0;x\u{7}d\u{9b}e\u{202e}f"),
            "a\\nb\\rc\\e]0;x\\x07d\\u{9b}e\\u{202e}f"
        );
        let long = for_terminal(&"é".repeat(40_000));
        assert!(long.len() < MAX_MESSAGE + 40, "{}", long.len());
        assert!(
            long.ends_with("… (75904 more bytes)"),
            "{}",
            &long[long.len() - 40..]
        );
        assert!(!long.chars().any(|c| c.is_control()));
    }
}
