//! Entry points for the fuzz targets in `fuzz/`: each hands arbitrary bytes to one parser
//! this crate wrote itself (the container and DWARF parsing are object's and gimli's, and
//! fuzzed there) and checks what must hold of the result, so that a fuzzer finds wrong
//! output as well as panics. Not a stable API.

use crate::unwind::CfiArch;

/// Every line must be a STACK CFI record.
fn check_stack_cfi(text: &[u8]) {
    let text = std::str::from_utf8(text).expect("STACK CFI is not UTF-8");
    for line in text.lines() {
        assert!(
            line.starts_with("STACK CFI "),
            "not a STACK CFI record: {line:?}"
        );
        assert!(!line.ends_with(' '), "trailing space: {line:?}");
    }
    assert!(text.is_empty() || text.ends_with('\n'));
}

/// The first byte picks the architecture and the section kind; the rest is a whole
/// `.eh_frame` (or `.debug_frame`) section: CIE and FDE parsing, the CFA program VM,
/// expression translation and the output bounds.
pub fn unwind_section(data: &[u8]) {
    let Some((&pick, section)) = data.split_first() else {
        return;
    };
    const ARCHES: [CfiArch; 8] = [
        CfiArch::X86_64,
        CfiArch::X86,
        CfiArch::Arm64,
        CfiArch::Ppc,
        CfiArch::Ppc64,
        CfiArch::Arm,
        CfiArch::Riscv,
        CfiArch::Mips,
    ];
    let arch = ARCHES[usize::from(pick >> 1) % ARCHES.len()];
    let (out, _) = crate::unwind::fuzz::render_section(
        section,
        pick & 1 == 1,
        arch,
        &crate::breakpad::cfi::Text,
    );
    check_stack_cfi(&out);
    assert!(
        out.len() as u64 <= crate::unwind::file_allowance(section.len() as u64),
        "{} bytes of STACK CFI from a {}-byte section",
        out.len(),
        section.len()
    );
}

/// A DWARF expression as a CFA or register rule, with and without a program counter.
pub fn dwarf_expression(data: &[u8]) {
    let Some((&pick, expr)) = data.split_first() else {
        return;
    };
    let arch = [
        CfiArch::X86_64,
        CfiArch::X86,
        CfiArch::Arm64,
        CfiArch::Ppc64,
    ][usize::from(pick) % 4];
    for pc in [None, Some(0x1234)] {
        if let Some(tokens) = crate::unwind::fuzz::translate_expression(expr, arch, pc) {
            let postfix = crate::breakpad::cfi::postfix_text(&tokens);
            assert!(!postfix.contains('\n'), "{postfix:?}");
            assert!(!postfix.is_empty());
            // A postfix expression is at most a few tokens per operation.
            assert!(postfix.len() <= 64 * (expr.len() + 1), "{postfix:?}");
        }
    }
}

/// ARM EHABI tables: two bytes giving the length of `.ARM.exidx` (little-endian), that
/// section, then `.ARM.extab`. Every entry is decoded; each rule set starts with `.cfa`
/// and `.ra` and is one line.
pub fn exidx(data: &[u8]) {
    let Some((len, rest)) = data.split_at_checked(2) else {
        return;
    };
    let len = usize::from(u16::from_le_bytes([len[0], len[1]])).min(rest.len());
    let (exidx, extab) = rest.split_at(len);
    for rules in crate::unwind::fuzz::decode_exidx(exidx, extab) {
        let rules = crate::breakpad::cfi::to_strings(&rules);
        assert!(rules.len() >= 2 && rules[0].0 == ".cfa" && rules[1].0 == ".ra");
        for (name, value) in rules {
            assert!(
                !value.is_empty() && !value.contains('\n'),
                "{name}: {value:?}"
            );
        }
    }
}

/// A Mach-O `__unwind_info` section, with every entry's encoding decoded.
pub fn compact_unwind(data: &[u8]) {
    crate::unwind::fuzz::decode_compact(data);
}

