//! Windows modules against independent oracles: llvm-symbolizer (reading the PDB, or
//! the DWARF inside MinGW images) at every address of `.text`, llvm-readobj's decoding
//! of `.pdata`/`.xdata`, llvm-pdbutil's of the x86 frame data, and rust-minidump's
//! symbol-file parser. Fixtures and oracle files: fixtures/windows/make.sh.

use std::path::{Path, PathBuf};

use crate::common::scoring::{NameMatch, compare_names, score_with};
use crate::common::{OracleRow, dumpsyms_command, parse};

fn windows() -> PathBuf {
    crate::common::fixtures().join("windows")
}

/// The fixtures with an llvm-symbolizer oracle: `(directory, image)`.
const IMAGES: [(&str, &str); 9] = [
    ("msvc-x86_64", "app.exe"),
    ("msvc-x86_64-Od", "app.exe"),
    ("msvc-x86_64-icf", "app.exe"),
    ("msvc-i686", "app.exe"),
    ("msvc-aarch64", "app.exe"),
    ("msvc-aarch64-Od", "app.exe"),
    ("mingw-x86_64", "app.exe"),
    ("mingw-i686", "app.exe"),
    ("mingw-i686-crt", "app.exe"),
];

fn dump(args: &[&str]) -> String {
    let out = dumpsyms_command().args(args).output().unwrap();
    assert!(
        out.status.success(),
        "dumpsyms {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// LLVM's MSVC demangler spells a few things its own way; these are the same names as
/// ours: the `struct`/`class`/`union`/`enum` keyword before a type name (DIA's
/// `UNDNAME_NO_ECSU`, which Breakpad asks for, leaves it out), and `dtor` for
/// `destructor` in compiler-generated names.
fn llvm_name(name: &str) -> String {
    let mut n = name.to_string();
    for kw in ["struct ", "class ", "union ", "enum "] {
        n = n.replace(kw, "");
    }
    peer_spelling(&n.replace(" dtor'", " destructor'"))
}

/// A Windows name spelled as the Windows dumpers write FUNC names (`void*`, `C const&`,
/// `unsigned long long`, `()`), where llvm-symbolizer spells types as DIA's undecorator
/// does by default (`void *`, `unsigned __int64`, `(void)`); applied to both sides, so
/// that the comparison is of names, not of spellings.
///
/// A deleting destructor's code is named by two records: its procedure (clang-cl names
/// it `C::~C`, and both Windows dumpers write that name, with its parameters from the
/// type record) and its public (`??_GC@@…`, `` C::`scalar deleting destructor'(unsigned
/// int) ``, which llvm-symbolizer prefers). The public's name is read as the
/// procedure's.
fn peer_spelling(name: &str) -> String {
    for kind in ["scalar", "vector"] {
        let suffix = format!("::`{kind} deleting destructor'(unsigned int)");
        if let Some(scope) = name.strip_suffix(&suffix) {
            let class = scope.rsplit("::").next().unwrap_or(scope);
            return format!("{scope}::~{class}()");
        }
    }
    name.replace(" *", "*")
        .replace(" &", "&")
        .replace("unsigned __int64", "unsigned long long")
        .replace("__int64", "long long")
        .replace("(void)", "()")
}

/// addr2line names 32-bit functions by their linkage names, which keep GCC's
/// `__stdcall`/`__fastcall` decoration (`area@8`, `@perimeter@8`), and c++filt keeps it
/// around a demangled name (`std_call(int, int, int)@12`, `@fast_call(int, int)@8`), as
/// if it were an ELF symbol version; we write names without it, as DIA undecorates them.
fn gnu_name(name: &str) -> String {
    let name = name.strip_prefix('@').unwrap_or(name);
    match name.rsplit_once('@') {
        Some((body, n))
            if !body.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) =>
        {
            body.to_string()
        }
        _ => name.to_string(),
    }
}

/// An oracle file (format: fixtures/windows/make.sh) as the ELF scoring reads them.
fn read_oracle(path: &Path) -> Vec<OracleRow> {
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            let n: usize = cols[1].parse().unwrap();
            assert_eq!(cols.len(), 2 + 3 * n, "bad oracle row {l}");
            let frames: Vec<crate::common::Frame> = (0..n)
                .map(|k| {
                    (
                        gnu_name(&llvm_name(cols[2 + 3 * k])),
                        // The C runtime's paths as built (`/build/./mingw-w64-crt`): we
                        // write them without the `.` segment.
                        cols[3 + 3 * k].replace("/./", "/"),
                        cols[4 + 3 * k].parse().unwrap(),
                    )
                })
                .collect();
            OracleRow {
                address: u64::from_str_radix(cols[0], 16).unwrap(),
                symtab_name: frames.last().unwrap().0.clone(),
                frames,
            }
        })
        .collect()
}

#[test]
fn functions_lines_and_inlines_match_llvm_symbolizer() {
    let mut ok = true;
    for (dir, image) in IMAGES {
        let path = windows().join(dir).join(image);
        let text = dump(&["--inlines", path.to_str().unwrap()]);
        let sym = parse(&text);
        let oracle = read_oracle(&windows().join("oracle").join(format!("{dir}.tsv")));
        assert!(oracle.len() > 500, "{dir}: oracle too small");
        let ours = |addr| {
            sym.lookup(addr).map(|mut a| {
                a.function = peer_spelling(&a.function);
                a
            })
        };
        ok &= score_with(ours, &oracle).report(dir);
    }
    assert!(ok, "agreement below the required share (see above)");
}

