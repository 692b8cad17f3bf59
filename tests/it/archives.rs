//! `--store` over archives and packages: a store made from an archive is, byte for byte,
//! the store made from the same files unpacked, for every kind (ZIP and APK, tar plain
//! and compressed four ways, Debian `.deb`/`.ddeb`, an archive inside an archive); the
//! members are named `archive!member` and nothing is left in the store but symbol files.
//! Debug files whose binary is not in the run are dumped on their own, under the
//! binary's name. A real Debian pair (libc6 + libc6-dbg, fetched by `.ci/run`) gives
//! the same symbol files as the unpacked packages with `--debug-dir`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::store::{contents, copy_dir, tree};

/// The regular files and symbolic links under `root`, by their path under it, in name
/// order.
fn entries(root: &Path) -> Vec<(String, PathBuf)> {
    fn walk(dir: &Path, root: &Path, out: &mut Vec<(String, PathBuf)>) {
        let mut items: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        items.sort();
        for p in items {
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.is_dir() {
                walk(&p, root, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_str().unwrap().to_string();
                out.push((rel, p));
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, &mut out);
    out
}

/// A ZIP archive of `root` (links as ZIP symbolic links), each file compressed as
/// `method` says.
pub(crate) fn zip_of(root: &Path, method: zip::CompressionMethod) -> Vec<u8> {
    let mut out = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(method);
    for (rel, path) in entries(root) {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.add_symlink(rel, target.to_str().unwrap(), options)
                .unwrap();
        } else {
            out.start_file(rel, options).unwrap();
            out.write_all(&std::fs::read(&path).unwrap()).unwrap();
        }
    }
    out.finish().unwrap().into_inner()
}

/// A tar archive of `root` as `tar -C root -cf - .` makes it (`./` names, links kept).
fn tar_of(root: &Path) -> Vec<u8> {
    let mut out = tar::Builder::new(Vec::new());
    out.follow_symlinks(false);
    out.append_dir_all(".", root).unwrap();
    out.into_inner().unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    out.write_all(data).unwrap();
    out.finish().unwrap()
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut out =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
    out.write_all(data).unwrap();
    out.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut out = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    out.write_all(data).unwrap();
    out.finish().unwrap()
}

/// An `ar` archive of `members`, as `dpkg-deb --build` lays a package out.
pub(crate) fn ar(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, body) in members {
        let head = format!(
            "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            name,
            0,
            0,
            0,
            100644,
            body.len()
        );
        out.extend_from_slice(head.as_bytes());
        out.extend_from_slice(body);
        if body.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// A Debian package whose files are `data_tar`, compressed and named `data.tar<suffix>`.
pub(crate) fn deb(data_tar: &[u8], suffix: &str) -> Vec<u8> {
    let data = match suffix {
        "" => data_tar.to_vec(),
        ".gz" => gzip(data_tar),
        ".xz" => xz(data_tar),
        ".zst" => zstd(data_tar),
        ".bz2" => bzip2(data_tar),
        other => panic!("{other}"),
    };
    let control = gzip(&tar_of(&scratch("deb-control")));
    ar(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar.gz", &control),
        (&format!("data.tar{suffix}"), &data),
    ])
}

/// Runs `dumpsyms` with `args`; its exit status and stderr.
fn run(args: &[&str]) -> (bool, String) {
    let out = dumpsyms(args);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// What is in `store` besides symbol files (the run's unpacking directory, if left).
pub(crate) fn leftovers(store: &Path) -> Vec<String> {
    std::fs::read_dir(store)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_store_from_an_archive_is_the_store_from_its_files() {
    let work = scratch("archives");
    let root = work.join("tree");
    tree(&root);
    let unpacked = work.join("store-unpacked");
    let (ok, err) = run(&[
        "--store",
        unpacked.to_str().unwrap(),
        root.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let expected = contents(&unpacked);
    assert_eq!(expected.len(), 5, "{:?}", expected.keys());

    let tar = tar_of(&root);
    let deflated = zip_of(&root, zip::CompressionMethod::Deflated);
    // An Android library inside an archive, as an app's build outputs hold one.
    let nested_dir = work.join("nested");
    std::fs::create_dir_all(nested_dir.join("libs")).unwrap();
    std::fs::write(nested_dir.join("libs/geo.aar"), &deflated).unwrap();
    std::fs::write(nested_dir.join("README"), "not an object file").unwrap();
    let nested = zip_of(&nested_dir, zip::CompressionMethod::Stored);
    let kinds: Vec<(&str, Vec<u8>)> = vec![
        ("tree.zip", deflated.clone()),
        (
            "tree-stored.apk",
            zip_of(&root, zip::CompressionMethod::Stored),
        ),
        ("tree.tar", tar.clone()),
        ("tree.tar.gz", gzip(&tar)),
        ("tree.tar.xz", xz(&tar)),
        ("tree.tar.zst", zstd(&tar)),
        ("tree.tar.bz2", bzip2(&tar)),
        ("tree_1.0_amd64.deb", deb(&tar, ".xz")),
        ("tree-dbgsym_1.0_amd64.ddeb", deb(&tar, ".zst")),
        ("tree_1.0_arm64.deb", deb(&tar, ".gz")),
        ("outputs.zip", nested),
    ];
    for (name, bytes) in kinds {
        let archive = work.join(name);
        std::fs::write(&archive, bytes).unwrap();
        let store = work.join(format!("store-{name}"));
        let (ok, err) = run(&[
            "-v",
            "--store",
            store.to_str().unwrap(),
            archive.to_str().unwrap(),
        ]);
        assert!(ok, "{name}: {err}");
        assert!(
            contents(&store) == expected,
            "{name}: {:?}\n{err}",
            contents(&store).keys()
        );
        assert!(
            leftovers(&store).is_empty(),
            "{name}: {:?}",
            leftovers(&store)
        );
        // Members are named by their archive, never by the run's temporary directory.
        let member = match name {
            "outputs.zip" => format!("{}!libs/geo.aar!stripped/tool", archive.display()),
            _ => format!("{}!stripped/tool", archive.display()),
        };
        assert!(
            err.contains(&format!("{member}: using debug file")),
            "{name}: {err}"
        );
        assert!(!err.contains(".dumpsyms-unpacking-"), "{name}: {err}");
        assert!(err.contains(" 4 dumped, 3 skipped "), "{name}: {err}");
    }
}

#[test]
fn members_are_sharded_and_skipped_as_files_are() {
    let work = scratch("archives-shard");
    let root = work.join("tree");
    tree(&root);
    let archive = work.join("tree.tar.gz");
    std::fs::write(&archive, gzip(&tar_of(&root))).unwrap();
    let a = archive.to_str().unwrap();
    let whole = work.join("whole");
    assert!(run(&["--store", whole.to_str().unwrap(), a]).0);
    let sharded = work.join("sharded");
    let s = sharded.to_str().unwrap();
    let (ok1, err1) = run(&["--shard", "1/2", "--store", s, a]);
    let (ok2, err2) = run(&["--shard", "2/2", "--store", s, a]);
    assert!(ok1 && ok2, "{err1}\n{err2}");
    assert!(contents(&sharded) == contents(&whole));
    let (ok, err) = run(&["--skip-existing", "--store", s, a]);
    assert!(ok, "{err}");
    assert!(
        err.contains(" 0 dumped, ") && err.contains("(4 already in the store"),
        "{err}"
    );
}

/// The records of a symbol file other than its STACK records, which only the binary
/// has.
fn without_stack(sym: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(sym)
        .lines()
        .filter(|l| !l.starts_with("STACK "))
        .map(str::to_string)
        .collect()
}

#[test]
fn debug_files_without_their_binary_are_dumped_on_their_own() {
    let work = scratch("archives-orphans");
    let only_debug = work.join("only-debug");
    let f = fixtures();
    std::fs::create_dir_all(only_debug.join("elf")).unwrap();
    std::fs::copy(
        f.join("extra/debuglink/app.debug"),
        only_debug.join("elf/app.debug"),
    )
    .unwrap();
    copy_dir(
        &f.join("macho/mac-arm64-O2.dSYM"),
        &only_debug.join("mac/mac-arm64-O2.dSYM"),
    );
    std::fs::create_dir_all(only_debug.join("win")).unwrap();
    std::fs::copy(
        f.join("windows/msvc-i686/app.pdb"),
        only_debug.join("win/app.pdb"),
    )
    .unwrap();
    let store = work.join("store");
    let (ok, err) = run(&[
        "--store",
        store.to_str().unwrap(),
        only_debug.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert!(err.contains(" 3 dumped, 0 skipped "), "{err}");
    // The ELF debug file and the dSYM say they carry no STACK records; the 32-bit PDB
    // has its frame data's STACK WIN records.
    assert_eq!(err.matches("no STACK records").count(), 2, "{err}");
    let got = contents(&store);

    // Each is at the store path of its binary, with the records dumping the binary with
    // its debug file writes, STACK records aside (the debug file has none).
    let with_binary = work.join("with-binary");
    // (The dSYM and the PDB are beside their binaries among the fixtures.)
    for binary in [
        f.join("extra/debuglink/app"),
        f.join("macho/mac-arm64-O2"),
        f.join("windows/msvc-i686/app.exe"),
    ] {
        let (ok, err) = run(&[
            "--store",
            with_binary.to_str().unwrap(),
            binary.to_str().unwrap(),
        ]);
        assert!(ok, "{err}");
    }
    let reference = contents(&with_binary);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        reference.keys().collect::<Vec<_>>()
    );
    for (path, sym) in &got {
        let ours = without_stack(sym);
        let theirs = without_stack(&reference[path]);
        assert!(ours.iter().any(|l| l.starts_with("FUNC ")), "{path}");
        // The PE's code id and the binary's own unwind-derived records are the
        // binary's alone; everything else is the same.
        let same = |l: &&String| !l.starts_with("INFO CODE_ID");
        assert_eq!(
            ours.iter().filter(same).collect::<Vec<_>>(),
            theirs.iter().filter(same).collect::<Vec<_>>(),
            "{path}"
        );
    }

    // With the binaries in the run, the debug files are read through them: nothing
    // changes from a run without them.
    let both = work.join("both");
    copy_dir(&only_debug, &both);
    std::fs::copy(f.join("extra/debuglink/app"), both.join("elf/app")).unwrap();
    std::fs::copy(f.join("macho/mac-arm64-O2"), both.join("mac/mac-arm64-O2")).unwrap();
    std::fs::copy(
        f.join("windows/msvc-i686/app.exe"),
        both.join("win/app.exe"),
    )
    .unwrap();
    let store = work.join("store-both");
    let (ok, err) = run(&["--store", store.to_str().unwrap(), both.to_str().unwrap()]);
    assert!(ok, "{err}");
    assert!(err.contains(" 3 dumped, 3 skipped "), "{err}");
    assert!(!err.contains("no STACK records"), "{err}");
    assert!(contents(&store) == reference);
}

/// The Debian pair `.ci/run` downloads: the store from the two packages is the store
/// from the two unpacked trees (`dpkg-deb -x`) with the `-dbg` tree as `--debug-dir`,
/// and libc's symbol file has its debug file's functions and lines.
#[test]
#[ignore = "needs target/debs/libc6_*.deb and libc6-dbg_*.deb (apt-get download; .ci/run fetches them)"]
fn a_debian_package_and_its_dbg_package() {
    let debs = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/debs");
    let find = |prefix: &str| -> PathBuf {
        let mut found: Vec<PathBuf> = std::fs::read_dir(&debs)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.file_name().unwrap().to_str().unwrap().starts_with(prefix))
            .collect();
        found.sort();
        found
            .pop()
            .unwrap_or_else(|| panic!("no {prefix}* in {}", debs.display()))
    };
    let (bin, dbg) = (find("libc6_"), find("libc6-dbg_"));
    let work = scratch("archives-debian");
    let store = work.join("from-packages");
    let (ok, err) = run(&[
        "--store",
        store.to_str().unwrap(),
        bin.to_str().unwrap(),
        dbg.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let (x_bin, x_dbg) = (work.join("x-bin"), work.join("x-dbg"));
    for (deb, into) in [(&bin, &x_bin), (&dbg, &x_dbg)] {
        let status = Command::new("dpkg-deb")
            .arg("-x")
            .arg(deb)
            .arg(into)
            .status()
            .expect("dpkg-deb");
        assert!(status.success());
    }
    let unpacked = work.join("from-trees");
    let debug_dir = x_dbg.join("usr/lib/debug");
    let (ok, err) = run(&[
        "--store",
        unpacked.to_str().unwrap(),
        "--debug-dir",
        debug_dir.to_str().unwrap(),
        x_bin.to_str().unwrap(),
        x_dbg.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let (got, want) = (contents(&store), contents(&unpacked));
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    assert!(got == want);
    let libc = got
        .iter()
        .find(|(k, _)| k.starts_with("libc.so.6/"))
        .unwrap_or_else(|| panic!("no libc.so.6 in {:?}", got.keys()));
    let text = String::from_utf8_lossy(libc.1);
    let funcs = text.lines().filter(|l| l.starts_with("FUNC ")).count();
    let stack = text
        .lines()
        .filter(|l| l.starts_with("STACK CFI INIT"))
        .count();
    assert!(
        funcs > 2000 && stack > 2000,
        "{funcs} FUNC, {stack} STACK CFI INIT"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("FILE ") && l.ends_with("malloc.c"))
    );
}

/// The store from the packages is the store from their unpacked trees, and its one
/// symbol file has the debug file's FILE and FUNC records (not only the binary's own).
fn assert_one_paired_module(store: &Path, unpacked: &Path) {
    let (got, want) = (contents(store), contents(unpacked));
    assert_eq!(got, want);
    assert_eq!(got.len(), 1, "{:?}", got.keys());
    let text = String::from_utf8_lossy(got.values().next().unwrap());
    assert!(
        text.lines().any(|l| l.starts_with("FILE "))
            && text.lines().any(|l| l.starts_with("FUNC ")),
        "the debug file was not paired: {text}"
    );
}

/// A tar segment of `members` (path, bytes) as Alpine's `abuild` writes the signature
/// and control parts of an `.apk`: `cut`, without the end-of-archive blocks, so that the
/// gzip streams laid end to end read as one tar.
pub(crate) fn apk_segment(members: &[(&str, &[u8])], cut: bool) -> Vec<u8> {
    let mut out = tar::Builder::new(Vec::new());
    for (path, bytes) in members {
        let mut header = tar::Header::new_ustar();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        out.append_data(&mut header, path, *bytes).unwrap();
    }
    let mut raw = out.into_inner().unwrap();
    while cut && raw.len() >= 512 && raw[raw.len() - 512..].iter().all(|&b| b == 0) {
        raw.truncate(raw.len() - 512);
    }
    gzip(&raw)
}

/// An Alpine package as `abuild` lays one out: three gzip streams, the signature, the
/// control part (`.PKGINFO`) and the files, read as one tar.
pub(crate) fn apk(name: &str, files: &[(&str, &[u8])]) -> Vec<u8> {
    let pkginfo = format!("pkgname = {name}\npkgver = 1.0-r0\narch = x86_64\n");
    let mut out = apk_segment(
        &[(
            ".SIGN.RSA.alpine-devel@lists.alpinelinux.org-6165ee59.rsa.pub",
            &[0x5a; 256],
        )],
        true,
    );
    out.extend(apk_segment(&[(".PKGINFO", pkginfo.as_bytes())], true));
    out.extend(apk_segment(files, false));
    out
}

/// An Alpine package and its `-dbg` package: the debug file where `abuild` puts it
/// (`usr/lib/debug/<path>.debug`), found by the binary's debug link under the `-dbg`
/// package (Alpine ships no `.build-id` links). The store is the store of the two
/// unpacked trees with `--debug-dir`, and has the debug file's functions and lines.
#[test]
fn an_alpine_package_and_its_dbg_package() {
    let f = fixtures().join("extra/debuglink");
    let (bin, debug) = (
        std::fs::read(f.join("app")).unwrap(),
        std::fs::read(f.join("app.debug")).unwrap(),
    );
    let work = scratch("archives-alpine");
    let (pkg, dbg) = (work.join("app-1.0-r0.apk"), work.join("app-dbg-1.0-r0.apk"));
    std::fs::write(&pkg, apk("app", &[("usr/bin/app", &bin)])).unwrap();
    std::fs::write(
        &dbg,
        apk("app-dbg", &[("usr/lib/debug/usr/bin/app.debug", &debug)]),
    )
    .unwrap();
    let store = work.join("from-packages");
    let (ok, err) = run(&[
        "--store",
        store.to_str().unwrap(),
        pkg.to_str().unwrap(),
        dbg.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    // The trees as `tar xzf` unpacks the packages.
    let tree = work.join("tree");
    std::fs::create_dir_all(tree.join("usr/bin")).unwrap();
    std::fs::create_dir_all(tree.join("usr/lib/debug/usr/bin")).unwrap();
    std::fs::write(tree.join("usr/bin/app"), &bin).unwrap();
    std::fs::write(tree.join("usr/lib/debug/usr/bin/app.debug"), &debug).unwrap();
    let unpacked = work.join("from-tree");
    let (ok, err) = run(&[
        "--store",
        unpacked.to_str().unwrap(),
        "--debug-dir",
        tree.join("usr/lib/debug").to_str().unwrap(),
        tree.join("usr/bin").to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert_one_paired_module(&store, &unpacked);
}

/// An Arch package and its `-debug` package, as `makepkg` lays them out: `.pkg.tar.zst`,
/// the debug file at `usr/lib/debug/usr/bin/app.debug` and a `.build-id` entry that is a
/// symbolic link to it. The binary's debug link finds the file in the other archive;
/// the store is the store of the unpacked trees with `--debug-dir`.
#[test]
fn an_arch_package_and_its_debug_package() {
    let f = fixtures().join("extra/debuglink");
    let work = scratch("archives-arch");
    let (pkg, dbg) = (work.join("pkg"), work.join("dbg"));
    std::fs::create_dir_all(pkg.join("usr/bin")).unwrap();
    std::fs::create_dir_all(dbg.join("usr/lib/debug/usr/bin")).unwrap();
    std::fs::create_dir_all(dbg.join("usr/lib/debug/.build-id/7d")).unwrap();
    std::fs::copy(f.join("app"), pkg.join("usr/bin/app")).unwrap();
    std::fs::copy(
        f.join("app.debug"),
        dbg.join("usr/lib/debug/usr/bin/app.debug"),
    )
    .unwrap();
    std::os::unix::fs::symlink(
        "../../usr/bin/app.debug",
        dbg.join("usr/lib/debug/.build-id/7d/6b17b5f780b9a1454269c447a919b4f9932026.debug"),
    )
    .unwrap();
    std::fs::write(pkg.join(".PKGINFO"), "pkgname = app\n").unwrap();
    std::fs::write(dbg.join(".PKGINFO"), "pkgname = app-debug\n").unwrap();
    let (pkg_zst, dbg_zst) = (
        work.join("app-1.0-1-x86_64.pkg.tar.zst"),
        work.join("app-debug-1.0-1-x86_64.pkg.tar.zst"),
    );
    std::fs::write(&pkg_zst, zstd(&tar_of(&pkg))).unwrap();
    std::fs::write(&dbg_zst, zstd(&tar_of(&dbg))).unwrap();
    let store = work.join("from-packages");
    let (ok, err) = run(&[
        "--store",
        store.to_str().unwrap(),
        pkg_zst.to_str().unwrap(),
        dbg_zst.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    let unpacked = work.join("from-trees");
    let (ok, err) = run(&[
        "--store",
        unpacked.to_str().unwrap(),
        "--debug-dir",
        dbg.join("usr/lib/debug").to_str().unwrap(),
        pkg.to_str().unwrap(),
        dbg.to_str().unwrap(),
    ]);
    assert!(ok, "{err}");
    assert_one_paired_module(&store, &unpacked);
}
