//! `--store` over whole trees: every object file under a directory is dumped into the
//! store, one symbol file per module, and nothing else is; `--skip-existing` leaves the
//! store alone on a second run; the store does not depend on the thread count; a file
//! that cannot be dumped fails the run (exit 1) by name without stopping the others; the
//! names a batch demangles once for all its modules leave each file as dumped alone.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::*;

fn copy(from: &str, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join(from), to).unwrap();
}

pub(crate) fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// A small build tree: binaries in subdirectories, a stripped one with its debug file
/// beside it (debug link), a universal Mach-O with its dSYM bundle, sources, a script, a
/// symbolic link to a binary, and a dwz common file.
pub(crate) fn tree(root: &Path) {
    copy("bin/x86_64/c-gcc-O2-dwarf5", &root.join("bin/app"));
    copy(
        "bin/aarch64/cpp-clang-O2-dwarf5",
        &root.join("lib/aarch64/libgeo.so"),
    );
    copy("extra/debuglink/app", &root.join("stripped/tool"));
    copy(
        "extra/debuglink/app.debug",
        &root.join("stripped/app.debug"),
    );
    copy("macho/mac-universal-O2", &root.join("mac/mac-universal-O2"));
    copy_dir(
        &fixtures().join("macho/mac-universal-O2.dSYM"),
        &root.join("mac/mac-universal-O2.dSYM"),
    );
    copy(
        "extra/dwz4/dumpsyms-fixture.debug",
        &root.join("lib/common.debug"),
    );
    copy("src/sample.c", &root.join("src/sample.c"));
    copy("make-fixtures.sh", &root.join("make-fixtures.sh"));
    std::os::unix::fs::symlink(root.join("bin/app"), root.join("bin/app-link")).unwrap();
}

