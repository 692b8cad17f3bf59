//! Frames that tools write into their own log lines, each in a shape of its own:
//! the Dart VM's native crash dump and Flutter's non-symbolic Dart stack traces,
//! a program's `0xADDR (module+0xOFF)` crash locus, a Windows crash log's
//! `Game.dll+00F18CB`, and the Windows Event Log's `Fault offset:`.

use crate::symbolize::scan;

use super::{
    Base, Family, Frame, Pc, SANITIZER, caller_after_first, is_hex, parse_hex, split_word, token,
};

/// `E/DartVM (12345): pc 0x0000007a8b9c0d1e fp 0x0000007fc76f4b70
/// /data/app/…/lib/arm64/libflutter.so+0x1d3c3c4`, a frame of the Dart VM's native
/// crash dump (`===== CRASH =====`), behind logcat's prefix: the offset from the
/// library's base (`dladdr`'s). The first frame of a dump is where it stopped, the
/// others return addresses: [`super::Context`] tells them apart.
pub(super) fn dart_vm(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let pc = scan::find(text, "pc 0x")?;
    let fp = pc + scan::find(&text[pc..], " fp 0x")?;
    let (_, rest) = split_word(&text[fp + 4..])?;
    let token = rest.trim();
    let (module, offset) = scan::rsplit_once(token, "+0x")?;
    if module.is_empty() || scan::whitespace(module).is_some() {
        return None;
    }
    let start = text.len() - token.len();
    Some(Frame {
        module,
        build_id: None,
        offset: parse_hex(offset)?,
        base: Base::Load,
        pc: Pc::Return,
        function: None,
        family: Family::Unnumbered,
        span: start..text.len(),
    })
}

/// `    #00 abs 000000723d08b5d3 virt 00000000001175d3 _kDartIsolateSnapshotInstructions+0x2d5d3`,
/// a frame of a Flutter app's non-symbolic Dart stack trace (built with
/// `--split-debug-info`): `virt` is the ELF virtual address in the app's AOT snapshot,
/// `libapp.so`, which the trace's `build_id: '…'` header identifies
/// ([`super::Context`] learns it). Callers' addresses are return addresses.
pub(super) fn dart_nonsymbolic(line: &str) -> Option<Frame<'_>> {
    let text = line.trim();
    let rest = text.strip_prefix('#')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number: u64 = rest[..digits].parse().ok()?;
    let mut words = rest[digits..].split_whitespace();
    let (abs, absolute, virt, address) =
        (words.next()?, words.next()?, words.next()?, words.next()?);
    if abs != "abs" || virt != "virt" || !is_hex(absolute) || absolute.is_empty() {
        return None;
    }
    let at = address.as_ptr() as usize - line.as_ptr() as usize;
    Some(Frame {
        module: DART_SNAPSHOT,
        build_id: None,
        offset: parse_hex(address)?,
        base: Base::Vaddr,
        pc: caller_after_first(Some(number)),
        function: None,
        family: Family::Other,
        span: at..at + address.len(),
    })
}

/// The library a Flutter app's Dart code is compiled into, on Android.
pub(super) const DART_SNAPSHOT: &str = "libapp.so";

/// `RIP = 0x55d16a03ce7f (opendcdiag+0x61e7f)`, a program's own report of its crash
/// locus (the program counter's absolute value, then the module and the offset from
/// where it is mapped, `dladdr`'s): the module may have no extension. Looked up as
/// given. Only after a program counter's name: `at 0x… (race+0x1c5014)` is as often a
/// variable's place (TSan's `Location is global …`).
pub(super) fn address_then_token(line: &str) -> Option<Frame<'_>> {
    let t = token(line, SANITIZER)?;
    let before = line[..t.open].strip_suffix(' ')?;
    let at = before.rfind([' ', '='])? + 1;
    parse_hex(before[at..].strip_prefix("0x")?)?;
    let register = before[..at].trim_end().strip_suffix('=')?.trim_end();
    let register = register.rsplit([' ', ',', '(']).next()?;
    if !["RIP", "EIP", "PC", "IP"]
        .iter()
        .any(|r| register.eq_ignore_ascii_case(r))
    {
        return None;
    }
    Some(t.frame(Base::Vaddr, Pc::Exact))
}