/// The real-size PDB of bench/make-windows-real.sh (DuckDB, MinGW-w64 target) against
/// LLVM 19's llvm-symbolizer at the 20,000 sampled addresses that script recorded;
/// `DUMPSYMS_REAL_PDB` names its directory (default: target/bench/windows-real). Not
/// run by CI: the input takes most of an hour to build. `bench/run.sh pdb-check`.
///
/// CodeView names the functions of Itanium-mangled code by their qualified names, with
/// no parameter list and no space after a template argument's comma
/// (`std::vector<int,std::allocator<int> >::push_back`), as llvm-symbolizer prints
/// them; we name a function by its demangled public symbol where it has one, as
/// Mozilla's and Breakpad's dumpers do. Commas and template closers are compared
/// without their spaces; the parameter list is tolerated as for the other fixtures.
#[test]
#[ignore = "needs the benchmark's real PDB (bench/make-windows-real.sh)"]
fn real_pdb_matches_llvm_symbolizer() {
    let dir = std::env::var_os("DUMPSYMS_REAL_PDB").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/bench/windows-real"),
        PathBuf::from,
    );
    let text = dump(&["--inlines", dir.join("duckdb.dll").to_str().unwrap()]);
    let sym = parse(&text);
    // LLVM's demanglers also close nested templates without spaces (`>>>`), where GNU's
    // writes `> > >`.
    let squeeze = |s: &str| {
        let mut s = s.replace(", ", ",");
        while s.contains("> >") {
            s = s.replace("> >", ">>");
        }
        s
    };
    let oracle: Vec<OracleRow> = read_oracle(&dir.join("oracle.tsv"))
        .into_iter()
        .map(|mut row| {
            for f in &mut row.frames {
                f.0 = squeeze(&f.0);
            }
            row.symtab_name = squeeze(&row.symtab_name);
            row
        })
        .collect();
    assert!(oracle.len() > 10_000, "oracle too small: {}", oracle.len());
    let score = score_with(
        |addr| {
            sym.lookup(addr).map(|mut a| {
                a.function = squeeze(&a.function);
                for i in &mut a.inlines {
                    i.0 = squeeze(&i.0);
                }
                a
            })
        },
        &oracle,
    );
    score.report("duckdb.dll (real PDB)");
    let share = |n: usize| n as f64 / score.total as f64;
    for (what, n) in [
        ("function", score.function),
        ("line", score.line),
        ("inline chain", score.inline),
    ] {
        assert!(
            share(n) >= 0.995,
            "{what}: {:.2}% of {} addresses agree, below 99.5%",
            100.0 * share(n),
            score.total
        );
    }
}

/// One `RuntimeFunction` as llvm-readobj --unwind prints it.
struct ReadobjFunction {
    start: u64,
    end: u64,
    prolog: u64,
    /// `(offset, op, args)` in listing order (last prologue instruction first).
    codes: Vec<(u64, String, String)>,
}

fn read_unwind(path: &Path) -> Vec<ReadobjFunction> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<ReadobjFunction> = Vec::new();
    let num = |s: &str| {
        let s = s.trim().trim_start_matches('(').trim_end_matches(')');
        u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
    };
    for line in text.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("StartAddress: ") {
            out.push(ReadobjFunction {
                start: num(v),
                end: 0,
                prolog: 0,
                codes: Vec::new(),
            });
        } else if let Some(v) = line.strip_prefix("EndAddress: ") {
            out.last_mut().unwrap().end = num(v);
        } else if let Some(v) = line.strip_prefix("PrologSize: ") {
            out.last_mut().unwrap().prolog = v.parse().unwrap();
        } else if line.starts_with("Chained") {
            panic!("chained unwind information: extend this reader");
        } else if let Some((off, rest)) = line.split_once(": ")
            && off.starts_with("0x")
            && off.len() == 4
        {
            let (op, args) = rest.split_once(' ').unwrap_or((rest, ""));
            out.last_mut()
                .unwrap()
                .codes
                .push((num(off), op.to_string(), args.to_string()));
        }
    }
    out
}

/// The rules the codes llvm-readobj decoded give in the function body, by the
/// semantics Microsoft documents for `RtlVirtualUnwind`.
fn expected_body_rules(f: &ReadobjFunction) -> std::collections::BTreeMap<String, String> {
    let arg = |args: &str, key: &str| -> String {
        args.split([',', ' '])
            .find_map(|a| a.strip_prefix(key))
            .unwrap_or_else(|| panic!("{key} in {args}"))
            .to_string()
    };
    let int = |s: String| -> u64 {
        match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => s.parse().unwrap(),
        }
    };
    let reg = |s: String| format!("${}", s.to_lowercase());
    let total: u64 = 8 + f
        .codes
        .iter()
        .map(|(_, op, args)| match op.as_str() {
            "PUSH_NONVOL" => 8,
            "ALLOC_SMALL" | "ALLOC_LARGE" => int(arg(args, "size=")),
            _ => 0,
        })
        .sum::<u64>();
    let mut depth = 8u64;
    let mut cfa = None;
    let mut rules = std::collections::BTreeMap::new();
    for (_, op, args) in f.codes.iter().rev() {
        match op.as_str() {
            "PUSH_NONVOL" => {
                depth += 8;
                rules.insert(reg(arg(args, "reg=")), format!(".cfa {depth} - ^"));
            }
            "ALLOC_SMALL" | "ALLOC_LARGE" => depth += int(arg(args, "size=")),
            "SET_FPREG" => {
                let offset = int(arg(args, "offset="));
                cfa = Some(format!("{} {} +", reg(arg(args, "reg=")), depth - offset));
            }
            "SAVE_NONVOL" | "SAVE_XMM128" => {
                let at = total - int(arg(args, "offset="));
                rules.insert(reg(arg(args, "reg=")), format!(".cfa {at} - ^"));
            }
            other => panic!("unwind code {other}: extend this reader"),
        }
    }
    rules.insert(
        ".cfa".into(),
        cfa.unwrap_or_else(|| format!("$rsp {depth} +")),
    );
    rules.insert(".ra".into(), ".cfa 8 - ^".into());
    rules
}

