//! Swift names as Swift's own demangler prints them (`swift demangle`), checked against
//! Swift's test expectations: every Swift 4-and-later line of Swift's
//! `test/Demangle/Inputs/manglings.txt` (fixtures/swift/README.md gives the commit), and
//! the symbol tables of an ELF shared object and a Mach-O dylib that name one function
//! for each of those manglings (fixtures/swift/make.sh), dumped end to end.
//!
//! The lines where our demangler (Swift 6.3.1's, through `symbolic-demangle`) prints
//! something else are listed, each with its reason, in
//! fixtures/swift/known-differences.txt: the test fails on a new difference and on a
//! listed one that went away.

use std::collections::BTreeMap;

use crate::common::*;
use dumpsyms::fuzzing::internals::demangle_swift_here;

/// Swift's demangler in this process, for Swift's test lines (none of which exhausts
/// memory through malloc, which only the helper process contains).
fn demangle(raw: &str) -> String {
    demangle_swift_here(raw).unwrap_or_else(|| raw.to_string())
}

/// Dumps in this process hand Swift names to the command's helper, as `dumpsyms` does.
fn isolate() {
    dumpsyms::swift_demangler(Some(env!("CARGO_BIN_EXE_dumpsyms").into()));
}

fn swift_dir() -> std::path::PathBuf {
    fixtures().join("swift")
}

/// One line of manglings.txt: the mangled name and what Swift prints for it.
struct Case {
    mangled: String,
    expected: String,
}

impl Case {
    /// Swift's test file leaves unreadable names as they are.
    fn readable(&self) -> bool {
        self.expected != self.mangled
    }
}

/// The lines in Swift's test form (`mangled ---> demangled`); the test annotations
/// (`{T:…}`, `{C}`) before the name are not part of it.
fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(swift_dir().join("manglings.txt")).unwrap();
    text.lines()
        .filter_map(|line| {
            let (mangled, expected) = line.split_once(" ---> ")?;
            let expected = match expected.strip_prefix('{') {
                Some(rest) => rest.split_once("} ").map_or(expected, |(_, name)| name),
                None => expected,
            };
            Some(Case {
                mangled: mangled.trim().to_string(),
                expected: expected.to_string(),
            })
        })
        .collect()
}

/// Mangled name -> why we print it otherwise.
fn known_differences() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(swift_dir().join("known-differences.txt")).unwrap();
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (mangled, why) = l.split_once('\t').expect("mangled<TAB>reason");
            (mangled.to_string(), why.to_string())
        })
        .collect()
}

/// True when Swift names code with this line (a function, method, accessor,
/// initializer, closure, thunk, specialization or partial function), not data
/// (metadata, descriptors, witness tables, records, variables, function pointers) or a
/// bare type.
fn names_code(expected: &str) -> bool {
    const DATA: [&str; 25] = [
        "type metadata",
        "full type metadata",
        "nominal type descriptor",
        "protocol descriptor",
        "protocol conformance descriptor",
        "opaque type descriptor",
        "associated type descriptor",
        "associated conformance descriptor",
        "protocol requirements base descriptor",
        "method descriptor",
        "reflection metadata",
        "protocol witness table for",
        "generic protocol witness table",
        "lazy protocol witness table cache",
        "value witness table",
        "async function pointer",
        "coro function pointer",
        "demangling cache variable",
        "accessible function runtime record",
        "concrete protocol conformance",
        "reverse-mode differentiability witness",
        "outlined variable",
        "outlined read-only object",
        "freestanding macro expansion",
        "unique name",
    ];
    const CODE: [&str; 11] = [
        "protocol witness for",
        "method witness for",
        "thunk",
        "forwarder",
        "accessor",
        "outlined ",
        "key path getter",
        "initializer",
        "query for",
        "specialization",
        "partial function",
    ];
    const ACCESSORS: [&str; 11] = [
        ".getter",
        ".setter",
        ".modify",
        ".read",
        ".modify2",
        ".read2",
        ".yielding_mutate",
        ".yielding_borrow",
        ".didset",
        ".willset",
        "Addressor",
    ];
    let mut name = expected;
    for prefix in ["@objc ", "@nonobjc ", "static "] {
        name = name.strip_prefix(prefix).unwrap_or(name);
    }
    if (name.starts_with(['@', '(', '[', '<']) && !name.starts_with("(extension in"))
        || name.starts_with("Builtin.")
        || DATA.iter().any(|d| name.starts_with(d))
    {
        return name.contains(") suspend resume") || name.contains(") await resume");
    }
    if CODE.iter().any(|c| name.contains(c)) {
        return true;
    }
    // A local type: `Name #1 in …`.
    if let Some((word, rest)) = name.split_once(" #")
        && !word.contains(' ')
        && rest
            .split_once(' ')
            .is_some_and(|(n, r)| n.bytes().all(|b| b.is_ascii_digit()) && r.starts_with("in "))
    {
        return false;
    }
    // `name : type` is a variable, unless the name is an accessor's.
    if let Some((head, _)) = name.split_once(" : ") {
        if ACCESSORS.iter().any(|a| head.ends_with(a)) {
            return true;
        }
        if !head.contains(' ') {
            return false;
        }
    }
    name.contains(") -> ")
        || name.contains(") async")
        || name.contains(") throws")
        || name.ends_with("deinit")
}

