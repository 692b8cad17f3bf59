//! `--upload` against a recording server on 127.0.0.1 (the real symbol servers cannot run
//! here). Each protocol's requests are checked against what the real clients send, as
//! the shared docs' `symbol-upload-protocols.md` transcribes them (Breakpad's
//! `sym_upload` for v1 and v2, Mozilla's upload script for Tecken), field for field;
//! also the retry on a 503, the error on a 403, and that v2 skips a file the server
//! reports as FOUND.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use crate::common::*;

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    /// Path and query.
    target: String,
    /// Lower-cased names.
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
    /// When it was read.
    at: std::time::Instant,
}

/// The answer to give: status, extra headers, body.
type Answer = (u16, Vec<(String, String)>, String);

struct Recorder {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Recorder {
    /// Serves on a loopback port, answering each request by `answer(request, index)`.
    fn start(answer: impl Fn(&Request, usize, &str) -> Answer + Send + 'static) -> Recorder {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let seen = requests.clone();
        let base = url.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let Some(req) = read_request(&stream) else {
                    continue;
                };
                let index = {
                    let mut all = seen.lock().unwrap();
                    all.push(req.clone());
                    all.len() - 1
                };
                let (code, headers, body) = answer(&req, index, &base);
                let mut out = format!(
                    "HTTP/1.1 {code} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                    body.len()
                );
                for (k, v) in headers {
                    out.push_str(&format!("{k}: {v}\r\n"));
                }
                out.push_str("\r\n");
                out.push_str(&body);
                let mut s = stream;
                let _ = s.write_all(out.as_bytes());
            }
        });
        Recorder { url, requests }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut r = BufReader::new(stream);
    let mut line = String::new();
    r.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        r.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (k, v) = h.split_once(':')?;
        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
    }
    let mut body = Vec::new();
    if let Some(len) = headers.get("content-length") {
        body.resize(len.parse().ok()?, 0);
        r.read_exact(&mut body).ok()?;
    } else if headers
        .get("transfer-encoding")
        .is_some_and(|t| t == "chunked")
    {
        loop {
            let mut size = String::new();
            r.read_line(&mut size).ok()?;
            let n = usize::from_str_radix(size.trim(), 16).ok()?;
            let mut chunk = vec![0; n + 2];
            r.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
            body.extend_from_slice(&chunk[..n]);
        }
    }
    Some(Request {
        method,
        target,
        headers,
        body,
        at: std::time::Instant::now(),
    })
}

/// The parts of a multipart body: (headers text, content).
fn multipart(req: &Request) -> Vec<(String, Vec<u8>)> {
    let ct = &req.headers["content-type"];
    let boundary = ct
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("not multipart: {ct}"));
    let delim = format!("--{boundary}");
    let body = &req.body;
    let find = |from: usize, pat: &[u8]| {
        body[from..]
            .windows(pat.len())
            .position(|w| w == pat)
            .map(|p| p + from)
    };
    let mut parts = Vec::new();
    let mut at = find(0, delim.as_bytes()).expect("first boundary") + delim.len();
    loop {
        if body[at..].starts_with(b"--") {
            break;
        }
        at += 2; // CRLF after the boundary
        let head_end = find(at, b"\r\n\r\n").unwrap();
        let head = String::from_utf8(body[at..head_end].to_vec()).unwrap();
        let next = find(head_end, format!("\r\n{delim}").as_bytes()).unwrap();
        parts.push((head, body[head_end + 4..next].to_vec()));
        at = next + 2 + delim.len();
    }
    parts
}

fn run(args: &[&str], token: Option<&str>) -> Output {
    let mut cmd = dumpsyms_command();
    cmd.args(args);
    if let Some(t) = token {
        cmd.env("DUMPSYMS_UPLOAD_TOKEN", t);
    }
    cmd.output().unwrap()
}

const FIXTURE: &str = "bin/x86_64/c-gcc-O2-dwarf5";

/// The fixture's MODULE fields and its store path.
fn module() -> (String, String, String) {
    let out = run(&["-i", fixtures().join(FIXTURE).to_str().unwrap()], None);
    let text = String::from_utf8(out.stdout).unwrap();
    let f: Vec<&str> = text.lines().next().unwrap().split(' ').collect();
    (f[2].to_string(), f[3].to_string(), f[4].to_string())
}