/// Our STACK CFI rules in force at `address`.
fn our_rules(text: &str, address: u64) -> Option<std::collections::BTreeMap<String, String>> {
    let mut state: Option<std::collections::BTreeMap<String, String>> = None;
    let mut range = (0, 0);
    for line in text.lines() {
        let rules = if let Some(r) = line.strip_prefix("STACK CFI INIT ") {
            let mut f = r.splitn(3, ' ');
            let at = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            let size = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            if !(at <= address && address < at + size) {
                continue;
            }
            range = (at, at + size);
            state = Some(Default::default());
            f.next().unwrap()
        } else if let Some(r) = line.strip_prefix("STACK CFI ") {
            let (at, rules) = r.split_once(' ').unwrap();
            let at = u64::from_str_radix(at, 16).unwrap();
            if state.is_none() || at < range.0 || at >= range.1 || at > address {
                continue;
            }
            rules
        } else {
            continue;
        };
        let s = state.as_mut().unwrap();
        // `name: expr name: expr ...`: split at each ` name:`.
        let mut names: Vec<(usize, &str)> = Vec::new();
        for (i, tok) in rules.split(' ').enumerate() {
            if let Some(n) = tok.strip_suffix(':') {
                names.push((i, n));
            }
        }
        let toks: Vec<&str> = rules.split(' ').collect();
        for (k, &(i, name)) in names.iter().enumerate() {
            let end = names.get(k + 1).map_or(toks.len(), |n| n.0);
            s.insert(name.to_string(), toks[i + 1..end].join(" "));
        }
    }
    state
}

#[test]
fn x64_stack_cfi_matches_llvm_readobj() {
    for (dir, image) in [
        ("msvc-x86_64", "app.exe"),
        ("msvc-x86_64-Od", "app.exe"),
        ("nopdb-x86_64", "app.dll"),
    ] {
        let path = windows().join(dir).join(image);
        let text = dump(&[path.to_str().unwrap()]);
        let functions = read_unwind(&windows().join("oracle").join(format!("{dir}.unwind")));
        assert!(functions.len() >= 5, "{dir}: {} functions", functions.len());
        let base = if image.ends_with(".dll") {
            0x1_8000_0000
        } else {
            0x1_4000_0000
        };
        let mut checked = 0;
        for f in &functions {
            let want = expected_body_rules(f);
            // The body: from the end of the prologue to the last byte.
            for address in [f.start + f.prolog, f.end - 1] {
                let rva = address - base;
                let ours = our_rules(&text, rva)
                    .unwrap_or_else(|| panic!("{dir}: no STACK CFI at {rva:#x}"));
                assert_eq!(ours, want, "{dir}: rules at {rva:#x}");
                checked += 1;
            }
            // In the prologue, each instruction's row holds from its end.
            let mut depth_rows = 0;
            for (offset, _, _) in &f.codes {
                if our_rules(&text, f.start - base + offset).is_some() {
                    depth_rows += 1;
                }
            }
            assert_eq!(
                depth_rows,
                f.codes.len(),
                "{dir}: prologue rows at {:#x}",
                f.start
            );
        }
        println!(
            "{dir}: {} functions, {checked} body addresses agree",
            functions.len()
        );
    }
}

#[test]
fn rust_minidump_reads_every_file_and_resolves_as_the_oracle() {
    for (dir, image) in IMAGES {
        let path = windows().join(dir).join(image);
        let text = dump(&["--inlines", path.to_str().unwrap()]);
        let file = breakpad_symbols::SymbolFile::from_bytes(text.as_bytes())
            .unwrap_or_else(|e| panic!("{dir}: rust-minidump cannot read our file: {e}"));
        assert_eq!(file.ambiguities_repaired, 0, "{dir}: overlapping records");
        let oracle = read_oracle(&windows().join("oracle").join(format!("{dir}.tsv")));
        let mut agree = 0;
        for row in &oracle {
            let Some(f) = file.functions.get(row.address) else {
                continue;
            };
            let (inner_name, inner_file, inner_line) = &row.frames[0];
            let outer = &row.frames.last().unwrap().0;
            let line_ok =
                f.get_innermost_sourceloc(row.address)
                    .is_some_and(|(file_id, line, _)| {
                        line == *inner_line && file.files.get(&file_id) == Some(inner_file)
                    });
            // The innermost inlined function, where the oracle has one.
            let depth = row.frames.len() as u32 - 1;
            let inline_ok = depth == 0
                || f.get_inlinee_at_depth(depth - 1, row.address).is_some_and(
                    |(_, _, _, origin)| {
                        // Ours with the parameter list llvm-symbolizer's lacks.
                        file.inline_origins
                            .get(&origin)
                            .is_some_and(|n| compare_names(n, inner_name) != NameMatch::Different)
                    },
                );
            let name = peer_spelling(&f.name);
            let name_ok = name.replace(' ', "") == outer.replace(' ', "")
                || name.starts_with(&format!("{outer}("));
            agree += usize::from(line_ok && inline_ok && name_ok);
        }
        let share = agree as f64 / oracle.len() as f64;
        println!(
            "{dir}: rust-minidump agrees with the oracle at {agree} of {}",
            oracle.len()
        );
        assert!(share >= 0.99, "{dir}: {share}");
        if dir == "msvc-i686" {
            assert!(file.win_stack_framedata_info.get(0x1000).is_some());
        }
    }
}

