//! `dumpsyms symbolize` on frames printed as absolute addresses: placed in their
//! modules by the module map the report itself holds, checked against llvm-symbolizer
//! given the same module offsets; left unplaced and uncounted without a map.

use std::path::Path;

use crate::common::*;

/// The oracle of `fixtures/symbolize/maps` (see its `make.sh`): for each absolute frame
/// of `app` and `libbt.so`, (module, frames as `function file:line`, innermost first).
fn maps_oracle(dir: &Path) -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(dir.join("llvm-symbolizer.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    lines
        .chunks(2)
        .map(|pair| {
            let module: serde_json::Value = serde_json::from_str(pair[0]).unwrap();
            let answer: serde_json::Value = serde_json::from_str(pair[1]).unwrap();
            let frames = answer[0]["Symbol"]
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
                .collect();
            (module["Module"].as_str().unwrap().to_string(), frames)
        })
        .collect()
}

/// `--json` records of `app` and `libbt.so`, as [`maps_oracle`] gives them, and
/// whether each was marked unverified.
fn placed_frames(json: &[u8]) -> Vec<(String, Vec<String>, bool)> {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .filter_map(|r| {
            let module = r["module"].as_str()?.rsplit('/').next()?.to_string();
            if module != "app" && module != "libbt.so" {
                return None;
            }
            let frames = r["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let file = f["file"].as_str().unwrap_or("??");
                    let file = file.rsplit('/').next().unwrap();
                    format!("{} {file}:{}", f["function"].as_str().unwrap(), f["line"])
                })
                .collect();
            Some((module, frames, r["unverified"] == true))
        })
        .collect()
}

fn symbolize(report: &Path, args: &[&str]) -> (Vec<u8>, String) {
    // Each run in a directory of its own: the tests run at once.
    static RUNS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let run = RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    crate::symbolize::symbolize_in_empty_dir(&format!("symbolize-maps-cwd-{run}"), args, report)
}

/// A PIE program and its library print `./app(work+0x10)[0x55…]` (absolute addresses
/// only) and the process's memory map after them, as glibc's abort reports do. Each
/// frame is placed by the map (address less the module's first mapping) and resolved
/// from the binaries found by name (so marked unverified), as llvm-symbolizer reads
/// the same offsets. Without the map the same frames are neither resolved nor counted,
/// and the report comes back byte for byte.
#[test]
fn absolute_frames_are_placed_by_the_reports_memory_map() {
    let dir = fixtures().join("symbolize/maps");
    let oracle = maps_oracle(&dir);
    assert_eq!(oracle.len(), 4, "{oracle:?}");
    assert!(oracle.iter().any(|(_, f)| f.len() == 2), "an inlined call");
    let debug_dir = dir.to_str().unwrap();
    let (json, stderr) = symbolize(
        &dir.join("report.txt"),
        &["--json", "--debug-dir", debug_dir],
    );
    let got = placed_frames(&json);
    let want: Vec<_> = oracle.into_iter().map(|(m, f)| (m, f, true)).collect();
    assert_eq!(got, want, "{stderr}");

    let report = std::fs::read_to_string(dir.join("report.txt")).unwrap();
    let (head, _) = report.split_once("======= Memory map").unwrap();
    let bare = scratch("symbolize-maps-bare").within("report.txt");
    std::fs::write(&bare, head).unwrap();
    let (json, stderr) = symbolize(&bare, &["--json", "--debug-dir", debug_dir]);
    assert_eq!(placed_frames(&json), vec![], "{stderr}");
    assert!(stderr.contains("absolute addresses"), "{stderr}");
    let (text, _) = symbolize(&bare, &["--verified-only", "--debug-dir", debug_dir]);
    assert_eq!(String::from_utf8(text).unwrap(), head);
}

/// llvm-symbolizer's frames at `offset` in fixtures/macho/mac-x86_64-O2.tsv, as
/// [`placed_frames`] gives them.
fn macho_oracle(offset: &str) -> Vec<String> {
    let tsv = std::fs::read_to_string(fixtures().join("macho/mac-x86_64-O2.tsv")).unwrap();
    let row = tsv
        .lines()
        .find(|l| l.split('\t').next() == Some(offset))
        .unwrap();
    let cols: Vec<&str> = row.split('\t').collect();
    cols[3..]
        .chunks(3)
        .map(|f| format!("{} {}:{}", f[0], f[1].rsplit('/').next().unwrap(), f[2]))
        .collect()
}

