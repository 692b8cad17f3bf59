//! Recognizing the frames in a crash report's text, line by line.
//!
//! One grammar serves every format: a frame is a *module-and-offset token* somewhere on
//! the line, in one of a few shapes (`SHAPES`), each of which says what its offset
//! counts from and whether a caller's address is still a return address. A new format
//! is a new row there, not a new parser. What marks a line as a frame, not prose that
//! happens to hold a `+0x`, is part of each shape: a frame number before it, the
//! brackets around it, or the line holding nothing else. A line that holds no token is
//! passed through as it is, and counted as no frame: kernel `func+0x45/0x57`, WinDbg's
//! `module!func+0x1a`, Go's `file.go:12 +0x1d` and Rust's panics among them.
//!
//! The shapes, and where each was seen (the fixtures under `fixtures/symbolize/field`
//! hold one report of each, written here in those shapes):
//! - `(module+0xOFF)` after a `#N` frame number: ASan, LSan, MSan, UBSan, TSan (also
//!   `#N func file:line (module+0xOFF)` and `#N <null> <null> (module+0xOFF)`, which
//!   TSan prints with no PC), behind any log prefix; macOS adds an architecture
//!   (`a.out:arm64+0x…`), which names no file and is dropped.
//! - `(module + 0xOFF)` after `#N`: systemd-coredump (`coredumpctl info`, the journal).
//! - `pc HEX module` after `#NN`, `native:` or at the start: Android tombstones, logcat
//!   and ANR traces.
//! - `module (function+N, pc HEX)`: GrapheneOS's crash reports.
//! - `N  module + 0xOFF` alone on a line: Breakpad's and rust-minidump's stackwalkers;
//!   `T|N|module||||0xOFF`: Breakpad's `minidump_stackwalk -m`.
//! - `N   image   0xPC 0xBASE + DECIMAL`: Apple's crash reports.
//! - `[library.so+0xOFF]`: a Java VM's fatal error log (`hs_err_pid*.log`).
//! - `module(+0xOFF) [0xADDR]`, `module() [0xADDR]`, `module[0xADDR]`: glibc's
//!   `backtrace_symbols`, behind any prefix.
//! - `N: module (0xBASE+0xOFF) [0xADDR]`: the X server's log.
//! - `<module+0xOFF>`: Dr. Memory.
//! - `[module +0xOFF]`: Gecko's `MozFormatCodeAddress` (Firefox's debug builds).
//! - `N 0xPC in module (+0xOFF)`: Wine's backtraces (`wine.rs`).
//! - `pc 0x… fp 0x… module+0xOFF`: the Dart VM's crash dump; `#NN abs … virt …`:
//!   Flutter's non-symbolic Dart traces; `0xADDR (module+0xOFF)`: a program's own crash
//!   locus; `Game.dll+00F18CB`: Windows games' crash logs; `Faulting module name:` then
//!   `Fault offset:`: the Windows Event Log and Error Reporting (`logged.rs`).
//! - `module+0xOFF` alone on a line: the plain form, and the on-device trace's output.

use std::ops::Range;

use super::scan;

pub mod esp;
mod logged;
mod wine;

/// What a frame's offset counts from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Base {
    /// The ELF's own virtual addresses (sanitizers' `module+0x…` on Linux, Android's
    /// `pc` column): the symbol file's address is this minus the module's load address
    /// (its first `PT_LOAD`'s virtual address).
    Vaddr,
    /// The module's load address, as the symbol file counts (plain lines, stackwalkers,
    /// systemd-coredump, Dr. Memory, Gecko, the X server).
    Load,
    /// No module offset at all: an address in the crashed process (old glibc's
    /// `./prog[0x401234]`, Apple's `0x7fff6b5a82c2 __pthread_kill + 10`, Wine's
    /// `0x7b4503f0 in ntdll`). Placed in its module only by a module map in the same
    /// report, or taken as the module's own virtual address where that is what it is:
    /// in a position-dependent ELF executable whose binary is at hand.
    Absolute,
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

/// Which shape of token a frame was found in: how the line is written back.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// A sanitizer's `#N 0xPC … (module+0xOFF)`: rewritten as the runtime prints it
    /// symbolized. (TSan's frames, which have no PC, are [`Family::Other`].)
    Sanitizer,
    /// Every other shape: the line is kept and followed by its frames.
    Other,
    /// A shape whose frames carry no number (a JVM's error log): the first of a stack
    /// is where the thread stopped, looked up as is, which [`Context`] tells.
    Unnumbered,
}

