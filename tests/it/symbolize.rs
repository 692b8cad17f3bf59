//! `dumpsyms symbolize`'s reading of symbol files, against rust-minidump's
//! `breakpad-symbols` (the stack walker's own reader) on the same files and addresses:
//! function, file, line and the whole inline chain.

use std::path::Path;

use crate::common::*;
use breakpad_symbols::{FrameSymbolizer, SimpleModule, SymbolFile};
use dumpsyms::breakpad::symfile::SymFile;

/// What breakpad-symbols says of one address, innermost frame first, as
/// `(function, file, line)`; line 0 counts as none.
#[derive(Default)]
struct Walker {
    pc: u64,
    function: Option<String>,
    source: (Option<String>, Option<u32>),
    /// Outermost first, as breakpad-symbols adds them.
    inlines: Vec<(String, Option<String>, Option<u32>)>,
}

impl FrameSymbolizer for Walker {
    fn get_instruction(&self) -> u64 {
        self.pc
    }
    fn set_function(&mut self, name: &str, _base: u64, _parameter_size: u32) {
        self.function = Some(name.to_string());
    }
    fn set_source_file(&mut self, file: &str, line: u32, _base: u64) {
        self.source = (Some(file.to_string()), Some(line));
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.inlines
            .push((name.to_string(), file.map(str::to_string), line));
    }
}

type Frames = Vec<(String, Option<String>, Option<u32>)>;

fn theirs(sym: &SymbolFile, pc: u64) -> Frames {
    let mut w = Walker {
        pc,
        ..Walker::default()
    };
    sym.fill_symbol(&SimpleModule::default(), &mut w);
    let Some(function) = w.function else {
        return Vec::new();
    };
    let mut frames: Frames = w.inlines.into_iter().rev().collect();
    frames.push((function, w.source.0, w.source.1));
    for f in &mut frames {
        f.2 = f.2.filter(|&l| l != 0);
    }
    frames
}

fn ours(sym: &SymFile<&[u8]>, pc: u64) -> Frames {
    sym.lookup(pc)
        .into_iter()
        .map(|f| {
            (
                f.function.to_string(),
                f.file.map(str::to_string),
                f.line.filter(|&l| l != 0),
            )
        })
        .collect()
}

