//! Turning linkage names into source-language names, and making any name safe to write.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, Mutex};

use rustc_hash::FxHasher;

pub(crate) mod across;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod gnu;
mod rust_legacy;
pub mod swift;
pub mod swift_helper;
mod swift_sugar;
pub mod x86;

pub use swift::is_swift;

/// The source language a name came from, when known (from `DW_AT_language`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Lang {
    /// Rust.
    Rust,
    /// Anything else: C++ mangling is detected by its prefix.
    Other,
}

/// Demangles a linkage name: Rust (v0 and legacy, without the hash), Itanium C++ (with
/// the parameter list, like Breakpad's dumper), MSVC C++, or Swift (as `swift demangle`
/// prints it, like Mozilla's dumper). C++ names are read by GNU's demangler
/// where the platform's C++ runtime has it (glibc Linux), so that they read as `c++filt`
/// and Breakpad show them, else (and for what GNU's rejects) by cpp_demangle. Names that
/// are not mangled, that no demangler accepts, or that nest deeper than a demangler may
/// go ([`too_deep`]) come back unchanged.
///
/// Every demangler here recurses once per level of nesting in the name, and a crafted
/// name (4,000 nested template arguments, a 21,000-long pointer chain) overflowed the
/// stack, which aborts the process. Each runs on a stack grown to what its input can
/// need (`stack_for`), whatever thread calls, so a library caller's small thread is
/// as safe as the CLI's workers.
pub fn demangle(raw: &str, lang: Lang) -> String {
    if too_deep(raw) {
        return raw.to_string();
    }
    // Swift's demangler runs in the helper process, on the stack it grows there
    // (`swift_helper::serve`): here a Swift name only costs a round trip.
    if is_swift(raw) {
        // Only a helper process reads Swift names: in a process that started none, they
        // stay raw.
        return swift_helper::demangle(raw)
            .flatten()
            .unwrap_or_else(|| raw.to_string());
    }
    let need = stack_for(raw);
    stacker::maybe_grow(need, need, || demangle_unbounded(raw, lang))
}

/// Readies on this thread, in one go, what [`demangle`] will answer for the names among
/// `names` that GNU's demangler is only given on a watched helper thread (see
/// `gnu::demangle`), until [`forget_ahead`]: asked one at a time, each costs two thread
/// wake-ups.
pub(crate) fn demangle_ahead(names: Vec<String>) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    gnu::demangle_ahead(names);
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    drop(names);
}

/// Drops what [`demangle_ahead`] readied on this thread.
pub(crate) fn forget_ahead() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    gnu::forget_ahead();
}

/// Longest MSVC decorated name read. The compiler itself never writes a longer one (it
/// replaces it by a hash, `??@…@`), and within it the nesting is what the stack
/// allowance below covers.
const MSVC_MAX_LEN: usize = 4096;

/// Longest Itanium or Rust name read: beyond it, names are crafted, not compiled (the
/// longest in ceph-osd, a heavy template user, is 5,200 bytes).
const MAX_LEN: usize = 64 << 10;

/// True for a mangled name no demangler is given, because it is longer than any
/// compiler writes (and could nest deep enough to exhaust any stack): it stays raw, and
/// the dump says how many did ([`crate::options::Dump::warnings`]).
pub fn too_deep(raw: &str) -> bool {
    if raw.starts_with('?') {
        raw.len() > MSVC_MAX_LEN
    } else if looks_mangled(raw) {
        raw.len() > MAX_LEN
    } else {
        false
    }
}

/// The stack a demangler may need for `raw`. Each byte of a name opens at most one
/// level of nesting. A level costs the MSVC demangler up to ~5 KiB of stack in an
/// unoptimized build (measured: a pointer chain of 200 levels overflowed 2 MiB); GNU's
/// parses into arrays of ~72 bytes per byte of name and recurses once per level;
/// cpp_demangle stops at 128 levels and rustc-demangle at 500; Swift's recurses once per
/// level while parsing (a 63 KB name nested 21,000 deep needed 4 to 8 MiB optimized:
/// `deep_swift_names_stay_on_the_stack`). On the CLI's 8 MiB
/// workers a name of up to a few KiB needs no new stack, so the common case costs a
/// comparison.
pub(super) fn stack_for(raw: &str) -> usize {
    let debug = cfg!(debug_assertions);
    if raw.starts_with('?') {
        let per_byte = if debug { 8 << 10 } else { 2 << 10 };
        raw.len() * per_byte + (64 << 10)
    } else if is_swift(raw) && debug {
        raw.len() * SWIFT_DEBUG_PER_BYTE + (4 << 20)
    } else {
        raw.len() * 256 + if debug { 4 << 20 } else { 512 << 10 }
    }
}

