//! Recognizing the frames in a crash report's text, line by line: sanitizer reports,
//! Android tombstones and logcat backtraces, glibc's `backtrace_symbols`, and plain
//! `MODULE+0xOFFSET` lines. Each recognized frame says which module, at which offset,
//! and what that offset is measured from; a line that is none of these is passed
//! through as it is.

use std::ops::Range;

/// What a frame's offset counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The ELF's own virtual addresses (sanitizers' `module+0x…` on Linux, Android's
    /// `pc` column): the symbol file's address is this minus the module's load address
    /// (its first `PT_LOAD`'s virtual address).
    Vaddr,
    /// The module's load address, as the symbol file counts (plain lines).
    Load,
}

/// Whether a caller frame's address is a return address, still to be moved back into
/// the call before lookup, or has been moved already by whoever printed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pc {
    /// The crashing frame's own address, or a caller's already moved back into the
    /// call (sanitizer runtimes print `GetPreviousInstructionPc`): looked up as is.
    Exact,
    /// A return address: looked up at one byte before it.
    Return,
}

/// One frame found in a line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The module as the text names it: a path, a file name or a build ID.
    pub module: &'a str,
    /// The GNU build ID printed beside it, if any (hex).
    pub build_id: Option<&'a str>,
    pub offset: u64,
    pub base: Base,
    pub pc: Pc,
    /// The bytes of the line that the resolved frame replaces or follows.
    pub span: Range<usize>,
}

/// The frame in `line`, if it holds one in a format this reader knows.
pub fn frame(line: &str) -> Option<Frame<'_>> {
    sanitizer(line)
        .or_else(|| tombstone(line))
        .or_else(|| backtrace_symbols(line))
        .or_else(|| plain(line))
}

/// `    #3 0x55d1c2b3a4f1  (/path/app+0x1234f1) (BuildId: 4929ac8c…)`, as ASan, UBSan,
/// LSan and TSan print frames they were told not to symbolize. Caller frames are
/// printed already moved back into the call.
fn sanitizer(line: &str) -> Option<Frame<'_>> {
    let rest = line.trim_start().strip_prefix('#')?;
    let (index, rest) = split_word(rest)?;
    index.parse::<u32>().ok()?;
    let (pc, _) = split_word(rest)?;
    parse_hex(pc.strip_prefix("0x")?)?;
    let open = line.find(" (")? + 1;
    let close = open + line[open..].find(')')?;
    let inner = &line[open + 1..close];
    let plus = inner.rfind("+0x")?;
    let (module, offset) = (&inner[..plus], parse_hex(&inner[plus + 3..])?);
    if module.is_empty() {
        return None;
    }
    Some(Frame {
        module,
        build_id: build_id_after(line, close),
        offset,
        base: Base::Vaddr,
        pc: Pc::Exact,
        span: open..close + 1,
    })
}

/// `    #00 pc 000000000004c7d0  /system/lib64/libc.so (abort+164) (BuildId: 0a1b…)`,
/// from a tombstone or a logcat backtrace (after logcat's own prefix). The `pc` column
/// is the ELF's virtual address (libunwindstack's `rel_pc`: less the mapping's start,
/// plus its file offset and the load bias), and callers' are already moved back into
/// the call (less `GetPcAdjustment`: 4 on arm64, 2 or 4 on ARM, 1 on x86): looked up
/// as printed.
fn tombstone(line: &str) -> Option<Frame<'_>> {
    let hash = line.find('#')?;
    let rest = &line[hash + 1..];
    let (index, rest) = split_word(rest)?;
    index.parse::<u32>().ok()?;
    let (pc_word, rest) = split_word(rest)?;
    if pc_word != "pc" {
        return None;
    }
    let (offset, rest) = split_word(rest)?;
    let offset = parse_hex(offset)?;
    let (module, _) = split_word(rest)?;
    let module_at = line.len() - rest.trim_start().len();
    let module_end = module_at + module.len();
    Some(Frame {
        module,
        build_id: build_id_after(line, module_end),
        offset,
        base: Base::Vaddr,
        pc: Pc::Exact,
        span: module_at..module_end,
    })
}

/// A line of glibc's `backtrace_symbols`: `./app(+0x1234)[0x55d1c2b3a234]`, the
/// offset from the module's load bias (an ELF virtual address), or `./app[0x401180]`,
/// printed when that bias is 0 (a non-PIE program): the address is then the virtual
/// address itself. Frames there are return addresses (the first is `backtrace`'s
/// caller's). `./app(name+0x1d)[…]`, relative to a dynamic symbol, is not read: the
/// symbol file names functions, not the dynamic symbols' addresses.
fn backtrace_symbols(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let bracket = text.rfind("[0x")?;
    let address = parse_hex(text[bracket + 3..].strip_suffix(']')?)?;
    let head = text[..bracket].trim_end();
    let (module, offset) = match head.strip_suffix(')') {
        Some(call) => {
            let open = call.rfind('(')?;
            let offset = parse_hex(call[open + 1..].strip_prefix("+0x")?)?;
            (&call[..open], offset)
        }
        None => (head, address),
    };
    let module = module.trim_start();
    if module.is_empty() || module.contains(char::is_whitespace) || module.ends_with('#') {
        return None;
    }
    Some(Frame {
        module,
        build_id: None,
        offset,
        base: Base::Vaddr,
        pc: Pc::Return,
        span: text.len()..text.len(),
    })
}