/// One frame found in a line of text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// The module as the text names it: a path, a file name or a build ID.
    pub module: &'a str,
    /// The GNU build ID printed beside it, if any (hex).
    pub build_id: Option<&'a str>,
    /// The offset, counted as `base` says.
    pub offset: u64,
    /// What the offset counts from.
    pub base: Base,
    /// The function the offset counts from instead, where the text names one in place of
    /// a module offset (WinDbg's `module!function+0x1a`): found by name in the module's
    /// symbol file, if it tells one function by that name.
    pub function: Option<&'a str>,
    /// Whether the address is where the thread stopped or a return address.
    pub pc: Pc,
    /// Which kind of report wrote it (how the output is laid out).
    pub family: Family,
    /// The bytes of the line that the resolved frame replaces or follows.
    pub span: Range<usize>,
}

/// A token's shape: the function that finds it in a line.
type Shape = for<'a> fn(&'a str) -> Option<Frame<'a>>;

/// The shapes, most specific first: the first that finds a token in a line wins.
const SHAPES: &[Shape] = &[
    sanitizer,
    coredump,
    logged::dart_vm,
    logged::dart_nonsymbolic,
    android,
    graphene,
    stackwalker,
    stackwalker_machine,
    apple,
    xorg,
    dr_memory,
    gecko,
    hotspot,
    wine::wine,
    backtrace_symbols,
    logged::windbg,
    logged::logger_row,
    logged::address_then_token,
    plain,
    logged::bare_offset,
];

/// The frame in `line`, if it holds one in a shape this reader knows, of a module a
/// symbol file can be for: not a mapping with no file behind it (`[vdso]`,
/// `/dev/ashmem/…`, `???`), nor an entry of a JVM log's `Signal Handlers:` list.
pub fn frame(line: &str) -> Option<Frame<'_>> {
    let frame = SHAPES.iter().find_map(|shape| shape(line))?;
    // A bare address names no module: the report's module list places it, or nothing.
    let bare = frame.base == Base::Absolute && frame.module.is_empty();
    let none = (!bare && super::pseudo::is_pseudo_module(frame.module))
        || super::pseudo::is_signal_handler_entry(line);
    (!none).then_some(frame)
}

/// What a report says of its modules outside their frames: systemd-coredump lists each
/// module's build ID on lines of its own (`Module libc.so.6 with build-id 0a1b…`,
/// `Found module libc.so.6 with build-id: 0a1b…`), before the stacks.
#[derive(Default, Debug)]
pub struct Context {
    build_ids: std::collections::HashMap<String, String>,
    /// Whether the last line that was no frame began a stack: the next unnumbered
    /// frame is its first.
    stack_starts: bool,
    /// The faulting module a Windows Error Reporting text named last.
    faulting: Option<String>,
    /// Whether the text is Crashlytics' (a header of its export, a thread's `Crashed:`).
    crashlytics: bool,
    /// The `Sig[N]` numbers of a `Report.wer`'s faulting module and its offset.
    wer_module: Option<String>,
    wer_offset: Option<String>,
}

/// How many modules' build IDs a report may name: a process maps a few hundred.
const MAX_NAMED_MODULES: usize = 65_536;

impl Context {
    /// How a frame of `line` (`frame`) is to be looked up, given the lines before it:
    /// the first frame of an unnumbered stack is where the thread stopped.
    pub fn place(&mut self, frame: &mut Frame<'_>) {
        if frame.family == Family::Unnumbered && std::mem::take(&mut self.stack_starts) {
            frame.pc = Pc::Exact;
        }
        // Crashlytics prints Apple's frame shape with the offset into the binary where
        // Apple prints the PC.
        if self.crashlytics && frame.base == Base::Absolute {
            frame.base = Base::Load;
        }
    }

    /// Learns what `line` says, if anything: a module's build ID, or that a stack of
    /// unnumbered frames starts (a JVM's `Native frames:` and `Problematic frame:`).
    pub fn learn(&mut self, line: &str) {
        if scan::contains(line, "Native frames:")
            || scan::contains(line, "Problematic frame:")
            || scan::contains(line, "===== CRASH =====")
        {
            self.stack_starts = true;
        }
        self.crashlytics |= logged::is_crashlytics_header(line);
        if let Some(module) = logged::faulting_module(line) {
            self.faulting = Some(module.to_string());
        }
        self.learn_wer_signature(line);
        self.learn_build_id(line);
        self.learn_dart_build_id(line);
    }

    /// A Flutter stack trace's `build_id: '0a1b…'`: its AOT snapshot's.
    fn learn_dart_build_id(&mut self, line: &str) {
        let Some(id) = line.trim().strip_prefix("build_id: '") else {
            return;
        };
        let id = id.trim_end_matches('\'');
        if is_build_id(id) {
            self.build_ids
                .insert(logged::DART_SNAPSHOT.to_string(), id.to_ascii_lowercase());
        }
    }

