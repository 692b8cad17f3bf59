//! Hostile archives given to a store run, each built here byte by byte: decompression
//! bombs (by ratio, by overlapping entries, by sizes that lie), 65,535 entries, member
//! names that would leave the store or reach the terminal, links in tars, truncated
//! archives, a package without its data, archives nested too deep. Each run stays
//! within the bounds every input has (10 s optimized, 512 MB resident), writes nothing
//! outside its store, leaves no unpacking directory behind, and says what it refused.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::archives::{ar, zip_of};
use crate::common::*;

/// 10 s optimized; an unoptimized build's inflaters are several times slower.
fn time_limit() -> Duration {
    Duration::from_secs(if cfg!(debug_assertions) { 60 } else { 10 })
}

pub(crate) struct Run {
    pub ok: bool,
    pub wall: Duration,
    pub peak_rss: u64,
    pub stderr: String,
    pub store: PathBuf,
}

/// `dumpsyms -v --store <work>/store <archive>` under GNU time, from an empty working
/// directory that must stay empty.
pub(crate) fn store_run(work: &Path, archive: &Path) -> Run {
    let cwd = work.join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let store = work.join("store");
    let _ = std::fs::remove_dir_all(&store);
    let rss_path = work.join("rss.txt");
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&rss_path)
        .arg(env!("CARGO_BIN_EXE_dumpsyms"))
        .arg("-v")
        .arg("--store")
        .arg(&store)
        .arg(archive)
        .current_dir(&cwd)
        .env_remove("DEBUGINFOD_URLS")
        .stdin(Stdio::null())
        .output()
        .expect("GNU time (/usr/bin/time, Debian's `time`) runs dumpsyms to measure it");
    let wall = started.elapsed();
    let kb: u64 = std::fs::read_to_string(&rss_path)
        .unwrap()
        .lines()
        .last()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!stderr.contains("panicked"), "{stderr:.3000}");
    assert!(
        wall < time_limit(),
        "{:.2} s: {stderr:.3000}",
        wall.as_secs_f64()
    );
    assert!(kb << 10 < 512 << 20, "{} MB: {stderr:.3000}", kb >> 10);
    assert_eq!(
        std::fs::read_dir(&cwd).unwrap().count(),
        0,
        "{stderr:.3000}"
    );
    // Only symbol files: no unpacking directory, no member, nothing climbed into it.
    for e in walk_files(&store) {
        assert!(
            e.extension().is_some_and(|x| x == "sym"),
            "{} left in the store: {stderr:.3000}",
            e.display()
        );
    }
    let leftover: Vec<_> = std::fs::read_dir(&store)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(
        !leftover
            .iter()
            .any(|n| n.to_string_lossy().starts_with('.')),
        "{leftover:?}"
    );
    Run {
        ok: out.status.success(),
        wall,
        peak_rss: kb << 10,
        stderr,
        store,
    }
}

