//! Debug files from debuginfod. With elfutils' own `debuginfod` serving a directory of
//! debug files on a loopback port (ignored tests, run by `.ci/run`, which installs it):
//! a stripped fixture dumps to exactly the bytes `--debug-dir` gives, the file lands in
//! the cache where elfutils' client puts it, and a second run with the server stopped is
//! served from that cache. Without any server (always run): a refused connection and a
//! server that never answers are warnings within the timeout, and `--no-debuginfod`
//! never connects.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The stripped fixture and the tree its debug file is in (made by make-fixtures.sh from
/// the oracle-checked bin/x86_64/c-gcc-O2-dwarf5).
fn stripped() -> PathBuf {
    fixtures().join("extra/buildid/app")
}

fn build_id() -> String {
    std::fs::read_to_string(fixtures().join("oracle/x86_64/c-gcc-O2-dwarf5.buildid"))
        .unwrap()
        .trim()
        .to_string()
}

/// Runs dumpsyms with `env` (and no other debuginfod settings from this environment).
fn run(args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut cmd = dumpsyms_command();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `work/files`, for debuginfod to serve: the stripped fixture program's debug file,
/// and with `executable` the program too.
fn served_files(work: &Path, executable: bool) -> PathBuf {
    let files = work.join("files");
    std::fs::create_dir_all(&files).unwrap();
    if executable {
        std::fs::copy(stripped(), files.join("app")).unwrap();
    }
    std::fs::copy(
        fixtures().join("extra/debuglink/app.debug"),
        files.join("app.debug"),
    )
    .unwrap();
    files
}

/// elfutils' debuginfod over `dir`, stopped when dropped.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    /// Serves `dir`, once the files with `build_ids` are indexed.
    fn start(dir: &Path, db: &Path, build_ids: &[&str]) -> Server {
        let port = free_port();
        let child = Command::new("debuginfod")
            .arg("-F")
            .arg(dir)
            .args(["-p", &port.to_string(), "-t", "0", "-d"])
            .arg(db)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("elfutils' debuginfod (Debian package debuginfod) must be installed");
        let server = Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        };
        // It scans in the background: wait until it serves the files.
        let deadline = Instant::now() + Duration::from_secs(60);
        for id in build_ids {
            let url = format!("{}/buildid/{id}/debuginfo", server.url);
            while ureq::get(&url).call().is_err() {
                assert!(Instant::now() < deadline, "debuginfod never served {url}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        server
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
#[ignore = "needs elfutils' debuginfod; .ci/run installs it"]
fn stripped_binary_dumps_through_debuginfod_as_through_debug_dir_then_from_cache() {
    let work = scratch("real");
    let files = served_files(&work, false);
    // dwz's alternate file, fetched by the build ID in .gnu_debugaltlink.
    std::fs::copy(
        fixtures().join("extra/dwz4/dumpsyms-fixture.debug"),
        files.join("dumpsyms-fixture.debug"),
    )
    .unwrap();
    let bin = stripped();
    let bin = bin.to_str().unwrap();
    let root = fixtures().join("extra/debugroot");
    let expected = run(&["--debug-dir", root.to_str().unwrap(), bin], &[]);
    assert!(expected.status.success());
    assert!(String::from_utf8_lossy(&expected.stdout).contains("\nFUNC "));

    let cache = work.join("cache");
    let cache_str = cache.to_str().unwrap();
    const DWZ_ALT_ID: &str = "0c6e5a0f1ee1573978f6ebf0cafc9b6fcededaa4";
    let server = Server::start(&files, &work.join("db.sqlite"), &[&build_id(), DWZ_ALT_ID]);
    let url = server.url.clone();
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache_str),
    ];
    let fetched = run(&[bin], &env);
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    assert!(
        fetched.stdout == expected.stdout,
        "through debuginfod differs from --debug-dir"
    );
    assert!(
        fetched.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    // Where elfutils' client caches it, byte for byte the debug file.
    let cached = cache.join(build_id()).join("debuginfo");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(files.join("app.debug")).unwrap()
    );

    // A dwz-compressed binary alone, without its alternate file beside it.
    let dwz = fixtures().join("extra/dwz4/cpp-gcc-O2-dwarf4");
    let alone = work.join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(&dwz, alone.join("cpp-gcc-O2-dwarf4")).unwrap();
    let dwz_expected = run(&["-d", dwz.to_str().unwrap()], &[]);
    let without = run(
        &["-d", alone.join("cpp-gcc-O2-dwarf4").to_str().unwrap()],
        &[],
    );
    assert!(
        without.stdout != dwz_expected.stdout,
        "the alternate file matters"
    );
    let dwz_fetched = run(
        &["-d", alone.join("cpp-gcc-O2-dwarf4").to_str().unwrap()],
        &env,
    );
    assert!(
        dwz_fetched.stdout == dwz_expected.stdout,
        "{}",
        String::from_utf8_lossy(&dwz_fetched.stderr)
    );
    assert!(
        cache
            .join("0c6e5a0f1ee1573978f6ebf0cafc9b6fcededaa4/debuginfo")
            .is_file()
    );

    // The server is gone: the cache serves.
    drop(server);
    let again = run(&[bin], &env);
    assert!(again.status.success());
    assert!(again.stdout == expected.stdout, "from the cache differs");
    assert!(
        again.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    // And with the cache emptied, the dead server is a warning, and the dump goes on.
    std::fs::remove_dir_all(&cache).unwrap();
    let dead = run(
        &[bin],
        &[
            ("DEBUGINFOD_URLS", &url),
            ("DEBUGINFOD_CACHE_PATH", cache_str),
        ],
    );
    assert!(dead.status.success());
    let err = String::from_utf8_lossy(&dead.stderr);
    assert!(
        err.contains("unreachable") && err.contains("no debug info found"),
        "{err}"
    );
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn a_refused_connection_is_a_warning_and_the_dump_goes_on() {
    let work = scratch("refused");
    let url = format!("http://127.0.0.1:{}", free_port());
    let started = Instant::now();
    let out = run(
        &[stripped().to_str().unwrap()],
        &[
            ("DEBUGINFOD_URLS", &url),
            ("DEBUGINFOD_CACHE_PATH", work.to_str().unwrap()),
        ],
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("debuginfod server {url} is unreachable")),
        "{err}"
    );
    assert!(err.contains("no debug info found"), "{err}");
    assert!(err.contains(&format!("debuginfod ({url})")), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("MODULE ")
            && text.contains("\nSTACK CFI INIT ")
            && !text.contains("\nFUNC ")
    );
    // Nothing is cached for a failure.
    assert_eq!(std::fs::read_dir(&work).unwrap().count(), 0);
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn a_server_that_never_answers_times_out() {
    let work = scratch("silent");
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accepts and reads, never answers.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let started = Instant::now();
    let out = run(
        &[stripped().to_str().unwrap()],
        &[
            ("DEBUGINFOD_URLS", &url),
            ("DEBUGINFOD_CACHE_PATH", work.to_str().unwrap()),
            ("DEBUGINFOD_TIMEOUT", "1"),
        ],
    );
    // Three attempts of one second each, plus backoff.
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unreachable"), "{err}");
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn no_debuginfod_never_connects_and_unset_means_off() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let work = scratch("off");
    let bin = stripped();
    let out = run(
        &["--no-debuginfod", bin.to_str().unwrap()],
        &[
            ("DEBUGINFOD_URLS", &url),
            ("DEBUGINFOD_CACHE_PATH", work.to_str().unwrap()),
        ],
    );
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no debuginfod server"), "{err}");
    let unset = run(&[bin.to_str().unwrap()], &[]);
    assert!(String::from_utf8_lossy(&unset.stderr).contains("DEBUGINFOD_URLS is not set"));
    let mut connections = 0;
    while let Ok((mut s, _)) = listener.accept() {
        let mut b = [0u8; 1];
        let _ = s.read(&mut b);
        connections += 1;
    }
    assert_eq!(connections, 0, "--no-debuginfod connected");
    std::fs::remove_dir_all(&work).ok();
}

/// `dumpsyms symbolize` with no store and no binary: a module named by its build ID
/// alone has its debug file fetched from debuginfod, dumped in memory, and resolves as
/// the store made from the binary and that debug file does.
#[test]
#[ignore = "needs elfutils' debuginfod; .ci/run installs it"]
fn symbolize_fetches_a_debug_file_by_build_id_and_dumps_it() {
    let work = scratch("symbolize");
    let files = served_files(&work, false);
    let id = build_id();
    // Addresses llvm-symbolizer was asked about, as `<build ID>+0xOFFSET` lines.
    let oracle =
        std::fs::read_to_string(fixtures().join("oracle/x86_64/c-gcc-O2-dwarf5.tsv")).unwrap();
    let report: String = oracle
        .lines()
        .step_by(7)
        .map(|row| format!("{id}+0x{}\n", row.split('\t').next().unwrap()))
        .collect();
    let report_path = work.join("report.txt");
    std::fs::write(&report_path, &report).unwrap();
    let report_path = report_path.to_str().unwrap();

    let store = work.join("store");
    let root = fixtures().join("extra/debugroot");
    let stored = run(
        &[
            "-q",
            "--inlines",
            "--store",
            store.to_str().unwrap(),
            "--debug-dir",
            root.to_str().unwrap(),
            stripped().to_str().unwrap(),
        ],
        &[],
    );
    assert!(
        stored.status.success(),
        "{}",
        String::from_utf8_lossy(&stored.stderr)
    );
    let expected = run(
        &["symbolize", "--store", store.to_str().unwrap(), report_path],
        &[],
    );
    assert!(expected.status.success());
    let expected = String::from_utf8(expected.stdout).unwrap();
    assert!(
        expected.matches(" at ").count() >= report.lines().count(),
        "{expected}"
    );

    let server = Server::start(&files, &work.join("db.sqlite"), &[&id]);
    let cache = work.join("cache");
    let env = [
        ("DEBUGINFOD_URLS", server.url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let fetched = run(&["symbolize", report_path], &env);
    let stderr = String::from_utf8_lossy(&fetched.stderr);
    assert!(fetched.status.success(), "{stderr}");
    assert_eq!(
        String::from_utf8(fetched.stdout).unwrap(),
        expected,
        "{stderr}"
    );
    assert!(cache.join(&id).join("debuginfo").is_file());
    // Without debuginfod, nothing resolves, and the run still succeeds.
    let off = run(&["symbolize", "--no-debuginfod", report_path], &env);
    assert!(off.status.success());
    assert!(!String::from_utf8_lossy(&off.stdout).contains(" at "));
}

/// `--code-id BUILDID NAME`: a module nobody has locally, its executable and then its
/// debug file fetched from debuginfod by build ID, dumps to the bytes its two files give
/// on disk; a second run, with the server gone, works from the cache; an ID no server
/// has fails by name.
#[test]
#[ignore = "needs elfutils' debuginfod; .ci/run installs it"]
fn a_module_by_build_id_dumps_as_its_files_do_then_from_the_cache() {
    let work = scratch("byid");
    let files = served_files(&work, true);
    let root = fixtures().join("extra/debugroot");
    let expected = run(
        &[
            "--debug-dir",
            root.to_str().unwrap(),
            stripped().to_str().unwrap(),
        ],
        &[],
    );
    assert!(expected.status.success());
    assert!(String::from_utf8_lossy(&expected.stdout).contains("\nSTACK CFI INIT "));

    let id = build_id();
    let server = Server::start(&files, &work.join("db.sqlite"), &[&id]);
    let executable = format!("{}/buildid/{id}/executable", server.url);
    let deadline = Instant::now() + Duration::from_secs(60);
    while ureq::get(&executable).call().is_err() {
        assert!(
            Instant::now() < deadline,
            "debuginfod never served {executable}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let cache = work.join("cache");
    let url = server.url.clone();
    let env = [
        ("DEBUGINFOD_URLS", url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    // `app` is the module's name; no such file is here.
    let fetched = run(&["app", "--code-id", &id], &env);
    let stderr = String::from_utf8_lossy(&fetched.stderr);
    assert!(fetched.status.success(), "{stderr}");
    assert!(
        fetched.stdout == expected.stdout,
        "by build ID differs: {stderr}"
    );
    assert!(cache.join(&id).join("executable").is_file());
    assert!(cache.join(&id).join("debuginfo").is_file());

    let unknown = "00112233445566778899aabbccddeeff00112233";
    let missing = run(&["libnone.so", "--code-id", unknown], &env);
    assert_eq!(missing.status.code(), Some(1));
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        err.contains("libnone.so") && err.contains("on no server"),
        "{err}"
    );

    drop(server);
    let again = run(&["app", "--code-id", &id], &env);
    assert!(again.stdout == expected.stdout, "from the cache differs");
    // With the server gone, a module not in the cache is a server failure, said so.
    let dead = run(&["libnone.so", "--code-id", unknown], &env);
    assert_eq!(dead.status.code(), Some(1));
    let err = String::from_utf8_lossy(&dead.stderr);
    assert!(
        err.contains("could not be fetched") && err.contains("unreachable"),
        "{err}"
    );
}

/// `--missing`: a list mixing Windows rows (a symbol server: Python's http.server over a
/// symstore tree, the PDB as gcab's cabinet) and Linux rows (elfutils' debuginfod), two
/// of them on no server and one given twice. The found ones are stored as their files
/// dump on disk; the absent ones are counted, not failures; `--skip-existing` fetches
/// nothing again; two shards of the list write together what one run writes.
#[test]
#[ignore = "needs elfutils' debuginfod; .ci/run installs it"]
fn a_missing_symbols_list_is_fetched_dumped_and_stored() {
    let work = scratch("missing");
    // Linux: the stripped program and its debug file.
    let files = served_files(&work, true);
    let id = build_id();
    let server = Server::start(&files, &work.join("db.sqlite"), &[&id]);
    let executable = format!("{}/buildid/{id}/executable", server.url);
    let deadline = Instant::now() + Duration::from_secs(60);
    while ureq::get(&executable).call().is_err() {
        assert!(
            Instant::now() < deadline,
            "debuginfod never served {executable}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Windows: the PDB compressed, the image plain.
    let x64 = fixtures().join("windows/msvc-x86_64");
    let (pdb_id, code_id) = ("E145B4CDF1E2F3CB4C4C44205044422E1", "17D3A3146000");
    let symstore = work.join("symstore");
    let pdb_dir = symstore.join("app.pdb").join(pdb_id);
    std::fs::create_dir_all(&pdb_dir).unwrap();
    let o = Command::new("gcab")
        .args(["-c", "-z", "-n"])
        .arg(pdb_dir.join("app.pd_"))
        .arg(x64.join("app.pdb"))
        .output()
        .expect("gcab");
    assert!(o.status.success());
    let exe_dir = symstore.join("app.exe").join(code_id);
    std::fs::create_dir_all(&exe_dir).unwrap();
    std::fs::copy(x64.join("app.exe"), exe_dir.join("app.exe")).unwrap();
    let served = Served::start(&symstore);

    let header = stdout_of_success(run(&["-i", stripped().to_str().unwrap()], &[]));
    let app_debug_id = header.split_whitespace().nth(3).unwrap().to_string();
    let list = work.join("missing.csv");
    std::fs::write(
        &list,
        format!(
            "debug_file,debug_id,code_file,code_id,count\n\
             app.pdb,{pdb_id},app.exe,{code_id},7\n\
             app,{app_debug_id},app,{id},3\n\
             absent.pdb,000000000000000000000000000000001,absent.dll,000000001000,2\n\
             libabsent.so,,libabsent.so,00112233445566778899aabbccddeeff00112233,1\n\
             app.pdb,{pdb_id},app.exe,{code_id},1\n"
        ),
    )
    .unwrap();
    let cache = work.join("cache");
    let symbol_server = format!("SRV*{}*{}", work.join("symcache").display(), served.url);
    let env = [
        ("DEBUGINFOD_URLS", server.url.as_str()),
        ("DEBUGINFOD_CACHE_PATH", cache.to_str().unwrap()),
    ];
    let missing = |store: &Path, extra: &[&str]| {
        let mut args = vec![
            "--symbol-server",
            &symbol_server,
            "--store",
            store.to_str().unwrap(),
            "--missing",
            list.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        run(&args, &env)
    };
    let store = work.join("store");
    let o = missing(&store, &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("2 dumped, 2 not on any server"), "{err}");
    assert!(
        err.contains("absent.pdb") && err.contains("libabsent.so"),
        "{err}"
    );

    let windows = stdout_of_success(run(
        &[
            x64.join("app.pdb").to_str().unwrap(),
            x64.join("app.exe").to_str().unwrap(),
        ],
        &[],
    ));
    let stored = |rel: String| std::fs::read_to_string(store.join(rel)).unwrap();
    assert_eq!(stored(format!("app.pdb/{pdb_id}/app.sym")), windows);
    let root = fixtures().join("extra/debugroot");
    let linux = stdout_of_success(run(
        &[
            "--debug-dir",
            root.to_str().unwrap(),
            stripped().to_str().unwrap(),
        ],
        &[],
    ));
    assert_eq!(stored(format!("app/{app_debug_id}/app.sym")), linux);

    // Again with --skip-existing: both rows skipped before anything is fetched.
    let o = missing(&store, &["--skip-existing"]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("0 dumped, 2 not on any server, 2 skipped (2 already"),
        "{err}"
    );

    // Two shards of the list, together, write the same store.
    let whole = std::fs::read_dir(&store).unwrap().count();
    let mut union = 0;
    for k in 1..=2 {
        let part = work.join(format!("shard{k}"));
        let o = missing(&part, &["--shard", &format!("{k}/2")]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        if let Ok(entries) = std::fs::read_dir(&part) {
            for e in entries.flatten() {
                let name = e.file_name();
                union += 1;
                let sym = std::fs::read_dir(e.path())
                    .unwrap()
                    .next()
                    .unwrap()
                    .unwrap()
                    .path();
                let file = std::fs::read_dir(&sym).unwrap().next().unwrap().unwrap();
                let same = store
                    .join(&name)
                    .join(sym.file_name().unwrap())
                    .join(file.file_name());
                assert_eq!(
                    std::fs::read(file.path()).unwrap(),
                    std::fs::read(same).unwrap()
                );
            }
        }
    }
    assert_eq!(union, whole);
}
