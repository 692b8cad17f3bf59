//! Shared test helpers: a strict reader for Breakpad symbol files, a symbolizer over it,
//! and access to the fixtures.
#![allow(dead_code)]

pub mod scoring;
pub mod walk;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// A parsed `.sym` file.
#[derive(Debug, Default)]
pub struct SymFile {
    pub module: String,
    pub info: Vec<String>,
    pub files: HashMap<u32, String>,
    pub origins: HashMap<u32, String>,
    pub funcs: Vec<Func>,
    pub publics: Vec<(u64, String, bool)>,
    pub cfi_lines: usize,
    pub stack_win: usize,
}

/// An INLINE record: (depth, call line, call file, origin, ranges).
pub type InlineRecord = (u32, u32, u32, u32, Vec<(u64, u64)>);

#[derive(Debug, Default, Clone)]
pub struct Func {
    pub address: u64,
    pub size: u64,
    pub name: String,
    pub multiple: bool,
    pub lines: Vec<(u64, u64, u32, u32)>,
    pub inlines: Vec<InlineRecord>,
}

fn hex(s: &str, line: &str) -> u64 {
    u64::from_str_radix(s, 16).unwrap_or_else(|_| panic!("bad hex {s:?} in {line:?}"))
}

fn dec(s: &str, line: &str) -> u32 {
    s.parse()
        .unwrap_or_else(|_| panic!("bad decimal {s:?} in {line:?}"))
}