/// `--json` records' frames, in order, as `function file:line`.
fn record_frames(json: &[u8]) -> Vec<Vec<String>> {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
    doc.as_array()
        .unwrap()
        .iter()
        .map(|r| {
            r["frames"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| {
                    let file = f["file"]
                        .as_str()
                        .unwrap_or("??")
                        .rsplit('/')
                        .next()
                        .unwrap();
                    format!("{} {file}:{}", f["function"].as_str().unwrap(), f["line"])
                })
                .collect()
        })
        .collect()
}

/// [`record_frames`] for a PDB's module, as llvm-symbolizer names its frames: an
/// inlined function by its IPI record's name alone, where ours carries its parameter
/// list as the procedures' do (as Mozilla's dumper spells INLINE_ORIGIN names), so
/// the list is dropped from inlined frames before they are compared.
fn record_frames_pdb(json: &[u8]) -> Vec<Vec<String>> {
    let doc: serde_json::Value = serde_json::from_slice(json).unwrap();
    let mut all = record_frames(json);
    for (r, frames) in doc.as_array().unwrap().iter().zip(&mut all) {
        for (f, shown) in r["frames"]
            .as_array()
            .unwrap()
            .iter()
            .zip(frames.iter_mut())
        {
            let name = f["function"].as_str().unwrap();
            if f["inlined"] == true
                && let Some(open) = name.find('(')
            {
                *shown = shown.replacen(name, &name[..open], 1);
            }
        }
    }
    all
}

/// An Apple `.crash` report whose frames have symbols gives their absolute PCs only;
/// its `Binary Images` place them (and give the image's UUID, which the Mach-O found
/// by name must have). Checked against llvm-symbolizer on the dSYM at the same offsets.
#[test]
fn apple_frames_are_placed_by_binary_images_and_identified_by_uuid() {
    let dir = fixtures().join("symbolize/apple");
    let macho = fixtures().join("macho");
    let args = ["--json", "--debug-dir", macho.to_str().unwrap()];
    let (json, stderr) = symbolize(&dir.join("crash.txt"), &args);
    let frames = record_frames(&json);
    // Frames 0 and 1 of the program, 2 of dyld (placed, no symbols here); 3 of an image
    // the list does not hold: no frame. Thread 1: the same two as offsets.
    assert_eq!(frames.len(), 5, "{stderr}");
    assert_eq!(frames[3..], [macho_oracle("3fa"), macho_oracle("49a")]);
    assert_eq!(frames[0], macho_oracle("3fa"));
    assert_eq!(
        frames[1],
        macho_oracle("49a"),
        "a return address, one byte back"
    );
    assert!(frames[2].is_empty());
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    for r in [&doc[0], &doc[3]] {
        assert_eq!(r["build_id"], "4c4c44e555553144a134288f106b6499");
        assert_eq!(r["unverified"], false, "identified by its UUID");
    }

    // Another build's UUID: the binary found by name is not it.
    let other = scratch("symbolize-apple-other").within("crash.txt");
    let text = std::fs::read_to_string(dir.join("crash.txt")).unwrap();
    std::fs::write(&other, text.replace("<4C4C44E5-", "<4C4C44E6-")).unwrap();
    let (json, stderr) = symbolize(&other, &args);
    assert!(record_frames(&json).iter().all(Vec::is_empty), "{stderr}");
}

