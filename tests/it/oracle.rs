//! Every fixture's symbol file answers like llvm-symbolizer: the outermost function, the
//! innermost file and line, and the chain of inlined calls with their call sites, at
//! every line-table address the fixture script recorded.

use crate::common::scoring::*;
use crate::common::*;

#[test]
fn clone_suffixes_are_stripped() {
    assert_eq!(strip_clone_suffix("main.cold"), "main");
    assert_eq!(
        strip_clone_suffix("report_error.constprop.0"),
        "report_error"
    );
    assert_eq!(
        strip_clone_suffix("f(int) [clone .constprop.0] [clone .cold]"),
        "f(int)"
    );
    assert_eq!(strip_clone_suffix("g.isra.0.cold"), "g");
    assert_eq!(strip_clone_suffix("coldness"), "coldness");
}

#[test]
fn name_comparison_tolerates_only_qualification() {
    assert!(compare_names("std::sort<int*>", "sort<int*>") == NameMatch::Qualified);
    assert!(compare_names("(anonymous namespace)::ack(int, int)", "ack") == NameMatch::Qualified);
    assert!(compare_names("int acc<int>(int const*, int)", "acc<int>") == NameMatch::Qualified);
    assert!(compare_names("foo(int)", "foo(int)") == NameMatch::Same);
    assert!(compare_names("std::vector<a<b> >", "std::vector<a<b>>") == NameMatch::Same);
    assert!(compare_names("barfoo", "foo") == NameMatch::Different);
    assert!(compare_names("main", "main.cold") == NameMatch::Different);
    assert!(compare_names("grid::collatz", "grid::collatz::h4cdc253c0333cf1d") == NameMatch::Same);
    assert!(compare_names("grid::collatz", "grid::collatz::hxyz") == NameMatch::Different);
    let undemangled = compare_names("std::swap<int>", "X<y>::type std::swap<int>(int&, int&)");
    if GNU_DEMANGLER {
        assert!(undemangled == NameMatch::Different);
    } else {
        assert!(undemangled == NameMatch::Undemangled);
    }
    assert!(
        compare_names("swap<int>", "X<y>::type std::swap<int>(int&, int&)") == NameMatch::Different
    );
    assert!(
        compare_names(
            "<T as core::convert::Into<U>>::into",
            "_$LT$T$u20$as$u20$core..convert..Into$LT$U$GT$$GT$::into::h0123456789abcdef"
        ) == NameMatch::Same
    );
}

#[test]
fn fixtures_agree_with_llvm_symbolizer() {
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    let mut failures = Vec::new();
    let bins = fixture_binaries();
    assert!(bins.len() >= 48, "fixtures missing: {}", bins.len());
    println!(
        "{:<34} {:>6} {:>9} {:>9} {:>9} {:>10}",
        "fixture", "addrs", "function", "line", "inline", "tolerated"
    );
    for (arch, name, path) in bins {
        let oracle = read_oracle(
            &fixtures()
                .join("oracle")
                .join(&arch)
                .join(format!("{name}.tsv")),
        );
        assert!(oracle.len() >= 50, "{arch}/{name}: oracle too small");
        let sym = parse(&dump_text(&path, &opts));
        let s = score(&sym, &oracle);
        if !s.report(&format!("{arch}/{name}")) {
            failures.push(format!("{arch}/{name}"));
        }
    }
    assert!(
        failures.is_empty(),
        "below {REQUIRED} agreement: {failures:?}"
    );
}
