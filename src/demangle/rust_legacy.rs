//! Rust's legacy mangling (`_ZN`, each path element as its length and its text, `E`,
//! the last element a hash `h<hex>`), read into the name rustc-demangle's alternate
//! form prints (`format!("{:#}", rustc_demangle::demangle(raw))`), byte for byte.
//!
//! Hand-written because rustc-demangle prints through `core::fmt` with a size-limit
//! adapter around each piece, and checks the whole name twice: about 8,000
//! instructions a name, 18% of a dump of a Rust debug build (Mozilla's dump_syms, 127
//! thousand distinct names, with `--inlines`). Here a name is checked once and copied
//! piecewise into a buffer of its own length. Any name the crate would read
//! differently is a bug: `tests::agrees_with_rustc_demangle` and the `demangle` fuzz
//! target compare the two.

/// A legacy Rust name as read here: the path without its hash, and whether a hash was
/// dropped (the crate's plain and alternate forms differ exactly then).
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Legacy {
    pub text: String,
    pub hash_dropped: bool,
}

/// LLVM's suffix for a symbol it made local and renamed (`.llvm.<hex>`), which the
/// crate drops before reading the name.
const LLVM: &str = ".llvm.";

/// `raw` read as a legacy Rust name, or `None` where rustc-demangle reads no legacy
/// name in it (not `_ZN…E`, a length past the end, bytes outside ASCII, or text after
/// the `E` that is not a `.`-suffix of printable ASCII).
pub(super) fn demangle(raw: &str) -> Option<Legacy> {
    let s = without_llvm_suffix(raw);
    let inner = s.strip_prefix("_ZN")?.as_bytes();
    if !inner.is_ascii() {
        return None;
    }
    // Checked whole before anything is written; read again as it is written, which
    // costs less than keeping the elements' places.
    let (mut at, mut count) = (0, 0);
    while let Some((_, end)) = element_at(inner, at)? {
        (at, count) = (end, count + 1);
    }
    let suffix = &s[3 + at + 1..];
    let printable = |s: &str| s.starts_with('.') && s.bytes().all(|b| b.is_ascii_graphic());
    if !suffix.is_empty() && !printable(suffix) {
        return None;
    }

    let mut text = String::with_capacity(s.len());
    let mut hash_dropped = false;
    let mut at = 0;
    for i in 0..count {
        let Some(Some((from, to))) = element_at(inner, at) else {
            break;
        };
        at = to;
        // ASCII throughout (checked above), so any byte range is a str.
        let element = &s[3 + from..3 + to];
        if i + 1 == count && is_hash(element) {
            hash_dropped = true;
            break;
        }
        if i != 0 {
            text.push_str("::");
        }
        push_element(&mut text, element);
    }
    text.push_str(suffix);
    Some(Legacy { text, hash_dropped })
}

/// `raw` without an LLVM suffix: the first `.llvm.` when only `A-F0-9@` follow it.
/// Such a suffix ends the name, so the last `.` is looked for first (a search for
/// `.llvm.` in every name cost more than the rest of the reading).
fn without_llvm_suffix(raw: &str) -> &str {
    let Some(dot) = memchr::memrchr(b'.', raw.as_bytes()) else {
        return raw;
    };
    let tail_is_hex = raw.as_bytes()[dot + 1..]
        .iter()
        .all(|b| matches!(b, b'A'..=b'F' | b'0'..=b'9' | b'@'));
    if !tail_is_hex || !raw[..=dot].ends_with(LLVM) {
        return raw;
    }
    let i = dot + 1 - LLVM.len();
    // An earlier `.llvm.` is the one the crate takes, and its tail has a `.`.
    if raw.find(LLVM) == Some(i) {
        &raw[..i]
    } else {
        raw
    }
}

