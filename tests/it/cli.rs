//! The command line: Breakpad-compatible flags, outputs, the store layout, errors and
//! exit codes, and byte-identical output whatever the thread count.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

fn fixture(rel: &str) -> String {
    fixtures().join(rel).to_string_lossy().into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

/// The GUID swap of the Breakpad format, restated: the first three fields little-endian
/// on a little-endian ELF.
fn expected_debug_id(build_id_hex: &str, little_endian: bool) -> String {
    let mut b: Vec<String> = (0..16)
        .map(|i| {
            build_id_hex
                .get(2 * i..2 * i + 2)
                .unwrap_or("00")
                .to_uppercase()
        })
        .collect();
    if little_endian {
        b[0..4].reverse();
        b[4..6].reverse();
        b[6..8].reverse();
    }
    b.concat() + "0"
}

#[test]
fn module_and_info_records_match_readelf_build_ids() {
    for (arch, name, path) in fixture_binaries() {
        let build_id =
            std::fs::read_to_string(fixtures().join(format!("oracle/{arch}/{name}.buildid")))
                .unwrap();
        let build_id = build_id.trim();
        let out = dumpsyms(&["-i", path.to_str().unwrap()]);
        assert!(out.status.success());
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().collect();
        let breakpad_arch = match arch.as_str() {
            "i686" => "x86",
            "aarch64" => "arm64",
            "ppc64le" => "ppc64",
            "mipsel" => "mips",
            "mips64el" => "mips64",
            a => a,
        };
        let little_endian = !matches!(arch.as_str(), "ppc" | "ppc64" | "mips" | "mips64");
        assert_eq!(
            lines,
            vec![
                format!(
                    "MODULE Linux {breakpad_arch} {} {name}",
                    expected_debug_id(build_id, little_endian)
                )
                .as_str(),
                format!("INFO CODE_ID {}", build_id.to_uppercase()).as_str(),
                concat!("INFO GENERATOR dumpsyms ", env!("CARGO_PKG_VERSION")),
            ],
            "{arch}/{name}"
        );
    }
}

#[test]
fn header_overrides() {
    let bin = fixture("bin/x86_64/c-gcc-O2-dwarf5");
    let out = dumpsyms(&[
        "-i",
        "-n",
        "renamed app",
        "-o",
        "Android",
        "-b",
        "0123ABCD0",
        &bin,
    ]);
    assert!(out.status.success());
    assert_eq!(
        stdout(&out).lines().next(),
        Some("MODULE Android x86_64 0123ABCD0 renamed app")
    );
    let bad = dumpsyms(&["-b", "has space", &bin]);
    assert_eq!(bad.status.code(), Some(2));
}

#[test]
fn publics_come_from_the_symbol_table_when_there_is_no_dwarf() {
    let bin = fixture("extra/c-gcc-O2-nodwarf");
    let out = dumpsyms(&[&bin]);
    assert!(out.status.success(), "{}", stderr(&out));
    let sym = parse(&stdout(&out));
    assert!(sym.funcs.is_empty() && sym.files.is_empty());
    // Every FUNC symbol readelf lists has a PUBLIC at its address; the first name at an address
    // (by nm's order of the symbol table) is not required, only that the address is named
    // by one of the symbols there.
    assert_publics_match_symbol_table(&sym, "x86_64/c-gcc-O2-dwarf5");
    assert!(
        sym.publics.iter().any(|p| p.1 == "main")
            && sym.publics.iter().any(|p| p.1 == "process.cold")
    );
}

#[test]
fn ppc64_elfv1_publics_are_at_code_not_descriptors() {
    for name in ["unwind-gcc-O2", "unwind-gcc-O2-nofp"] {
        let opd =
            std::fs::read_to_string(fixtures().join(format!("oracle/ppc64/{name}.opd"))).unwrap();
        let code: std::collections::BTreeMap<String, u64> = opd
            .lines()
            .map(|l| {
                let (a, n) = l.split_once(' ').unwrap();
                (n.to_string(), u64::from_str_radix(a, 16).unwrap())
            })
            .collect();
        let sym = parse(&stdout(&dumpsyms(&[&fixture(&format!(
            "bin/ppc64/{name}"
        ))])));
        assert!(sym.publics.len() >= 5);
        for (addr, pname, _) in &sym.publics {
            assert_eq!(code.get(pname), Some(addr), "{name}: PUBLIC {pname}");
        }
        for f in &sym.funcs {
            assert_eq!(
                code.get(&f.name),
                Some(&f.address),
                "{name}: FUNC {}",
                f.name
            );
        }
    }
}

#[test]
fn ppc64le_local_entry_points_do_not_duplicate_functions() {
    // ELFv2 functions have a global and a local entry point (8 bytes in); readelf shows
    // `[<localentry>: 8]`. One function, one record.
    let sym = parse(&stdout(&dumpsyms(&[&fixture("bin/ppc64le/unwind-gcc-O2")])));
    let mut names: Vec<&str> = sym.funcs.iter().map(|f| f.name.as_str()).collect();
    names.extend(sym.publics.iter().map(|p| p.1.as_str()));
    let total = names.len();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), total, "a name appears twice: {names:?}");
    for f in &sym.funcs {
        assert!(
            sym.publics.iter().all(|p| p.0 != f.address + 8),
            "PUBLIC at {}'s local entry",
            f.name
        );
    }
}

