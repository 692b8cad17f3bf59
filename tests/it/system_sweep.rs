//! Real-world sweep: every ELF file under /usr/lib/x86_64-linux-gnu, /usr/bin and
//! /usr/lib/debug of this machine, dumped with `--inlines` by the command-line tool, as
//! crash pipelines dump whatever they are given. No run may crash or take more than two
//! minutes, and every symbol file written must pass the format checker in
//! tests/it/common. Prints the slowest files and the largest peak memory.
//!
//! `.ci/run` runs it (`--ignored`, release build): it takes minutes, and what it finds
//! depends on the machine.

use std::os::unix::fs::FileTypeExt as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::*;

const ROOTS: [&str; 3] = ["/usr/lib/x86_64-linux-gnu", "/usr/bin", "/usr/lib/debug"];
const TIMEOUT: Duration = Duration::from_secs(120);

/// Regular ELF files under `dir` (symbolic links are not followed: each file once).
fn elf_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            elf_files(&path, out);
        } else if kind.is_file() && !kind.is_fifo() {
            let mut magic = [0u8; 4];
            let is_elf = std::fs::File::open(&path)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic))
                .is_ok()
                && magic == *b"\x7fELF";
            if is_elf {
                out.push(path);
            }
        }
    }
}

struct Run {
    path: PathBuf,
    seconds: f64,
    peak_kib: i64,
    /// Exit code, or None when killed by a signal.
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: String,
    timed_out: bool,
}

/// The high-water mark of `pid`'s resident memory, in KiB, while it runs.
fn peak_kib(pid: u32) -> Option<i64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs dumpsyms on `path`, killing it after TIMEOUT. Peak memory is read from /proc
/// while it runs (rusage's ru_maxrss would count this process's memory, which the child
/// shares until it execs), so a peak in its last milliseconds can be missed.
fn run(path: &Path) -> Run {
    let (out_file, err_file) = (run_output("sym"), run_output("err"));
    let start = Instant::now();
    let mut child = dumpsyms_command()
        .arg("--inlines")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_file).unwrap())
        .stderr(std::fs::File::create(&err_file).unwrap())
        .spawn()
        .unwrap();
    let mut timed_out = false;
    let mut peak = 0;
    // Polled rather than blocked on, to enforce the timeout and read its memory.
    loop {
        peak = peak.max(peak_kib(child.id()).unwrap_or(0));
        if let Ok(Some(status)) = child.try_wait() {
            return Run {
                path: path.to_path_buf(),
                seconds: start.elapsed().as_secs_f64(),
                peak_kib: peak,
                code: status.code(),
                stdout: std::fs::read(&out_file).unwrap_or_default(),
                stderr: std::fs::read_to_string(&err_file).unwrap_or_default(),
                timed_out,
            };
        }
        if start.elapsed() > TIMEOUT && !timed_out {
            timed_out = true;
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn print_top(title: &str, runs: &[Run]) {
    println!("{title}:");
    for r in runs.iter().take(8) {
        let (seconds, kib) = (r.seconds, r.peak_kib);
        println!("  {seconds:>7.2} s  {kib:>8} KiB  {}", r.path.display());
    }
}

/// Where this test process's runs write their output.
fn run_output(extension: &str) -> PathBuf {
    std::env::temp_dir().join(format!("dumpsyms-sweep-{}.{extension}", std::process::id()))
}

#[test]
#[ignore = "dumps every ELF file of the machine; run by .ci/run"]
fn every_elf_file_on_this_machine_dumps_cleanly() {
    let mut files = Vec::new();
    for root in ROOTS {
        elf_files(Path::new(root), &mut files);
    }
    files.sort();
    assert!(files.len() > 100, "only {} ELF files found", files.len());
    let mut runs = Vec::new();
    let mut failures = Vec::new();
    let (mut dumped, mut refused) = (0, 0);
    for path in &files {
        let mut r = run(path);
        let what = path.display();
        if r.timed_out {
            failures.push(format!("{what}: still running after {TIMEOUT:?}"));
        } else {
            match r.code {
                Some(0) => {
                    dumped += 1;
                    let checked = std::panic::catch_unwind(|| {
                        let text = std::str::from_utf8(&r.stdout).expect("output is not UTF-8");
                        parse(text);
                    });
                    // Checked, then dropped: a few of them are large.
                    drop(std::mem::take(&mut r.stdout));
                    if let Err(e) = checked {
                        let msg = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        failures.push(format!("{what}: bad symbol file: {msg}"));
                    }
                }
                // A file refused with a message (not an ELF we dump, no code): fine.
                Some(1) if r.stderr.contains("dumpsyms: error: ") => refused += 1,
                Some(code) => failures.push(format!("{what}: exit {code}: {}", r.stderr.trim())),
                None => failures.push(format!("{what}: killed by a signal: {}", r.stderr.trim())),
            }
        }
        runs.push(r);
    }
    let _ = std::fs::remove_file(run_output("sym"));
    let _ = std::fs::remove_file(run_output("err"));
    println!(
        "{} ELF files: {dumped} dumped, {refused} refused with a message",
        files.len()
    );
    runs.sort_by(|a, b| b.seconds.total_cmp(&a.seconds));
    print_top("slowest", &runs);
    runs.sort_by_key(|r| std::cmp::Reverse(r.peak_kib));
    print_top("largest peak memory", &runs);
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