/// The sections naming companion files: `.gnu_debuglink`, `.gnu_debugaltlink`,
/// `.debug_sup`.
pub fn link_sections(data: &[u8]) {
    for big_endian in [false, true] {
        if let Some((name, _)) = crate::locate::parse_debuglink(data, big_endian) {
            // It names a file beside the binary: never a path.
            assert!(!name.is_empty() && !name.contains('/'));
        }
    }
    let _ = crate::dwarf::parse_link(data);
}

/// A `.debug_info` section cut into units as it streams out of zlib: the units are in
/// order, do not overlap and lie within the section.
pub fn debug_info_stream(data: &[u8]) {
    let units = crate::dwarf::split_streamed(data);
    let mut end = 0;
    for (offset, len) in units {
        assert!(offset >= end, "units overlap");
        end = offset + len;
        assert!(end <= data.len(), "a unit past the section's end");
    }
}

/// A line program decoded by our loop and by gimli: the same rows wherever ours gives
/// them (see `dwarf::line_program`).
pub fn line_program(data: &[u8]) {
    crate::dwarf::check_line_program(data);
}

/// Windows unwind tables: the first byte picks x64 or arm64 and how many bytes of
/// `.pdata` follow (in entries); the rest is the section their unwind information is
/// in. Every entry's rows must start at its function, increase, and carry `.cfa` and
/// `.ra` first.
pub fn pe_unwind(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let arm64 = pick & 1 == 1;
    let entry = if arm64 { 8 } else { 12 };
    let split = (usize::from(pick >> 1) * entry).min(rest.len());
    let (pdata, image) = rest.split_at(split);
    for rows in crate::unwind::fuzz::pe_rows(pdata, image, arm64)
        .into_iter()
        .flatten()
    {
        let mut last = None;
        for (i, (offset, rules)) in rows.iter().enumerate() {
            let rules = crate::breakpad::cfi::to_strings(rules);
            if i == 0 {
                assert_eq!(*offset, 0, "the first row is not at the function's start");
            }
            assert!(
                last.is_none_or(|l| l < *offset),
                "rows out of order: {rows:?}"
            );
            last = Some(*offset);
            assert!(rules.len() >= 2 && rules[0].0 == ".cfa" && rules[1].0 == ".ra");
            for (name, value) in rules {
                assert!(!name.is_empty() && !value.is_empty() && !value.contains('\n'));
            }
        }
    }
}

/// A whole PDB through the dump (MSF container, DBI, module streams, IPI names, frame
/// data): the input is a PDB's bytes after its 32-byte magic, which is put back, so the
/// fuzzer spends no time finding it. Besides well-formed records, the output must stay
/// within 100 times the input plus 16 MB.
pub fn pdb(data: &[u8]) {
    let mut bytes = b"Microsoft C/C++ MSF 7.00\r\n\x1aDS\0\0\0".to_vec();
    bytes.extend_from_slice(data);
    let len = bytes.len();
    let out = dump_checked(bytes);
    assert!(
        out <= 100 * len + (16 << 20),
        "{out} bytes of output from a {len}-byte PDB"
    );
}

/// An MSFZ (compressed PDB) container: the input is the file after its 32-byte
/// signature, which is put back. What is written back must be an MSF file that the
/// PDB reader's own container check accepts, within the budget given (100 times the
/// input plus 1 MB), and then dump without panicking.
pub fn msfz(data: &[u8]) {
    let mut bytes = b"Microsoft MSFZ Container\r\n\x1aALD\0\0".to_vec();
    bytes.extend_from_slice(data);
    let budget = 100 * bytes.len() as u64 + (1 << 20);
    let mut msf = Vec::new();
    if crate::msfz::unpack_within(&bytes, budget, &mut msf).is_err() {
        return;
    }
    assert!(msf.len() as u64 <= budget, "{} bytes written", msf.len());
    assert!(crate::pdb::is_pdb(&msf));
    if let Err(why) = crate::pdb::check_container(&msf) {
        panic!("the MSF file written back fails its own check: {why}");
    }
    dump_checked(msf);
}