/// Swift's demangler compiled without optimization (debug builds of dumpsyms) uses
/// larger frames: the 63 KB name of `deep_swift_names_stay_on_the_stack` overflowed at
/// 1 KiB a byte and not at 4.
const SWIFT_DEBUG_PER_BYTE: usize = 4 << 10;

fn demangle_unbounded(raw: &str, lang: Lang) -> String {
    if raw.starts_with("_R")
        && let Ok(d) = rustc_demangle::try_demangle(raw)
    {
        let mut name = String::with_capacity(raw.len());
        // Writing to a String cannot fail.
        let _ = write!(name, "{d:#}");
        return name;
    }
    // A legacy Rust symbol from a CU of unknown language, such as a symbol-table
    // entry, is only taken as Rust where the Rust hash was found, since plain C++ names
    // like `_ZN3foo3barE` parse as Rust too.
    if raw.starts_with("_ZN")
        && let Some(d) = rust_legacy::demangle(raw)
        && (lang == Lang::Rust || d.hash_dropped)
    {
        return d.text;
    }
    if raw.starts_with('?') {
        return msvc(raw).unwrap_or_else(|| raw.to_string());
    }
    if !raw.starts_with("_Z") {
        return raw.to_string();
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if let Some(d) = gnu::demangle(raw) {
        return d;
    }
    // cpp_demangle bounds its own nesting (96 levels parsing, 128 printing).
    if let Ok(sym) = cpp_demangle::Symbol::new(raw.as_bytes())
        && let Ok(s) = sym.demangle()
    {
        return s;
    }
    raw.to_string()
}

#[cfg(any(feature = "fuzzing", test))]
/// Panics unless the legacy Rust reader reads `raw` as rustc-demangle does (for the
/// fuzz targets).
pub fn check_rust_legacy(raw: &str) {
    rust_legacy::check(raw);
}

/// An MSVC decorated name (`?f@ns@@YAHH@Z`) as a function name, spelled as both Windows
/// dumpers write it (crash services group crashes by these names): scope, name and
/// parameters with the const of methods, `*` and `&` against their type (`C const&`,
/// `void*`), `()` for no parameters, no return type, calling convention or
/// `struct`/`class` keyword. These are Mozilla's dumper's flags (through symbolic), and
/// its names are the DIA-based Breakpad dumper's on the same PDBs.
fn msvc(raw: &str) -> Option<String> {
    use msvc_demangler::DemangleFlags as F;
    let flags = F::COMPLETE
        | F::SPACE_AFTER_COMMA
        | F::HUG_TYPE
        | F::NO_MS_KEYWORDS
        | F::NO_CLASS_TYPE
        | F::NO_FUNCTION_RETURNS;
    msvc_demangler::demangle(raw, flags)
        .ok()
        .filter(|d| !d.is_empty())
        .map(|d| msvc_anonymous_namespace(&d))
}

/// MSVC's `` `anonymous namespace' `` as the other compilers, and both Windows dumpers,
/// write it: `(anonymous namespace)`.
pub(crate) fn msvc_anonymous_namespace(name: &str) -> String {
    name.replace("`anonymous namespace'", "(anonymous namespace)")
}

/// True for a name that starts like a Rust, Itanium C++ or Swift mangling (what a
/// linkage name in DWARF or an ELF or Mach-O symbol may be).
pub fn looks_mangled(raw: &str) -> bool {
    raw.starts_with("_Z") || raw.starts_with("_R") || is_swift(raw)
}

type FxBuild = BuildHasherDefault<FxHasher>;

/// 128-bit hash of a mangled name -> demangled name, and the bytes the entries hold.
///
/// Keyed by hash rather than by the mangled name, which is often longer than the
/// demangled one and was most of the cache's memory. Two of a module's names colliding
/// in 128 bits is beyond any real input, and a crafted file could at worst swap the
/// names of two of its own functions, which it could as well name anything.
type Shard = Mutex<(HashMap<u128, Arc<str>, FxBuild>, usize)>;

/// What the cache may hold, in name bytes plus a per-entry allowance, across all
/// shards. A shard that outgrows its share is emptied: memory stays bounded whatever
/// the input, and names that keep recurring (a header's inline functions, met in every
/// unit) come straight back. Most values are shared with the INLINE_ORIGIN table, so
/// this overstates what the cache adds.
const BUDGET: usize = 48 << 20;
const ENTRY_OVERHEAD: usize = 48;

/// Locks the cache is split over, so that workers rarely wait for each other.
const SHARDS: usize = 16;

/// Demangled names shared by every worker of a dump. A C++ header's inline functions
/// are named again in each unit that inlines them, so with `--inlines` the same names
/// would otherwise be demangled hundreds of times (a fifth of a large dump's time).
#[derive(Default)]
pub struct Cache {
    /// The names are an x86 COFF image's: they may carry stdcall and fastcall
    /// decorations ([`x86::undecorate_linkage`]).
    x86_coff: bool,
    /// By language (names from Rust units are read as Rust first), then by hash.
    shards: [[Shard; SHARDS]; 2],
}

impl Cache {
    /// A cache for the linkage names of one image; `x86_coff` for a 32-bit x86 PE.
    pub fn new(x86_coff: bool) -> Self {
        Cache {
            x86_coff,
            ..Cache::default()
        }
    }

    /// `raw` without the calling-convention decoration of its image's names, if any:
    /// what [`Cache::demangle`] is to be given.
    pub fn undecorate<'r>(&self, raw: &'r str) -> &'r str {
        if self.x86_coff {
            x86::undecorate_linkage(raw)
        } else {
            raw
        }
    }

    /// [`demangle`], once per distinct name while the budget allows.
    pub fn demangle(&self, raw: &str, lang: Lang) -> Arc<str> {
        if !looks_mangled(raw) {
            return raw.into();
        }
        let key = xxhash_rust::xxh3::xxh3_128(raw.as_bytes());
        let shard = &self.shards[usize::from(lang == Lang::Rust)][key as usize % SHARDS];
        // A poisoned lock only means another worker panicked; the map is still valid.
        if let Some(hit) = shard.lock().unwrap_or_else(|e| e.into_inner()).0.get(&key) {
            return hit.clone();
        }
        // Demangled outside the lock: two workers may both do it once, harmlessly.
        let value: Arc<str> = demangle(raw, lang).into();
        let cost = value.len() + ENTRY_OVERHEAD;
        let mut guard = shard.lock().unwrap_or_else(|e| e.into_inner());
        let (map, bytes) = &mut *guard;
        *bytes += cost;
        if *bytes > BUDGET / (2 * SHARDS) {
            map.clear();
            map.shrink_to_fit();
            *bytes = cost;
        }
        map.insert(key, value.clone());
        value
    }
}

