//! Wine's backtraces, as its debugger (`winedbg`) prints them when a program crashes
//! under Wine: `=>0 0x7b4503f0 in ntdll (+0x503f0) (0x0032f4a8)`, callers indented, a
//! symbol and source between the PC and `in` when Wine knows them.

use crate::symbolize::scan;

use super::{Base, Family, Frame, Pc, caller_after_first, parse_hex};

/// `=>0 0x7b4503f0 in ntdll (+0x503f0) (0x0032f4a8)` or `  2 0x0040113c
/// RtlRaiseException+0x3a(rec=0x…) [/src/x.c:123] in game (+0x113c) (0x0033fe40)`: the
/// offset from the module's base (the image base of a PE, an RVA as its symbol file
/// counts). Without `(+0x…)` (`1 0x7b431f5c in kernel32`) only the absolute PC is given.
/// Callers' addresses are return addresses.
pub(super) fn wine(line: &str) -> Option<Frame<'_>> {
    let text = line.trim_end();
    let rest = text.trim_start();
    let rest = rest.strip_prefix("=>").unwrap_or(rest);
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    let number: u64 = rest[..digits].parse().ok()?;
    let rest = rest[digits..].strip_prefix(' ')?.trim_start();
    let (pc, rest) = rest.split_once(' ')?;
    let pc = parse_hex(pc.strip_prefix("0x")?)?;
    let at = scan::rfind(rest, " in ")
        .map(|i| i + 4)
        .or_else(|| rest.strip_prefix("in ").map(|_| 3))?;
    let after = &rest[at..];
    let (module, tail) = after.split_once(' ').unwrap_or((after, ""));
    let module_at = module.as_ptr() as usize - line.as_ptr() as usize;
    if module.is_empty() || !module.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    let mut groups = tail.split_whitespace().peekable();
    let relative = groups.next_if(|g| g.starts_with("(+0x")).map(|g| {
        g.strip_prefix("(+0x")?
            .strip_suffix(')')
            .and_then(parse_hex)
    });
    let (offset, base) = match relative {
        Some(offset) => (offset?, Base::Load),
        None => (pc, Base::Absolute),
    };
    // The frame's stack pointer is all that may follow.
    if let Some(sp) = groups.next() {
        parse_hex(sp.strip_prefix("(0x")?.strip_suffix(')')?)?;
    }
    if groups.next().is_some() {
        return None;
    }
    // Newer Wine prints a caller's offset already moved back into the call: the PC
    // less it is then a module base (64 KiB-aligned) plus one.
    let moved_back = base == Base::Load && pc.wrapping_sub(offset) & 0xfff == 1;
    Some(Frame {
        module,
        build_id: None,
        offset,
        base,
        pc: if moved_back {
            Pc::Exact
        } else {
            caller_after_first(Some(number))
        },
        function: None,
        family: Family::Other,
        span: module_at..module_at + module.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wine_frames() {
        let f = wine("=>0 0x7b4503f0 in ntdll (+0x503f0) (0x0032f4a8)").unwrap();
        assert_eq!(
            (f.module, f.offset, f.base, f.pc),
            ("ntdll", 0x503f0, Base::Load, Pc::Exact)
        );
        let f = wine("  2 0x0040113c RtlRaiseException+0x3a(rec=0x32f5b0) [/src/x.c:123] in game (+0x113c) (0x0033fe40)").unwrap();
        assert_eq!((f.module, f.offset, f.pc), ("game", 0x113c, Pc::Return));
        // A function's name but no offset: the absolute PC, then the frame's stack.
        let f = wine("  1 0x7bc6c0b4 call_thread_func+0xc() in ntdll (0x0032fef8)").unwrap();
        assert_eq!(
            (f.module, f.offset, f.base),
            ("ntdll", 0x7bc6c0b4, Base::Absolute)
        );
        let f = wine("=>0 0x004a670c EntryPoint() in launcher (0x0032fee8)").unwrap();
        assert_eq!(
            (f.module, f.offset, f.pc),
            ("launcher", 0x4a670c, Pc::Exact)
        );
        // Newer Wine: a caller's offset already moved back (the PC less it ends in 001).
        let f = wine("  14 0x3841cbf3 in steamclient (+0x41cbf2) (0x06e5e44c)").unwrap();
        assert_eq!((f.offset, f.pc), (0x41cbf2, Pc::Exact));
        let f = wine("  2 0x7bc68183 in ntdll (+0x58183) (0x0033f814)").unwrap();
        assert_eq!((f.offset, f.pc), (0x58183, Pc::Return));
        let f = wine("  1 0x7b431f5c in kernel32").unwrap();
        assert_eq!(
            (f.module, f.offset, f.base),
            ("kernel32", 0x7b431f5c, Base::Absolute)
        );
        for not in [
            "0x7b4503f0 in ntdll: int $3",
            "  1 0x7b431f5c in kernel32 (+0x31f5c) and more",
            "Unhandled exception: page fault on read access to 0x00000000 in 32-bit code (0x0040113c).",
            "  3 items in stock",
        ] {
            assert_eq!(wine(not), None, "{not}");
        }
    }
}
