//! The other dumpers' command lines, replayed with dumpsyms in their place: where the
//! output goes, the store's layout, the MODULE line and the exit status are the peer's.
//! Mozilla's dump_syms 2.3.9 was run on the same lines (`fixtures/peers/mozilla.tsv`,
//! recorded by `record-mozilla.sh`); Breakpad's tools, which cannot run here, are held
//! to what their sources say they do (`fixtures/peers/breakpad-cases.txt`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::common::{dumpsyms_command, fixtures, scratch};

/// What a command line did: exit status, the MODULE line on standard output (`-` for
/// none), each file it wrote with its MODULE line.
#[derive(Debug, PartialEq, Eq)]
struct Did {
    exit: i32,
    stdout: String,
    files: BTreeMap<String, String>,
}

/// Runs `line` (its first word is the peer's name) with dumpsyms in a fresh layout of
/// the inputs (`fixtures/peers/lay-out.sh`).
fn replay(case: &str, line: &str) -> Did {
    let work = scratch(&format!("peers-{case}"));
    let laid = Command::new("bash")
        .arg(fixtures().join("peers/lay-out.sh"))
        .arg(fixtures())
        .arg(&work)
        .status()
        .unwrap();
    assert!(laid.success());
    let marker = std::fs::metadata(work.join(".laid"))
        .unwrap()
        .modified()
        .unwrap();
    let words: Vec<&str> = line.split_whitespace().skip(1).collect();
    let o = dumpsyms_command()
        .current_dir(&work)
        .env("HOME", &work)
        .args(&words)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout)
        .lines()
        .next()
        .unwrap_or("-")
        .to_string();
    let mut files = BTreeMap::new();
    for f in walk(&work) {
        let meta = std::fs::metadata(&f).unwrap();
        let name = f
            .strip_prefix(&work)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if meta.modified().unwrap() > marker && !name.starts_with('.') {
            let text = std::fs::read_to_string(&f).unwrap_or_default();
            files.insert(name, text.lines().next().unwrap_or("").to_string());
        }
    }
    std::fs::remove_dir_all(&work).ok();
    Did {
        exit: o.status.code().unwrap_or(-1),
        stdout,
        files,
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

fn files_of(text: &str) -> BTreeMap<String, String> {
    text.split(';')
        .filter(|f| !f.is_empty() && *f != "-")
        .map(|f| {
            let (path, module) = f.split_once('=').unwrap();
            (path.to_string(), module.to_string())
        })
        .collect()
}

/// A MODULE line as the comparison reads it. Two differences are by design, the same
/// for every file: Mozilla's dumper writes `Mac` where Breakpad's own Mac tool (and
/// this one) writes `mac` (the peers disagree, and no stack walker reads the field to
/// find a file), and it names a dSYM dumped on its own after the bundle (`App.dSYM`)
/// where Breakpad's tool and this one name it after its binary (`App`), the name crash
/// reports look it up by.
fn comparable(module: &str) -> String {
    module
        .replacen("MODULE Mac ", "MODULE mac ", 1)
        .replace(".dSYM", "")
}

#[test]
fn mozillas_command_lines_do_what_mozillas_dumper_did() {
    let recorded = std::fs::read_to_string(fixtures().join("peers/mozilla.tsv")).unwrap();
    let cases = std::fs::read_to_string(fixtures().join("peers/mozilla-cases.txt")).unwrap();
    let lines: BTreeMap<&str, &str> = cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .filter_map(|l| l.split_once('|'))
        .collect();
    let mut checked = 0;
    for row in recorded.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        let [case, exit, stdout, files] = cols[..] else {
            panic!("{row}");
        };
        let want = Did {
            exit: exit.parse().unwrap(),
            stdout: comparable(stdout),
            files: files_of(files)
                .into_iter()
                .map(|(p, m)| (p, comparable(&m)))
                .collect(),
        };
        let did = replay(case, lines[case]);
        assert_eq!(did, want, "{case}: {}", lines[case]);
        checked += 1;
    }
    assert_eq!(checked, lines.len());
}

#[test]
fn breakpads_command_lines_do_what_breakpads_tools_do() {
    let cases = std::fs::read_to_string(fixtures().join("peers/breakpad-cases.txt")).unwrap();
    let mut checked = 0;
    for row in cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let cols: Vec<&str> = row.split('|').collect();
        let [case, line, exit, stdout, files] = cols[..] else {
            panic!("{row}");
        };
        let want = Did {
            exit: exit.parse().unwrap(),
            stdout: stdout.to_string(),
            files: files_of(files),
        };
        assert_eq!(replay(case, line), want, "{case}: {line}");
        checked += 1;
    }
    assert!(checked >= 13);
}