    /// A `Report.wer` file's signature: `Sig[3].Name=Fault Module Name` announces the
    /// module in `Sig[3].Value=`, `Sig[7].Name=Exception Offset` its offset.
    fn learn_wer_signature(&mut self, line: &str) {
        if let Some((n, name)) = logged::wer_signature_name(line) {
            match name {
                "Fault Module Name" => self.wer_module = Some(n.to_string()),
                "Exception Offset" => self.wer_offset = Some(n.to_string()),
                _ => {}
            }
        } else if let Some(n) = &self.wer_module
            && let Some(value) = logged::wer_signature_value(line, n)
        {
            self.faulting = Some(value.trim().to_string());
        }
    }

    /// The frame a Windows Error Reporting text's `Fault offset:` line (or a
    /// `Report.wer`'s `Exception Offset` value) gives, with the faulting module named
    /// before it: (module, offset).
    pub fn fault(&self, line: &str) -> Option<(&str, u64)> {
        let module = self.faulting.as_deref().filter(|m| !m.is_empty())?;
        let offset = logged::fault_offset(line).or_else(|| {
            let n = self.wer_offset.as_deref()?;
            logged::hex_offset(logged::wer_signature_value(line, n)?)
        })?;
        Some((module, offset))
    }

    fn learn_build_id(&mut self, line: &str) {
        let text = line.trim();
        let Some(at) = scan::find(text, "odule ") else {
            return;
        };
        if !(text[..at].ends_with('M') || text[..at].ends_with("Found m")) {
            return;
        }
        let rest = &text[at + "odule ".len()..];
        let Some((module, _)) = split_word(rest) else {
            return;
        };
        let Some(id_at) = scan::find(rest, "with build-id") else {
            return;
        };
        let id = rest[id_at + "with build-id".len()..]
            .trim_start_matches(':')
            .trim_start();
        let id = id
            .split(|c: char| !c.is_ascii_hexdigit())
            .next()
            .unwrap_or("");
        if is_build_id(id) && self.build_ids.len() < MAX_NAMED_MODULES {
            self.build_ids
                .insert(module.to_string(), id.to_ascii_lowercase());
        }
    }

    /// The build ID the report gave `module` elsewhere, if any.
    pub fn build_id(&self, module: &str) -> Option<&str> {
        self.build_ids.get(module).map(String::as_str)
    }
}

/// `#3 0x55d1c2b3a4f1  (/path/app+0x1234f1) (BuildId: 4929ac8c…)`, as ASan, UBSan, LSan
/// and MSan print frames they were told not to symbolize (`in function` may stand
/// between, and a log prefix before), and `#3 function file:line (app+0x1234f1)`, as
/// TSan prints every frame. The module and offset are the last parenthesized
/// `module+0xOFF` of the line: a function name may hold parentheses of its own
/// (`foo(int (*)(int))`). Caller frames are printed already moved back into the call.
fn sanitizer(line: &str) -> Option<Frame<'_>> {
    let t = token(line, SANITIZER)?;
    let hash = frame_number_before(line, t.open)?;
    let has_pc = line[hash..t.open]
        .split_whitespace()
        .nth(1)
        .is_some_and(|w| w.starts_with("0x") && parse_hex(&w[2..]).is_some());
    Some(Frame {
        module: strip_arch(t.module),
        build_id: build_id_after(line, t.close),
        offset: t.offset,
        base: Base::Vaddr,
        pc: Pc::Exact,
        function: None,
        family: if has_pc {
            Family::Sanitizer
        } else {
            Family::Other
        },
        span: t.open..t.close + 1,
    })
}

/// `#3  0x00005562c2b9f139 n/a (/tmp/a.out + 0x1139)`, as systemd-coredump prints a
/// stack: the offset is from the module's lowest mapped address (its load address, as
/// the symbol file counts), and callers' addresses are return addresses.
fn coredump(line: &str) -> Option<Frame<'_>> {
    let t = token(line, COREDUMP)?;
    let hash = frame_number_before(line, t.open)?;
    Some(t.frame(Base::Load, caller_after_first(frame_number_at(line, hash))))
}

/// `#00 pc 000000000004c7d0  /system/lib64/libc.so (abort+164) (BuildId: 0a1b…)`, from
/// a tombstone, a logcat backtrace or an ANR trace (`native: #00 pc …`, or
/// `native: pc …` with no number), behind any prefix; the PC may be written `0x4c7d0`.
/// The `pc` column is the ELF's virtual address (libunwindstack's `rel_pc`: less the
/// mapping's start, plus its file offset and the load bias), and callers' are already
/// moved back into the call (less `GetPcAdjustment`): looked up as printed.
fn android(line: &str) -> Option<Frame<'_>> {
    let mut from = 0;
    while let Some(i) = scan::find(&line[from..], "pc ") {
        let at = from + i;
        from = at + 3;
        if let Some(frame) = android_at(line, at) {
            return Some(frame);
        }
    }
    None
}

