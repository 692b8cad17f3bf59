//! Swift's type sugar on demangled names: `Swift.Array<Swift.Int>` as `[Swift.Int]`,
//! `Swift.Optional<T>` as `T?`, `Swift.Dictionary<K, V>` as `[K : V]`.
//!
//! `swift demangle` prints names with this sugar; the demangler built by
//! `symbolic-demangle` can only be asked for Swift's default options, which print
//! without it. This applies, to the printed name, the rules of Swift's `NodePrinter`
//! with `SynthesizeSugarOnTypes`: only the standard library's four types, only when
//! bound to all their arguments, and an optional's argument in parentheses unless it
//! is a simple type (not a function type, a protocol composition, a constrained or
//! opaque existential). Checked against Swift's own expectations in
//! `fixtures/swift/manglings.txt` (tests/it/swift.rs).

/// The sugared types: what follows `Swift.` and comes before `<`, and how many
/// arguments it takes.
const SUGARED: [(&str, usize); 4] = [
    ("Optional", 1),
    ("ImplicitlyUnwrappedOptional", 1),
    ("Array", 1),
    ("Dictionary", 2),
];

/// `printed` with Swift's type sugar, nested types included.
pub fn sweeten(printed: &str) -> String {
    if !printed.contains("Swift.") {
        return printed.to_string();
    }
    let mut out = String::with_capacity(printed.len());
    let mut rest = printed;
    while let Some(at) = next_sugared(rest) {
        let (before, from) = rest.split_at(at);
        out.push_str(before);
        match sugar_at(from) {
            Some((text, used)) => {
                out.push_str(&text);
                rest = &from[used..];
            }
            None => {
                out.push_str("Swift.");
                rest = &from["Swift.".len()..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Where the next `Swift.<sugared type><` starts as a name of its own (not the tail of
/// a longer qualified name).
fn next_sugared(text: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = text[from..].find("Swift.") {
        let at = from + i;
        let starts_name = text[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !(c.is_alphanumeric() || matches!(c, '_' | '.' | '$' | '`')));
        let after = &text[at + "Swift.".len()..];
        if starts_name
            && SUGARED
                .iter()
                .any(|(name, _)| after.strip_prefix(name).is_some_and(|r| r.starts_with('<')))
        {
            return Some(at);
        }
        from = at + "Swift.".len();
    }
    None
}

/// The sugared form of the bound type `text` starts with, and the bytes it replaces;
/// `None` when the arguments do not close or do not number what the type takes.
fn sugar_at(text: &str) -> Option<(String, usize)> {
    let after = &text["Swift.".len()..];
    let open = after.find('<')?;
    let name = &after[..open];
    let count = SUGARED.iter().find(|(n, _)| *n == name)?.1;
    let args_start = "Swift.".len() + open + 1;
    let close = args_start + closing_angle(&text[args_start..])?;
    let args: Vec<String> = split_top_level(&text[args_start..close])
        .into_iter()
        .map(sweeten)
        .collect();
    if args.len() != count {
        return None;
    }
    let sugared = match name {
        "Optional" => format!("{}?", parenthesized(&args[0])),
        "ImplicitlyUnwrappedOptional" => format!("{}!", parenthesized(&args[0])),
        "Array" => format!("[{}]", args[0]),
        _ => format!("[{} : {}]", args[0], args[1]),
    };
    Some((sugared, close + 1))
}

/// The offset of the `>` that closes an argument list whose `<` came just before
/// `text`. The `>` of ` -> ` closes nothing.
fn closing_angle(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' | b'}' => {
                if depth == 0 {
                    return (b == b'>').then_some(i);
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    None
}

/// `args` split at its top-level `, `.
fn split_top_level(args: &str) -> Vec<&str> {
    let bytes = args.as_bytes();
    let (mut depth, mut start, mut parts) = (0usize, 0, Vec::new());
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 && bytes.get(i + 1) == Some(&b' ') => {
                parts.push(&args[start..i]);
                start = i + 2;
            }
            _ => {}
        }
    }
    parts.push(&args[start..]);
    parts
}

/// An optional's argument as Swift prints it: in parentheses unless it is a simple
/// type (`NodePrinter::isSimpleType`).
fn parenthesized(arg: &str) -> String {
    if is_simple(arg) {
        arg.to_string()
    } else {
        format!("({arg})")
    }
}

/// False for what Swift's printer counts as not simple: function types (with or
/// without attributes), protocol compositions, constrained existentials (`any P<…>`)
/// and opaque types.
fn is_simple(arg: &str) -> bool {
    const NOT_SIMPLE_STARTS: [&str; 4] = ["@", "any ", "some ", "<<opaque"];
    if NOT_SIMPLE_STARTS.iter().any(|s| arg.starts_with(s)) {
        return false;
    }
    let bytes = arg.as_bytes();
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'<' | b'(' | b'[' | b'{' => depth += 1,
            // A top-level ` -> `: a function type.
            b'>' if i > 0 && bytes[i - 1] == b'-' && depth == 0 => return false,
            b'>' if i > 0 && bytes[i - 1] == b'-' => {}
            b'>' | b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'&' if depth == 0 => return false,
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_four_types_are_sweetened() {
        for (plain, sweet) in [
            ("f(Swift.Array<Swift.Int>)", "f([Swift.Int])"),
            (
                "f() -> Swift.Optional<Swift.String>",
                "f() -> Swift.String?",
            ),
            ("f(Swift.ImplicitlyUnwrappedOptional<A>)", "f(A!)"),
            (
                "f(Swift.Dictionary<Swift.String, Swift.Array<Swift.Int>>)",
                "f([Swift.String : [Swift.Int]])",
            ),
            (
                "f(Swift.Optional<Swift.Array<Swift.Optional<Swift.Int>>>)",
                "f([Swift.Int?]?)",
            ),
            (
                "(extension in t):Swift.Dictionary<A, B>.Index2",
                "(extension in t):[A : B].Index2",
            ),
            ("f(Swift.Optional<() -> ()>)", "f((() -> ())?)"),
            ("f(Swift.Optional<a.P & a.Q>)", "f((a.P & a.Q)?)"),
            (
                "f(Swift.Optional<@escaping (A) -> B>)",
                "f((@escaping (A) -> B)?)",
            ),
        ] {
            assert_eq!(sweeten(plain), sweet, "{plain}");
        }
    }

    #[test]
    fn other_names_are_left_alone() {
        for name in [
            "Swift.Array.append(A) -> ()",
            "Swift.Array<A>",
            "my.Swift.Array<A>",
            "Swift.Set<Swift.Int>",
            "Swift.Dictionary<A>",
            "Swift.Array<A",
            "Swift.Optional<A, B>",
            "f(Swift.Array<(A) -> B>)",
        ] {
            let expected = match name {
                "Swift.Array<A>" => "[A]".to_string(),
                "f(Swift.Array<(A) -> B>)" => "f([(A) -> B])".to_string(),
                _ => name.to_string(),
            };
            assert_eq!(sweeten(name), expected, "{name}");
        }
    }
}