/// `bytes` as text, invalid UTF-8 replaced. Valid text (nearly all) is checked by
/// `str::from_utf8`, whose ASCII fast path `String::from_utf8_lossy` lacks: that scan
/// was 1.6% of a large C++ dump with `--inlines`, on the demangler's output alone.
pub(crate) fn utf8_lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(s) => std::borrow::Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

/// Whether `name` has a control character: C0, DEL, or C1, which UTF-8 starts with
/// 0xC2. Checked a block at a time without stopping early, so that the compiler can
/// compare many bytes at once: names run to hundreds of bytes, and a byte-by-byte
/// search was 1.7% of a large C++ dump with `--inlines`.
fn has_control(name: &str) -> bool {
    name.as_bytes().chunks(64).any(|block| {
        block.iter().fold(false, |hit, &b| {
            hit | (b < 0x20) | (b == 0x7f) | (b == 0xc2)
        })
    })
}

/// [`sanitize`] for a shared name: a clean one is returned as it is, not copied.
pub fn sanitize_shared(name: Arc<str>) -> Option<Arc<str>> {
    if !has_control(&name) && !name.is_empty() && name.trim().len() == name.len() {
        return Some(name);
    }
    sanitize(&name).map(Arc::from)
}

/// Makes a name writable in a record: control characters (a newline would start a new
/// record) become spaces, surrounding white space goes. `None` when nothing is left.
pub fn sanitize(name: &str) -> Option<String> {
    // Almost every name has no control character: it only needs trimming.
    if !has_control(name) {
        let trimmed = name.trim();
        return (!trimmed.is_empty()).then(|| trimmed.to_string());
    }
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
    fn control_characters_are_found_anywhere_in_a_long_name() {
        let base = "ns::f(int) const".repeat(20);
        assert!(!has_control(&base));
        for bad in ['\n', '\u{7f}', '\u{85}', '\0'] {
            for at in [0, 1, 63, 64, 65, 127, 128, base.len()] {
                let mut name = base.clone();
                name.insert(at, bad);
                assert!(has_control(&name), "{bad:?} at {at}");
                assert_eq!(sanitize(&name).map(|n| n.contains(bad)), Some(false));
            }
        }
        // Other non-ASCII text is not control: 0xC3 starts 'é', 0xE2 starts '→'.
        assert!(!has_control("café→"));
        assert_eq!(utf8_lossy(b"ok\xffok"), "ok\u{fffd}ok");
        assert_eq!(utf8_lossy("é".as_bytes()), "é");
    }

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
    fn the_cache_gives_what_demangle_gives() {
        let cache = Cache::default();
        for (raw, lang) in [
            ("_ZN2ns3fooEi", Lang::Other),
            ("_ZN2ns3fooEi", Lang::Other),
            ("_ZN3foo3barE", Lang::Rust),
            ("_ZN3foo3barE", Lang::Other),
            ("main", Lang::Other),
            ("_Zjunk", Lang::Other),
        ] {
            assert_eq!(&*cache.demangle(raw, lang), demangle(raw, lang));
        }
    }

    #[test]
    fn x86_coff_names_lose_their_decoration_first() {
        let coff = Cache::new(true);
        let elf = Cache::default();
        for (raw, name) in [
            ("_Z8std_calliii@12", "std_call(int, int, int)"),
            ("@_Z9fast_callii@8", "fast_call(int, int)"),
            ("sc@8", "sc"),
        ] {
            assert_eq!(&*coff.demangle(coff.undecorate(raw), Lang::Other), name);
            // In ELF an `@` starts a symbol version: the name is left as it is.
            assert_eq!(elf.undecorate(raw), raw);
        }
    }

    #[test]
    fn swift_names_stay_raw_without_a_helper() {
        let cache = Cache::default();
        assert_eq!(
            &*cache.demangle("$s7example1fyyYaKF", Lang::Other),
            "$s7example1fyyYaKF"
        );
    }

    #[test]
    fn sanitize_removes_newlines_and_empties() {
        assert_eq!(sanitize("a\nb"), Some("a b".into()));
        assert_eq!(sanitize(" \t\n"), None);
        assert_eq!(sanitize(" f\u{85}g "), Some("f g".into()));
        assert_eq!(sanitize(" é(int) "), Some("é(int)".into()));
        for s in ["f", " f ", "a\nb", "", " ", "é\u{85}"] {
            assert_eq!(
                sanitize_shared(s.into()).as_deref(),
                sanitize(s).as_deref(),
                "{s:?}"
            );
        }
    }
}

