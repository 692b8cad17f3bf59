//! The network as a hostile server or a careless log meets it: credentials never
//! printed, request paths that cannot climb out of a store, dripped response headers,
//! `Retry-After` pauses longer than the time left, dripped JSON answers. Every server
//! here is on 127.0.0.1 and stops by itself (each connection is bounded in time).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::{dumpsyms_command, fixtures, scratch};

/// One request as the server read it: its request line and headers.
#[derive(Clone, Debug)]
struct Request {
    method: String,
    path: String,
    head: String,
}

/// A loopback server that hands each connection, after reading its request (the body
/// too, as its `Content-Length` says, at most 64 MiB), to `respond` on a thread of its
/// own, and records every request.
struct Server {
    url: String,
    requests: Arc<Mutex<Vec<Request>>>,
}

impl Server {
    fn start(respond: impl Fn(&Request, usize, &mut TcpStream) + Send + Sync + 'static) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let requests: Arc<Mutex<Vec<Request>>> = Arc::default();
        let seen = requests.clone();
        let respond = Arc::new(respond);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let seen = seen.clone();
                let respond = respond.clone();
                std::thread::spawn(move || {
                    let mut stream = stream;
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
                    let Some(req) = read_request(&stream) else {
                        return;
                    };
                    let index = {
                        let mut all = seen.lock().unwrap();
                        all.push(req.clone());
                        all.len() - 1
                    };
                    respond(&req, index, &mut stream);
                });
            }
        });
        Server { url, requests }
    }

    fn requests(&self) -> Vec<Request> {
        self.requests.lock().unwrap().clone()
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            len = v.trim().parse().unwrap_or(0);
        }
        let end = line.trim().is_empty();
        head.push_str(&line);
        if end {
            break;
        }
    }
    let mut body = vec![0u8; len.min(64 << 20)];
    let _ = reader.read_exact(&mut body);
    let mut words = head.split_whitespace();
    Some(Request {
        method: words.next()?.to_string(),
        path: words.next()?.to_string(),
        head,
    })
}