/// The element whose length starts at `at`: the range of its text, or `Some(None)`
/// at the closing `E`; `None` for a name the crate does not read (a length past the
/// end, or neither a length nor the `E`).
fn element_at(inner: &[u8], mut at: usize) -> Option<Option<(usize, usize)>> {
    match inner.get(at)? {
        b'E' => return Some(None),
        b'0'..=b'9' => {}
        _ => return None,
    }
    let mut len = 0usize;
    while let Some(d) = inner.get(at).filter(|b| b.is_ascii_digit()) {
        len = len.checked_mul(10)?.checked_add(usize::from(d - b'0'))?;
        at += 1;
    }
    let end = at.checked_add(len)?;
    // The crate also wants a byte after the text (the next length, or the `E`).
    (end < inner.len()).then_some(Some((at, end)))
}

/// `h` and hex digits, either case.
fn is_hash(element: &str) -> bool {
    element
        .strip_prefix('h')
        .is_some_and(|hex| hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// One path element, its escapes read: `..` is `::`, `$LT$` and the like are
/// punctuation, `$u7b$` a character. At an escape not read, the rest is written as it
/// is.
fn push_element(out: &mut String, element: &str) {
    let mut rest = if element.starts_with("_$") {
        &element[1..]
    } else {
        element
    };
    loop {
        if let Some(r) = rest.strip_prefix('.') {
            if let Some(r) = r.strip_prefix('.') {
                out.push_str("::");
                rest = r;
            } else {
                out.push('.');
                rest = r;
            }
        } else if let Some(r) = rest.strip_prefix('$') {
            let Some(end) = memchr::memchr(b'$', r.as_bytes()) else {
                break;
            };
            let (escape, after) = (&r[..end], &r[end + 1..]);
            match unescape(escape) {
                Some(c) => out.push(c),
                None => break,
            }
            rest = after;
        } else if let Some(i) = memchr::memchr2(b'$', b'.', rest.as_bytes()) {
            out.push_str(&rest[..i]);
            rest = &rest[i..];
        } else {
            break;
        }
    }
    out.push_str(rest);
}

/// The character a `$…$` escape stands for.
fn unescape(escape: &str) -> Option<char> {
    Some(match escape {
        "SP" => '@',
        "BP" => '*',
        "RF" => '&',
        "LT" => '<',
        "GT" => '>',
        "LP" => '(',
        "RP" => ')',
        "C" => ',',
        _ => {
            let digits = escape.strip_prefix('u')?;
            if !digits
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
            {
                return None;
            }
            let c = char::from_u32(u32::from_str_radix(digits, 16).ok()?)?;
            if c.is_control() {
                return None;
            }
            c
        }
    })
}

#[cfg(any(feature = "fuzzing", test))]
/// Panics unless `raw` is read here as rustc-demangle reads it: the same name, the same
/// hash dropped, or no name from either (for the tests and the fuzz targets).
pub(super) fn check(raw: &str) {
    let by_crate = rustc_demangle::try_demangle(raw).ok().map(|d| {
        let (full, short) = (format!("{d}"), format!("{d:#}"));
        Legacy {
            hash_dropped: full != short,
            text: short,
        }
    });
    assert_eq!(demangle(raw), by_crate, "{raw:?}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_what_rustc_emits() {
        let cases = [
            (
                "_ZN4core3ptr85drop_in_place$LT$std..rt..lang_start$LT$$LP$$RP$$GT$..$u7b$$u7b$closure$u7d$$u7d$$GT$17h0d1e2c3b4a596877E",
                "core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>",
            ),
            (
                "_ZN70_$LT$alloc..vec..Vec$LT$T$C$A$GT$$u20$as$u20$core..ops..drop..Drop$GT$4drop17h856e425729234e0bE",
                "<alloc::vec::Vec<T,A> as core::ops::drop::Drop>::drop",
            ),
            (
                "_ZN9dump_syms5cache11read_config28_$u7b$$u7b$closure$u7d$$u7d$17hc80808a40d232765E",
                "dump_syms::cache::read_config::{{closure}}",
            ),
            ("_ZN3foo3bar17h05af221e174051e9E.llvm.1234ABCD", "foo::bar"),
            ("_ZN3foo3barE.cold.1", "foo::bar.cold.1"),
            ("_ZN4test12$RF$$BP$$SP$E", "test::&*@"),
        ];
        for (raw, want) in cases {
            assert_eq!(
                demangle(raw).map(|d| d.text).as_deref(),
                Some(want),
                "{raw}"
            );
            check(raw);
        }
    }

    #[test]
    fn agrees_with_rustc_demangle_at_the_edges() {
        let cases = [
            "_ZN",
            "_ZNE",
            "_ZN0E",
            "_ZN3fooE",
            "_ZN3foo",
            "_ZN3fo",
            "_ZN3foo3barE",
            "_ZN3foo1hE",
            "_ZN3foo2hXE",
            "_ZN3foo4hABCE",
            "_ZN1h3fooE",
            "_ZN99999999999999999999999fooE",
            "_ZN3fooE ",
            "_ZN3fooEx",
            "_ZN3fooE.",
            "_ZN3fooE.a b",
            "_ZN3fooE.llvm.",
            "_ZN3fooE.llvm.12G",
            "_ZN3foo.llvm.12E",
            "_ZN3fooE.llvm.1.llvm.2",
            "_ZN3fooE.llvm.1.llvm.AB",
            "_ZN3fooE.llvm.AB.llvm.AB",
            "_ZN3fooE.llvm..llvm.AB",
            "_ZN3fooE.llvm.",
            "_ZN3foo3barE.llvm.",
            ".llvm.AB",
            "_ZN.llvm.AB",
            "_ZN4f\u{e9}oE",
            "_ZN3a.bE",
            "_ZN4a..bE",
            "_ZN2_$E",
            "_ZN3_$aE",
            "_ZN4$LT$E",
            "_ZN3$LTE",
            "_ZN5$XX$aE",
            "_ZN5$u$aaE",
            "_ZN6$u41$aE",
            "_ZN6$u7f$aE",
            "_ZN6$uAB$aE",
            "_ZN8$u+41$aaE",
            "_ZN14$u110000$aaaaE",
            "_ZN16$ud800$aaaaaaaaE",
            "_ZN13$u1f600$aaaaE",
            "_ZN30$u1111111111111111111111111$E",
            "_ZN1.E",
            "_ZN2..E",
            "_ZN1$E",
            "_ZN2$$E",
            "_ZN3$C$E",
            "_ZN17h0123456789abcdefE",
            "_ZN3foo17h0123456789abcdefE.cold",
        ];
        for raw in cases {
            check(raw);
        }
    }

    /// Names built from the pieces rustc writes, at random, compared with the crate's
    /// reading; a fixed seed, so a failure repeats.
    #[test]
    fn agrees_with_rustc_demangle() {
        let pieces = [
            "$LT$", "$GT$", "$C$", "$u20$", "$u7b$", "$u7d$", "$RF$", "$BP$", "$SP$", "$LP$",
            "$RP$", "$u27$", "..", ".", "$", "_", "_$", "h", "a", "Vec", "0", "9", "$u$", "$uZ$",
            "E", "\u{e9}", "$u1F600$", "$u1f600$",
        ];
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n as u64) as usize
        };
        let mut read = 0;
        for _ in 0..50_000 {
            let mut raw = String::from("_ZN");
            for _ in 0..next(5) {
                let mut element = String::new();
                for _ in 0..next(6) {
                    element.push_str(pieces[next(pieces.len())]);
                }
                if next(8) == 0 {
                    element = format!("h{:x}", next(usize::MAX));
                }
                // Now and then a length that is wrong.
                let len = element.len() + [0, 0, 0, 0, 1][next(5)];
                raw.push_str(&format!("{len}{element}"));
            }
            raw.push_str(["E", "E", "E.cold", "E.llvm.AB12", "", "Ex"][next(6)]);
            check(&raw);
            read += usize::from(demangle(&raw).is_some());
        }
        // Most names are read, not turned away alike by both.
        assert!(read > 15_000, "only {read} of 50,000 names read");
    }
}
