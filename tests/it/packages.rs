//! Distribution packages as Mozilla's symbol scrapers hold them, built with the
//! distributions' own tools (`fixtures/packages/*/make.sh`): RPMs and their
//! `-debuginfo`/`-debugsource` packages from `rpmbuild` and `find-debuginfo`, a snap's
//! squashfs image from `mksquashfs`. Each store made from the packages is the store of
//! their trees as the distribution's tool unpacks them (`rpm2cpio | cpio`,
//! `unsquashfs`) with `--debug-dir`; and `--soname-copies` files each library under its
//! `DT_SONAME` as `readelf -d` reads it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::store::contents;

fn packages() -> PathBuf {
    fixtures().join("packages")
}

fn run(args: &[&str]) {
    let out = dumpsyms(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The files of `dir` ending in `.rpm`, sorted.
fn rpms(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "rpm"))
        .collect();
    found.sort();
    found
}

/// Unpacks `rpm` into `into` as `rpm2cpio rpm | cpio -idm` does.
fn rpm2cpio(rpm: &Path, into: &Path) {
    std::fs::create_dir_all(into).unwrap();
    let status = Command::new("sh")
        .arg("-c")
        .arg("rpm2cpio \"$1\" | cpio -idm --quiet")
        .arg("sh")
        .arg(rpm)
        .current_dir(into)
        .status()
        .expect("rpm2cpio and cpio (apt-get install rpm2cpio cpio)");
    assert!(status.success(), "rpm2cpio | cpio on {}", rpm.display());
}

/// Each module's symbol file in `store` has FILE and FUNC records: its debug file was
/// paired with it.
fn assert_paired(store: &std::collections::BTreeMap<String, Vec<u8>>) {
    for (path, sym) in store {
        let text = String::from_utf8_lossy(sym);
        assert!(
            text.lines().any(|l| l.starts_with("FILE "))
                && text.lines().any(|l| l.starts_with("FUNC ")),
            "{path}: the debug file was not paired"
        );
    }
}

/// A Fedora-built package, its `-debuginfo` (unique debug names, `.build-id` links that
/// are symbolic links) and `-debugsource`, with zstd (Fedora's) and xz (RHEL's,
/// openSUSE's) payloads: the store from the RPMs is the store from the trees `rpm2cpio
/// | cpio` unpacks, with the debuginfo tree as `--debug-dir`; both modules paired.
#[test]
fn an_rpm_and_its_debuginfo_as_their_unpacked_trees() {
    for payload in ["zstd", "xz"] {
        let packages = rpms(&packages().join("rpm").join(payload));
        assert_eq!(packages.len(), 3, "{packages:?}");
        let work = scratch(&format!("packages-rpm-{payload}"));
        let store = work.join("from-packages");
        let mut args = vec!["--store", store.to_str().unwrap()];
        args.extend(packages.iter().map(|p| p.to_str().unwrap()));
        run(&args);
        let (bin, dbg) = (work.join("bin"), work.join("dbg"));
        for rpm in &packages {
            let name = rpm.file_name().unwrap().to_str().unwrap();
            let debug = name.contains("-debuginfo-") || name.contains("-debugsource-");
            rpm2cpio(rpm, if debug { &dbg } else { &bin });
        }
        let unpacked = work.join("from-trees");
        run(&[
            "--store",
            unpacked.to_str().unwrap(),
            "--debug-dir",
            dbg.join("usr/lib/debug").to_str().unwrap(),
            bin.to_str().unwrap(),
            dbg.to_str().unwrap(),
        ]);
        let (got, want) = (contents(&store), contents(&unpacked));
        assert_eq!(
            got.keys().collect::<Vec<_>>(),
            [
                "demo/B928F668968A2A9928120870AAC47FAE0/demo.sym",
                "libdemo.so.1.2.3/F9462A291361E8D598186FA84DDC68B00/libdemo.so.1.2.3.sym"
            ],
            "{payload}"
        );
        assert!(got == want, "{payload}: the stores differ");
        assert_paired(&got);
        // The -debuginfo alone: each debug file (Fedora's unique debug name) at its
        // binary's store path, with its functions and lines.
        let alone = work.join("debuginfo-alone");
        let debuginfo = packages.iter().find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .contains("-debuginfo-")
        });
        run(&[
            "--store",
            alone.to_str().unwrap(),
            debuginfo.unwrap().to_str().unwrap(),
        ]);
        let alone = contents(&alone);
        assert_eq!(
            alone.keys().collect::<Vec<_>>(),
            got.keys().collect::<Vec<_>>()
        );
        assert_paired(&alone);
        std::fs::remove_dir_all(&work).ok();
    }
}

/// `DT_SONAME` as `readelf -d` prints it (`Library soname: [libfoo.so.1]`).
fn readelf_soname(file: &Path) -> Option<String> {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(file)
        .output()
        .expect("readelf");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.contains("(SONAME)"))?;
    Some(line.split('[').nth(1)?.trim_end_matches(']').to_string())
}