#[cfg(test)]
mod msvc_tests {
    use super::*;

    #[test]
    fn msvc_names_read_as_the_windows_dumpers_write_them() {
        assert_eq!(demangle("?recurse@@YAHH@Z", Lang::Other), "recurse(int)");
        assert_eq!(
            demangle("?dot@?$Vec@H@geo@@QEBAHAEBU12@@Z", Lang::Other),
            "geo::Vec<int>::dot(geo::Vec<int> const&) const"
        );
        // A public of no parameters: `(void)`, as both Windows dumpers write publics.
        assert_eq!(
            demangle("?area@Sq@geo@@UEBAHXZ", Lang::Other),
            "geo::Sq::area(void) const"
        );
        assert_eq!(
            demangle("??3@YAXPEAX@Z", Lang::Other),
            "operator delete(void*)"
        );
        assert_eq!(
            demangle("?f@?A0x1234@@YAXXZ", Lang::Other),
            "(anonymous namespace)::f(void)"
        );
        assert_eq!(demangle("?bad", Lang::Other), "?bad");
        assert_eq!(demangle("plain@12", Lang::Other), "plain@12");
    }
}

#[cfg(test)]
mod swift_stack_tests {
    use super::*;

    /// Swift names nested as deep as their length allows, demangled on a thread with a
    /// small stack: the stack is grown to what `stack_for` allows, and that must hold.
    #[test]
    fn deep_swift_names_stay_on_the_stack() {
        for (open, inner, close) in [
            ("Say", "Si", "G"),
            ("Sq", "Si", ""),
            ("y", "Si", "c"),
            ("T", "Si", "_t"),
        ] {
            for depth in [100, 1_000, 10_000, 21_000] {
                let name = format!(
                    "$s1a1fyy{}{}{}F",
                    open.repeat(depth),
                    inner,
                    close.repeat(depth)
                );
                // As the helper process runs it (swift_helper::serve).
                let out = std::thread::Builder::new()
                    .stack_size(256 << 10)
                    .spawn(move || {
                        let need = stack_for(&name);
                        stacker::maybe_grow(need, need, || swift::demangle_here(&name))
                    })
                    .unwrap()
                    .join()
                    .unwrap();
                // Reaching here is the test (an overflow ends the process); beyond the
                // printer's 768 levels a name may stay raw.
                assert!(
                    depth > 100 || open != "Say" || out.is_some(),
                    "{open} x {depth}"
                );
            }
        }
    }
}
