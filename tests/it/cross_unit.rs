//! Names whose DWARF reference chains cross compilation units. Units are processed one
//! at a time as `.debug_info` streams in, each with an index of its own DIEs only; a
//! name that leads into another unit is resolved afterwards by reading just the units
//! involved again (sliced from a mapped section, or inflated again from a compressed
//! one). The LTO fixture's first unit takes every inline origin's name from the second
//! unit (`DW_FORM_ref_addr`); tests/it/oracle.rs checks those names against
//! llvm-symbolizer, and this file checks that they only come through that second pass.

use crate::common::*;

fn dump(rel: &str, extra: &[&str]) -> String {
    let path = fixtures().join(rel);
    let out = dumpsyms_command()
        .args(["-d", "-n", "lto"])
        .args(extra)
        .arg(&path)
        .output()
        .unwrap();
    stdout_of_success(out)
}

fn origins(sym: &str) -> Vec<&str> {
    sym.lines()
        .filter_map(|l| l.strip_prefix("INLINE_ORIGIN "))
        .map(|l| l.split_once(' ').map_or("", |(_, name)| name))
        .collect()
}

const LTO: &str = "bin/x86_64/cpp-gcc-O2-dwarf5-lto";

#[test]
fn inline_origins_in_another_unit_are_named() {
    let sym = dump(LTO, &[]);
    let names = origins(&sym);
    for wanted in [
        "geo::Circle::Circle(double)",
        "geo::Rect::Rect(double, double)",
    ] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }
    // The same names are out of reach when references between units are not followed
    // (-r): they live in the other unit.
    let local = dump(LTO, &["-r"]);
    assert!(
        origins(&local).iter().all(|n| *n == "<name omitted>"),
        "{:?}",
        origins(&local)
    );
}

#[test]
fn a_compressed_streamed_debug_info_resolves_them_the_same() {
    // Same code and DWARF, .debug_info zlib-compressed: it is inflated as a stream, and
    // inflated again for the second pass.
    let plain = dump(LTO, &[]);
    let zlib = dump("extra/compressed/lto-zlib", &[]);
    assert_eq!(zlib, plain);
    assert_eq!(dump("extra/compressed/lto-zlib", &["--jobs", "1"]), plain);
}
