//! Windows modules by id from a symbol server: a symstore tree of the Windows fixtures
//! served by a real static file server (Python's http.server), the PDB compressed into a
//! cabinet by a real CAB tool (gcab, MSZIP), the image plain. A module fetched by id
//! dumps to the bytes its files give on disk; every bad answer is an error naming it,
//! with nothing left in the cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::common::*;

const X64_PDB_ID: &str = "E145B4CDF1E2F3CB4C4C44205044422E1";
const X64_CODE_ID: &str = "17D3A3146000";

fn windows(arch: &str) -> PathBuf {
    fixtures().join("windows").join(arch)
}

/// `dir/<name>/<id>/<file>` with `bytes`.
fn put(dir: &Path, name: &str, id: &str, file: &str, bytes: &[u8]) {
    let at = dir.join(name).join(id);
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(at.join(file), bytes).unwrap();
}

/// The cabinet gcab makes of `file` (MSZIP, no directory in the name).
fn cabinet(file: &Path, work: &Path) -> Vec<u8> {
    let cab = work.join("made.cab");
    let _ = std::fs::remove_file(&cab);
    let o = Command::new("gcab")
        .args(["-c", "-z", "-n"])
        .arg(&cab)
        .arg(file)
        .output()
        .expect("gcab (Debian package gcab) must be installed");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::read(&cab).unwrap()
}

fn run(cache: &Path, url: &str, args: &[&str]) -> Output {
    dumpsyms_command()
        .current_dir(cache.parent().unwrap())
        .arg("--symbol-server")
        .arg(format!("SRV*{}*{url}", cache.display()))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .output()
        .unwrap()
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn a_pdb_and_its_image_by_id_dump_as_their_files_do() {
    let work = scratch("byid-windows");
    let served = work.join("served");
    let x64 = windows("msvc-x86_64");
    put(
        &served,
        "app.pdb",
        X64_PDB_ID,
        "app.pd_",
        &cabinet(&x64.join("app.pdb"), &work),
    );
    put(
        &served,
        "app.exe",
        X64_CODE_ID,
        "app.exe",
        &std::fs::read(x64.join("app.exe")).unwrap(),
    );
    let server = Served::start(&served);

    let local = dumpsyms(&[
        x64.join("app.pdb").to_str().unwrap(),
        x64.join("app.exe").to_str().unwrap(),
    ]);
    let local = stdout_of_success(local);
    assert!(
        local.contains("\nSTACK CFI INIT "),
        "the image's .pdata matters"
    );

    let cache = work.join("cache");
    let both = run(
        &cache,
        &server.url,
        &[
            "app.pdb",
            "--debug-id",
            X64_PDB_ID,
            "--code-id",
            X64_CODE_ID,
            "--code-file",
            "app.exe",
        ],
    );
    assert_eq!(stdout_of_success(both), local);
    // The cabinet was unpacked into the cache; nothing else was left there.
    let cached = files_under(&cache);
    assert_eq!(cached.len(), 2, "{cached:?}");
    assert!(
        cache
            .join("app.pdb")
            .join(X64_PDB_ID)
            .join("app.pdb")
            .is_file()
    );

    // To a file, atomically, as --output writes any dump.
    let file = work.join("out.sym");
    let to_file = run(
        &cache,
        &server.url,
        &[
            "--output",
            file.to_str().unwrap(),
            "app.pdb",
            "--debug-id",
            X64_PDB_ID,
            "--code-id",
            X64_CODE_ID,
            "--code-file",
            "app.exe",
        ],
    );
    assert!(
        to_file.status.success(),
        "{}",
        String::from_utf8_lossy(&to_file.stderr)
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), local);

    // The image alone: its PDB follows from its CodeView record, on the same server.
    let image = stdout_of_success(dumpsyms(&[x64.join("app.exe").to_str().unwrap()]));
    let fresh = work.join("cache2");
    let by_code_id = run(&fresh, &server.url, &["app.exe", "--code-id", X64_CODE_ID]);
    assert_eq!(stdout_of_success(by_code_id), image);

    // Into a store, as --store writes local files.
    let store = work.join("store");
    let stored = run(
        &cache,
        &server.url,
        &[
            "--store",
            store.to_str().unwrap(),
            "app.pdb",
            "--debug-id",
            &X64_PDB_ID.to_lowercase(),
            "--code-id",
            X64_CODE_ID,
            "--code-file",
            "app.exe",
        ],
    );
    assert!(
        stored.status.success(),
        "{}",
        String::from_utf8_lossy(&stored.stderr)
    );
    let written = store.join("app.pdb").join(X64_PDB_ID).join("app.sym");
    assert_eq!(std::fs::read_to_string(written).unwrap(), local);
}