/// The STACK WIN records, as written.
fn stack_win(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.starts_with("STACK WIN "))
        .collect()
}

#[test]
fn stack_win_matches_the_frame_data_and_mozilla() {
    let path = windows().join("msvc-i686").join("app.exe");
    let text = dump(&[path.to_str().unwrap()]);
    let ours = stack_win(&text);
    // Mozilla's dump_syms writes these records the same way, field for field.
    let moz = std::fs::read_to_string(windows().join("oracle/msvc-i686.moz.sym")).unwrap();
    assert_eq!(ours, stack_win(&moz));
    // And each is a row of llvm-pdbutil's frame data table:
    // RVA | Code | Locals | Params | Stack | Prolog | Saved Regs | ... | Program
    let fpo = std::fs::read_to_string(windows().join("oracle/msvc-i686.fpo")).unwrap();
    let rows: Vec<Vec<String>> = fpo
        .lines()
        .filter(|l| l.len() > 8 && l.as_bytes()[8] == b' ' && l.contains('|'))
        .filter(|l| u32::from_str_radix(&l[..8], 16).is_ok())
        .map(|l| l.split('|').map(|c| c.trim().to_string()).collect())
        .collect();
    assert_eq!(rows.len(), ours.len());
    for (row, rec) in rows.iter().zip(&ours) {
        let f: Vec<&str> = rec.splitn(13, ' ').collect();
        let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
        let dec = |s: &str| s.parse::<u64>().unwrap();
        assert_eq!(f[2], "4", "{rec}");
        assert_eq!(hex(f[3]), hex(&row[0]), "rva: {rec}");
        assert_eq!(hex(f[4]), dec(&row[1]), "code size: {rec}");
        assert_eq!(hex(f[5]), dec(&row[5]), "prolog: {rec}");
        assert_eq!(hex(f[7]), dec(&row[3]), "params: {rec}");
        assert_eq!(hex(f[8]), dec(&row[6]), "saved regs: {rec}");
        assert_eq!(hex(f[9]), dec(&row[2]), "locals: {rec}");
        assert_eq!(hex(f[10]), dec(&row[4]), "max stack: {rec}");
        assert_eq!(f[11], "1");
        assert_eq!(f[12].trim(), row[10].trim(), "program: {rec}");
    }
    // x86 FUNC param sizes come from the frame data at the function's start.
    let param = |name: &str| -> String {
        let line = text
            .lines()
            .find(|l| l.starts_with("FUNC ") && l.ends_with(name))
            .unwrap_or_else(|| panic!("no FUNC {name}"));
        line.split(' ').nth(3).unwrap().to_string()
    };
    assert_eq!(param(" std_call(int, int, int)"), "c");
    assert_eq!(param(" recurse(int)"), "4");
    // __fastcall: both arguments in registers.
    assert_eq!(param(" fast_call(int, int)"), "0");
}

/// The image alone in a directory of its own, and its PDB's debug id.
fn image_alone(dir: &str) -> (tempfile_dir::Dir, PathBuf, String) {
    let tmp = tempfile_dir::Dir::new();
    let exe = tmp.path().join("app.exe");
    std::fs::copy(windows().join(dir).join("app.exe"), &exe).unwrap();
    let header = dump(&["-i", exe.to_str().unwrap()]);
    let id = header.split_whitespace().nth(3).unwrap().to_string();
    (tmp, exe, id)
}

mod tempfile_dir {
    /// A directory removed when dropped.
    pub struct Dir(std::path::PathBuf);
    impl Dir {
        pub fn new() -> Dir {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let p = std::env::temp_dir().join(format!("dumpsyms-win-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).unwrap();
            Dir(p)
        }
        pub fn path(&self) -> &std::path::Path {
            &self.0
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

#[test]
fn pdb_from_a_symbol_server_is_fetched_once_and_cached() {
    let (tmp, exe, id) = image_alone("msvc-x86_64");
    let with_pdb = dump(&[windows().join("msvc-x86_64/app.exe").to_str().unwrap()]);
    // A store in the symstore layout, served over HTTP.
    let store = tmp.path().join("store");
    std::fs::create_dir_all(store.join("app.pdb").join(&id)).unwrap();
    std::fs::copy(
        windows().join("msvc-x86_64/app.pdb"),
        store.join("app.pdb").join(&id).join("app.pdb"),
    )
    .unwrap();
    let (url, asked) = crate::common::walk::serve_dir(&store);
    let cache = tmp.path().join("cache");
    let srv = format!("srv*{}*{url}", cache.display());
    let first = dump(&["--symbol-server", &srv, exe.to_str().unwrap()]);
    assert_eq!(first, with_pdb);
    assert!(cache.join("app.pdb").join(&id).join("app.pdb").is_file());
    // The second run reads the cache: the server is asked once in all.
    let second = dump(&["--symbol-server", &srv, exe.to_str().unwrap()]);
    assert_eq!(second, with_pdb);
    let want = format!("/app.pdb/{id}/app.pdb");
    assert_eq!(*asked.lock().unwrap(), vec![want]);
    // _NT_SYMBOL_PATH is read when no --symbol-server is given.
    let out = dumpsyms_command()
        .env("_NT_SYMBOL_PATH", &srv)
        .arg(&exe)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8(out.stdout).unwrap(), with_pdb);

    // A server without the PDB: the image's own records, and a message naming it.
    let (empty_url, _) = crate::common::walk::serve_dir(tmp.path().join("nothing").as_path());
    let srv = format!("srv*{}*{empty_url}", tmp.path().join("cache2").display());
    let out = dumpsyms_command()
        .args(["--symbol-server", &srv])
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("PDB app.pdb {id} not found")),
        "{err}"
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        !text.contains("\nFUNC ") && text.contains("\nSTACK CFI INIT "),
        "{text}"
    );
}

#[test]
fn a_pdb_of_another_build_is_refused_naming_both_ids() {
    let (tmp, exe, id) = image_alone("msvc-x86_64");
    let other = tmp.path().join("app.pdb");
    std::fs::copy(windows().join("msvc-x86_64-Od/app.pdb"), &other).unwrap();
    let other_id = dump(&[
        "-i",
        windows().join("msvc-x86_64-Od/app.exe").to_str().unwrap(),
    ])
    .split_whitespace()
    .nth(3)
    .unwrap()
    .to_string();
    // Found beside the image, and given explicitly: both refused.
    for args in [vec![exe.clone()], vec![exe.clone(), other.clone()]] {
        let out = dumpsyms_command().args(&args).output().unwrap();
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&id) && err.contains(&other_id), "{err}");
    }
}