pub(crate) fn walk_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.filter_map(|e| e.ok()) {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk_files(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

pub(crate) fn app() -> Vec<u8> {
    std::fs::read(fixtures().join("extra/debuglink/app")).unwrap()
}

/// A raw deflate stream of `head`, then `zeros` zero bytes, then `tail`, made in little
/// time: one flushed block of a MiB of zeros (matches only, the window being all zeros)
/// repeated.
fn deflated_zeros(head: &[u8], zeros: usize, tail: &[u8]) -> Vec<u8> {
    use flate2::{Compress, Compression, FlushCompress};
    const MIB: usize = 1 << 20;
    assert!(zeros >= (64 << 10) + MIB);
    let mut c = Compress::new(Compression::best(), false);
    let mut out = Vec::with_capacity(4 << 20);
    let mut first = head.to_vec();
    first.extend(std::iter::repeat_n(0u8, 64 << 10));
    out.reserve(first.len() + 1024);
    c.compress_vec(&first, &mut out, FlushCompress::Sync)
        .unwrap();
    let start = out.len();
    let before = c.total_in();
    c.compress_vec(&vec![0u8; MIB], &mut out, FlushCompress::Sync)
        .unwrap();
    assert_eq!(c.total_in() - before, MIB as u64);
    let block = out[start..].to_vec();
    let rest = zeros - (64 << 10) - MIB;
    for _ in 0..rest / MIB {
        out.extend_from_slice(&block);
    }
    let mut last = vec![0u8; rest % MIB];
    last.extend_from_slice(tail);
    out.reserve(last.len() + 1024);
    c.compress_vec(&last, &mut out, FlushCompress::Finish)
        .unwrap();
    out
}

/// The first bytes of a 64-bit little-endian ELF file.
const ELF_HEAD: &[u8] = b"\x7fELF\x02\x01\x01";

/// One ZIP entry as it is to be written, its sizes and offset free to lie.
struct Entry {
    name: Vec<u8>,
    method: u16,
    data: Vec<u8>,
    crc: u32,
    size: u64,
    /// Zip64 sizes in the extra field (with 0xFFFFFFFF in the 32-bit ones).
    zip64: Option<(u64, u64)>,
}

impl Entry {
    /// An "object file" of `zeros` zero bytes after an ELF magic, deflated, its CRC
    /// left 0: a bomb is stopped before its end, where the CRC would be checked.
    fn elf_bomb(name: &[u8], zeros: usize) -> Entry {
        Entry {
            name: name.to_vec(),
            method: 8,
            data: deflated_zeros(ELF_HEAD, zeros, b""),
            crc: 0,
            size: zeros as u64 + ELF_HEAD.len() as u64,
            zip64: None,
        }
    }

    fn stored(name: &[u8], data: Vec<u8>) -> Entry {
        Entry {
            name: name.to_vec(),
            method: 0,
            crc: crc32(&data),
            size: data.len() as u64,
            data,
            zip64: None,
        }
    }
}

fn crc32(data: &[u8]) -> u32 {
    let mut h = flate2::Crc::new();
    h.update(data);
    h.sum()
}

/// A ZIP archive of `entries`; `central` adds central-directory entries pointing at
/// the local header at the given offset (for overlapping entries).
fn zip_raw(entries: &[Entry], central: &[(Vec<u8>, usize)]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut cd = Vec::new();
    let mut count = 0u32;
    let mut offsets = Vec::new();
    for e in entries {
        offsets.push(out.len() as u32);
        let (c32, u32_, extra) = match e.zip64 {
            Some((u, c)) => {
                let mut x = vec![1, 0, 16, 0];
                x.extend(u.to_le_bytes());
                x.extend(c.to_le_bytes());
                (u32::MAX, u32::MAX, x)
            }
            None => (e.data.len() as u32, e.size as u32, Vec::new()),
        };
        let local = |out: &mut Vec<u8>| {
            out.extend(0x04034b50u32.to_le_bytes());
            out.extend([20, 0, 0, 0]);
            out.extend(e.method.to_le_bytes());
            out.extend([0, 0, 0x21, 0]);
            out.extend(e.crc.to_le_bytes());
            out.extend(c32.to_le_bytes());
            out.extend(u32_.to_le_bytes());
            out.extend((e.name.len() as u16).to_le_bytes());
            out.extend((extra.len() as u16).to_le_bytes());
            out.extend(&e.name);
            out.extend(&extra);
        };
        let at = out.len() as u32;
        local(&mut out);
        out.extend(&e.data);
        central_entry(&mut cd, e, c32, u32_, &extra, &e.name, at);
        count += 1;
    }
    for (name, index) in central {
        let e = &entries[*index];
        central_entry(
            &mut cd,
            e,
            e.data.len() as u32,
            e.size as u32,
            &[],
            name,
            offsets[*index],
        );
        count += 1;
    }
    let cd_at = out.len() as u32;
    out.extend(&cd);
    out.extend(0x06054b50u32.to_le_bytes());
    out.extend([0, 0, 0, 0]);
    let n = count.min(0xFFFF) as u16;
    out.extend(n.to_le_bytes());
    out.extend(n.to_le_bytes());
    out.extend((cd.len() as u32).to_le_bytes());
    out.extend(cd_at.to_le_bytes());
    out.extend([0, 0]);
    out
}

fn central_entry(
    cd: &mut Vec<u8>,
    e: &Entry,
    c32: u32,
    u32_: u32,
    extra: &[u8],
    name: &[u8],
    at: u32,
) {
    cd.extend(0x02014b50u32.to_le_bytes());
    cd.extend([20, 3, 20, 0, 0, 0]);
    cd.extend(e.method.to_le_bytes());
    cd.extend([0, 0, 0x21, 0]);
    cd.extend(e.crc.to_le_bytes());
    cd.extend(c32.to_le_bytes());
    cd.extend(u32_.to_le_bytes());
    cd.extend((name.len() as u16).to_le_bytes());
    cd.extend((extra.len() as u16).to_le_bytes());
    cd.extend([0, 0, 0, 0, 0, 0]);
    // A regular file, rw-r--r--.
    cd.extend((0o100644u32 << 16).to_le_bytes());
    cd.extend(at.to_le_bytes());
    cd.extend(name);
    cd.extend(extra);
}

/// A tar header block for `name` (written whole into the 100-byte field, NUL or not),
/// of type `kind`, `size` bytes, linking to `link`.
fn tar_header(name: &[u8], kind: u8, size: u64, link: &[u8]) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len().min(100)].copy_from_slice(&name[..name.len().min(100)]);
    h[100..108].copy_from_slice(b"0000644\0");
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[156] = kind;
    h[157..157 + link.len()].copy_from_slice(link);
    h[257..263].copy_from_slice(b"ustar\0");
    h[263..265].copy_from_slice(b"00");
    h[148..156].copy_from_slice(b"        ");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A tar of `(header, data)` members, each padded to its 512-byte blocks, and the end.
fn tar_raw(members: &[(Vec<u8>, Vec<u8>)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (header, data) in members {
        out.extend(header);
        out.extend(data);
        out.resize(out.len().next_multiple_of(512), 0);
    }
    out.extend([0u8; 1024]);
    out
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut out = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    out.write_all(data).unwrap();
    out.finish().unwrap()
}

#[test]
fn a_zip_bomb_stops_at_its_budget_and_the_rest_is_dumped() {
    let work = scratch("harc-zip-bomb");
    let bomb = Entry::elf_bomb(b"lib/libbomb.so", 1 << 30);
    let archive = work.join("bomb.zip");
    let bytes = zip_raw(&[Entry::stored(b"bin/app", app()), bomb], &[]);
    assert!(bytes.len() < 2 << 20, "{}", bytes.len());
    std::fs::write(&archive, bytes).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("bomb.zip: lib/libbomb.so: unpacks to more than 256 MiB"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("a decompression bomb?"),
        "{}",
        run.stderr
    );
    // The member before the bomb was taken and dumped.
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);
    println!(
        "zip bomb: {:.2} s, {} MB",
        run.wall.as_secs_f64(),
        run.peak_rss >> 20
    );
}

#[test]
fn a_tar_gz_bomb_stops_at_its_budget() {
    let work = scratch("harc-tgz-bomb");
    // One member claiming 1 GiB, whose bytes are zeros: a gzip stream of a tar holding
    // the app, then the member's header and its zeros.
    let mut tar = tar_raw(&[(
        tar_header(b"./bin/app", b'0', app().len() as u64, b""),
        app(),
    )]);
    tar.truncate(tar.len() - 1024);
    tar.extend(tar_header(b"./lib/libbomb.so", b'0', 1 << 30, b""));
    let mut head = tar;
    head.extend(b"\x7fELF\x02\x01\x01");
    let archive = work.join("bomb.tar.gz");
    std::fs::write(&archive, gzipped_zeros(&head, 1 << 30)).unwrap();
    assert_stops_at_the_budget_with_one_module(&work, &archive);
}

/// A gzip stream of `head` and `zeros` zero bytes (its trailer's CRC not computed: the
/// budget stops the reading first).
pub(crate) fn gzipped_zeros(head: &[u8], zeros: usize) -> Vec<u8> {
    let mut gz = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    gz.extend(deflated_zeros(head, zeros, b""));
    gz.extend([0u8; 8]);
    gz
}

/// A store run of `archive` fails as a decompression bomb, with the one module before
/// the bomb dumped.
pub(crate) fn assert_stops_at_the_budget_with_one_module(work: &Path, archive: &Path) {
    let run = store_run(work, archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(
        run.stderr.contains("a decompression bomb?"),
        "{}",
        run.stderr
    );
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);
}

#[test]
fn an_archive_inside_an_archive_has_what_is_left_of_the_outer_budget() {
    // inner.zip: a bomb (1 GiB of zeros) and 200 MiB of stored zeros that raise its own
    // budget to 20 GiB; deflated inside outer.zip to a few hundred KiB, whose budget
    // (256 MiB) writing inner.zip nearly spends. The bomb stops at what is left.
    let work = scratch("harc-nested-bomb");
    let pad = 200usize << 20;
    let inner = zip_raw(
        &[
            Entry::elf_bomb(b"lib/libbomb.so", 1 << 30),
            Entry::stored(b"res/pad.bin", vec![0u8; pad]),
        ],
        &[],
    );
    let eocd = inner.len() - 22;
    let cd_at = u32::from_le_bytes(inner[eocd + 16..eocd + 20].try_into().unwrap()) as usize;
    let zeros_at = cd_at - pad;
    assert!(inner[zeros_at..cd_at].iter().all(|&b| b == 0));
    let outer = zip_raw(
        &[Entry {
            name: b"libs/inner.zip".to_vec(),
            method: 8,
            data: deflated_zeros(&inner[..zeros_at], pad, &inner[cd_at..]),
            crc: crc32(&inner),
            size: inner.len() as u64,
            zip64: None,
        }],
        &[],
    );
    drop(inner);
    assert!(outer.len() < 4 << 20, "{}", outer.len());
    let archive = work.join("outer.zip");
    std::fs::write(&archive, outer).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("outer.zip!libs/inner.zip: lib/libbomb.so: unpacks to more than 5"),
        "{}",
        run.stderr
    );
}

