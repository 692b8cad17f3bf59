//! Debug info kept where real builds keep it. Every fixture here was made from
//! bin/x86_64/c-gcc-O2-dwarf5 by objcopy (fixtures/make-fixtures.sh), so each must dump to
//! exactly that binary's symbol file; that file's agreement with llvm-symbolizer is
//! checked by tests/it/oracle.rs.

use std::process::Output;

use crate::common::*;

const NAME: &str = "c-gcc-O2-dwarf5";

fn path(rel: &str) -> String {
    fixtures().join(rel).to_string_lossy().into_owned()
}

fn reference() -> String {
    String::from_utf8(dumpsyms(&["-d", &path(&format!("bin/x86_64/{NAME}"))]).stdout).unwrap()
}

/// Dumps `rel` named like the original, with `-v`; returns (stdout, stderr).
fn dump(rel: &str, extra: &[&str]) -> (String, String) {
    let target = path(rel);
    let mut args = vec!["-d", "-v", "-n", NAME];
    args.extend_from_slice(extra);
    args.push(&target);
    let out = dumpsyms(&args);
    assert!(
        out.status.success(),
        "{rel}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn debuglink_beside_the_binary() {
    let (sym, err) = dump("extra/debuglink/app", &[]);
    assert_eq!(sym, reference());
    assert!(
        err.contains(&format!(
            "using debug file {}",
            path("extra/debuglink/app.debug")
        )),
        "{err}"
    );
}

#[test]
fn debuglink_in_dot_debug() {
    let (sym, err) = dump("extra/debuglink-dotdebug/app", &[]);
    assert_eq!(sym, reference());
    assert!(err.contains(".debug/app.debug"), "{err}");
}

#[test]
fn build_id_tree_in_a_debug_dir() {
    let root = path("extra/debugroot");
    // Both ways of naming a debug directory: Breakpad's trailing argument and --debug-dir.
    let (sym, err) = dump("extra/buildid/app", &["--debug-dir", &root]);
    assert_eq!(sym, reference());
    assert!(
        err.contains(".build-id/7d/6b17b5f780b9a1454269c447a919b4f9932026.debug"),
        "{err}"
    );
    let out = dumpsyms(&["-d", "-n", NAME, &path("extra/buildid/app"), &root]);
    assert_eq!(String::from_utf8(out.stdout).unwrap(), reference());
}

#[test]
fn without_its_debug_file_a_stripped_binary_still_has_its_identity_and_cfi() {
    let out = dumpsyms(&["-n", NAME, &path("extra/buildid/app")]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let sym = parse(&text);
    assert_eq!(text.lines().next(), reference().lines().next());
    assert!(sym.funcs.is_empty());
    // --strip-all left only .dynsym, where an executable defines no functions.
    assert!(sym.publics.is_empty());
    let cfi = |s: &str| {
        s.lines()
            .filter(|l| l.starts_with("STACK"))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(cfi(&text), cfi(&reference()));
}

/// The debug link names another build's file, with another CRC and build ID: the build
/// IDs settle it, as elfutils' libdwfl decides (the CRC is read only where a build ID is
/// missing; tests/it/hostile.rs checks that case).
#[test]
fn a_debug_link_with_the_wrong_crc_is_not_used() {
    let out = dumpsyms(&["-v", &path("extra/crc-mismatch/app")]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("does not match the binary's"), "{err}");
    assert!(err.contains("no debug info found"), "{err}");
    assert!(err.contains("debug link app.debug"), "{err}");
    assert!(
        parse(&String::from_utf8(out.stdout).unwrap())
            .funcs
            .is_empty()
    );
}

#[test]
fn a_build_id_tree_file_of_another_build_is_not_used() {
    let dir = std::env::temp_dir().join(format!("dumpsyms-wrong-id-{}", std::process::id()));
    let slot = dir.join(".build-id/7d");
    std::fs::create_dir_all(&slot).unwrap();
    std::fs::copy(
        path("extra/crc-mismatch/app.debug"),
        slot.join("6b17b5f780b9a1454269c447a919b4f9932026.debug"),
    )
    .unwrap();
    let out = dumpsyms(&[
        "-v",
        "--debug-dir",
        dir.to_str().unwrap(),
        &path("extra/buildid/app"),
    ]);
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("does not match the binary's 7D6B17B5"),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn the_debug_file_given_directly() {
    let out = dumpsyms(&["-d", "-n", NAME, &path("extra/debuglink/app.debug")]);
    let sym = String::from_utf8(out.stdout).unwrap();
    let reference = reference();
    // The same identity, functions, lines and publics; the debug file's .eh_frame is
    // empty, so it has no CFI.
    let without_cfi = |s: &str| {
        s.lines()
            .filter(|l| !l.starts_with("STACK"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(without_cfi(&sym), without_cfi(&reference));
}

#[test]
fn compressed_debug_sections() {
    for rel in [
        "extra/compressed/app-zstd",
        "extra/compressed/app-zdebug",
        "bin/x86_64/c-gcc-O2-dwarf5-zlib",
    ] {
        let (sym, _) = dump(rel, &[]);
        let module_line = |s: &str| s.lines().next().unwrap().to_string();
        // The zlib build is a separate link (its own build ID); the other two are the
        // same binary recompressed.
        if rel.ends_with("zlib") {
            let body = |s: &str| s.lines().skip(2).map(str::to_string).collect::<Vec<_>>();
            assert_eq!(body(&sym), body(&reference()), "{rel}");
        } else {
            assert_eq!(module_line(&sym), module_line(&reference()));
            assert_eq!(sym, reference(), "{rel}");
        }
    }
}

#[test]
fn mini_debuginfo_symbols_become_publics() {
    let out = dumpsyms(&["-v", &path("extra/minidebuginfo/app")]);
    assert!(out.status.success());
    let sym = parse(&String::from_utf8(out.stdout).unwrap());
    assert!(sym.funcs.is_empty());
    // Every FUNC symbol of the original binary (readelf -s, recorded by the fixture
    // script) is named at its address, by one of the names it has there.
    assert_publics_match_symbol_table(&sym, &format!("x86_64/{NAME}"));
}

#[test]
fn broken_mini_debuginfo_is_a_warning() {
    let mut bytes = std::fs::read(path("extra/minidebuginfo/app")).unwrap();
    let file = object::File::parse(&*bytes).unwrap();
    use object::{Object as _, ObjectSection as _};
    let (offset, size) = file
        .section_by_name(".gnu_debugdata")
        .unwrap()
        .file_range()
        .unwrap();
    drop(file);
    for b in &mut bytes[offset as usize + 32..(offset + size) as usize - 32] {
        *b ^= 0x5a;
    }
    let broken = std::env::temp_dir().join(format!("dumpsyms-mini-{}", std::process::id()));
    std::fs::write(&broken, &bytes).unwrap();
    let out = dumpsyms(&["-v", broken.to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains(".gnu_debugdata: cannot decompress"), "{err}");
    std::fs::remove_file(&broken).unwrap();
}

/// Split DWARF: the same program as bin/x86_64/c-gcc-O2-dwarf4/5 (built by the same
/// command, less -gsplit-dwarf), so everything but the build ID must come out the same.
#[test]
fn split_dwarf_dumps_like_the_unsplit_build() {
    for (dir, version) in [("dwo4", 4), ("dwo5", 5), ("dwp4", 4), ("dwp5", 5)] {
        let split = dumpsyms(&[
            "-d",
            "-v",
            "-n",
            "app",
            &path(&format!("extra/split/{dir}/app")),
        ]);
        let whole = dumpsyms(&[
            "-d",
            "-n",
            "app",
            &path(&format!("bin/x86_64/c-gcc-O2-dwarf{version}")),
        ]);
        let err = String::from_utf8(split.stderr.clone()).unwrap();
        assert!(err.is_empty(), "{dir}: {err}");
        let body = |o: &Output| {
            String::from_utf8(o.stdout.clone())
                .unwrap()
                .lines()
                .skip(2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        };
        assert!(
            body(&split)
                .iter()
                .filter(|l| l.starts_with("FUNC"))
                .count()
                >= 9,
            "{dir}"
        );
        assert_eq!(body(&split), body(&whole), "{dir}");
    }
}

#[test]
fn a_missing_dwo_is_a_warning_naming_it() {
    let dir = std::env::temp_dir().join(format!("dumpsyms-nodwo-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(path("extra/split/dwo5/app"), dir.join("app")).unwrap();
    let out = dumpsyms(&["-v", dir.join("app").to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("split DWARF file \"app-sample.dwo\" not found"),
        "{err}"
    );
    let sym = parse(&String::from_utf8(out.stdout).unwrap());
    assert!(sym.funcs.is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// dwz: two debug files sharing an alternate file; names, types and strings behind
/// DW_FORM_GNU_ref_alt / DW_FORM_ref_sup4 and DW_FORM_GNU_strp_alt / DW_FORM_strp_sup
/// must resolve as they did before dwz rewrote the files.
#[test]
fn dwz_alternate_files_resolve_names() {
    for v in [4, 5] {
        for opt in ["O0", "O2"] {
            let name = format!("cpp-gcc-{opt}-dwarf{v}");
            let rewritten = dumpsyms(&["-d", "-v", &path(&format!("extra/dwz{v}/{name}"))]);
            let original = dumpsyms(&["-d", &path(&format!("bin/x86_64/{name}"))]);
            let err = String::from_utf8(rewritten.stderr.clone()).unwrap();
            assert!(err.is_empty(), "dwz{v}/{name}: {err}");
            assert_eq!(
                String::from_utf8(rewritten.stdout).unwrap(),
                String::from_utf8(original.stdout).unwrap(),
                "dwz{v}/{name}"
            );
        }
    }
}

#[test]
fn a_missing_alternate_file_is_a_warning_naming_it() {
    let dir = std::env::temp_dir().join(format!("dumpsyms-noalt-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(path("extra/dwz4/cpp-gcc-O2-dwarf4"), dir.join("app")).unwrap();
    let out = dumpsyms(&["-v", dir.join("app").to_str().unwrap()]);
    assert!(out.status.success());
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(
            "alternate debug file \"/usr/lib/debug/.dwz/dumpsyms-fixture.debug\" (dwz) not found"
        ),
        "{err}"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_alternate_file_is_found_by_build_id_in_a_debug_dir() {
    let dir = std::env::temp_dir().join(format!("dumpsyms-altid-{}", std::process::id()));
    let slot = dir.join("root/.build-id/0c");
    std::fs::create_dir_all(&slot).unwrap();
    std::fs::copy(path("extra/dwz4/cpp-gcc-O2-dwarf4"), dir.join("app")).unwrap();
    std::fs::copy(
        path("extra/dwz4/dumpsyms-fixture.debug"),
        slot.join("6e5a0f1ee1573978f6ebf0cafc9b6fcededaa4.debug"),
    )
    .unwrap();
    let out = dumpsyms(&[
        "-d",
        "-v",
        "-n",
        "cpp-gcc-O2-dwarf4",
        "--debug-dir",
        dir.join("root").to_str().unwrap(),
        dir.join("app").to_str().unwrap(),
    ]);
    assert_eq!(String::from_utf8(out.stderr).unwrap(), "");
    let original = dumpsyms(&["-d", &path("bin/x86_64/cpp-gcc-O2-dwarf4")]);
    assert_eq!(out.stdout, original.stdout);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Debug-info files that are not dumped on their own are refused as what they are, with
/// the file to dump instead, not as ".o" files.
#[test]
fn companion_debug_files_are_named_for_what_they_are() {
    for (file, kind) in [
        ("split/dwo5/app-util.dwo", "split-DWARF object (.dwo)"),
        ("split/dwp4/app.dwp", "split-DWARF package (.dwp)"),
        ("dwz5/common.debug", "dwz common file"),
        ("dwz4/dumpsyms-fixture.debug", "dwz common file"),
    ] {
        let path = fixtures().join("extra").join(file);
        let err = match dumpsyms::dump(&path, &dumpsyms::Options::default()) {
            Ok(_) => panic!("{file}: dumped on its own"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains(kind) && err.contains("dump"), "{file}: {err}");
        assert!(!err.contains("(.o)"), "{file}: {err}");
    }
}