#[test]
fn every_swift_4_and_later_line_of_swifts_test_suite() {
    let cases = cases();
    let known = known_differences();
    let mut unexpected = Vec::new();
    let mut seen_known = Vec::new();
    // (exact, total) for code symbols, other symbols and types, unreadable names.
    let (mut code, mut other, mut raw) = ((0, 0), (0, 0), (0, 0));
    for case in &cases {
        let ours = demangle(&case.mangled);
        let exact = ours == case.expected;
        let tally = if !case.readable() {
            &mut raw
        } else if names_code(&case.expected) {
            &mut code
        } else {
            &mut other
        };
        tally.0 += usize::from(exact);
        tally.1 += 1;
        match (exact, known.get(&case.mangled)) {
            (true, Some(_)) => unexpected.push(format!("{}: now matches; unlist it", case.mangled)),
            (false, None) => unexpected.push(format!(
                "{}\n  Swift: {}\n  ours:  {ours}",
                case.mangled, case.expected
            )),
            (false, Some(_)) => seen_known.push(case.mangled.clone()),
            (true, None) => {}
        }
    }
    eprintln!(
        "manglings.txt, Swift 4+ lines: function symbols {}/{} exact, other symbols and \
         types {}/{}, unreadable names left raw {}/{}",
        code.0, code.1, other.0, other.1, raw.0, raw.1
    );
    for mangled in known.keys().filter(|k| !seen_known.contains(k)) {
        unexpected.push(format!(
            "{mangled}: listed as a difference but not in manglings.txt"
        ));
    }
    assert!(unexpected.is_empty(), "{}", unexpected.join("\n"));
    assert!(
        code.1 >= 150 && raw.1 >= 20,
        "too few lines: {code:?} {raw:?}"
    );
}

/// The names of a fixture's PUBLIC records, in address order.
fn public_names(file: &str) -> Vec<String> {
    isolate();
    let sym = parse(&dump_text(
        &swift_dir().join(file),
        &dumpsyms::Options::default(),
    ));
    assert!(sym.funcs.is_empty(), "{file}: no debug info, so no FUNC");
    let mut publics = sym.publics.clone();
    publics.sort_by_key(|p| p.0);
    publics.into_iter().map(|p| p.1).collect()
}

/// What the symbol table's PUBLIC record must say for each mangled name, in the
/// fixture's order: Swift's expectation, or for a known difference our demangler's
/// reading.
fn expected_publics(macho: bool) -> Vec<(String, String)> {
    let known = known_differences();
    let mut names: Vec<(String, String)> = Vec::new();
    for case in cases() {
        if names.iter().any(|(m, _)| *m == case.mangled) || (!macho && case.mangled.contains('@')) {
            continue;
        }
        let expected = if known.contains_key(&case.mangled) {
            demangle(&case.mangled)
        } else if !case.readable() && macho && case.mangled.starts_with("_$") {
            // Stored as it is (fixtures/swift/make.sh), then read without the underscore.
            case.mangled[1..].to_string()
        } else {
            case.expected.clone()
        };
        names.push((case.mangled, expected));
    }
    names
}