/// The store's files and their bytes.
pub(crate) fn contents(store: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(dir: &Path, base: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(&p, base, out);
            } else {
                let rel = p.strip_prefix(base).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(store, store, &mut out);
    out
}

/// Where the symbol file of `binary` (dumped on its own, `extra` flags added) goes.
fn store_path(binary: &Path, extra: &[&str]) -> String {
    let mut args = vec!["-i"];
    args.extend(extra);
    let path = binary.to_str().unwrap();
    args.push(path);
    let out = dumpsyms(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let f: Vec<&str> = text.lines().next().unwrap().split(' ').collect();
    format!("{}/{}/{}.sym", f[4], f[3], f[4])
}

#[test]
fn a_tree_dumps_to_one_symbol_file_per_module() {
    let work = scratch("tree");
    let root = work.join("tree");
    tree(&root);
    let store = work.join("store");
    let s = store.to_str().unwrap();
    let out = dumpsyms(&["--store", s, root.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // On a pipe: no progress bar, one summary line.
    assert!(!err.contains('\r'), "{err}");
    let summary: Vec<&str> = err.lines().filter(|l| l.contains(" dumped, ")).collect();
    assert_eq!(summary.len(), 1, "{err}");
    assert!(
        summary[0].starts_with("dumpsyms: 4 dumped, 3 skipped (0 already in the store, 3 not modules of their own), 0 failed, in "),
        "{err}"
    );

    let got = contents(&store);
    let mut expected = vec![
        store_path(&root.join("bin/app"), &[]),
        store_path(&root.join("lib/aarch64/libgeo.so"), &[]),
        store_path(&root.join("stripped/tool"), &[]),
        store_path(&root.join("mac/mac-universal-O2"), &["--arch", "x86_64"]),
        store_path(&root.join("mac/mac-universal-O2"), &["--arch", "arm64"]),
    ];
    expected.sort();
    assert_eq!(got.keys().cloned().collect::<Vec<_>>(), expected);
    // Each file is what dumping that binary alone writes: the stripped tool got its
    // debug file's FUNCs through its debug link, the dSYM's DWARF and the debug files
    // were not dumped as modules of their own (their records would have replaced these).
    let alone = |path: &Path, extra: &[&str]| -> Vec<u8> {
        let mut args: Vec<&str> = extra.to_vec();
        let p = path.to_str().unwrap();
        args.push(p);
        dumpsyms(&args).stdout
    };
    assert_eq!(
        got[&expected_key(&root, "stripped/tool", &[])],
        alone(&root.join("stripped/tool"), &[])
    );
    assert!(
        String::from_utf8_lossy(&got[&expected_key(&root, "stripped/tool", &[])])
            .contains("\nFUNC ")
    );
    let slice = expected_key(&root, "mac/mac-universal-O2", &["--arch", "arm64"]);
    assert_eq!(
        got[&slice],
        alone(&root.join("mac/mac-universal-O2"), &["--arch", "arm64"])
    );
    assert!(String::from_utf8_lossy(&got[&slice]).contains("\nSTACK CFI INIT "));

    // Again with --skip-existing: nothing is written.
    let mtimes = || -> Vec<_> {
        expected
            .iter()
            .map(|k| {
                std::fs::metadata(store.join(k))
                    .unwrap()
                    .modified()
                    .unwrap()
            })
            .collect()
    };
    let before = mtimes();
    let again = dumpsyms(&["--store", s, "--skip-existing", root.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(again.status.success(), "{err}");
    assert!(err.contains("dumpsyms: 0 dumped, 7 skipped (4 already in the store, 3 not modules of their own), 0 failed"), "{err}");
    assert_eq!(before, mtimes());
    assert_eq!(contents(&store), got);

    // Quiet: nothing but errors.
    let quiet = dumpsyms(&[
        "--store",
        work.join("quiet").to_str().unwrap(),
        "-q",
        root.to_str().unwrap(),
    ]);
    assert!(
        quiet.status.success() && quiet.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    std::fs::remove_dir_all(&work).ok();
}

fn expected_key(root: &Path, rel: &str, extra: &[&str]) -> String {
    store_path(&root.join(rel), extra)
}

#[test]
fn the_store_does_not_depend_on_the_thread_count() {
    let work = scratch("jobs");
    let root = work.join("tree");
    tree(&root);
    let stores: Vec<BTreeMap<String, Vec<u8>>> = ["1", "4"]
        .iter()
        .map(|jobs| {
            let store = work.join(format!("store-{jobs}"));
            let out = dumpsyms(&[
                "--jobs",
                jobs,
                "-d",
                "--store",
                store.to_str().unwrap(),
                root.to_str().unwrap(),
            ]);
            assert!(out.status.success());
            contents(&store)
        })
        .collect();
    assert_eq!(stores[0].len(), 5);
    assert!(stores[0] == stores[1], "--jobs 1 and --jobs 4 differ");
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn a_file_that_cannot_be_dumped_fails_the_run_by_name_and_only_itself() {
    let work = scratch("fail");
    let root = work.join("tree");
    copy("bin/x86_64/c-gcc-O2-dwarf5", &root.join("good"));
    // An ELF header and nothing behind it.
    let bytes = std::fs::read(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5")).unwrap();
    std::fs::write(root.join("broken"), &bytes[..200]).unwrap();
    let store = work.join("store");
    let out = dumpsyms(&["--store", store.to_str().unwrap(), root.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(
            "1 dumped, 0 skipped (0 already in the store, 0 not modules of their own), 1 failed"
        ),
        "{err}"
    );
    let broken = root.join("broken");
    assert!(
        err.contains(&format!("dumpsyms: failed: {}", broken.display())),
        "{err}"
    );
    assert_eq!(contents(&store).len(), 1);
    // Without --store a directory is not walked.
    let dir = dumpsyms(&[root.to_str().unwrap()]);
    assert_eq!(dir.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&dir.stderr).contains("use --store DIR"));
    std::fs::remove_dir_all(&work).ok();
}

/// Three inputs that are one module (one build ID): a stripped binary with its debug
/// file beside it, the same binary alone, and one with a MiniDebugInfo section. Each
/// gives another symbol file for the same store path. Which stays must not depend on
/// which dump finished last: it is the one a run of one thread leaves, the last input
/// in the run's order, or with `--skip-existing` the first (the others find it).
#[test]
fn inputs_of_one_module_leave_the_same_file_whatever_finishes_first() {
    let work = scratch("same-module");
    let root = work.join("tree");
    copy("extra/debuglink/app", &root.join("a/app"));
    copy("extra/debuglink/app.debug", &root.join("a/app.debug"));
    copy("extra/buildid/app", &root.join("b/app"));
    copy("extra/minidebuginfo/app", &root.join("c/app"));
    let alone = |rel: &str| {
        let out = dumpsyms(&[root.join(rel).to_str().unwrap()]);
        assert!(out.status.success());
        out.stdout
    };
    let (first, middle, last) = (alone("a/app"), alone("b/app"), alone("c/app"));
    assert!(first != middle && middle != last && first != last);
    let key = store_path(&root.join("a/app"), &[]);
    assert_eq!(key, store_path(&root.join("c/app"), &[]));
    for (skip, want) in [(false, &last), (true, &first)] {
        for (run, jobs) in ["1", "2", "2", "2", "2", "2"].iter().enumerate() {
            let store = work.join(format!("store-{skip}-{run}"));
            let mut args = vec!["--jobs", jobs, "--store", store.to_str().unwrap()];
            if skip {
                args.push("--skip-existing");
            }
            args.push(root.to_str().unwrap());
            let out = dumpsyms(&args);
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let stored = contents(&store);
            assert_eq!(stored.len(), 1, "{:?}", stored.keys());
            assert!(
                stored[&key] == *want,
                "--jobs {jobs}, skip {skip}: another input's file"
            );
        }
    }
    std::fs::remove_dir_all(&work).ok();
}

/// Modules of one build share most of their names (a header's inline functions, the
/// libraries they all link), and a batch demangles each name once for all of them: every
/// module's file must still be what dumping it alone writes, at any thread count.
#[test]
fn modules_that_share_names_dump_in_a_tree_as_alone() {
    let work = scratch("shared-names");
    let root = work.join("tree");
    let modules = [
        "bin/x86_64/cpp-gcc-O2-dwarf5",
        "bin/x86_64/cpp-gcc-O2-dwarf4",
        "bin/x86_64/cpp-gcc-O2-dwarf5-lto",
        "bin/x86_64/cpp-clang-O2-dwarf5",
        "bin/x86_64/cpp-gcc-O0-dwarf5",
        "bin/x86_64/rust-v0-O2",
        "bin/x86_64/rust-legacy-O2",
    ];
    for m in modules {
        copy(m, &root.join(m));
    }
    let alone: Vec<(String, Vec<u8>)> = modules
        .iter()
        .map(|m| {
            let out = dumpsyms(&["--inlines", root.join(m).to_str().unwrap()]);
            assert!(out.status.success(), "{m}");
            (store_path(&root.join(m), &[]), out.stdout)
        })
        .collect();
    // The batch has names to share: C++ names met in several modules, mangled alike.
    let funcs = |text: &[u8]| -> std::collections::BTreeSet<String> {
        String::from_utf8_lossy(text)
            .lines()
            .filter(|l| l.starts_with("FUNC ") && l.contains("::"))
            .map(|l| l.splitn(5, ' ').nth(4).unwrap_or("").to_string())
            .collect()
    };
    let shared = funcs(&alone[0].1).intersection(&funcs(&alone[3].1)).count();
    assert!(
        shared >= 5,
        "only {shared} C++ names shared by gcc's and clang's"
    );
    for jobs in ["1", "2"] {
        let store = work.join(format!("store-{jobs}"));
        let out = dumpsyms(&[
            "--inlines",
            "--jobs",
            jobs,
            "--store",
            store.to_str().unwrap(),
            root.to_str().unwrap(),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let stored = contents(&store);
        assert_eq!(stored.len(), modules.len(), "{:?}", stored.keys());
        for (key, text) in &alone {
            assert!(
                stored[key] == *text,
                "--jobs {jobs}: {key} differs from its dump alone"
            );
        }
    }
    std::fs::remove_dir_all(&work).ok();
}

/// What an embedding program sees of a batch: typed events, not lines. The tree of
/// `tree()` plus a truncated binary: each module's symbol file written once, the dSYM's
/// and debug files' skips with why, the truncated file a `Failure::Dump` naming it, and
/// the counts matching the files in the store.
#[test]
fn a_batch_tells_typed_events_to_a_library_caller() {
    use dumpsyms::batch::{Batch, Counts, Event, Failure, Report};
    use std::sync::Mutex;

    #[derive(Default)]
    struct Seen {
        written: Mutex<Vec<std::path::PathBuf>>,
        skipped: Mutex<Vec<String>>,
        failed: Mutex<Vec<String>>,
        finished: Mutex<Option<(Counts, usize)>>,
    }
    impl Report for Seen {
        fn event(&self, event: &Event<'_>) {
            match event {
                Event::Written { path, .. } => {
                    self.written.lock().unwrap().push(path.to_path_buf())
                }
                Event::Skipped { why, .. } => self.skipped.lock().unwrap().push(why.to_string()),
                Event::Failed(Failure::Dump(e)) => self
                    .failed
                    .lock()
                    .unwrap()
                    .push(e.path.display().to_string()),
                Event::Failed(other) => panic!("unexpected failure {other}"),
                Event::Finished { counts, failures } => {
                    *self.finished.lock().unwrap() = Some(((*counts).clone(), failures.len()))
                }
                _ => {}
            }
        }
    }

    let work = scratch("events");
    let root = work.join("tree");
    tree(&root);
    let bytes = std::fs::read(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5")).unwrap();
    std::fs::write(root.join("broken"), &bytes[..200]).unwrap();
    let store = work.join("store");
    let seen = Seen::default();
    let opts = dumpsyms::Options::default();
    let batch = Batch::new(&opts, &seen);
    let summary = batch.store(std::slice::from_ref(&root), &store, false);

    let written = seen.written.into_inner().unwrap();
    let files = contents(&store);
    assert_eq!(written.len(), files.len(), "{written:?}");
    assert_eq!(summary.written.len(), written.len());
    let skipped = seen.skipped.into_inner().unwrap();
    assert!(
        skipped
            .iter()
            .any(|why| why.contains("separate debug file")),
        "{skipped:?}"
    );
    assert_eq!(
        seen.failed.into_inner().unwrap(),
        vec![root.join("broken").display().to_string()]
    );
    assert!(matches!(summary.failures[..], [Failure::Dump(_)]));
    let (counts, failures) = seen.finished.into_inner().unwrap().expect("Finished told");
    assert_eq!((counts.failed, failures), (1, 1));
    assert_eq!(counts.companions, skipped.len());
    assert_eq!(counts.on_server, None, "no server was asked");
    std::fs::remove_dir_all(&work).ok();
}

/// How many times a run under strace opened each file under `root` (paths relative to
/// it; directories, and opens that failed, are not counted).
fn opens_under(root: &Path, args: &[std::ffi::OsString]) -> BTreeMap<String, usize> {
    let trace = root.with_extension("strace");
    let status = std::process::Command::new("strace")
        .args(["-f", "-qq", "-e", "trace=open,openat,openat2", "-o"])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_dumpsyms"))
        .args(args)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("strace (Debian package strace) must be installed");
    assert!(status.success(), "{status}");
    let prefix = format!("{}/", root.display());
    let mut opens = BTreeMap::new();
    for line in std::fs::read_to_string(&trace).unwrap().lines() {
        let Some(path) = line.split('"').nth(1) else {
            continue;
        };
        if let Some(rel) = path.strip_prefix(&prefix)
            && !line.contains("= -1 ")
            && root.join(rel).is_file()
        {
            *opens.entry(rel.to_string()).or_insert(0) += 1;
        }
    }
    opens
}

/// One look at each file of a store run, carried to its dump: a module is opened twice
/// (its look, its dump), whatever `--shard` and `--skip-existing` ask of it, and a file
/// that is not dumped once; a debug file once more for each dump that reads it. Before,
/// the census, the slices, the shard and the store each opened and parsed it again: 9
/// opens of a module with both flags, 13 of the universal Mach-O, 8 and 11 with all of
/// them in the store already.
#[test]
fn a_store_run_opens_each_file_once_to_look_at_it_and_once_to_dump_it() {
    let work = scratch("store-opens");
    let root = work.join("tree");
    tree(&root);
    // A debug file whose binary the run does not have: dumped on its own.
    copy(
        "extra/crc-mismatch/app.debug",
        &root.join("orphans/libgone.so.debug"),
    );
    let store = work.join("store");
    let args = |extra: &[&str]| {
        let mut a: Vec<std::ffi::OsString> = vec!["--store".into(), store.clone().into()];
        a.extend(extra.iter().map(|e| e.into()));
        a.push(root.clone().into());
        a
    };
    let dsym = "mac/mac-universal-O2.dSYM/Contents/Resources/DWARF/mac-universal-O2";
    let want = BTreeMap::from([
        ("bin/app", 2),
        ("lib/aarch64/libgeo.so", 2),
        ("stripped/tool", 2),
        // Its look, and the dump of the binary whose debug link names it.
        ("stripped/app.debug", 2),
        ("mac/mac-universal-O2", 2),
        // Its look, and each of the binary's two slices' dumps.
        (dsym, 3),
        ("orphans/libgone.so.debug", 2),
        ("lib/common.debug", 1),
        ("mac/mac-universal-O2.dSYM/Contents/Info.plist", 1),
        ("src/sample.c", 1),
        ("make-fixtures.sh", 1),
    ]);
    let want: BTreeMap<String, usize> = want.into_iter().map(|(k, v)| (k.into(), v)).collect();
    let first = opens_under(&root, &args(&["--skip-existing", "--shard", "1/1"]));
    assert_eq!(first, want);
    assert_eq!(contents(&store).len(), 6, "{:?}", contents(&store).keys());
    // All in the store: each file is looked at, and nothing is dumped.
    let again = opens_under(&root, &args(&["--skip-existing", "--shard", "1/1"]));
    let looked: BTreeMap<String, usize> = want.keys().map(|k| (k.clone(), 1)).collect();
    assert_eq!(again, looked);
    // Without the flags, the same.
    std::fs::remove_dir_all(&store).unwrap();
    assert_eq!(opens_under(&root, &args(&[])), want);
}