/// Each wrong answer fails the run with a message naming what was wrong, and leaves no
/// file in the cache.
#[test]
fn wrong_answers_are_errors_and_nothing_is_cached() {
    let work = scratch("byid-wrong");
    let served = work.join("served");
    let x64 = windows("msvc-x86_64");
    let pdb = std::fs::read(x64.join("app.pdb")).unwrap();
    let cab = cabinet(&x64.join("app.pdb"), &work);
    let id = |n: u32| format!("{n:032X}1");
    // An error page served as the file.
    put(
        &served,
        "app.pdb",
        &id(1),
        "app.pdb",
        b"<html><body>Not here</body></html>",
    );
    // Another build's PDB under this id.
    put(&served, "app.pdb", &id(2), "app.pdb", &pdb);
    // A cabinet cut in half.
    put(&served, "app.pdb", &id(3), "app.pd_", &cab[..cab.len() / 2]);
    // A cabinet that states a smaller file than its data holds: read only to the size it
    // states (so no cabinet inflates past what it admits to, and that is held to
    // --server-max-size below), which leaves a PDB cut short.
    let mut bomb = cab.clone();
    let files_at = u32::from_le_bytes(bomb[16..20].try_into().unwrap()) as usize;
    bomb[files_at..files_at + 4].copy_from_slice(&1000u32.to_le_bytes());
    put(&served, "app.pdb", &id(4), "app.pd_", &bomb);
    // Not a cabinet at all.
    put(
        &served,
        "app.pdb",
        &id(5),
        "app.pd_",
        b"MZ this is no cabinet",
    );
    // A pointer to a message, and a pointer to a share nobody here reaches.
    put(
        &served,
        "app.pdb",
        &id(6),
        "file.ptr",
        b"MSG: withdrawn by the vendor",
    );
    put(
        &served,
        "app.pdb",
        &id(7),
        "file.ptr",
        b"PATH:\\\\symbols\\share\\app.pdb",
    );
    let server = Served::start(&served);
    let cache = work.join("cache");
    for (n, expected) in [
        (1, "not a PDB"),
        (2, "wrong build"),
        (3, "cabinet"),
        (4, "truncated"),
        (5, "not a cabinet"),
        (6, "withdrawn by the vendor"),
        (7, "cannot be reached from here"),
    ] {
        let o = run(&cache, &server.url, &["app.pdb", "--debug-id", &id(n)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{n}: {err}");
        assert!(
            err.contains(expected) && err.contains("app.pdb"),
            "{n}: {err}"
        );
        assert!(o.stdout.is_empty());
    }
    assert_eq!(files_under(&cache), Vec::<PathBuf>::new());
    // Over the size limit: refused by the size the cabinet states.
    put(&served, "app.pdb", X64_PDB_ID, "app.pd_", &cab);
    let o = dumpsyms_command()
        .arg("--symbol-server")
        .arg(format!("SRV*{}*{}", cache.display(), server.url))
        .args([
            "--server-max-size",
            "10000",
            "app.pdb",
            "--debug-id",
            X64_PDB_ID,
        ])
        .env_remove("_NT_SYMBOL_PATH")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("over the limit"), "{err}");
    assert_eq!(files_under(&cache), Vec::<PathBuf>::new());
    // A pointer to a path this machine reaches is followed.
    let share = work.join("share");
    std::fs::create_dir_all(&share).unwrap();
    std::fs::write(share.join("app.pdb"), &pdb).unwrap();
    put(
        &served,
        "app.pdb",
        X64_PDB_ID,
        "file.ptr",
        format!("PATH:{}", share.join("app.pdb").display()).as_bytes(),
    );
    std::fs::remove_file(served.join("app.pdb").join(X64_PDB_ID).join("app.pd_")).unwrap();
    let o = run(&cache, &server.url, &["app.pdb", "--debug-id", X64_PDB_ID]);
    // As the PDB alone dumps (no image beside it: no CODE_ID, no STACK CFI).
    let alone = share.join("app.pdb");
    let local = stdout_of_success(dumpsyms(&[alone.to_str().unwrap()]));
    assert_eq!(stdout_of_success(o), local);
}

/// Requests carry what Microsoft's symbol client sends (its user agent; ids in upper
/// case, whatever case they were given in), checked by a server that records them and
/// answers every request with a redirect to itself: the run gives up, bounded.
#[test]
fn requests_are_what_symsrv_sends_and_redirect_loops_end() {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen: std::sync::Arc<std::sync::Mutex<Vec<(String, String)>>> = Default::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut first = String::new();
            if reader.read_line(&mut first).is_err() {
                continue;
            }
            let mut agent = String::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some(v) = h
                    .strip_prefix("User-Agent:")
                    .or(h.strip_prefix("user-agent:"))
                {
                    agent = v.trim().to_string();
                }
            }
            let path = first.split_whitespace().nth(1).unwrap_or("").to_string();
            log.lock().unwrap().push((path.clone(), agent));
            let _ = stream.write_all(
                format!(
                    "HTTP/1.1 302 Found\r\nLocation: {path}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                )
                .as_bytes(),
            );
        }
    });
    let work = scratch("byid-agent");
    let cache = work.join("cache");
    let started = std::time::Instant::now();
    let o = run(
        &cache,
        &url,
        &["app.pdb", "--debug-id", &X64_PDB_ID.to_lowercase()],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("app.pdb"), "{err}");
    let seen = seen.lock().unwrap();
    assert!(!seen.is_empty() && seen.len() < 100, "{}", seen.len());
    assert_eq!(seen[0].0, format!("/app.pdb/{X64_PDB_ID}/app.pdb"));
    for (path, agent) in seen.iter() {
        assert_eq!(agent, "Microsoft-Symbol-Server/10.0.0.0", "{path}");
        assert!(!path.contains(&X64_PDB_ID.to_lowercase()), "{path}");
    }
    assert_eq!(files_under(&cache), Vec::<PathBuf>::new());
}

/// The form Microsoft's server answers in: an LZX cabinet (`fixtures/windows/lzx`, made
/// by its script and checked there with cabextract) reads as the PDB it holds.
#[test]
fn an_lzx_cabinet_reads_as_the_pdb_it_holds() {
    let work = scratch("byid-lzx");
    let served = work.join("served");
    let lzx = std::fs::read(fixtures().join("windows/lzx/app.pd_")).unwrap();
    assert_eq!(
        u16::from_le_bytes([lzx[42], lzx[43]]) & 0xF,
        3,
        "an LZX folder"
    );
    put(&served, "app.pdb", X64_PDB_ID, "app.pd_", &lzx);
    let server = Served::start(&served);
    let alone = work.join("alone");
    std::fs::create_dir_all(&alone).unwrap();
    std::fs::copy(
        windows("msvc-x86_64").join("app.pdb"),
        alone.join("app.pdb"),
    )
    .unwrap();
    let local = stdout_of_success(dumpsyms(&[alone.join("app.pdb").to_str().unwrap()]));
    let cache = work.join("cache");
    let o = run(&cache, &server.url, &["app.pdb", "--debug-id", X64_PDB_ID]);
    assert_eq!(stdout_of_success(o), local);
}