#[test]
fn overlapping_zip_entries_are_refused() {
    let work = scratch("harc-overlap");
    let kernel = Entry::elf_bomb(b"lib/libk.so", 64 << 20);
    // 1,000 names for the same compressed bytes: 64 GiB from a few hundred KiB.
    let names: Vec<(Vec<u8>, usize)> = (0..1000)
        .map(|i| (format!("lib/libk{i}.so").into_bytes(), 0))
        .collect();
    let archive = work.join("overlap.zip");
    std::fs::write(&archive, zip_raw(&[kernel], &names)).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("its entries overlap"), "{}", run.stderr);
    assert!(walk_files(&run.store).is_empty());
}

#[test]
fn sixty_five_thousand_entries_and_sizes_that_lie() {
    let work = scratch("harc-many");
    let mut entries: Vec<Entry> = (0..65_534)
        .map(|i| Entry::stored(format!("res/{i}.txt").as_bytes(), b"text".to_vec()))
        .collect();
    entries.push(Entry::stored(b"bin/app", app()));
    let archive = work.join("many.zip");
    std::fs::write(&archive, zip_raw(&entries, &[])).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);
    println!("65,535 entries: {:.2} s", run.wall.as_secs_f64());

    // Zip64 sizes claiming a petabyte for a few bytes: refused, never allocated for.
    let liar = Entry {
        name: b"lib/liar.so".to_vec(),
        method: 0,
        data: b"\x7fELF\x02\x01\x01\0".to_vec(),
        crc: 0,
        size: 8,
        zip64: Some((1 << 50, 1 << 50)),
    };
    let archive = work.join("liar.zip");
    std::fs::write(
        &archive,
        zip_raw(&[liar, Entry::stored(b"bin/app", app())], &[]),
    )
    .unwrap();
    let run = store_run(&work, &archive);
    assert!(
        ["liar.so", "its entries overlap", "not a readable ZIP"]
            .iter()
            .any(|why| run.stderr.contains(why)),
        "{}",
        run.stderr
    );
}

