//! Golden symbol files: the full output for a few fixtures, byte for byte. These files
//! were accepted after the oracle test (tests/it/oracle.rs) passed on the same binaries;
//! regenerate with `UPDATE_GOLDEN=1 cargo test --test it golden::` and review the diff.

use crate::common::*;

const GOLDEN: [&str; 5] = [
    "x86_64/c-gcc-O2-dwarf5",
    "x86_64/cpp-clang-O2-dwarf4",
    "i686/cpp-gcc-O2-dwarf5",
    "aarch64/cpp-gcc-O2-dwarf4",
    "x86_64/c-gcc-O2-dwarf5-nopie",
];

#[test]
fn golden_symbol_files() {
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    opts.multiple_field = true;
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut mismatches = Vec::new();
    for name in GOLDEN {
        let text = dump_text(&fixtures().join("bin").join(name), &opts);
        let golden = fixtures()
            .join("golden")
            .join(format!("{}.sym", name.replace('/', "-")));
        if update {
            std::fs::write(&golden, &text).unwrap();
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_default();
        if expected != text {
            let first = expected
                .lines()
                .zip(text.lines())
                .position(|(a, b)| a != b)
                .unwrap_or(expected.lines().count().min(text.lines().count()));
            mismatches.push(format!(
                "{name}: first difference at line {}:\n  golden: {:?}\n  now:    {:?}",
                first + 1,
                expected.lines().nth(first),
                text.lines().nth(first)
            ));
        }
    }
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
}

/// The model's view of each function's records (`Module::records`, what a library user
/// reads) is exactly what the writer puts under its FUNC line in the golden file.
#[test]
fn the_models_records_are_the_ones_written() {
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    for name in GOLDEN {
        let path = fixtures().join("bin").join(name);
        let d = dumpsyms::dump(&path, &opts).unwrap();
        let text = dump_text(&path, &opts);
        let mut blocks = text.split("\nFUNC ").skip(1);
        let mut checked = 0;
        for f in &d.module.functions {
            let block = blocks.next().expect("a FUNC block per function");
            let body: Vec<&str> = block
                .lines()
                .skip(1)
                .take_while(|l| !l.starts_with("PUBLIC ") && !l.starts_with("STACK "))
                .collect();
            let (lines, inlines) = d.module.records(f);
            let mut expected: Vec<String> = inlines
                .iter()
                .map(|s| {
                    let ranges: Vec<String> = s
                        .ranges
                        .iter()
                        .map(|(a, n)| format!(" {a:x} {n:x}"))
                        .collect();
                    format!(
                        "INLINE {} {} {} {}{}",
                        s.depth,
                        s.call_line,
                        s.call_file,
                        s.origin,
                        ranges.concat()
                    )
                })
                .collect();
            expected.extend(
                lines
                    .iter()
                    .map(|l| format!("{:x} {:x} {} {}", l.address, l.size, l.line, l.file)),
            );
            assert_eq!(body, expected, "{name}: FUNC {:x}", f.address);
            checked += expected.len();
        }
        assert!(checked > 50, "{name}: only {checked} records");
    }
}
