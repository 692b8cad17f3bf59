//! A real stack walker over our symbol files: rust-minidump's minidump-processor with a
//! symbol store in the layout symbol servers use.

use std::path::Path;

use breakpad_symbols::{HttpSymbolSupplier, SimpleSymbolSupplier, SymbolSupplier, Symbolizer};
use minidump::Minidump;
use minidump_processor::process_minidump;
use minidump_unwind::FrameTrust;

/// The call chain of `fixtures/src/chain.c`, innermost first.
pub const CHAIN: [&str; 5] = [
    "chain_wait",
    "chain_level3",
    "chain_level2",
    "chain_level1",
    "main",
];

/// Writes our symbol file for `binary` (with STACK CFI when `cfi`) into `store` in the
/// layout rust-minidump's simple supplier reads; returns the module name.
pub fn store_symbols(binary: &Path, store: &Path, cfi: bool) -> String {
    let mut opts = dumpsyms::Options::default();
    opts.cfi = cfi;
    let d = dumpsyms::dump(binary, &opts).unwrap_or_else(|e| panic!("{e}"));
    let m = &d.module;
    let dir = store.join(&m.name).join(m.debug_id.to_string());
    std::fs::create_dir_all(&dir).unwrap();
    let mut file = std::fs::File::create(dir.join(format!("{}.sym", m.name))).unwrap();
    dumpsyms::write_module(m, &Default::default(), &mut file).unwrap();
    m.name.clone()
}

/// Walks thread `tid` of `dump` with the symbol files in `store`:
/// (module file name, function, how the frame was found).
pub fn walk<T: std::ops::Deref<Target = [u8]>>(
    dump: &Minidump<'_, T>,
    store: &Path,
    tid: u32,
) -> Vec<(String, String, FrameTrust)> {
    walk_with(
        dump,
        SimpleSymbolSupplier::new(vec![store.to_path_buf()]),
        tid,
    )
}

/// The same walk with symbol files fetched from the symbol server at `url` (caching in
/// `cache`), as `minidump-stackwalk --symbols-url` fetches them.
pub fn walk_http<T: std::ops::Deref<Target = [u8]>>(
    dump: &Minidump<'_, T>,
    url: &str,
    cache: &Path,
    tid: u32,
) -> Vec<(String, String, FrameTrust)> {
    let supplier = HttpSymbolSupplier::new(
        vec![url.to_string()],
        cache.to_path_buf(),
        std::env::temp_dir(),
        Vec::new(),
        std::time::Duration::from_secs(60),
    );
    walk_with(dump, supplier, tid)
}

fn walk_with<T: std::ops::Deref<Target = [u8]>, S: SymbolSupplier + Send + Sync + 'static>(
    dump: &Minidump<'_, T>,
    supplier: S,
    tid: u32,
) -> Vec<(String, String, FrameTrust)> {
    let provider = Symbolizer::new(supplier);
    // The HTTP supplier's client needs a tokio runtime.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let state = runtime.block_on(process_minidump(dump, &provider)).unwrap();
    let thread = state
        .threads
        .iter()
        .find(|t| t.thread_id == tid)
        .expect("the thread");
    thread
        .frames
        .iter()
        .map(|f| {
            let module = f
                .module
                .as_ref()
                .map(|m| {
                    Path::new(&*m.name)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            (module, f.function_name.clone().unwrap_or_default(), f.trust)
        })
        .collect()
}

/// Serves the files under `root` over HTTP on 127.0.0.1 (GET only; 404 for anything
/// else), as a symbol server serves a store. Returns the base URL and the paths asked
/// for.
pub fn serve_dir(root: &Path) -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let asked: std::sync::Arc<std::sync::Mutex<Vec<String>>> = Default::default();
    let log = asked.clone();
    let root = root.to_path_buf();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut line = String::new();
            let mut reader = BufReader::new(&stream);
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            loop {
                let mut h = String::new();
                if reader.read_line(&mut h).is_err() || h.trim().is_empty() {
                    break;
                }
            }
            let target = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            log.lock().unwrap().push(target.clone());
            let rel = target
                .split('?')
                .next()
                .unwrap_or("")
                .trim_start_matches('/');
            let file = (!rel.split('/').any(|p| p == ".."))
                .then(|| std::fs::read(root.join(rel)).ok())
                .flatten();
            let response = match file {
                Some(body) => {
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend(body);
                    r
                }
                None => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = stream.write_all(&response);
        }
    });
    (url, asked)
}