#[test]
fn publics_are_only_where_no_function_is() {
    let sym = parse(&stdout(&dumpsyms(&[&fixture(
        "bin/x86_64/c-gcc-O2-dwarf5",
    )])));
    for (addr, name, _) in &sym.publics {
        assert!(
            sym.lookup(*addr).is_none(),
            "PUBLIC {name} at {addr:#x} is inside a FUNC"
        );
    }
    // The startup code has no DWARF, so it is covered by PUBLICs.
    assert!(sym.publics.iter().any(|p| p.1 == "_start"));
}

#[test]
fn multiple_field_only_with_dash_m() {
    let bin = fixture("bin/x86_64/c-gcc-O2-dwarf5");
    let plain = parse(&stdout(&dumpsyms(&[&bin])));
    assert!(plain.funcs.iter().all(|f| !f.multiple));
    let with_m = parse(&stdout(&dumpsyms(&["-m", &bin])));
    let multiple: Vec<&str> = with_m
        .funcs
        .iter()
        .filter(|f| f.multiple)
        .map(|f| f.name.as_str())
        .collect();
    // weird_sum_alias is an alias of weird_sum: two symbols, one function.
    assert_eq!(multiple, vec!["weird_sum"]);
}

#[test]
fn addresses_are_relative_to_the_load_address_unless_dash_a() {
    let bin = fixture("bin/x86_64/c-gcc-O2-dwarf5-nopie");
    let rel = parse(&stdout(&dumpsyms(&[&bin])));
    let abs = parse(&stdout(&dumpsyms(&["-a", &bin])));
    let main_rel = rel.funcs.iter().find(|f| f.name == "main").unwrap().address;
    let main_abs = abs.funcs.iter().find(|f| f.name == "main").unwrap().address;
    assert_eq!(main_abs - main_rel, 0x400000);
    let nm =
        std::fs::read_to_string(fixtures().join("oracle/x86_64/c-gcc-O2-dwarf5-nopie.nm")).unwrap();
    let nm_main = nm.lines().find(|l| l.ends_with(" main")).unwrap();
    assert_eq!(
        main_abs,
        u64::from_str_radix(nm_main.split(' ').next().unwrap(), 16).unwrap()
    );
}

