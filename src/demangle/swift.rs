//! Swift names, read by Swift's own demangler.
//!
//! Swift's mangling changes with each language release, and only the compiler's
//! demangler keeps up: `symbolic-demangle` builds it (vendored from a Swift release)
//! with the C++ compiler the `cc` crate finds. It is called through a C++ guard
//! (`swift_guard.cpp`) that turns the exceptions it throws on some malformed names
//! into "cannot read", where they would otherwise abort the process.

use std::ffi::{CStr, CString, c_char, c_int};

// Linked for its native library alone (Swift's demangler, which the guard calls): no
// Rust item of it is used, and an unused crate would not be linked.
extern crate symbolic_demangle as _;

unsafe extern "C" {
    /// Writes the demangling of `symbol`, NUL-terminated, into `buffer`; 0 when the
    /// demangler cannot read it or the result does not fit.
    fn dumpsyms_demangle_swift(symbol: *const c_char, buffer: *mut c_char, len: usize) -> c_int;
}

/// The prefixes of the Swift manglings binaries carry: `$s` (Swift 5 and later), `$S`
/// and `_T0` (Swift 4), `$e` (Embedded Swift), and each of those with the underscore
/// Mach-O puts before every symbol. Swift 3's `_T` without the `0` is not among them:
/// no binary built since 2017 carries it, while `_T…` begins many C names.
const PREFIXES: [&str; 7] = ["$s", "_$s", "$S", "_$S", "_T0", "$e", "_$e"];

/// Longest demangled name kept: the longest Swift names in Apple's frameworks (SwiftUI's
/// generic view types) demangle to a few thousand bytes.
const MAX_DEMANGLED: usize = 64 << 10;

/// True for a name that starts like a Swift mangling.
pub fn is_swift(raw: &str) -> bool {
    PREFIXES.iter().any(|p| raw.starts_with(p))
}

/// `raw` as `swift demangle` prints it: module-qualified, with the parameter list and
/// result type, and with Swift's type sugar (`[Int]`, `Int?`); `None` when the
/// demangler cannot read it. In this process, behind the guard: what the helper
/// (`swift_helper.rs`) runs. Names that exhaust memory through malloc are beyond the
/// guard.
pub fn demangle_here(raw: &str) -> Option<String> {
    let symbol = CString::new(raw).ok()?;
    let mut buffer: Vec<u8> = Vec::with_capacity(MAX_DEMANGLED);
    // SAFETY: `symbol` is NUL-terminated; the callee writes at most `MAX_DEMANGLED`
    // bytes, the last a NUL, into the buffer's capacity, and only on success.
    let printed = unsafe {
        let out = buffer.as_mut_ptr().cast::<c_char>();
        (dumpsyms_demangle_swift(symbol.as_ptr(), out, MAX_DEMANGLED) != 0)
            .then(|| CStr::from_ptr(out).to_string_lossy().into_owned())
    }?;
    // On a name it cannot read, the demangler gives the name back unchanged.
    (!printed.is_empty() && printed != raw).then(|| super::swift_sugar::sweeten(&printed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_as_swift_demangle_prints_them() {
        assert_eq!(
            demangle_here("$s7example1fyyYaKF").as_deref(),
            Some("example.f() async throws -> ()")
        );
        // Mach-O's underscore, and Swift 4's two prefixes.
        for raw in [
            "$s4test6testitySiyt_tF",
            "_$s4test6testitySiyt_tF",
            "$S4test6testitySiyt_tF",
            "_T04test6testitSiyt_tF",
        ] {
            assert_eq!(
                demangle_here(raw).as_deref(),
                Some("test.testit(()) -> Swift.Int"),
                "{raw}"
            );
        }
        assert_eq!(
            demangle_here("_T08mangling14varargsVsArrayySaySiG3arrd_tF").as_deref(),
            Some("mangling.varargsVsArray(arr: [Swift.Int]...) -> ()")
        );
        assert_eq!(demangle_here("$syQo"), None);
        assert_eq!(demangle_here("$s"), None);
    }

    #[test]
    fn names_that_break_the_demangler_stay_raw() {
        // Swift 6.3.1's printer runs out of memory on the first, fails an assertion
        // on the second and calls abort() on the third (all caught by
        // swift_guard.cpp), each twice.
        for _ in 0..2 {
            assert_eq!(demangle_here("$sTJSdSSSpSrSUSP"), None);
            #[cfg(target_env = "gnu")]
            assert_eq!(demangle_here("$sScGySGySiGiGx"), None);
            #[cfg(target_env = "gnu")]
            assert_eq!(demangle_here("$sRv2__"), None);
        }
        // The demangler still reads names after them.
        assert_eq!(
            demangle_here("$s4test6testitySiyt_tF").as_deref(),
            Some("test.testit(()) -> Swift.Int")
        );
    }

    #[test]
    fn only_swift_prefixes_count() {
        for raw in ["$s4main", "_$s4main", "$S4main", "_T04main", "$e4main"] {
            assert!(is_swift(raw), "{raw}");
        }
        for raw in ["_TIFFOpen", "_T", "_Z3foov", "main", "-[Foo bar:]", "s$"] {
            assert!(!is_swift(raw), "{raw}");
        }
    }
}
