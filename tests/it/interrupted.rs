//! What a store run of archives leaves and spends: nothing in the store after SIGINT or
//! SIGTERM, a killed run's unpacked members removed by the next run, one disk budget for
//! the run however often an archive is given, an archive beside the directory that
//! holds it, and a zstd frame that lies about its length. Each was reproduced against
//! the commit before the fix; the comments say what it did there.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

use crate::archives::leftovers;

/// A ZIP of a program and its debug file, written at `path`.
fn small_zip(path: &Path) {
    let bytes = crate::archives::zip_of(
        &fixtures().join("extra/debuglink"),
        zip::CompressionMethod::Deflated,
    );
    std::fs::write(path, bytes).unwrap();
}

/// A `.tar.gz` (made by GNU tar and gzip, as a user's would be) of one "library" of
/// `size` bytes: ELF's magic, then zeros, so that it is unpacked (an object file by its
/// first bytes) and takes a while to write.
fn big_tar_gz(work: &Path, size: u64) -> PathBuf {
    let tree = work.join("tree");
    std::fs::create_dir_all(tree.join("lib")).unwrap();
    let lib = tree.join("lib/libbig.so");
    std::fs::write(&lib, b"\x7fELF\x02\x01\x01").unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&lib)
        .unwrap()
        .set_len(size)
        .unwrap();
    let archive = work.join("big.tar.gz");
    let ok = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&tree)
        .arg("lib")
        .env("GZIP", "-1")
        .status()
        .expect("GNU tar")
        .success();
    assert!(ok);
    archive
}

/// Starts a store run of `archive` and sends it `signal` once its unpack directory is
/// there; its exit status.
fn interrupt(archive: &Path, store: &Path, signal: &str) -> std::process::ExitStatus {
    let mut child = dumpsyms_command()
        .arg("--store")
        .arg(store)
        .arg(archive)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while leftovers(store).is_empty() {
        if let Some(status) = child.try_wait().unwrap() {
            panic!("the run ended ({status}) before its unpack directory was seen");
        }
        assert!(started.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(5));
    }
    let ok = Command::new("kill")
        .arg(format!("-{signal}"))
        .arg(child.id().to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok);
    child.wait().unwrap()
}

/// SIGINT and SIGTERM while an archive unpacks: the run ends by that signal, and its
/// unpack directory is gone. SIGKILL cannot be caught: the next run into the store
/// removes what it left. Before: 45–200 MB left in the store each time, and no run
/// removed it.
#[test]
fn an_interrupted_run_leaves_nothing_in_the_store() {
    use std::os::unix::process::ExitStatusExt as _;
    let work = scratch("interrupted");
    let archive = big_tar_gz(&work, 300 << 20);
    for (signal, number) in [("INT", 2), ("TERM", 15)] {
        let store = work.join(format!("store-{signal}"));
        let status = interrupt(&archive, &store, signal);
        assert_eq!(status.signal(), Some(number), "{status}");
        assert_eq!(leftovers(&store), Vec::<String>::new(), "{signal}");
    }
    let store = work.join("store-KILL");
    let status = interrupt(&archive, &store, "KILL");
    assert_eq!(status.signal(), Some(9));
    assert_eq!(leftovers(&store).len(), 1);
    // The next run into the store, of another archive, removes it.
    let small = work.join("small.zip");
    small_zip(&small);
    let out = dumpsyms_command()
        .arg("--store")
        .arg(&store)
        .arg(&small)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(leftovers(&store), Vec::<String>::new());
    std::fs::remove_dir_all(&work).unwrap();
}

/// The symbol files of a store, by path.
fn contents(store: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut std::collections::BTreeMap<PathBuf, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap().filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                walk(&p, root, out);
            } else {
                out.insert(
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                );
            }
        }
    }
    let mut out = Default::default();
    walk(store, store, &mut out);
    out
}

/// One archive given three times (once through another path) is read once, and
/// within one budget; a package given beside the directory that holds it dumps as
/// each does alone. Before: eight copies of a 307 KB ZIP put 1.87 GB on disk at once,
/// and `--store S in/app.deb in` failed with "Archive files are not supported".
#[test]
fn an_archive_given_again_is_read_once() {
    let work = scratch("archive-twice");
    let input = work.join("in");
    std::fs::create_dir_all(&input).unwrap();
    let zip = input.join("app.zip");
    small_zip(&zip);
    let run = |store: &Path, args: &[&Path]| {
        let out = dumpsyms_command()
            .arg("-v")
            .arg("--store")
            .arg(store)
            .args(args)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{args:?}: {err}");
        err
    };
    let once = work.join("once");
    run(&once, &[&zip]);
    let thrice = work.join("thrice");
    let again = input.join("../in/app.zip");
    let err = run(&thrice, &[&zip, &zip, &again]);
    assert_eq!(err.matches("unpacked").count(), 1, "{err}");
    assert!(contents(&once) == contents(&thrice));
    assert!(!contents(&once).is_empty());
    let beside = work.join("beside");
    run(&beside, &[&zip, &input]);
    assert!(contents(&once) == contents(&beside));
    std::fs::remove_dir_all(&work).unwrap();
}

/// A `.tar.zst` whose only frame is a skippable frame claiming 4 GiB: a named failure.
/// Before: read as an empty archive, "0 dumped", exit 0.
#[test]
fn a_zstd_frame_that_lies_is_a_named_failure() {
    let work = scratch("zstd-skippable");
    let mut bytes = vec![0x50, 0x2A, 0x4D, 0x18];
    bytes.extend(u32::MAX.to_le_bytes());
    bytes.extend([0u8; 64]);
    let archive = work.join("lies.tar.zst");
    std::fs::write(&archive, &bytes).unwrap();
    let out = dumpsyms_command()
        .arg("--store")
        .arg(work.join("store"))
        .arg(&archive)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("lies.tar.zst"), "{err}");
    assert!(err.contains("skippable frame claims"), "{err}");
    assert_eq!(leftovers(&work.join("store")), Vec::<String>::new());
    std::fs::remove_dir_all(&work).unwrap();
}

/// Three archives, each within its own budget (a 200 MB library of zeros, from a
/// `.tar.gz` of some 200 KB), unpack within one budget for the run: 100 times their
/// sizes together plus 256 MiB, so the third is stopped, named. Before: each had a
/// 256 MiB floor of its own, and eight archives put 1.87 GB on disk at once.
#[test]
fn a_runs_archives_share_one_budget() {
    let work = scratch("archives-budget");
    let mut archives = Vec::new();
    for n in 0..3 {
        let dir = work.join(format!("a{n}"));
        std::fs::create_dir_all(&dir).unwrap();
        let archive = big_tar_gz(&dir, 200 << 20);
        let renamed = work.join(format!("a{n}.tar.gz"));
        std::fs::rename(&archive, &renamed).unwrap();
        archives.push(renamed);
    }
    let sizes: u64 = archives
        .iter()
        .map(|a| std::fs::metadata(a).unwrap().len())
        .sum();
    assert!(sizes * 100 + (256 << 20) < 600 << 20, "{sizes}");
    let out = dumpsyms_command()
        .arg("--store")
        .arg(work.join("store"))
        .args(&archives)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("a decompression bomb?"), "{err}");
    assert!(err.contains("a2.tar.gz"), "{err}");
    assert_eq!(leftovers(&work.join("store")), Vec::<String>::new());
    std::fs::remove_dir_all(&work).unwrap();
}
