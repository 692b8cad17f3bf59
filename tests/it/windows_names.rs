//! Windows function names as the Windows dumpers write them, checked on real MSVC-built
//! PDBs against the golden symbol files Mozilla's dump_syms 2.3.9 ships with them (its
//! `test_data/windows`: `basic-opt32` and `basic-opt64`, whose goldens its own tests
//! hold its output to). Crash services group Windows crashes by FUNC names: a dumper
//! that spells them otherwise splits every crash group.
//!
//! The crate is not committed here: `.ci/run` unpacks it from the registry into
//! `target/peers/dump_syms-2.3.9` (or `DUMPSYMS_MOZILLA_CRATE` names it), and runs this
//! area by name (`--ignored windows_names::`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::common::dumpsyms;

fn crate_dir() -> PathBuf {
    std::env::var_os("DUMPSYMS_MOZILLA_CRATE").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/peers/dump_syms-2.3.9"),
        PathBuf::from,
    )
}

/// FUNC names by address.
fn funcs(text: &str) -> BTreeMap<u64, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("FUNC ") else {
            continue;
        };
        let rest = rest.strip_prefix("m ").unwrap_or(rest);
        let mut f = rest.splitn(4, ' ');
        let addr = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
        let name = f.nth(2).unwrap_or("").to_string();
        out.insert(addr, name);
    }
    out
}

#[test]
#[ignore = "needs Mozilla's dump_syms 2.3.9 crate unpacked (.ci/run does it)"]
fn func_names_match_the_windows_goldens() {
    let dir = crate_dir().join("test_data/windows");
    assert!(
        dir.is_dir(),
        "{} is missing: see this file's doc",
        dir.display()
    );
    for name in ["basic-opt32", "basic-opt64"] {
        let golden = std::fs::read_to_string(dir.join(format!("{name}.sym"))).unwrap();
        let ours = dumpsyms(&[dir.join(format!("{name}.pdb")).to_str().unwrap()]);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let (want, got) = (
            funcs(&golden),
            funcs(&String::from_utf8_lossy(&ours.stdout)),
        );
        assert_eq!(want.len(), got.len(), "{name}: FUNC records");
        let differ: Vec<String> = want
            .iter()
            .filter(|(a, n)| got.get(a) != Some(n))
            .map(|(a, n)| format!("{a:x}: golden {n:?}, ours {:?}", got.get(a)))
            .collect();
        let identical = want.len() - differ.len();
        println!("{name}: {identical} of {} FUNC names identical", want.len());
        // The bar is 99.5%; every difference is printed, and today there is none.
        assert!(
            identical * 1000 >= want.len() * 995,
            "{name}: {identical} of {}:\n{}",
            want.len(),
            differ.join("\n")
        );
        assert!(differ.is_empty(), "{name}:\n{}", differ.join("\n"));
    }
}

/// Every FUNC name of the clang-cl fixtures' PDBs as Mozilla's dump_syms 2.3.9 wrote it
/// (`fixtures/peers/windows-names.tsv`, recorded by `record-windows-names.sh`).
#[test]
fn func_names_match_mozillas_on_the_fixtures() {
    let root = crate::common::fixtures();
    let recorded = std::fs::read_to_string(root.join("peers/windows-names.tsv")).unwrap();
    let mut by_fixture: BTreeMap<&str, BTreeMap<u64, String>> = BTreeMap::new();
    for row in recorded.lines().skip(1) {
        let mut cols = row.splitn(3, '\t');
        let (fixture, addr, name) = (
            cols.next().unwrap(),
            cols.next().unwrap(),
            cols.next().unwrap(),
        );
        by_fixture
            .entry(fixture)
            .or_default()
            .insert(u64::from_str_radix(addr, 16).unwrap(), name.to_string());
    }
    assert!(by_fixture.len() >= 6);
    for (fixture, want) in by_fixture {
        let pdb = root.join("windows").join(fixture).join("app.pdb");
        let ours = dumpsyms(&[pdb.to_str().unwrap()]);
        let got = funcs(&String::from_utf8_lossy(&ours.stdout));
        assert_eq!(got, want, "{fixture}");
    }
}

/// The INLINE_ORIGIN names the INLINE records use, as a set.
fn used_origins(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = BTreeMap::new();
    let mut used = std::collections::BTreeSet::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("INLINE_ORIGIN ") {
            let (index, name) = rest.split_once(' ').unwrap();
            names.insert(index.to_string(), name.to_string());
        } else if let Some(rest) = line.strip_prefix("INLINE ") {
            used.insert(rest.split(' ').nth(3).unwrap().to_string());
        }
    }
    used.iter().map(|i| names[i].clone()).collect()
}

/// Inlined functions are named as the procedures are, with their parameter lists
/// (`CPtoLocaleName(int)`, `DName::getLastChar() const`), so an inlined frame and its
/// outlined copy group together: the names our INLINE records use are, one for one,
/// those Mozilla's dump_syms 2.3.9 uses with `--inlines` on the same PDBs
/// (`fixtures/windows/mozilla-origins`, its `make.sh`).
#[test]
#[ignore = "needs Mozilla's dump_syms 2.3.9 crate unpacked (.ci/run does it)"]
fn inline_origin_names_match_mozillas() {
    let dir = crate_dir().join("test_data/windows");
    assert!(
        dir.is_dir(),
        "{} is missing: see this file's doc",
        dir.display()
    );
    let recorded =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/windows/mozilla-origins");
    for name in ["basic-opt32", "basic-opt64", "dump_syms_regtest64"] {
        let ours = dumpsyms(&[
            "--inlines",
            dir.join(format!("{name}.pdb")).to_str().unwrap(),
        ]);
        assert!(
            ours.status.success(),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let got = used_origins(&String::from_utf8_lossy(&ours.stdout));
        let want: std::collections::BTreeSet<String> =
            std::fs::read_to_string(recorded.join(format!("{name}.txt")))
                .unwrap()
                .lines()
                .map(str::to_string)
                .collect();
        assert!(want.len() > 40, "{name}");
        let missing: Vec<_> = want.difference(&got).take(5).collect();
        let extra: Vec<_> = got.difference(&want).take(5).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{name}: {} of {} names differ; Mozilla's not ours: {missing:?}; ours not Mozilla's: {extra:?}",
            want.symmetric_difference(&got).count(),
            want.len()
        );
    }
}
