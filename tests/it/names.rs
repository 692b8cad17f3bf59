//! Special C++ names, checked against two independent demanglers: every function symbol
//! of fixtures/extra/names (src/names.cpp: thunks from multiple and virtual inheritance,
//! covariant return thunks, an `extern "C"` function in a namespace, a function-local
//! static's guard) must be named in our FUNC or PUBLIC record as llvm-symbolizer names
//! it, which for each of them is also GNU c++filt's demangling. Recorded by
//! fixtures/extra/names/make.sh.

use crate::common::*;

#[test]
fn special_names_read_as_cxxfilt_and_llvm_read_them() {
    let dir = fixtures().join("extra/names");
    let oracle = std::fs::read_to_string(dir.join("names-gcc-O2.tsv")).unwrap();
    let sym = parse(&dump_text(
        &dir.join("names-gcc-O2"),
        &dumpsyms::Options::default(),
    ));
    let mut thunks = 0;
    for row in oracle.lines() {
        let f: Vec<&str> = row.split('\t').collect();
        let (address, raw, gnu, llvm) = (u64::from_str_radix(f[0], 16).unwrap(), f[1], f[2], f[3]);
        assert_eq!(gnu, llvm, "{raw}: the oracles disagree");
        let ours = sym
            .funcs
            .iter()
            .find(|func| func.address <= address && address < func.address + func.size)
            .map(|func| func.name.as_str())
            .or_else(|| {
                sym.publics
                    .iter()
                    .find(|p| p.0 == address)
                    .map(|p| p.1.as_str())
            })
            .unwrap_or_else(|| panic!("{raw} at {address:#x}: no record"));
        assert_eq!(ours, llvm, "{raw} at {address:#x}");
        thunks += usize::from(llvm.contains(" thunk to "));
    }
    assert!(thunks >= 9, "only {thunks} thunks in the fixture");
    // The extern "C" function declared in namespace shapes.
    assert!(oracle.contains("\tshapes_total\tshapes_total\tshapes_total"));
}

/// Member functions are defined outside their class, pointing to their declaration in
/// it, except in a local class: GCC puts the code of a lambda's `operator()` inside its
/// closure type, in the function. A walk that stepped over classes' children (tried
/// for issue 21: it saved nothing, as most classes a unit declares are named by what it
/// defines) must keep both (llvm-symbolizer names them so: tests/it/oracle.rs).
#[test]
fn member_functions_of_classes_and_lambdas_keep_their_records() {
    for build in ["cpp-gcc-O0-dwarf4", "cpp-gcc-O0-dwarf5"] {
        let path = fixtures().join("bin/x86_64").join(build);
        let sym = parse(&dump_text(&path, &dumpsyms::Options::default()));
        for want in [
            "main::{lambda(int, int)#1}::operator()(int, int) const",
            "main::{lambda(int)#2}::operator()(int) const",
            "geo::Rect::area() const",
            "geo::Circle::area() const",
        ] {
            assert!(
                sym.funcs.iter().any(|f| f.name == want),
                "{build}: no FUNC {want}"
            );
        }
    }
}
