//! Real-world check of demangling: in the symbol files of large C++ programs installed on
//! this machine, no FUNC, PUBLIC or INLINE_ORIGIN name may be one that GNU `c++filt`
//! demangles (cpp_demangle alone left 58 in gcc's lto-dump, 25 in node, 6 in ld.gold:
//! templates with `enable_if` expressions and `sr` forms).
//!
//! Needs binutils (`c++filt`); `.ci/run` runs it with `--ignored`. Each program is
//! checked if installed; libstdc++ always is.

mod common;

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use common::*;

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
    let opts = dumpsyms::Options {
        inlines: true,
        ..Default::default()
    };
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
