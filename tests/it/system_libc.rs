//! Real-world check of separate debug files: this machine's libc, whose DWARF is in
//! Debian's libc6-dbg package under /usr/lib/debug/.build-id. The debug file must be
//! found by build ID, and well-known functions must come out with the name, file and
//! line eu-addr2line reads from that debug file.
//!
//! Needs `libc6-dbg` and `elfutils`; `.ci/run` installs them and runs this test with
//! `--ignored`.

use std::path::Path;
use std::process::Command;

use crate::common::*;

const LIBC: &str = "/lib/x86_64-linux-gnu/libc.so.6";
// Functions with no inlined call at their first instruction: there eu-addr2line -f names
// the symbol-table alias (`opendir`) instead of the DWARF function (`__opendir`).
const FUNCTIONS: [&str; 10] = [
    "qsort",
    "getenv",
    "strtol",
    "fopen",
    "abort",
    "atoi",
    "strdup",
    "setlocale",
    "fclose",
    "exit",
];

fn run(cmd: &str, args: &[&str]) -> String {
    let out = Command::new(cmd)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{cmd}: {e} (is it installed?)"));
    assert!(
        out.status.success(),
        "{cmd} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
#[ignore = "needs libc6-dbg and elfutils; run by .ci/run"]
fn libc_debug_file_is_found_by_build_id() {
    let d = dumpsyms::dump(Path::new(LIBC), &dumpsyms::Options::default()).unwrap();
    let debug = d.debug_file.clone().expect("no debug file found for libc");
    assert!(
        debug.starts_with("/usr/lib/debug/.build-id/"),
        "found elsewhere: {}",
        debug.display()
    );
    let mut text = Vec::new();
    dumpsyms::write_module(&d.module, &Default::default(), &mut text).unwrap();
    let sym = parse(&String::from_utf8(text).unwrap());
    assert!(
        sym.funcs.len() > 2000,
        "only {} FUNC records",
        sym.funcs.len()
    );
    assert!(
        sym.cfi_lines > 2000,
        "only {} STACK CFI records",
        sym.cfi_lines
    );

    // Addresses from the binary's own dynamic symbol table.
    let dynsym = run("nm", &["-D", "--defined-only", LIBC]);
    for name in FUNCTIONS {
        let addr = dynsym
            .lines()
            .find_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                (f.len() == 3
                    && f[2].split('@').next() == Some(name)
                    && (f[1] == "T" || f[1] == "W"))
                    .then(|| u64::from_str_radix(f[0], 16).unwrap())
            })
            .unwrap_or_else(|| panic!("{name} not in libc's dynamic symbols"));
        let oracle = run(
            "eu-addr2line",
            &["-f", "-e", debug.to_str().unwrap(), &format!("{addr:#x}")],
        );
        let mut lines = oracle.lines();
        let oracle_name = lines.next().unwrap();
        // file:line:column
        let location: Vec<&str> = lines.next().unwrap().rsplitn(3, ':').collect();
        let (oracle_file, oracle_line) = (location[2], location[1].parse::<u32>().unwrap());
        let ans = sym
            .lookup(addr)
            .unwrap_or_else(|| panic!("{name} at {addr:#x}: no FUNC"));
        assert_eq!(ans.function, oracle_name, "{name} at {addr:#x}");
        let (file, line) = ans
            .location
            .unwrap_or_else(|| panic!("{name} at {addr:#x}: no line"));
        // eu-addr2line prints DWARF's relative path as it is; ours is joined with the
        // compilation directory. The source file and line must be the same.
        let tail = oracle_file.rsplit("./").next().unwrap();
        assert!(file.ends_with(tail), "{name}: {file} vs {oracle_file}");
        assert_eq!(line, oracle_line, "{name} at {addr:#x}");
        println!("{name:<8} {addr:#8x} {} {file}:{line}", ans.function);
    }
}
