//! Golden symbol files: the full output for a few fixtures, byte for byte. These files
//! were accepted after the oracle test (tests/oracle.rs) passed on the same binaries;
//! regenerate with `UPDATE_GOLDEN=1 cargo test --test golden` and review the diff.

mod common;

use common::*;

const GOLDEN: [&str; 5] = [
    "x86_64/c-gcc-O2-dwarf5",
    "x86_64/cpp-clang-O2-dwarf4",
    "i686/cpp-gcc-O2-dwarf5",
    "aarch64/cpp-gcc-O2-dwarf4",
    "x86_64/c-gcc-O2-dwarf5-nopie",
];

#[test]
fn golden_symbol_files() {
    let opts = dumpsyms::Options {
        inlines: true,
        multiple_field: true,
        ..Default::default()
    };
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
