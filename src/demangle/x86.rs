//! The decorations 32-bit Windows compilers write into names for the calling
//! convention: `_f` (cdecl), `_f@8` (stdcall), `@f@8` (fastcall). Breakpad's Windows
//! dumper names functions as DIA undecorates them, without any of these. They belong to
//! x86 COFF alone: in ELF an `@` starts a symbol version, and x86-64 has one convention.

/// A name from an x86 COFF symbol table or a PDB's publics, which carry the leading
/// underscore of C names: `_f`, `_f@8` and `@f@8` are all `f`. GCC's C++ names come out
/// mangled (`__Z8std_calliii@12` is `_Z8std_calliii`); MSVC's (`?f@@YAHH@Z`) are left to
/// the demangler.
pub fn undecorate_symbol(name: &str) -> &str {
    if let Some(rest) = name.strip_prefix('_').or_else(|| name.strip_prefix('@')) {
        return without_byte_count(rest).unwrap_or(rest);
    }
    name
}

/// A name as the compiler writes it into DWARF or an export table, without the C
/// underscore: `f@8` (stdcall) and `@f@8` (fastcall) are `f`, `_Z8std_calliii@12` is
/// `_Z8std_calliii`, and `_f` stays `_f` (a C name that starts with an underscore).
pub fn undecorate_linkage(name: &str) -> &str {
    match without_byte_count(name) {
        Some(body) => body
            .strip_prefix('@')
            .filter(|b| !b.is_empty())
            .unwrap_or(body),
        None => name,
    }
}

/// `name` without its `@<bytes of arguments>` suffix, if it has one after a non-empty
/// name.
fn without_byte_count(name: &str) -> Option<&str> {
    let (body, count) = name.rsplit_once('@')?;
    let digits = !count.is_empty() && count.bytes().all(|b| b.is_ascii_digit());
    (digits && !body.is_empty() && body != "@").then_some(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_table_names() {
        assert_eq!(undecorate_symbol("_main"), "main");
        assert_eq!(undecorate_symbol("_WinMain@16"), "WinMain");
        assert_eq!(undecorate_symbol("@fast@8"), "fast");
        assert_eq!(undecorate_symbol("___dyn_tls_init@12"), "__dyn_tls_init");
        assert_eq!(undecorate_symbol("__Z8std_calliii@12"), "_Z8std_calliii");
        assert_eq!(undecorate_symbol("@_Z9fast_callii@8"), "_Z9fast_callii");
        assert_eq!(undecorate_symbol("?f@@YAHH@Z"), "?f@@YAHH@Z");
        assert_eq!(undecorate_symbol("_a@b"), "a@b");
        assert_eq!(undecorate_symbol("plain"), "plain");
    }

    #[test]
    fn linkage_names() {
        assert_eq!(undecorate_linkage("sc@8"), "sc");
        assert_eq!(undecorate_linkage("@fc@8"), "fc");
        assert_eq!(undecorate_linkage("__dyn_tls_init@12"), "__dyn_tls_init");
        assert_eq!(
            undecorate_linkage("_gnu_exception_handler@4"),
            "_gnu_exception_handler"
        );
        assert_eq!(undecorate_linkage("_Z8std_calliii@12"), "_Z8std_calliii");
        assert_eq!(undecorate_linkage("@_Z9fast_callii@8"), "_Z9fast_callii");
        assert_eq!(undecorate_linkage("f@0"), "f");
        for kept in ["_f", "main", "?f@@YAHH@Z", "a@b", "@8", "@@8", "f@", "@f"] {
            assert_eq!(undecorate_linkage(kept), kept);
        }
    }
}