fn answer(stream: &mut TcpStream, code: u16, headers: &[(&str, &str)], body: &[u8]) {
    let mut out = format!(
        "HTTP/1.1 {code} X\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let _ = stream.write_all(out.as_bytes());
    let _ = stream.write_all(body);
}

/// The status line, then the headers a byte every 500 ms, for 60 s at most: each read
/// gets data, so only a bound on the whole of the headers ends it.
fn drip_headers(stream: &mut TcpStream) {
    let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n");
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(60) {
        if stream.write_all(b"X").is_err() {
            return;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// A report of `n` sanitizer frames in modules with build IDs, and the build ID's hex.
fn report(work: &Path, n: usize) -> PathBuf {
    let mut text = String::new();
    for i in 0..n {
        text.push_str(&format!(
            "    #{i} 0x1000  (/x/lib{i}.so+0x1000) (BuildId: {i:02x}ea7096a43bf4e6e9f3a6c4d7e1a9b4)\n"
        ));
    }
    let path = work.join("report.txt");
    std::fs::write(&path, text).unwrap();
    path
}

/// `dumpsyms symbolize` of a report of `frames` frames (see [`report`]) from the symbol
/// server at `url`, its cache in `work`, with `flags`.
fn symbolize(url: &str, work: &Path, flags: &[&str], frames: usize) -> std::process::Command {
    let mut cmd = dumpsyms_command();
    cmd.args(["symbolize", "--no-debuginfod", "--symbols-url", url])
        .args(flags)
        .arg("--symbols-cache")
        .arg(work.join("cache"))
        .arg(report(work, frames));
    cmd
}

/// dumpsyms with the symbol server at `url` (its cache in `work`), and no other.
fn symbol_server(work: &Path, url: &str) -> std::process::Command {
    let mut cmd = dumpsyms_command();
    cmd.arg("--symbol-server")
        .arg(format!("SRV*{}*{url}", work.join("symsrv").display()))
        .env_remove("_NT_SYMBOL_PATH");
    cmd
}

/// Four binaries to dump and upload.
fn four_modules(work: &Path) -> PathBuf {
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    for f in [
        "bin/x86_64/c-gcc-O2-dwarf5",
        "bin/aarch64/c-gcc-O2-dwarf5",
        "bin/i686/c-gcc-O2-dwarf5",
        "bin/x86_64/cpp-gcc-O2-dwarf5",
    ] {
        std::fs::copy(fixtures().join(f), tree.join(f.replace('/', "-"))).unwrap();
    }
    tree
}

/// Runs `cmd`, giving back how long it took, its exit code and all it printed.
fn timed(cmd: &mut std::process::Command) -> (Duration, Option<i32>, String) {
    let started = Instant::now();
    let o = cmd.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    (started.elapsed(), o.status.code(), text)
}

/// `http://USER:PASSWORD@host:port` for a server's URL.
fn with_password(url: &str, password: &str) -> String {
    url.replacen("http://", &format!("http://ci-user:{password}@"), 1)
}

/// Response headers dripped a byte at a time were waited on past every time limit
/// (killed at 150 s) on each network path. The headers are now bounded as a whole by
/// the server time-out: each path gives up within seconds, names the server, and asks
/// it nothing more.
#[test]
fn dripped_headers_are_given_up_on_within_the_time_out() {
    let server = Server::start(|_, _, s| drip_headers(s));
    let work = scratch("net-drip-headers");
    let limit = Duration::from_secs(12);

    // symbolize, from a symbol server.
    let (took, code, text) = timed(&mut symbolize(
        &server.url,
        &work,
        &["--server-timeout", "2"],
        3,
    ));
    assert!(took < limit, "{took:?}: {text}");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains(&server.url), "{text}");

    // A dump's debug file from debuginfod.
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg(fixtures().join("extra/buildid/app"))
            .env("DEBUGINFOD_URLS", &server.url)
            .env("DEBUGINFOD_CACHE_PATH", work.join("debuginfod"))
            .env("DEBUGINFOD_TIMEOUT", "2"),
    );
    assert!(took < limit, "{took:?}: {text}");
    assert_eq!(code, Some(0), "{text}");

    // A PDB by id from a symbol server.
    let (took, _, text) = timed(
        symbol_server(&work, &server.url)
            .args(["--server-timeout", "2", "app.pdb", "--debug-id"])
            .arg("ABCDEF0123456789ABCDEF01234567891")
            .env_remove("_NT_SYMBOL_PATH"),
    );
    assert!(took < limit, "{took:?}: {text}");

    // An upload, and --skip-existing's question.
    let tree = four_modules(&work);
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg("--store")
            .arg(work.join("store"))
            .args(["--upload", &server.url, "--upload-timeout", "2"])
            .arg(&tree),
    );
    assert!(took < limit, "{took:?}: {text}");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("4 failed"), "{text}");
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg("--store")
            .arg(work.join("store2"))
            .args(["--skip-existing", "--symbols-url", &server.url])
            .arg(&tree),
    );
    // The question's own time-out (10 s), once for the run.
    assert!(took < Duration::from_secs(25), "{took:?}: {text}");
    assert_eq!(code, Some(0), "{text}");
    std::fs::remove_dir_all(&work).ok();
}

