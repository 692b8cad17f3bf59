//! Paths that an input names, not the user (a DWARF file table's sources hashed for
//! `{digest}`, a mapping file, `$HOME/.dump_syms/config`, a debug map's static
//! libraries, a package's member names), and a report still arriving: each within the
//! bounds every input has (exit 0/1/2, no signal, 10 s optimized, 512 MB, output
//! within 100 times the input plus 16 MB), with no FIFO or device opened blocking.
//! Each case was reproduced against the commit before the fix; the comments say what
//! it cost there.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// What one run cost.
struct Cost {
    code: Option<i32>,
    wall: Duration,
    peak_rss: u64,
    stdout: Vec<u8>,
    stderr: String,
}

/// 10 s for an optimized build; an unoptimized one is given eight times as long.
fn time_limit() -> Duration {
    if cfg!(debug_assertions) {
        Duration::from_secs(80)
    } else {
        Duration::from_secs(10)
    }
}

/// Runs `cmd` (a dumpsyms command) under GNU time with stdin closed, killed (and the
/// test failed) if it runs past the time limit; what it cost.
fn run(cmd: &mut Command, work: &Path) -> Cost {
    let rss_path = work.join("rss.txt");
    let out_path = work.join("out.txt");
    let err_path = work.join("err.txt");
    let program = cmd.get_program().to_owned();
    let args: Vec<_> = cmd.get_args().map(|a| a.to_owned()).collect();
    let mut timed = Command::new("/usr/bin/time");
    timed
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_path)
        .arg(program)
        .args(&args)
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap());
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => timed.env(k, v),
            None => timed.env_remove(k),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        timed.current_dir(dir);
    }
    let started = Instant::now();
    let mut child = timed
        .spawn()
        .expect("GNU time (/usr/bin/time, Debian's `time`) runs dumpsyms to measure it");
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > time_limit() + Duration::from_secs(5) {
            let _ = child.kill();
            let _ = Command::new("pkill").arg("-f").arg(&rss_path).status();
            panic!("{args:?} did not finish in {:?}", time_limit());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let wall = started.elapsed();
    let rss = std::fs::read_to_string(&rss_path).unwrap_or_default();
    // GNU time writes "Command exited with non-zero status N" before the figure.
    let kb: u64 = rss
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .unwrap_or(0);
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    let code = if stderr.contains("Command terminated by signal") {
        None
    } else {
        status.code()
    };
    Cost {
        code,
        wall,
        peak_rss: kb * 1024,
        stdout: std::fs::read(&out_path).unwrap(),
        stderr,
    }
}

/// The bounds every run keeps, whatever it was given.
fn assert_bounded(what: &str, cost: &Cost, input_len: u64) {
    assert!(
        matches!(cost.code, Some(0..=2)),
        "{what}: exit {:?}: {:.2000}",
        cost.code,
        cost.stderr
    );
    assert!(!cost.stderr.contains("panicked"), "{what}: {}", cost.stderr);
    assert!(
        cost.wall <= time_limit(),
        "{what}: {:?}: {:.2000}",
        cost.wall,
        cost.stderr
    );
    assert!(
        cost.peak_rss <= 512 << 20,
        "{what}: {} MB",
        cost.peak_rss >> 20
    );
    assert!(
        cost.stdout.len() as u64 <= input_len * 100 + (16 << 20),
        "{what}: {} bytes out",
        cost.stdout.len()
    );
}

fn mkfifo(path: &Path) {
    let ok = Command::new("mkfifo").arg(path).status().unwrap().success();
    assert!(ok, "mkfifo {}", path.display());
}

fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path).unwrap().set_len(len).unwrap();
}

/// `peers/mapping-app`'s three sources (`gone/c.c`, `src/a.c`, `src/b.h` under
/// `/tmp/dumpsyms-mapping/`), moved by `--prefix-map` under `dir`.
fn mapped_app(dir: &Path, dest: &str) -> Command {
    let mut cmd = dumpsyms_command();
    cmd.arg("-v")
        .arg("--prefix-map")
        .arg(format!("/tmp/dumpsyms-mapping/={}/", dir.display()))
        .arg(format!("--mapping-src={}/(.*)", dir.display()))
        .arg(format!("--mapping-dest={dest}"))
        .arg(fixtures().join("peers/mapping-app"));
    cmd
}