#[test]
fn elf_and_macho_symbol_tables_are_named_as_swift_names_them() {
    for (file, macho) in [("libswiftnames.so", false), ("libswiftnames.dylib", true)] {
        let publics = public_names(file);
        let expected = expected_publics(macho);
        assert!(expected.len() >= 200, "{file}: {} names", expected.len());
        assert!(
            publics.len() >= expected.len(),
            "{file}: {} PUBLIC",
            publics.len()
        );
        for ((mangled, want), got) in expected.iter().zip(&publics) {
            assert_eq!(got, want, "{file}: {mangled}");
        }
        // Names that break Swift 6.3.1's demangler (fixtures/swift/make.sh) stay raw.
        let rest = &publics[expected.len()..];
        let crafted = ["$sScGySGySiGiGx", "$sRv2__"];
        assert_eq!(rest[..crafted.len()], crafted, "{file}");
        let rest = &rest[crafted.len()..];
        if macho {
            // Objective-C names as the symbol table has them (less the C underscore of
            // the block's), then a C++ name demangled as before.
            assert_eq!(
                rest,
                [
                    "-[Foo bar:]",
                    "+[Foo baz]",
                    "__29-[Foo bar:]_block_invoke",
                    "-[Foo .cxx_destruct]",
                    "foo::bar()"
                ]
            );
        } else {
            assert!(rest.is_empty(), "{file}: {rest:?}");
        }
    }
}

#[test]
fn names_swifts_demangler_cannot_read_are_counted() {
    isolate();
    let dump = dumpsyms::dump(
        &swift_dir().join("libswiftnames.so"),
        &dumpsyms::Options::default(),
    )
    .unwrap();
    let raw = dump
        .module
        .publics
        .iter()
        .filter(|p| {
            p.name.starts_with('$') || p.name.starts_with("_$") || p.name.starts_with("_T0")
        })
        .count();
    assert!(raw > 10, "{raw}");
    let message =
        format!("{raw} Swift name(s) left mangled: Swift's demangler could not read them");
    assert!(
        dump.warnings.iter().any(|w| w.message == message),
        "{:?}",
        dump.warnings.iter().map(|w| &w.message).collect::<Vec<_>>()
    );
}

/// The command demangles Swift names in a helper process (src/demangle/
/// swift_helper.rs): the same names as in the library's process.
#[test]
fn the_command_names_as_the_library_does() {
    for file in ["libswiftnames.so", "libswiftnames.dylib"] {
        let path = swift_dir().join(file);
        let out = dumpsyms_command().arg(&path).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        isolate();
        let ours = dump_text(&path, &dumpsyms::Options::default());
        assert_eq!(String::from_utf8(out.stdout).unwrap(), ours, "{file}");
    }
}

/// Names that break Swift 6.3.1's demangler, one of them by exhausting memory through
/// malloc (which no guard in the process sees): the command's helper process dies, is
/// replaced, and the names after them are still read.
#[test]
fn names_that_break_the_demangler_cost_the_command_nothing() {
    let path = fixtures().join("regress/hostile/swift-names-that-break-the-demangler.so");
    let out = dumpsyms_command().arg("-v").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("fatal error"), "{err}");
    let sym = parse(&String::from_utf8(out.stdout).unwrap());
    let names: Vec<&str> = sym.publics.iter().map(|p| p.1.as_str()).collect();
    assert_eq!(
        names,
        [
            "$sScGySGySiGiGx",
            "$sRv2__",
            "$sTJSdSSSpSrSUSP",
            "$eSSTf4p",
            "test.testit(()) -> Swift.Int"
        ]
    );
    assert!(err.contains("4 Swift name(s) left mangled"), "{err}");
}
