//! Hostile packages given to a store run: RPMs whose headers lie or whose payload is a
//! bomb, cpio members that climb, lie about their size, link or are devices, and
//! squashfs images cut short, with an unknown compressor, a directory inside itself, a
//! sparse bomb and nesting past the bound. Each within the bounds `hostile_archives`
//! checks (10 s optimized, 512 MB, nothing outside the store), its damage named and
//! what came before it kept.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::hostile_archives::{
    app, assert_stops_at_the_budget_with_one_module, gzip, gzipped_zeros, store_run, walk_files,
};

/// A `newc` cpio member whose header claims `size` bytes, followed by `data`.
fn cpio_member(
    out: &mut Vec<u8>,
    name: &str,
    ino: u32,
    mode: u32,
    nlink: u32,
    size: u32,
    data: &[u8],
) {
    out.extend_from_slice(b"070701");
    for field in [ino, mode, 0, 0, nlink, 1_700_000_000, size, 0, 0, 0, 0] {
        out.extend_from_slice(format!("{field:08X}").as_bytes());
    }
    out.extend_from_slice(format!("{:08X}{:08X}", name.len() + 1, 0).as_bytes());
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    while !out.len().is_multiple_of(4) {
        out.push(0);
    }
    out.extend_from_slice(data);
    if data.len() == size as usize {
        while !out.len().is_multiple_of(4) {
            out.push(0);
        }
    }
}

fn cpio_trailer(out: &mut Vec<u8>) {
    cpio_member(out, "TRAILER!!!", 0, 0, 1, 0, b"");
}

/// An RPM header holding `strings` (tag, value) as STRING entries.
fn rpm_header(strings: &[(u32, &str)], count: Option<u32>) -> Vec<u8> {
    let mut index = Vec::new();
    let mut store = Vec::new();
    for (tag, value) in strings {
        for word in [*tag, 6, store.len() as u32, 1] {
            index.extend_from_slice(&word.to_be_bytes());
        }
        store.extend_from_slice(value.as_bytes());
        store.push(0);
    }
    let mut out = vec![0x8E, 0xAD, 0xE8, 0x01, 0, 0, 0, 0];
    out.extend_from_slice(&count.unwrap_or(strings.len() as u32).to_be_bytes());
    out.extend_from_slice(&(store.len() as u32).to_be_bytes());
    out.extend(index);
    out.extend(store);
    out
}

/// An RPM package: its lead, an empty signature, a header naming the payload's format
/// and compressor, and the payload.
fn rpm(header: Vec<u8>, payload: &[u8]) -> Vec<u8> {
    let mut out = vec![0xED, 0xAB, 0xEE, 0xDB, 3, 0, 0, 0, 0, 1];
    out.resize(96, 0);
    out[78..80].copy_from_slice(&5u16.to_be_bytes());
    out.extend(rpm_header(&[], None));
    while out.len() % 8 != 0 {
        out.push(0);
    }
    out.extend(header);
    out.extend_from_slice(payload);
    out
}

fn cpio_header(format: &str, compressor: &str) -> Vec<u8> {
    rpm_header(&[(1124, format), (1125, compressor)], None)
}

#[test]
fn an_rpm_whose_payload_is_a_bomb_stops_at_its_budget() {
    let work = scratch("hpkg-rpm-bomb");
    let mut head = Vec::new();
    let app = app();
    cpio_member(
        &mut head,
        "./usr/bin/app",
        1,
        0o100755,
        1,
        app.len() as u32,
        &app,
    );
    cpio_member(
        &mut head,
        "./usr/lib/libbomb.so",
        2,
        0o100755,
        1,
        1 << 30,
        b"\x7fELF\x02\x01\x01",
    );
    let archive = work.join("bomb-1.0-1.x86_64.rpm");
    let payload = gzipped_zeros(&head, 1 << 30);
    std::fs::write(&archive, rpm(cpio_header("cpio", "gzip"), &payload)).unwrap();
    assert_stops_at_the_budget_with_one_module(&work, &archive);
}