#[test]
fn stack_cfi_unless_dash_c() {
    let bin = fixture("bin/aarch64/unwind-gcc-O2");
    let with = parse(&stdout(&dumpsyms(&[&bin])));
    let without = stdout(&dumpsyms(&["-c", &bin]));
    assert!(with.cfi_lines > 20);
    assert!(!without.contains("STACK"));
    // Everything else is unchanged.
    let with_text = stdout(&dumpsyms(&[&bin]));
    let stripped: String = with_text
        .lines()
        .filter(|l| !l.starts_with("STACK"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert_eq!(stripped, without);
}

#[test]
fn inlines_only_with_dash_d() {
    let bin = fixture("bin/x86_64/cpp-gcc-O2-dwarf5");
    let plain = stdout(&dumpsyms(&[&bin]));
    assert!(!plain.contains("\nINLINE"));
    for flag in ["-d", "--inlines"] {
        let text = stdout(&dumpsyms(&[flag, &bin]));
        assert!(
            text.contains("\nINLINE_ORIGIN ") && text.contains("\nINLINE 0 "),
            "{flag}"
        );
        // Without inlines the rest of the file is the same.
        let stripped: String = text
            .lines()
            .filter(|l| !l.starts_with("INLINE"))
            .map(|l| format!("{l}\n"))
            .collect();
        assert_eq!(stripped, plain, "{flag}");
    }
}

#[test]
fn dash_r_stops_following_references_between_units() {
    // LTO units refer to abstract functions in other units (DW_FORM_ref_addr).
    let bin = fixture("bin/x86_64/cpp-gcc-O2-dwarf5-lto");
    let with = parse(&stdout(&dumpsyms(&["-d", &bin])));
    let without = parse(&stdout(&dumpsyms(&["-d", "-r", &bin])));
    let names = |s: &SymFile| {
        s.origins
            .values()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
    };
    assert!(names(&with).contains("geo::total_area(geo::Shape const* const*, unsigned long)"));
    assert!(!names(&without).contains("geo::total_area(geo::Shape const* const*, unsigned long)"));
    assert!(names(&with).len() > 2 * names(&without).len());
}

#[test]
fn output_file_is_the_same_as_stdout_and_written_atomically() {
    let bin = fixture("bin/aarch64/cpp-clang-O2-dwarf5");
    let dir = scratch("output");
    let target = dir.join("sub/app.sym");
    let out = dumpsyms(&["--output", target.to_str().unwrap(), &bin]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        stdout(&dumpsyms(&[&bin]))
    );
    // A failed dump leaves neither the target nor a temporary file behind.
    let failed_target = dir.join("bad.sym");
    let out = dumpsyms(&[
        "--output",
        failed_target.to_str().unwrap(),
        &fixture("src/sample.c"),
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(!failed_target.exists());
    let leftovers: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("sub")]);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn store_writes_the_symbol_server_layout_for_each_input() {
    let dir = scratch("store");
    let a = fixture("bin/x86_64/c-gcc-O2-dwarf5");
    let b = fixture("bin/i686/cpp-gcc-O2-dwarf4");
    let out = dumpsyms(&["--store", dir.to_str().unwrap(), &a, &b]);
    assert!(out.status.success(), "{}", stderr(&out));
    for bin in [&a, &b] {
        let header = stdout(&dumpsyms(&["-i", bin]));
        let f: Vec<&str> = header.lines().next().unwrap().split(' ').collect();
        let (id, name) = (f[3], f[4]);
        let path = dir.join(name).join(id).join(format!("{name}.sym"));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            stdout(&dumpsyms(&[bin]))
        );
    }
    // One bad input: the others are still written, and the exit code says it failed.
    let dir2 = scratch("store2");
    let out = dumpsyms(&[
        "--store",
        dir2.to_str().unwrap(),
        &fixture("src/sample.c"),
        &a,
    ]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("sample.c"));
    assert!(dir2.join("c-gcc-O2-dwarf5").is_dir());
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::remove_dir_all(&dir2).unwrap();
}

/// Runs dumpsyms, failing the test (not hanging it) if it has not finished in 30 s.
fn dumpsyms_within_30s(args: &[&str]) -> Output {
    let mut child = dumpsyms_command()
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run dumpsyms");
    let start = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > std::time::Duration::from_secs(30) {
            child.kill().unwrap();
            panic!("dumpsyms {args:?} hung");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

#[test]
fn pipes_are_refused_or_skipped_never_opened() {
    let dir = scratch("fifo");
    // Given as the input: refused at once, naming the file.
    let fifo = dir.join("app");
    mkfifo(&fifo);
    let out = dumpsyms_within_30s(&[fifo.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.contains("app") && err.contains("not a regular file"),
        "{err}"
    );
    // Met while looking for a Mach-O's dSYM beside it: not a bundle, so not looked into;
    // the binary dumps from its own symbols and unwind tables.
    let binary = dir.join("mac-x86_64-O2");
    std::fs::copy(fixture("macho/mac-x86_64-O2"), &binary).unwrap();
    mkfifo(&dir.join("mac-x86_64-O2.dSYM"));
    let out = dumpsyms_within_30s(&[binary.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stdout(&out).starts_with("MODULE mac x86_64 "));
    // In a debug directory where a build-ID path is looked for: skipped.
    let stripped = fixture("extra/buildid/app");
    let id_dir = dir.join("debug/.build-id");
    let id = std::fs::read_dir(fixture("extra/debugroot/.build-id"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    let sub = id_dir.join(&id);
    std::fs::create_dir_all(&sub).unwrap();
    for f in std::fs::read_dir(fixture(&format!(
        "extra/debugroot/.build-id/{}",
        id.to_string_lossy()
    )))
    .unwrap()
    {
        mkfifo(&sub.join(f.unwrap().file_name()));
    }
    let debug_dir = dir.join("debug");
    let out = dumpsyms_within_30s(&[&stripped, debug_dir.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn errors_name_the_file_and_the_problem() {
    let dir = scratch("errors");
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").unwrap();
    let cases: [(&str, &str); 5] = [
        ("/nonexistent/app", "cannot read file"),
        (&fixture("src/sample.c"), "not an object file"),
        (&fixture("src"), "is a directory"),
        ("/dev/null", "not a regular file"),
        (empty.to_str().unwrap(), "empty file"),
    ];
    for (path, what) in cases {
        let out = dumpsyms(&[path]);
        assert_eq!(out.status.code(), Some(1), "{path}");
        let err = stderr(&out);
        assert!(err.contains(path) && err.contains(what), "{path}: {err}");
        assert!(out.stdout.is_empty(), "{path}: wrote output");
    }
    // Usage errors exit with 2.
    assert_eq!(dumpsyms(&[]).status.code(), Some(2));
    assert_eq!(dumpsyms(&["--jobs", "0", "x"]).status.code(), Some(2));
    assert_eq!(dumpsyms(&["--no-such-flag", "x"]).status.code(), Some(2));
}

#[test]
fn version_and_help() {
    let v = dumpsyms(&["--version"]);
    assert!(v.status.success(), "{}", stderr(&v));
    // One line: the version, then the commit when built from a checkout.
    let line = stdout(&v);
    assert_eq!(line.lines().count(), 1, "{line:?}");
    let rest = line
        .trim_end()
        .strip_prefix(concat!("dumpsyms ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("{line:?}"));
    let head = std::process::Command::new("git")
        .args(["-C", env!("CARGO_MANIFEST_DIR"), "rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8(o.stdout).unwrap());
    match head {
        Some(hash) => assert_eq!(rest, format!(" ({})", &hash[..12]), "{line:?}"),
        None => assert_eq!(rest, "", "{line:?}"),
    }
    let h = stdout(&dumpsyms(&["--help"]));
    for flag in [
        "-i",
        "-c",
        "-d",
        "-m",
        "-n",
        "-o",
        "-b",
        "-a",
        "-v",
        "--inlines",
        "--output",
        "--store",
        "--jobs",
    ] {
        assert!(h.contains(flag), "--help lacks {flag}");
    }
}

#[test]
fn output_is_identical_for_any_thread_count() {
    let mut inputs: Vec<PathBuf> = fixture_binaries().into_iter().map(|b| b.2).collect();
    // Mach-O: DWARF from the dSYM, CFI from compact unwind and __eh_frame.
    for name in [
        "mac-x86_64-O0",
        "mac-x86_64-O2",
        "mac-arm64-O0",
        "mac-arm64-O2",
    ] {
        inputs.push(fixtures().join("macho").join(name));
    }
    // The test binary itself: many compilation units, so scheduling really varies.
    inputs.push(Path::new(env!("CARGO_BIN_EXE_dumpsyms")).to_path_buf());
    for bin in inputs {
        let bin = bin.to_str().unwrap();
        let one = dumpsyms(&["-d", "--jobs", "1", bin]);
        let eight = dumpsyms(&["-d", "--jobs", "8", bin]);
        assert!(one.status.success());
        assert!(
            one.stdout == eight.stdout,
            "{bin}: output differs between --jobs 1 and 8"
        );
    }
}

#[test]
fn file_paths_are_normalized_and_remapped_first_match_first() {
    // clang records `/fixtures/src/./geometry.hpp` (llvm-symbolizer prints it so).
    let bin = fixture("bin/x86_64/cpp-clang-O2-dwarf4");
    let plain = stdout(&dumpsyms(&[&bin]));
    let files: Vec<&str> = plain.lines().filter(|l| l.starts_with("FILE ")).collect();
    assert!(
        files.contains(&"FILE 1 /fixtures/src/geometry.hpp"),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .all(|f| !f.contains("/./") && !f.contains("/../") && !f.contains("//")),
        "{files:?}"
    );
    let out = dumpsyms(&[
        "--prefix-map",
        "/fixtures/src/=https://example.org/src/",
        "--prefix-map",
        "/fixtures/=/never/",
        "--prefix-map",
        "/usr/include/=/sdk/",
        &bin,
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mapped = stdout(&out);
    let mapped_files: Vec<&str> = mapped.lines().filter(|l| l.starts_with("FILE ")).collect();
    assert_eq!(mapped_files.len(), files.len());
    assert!(
        mapped_files
            .iter()
            .any(|f| f.ends_with(" https://example.org/src/geometry.hpp")),
        "{mapped_files:?}"
    );
    assert!(
        mapped_files
            .iter()
            .all(|f| !f.contains("/never/") && !f.contains(" /usr/include/"))
    );
    assert!(mapped_files.iter().any(|f| f.contains(" /sdk/c++/12/")));
    // Only FILE records differ, and which ids lines refer to (ids follow name order).
    let count = |t: &str| t.lines().filter(|l| !l.starts_with("FILE ")).count();
    assert_eq!(count(&plain), count(&mapped));
    let bad = dumpsyms(&["--prefix-map", "no-equals-sign", &bin]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(stderr(&bad).contains("OLD=NEW"), "{}", stderr(&bad));
}

#[test]
fn extra_info_records_follow_the_generator() {
    let bin = fixture("bin/x86_64/c-gcc-O2-dwarf5");
    for args in [vec!["-i"], vec![]] {
        let mut all = args.clone();
        all.extend([
            "--extra-info",
            "version 1.2.3",
            "--extra-info",
            "VCS_URL https://example.org/app rev 42",
        ]);
        all.push(&bin);
        let out = dumpsyms(&all);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        let lines: Vec<&str> = text.lines().take(5).collect();
        assert!(lines[2].starts_with("INFO GENERATOR "), "{lines:?}");
        assert_eq!(lines[3], "INFO VERSION 1.2.3");
        assert_eq!(lines[4], "INFO VCS_URL https://example.org/app rev 42");
        parse(&text);
    }
    for bad in ["", "KEY", "   value-less   "] {
        let out = dumpsyms(&["--extra-info", bad, &bin]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
    }
}

/// Every flag `--help` lists, short and long (`-d`, `--inlines`).
fn flags_in_help(command: &[&str]) -> Vec<String> {
    let help = stdout(&dumpsyms(&[command, &["--help"]].concat()));
    let mut flags = Vec::new();
    for line in help.lines() {
        let line = line.trim_start();
        if !line.starts_with('-') {
            continue;
        }
        for word in line.split([',', ' ']).filter(|w| w.starts_with('-')) {
            let flag = word.split(['=', '<']).next().unwrap();
            if flag.len() > 1 && !flags.iter().any(|f| f == flag) {
                flags.push(flag.to_string());
            }
        }
    }
    flags
}

/// Whether `flag` occurs in `text` as a word of its own: `-i` is not in `--inlines`.
fn mentions(text: &str, flag: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    text.match_indices(flag).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + flag.len()..].chars().next();
        !before.is_some_and(word) && !after.is_some_and(word)
    })
}

#[test]
fn completions_and_the_man_page_mention_every_flag() {
    let flags = flags_in_help(&[]);
    let symbolize_flags: Vec<String> = flags_in_help(&["symbolize"])
        .into_iter()
        .filter(|f| f != "-h" && f != "--help")
        .collect();
    assert!(
        symbolize_flags.iter().any(|f| f == "--symbols-url"),
        "{symbolize_flags:?}"
    );
    for expected in [
        "-i",
        "-d",
        "--inlines",
        "--store",
        "--symbol-server",
        "--jobs",
    ] {
        assert!(flags.iter().any(|f| f == expected), "{flags:?}");
    }
    for shell in ["bash", "zsh", "fish", "powershell", "elvish"] {
        let o = dumpsyms(&["completions", shell]);
        assert!(o.status.success(), "{shell}: {}", stderr(&o));
        let script = stdout(&o);
        for flag in &flags {
            // fish names them `-s i` and `-l inlines`.
            let found = if shell == "fish" {
                match flag.strip_prefix("--") {
                    Some(long) => script.contains(&format!(" -l {long} ")),
                    None => script.contains(&format!(" -s {} ", &flag[1..])),
                }
            } else {
                mentions(&script, flag)
            };
            assert!(found, "the {shell} completions lack {flag}");
        }
        for command in ["completions", "man", "symbolize"] {
            assert!(script.contains(command), "{shell} lacks {command}");
        }
        if shell != "fish" {
            for flag in &symbolize_flags {
                assert!(
                    mentions(&script, flag),
                    "the {shell} completions lack symbolize {flag}"
                );
            }
        }
    }
    let man = dumpsyms(&["man"]);
    assert!(man.status.success(), "{}", stderr(&man));
    let roff = stdout(&man);
    assert!(roff.contains(".TH dumpsyms 1"), "{roff}");
    // Roff's escapes for a minus and for fonts (`\fB\-i\fR`) read as plain text.
    let unescaped = [r"\fB", r"\fI", r"\fR"]
        .iter()
        .fold(roff.replace(r"\-", "-"), |text, font| {
            text.replace(font, " ")
        });
    for flag in &flags {
        assert!(mentions(&unescaped, flag), "the man page lacks {flag}");
    }
    // The commands are described in the page, not pointed to as pages of their own.
    let commands = &unescaped[unescaped.find(".SH COMMANDS").expect("a COMMANDS section")..];
    for command in ["dumpsyms completions", "dumpsyms man", "dumpsyms symbolize"] {
        assert!(commands.contains(command), "the man page lacks {command}");
    }
    for flag in &symbolize_flags {
        assert!(
            mentions(commands, flag),
            "the COMMANDS section lacks symbolize {flag}"
        );
    }
    assert!(!unescaped.contains("dumpsyms-man(1)"), "{roff}");
    assert_eq!(dumpsyms(&["completions", "tcsh"]).status.code(), Some(2));
}

/// The bash script, sourced by bash, completes what a user types: a flag's prefix, a
/// shell's name.
#[test]
fn bash_completes_flags_and_shells() {
    let script = stdout(&dumpsyms(&["completions", "bash"]));
    let complete = |words: &str| {
        let o = std::process::Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source /dev/stdin; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}}-1)); \
                 _dumpsyms dumpsyms \"${{COMP_WORDS[-1]}}\" \"${{COMP_WORDS[-2]}}\"; \
                 printf '%s\\n' \"${{COMPREPLY[@]}}\""
            ))
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(script.as_bytes())?;
                child.wait_with_output()
            })
            .expect("bash runs");
        assert!(o.status.success(), "{}", stderr(&o));
        stdout(&o).lines().map(str::to_string).collect::<Vec<_>>()
    };
    assert_eq!(complete("dumpsyms --skip-ex"), ["--skip-existing"]);
    assert_eq!(complete("dumpsyms --upload-pro"), ["--upload-protocol"]);
    let shells = complete("dumpsyms completions ''");
    for shell in ["bash", "elvish", "fish", "powershell", "zsh"] {
        assert!(shells.iter().any(|s| s == shell), "{shells:?}");
    }
}

/// The allocator options the binary carries (src/bin/dumpsyms/main.rs, `MALLOC_CONF`) are the ones
/// jemalloc runs with: were the symbol's name to change with the jemalloc crate, they
/// would be dropped without a word and only the benchmark would notice.
#[cfg(all(target_os = "linux", not(target_env = "msvc")))]
#[test]
fn the_allocator_runs_with_the_options_the_binary_carries() {
    let out = dumpsyms_command()
        .env("_RJEM_MALLOC_CONF", "stats_print:true")
        .args(["-q", &fixture("bin/x86_64/cpp-gcc-O2-dwarf5")])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stats = stderr(&out);
    assert!(stats.contains("opt.oversize_threshold: 0\n"), "{stats}");
    assert!(stats.contains("opt.dirty_decay_ms: 2000 "), "{stats}");
}

/// Dumps of debug-only files, lone PDBs and dSYMs have no STACK records, and users of
/// every peer tool uploaded them and found out only when crashes did not unwind. Each
/// is told, without -v, with what to dump instead; the exit status is unchanged, and a
/// binary with unwind tables (or `-c`, which asks for none) says nothing of it.
#[test]
fn inputs_without_unwind_tables_say_what_to_dump_instead() {
    let work = scratch("no-stack");
    std::fs::copy(
        fixtures().join("windows/msvc-x86_64/app.pdb"),
        work.join("app.pdb"),
    )
    .unwrap();
    let pdb = work.join("app.pdb");
    let cases = [
        (
            fixtures().join("extra/debuglink/app.debug"),
            "a debug-only file (objcopy --only-keep-debug)",
        ),
        (
            pdb.clone(),
            "no image of this build was found beside it (looked for",
        ),
        (
            fixtures().join("macho/mac-arm64-O2.dSYM"),
            "a dSYM holds no unwind tables",
        ),
    ];
    for (input, expected) in &cases {
        let out = dumpsyms_command().arg(input).output().unwrap();
        let err = stderr(&out);
        assert!(out.status.success(), "{err}");
        assert!(!stdout(&out).contains("STACK "), "{}", input.display());
        assert!(
            err.contains("no STACK records"),
            "{}: {err}",
            input.display()
        );
        assert!(err.contains(expected), "{}: {err}", input.display());
        let quiet_cfi = dumpsyms_command().arg("-c").arg(input).output().unwrap();
        assert!(
            !stderr(&quiet_cfi).contains("STACK"),
            "{}",
            stderr(&quiet_cfi)
        );
    }
    assert!(
        stderr(
            &Command::new(env!("CARGO_BIN_EXE_dumpsyms"))
                .arg(&pdb)
                .output()
                .unwrap()
        )
        .contains(&work.join("app").display().to_string())
    );
    // What a library caller gets: the reason as a value.
    use dumpsyms::NoStackRecords;
    let mut opts = dumpsyms::Options::default();
    opts.cfi = true;
    let why = |input: &std::path::Path| dumpsyms::dump(input, &opts).unwrap().no_stack_records;
    assert_eq!(
        why(&fixtures().join("extra/debuglink/app.debug")),
        Some(NoStackRecords::DebugOnly)
    );
    assert_eq!(
        why(&fixtures().join("macho/mac-arm64-O2.dSYM")),
        Some(NoStackRecords::Dsym)
    );
    assert_eq!(
        why(&pdb),
        Some(NoStackRecords::PdbWithoutImage {
            stem: work.join("app")
        })
    );
    assert_eq!(why(&fixtures().join("extra/debuglink/app")), None);
    for with_tables in ["extra/debuglink/app", "windows/msvc-x86_64/app.pdb"] {
        let out = dumpsyms_command()
            .arg(fixtures().join(with_tables))
            .output()
            .unwrap();
        assert!(stdout(&out).contains("STACK "), "{with_tables}");
        assert!(
            !stderr(&out).contains("no STACK records"),
            "{}",
            stderr(&out)
        );
    }
    std::fs::remove_dir_all(&work).ok();
}