/// The same crash as `.ips` JSON: `usedImages` and `imageOffset`. `--json` gives the
/// frames; the text output is the report with Apple's symbol fields added and each
/// inlined call a frame of its own, `"inline": true`, before its caller.
#[test]
fn an_ips_report_is_resolved_by_image_uuid_and_written_back_as_json() {
    let dir = fixtures().join("symbolize/apple");
    let macho = fixtures().join("macho");
    let debug_dir = ["--debug-dir", macho.to_str().unwrap()];
    let (json, stderr) = symbolize(
        &dir.join("report.ips"),
        &[&["--json"], &debug_dir[..]].concat(),
    );
    let frames = record_frames(&json);
    assert_eq!(
        frames.len(),
        3,
        "the image of no identity is no frame: {stderr}"
    );
    assert_eq!(frames[0], macho_oracle("3fa"));
    assert_eq!(frames[1], macho_oracle("49a"));

    let (text, _) = symbolize(&dir.join("report.ips"), &debug_dir);
    let text = String::from_utf8(text).unwrap();
    let original = std::fs::read_to_string(dir.join("report.ips")).unwrap();
    let (header, body) = text.split_once('\n').unwrap();
    assert_eq!(
        header,
        original.lines().next().unwrap(),
        "the header line as it came"
    );
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    let written = body["threads"][0]["frames"].as_array().unwrap();
    let shown: Vec<String> = written
        .iter()
        .filter(|f| f["imageIndex"] == 0)
        .map(|f| {
            let file = f["sourceFile"]
                .as_str()
                .unwrap()
                .rsplit('/')
                .next()
                .unwrap();
            format!(
                "{} {file}:{}",
                f["symbol"].as_str().unwrap(),
                f["sourceLine"]
            )
        })
        .collect();
    assert_eq!(shown, [macho_oracle("3fa"), macho_oracle("49a")].concat());
    let inline: Vec<bool> = written.iter().map(|f| f["inline"] == true).collect();
    assert_eq!(inline, [true, true, false, true, false, false, false]);
    // The outer frame's offset in its function: the PC less the function's start.
    assert!(written[2]["symbolLocation"].is_u64() && written[0].get("symbolLocation").is_none());
    // dyld's frame keeps what Apple gave it.
    assert_eq!(written[5]["symbol"], "start");

    // Nothing to resolve from: byte for byte.
    let (same, _) = symbolize(&dir.join("report.ips"), &["--verified-only"]);
    assert_eq!(String::from_utf8(same).unwrap(), original);
}

/// The same `.ips` as it is met pasted into a tracker or saved from a viewer: what
/// follows the body (a blank line and the hardware summary Apple's dialog shows under
/// it) does not keep the two documents from being read; it comes back as it came,
/// after the resolved body, and byte for byte when nothing resolves.
#[test]
fn an_ips_report_with_text_after_its_body_is_still_read() {
    let dir = fixtures().join("symbolize/apple");
    let macho = fixtures().join("macho");
    let debug_dir = ["--debug-dir", macho.to_str().unwrap()];
    let tail = "\nModel: MacBookPro18,3, BootROM 7459.141.1, proc 10:8:2 processors, 16 GB\nGraphics: Apple M1 Pro, Apple M1 Pro, Built-In\n";
    let original = std::fs::read_to_string(dir.join("report.ips")).unwrap() + tail;
    let report = scratch("symbolize-ips-tail").within("report.ips");
    std::fs::write(&report, &original).unwrap();
    let (json, stderr) = symbolize(&report, &[&["--json"], &debug_dir[..]].concat());
    let frames = record_frames(&json);
    assert_eq!(frames.len(), 3, "{stderr}");
    assert_eq!(frames[0], macho_oracle("3fa"));
    let (text, _) = symbolize(&report, &debug_dir);
    let text = String::from_utf8(text).unwrap();
    assert!(text.ends_with(tail), "{text}");
    let body = text.split_once('\n').unwrap().1;
    let body = &body[..body.len() - tail.len()];
    let body: serde_json::Value = serde_json::from_str(body).unwrap();
    assert!(body["threads"][0]["frames"][0]["sourceFile"].is_string());
    let (same, _) = symbolize(&report, &["--verified-only"]);
    assert_eq!(String::from_utf8(same).unwrap(), original);
}

/// llvm-symbolizer's frames at `rva` in fixtures/windows/oracle/msvc-x86_64.tsv.
fn pdb_oracle(rva: &str) -> Vec<String> {
    let tsv = std::fs::read_to_string(fixtures().join("windows/oracle/msvc-x86_64.tsv")).unwrap();
    let row = tsv
        .lines()
        .find(|l| l.split('\t').next() == Some(rva))
        .unwrap();
    let cols: Vec<&str> = row.split('\t').collect();
    cols[2..]
        .chunks(3)
        .map(|f| format!("{} {}:{}", f[0], f[1].rsplit('/').next().unwrap(), f[2]))
        .collect()
}

