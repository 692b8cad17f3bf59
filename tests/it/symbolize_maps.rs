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
    let o = dumpsyms_command()
        .current_dir(scratch(&format!("symbolize-maps-cwd-{run}")))
        .args(["symbolize", "--no-debuginfod"])
        .args(args)
        .arg(report)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    (o.stdout, String::from_utf8(o.stderr).unwrap())
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
    let bare = scratch("symbolize-maps-bare").join("report.txt");
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
    // the list does not hold: no frame.
    assert_eq!(frames.len(), 3, "{stderr}");
    assert_eq!(frames[0], macho_oracle("3fa"));
    assert_eq!(
        frames[1],
        macho_oracle("49a"),
        "a return address, one byte back"
    );
    assert!(frames[2].is_empty());
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc[0]["build_id"], "4c4c44e555553144a134288f106b6499");
    assert_eq!(doc[0]["unverified"], false, "identified by its UUID");

    // Another build's UUID: the binary found by name is not it.
    let other = scratch("symbolize-apple-other").join("crash.txt");
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
    let frames = record_frames(&json);
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