fn android_at(line: &str, at: usize) -> Option<Frame<'_>> {
    let before = line[..at].trim_end();
    // `#NN` just before: read back over the digits only (looking back for the last `#`
    // read the whole line again at every `pc `, quadratic in the line).
    let number = before.trim_end_matches(|c: char| c.is_ascii_digit());
    let marked = before.is_empty()
        || before.ends_with("native:")
        || (number.len() < before.len() && number.ends_with('#'));
    let word_start = line[..at]
        .chars()
        .next_back()
        .is_none_or(char::is_whitespace);
    if !marked || !word_start {
        return None;
    }
    let (pc, rest) = split_word(&line[at + 3..])?;
    let offset = parse_hex(pc.strip_prefix("0x").unwrap_or(pc))?;
    let (module, _) = split_word(rest)?;
    // A path, a file name, or a mapping Android names in brackets: not the next
    // register of a line that merely says `pc` (`at pc 0x… bp 0x… sp 0x…`).
    if !module.contains(['/', '.', '[', '<']) {
        return None;
    }
    let module_at = line.len() - rest.trim_start().len();
    let module_end = module_at + module.len();
    Some(Frame {
        module,
        build_id: build_id_after(line, module_end),
        offset,
        base: Base::Vaddr,
        pc: Pc::Exact,
        function: None,
        family: Family::Other,
        span: module_at..module_end,
    })
}

/// `    /system/lib64/libui.so (android::GraphicBuffer::getFlattenedSize() const+8, pc
/// 55ee8)` or `    /data/app/…/base.apk!libfoo.so (pc a0ccb64)`, the backtrace of
/// GrapheneOS's crash reports: the PC is `rel_pc`, as in a tombstone.
fn graphene(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let body = text.strip_suffix(')')?;
    let pc_at = scan::rfind(body, "pc ")?;
    if !(body[..pc_at].ends_with('(') || body[..pc_at].ends_with(", ")) {
        return None;
    }
    let offset = parse_hex(&body[pc_at + 3..])?;
    let start = line.len() - line.trim_start().len();
    let open = scan::find(&line[start..], " (")? + start;
    let module = &line[start..open];
    if !module.starts_with('/') || scan::whitespace(module).is_some() {
        return None;
    }
    Some(module_frame(line, module, offset, Base::Vaddr, Pc::Exact))
}

/// ` 1  libxul.so + 0x1234567`, a frame of Breakpad's `minidump_stackwalk` or
/// rust-minidump's `minidump-stackwalk` with no symbols for it: the offset from the
/// module's base, the return address for callers (the walkers look up one byte back).
fn stackwalker(line: &str) -> Option<Frame<'_>> {
    let (number, rest) = split_word(line)?;
    let number: u64 = number.parse().ok()?;
    let rest = without_note(rest.trim_end());
    let Some((module, offset)) = scan::rsplit_once(rest, " + 0x") else {
        return stackwalker_address(line, rest, number);
    };
    // A module's name may hold spaces (`Electron Framework`); one with a function
    // (`module!function + 0x10b`) is not an offset into the module.
    let module = module.trim();
    if module.is_empty() || module.contains('!') {
        return None;
    }
    // `rest` lost the line's trailing blanks: its place is found by address.
    let start = rest.trim_start().as_ptr() as usize - line.as_ptr() as usize;
    Some(Frame {
        module,
        build_id: None,
        offset: parse_hex(offset)?,
        base: Base::Load,
        pc: caller_after_first(Some(number)),
        function: None,
        family: Family::Other,
        span: start..start + rest.trim_start().len(),
    })
}

/// ` 3  0x7f2955fe9a7c`, a stackwalker's frame in no module it knew: an absolute
/// address ([`Base::Absolute`], of no named module), placed only by the report's own
/// module list (`Loaded modules:`, a microdump's `M` lines). Only indented, as the
/// walkers print frames, and only a full-width address (8 digits or more).
fn stackwalker_address<'a>(line: &'a str, rest: &'a str, number: u64) -> Option<Frame<'a>> {
    if !line.starts_with(' ') {
        return None;
    }
    let word = rest.trim();
    let digits = word.strip_prefix("0x")?;
    if digits.len() < 8 {
        return None;
    }
    let address = parse_hex(digits)?;
    let start = word.as_ptr() as usize - line.as_ptr() as usize;
    Some(Frame {
        module: "",
        build_id: None,
        offset: address,
        base: Base::Absolute,
        pc: caller_after_first(Some(number)),
        function: None,
        family: Family::Other,
        span: start..start + word.len(),
    })
}