/// winedbg's backtrace names the module as Wine does (`app`, for `app.exe`) with the
/// frame's RVA, or its absolute PC alone, which the `Modules:` list places. Resolved
/// from the image found by that name with an extension, against llvm-symbolizer on its
/// PDB.
#[test]
fn wine_frames_resolve_by_module_and_rva_or_through_its_modules_list() {
    let dir = fixtures().join("symbolize/wine");
    let image = fixtures().join("windows/msvc-x86_64");
    let (json, stderr) = symbolize(
        &dir.join("report.txt"),
        &["--json", "--debug-dir", image.to_str().unwrap()],
    );
    let frames = record_frames_pdb(&json);
    assert_eq!(frames.len(), 5, "{stderr}");
    assert_eq!(frames[0], pdb_oracle("113e"));
    assert_eq!(
        frames[1],
        pdb_oracle("1223"),
        "a return address, one byte back"
    );
    assert_eq!(frames[2], pdb_oracle("1140"), "placed by `Modules:`");
    assert!(frames[3].is_empty() && frames[4].is_empty(), "{frames:?}");
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc[2]["offset"], "0x1141");
    assert_eq!(doc[0]["unverified"], true, "found by name alone");
}

/// GNU addr2line's frames in fixtures/symbolize/esp32/addr2line.txt, per PC.
fn addr2line_oracle(dir: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(dir.join("addr2line.txt")).unwrap();
    let mut out: Vec<Vec<String>> = Vec::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        if line.starts_with("0x") {
            out.push(Vec::new());
            continue;
        }
        let place = lines.next().unwrap();
        let (file, number) = place.rsplit_once(':').unwrap();
        let file = file.rsplit('/').next().unwrap();
        out.last_mut()
            .unwrap()
            .push(format!("{line} {file}:{number}"));
    }
    out
}

/// ESP-IDF's `Backtrace: 0xPC:0xSP …` gives several absolute PCs on one line, in a
/// firmware that runs where it was linked: resolved in the ELF given with `--firmware`
/// when its SHA-256 starts with the report's `ELF file SHA256:`, as addr2line reads
/// them; another build's file answers nothing; without `--firmware`, no frame.
#[test]
fn an_esp_idf_backtrace_resolves_in_the_firmware_it_names() {
    let dir = fixtures().join("symbolize/esp32");
    let elf = fixtures().join("symbolize/backtrace/nopie");
    let report = dir.join("report.txt");
    let firmware = ["--firmware", elf.to_str().unwrap()];
    let (json, stderr) = symbolize(&report, &[&["--json"], &firmware[..]].concat());
    assert_eq!(record_frames(&json), addr2line_oracle(&dir), "{stderr}");
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert!(
        doc.as_array()
            .unwrap()
            .iter()
            .all(|r| r["unverified"] == false)
    );

    let (text, _) = symbolize(&report, &firmware);
    let text = String::from_utf8(text).unwrap();
    let backtrace = text
        .lines()
        .position(|l| l.starts_with("Backtrace:"))
        .unwrap();
    let next: Vec<&str> = text.lines().skip(backtrace + 1).take(2).collect();
    assert!(
        next[0].starts_with("    0x40117f: dump at ") && next[0].ends_with("bt.c:7"),
        "{text}"
    );
    assert!(next[1].starts_with("    0x4011b3: inner at "), "{text}");

    let other = scratch("symbolize-esp-other").within("report.txt");
    let original = std::fs::read_to_string(&report).unwrap();
    let sha = original
        .lines()
        .find_map(|l| l.strip_prefix("ELF file SHA256: "))
        .unwrap();
    std::fs::write(&other, original.replace(sha, "0123456789abcdef")).unwrap();
    let (json, stderr) = symbolize(&other, &[&["--json"], &firmware[..]].concat());
    assert!(record_frames(&json).iter().all(Vec::is_empty), "{stderr}");
    assert!(stderr.contains("another build, not resolved"), "{stderr}");

    let (same, stderr) = symbolize(&report, &[]);
    assert_eq!(String::from_utf8(same).unwrap(), original);
    assert!(stderr.contains("0 frame(s) resolved, 0 not"), "{stderr}");
}