#[test]
fn rpm_headers_that_lie_are_refused_by_name() {
    let work = scratch("hpkg-rpm-headers");
    let mut payload = Vec::new();
    let app = app();
    cpio_member(
        &mut payload,
        "./usr/bin/app",
        1,
        0o100755,
        1,
        app.len() as u32,
        &app,
    );
    cpio_trailer(&mut payload);
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "entries",
            rpm(rpm_header(&[], Some(0x10000)), &gzip(&payload)),
            "claims 65536 entries",
        ),
        (
            "past-the-end",
            {
                let mut whole = rpm(cpio_header("cpio", "gzip"), b"");
                whole.truncate(whole.len() - 3);
                whole
            },
            "runs past the end of the file: truncated?",
        ),
        (
            "lzip",
            rpm(cpio_header("cpio", "lzip"), &payload),
            "compressed with lzip, which dumpsyms does not read",
        ),
        (
            "drpm",
            rpm(cpio_header("drpm", "xz"), &payload),
            "its payload is a drpm archive",
        ),
    ];
    for (label, bytes, says) in cases {
        let archive = work.join(format!("{label}.rpm"));
        std::fs::write(&archive, bytes).unwrap();
        let run = store_run(&work, &archive);
        assert!(!run.ok, "{label}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{label}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("{label}.rpm")),
            "{}",
            run.stderr
        );
    }
    // The same package, honest, is read; cut short, it fails by name.
    let archive = work.join("honest.rpm");
    let whole = rpm(cpio_header("cpio", "gzip"), &gzip(&payload));
    std::fs::write(&archive, &whole).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);
    let real = fixtures().join("packages/rpm/xz/demo-1.2-3.fc40.x86_64.rpm");
    let real = std::fs::read(real).unwrap();
    let archive = work.join("cut.rpm");
    std::fs::write(&archive, &real[..real.len() * 6 / 10]).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("cut.rpm"), "{}", run.stderr);
}

/// Members that climb, devices, a FIFO, a link to `/etc/passwd`, hard links (the bytes
/// with the last name), and a last member claiming more than the archive holds.
#[test]
fn cpio_members_that_climb_link_or_lie() {
    let work = scratch("hpkg-cpio");
    let app = app();
    let n = app.len() as u32;
    let mut a = Vec::new();
    cpio_member(&mut a, "../../outside/app", 1, 0o100755, 1, n, &app);
    cpio_member(&mut a, "/abs/app", 2, 0o100755, 1, n, &app);
    cpio_member(&mut a, "./dev/tty", 3, 0o020644, 1, 0, b"");
    cpio_member(&mut a, "./run/fifo", 4, 0o010644, 1, 0, b"");
    cpio_member(
        &mut a,
        "./etc/passwd-link",
        5,
        0o120777,
        1,
        11,
        b"/etc/passwd",
    );
    cpio_member(&mut a, "./bin/first-name", 6, 0o100755, 2, 0, b"");
    cpio_member(&mut a, "./bin/last-name", 6, 0o100755, 2, n, &app);
    let honest = a.len();
    cpio_member(
        &mut a,
        "./bin/liar",
        7,
        0o100755,
        1,
        1 << 30,
        b"\x7fELF\x02\x01\x01",
    );
    let archive = work.join("liar.cpio");
    std::fs::write(&archive, &a).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    for says in [
        "climbs out of the archive",
        "is an absolute path",
        "liar.cpio",
        "truncated?",
    ] {
        assert!(run.stderr.contains(says), "{says}: {}", run.stderr);
    }
    // Both names of the hard-linked app, nothing else.
    let mut names: Vec<String> = walk_files(&run.store)
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["first-name.sym", "last-name.sym"], "{}", run.stderr);
    assert!(!work.join("outside").exists() && !Path::new("/abs/app").exists());
    // Without the liar, and ended: read whole.
    a.truncate(honest);
    cpio_trailer(&mut a);
    std::fs::write(&archive, &a).unwrap();
    let run = store_run(&work, &archive);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(walk_files(&run.store).len(), 2, "{}", run.stderr);
}

/// `mksquashfs tree image` with `extra` options (metadata left uncompressed with
/// `-noI -noD` where a test edits it).
fn mksquashfs(tree: &Path, image: &Path, extra: &[&str]) {
    let status = Command::new("mksquashfs")
        .arg(tree)
        .arg(image)
        .args([
            "-noappend",
            "-quiet",
            "-no-progress",
            "-no-xattrs",
            "-all-root",
        ])
        .args(extra)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("mksquashfs (apt-get install squashfs-tools)");
    assert!(status.success());
}

#[test]
fn squashfs_images_that_lie() {
    let work = scratch("hpkg-squashfs");
    let tree = work.join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("app"), app()).unwrap();
    std::fs::write(tree.join("sub/note"), b"text").unwrap();
    let image = work.join("plain.snap");
    mksquashfs(&tree, &image, &["-noI", "-noD", "-comp", "xz"]);
    let bytes = std::fs::read(&image).unwrap();
    let run = store_run(&work, &image);
    assert!(run.ok, "{}", run.stderr);
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);

    // Cut short; an unknown compressor; a block size that is no power of two.
    let mut cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("cut", bytes[..bytes.len() / 2].to_vec(), "truncated?"),
        ("codec", bytes.clone(), "compressor 9"),
        ("blocks", bytes.clone(), "block size"),
    ];
    cases[1].1[20] = 9;
    cases[2].1[12..16].copy_from_slice(&3000u32.to_le_bytes());
    // The directory `sub` pointed back at the root: a directory inside itself.
    let root = u64::from_le_bytes(bytes[32..40].try_into().unwrap());
    let directory_table = u64::from_le_bytes(bytes[72..80].try_into().unwrap()) as usize;
    let at = directory_table
        + bytes[directory_table..]
            .windows(3)
            .position(|w| w == b"sub")
            .expect("sub in the directory table");
    let mut cycle = bytes.clone();
    cycle[at - 8..at - 6].copy_from_slice(&((root & 0xFFFF) as u16).to_le_bytes());
    cases.push(("cycle", cycle, "is inside itself"));
    for (label, bytes, says) in cases {
        let image = work.join(format!("{label}.snap"));
        std::fs::write(&image, bytes).unwrap();
        let run = store_run(&work, &image);
        assert!(!run.ok, "{label}: {}", run.stderr);
        assert!(run.stderr.contains(says), "{label}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("{label}.snap")),
            "{}",
            run.stderr
        );
    }
}