/// Each demangler on a name that may nest as deep as the fuzzer likes: the first byte
/// picks a scheme and a repeat count, the rest is `prefix|fragment|suffix`, and the
/// name is the prefix, the fragment repeated, then the suffix. It is demangled on a
/// thread with a 256 KiB stack, far less than any caller's, so a demangler whose stack
/// is not grown to what the name can need overflows here. The result must be the name
/// itself (too deep, or not mangled) or a name without control characters, and a
/// legacy Rust name must be read as rustc-demangle reads it.
pub fn demangle(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let text = String::from_utf8_lossy(rest);
    let mut parts = text.splitn(3, '|');
    let (prefix, fragment, suffix) = (
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
        parts.next().unwrap_or(""),
    );
    let scheme = ["?", "_Z", "_R", "_ZN", ""][usize::from(pick % 5)];
    let repeats = usize::from(pick / 5) * 300;
    let mut name = format!("{scheme}{prefix}");
    for _ in 0..repeats {
        if name.len() > 80_000 {
            break;
        }
        name.push_str(fragment);
    }
    name.push_str(suffix);
    let lang = if pick & 1 == 0 {
        crate::demangle::Lang::Other
    } else {
        crate::demangle::Lang::Rust
    };
    let raw = name.clone();
    let out = std::thread::Builder::new()
        .stack_size(256 << 10)
        .spawn(move || crate::demangle::demangle(&name, lang))
        .expect("a thread")
        .join()
        .expect("the demangler panicked");
    if crate::demangle::too_deep(&raw) {
        assert_eq!(out, raw, "a name too long for the demanglers was demangled");
    } else if raw.starts_with("_ZN") {
        crate::demangle::check_rust_legacy(&raw);
    }
}

/// Swift's demangler (a C++ library) on any name with a Swift prefix: the first byte
/// picks the prefix. It must return, within its allocation budget, whatever the name
/// (see `src/demangle/swift_guard.cpp`), with a name or nothing, the same each time.
/// Where `DUMPSYMS_SWIFT_HELPER_EXE` names a `dumpsyms` executable, names go to its
/// helper process as the command sends them (names that exhaust memory through malloc
/// are contained there and only there); otherwise they are demangled here.
pub fn demangle_swift(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    static HELPER: std::sync::Once = std::sync::Once::new();
    HELPER.call_once(|| {
        if let Some(exe) = std::env::var_os("DUMPSYMS_SWIFT_HELPER_EXE") {
            crate::demangle::swift_helper::isolate(exe.into());
        }
    });
    let prefix = ["$s", "_$s", "$S", "_T0", "$e"][usize::from(pick % 5)];
    let name = format!("{prefix}{}", String::from_utf8_lossy(rest));
    let read = |name: &str| match crate::demangle::swift_helper::demangle(name) {
        Some(answer) => answer,
        None => crate::demangle::swift::demangle_here(name),
    };
    let out = read(&name);
    assert!(out.as_ref().is_none_or(|n| !n.is_empty()), "{name:?}");
    assert_eq!(out, read(&name), "{name:?} read two ways");
}

/// Dumps `bytes` and checks what is written as [`dump`] does; the bytes written (0 when
/// the dump failed).
fn dump_checked(bytes: Vec<u8>) -> usize {
    let opts = crate::options::Options {
        inlines: true,
        multiple_field: true,
        ..Default::default()
    };
    let Ok(dump) = crate::dumping::dump_bytes("fuzz-input", bytes, &opts) else {
        return 0;
    };
    let mut out = Vec::new();
    crate::breakpad::write_module(&dump.module, &Default::default(), &mut out)
        .expect("writing to memory");
    check_records(&out);
    out.len()
}

/// A whole dump of a file held in memory, with inlines; a dump that succeeds must write
/// only well-formed records.
pub fn dump(data: &[u8]) {
    dump_checked(data.to_vec());
}

fn check_records(out: &[u8]) {
    let text = std::str::from_utf8(out).expect("the symbol file is not UTF-8");
    for line in text.lines() {
        let known = [
            "MODULE ",
            "INFO ",
            "FILE ",
            "INLINE_ORIGIN ",
            "FUNC ",
            "INLINE ",
            "PUBLIC ",
            "STACK ",
        ]
        .iter()
        .any(|k| line.starts_with(k))
            || line.starts_with(|c: char| c.is_ascii_hexdigit());
        assert!(known, "not a record: {line:?}");
    }
}