#[test]
fn a_pdb_alone_or_with_its_image_beside_it() {
    let dir = windows().join("msvc-x86_64");
    let from_exe = dump(&[dir.join("app.exe").to_str().unwrap()]);
    // The image beside the PDB is found: the same file.
    assert_eq!(dump(&[dir.join("app.pdb").to_str().unwrap()]), from_exe);
    // Alone: the PDB's own identity, functions and publics; no code id, no CFI.
    let tmp = tempfile_dir::Dir::new();
    let pdb = tmp.path().join("app.pdb");
    std::fs::copy(dir.join("app.pdb"), &pdb).unwrap();
    let alone = dump(&[pdb.to_str().unwrap()]);
    assert_eq!(alone.lines().next(), from_exe.lines().next());
    assert!(!alone.contains("INFO CODE_ID") && !alone.contains("STACK CFI"));
    let funcs = |t: &str| {
        t.lines()
            .filter(|l| !l.starts_with("STACK") && !l.starts_with("INFO"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    assert_eq!(funcs(&alone), funcs(&from_exe));
    // The image given beside it.
    let both = dump(&[pdb.to_str().unwrap(), dir.join("app.exe").to_str().unwrap()]);
    assert_eq!(both, from_exe);
    // --list-arch reads the PDB's machine type.
    let arches = dump(&[
        "--list-arch",
        pdb.to_str().unwrap(),
        windows().join("msvc-aarch64/app.exe").to_str().unwrap(),
    ]);
    assert!(
        arches.contains("app.pdb: x86_64\n") && arches.ends_with("app.exe: arm64\n"),
        "{arches}"
    );
}

#[test]
fn a_pdb_in_16_kib_pages_dumps_as_the_4_kib_link_does() {
    // The same object linked with /pdbpagesize:16384 (as PDBs past 4 GB must be): only
    // the build's ids, which lld-link's /Brepro takes from the contents, differ.
    let pdb = std::fs::read(windows().join("msvc-x86_64-pages16k/app.pdb")).unwrap();
    assert_eq!(u32::from_le_bytes(pdb[32..36].try_into().unwrap()), 16384);
    let but_ids = |dir: &str| {
        let exe = windows().join(dir).join("app.exe");
        dump(&["--inlines", exe.to_str().unwrap()])
            .lines()
            .skip(2)
            .map(String::from)
            .collect::<Vec<_>>()
    };
    let four = but_ids("msvc-x86_64");
    assert!(four.iter().any(|l| l.starts_with("INLINE ")));
    assert_eq!(but_ids("msvc-x86_64-pages16k"), four);
}

/// PGO's separated code: `fixtures/windows/sepcode/app.pdb` is msvc-x86_64's PDB with
/// the last 0x65 bytes of `many_registers` moved into an S_SEPCODE block of their own
/// (`sepcode/make.py`, which records llvm-pdbutil's and llvm-symbolizer's answers).
/// Every byte of the block resolves in a FUNC of its own, named as its parent, to the
/// line llvm-symbolizer reads there; the parent keeps its first 0x5b bytes; and
/// nothing else of the dump changes.
#[test]
fn separated_code_is_a_func_named_as_its_parent_with_the_oracles_lines() {
    let tmp = tempfile_dir::Dir::new();
    let exe = tmp.path().join("app.exe");
    std::fs::copy(windows().join("msvc-x86_64/app.exe"), &exe).unwrap();
    std::fs::copy(
        windows().join("sepcode/app.pdb"),
        tmp.path().join("app.pdb"),
    )
    .unwrap();
    let text = dump(&["--inlines", exe.to_str().unwrap()]);
    let sym = parse(&text);
    let oracle = std::fs::read_to_string(windows().join("sepcode/symbolizer.tsv")).unwrap();
    let mut checked = 0;
    for row in oracle.lines() {
        let cols: Vec<&str> = row.split('\t').collect();
        let rva = u64::from_str_radix(cols[0], 16).unwrap();
        let got = sym
            .lookup(rva)
            .unwrap_or_else(|| panic!("{rva:#x}: no FUNC"));
        assert_eq!(got.function, cols[1], "{rva:#x}");
        let (file, line) = got.location.unwrap_or_else(|| panic!("{rva:#x}: no line"));
        assert_eq!(
            (file.as_str(), line.to_string().as_str()),
            (cols[2], cols[3]),
            "{rva:#x}"
        );
        checked += 1;
    }
    assert_eq!(checked, 0x65);
    // llvm-pdbutil reads the record under the procedure, which it shortened.
    let pdbutil = std::fs::read_to_string(windows().join("sepcode/pdbutil-sepcode.txt")).unwrap();
    assert!(pdbutil.contains("`many_registers`") && pdbutil.contains("code size = 91"));
    assert!(pdbutil.contains("S_SEPCODE"), "{pdbutil}");
    let funcs: Vec<(u64, u64)> = sym
        .funcs
        .iter()
        .filter(|f| f.name == "many_registers(int, int, int, int)")
        .map(|f| (f.address, f.size))
        .collect();
    assert_eq!(funcs, vec![(0x1170, 0x5b), (0x11cb, 0x65)]);
    // The rest of the dump is the plain PDB's.
    let plain = dump(&[
        "--inlines",
        windows().join("msvc-x86_64/app.exe").to_str().unwrap(),
    ]);
    let others = |t: &str| {
        let sym = parse(t);
        sym.funcs
            .into_iter()
            .filter(|f| !f.name.starts_with("many_registers"))
            .map(|f| (f.address, f.size, f.name, f.lines))
            .collect::<Vec<_>>()
    };
    assert_eq!(others(&text), others(&plain));
}

#[test]
fn folded_code_is_marked_multiple() {
    let path = windows().join("msvc-x86_64-icf/app.exe");
    let text = dump(&["-m", path.to_str().unwrap()]);
    // The linker merged the two destructors, whose code is the same: one FUNC, under the
    // name of the first procedure there (as Mozilla's dump_syms names it,
    // fixtures/peers/windows-names.tsv), marked `m`.
    let folded: Vec<&str> = text.lines().filter(|l| l.starts_with("FUNC m ")).collect();
    assert_eq!(folded.len(), 1, "{text}");
    assert!(
        folded[0].ends_with(" geo::Square::~Square()"),
        "{}",
        folded[0]
    );
    // Without -m the field is left out.
    let plain = dump(&[path.to_str().unwrap()]);
    assert!(!plain.contains("FUNC m "));
}

#[test]
fn an_image_without_debug_info_gives_exports_and_cfi() {
    let dll = windows().join("nopdb-x86_64/app.dll");
    let text = dump(&[dll.to_str().unwrap()]);
    let first = text.lines().next().unwrap();
    assert_eq!(
        first,
        "MODULE windows x86_64 000000000000000000000000000000000 app.dll"
    );
    assert!(text.contains("\nINFO CODE_ID "), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("PUBLIC ") && l.ends_with(" exported_entry"))
    );
    assert!(text.contains("\nSTACK CFI INIT "));
}

#[test]
fn a_tree_of_windows_modules_goes_into_the_store_layout() {
    let tmp = tempfile_dir::Dir::new();
    let store = tmp.path().join("store");
    dump(&[
        "--store",
        store.to_str().unwrap(),
        windows().join("msvc-x86_64").to_str().unwrap(),
        windows().join("mingw-x86_64").to_str().unwrap(),
    ]);
    let (_, _, id) = image_alone("msvc-x86_64");
    // The PDB is read through its image, not dumped again on its own.
    let sym = store.join("app.pdb").join(&id).join("app.sym");
    assert_eq!(
        std::fs::read_to_string(sym).unwrap(),
        dump(&[windows().join("msvc-x86_64/app.exe").to_str().unwrap()])
    );
    let mingw = store
        .join("app.exe")
        .join("000000000000000000000000000000000")
        .join("app.exe.sym");
    assert!(mingw.is_file());
    let count = walk_files(&store);
    assert_eq!(count, 2);
}

fn walk_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.path().is_dir() {
                walk_files(&e.path())
            } else {
                1
            }
        })
        .sum()
}