/// The Windows Event Log's Application Error names the module on one line and its
/// offset on another: resolved as llvm-symbolizer reads the RVA in the PDB.
#[test]
fn a_windows_event_logs_fault_offset_resolves_in_its_faulting_module() {
    let report = scratch("symbolize-wer").within("event.txt");
    // The Event Log's text of event 1000, as pasted into trackers.
    std::fs::write(
        &report,
        "Log Name:      Application\r\nSource:        Application Error\r\nEvent ID:      1000\r\n\
         Description:\r\nFaulting application name: app.exe, version: 0.0.0.0, time stamp: 0x66a1b2c3\r\n\
         Faulting module name: app.exe, version: 0.0.0.0, time stamp: 0x66a1b2c3\r\n\
         Exception code: 0xc0000005\r\nFault offset: 0x000000000000113e\r\n\
         Faulting process id: 0x1a2c\r\nFaulting application path: C:\\app\\app.exe\r\n",
    )
    .unwrap();
    let image = fixtures().join("windows/msvc-x86_64");
    let (json, stderr) = symbolize(&report, &["--json", "--debug-dir", image.to_str().unwrap()]);
    assert_eq!(
        record_frames_pdb(&json),
        vec![pdb_oracle("113e")],
        "{stderr}"
    );
}

/// Crashlytics' iOS stack as its console shows it in another language, without the
/// export's header: the unpadded address column is the offset into the binary, read
/// as such whatever the heading says, as llvm-symbolizer reads it in the dSYM.
#[test]
fn a_localized_crashlytics_stack_is_read_by_its_shape() {
    let report = fixtures().join("symbolize/field/crashlytics-localized.txt");
    let macho = fixtures().join("macho");
    let (json, stderr) = symbolize(&report, &["--json", "--debug-dir", macho.to_str().unwrap()]);
    let frames = record_frames(&json);
    assert_eq!(frames.len(), 6, "{stderr}");
    assert_eq!(frames[0], macho_oracle("3fa"));
    assert_eq!(
        frames[1],
        macho_oracle("49a"),
        "a return address, one byte back"
    );
    assert_eq!(frames[5], macho_oracle("3fa"));
}