/// With `--soname-copies`, every library whose SONAME (as `readelf -d` reads it) is not
/// its file name is in the store under both names, the same bytes; a binary without a
/// SONAME, or a library named by it, once. Without the flag, one name each.
#[test]
fn soname_copies_file_each_library_under_both_names() {
    let work = scratch("packages-soname");
    let tree = work.join("tree");
    for rpm in rpms(&packages().join("rpm/zstd")) {
        rpm2cpio(&rpm, &tree);
    }
    let store = work.join("store");
    run(&[
        "--soname-copies",
        "--store",
        store.to_str().unwrap(),
        "--debug-dir",
        tree.join("usr/lib/debug").to_str().unwrap(),
        tree.join("usr/bin").to_str().unwrap(),
        tree.join("usr/lib64").to_str().unwrap(),
    ]);
    let got = contents(&store);
    let mut expected = Vec::new();
    for binary in [
        tree.join("usr/bin/demo"),
        tree.join("usr/lib64/libdemo.so.1.2.3"),
    ] {
        let sym = dumpsyms(&["-i", binary.to_str().unwrap()]);
        let header = String::from_utf8(sym.stdout).unwrap();
        let fields: Vec<&str> = header.lines().next().unwrap().split(' ').collect();
        let (id, name) = (fields[3], fields[4]);
        let own = format!("{name}/{id}/{name}.sym");
        expected.push(own.clone());
        if let Some(soname) = readelf_soname(&binary).filter(|s| s != name) {
            let copy = format!("{soname}/{id}/{soname}.sym");
            assert_eq!(got.get(&copy), got.get(&own), "{copy}");
            expected.push(copy);
        }
    }
    expected.sort();
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), expected);
    assert!(
        expected.iter().any(|p| p.starts_with("libdemo.so.1/")),
        "readelf finds no SONAME copy to make: {expected:?}"
    );
    // Without the flag: one name each.
    let plain = work.join("plain");
    run(&[
        "--store",
        plain.to_str().unwrap(),
        tree.join("usr/lib64").to_str().unwrap(),
    ]);
    assert_eq!(contents(&plain).len(), 1);
    std::fs::remove_dir_all(&work).ok();
}

/// Snap-shaped squashfs images (`fixtures/packages/snap/make.sh`: `mksquashfs` with
/// each of its compressors, `snap pack`'s options, and one with fragments and 4 KiB
/// blocks): the store from the image is the store from the tree `unsquashfs` writes,
/// with its `usr/lib/debug` as `--debug-dir`; three modules (a hard link is a name of
/// its own), each paired with its debug file.
#[test]
fn a_snap_as_its_unsquashfs_tree() {
    let snaps = packages().join("snap");
    let mut images: Vec<PathBuf> = std::fs::read_dir(&snaps)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "snap"))
        .collect();
    images.sort();
    assert_eq!(images.len(), 6, "{images:?}");
    for image in images {
        let label = image.file_stem().unwrap().to_str().unwrap();
        let work = scratch(&format!("packages-{label}"));
        let store = work.join("from-image");
        run(&["--store", store.to_str().unwrap(), image.to_str().unwrap()]);
        let tree = work.join("squashfs-root");
        let status = Command::new("unsquashfs")
            .args(["-q", "-no-xattrs", "-d"])
            .arg(&tree)
            .arg(&image)
            .stdout(std::process::Stdio::null())
            .status()
            .expect("unsquashfs (apt-get install squashfs-tools)");
        assert!(status.success(), "unsquashfs {label}");
        let unpacked = work.join("from-tree");
        run(&[
            "--store",
            unpacked.to_str().unwrap(),
            "--debug-dir",
            tree.join("usr/lib/debug").to_str().unwrap(),
            tree.to_str().unwrap(),
        ]);
        let (got, want) = (contents(&store), contents(&unpacked));
        assert_eq!(got.len(), 3, "{label}: {:?}", got.keys());
        assert!(got == want, "{label}: the stores differ");
        assert_paired(&got);
        std::fs::remove_dir_all(&work).ok();
    }
}

/// A SONAME that climbs (`../../escape.so`, as a hostile link line can write) makes no
/// copy: the library's own symbol file is written, nothing lands outside the store, and
/// a warning says why.
#[test]
fn a_soname_that_climbs_makes_no_copy() {
    let work = scratch("packages-soname-climbs");
    let lib = work.join("libx.so");
    let source = work.join("x.c");
    std::fs::write(&source, "int x(void) { return 1; }\n").unwrap();
    let status = Command::new("gcc")
        .args(["-shared", "-fPIC", "-Wl,-soname,../../escape.so", "-o"])
        .arg(&lib)
        .arg(&source)
        .status()
        .expect("gcc");
    assert!(status.success());
    assert_eq!(readelf_soname(&lib).as_deref(), Some("../../escape.so"));
    let store = work.join("deep/store");
    let out = dumpsyms(&[
        "-v",
        "--soname-copies",
        "--store",
        store.to_str().unwrap(),
        lib.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("no copy under its SONAME"), "{err}");
    let got = contents(&store);
    assert_eq!(got.len(), 1, "{:?}", got.keys());
    assert!(got.keys().all(|k| k.starts_with("libx.so/")));
    assert!(!work.join("escape.so").exists() && !work.join("deep/escape.so").exists());
    std::fs::remove_dir_all(&work).ok();
}