/// What the peers' flags change in the file, each checked against the other reading.
#[test]
fn each_peers_flag_changes_what_it_says() {
    let app = fixtures().join("bin/x86_64/c-gcc-O2-dwarf5");
    let app = app.to_str().unwrap();
    let run = |args: &[&str]| {
        let o = dumpsyms_command().args(args).output().unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    // --no-generator: the same file without INFO GENERATOR.
    let (_, with, _) = run(&[app]);
    let (_, without, _) = run(&["--no-generator", app]);
    assert!(with.contains("INFO GENERATOR") && !without.contains("INFO GENERATOR"));
    assert_eq!(
        with.lines()
            .filter(|l| !l.starts_with("INFO GENERATOR"))
            .collect::<Vec<_>>(),
        without.lines().collect::<Vec<_>>()
    );
    // --check-cfi: a PDB without its image has no STACK record: exit 1, one line, and
    // nothing on standard output.
    let work = scratch("peers-check-cfi");
    std::fs::copy(
        fixtures().join("windows/msvc-x86_64/app.pdb"),
        work.join("app.pdb"),
    )
    .unwrap();
    let pdb = work.join("app.pdb");
    let (code, out, err) = run(&["--check-cfi", pdb.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{err}");
    assert!(out.is_empty());
    assert!(err.contains("no STACK records (--check-cfi)"), "{err}");
    // In a store run, the input is a failure, named.
    let store = work.join("store");
    let (code, _, err) = run(&[
        "--check-cfi",
        "--store",
        store.to_str().unwrap(),
        pdb.to_str().unwrap(),
    ]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("1 failed") && err.contains("app.pdb"), "{err}");
    assert!(walk(&store).is_empty());
    // --pe: the image alone, its PDB beside it not read (no FUNC records, PUBLICs and
    // STACK CFI from the image).
    let exe = fixtures().join("windows/msvc-x86_64/app.exe");
    let (_, with_pdb, _) = run(&[exe.to_str().unwrap()]);
    let (_, alone, err) = run(&["--pe", exe.to_str().unwrap()]);
    assert!(with_pdb.contains("\nFUNC "), "{with_pdb:.300}");
    assert!(
        !alone.contains("\nFUNC ") && alone.contains("STACK CFI"),
        "{err}"
    );
    // -x (--prefer-symbol-names): Breakpad Mac's; every FUNC named as a symbol at its
    // address names it, where one does.
    let (_, plain, _) = run(&[app]);
    let (_, preferred, _) = run(&["-x", app]);
    assert_eq!(plain.lines().count(), preferred.lines().count());
    std::fs::remove_dir_all(&work).ok();
}

/// `-o`, `-a` and `--verbose` read both ways and refused when they could mean both.
#[test]
fn colliding_flags_are_read_by_their_values() {
    let work = scratch("peers-collide");
    let app = fixtures().join("bin/x86_64/c-gcc-O2-dwarf5");
    std::fs::copy(&app, work.join("app")).unwrap();
    let run = |args: &[&str]| {
        dumpsyms_command()
            .current_dir(&work)
            .args(args)
            .output()
            .unwrap()
    };
    // -o: an OS name is the OS; anything else the file.
    let o = run(&["-o", "Android", "app"]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("MODULE Android "));
    let o = run(&["-o", "out.sym", "app"]);
    assert!(o.status.success() && o.stdout.is_empty());
    assert!(
        std::fs::read_to_string(work.join("out.sym"))
            .unwrap()
            .starts_with("MODULE Linux ")
    );
    // Both readings possible: refused, naming both.
    for args in [
        &["-o", "Linux", "-s", "store", "app"][..],
        &["-c", "-o", "out2.sym", "app"][..],
        &["--verbose", "app"][..],
    ] {
        let o = run(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("Mozilla") && err.contains("Breakpad"), "{err}");
    }
    assert!(!work.join("out2.sym").exists() && !work.join("store").exists());
    // -a: an architecture name is the architecture, another word this command's switch
    // before the input; an architecture name that is also a file: refused.
    let o = run(&["-a", "x86_64", "app"]);
    assert!(o.status.success());
    let o = run(&["-a", "app"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::copy(&app, work.join("arm64")).unwrap();
    let o = run(&["-a", "arm64"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ambiguous") && err.contains("--arch arm64"),
        "{err}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// The FILE path of each line record of `input` (relative to fixtures/) dumped with
/// `args`, by the record's address: FILE numbers follow the written paths' order, so
/// the line records are what pairs a path with its mapped self.
fn file_paths(input: &str, args: &[&str]) -> BTreeMap<u64, String> {
    let o = dumpsyms_command()
        .current_dir(fixtures())
        .args(args)
        .arg(input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    let mut files = BTreeMap::new();
    let mut at = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("FILE ") {
            let (n, path) = rest.split_once(' ').unwrap();
            files.insert(n.to_string(), path.to_string());
        } else if line.starts_with(|c: char| c.is_ascii_hexdigit()) {
            let f: Vec<&str> = line.split(' ').collect();
            if let (Ok(addr), Some(path)) = (u64::from_str_radix(f[0], 16), files.get(f[3])) {
                at.insert(addr, path.clone());
            }
        }
    }
    at
}

/// Source links (`--mapping-*`) agree byte for byte with Mozilla's dump_syms 2.3.9 on
/// every FILE path both write, for each case of `fixtures/peers/mapping-cases.txt`
/// (recorded by `record-mapping.sh`): groups, variables, the first match, a group that
/// took no part, a mapping file's listed files before its others, `{digest}` and
/// `{DIGEST}` of sources laid out where the debug information says they are, and a
/// source that cannot be read (left unmapped, with one warning).
#[test]
fn source_links_are_mozillas_byte_for_byte() {
    let root = Path::new("/tmp/dumpsyms-mapping");
    let _ = std::fs::remove_dir_all(root);
    std::fs::create_dir_all(root.join("src")).unwrap();
    for f in ["a.c", "b.h"] {
        std::fs::copy(
            fixtures().join("peers/mapping-src").join(f),
            root.join("src").join(f),
        )
        .unwrap();
    }
    let recorded = std::fs::read_to_string(fixtures().join("peers/mapping.tsv")).unwrap();
    let mut want: BTreeMap<(String, String), String> = BTreeMap::new();
    for row in recorded.lines().skip(1) {
        let cols: Vec<&str> = row.split('\t').collect();
        want.insert((cols[0].into(), cols[1].into()), cols[2].into());
    }
    let cases = std::fs::read_to_string(fixtures().join("peers/mapping-cases.txt")).unwrap();
    let (mut compared, mut mapped) = (0, 0);
    for line in cases
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
    {
        let parts: Vec<&str> = line.split('|').collect();
        let (case, input, args) = (parts[0], parts[1], &parts[2..]);
        let plain = file_paths(input, &[]);
        let ours = file_paths(input, args);
        assert_eq!(plain.len(), ours.len(), "{case}");
        let pairs: std::collections::BTreeSet<(&String, &String)> = plain
            .iter()
            .map(|(addr, path)| (path, &ours[addr]))
            .collect();
        for (path, ours) in pairs {
            if let Some(theirs) = want.get(&(case.to_string(), path.clone())) {
                assert_eq!(ours, theirs, "{case}: {path}");
                compared += 1;
                mapped += usize::from(ours != path);
            }
        }
    }
    let _ = std::fs::remove_dir_all(root);
    // Every recorded path that a line record uses is one this dumper writes too.
    assert!(
        compared * 10 >= want.len() * 9,
        "{compared} of {}",
        want.len()
    );
    assert!(mapped >= 15, "{mapped}");
}

/// A source that cannot be read for its digest is written unmapped, with one warning
/// naming it, however many times it is met.
#[test]
fn an_unreadable_source_is_named_once() {
    let o = dumpsyms_command()
        .current_dir(fixtures())
        .args([
            "--mapping-src=/tmp/dumpsyms-mapping-absent/(.*)",
            "--mapping-dest=x:{digest}/{1}",
        ])
        .args([
            "--prefix-map",
            "/tmp/dumpsyms-mapping/=/tmp/dumpsyms-mapping-absent/",
            "-v",
        ])
        .arg("peers/mapping-app")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(
        err.matches("cannot read it for its digest").count(),
        3,
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("FILE 0 /tmp/dumpsyms-mapping-absent/gone/c.c"),
        "{out}"
    );
}
