//! MSFZ ("PDZ", compressed) PDBs: the PDB fixtures encoded by Microsoft's own `pdbtool`
//! (fixtures/windows/msfz/make.sh) dump byte-identical to the PDBs they were made from,
//! wherever a PDB is read; a symbol server is asked for them as Microsoft's clients ask,
//! and what it answers is cached where those clients cache it; damaged ones are refused
//! within bounds.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::common::{Scratch, dumpsyms, dumpsyms_command, scratch, stdout_of_success};

const VARIANTS: [&str; 6] = [
    "msvc-x86_64",
    "msvc-x86_64-Od",
    "msvc-x86_64-icf",
    "msvc-i686",
    "msvc-aarch64",
    "msvc-aarch64-Od",
];

fn windows() -> PathBuf {
    crate::common::fixtures().join("windows")
}

fn msfz(variant: &str) -> PathBuf {
    windows().join("msfz").join(variant).join("app.pdb")
}

fn dump(args: &[&dyn AsRef<OsStr>]) -> String {
    let out = dumpsyms_command()
        .args(args.iter().map(|a| a.as_ref()))
        .output()
        .unwrap();
    stdout_of_success(out)
}

/// `extra` then `paths`, as arguments.
fn with(extra: &[&str], paths: &[&Path]) -> String {
    let mut args: Vec<&dyn AsRef<OsStr>> = extra.iter().map(|a| a as &dyn AsRef<OsStr>).collect();
    args.extend(paths.iter().map(|p| p as &dyn AsRef<OsStr>));
    dump(&args)
}

/// `variant`'s image with its MSFZ PDB beside it, in a directory of their own.
fn image_with_msfz(variant: &str, tag: &str) -> (Scratch, PathBuf) {
    let dir = scratch(&format!("msfz-{tag}-{variant}"));
    std::fs::copy(windows().join(variant).join("app.exe"), dir.join("app.exe")).unwrap();
    std::fs::copy(msfz(variant), dir.join("app.pdb")).unwrap();
    let pdb = dir.join("app.pdb");
    (dir.within("app.exe"), pdb)
}

#[test]
fn every_fixture_is_an_msfz_file_that_dumps_as_its_pdb_does() {
    for variant in VARIANTS {
        let head = std::fs::read(msfz(variant)).unwrap();
        assert!(head.starts_with(b"Microsoft MSFZ Container\r\n\x1aALD\0\0"));
        let (exe, pdb) = image_with_msfz(variant, "same");
        let plain_dir = windows().join(variant);
        for extra in [&[][..], &["--inlines"][..]] {
            // Through the image (the PDB found beside it), the PDB alone (its image
            // beside it), and the PDB given explicitly after an image of another name.
            let want = with(extra, &[&plain_dir.join("app.exe")]);
            assert!(want.contains("\nFUNC "), "{variant}");
            assert_eq!(
                with(extra, &[&exe]),
                want,
                "{variant} {extra:?} through the image"
            );
            assert_eq!(
                with(extra, &[&pdb]),
                with(extra, &[&plain_dir.join("app.pdb")]),
                "{variant} {extra:?} the PDB"
            );
            let elsewhere = exe.parent().unwrap().join("elsewhere.exe");
            std::fs::copy(&exe, &elsewhere).unwrap();
            let given = with(extra, &[&elsewhere, &pdb]);
            let but_code_id = |t: &str| {
                t.lines()
                    .filter(|l| !l.starts_with("INFO CODE_ID "))
                    .map(String::from)
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                but_code_id(&given),
                but_code_id(&want),
                "{variant} {extra:?} given after the image"
            );
        }
        // --list-arch reads its machine type.
        let arches = dump(&[&"--list-arch", &pdb]);
        let plain_arches = dump(&[&"--list-arch", &plain_dir.join("app.pdb")]);
        assert_eq!(
            arches.rsplit(": ").next(),
            plain_arches.rsplit(": ").next(),
            "{variant}"
        );
    }
}