/// `text` less a note a user added after a frame: `（崩溃）`, in fullwidth parentheses,
/// as pasted into trackers from Chinese-language tools.
fn without_note(text: &str) -> &str {
    match text.strip_suffix('）').and_then(|t| t.rsplit_once('（')) {
        Some((head, _)) => head.trim_end(),
        None => text,
    }
}

/// `0|1|libxul.so||||0x3a1f8c`, a frame of Breakpad's `minidump_stackwalk -m` (thread,
/// frame, module, function, file, line, offset) with no function: the offset is then
/// from the module's base; callers' are return addresses.
fn stackwalker_machine(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    // Seven fields, no more: read without collecting them, as every line is tried.
    let mut fields = text.split('|');
    let mut field = || fields.next();
    let (Some(thread), Some(number), Some(module), Some(""), Some(_), Some(_), Some(offset), None) = (
        field(),
        field(),
        field(),
        field(),
        field(),
        field(),
        field(),
        field(),
    ) else {
        return None;
    };
    thread.parse::<u32>().ok()?;
    let number: u64 = number.parse().ok()?;
    let offset = parse_hex(offset.strip_prefix("0x")?)?;
    if module.is_empty() {
        return None;
    }
    let pc = caller_after_first(Some(number));
    Some(module_frame(line, module, offset, Base::Load, pc))
}

/// `2   Electron Framework    0x000000010b6c9b53 0x10b3a4000 + 3300179`, a frame of
/// Apple's crash reports for an image with no symbols: the PC, the image's load address
/// and the offset from it, in decimal; callers' addresses are return addresses.
///
/// `2   libsystem_kernel.dylib  0x00007fff6b5a82c2 __pthread_kill + 10`, the frame of
/// an image with symbols, gives its absolute PC alone ([`Base::Absolute`]), placed by
/// the report's `Binary Images`.
fn apple(line: &str) -> Option<Frame<'_>> {
    let (number, rest) = split_word(line)?;
    let number: u64 = number.parse().ok()?;
    let text = rest.trim_end();
    let Some((head, offset)) = scan::rsplit_once(text, " + ") else {
        return apple_symbolized(line, text, number);
    };
    if offset.is_empty() || offset.len() > 20 || !offset.bytes().all(|b| b.is_ascii_digit()) {
        return apple_symbolized(line, text, number);
    }
    let offset: u64 = offset.parse().ok()?;
    let (head, base) = head.trim_end().rsplit_once(char::is_whitespace)?;
    if !base.starts_with("0x") {
        return apple_symbolized(line, text, number);
    }
    parse_hex(base.strip_prefix("0x")?)?;
    let (module, pc) = head.trim_end().rsplit_once(char::is_whitespace)?;
    parse_hex(pc.strip_prefix("0x")?)?;
    let module = module.trim();
    if module.is_empty() {
        return None;
    }
    let pc = caller_after_first(Some(number));
    Some(module_frame(line, module, offset, Base::Load, pc))
}

/// `libsystem_kernel.dylib  0x00007fff6b5a82c2 __pthread_kill + 10` (or `… + 60
/// (main.m:12)`), the text after an Apple frame's number when the image has symbols:
/// the module and its absolute PC; or, unpadded (`0x3fa main + 122`), Crashlytics'
/// offset into the binary.
fn apple_symbolized<'a>(line: &'a str, text: &'a str, number: u64) -> Option<Frame<'a>> {
    let tail = text
        .strip_suffix(')')
        .and_then(|t| scan::rsplit_once(t, " ("))
        .map_or(text, |(head, _)| head);
    let decimal = |n: &str| !n.is_empty() && n.len() <= 20 && n.bytes().all(|b| b.is_ascii_digit());
    // `symbol + N`, or Crashlytics' `symbol (file.c:376)` with no offset.
    let offset_given = scan::rsplit_once(tail, " + ").is_some_and(|(_, n)| decimal(n));
    let line_given = text
        .strip_suffix(')')
        .and_then(|t| t.rsplit_once(':'))
        .is_some_and(|(_, n)| decimal(n));
    if !offset_given && !line_given {
        return None;
    }
    // The PC is the first `0x` word: the module's name may hold spaces, never one.
    let pc_at = text.match_indices("0x").map(|(i, _)| i).find(|&i| {
        text[..i].ends_with(char::is_whitespace)
            && text[i + 2..]
                .split(char::is_whitespace)
                .next()
                .is_some_and(|h| !h.is_empty() && h.len() <= 16 && is_hex(h))
    })?;
    let module = text[..pc_at].trim();
    let pc = text[pc_at + 2..].split(char::is_whitespace).next()?;
    let after = text[pc_at + 2 + pc.len()..].trim();
    // `0x… 0x… + N` is the other shape; `0x… + N` has no symbol.
    if module.is_empty() || after.starts_with("0x") || after.starts_with('+') {
        return None;
    }
    let pc_value = parse_hex(pc)?;
    // Apple prints a PC zero-padded to its width (16 digits, 8 on 32-bit devices);
    // Crashlytics' exports, in whatever language the viewer reads them, print the offset
    // into the binary unpadded (`0x3fa`): told by its shape, not by a heading's words.
    let base = match pc.len() {
        8 | 16 => Base::Absolute,
        _ => Base::Load,
    };
    let pc = caller_after_first(Some(number));
    Some(module_frame(line, module, pc_value, base, pc))
}