/// An always-429 server asking for 60 s held symbolize 360 s, a dump 360–720 s and 20
/// uploads 33 minutes. A pause longer than what is left of the time is now the end of
/// that server's turn for the run, at once and named.
#[test]
fn retry_after_past_the_time_left_gives_up_at_once() {
    let server = Server::start(|_, _, s| {
        answer(s, 429, &[("Retry-After", "60")], b"slow down");
    });
    let work = scratch("net-retry-after");
    let (took, code, text) = timed(&mut symbolize(
        &server.url,
        &work,
        &["--server-max-time", "5"],
        5,
    ));
    assert!(took < Duration::from_secs(10), "{took:?}: {text}");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("a pause of 60 s"), "{text}");
    // Asked once: the others are not asked again.
    assert_eq!(server.requests().len(), 1, "{text}");

    // A dump by debuginfod, with no time limit of its own: the run's patience.
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg(fixtures().join("extra/buildid/app"))
            .env("DEBUGINFOD_URLS", &server.url)
            .env("DEBUGINFOD_CACHE_PATH", work.join("debuginfod")),
    );
    assert!(took < Duration::from_secs(10), "{took:?}: {text}");
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("a pause of 60 s"), "{text}");

    // Uploads within --upload-max-time: every file reported not sent, in time.
    let tree = four_modules(&work);
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg("--store")
            .arg(work.join("store"))
            .args(["--upload", &server.url, "--upload-max-time", "5"])
            .arg(&tree),
    );
    assert!(took < Duration::from_secs(10), "{took:?}: {text}");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("0 sent, 0 already there, 4 failed"), "{text}");
    std::fs::remove_dir_all(&work).ok();
}

/// Short pauses are still waited out, within the time: a server that asks for 1 s and
/// then answers is used.
#[test]
fn short_pauses_are_waited_out_and_the_run_goes_on() {
    let server = Server::start(|_, i, s| match i {
        0 => answer(s, 429, &[("Retry-After", "1")], b""),
        _ => answer(s, 200, &[], b"OK"),
    });
    let work = scratch("net-short-pause");
    let tree = four_modules(&work);
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg("--store")
            .arg(work.join("store"))
            .args(["--upload", &server.url, "--upload-jobs", "1"])
            .arg(&tree),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(took >= Duration::from_secs(1), "{took:?}");
    assert!(text.contains("4 sent"), "{text}");
    std::fs::remove_dir_all(&work).ok();
}