fn store_file(store: &Path) -> Vec<u8> {
    let (_, id, name) = module();
    std::fs::read(store.join(&name).join(&id).join(format!("{name}.sym"))).unwrap()
}

#[test]
fn sym_upload_v1_sends_breakpads_form_and_retries_a_503() {
    // The first attempt fails with 503, the second is accepted.
    let server = Recorder::start(|_, i, _| {
        if i == 0 {
            (503, vec![], "busy".into())
        } else {
            (200, vec![], "OK".into())
        }
    });
    let work = scratch("v1");
    let store = work.join("store");
    let url = format!("{}/symbols/upload", server.url);
    let out = run(
        &[
            "--store",
            store.to_str().unwrap(),
            "--upload",
            &url,
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1 sent, 0 already there, 0 failed"), "{err}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2, "one retry");
    assert_eq!(reqs[0].body, reqs[1].body);
    let req = &reqs[1];
    assert_eq!(
        (req.method.as_str(), req.target.as_str()),
        ("POST", "/symbols/upload")
    );
    let (cpu, id, name) = module();
    let parts = multipart(req);
    let field = |k: usize| -> (String, String) {
        let (head, body) = &parts[k];
        let name = head
            .split("name=\"")
            .nth(1)
            .unwrap()
            .split('"')
            .next()
            .unwrap()
            .to_string();
        (name, String::from_utf8_lossy(body).into_owned())
    };
    // Breakpad's order and values: names from the MODULE record, the id without hyphens.
    let expected = [
        ("code_file", name.as_str()),
        ("cpu", cpu.as_str()),
        ("debug_file", name.as_str()),
        ("debug_identifier", id.as_str()),
        ("os", "Linux"),
    ];
    assert_eq!(parts.len(), 6);
    for (k, (n, v)) in expected.iter().enumerate() {
        assert_eq!(field(k), (n.to_string(), v.to_string()));
        assert_eq!(
            parts[k].0,
            format!("Content-Disposition: form-data; name=\"{n}\"")
        );
    }
    assert_eq!(
        parts[5].0,
        format!(
            "Content-Disposition: form-data; name=\"symbol_file\"; filename=\"{name}.sym\"\r\nContent-Type: application/octet-stream"
        )
    );
    assert_eq!(parts[5].1, store_file(&store));
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn a_403_is_an_error_naming_the_file_and_the_answer() {
    let server = Recorder::start(|_, _, _| (403, vec![], "Forbidden: bad API key".into()));
    let work = scratch("403");
    let out_file = work.join("app.sym");
    let out = run(
        &[
            "--output",
            out_file.to_str().unwrap(),
            "--upload",
            &server.url,
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("uploading {}", out_file.display())),
        "{err}"
    );
    assert!(
        err.contains("403") && err.contains("Forbidden: bad API key"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1, "a 4xx is not retried");
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn sym_upload_v2_checks_creates_puts_and_completes() {
    let server = Recorder::start(|req, _, base| {
        let t = req.target.as_str();
        if t.contains(":checkStatus") {
            (200, vec![], r#"{"status": "MISSING"}"#.into())
        } else if t.starts_with("/v1/uploads:create") {
            (
                200,
                vec![],
                format!(r#"{{"uploadUrl": "{base}/put/abc?sig=1", "uploadKey": "KEY123"}}"#),
            )
        } else if t.starts_with("/put/abc") {
            (200, vec![], String::new())
        } else if t.starts_with("/v1/uploads/KEY123:complete") {
            (200, vec![], r#"{"result": "OK"}"#.into())
        } else {
            (404, vec![], "no".into())
        }
    });
    let work = scratch("v2");
    let store = work.join("store");
    let fixture = fixtures().join(FIXTURE);
    let args = [
        "--store",
        store.to_str().unwrap(),
        "--upload",
        &server.url,
        "--upload-protocol",
        "sym-upload-v2",
        fixture.to_str().unwrap(),
    ];
    // No key: refused before anything is dumped.
    let nokey = run(&args, None);
    assert_eq!(nokey.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&nokey.stderr).contains("DUMPSYMS_UPLOAD_TOKEN"));
    assert!(server.requests().is_empty() && !store.exists());

    let out = run(&args, Some("s3cret"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let (_, id, name) = module();
    let reqs = server.requests();
    let seen: Vec<(&str, &str)> = reqs
        .iter()
        .map(|r| (r.method.as_str(), r.target.as_str()))
        .collect();
    assert_eq!(
        seen,
        [
            (
                "GET",
                format!("/v1/symbols/{name}/{id}:checkStatus?key=s3cret").as_str()
            ),
            ("POST", "/v1/uploads:create?key=s3cret"),
            ("PUT", "/put/abc?sig=1"),
            ("POST", "/v1/uploads/KEY123:complete?key=s3cret"),
        ]
    );
    assert!(reqs[1].body.is_empty());
    assert_eq!(reqs[2].body, store_file(&store));
    // Valid JSON this time, with the fields Breakpad's client means to send.
    assert_eq!(reqs[3].headers["content-type"], "application/json");
    let complete: serde_json::Value = serde_json::from_slice(&reqs[3].body).unwrap();
    assert_eq!(
        complete,
        serde_json::json!({"symbol_id": {"debug_file": name, "debug_id": id}, "symbol_upload_type": "BREAKPAD"})
    );
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn sym_upload_v2_skips_what_the_server_has() {
    let server = Recorder::start(|_, _, _| (200, vec![], r#"{"status": "FOUND"}"#.into()));
    let work = scratch("v2-found");
    let out = run(
        &[
            "--output",
            work.join("a.sym").to_str().unwrap(),
            "--upload",
            &server.url,
            "--upload-protocol",
            "sym-upload-v2",
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        Some("k"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("0 sent, 1 already there, 0 failed"), "{err}");
    assert_eq!(server.requests().len(), 1);
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn tecken_gets_a_zip_in_the_store_layout_with_the_token() {
    let server = Recorder::start(|_, _, _| (201, vec![], r#"{"upload": {"id": 1}}"#.into()));
    let work = scratch("tecken");
    let store = work.join("store");
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for f in [FIXTURE, "bin/aarch64/c-gcc-O2-dwarf5"] {
        std::fs::copy(fixtures().join(f), tree.join(f.replace('/', "-"))).unwrap();
    }
    let url = format!("{}/upload/", server.url);
    let out = run(
        &[
            "--store",
            store.to_str().unwrap(),
            "--upload",
            &url,
            "--upload-protocol",
            "tecken",
            tree.to_str().unwrap(),
        ],
        Some("tok-123"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    assert_eq!(
        (reqs[0].method.as_str(), reqs[0].target.as_str()),
        ("POST", "/upload/")
    );
    assert_eq!(reqs[0].headers["auth-token"], "tok-123");
    let parts = multipart(&reqs[0]);
    assert_eq!(parts.len(), 1);
    assert!(
        parts[0].0.contains("filename=\"symbols.zip\""),
        "{}",
        parts[0].0
    );
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(parts[0].1.clone())).unwrap();
    let mut entries = BTreeMap::new();
    for i in 0..zip.len() {
        let mut e = zip.by_index(i).unwrap();
        assert_eq!(e.compression(), zip::CompressionMethod::Deflated);
        let mut data = Vec::new();
        e.read_to_end(&mut data).unwrap();
        entries.insert(e.name().unwrap().into_owned(), data);
    }
    // Exactly the store: same names, same bytes.
    let mut stored = BTreeMap::new();
    for name in std::fs::read_dir(&store).unwrap() {
        let name = name.unwrap().file_name().into_string().unwrap();
        for id in std::fs::read_dir(store.join(&name)).unwrap() {
            let id = id.unwrap().file_name().into_string().unwrap();
            let rel = format!("{name}/{id}/{name}.sym");
            stored.insert(rel.clone(), std::fs::read(store.join(&rel)).unwrap());
        }
    }
    assert_eq!(entries.len(), 2);
    assert!(entries == stored, "zip entries differ from the store");
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn tecken_splits_large_sets_into_several_zips() {
    let server = Recorder::start(|_, _, _| (201, vec![], String::new()));
    let work = scratch("tecken-split");
    let mut files = Vec::new();
    for (i, f) in [
        FIXTURE,
        "bin/aarch64/c-gcc-O2-dwarf5",
        "bin/i686/c-gcc-O2-dwarf5",
    ]
    .iter()
    .enumerate()
    {
        let path = work.join(format!("{i}.sym"));
        let out = run(
            &[
                "--output",
                path.to_str().unwrap(),
                fixtures().join(f).to_str().unwrap(),
            ],
            None,
        );
        assert!(out.status.success());
        files.push(dumpsyms::upload::SymbolFile::read(&path).unwrap());
    }
    let mut up = dumpsyms::upload::Uploader {
        url: server.url.clone(),
        protocol: dumpsyms::upload::Protocol::Tecken,
        token: Some("t".into()),
        timeout: std::time::Duration::from_secs(30),
        max_time: std::time::Duration::from_secs(600),
        retries: 0,
        jobs: 2,
        zip_limit: 0,
        max_upload: 2_000_000_000,
    };
    // Each file is larger than the limit: one zip each.
    up.zip_limit = 1;
    let results = up.send(&files);
    assert_eq!(results.len(), 3);
    assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
    assert_eq!(server.requests().len(), 3);
    std::fs::remove_dir_all(&work).ok();
}

#[test]
fn upload_needs_files_on_disk() {
    let out = run(
        &[
            "--upload",
            "http://127.0.0.1:9/",
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--store or --output"));
    let bad = run(
        &[
            "--store",
            "/tmp/x",
            "--upload",
            "http://127.0.0.1:9/",
            "--upload-protocol",
            "ftp",
            "y",
        ],
        None,
    );
    assert_eq!(bad.status.code(), Some(2));
}

/// A Windows module: `debug_file` is the PDB's name (the MODULE record's), `code_file`
/// the image's (INFO CODE_ID's), and the file is sent as `app.sym`, as Breakpad's
/// Windows `symupload` sends them.
#[test]
fn sym_upload_v1_names_a_windows_image_and_its_pdb() {
    let server = Recorder::start(|_, _, _| (200, vec![], "OK".into()));
    let work = scratch("v1-windows");
    let store = work.join("store");
    let url = format!("{}/upload", server.url);
    let image = fixtures().join("windows/msvc-x86_64/app.exe");
    let out = run(
        &[
            "--store",
            store.to_str().unwrap(),
            "--upload",
            &url,
            image.to_str().unwrap(),
        ],
        None,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let header = String::from_utf8(run(&["-i", image.to_str().unwrap()], None).stdout).unwrap();
    let id = header.split(' ').nth(3).unwrap().to_string();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1);
    let parts = multipart(&reqs[0]);
    let value = |k: usize| String::from_utf8_lossy(&parts[k].1).into_owned();
    assert_eq!(
        (0..5).map(value).collect::<Vec<_>>(),
        ["app.exe", "x86_64", "app.pdb", id.as_str(), "windows"]
    );
    assert!(
        parts[5].0.contains("filename=\"app.sym\""),
        "{}",
        parts[5].0
    );
    assert_eq!(
        parts[5].1,
        std::fs::read(store.join("app.pdb").join(&id).join("app.sym")).unwrap()
    );
    std::fs::remove_dir_all(&work).ok();
}

/// Four copies of the fixture under other names (four modules), in a tree.
fn four_modules(work: &Path) -> std::path::PathBuf {
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for f in [
        FIXTURE,
        "bin/aarch64/c-gcc-O2-dwarf5",
        "bin/i686/c-gcc-O2-dwarf5",
        "bin/x86_64/cpp-gcc-O2-dwarf5",
    ] {
        std::fs::copy(fixtures().join(f), tree.join(f.replace('/', "-"))).unwrap();
    }
    tree
}

/// Symbol servers rate-limit: a 429 was a final error. Now it is waited out, as long as
/// its `Retry-After` says, by every upload worker (one that was not told waits too), and
/// the run goes on.
#[test]
fn a_429_pauses_every_upload_worker_then_the_run_goes_on() {
    let server = Recorder::start(|_, i, _| match i {
        0 => (
            429,
            vec![("Retry-After".into(), "2".into())],
            "Too Many Requests".into(),
        ),
        // The other worker's first file: answered once the 429 has been read.
        1 => {
            std::thread::sleep(std::time::Duration::from_millis(300));
            (200, vec![], "OK".into())
        }
        _ => (200, vec![], "OK".into()),
    });
    let work = scratch("upload-429");
    let tree = four_modules(&work);
    let out = run(
        &[
            "--store",
            work.join("store").to_str().unwrap(),
            "--upload",
            &server.url,
            "--upload-jobs",
            "2",
            tree.to_str().unwrap(),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("4 sent, 0 already there, 0 failed"), "{err}");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 5, "the rate-limited file sent again");
    let limited = reqs[0].at;
    for r in &reqs[2..] {
        let after = r.at.duration_since(limited);
        assert!(after >= std::time::Duration::from_millis(1900), "{after:?}");
    }
    std::fs::remove_dir_all(&work).ok();
}

/// What is sent in parallel is what was sent one by one: each file once, whole.
#[test]
fn parallel_uploads_send_each_file_once() {
    let server = Recorder::start(|_, _, _| (200, vec![], "OK".into()));
    let work = scratch("upload-parallel");
    let tree = four_modules(&work);
    let store = work.join("store");
    let out = run(
        &[
            "--store",
            store.to_str().unwrap(),
            "--upload",
            &server.url,
            "--upload-jobs",
            "4",
            tree.to_str().unwrap(),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("4 sent, 0 already there, 0 failed"), "{err}");
    let mut sent: Vec<Vec<u8>> = server
        .requests()
        .iter()
        .map(|r| multipart(r)[5].1.clone())
        .collect();
    let mut stored: Vec<Vec<u8>> = walk(&store)
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    sent.sort();
    stored.sort();
    assert_eq!(sent.len(), 4);
    assert!(sent == stored, "the files sent are not the store's");
    std::fs::remove_dir_all(&work).ok();
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// A redirect was followed by ureq, a POST turned into a GET without its body (and
/// counted as sent), or, to `file:`, a panic. An upload follows no redirect: it is an
/// error naming where the server pointed.
#[test]
fn an_upload_follows_no_redirect() {
    let server = Recorder::start(|_, _, _| {
        (
            302,
            vec![("Location".into(), "file:///etc/passwd".into())],
            String::new(),
        )
    });
    let work = scratch("upload-redirect");
    let out = run(
        &[
            "--output",
            work.join("a.sym").to_str().unwrap(),
            "--upload",
            &server.url,
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("302") && err.contains("redirected to file:///etc/passwd"),
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
    std::fs::remove_dir_all(&work).ok();
}

/// A server that stops answering held each file for 300 s, one after another (two files:
/// 625 s). It is now given up on after --upload-timeout, named once, and the other files
/// are reported as not sent without being tried.
#[test]
fn a_stalled_upload_server_is_given_up_on_for_the_run() {
    let server = Recorder::start(|_, _, _| {
        std::thread::sleep(std::time::Duration::from_secs(8));
        (200, vec![], "OK".into())
    });
    let work = scratch("upload-stall");
    let tree = four_modules(&work);
    let started = std::time::Instant::now();
    let out = run(
        &[
            "--store",
            work.join("store").to_str().unwrap(),
            "--upload",
            &server.url,
            "--upload-jobs",
            "1",
            "--upload-timeout",
            "2",
            tree.to_str().unwrap(),
        ],
        None,
    );
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(took < std::time::Duration::from_secs(7), "{took:?}: {err}");
    assert!(err.contains("0 sent, 0 already there, 4 failed"), "{err}");
    assert_eq!(err.matches("no answer (timed out)").count(), 1, "{err}");
    assert_eq!(
        err.matches("not asked: it stopped answering earlier in this run")
            .count(),
        3,
        "{err}"
    );
    assert_eq!(server.requests().len(), 1);
    std::fs::remove_dir_all(&work).ok();
}

/// CI runners start with an empty store, so `--skip-existing` skipped nothing and every
/// build dumped every library again. With a sym-upload-v2 server it asks `checkStatus`
/// first, by the identity in the headers: what the server has is neither dumped nor
/// sent.
#[test]
fn skip_existing_asks_a_sym_upload_v2_server_before_dumping() {
    let (_, id, name) = module();
    let found = format!("/v1/symbols/{name}/{id}:checkStatus");
    let server = Recorder::start(move |req, _, _| {
        if req.target.starts_with(&found) {
            (200, vec![], r#"{"status": "FOUND"}"#.into())
        } else {
            (200, vec![], r#"{"status": "MISSING"}"#.into())
        }
    });
    let work = scratch("skip-v2");
    let store = work.join("store");
    let out = run(
        &[
            "--store",
            store.to_str().unwrap(),
            "--skip-existing",
            "--upload",
            &server.url,
            "--upload-protocol",
            "sym-upload-v2",
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        Some("k"),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("0 dumped"), "{err}");
    assert!(err.contains("1 already on the server"), "{err}");
    assert!(!store.exists() || walk(&store).is_empty());
    let reqs = server.requests();
    assert_eq!(reqs.len(), 1, "{reqs:?}");
    assert_eq!(reqs[0].method, "GET");
    assert!(reqs[0].target.contains(":checkStatus?key=k"), "{reqs:?}");
    std::fs::remove_dir_all(&work).ok();
}

/// For Tecken and v1 servers, the download side (`--symbols-url`) is asked with a HEAD
/// of the store path, as Tecken's download API answers it: 200 has it, 404 has not.
#[test]
fn skip_existing_asks_the_download_side_with_head() {
    // The module is named after the file, copied below as bin-x86_64-….
    let (_, id, _) = module();
    let name = FIXTURE.replace('/', "-");
    let have = format!("/symbols/{name}/{id}/{name}.sym");
    let server = Recorder::start(move |req, _, _| match req.method.as_str() {
        "HEAD" if req.target == have => (200, vec![], String::new()),
        "HEAD" => (404, vec![], String::new()),
        _ => (200, vec![], "OK".into()),
    });
    let work = scratch("skip-head");
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for f in [FIXTURE, "bin/aarch64/c-gcc-O2-dwarf5"] {
        std::fs::copy(fixtures().join(f), tree.join(f.replace('/', "-"))).unwrap();
    }
    let store = work.join("store");
    let out = run(
        &[
            "--store",
            store.to_str().unwrap(),
            "--skip-existing",
            "--symbols-url",
            &format!("{}/symbols/", server.url),
            "--upload",
            &format!("{}/upload", server.url),
            tree.to_str().unwrap(),
        ],
        None,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("1 dumped"), "{err}");
    assert!(err.contains("1 already on the server"), "{err}");
    assert!(err.contains("1 sent, 0 already there, 0 failed"), "{err}");
    let reqs = server.requests();
    let heads: Vec<&str> = reqs
        .iter()
        .filter(|r| r.method == "HEAD")
        .map(|r| r.target.as_str())
        .collect();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(heads.contains(&format!("/symbols/{name}/{id}/{name}.sym").as_str()));
    assert_eq!(reqs.iter().filter(|r| r.method == "POST").count(), 1);
    assert_eq!(walk(&store).len(), 1);
    std::fs::remove_dir_all(&work).ok();
}

/// Tecken's zip was written to /tmp/dumpsyms-upload-*.zip and left there when the run
/// was killed. It has no name now: the temporary directory stays empty even while the
/// zip is being sent.
#[test]
fn tecken_zips_leave_nothing_in_the_temporary_directory() {
    let work = scratch("tecken-tmp");
    let tmp = work.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let seen = tmp.clone();
    let during: Arc<Mutex<Vec<usize>>> = Arc::default();
    let record = during.clone();
    let server = Recorder::start(move |_, _, _| {
        let n = std::fs::read_dir(&seen).unwrap().count();
        record.lock().unwrap().push(n);
        (201, vec![], String::new())
    });
    let out = dumpsyms_command()
        .args(["--store"])
        .arg(work.join("store"))
        .args(["--upload", &format!("{}/upload/", server.url)])
        .args(["--upload-protocol", "tecken"])
        .arg(fixtures().join(FIXTURE))
        .env("DUMPSYMS_UPLOAD_TOKEN", "t")
        .env("TMPDIR", &tmp)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(*during.lock().unwrap(), [0]);
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    std::fs::remove_dir_all(&work).ok();
}

/// A file too large for the protocol is an error that names the limit, never skipped
/// silently (here a limit of 100 bytes stands for Tecken's 2 GB).
#[test]
fn an_upload_over_the_servers_limit_names_the_limit() {
    let server = Recorder::start(|_, _, _| (201, vec![], String::new()));
    let work = scratch("tecken-limit");
    let path = work.join("a.sym");
    let out = run(
        &[
            "--output",
            path.to_str().unwrap(),
            fixtures().join(FIXTURE).to_str().unwrap(),
        ],
        None,
    );
    assert!(out.status.success());
    let file = dumpsyms::upload::SymbolFile::read(&path).unwrap();
    let mut up =
        dumpsyms::upload::Uploader::new(&server.url, dumpsyms::upload::Protocol::SymUploadV1)
            .unwrap();
    for protocol in [
        dumpsyms::upload::Protocol::SymUploadV1,
        dumpsyms::upload::Protocol::Tecken,
    ] {
        up.protocol = protocol;
        up.token = Some("t".into());
        up.max_upload = 100;
        let results = up.send(std::slice::from_ref(&file));
        let err = results[0].1.as_ref().unwrap_err();
        assert!(
            matches!(
                err,
                dumpsyms::upload::UploadError::TooLarge { limit: 100, .. }
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("over the limit of 100 bytes"),
            "{err}"
        );
    }
    assert!(server.requests().is_empty());
    std::fs::remove_dir_all(&work).ok();
}

/// A store run with `--soname-copies` over an RPM pair sends each symbol file it wrote:
/// the library's twice, once under its file name and once under its SONAME (the form's
/// `debug_file` and `code_file`, and the file name), with the same bytes.
#[test]
fn soname_copies_are_uploaded_under_their_own_names() {
    let server = Recorder::start(|_, _, _| (200, vec![], "OK".into()));
    let work = scratch("upload-soname");
    let store = work.join("store");
    let url = format!("{}/symbols/upload", server.url);
    let rpms = fixtures().join("packages/rpm/zstd");
    let mut args = vec![
        "--soname-copies".to_string(),
        "--store".into(),
        store.to_str().unwrap().into(),
        "--upload".into(),
        url,
    ];
    for name in [
        "demo-1.2-3.fc40.x86_64.rpm",
        "demo-debuginfo-1.2-3.fc40.x86_64.rpm",
    ] {
        args.push(rpms.join(name).to_str().unwrap().into());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = run(&args, None);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("3 sent, 0 already there, 0 failed"), "{err}");
    let mut sent = BTreeMap::new();
    for req in server.requests() {
        let parts = multipart(&req);
        let field = |name: &str| -> String {
            let (_, body) = parts
                .iter()
                .find(|(head, _)| head.ends_with(&format!("name=\"{name}\"")))
                .unwrap();
            String::from_utf8_lossy(body).into_owned()
        };
        assert_eq!(field("code_file"), field("debug_file"));
        let file = parts.last().unwrap();
        assert!(
            file.0
                .contains(&format!("filename=\"{}.sym\"", field("debug_file"))),
            "{}",
            file.0
        );
        sent.insert(field("debug_file"), file.1.clone());
    }
    assert_eq!(
        sent.keys().collect::<Vec<_>>(),
        ["demo", "libdemo.so.1", "libdemo.so.1.2.3"]
    );
    assert_eq!(sent["libdemo.so.1"], sent["libdemo.so.1.2.3"]);
    assert!(String::from_utf8_lossy(&sent["libdemo.so.1"]).starts_with("MODULE Linux x86_64 "));
    std::fs::remove_dir_all(&work).ok();
}