/// A DWARF that names a FIFO nobody writes, a link to `/dev/zero` and a 4 GiB sparse
/// file as its sources: each left unmapped with a warning naming it, at once. Before:
/// the FIFO blocked for ever, `/dev/zero` grew past 4.5 GB, the sparse file cost
/// 4.2 GB and 23 s.
#[test]
fn sources_hashed_for_a_digest_are_opened_without_blocking_and_bounded() {
    let work = scratch("named-digest");
    let dir = work.join("tree");
    std::fs::create_dir_all(dir.join("gone")).unwrap();
    std::fs::create_dir_all(dir.join("src")).unwrap();
    mkfifo(&dir.join("gone/c.c"));
    std::os::unix::fs::symlink("/dev/zero", dir.join("src/a.c")).unwrap();
    sparse(&dir.join("src/b.h"), 4 << 30);
    let cost = run(&mut mapped_app(&dir, "x:{digest}/{1}"), &work);
    let input_len = std::fs::metadata(fixtures().join("peers/mapping-app"))
        .unwrap()
        .len();
    assert_bounded("digest", &cost, input_len);
    assert_eq!(cost.code, Some(0), "{}", cost.stderr);
    for why in [
        "c.c: not mapped: cannot read it for its digest: it is a FIFO",
        "a.c: not mapped: cannot read it for its digest: it is a character device",
        "b.h: not mapped: cannot read it for its digest: it is 4294967296 bytes",
    ] {
        assert!(cost.stderr.contains(why), "{why}: {}", cost.stderr);
    }
    let out = String::from_utf8_lossy(&cost.stdout);
    assert!(
        out.contains(&format!("FILE 1 {}/src/a.c", dir.display())),
        "{out}"
    );

    // A real source is still hashed, streamed (its SHA-512 as sha512sum gives it).
    std::fs::remove_file(dir.join("src/a.c")).unwrap();
    std::fs::write(dir.join("src/a.c"), b"int a;\n").unwrap();
    let cost = run(&mut mapped_app(&dir, "x:{digest}/{1}"), &work);
    let sum = Command::new("sha512sum")
        .arg(dir.join("src/a.c"))
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    let sum = sum.split_whitespace().next().unwrap();
    let out = String::from_utf8_lossy(&cost.stdout);
    assert!(out.contains(&format!(" x:{sum}/src/a.c\n")), "{out}");
    std::fs::remove_dir_all(&work).unwrap();
}

/// A template that makes every path 128 KB long (`{digest}` a thousand times) leaves
/// each path as it was, with a warning: before, a 50,000-source program grew to
/// 5.4 GB and aborted.
#[test]
fn a_mapped_path_has_a_length_bound() {
    let work = scratch("named-long");
    let dir = work.join("tree");
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("src/a.c"), b"int a;\n").unwrap();
    let cost = run(&mut mapped_app(&dir, &"{digest}".repeat(1000)), &work);
    assert_eq!(cost.code, Some(0), "{}", cost.stderr);
    assert!(
        cost.stderr.contains("longer than 8192 bytes"),
        "{}",
        cost.stderr
    );
    let out = String::from_utf8_lossy(&cost.stdout);
    assert!(
        out.contains(&format!("FILE 1 {}/src/a.c", dir.display())),
        "{out}"
    );
    assert!(out.len() < 64 << 10, "{}", out.len());
    std::fs::remove_dir_all(&work).unwrap();
}

/// 10,000 mapping rules over a program's paths: the rules are searched as sets, a pass
/// per path, the first match still winning.
#[test]
fn thousands_of_rules_keep_the_first_match() {
    let work = scratch("named-rules");
    let mut rules: Vec<serde_json::Value> = (0..10_000)
        .map(|n| serde_json::json!({"source": format!("/no/such/prefix/{n}/(.*)"), "destination": "never/{1}"}))
        .collect();
    rules.push(serde_json::json!({"source": "/src/(a)\\.c$", "destination": "first/{1}"}));
    rules.push(serde_json::json!({"source": "/src/(.*)", "destination": "second/{1}"}));
    let file = work.join("mapping.json");
    std::fs::write(
        &file,
        serde_json::to_vec(&serde_json::json!({"mappings": rules})).unwrap(),
    )
    .unwrap();
    let mut cmd = dumpsyms_command();
    cmd.arg("--mapping-file")
        .arg(&file)
        .arg(fixtures().join("peers/mapping-app"));
    let cost = run(&mut cmd, &work);
    assert_eq!(cost.code, Some(0), "{}", cost.stderr);
    let out = String::from_utf8_lossy(&cost.stdout);
    assert!(out.contains("FILE 1 first/a\n"), "{out}");
    assert!(out.contains("FILE 2 second/b.h\n"), "{out}");
    std::fs::remove_dir_all(&work).unwrap();
}