/// Parses a symbol file and checks the invariants of the format that readers rely on:
/// record order, sorted non-overlapping FUNCs, lines inside their function and not
/// overlapping, INLINE nesting and ranges inside the parent, FILE and INLINE_ORIGIN ids
/// that exist, lowercase hex, no empty names.
pub fn parse(text: &str) -> SymFile {
    let mut sym = SymFile::default();
    let mut lines = text.lines();
    let first = lines.next().expect("empty symbol file");
    assert!(
        first.starts_with("MODULE "),
        "first record is not MODULE: {first}"
    );
    sym.module = first.to_string();
    let mut stage = 0; // 0 header, 1 FILE, 2 INLINE_ORIGIN, 3 FUNC, 4 PUBLIC, 5 STACK
    // The current STACK CFI INIT's range and the last record's address.
    let mut cfi = CfiState::default();
    for line in lines {
        assert!(
            !line.ends_with(' ') && !line.is_empty(),
            "blank or trailing space: {line:?}"
        );
        let mut parts = line.splitn(2, ' ');
        let kind = parts.next().unwrap();
        let rest = parts.next().unwrap_or("");
        let advance = |stage: &mut i32, to: i32| {
            assert!(*stage <= to, "record out of order: {line}");
            *stage = to;
        };
        match kind {
            "INFO" => {
                assert_eq!(stage, 0, "INFO after other records");
                sym.info.push(rest.to_string());
            }
            "FILE" => {
                advance(&mut stage, 1);
                let (id, name) = rest.split_once(' ').expect("FILE without name");
                let id = dec(id, line);
                assert_eq!(id as usize, sym.files.len(), "FILE ids not dense: {line}");
                assert!(!name.trim().is_empty());
                sym.files.insert(id, name.to_string());
            }
            "INLINE_ORIGIN" => {
                advance(&mut stage, 2);
                let (id, name) = rest.split_once(' ').expect("INLINE_ORIGIN without name");
                let id = dec(id, line);
                assert_eq!(
                    id as usize,
                    sym.origins.len(),
                    "INLINE_ORIGIN ids not dense"
                );
                sym.origins.insert(id, name.to_string());
            }
            "FUNC" => {
                advance(&mut stage, 3);
                let (multiple, rest) = match rest.strip_prefix("m ") {
                    Some(r) => (true, r),
                    None => (false, rest),
                };
                let f: Vec<&str> = rest.splitn(4, ' ').collect();
                assert_eq!(f.len(), 4, "short FUNC: {line}");
                let func = Func {
                    address: hex(f[0], line),
                    size: hex(f[1], line),
                    name: f[3].to_string(),
                    multiple,
                    ..Default::default()
                };
                assert!(func.size > 0, "empty FUNC: {line}");
                assert!(!func.name.trim().is_empty(), "unnamed FUNC: {line}");
                if let Some(prev) = sym.funcs.last() {
                    assert!(
                        prev.address + prev.size <= func.address,
                        "FUNCs overlap or unsorted at {line}"
                    );
                }
                sym.funcs.push(func);
            }
            "INLINE" => {
                assert_eq!(stage, 3, "INLINE outside FUNC");
                let f: Vec<&str> = rest.split(' ').collect();
                assert!(
                    f.len() >= 6 && f.len().is_multiple_of(2),
                    "bad INLINE: {line}"
                );
                let ranges: Vec<(u64, u64)> = f[4..]
                    .chunks(2)
                    .map(|c| (hex(c[0], line), hex(c[1], line)))
                    .collect();
                let (depth, cl, cf, origin) = (
                    dec(f[0], line),
                    dec(f[1], line),
                    dec(f[2], line),
                    dec(f[3], line),
                );
                assert!(
                    sym.files.contains_key(&cf),
                    "INLINE names unknown file: {line}"
                );
                assert!(
                    sym.origins.contains_key(&origin),
                    "INLINE names unknown origin: {line}"
                );
                let func = sym.funcs.last_mut().unwrap();
                // Nesting: depth 0, or one deeper than some earlier record at depth-1
                // whose ranges contain these.
                let parent: Vec<(u64, u64)> = if depth == 0 {
                    vec![(func.address, func.size)]
                } else {
                    func.inlines
                        .iter()
                        .rev()
                        .find(|i| i.0 + 1 == depth)
                        .unwrap_or_else(|| panic!("INLINE without parent: {line}"))
                        .4
                        .clone()
                };
                for &(a, s) in &ranges {
                    assert!(s > 0, "empty INLINE range: {line}");
                    assert!(
                        parent.iter().any(|&(pa, ps)| pa <= a && a + s <= pa + ps),
                        "INLINE range outside its parent: {line}"
                    );
                }
                func.inlines.push((depth, cl, cf, origin, ranges));
            }
            "PUBLIC" => {
                advance(&mut stage, 4);
                let (multiple, rest) = match rest.strip_prefix("m ") {
                    Some(r) => (true, r),
                    None => (false, rest),
                };
                let f: Vec<&str> = rest.splitn(3, ' ').collect();
                assert_eq!(f.len(), 3, "short PUBLIC: {line}");
                sym.publics
                    .push((hex(f[0], line), f[2].to_string(), multiple));
            }
            "STACK" if rest.starts_with("WIN ") => {
                advance(&mut stage, 5);
                sym.stack_win += 1;
                check_stack_win(rest, line);
            }
            "STACK" => {
                advance(&mut stage, 5);
                sym.cfi_lines += 1;
                check_stack_cfi(rest, &mut cfi, line);
            }
            _ => {
                assert_eq!(stage, 3, "line record outside FUNC: {line}");
                let f: Vec<&str> = line.split(' ').collect();
                assert_eq!(f.len(), 4, "bad line record: {line}");
                assert_eq!(f[0], f[0].to_lowercase(), "uppercase hex: {line}");
                let (a, s, l, file) = (
                    hex(f[0], line),
                    hex(f[1], line),
                    dec(f[2], line),
                    dec(f[3], line),
                );
                assert!(
                    sym.files.contains_key(&file),
                    "line names unknown file: {line}"
                );
                let func = sym.funcs.last_mut().unwrap();
                assert!(
                    s > 0 && func.address <= a && a + s <= func.address + func.size,
                    "line outside its FUNC: {line}"
                );
                if let Some(prev) = func.lines.last() {
                    assert!(
                        prev.0 + prev.1 <= a,
                        "line records overlap or unsorted: {line}"
                    );
                }
                func.lines.push((a, s, l, file));
            }
        }
    }
    sym
}