/// One arm64 function as llvm-readobj --unwind prints it: its start and length, its
/// prologue's instructions (in the listed order: last instruction first) and its
/// epilogues' (start instruction index, instructions in execution order).
struct Arm64Function {
    start: u64,
    len: u64,
    packed: bool,
    prologue: Vec<String>,
    epilogues: Vec<(u64, Vec<String>)>,
}

fn read_arm64_unwind(path: &Path) -> Vec<Arm64Function> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: Vec<Arm64Function> = Vec::new();
    #[derive(PartialEq)]
    enum In {
        None,
        Prologue,
        Epilogue,
    }
    let mut inside = In::None;
    let num = |s: &str| {
        let s = s.trim();
        match s.strip_prefix("0x") {
            Some(h) => u64::from_str_radix(h, 16).unwrap(),
            None => s.parse().unwrap(),
        }
    };
    for line in text.lines().map(str::trim) {
        let f = out.last_mut();
        if let Some(v) = line.strip_prefix("Function: ") {
            out.push(Arm64Function {
                start: num(v),
                len: 0,
                packed: false,
                prologue: Vec::new(),
                epilogues: Vec::new(),
            });
        } else if let Some(f) = f {
            if let Some(v) = line.strip_prefix("FunctionLength: ") {
                f.len = num(v);
            } else if line.starts_with("Fragment: ") {
                f.packed = true;
                assert_eq!(line, "Fragment: No", "packed fragments: extend this reader");
            } else if line.starts_with("Prologue [") {
                inside = In::Prologue;
            } else if let Some(v) = line.strip_prefix("StartOffset: ") {
                f.epilogues.push((num(v), Vec::new()));
            } else if line.starts_with("Opcodes [") {
                inside = In::Epilogue;
            } else if line == "]" {
                inside = In::None;
            } else if inside != In::None {
                let asm = line.rsplit("; ").next().unwrap().trim().to_string();
                match inside {
                    In::Prologue => f.prologue.push(asm),
                    _ => f.epilogues.last_mut().unwrap().1.push(asm),
                }
            }
        }
    }
    out
}

