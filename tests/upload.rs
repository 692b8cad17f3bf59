//! `--upload` against a recording server on 127.0.0.1 (the real symbol servers cannot run
//! here). Each protocol's requests are checked against what the real clients send, as
//! the shared docs' `symbol-upload-protocols.md` transcribes them (Breakpad's
//! `sym_upload` for v1 and v2, Mozilla's upload script for Tecken), field for field;
//! also the retry on a 503, the error on a 403, and that v2 skips a file the server
//! reports as FOUND.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};

use common::*;

/// One request as the server received it.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    /// Path and query.
    target: String,
    /// Lower-cased names.
    headers: BTreeMap<String, String>,
    body: Vec<u8>,
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
        retries: 0,
        zip_limit: 0,
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
