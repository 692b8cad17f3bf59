use super::*;

fn source(input: &crate::load::Input) -> CfiSource {
    let obj = Object::parse(input).unwrap();
    let layout = crate::identity::layout(&obj);
    let mut w = Warnings::default();
    extract(&obj, None, "x86_64", &layout, layout.load_address, &mut w).unwrap()
}

fn input(fixture: &str) -> crate::load::Input {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bin")
        .join(fixture);
    crate::load::Input::open(&path).unwrap()
}

#[test]
fn a_file_stops_writing_cfi_at_its_allowance() {
    let input = input("x86_64/cpp-gcc-O2-dwarf5");
    let mut cfi = source(&input);
    let mut all = Vec::new();
    assert!(
        cfi.write_all(&crate::breakpad::cfi::Text, &mut all)
            .unwrap()
            .is_empty()
    );
    // Room for about half: whole functions are written up to it, then none.
    cfi.allowance = all.len() as u64 / 2;
    let mut cut = Vec::new();
    let skipped = cfi
        .write_all(&crate::breakpad::cfi::Text, &mut cut)
        .unwrap();
    assert!(all.starts_with(&cut));
    assert!(
        cut.len() as u64 <= cfi.allowance && cut.len() as u64 + 512 > cfi.allowance,
        "{} of {} bytes, allowance {}",
        cut.len(),
        all.len(),
        cfi.allowance
    );
    let text = String::from_utf8(cut).unwrap();
    assert!(text.ends_with('\n'));
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    let stop = skipped.iter().next().unwrap();
    assert_eq!(stop.kind, WarningKind::Output);
    assert!(stop.message.contains("STACK CFI stops"), "{skipped:?}");
}

#[test]
fn allowances_follow_the_input() {
    let input = input("x86_64/cpp-gcc-O2-dwarf5");
    let cfi = source(&input);
    assert_eq!(cfi.allowance, (1 << 20) + 16 * input.bytes().len() as u64);
    for item in &cfi.items {
        let Item::Fde(f) = item else { continue };
        assert!(f.allowance > FDE_BASE_BYTES, "{f:?}");
        // Each real FDE writes well under its allowance.
        let mut buf = Vec::new();
        cfi.write_fde(f, &crate::breakpad::cfi::Text, &mut buf)
            .ok()
            .unwrap();
        assert!((buf.len() as u64) < f.allowance / 4, "{f:?}: {}", buf.len());
    }
}