/// A file of an ELF header and a GiB of holes (sparse blocks, stored as nothing), and
/// directories nested 600 deep.
#[test]
fn squashfs_sparse_bombs_and_deep_nesting() {
    let work = scratch("hpkg-squashfs-bomb");
    let tree = work.join("tree");
    std::fs::create_dir_all(&tree).unwrap();
    let bomb = tree.join("libbomb.so");
    std::fs::write(&bomb, app()).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&bomb)
        .unwrap()
        .set_len(1 << 30)
        .unwrap();
    let image = work.join("sparse.snap");
    mksquashfs(&tree, &image, &["-b", "1M"]);
    assert!(std::fs::metadata(&image).unwrap().len() < 1 << 20);
    let run = store_run(&work, &image);
    assert!(!run.ok, "{}", run.stderr);
    assert!(
        run.stderr.contains("a decompression bomb?"),
        "{}",
        run.stderr
    );

    let deep = work.join("deep");
    let mut dir = deep.clone();
    for _ in 0..600 {
        dir.push("d");
    }
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(deep.join("app"), app()).unwrap();
    let image = work.join("deep.snap");
    mksquashfs(&deep, &image, &[]);
    let run = store_run(&work, &image);
    assert!(!run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("directories deep"), "{}", run.stderr);
    // What came before the damage: the app, listed before the directories below it.
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);
}

/// Alpine packages: a data stream cut short after its first member (the signature and
/// control streams whole), and a bomb in the third stream. Each fails naming the
/// package, with the member before the damage dumped.
#[test]
fn alpine_packages_cut_short_or_a_bomb_in_the_data_stream() {
    let work = scratch("hpkg-apk");
    let app = app();
    let whole = crate::archives::apk("app", &[("usr/bin/app", &app), ("usr/bin/app-too", &app)]);
    // The signature and control streams, then the data stream cut inside its second
    // member: decompressed, the first member is whole.
    let control = crate::archives::apk("app", &[]);
    let data_start = control.len() - crate::archives::apk_segment(&[], false).len();
    let data = &whole[data_start..];
    let mut cut = whole[..data_start].to_vec();
    let raw: Vec<u8> = {
        use std::io::Read as _;
        let mut out = Vec::new();
        flate2::read::GzDecoder::new(data)
            .read_to_end(&mut out)
            .unwrap();
        out
    };
    cut.extend(gzip(
        &raw[..512 + app.len().next_multiple_of(512) + 512 + 4096],
    ));
    let archive = work.join("app-1.0-r0.apk");
    std::fs::write(&archive, &cut).unwrap();
    let run = store_run(&work, &archive);
    assert!(!run.ok, "{}", run.stderr);
    assert!(run.stderr.contains("app-1.0-r0.apk"), "{}", run.stderr);
    assert_eq!(walk_files(&run.store).len(), 1, "{}", run.stderr);

    // A member of a GiB of zeros in the data stream, after the app.
    let mut tar = Vec::new();
    {
        let mut b = tar::Builder::new(&mut tar);
        let mut header = tar::Header::new_ustar();
        header.set_size(app.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        b.append_data(&mut header, "usr/bin/app", &app[..]).unwrap();
        b.finish().unwrap();
    }
    tar.truncate(tar.len() - 1024);
    let mut header = tar::Header::new_ustar();
    header.set_path("usr/lib/libbomb.so").unwrap();
    header.set_size(1 << 30);
    header.set_mode(0o755);
    header.set_cksum();
    tar.extend_from_slice(header.as_bytes());
    tar.extend_from_slice(b"\x7fELF\x02\x01\x01");
    let mut bomb = whole[..data_start].to_vec();
    bomb.extend(gzipped_zeros(&tar, 1 << 30));
    let archive = work.join("bomb-1.0-r0.apk");
    std::fs::write(&archive, bomb).unwrap();
    assert_stops_at_the_budget_with_one_module(&work, &archive);
}