#[test]
fn a_store_run_reads_an_msfz_pdb_in_a_tree_as_a_pdb() {
    let (exe, _) = image_with_msfz("msvc-x86_64", "tree");
    let tree = exe.parent().unwrap();
    let out = scratch("msfz-tree-out");
    let plain_out = scratch("msfz-tree-plain");
    dumpsyms(&["--store", out.to_str().unwrap(), tree.to_str().unwrap()]);
    stdout_of_success(dumpsyms(&[
        "--store",
        plain_out.to_str().unwrap(),
        windows().join("msvc-x86_64").to_str().unwrap(),
    ]));
    let files = |root: &Path| {
        let mut all = Vec::new();
        let mut todo = vec![root.to_path_buf()];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.path().is_dir() {
                    todo.push(e.path());
                } else {
                    let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
                    all.push((rel, std::fs::read(e.path()).unwrap()));
                }
            }
        }
        all.sort();
        all
    };
    let ours = files(&out);
    assert_eq!(ours.len(), 1, "one module: the PDB read through its image");
    assert_eq!(ours, files(&plain_out));
}

/// The (path, Accept) of each request a test server had.
type Requests = Arc<Mutex<Vec<(String, String)>>>;

/// A symbol server as Microsoft's serve MSFZ PDBs: a request whose `Accept` names
/// `application/msfz0` is answered with `<name>/<id>/msfz0/<name>` when the store has
/// it (and `x-ms-symbol-format` saying so), else with the plain file; `strict` answers
/// such a request 406 instead (a server that serves only what is asked for exactly).
/// Returns the base URL and (path, Accept) of every request.
fn negotiating_server(root: &Path, strict: bool) -> (String, Requests) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let asked: Requests = Default::default();
    let log = asked.clone();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut accept = String::new();
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
                if let Some((k, v)) = h.split_once(':')
                    && k.eq_ignore_ascii_case("accept")
                {
                    accept = v.trim().to_string();
                }
            }
            let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            log.lock().unwrap().push((target.clone(), accept.clone()));
            let rel = PathBuf::from(target.trim_start_matches('/'));
            let wants_msfz = accept.contains("application/msfz0");
            let response = if wants_msfz && strict {
                b"HTTP/1.1 406 Not Acceptable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec()
            } else {
                let compressed = rel
                    .parent()
                    .map(|p| p.join("msfz0").join(rel.file_name().unwrap_or_default()));
                let (file, format) =
                    match compressed.filter(|c| wants_msfz && root.join(c).is_file()) {
                        Some(c) => (std::fs::read(root.join(c)).ok(), "application/msfz0"),
                        None => (std::fs::read(root.join(&rel)).ok(), ""),
                    };
                match file {
                    Some(body) => {
                        let mut r = format!(
                            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nx-ms-symbol-format: {format}\r\nConnection: close\r\n\r\n",
                            body.len()
                        )
                        .into_bytes();
                        r.extend(body);
                        r
                    }
                    None => {
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                            .to_vec()
                    }
                }
            };
            let _ = stream.write_all(&response);
        }
    });
    (url, asked)
}

/// The image alone in a directory, and its debug id.
fn image_alone(tag: &str) -> (Scratch, String) {
    let exe = scratch(tag).within("app.exe");
    std::fs::copy(windows().join("msvc-x86_64/app.exe"), &exe).unwrap();
    let header = dump(&[&"-i", &exe]);
    let id = header.split_whitespace().nth(3).unwrap().to_string();
    (exe, id)
}

/// A store holding the plain PDB at its key and the MSFZ one at its `msfz0` key.
fn store_with_both(id: &str, tag: &str) -> Scratch {
    let store = scratch(tag);
    let key = store.join("app.pdb").join(id);
    std::fs::create_dir_all(key.join("msfz0")).unwrap();
    std::fs::copy(windows().join("msvc-x86_64/app.pdb"), key.join("app.pdb")).unwrap();
    std::fs::copy(msfz("msvc-x86_64"), key.join("msfz0").join("app.pdb")).unwrap();
    store
}