/// The crate-private pieces the integration tests drive directly, each checked there
/// against what a caller of the binary cannot reach: a deep name's demangling on a
/// small stack, an input that changes while mapped, a tree walk over files that change
/// their kind.
pub mod internals {
    pub use crate::batch::tree::{Role, files};
    pub use crate::demangle::swift::demangle_here as demangle_swift_here;
    pub use crate::demangle::{Lang, demangle};
    pub use crate::load::Input;

    /// What the file at `path` is to a tree dump.
    pub fn role(path: &std::path::Path) -> Role {
        use crate::batch::tree;
        tree::open(path).map_or_else(|role| role, |input| tree::role(&input))
    }
}

/// A symbol file as `dumpsyms symbolize` reads one from a store: parsed, then looked
/// up at addresses taken from the input itself (and the ends of the address space).
/// Every answer must be a chain of inlined calls ending in one function that is not.
pub fn symbol_file(data: &[u8]) {
    let sym = crate::symbolize::symfile::SymFile::parse(data);
    let probes = data
        .chunks_exact(8)
        .take(64)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .chain([0, 1, sym.end(), sym.end().wrapping_sub(1), u64::MAX]);
    for addr in probes {
        let frames = sym.lookup(addr);
        if let Some((outer, inlined)) = frames.split_last() {
            assert!(!outer.inlined, "{addr:#x}: the outermost frame is inlined");
            assert!(inlined.iter().all(|f| f.inlined && !f.public));
        }
    }
}

/// Each line of `data` through the grammar of frames `dumpsyms symbolize` reads (every
/// family's shape) and through what it learns of modules from other lines: a frame's
/// span lies inside its line, on character boundaries, and its module is part of it.
pub fn report_frames(data: &[u8]) {
    use crate::symbolize::input::{Context, frame};
    let text = String::from_utf8_lossy(data);
    let mut context = Context::default();
    for line in text.split('\n') {
        context.learn(line);
        if let Some(f) = frame(line) {
            assert!(
                f.span.start <= f.span.end && f.span.end <= line.len(),
                "{line:?}"
            );
            assert!(line.is_char_boundary(f.span.start) && line.is_char_boundary(f.span.end));
            // A stackwalker's bare address names no module: only the report's module
            // list can place it.
            if f.module.is_empty() {
                assert_eq!(f.base, crate::symbolize::input::Base::Absolute, "{line:?}");
                continue;
            }
            // The module is named in the line, but for a Dart trace's snapshot, which
            // its header identifies.
            let module_at = (f.module.as_ptr() as usize).wrapping_sub(line.as_ptr() as usize);
            assert!(
                module_at.saturating_add(f.module.len()) <= line.len() || f.module == "libapp.so",
                "{line:?}"
            );
            let _ = context.build_id(f.module);
        }
    }
}

/// A report's module-map lines (the kernel's maps as glibc prints them, a tombstone's,
/// Apple's `Binary Images`, a stackwalker's `Loaded modules`, Wine's `Modules:`):
/// whatever they say, an address placed lies at or past its module's base, the offset
/// is the address less it, and the module has a name.
pub fn report_maps(data: &[u8]) {
    use crate::symbolize::maps::ModuleMap;
    let text = String::from_utf8_lossy(data);
    let mut map = ModuleMap::default();
    let mut addresses = Vec::new();
    for line in text.split('\n') {
        map.learn(line);
        let words = line.split(|c: char| !c.is_ascii_hexdigit() && c != 'x');
        for word in words.filter_map(|w| w.strip_prefix("0x")).take(64) {
            if let Ok(a) = u64::from_str_radix(word, 16) {
                addresses.push(a);
            }
        }
    }
    for &a in addresses.iter().take(4096) {
        for module in [None, Some("libc.so.6"), Some("./app"), Some("ntdll")] {
            if let Some(p) = map.place(module, a) {
                assert!(p.offset <= a && !p.name.is_empty(), "{a:#x} {p:?}");
            }
        }
    }
}