/// `Game.dll+00F18CB` alone on a line, as Windows games' crash logs write the faulting
/// module and its offset (an RVA) without `0x`; only for a module of an extension such
/// files have.
pub(super) fn bare_offset(line: &str) -> Option<Frame<'_>> {
    let text = line.trim();
    let (module, offset) = text.rsplit_once('+')?;
    let (_, ext) = module.rsplit_once('.')?;
    let known = ["dll", "exe", "so", "dylib", "sys", "pyd", "node"]
        .iter()
        .any(|e| ext.eq_ignore_ascii_case(e));
    if !known || offset.len() < 4 || !is_hex(offset) || scan::whitespace(module).is_some() {
        return None;
    }
    let start = line.len() - line.trim_start().len();
    Some(Frame {
        module,
        build_id: None,
        offset: parse_hex(offset)?,
        base: Base::Load,
        pc: Pc::Exact,
        function: None,
        family: Family::Other,
        span: start..start + text.len(),
    })
}

/// `[ 0] 0x7FF9867018CB   Game.dll+00F18CB   mov eax, [rcx]`, a frame of a game's or
/// an in-game overlay's crash logger: the frame's number in brackets (or bare), its
/// absolute address, then the module and its offset (an RVA) without `0x` as
/// [`bare_offset`] takes it, then disassembly or a symbol. The module and offset are
/// the frame; the absolute address is not a second one. Callers' addresses are return
/// addresses (`StackWalk64`'s).
pub(super) fn logger_row(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_start();
    let (number, rest) = match text.strip_prefix('[') {
        Some(r) => {
            let (n, rest) = r.split_once(']')?;
            (n.trim().parse::<u64>().ok()?, rest)
        }
        None => {
            let (n, rest) = split_word(text)?;
            (n.parse::<u64>().ok()?, rest)
        }
    };
    let (address, rest) = split_word(rest)?;
    parse_hex(
        address
            .strip_prefix("0x")
            .or_else(|| address.strip_prefix("0X"))?,
    )?;
    let (token, _) = split_word(rest)?;
    let mut frame = bare_offset(token)?;
    let at = token.as_ptr() as usize - line.as_ptr() as usize;
    frame.span = at..at + token.len();
    frame.pc = caller_after_first(Some(number));
    Some(frame)
}

/// A row of WinDbg's `k` family (`k`, `kb`, `kn`, `kv`, `kL`, as pasted into bug
/// reports): an optional frame number, the frame's stack pointer and return address
/// (and with `kb` three arguments), each a hexadecimal word, 64-bit ones split by a
/// backtick, then the call site. A call site `module+0x1a2b` is the frame: the module
/// had no symbols, and the offset is from its base. `module!function+0x1a` (or
/// `module!function` at its first byte, either with a `[file @ line]` tail) was
/// resolved by WinDbg: a frame too, whose offset counts from the function, found by
/// name in the module's symbol file. Frames past the first show return addresses.
/// Inline frames (`(Inline Function) --------`--------`) have no address and are not
/// frames of their own.
pub(super) fn windbg(line: &str) -> Option<Frame<'_>> {
    let mut rest = line.trim_start();
    let mut number = None;
    let mut columns = 0;
    let site_start = loop {
        let (word, after) = split_word(rest)?;
        // Most words hold no backtick: the split 64-bit word alone is copied.
        let digits = match word.contains('`') {
            true => std::borrow::Cow::Owned(word.replace('`', "")),
            false => std::borrow::Cow::Borrowed(word),
        };
        let address = digits.len() >= 8 && parse_hex(&digits).is_some();
        if address {
            columns += 1;
        } else if columns == 0 && number.is_none() && word.len() <= 4 && is_hex(word) {
            number = Some(u64::from_str_radix(word, 16).ok()?);
        } else {
            break word;
        }
        rest = after;
    };
    if columns < 2 {
        return None;
    }
    let at = site_start.as_ptr() as usize - line.as_ptr() as usize;
    // A symbol may hold spaces (`vector<int,std::allocator<int> >`): the site runs to
    // the source tail or the end of the line.
    let site = line[at..].split(" [").next()?.trim_end();
    let pc = caller_after_first(Some(number.unwrap_or(1)));
    let frame = |module, function, offset, len| Frame {
        module,
        build_id: None,
        offset,
        base: Base::Load,
        function,
        pc,
        family: Family::Other,
        span: at..at + len,
    };
    if let Some((module, symbol)) = site.split_once('!') {
        if !plausible_module(module) || symbol.is_empty() || symbol.starts_with("0x") {
            return None;
        }
        let (function, offset) = match scan::rsplit_once(symbol, "+0x") {
            Some((function, offset)) => (function, parse_hex(offset)?),
            None => (symbol, 0),
        };
        if function.is_empty() || function.contains('!') {
            return None;
        }
        return Some(frame(module, Some(function), offset, site.len()));
    }
    let site = site_start;
    let (module, offset) = scan::rsplit_once(site, "+0x")?;
    if !plausible_module(module) {
        return None;
    }
    Some(frame(module, None, parse_hex(offset)?, site.len()))
}