/// `C  [libjvm.so+0xb0c3ad]  VMError::report_and_die()+0x4d`, a native frame of a Java
/// virtual machine's fatal error log (`hs_err_pid*.log`, and its `# C  [libc.so.6+0x…]`
/// problematic frame): the offset from the library's base. The first frame of a stack
/// is where it stopped, the others return addresses: [`Context`] tells them apart.
fn hotspot(line: &str) -> Option<Frame<'_>> {
    let frame = token(line, HOTSPOT)?.frame(Base::Load, Pc::Return);
    Some(Frame {
        function: None,
        family: Family::Unnumbered,
        ..frame
    })
}

/// `[ 42277.724] (EE) 3: /usr/bin/Xorg (0x400000+0xecc48) [0x4ecc48]`: the X server's
/// backtrace, its offset from the module's mapped base (its load address); callers'
/// addresses are return addresses (libunwind's).
fn xorg(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let bracket = scan::rfind(text, " [0x")?;
    text[bracket + 4..].strip_suffix(']').and_then(parse_hex)?;
    let head = &text[..bracket];
    let inner = head.strip_suffix(')')?;
    let open = scan::rfind(inner, " (0x")?;
    let (base, offset) = scan::split_once(&inner[open + 2..], "+0x")?;
    parse_hex(&base[2..])?;
    let offset = parse_hex(offset)?;
    let (before, module) = text[..open].rsplit_once(' ')?;
    let number = before.trim_end().strip_suffix(':')?;
    let number = number.rsplit(' ').next()?.parse::<u64>().ok()?;
    if module.is_empty() {
        return None;
    }
    let pc = caller_after_first(Some(number));
    Some(module_frame(line, module, offset, Base::Load, pc))
}

/// `# 2 MSXML3.dll!DllMain   +0x2e73   (0x7499ef9a <MSXML3.dll+0x1ef9a>)`, or in Dr.
/// Memory's older lists `0x7744adbf <ntdll.dll+0x3adbf> ntdll.dll!alloca_probe`: the
/// offset from the module's base; callers' addresses are return addresses.
fn dr_memory(line: &str) -> Option<Frame<'_>> {
    let t = token(line, DR_MEMORY)?;
    let number = line[..t.open]
        .rfind('#')
        .and_then(|h| frame_number_at(line, h));
    Some(t.frame(Base::Load, caller_after_first(number.or(Some(0)))))
}

/// `#01: NS_DebugBreak[/usr/lib/firefox/libxul.so +0x1234567]`, as Gecko's
/// `MozFormatCodeAddress` writes frames for `fix-stacks`: the offset from the library's
/// base, looked up as given (as `fix-stacks` does).
fn gecko(line: &str) -> Option<Frame<'_>> {
    Some(token(line, GECKO)?.frame(Base::Load, Pc::Exact))
}

/// A line of glibc's `backtrace_symbols`, behind any prefix: `./app(+0x1234)
/// [0x55d1c2b3a234]`, the offset from the module's load bias (an ELF virtual address).
/// `./app[0x401180]`, older glibc's `./app() [0x401180]` (printed when no symbol is
/// known) and `./app(name+0x1d)[0x…]` (relative to a dynamic symbol, whose address the
/// symbol file does not give) give only the absolute address: [`Base::Absolute`].
/// Frames there are return addresses (the first is `backtrace`'s caller's).
fn backtrace_symbols(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let Some(bracket) = scan::rfind(text, "[0x") else {
        return backtrace_symbols_wrapped(line);
    };
    // A log wrapper may close its own bracket after it: `[Backtrace 3: …[0x7f…]]`.
    let inner = text[bracket + 3..].trim_end_matches(']');
    if text.len() - bracket - 3 == inner.len() {
        return None;
    }
    let address = parse_hex(inner)?;
    let head = text[..bracket].trim_end();
    let (module_end, offset, base) = match head.strip_suffix(')') {
        Some(call) => {
            let open = call.rfind('(')?;
            match &call[open + 1..] {
                "" => (open, address, Base::Absolute),
                inside => match inside.strip_prefix("+0x") {
                    Some(offset) => (open, parse_hex(offset)?, Base::Vaddr),
                    None => {
                        let (symbol, offset) = scan::rsplit_once(inside, "+0x")?;
                        parse_hex(offset)?;
                        if symbol.is_empty() || scan::whitespace(symbol).is_some() {
                            return None;
                        }
                        (open, address, Base::Absolute)
                    }
                },
            }
        }
        None => (head.len(), address, Base::Absolute),
    };
    let before = &head[..module_end];
    let module = before
        .rsplit_once(char::is_whitespace)
        .map_or(before, |(_, m)| m);
    if module.is_empty() || module.ends_with('#') || module.starts_with('[') {
        return None;
    }
    Some(Frame {
        module,
        build_id: None,
        offset,
        base,
        pc: Pc::Return,
        function: None,
        family: Family::Other,
        span: text.len()..text.len(),
    })
}