/// Apple's `.ips` report: the header line, then any bytes as its body. Nothing
/// resolves (no symbols), so the text comes back byte for byte; `--json` is JSON.
pub fn report_ips(data: &[u8]) {
    use crate::symbolize::run::Format;
    use crate::symbolize::{Symbolizer, sources::Sources};
    let run = |s: &mut Symbolizer, mut d: &[u8], o: &mut Vec<u8>, f| s.run(&mut d, o, f);
    let mut doc = b"{\"bug_type\":\"309\",\"app_name\":\"x\"}\n".to_vec();
    doc.extend_from_slice(data);
    let mut symbolizer = Symbolizer::with_sources(Sources::default());
    let mut out = Vec::new();
    if let Ok(tally) = run(&mut symbolizer, &doc[..], &mut out, Format::Text) {
        assert_eq!(tally.resolved, 0);
        assert!(out == doc, "a byte changed where nothing resolved");
    }
    let mut json = Vec::new();
    if run(&mut symbolizer, &doc[..], &mut json, Format::Json).is_ok() {
        serde_json::from_slice::<serde_json::Value>(&json).expect("--json writes JSON");
    }
}

/// A crash report as `dumpsyms symbolize` reads one, with no symbols to be found (no
/// store, and the paths the report names are not read): the text comes back byte for
/// byte (nothing resolved), and the JSON form is JSON.
pub fn report(data: &[u8]) {
    use crate::symbolize::run::Format;
    use crate::symbolize::{Symbolizer, sources::Sources};
    let run = |s: &mut Symbolizer, mut d: &[u8], o: &mut Vec<u8>, f| s.run(&mut d, o, f);
    let mut symbolizer = Symbolizer::with_sources(Sources::default());
    let mut out = Vec::new();
    let text = run(&mut symbolizer, data, &mut out, Format::Text);
    if let Ok(tally) = text {
        assert_eq!(tally.resolved, 0);
        let is_trace = data.trim_ascii_start().starts_with(b"{");
        if !is_trace {
            assert!(out == data, "a byte changed where nothing resolved");
        }
    }
    let mut json = Vec::new();
    if run(&mut symbolizer, data, &mut json, Format::Json).is_ok() {
        serde_json::from_slice::<serde_json::Value>(&json).expect("--json writes JSON");
    }
}

/// A symbol server's compressed answer: any bytes as a cabinet, inflated under a 1 MiB
/// bound (the same code that fills the cache). Never more than the bound, nor more than
/// the size the cabinet states.
#[cfg(feature = "net")]
pub fn cabinet(data: &[u8]) {
    let mut out = Vec::new();
    if let Ok(size) =
        crate::fetch::cab::inflate_one(std::io::Cursor::new(data), "app.pdb", 1 << 20, &mut out)
    {
        assert_eq!(size, out.len() as u64);
        assert!(out.len() <= 1 << 20);
    }
}

/// Any bytes as a ZIP archive given to a store run, read as it would be (nothing
/// written): no panic, no member past the bound of a run.
#[cfg(feature = "archives")]
pub fn archive_zip(data: &[u8]) {
    archive(data, crate::archive::Kind::Zip);
}

/// Any bytes as a tar archive, the first byte choosing its compression (none, gzip, xz,
/// zstd, bzip2).
#[cfg(feature = "archives")]
pub fn archive_tar(data: &[u8]) {
    use crate::archive::Packing;
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let packing = [
        Packing::Plain,
        Packing::Gzip,
        Packing::Xz,
        Packing::Zstd,
        Packing::Bzip2,
    ][usize::from(pick) % 5];
    archive(data, crate::archive::Kind::Tar(packing));
}

/// Any bytes as a Debian package.
#[cfg(feature = "archives")]
pub fn archive_deb(data: &[u8]) {
    archive(data, crate::archive::Kind::Deb);
}

/// Any bytes as an RPM package (lead, headers, a compressed cpio payload).
#[cfg(feature = "archives")]
pub fn archive_rpm(data: &[u8]) {
    archive(data, crate::archive::Kind::Rpm);
}

/// Any bytes as a `newc` cpio archive.
#[cfg(feature = "archives")]
pub fn archive_cpio(data: &[u8]) {
    archive(data, crate::archive::Kind::Cpio);
}

/// Any bytes as a squashfs image (a snap).
#[cfg(feature = "archives")]
pub fn archive_squashfs(data: &[u8]) {
    archive(data, crate::archive::Kind::Squashfs);
}