/// `libfoo.so+0x1234` or `4929ac8cb3c1…+0x1234`: a module's file name or GNU build ID,
/// then the offset from its load address, as the symbol file counts. Looked up as
/// given.
fn plain(line: &str) -> Option<Frame<'_>> {
    let text = line.trim();
    let plus = text.rfind("+0x")?;
    let module = &text[..plus];
    if module.is_empty() || module.contains(char::is_whitespace) {
        return None;
    }
    let offset = parse_hex(&text[plus + 3..])?;
    let start = line.len() - line.trim_start().len();
    let is_build_id = module.len() >= 16 && module.len().is_multiple_of(2) && is_hex(module);
    Some(Frame {
        module,
        build_id: is_build_id.then_some(module),
        offset,
        base: Base::Load,
        pc: Pc::Exact,
        span: start..start + text.len(),
    })
}

/// `(BuildId: hex)` after byte `from` of `line`.
fn build_id_after(line: &str, from: usize) -> Option<&str> {
    let rest = line.get(from..)?;
    let start = rest.find("(BuildId: ")? + "(BuildId: ".len();
    let len = rest[start..].find(')')?;
    let id = &rest[start..start + len];
    (!id.is_empty() && id.len().is_multiple_of(2) && is_hex(id)).then_some(id)
}

fn split_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    (end > 0).then(|| (&text[..end], &text[end..]))
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A hexadecimal number of at most 16 digits.
fn parse_hex(text: &str) -> Option<u64> {
    if text.is_empty() || text.len() > 16 || !is_hex(text) {
        return None;
    }
    u64::from_str_radix(text, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sanitizer_frames() {
        let line = "    #1 0x5581f0b5c2a7  (/tmp/uaf+0x1302a7) (BuildId: 0a1b2c3d4e5f6071)";
        let f = frame(line).unwrap();
        assert_eq!(f.module, "/tmp/uaf");
        assert_eq!(f.offset, 0x1302a7);
        assert_eq!(f.build_id, Some("0a1b2c3d4e5f6071"));
        assert_eq!((f.base, f.pc), (Base::Vaddr, Pc::Exact));
        assert_eq!(&line[f.span], "(/tmp/uaf+0x1302a7)");
        let no_id = "    #0 0x7f3c (/lib/x86_64-linux-gnu/libc.so.6+0x271c9)";
        assert_eq!(frame(no_id).unwrap().offset, 0x271c9);
    }

    #[test]
    fn tombstone_and_logcat_frames() {
        let line = "      #01 pc 000000000004c7d0  /system/lib64/libc.so (abort+164) \
                    (BuildId: 0a1b2c3d4e5f60718293a4b5c6d7e8f9)";
        let f = frame(line).unwrap();
        assert_eq!(f.module, "/system/lib64/libc.so");
        assert_eq!(f.offset, 0x4c7d0);
        assert_eq!(f.pc, Pc::Exact);
        assert_eq!(f.build_id, Some("0a1b2c3d4e5f60718293a4b5c6d7e8f9"));
        let logcat = "11-24 12:00:00.000  1234  1234 F DEBUG   :       #00 pc 00001234  \
                      /data/app/lib/arm/libnative.so";
        let f = frame(logcat).unwrap();
        assert_eq!(
            (f.module, f.offset, f.pc),
            ("/data/app/lib/arm/libnative.so", 0x1234, Pc::Exact)
        );
    }

    #[test]
    fn backtrace_symbols_and_plain_lines() {
        let f = frame("./app(+0x1234) [0x55d1c2b3a234]").unwrap();
        assert_eq!((f.module, f.offset, f.pc), ("./app", 0x1234, Pc::Return));
        let f = frame("/lib/x86_64-linux-gnu/libc.so.6(+0x2724a)[0x7faa17cef24a]").unwrap();
        assert_eq!(
            (f.module, f.offset, f.base),
            ("/lib/x86_64-linux-gnu/libc.so.6", 0x2724a, Base::Vaddr)
        );
        let f = frame("./nopie[0x401180]").unwrap();
        assert_eq!(
            (f.module, f.offset, f.pc),
            ("./nopie", 0x401180, Pc::Return)
        );
        assert_eq!(frame("./app(main+0x1d)[0x401180]"), None);
        let f = frame("libfoo.so+0x10").unwrap();
        assert_eq!(
            (f.module, f.offset, f.base),
            ("libfoo.so", 0x10, Base::Load)
        );
        let f = frame("4929ac8cb3c174c113cafc7250efe12eee45cd25+0x1f877c").unwrap();
        assert_eq!(f.build_id, Some("4929ac8cb3c174c113cafc7250efe12eee45cd25"));
    }

    #[test]
    fn other_lines_are_not_frames() {
        for line in [
            "",
            "==1234==ERROR: AddressSanitizer: heap-use-after-free on address 0x6020",
            "    #0 0x4f1234 in main /src/uaf.c:12:3",
            "a + 0x10",
            "name+0x",
            "name+0x12345678901234567",
            "#x pc 12 lib.so",
        ] {
            assert_eq!(frame(line), None, "{line:?}");
        }
    }
}