/// STACK WIN structure: type 0 (FPO) or 4 (frame data), eight hex fields, then a
/// program string (after `1`) or the FPO base-pointer flag (after `0`).
fn check_stack_win(rest: &str, line: &str) {
    let f: Vec<&str> = rest["WIN ".len()..].splitn(10, ' ').collect();
    assert_eq!(f.len(), 10, "short STACK WIN: {line}");
    assert!(f[0] == "0" || f[0] == "4", "STACK WIN type: {line}");
    for field in &f[1..9] {
        hex(field, line);
    }
    let (has_program, last) = f[9].split_once(' ').expect("STACK WIN without last field");
    match has_program {
        "1" => assert!(!last.trim().is_empty(), "empty program string: {line}"),
        "0" => assert!(last == "0" || last == "1", "FPO flag: {line}"),
        _ => panic!("has_program field: {line}"),
    }
}

/// STACK CFI structure: INIT records sorted and disjoint, each with `.cfa` and `.ra`;
/// other records inside their INIT's range, in increasing order; every rule
/// `REG: expression` with a non-empty expression.
/// What the STACK CFI records read so far say: the current INIT's `(start, size, last
/// address)`, and the rules in force at its last address.
#[derive(Default)]
struct CfiState {
    range: Option<(u64, u64, u64)>,
    rules: std::collections::HashMap<String, String>,
}

/// A record's rules as `(register, expression)` pairs.
fn cfi_rules(rules: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for tok in rules.split(' ') {
        match (tok.strip_suffix(':'), out.last_mut()) {
            (Some(reg), _) => out.push((reg.to_string(), String::new())),
            (None, Some((_, expr))) => {
                if !expr.is_empty() {
                    expr.push(' ');
                }
                expr.push_str(tok);
            }
            (None, None) => {}
        }
    }
    out
}

fn check_stack_cfi(rest: &str, cfi: &mut CfiState, line: &str) {
    let range = &mut cfi.range;
    let rules = if let Some(init) = rest.strip_prefix("CFI INIT ") {
        let mut f = init.splitn(3, ' ');
        let a = hex(f.next().unwrap(), line);
        let n = hex(f.next().expect("INIT without size"), line);
        assert!(n > 0, "empty STACK CFI INIT: {line}");
        if let Some((start, size, _)) = range {
            assert!(
                *start + *size <= a,
                "STACK CFI INIT overlaps or is unsorted: {line}"
            );
        }
        *range = Some((a, n, a));
        let rules = f.next().expect("INIT without rules");
        assert!(
            rules.contains(".cfa: ") && rules.contains(".ra: "),
            "INIT lacks .cfa or .ra: {line}"
        );
        rules
    } else {
        let row = rest
            .strip_prefix("CFI ")
            .unwrap_or_else(|| panic!("unknown STACK record: {line}"));
        let (a, rules) = row.split_once(' ').expect("STACK CFI without rules");
        let a = hex(a, line);
        let (start, size, last) = range.as_mut().expect("STACK CFI before INIT");
        assert!(
            a > *last && a < *start + *size,
            "STACK CFI out of order or outside INIT: {line}"
        );
        *last = a;
        rules
    };
    let mut expecting_register = true;
    for tok in rules.split(' ') {
        if tok.ends_with(':') {
            assert!(
                !expecting_register || tok == rules.split(' ').next().unwrap(),
                "empty rule in {line}"
            );
            expecting_register = false;
        } else {
            assert!(!expecting_register, "rule without register in {line}");
        }
    }
    assert!(
        !expecting_register && !rules.ends_with(':'),
        "rule without expression in {line}"
    );
    // A change record names only what changes: no rule it gives is the one in force
    // (a register not named yet holds its caller's value, `$reg: $reg`).
    if rest.starts_with("CFI INIT ") {
        cfi.rules.clear();
    } else {
        for (reg, expr) in cfi_rules(rules) {
            let current = cfi.rules.get(&reg).cloned().unwrap_or_else(|| reg.clone());
            assert_ne!(current, expr, "{reg} repeats the rule in force: {line}");
        }
    }
    cfi.rules.extend(cfi_rules(rules));
}

