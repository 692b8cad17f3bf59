//! Damaged inputs: truncated files and garbage in every DWARF section never panic, and
//! whatever output is produced still satisfies the format's invariants.

use std::path::Path;

use crate::common::*;
use dumpsyms::{Warning, WarningKind};
use object::{Object as _, ObjectSection as _};

/// A small deterministic generator (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// A path for one crafted file, in a directory of its own.
fn scratch_file(name: &str) -> Scratch {
    scratch(&format!("corrupt-{name}")).within(name)
}

/// Dumps `bytes` from a file; a successful dump must produce a well-formed symbol file.
fn dump_bytes(bytes: &[u8], path: &Path, what: &str) -> Result<dumpsyms::Dump, dumpsyms::Error> {
    std::fs::write(path, bytes).unwrap();
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    let result = dumpsyms::dump(path, &opts);
    if let Ok(d) = &result {
        let mut buf = Vec::new();
        dumpsyms::write_module(&d.module, &Default::default(), &mut buf).unwrap();
        let text = String::from_utf8(buf).unwrap_or_else(|_| panic!("{what}: output is not UTF-8"));
        parse(&text);
    }
    result
}

/// Where section `name`'s bytes are in the file: (offset, length).
fn section_range(bytes: &[u8], name: &str) -> (usize, usize) {
    let file = object::File::parse(bytes).unwrap();
    let (offset, len) = file.section_by_name(name).unwrap().file_range().unwrap();
    (offset as usize, len as usize)
}

const VICTIMS: [&str; 5] = [
    "x86_64/cpp-gcc-O2-dwarf5",
    "aarch64/c-clang-O2-dwarf4",
    "i686/cpp-clang-O0-dwarf5",
    "x86_64/c-gcc-O2-dwarf5-zlib",
    "x86_64/unwind-gcc-O2-debugframe",
];

#[test]
fn truncated_files_never_panic() {
    for victim in VICTIMS {
        let bytes = std::fs::read(fixtures().join("bin").join(victim)).unwrap();
        let out = scratch_file(&format!("trunc-{}", victim.replace('/', "-")));
        let mut cuts: Vec<usize> = (0..128).collect();
        cuts.extend((1..200).map(|k| bytes.len() * k / 200));
        let (mut ok, mut err) = (0, 0);
        for cut in cuts {
            match dump_bytes(&bytes[..cut], &out, &format!("{victim} cut at {cut}")) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(
                        e.to_string().contains(out.to_str().unwrap()),
                        "error does not name the file: {e}"
                    );
                    err += 1;
                }
            }
        }
        println!("{victim}: {ok} truncations dumped, {err} refused");
        assert!(err > 0, "{victim}: tiny truncations must be refused");
    }
}

