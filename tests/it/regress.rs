//! Crafted inputs that once made dumpsyms blow up, one test each, named after what it
//! caught. The inputs are in fixtures/regress (rebuilt by its make.sh). Each is dumped
//! through the command line, as a user meets it.

use crate::common::*;

/// Runs `dumpsyms -v` on a regression input: (exit status, stdout, stderr).
fn dump(name: &str) -> (bool, String, String) {
    let out = dumpsyms_command()
        .arg("-v")
        .arg(fixtures().join("regress").join(name))
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

/// 200 functions of 60,000 bytes whose CFA rule reads the program counter: expanded
/// address by address it was 461 MB of STACK CFI from a 19 KB file.
#[test]
fn program_counter_rules_outside_a_plt_are_not_expanded() {
    let (ok, sym, err) = dump("pc-rule-in-code");
    assert!(ok, "{err}");
    parse(&sym);
    assert!(sym.len() < 64 << 10, "{} bytes of output", sym.len());
    assert!(
        !sym.contains("STACK CFI"),
        "no rule can be written for them"
    );
    let left_out = err
        .lines()
        .filter(|l| l.contains("reads the program counter outside a PLT section"))
        .count();
    assert_eq!(left_out, 200, "{err}");
}

/// The same rule in a 16 KiB `.plt`: a PLT, but whose rules change at every byte (a real
/// one changes twice per 16-byte entry). It was 590 KB of output from 25 KB.
#[test]
fn a_plt_whose_rules_change_at_every_byte_is_left_out() {
    let (ok, sym, err) = dump("pc-rule-in-plt");
    assert!(ok, "{err}");
    parse(&sym);
    assert!(!sym.contains("STACK CFI INIT 1000 "), "{sym}");
    assert!(
        err.contains("change more than once per 4 bytes, unlike any PLT's"),
        "{err}"
    );
}

/// Real PLTs are still expanded: in the x86_64 fixture's 0x60-byte lazy-binding `.plt`
/// (at 0x1020), each 16-byte entry gets a rule at its start and one after its `push`
/// (readelf's `frames-interp` gives one expression for the whole FDE).
#[test]
fn real_plts_are_still_expanded() {
    let sym = dump_text(
        &fixtures().join("bin/x86_64/unwind-gcc-O2"),
        &dumpsyms::Options::default(),
    );
    let plt: Vec<&str> = sym
        .lines()
        .skip_while(|l| !l.starts_with("STACK CFI INIT 1020 60 "))
        .take_while(|l| !l.starts_with("STACK CFI INIT ") || l.starts_with("STACK CFI INIT 1020 "))
        .collect();
    assert_eq!(plt.len(), 12, "{plt:#?}");
    assert!(plt.contains(&"STACK CFI 103b .cfa: $rsp 16 +"), "{plt:#?}");
    assert!(plt.contains(&"STACK CFI 1040 .cfa: $rsp 8 +"), "{plt:#?}");
}

/// Found by the `dump` fuzz target: a line table whose directory and file names hold
/// newlines and other control characters. Written as they were, each newline started a
/// bogus record inside the FILE record.
#[test]
fn control_characters_in_file_paths_stay_inside_their_record() {
    let (ok, sym, err) = dump("control-characters-in-file-paths");
    assert!(ok, "{err}");
    let sym = parse(&sym);
    assert!(!sym.files.is_empty());
    for name in sym.files.values() {
        assert!(!name.contains(|c: char| c.is_control()), "{name:?}");
    }
    // And through the library's in-memory entry point, as the fuzzer ran it.
    let bytes = std::fs::read(fixtures().join("regress/control-characters-in-file-paths")).unwrap();
    dumpsyms::fuzzing::dump(&bytes);
}

/// Found by the `dwarf_expression` fuzz target: `DW_OP_shr` by a negative amount (a huge
/// unsigned one) overflowed the shift and panicked in builds with overflow checks.
#[test]
fn a_negative_shift_in_a_cfa_expression_shifts_everything_out() {
    let bytes =
        std::fs::read(fixtures().join("regress/negative-shift-in-cfa-expression.expr")).unwrap();
    dumpsyms::fuzzing::dwarf_expression(&bytes);
}

/// 20,000 subprograms whose DW_AT_ranges all name one list of 2,000 ranges (17 KB,
/// zlib-compressed DWARF). Followed for every DIE that was 40 million ranges: 51 s and
/// 5.4 GB of memory before the per-unit bound. The 2,000 functions still come out.
#[test]
fn range_lists_shared_by_every_die_are_bounded() {
    let (ok, sym, err) = dump("shared-ranges");
    assert!(ok, "{err}");
    let sym = parse(&sym);
    assert_eq!(sym.funcs.len(), 2000);
    assert!(sym.funcs.iter().all(|f| f.name == "f" && f.size == 1));
    assert!(
        err.contains("name more than 625720 address ranges"),
        "{err}"
    );
}

/// Found by the `dwarf_expression` fuzz target: 90 bytes of `DW_OP_dup`, `DW_OP_plus`
/// and `DW_OP_pick` each doubling a symbolic value. Rendered, it was a postfix
/// expression of 2,736 `.cfa`s, and a few more operations would have made it gigabytes.
#[test]
fn a_self_doubling_cfa_expression_is_refused() {
    let bytes = std::fs::read(fixtures().join("regress/doubling-cfa-expression.expr")).unwrap();
    dumpsyms::fuzzing::dwarf_expression(&bytes);
}

/// Found by the `pe_unwind` fuzz target: an x64 `.pdata` entry whose unwind RVA, with
/// bit 0 set (an indirect RUNTIME_FUNCTION), is near 4 GiB; the address of the entry's
/// third word overflowed and panicked in builds with overflow checks.
#[test]
fn an_indirect_runtime_function_at_the_top_of_the_address_space_is_refused() {
    let bytes =
        std::fs::read(fixtures().join("regress/indirect-runtime-function-at-the-top.pe")).unwrap();
    dumpsyms::fuzzing::pe_unwind(&bytes);
}

/// Found by the `pe_unwind` fuzz target: an arm64 function starting a few bytes below
/// 4 GiB; its rows' addresses saturated to one value and came out unordered.
#[test]
fn an_arm64_function_at_the_top_of_the_address_space_keeps_its_rows_ordered() {
    let bytes = std::fs::read(fixtures().join("regress/arm64-function-at-the-top.pe")).unwrap();
    dumpsyms::fuzzing::pe_unwind(&bytes);
}

/// Found by the cabinet fuzz target: a cabinet whose folder table the `cab` crate
/// indexes past its end. Its panic is contained: an error for the server's answer.
#[test]
fn a_cabinet_that_breaks_the_cab_crate_is_contained() {
    let bytes = std::fs::read(fixtures().join("regress/cab-folder-index.pd_")).unwrap();
    dumpsyms::fuzzing::cabinet(&bytes);
}

/// Found by the `report_frames` fuzz target: a stack walker's frame with a blank after
/// it (its span was one byte off, ending inside a character), and a glibc frame whose
/// module followed a no-break space (its start fell inside that character). Either
/// panicked where the report line was cut at the frame. And by the `report` target: a
/// sanitizer frame numbered `#00000`, nothing resolved, came back as `#0`.
#[test]
fn report_lines_come_back_as_they_came() {
    for name in [
        "stackwalker-line-with-trailing-blank.txt",
        "glibc-frame-after-a-wide-blank.txt",
        "sanitizer-frame-numbered-with-zeros.txt",
    ] {
        let bytes = std::fs::read(fixtures().join("regress").join(name)).unwrap();
        dumpsyms::fuzzing::report_frames(&bytes);
        dumpsyms::fuzzing::report(&bytes);
    }
}

/// Found by the `pdb` fuzz target in the hour it ran on `pdb2`: a procedure whose name
/// in the module stream holds a newline (`_purecal\n`). Written as it was, it ended its
/// FUNC line and left an empty one; both PDB crates read it so. The name is now made
/// writable as every other name is.
#[test]
fn a_pdb_procedure_name_with_a_newline_stays_on_its_line() {
    let (ok, sym, err) = dump("pdb-procedure-name-with-newline.pdb");
    assert!(ok, "{err}");
    parse(&sym);
    assert!(!sym.lines().any(str::is_empty), "an empty line:\n{sym}");
    // Its parameter list follows, from its type record, as the Windows dumpers write it.
    assert!(sym.contains("\nFUNC 70 3 0 _purecal ()\n"), "{sym}");
    let bytes =
        std::fs::read(fixtures().join("regress/pdb-procedure-name-with-newline.pdb")).unwrap();
    // The fuzz target's input is the file after its 32-byte magic.
    dumpsyms::fuzzing::pdb(&bytes[32..]);
}

/// A PDB whose DBI stream names no section headers (NGEN's `.ni.pdb` store none). pdb2
/// makes sections up from the section map, end to end from 0x1000 without the image's
/// alignment: the fixture's `.rdata` would be at 0x17ac where the image has it at 0x2000.
/// Nothing is placed rather than placed wrong, as with `pdb` 0.8, and it is said.
#[test]
fn a_pdb_without_section_headers_places_nothing_and_says_so() {
    let (ok, sym, err) = dump("pdb-without-section-headers.pdb");
    assert!(ok, "{err}");
    parse(&sym);
    assert!(sym.starts_with("MODULE windows x86_64 "), "{sym}");
    assert!(
        !sym.contains("\nFUNC ") && !sym.contains("\nPUBLIC "),
        "{sym}"
    );
    assert!(
        err.contains("PDB stores no section headers of its image: no address can be placed"),
        "{err}"
    );
    assert!(!err.contains("synthesizing section"), "{err}");
    // The same PDB with them places its functions.
    let whole = dump_text(
        &fixtures().join("windows/msvc-x86_64/app.pdb"),
        &dumpsyms::Options::default(),
    );
    assert!(whole.contains("\nFUNC 1000 "), "{whole}");
}

/// Every pointer type of a PDB pointing at itself and every member function's `this`
/// being itself: the formatter of Windows signatures (pdb-addr2line's, which follows
/// references with no bound) looped for ever on the first and overflowed the stack on
/// the second. Such types are walked first, without recursion, and the procedures keep
/// the names their records give.
#[test]
fn self_referencing_pdb_types_keep_the_procedures_own_names() {
    let started = std::time::Instant::now();
    let (ok, sym, err) = dump("hostile/pdb-self-referencing-types.pdb");
    assert!(ok, "{err}");
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    let funcs = sym.lines().filter(|l| l.starts_with("FUNC ")).count();
    assert!(funcs >= 20, "{funcs} FUNC records:\n{sym:.2000}");
}

/// Found by the `pdb` fuzz target once Windows signatures were formatted: an argument
/// list claiming 1.6 billion entries, for which `pdb2` reserved 6.6 GB before reading
/// one. Such a type stream is not handed to the formatter, and the dump goes on with
/// the procedures' own names.
#[test]
fn an_argument_list_claiming_billions_is_not_parsed() {
    let path = fixtures().join("regress/pdb-argument-list-claiming-billions.pdb");
    let out = dumpsyms_command().arg("-v").arg(&path).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        err.contains("an argument list claims more entries than its record holds"),
        "{err}"
    );
    let bytes = std::fs::read(&path).unwrap();
    // The fuzz target's input is the file after its 32-byte magic.
    dumpsyms::fuzzing::pdb(&bytes[32..]);
}