/// A mapping file that is a FIFO, or a link to `/dev/zero`: refused at once, the run
/// failing with the file named (Mozilla's dumper stops on a mapping file it cannot
/// read). Before: the FIFO hung, `/dev/zero` grew past 525 MB.
#[test]
fn a_mapping_file_that_is_no_file_is_refused() {
    let work = scratch("named-mapping-file");
    let fifo = work.join("fifo.json");
    mkfifo(&fifo);
    let zero = work.join("zero.json");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    for (file, why) in [(&fifo, "is a FIFO"), (&zero, "is a character device")] {
        let mut cmd = dumpsyms_command();
        cmd.arg("--mapping-file")
            .arg(file)
            .arg(fixtures().join("peers/mapping-app"));
        let cost = run(&mut cmd, &work);
        assert_bounded("mapping file", &cost, 0);
        assert_eq!(cost.code, Some(1), "{}", cost.stderr);
        assert!(cost.stderr.contains(why), "{}", cost.stderr);
    }
    std::fs::remove_dir_all(&work).unwrap();
}

/// `$HOME/.dump_syms/config` as a FIFO or a link to `/dev/zero`: an ELF's dump does not
/// read it at all, a PE's (which may ask a symbol server) refuses it with a warning.
/// Before: every run hung on the FIFO, and `/dev/zero` cost 1 GB.
#[test]
fn the_config_file_is_read_only_when_needed_and_never_blocking() {
    let work = scratch("named-config");
    let home = work.join("home");
    std::fs::create_dir_all(home.join(".dump_syms")).unwrap();
    let config = home.join(".dump_syms/config");
    let pe = fixtures().join("windows/msvc-x86_64-Od/app.exe");
    for make in [&(|p: &Path| mkfifo(p)) as &dyn Fn(&Path), &|p: &Path| {
        std::os::unix::fs::symlink("/dev/zero", p).unwrap()
    }] {
        let _ = std::fs::remove_file(&config);
        make(&config);
        for (input, warned) in [
            (fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"), false),
            (pe.clone(), true),
        ] {
            let mut cmd = dumpsyms_command();
            cmd.env("HOME", &home)
                .env_remove("_NT_SYMBOL_PATH")
                .arg(&input);
            let cost = run(&mut cmd, &work);
            assert_bounded("config", &cost, std::fs::metadata(&input).unwrap().len());
            assert!(cost.stdout.starts_with(b"MODULE "), "{}", cost.stderr);
            assert_eq!(
                cost.stderr.contains(".dump_syms/config: "),
                warned,
                "{}: {}",
                input.display(),
                cost.stderr
            );
        }
    }
    std::fs::remove_dir_all(&work).unwrap();
}

/// `-o` through a dangling link into a directory that does not exist fails, and makes
/// no directory: before, a link to `/nonexistent/x.sym` created `/nonexistent/`.
#[test]
fn output_through_a_dangling_link_creates_no_directory() {
    let work = scratch("named-output-link");
    let far = work.join("nowhere/deeper/x.sym");
    let link = work.join("out.sym");
    std::os::unix::fs::symlink(&far, &link).unwrap();
    let out = dumpsyms_command()
        .arg("-o")
        .arg(&link)
        .arg(fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(!work.join("nowhere").exists());
    std::fs::remove_dir_all(&work).unwrap();
}

/// The header of an `ar` member.
fn ar_header(name: &str, size: u64) -> Vec<u8> {
    let h = format!(
        "{name:<16}{:<12}{:<6}{:<6}{:<8}{size:<10}`\n",
        0, 0, 0, "100644"
    );
    assert_eq!(h.len(), 60);
    h.into_bytes()
}

/// A `.deb` whose second member's BSD long name claims 700 MiB: a named failure, read
/// by position. Before: read whole, 725 MB from an 8 KB file.
#[test]
fn a_package_member_name_that_lies_is_not_read() {
    let work = scratch("named-deb");
    let mut deb = b"!<arch>\n".to_vec();
    deb.extend(ar_header("debian-binary", 4));
    deb.extend(b"2.0\n");
    deb.extend(ar_header(
        &format!("#1/{}", 700u64 << 20),
        (700u64 << 20) + 8,
    ));
    deb.extend(vec![b'x'; 8000]);
    let path = work.join("app.deb");
    std::fs::write(&path, &deb).unwrap();
    let mut cmd = dumpsyms_command();
    cmd.arg("--store").arg(work.join("store")).arg(&path);
    let cost = run(&mut cmd, &work);
    assert_bounded("deb", &cost, deb.len() as u64);
    assert_eq!(cost.code, Some(1), "{}", cost.stderr);
    assert!(cost.stderr.contains("app.deb"), "{}", cost.stderr);
    assert!(cost.stderr.contains("-byte name"), "{}", cost.stderr);
    std::fs::remove_dir_all(&work).unwrap();
}

/// A debug map's static library whose member claims 1 GiB of a sparse file: mapped
/// where it lies, not copied. Before: 2.1 GB resident.
#[test]
fn a_debug_map_member_is_mapped_not_copied() {
    let work = scratch("named-debugmap");
    let lib = work.join("libutil.a");
    let mut head = b"!<arch>\n".to_vec();
    head.extend(ar_header("util.o/", 1 << 30));
    std::fs::write(&lib, &head).unwrap();
    let f = std::fs::OpenOptions::new().write(true).open(&lib).unwrap();
    f.set_len(head.len() as u64 + (1 << 30)).unwrap();
    // The program's other object, found too, so the run has DWARF to read.
    std::fs::copy(
        fixtures().join("debugmap/arm64-O2/objects/shapes.o"),
        work.join("shapes.o"),
    )
    .unwrap();
    let mut cmd = dumpsyms_command();
    cmd.arg("-v")
        .arg("--debug-dir")
        .arg(&work)
        .arg(fixtures().join("debugmap/arm64-O2/app"));
    let cost = run(&mut cmd, &work);
    assert_bounded("debug map", &cost, 1 << 20);
    assert_eq!(cost.code, Some(0), "{}", cost.stderr);
    assert!(cost.stderr.contains("libutil.a(util.o)"), "{}", cost.stderr);
    std::fs::remove_dir_all(&work).unwrap();
}

/// `dumpsyms symbolize` reading a pipe this test writes: the child, the pipe, and each
/// line it prints with when it came.
fn live_symbolize() -> (
    std::process::Child,
    std::process::ChildStdin,
    std::sync::mpsc::Receiver<(Instant, String)>,
) {
    let mut child = dumpsyms_command()
        .arg("symbolize")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let _ = tx.send((Instant::now(), line.unwrap()));
        }
    });
    (child, stdin, rx)
}