#[test]
fn garbage_in_debug_sections_never_panics() {
    let sections = [
        ".debug_info",
        ".debug_abbrev",
        ".debug_line",
        ".debug_str",
        ".debug_line_str",
        ".debug_rnglists",
        ".debug_ranges",
        ".debug_addr",
        ".debug_str_offsets",
        ".eh_frame",
        ".debug_frame",
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for victim in VICTIMS.iter().filter(|v| !v.ends_with("zlib")) {
        let bytes = std::fs::read(fixtures().join("bin").join(victim)).unwrap();
        let file = object::File::parse(&*bytes).unwrap();
        let out = scratch_file(&format!("flip-{}", victim.replace('/', "-")));
        for name in sections {
            let Some(range) = file.section_by_name(name).and_then(|s| s.file_range()) else {
                continue;
            };
            let (start, len) = (range.0 as usize, range.1 as usize);
            if len == 0 {
                continue;
            }
            let mut warned = 0;
            for round in 0..40 {
                let mut copy = bytes.clone();
                let flips = 1 + (rng.next() % 8) as usize;
                for _ in 0..flips {
                    let at = start + (rng.next() as usize) % len;
                    copy[at] ^= 1 << (rng.next() % 8);
                }
                let what = format!("{victim} {name} round {round}");
                let d = dump_bytes(&copy, &out, &what)
                    .unwrap_or_else(|e| panic!("{what}: refused: {e}"));
                warned += usize::from(!d.warnings.is_empty());
            }
            println!("{victim} {name}: 40 damaged copies dumped, {warned} with warnings");
        }
    }
}

#[test]
fn damage_inside_a_streamed_compressed_debug_info_never_panics() {
    // zlib-compressed .debug_info is inflated as a stream, unit by unit, and read again
    // for names that cross units (the LTO build). Damage to the compressed bytes makes
    // the inflater fail part way, or hand over garbage unit lengths and DIEs.
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for victim in [
        "bin/x86_64/c-gcc-O2-dwarf5-zlib",
        "extra/compressed/lto-zlib",
    ] {
        let bytes = std::fs::read(fixtures().join(victim)).unwrap();
        let (start, len) = section_range(&bytes, ".debug_info");
        // Past Elf64_Chdr (24 bytes): only the zlib stream itself is damaged.
        let (start, len) = (start + 24, len - 24);
        let out = scratch_file(&format!("zflip-{}", victim.replace('/', "-")));
        let mut named = 0;
        for round in 0..60 {
            let mut copy = bytes.clone();
            for _ in 0..1 + rng.next() % 4 {
                let at = start + (rng.next() as usize) % len;
                copy[at] ^= 1 << (rng.next() % 8);
            }
            let what = format!("{victim} compressed .debug_info round {round}");
            let d = dump_bytes(&copy, &out, &what).unwrap_or_else(|e| panic!("{what}: {e}"));
            named += usize::from(d.warnings.iter().any(|w| {
                matches!(w.kind, WarningKind::Dwarf | WarningKind::Container)
                    && w.message.contains(".debug_info")
            }));
        }
        assert!(
            named > 0,
            "{victim}: no damage was reported as .debug_info's"
        );
    }
}

#[test]
fn absurd_compressed_size_is_refused_not_allocated() {
    let path = fixtures().join("bin/x86_64/c-gcc-O2-dwarf5-zlib");
    let mut bytes = std::fs::read(&path).unwrap();
    let (offset, _) = section_range(&bytes, ".debug_info");
    // Elf64_Chdr: ch_type (4), ch_reserved (4), ch_size (8), ch_addralign (8).
    let at = offset + 8;
    bytes[at..at + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    let d = dump_bytes(&bytes, &scratch_file("huge-chdr"), "huge ch_size").unwrap();
    let warning = d
        .warnings
        .iter()
        .find(|w| w.kind == WarningKind::Container && w.scope.as_deref() == Some(".debug_info"))
        .unwrap_or_else(|| panic!("{:?}", d.warnings));
    assert!(
        warning.message.contains(&(1u64 << 60).to_string()),
        "{warning}"
    );
    // No DWARF functions, but the symbol table still names the code.
    assert!(d.module.functions.is_empty());
    assert!(d.module.publics.iter().any(|p| p.name == "main"));
}

#[test]
fn a_damaged_unit_is_skipped_and_the_others_kept() {
    // Break the abbreviation code of the first DIE of the first unit: that unit is lost,
    // the other (util.c) still comes out, with a warning naming the unit.
    let path = fixtures().join("bin/x86_64/c-gcc-O2-dwarf4");
    let mut bytes = std::fs::read(&path).unwrap();
    let (offset, _) = section_range(&bytes, ".debug_info");
    // DWARF 4 header: unit_length (4), version (2), abbrev offset (4), address size (1).
    bytes[offset + 11] = 0x7f;
    let d = dump_bytes(&bytes, &scratch_file("bad-unit"), "bad first unit").unwrap();
    let names: Vec<&str> = d.module.functions.iter().map(|f| f.name.as_str()).collect();
    assert!(
        names.contains(&"checksum") && names.contains(&"weird_sum"),
        "{names:?}"
    );
    assert!(!names.contains(&"fib"), "{names:?}");
    assert!(
        d.warnings.iter().any(|w| w.kind == WarningKind::Dwarf
            && w.scope.as_deref() == Some(".debug_info")
            && w.offset == Some(0)),
        "{:?}",
        d.warnings
    );
}

#[test]
fn damaged_macho_never_panics() {
    let files = [
        "macho/mac-arm64-O2",
        "macho/mac-x86_64-O0",
        "macho/mac-universal-O2",
        "macho/mac-x86_64-O2.dSYM/Contents/Resources/DWARF/mac-x86_64-O2",
    ];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    for rel in files {
        let bytes = std::fs::read(fixtures().join(rel)).unwrap();
        let out = scratch_file(&format!("macho-{}", rel.replace('/', "-")));
        // Truncated anywhere, load commands included.
        for k in 0..150 {
            let cut = bytes.len() * k / 150;
            let _ = dump_macho(&bytes[..cut], &out);
        }
        // Garbage in the unwind tables and the DWARF.
        if let Ok(file) = object::File::parse(&*bytes) {
            for name in [
                "__unwind_info",
                "__eh_frame",
                "__debug_info",
                "__debug_line",
                "__debug_abbrev",
            ] {
                let Some((start, len)) = file.section_by_name(name).and_then(|s| s.file_range())
                else {
                    continue;
                };
                for _ in 0..30 {
                    let mut copy = bytes.clone();
                    for _ in 0..1 + rng.next() % 8 {
                        let at = start as usize + (rng.next() as usize) % len.max(1) as usize;
                        copy[at] ^= 1 << (rng.next() % 8);
                    }
                    let _ = dump_macho(&copy, &out);
                }
            }
        }
    }
}

/// Dumps a Mach-O slice (arm64 for universal files); output, when there is any, must be
/// well formed.
fn dump_macho(bytes: &[u8], path: &Path) -> Result<(), dumpsyms::Error> {
    std::fs::write(path, bytes).unwrap();
    let mut opts = dumpsyms::Options::default();
    opts.inlines = true;
    opts.arch = Some(dumpsyms::Arch::Arm64);
    let thin = dumpsyms::dump(path, &opts)
        .or_else(|_| dumpsyms::dump(path, &dumpsyms::Options::default()))?;
    let mut buf = Vec::new();
    dumpsyms::write_module(&thin.module, &Default::default(), &mut buf).unwrap();
    parse(&String::from_utf8(buf).unwrap());
    Ok(())
}

#[test]
fn unknown_macho_cpu_type_is_a_clear_error() {
    let mut bytes = std::fs::read(fixtures().join("macho/mac-arm64-O2")).unwrap();
    // mach_header_64.cputype, just after the magic.
    bytes[4..8].copy_from_slice(&0x0000_0077u32.to_le_bytes());
    let path = scratch_file("macho-cpu");
    std::fs::write(&path, &bytes).unwrap();
    let e = dumpsyms::dump(&path, &dumpsyms::Options::default()).unwrap_err();
    assert!(e.to_string().contains("unknown Mach-O CPU type"), "{e}");
}

#[test]
fn an_unreadable_line_table_loses_only_line_records() {
    let path = fixtures().join("bin/x86_64/c-gcc-O2-dwarf4");
    let good = dump_bytes(
        &std::fs::read(&path).unwrap(),
        &scratch_file("lines-good"),
        "good",
    )
    .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    let (offset, _) = section_range(&bytes, ".debug_line");
    // The first line program's version (after its 4-byte unit_length): no such DWARF.
    bytes[offset + 4] = 0x63;
    let d = dump_bytes(&bytes, &scratch_file("bad-line"), "bad line table").unwrap();
    let names = |d: &dumpsyms::Dump| -> Vec<String> {
        d.module.functions.iter().map(|f| f.name.clone()).collect()
    };
    assert_eq!(names(&d), names(&good), "every FUNC is kept");
    let lines = |d: &dumpsyms::Dump| {
        let mut buf = Vec::new();
        dumpsyms::write_module(&d.module, &Default::default(), &mut buf).unwrap();
        String::from_utf8(buf)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with(|c: char| c.is_ascii_hexdigit()))
            .count()
    };
    assert!(
        lines(&d) < lines(&good),
        "the first unit's line records are gone"
    );
    assert!(lines(&d) > 0, "the second unit's line records stay");
    assert!(
        d.warnings.iter().any(|w| w.kind == WarningKind::Dwarf
            && w.offset == Some(0)
            && w.message.contains(".debug_line at 0x0")
            && w.message.contains("kept without line records")),
        "{:?}",
        d.warnings
    );
}

#[test]
fn an_unreadable_symbol_table_loses_only_public_records() {
    let path = fixtures().join("bin/x86_64/c-gcc-O2-dwarf4");
    let good = dump_bytes(
        &std::fs::read(&path).unwrap(),
        &scratch_file("symtab-good"),
        "good",
    )
    .unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    // SHT_SYMTAB's sh_size (at 0x20 in an ELF64 section header) claims 2^62 bytes.
    let header = section_header_named(&bytes, ".symtab");
    bytes[header + 0x20..header + 0x28].copy_from_slice(&(1u64 << 62).to_le_bytes());
    let d = dump_bytes(&bytes, &scratch_file("bad-symtab"), "bad symtab").unwrap();
    assert_eq!(d.module.functions.len(), good.module.functions.len());
    // What is left comes from .dynsym: the local symbols (`_init`, `frame_dummy`) are lost.
    assert!(
        d.module.publics.len() < good.module.publics.len(),
        "{} of {} PUBLIC records",
        d.module.publics.len(),
        good.module.publics.len()
    );
    let mut text = Vec::new();
    dumpsyms::write_module(&d.module, &Default::default(), &mut text).unwrap();
    assert!(
        String::from_utf8_lossy(&text).contains("\nSTACK CFI INIT "),
        "STACK CFI is still written from .eh_frame"
    );
    assert!(
        d.warnings.iter().any(|w| w.kind == WarningKind::Container
            && w.scope.as_deref() == Some(".symtab")
            && w.message.contains("PUBLIC")),
        "{:?}",
        d.warnings
    );
}

/// Where the header of the section called `name` is in a little-endian ELF64 file.
fn section_header_named(bytes: &[u8], name: &str) -> usize {
    let u16_at = |at: usize| u16::from_le_bytes(bytes[at..at + 2].try_into().unwrap()) as usize;
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let (shoff, count, strndx) = (u64_at(0x28), u16_at(0x3c), u16_at(0x3e));
    let names = u64_at(shoff + strndx * 64 + 0x18);
    (0..count)
        .map(|i| shoff + i * 64)
        .find(|&h| {
            let at = names + u32::from_le_bytes(bytes[h..h + 4].try_into().unwrap()) as usize;
            bytes[at..].split(|&b| b == 0).next() == Some(name.as_bytes())
        })
        .expect("no such section")
}

#[test]
fn a_section_outside_the_file_is_reported_as_such() {
    let path = fixtures().join("bin/x86_64/c-gcc-O2-dwarf4");
    let mut bytes = std::fs::read(&path).unwrap();
    // .debug_line's sh_offset points 1 TiB into a 20 KB file.
    let header = section_header_named(&bytes, ".debug_line");
    bytes[header + 0x18..header + 0x20].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let d = dump_bytes(&bytes, &scratch_file("line-outside"), "line outside").unwrap();
    assert!(!d.module.functions.is_empty(), "FUNC records stay");
    let about_line: Vec<&Warning> = d
        .warnings
        .iter()
        .filter(|w| w.scope.as_deref() == Some(".debug_line"))
        .collect();
    assert!(
        about_line
            .iter()
            .any(|w| w.kind == WarningKind::Container
                && w.message.contains("section size or offset")),
        "{about_line:?}"
    );
    assert!(
        !about_line.iter().any(|w| w.message.contains("compress")),
        "the section is not compressed: {about_line:?}"
    );
}

/// Windows images and PDBs, cut short and with bytes overwritten: a clear error or a
/// well-formed file, never a panic. The PDB is dumped through its image (which finds it
/// beside itself) and alone.
#[test]
fn damaged_pe_and_pdb_never_panic() {
    let dir = fixtures().join("windows");
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    for (victim, companion) in [
        ("msvc-x86_64/app.pdb", Some("msvc-x86_64/app.exe")),
        ("msvc-i686/app.pdb", Some("msvc-i686/app.exe")),
        ("msvc-aarch64/app.exe", None),
        ("msvc-x86_64/app.exe", None),
        ("mingw-i686/app.exe", None),
    ] {
        let bytes = std::fs::read(dir.join(victim)).unwrap();
        let case = scratch(&format!("corrupt-win-{}", victim.replace('/', "-")));
        let name = std::path::Path::new(victim).file_name().unwrap();
        let path = case.join(name);
        if let Some(image) = companion {
            // The image beside the damaged PDB: variants whose id still reads as the
            // image's are dumped through it, the others are refused as another build's.
            std::fs::copy(dir.join(image), case.join("app.exe")).unwrap();
        }
        let mut inputs: Vec<Vec<u8>> = (1..60)
            .map(|k| bytes[..bytes.len() * k / 60].to_vec())
            .collect();
        for _ in 0..60 {
            let mut b = bytes.clone();
            for _ in 0..16 {
                let at = (rng.next() % b.len() as u64) as usize;
                b[at] = rng.next() as u8;
            }
            inputs.push(b);
        }
        let (mut ok, mut err) = (0, 0);
        for (i, input) in inputs.iter().enumerate() {
            let what = format!("{victim} variant {i}");
            match dump_bytes(input, &path, &what) {
                Ok(_) => ok += 1,
                Err(e) => {
                    assert!(
                        e.to_string().contains(path.to_str().unwrap())
                            || e.to_string().contains("app."),
                        "{what}: error does not name the file: {e}"
                    );
                    err += 1;
                }
            }
            if companion.is_some() {
                // Through the image, which finds the damaged PDB beside it.
                let image = case.join("app.exe");
                if let Ok(d) = dumpsyms::dump(&image, &dumpsyms::Options::default()) {
                    let mut buf = Vec::new();
                    dumpsyms::write_module(&d.module, &Default::default(), &mut buf).unwrap();
                    parse(&String::from_utf8(buf).unwrap());
                }
            }
        }
        println!("{victim}: {ok} variants dumped, {err} refused");
        let _ = std::fs::remove_dir_all(&case);
    }
}