/// What a symbol file says about one address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub function: String,
    pub location: Option<(String, u32)>,
    /// Inlined calls, outermost first: (inlined function, call file, call line).
    pub inlines: Vec<(String, String, u32)>,
}

impl SymFile {
    pub fn lookup(&self, addr: u64) -> Option<Answer> {
        let i = self.funcs.partition_point(|f| f.address <= addr);
        let f = self.funcs.get(i.checked_sub(1)?)?;
        if addr >= f.address + f.size {
            return None;
        }
        let location = f
            .lines
            .iter()
            .find(|l| l.0 <= addr && addr < l.0 + l.1)
            .map(|l| (self.files[&l.3].clone(), l.2));
        let mut inlines = Vec::new();
        for inl in &f.inlines {
            if inl.0 as usize == inlines.len()
                && inl.4.iter().any(|&(a, s)| a <= addr && addr < a + s)
            {
                inlines.push((
                    self.origins[&inl.3].clone(),
                    self.files[&inl.2].clone(),
                    inl.1,
                ));
            }
        }
        Some(Answer {
            function: f.name.clone(),
            location,
            inlines,
        })
    }
}

/// One frame of the oracle's answer: function, file, line.
pub type Frame = (String, String, u32);

/// One oracle row.
pub struct OracleRow {
    pub address: u64,
    /// The outermost function as llvm-symbolizer names it with the symbol table.
    pub symtab_name: String,
    /// DWARF-only frames, innermost first.
    pub frames: Vec<Frame>,
}

/// Reads an oracle file (format: fixtures/make-fixtures.sh).
pub fn read_oracle(path: &Path) -> Vec<OracleRow> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let address = u64::from_str_radix(cols[0], 16).unwrap();
            let n: usize = cols[2].parse().unwrap();
            assert!(n > 0 && cols.len() == 3 + 3 * n, "bad oracle row {l}");
            let frames = (0..n)
                .map(|k| {
                    (
                        cols[3 + 3 * k].to_string(),
                        lexical_path(cols[4 + 3 * k]),
                        cols[5 + 3 * k].parse().unwrap(),
                    )
                })
                .collect();
            OracleRow {
                address,
                symtab_name: cols[1].to_string(),
                frames,
            }
        })
        .collect()
}

/// A path as dumpsyms writes FILE paths: llvm-symbolizer prints them as the compiler
/// recorded them (`/usr/bin/../lib/gcc/..`, `/src/./x.h`); we write them with `.`,
/// `..` after a name, and repeated slashes resolved lexically, as POSIX `realpath -s`
/// (and Python's `os.path.normpath`) would.
pub fn lexical_path(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut kept: Vec<&str> = Vec::new();
    for part in path.split('/').filter(|p| !p.is_empty() && *p != ".") {
        if part == ".." && kept.last().is_some_and(|l| *l != "..") {
            kept.pop();
        } else if !(part == ".." && absolute && kept.is_empty()) {
            kept.push(part);
        }
    }
    let body = kept.join("/");
    match (absolute, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_string(),
        (false, false) => body,
    }
}

/// The dumpsyms command, with no debuginfod server or upload token from this machine's
/// environment (a distribution's profile may set `DEBUGINFOD_URLS`): tests that want
/// them set them.
pub fn dumpsyms_command() -> std::process::Command {
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_dumpsyms"));
    cmd.env_remove("DEBUGINFOD_URLS")
        .env_remove("DEBUGINFOD_CACHE_PATH")
        .env_remove("DEBUGINFOD_TIMEOUT")
        .env_remove("DUMPSYMS_UPLOAD_TOKEN");
    cmd
}

