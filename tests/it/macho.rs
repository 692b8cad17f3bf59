//! Mach-O: thin and universal binaries with their .dSYM bundles (fixtures/macho, built
//! on Linux by fixtures/make-fixtures.sh). Functions, lines and inline chains must agree
//! with llvm-symbolizer run on the dSYM; identity, slices and dSYM matching are checked
//! against the files' own load commands.

use std::process::Output;

use crate::common::scoring::*;
use crate::common::*;

fn macho(rel: &str) -> String {
    fixtures()
        .join("macho")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn text(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

const THIN: [&str; 4] = [
    "mac-x86_64-O0",
    "mac-x86_64-O2",
    "mac-arm64-O0",
    "mac-arm64-O2",
];

#[test]
fn dsym_agrees_with_llvm_symbolizer() {
    let mut failures = Vec::new();
    for name in THIN {
        let oracle = read_oracle(&fixtures().join("macho").join(format!("{name}.tsv")));
        assert!(oracle.len() > 200, "{name}: oracle too small");
        // The binary, finding its dSYM beside it.
        let out = dumpsyms(&["-d", &macho(name)]);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let sym = parse(&text(&out));
        let s = score(&sym, &oracle);
        if !s.report(name) {
            failures.push(name);
        }
    }
    assert!(failures.is_empty(), "below {REQUIRED}: {failures:?}");
}

#[test]
fn universal_slices_match_their_thin_builds() {
    let listed = dumpsyms(&[
        "--list-arch",
        &macho("mac-universal-O2"),
        &macho("mac-universal-O2.dSYM"),
    ]);
    assert_eq!(
        text(&listed),
        format!(
            "{}: x86_64 arm64\n{}: x86_64 arm64\n",
            macho("mac-universal-O2"),
            macho("mac-universal-O2.dSYM")
        )
    );
    let none = dumpsyms(&[&macho("mac-universal-O2")]);
    assert_eq!(none.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&none.stderr)
            .contains("2 slices (x86_64, arm64); choose one with --arch")
    );
    for arch in ["x86_64", "arm64"] {
        let fat = dumpsyms(&["-d", "--arch", arch, "-n", "x", &macho("mac-universal-O2")]);
        let thin = dumpsyms(&["-d", "-n", "x", &macho(&format!("mac-{arch}-O2"))]);
        assert!(
            fat.status.success(),
            "{}",
            String::from_utf8_lossy(&fat.stderr)
        );
        // lipo keeps each slice byte for byte: the same UUID, functions and CFI.
        assert_eq!(text(&fat), text(&thin), "{arch}");
    }
    let missing = dumpsyms(&["--arch", "x86", &macho("mac-universal-O2")]);
    assert!(
        String::from_utf8_lossy(&missing.stderr)
            .contains("no x86 slice; the slices are x86_64, arm64")
    );
    // Apple's and GNU's names pick the same slice; a name no tool uses is a usage error.
    let aliased = dumpsyms(&[
        "-d",
        "--arch",
        "aarch64",
        "-n",
        "x",
        &macho("mac-universal-O2"),
    ]);
    let thin = dumpsyms(&["-d", "-n", "x", &macho("mac-arm64-O2")]);
    assert_eq!(text(&aliased), text(&thin));
    let unknown = dumpsyms(&["--arch", "vax", &macho("mac-universal-O2")]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("\"vax\" is not an architecture"));
}

#[test]
fn module_record_has_the_uuid_unswapped() {
    for name in THIN {
        let out = text(&dumpsyms(&["-i", &macho(name)]));
        // LC_UUID as llvm-objdump --private-headers prints it (recorded by the fixture
        // script), dashes removed.
        let uuid =
            std::fs::read_to_string(fixtures().join("macho").join(format!("{name}.uuid"))).unwrap();
        let uuid = uuid.trim();
        let arch = if name.contains("arm64") {
            "arm64"
        } else {
            "x86_64"
        };
        assert_eq!(
            out,
            format!(
                "MODULE mac {arch} {uuid}0 {name}\nINFO CODE_ID {uuid}\nINFO GENERATOR dumpsyms {}\n",
                env!("CARGO_PKG_VERSION")
            )
        );
    }
}

#[test]
fn dsym_given_directly_or_as_bundle_file() {
    let name = "mac-arm64-O2";
    let from_binary = text(&dumpsyms(&["-d", "-c", &macho(name)]));
    for dsym in [
        macho(&format!("{name}.dSYM")),
        macho(&format!("{name}.dSYM/Contents/Resources/DWARF/{name}")),
    ] {
        let out = dumpsyms(&["-d", "-c", &dsym]);
        assert!(out.status.success(), "{dsym}");
        // The dSYM alone has the same functions and lines; its symbol table (kept by
        // dsymutil) gives the same PUBLIC records.
        assert_eq!(text(&out), from_binary, "{dsym}");
    }
}

#[test]
fn a_dsym_alone_has_no_unwind_tables_to_read() {
    // A dSYM keeps the binary's section headers (__unwind_info, __eh_frame) with no data
    // behind them (file offset 0: the Mach-O header). They are not read: no STACK
    // records, and no warning about a bogus unwind table version.
    for name in ["mac-arm64-O2", "mac-x86_64-O2"] {
        let dsym = macho(&format!("{name}.dSYM"));
        let out = dumpsyms(&["-v", &dsym]);
        assert!(out.status.success(), "{dsym}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!err.contains("warning"), "{dsym}: {err}");
        let sym = text(&out);
        assert!(sym.contains("\nFUNC "), "{dsym}");
        assert!(!sym.contains("\nSTACK "), "{dsym}");
        // With the binary, its unwind tables are read.
        assert!(text(&dumpsyms(&[&macho(name)])).contains("\nSTACK CFI INIT "));
    }
}

#[test]
fn a_dsym_of_another_build_is_an_error_naming_both_uuids() {
    // The -O0 build's dSYM for the -O2 binary: same architecture, other UUID.
    let out = dumpsyms(&[&macho("mac-arm64-O2"), &macho("mac-arm64-O0.dSYM")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the dSYM's UUID") && err.contains("does not match"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
    // An x86_64 dSYM for an arm64 binary.
    let out = dumpsyms(&[&macho("mac-arm64-O2"), &macho("mac-x86_64-O2.dSYM")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no arm64 code"));
}

#[test]
fn publics_lose_the_underscore_and_are_demangled() {
    let out = text(&dumpsyms(&[
        "-c",
        &macho("mac-x86_64-O2.dSYM/Contents/Resources/DWARF/mac-x86_64-O2"),
    ]));
    let sym = parse(&out);
    // Without -c the binary covers everything with FUNC records; the stripped binary
    // shows the symbol table.
    let _ = sym;
    let stripped =
        std::env::temp_dir().join(format!("dumpsyms-macho-strip-{}", std::process::id()));
    std::fs::create_dir_all(&stripped).unwrap();
    std::fs::copy(macho("mac-x86_64-O2"), stripped.join("app")).unwrap();
    let publics = parse(&text(&dumpsyms(&[stripped.join("app").to_str().unwrap()]))).publics;
    let names: Vec<&str> = publics.iter().map(|p| p.1.as_str()).collect();
    for expected in [
        "main",
        "checksum",
        "weird_sum",
        "fib",
        "geo::Counter::bump(int)",
        "(anonymous namespace)::ackermann(int, int)",
    ] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with('_') || n.contains("mh_execute_header")),
        "{names:?}"
    );
    std::fs::remove_dir_all(&stripped).unwrap();
}

/// Our STACK CFI, as (start, size, rules after all rows) per INIT record.
fn cfi_blocks(sym_text: &str) -> Vec<(u64, u64, std::collections::BTreeMap<String, String>)> {
    let mut out: Vec<(u64, u64, std::collections::BTreeMap<String, String>)> = Vec::new();
    let apply = |rules: &str, map: &mut std::collections::BTreeMap<String, String>| {
        let mut reg = String::new();
        for tok in rules.split(' ') {
            if let Some(r) = tok.strip_suffix(':') {
                reg = r.to_string();
                map.insert(reg.clone(), String::new());
            } else {
                let v = map.get_mut(&reg).unwrap();
                if !v.is_empty() {
                    v.push(' ');
                }
                v.push_str(tok);
            }
        }
    };
    for line in sym_text.lines() {
        if let Some(rest) = line.strip_prefix("STACK CFI INIT ") {
            let mut f = rest.splitn(3, ' ');
            let start = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            let size = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            let mut map = std::collections::BTreeMap::new();
            apply(f.next().unwrap(), &mut map);
            out.push((start, size, map));
        } else if let Some(rest) = line.strip_prefix("STACK CFI ") {
            let (_, rules) = rest.split_once(' ').unwrap();
            apply(rules, &mut out.last_mut().unwrap().2);
        }
    }
    out
}

/// Compact unwind (and __eh_frame where a function needs it) against the compiler's
/// own CFI directives for the same code: at each function, the rules in force in its
/// body (after its prologue) must be exactly the frame the compiler described.
#[test]
fn compact_unwind_matches_the_compilers_cfi() {
    let (mut total_listed, mut total_checked) = (0, 0);
    for name in THIN {
        let arm = name.contains("arm64");
        let reg = |r: &str| if arm { r.to_string() } else { format!("${r}") };
        let sym = text(&dumpsyms(&[&macho(name)]));
        let blocks = cfi_blocks(&sym);
        let oracle =
            std::fs::read_to_string(fixtures().join("macho").join(format!("{name}.cfi"))).unwrap();
        let mut checked = 0;
        for line in oracle.lines() {
            let mut f = line.split(' ');
            let addr = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            let block = blocks.iter().find(|b| b.0 <= addr && addr < b.0 + b.1);
            if line.ends_with(" uncovered") {
                // The binary has no unwind information here; none may be invented.
                assert!(
                    block.is_none(),
                    "{name}: STACK CFI at {addr:#x}, which the binary does not describe"
                );
                continue;
            }
            let (cfa_reg, cfa_off) = f
                .next()
                .unwrap()
                .trim_start_matches("cfa=")
                .split_once('+')
                .unwrap();
            let cfa_off: i64 = cfa_off.parse().unwrap();
            let block = block.unwrap_or_else(|| panic!("{name}: no STACK CFI at {addr:#x}"));
            let rules = &block.2;
            let mut expected = std::collections::BTreeMap::new();
            let cfa = if cfa_off == 0 {
                reg(cfa_reg)
            } else {
                format!("{} {cfa_off} +", reg(cfa_reg))
            };
            expected.insert(".cfa".to_string(), cfa);
            // Without a rule the return address is in the link register (arm64) or on
            // top of the caller's stack (x86_64).
            expected.insert(
                ".ra".to_string(),
                if arm {
                    "x30".into()
                } else {
                    ".cfa 8 - ^".into()
                },
            );
            for saved in f.filter(|s| !s.is_empty() && *s != "uncovered") {
                let (r, off) = saved.split_once('=').unwrap();
                let value = format!(".cfa {} - ^", -off.parse::<i64>().unwrap());
                if arm && r == "x30" {
                    expected.insert(".ra".to_string(), value);
                } else {
                    expected.insert(reg(r), value);
                }
            }
            assert_eq!(rules, &expected, "{name} at {addr:#x}");
            checked += 1;
        }
        assert!(checked >= 8, "{name}: only {checked} functions");

        // Every compact entry llvm-objdump lists that is not deferred to DWARF starts
        // one of our records.
        let unwind =
            std::fs::read_to_string(fixtures().join("macho").join(format!("{name}.unwind")))
                .unwrap();
        let common: Vec<u32> = unwind
            .lines()
            .filter_map(|l| {
                l.trim()
                    .strip_prefix("encoding[")?
                    .split_once("]: 0x")
                    .map(|(_, v)| u32::from_str_radix(v, 16).unwrap())
            })
            .collect();
        let dwarf_mode = if arm { 0x0300_0000 } else { 0x0400_0000 };
        let mut listed = 0;
        for l in unwind.lines() {
            let l = l.trim();
            if !l.starts_with('[')
                || !l.contains("function offset=")
                || l.contains("2nd level page")
            {
                continue;
            }
            let offset = u64::from_str_radix(
                l.split("function offset=0x")
                    .nth(1)
                    .unwrap()
                    .split(',')
                    .next()
                    .unwrap(),
                16,
            )
            .unwrap();
            let enc = l.split("encoding[").nth(1).unwrap();
            let encoding = match enc.split_once("]=0x") {
                Some((_, v)) => u32::from_str_radix(v.trim(), 16).unwrap(),
                None => common[enc.split(']').next().unwrap().parse::<usize>().unwrap()],
            };
            if encoding & 0x0F00_0000 == dwarf_mode {
                continue;
            }
            listed += 1;
            assert!(
                blocks.iter().any(|b| b.0 == offset),
                "{name}: no STACK CFI INIT at {offset:#x}"
            );
        }
        assert!(listed >= 1, "{name}: {listed} compact entries");
        total_listed += listed;
        total_checked += checked;
    }
    // Adjacent functions with one encoding share an entry: few entries, many functions.
    assert!(
        total_listed >= 8 && total_checked >= 35,
        "{total_listed} entries, {total_checked} functions"
    );
}