/// `/usr/lib/libfoo.so(+0x2f10)` with its `[0x7f…]` wrapped onto the next line by a
/// logger: the module (a path, as glibc prints it) and the offset are all there.
fn backtrace_symbols_wrapped(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let call = text.strip_suffix(')')?;
    let open = scan::rfind(call, "(+0x")?;
    let offset = parse_hex(&call[open + 4..])?;
    let module = call[..open]
        .rsplit_once(char::is_whitespace)
        .map_or(&call[..open], |(_, m)| m);
    if !module.contains('/') || module.starts_with('[') {
        return None;
    }
    Some(Frame {
        module,
        build_id: None,
        offset,
        base: Base::Vaddr,
        pc: Pc::Return,
        function: None,
        family: Family::Other,
        span: text.len()..text.len(),
    })
}

/// `libfoo.so+0x1234` or `4929ac8cb3c1…+0x1234`: a module's file name or GNU build ID,
/// then the offset from its load address, as the symbol file counts. Looked up as
/// given.
fn plain(line: &str) -> Option<Frame<'_>> {
    let text = line.trim();
    let plus = scan::rfind(text, "+0x")?;
    let module = &text[..plus];
    // A C++ function with its offset (`android::Looper::pollInner(int)+0x3e7`) is no
    // module.
    if module.is_empty()
        || scan::whitespace(module).is_some()
        || module.contains('!')
        || scan::contains(module, "::")
        || module.ends_with(')')
    {
        return None;
    }
    let offset = parse_hex(&text[plus + 3..])?;
    let start = line.len() - line.trim_start().len();
    Some(Frame {
        module,
        build_id: is_build_id(module).then_some(module),
        offset,
        base: Base::Load,
        pc: Pc::Exact,
        function: None,
        family: Family::Other,
        span: start..start + text.len(),
    })
}

/// A bracketed module-and-offset token: `open`, the module, `separator` and the
/// hexadecimal offset, `close`; the module as `accept` takes it.
struct Delimited {
    open: char,
    separator: &'static str,
    close: char,
    accept: fn(&str) -> bool,
}

/// `(module+0xOFF)`: any module but an address (the X server's `(0xBASE+0xOFF)`) or one
/// that ends in a space (systemd-coredump's `(module + 0xOFF)`).
const SANITIZER: Delimited = Delimited {
    open: '(',
    separator: "+0x",
    close: ')',
    accept: |m| !m.starts_with("0x") && !m.ends_with(' '),
};

/// `(module + 0xOFF)`, `n/a` being no module.
const COREDUMP: Delimited = Delimited {
    open: '(',
    separator: " + 0x",
    close: ')',
    accept: |m| m != "n/a",
};

/// `<module+0xOFF>`, a module of one word.
const DR_MEMORY: Delimited = Delimited {
    open: '<',
    separator: "+0x",
    close: '>',
    accept: |m| scan::whitespace(m).is_none(),
};

/// `[module +0xOFF]`.
const GECKO: Delimited = Delimited {
    open: '[',
    separator: " +0x",
    close: ']',
    accept: |_| true,
};

/// `[library+0xOFF]`: a library's file name (`libjvm.so`, `jvm.dll`), not an address or
/// an index (`buf[len+0x10]`).
const HOTSPOT: Delimited = Delimited {
    open: '[',
    separator: "+0x",
    close: ']',
    accept: |m| m.contains('.') && !m.starts_with("0x") && scan::whitespace(m).is_none(),
};

/// A token found: its module, offset, and the byte offsets of its delimiters.
struct Token<'a> {
    module: &'a str,
    offset: u64,
    open: usize,
    close: usize,
}

impl<'a> Token<'a> {
    fn frame(&self, base: Base, pc: Pc) -> Frame<'a> {
        Frame {
            module: self.module,
            build_id: None,
            offset: self.offset,
            base,
            pc,
            function: None,
            family: Family::Other,
            span: self.open..self.close + 1,
        }
    }
}