/// The frame an arm64 instruction sequence leaves: `sp` this far below the CFA (or the
/// CFA this far above x29), and where registers are, as bytes below the CFA.
#[derive(Clone, Debug)]
struct Arm64Frame {
    depth: i64,
    fp: Option<i64>,
    saved: std::collections::BTreeMap<String, i64>,
}

impl Arm64Frame {
    /// Runs one instruction as llvm-readobj prints it.
    fn step(&mut self, asm: &str) {
        let reg = |r: &str| match r.trim() {
            "lr" => "x30".to_string(),
            "fp" => "x29".to_string(),
            r if r.starts_with('d') => format!("v{}", &r[1..]),
            r => r.to_string(),
        };
        let imm = |s: &str| -> i64 {
            s.trim()
                .trim_start_matches('[')
                .trim_end_matches(['!', ']'])
                .trim_start_matches("sp, ")
                .trim_start_matches('#')
                .parse()
                .unwrap()
        };
        let (op, rest) = asm.split_once(' ').unwrap_or((asm, ""));
        let args: Vec<&str> = rest.split(", ").collect();
        match op {
            "end" | "nop" => {}
            // `sub sp, #n` (as unwind codes print) or `sub sp, sp, #n` (packed).
            "sub" if args[0] == "sp" => self.depth += imm(args.last().unwrap()),
            "add" if args[0] == "sp" => self.depth -= imm(args.last().unwrap()),
            // `mov sp, fp`: sp back to where x29 points.
            "mov" if args[0] == "sp" => {
                let fp = self.fp.expect("mov sp, fp without a frame pointer");
                self.depth = fp;
                self.fp = None;
            }
            "add" | "mov" if args[0] == "fp" || args[0] == "x29" => {
                let n = if op == "mov" { 0 } else { imm(args[2]) };
                self.fp = Some(self.depth - n);
            }
            "stp" | "str" => {
                let regs: Vec<String> = args[..if op == "stp" { 2 } else { 1 }]
                    .iter()
                    .map(|r| reg(r))
                    .collect();
                let pre = rest.ends_with('!');
                let offset = imm(args[regs.len() + 1]);
                let at = if pre {
                    self.depth -= offset;
                    self.depth
                } else {
                    self.depth - offset
                };
                for (i, r) in regs.into_iter().enumerate() {
                    self.saved.insert(r, at - 8 * i as i64);
                }
            }
            "ldp" | "ldr" => {
                let n = if op == "ldp" { 2 } else { 1 };
                for r in &args[..n] {
                    self.saved.remove(&reg(r));
                }
                if let Some(post) = rest.split("], ").nth(1) {
                    self.depth -= imm(post);
                }
            }
            _ => panic!("instruction {asm:?}: extend this reader"),
        }
    }

    fn rules(&self) -> std::collections::BTreeMap<String, String> {
        let mut m = std::collections::BTreeMap::new();
        let cfa = match self.fp {
            Some(n) if n != 0 => format!("x29 {n} +"),
            Some(_) => "x29".to_string(),
            None if self.depth == 0 => "sp".to_string(),
            None => format!("sp {} +", self.depth),
        };
        m.insert(".cfa".to_string(), cfa);
        m.insert(".ra".to_string(), "x30".to_string());
        for (r, below) in &self.saved {
            let rule = format!(".cfa {below} - ^");
            if r == "x30" {
                m.insert(".ra".to_string(), rule);
            } else {
                m.insert(r.clone(), rule);
            }
        }
        m
    }
}

#[test]
fn arm64_stack_cfi_matches_llvm_readobj() {
    for dir in ["msvc-aarch64", "msvc-aarch64-Od"] {
        arm64_agrees(dir);
    }
}

fn arm64_agrees(dir: &str) {
    let path = windows().join(dir).join("app.exe");
    let text = dump(&[path.to_str().unwrap()]);
    let functions = read_arm64_unwind(&windows().join("oracle").join(format!("{dir}.unwind")));
    assert!(functions.len() >= 5, "{dir}: {} functions", functions.len());
    // A register restored by an epilogue row is written as its own value.
    let ours = |rva: u64| {
        let mut r = our_rules(&text, rva).unwrap_or_else(|| panic!("no STACK CFI at {rva:#x}"));
        r.retain(|k, v| k != v);
        r
    };
    let mut checked = 0;
    for f in &functions {
        let rva = f.start - 0x1_4000_0000;
        let prologue: Vec<&String> = f.prologue.iter().filter(|a| *a != "end").collect();
        let mut frame = Arm64Frame {
            depth: 0,
            fp: None,
            saved: Default::default(),
        };
        // Before each prologue instruction, and at the body.
        for (k, asm) in prologue.iter().rev().enumerate() {
            assert_eq!(
                ours(rva + 4 * k as u64),
                frame.rules(),
                "{rva:#x} +{k} insns"
            );
            frame.step(asm);
            checked += 1;
        }
        let body = frame.clone();
        let n = prologue.len() as u64;
        assert_eq!(ours(rva + 4 * n), body.rules(), "{rva:#x}: body");
        // Packed entries' epilogue mirrors the prologue at the end of the function.
        let epilogues: Vec<(u64, Vec<String>)> = if f.packed {
            let mirror: Vec<String> = prologue
                .iter()
                .map(|a| a.replacen("stp", "ldp", 1).replacen("str", "ldr", 1))
                .map(|a| match a.split_once("#-") {
                    // A pre-indexed store is undone by a post-indexed load.
                    Some((head, tail)) => format!(
                        "{}], #{}",
                        head.trim_end_matches(", [sp, ").to_string() + ", [sp",
                        tail.trim_end_matches("]!")
                    ),
                    None => a.replacen("sub sp", "add sp", 1),
                })
                .collect();
            vec![(f.len / 4 - mirror.len() as u64 - 1, mirror)]
        } else {
            f.epilogues.clone()
        };
        for (start, insns) in &epilogues {
            let mut frame = body.clone();
            for (j, asm) in insns.iter().filter(|a| *a != "end").enumerate() {
                let at = rva + 4 * (start + j as u64);
                assert_eq!(ours(at), frame.rules(), "{rva:#x}: epilogue +{j}");
                frame.step(asm);
                checked += 1;
            }
            // At the `ret`: the caller's frame is the entry's.
            let at = rva + 4 * (start + insns.iter().filter(|a| *a != "end").count() as u64);
            assert_eq!(ours(at), frame.rules(), "{rva:#x}: ret");
            assert_eq!(frame.depth, 0, "{rva:#x}: epilogue leaves sp");
        }
    }
    println!(
        "{dir}: {} functions ({} packed), {checked} prologue and epilogue instructions agree",
        functions.len(),
        functions.iter().filter(|f| f.packed).count()
    );
}