#[test]
fn a_symbol_server_is_asked_for_msfz_and_what_it_answers_is_cached_under_msfz0() {
    let (exe, id) = image_alone("msfz-srv-image");
    let want = dump(&[&windows().join("msvc-x86_64/app.exe")]);
    let store = store_with_both(&id, "msfz-srv-store");
    let (url, asked) = negotiating_server(&store, false);
    let cache = scratch("msfz-srv-cache");
    let srv = format!("srv*{}*{url}", cache.display());
    assert_eq!(dump(&[&"--symbol-server", &srv, &exe]), want);
    // Asked once, as PerfView's SymbolReader asks.
    let key = format!("/app.pdb/{id}/app.pdb");
    assert_eq!(
        *asked.lock().unwrap(),
        vec![(key.clone(), "application/msfz0".to_string())]
    );
    // Cached where Microsoft's clients cache an MSFZ answer, and nowhere else.
    let cached = cache
        .join("app.pdb")
        .join(&id)
        .join("msfz0")
        .join("app.pdb");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(msfz("msvc-x86_64")).unwrap()
    );
    assert!(!cache.join("app.pdb").join(&id).join("app.pdb").exists());
    // The next run reads the cache: no second request.
    assert_eq!(dump(&[&"--symbol-server", &srv, &exe]), want);
    assert_eq!(asked.lock().unwrap().len(), 1);
}

#[test]
fn a_server_that_refuses_the_msfz_media_type_is_asked_again_for_the_plain_pdb() {
    let (exe, id) = image_alone("msfz-406-image");
    let want = dump(&[&windows().join("msvc-x86_64/app.exe")]);
    let store = store_with_both(&id, "msfz-406-store");
    let (url, asked) = negotiating_server(&store, true);
    let cache = scratch("msfz-406-cache");
    let srv = format!("srv*{}*{url}", cache.display());
    assert_eq!(dump(&[&"--symbol-server", &srv, &exe]), want);
    let key = format!("/app.pdb/{id}/app.pdb");
    assert_eq!(
        *asked.lock().unwrap(),
        vec![
            (key.clone(), "application/msfz0".to_string()),
            (key, "*/*".to_string())
        ]
    );
    let cached = cache.join("app.pdb").join(&id).join("app.pdb");
    assert_eq!(
        std::fs::read(&cached).unwrap(),
        std::fs::read(windows().join("msvc-x86_64/app.pdb")).unwrap()
    );
}

/// A field of an MSFZ file's header or chunk table overwritten.
fn patched(at: usize, value: &[u8]) -> Vec<u8> {
    let mut bytes = std::fs::read(msfz("msvc-x86_64")).unwrap();
    bytes[at..at + value.len()].copy_from_slice(value);
    bytes
}

#[test]
fn damaged_msfz_files_are_refused_naming_the_container_within_bounds() {
    let good = std::fs::read(msfz("msvc-x86_64")).unwrap();
    let table = u64::from_le_bytes(good[48..56].try_into().unwrap()) as usize;
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), "truncated"),
        ("version", patched(32, &7u64.to_le_bytes()), "version 7"),
        // The first chunk claims 300 MB from a file of 8 KB: over the limit, refused
        // before anything is allocated for it; one claiming 200 MB decompresses to what
        // it holds, and is refused for the difference.
        (
            "bomb",
            patched(table + 16, &(300u32 << 20).to_le_bytes()),
            "over the limit",
        ),
        (
            "claim",
            patched(table + 16, &(200u32 << 20).to_le_bytes()),
            "not the 209715200 it claims",
        ),
        // The first chunk claims 16 bytes: it decompresses past its claim (the one byte
        // more asked for, to tell).
        (
            "short-claim",
            patched(table + 16, &16u32.to_le_bytes()),
            "decompresses to 17 bytes, not the 16 it claims",
        ),
        // A chunk past the end of the file.
        (
            "chunk-outside",
            patched(table, &(1u64 << 40).to_le_bytes()),
            "truncated",
        ),
        (
            "compression",
            patched(table + 8, &9u32.to_le_bytes()),
            "compression 9",
        ),
    ];
    let dir = scratch("msfz-hostile");
    for (name, bytes, says) in cases {
        let path = dir.join(format!("{name}.pdb"));
        std::fs::write(&path, &bytes).unwrap();
        let start = std::time::Instant::now();
        let out = dumpsyms_command()
            .arg(&path)
            .env("RUST_BACKTRACE", "0")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains("MSFZ (compressed PDB) container") && err.contains(says),
            "{name}: {err}"
        );
        assert!(!err.contains("panicked"), "{name}: {err}");
        assert!(start.elapsed().as_secs() < 20, "{name}");
    }
}
