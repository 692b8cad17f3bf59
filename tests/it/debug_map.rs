//! Mach-O debug maps (fixtures/debugmap, made by its make.sh with ld64.lld, no
//! dsymutil): the program dumped with the object files its N_OSO stabs name (found
//! under `--debug-dir`, the build having moved) writes the symbol file the same
//! program writes with the dSYM `dsymutil` links from those objects, FUNC, line and
//! INLINE records included, and agrees with llvm-symbolizer on that dSYM.

use std::path::PathBuf;

use crate::common::scoring::*;
use crate::common::*;

const VARIANTS: [&str; 4] = ["x86_64-O0", "x86_64-O2", "arm64-O0", "arm64-O2"];

fn variant(v: &str) -> PathBuf {
    fixtures().join("debugmap").join(v)
}

fn run(args: &[&str]) -> (String, String) {
    let out = dumpsyms(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{args:?}: {err}");
    (String::from_utf8(out.stdout).unwrap(), err)
}

/// The program dumped beside its dSYM (copied together, as dsymutil leaves them).
fn with_dsym(v: &str, extra: &[&str]) -> String {
    let dir = scratch(&format!("debugmap-dsym-{v}"));
    std::fs::copy(variant(v).join("app"), dir.join("app")).unwrap();
    crate::store::copy_dir(&variant(v).join("dsym/app.dSYM"), &dir.join("app.dSYM"));
    let app = dir.join("app");
    let mut args = extra.to_vec();
    args.push(app.to_str().unwrap());
    run(&args).0
}

/// The program dumped with its debug map's objects under `--debug-dir`.
fn with_objects(v: &str, extra: &[&str]) -> (String, String) {
    let objects = variant(v).join("objects");
    let app = variant(v).join("app");
    let mut args = extra.to_vec();
    args.extend([
        "--debug-dir",
        objects.to_str().unwrap(),
        app.to_str().unwrap(),
    ]);
    run(&args)
}

#[test]
fn the_objects_give_what_the_dsym_gives() {
    for v in VARIANTS {
        for flags in [&[][..], &["--inlines"][..]] {
            let (ours, _) = with_objects(v, flags);
            let dsym = with_dsym(v, flags);
            assert!(ours.lines().any(|l| l.starts_with("FUNC ")), "{v}");
            assert!(ours.lines().any(|l| l.starts_with("FILE ")), "{v}");
            if flags.is_empty() {
                assert!(!ours.contains("\nINLINE"), "{v}");
            } else {
                assert!(ours.contains("\nINLINE "), "{v} {flags:?}");
            }
            assert!(
                ours == dsym,
                "{v} {flags:?}: the debug map's dump differs from the dSYM's"
            );
        }
    }
}

#[test]
fn the_objects_agree_with_llvm_symbolizer_on_the_dsym() {
    let mut failures = Vec::new();
    for v in VARIANTS {
        let oracle = read_oracle(&fixtures().join("debugmap").join(format!("{v}.tsv")));
        assert!(oracle.len() > 200, "{v}: oracle too small");
        let (ours, _) = with_objects(v, &["--inlines"]);
        let s = score(&parse(&ours), &oracle);
        if !s.report(v) {
            failures.push(v);
        }
    }
    assert!(failures.is_empty(), "below {REQUIRED}: {failures:?}");
}

#[test]
fn objects_not_found_or_changed_are_named() {
    // Not found: the map's paths are gone, and no --debug-dir is given.
    let app = variant("arm64-O2").join("app");
    let out = dumpsyms(&["-v", app.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "/tmp/dumpsyms-debugmap-arm64-O2/shapes.o: not found (nor under the debug directories)"
        ),
        "{err}"
    );
    assert!(err.contains("libutil.a(util.o): not found"), "{err}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("\nFUNC ") && text.contains("\nPUBLIC "),
        "{text}"
    );

    // x86_64-O0's objects keep their own times, which a checkout changed: used, with
    // dsymutil's warning. (The map records no time for the archive member.)
    let (_, err) = with_objects("x86_64-O0", &["-v"]);
    let shapes = "/tmp/dumpsyms-debugmap-x86_64-O0/shapes.o: modified since the link";
    if std::fs::metadata(variant("x86_64-O0").join("objects/shapes.o"))
        .unwrap()
        .modified()
        .unwrap()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        != 0x6b0b49ba
    {
        assert!(err.contains(shapes), "{err}");
    }
    assert!(!err.contains("libutil.a(util.o): modified"), "{err}");
}

#[test]
fn an_object_of_another_build_loses_only_its_functions() {
    // arm64-O0's shapes.o in place of arm64-O2's: its functions are not the sizes the
    // map gives, so none of them is moved into the program (their lines would be
    // another build's); util.o's, from the right library, are all there.
    let dir = scratch("debugmap-other-build");
    std::fs::copy(
        variant("arm64-O0").join("objects/shapes.o"),
        dir.join("shapes.o"),
    )
    .unwrap();
    std::fs::copy(
        variant("arm64-O2").join("objects/libutil.a"),
        dir.join("libutil.a"),
    )
    .unwrap();
    let app = variant("arm64-O2").join("app");
    let out = dumpsyms(&[
        "-v",
        "--debug-dir",
        dir.to_str().unwrap(),
        app.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains(
            "shapes.o: of the debug map's 6 function(s), 0 not in it and 6 of another size"
        ),
        "{err}"
    );
    let sym = parse(&String::from_utf8_lossy(&out.stdout));
    let (ours, _) = with_objects("arm64-O2", &[]);
    let right = parse(&ours);
    // util.c's functions come from the right object, as in the right dump.
    let from_util = |s: &SymFile| -> Vec<(u64, u64, String)> {
        s.funcs
            .iter()
            .filter(|f| ["fib", "checksum", "weird_sum"].contains(&f.name.as_str()))
            .map(|f| (f.address, f.size, f.name.clone()))
            .collect()
    };
    assert_eq!(from_util(&sym).len(), 3);
    assert_eq!(from_util(&sym), from_util(&right));
    // shapes.cpp's functions are the symbol table's PUBLIC records, not FUNCs.
    assert!(!sym.funcs.iter().any(|f| f.name == "main"));
    assert!(sym.publics.iter().any(|p| p.1 == "main"));
}

#[test]
fn the_objects_at_the_paths_the_map_gives() {
    // Where the link left them (the map's own paths), with no --debug-dir.
    let built = PathBuf::from("/tmp/dumpsyms-debugmap-x86_64-O2");
    std::fs::create_dir_all(&built).unwrap();
    for f in ["shapes.o", "libutil.a"] {
        std::fs::copy(variant("x86_64-O2").join("objects").join(f), built.join(f)).unwrap();
    }
    let app = variant("x86_64-O2").join("app");
    let (ours, err) = run(&["-v", app.to_str().unwrap()]);
    let _ = std::fs::remove_dir_all(&built);
    assert!(!err.contains("not found"), "{err}");
    assert!(ours == with_dsym("x86_64-O2", &[]));
}
