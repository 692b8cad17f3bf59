//! Hostile inputs and hostile surroundings: crafted PE, PDB and Mach-O files (made by
//! fixtures/regress/make_hostile.py), an ELF file of Swift names that break Swift's
//! demangler (fixtures/swift/make.sh), names built to escape the store or the terminal,
//! files that change while they are read, and servers that misbehave. Each case was
//! reproduced against the commit before these fixes; the comments say what it cost.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

fn hostile(name: &str) -> PathBuf {
    fixtures().join("regress/hostile").join(name)
}

/// `dumpsyms -v input`: every warning, so a test can name the one it expects.
fn dump_verbose(input: &Path) -> std::process::Output {
    dumpsyms_command().arg("-v").arg(input).output().unwrap()
}

/// The symbol file of a `-v` dump of `input` that must succeed with `warning`.
fn dump_warned(input: &Path, warning: &str) -> Vec<u8> {
    let out = dump_verbose(input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err:.2000}");
    assert!(err.contains(warning), "{err:.2000}");
    out.stdout
}

/// What one run cost: wall time, peak resident memory, bytes written, and its result.
struct Cost {
    ok: bool,
    wall: Duration,
    peak_rss: u64,
    output: u64,
    stderr: String,
}

/// Runs dumpsyms with `args`, stdout into a file, under GNU time: `wait4` on a child of
/// this (large) test process would report this process's resident set, which the child
/// shares until it executes.
fn measure(args: &[&std::ffi::OsStr], work: &Path) -> Cost {
    let out_path = work.join("out.sym");
    let err_path = work.join("err.txt");
    let rss_path = work.join("rss.txt");
    let mut cmd = Command::new("/usr/bin/time");
    cmd.arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_path)
        .arg(env!("CARGO_BIN_EXE_dumpsyms"))
        .args(args)
        .env_remove("DEBUGINFOD_URLS")
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .stdin(Stdio::null());
    let started = Instant::now();
    let status = cmd
        .status()
        .expect("GNU time (/usr/bin/time, Debian's `time`) runs dumpsyms to measure it");
    let rss = std::fs::read_to_string(&rss_path).unwrap();
    let kb: u64 = rss.lines().last().unwrap().trim().parse().unwrap();
    Cost {
        ok: status.success(),
        wall: started.elapsed(),
        peak_rss: kb * 1024,
        output: std::fs::metadata(&out_path).unwrap().len(),
        stderr: std::fs::read_to_string(&err_path).unwrap_or_default(),
    }
}

/// 10 s for an optimized build (`.ci/run` runs this test so too); an unoptimized one is
/// given eight times as long (the DWARF walk runs ~25 times slower without inlining).
fn time_limit() -> Duration {
    if cfg!(debug_assertions) {
        Duration::from_secs(80)
    } else {
        Duration::from_secs(10)
    }
}

/// Every crafted input, old and new, within the bounds the issue sets for any input:
/// 10 s (see [`time_limit`]), 512 MB resident, and at most 100 bytes of output per byte of input plus 16 MB
/// (with --inlines, which writes the most). Each is named with what it cost before.
#[test]
fn every_crafted_input_is_bounded_in_time_memory_and_output() {
    let work = scratch("bounds");
    let mut inputs: Vec<PathBuf> = Vec::new();
    for dir in ["regress", "regress/hostile"] {
        for e in std::fs::read_dir(fixtures().join(dir)).unwrap() {
            let p = e.unwrap().path();
            let skip = p.is_dir() || p.extension().is_some_and(|x| x == "sh" || x == "py");
            if !skip {
                inputs.push(p);
            }
        }
    }
    inputs.sort();
    assert!(inputs.len() >= 15, "{inputs:?}");
    let mut report = Vec::new();
    for input in &inputs {
        let cost = measure(
            &["-v".as_ref(), "--inlines".as_ref(), input.as_os_str()],
            &work,
        );
        let len = std::fs::metadata(input).unwrap().len();
        report.push(format!(
            "{}: {:.2} s, {} MB, {} bytes out of {len}",
            input.file_name().unwrap().to_string_lossy(),
            cost.wall.as_secs_f64(),
            cost.peak_rss >> 20,
            cost.output
        ));
        assert!(
            !cost.stderr.contains("panicked") && !cost.stderr.contains("overflow"),
            "{}: {:.2000}",
            input.display(),
            cost.stderr
        );
        assert!(cost.wall < time_limit(), "{report:#?}");
        assert!(cost.peak_rss < 512 << 20, "{report:#?}");
        assert!(cost.output <= 100 * len + (16 << 20), "{report:#?}");
    }
    println!("{}", report.join("\n"));
    std::fs::remove_dir_all(&work).ok();
}

