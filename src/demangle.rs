//! Turning linkage names into source-language names, and making any name safe to write.

/// The source language a name came from, when known (from `DW_AT_language`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    /// Rust.
    Rust,
    /// Anything else: C++ mangling is detected by its prefix.
    Other,
}

/// Demangles a linkage name: Rust (v0 and legacy, without the hash) or Itanium C++ (with
/// the parameter list, like Breakpad's dumper). Names that are not mangled, or that no
/// demangler accepts, come back unchanged.
pub fn demangle(raw: &str, lang: Lang) -> String {
    if (raw.starts_with("_R") || (raw.starts_with("_ZN") && lang == Lang::Rust))
        && let Ok(d) = rustc_demangle::try_demangle(raw)
    {
        return format!("{d:#}");
    }
    if raw.starts_with("_ZN") {
        // A legacy Rust symbol from a CU of unknown language, such as a symbol-table
        // entry: only take rustc-demangle's reading if it found the Rust hash, since plain
        // C++ names like `_ZN3foo3barE` parse as Rust too.
        if let Ok(d) = rustc_demangle::try_demangle(raw) {
            let (full, short) = (format!("{d}"), format!("{d:#}"));
            if full != short {
                return short;
            }
        }
    }
    if raw.starts_with("_Z")
        && let Ok(sym) = cpp_demangle::Symbol::new(raw.as_bytes())
        && let Ok(s) = sym.demangle()
    {
        return s;
    }
    raw.to_string()
}

/// Makes a name writable in a record: control characters (a newline would start a new
/// record) become spaces, surrounding white space goes. `None` when nothing is left.
pub fn sanitize(name: &str) -> Option<String> {
    let cleaned: String = name
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let trimmed = cleaned.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpp_names_keep_parameters() {
        assert_eq!(demangle("_ZN2ns3fooEi", Lang::Other), "ns::foo(int)");
        assert_eq!(demangle("_Z3barv", Lang::Other), "bar()");
        assert_eq!(
            demangle("_Z3fooi.cold", Lang::Other),
            "foo(int) [clone .cold]"
        );
    }

    #[test]
    fn rust_names_lose_the_hash() {
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE", Lang::Other),
            "core::fmt::write"
        );
        assert_eq!(
            demangle("_ZN4core3fmt5write17h0123456789abcdefE", Lang::Rust),
            "core::fmt::write"
        );
    }

    #[test]
    fn cpp_name_without_hash_is_not_taken_for_rust() {
        assert_eq!(demangle("_ZN3foo3barE", Lang::Other), "foo::bar");
    }

    #[test]
    fn plain_and_broken_names_pass_through() {
        assert_eq!(demangle("main", Lang::Other), "main");
        assert_eq!(demangle("_Z", Lang::Other), "_Z");
    }

    #[test]
    fn sanitize_removes_newlines_and_empties() {
        assert_eq!(sanitize("a\nb"), Some("a b".into()));
        assert_eq!(sanitize(" \t\n"), None);
    }
}