#[test]
fn member_names_that_would_leave_the_store_are_refused() {
    let work = scratch("harc-names");
    let escape = work.join("escaped.so");
    let absolute = format!("{}/absolute.so", work.display());
    let zip_names: Vec<Vec<u8>> = vec![
        b"../../../escaped.so".to_vec(),
        absolute.clone().into_bytes(),
        b"lib/nul\0.so".to_vec(),
        b"lib/\x1b[2J\x1b]0;pwned\x07.so".to_vec(),
        b"C:\\Windows\\evil.dll".to_vec(),
        b"lib/ok.so".to_vec(),
    ];
    let entries: Vec<Entry> = zip_names.iter().map(|n| Entry::stored(n, app())).collect();
    let archive = work.join("names.zip");
    std::fs::write(&archive, zip_raw(&entries, &[])).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    assert!(!escape.exists() && !Path::new(&absolute).exists());
    for why in [
        "climbs out of the archive",
        "is an absolute path",
        "holds a control character",
    ] {
        assert!(run.stderr.contains(why), "{why}: {}", run.stderr);
    }
    // The terminal sees no escape sequence from a member's name.
    assert!(!run.stderr.contains('\x1b') && !run.stderr.contains('\x07'));
    // Only lib/ok.so was taken (the module's one symbol file).
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);

    // The same names in a tar.
    let members: Vec<(Vec<u8>, Vec<u8>)> = [
        &b"../../../escaped.so"[..],
        absolute.as_bytes(),
        b"./lib/\x1b[2J.so",
        b"./lib/ok.so",
    ]
    .iter()
    .map(|n| (tar_header(n, b'0', app().len() as u64, b""), app()))
    .collect();
    let archive = work.join("names.tar");
    std::fs::write(&archive, tar_raw(&members)).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    assert!(!escape.exists() && !Path::new(&absolute).exists());
    assert_eq!(
        run.stderr.matches("not taken: its name").count(),
        3,
        "{}",
        run.stderr
    );
}