/// A module name as WinDbg writes one: a file name without its extension (`ntdll`,
/// `KERNELBASE`, `app`), never an address or a path.
fn plausible_module(module: &str) -> bool {
    !module.is_empty()
        && !module.starts_with("0x")
        && !is_hex(module)
        && !module.contains([' ', '/', '\\', '(', ')', '<', '>', ':'])
}

/// A line only Crashlytics' text holds: its export's header (`# Crashlytics - plaintext
/// stacktrace downloaded by …`, `# Platform: ios`), or a thread's heading as its
/// console shows it (`#0. Crashed: com.apple.main-thread`, `Crashed: com.apple.main-thread`),
/// where Apple's own reports write `Thread 0 Crashed::`.
pub(super) fn is_crashlytics_header(line: &str) -> bool {
    let text = line.trim();
    if text.starts_with("# Crashlytics") || text.starts_with("# Platform: ios") {
        return true;
    }
    let rest = text.strip_prefix('#').map_or(text, |r| {
        r.trim_start_matches(|c: char| c.is_ascii_digit())
            .strip_prefix(". ")
            .unwrap_or(r)
    });
    rest.starts_with("Crashed: ") && !scan::contains(rest, "::")
}

/// The faulting module a Windows Error Reporting text names, before its offset:
/// `Faulting module name: app.exe, version: 1.0.0.0, time stamp: 0x5f3e1c2a` (the Event
/// Log's Application Error) or `Fault Module Name: app.exe` (a problem signature), and
/// in a `Report.wer` file `Sig[3].Name=Fault Module Name` then `Sig[3].Value=app.exe`.
pub(super) fn faulting_module(line: &str) -> Option<&str> {
    let text = line.trim();
    let rest = ["Faulting module name:", "Fault Module Name:"]
        .iter()
        .find_map(|p| text.strip_prefix(p))?;
    let name = rest.trim().split(',').next()?.trim();
    (!name.is_empty() && scan::whitespace(name).is_none()).then_some(name)
}

/// A `Report.wer` file's `Sig[N].Name=…` line: N and the name.
pub(super) fn wer_signature_name(line: &str) -> Option<(&str, &str)> {
    let rest = line.trim().strip_prefix("Sig[")?;
    let (n, name) = scan::split_once(rest, "].Name=")?;
    n.parse::<u32>().ok()?;
    Some((n, name))
}

/// A `Report.wer` file's `Sig[N].Value=…` for the N given.
pub(super) fn wer_signature_value<'a>(line: &'a str, n: &str) -> Option<&'a str> {
    let rest = line.trim().strip_prefix("Sig[")?.strip_prefix(n)?;
    rest.strip_prefix("].Value=")
}

/// The offset a Windows Error Reporting text gives its faulting module: `Fault offset:
/// 0x0000000000001130` or `Exception Offset: 0000000000001130`. Where the thread
/// stopped, an RVA.
pub(super) fn fault_offset(line: &str) -> Option<u64> {
    let text = line.trim();
    let rest = ["Fault offset:", "Exception Offset:"]
        .iter()
        .find_map(|p| text.strip_prefix(p))?;
    hex_offset(rest)
}

