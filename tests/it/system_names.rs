//! Real-world check of demangling: in the symbol files of large C++ programs installed on
//! this machine, no FUNC, PUBLIC or INLINE_ORIGIN name may be one that GNU `c++filt`
//! demangles (cpp_demangle alone left 58 in gcc's lto-dump, 25 in node, 6 in ld.gold:
//! templates with `enable_if` expressions and `sr` forms).
//!
//! Needs binutils (`c++filt`); `.ci/run` runs it with `--ignored`. Each program is
//! checked if installed; libstdc++ always is.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::*;

const PROGRAMS: [&str; 4] = [
    "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
    "/usr/bin/x86_64-linux-gnu-ld.gold",
    "/usr/bin/node",
    "/usr/bin/x86_64-linux-gnu-lto-dump-12",
];

/// What `c++filt` makes of each name, in order.
fn cxxfilt(names: &[String]) -> Vec<String> {
    if names.is_empty() {
        return Vec::new();
    }
    let mut child = Command::new("c++filt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("c++filt (binutils) is not installed");
    let mut stdin = child.stdin.take().unwrap();
    let input = names.join("\n") + "\n";
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
#[ignore = "needs binutils' c++filt and the machine's C++ programs; run by .ci/run"]
fn no_name_cxxfilt_demangles_is_left_mangled() {
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    let mut checked = 0;
    // Stripped programs without debug files (ld.gold here) have no names to check.
    let mut total = 0;
    for program in PROGRAMS.iter().map(Path::new).filter(|p| p.exists()) {
        let sym = parse(&dump_text(program, &opts));
        let names: Vec<String> = sym
            .funcs
            .iter()
            .map(|f| f.name.clone())
            .chain(sym.publics.iter().map(|p| p.1.clone()))
            .chain(sym.origins.values().cloned())
            .collect();
        let cpp = names.iter().filter(|n| n.contains("::")).count();
        let mangled: Vec<String> = names.into_iter().filter(|n| n.starts_with("_Z")).collect();
        let demangled = cxxfilt(&mangled);
        assert_eq!(demangled.len(), mangled.len());
        let missed: Vec<(&String, &String)> = mangled
            .iter()
            .zip(&demangled)
            .filter(|(m, d)| m != d)
            .collect();
        println!(
            "{}: {cpp} C++ names, {} left mangled (c++filt cannot demangle them either)",
            program.display(),
            mangled.len()
        );
        total += cpp;
        assert!(
            missed.is_empty(),
            "{}: {} names c++filt demangles are left mangled, e.g. {:?}",
            program.display(),
            missed.len(),
            &missed[..missed.len().min(3)]
        );
        checked += 1;
    }
    assert!(checked >= 1, "no C++ program found");
    assert!(total > 1000, "only {total} C++ names in all");
}

/// libstdc++'s own debug build (Debian's libstdc++6-12-dbg), checked against its symbol
/// table: `extern "C"` functions that DWARF places in `__cxxabiv1` are named by their
/// symbol, as every other tool shows them, and the compatibility shims compiled as
/// `ignoreXX` are named as exported (`_ZNSi6ignoreEl@@GLIBCXX_3.4.5`).
#[test]
#[ignore = "needs libstdc++6-12-dbg; run by .ci/run"]
fn libstdcxx_debug_build_names_follow_its_symbols() {
    use object::{Object as _, ObjectSymbol as _};
    let path = Path::new("/usr/lib/x86_64-linux-gnu/debug/libstdc++.so.6.0.30");
    if !path.exists() {
        println!("{} is not installed; skipped", path.display());
        return;
    }
    let bytes = std::fs::read(path).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    let address_of = |name: &str| {
        file.symbols()
            .find(|s| s.name() == Ok(name))
            .map(|s| s.address())
            .unwrap_or_else(|| panic!("no symbol {name}"))
    };
    let sym = parse(&dump_text(path, &dumpsyms::Options::default()));
    let func_at = |address: u64| {
        sym.funcs
            .iter()
            .find(|f| f.address == address)
            .map(|f| f.name.as_str())
            .unwrap_or_else(|| panic!("no FUNC at {address:#x}"))
    };
    for (symbol, name) in [
        ("__cxa_vec_new3", "__cxa_vec_new3"),
        ("__cxa_bad_cast", "__cxa_bad_cast"),
        (
            "_ZNSi6ignoreEl@@GLIBCXX_3.4.5",
            "std::istream::ignore(long)",
        ),
        (
            "_ZNSt11char_traitsIcE2eqERKcS2_@GLIBCXX_3.4",
            "std::char_traits<char>::eq(char const&, char const&)",
        ),
    ] {
        assert_eq!(func_at(address_of(symbol)), name, "{symbol}");
    }
    let left: Vec<&str> = sym
        .funcs
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| n.starts_with("__cxxabiv1::__cxa_") || n.contains("ignoreXX"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
