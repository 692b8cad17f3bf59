//! Special C++ names, checked against two independent demanglers: every function symbol
//! of fixtures/extra/names (src/names.cpp: thunks from multiple and virtual inheritance,
//! covariant return thunks, an `extern "C"` function in a namespace, a function-local
//! static's guard) must be named in our FUNC or PUBLIC record as llvm-symbolizer names
//! it, which for each of them is also GNU c++filt's demangling. Recorded by
//! fixtures/extra/names/make.sh.

mod common;

use common::*;

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