/// The CodeView record names the PDB `C:\build\..`: its file name `..` became the module
/// name, and `--store` wrote STORE/../<id>/..sym. Now the input fails by name and nothing
/// is written anywhere.
#[test]
fn a_module_named_dot_dot_cannot_leave_the_store() {
    let work = scratch("dotdot");
    let store = work.join("store");
    let out = dumpsyms_command()
        .arg("--store")
        .arg(&store)
        .arg(hostile("pdb-named-dot-dot.exe"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("module name .. is \"..\": it cannot be a file name in a symbol store"),
        "{err}"
    );
    // Nothing beside the store, and nothing in it.
    let left: Vec<_> = std::fs::read_dir(&work)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p != &store)
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert!(walk_files(&store).is_empty());
    // The same name never reaches a symbol server's cache either.
    let cache = work.join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let out = dumpsyms_command()
        .arg("--symbol-server")
        .arg(format!("srv*{}*http://127.0.0.1:9", cache.display()))
        .arg(hostile("pdb-named-dot-dot.exe"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(std::fs::read_dir(&cache).unwrap().next().is_none());
    // Nor an upload: a symbol file whose MODULE record names `..` is refused.
    let sym = work.join("evil.sym");
    std::fs::write(
        &sym,
        "MODULE windows x86_64 0123456789ABCDEF0123456789ABCDEF1 ..\n",
    )
    .unwrap();
    let e = dumpsyms::upload::SymbolFile::read(&sym).unwrap_err();
    assert!(matches!(e, dumpsyms::upload::UploadError::BadFile { .. }));
    assert!(
        e.to_string().contains("the module name .. is \"..\""),
        "{e}"
    );
    std::fs::write(&sym, "MODULE windows x86_64 ../../x app.pdb\n").unwrap();
    let e = dumpsyms::upload::SymbolFile::read(&sym).unwrap_err();
    assert!(
        e.to_string().contains("the debug id ../../x holds '/'"),
        "{e}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// `--output` onto a device, a FIFO, or a link to one wrote a temporary file and renamed
/// it over the target: as root, `--output /dev/null` replaced /dev/null. Now such a
/// target is written through and stays what it was; a link to a regular file stays a link
/// and its target is replaced.
#[test]
fn output_onto_a_device_fifo_or_link_writes_through_it() {
    use std::os::unix::fs::FileTypeExt;
    let work = scratch("hostile-output");
    let bin = fixtures().join("bin/x86_64/c-gcc-O2-dwarf5");
    let expected = dump_text(&bin, &dumpsyms::Options::default());
    let run = |target: &Path| {
        let out = dumpsyms_command()
            .arg("--output")
            .arg(target)
            .arg(&bin)
            .output()
            .unwrap();
        stdout_of_success(out);
    };
    // A link to /dev/null, and /dev/null itself.
    std::os::unix::fs::symlink("/dev/null", work.join("null")).unwrap();
    run(&work.join("null"));
    run(Path::new("/dev/null"));
    assert!(
        std::fs::symlink_metadata(work.join("null"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(
        std::fs::metadata("/dev/null")
            .unwrap()
            .file_type()
            .is_char_device()
    );
    // A FIFO: the reader gets the whole symbol file, and the FIFO is still one.
    let fifo = work.join("fifo");
    assert_eq!(
        Command::new("mkfifo").arg(&fifo).status().unwrap().code(),
        Some(0)
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
    };
    run(&fifo);
    assert_eq!(reader.join().unwrap(), expected);
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo()
    );
    // A link to a regular file: the link stays, its target has the new contents.
    std::fs::write(work.join("real.sym"), "old").unwrap();
    std::os::unix::fs::symlink("real.sym", work.join("link.sym")).unwrap();
    run(&work.join("link.sym"));
    assert!(
        std::fs::symlink_metadata(work.join("link.sym"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(
        std::fs::read_to_string(work.join("real.sym")).unwrap(),
        expected
    );
    std::fs::remove_dir_all(&work).ok();
}

/// A PDB name of newlines, a carriage return, a colour and a window title, 64 KB long:
/// it reached stderr raw (a 130 KB line that retitled the terminal). Now every control
/// character is escaped and each line is bounded.
#[test]
fn names_from_the_input_reach_the_terminal_escaped_and_bounded() {
    let out = dump_verbose(&hostile("pdb-name-with-escapes.exe"));
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("x\\n\\r\\e[31mred\\e]0;owned\\x07AAAA"),
        "{err:.300}"
    );
    for line in err.lines() {
        assert!(!line.chars().any(|c| c.is_control()), "{line:.200}");
        assert!(line.len() <= 4200, "a {}-byte line", line.len());
    }
    assert!(err.contains(" more bytes)"), "{err:.300}");
}

/// Exports whose MSVC names nest 4,000 template arguments or a 21,000-long pointer
/// chain, and an Itanium one of 21,000 pointers: msvc-demangler overflowed the stack
/// (exit 134). Now they are written raw, with a warning.
#[test]
fn names_too_deep_to_demangle_stay_mangled_with_a_warning() {
    let out = dump_verbose(&hostile("deep-mangled-exports.dll"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("2 name(s) left mangled"), "{err}");
    let sym = String::from_utf8(out.stdout).unwrap();
    let publics: Vec<&str> = sym
        .lines()
        .filter_map(|l| l.strip_prefix("PUBLIC "))
        .map(|l| l.splitn(3, ' ').nth(2).unwrap())
        .collect();
    assert_eq!(publics.len(), 3);
    assert!(publics.iter().any(|p| p.starts_with("?f@@YAXV?$A@V?$A@V")));
    assert!(publics.iter().any(|p| p.starts_with("?g@@YAXPEAPEAPEA")));
    // The Itanium chain is short enough to be given to cpp_demangle (on a stack grown
    // for it), which stops at its own depth limit: raw, and not counted as left out.
    assert!(publics.iter().any(|p| p.starts_with("_Z1fPPKPK")));
}

/// The library bounds every demangler's stack itself, whatever thread calls it: a caller
/// with a 256 KiB stack gets the same names as the CLI's workers.
#[test]
fn deep_names_are_safe_on_a_small_stack() {
    let names = [
        format!("?g@@YAX{}H@Z", "PEA".repeat(1360)),
        format!("_Z1fP{}i", "PK".repeat(21000)),
        format!("_Z1f{}iE", "1AI".repeat(8000)),
    ];
    for name in names {
        let small = {
            let name = name.clone();
            std::thread::Builder::new()
                .stack_size(256 << 10)
                .spawn(move || {
                    dumpsyms::fuzzing::internals::demangle(
                        &name,
                        dumpsyms::fuzzing::internals::Lang::Other,
                    )
                })
                .unwrap()
                .join()
                .unwrap()
        };
        let big = dumpsyms::fuzzing::internals::demangle(
            &name,
            dumpsyms::fuzzing::internals::Lang::Other,
        );
        assert_eq!(small, big);
    }
}

/// A copy of the (large) dumpsyms test binary that is truncated while it is dumped:
/// reading a page past the new end raised SIGBUS (exit 135). Now the run fails by name
/// (exit 1) and `--output` leaves nothing.
#[test]
fn a_file_truncated_while_it_is_read_is_an_error_not_a_signal() {
    let work = scratch("truncate");
    let input = work.join("big");
    std::fs::copy(env!("CARGO_BIN_EXE_dumpsyms"), &input).unwrap();
    let out = work.join("big.sym");
    let mut child = dumpsyms_command()
        .args(["--inlines", "--output"])
        .arg(&out)
        .arg(&input)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Truncated as soon as the process has it mapped.
    let maps = format!("/proc/{}/maps", child.id());
    let deadline = Instant::now() + Duration::from_secs(30);
    while !std::fs::read_to_string(&maps).is_ok_and(|m| m.contains(input.to_str().unwrap())) {
        assert!(Instant::now() < deadline, "never mapped");
        std::thread::sleep(Duration::from_millis(1));
    }
    std::fs::OpenOptions::new()
        .write(true)
        .open(&input)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "{status:?}: {err}");
    assert!(err.contains("truncated while it was being read"), "{err}");
    assert!(!out.exists());
    std::fs::remove_dir_all(&work).ok();
}

/// The same, in the library and without a race: a page read past the new end is zeros
/// and a mark, which `Input::intact` reports.
#[test]
fn a_truncated_map_reads_zeros_and_is_reported() {
    let work = scratch("map");
    let path = work.join("f");
    std::fs::write(&path, vec![0xAB; 1 << 20]).unwrap();
    let input = dumpsyms::fuzzing::internals::Input::open(&path).unwrap();
    assert!(input.intact().is_ok());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(4096)
        .unwrap();
    let bytes = input.bytes();
    assert_eq!(bytes[0], 0xAB);
    assert_eq!(
        bytes[bytes.len() - 1],
        0,
        "read past the end: a page of zeros"
    );
    let e = input.intact().unwrap_err();
    assert!(
        e.to_string().contains("truncated while it was being read"),
        "{e}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// A file listed by the tree walk and replaced by a FIFO before its turn hung `--store`
/// forever (opening a FIFO waits for a writer). Now it fails at once, by name.
#[test]
fn a_file_replaced_by_a_fifo_after_the_walk_does_not_hang() {
    let work = scratch("fifo-race");
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let file = tree.join("app");
    std::fs::copy(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"), &file).unwrap();
    let (listed, _) = dumpsyms::fuzzing::internals::files(std::slice::from_ref(&tree));
    assert_eq!(listed, vec![file.clone()]);
    std::fs::remove_file(&file).unwrap();
    assert!(
        Command::new("mkfifo")
            .arg(&file)
            .status()
            .unwrap()
            .success()
    );
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let role = dumpsyms::fuzzing::internals::role(&file);
        let dump = dumpsyms::dump(&file, &dumpsyms::Options::default()).map(|_| ());
        let _ = tx.send((role, dump.map_err(|e| e.to_string())));
    });
    let (role, dump) = rx
        .recv_timeout(Duration::from_secs(10))
        .expect("opening the FIFO blocked");
    assert!(
        matches!(&role, dumpsyms::fuzzing::internals::Role::Unreadable(why) if why.to_string().contains("no longer a regular file")),
        "{role:?}"
    );
    assert!(dump.unwrap_err().contains("not a regular file"));
    std::fs::remove_dir_all(&work).ok();
}

/// A file the user cannot read was dropped silently: "1 dumped, 0 skipped, 0 failed",
/// exit 0. Run as an unprivileged user (setpriv, as root), it is now a failure, named.
#[test]
fn an_unreadable_file_in_a_tree_is_a_failure() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || Command::new("setpriv").arg("--help").output().is_err() {
        println!("not root, or no setpriv: skipped");
        return;
    }
    let work = scratch("perm");
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for name in ["readable", "secret"] {
        std::fs::copy(
            fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"),
            tree.join(name),
        )
        .unwrap();
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tree.join("secret"), std::fs::Permissions::from_mode(0o000)).unwrap();
    for d in [&*work, tree.as_path()] {
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o777)).unwrap();
    }
    // A copy the unprivileged user can run wherever the checkout is.
    let exe = work.join("dumpsyms");
    std::fs::copy(env!("CARGO_BIN_EXE_dumpsyms"), &exe).unwrap();
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
        .arg(&exe)
        .arg("--store")
        .arg(work.join("store"))
        .arg(&tree)
        .env_remove("DEBUGINFOD_URLS")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("1 dumped"), "{err}");
    assert!(err.contains("1 failed"), "{err}");
    assert!(
        err.contains("secret: cannot read: Permission denied"),
        "{err}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// How a test server answers a request.
#[derive(Clone)]
enum Answer {
    /// 200 with these bytes and content type.
    File(Vec<u8>, &'static str),
    /// 200, no length, zeros until the client hangs up (at most 1 GB).
    Endless,
    /// 200, a length of 1 MB, one byte every half second (at most 60 s).
    Trickle,
    /// Reads the request and never answers (holds the connection 60 s at most).
    Silent,
    /// 200 with a length of 100 MB, 100 bytes every 9 s (at most 120 s): enough to pass
    /// any "bytes per interval" check, never done.
    Drip,
    /// 200, no length: these bytes (a symbol file's correct MODULE line), then zeros,
    /// 64 KiB a millisecond, for at most 60 s.
    EndlessAfter(Vec<u8>),
    /// 302 to this location.
    Redirect(String),
}

/// A server on 127.0.0.1 answering every request with `answer`, counting requests. It
/// stops by itself: each connection is bounded, and the thread ends with the test.
fn serve(answer: Answer) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let answer = answer.clone();
            std::thread::spawn(move || respond(stream, answer));
        }
    });
    (url, count)
}

fn respond(mut stream: TcpStream, answer: Answer) {
    let mut request = [0u8; 4096];
    let _ = stream.read(&mut request);
    match answer {
        Answer::File(body, kind) => {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
        Answer::Endless => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nConnection: close\r\n\r\n",
            );
            let chunk = vec![0u8; 1 << 16];
            for _ in 0..(1 << 14) {
                if stream.write_all(&chunk).is_err() {
                    break;
                }
            }
        }
        Answer::Trickle => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 1000000\r\n\r\n",
            );
            for _ in 0..120 {
                if stream.write_all(b"\x7f").is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(500));
            }
        }
        Answer::Silent => std::thread::sleep(Duration::from_secs(60)),
        Answer::Drip => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000000\r\n\r\n",
            );
            let started = Instant::now();
            let mut first = b"MODULE".to_vec();
            first.resize(100, b' ');
            while started.elapsed() < Duration::from_secs(120) {
                if stream.write_all(&first).is_err() {
                    break;
                }
                first = vec![b' '; 100];
                std::thread::sleep(Duration::from_secs(9));
            }
        }
        Answer::Redirect(location) => {
            let head = format!(
                "HTTP/1.1 302 Found\r\nLocation: {location}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
            let _ = stream.write_all(head.as_bytes());
        }
        Answer::EndlessAfter(head) => {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nConnection: close\r\n\r\n",
            );
            let _ = stream.write_all(&head);
            let chunk = vec![0u8; 1 << 16];
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(60) {
                if stream.write_all(&chunk).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// The stripped fixture whose debug file a debuginfod server is asked for, its
/// unstripped original (the right answer), and another build (a wrong one).
fn stripped() -> PathBuf {
    fixtures().join("extra/buildid/app")
}

fn debuginfod_run(url: &str, cache: &Path, extra: &[(&str, &str)]) -> (Duration, String, bool) {
    let mut cmd = dumpsyms_command();
    cmd.arg(stripped())
        .env("DEBUGINFOD_URLS", url)
        .env("DEBUGINFOD_CACHE_PATH", cache)
        .env("DEBUGINFOD_TIMEOUT", "2");
    for (k, v) in extra {
        cmd.env(k, v);
    }
    let started = Instant::now();
    let out = cmd.output().unwrap();
    (
        started.elapsed(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.success(),
    )
}

/// Each way a debuginfod server can misbehave: an HTML page, another build's file, an
/// endless body, a trickle and silence. Each is a warning naming the server and the
/// fault, within seconds (a silent server cost 275 s, a trickle 90 s), and nothing is
/// cached (the cache kept whatever was sent, and every later run reused it).
#[test]
fn misbehaving_debuginfod_servers_are_named_and_nothing_bad_is_cached() {
    let wrong = std::fs::read(fixtures().join("bin/x86_64/cpp-gcc-O2-dwarf5")).unwrap();
    type Env = &'static [(&'static str, &'static str)];
    let cases: Vec<(Answer, Env, &str)> = vec![
        (
            Answer::File(b"<html><body>Sign in</body></html>".to_vec(), "text/html"),
            &[],
            "answered text/html, not the file asked for",
        ),
        (
            Answer::File(wrong, "application/octet-stream"),
            &[],
            "wrong build: the file's build ID is",
        ),
        (
            Answer::Endless,
            &[("DEBUGINFOD_MAXSIZE", "1000000")],
            "the file is over the limit of 1000000 bytes",
        ),
        (
            Answer::Trickle,
            &[],
            "bytes in 2 s (at least 200 are needed to go on)",
        ),
        (Answer::Silent, &[], "no answer (timed out)"),
    ];
    for (answer, env, expected) in cases {
        let cache = scratch("debuginfod-cache");
        let (url, count) = serve(answer);
        let (took, err, ok) = debuginfod_run(&url, &cache, env);
        assert!(ok, "{err}");
        assert!(took < Duration::from_secs(8), "{took:?}: {err}");
        assert!(err.contains(&format!("debuginfod server {url}")), "{err}");
        assert!(err.contains(expected), "{expected}: {err}");
        assert!(
            !cache.join(build_id()).join("debuginfo").exists(),
            "{expected}"
        );
        // A fault that is not the network's is not asked again and again.
        assert_eq!(
            count.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "{expected}"
        );
        std::fs::remove_dir_all(&cache).ok();
    }
}

fn build_id() -> String {
    std::fs::read_to_string(fixtures().join("oracle/x86_64/c-gcc-O2-dwarf5.buildid"))
        .unwrap()
        .trim()
        .to_string()
}

/// A cached debug file of another build (left by an older client) is not trusted: it is
/// removed and fetched again, and the dump is the one the right file gives.
#[test]
fn a_wrong_file_in_the_cache_is_fetched_again() {
    let cache = scratch("stale-cache");
    let cached = cache.join(build_id()).join("debuginfo");
    std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
    std::fs::copy(fixtures().join("bin/x86_64/cpp-gcc-O2-dwarf5"), &cached).unwrap();
    let right = std::fs::read(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5")).unwrap();
    let (url, count) = serve(Answer::File(right.clone(), "application/octet-stream"));
    let (_, err, ok) = debuginfod_run(&url, &cache, &[]);
    assert!(ok, "{err}");
    assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1);
    assert_eq!(std::fs::read(&cached).unwrap(), right);
    assert!(!err.contains("no debug info"), "{err}");
    std::fs::remove_dir_all(&cache).ok();
}

/// A symbol server that answers an HTML page or another build's PDB with 200: the PDB
/// of another build was cached and failed every later run. Now it is named, not cached,
/// and the image is still dumped from what it has.
#[test]
fn a_symbol_server_sending_the_wrong_pdb_is_named_and_not_cached() {
    let dir = fixtures().join("windows/msvc-x86_64");
    let other = std::fs::read(fixtures().join("windows/msvc-x86_64-Od/app.pdb")).unwrap();
    for (answer, expected) in [
        (
            Answer::File(
                b"<!doctype html><p>maintenance".to_vec(),
                "text/html; charset=utf-8",
            ),
            "answered text/html, not the file asked for",
        ),
        (
            Answer::File(other.clone(), "application/octet-stream"),
            "wrong build: the file's id is",
        ),
    ] {
        let work = scratch("symsrv");
        // The image alone, so the PDB is not found beside it.
        std::fs::copy(dir.join("app.exe"), work.join("app.exe")).unwrap();
        let cache = work.join("cache");
        let (url, _) = serve(answer);
        let out = dumpsyms_command()
            .args(["--server-timeout", "2", "--symbol-server"])
            .arg(format!("srv*{}*{url}", cache.display()))
            .arg(work.join("app.exe"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(err.contains(&format!("symbol server {url}")), "{err}");
        assert!(err.contains(expected), "{expected}: {err}");
        let cached: Vec<_> = walk_files(&cache);
        assert!(cached.is_empty(), "{cached:?}");
        std::fs::remove_dir_all(&work).ok();
    }
}

fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// A PDB container claiming a 2 GB stream directory (2.1 GB resident before it failed)
/// or a DBI stream of 1.5 GB made of one page (3.0 GB): refused, saying what it claims.
/// The same streams in an honest container dump as the original PDB does.
#[test]
fn pdb_containers_that_claim_more_than_the_file_are_refused() {
    for (name, expected) in [
        (
            "directory-claims-2gb.pdb",
            "PDB container: its stream directory claims 2147483648 bytes, more than the whole file",
        ),
        (
            "dbi-one-page-repeated.pdb",
            "PDB container: stream 3 claims 1610612736 bytes, more than the whole file",
        ),
    ] {
        let out = dumpsyms_command().arg(hostile(name)).output().unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(expected), "{err}");
    }
    let records = |path: &Path| -> Vec<String> {
        let out = dumpsyms_command().arg(path).output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("FUNC ") || l.starts_with("PUBLIC "))
            .map(str::to_string)
            .collect()
    };
    let work = scratch("pdb-alone");
    std::fs::copy(
        fixtures().join("windows/msvc-x86_64/app.pdb"),
        work.join("app.pdb"),
    )
    .unwrap();
    let original = records(&work.join("app.pdb"));
    assert!(original.len() > 20);
    assert_eq!(records(&hostile("rebuilt.pdb")), original);
    // A truncated PDB says so.
    let bytes = std::fs::read(work.join("app.pdb")).unwrap();
    std::fs::write(work.join("cut.pdb"), &bytes[..bytes.len() / 2]).unwrap();
    let out = dumpsyms_command()
        .arg(work.join("cut.pdb"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("PDB container: truncated: its header says"),
        "{err}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// Exports sharing one 60 KB name: 246 MB of PUBLIC records from 167 KB. Now the names
/// written stop at 16 times the file, with a warning.
#[test]
fn exports_sharing_one_name_are_bounded_with_a_warning() {
    let stdout = dump_warned(
        &hostile("exports-sharing-one-name.dll"),
        "export table: 4034 export(s) left out",
    );
    let len = std::fs::metadata(hostile("exports-sharing-one-name.dll"))
        .unwrap()
        .len();
    assert!((stdout.len() as u64) < 16 * len + (2 << 20));
}

/// Mach-O `__unwind_info` whose 4,000 second-level pages overlap (2.1 GB resident and
/// 43 s): the table is refused with a warning, the rest of the file is dumped.
#[test]
fn overlapping_compact_unwind_pages_are_refused() {
    let out = dump_verbose(&hostile("overlapping-unwind-pages.macho"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "__unwind_info: second-level pages overlap: more entries than the section holds"
        ),
        "{err}"
    );
}

/// One arm64 `.xdata` record with 65,535 epilogue scopes of 1,019 codes (125 s, 1.85 GB):
/// the rows that are kept are worked out once, and the scopes share their codes.
#[test]
fn arm64_epilogue_scopes_cost_what_they_write() {
    let work = scratch("arm64");
    let input = hostile("arm64-epilogue-scopes.exe");
    let cost = measure(&[input.as_os_str()], &work);
    assert!(cost.ok, "{:.2000}", cost.stderr);
    assert!(cost.peak_rss < 128 << 20, "{} MB", cost.peak_rss >> 20);
    // One row per instruction of the prologue, then of each epilogue scope's first
    // instruction (each starts where the one before would continue).
    let sym = std::fs::read_to_string(work.join("out.sym")).unwrap();
    let rows = sym.lines().filter(|l| l.starts_with("STACK CFI ")).count();
    assert!(rows > 60_000, "{rows}");
    std::fs::remove_dir_all(&work).ok();
}

/// 10,000 frame data records naming one 60 KB program string (the i686 fixture's PDB
/// with its frame data replaced): 572 MB of STACK WIN from 463 KB. The program strings
/// written now stop at 16 times the file, with a warning; the records kept are whole.
#[test]
fn frame_data_sharing_one_program_is_bounded_with_a_warning() {
    let input = hostile("frames-sharing-one-program.pdb");
    let stdout = dump_warned(&input, "PDB frame data: 9860 records left out");
    let sym = String::from_utf8(stdout).unwrap();
    let len = std::fs::metadata(&input).unwrap().len() as usize;
    assert!(sym.len() < 16 * len + (2 << 20), "{}", sym.len());
    let kept: Vec<&str> = sym
        .lines()
        .filter(|l| l.starts_with("STACK WIN 4 "))
        .collect();
    assert_eq!(kept.len(), 140);
    assert!(kept.iter().all(|l| l.ends_with("$eip $eip")));
}

/// 8,000 procedures at one offset, with 60,000 line rows there (the x86_64 fixture's
/// first module rewritten): each procedure read every row again (> 30 s). The rows are
/// read once per offset, and a module gives at most twice its rows plus 65,536.
#[test]
fn procedures_sharing_one_offset_read_their_rows_once() {
    let stdout = dump_warned(
        &hostile("procedures-at-one-offset.pdb"),
        "479814464 line rows left out",
    );
    let sym = String::from_utf8(stdout).unwrap();
    // One FUNC (the others overlap it), with every row of its line table.
    assert_eq!(sym.lines().filter(|l| l.starts_with("FUNC ")).count(), 1);
    let rows = sym
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit() || ('a'..='f').contains(&c)));
    assert_eq!(rows.count(), 60_000);
}

/// 10,000 files named by suffixes of one 60 KB string (410 KB): 550 MB of FILE records.
/// The names written stop at 16 times the file; the rest share one placeholder.
#[test]
fn files_named_by_one_shared_string_are_bounded_with_a_warning() {
    let input = hostile("files-sharing-one-name.pdb");
    let out = dump_verbose(&input);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err:.2000}");
    assert!(
        err.contains("PDB: 9872 file and inline function names written as \"<name left out>\""),
        "{err:.2000}"
    );
    let sym = parse(&String::from_utf8(out.stdout).unwrap());
    let len = std::fs::metadata(&input).unwrap().len() as usize;
    let bytes: usize = sym.files.values().map(String::len).sum();
    assert!(bytes < 16 * len + (2 << 20), "{bytes}");
    assert_eq!(sym.files.len(), 129);
    assert_eq!(
        sym.files
            .values()
            .filter(|f| *f == "<name left out>")
            .count(),
        1
    );
}

/// Unresolved names that send libstdc++ 12's demangler into an endless loop
/// (`_Z1fDOsrioDp`, 12 bytes, found by the demangle fuzz target): the dump hung for
/// ever. Each is given up on after 2 s and written raw; a real `sr` name before them is
/// still read by GNU's demangler.
#[test]
fn names_that_loop_the_runtime_demangler_are_given_up_on() {
    let started = Instant::now();
    let out = dumpsyms_command()
        .arg(hostile("looping-itanium-exports.dll"))
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(started.elapsed() < Duration::from_secs(20));
    let sym = String::from_utf8(out.stdout).unwrap();
    let publics: Vec<&str> = sym
        .lines()
        .filter_map(|l| l.strip_prefix("PUBLIC "))
        .collect();
    assert_eq!(
        publics,
        [
            "1000 0 std::enable_if<std::is_same<int, int>::value, void>::type A::f<int>()",
            "1010 0 _Z1fDOsrioDp",
            "1020 0 _Z1fIXsrioDaEEvv",
        ]
    );
}

/// A store holding one symbol file, `body` after its MODULE line, for module `app` of
/// build [`SYM_BUILD_ID`]; and a report of `frames` sanitizer frames into it.
fn crafted_store(
    work: &Path,
    body: impl FnOnce(&mut dyn Write),
    frames: usize,
) -> (PathBuf, PathBuf) {
    let store = work.join("store");
    let dir = store.join("app").join(SYM_DEBUG_ID);
    std::fs::create_dir_all(&dir).unwrap();
    let mut sym = std::io::BufWriter::new(std::fs::File::create(dir.join("app.sym")).unwrap());
    writeln!(sym, "MODULE Linux x86_64 {SYM_DEBUG_ID} app").unwrap();
    body(&mut sym);
    sym.flush().unwrap();
    let report = work.join("report.txt");
    let mut r = String::new();
    for i in 0..frames {
        r.push_str(&format!(
            "    #{i} 0x{:x}  (/x/app+0x{:x}) (BuildId: {SYM_BUILD_ID})\n",
            0x1000 + i,
            0x1000 + i * 16
        ));
    }
    std::fs::write(&report, r).unwrap();
    (store, report)
}

const SYM_DEBUG_ID: &str = "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40";
const SYM_BUILD_ID: &str = "4aea7096a43bf4e6e9f3a6c4d7e1a9b4";

/// `dumpsyms symbolize ARGS` measured; the bound every case must hold: exit 0 or 1,
/// the time limit, 512 MB, and output at most 100 times what was read plus 16 MB.
fn symbolize_within_bounds(case: &str, args: &[&std::ffi::OsStr], read: u64, work: &Path) -> Cost {
    let mut all: Vec<&std::ffi::OsStr> = vec!["symbolize".as_ref(), "--no-debuginfod".as_ref()];
    all.extend_from_slice(args);
    let cost = measure(&all, work);
    println!(
        "{case}: {:.2} s, {} MB, {} bytes out of {read}",
        cost.wall.as_secs_f64(),
        cost.peak_rss >> 20,
        cost.output
    );
    assert!(
        !cost.stderr.contains("panicked"),
        "{case}: {:.2000}",
        cost.stderr
    );
    assert!(cost.wall < time_limit(), "{case}: {:.2?}", cost.wall);
    assert!(
        cost.peak_rss < 512 << 20,
        "{case}: {} MB",
        cost.peak_rss >> 20
    );
    assert!(
        cost.output <= 100 * read + (16 << 20),
        "{case}: {} bytes",
        cost.output
    );
    cost
}

/// The on-device trace's hostile shapes, each within its bound (on the commit before,
/// a 60 KB path for 100,000 PCs printed 6 GB; 1M PCs with --json took 3.1 GB (4M were
/// killed at 7.3 GB); 100,000
/// modules by 200,000 PCs took 13.4 s).
#[test]
fn hostile_on_device_traces_are_bounded() {
    let work = scratch("hostile-traces");
    let trace = |modules: &str, pcs: &str| {
        format!("{{\"symbols\": [{modules}], \"threads\": [{{\"pcs\": [{pcs}]}}]}}")
    };
    let module = |path: &str, start: u64, end: u64| {
        format!(
            "{{\"pc_range\": {{\"start\": \"{start:#x}\", \"end\": \"{end:#x}\"}}, \"build_id\": \"\", \
             \"compiled_offset\": \"0x0\", \"runtime_offset\": \"{start:#x}\", \"path\": \"{path}\"}}"
        )
    };
    let pcs = |n: u64, base: u64, span: u64| -> String {
        (0..n)
            .map(|i| format!("\"{:#x}\"", base + (i * 7919) % span))
            .collect::<Vec<_>>()
            .join(",")
    };
    // One module of a 60 KB path, 100,000 PCs in it, text and JSON.
    let long = format!("/{}", "a".repeat(60_000));
    let doc = trace(
        &module(&long, 0x1000, 0x100000),
        &pcs(100_000, 0x1000, 0xff000),
    );
    let path = work.join("long-path.json");
    std::fs::write(&path, &doc).unwrap();
    for json in [false, true] {
        let mut args: Vec<&std::ffi::OsStr> = vec![path.as_os_str()];
        if json {
            args.insert(0, "--json".as_ref());
        }
        let cost = symbolize_within_bounds("a 60 KB module path", &args, doc.len() as u64, &work);
        assert!(
            cost.stderr.contains("a path of 60001 bytes"),
            "{}",
            cost.stderr
        );
    }
    // 4M PCs (40 MB) with --json (a tenth in a debug build).
    let many = if cfg!(debug_assertions) {
        400_000
    } else {
        4_000_000
    };
    let doc = trace(
        &module("/lib/a.so", 0x1000, 0x100000),
        &pcs(many, 0x1000, 0xff000),
    );
    let path = work.join("million.json");
    std::fs::write(&path, &doc).unwrap();
    let cost = symbolize_within_bounds(
        "4M PCs",
        &["--json".as_ref(), path.as_os_str()],
        doc.len() as u64,
        &work,
    );
    assert!(cost.ok, "{}", cost.stderr);
    // 100,000 modules and 200,000 PCs.
    let modules: Vec<String> = (0..100_000u64)
        .map(|i| {
            module(
                &format!("/m/{i}.so"),
                0x10000 + i * 0x1000,
                0x10000 + i * 0x1000 + 0x800,
            )
        })
        .collect();
    let doc = trace(&modules.join(","), &pcs(200_000, 0x10000, 100_000 * 0x1000));
    let path = work.join("many-modules.json");
    std::fs::write(&path, &doc).unwrap();
    let cost = symbolize_within_bounds(
        "100,000 modules",
        &[path.as_os_str()],
        doc.len() as u64,
        &work,
    );
    assert!(cost.ok && cost.output > 0, "{}", cost.stderr);
    // A trace over the size any device writes is refused at once.
    let doc = trace(
        &module("/lib/a.so", 0x1000, 0x100000),
        &pcs(7_000_000, 0x1000, 0xff000),
    );
    let path = work.join("huge.json");
    std::fs::write(&path, &doc).unwrap();
    let cost = symbolize_within_bounds(
        "a 70 MB trace",
        &[path.as_os_str()],
        doc.len() as u64,
        &work,
    );
    assert!(
        !cost.ok && cost.stderr.contains("over 64 MiB"),
        "{}",
        cost.stderr
    );
    std::fs::remove_dir_all(&work).ok();
}

/// Hostile symbol files in a store, each within its bound (on the commit before: 1M
/// nested INLINE records turned a 2 KB report into 3.5 GB; one INLINE record of 20M
/// ranges cost 1.1 GB; a 400 MB file 1.3 GB), and hostile reports (a 700 MB line cost
/// 1.4 GB; 3M distinct functions 13.9 s).
#[test]
fn hostile_symbol_files_and_reports_are_bounded() {
    // The full sizes in an optimized build, as users run it; a tenth of them otherwise.
    let scale: u64 = if cfg!(debug_assertions) { 10 } else { 1 };
    let work = scratch("hostile-symfiles");
    let run = |case: &str, body: &dyn Fn(&mut dyn Write), frames: usize| {
        let dir = work.join(case.replace(' ', "-"));
        let (store, report) = crafted_store(&dir, body, frames);
        let read = std::fs::metadata(&report).unwrap().len()
            + walk_files(&store)
                .iter()
                .map(|f| std::fs::metadata(f).unwrap().len())
                .sum::<u64>();
        let cost = symbolize_within_bounds(
            case,
            &["--store".as_ref(), store.as_os_str(), report.as_os_str()],
            read,
            &dir,
        );
        std::fs::remove_dir_all(&dir).ok();
        cost
    };
    let nested = 1_000_000 / scale;
    let cost = run(
        "nested inlines",
        &|w| {
            writeln!(w, "INLINE_ORIGIN 0 inlined\nFUNC 1000 100000 0 outer").unwrap();
            for d in 0..nested {
                writeln!(w, "INLINE {d} 1 0 0 1000 100000").unwrap();
            }
        },
        100,
    );
    assert!(cost.stderr.contains("deeper than 256"), "{}", cost.stderr);
    // One frame of 256 inlined calls of an 8 MiB name cost 6.3 GB (SIGABRT under an
    // 8 GiB cap); 1,000 frames naming a 1 MiB function, 800 MB. Names are cut at 64 KiB,
    // a frame's chain at 1 MiB of names, before any text is built.
    let long = "n".repeat((8 << 20) / scale as usize);
    let cost = run(
        "an 8 MiB name inlined 256 deep",
        &|w| {
            writeln!(w, "INLINE_ORIGIN 0 {long}\nFUNC 1000 100000 0 outer").unwrap();
            for d in 0..256 {
                writeln!(w, "INLINE {d} 1 0 0 1000 100000").unwrap();
            }
        },
        100,
    );
    assert!(
        cost.stderr.contains("names longer than 64 KiB"),
        "{}",
        cost.stderr
    );
    let long = "n".repeat((1 << 20) / scale as usize);
    run(
        "1,000 frames naming a 1 MiB function",
        &|w| writeln!(w, "FUNC 1000 100000 0 {long}").unwrap(),
        1000,
    );
    let ranges = 20_000_000 / scale;
    run(
        "one INLINE record of 20M ranges",
        &|w| {
            write!(
                w,
                "INLINE_ORIGIN 0 inlined\nFUNC 1000 10000000 0 outer\nINLINE 0 1 0 0"
            )
            .unwrap();
            for i in 0..ranges {
                write!(w, " {:x} 1", 0x1000 + i).unwrap();
            }
            writeln!(w).unwrap();
        },
        100,
    );
    let size = 400_000_000 / scale;
    let cost = run(
        "a 400 MB symbol file",
        &|w| {
            let (mut written, mut addr) = (0u64, 0x1000u64);
            while written < size {
                let mut f = format!("FUNC {addr:x} 100 0 function_{addr:x}\n");
                for j in 0..16u64 {
                    f.push_str(&format!("{:x} 10 {} 0\n", addr + j * 16, j + 1));
                }
                w.write_all(f.as_bytes()).unwrap();
                written += f.len() as u64;
                addr += 0x100;
            }
        },
        100,
    );
    assert!(cost.ok, "{}", cost.stderr);
    // 3M distinct functions, each named by a line of the report.
    let functions = 3_000_000 / scale;
    let dir = work.join("many-functions");
    let (store, report) = crafted_store(
        &dir,
        |w: &mut dyn Write| {
            for i in 0..functions {
                writeln!(w, "FUNC {:x} 10 0 function_number_{i}", 0x1000 + i * 16).unwrap();
            }
        },
        0,
    );
    let mut r = std::io::BufWriter::new(std::fs::File::create(&report).unwrap());
    for i in 0..functions {
        writeln!(r, "{SYM_BUILD_ID}+0x{:x}", 0x1000 + i * 16).unwrap();
    }
    r.flush().unwrap();
    drop(r);
    let read = std::fs::metadata(&report).unwrap().len() * 2;
    let cost = symbolize_within_bounds(
        "3M distinct functions",
        &["--store".as_ref(), store.as_os_str(), report.as_os_str()],
        read,
        &dir,
    );
    assert!(
        cost.stderr
            .contains(&format!("{functions} frame(s) resolved")),
        "{}",
        cost.stderr
    );
    std::fs::remove_dir_all(&dir).ok();
    // 200,000 absolute frames placed through a list of 20,000 modules, as glibc's abort
    // report gives them: every frame looked at every module (over 60 s before).
    let frames = 200_000 / scale;
    let mut listed: String = (0..frames)
        .map(|i| format!("./prog[{:#x}]\n", 0x400000 + i))
        .collect();
    listed.push_str("======= Memory map: ========\n");
    for i in 0..20_000 / scale {
        let base = 0x1000_0000 + i * 0x10000;
        listed.push_str(&format!(
            "{base:x}-{:x} r-xp 00000000 fd:01 {i} /lib/l{i}.so\n",
            base + 0x1000
        ));
    }
    // Lines shaped to make a scanner look back from every byte: 1 MiB of `)`, of
    // nested brackets, of `pc ` tokens, and 20 lines of 100 KB of `)` (74–97 s, 12–24 s,
    // 14 s and 18.5 s before).
    // Just under the 1 MiB past which a line is copied through unread.
    let half = (1 << 19) - 64;
    let shapes: [(&str, String); 7] = [
        ("200,000 absolute frames and 20,000 listed modules", listed),
        ("a 1 MiB line of )", ")".repeat(2 * half)),
        (
            "1 MiB of nested (",
            format!("{}{}", "(".repeat(half), ")".repeat(half)),
        ),
        (
            "1 MiB of nested [",
            format!("{}{}", "[".repeat(half), "]".repeat(half)),
        ),
        (
            "1 MiB of nested <",
            format!("{}{}", "<".repeat(half), ">".repeat(half)),
        ),
        ("349k pc tokens", "#1 pc ".repeat(349_000 / 2)),
        (
            "20 lines of 100 KB of )",
            format!("{}\n", ")".repeat(100_000)).repeat(20),
        ),
    ];
    for (case, text) in shapes {
        let path = work.join("shape.txt");
        std::fs::write(&path, &text).unwrap();
        let cost = symbolize_within_bounds(case, &[path.as_os_str()], text.len() as u64, &work);
        assert!(cost.ok, "{case}: {}", cost.stderr);
        assert_eq!(cost.output, text.len() as u64, "{case}");
    }
    // A 700 MB line with no newline, copied through.
    let line = work.join("line.txt");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&line).unwrap());
    let chunk = vec![b'x'; 1 << 20];
    for _ in 0..700 / scale {
        f.write_all(&chunk).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let len = std::fs::metadata(&line).unwrap().len();
    let cost = symbolize_within_bounds("a 700 MB line", &[line.as_os_str()], len, &work);
    assert_eq!(cost.output, len);
    assert!(
        cost.stderr.contains("longer than 1 MiB copied through"),
        "{}",
        cost.stderr
    );
    std::fs::remove_dir_all(&work).ok();
}

/// Servers that drip, stall or never end, asked for every module of a report: each run
/// within 30 s whatever the number of modules, every server named, nothing left in the
/// cache (before: a drip was waited on forever, a stalled debuginfod cost 10 s per build
/// ID, an endless body left GBs in the cache, a killed run left *.tmp files).
#[test]
fn hostile_servers_cost_a_symbolize_run_at_most_its_network_time() {
    let work = scratch("hostile-symbolize-servers");
    let report = work.join("report.txt");
    let mut text = String::new();
    for i in 0..5u8 {
        text.push_str(&format!(
            "    #{i} 0x1000  (/x/lib{i}.so+0x1000) (BuildId: {i:02x}{})\n",
            &SYM_BUILD_ID[2..]
        ));
    }
    std::fs::write(&report, &text).unwrap();
    let symbolize = |url: &str, cache: &Path, extra: &[&str]| {
        let started = Instant::now();
        let o = dumpsyms_command()
            .args([
                "symbolize",
                "--no-debuginfod",
                "--symbols-url",
                url,
                "--symbols-cache",
            ])
            .arg(cache)
            .args(extra)
            .arg(&report)
            .output()
            .unwrap();
        (started.elapsed(), o)
    };
    // A drip: the run's 30 s, then no other module is asked for.
    let (url, count) = serve(Answer::Drip);
    let cache = work.join("drip-cache");
    let (took, o) = symbolize(&url, &cache, &[]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert!(took < Duration::from_secs(30), "{took:?}: {stderr}");
    assert_eq!(o.stdout, text.as_bytes());
    assert_eq!(
        count.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{stderr}"
    );
    // Under 100 bytes a second over the 10 s window: given up on then.
    assert!(stderr.contains("are needed to go on"), "{stderr}");
    assert!(walk_files(&cache).is_empty(), "{:?}", walk_files(&cache));
    // An endless body behind a correct MODULE line, cut by the run's time: nothing
    // cached, memory flat.
    let head = format!("MODULE Linux x86_64 {SYM_DEBUG_ID} lib0.so\n").into_bytes();
    let (url, _) = serve(Answer::EndlessAfter(head));
    let cache = work.join("endless-cache");
    let (took, o) = symbolize(&url, &cache, &["--server-max-time", "3"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(took < Duration::from_secs(20), "{took:?}: {stderr}");
    assert!(walk_files(&cache).is_empty(), "{:?}", walk_files(&cache));
    // Killed while it downloads: nothing partial is left behind.
    let (url, _) = serve(Answer::Drip);
    let cache = work.join("killed-cache");
    let mut child = dumpsyms_command()
        .args([
            "symbolize",
            "--no-debuginfod",
            "--symbols-url",
            &url,
            "--symbols-cache",
        ])
        .arg(&cache)
        .arg(&report)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(walk_files(&cache).is_empty(), "{:?}", walk_files(&cache));
    // A stalled debuginfod: one time-out for the run, asked once.
    let (url, count) = serve(Answer::Silent);
    let started = Instant::now();
    let o = dumpsyms_command()
        .args(["symbolize"])
        .arg(&report)
        .env("DEBUGINFOD_URLS", &url)
        .env("DEBUGINFOD_CACHE_PATH", work.join("debuginfod-cache"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(took < Duration::from_secs(30), "{took:?}: {stderr}");
    assert_eq!(
        count.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "{stderr}"
    );
    assert_eq!(stderr.matches("debuginfod server").count(), 1, "{stderr}");
    std::fs::remove_dir_all(&work).ok();
}

/// A redirect to `file:///etc/passwd` panicked inside ureq (exit 101) on every path that
/// fetches; a `--store` run over several binaries ended with no summary. Now each path
/// names the server and the redirect, the run goes on, and a redirect to another http
/// server is still followed.
#[test]
fn redirects_to_other_schemes_are_errors_naming_the_server() {
    let hostile = "file:///etc/passwd";
    // debuginfod, for a plain dump of a stripped binary.
    let cache = scratch("redirect-debuginfod");
    let (url, _) = serve(Answer::Redirect(hostile.into()));
    let (_, err, ok) = debuginfod_run(&url, &cache, &[]);
    assert!(ok, "{err}");
    assert!(err.contains(&format!("debuginfod server {url}")), "{err}");
    assert!(err.contains("redirected to file:///etc/passwd"), "{err}");
    assert!(walk_files(&cache).is_empty(), "{:?}", walk_files(&cache));
    // A --store run over several binaries: every one dumped, the summary told.
    let work = scratch("redirect-store");
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for (i, name) in ["app", "app", "app", "app"].iter().enumerate() {
        std::fs::copy(
            stripped().parent().unwrap().join(name),
            tree.join(format!("m{i}")),
        )
        .unwrap();
    }
    let out = dumpsyms_command()
        .arg("--store")
        .arg(work.join("store"))
        .arg(&tree)
        .env("DEBUGINFOD_URLS", &url)
        .env("DEBUGINFOD_CACHE_PATH", work.join("cache"))
        .env("DEBUGINFOD_TIMEOUT", "2")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("4 dumped") || err.contains("1 dumped"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
    // A symbol server, for the PDB of an image.
    let (url, _) = serve(Answer::Redirect(hostile.into()));
    std::fs::copy(
        fixtures().join("windows/msvc-x86_64/app.exe"),
        work.join("app.exe"),
    )
    .unwrap();
    let out = dumpsyms_command()
        .args(["--server-timeout", "2", "--symbol-server"])
        .arg(format!("srv*{}*{url}", work.join("pdb-cache").display()))
        .arg(work.join("app.exe"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains(&format!("symbol server {url}")), "{err}");
    assert!(err.contains("redirected to file:///etc/passwd"), "{err}");
    // symbolize --symbols-url.
    let (url, _) = serve(Answer::Redirect(hostile.into()));
    let report = work.join("report.txt");
    std::fs::write(
        &report,
        format!("    #0 0x1000  (/x/lib0.so+0x1000) (BuildId: {SYM_BUILD_ID})\n"),
    )
    .unwrap();
    let out = dumpsyms_command()
        .args([
            "symbolize",
            "--no-debuginfod",
            "--symbols-url",
            &url,
            "--symbols-cache",
        ])
        .arg(work.join("sym-cache"))
        .arg(&report)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("redirected to file:///etc/passwd"), "{err}");
    // A redirect to another http server is followed, as a symbol server's to its storage.
    let right = std::fs::read(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5")).unwrap();
    let (storage, stored) = serve(Answer::File(right, "application/octet-stream"));
    let (url, _) = serve(Answer::Redirect(format!("{storage}/bucket/debuginfo")));
    let cache = scratch("redirect-followed");
    let (_, err, ok) = debuginfod_run(&url, &cache, &[]);
    assert!(ok, "{err}");
    assert!(!err.contains("no debug info"), "{err}");
    assert_eq!(stored.load(std::sync::atomic::Ordering::SeqCst), 1);
    for dir in [cache, work] {
        std::fs::remove_dir_all(dir).ok();
    }
}

/// A debuginfod server that drips 100 bytes every 9 s was waited on for as long as it
/// dripped unless a whole-download limit was given; one that stalls cost its time-out
/// for the executable and again for the debug file. By default now: under 100 bytes a
/// second over the time-out window is a stall, and a stalled server is asked once.
#[test]
fn a_dripping_debuginfod_server_is_given_up_on_by_default() {
    for answer in [Answer::Drip, Answer::Silent] {
        let cache = scratch("debuginfod-drip");
        let (url, count) = serve(answer);
        let started = Instant::now();
        let out = dumpsyms_command()
            .arg(stripped())
            .env("DEBUGINFOD_URLS", &url)
            .env("DEBUGINFOD_CACHE_PATH", &cache)
            .output()
            .unwrap();
        let took = started.elapsed();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{err}");
        assert!(took < Duration::from_secs(30), "{took:?}: {err}");
        assert!(err.contains(&format!("debuginfod server {url}")), "{err}");
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 1, "{err}");
        assert!(walk_files(&cache).is_empty(), "{:?}", walk_files(&cache));
        std::fs::remove_dir_all(&cache).ok();
    }
}

/// `--missing` removed duplicates by comparing each row with every row before it: 100,000
/// rows took 8–14 s even when the shard left none to do, and 1M did not finish in 120 s.
/// `/dev/zero` was read until memory ran out, and a FIFO with no writer blocked.
#[test]
fn missing_lists_are_read_in_linear_time_and_special_files_refused() {
    let work = scratch("missing-scale");
    let list = work.join("missing.csv");
    let mut text = String::from("debug_file,debug_id,code_file,code_id\n");
    for i in 0..500_000u64 {
        let id = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        text.push_str(&format!(
            "lib{i}.pdb,{id:016X}{:016X}1,lib{i}.dll,{:X}\n",
            !id,
            id >> 24
        ));
    }
    // Every row twice, 1M rows (75 MB): the second copy is dropped.
    let half = text.len();
    text.extend_from_within(text.find('\n').unwrap() + 1..half);
    std::fs::write(&list, &text).unwrap();
    let store = work.join("store");
    let args = [
        "--no-debuginfod".as_ref(),
        "--missing".as_ref(),
        list.as_os_str(),
        "--store".as_ref(),
        store.as_os_str(),
        "--shard".as_ref(),
        "1/1000000".as_ref(),
    ];
    let cost = measure(&args, &work);
    // Release build: 5 s for the 1M rows; unoptimized, eight times that.
    let limit = time_limit() / 2;
    assert!(cost.wall < limit, "{:?}: {:.2000}", cost.wall, cost.stderr);
    let summary = cost
        .stderr
        .lines()
        .find(|l| l.contains(" dumped"))
        .unwrap_or("");
    let elsewhere: u64 = summary
        .split(", ")
        .find_map(|p| p.strip_suffix(" left to the other shards (this is 1/1000000)"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{:.2000}", cost.stderr));
    // Each distinct row once: those of this shard were tried (no server has them).
    let tried = cost
        .stderr
        .lines()
        .filter(|l| l.starts_with("dumpsyms: failed: "))
        .count() as u64;
    assert_eq!(elsewhere + tried, 500_000, "{summary}");
    // Special files are refused at once, not read.
    let fifo = work.join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for special in [Path::new("/dev/zero"), fifo.as_path()] {
        let started = Instant::now();
        let out = dumpsyms_command()
            .args(["--missing"])
            .arg(special)
            .arg("--store")
            .arg(&store)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("not a regular file"), "{err}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
    std::fs::remove_dir_all(&work).ok();
}

/// A sparse 8 GB file found through `.gnu_debuglink` had its CRC computed over every
/// byte (19 s). Now a candidate whose size is far past its sections' end is refused
/// unread, and two build IDs are compared before any CRC.
#[test]
fn an_absurdly_large_debug_link_candidate_is_refused_unread() {
    let work = scratch("debuglink-sparse");
    let src = work.join("a.c");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let bin = work.join("a");
    // Without build IDs, so that the CRC is what decides.
    let cc = |out: &Path| {
        let status = Command::new("cc")
            .args(["-g", "-Wl,--build-id=none", "-o"])
            .arg(out)
            .arg(&src)
            .status()
            .unwrap();
        assert!(status.success());
    };
    cc(&bin);
    let debug = work.join("a.debug");
    let tool = |args: &[&std::ffi::OsStr]| {
        assert!(
            Command::new("objcopy")
                .args(args)
                .status()
                .unwrap()
                .success()
        )
    };
    tool(&[
        "--only-keep-debug".as_ref(),
        bin.as_os_str(),
        debug.as_os_str(),
    ]);
    let stripped = work.join("a.stripped");
    tool(&[
        "--strip-debug".as_ref(),
        bin.as_os_str(),
        stripped.as_os_str(),
    ]);
    let link = format!("--add-gnu-debuglink={}", debug.display());
    tool(&[link.as_ref(), stripped.as_os_str()]);
    // Sparse: 8 GB long, a few KB on disk.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&debug)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let started = Instant::now();
    let out = dumpsyms_command()
        .arg("-v")
        .arg(&stripped)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        err.contains("8589934592 bytes, where its sections end at"),
        "{err}"
    );
    // Neither has a build ID: the CRC decides, and another build's file is refused.
    std::fs::write(
        &src,
        "int other(int x) { return x * 3; }\nint main(void) { return other(1); }\n",
    )
    .unwrap();
    let other = work.join("other");
    cc(&other);
    tool(&[
        "--only-keep-debug".as_ref(),
        other.as_os_str(),
        debug.as_os_str(),
    ]);
    let out = dumpsyms_command()
        .arg("-v")
        .arg(&stripped)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("does not match the debug link's"), "{err}");
    std::fs::remove_dir_all(&work).ok();
}

/// Small answers were read with only a read time-out: a sym-upload-v2 server trickling
/// its JSON answer a byte every half second held the upload for as long as it liked
/// (up to 1 MiB: six days), as would an error page or a `file.ptr`. Now such an answer
/// must come within the time-out.
#[test]
fn a_trickled_answer_is_not_waited_on() {
    let work = scratch("trickled-answer");
    let (url, _) = serve(Answer::Trickle);
    let started = Instant::now();
    let out = dumpsyms_command()
        .arg("--output")
        .arg(work.join("a.sym"))
        .args(["--upload", &url, "--upload-protocol", "sym-upload-v2"])
        .args(["--upload-timeout", "2"])
        .arg(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"))
        .env("DUMPSYMS_UPLOAD_TOKEN", "k")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{err}");
    assert!(err.contains("the answer was not sent within 2 s"), "{err}");
    std::fs::remove_dir_all(&work).ok();
}