#[test]
fn links_in_a_tar_are_not_followed() {
    let work = scratch("harc-links");
    let members = vec![
        (
            tar_header(
                b"./lib/libc.so.6",
                b'2',
                0,
                b"/lib/x86_64-linux-gnu/libc.so.6",
            ),
            Vec::new(),
        ),
        (
            tar_header(b"./lib/passwd", b'1', 0, b"/etc/passwd"),
            Vec::new(),
        ),
        (
            tar_header(b"./bin/app", b'0', app().len() as u64, b""),
            app(),
        ),
        (
            tar_header(b"./bin/app-again", b'1', 0, b"./bin/app"),
            Vec::new(),
        ),
        (tar_header(b"./dev/sda", b'3', 0, b""), Vec::new()),
    ];
    let archive = work.join("links.tar");
    std::fs::write(&archive, tar_raw(&members)).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    // bin/app alone: no libc, nothing from /etc.
    let files = walk_files(&run.store);
    assert_eq!(files.len(), 1, "{files:?}");
    assert!(files[0].to_string_lossy().contains("/app/"), "{files:?}");
}

#[test]
fn truncated_archives_fail_by_name_and_keep_what_came_before() {
    let work = scratch("harc-truncated");
    let root = work.join("tree");
    std::fs::create_dir_all(root.join("bin")).unwrap();
    std::fs::write(root.join("bin/a-first"), app()).unwrap();
    std::fs::copy(
        fixtures().join("bin/x86_64/c-gcc-O2-dwarf5"),
        root.join("bin/b-second"),
    )
    .unwrap();
    let zip = zip_of(&root, zip::CompressionMethod::Deflated);
    let archive = work.join("cut.zip");
    std::fs::write(&archive, &zip[..zip.len() * 6 / 10]).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(
        run.stderr.contains("cut.zip: not a readable ZIP archive"),
        "{}",
        run.stderr
    );

    let members: Vec<(Vec<u8>, Vec<u8>)> = ["./bin/a-first", "./bin/b-second"]
        .iter()
        .map(|n| {
            let data = std::fs::read(root.join(&n[2..])).unwrap();
            (tar_header(n.as_bytes(), b'0', data.len() as u64, b""), data)
        })
        .collect();
    // A whole gzip stream of a tar that ends inside its second member's bytes.
    let tar = tar_raw(&members);
    let first = 512 + app().len().next_multiple_of(512);
    let archive = work.join("cut.tar.gz");
    std::fs::write(&archive, gzip(&tar[..first + 512 + 4096])).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("failed: "), "{}", run.stderr);
    assert!(run.stderr.contains("cut.tar.gz"), "{}", run.stderr);
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);
}

#[test]
fn a_package_without_its_data_and_archives_nested_too_deep() {
    let work = scratch("harc-deb");
    let archive = work.join("nodata_1.0_amd64.deb");
    std::fs::write(
        &archive,
        ar(&[
            ("debian-binary", b"2.0\n"),
            ("control.tar.gz", &gzip(&[0u8; 1024])),
        ]),
    )
    .unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("no data.tar member"), "{}", run.stderr);

    // app inside three ZIPs: the third is named and not read.
    let inner = zip_raw(&[Entry::stored(b"bin/app", app())], &[]);
    let middle = zip_raw(&[Entry::stored(b"libs/inner.zip", inner)], &[]);
    let outer = zip_raw(&[Entry::stored(b"deep/middle.zip", middle)], &[]);
    let archive = work.join("outer.zip");
    std::fs::write(&archive, outer).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    assert!(
        run.stderr.contains(
            "outer.zip!deep/middle.zip: libs/inner.zip: not read: an archive inside an archive inside an archive"
        ),
        "{}",
        run.stderr
    );
    assert!(walk_files(&run.store).is_empty());
}