/// The last token of `line` in `shape`.
fn token(line: &str, shape: Delimited) -> Option<Token<'_>> {
    // Most lines hold no such token: found absent at memchr's speed, not by the walk.
    if !line.contains(shape.open) || !scan::contains(line, shape.separator) {
        return None;
    }
    let (open, close) = last_group(line, shape.open, shape.close, |inner| {
        split_token(inner, &shape).map(|(_, offset)| offset)
    })?;
    let (module, offset) = split_token(&line[open + shape.open.len_utf8()..close], &shape)?;
    Some(Token {
        module,
        offset,
        open,
        close,
    })
}

/// The module and offset inside a token's delimiters, if it is one of `shape`.
fn split_token<'a>(inner: &'a str, shape: &Delimited) -> Option<(&'a str, u64)> {
    let (module, offset) = scan::rsplit_once(inner, shape.separator)?;
    let offset = parse_hex(offset)?;
    (!module.is_empty() && (shape.accept)(module)).then_some((module, offset))
}

/// The last `open … close` group of `line` (no nested `close` inside) whose inside
/// `accept` takes: byte offsets of its two delimiters.
///
/// The groups that can be taken are the `open`s whose next delimiter is a `close` (an
/// `open` after it would be the group's own, a `close` before it would be inside it).
/// One walk from the line's end finds them, and their insides do not overlap, so every
/// byte is read a bounded number of times whatever the line's shape: the search that
/// looked back for an `open` from every `close` took 74 s on a 1 MiB line of `)`.
fn last_group<T>(
    line: &str,
    open: char,
    close: char,
    accept: impl Fn(&str) -> Option<T>,
) -> Option<(usize, usize)> {
    let mut next_close: Option<usize> = None;
    for (i, c) in line.char_indices().rev() {
        if c == close {
            next_close = Some(i);
        } else if c == open
            && let Some(end) = next_close.take()
            && accept(&line[i + open.len_utf8()..end]).is_some()
        {
            return Some((i, end));
        }
    }
    None
}

/// Where the `#N` frame number (`#3`, `#03`, `# 3`) before byte `before` of `line`
/// starts, if one stands before it as a word of its own.
fn frame_number_before(line: &str, before: usize) -> Option<usize> {
    let mut end = before;
    while let Some(hash) = line[..end].rfind('#') {
        if frame_number_at(line, hash).is_some() {
            return Some(hash);
        }
        end = hash;
    }
    None
}

/// The number of the `#N` (or `# N`) at byte `hash` of `line`.
fn frame_number_at(line: &str, hash: usize) -> Option<u64> {
    let rest = line.get(hash + 1..)?;
    let rest = rest.strip_prefix(' ').unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let after = rest[digits..].chars().next();
    if digits == 0 || digits > 6 || after.is_some_and(|c| !c.is_whitespace() && c != ':') {
        return None;
    }
    rest[..digits].parse().ok()
}

/// A frame whose span is its `module`, a part of `line`.
fn module_frame<'a>(line: &'a str, module: &'a str, offset: u64, base: Base, pc: Pc) -> Frame<'a> {
    let start = module.as_ptr() as usize - line.as_ptr() as usize;
    Frame {
        module,
        build_id: None,
        offset,
        base,
        pc,
        function: None,
        family: Family::Other,
        span: start..start + module.len(),
    }
}

/// Frame 0 is where the thread stopped; the others are return addresses.
fn caller_after_first(number: Option<u64>) -> Pc {
    match number {
        Some(0) => Pc::Exact,
        _ => Pc::Return,
    }
}

/// A macOS sanitizer's `module:arm64`: the module without its architecture.
fn strip_arch(module: &str) -> &str {
    const ARCHES: &[&str] = &[
        "arm64", "arm64e", "arm64_32", "x86_64", "x86_64h", "i386", "armv7", "armv7s", "armv7k",
    ];
    match module.rsplit_once(':') {
        Some((name, arch)) if !name.is_empty() && ARCHES.contains(&arch) => name,
        _ => module,
    }
}

/// `(BuildId: hex)` after byte `from` of `line`.
fn build_id_after(line: &str, from: usize) -> Option<&str> {
    let rest = line.get(from..)?;
    let start = scan::find(rest, "(BuildId: ")? + "(BuildId: ".len();
    let len = rest[start..].find(')')?;
    let id = &rest[start..start + len];
    is_build_id(id).then_some(id)
}

/// A GNU build ID as reports print it: an even number of hex digits, 8 bytes or more.
fn is_build_id(text: &str) -> bool {
    text.len() >= 16 && text.len().is_multiple_of(2) && is_hex(text)
}

fn split_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    let end = scan::whitespace(text).unwrap_or(text.len());
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
mod tests;
