//! End to end: a real stack walker (rust-minidump's minidump-processor) walks a
//! minidump of a live process with only our symbol files, and every frame of the
//! fixture's call chain is recovered through STACK CFI. The fixture is built with
//! `-O2 -fomit-frame-pointer`, so frame-pointer walking cannot do it, and blocks inside
//! libc's read(2), so libc's CFI (dumped from this machine's libc) is used too.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use minidump::Minidump;
use minidump_unwind::FrameTrust;

use crate::common::walk::{CHAIN, serve_dir, store_symbols, walk, walk_http};
use crate::common::*;

/// Waits until `pid` sleeps in a system call (the read the fixture blocks in).
fn wait_until_blocked(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .split_whitespace()
            .next();
        if state == Some("S") {
            return;
        }
        assert!(Instant::now() < deadline, "fixture never blocked: {stat}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn minidump_processor_unwinds_the_chain_through_our_cfi() {
    assert_eq!(
        std::env::consts::ARCH,
        "x86_64",
        "the fixture is an x86_64 program"
    );
    let binary = fixtures().join("bin/x86_64/chain-gcc-O2-nofp");
    let work = std::env::temp_dir().join(format!("dumpsyms-e2e-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();

    let mut child = Command::new(&binary)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the fixture");
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "ready\n");
    wait_until_blocked(pid);

    // The libc the process really uses, for its symbols and CFI.
    let maps = std::fs::read_to_string(format!("/proc/{pid}/maps")).unwrap();
    let libc: PathBuf = maps
        .lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .find(|p| p.contains("/libc.so") || p.contains("/libc-"))
        .expect("libc mapping")
        .into();

    let dump_path = work.join("chain.dmp");
    let written = {
        let mut file = std::fs::File::create(&dump_path).unwrap();
        minidump_writer::minidump_writer::MinidumpWriterConfig::new(pid as i32, pid as i32)
            .write(&mut file)
    };
    child.kill().ok();
    child.wait().ok();
    // ptrace is how a minidump of a live process is taken; where it is not allowed this
    // check cannot be made, and must fail loudly rather than pass.
    written.unwrap_or_else(|e| panic!("writing the minidump (ptrace) failed: {e}"));

    let store = work.join("symbols");
    let fixture_name = store_symbols(&binary, &store, true);
    let libc_name = store_symbols(&libc, &store, true);
    let dump = Minidump::read_path(&dump_path).unwrap();
    let frames = walk(&dump, &store, pid);
    for (i, f) in frames.iter().enumerate() {
        println!("{i:>2} {:<24} {:<28} {:?}", f.0, f.1, f.2);
    }

    check_chain(&frames, &fixture_name, &libc_name);

    // The same from a symbol server: the fixture and libc copied into a tree, dumped with
    // `dumpsyms --store` into a store served over HTTP, and the walker fetching from it.
    let tree = work.join("tree");
    std::fs::create_dir_all(tree.join("lib")).unwrap();
    std::fs::copy(&binary, tree.join(&fixture_name)).unwrap();
    std::fs::copy(&libc, tree.join("lib").join(&libc_name)).unwrap();
    let served = work.join("served");
    let out = dumpsyms_command()
        .arg("--store")
        .arg(&served)
        .arg(&tree)
        .output()
        .unwrap();
    stdout_of_success(out);
    let (url, asked) = serve_dir(&served);
    let fetched = walk_http(&dump, &url, &work.join("http-cache"), pid);
    assert_eq!(
        fetched, frames,
        "walking with symbols from the server differs"
    );
    // The walker asks `<name>/<id>/<name>.sym?code_file=..&code_id=..`.
    let asked: Vec<String> = asked
        .lock()
        .unwrap()
        .iter()
        .map(|p| p.split('?').next().unwrap_or("").to_string())
        .collect();
    for name in [&fixture_name, &libc_name] {
        assert!(
            asked.iter().any(
                |p| p.starts_with(&format!("/{name}/")) && p.ends_with(&format!("/{name}.sym"))
            ),
            "{name} was not fetched: {asked:?}"
        );
    }

    // Control: the same minidump with symbol files written without CFI (-c) cannot be
    // walked through CFI, so the frames above really came from our STACK CFI records.
    let no_cfi = work.join("symbols-no-cfi");
    store_symbols(&binary, &no_cfi, false);
    store_symbols(&libc, &no_cfi, false);
    let control = walk(&dump, &no_cfi, pid);
    assert!(
        control.iter().all(|f| f.2 != FrameTrust::CallFrameInfo),
        "frames recovered through CFI without any: {control:?}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// Frame 0 is libc's read, from the thread's context; every frame after it must come
/// from CFI, in call order.
fn check_chain(frames: &[(String, String, FrameTrust)], fixture_name: &str, libc_name: &str) {
    assert_eq!(
        frames[0].0, libc_name,
        "innermost frame is not in libc: {frames:?}"
    );
    assert_eq!(frames[0].2, FrameTrust::Context);
    let expected = CHAIN;
    let start = frames
        .iter()
        .position(|f| f.1 == "chain_wait")
        .unwrap_or_else(|| panic!("chain_wait not found: {frames:?}"));
    for (k, name) in expected.iter().enumerate() {
        let f = &frames[start + k];
        assert_eq!(
            (f.0.as_str(), f.1.as_str()),
            (fixture_name, *name),
            "frame {}",
            start + k
        );
        assert_eq!(
            f.2,
            FrameTrust::CallFrameInfo,
            "frame {} ({name}) was not recovered through CFI",
            start + k
        );
    }
    // Between read and chain_wait there are only libc frames, also unwound by CFI.
    for f in &frames[1..start] {
        assert_eq!(f.0, libc_name);
        assert_eq!(f.2, FrameTrust::CallFrameInfo, "libc frame {f:?}");
    }
}