/// sym-upload-v2's JSON answers dripped held each file 60 s. The answer is read within
/// the upload time-out, and a server that drips it is not asked again in the run.
#[test]
fn a_dripped_json_answer_ends_the_servers_turn() {
    let server = Server::start(|_, _, s| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
        );
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(60) {
            if s.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let work = scratch("net-drip-json");
    let tree = four_modules(&work);
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg("--store")
            .arg(work.join("store"))
            .args([
                "--upload",
                &server.url,
                "--upload-protocol",
                "sym-upload-v2",
            ])
            .args(["--upload-timeout", "2", "--upload-jobs", "1"])
            .arg(&tree)
            .env("DUMPSYMS_UPLOAD_TOKEN", "k-0123456789"),
    );
    assert!(took < Duration::from_secs(10), "{took:?}: {text}");
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(server.requests().len(), 1, "{text}");
    assert!(
        text.contains("not asked: it stalled earlier in this run"),
        "{text}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// The same dripped answer to `--skip-existing`'s `checkStatus`, with the upload's
/// default time-out (60 s): read within the lookups' time-out (10 s), then the server
/// is not asked again in the run. Before: 60 s a run, past the 30 s a dump's lookups
/// may take.
#[test]
fn a_dripped_check_status_costs_a_lookups_time_out() {
    let server = Server::start(|_, _, s| {
        let _ = s.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{",
        );
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(90) {
            if s.write_all(b" ").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(300));
        }
    });
    let work = scratch("net-drip-check-status");
    let tree = four_modules(&work);
    let (took, _, text) = timed(
        dumpsyms_command()
            .arg("--store")
            .arg(work.join("store"))
            .args([
                "--skip-existing",
                "--upload",
                &server.url,
                "--upload-protocol",
                "sym-upload-v2",
            ])
            .arg(&tree)
            .env("DUMPSYMS_UPLOAD_TOKEN", "k-0123456789"),
    );
    assert!(took <= Duration::from_secs(30), "{took:?}: {text}");
    assert!(text.contains("checkStatus"), "{text}");
    std::fs::remove_dir_all(&work).ok();
}

/// What a server says back, quoting the request: its request line, query and all.
fn echo(req: &Request) -> Vec<u8> {
    format!(
        "bad request: {} {} ({})",
        req.method,
        req.path,
        req.head.replace("\r\n", " | ")
    )
    .into_bytes()
}

/// A URL's password, the v2 key and the upload token were printed wherever a URL or a
/// server's answer was (CI logs are often public). On every surface, with a server that
/// quotes the request back in its error pages and redirects, none is printed now.
#[test]
fn no_password_key_or_token_is_printed() {
    const PASSWORD: &str = "pw-Zq81x";
    const TOKEN: &str = "tok-7Hc2Lw9";
    let server = Server::start(|req, _, s| {
        if req.path.contains("redirect-me") || req.path.contains("checkStatus") {
            let location = format!("/elsewhere{}", req.path);
            answer(s, 302, &[("Location", &location)], b"");
        } else {
            answer(s, 500, &[], &echo(req));
        }
    });
    let url = with_password(&server.url, PASSWORD);
    let work = scratch("net-secrets");
    let tree = four_modules(&work);
    let mut outputs = Vec::new();
    let mut run = |cmd: &mut std::process::Command| {
        let (_, _, text) = timed(cmd.env("DUMPSYMS_UPLOAD_TOKEN", TOKEN));
        outputs.push(text);
    };
    run(dumpsyms_command()
        .args(["symbolize", "--no-debuginfod", "--symbols-url", &url])
        .arg("--symbols-cache")
        .arg(work.join("cache"))
        .arg(report(&work, 2)));
    run(dumpsyms_command()
        .arg(fixtures().join("extra/buildid/app"))
        .env("DEBUGINFOD_URLS", &url)
        .env("DEBUGINFOD_CACHE_PATH", work.join("debuginfod")));
    run(dumpsyms_command()
        .arg(fixtures().join("extra/buildid/app"))
        .env("DEBUGINFOD_URLS", format!("{url}/redirect-me"))
        .env("DEBUGINFOD_CACHE_PATH", work.join("debuginfod2")));
    run(dumpsyms_command()
        .arg("--symbol-server")
        .arg(format!("SRV*{}*{url}", work.join("symsrv").display()))
        .args(["app.pdb", "--debug-id", "ABCDEF0123456789ABCDEF01234567891"])
        .env_remove("_NT_SYMBOL_PATH"));
    run(dumpsyms_command()
        .arg("app.pdb")
        .args(["--debug-id", "ABCDEF0123456789ABCDEF01234567891"])
        .env(
            "_NT_SYMBOL_PATH",
            format!("SRV*{}*{url}", work.join("nt").display()),
        ));
    run(dumpsyms_command()
        .arg("--store")
        .arg(work.join("s1"))
        .args(["--skip-existing", "--symbols-url", &url])
        .arg(&tree));
    for protocol in ["sym-upload-v1", "sym-upload-v2", "tecken"] {
        run(dumpsyms_command()
            .arg("--store")
            .arg(work.join(format!("s-{protocol}")))
            .args(["--upload", &url, "--upload-protocol", protocol, "-v"])
            .arg(&tree));
    }
    // A server that takes the upload: the success line names it too.
    let taker = Server::start(|_, _, s| answer(s, 200, &[], b"OK"));
    run(dumpsyms_command()
        .arg("--store")
        .arg(work.join("s-ok"))
        .args(["--upload", &with_password(&taker.url, PASSWORD)])
        .arg(&tree));
    let all = outputs.join("\n----\n");
    for secret in [PASSWORD, TOKEN] {
        assert!(!all.contains(secret), "{secret} printed:\n{all}");
    }
    // The servers are still named, the password masked where it stood.
    assert!(all.contains("ci-user:***@127.0.0.1"), "{all}");
    assert!(all.contains("answered 500"), "{all}");
    assert!(all.contains("4 sent"), "{all}");
    // The key was sent to the server (the requests are right), and never printed.
    let sent = server.requests();
    assert!(
        sent.iter()
            .any(|r| r.path.contains(&format!("key={TOKEN}"))),
        "{sent:?}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// A `--missing` row (Socorro's list comes from crash reports) named `%2e%2e%2fx.pdb`
/// made `GET /%2e%2e%2fx.pdb/…`, which a server decodes to `/../x.pdb/…`. Names are now
/// encoded segment by segment, and a name that decodes to `..` or holds a separator is
/// refused before any request; a `#` or `?` in a report's module name no longer cuts
/// the request short.
#[test]
fn request_paths_never_climb_out_of_the_store() {
    let server = Server::start(|_, _, s| answer(s, 404, &[], b""));
    let work = scratch("net-encoding");
    let list = work.join("missing.csv");
    std::fs::write(
        &list,
        "debug_file,debug_id,code_file,code_id\n\
         %2e%2e%2fx.pdb,ABCDEF0123456789ABCDEF01234567891,,\n\
         ..%2fy.pdb,ABCDEF0123456789ABCDEF01234567891,,\n\
         a%25b.pdb,ABCDEF0123456789ABCDEF01234567891,,\n",
    )
    .unwrap();
    let (_, _, text) = timed(
        symbol_server(&work, &server.url)
            .arg("--missing")
            .arg(&list)
            .arg("--store")
            .arg(work.join("store"))
            .arg("--no-debuginfod")
            .env_remove("_NT_SYMBOL_PATH"),
    );
    let decoded = |p: &str| {
        let mut out = Vec::new();
        let b = p.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if b[i] == b'%'
                && let Some(v) = p
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                out.push(v);
                i += 3;
            } else {
                out.push(b[i]);
                i += 1;
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    let paths: Vec<String> = server.requests().into_iter().map(|r| r.path).collect();
    assert!(!paths.is_empty(), "{text}");
    for p in &paths {
        let once = decoded(p);
        assert!(!once.split('/').any(|s| s == ".." || s == "."), "{p}");
        assert!(!decoded(&once).split('/').any(|s| s == ".."), "{p}");
    }
    // The name with a literal `%` is asked for, encoded as `%25`.
    assert!(
        paths.iter().any(|p| p.starts_with("/a%2525b.pdb/")),
        "{paths:?}"
    );
    assert!(text.contains("%2e%2e%2fx.pdb"), "{text}");

    // symbolize: a module named with `#` and `?` is asked for whole.
    let report = work.join("hash.txt");
    std::fs::write(
        &report,
        "    #0 0x1000  (/x/lib#1?.so+0x1000) (BuildId: 4aea7096a43bf4e6e9f3a6c4d7e1a9b4)\n",
    )
    .unwrap();
    let before = server.requests().len();
    timed(
        dumpsyms_command()
            .args(["symbolize", "--no-debuginfod", "--symbols-url", &server.url])
            .arg("--symbols-cache")
            .arg(work.join("cache"))
            .arg(&report),
    );
    let asked: Vec<String> = server.requests()[before..]
        .iter()
        .map(|r| r.path.clone())
        .collect();
    assert!(
        asked
            .iter()
            .all(|p| p.starts_with("/lib%231%3F.so/") && p.ends_with("/lib%231%3F.so.sym")),
        "{asked:?}"
    );
    std::fs::remove_dir_all(&work).ok();
}

/// A served symbol file's function names reached standard output with raw ESC and BEL
/// (a title change, a hyperlink, a bell in the user's terminal).
#[test]
fn served_names_reach_the_terminal_escaped() {
    const DEBUG_ID: &str = "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40";
    const BUILD_ID: &str = "4aea7096a43bf4e6e9f3a6c4d7e1a9b4";
    let sym = format!(
        "MODULE Linux x86_64 {DEBUG_ID} app\nFILE 0 /src/\x1b[31mred.c\nFUNC 1000 100 0 evil\x1b]0;pwned\x07name\n1000 100 7 0\n"
    );
    let server = Server::start(move |_, _, s| answer(s, 200, &[], sym.as_bytes()));
    let work = scratch("net-escape");
    let report = work.join("r.txt");
    std::fs::write(
        &report,
        format!("    #0 0x1010  (/x/app+0x1010) (BuildId: {BUILD_ID})\n"),
    )
    .unwrap();
    for json in [false, true] {
        let mut cmd = dumpsyms_command();
        cmd.args(["symbolize", "--no-debuginfod", "--symbols-url", &server.url])
            .arg("--symbols-cache")
            .arg(work.join(format!("cache-{json}")))
            .arg(&report);
        if json {
            cmd.arg("--json");
        }
        let o = cmd.output().unwrap();
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(!out.contains('\x1b') && !out.contains('\x07'), "{out:?}");
        // In JSON, the escapes' backslashes are escaped in turn.
        let (name, file) = match json {
            false => (r"evil\e]0;pwned\x07name", r"\e[31mred.c"),
            true => (r"evil\\e]0;pwned\\x07name", r"\\e[31mred.c"),
        };
        assert!(out.contains(name) && out.contains(file), "{out}");
    }
    std::fs::remove_dir_all(&work).ok();
}

/// `--verified-only` still opened and read a file a report named without a build ID
/// (then did not use it). With the flag, nothing is read that cannot be verified: the
/// file's access time (relatime: updated when it is older than the modification time)
/// stays as it was; without the flag the same run reads it (the check's control).
#[test]
fn verified_only_reads_nothing_unverifiable() {
    let work = scratch("net-verified-only");
    let named = work.join("libnamed.so");
    std::fs::copy(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"), &named).unwrap();
    let report = work.join("r.txt");
    std::fs::write(
        &report,
        format!("    #0 0x1010  ({}+0x1010)\n", named.display()),
    )
    .unwrap();
    let accessed = || std::fs::metadata(&named).unwrap().accessed().unwrap();
    let run = |flags: &[&str]| {
        let old = std::process::Command::new("touch")
            .args(["-a", "-d", "2000-01-01"])
            .arg(&named)
            .status()
            .unwrap();
        assert!(old.success());
        let before = accessed();
        let o = dumpsyms_command()
            .args(["symbolize", "--no-debuginfod"])
            .args(flags)
            .arg(&report)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            before,
            accessed(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (before, after, stderr) = run(&["--verified-only"]);
    assert_eq!(before, after, "read with --verified-only: {stderr}");
    assert!(stderr.contains("--verified-only refuses"), "{stderr}");
    let (before, after, stderr) = run(&[]);
    assert_ne!(before, after, "not read without the flag: {stderr}");
    std::fs::remove_dir_all(&work).ok();
}

/// Twenty symbol servers that refuse every connection, in Mozilla's configuration file:
/// a PE's dump asks them within the run's time for servers that give nothing (5 s), then
/// asks no more, and says so. Before: 0.6 s each, 12 s for one PE, with no bound on the
/// sum.
#[test]
fn dead_symbol_servers_cost_a_dump_a_bounded_time() {
    let work = scratch("net-dead-servers");
    let home = work.join("home");
    std::fs::create_dir_all(home.join(".dump_syms")).unwrap();
    // Ports that nothing listens on: bound, then closed.
    let ports: Vec<u16> = (0..20)
        .map(|_| {
            TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        })
        .collect();
    let spec: Vec<String> = ports
        .iter()
        .map(|p| format!("SRV*{}*http://127.0.0.1:{p}", work.join("cache").display()))
        .collect();
    std::fs::write(home.join(".dump_syms/config"), spec.join(";")).unwrap();
    let pe = work.join("app.exe");
    std::fs::copy(fixtures().join("windows/msvc-x86_64-Od/app.exe"), &pe).unwrap();
    let (took, code, text) = timed(
        dumpsyms_command()
            .arg(&pe)
            .env("HOME", &home)
            .env_remove("_NT_SYMBOL_PATH"),
    );
    assert_eq!(code, Some(0), "{text}");
    assert!(took < Duration::from_secs(10), "{took:?}: {text}");
    assert!(
        text.contains("on symbol servers that gave nothing are spent"),
        "{text}"
    );
    std::fs::remove_dir_all(&work).ok();
}