/// Any bytes as an Alpine package: gzip streams laid end to end, read as one tar.
#[cfg(feature = "archives")]
pub fn archive_apk(data: &[u8]) {
    archive(
        data,
        crate::archive::Kind::Tar(crate::archive::Packing::Gzip),
    );
}

#[cfg(feature = "archives")]
fn archive(data: &[u8], kind: crate::archive::Kind) {
    // Read from a file, as a store run reads archives.
    let Ok(mut file) = tempfile::tempfile() else {
        return;
    };
    if std::io::Write::write_all(&mut file, data).is_err() {
        return;
    }
    let Ok(source) = crate::archive::Source::new(file) else {
        return;
    };
    let (members, _) = crate::archive::read_members(source, kind);
    assert!(members <= crate::archive::MAX_MEMBERS + 1);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The targets on real input: each fixture whole, and its unwind sections alone.
    #[test]
    fn targets_accept_real_input() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bin/x86_64");
        let bytes = std::fs::read(dir.join("unwind-gcc-O2")).unwrap();
        dump(&bytes);
        let file = object::File::parse(&*bytes).unwrap();
        use object::{Object as _, ObjectSection as _};
        let eh = file.section_by_name(".eh_frame").unwrap().data().unwrap();
        let mut input = vec![0u8];
        input.extend_from_slice(eh);
        unwind_section(&input);
        let (out, skipped) = crate::unwind::fuzz::render_section(
            eh,
            false,
            CfiArch::X86_64,
            &crate::breakpad::cfi::Text,
        );
        assert!(out.len() > 1000 && skipped.is_empty(), "{skipped:?}");
        let info = file.section_by_name(".debug_info");
        if let Some(info) = info {
            let data = info.data().unwrap();
            debug_info_stream(data);
            assert!(!crate::dwarf::split_streamed(data).is_empty());
        }
        let lines = file.section_by_name(".debug_line").unwrap().data().unwrap();
        line_program(&[&[0u8][..], lines].concat());
        dwarf_expression(&[0, 0x77, 0x08, 0x80, 0x00, 0x22]);
        let pdb_file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/windows/msvc-x86_64/app.pdb");
        pdb(&std::fs::read(pdb_file).unwrap()[32..]);
        // 30,000 levels of MSVC pointers and of Itanium pointers, on a small stack.
        demangle(b"\xfa@@YAX|PEA|H@Z");
        demangle(b"\xfb1fP|PK|i");
        link_sections(b"app.debug\0\0\0\x01\x02\x03\x04");
        compact_unwind(&[1, 0, 0, 0]);
        // An x64 entry for 0x1000..0x1100 whose UNWIND_INFO (push rbp) is at 0x2000.
        let mut pe = vec![2u8];
        for w in [0x1000u32, 0x1100, 0x2000] {
            pe.extend_from_slice(&w.to_le_bytes());
        }
        pe.extend_from_slice(&[1, 1, 1, 0, 1, 0x50, 0, 0]);
        pe_unwind(&pe);
        let rows = crate::unwind::fuzz::pe_rows(&pe[1..13], &pe[13..], false);
        assert_eq!(rows[0].as_ref().unwrap().len(), 2);
        symbol_file(
            b"MODULE Linux x86_64 0 a\nFUNC 10 10 0 f\n10 10 1 0\nINLINE 0 1 0 0 10 4\n\
              INLINE_ORIGIN 0 g\n\x10\0\0\0\0\0\0\0",
        );
        report(b"    #0 0x1 (/a+0x10) (BuildId: 00)\n\xffx\nlib+0x1\n");
        report(b"\n\n{\"symbols\": []}");
        report(b"");
        report(b"    #0 0x1 (/a+0x10)\r\n#1 pc 10 /x.so\r\nlast line");
        report_frames(
            b"#0 0x1 (\xc3\xa9+0x1)\n(\n[ +0x1]\n<+0x>\npc 1 \n 0  + 0x1\nModule a with build-id",
        );
        #[cfg(feature = "net")]
        {
            let lzx = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("fixtures/windows/lzx/app.pd_");
            cabinet(&std::fs::read(lzx).unwrap());
        }
    }
}