/// Runs dumpsyms (see [`dumpsyms_command`]) with `args`.
pub fn dumpsyms(args: &[&str]) -> std::process::Output {
    dumpsyms_command()
        .args(args)
        .output()
        .expect("run dumpsyms")
}

/// Standard output of a run that must succeed; its stderr is the failure message.
pub fn stdout_of_success(out: std::process::Output) -> String {
    assert!(
        out.status.success(),
        "dumpsyms failed: {:.2000}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("symbol files are UTF-8")
}

/// A fresh, empty directory for one test: `tag` tells the tests of one file apart, the
/// process id the runs of the test binaries. Removed when the test passes (some hold
/// hundreds of megabytes, and CI machines share small disks); left behind when it
/// fails, to look into.
pub fn scratch(tag: &str) -> Scratch {
    let d = std::env::temp_dir().join(format!("dumpsyms-test-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    Scratch {
        root: d.clone(),
        path: d,
    }
}

/// A test's scratch directory, or a path inside it (`within`): see [`scratch`].
pub struct Scratch {
    root: PathBuf,
    path: PathBuf,
}

impl Scratch {
    /// `name` inside the directory, which goes when the returned value does.
    pub fn within(mut self, name: &str) -> Scratch {
        self.path = self.path.join(name);
        self
    }
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.path
    }
}

impl AsRef<std::ffi::OsStr> for Scratch {
    fn as_ref(&self) -> &std::ffi::OsStr {
        self.path.as_os_str()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Every fixture binary, as (arch, name, path), sorted.
pub fn fixture_binaries() -> Vec<(String, String, PathBuf)> {
    let mut out = Vec::new();
    for arch in std::fs::read_dir(fixtures().join("bin")).unwrap() {
        let arch = arch.unwrap();
        for bin in std::fs::read_dir(arch.path()).unwrap() {
            let bin = bin.unwrap();
            out.push((
                arch.file_name().to_string_lossy().into_owned(),
                bin.file_name().to_string_lossy().into_owned(),
                bin.path(),
            ));
        }
    }
    out.sort();
    out
}

/// Dumps `path` with the library and returns the text.
pub fn dump_text(path: &Path, opts: &dumpsyms::Options) -> String {
    let d = dumpsyms::dump(path, opts).unwrap_or_else(|e| panic!("{e}"));
    let mut buf = Vec::new();
    dumpsyms::write_module(&d.module, &opts.into(), &mut buf).unwrap();
    String::from_utf8(buf).unwrap()
}

/// Checks that `sym`'s PUBLIC records are exactly the FUNC symbols readelf lists in
/// `oracle/<rel>.nm` (recorded by the fixture script): every address named, each by one
/// of the names it has there.
pub fn assert_publics_match_symbol_table(sym: &SymFile, rel: &str) {
    let nm = std::fs::read_to_string(fixtures().join(format!("oracle/{rel}.nm"))).unwrap();
    let mut expected: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for line in nm.lines() {
        let (addr, name) = line.split_once(' ').unwrap();
        expected
            .entry(u64::from_str_radix(addr, 16).unwrap())
            .or_default()
            .push(name.to_string());
    }
    let got: std::collections::BTreeMap<u64, String> = sym
        .publics
        .iter()
        .map(|(a, n, _)| (*a, n.clone()))
        .collect();
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        expected.keys().collect::<Vec<_>>()
    );
    for (addr, name) in &got {
        assert!(
            expected[addr].contains(name),
            "{addr:#x}: {name} not among {:?}",
            expected[addr]
        );
    }
}

/// Python's static file server (`python3 -m http.server`) over `dir` on a loopback
/// port, as a bucket or any web server serves a store: a real server, for symbol
/// servers and stores. Stopped when dropped.
pub struct Served {
    child: std::process::Child,
    pub url: String,
}

impl Served {
    pub fn start(dir: &Path) -> Served {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = std::process::Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .arg("--directory")
            .arg(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("python3");
        let url = format!("http://127.0.0.1:{port}");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        while ureq::get(&url).call().is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "http.server never answered"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        Served { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