/// MODULE and INFO CODE_ID against llvm-readobj's reading of the headers and the
/// CodeView record: the GUID's first three fields byte-swapped and all in uppercase hex,
/// the age in lowercase hex, the PDB's file name (the image's without one);
/// `TimeDateStamp` as eight uppercase digits and `SizeOfImage` in uppercase hex.
#[test]
fn module_and_code_id_match_the_headers() {
    let dirs = [
        ("msvc-x86_64", "app.exe", "x86_64"),
        ("msvc-i686", "app.exe", "x86"),
        ("msvc-aarch64", "app.exe", "arm64"),
        ("mingw-x86_64", "app.exe", "x86_64"),
        ("mingw-x86_64-buildid", "app.exe", "x86_64"),
        ("nopdb-x86_64", "app.dll", "x86_64"),
    ];
    for (dir, image, arch) in dirs {
        let text =
            std::fs::read_to_string(windows().join("oracle").join(format!("{dir}.debugdir")))
                .unwrap();
        let field = |name: &str| {
            text.lines()
                .map(str::trim)
                .find_map(|l| l.strip_prefix(name))
                .map(|v| v.trim().to_string())
        };
        let stamp = field("TimeDateStamp:").unwrap();
        let stamp = u32::from_str_radix(
            stamp.rsplit("(0x").next().unwrap().trim_end_matches(')'),
            16,
        )
        .unwrap();
        let size: u32 = field("SizeOfImage:").unwrap().parse().unwrap();
        let (debug_id, name) = match field("PDBGUID:") {
            Some(guid) => {
                let b: Vec<String> = guid
                    .trim_matches(|c| c == '(' || c == ')')
                    .split_whitespace()
                    .map(String::from)
                    .collect();
                let swapped: Vec<&str> = [3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15]
                    .iter()
                    .map(|&i| b[i].as_str())
                    .collect();
                let age: u32 = field("PDBAge:").unwrap().parse().unwrap();
                let pdb = field("PDBFileName:").unwrap_or_default();
                let name = if pdb.is_empty() {
                    image.to_string()
                } else {
                    pdb
                };
                (format!("{}{age:x}", swapped.concat()), name)
            }
            None => ("0".repeat(33), image.to_string()),
        };
        let out = dump(&["-i", windows().join(dir).join(image).to_str().unwrap()]);
        let mut lines = out.lines();
        assert_eq!(
            lines.next().unwrap(),
            format!("MODULE windows {arch} {debug_id} {name}"),
            "{dir}"
        );
        assert_eq!(
            lines.next().unwrap(),
            format!("INFO CODE_ID {stamp:08X}{size:X} {image}"),
            "{dir}"
        );
    }
}

/// 32-bit MinGW names carry their calling convention's decoration in DWARF (`area@8`,
/// `@perimeter@8`, the C runtime's `__dyn_tls_init@12`) and in the COFF symbol table
/// (`_area@8`, `_mainCRTStartup`): none of it is written, with or without debug info.
#[test]
fn no_x86_decoration_reaches_a_name() {
    let dir = windows().join("mingw-i686-crt");
    for (image, record, names) in [
        (
            "app.exe",
            "FUNC",
            &[
                "area",
                "perimeter",
                "plain",
                "main",
                "__dyn_tls_init",
                "_gnu_exception_handler",
            ][..],
        ),
        (
            "app-nodebug.exe",
            "PUBLIC",
            &[
                "area",
                "perimeter",
                "plain",
                "main",
                "__dyn_tls_init",
                "mainCRTStartup",
            ][..],
        ),
    ] {
        let text = dump(&[dir.join(image).to_str().unwrap()]);
        let sym = parse(&text);
        let all: Vec<&str> = sym
            .funcs
            .iter()
            .map(|f| f.name.as_str())
            .chain(sym.publics.iter().map(|p| p.1.as_str()))
            .collect();
        assert!(all.len() > 100, "{image}: {} names", all.len());
        for name in &all {
            let decorated = name.starts_with('@')
                || name
                    .rsplit_once('@')
                    .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
            assert!(!decorated, "{image}: {name}");
        }
        for want in names {
            let found = match record {
                "FUNC" => sym.funcs.iter().any(|f| f.name == *want),
                _ => sym.publics.iter().any(|p| p.1 == *want),
            };
            assert!(found, "{image}: no {record} named {want}");
        }
    }
}
