//! Substring and whitespace search over one line of a crash report.
//!
//! Every line is tried against some twenty shapes, each looking for a word or two of its
//! own (`pc `, `+0x`, ` (BuildId: `), so a line costs dozens of searches in a few dozen
//! bytes. `str::find` with a `&str` pattern builds a two-way searcher on every call, and
//! memchr's `memmem` hashes the needle and rolls a hash over every byte of a short
//! haystack: each costs more than such a search (a report of 3M lines spent an eighth,
//! then a fifth, of its time there). Here the needle's first byte is found by `memchr`
//! (SIMD) and the rest compared where it stands: the needles are short literals, so a
//! line of n bytes costs at most n times a needle's length even when every byte
//! matches the first. Both sides are UTF-8, so a match starts and ends on a character
//! boundary.

/// Where `needle` first occurs in `hay`.
pub fn find(hay: &str, needle: &str) -> Option<usize> {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = needle.split_first() else {
        return Some(0);
    };
    let last_start = hay.len().checked_sub(needle.len())?;
    memchr::memchr_iter(first, &hay[..=last_start]).find(|&at| hay[at + 1..].starts_with(rest))
}

/// Where `needle` last occurs in `hay`.
pub fn rfind(hay: &str, needle: &str) -> Option<usize> {
    let (hay, needle) = (hay.as_bytes(), needle.as_bytes());
    let Some((&first, rest)) = needle.split_first() else {
        return Some(hay.len());
    };
    let last_start = hay.len().checked_sub(needle.len())?;
    memchr::memrchr_iter(first, &hay[..=last_start]).find(|&at| hay[at + 1..].starts_with(rest))
}

/// Whether `needle` occurs in `hay`.
pub fn contains(hay: &str, needle: &str) -> bool {
    find(hay, needle).is_some()
}

/// `hay` around the first `needle`.
pub fn split_once<'a>(hay: &'a str, needle: &str) -> Option<(&'a str, &'a str)> {
    let at = find(hay, needle)?;
    Some((&hay[..at], &hay[at + needle.len()..]))
}

/// `hay` around the last `needle`.
pub fn rsplit_once<'a>(hay: &'a str, needle: &str) -> Option<(&'a str, &'a str)> {
    let at = rfind(hay, needle)?;
    Some((&hay[..at], &hay[at + needle.len()..]))
}

/// The parts of `hay` between its `separator`s (not empty), as `str::split` gives them.
pub fn split<'a>(hay: &'a str, separator: &'a str) -> impl Iterator<Item = &'a str> {
    let mut rest = Some(hay);
    std::iter::from_fn(move || {
        let text = rest?;
        match find(text, separator) {
            Some(at) => {
                rest = Some(&text[at + separator.len()..]);
                Some(&text[..at])
            }
            None => rest.take(),
        }
    })
}

/// Where the first whitespace character of `text` is, as `char::is_whitespace` tells
/// it. Reports are almost all ASCII words, and several shapes look for the end of a
/// line's first word, which on a line of one token is the whole line: eight bytes are
/// passed at a time while none is a space, a control byte or not ASCII (the bytes below
/// 0x21 hold ASCII's whitespace), and only from the first that may be are characters
/// decoded.
pub fn whitespace(text: &str) -> Option<usize> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let bytes = text.as_bytes();
    let mut from = 0;
    while let Some(chunk) = bytes.get(from..from + 8) {
        let word = u64::from_le_bytes(chunk.try_into().expect("eight bytes"));
        // A byte under 0x21 borrows through its high bit when 0x21 is taken from it;
        // a byte of 0x80 or more has the bit already.
        if (word.wrapping_sub(ONES * 0x21) | word) & HIGH != 0 {
            break;
        }
        from += 8;
    }
    for (i, &b) in bytes.iter().enumerate().skip(from) {
        if !b.is_ascii() {
            // The first byte that is not ASCII starts a character: all before it were
            // one byte each.
            return text[i..].find(char::is_whitespace).map(|j| i + j);
        }
        if matches!(b, b'\t' | b'\n' | 0x0b | 0x0c | b'\r' | b' ') {
            return Some(i);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_agree_with_str() {
        let lines = [
            "",
            "libc.so+0x1234",
            "#0 0x1 in f (/a b/app+0x10) (BuildId: ab)",
            "αβγ +0x λ+0x12 ends+0x",
            "+0x+0x+0x",
            &"x".repeat(200),
            &format!("{}+0xff", "é".repeat(40)),
        ];
        for line in lines {
            for needle in ["+0x", " (", "pc ", "é", "", "BuildId: "] {
                assert_eq!(find(line, needle), line.find(needle), "{line:?} {needle:?}");
                assert_eq!(
                    rfind(line, needle),
                    line.rfind(needle),
                    "{line:?} {needle:?}"
                );
                assert_eq!(split_once(line, needle), line.split_once(needle));
                assert_eq!(rsplit_once(line, needle), line.rsplit_once(needle));
                if !needle.is_empty() {
                    let ours: Vec<&str> = split(line, needle).collect();
                    assert_eq!(ours, line.split(needle).collect::<Vec<_>>());
                }
            }
        }
    }

    #[test]
    fn whitespace_is_unicodes() {
        for text in [
            "",
            "word",
            "word rest",
            "tab\there",
            "\u{b}vt",
            "\u{1c}not",
            "é\u{a0}nbsp",
            "ab\u{2003}em",
            "é\u{85}",
            "αβγ",
            "abcdefgh ijklmnop",
            "abcdefghijklmnop\u{2003}",
            "abcdefghijklmnopq\r",
            "abcdefgh!\"#$%&'()*+,-./0123456789:;<=>?@[]^_`{|}~\u{7f}z y",
            "abcdefgh\u{1f}\u{1c}\u{0}ijklmnopqrstuvwxyz0123 ",
        ] {
            assert_eq!(whitespace(text), text.find(char::is_whitespace), "{text:?}");
        }
    }
}