/// WinDbg's `kn` rows whose call site is `app+0x…` (the module had no symbols when the
/// stack was taken) and a crash logger's `app.exe+000113E` rows resolve as
/// llvm-symbolizer reads those RVAs in the PDB; the first row of each is where the
/// thread stopped, the others return addresses (one byte back). WinDbg's own
/// `app!recurse+0x21` rows resolve through the function of that name (`recurse(int)`
/// at 0x1100: RVA 0x1121, a return address); `app!main+0x44` names no function of the
/// module: a frame that resolves to nothing.
#[test]
fn windbg_and_crash_logger_rows_resolve_in_their_module() {
    let dir = scratch("symbolize-windbg");
    let windbg = dir.join("windbg.txt");
    std::fs::write(
        &windbg,
        "0:000> kn\n # Child-SP          RetAddr               Call Site\n\
         00 000000a1`2b8fe6b8 00007ff6`8a2b1224     app+0x113e\n\
         01 000000a1`2b8fe6c0 00007ff6`8a2b5678     app+0x1224\n\
         02 000000a1`2b8fe760 00007ffc`1d2f7034     app!recurse+0x21 [C:\\src\\app.cpp @ 63]\n\
         03 000000a1`2b8fe7a0 00007ffc`1f0c2651     app!main+0x44\n",
    )
    .unwrap();
    let logger = dir.join("logger.txt");
    std::fs::write(
        &logger,
        "[ 0] 0x7FF68A2B113E   app.exe+000113E   mov eax, [rcx]\n\
         [ 1] 0x7FF68A2B1224   app.exe+0001224\n",
    )
    .unwrap();
    let image = fixtures().join("windows/msvc-x86_64");
    let by_name = vec![pdb_oracle("1120"), Vec::new()];
    for (report, more) in [(&windbg, by_name), (&logger, Vec::new())] {
        let (json, stderr) = symbolize(report, &["--json", "--debug-dir", image.to_str().unwrap()]);
        let mut want = vec![pdb_oracle("113e"), pdb_oracle("1223")];
        want.extend(more);
        assert_eq!(
            record_frames_pdb(&json),
            want,
            "{}: {stderr}",
            report.display()
        );
    }
    // The text: WinDbg's row as it was, source tail and all, then what it resolves to;
    // the row naming no function of the module as it was, and nothing after it.
    let (text, _) = symbolize(&windbg, &["--debug-dir", image.to_str().unwrap()]);
    let text = String::from_utf8(text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let row = lines
        .iter()
        .position(|l| l.contains("app!recurse"))
        .unwrap();
    assert!(
        lines[row].ends_with("app!recurse+0x21 [C:\\src\\app.cpp @ 63]"),
        "{text}"
    );
    let below = lines[row + 1].trim_start();
    assert!(
        below.starts_with("recurse(int) at ") && below.ends_with("app.cpp:63"),
        "{text}"
    );
    assert!(
        lines.last().unwrap().ends_with("     app!main+0x44"),
        "{text}"
    );
}

/// A Flutter app's non-symbolic Dart trace gives `virt`, the ELF address in its AOT
/// snapshot `libapp.so`, which the trace's `build_id:` identifies. A library built here
/// stands in for the snapshot (a Dart toolchain is not here): resolved as
/// llvm-symbolizer reads the same address.
#[test]
fn a_flutter_dart_trace_resolves_in_libapp_by_its_build_id() {
    let maps = fixtures().join("symbolize/maps");
    let dir = scratch("symbolize-dart");
    std::fs::copy(maps.join("libbt.so"), dir.join("libapp.so")).unwrap();
    let dumped = dumpsyms_command()
        .arg(maps.join("libbt.so"))
        .output()
        .unwrap();
    let dumped = String::from_utf8(dumped.stdout).unwrap();
    let id = dumped
        .lines()
        .find_map(|l| l.strip_prefix("INFO CODE_ID "))
        .unwrap()
        .to_ascii_lowercase();
    let (module, oracle) = &maps_oracle(&maps)[0];
    assert_eq!(module, "libbt.so");
    let report = dir.join("trace.txt");
    std::fs::write(
        &report,
        format!(
            "*** *** *** *** *** *** *** *** *** *** *** *** *** *** *** ***\n\
             pid: 1234, tid: 5678, name io.flutter.1.ui\n\
             os: android arch: arm64 comp: yes sim: no\n\
             build_id: '{id}'\n\
             isolate_dso_base: 7a3cf74000, vm_dso_base: 7a3cf74000\n\
             isolate_instructions: 7a3cf75000, vm_instructions: 7a3cf75000\n    \
             #00 abs 0000007a3cf7516c virt 000000000000116c _kDartIsolateSnapshotInstructions+0x16c\n    \
             #01 abs 0000007a3cf7516d virt 000000000000116d _kDartIsolateSnapshotInstructions+0x16d\n"
        ),
    )
    .unwrap();
    let (json, stderr) = symbolize(&report, &["--json", "--debug-dir", dir.to_str().unwrap()]);
    assert_eq!(
        record_frames(&json),
        vec![oracle.clone(), oracle.clone()],
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc[0]["build_id"], id.as_str());
    assert_eq!(doc[1]["unverified"], false, "identified by its build ID");
}

/// Crashlytics' iOS export prints Apple's frame shape with the offset into the binary
/// where Apple prints the PC: resolved as offsets (from the Mach-O found by name, so
/// marked), against llvm-symbolizer on the dSYM; its `???` frame is none.
#[test]
fn crashlytics_ios_frames_are_binary_offsets() {
    let dir = fixtures().join("symbolize/apple");
    let macho = fixtures().join("macho");
    let args = ["--json", "--debug-dir", macho.to_str().unwrap()];
    let (json, stderr) = symbolize(&dir.join("crashlytics.txt"), &args);
    let frames = record_frames(&json);
    assert_eq!(frames.len(), 3, "{stderr}");
    assert_eq!(frames[..2], [macho_oracle("3fa"), macho_oracle("49a")]);
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc[0]["unverified"], true, "found by name alone");
    // The shape decides, not the heading: under Apple's own heading the unpadded
    // column is still an offset, and Apple's padded PCs are absolute, which no list
    // places here.
    let text = std::fs::read_to_string(dir.join("crashlytics.txt")).unwrap();
    let headed: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{}\n", l.replace("Crashed: ", "Thread 0 Crashed:: ")))
        .collect();
    let apple = scratch("symbolize-not-crashlytics").within("crash.txt");
    std::fs::write(&apple, &headed).unwrap();
    let (json, stderr) = symbolize(&apple, &args);
    assert_eq!(record_frames(&json)[..2], frames[..2], "{stderr}");
    let padded = headed
        .replace(" 0x3fa ", " 0x00000001000003fa ")
        .replace(" 0x49b ", " 0x000000010000049b ")
        .replace(" 0x6345 ", " 0x00007ff80a1c6345 ");
    std::fs::write(&apple, padded).unwrap();
    let (json, stderr) = symbolize(&apple, &args);
    assert_eq!(record_frames(&json).len(), 0, "{stderr}");
}