/// A WER offset: hex, `0x` or not, zero-padded.
pub(super) fn hex_offset(text: &str) -> Option<u64> {
    let rest = text.trim();
    let hex = rest.strip_prefix("0x").unwrap_or(rest);
    if hex.len() < 4 || !is_hex(hex) {
        return None;
    }
    // Zero-padded past the 16 digits `parse_hex` takes, as a `.wer` file may write it.
    match hex.trim_start_matches('0') {
        "" => Some(0),
        digits => parse_hex(digits),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dart_vms_dump_and_flutters_dart_traces() {
        let f = dart_vm("E/DartVM  (12345): pc 0x0000007a8b9c0d1e fp 0x0000007fc76f4b70 /data/app/~~a==/x==/lib/arm64/libflutter.so+0x1d3c3c4").unwrap();
        assert_eq!(
            (f.module, f.offset, f.family),
            (
                "/data/app/~~a==/x==/lib/arm64/libflutter.so",
                0x1d3c3c4,
                Family::Unnumbered
            )
        );
        assert_eq!(dart_vm("pc 0x1 fp 0x2 Dart_Invoke"), None);
        let f = dart_nonsymbolic(
            "    #01 abs 000000723d08b5d3 virt 00000000001175d3 _kDartIsolateSnapshotInstructions+0x2d5d3",
        )
        .unwrap();
        assert_eq!(
            (f.module, f.offset, f.base, f.pc),
            ("libapp.so", 0x1175d3, Base::Vaddr, Pc::Return)
        );
        assert_eq!(dart_nonsymbolic("#01 abs x virt 1"), None);
    }

    #[test]
    fn a_programs_locus_and_a_windows_logs_offsets() {
        let f = address_then_token(
            "E> Received signal 11 (Segmentation fault) code=1 (SEGV_MAPERR), RIP = 0x55d16a03ce7f (opendcdiag+0x61e7f), CR2 = 0x7f5",
        )
        .unwrap();
        assert_eq!(
            (f.module, f.offset, f.base),
            ("opendcdiag", 0x61e7f, Base::Vaddr)
        );
        assert_eq!(address_then_token("see (x+0x10)"), None);
        assert_eq!(
            address_then_token(
                "  Location is global 'counter' of size 4 at 0x55d0c2a3e014 (race+0x1c5014)"
            ),
            None
        );
        assert_eq!(
            address_then_token("pc=0x4005d4 (app+0x5d4)")
                .unwrap()
                .offset,
            0x5d4
        );
        let f = bare_offset("  Game.dll+00F18CB").unwrap();
        assert_eq!((f.module, f.offset), ("Game.dll", 0xf18cb));
        for not in [
            "1.5+2000",
            "a.txt+00F18CB",
            "Game.dll+12",
            "my Game.dll+00F18CB",
        ] {
            assert_eq!(bare_offset(not), None, "{not}");
        }
        assert_eq!(
            faulting_module(
                "Faulting module name: app.exe, version: 1.0.0.0, time stamp: 0x5f3e1c2a"
            ),
            Some("app.exe")
        );
        assert_eq!(
            faulting_module("Fault Module Name:\tGame.dll"),
            Some("Game.dll")
        );
        assert_eq!(
            fault_offset("Fault offset: 0x0000000000001130"),
            Some(0x1130)
        );
        assert_eq!(
            fault_offset("Exception Offset:\t00000000000f18cb"),
            Some(0xf18cb)
        );
        assert_eq!(fault_offset("Fault offset: soon"), None);
        assert!(is_crashlytics_header("#0. Crashed: com.apple.main-thread"));
        assert!(is_crashlytics_header("Crashed: com.apple.main-thread"));
        assert!(is_crashlytics_header("# Platform: ios"));
        assert!(!is_crashlytics_header(
            "Thread 0 Crashed:: Dispatch queue: com.apple.main-thread"
        ));
    }
}