/// `printf 'line\n' | (cat; sleep 5) | dumpsyms symbolize`, driven a line at a time:
/// each line comes out while the writer still holds the pipe open, a plain one at
/// once and one whose absolute frame waits for a module map once the input pauses
/// for a second. Before: nothing came out until the input ended.
#[test]
fn symbolize_answers_a_live_pipe_line_by_line() {
    let (mut child, mut stdin, rx) = live_symbolize();
    for line in [
        "a plain line",
        "#0 0x401234 in main (/tmp/prog+0x1234)",
        "./prog[0x401234]",
        "after the absolute frame",
    ] {
        stdin.write_all(format!("{line}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
        let got = rx.recv_timeout(Duration::from_secs(2)).map(|(_, l)| l);
        assert_eq!(
            got.as_deref(),
            Ok(line),
            "{line:?} did not come out within 2 s"
        );
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// An `.ips` whose body is 7 million numbers (14 MB) is read as text with a warning, in
/// bounded memory, byte for byte. Before: held as a JSON tree, 619 MB.
#[test]
fn an_ips_too_large_to_hold_is_passed_through() {
    let work = scratch("named-ips-values");
    let mut doc = b"{\"bug_type\":\"309\",\"app_name\":\"x\"}\n{\"usedImages\":[],\"x\":[".to_vec();
    for i in 0..7_000_000u32 {
        doc.extend_from_slice(if i == 0 { b"0" } else { b",0" });
    }
    doc.extend_from_slice(b"]}\n");
    let report = work.join("big.ips");
    std::fs::write(&report, &doc).unwrap();
    let mut cmd = dumpsyms_command();
    cmd.arg("symbolize").arg(&report);
    let cost = run(&mut cmd, &work);
    assert_bounded("ips", &cost, doc.len() as u64);
    assert_eq!(cost.code, Some(0), "{}", cost.stderr);
    assert!(cost.stdout == doc, "a byte changed");
    assert!(cost.stderr.contains("JSON values"), "{}", cost.stderr);
    std::fs::remove_dir_all(&work).unwrap();
}

/// A report of frames in 150,000 distinct modules: the first 100,000 are looked up and
/// kept, the rest left as they are with one warning. Before: 3 million took 584 MB.
#[test]
fn distinct_modules_past_the_bound_are_left_with_one_warning() {
    let work = scratch("named-modules");
    let mut text = String::new();
    for i in 0..150_000 {
        text.push_str(&format!("    #0 0x1000  (/x/lib{i}.so+0x1000)\n"));
    }
    let report = work.join("report.txt");
    std::fs::write(&report, &text).unwrap();
    let mut cmd = dumpsyms_command();
    cmd.arg("symbolize").arg(&report);
    let cost = run(&mut cmd, &work);
    assert_bounded("modules", &cost, text.len() as u64);
    assert_eq!(cost.code, Some(0), "{}", cost.stderr);
    assert_eq!(
        cost.stderr
            .matches("the report names more than 100000 modules")
            .count(),
        1,
        "{:.2000}",
        cost.stderr
    );
    assert!(cost.stdout == text.as_bytes());
    std::fs::remove_dir_all(&work).unwrap();
}

/// A busy stream never pauses for a second (a line every 200 ms here): a line held
/// for a module map comes out once it has waited 5 s, and the lines after it follow.
#[test]
fn symbolize_releases_held_lines_in_a_busy_stream() {
    let (mut child, mut stdin, rx) = live_symbolize();
    let started = Instant::now();
    stdin.write_all(b"./prog[0x401234]\n").unwrap();
    let mut n = 0;
    let first = loop {
        std::thread::sleep(Duration::from_millis(200));
        stdin.write_all(format!("tick {n}\n").as_bytes()).unwrap();
        stdin.flush().unwrap();
        n += 1;
        if let Ok(got) = rx.try_recv() {
            break got;
        }
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "nothing came out"
        );
    };
    assert_eq!(first.1, "./prog[0x401234]");
    let waited = first.0 - started;
    assert!(waited >= Duration::from_secs(4), "{waited:?}");
    assert_eq!(rx.recv_timeout(Duration::from_secs(2)).unwrap().1, "tick 0");
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// A Mach-O executable (x86_64) with no DWARF whose debug map names `objects` members
/// of the static library `library`, each with one function: written here field by
/// field (`<mach-o/loader.h>`, `<mach-o/nlist.h>`, `<mach-o/stab.h>`), since no linker
/// here writes a debug map of thousands of entries.
fn debug_map_program(objects: impl Iterator<Item = String>, library: &str) -> Vec<u8> {
    const N_SO: u8 = 0x64;
    const N_OSO: u8 = 0x66;
    const N_FUN: u8 = 0x24;
    const TEXT: u64 = 0x1_0000_1000;
    let mut strings = vec![0u8];
    let mut string = |s: &str| {
        let at = strings.len() as u32;
        strings.extend(s.as_bytes());
        strings.push(0);
        at
    };
    let mut symbols: Vec<(u32, u8, u8, u64)> = Vec::new();
    let mut count = 0u64;
    for (i, member) in objects.enumerate() {
        let i = i as u64;
        symbols.push((string(&format!("/src/m{i}.c")), N_SO, 0, 0));
        symbols.push((
            string(&format!("{library}({member})")),
            N_OSO,
            0,
            1_700_000_000,
        ));
        symbols.push((string(&format!("_f{i}")), N_FUN, 1, TEXT + 16 * i));
        symbols.push((0, N_FUN, 0, 16));
        symbols.push((0, N_SO, 1, 0));
        count += 1;
    }
    symbols.push((string("_main"), 0x0f, 1, TEXT));
    let text_size = 16 * count.max(1);
    let mut cmds = Vec::new();
    // LC_SEGMENT_64 __TEXT with one section, __text.
    cmds.extend(0x19u32.to_le_bytes());
    cmds.extend((72u32 + 80).to_le_bytes());
    cmds.extend(*b"__TEXT\0\0\0\0\0\0\0\0\0\0");
    for v in [0x1_0000_0000u64, 0x1000 + text_size, 0, 0x1000 + text_size] {
        cmds.extend(v.to_le_bytes());
    }
    for v in [5u32, 5, 1, 0] {
        cmds.extend(v.to_le_bytes());
    }
    cmds.extend(*b"__text\0\0\0\0\0\0\0\0\0\0");
    cmds.extend(*b"__TEXT\0\0\0\0\0\0\0\0\0\0");
    cmds.extend(TEXT.to_le_bytes());
    cmds.extend(text_size.to_le_bytes());
    for v in [0x1000u32, 4, 0, 0, 0x8000_0400, 0, 0, 0] {
        cmds.extend(v.to_le_bytes());
    }
    // LC_UUID.
    cmds.extend(0x1bu32.to_le_bytes());
    cmds.extend(24u32.to_le_bytes());
    cmds.extend(1u8..=16);
    // LC_SYMTAB.
    let symoff = (0x1000 + text_size as u32).next_multiple_of(8);
    let stroff = symoff + 16 * symbols.len() as u32;
    for v in [
        0x2u32,
        24,
        symoff,
        symbols.len() as u32,
        stroff,
        strings.len() as u32,
    ] {
        cmds.extend(v.to_le_bytes());
    }
    let mut out = Vec::new();
    for v in [
        0xfeed_facfu32,
        0x0100_0007,
        3,
        2,
        3,
        cmds.len() as u32,
        0,
        0,
    ] {
        out.extend(v.to_le_bytes());
    }
    out.extend(cmds);
    out.resize(0x1000, 0);
    out.resize(0x1000 + text_size as usize, 0xc3);
    out.resize(symoff as usize, 0);
    for (strx, kind, section, value) in symbols {
        out.extend(strx.to_le_bytes());
        out.extend([kind, section, 0, 0]);
        out.extend(value.to_le_bytes());
    }
    out.extend(strings);
    out
}

/// A debug map of 2,000 entries naming the last members of a 200,000-member static
/// library: the library's member table is read once, not once per entry. Before: each
/// entry searched the table from its start, 9.7 s optimized.
#[test]
fn a_debug_map_reads_a_librarys_member_table_once() {
    let work = scratch("named-debugmap-members");
    let mut library = b"!<arch>\n".to_vec();
    for i in 0..200_000 {
        library.extend(ar_header(&format!("m{i}.o/"), 2));
        library.extend(b"ab");
    }
    std::fs::write(work.join("libmany.a"), &library).unwrap();
    let app = work.join("app");
    std::fs::write(
        &app,
        debug_map_program(
            (198_000..200_000).map(|i| format!("m{i}.o")),
            "/nonexistent/libmany.a",
        ),
    )
    .unwrap();
    let mut cmd = dumpsyms_command();
    cmd.arg("-v").arg("--debug-dir").arg(&work).arg(&app);
    let cost = run(&mut cmd, &work);
    assert_bounded("debug map members", &cost, library.len() as u64);
    assert_eq!(cost.code, Some(0), "{:.2000}", cost.stderr);
    assert!(cost.wall < Duration::from_secs(5), "{:?}", cost.wall);
    // Each member was found (and is no object file).
    assert_eq!(
        cost.stderr.matches("not an object file").count(),
        2000,
        "{:.2000}",
        cost.stderr
    );
    std::fs::remove_dir_all(&work).unwrap();
}

/// What is held for a module map is bounded: after an absolute frame nothing places,
/// short lines arrive without a pause, and the held line comes out once 1,048,576
/// lines (or 64 MiB) are held, while the writer is still writing. Before: the whole
/// stdin was spooled (1.5 GB for 2 GB) and nothing came out until it ended.
#[test]
fn what_is_held_for_a_module_map_is_bounded() {
    let (mut child, mut stdin, rx) = live_symbolize();
    stdin.write_all(b"./prog[0x401234]\n").unwrap();
    let filler = "x\n".repeat(4096);
    let mut written = 0usize;
    let first = loop {
        if let Ok((_, line)) = rx.try_recv() {
            break Some(line);
        }
        if written >= 100 << 20 {
            break None;
        }
        stdin.write_all(filler.as_bytes()).unwrap();
        written += filler.len();
    };
    assert_eq!(
        first.as_deref(),
        Some("./prog[0x401234]"),
        "nothing came out after {written} bytes"
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}