/// Addresses worth asking about in a symbol file: each record's first and last byte
/// and the byte after it (FUNC, line, INLINE ranges, PUBLIC).
fn probes(text: &str) -> Vec<u64> {
    let hex = |s: &str| u64::from_str_radix(s, 16).ok();
    let mut out = Vec::new();
    let mut push = |addr: u64, size: u64| {
        out.push(addr);
        if size > 0 {
            out.push(addr + size - 1);
        }
        out.push(addr + size);
    };
    for line in text.lines() {
        let w: Vec<&str> = line.split(' ').collect();
        match w[0] {
            "FUNC" => {
                let w = if w[1] == "m" { &w[2..] } else { &w[1..] };
                push(hex(w[0]).unwrap(), hex(w[1]).unwrap());
            }
            "PUBLIC" => {
                let w = if w[1] == "m" { &w[2..] } else { &w[1..] };
                push(hex(w[0]).unwrap(), 0);
            }
            "INLINE" => {
                for pair in w[5..].chunks(2) {
                    push(hex(pair[0]).unwrap(), hex(pair[1]).unwrap());
                }
            }
            first
                if first.starts_with(|c: char| c.is_ascii_digit() || ('a'..='f').contains(&c)) =>
            {
                push(hex(w[0]).unwrap(), hex(w[1]).unwrap());
            }
            _ => {}
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn compare(path: &Path) -> (usize, usize) {
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    let text = dump_text(path, &opts);
    let theirs_file = SymbolFile::from_bytes(text.as_bytes()).unwrap();
    let our_file = SymFile::parse(text.as_bytes());
    assert_eq!(our_file.damage().1, 0, "{}", path.display());
    let addresses = probes(&text);
    let mut inlined = 0;
    for &pc in &addresses {
        let (a, b) = (ours(&our_file, pc), theirs(&theirs_file, pc));
        assert_eq!(a, b, "{} at {pc:#x}", path.display());
        inlined += usize::from(a.len() > 1);
    }
    (addresses.len(), inlined)
}

#[test]
fn lookups_agree_with_rust_minidump_on_every_record_boundary() {
    let mut total = 0;
    let mut inlined = 0;
    let mut files = 0;
    for (_, _, path) in fixture_binaries() {
        // Inputs the dumper refuses (crafted ones live elsewhere) have nothing to read.
        if dumpsyms::dump(&path, &dumpsyms::Options::default()).is_err() {
            continue;
        }
        let (n, i) = compare(&path);
        total += n;
        inlined += i;
        files += 1;
    }
    for rel in ["windows/msvc-x86_64/app.exe", "macho/mac-arm64-O2"] {
        let (n, i) = compare(&fixtures().join(rel));
        total += n;
        inlined += i;
        files += 1;
    }
    eprintln!("{files} symbol files, {total} addresses, {inlined} in inlined code");
    assert!(files > 20 && total > 10_000 && inlined > 1_000);
}

/// A fresh store (`scratch(tag)`) holding `binary`'s symbol file, with inlined calls.
fn store_of(binary: impl AsRef<Path>, tag: &str) -> Scratch {
    let store = scratch(tag);
    let o = dumpsyms_command()
        .args(["-q", "--inlines", "--no-debuginfod", "--store"])
        .arg(&store)
        .arg(binary.as_ref())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    store
}

/// The frames of `module` (`/uaf+`: the program's frames by offset, or by its source
/// `/uaf.c`) in an ASan report: (frame number, function, file:line), the column
/// dropped (symbol files have none).
fn asan_frames(report: &str, module: &str) -> Vec<(u32, String, String)> {
    let mut out = Vec::new();
    for line in report.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let (Some(n), Some(_pc), Some("in"), Some(function), Some(place)) = (
            words.next(),
            words.next(),
            words.next(),
            words.next(),
            words.next(),
        ) else {
            continue;
        };
        // The module's own frames: by its offset, or by its source file.
        if !place.contains(module)
            && !place.contains(&format!("{}.c:", &module[..module.len() - 1]))
        {
            continue;
        }
        let place = match place.matches(':').count() {
            2 => place[..place.rfind(':').unwrap()].to_string(),
            _ => place.to_string(),
        };
        out.push((n.parse().unwrap(), function.to_string(), place));
    }
    out
}

/// Names the binary's symbol table gives each address, to accept either of two aliases
/// (ASan's interceptors: `free` and `__interceptor_free`).
fn aliases(path: &Path) -> Vec<Vec<String>> {
    use object::{Object, ObjectSymbol};
    let data = std::fs::read(path).unwrap();
    let file = object::File::parse(&*data).unwrap();
    let mut by_addr: std::collections::BTreeMap<u64, Vec<String>> = Default::default();
    for s in file.symbols() {
        if let Ok(name) = s.name()
            && s.address() != 0
        {
            by_addr
                .entry(s.address())
                .or_default()
                .push(name.to_string());
        }
    }
    by_addr.into_values().filter(|v| v.len() > 1).collect()
}

#[test]
fn an_asan_report_reads_as_asan_prints_it_with_llvm_symbolizer() {
    let dir = fixtures().join("symbolize/asan");
    let binary = dir.join("uaf");
    let store = store_of(&binary, "symbolize-asan");
    let o = dumpsyms_command()
        .arg("symbolize")
        .arg("--store")
        .arg(&store)
        .arg(dir.join("report.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = asan_frames(&String::from_utf8(o.stdout).unwrap(), "/uaf+");
    let oracle = asan_frames(
        &std::fs::read_to_string(dir.join("llvm-symbolized.txt")).unwrap(),
        "/uaf+",
    );
    let aliases = aliases(&binary);
    let same_function = |a: &str, b: &str| {
        a == b
            || aliases
                .iter()
                .any(|v| v.iter().any(|n| n == a) && v.iter().any(|n| n == b))
    };
    assert_eq!(ours.len(), oracle.len(), "{ours:?}\n{oracle:?}");
    for (a, b) in ours.iter().zip(&oracle) {
        assert!(
            a.0 == b.0 && same_function(&a.1, &b.1) && a.2 == b.2,
            "{a:?} vs llvm-symbolizer's {b:?}"
        );
    }
    // The use inside the two inlined calls, and main's call, by name.
    let names: Vec<&str> = ours.iter().map(|f| f.1.as_str()).collect();
    assert!(
        names.starts_with(&["inner", "middle", "outer", "main"]),
        "{names:?}"
    );
    let stderr = String::from_utf8(o.stderr).unwrap();
    assert!(stderr.contains("frame(s) resolved"), "{stderr}");
    // No store: the binary, found in a debug directory by name and build ID, is dumped
    // on the fly, to the same report.
    let here = scratch("symbolize-asan-cwd");
    let (from_store, _) = symbolize_asan(&here, &["--store", store.to_str().unwrap()]);
    assert!(
        from_store.contains("/nonexistent/build/uaf"),
        "{from_store}"
    );
    let (dumped, stderr) = symbolize_asan(&here, &["--debug-dir", dir.to_str().unwrap()]);
    assert_eq!(dumped, from_store, "{stderr}");
    assert!(dumped.contains(" in middle "), "{dumped}");
}

#[test]
fn a_captured_on_device_trace_reads_as_llvm_symbolizer_reads_its_pcs() {
    let dir = fixtures().join("symbolize/ondevice");
    let store = store_of(dir.join("blocked"), "symbolize-ondevice");
    let o = dumpsyms_command()
        .args(["symbolize", "--json", "--store"])
        .arg(&store)
        .arg(dir.join("trace.json"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // llvm-symbolizer's frames per PC, innermost first, the column dropped.
    let oracle = std::fs::read_to_string(dir.join("llvm-symbolizer.tsv")).unwrap();
    let mut expected: Vec<(String, Vec<String>)> = Vec::new();
    for row in oracle.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = row.split('\t').collect();
        if !f[1].ends_with("/blocked") {
            continue;
        }
        let place = &f[4][..f[4].rfind(':').unwrap()];
        let frame = format!("{} {place}", f[3]);
        match expected.last_mut() {
            Some((pc, frames)) if pc == f[0] => frames.push(frame),
            _ => expected.push((f[0].to_string(), vec![frame])),
        }
    }
    let mut got: Vec<(String, Vec<String>)> = Vec::new();
    // One record per PC, as for a text report, its thread and frame numbers given.
    for frame in doc.as_array().unwrap() {
        assert!(
            frame["line"].is_null() && frame["frame"].is_u64(),
            "{frame}"
        );
        if frame["thread"] != 0 {
            continue;
        }
        if !frame["module"]
            .as_str()
            .is_some_and(|m| m.ends_with("/blocked"))
        {
            continue;
        }
        let frames = frame["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                format!(
                    "{} {}:{}",
                    f["function"].as_str().unwrap(),
                    f["file"].as_str().unwrap(),
                    f["line"]
                )
            })
            .collect();
        got.push((frame["pc"].as_str().unwrap().to_string(), frames));
    }
    assert_eq!(got, expected);
    assert!(expected.len() >= 3 && expected.iter().any(|(_, f)| f.len() > 1));
}

/// Our reader's answer in the shape the scoring of tests/it/oracle.rs takes.
fn answer(sym: &SymFile<&[u8]>, addr: u64) -> Option<crate::common::Answer> {
    let frames = sym.lookup(addr);
    let outer = frames.last()?;
    // Only FUNC records count there.
    if outer.public {
        return None;
    }
    let inner = &frames[0];
    let location = inner.file.map(|f| (f.to_string(), inner.line.unwrap_or(0)));
    let location = location.filter(|l| l.1 != 0);
    let inlines = (0..frames.len() - 1)
        .rev()
        .map(|k| {
            (
                frames[k].function.to_string(),
                frames[k + 1].file.unwrap_or("").to_string(),
                frames[k + 1].line.unwrap_or(0),
            )
        })
        .collect();
    Some(crate::common::Answer {
        function: outer.function.to_string(),
        location,
        inlines,
    })
}

/// Through the symbol files, at every address the fixture script asked llvm-symbolizer
/// about: the function, file:line and inline chain agree as often as the dumper's own
/// oracle test finds, and on at least 99.9% of the addresses in all.
#[test]
fn fixtures_resolve_as_llvm_symbolizer_reads_their_debug_info() {
    use crate::common::scoring::*;
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    let (mut total, mut agreed) = (0usize, 0usize);
    for (arch, name, path) in fixture_binaries() {
        let oracle = read_oracle(
            &fixtures()
                .join("oracle")
                .join(&arch)
                .join(format!("{name}.tsv")),
        );
        let text = dump_text(&path, &opts);
        let ours = SymFile::parse(text.as_bytes());
        let s = score_with(|addr| answer(&ours, addr), &oracle);
        s.report(&format!("{arch}/{name}"));
        total += s.total;
        agreed += s.function.min(s.line).min(s.inline);
    }
    let share = agreed as f64 / total as f64;
    println!(
        "{agreed} of {total} addresses agree in function, line and inline chain ({:.3}%)",
        100.0 * share
    );
    assert!(total > 10_000 && share >= 0.999, "{share}");
}

/// The frames of `module` (as the report names it) in `--json` output: per frame, its
/// frames as "function file:line".
fn json_frames(json: &[u8], module: &str) -> Vec<Vec<String>> {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .filter(|f| f["module"] == module)
        .map(|f| {
            f["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| {
                    let file = r["file"].as_str().unwrap_or("??");
                    let file = file.rsplit('/').next().unwrap();
                    format!("{} {file}:{}", r["function"].as_str().unwrap(), r["line"])
                })
                .collect()
        })
        .collect()
}

/// llvm-symbolizer's frames for the same return addresses (less one), as
/// [`json_frames`] gives them.
fn backtrace_oracle(dir: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(dir.join("llvm-symbolizer.txt"))
        .unwrap()
        .lines()
        .map(|l| {
            let d: serde_json::Value = serde_json::from_str(l).unwrap();
            d["Symbol"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let file = f["FileName"].as_str().unwrap();
                    let (file, line) = match file {
                        "" => ("??", "null".to_string()),
                        _ => (file.rsplit('/').next().unwrap(), f["Line"].to_string()),
                    };
                    format!("{} {file}:{line}", f["FunctionName"].as_str().unwrap())
                })
                .collect()
        })
        .collect()
}

/// A non-PIE program's `backtrace_symbols` lines give virtual addresses (0x401180);
/// its symbol file counts from its load address (0x400000). The load address comes
/// from the binary, found at the report's path (and dumped on the fly, no store) or in
/// a --debug-dir beside a store; with a store alone it is not known, and the offsets,
/// past every record, are left unresolved with a warning rather than given to `_fini`.
#[test]
fn a_non_pie_backtrace_resolves_from_its_binary_and_says_why_not_without_it() {
    let dir = fixtures().join("symbolize/backtrace");
    let oracle = backtrace_oracle(&dir);
    assert_eq!(oracle.len(), 4);
    assert!(oracle.iter().any(|f| f.len() == 3), "{oracle:?}");
    let symbolize = |cwd: &Path, args: &[&str]| {
        let o = dumpsyms_command()
            .current_dir(cwd)
            .arg("symbolize")
            .args(["--json", "--no-debuginfod"])
            .args(args)
            .arg(dir.join("report.txt"))
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (
            json_frames(&o.stdout, "./nopie"),
            String::from_utf8(o.stderr).unwrap(),
        )
    };
    // The report's own path, from the directory it was made in: dumped on the fly.
    let (frames, _) = symbolize(&dir, &[]);
    assert_eq!(frames, oracle);

    let store = store_of(dir.join("nopie"), "symbolize-nopie");
    let elsewhere = scratch("symbolize-nopie-cwd");
    let store = store.to_str().unwrap();
    let (frames, stderr) = symbolize(&elsewhere, &["--store", store]);
    assert!(frames.iter().all(|f| f.is_empty()), "{frames:?}");
    assert!(
        stderr.contains("./nopie: absolute addresses (0x401180), which the report's own module map does not place"),
        "{stderr}"
    );
    let debug_dir = dir.to_str().unwrap();
    let (frames, stderr) = symbolize(&elsewhere, &["--store", store, "--debug-dir", debug_dir]);
    assert_eq!(frames, oracle, "{stderr}");
}

/// The ASan report's text output, run in `cwd` with `args`: (stdout, stderr). The
/// program's path in the report is made one that is on no machine, so that its symbols
/// come from where `args` say (on the machine that made the fixture, the path is there).
fn symbolize_asan(cwd: &Path, args: &[&str]) -> (String, String) {
    let report = std::fs::read_to_string(fixtures().join("symbolize/asan/report.txt")).unwrap();
    let mut moved = String::new();
    for line in report.lines() {
        let line = match line.find("/uaf+0x") {
            Some(at) => {
                let start = line[..at].rfind('(').unwrap() + 1;
                format!("{}/nonexistent/build{}", &line[..start], &line[at..])
            }
            None => line.to_string(),
        };
        moved.push_str(&line);
        moved.push('\n');
    }
    let report = cwd.join("report.txt");
    std::fs::write(&report, moved).unwrap();
    let o = dumpsyms_command()
        .current_dir(cwd)
        .args(["symbolize", "--no-debuginfod"])
        .args(args)
        .arg(&report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// A store's files over HTTP from a real static file server (Python's http.server, as
/// a bucket or any web server serves a symbol store): fetched into the cache, the
/// frames are those the store gives; with the server gone the cache answers alone.
#[test]
fn symbol_files_come_from_a_server_into_a_cache() {
    let dir = fixtures().join("symbolize/asan");
    let store = store_of(dir.join("uaf"), "symbolize-served");
    let here = scratch("symbolize-served-cwd");
    let (expected, _) = symbolize_asan(&here, &["--store", store.to_str().unwrap()]);
    assert!(expected.contains(" in middle "), "{expected}");

    let server = Served::start(&store);
    let url = server.url.clone();
    let cache = scratch("symbolize-served-cache");
    let args = [
        "--symbols-url",
        &url,
        "--symbols-cache",
        cache.to_str().unwrap(),
    ];
    let (served, stderr) = symbolize_asan(&here, &args);
    drop(server);
    assert_eq!(served, expected, "{stderr}");
    let id = std::fs::read_dir(store.join("uaf"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .file_name();
    assert!(cache.join("uaf").join(&id).join("uaf.sym").is_file());
    // The server is gone: the cache answers (the server is still asked for libc, which
    // it never had).
    let (cached, stderr) = symbolize_asan(&here, &args);
    assert_eq!(cached, expected, "{stderr}");
}

/// A server that accepts and never answers costs one time-out, not one per module or
/// frame; what else there is (the binary in a debug directory) still answers.
#[test]
fn a_hanging_symbol_server_costs_one_timeout() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let held = std::thread::spawn(move || {
        let mut open = Vec::new();
        for stream in listener.incoming().take(8).flatten() {
            open.push(stream);
        }
    });
    let cache = scratch("symbolize-hang-cache");
    let debug_dir = fixtures().join("symbolize/asan").display().to_string();
    let here = scratch("symbolize-hang-cwd");
    let started = std::time::Instant::now();
    let args = [
        "--symbols-url",
        &url,
        "--symbols-cache",
        cache.to_str().unwrap(),
        "--server-timeout",
        "1",
        "--debug-dir",
        &debug_dir,
    ];
    let (out, stderr) = symbolize_asan(&here, &args);
    let took = started.elapsed();
    assert!(took < std::time::Duration::from_secs(8), "{took:?}");
    assert_eq!(
        stderr.matches("no answer (timed out)").count(),
        1,
        "{stderr}"
    );
    // The program's frames, dumped from its binary.
    assert!(out.contains(" in middle "), "{out}");
    drop(held);
}

/// Frames (function, file, line), innermost first, in the shape the oracle scoring
/// takes; a frame without source (a PUBLIC's) counts as no answer, as there.
fn frames_answer(
    frames: &[(String, Option<String>, Option<u32>)],
) -> Option<crate::common::Answer> {
    let outer = frames.last()?;
    if frames.len() == 1 && outer.1.is_none() && outer.2.is_none() {
        return None;
    }
    let inner = &frames[0];
    let location = inner.1.clone().zip(inner.2).filter(|l| l.1 != 0);
    let inlines = (0..frames.len() - 1)
        .rev()
        .map(|k| {
            (
                frames[k].0.clone(),
                frames[k + 1].1.clone().unwrap_or_default(),
                frames[k + 1].2.unwrap_or(0),
            )
        })
        .collect();
    Some(crate::common::Answer {
        function: outer.0.clone(),
        location,
        inlines,
    })
}

/// Tombstones as Android's libunwindstack prints them, of every address the fixture
/// script asked llvm-symbolizer about in an arm64 and a 32-bit ARM (Thumb) program:
/// frame #00 at its PC, callers at `rel_pc` less unwindstack's adjustment, which on ARM
/// keeps the Thumb bit (a BL's return address 0x1235 prints as 0x1231), some lines with
/// logcat's prefix. Resolved through the store, each agrees with llvm-symbolizer as the
/// symbol file read directly does: the adjustment is not made twice.
#[test]
fn tombstones_resolve_as_llvm_symbolizer_reads_the_debug_info() {
    use crate::common::scoring::*;
    let name = "cpp-gcc-O2-dwarf5";
    for (arch, abi, width) in [("aarch64", "arm64", 16), ("arm", "armeabi-v7a", 8)] {
        let binary = fixtures().join("bin").join(arch).join(name);
        let oracle = read_oracle(
            &fixtures()
                .join("oracle")
                .join(arch)
                .join(format!("{name}.tsv")),
        );
        let build_id = std::fs::read_to_string(
            fixtures()
                .join("oracle")
                .join(arch)
                .join(format!("{name}.buildid")),
        )
        .unwrap();
        let store = store_of(&binary, &format!("symbolize-tombstone-{arch}"));
        let mut tombstone = String::from(
            "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n\
             Build fingerprint: 'google/oriole/oriole:14/UQ1A.240205.004/11269751:user/release-keys'\n\
             pid: 4321, tid: 4321, name: example  >>> com.example <<<\n\
             signal 11 (SIGSEGV), code 1 (SEGV_MAPERR), fault addr 0x0\n\n\
             backtrace:\n",
        );
        for (n, row) in oracle.iter().enumerate() {
            let thumb = u64::from(arch == "arm" && n > 0);
            let prefix = match n % 2 {
                0 => "      ".to_string(),
                _ => "11-24 15:00:00.123  4321  4321 F DEBUG   :       ".to_string(),
            };
            tombstone.push_str(&format!(
                "{prefix}#{n:02} pc {:0width$x}  /data/app/~~a1B2==/com.example-9/lib/{abi}/{name} (BuildId: {})\n",
                row.address | thumb,
                build_id.trim()
            ));
        }
        let report = store.join("tombstone.txt");
        std::fs::write(&report, tombstone).unwrap();
        let o = dumpsyms_command()
            .args(["symbolize", "--json", "--no-debuginfod", "--store"])
            .arg(&store)
            .arg(&report)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        let records = doc.as_array().unwrap();
        assert_eq!(records.len(), oracle.len());
        let answers: std::collections::HashMap<u64, Option<crate::common::Answer>> = oracle
            .iter()
            .zip(records)
            .map(|(row, r)| {
                let frames: Vec<_> = r["frames"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| {
                        (
                            f["function"].as_str().unwrap().to_string(),
                            f["file"].as_str().map(str::to_string),
                            f["line"].as_u64().map(|l| l as u32),
                        )
                    })
                    .collect();
                (row.address, frames_answer(&frames))
            })
            .collect();
        let through = score_with(|a| answers[&a].clone(), &oracle);
        let text = std::fs::read_to_string(
            std::fs::read_dir(store.join(name))
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path()
                .join(format!("{name}.sym")),
        )
        .unwrap();
        let sym = SymFile::parse(text.as_bytes());
        let direct = score_with(
            |a| {
                let frames: Vec<_> = sym
                    .lookup(a)
                    .iter()
                    .map(|f| (f.function.to_string(), f.file.map(str::to_string), f.line))
                    .collect();
                frames_answer(&frames)
            },
            &oracle,
        );
        assert!(through.report(&format!("tombstone {arch}")), "{arch}");
        assert_eq!(
            (through.function, through.line, through.inline),
            (direct.function, direct.line, direct.inline),
            "{arch}"
        );
        assert!(oracle.len() > 500);
    }
}

/// Bad input never fails a run that could read its report: lines of no known format
/// (and bytes that are not UTF-8) pass through as they came, absurd offsets and unknown
/// modules are left as they were and counted, a damaged symbol file is named with its
/// first damaged line and still answers from its good records, and a store that is not
/// there is said. Exit 1 only when the report cannot be read.
#[test]
fn bad_input_passes_through_and_is_named() {
    let store = scratch("symbolize-bad");
    let id = "9670EA4A3BA4E6F4E9F3A6C4D7E1A9B40";
    let at = store.join("libbad.so").join(id);
    std::fs::create_dir_all(&at).unwrap();
    std::fs::write(
        at.join("libbad.so.sym"),
        format!(
            "MODULE Linux x86_64 {id} libbad.so\nFILE 0 bad.c\nFUNC 1000 20 0 good\n\
             1000 20 7 0\nFUNC zz 10 0 broken\n\u{0}\u{1}garbage\nPUBLIC 2000 0 exported\n"
        ),
    )
    .unwrap();
    let build_id = "4aea7096a43bf4e6e9f3a6c4d7e1a9b4";
    let mut report: Vec<u8> = Vec::new();
    report.extend_from_slice(b"==1==ERROR: AddressSanitizer: SEGV on unknown address\n");
    report.extend_from_slice(
        format!("    #0 0x7f00 (/lib/libbad.so+0x1010) (BuildId: {build_id})\n").as_bytes(),
    );
    report.extend_from_slice(
        format!("    #1 0x7f01 (/lib/libbad.so+0xffffffffffffffff) (BuildId: {build_id})\n")
            .as_bytes(),
    );
    report.extend_from_slice(b"    #2 0x7f02 (/lib/nowhere.so+0x10) (BuildId: 00112233)\n");
    report.extend_from_slice(b"\xff\xfe not UTF-8 (/lib/libbad.so+0x1010)\n");
    report.extend_from_slice(b"libbad.so+0x2004\n");
    report.extend_from_slice(b"+0x12 ) ( [0x [0x] #0 pc\n");
    let input = store.join("report.txt");
    std::fs::write(&input, &report).unwrap();
    let o = dumpsyms_command()
        .args(["symbolize", "--no-debuginfod", "--store"])
        .arg(&store)
        .args(["--store", "/nonexistent/store"])
        .arg(&input)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = o.stdout;
    let stderr = String::from_utf8_lossy(&o.stderr);
    let text = String::from_utf8_lossy(&out);
    assert!(text.contains("#0 0x7f00 in good bad.c:7"), "{text}");
    // Unresolved frames keep their line (renumbered after nothing: as they were).
    assert!(
        text.contains("#1 0x7f01 (/lib/libbad.so+0xffffffffffffffff)"),
        "{text}"
    );
    assert!(text.contains("#2 0x7f02 (/lib/nowhere.so+0x10)"), "{text}");
    assert!(
        out.windows(4).any(|w| w == b"\xff\xfe n"),
        "not passed through byte for byte"
    );
    assert!(text.contains("libbad.so+0x2004\n    exported"), "{text}");
    assert!(text.ends_with("+0x12 ) ( [0x [0x] #0 pc\n"), "{text}");
    assert!(
        stderr.contains("libbad.so.sym:5: ") && stderr.contains("2 damaged line(s) skipped"),
        "{stderr}"
    );
    assert!(
        stderr.contains("--store /nonexistent/store: not a directory"),
        "{stderr}"
    );
    assert!(stderr.contains("2 frame(s) resolved, 2 not"), "{stderr}");

    // The report itself cannot be read: exit 1, naming it.
    let o = dumpsyms_command()
        .args(["symbolize", "/nonexistent/report.txt"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent/report.txt"));
    // A text that starts like an on-device trace but is not JSON (cut short) is read
    // as text, passed through, and said to be no trace.
    let o = dumpsyms_command()
        .arg("symbolize")
        .arg("-")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(b"{\"threads\": [")?;
            c.wait_with_output()
        })
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(o.stdout, b"{\"threads\": [");
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("starts like an on-device stack trace but is not JSON (EOF while parsing"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A Thumb-2 program's own `backtrace_symbols_fd` output, run under qemu-arm
/// (`fixtures/symbolize/thumb`): return addresses in a PIE, from a store alone, agree
/// with llvm-symbolizer 19 at each address less one, inline chain included.
#[test]
fn a_thumb_backtrace_resolves_as_llvm_symbolizer_reads_it() {
    let dir = fixtures().join("symbolize/thumb");
    let oracle = backtrace_oracle(&dir);
    assert_eq!(oracle.len(), 3);
    assert!(oracle.iter().any(|f| f.len() == 3), "{oracle:?}");
    let store = store_of(dir.join("thumb"), "symbolize-thumb");
    let o = dumpsyms_command()
        .current_dir(&store)
        .args(["symbolize", "--json", "--no-debuginfod", "--store"])
        .arg(&store)
        .arg(dir.join("report.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(json_frames(&o.stdout, "./thumb"), oracle);
}

/// Each report of `fixtures/symbolize/field` (one per family of crash text, written in
/// the shapes seen in public trackers) and the number of its lines that are frames with
/// a module and an offset, counted by hand; `not-frames.txt` holds lines that look alike
/// and are none (kernel, Go, Rust, a sanitizer's summary); `ips.txt`, Apple's
/// JSON crash report, starts with `{` and is no on-device trace. `pseudo-modules.txt`
/// holds frames of mappings no symbol file is for, in the shapes seen in Android
/// tombstones (`[vdso]`, `/dev/ashmem/dalvik-jit-code-cache (deleted)`, `[anon:…]`,
/// `/memfd:jit-cache`), macOS crash reports (`???  0x0 0x0 + 0`) and a JVM's
/// `hs_err_pid*.log` (its `Signal Handlers:` list): none is a frame, and android.txt's
/// `/dev/ashmem` frame no longer counts. `syslog.txt` is glibc's abort report as rsyslog
/// logs it, its newlines written `#012`: three frames on one line, two of them absolute
/// addresses placed by the memory map that follows them on that line.
///
/// Frames printed as absolute addresses count only where the report's own module map
/// places them: `glibc.txt`'s `./legacy[0x…]` and `./app(main+0x1d)[0x…]` have none;
/// `glibc-detected.txt` (old glibc's `*** glibc detected ***` report, as on RHEL 6 in
/// public trackers) has its `Memory map`, which names `libc-2.12.so` where the frames
/// say `libc.so.6`; apple.txt's `Binary Images` hold `libsystem_kernel.dylib` (its frame
/// with a symbol counts) and not `libsystem_pthread.dylib`; `wine.txt` is winedbg's
/// crash dialog text (as in WineHQ's bugzilla and its forums), its frames of absolute PCs
/// (`in ntdll`, `call_thread_func+0xc() in ntdll (0x…)`) placed by `Modules:`.
///
/// `crashlytics.txt` is Crashlytics' NDK stack text (as in flutterfire's tracker),
/// `crashlytics-ios.txt` its iOS export (as in firebase-ios-sdk's), whose address column
/// is the offset into the binary;
/// `dart.txt` the Dart VM's crash dump behind logcat's prefix (two frames; its
/// `Unknown symbol` frame has no module) and a Flutter non-symbolic Dart trace (three);
/// `windows-error-reporting.txt` the Event Log's Application Error, a `Report.wer`'s
/// signature and a game's `Game.dll+00F18CB`; `loci.txt` a program's `RIP = 0x…
/// (opendcdiag+0x61e7f)`, glibc frames inside a log's `[Backtrace N: …]]` and a
/// stackwalker frame with a note in fullwidth parentheses; `esp32.txt` an ESP-IDF
/// panic, whose `Backtrace:` PCs count only with the firmware given (`--firmware`).
/// `crashlytics-localized.txt` is Crashlytics' iOS stacks as its console shows them in
/// French and German (`Plantage :`, `Absturz:`, `(Manquant)`), without the export's
/// header: its unpadded address column is still the offset into the binary.
/// `stackwalk-absolute.txt` is a stackwalker's text whose frames in no module it knew are
/// bare addresses, placed by its `Loaded modules:` (one is in none); `microdump.txt` a
/// Breakpad microdump as logcat shows it (its `M` lines place the stackwalker frames
/// after it, one of three).
/// `apple-ios32.txt` is an iOS 7 report of a 32-bit app: absolute addresses, two of them
/// already symbolized by the device (`abort + 108`) and one by Xcode
/// (`-[ViewController buttonTapped:] + 41`), each placed by the `Binary Images:` list.
/// `windbg.txt` is WinDbg's `kn` and `kb` as pasted into bug reports: its rows whose
/// call site is `module+0x…` are frames, and so are those WinDbg resolved
/// (`module!function+0x…`, a template's name with its spaces, `KERNEL32!…` at the
/// function's first byte: 10 in all); an inline frame (no address) and the debugger's
/// `myapp+0x1a2b:` location line are not; `crash-logger.txt` a game's
/// crash logger (`[ 0] 0x7FF9867018CB   Game.dll+00F18CB   mov …`), whose absolute
/// address is no second frame.
const FIELD: &[(&str, u64)] = &[
    ("android.txt", 9),
    ("apple-ios32.txt", 5),
    ("apple.txt", 4),
    ("coredump.txt", 6),
    ("crash-logger.txt", 5),
    ("crashlytics-ios.txt", 3),
    ("crashlytics-localized.txt", 6),
    ("crashlytics.txt", 4),
    ("dart.txt", 5),
    ("drmemory.txt", 4),
    ("esp32.txt", 0),
    ("gecko.txt", 3),
    ("glibc-detected.txt", 5),
    ("glibc.txt", 4),
    ("graphene.txt", 4),
    ("hotspot.txt", 7),
    ("ips.txt", 1),
    ("loci.txt", 5),
    ("microdump.txt", 2),
    ("not-frames.txt", 0),
    ("pseudo-modules.txt", 0),
    ("sanitizers.txt", 6),
    ("stackwalk-absolute.txt", 3),
    ("stackwalk-machine.txt", 2),
    ("stackwalk.txt", 3),
    ("syslog.txt", 3),
    ("tsan.txt", 9),
    ("windbg.txt", 10),
    ("windows-error-reporting.txt", 3),
    ("wine.txt", 7),
    ("xorg.txt", 4),
];

/// The fuzz targets' invariants hold on every field report (the seeds `fuzz/seed.sh`
/// cuts from them), so that `cargo test` meets a broken invariant before fuzzing does.
#[test]
fn the_fuzz_targets_invariants_hold_on_the_field_reports() {
    for (file, _) in FIELD {
        let bytes = std::fs::read(fixtures().join("symbolize/field").join(file)).unwrap();
        dumpsyms::fuzzing::report_frames(&bytes);
        dumpsyms::fuzzing::report_maps(&bytes);
        dumpsyms::fuzzing::report(&bytes);
    }
}

/// `dumpsyms symbolize ARGS REPORT` in an empty directory, with nothing to resolve from
/// but what ARGS give: (stdout, stderr).
pub(crate) fn symbolize_in_empty_dir(tag: &str, args: &[&str], report: &Path) -> (Vec<u8>, String) {
    let empty = scratch(tag);
    let o = dumpsyms_command()
        .current_dir(&empty)
        .args(["symbolize", "--no-debuginfod"])
        .args(args)
        .arg(report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (o.stdout, String::from_utf8(o.stderr).unwrap())
}

/// Every frame of every family is found, and nothing else; where nothing resolves, the
/// report comes back byte for byte, CRLF line ends and a last line without one
/// included.
#[test]
fn every_family_of_the_field_is_recognized_and_passed_through_unchanged() {
    let dir = fixtures().join("symbolize/field");
    let mut files: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".txt"))
        .collect();
    files.sort();
    let listed: Vec<&str> = FIELD.iter().map(|(f, _)| *f).collect();
    assert_eq!(files, listed, "each field fixture has its count here");
    for (file, want) in FIELD {
        let report = dir.join(file);
        let (json, stderr) =
            symbolize_in_empty_dir("field-json", &["--json", "--verified-only"], &report);
        let records: serde_json::Value = serde_json::from_slice(&json).unwrap();
        let records = records.as_array().unwrap();
        assert_eq!(records.len() as u64, *want, "{file}: {records:#?}");
        assert!(
            stderr.contains(&format!("0 frame(s) resolved, {want} not")),
            "{file}: {stderr}"
        );
        for r in records {
            // A text report's frames by line; a JSON report's (`.ips`) by thread.
            let placed = r["line"].is_u64() || r["thread"].is_u64();
            // A debugger's `module!function+0x…` whose function no symbol file told has
            // no module offset.
            let by_name = r["line"]
                .as_u64()
                .and_then(|n| {
                    std::fs::read_to_string(&report)
                        .ok()?
                        .lines()
                        .nth(n as usize - 1)
                        .map(|l| l.contains('!'))
                })
                .unwrap_or(false);
            assert!(
                placed && (r["offset"].is_string() || by_name && r["offset"].is_null()),
                "{file}: {r}"
            );
            assert_eq!(r["unverified"], false, "{file}: {r}");
        }
        let input = std::fs::read(&report).unwrap();
        let (text, _) = symbolize_in_empty_dir("field-text", &["--verified-only"], &report);
        assert!(text == input, "{file}: changed where nothing resolved");
        // The same report with CRLF line ends and no newline at its end.
        let crlf_report = scratch("field-crlf").within(file);
        let mut crlf = String::from_utf8(input).unwrap().replace('\n', "\r\n");
        crlf.truncate(crlf.len() - 2);
        std::fs::write(&crlf_report, &crlf).unwrap();
        let (text, _) =
            symbolize_in_empty_dir("field-crlf-out", &["--verified-only"], &crlf_report);
        assert!(text == crlf.as_bytes(), "{file}: CRLF changed");
    }
}

/// Frames of `module` in `--json` records, keyed by offset: each offset's frames as
/// "function file:line" ("??:0" where the symbol file gives no source).
fn json_by_offset(json: &[u8], module: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
    let mut out = std::collections::BTreeMap::new();
    for r in doc.as_array().unwrap() {
        if r["module"] != module {
            continue;
        }
        let frames = r["frames"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| {
                format!(
                    "{} {}:{}",
                    f["function"].as_str().unwrap(),
                    f["file"].as_str().unwrap_or("??"),
                    f["line"].as_u64().unwrap_or(0)
                )
            })
            .collect();
        out.insert(r["offset"].as_str().unwrap().to_string(), frames);
    }
    out
}

/// An oracle's answers (llvm-symbolizer's, one row per frame, innermost first) keyed by
/// offset as [`json_by_offset`] keys ours: of the rows `keep` takes, the columns
/// `(offset, function, file:line:column)`.
fn tsv_by_offset(
    path: &Path,
    keep: impl Fn(&[&str]) -> bool,
    (offset, function, place): (usize, usize, usize),
) -> std::collections::BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut out: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for row in text.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = row.split('\t').collect();
        if keep(&f) {
            let at = &f[place][..f[place].rfind(':').unwrap()];
            out.entry(f[offset].to_string())
                .or_default()
                .push(format!("{} {at}", f[function]));
        }
    }
    out
}

/// A real data race, reported by ThreadSanitizer with `symbolize=0` (`#N <null> <null>
/// (race+0xOFF)`: no PC), resolves as TSan prints it with llvm-symbolizer 19: every
/// offset both name, with the inlined call, by function and file:line.
#[test]
fn a_tsan_report_resolves_as_llvm_symbolizer_reads_it() {
    let dir = fixtures().join("symbolize/tsan");
    let store = store_of(dir.join("race"), "symbolize-tsan");
    let o = dumpsyms_command()
        .args(["symbolize", "--json", "--no-debuginfod", "--store"])
        .arg(&store)
        .arg(dir.join("report.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let ours = json_by_offset(&o.stdout, "race");
    // The oracle: `#N function file:line:column (race+0xOFF)`, an inlined call's frames
    // on consecutive lines with one offset.
    let oracle_text = std::fs::read_to_string(dir.join("llvm-symbolized.txt")).unwrap();
    let mut oracle: Vec<(String, Vec<(String, String)>)> = Vec::new();
    let mut previous_number = u32::MAX;
    for line in oracle_text.lines() {
        let Some(rest) = line.trim_start().strip_prefix('#') else {
            continue;
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        let Some(offset) = words.iter().find_map(|w| w.strip_prefix("(race+")) else {
            continue;
        };
        let offset = offset.trim_end_matches(')').to_string();
        let number: u32 = words[0].parse().unwrap();
        let place = match words[2] {
            "<null>" => "??:0".to_string(),
            p => {
                let mut parts = p.rsplitn(3, ':');
                let (_col, line, file) =
                    (parts.next(), parts.next().unwrap(), parts.next().unwrap());
                format!("{file}:{line}")
            }
        };
        let frame = (words[1].to_string(), place);
        match oracle.last_mut() {
            Some((o, frames)) if *o == offset && number == previous_number + 1 => {
                frames.push(frame)
            }
            _ => oracle.push((offset, vec![frame])),
        }
        previous_number = number;
    }
    let aliases = aliases(&dir.join("race"));
    let same_function = |a: &str, b: &str| {
        a == b
            || aliases
                .iter()
                .any(|v| v.iter().any(|n| n == a) && v.iter().any(|n| n == b))
    };
    let mut compared = 0;
    for (offset, frames) in &oracle {
        let got = ours
            .get(offset)
            .unwrap_or_else(|| panic!("{offset}: {ours:#?}"));
        assert_eq!(got.len(), frames.len(), "{offset}: {got:?} vs {frames:?}");
        for (g, (function, place)) in got.iter().zip(frames) {
            let (g_function, g_place) = g.rsplit_once(' ').unwrap();
            assert!(
                same_function(g_function, function),
                "{offset}: {g} vs {function}"
            );
            // TSan's runtime has no line table: llvm-symbolizer names no file there.
            if place != "??:0" {
                assert_eq!(g_place, place, "{offset}");
            }
            compared += 1;
        }
    }
    assert!(compared >= 6, "{oracle:?}");
    assert!(
        ours.values().any(|f| f.len() == 2),
        "the inlined call: {ours:?}"
    );
}

/// A real process's stack in systemd-coredump's shape (`coredumpctl info`: build IDs on
/// `Module` lines of their own, frames `#N 0xPC function (module + 0xOFF)`, callers'
/// return addresses) resolves as llvm-symbolizer 19 reads each frame's address.
#[test]
fn a_coredump_stack_resolves_as_llvm_symbolizer_reads_it() {
    let dir = fixtures().join("symbolize/coredump");
    let store = store_of(
        fixtures().join("symbolize/ondevice/blocked"),
        "symbolize-coredump",
    );
    let o = dumpsyms_command()
        .args(["symbolize", "--json", "--no-debuginfod", "--store"])
        .arg(&store)
        .arg(dir.join("coredump.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let records = doc.as_array().unwrap();
    assert_eq!(records.len(), 6, "{records:#?}");
    // The build ID of each module comes from its `Module` line.
    assert!(
        records.iter().all(|r| r["build_id"].is_string()),
        "{records:#?}"
    );
    let module = records
        .iter()
        .map(|r| r["module"].as_str().unwrap())
        .find(|m| m.ends_with("/blocked"))
        .unwrap()
        .to_string();
    let ours = json_by_offset(&o.stdout, &module);
    // Columns: frame, module, offset, address asked, function, file:line:column.
    let oracle = tsv_by_offset(
        &dir.join("llvm-symbolizer.tsv"),
        |f| f[1] == module,
        (2, 4, 5),
    );
    assert_eq!(ours, oracle);
    assert!(oracle.len() >= 3);
}

/// A report naming a binary of this machine by its path and no build ID: an offset in
/// its code is resolved from it, marked unverified, with one warning; one outside its
/// code is not resolved (another build's offset would land anywhere); with
/// --verified-only neither is.
#[test]
fn local_files_the_report_does_not_identify_are_marked_or_refused() {
    let binary = fixtures().join("symbolize/asan/uaf");
    let here = scratch("symbolize-unverified");
    let report = here.join("report.txt");
    // A return address just past main's call (the ASan report's frame #1, plus one), and
    // a data address.
    std::fs::write(
        &report,
        format!(
            "{0}(+0xddf03) [0x55cf14361f03]\n{0}(+0xddf03) [0x55cf14361f03]\n{0}(+0x1476258) [0x1]\n",
            binary.display()
        ),
    )
    .unwrap();
    let (json, stderr) = symbolize_in_empty_dir("unverified", &["--json"], &report);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    let r = doc.as_array().unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0]["unverified"], true, "{}", r[0]);
    assert_eq!(r[0]["frames"][0]["function"], "main", "{}", r[0]);
    assert!(r[2]["frames"].as_array().unwrap().is_empty(), "{}", r[2]);
    assert_eq!(
        stderr
            .matches("found by name alone: the report does not identify it by build ID, and the answer is right only if it is the same build")
            .count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains("offset 0x1476258 lies outside the executable sections"),
        "{stderr}"
    );
    let (text, _) = symbolize_in_empty_dir("unverified-text", &[], &report);
    assert!(String::from_utf8(text).unwrap().contains("main at "));
    let (json, stderr) =
        symbolize_in_empty_dir("verified-only", &["--json", "--verified-only"], &report);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(
        doc.as_array()
            .unwrap()
            .iter()
            .all(|r| r["frames"].as_array().unwrap().is_empty()),
        "{doc}"
    );
    assert!(stderr.contains("--verified-only refuses"), "{stderr}");
    // A store's only build of a name, for a frame with no build ID: marked the same way.
    let store = store_of(&binary, "symbolize-unverified-store");
    let by_name = here.join("by-name.txt");
    std::fs::write(&by_name, "uaf+0xddf02\n").unwrap();
    let store = store.to_str().unwrap();
    let (json, stderr) = symbolize_in_empty_dir("by-name", &["--json", "--store", store], &by_name);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc[0]["unverified"], true, "{doc}");
    assert_eq!(doc[0]["frames"][0]["function"], "main", "{doc}");
    assert!(stderr.contains("found by name alone"), "{stderr}");
    let args = ["--json", "--verified-only", "--store", store];
    let (json, _) = symbolize_in_empty_dir("by-name-refused", &args, &by_name);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(doc[0]["frames"].as_array().unwrap().is_empty(), "{doc}");
}

/// A real stack walker's text (rust-minidump's minidump-stackwalk on a minidump of a
/// live process, walked through our CFI alone: `N  module + 0xOFF` for every frame)
/// resolves as llvm-symbolizer 19 reads the program's frames.
#[test]
fn stackwalker_text_resolves_as_llvm_symbolizer_reads_it() {
    let dir = fixtures().join("symbolize/stackwalk");
    let store = store_of(
        fixtures().join("bin/x86_64/chain-gcc-O2-nofp"),
        "symbolize-stackwalk",
    );
    let o = dumpsyms_command()
        .args(["symbolize", "--json", "--no-debuginfod", "--store"])
        .arg(&store)
        .arg(dir.join("stackwalk.txt"))
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // Every frame of the walk is found (the registers and `Found by` lines are not).
    let frames = std::fs::read_to_string(dir.join("stackwalk.txt"))
        .unwrap()
        .lines()
        .filter(|l| l.contains(" + 0x"))
        .count();
    assert_eq!(doc.as_array().unwrap().len(), frames);
    let ours = json_by_offset(&o.stdout, "chain-gcc-O2-nofp");
    // Columns: frame, offset, address asked, function, file:line:column.
    let oracle = tsv_by_offset(&dir.join("llvm-symbolizer.tsv"), |_| true, (1, 3, 4));
    assert_eq!(ours, oracle);
    assert!(oracle.len() >= 5);
}

/// A text that begins with `{` but is no JSON of the trace's shape (a shell prompt, a
/// log line holding a JSON object) is read as text: passed through, its frames counted
/// (before, it was taken for an on-device trace and failed with exit 1 and no output).
#[test]
fn a_text_starting_with_a_brace_is_text() {
    for report in [
        &b"{0}% ./app\n/lib/libc.so.6+0x2724a\n"[..],
        b"{\"level\":\"error\",\"msg\":\"crash\"}\n/lib/libc.so.6+0x2724a\n",
        b"{\"level\":\"error\"}",
    ] {
        let o = dumpsyms_command()
            .args(["symbolize", "--no-debuginfod", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(report)?;
                c.wait_with_output()
            })
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{err}");
        assert_eq!(o.stdout, report, "{err}");
        let frames = if report.ends_with(b"+0x2724a\n") {
            1
        } else {
            0
        };
        assert!(
            err.contains(&format!("0 frame(s) resolved, {frames} not")),
            "{err}"
        );
        assert!(!err.contains("on-device"), "{err}");
    }
}

/// rsyslog writes a message's newlines as `#012`, so a program's whole
/// `backtrace_symbols` output arrives as one line (seen in syslog excerpts of glibc's
/// `*** Error in` aborts on public trackers). The non-PIE backtrace above, joined so:
/// every frame is found and resolves as llvm-symbolizer reads it; the text output puts
/// each segment on a line of its own, followed by its frames; with nothing to resolve
/// from, the line comes back byte for byte.
#[test]
fn a_backtrace_logged_on_one_line_by_syslog() {
    let dir = fixtures().join("symbolize/backtrace");
    let oracle = backtrace_oracle(&dir);
    let report = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    let joined = format!(
        "Nov 28 10:00:00 host nopie[4242]: backtrace:#012{}\n",
        report.trim_end().replace('\n', "#012")
    );
    let work = scratch("symbolize-syslog");
    let path = work.join("syslog.txt");
    std::fs::write(&path, &joined).unwrap();
    let run = |cwd: &Path, args: &[&str]| {
        let o = dumpsyms_command()
            .current_dir(cwd)
            .args(["symbolize", "--no-debuginfod"])
            .args(args)
            .arg(&path)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        (o.stdout, String::from_utf8(o.stderr).unwrap())
    };
    let (json, _) = run(&dir, &["--json"]);
    assert_eq!(json_frames(&json, "./nopie"), oracle);
    let (text, _) = run(&dir, &[]);
    let text = String::from_utf8(text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "Nov 28 10:00:00 host nopie[4242]: backtrace:");
    assert_eq!(lines[1], "./nopie[0x401180]");
    assert!(
        lines[2].starts_with("    dump at ") && lines[2].ends_with("bt.c:7"),
        "{text}"
    );
    assert_eq!(lines[3], "./nopie[0x4011b4]");
    // Nothing to resolve from: byte for byte, one line; one frame, libc's `(+0x2724a)`.
    // The program's absolute addresses, with no binary at hand and no module map, are
    // nothing that can be placed, as `__libc_start_main+0x85`'s.
    let (same, stderr) = run(&work, &["--verified-only"]);
    assert_eq!(same, joined.as_bytes(), "{stderr}");
    assert!(stderr.contains("0 frame(s) resolved, 1 not"), "{stderr}");
}
