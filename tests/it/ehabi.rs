//! 32-bit ARM unwinding from the EHABI tables (`.ARM.exidx`/`.ARM.extab`), on builds
//! without debug info, where those tables are the only unwind information:
//!
//! - every entry that `readelf -u` or `llvm-readobj --unwind` decodes (recorded by
//!   fixtures/make-fixtures.sh in `fixtures/ehabi/*.readelf` and `*.llvm-readobj`) gives
//!   the STACK CFI their decoded opcodes mean: CFA, return address and every saved
//!   register, over the range up to the next entry; `EXIDX_CANTUNWIND` gives none;
//! - rust-minidump's stack walker, given only our symbol files, recovers every frame of a
//!   call chain stopped under qemu-arm (`fixtures/ehabi/chain-gcc-O2-static.dmp`, made
//!   by `fixtures/ehabi/capture.py`) through CFI, and cannot without our STACK CFI. The
//!   same for a MIPS (mipsel) build under qemu-mipsel, whose CFI is DWARF's `.eh_frame`
//!   (`fixtures/extra/mipsel`); rust-minidump has no RISC-V walker.

use std::collections::BTreeMap;
use std::path::Path;

use minidump::Minidump;
use minidump_unwind::FrameTrust;

use crate::common::walk::{CHAIN, store_symbols, walk};
use crate::common::*;

/// One index entry as a decoder printed it.
#[derive(Debug)]
struct Decoded {
    address: u64,
    /// `None`: the tool did not decode this entry's opcodes (a generic-model entry whose
    /// personality routine it cannot name). `Some(empty)` with `cant_unwind`: no rule.
    ops: Option<Vec<String>>,
    cant_unwind: bool,
}

/// `readelf -u`: `0x570 <main>: 0x8007aab0`, then `  Compact model index: 0` or
/// `  Personality routine: ...`, then `  0x07      vsp = vsp + 32` lines.
fn parse_readelf(text: &str) -> Vec<Decoded> {
    let mut out: Vec<Decoded> = Vec::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("0x") {
            let address = u64::from_str_radix(rest.split(' ').next().unwrap(), 16).unwrap();
            out.push(Decoded {
                address,
                ops: Some(Vec::new()),
                cant_unwind: line.ends_with("[cantunwind]"),
            });
        } else if let Some(entry) = out.last_mut() {
            let t = line.trim();
            if t.starts_with("Personality routine:") {
                let known = ["__gxx_personality_v0", "__gcc_personality_v0"];
                if !known.iter().any(|k| t.contains(&format!("<{k}>"))) {
                    entry.ops = None;
                }
            } else if let Some(op) = t.strip_prefix("0x")
                && let Some(ops) = &mut entry.ops
            {
                // "07      vsp = vsp + 32" / "b1 0x08 pop {r3}": the text after the bytes.
                let text = op
                    .split_whitespace()
                    .skip_while(|w| w.len() <= 4 && w.trim_start_matches("0x").len() == 2)
                    .collect::<Vec<_>>()
                    .join(" ");
                ops.push(text);
            }
        }
    }
    out
}

/// `llvm-readobj --unwind`: `Entry {`, `FunctionAddress: 0x570`, `Model: ...`,
/// `Opcodes [`, `0x07      ; vsp = vsp + 32`, `]`, `}`.
fn parse_llvm(text: &str) -> Vec<Decoded> {
    let mut out: Vec<Decoded> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if let Some(a) = t.strip_prefix("FunctionAddress: 0x") {
            out.push(Decoded {
                address: u64::from_str_radix(a, 16).unwrap(),
                ops: None,
                cant_unwind: false,
            });
        } else if let Some(entry) = out.last_mut() {
            if t == "Model: CantUnwind" {
                entry.cant_unwind = true;
                entry.ops = Some(Vec::new());
            } else if t == "Opcodes [" {
                entry.ops = Some(Vec::new());
            } else if let Some((_, op)) = t.split_once("; ")
                && let Some(ops) = &mut entry.ops
            {
                ops.push(op.to_string());
            }
        }
    }
    out
}

/// `reg+N` in our postfix.
fn plus(base: &str, offset: i64) -> String {
    match offset {
        0 => base.to_string(),
        o if o > 0 => format!("{base} {o} +"),
        o => format!("{base} {} -", -o),
    }
}

/// What a decoded opcode list means as STACK CFI rules, by the EHABI's definition of
/// each operation: `None` when unwinding is refused.
fn expected_rules(ops: &[String]) -> Option<BTreeMap<String, String>> {
    let reg_number = |name: &str| -> usize {
        match name {
            "fp" => 11,
            "ip" => 12,
            "sp" => 13,
            "lr" => 14,
            "pc" => 15,
            r => r.trim_start_matches('r').parse().unwrap(),
        }
    };
    // vsp as (base register name, offset); saved slots likewise.
    let mut vsp = ("sp".to_string(), 0i64);
    let mut slots: BTreeMap<String, (String, i64)> = BTreeMap::new();
    let mut sp_slot = None;
    for op in ops {
        if op == "finish" {
            break;
        }
        if op.contains("refuse to unwind") {
            return None;
        }
        if let Some(n) = op.strip_prefix("vsp = vsp + ") {
            vsp.1 += n.parse::<i64>().unwrap();
        } else if let Some(n) = op.strip_prefix("vsp = vsp - ") {
            vsp.1 -= n.parse::<i64>().unwrap();
        } else if let Some(r) = op.strip_prefix("vsp = ") {
            vsp = (format!("r{}", reg_number(r)), 0);
        } else if let Some(list) = op.strip_prefix("pop {") {
            let list = list.split('}').next().unwrap();
            for item in list.split(", ") {
                let item = item.to_ascii_lowercase();
                if let Some(d) = item.strip_prefix('d') {
                    let (a, b) = d.split_once("-d").unwrap_or((d, d));
                    for n in a.parse::<u32>().unwrap()..=b.parse::<u32>().unwrap() {
                        slots.insert(format!("d{n}"), vsp.clone());
                        vsp.1 += 8;
                    }
                } else {
                    let n = reg_number(&item);
                    if n == 13 {
                        sp_slot = Some(vsp.clone());
                    } else {
                        slots.insert(format!("r{n}"), vsp.clone());
                    }
                    vsp.1 += 4;
                }
            }
            if op.contains("FSTMFDX") {
                vsp.1 += 4;
            }
        } else {
            panic!("opcode text {op:?} not understood");
        }
    }
    let load = |slot: &(String, i64)| match &sp_slot {
        None if slot.0 == vsp.0 => format!("{} ^", plus(".cfa", slot.1 - vsp.1)),
        _ => format!("{} ^", plus(&slot.0, slot.1)),
    };
    let mut rules = BTreeMap::new();
    rules.insert(
        ".cfa".to_string(),
        match &sp_slot {
            Some(s) => load(s),
            None => plus(&vsp.0, vsp.1),
        },
    );
    let ra = slots
        .get("r15")
        .or(slots.get("r14"))
        .map_or("lr".to_string(), load);
    rules.insert(".ra".to_string(), ra);
    for (reg, slot) in &slots {
        if reg != "r14" && reg != "r15" {
            rules.insert(reg.clone(), load(slot));
        }
    }
    Some(rules)
}

/// Our STACK CFI INIT records: address → (size, rules).
fn init_records(text: &str) -> BTreeMap<u64, (u64, BTreeMap<String, String>)> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("STACK CFI INIT ") else {
            assert!(
                !line.starts_with("STACK CFI "),
                "exidx gives one record per function: {line}"
            );
            continue;
        };
        let mut f = rest.splitn(3, ' ');
        let address = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
        let size = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
        let mut rules = BTreeMap::new();
        let mut current: Option<String> = None;
        for tok in f.next().unwrap().split(' ') {
            if let Some(reg) = tok.strip_suffix(':') {
                current = Some(reg.to_string());
                rules.insert(reg.to_string(), String::new());
            } else {
                let value = rules.get_mut(current.as_ref().unwrap()).unwrap();
                if !value.is_empty() {
                    value.push(' ');
                }
                value.push_str(tok);
            }
        }
        out.insert(address, (size, rules));
    }
    out
}

fn ehabi_fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures().join("ehabi"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.contains('.'))
        .collect();
    names.sort();
    names
}

#[test]
fn exidx_rules_agree_with_readelf_and_llvm_readobj() {
    let mut opts = dumpsyms::Options::default();
    opts.keep_load_address = true;
    let mut failures = Vec::new();
    let (mut by_readelf, mut by_llvm, mut by_either) = (0, 0, 0);
    for name in ehabi_fixtures() {
        let dir = fixtures().join("ehabi");
        let text = dump_text(&dir.join(&name), &opts);
        assert!(text.starts_with("MODULE Linux arm "), "{name}");
        let ours = init_records(&text);
        let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap();
        let readelf = parse_readelf(&read("readelf"));
        let llvm = parse_llvm(&read("llvm-readobj"));
        assert_eq!(
            readelf.len(),
            llvm.len(),
            "{name}: the tools list the same entries"
        );
        let mut decoded_here = 0;
        for (i, (r, l)) in readelf.iter().zip(&llvm).enumerate() {
            assert_eq!(r.address, l.address, "{name}: entry {i}");
            let next = readelf.get(i + 1).map(|n| n.address);
            let mut any = false;
            for (tool, entry, count) in [("readelf", r, &mut by_readelf), ("llvm", l, &mut by_llvm)]
            {
                let Some(ops) = &entry.ops else { continue };
                *count += 1;
                any = true;
                let expected = if entry.cant_unwind {
                    None
                } else {
                    expected_rules(ops)
                };
                let got = ours.get(&entry.address);
                let ok = match (&expected, got) {
                    (None, None) => true,
                    (Some(e), Some((size, rules))) => {
                        e == rules && next.is_none_or(|n| entry.address + size == n)
                    }
                    _ => false,
                };
                if !ok && failures.len() < 12 {
                    failures.push(format!(
                        "{name} {:#x} ({tool}: {ops:?}): expected {expected:?}, ours {got:?} (next entry {next:x?})",
                        entry.address
                    ));
                }
            }
            decoded_here += usize::from(any);
        }
        by_either += decoded_here;
        println!(
            "{name:<24} {:>4} entries, {decoded_here:>4} decoded by a tool",
            readelf.len()
        );
    }
    println!(
        "decoded: readelf {by_readelf}, llvm-readobj {by_llvm}, either {by_either} (each checked)"
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        by_readelf >= 700 && by_llvm >= 600,
        "too few entries checked"
    );
}

#[test]
fn exidx_decoders_disagree_only_where_one_cannot_decode() {
    // The oracles between themselves: where both decode an entry, the rules agree; the
    // entries only readelf decodes are generic-model ones (llvm-readobj 14 prints no
    // opcodes for those).
    let mut only_readelf = 0;
    for name in ehabi_fixtures() {
        let dir = fixtures().join("ehabi");
        let read = |ext: &str| std::fs::read_to_string(dir.join(format!("{name}.{ext}"))).unwrap();
        let readelf = parse_readelf(&read("readelf"));
        let llvm = parse_llvm(&read("llvm-readobj"));
        for (r, l) in readelf.iter().zip(&llvm) {
            match (&r.ops, &l.ops) {
                (Some(a), Some(b)) => assert_eq!(
                    (r.cant_unwind, expected_rules(a)),
                    (l.cant_unwind, expected_rules(b)),
                    "{name} {:#x}",
                    r.address
                ),
                (Some(_), None) => only_readelf += 1,
                (None, Some(_)) => panic!("{name} {:#x}: only llvm-readobj decodes", r.address),
                (None, None) => {}
            }
        }
    }
    assert!(
        only_readelf >= 50,
        "generic-model entries checked: {only_readelf}"
    );
}

#[test]
fn thumb_functions_are_named_at_their_even_address() {
    // Without DWARF every function is a PUBLIC from the symbol table, whose Thumb
    // functions have the low bit set (readelf's list, bit cleared, in `<name>.nm`).
    for name in [
        "unwind-gcc-O2",
        "unwind-clang-O2-thumb",
        "unwind-gcc-O2-marm",
    ] {
        let text = dump_text(&fixtures().join("ehabi").join(name), &Default::default());
        let sym = parse(&text);
        assert!(sym.publics.iter().all(|p| p.0 % 2 == 0), "{name}");
        assert_publics_match_symbol_table(&sym, &format!("../ehabi/{name}"));
        // Every function the table covers starts a STACK CFI record at that address.
        let inits = init_records(&text);
        for f in [
            "many_live_values",
            "dynamic_stack",
            "early_returns",
            "recurse",
        ] {
            let p = sym.publics.iter().find(|p| p.1 == f).unwrap();
            assert!(inits.contains_key(&p.0), "{name}: {f} at {:#x}", p.0);
        }
    }
}

#[test]
fn minidump_processor_walks_an_arm_chain_through_exidx() {
    let dir = fixtures().join("ehabi");
    check_walk(
        &dir.join("chain-gcc-O2-static"),
        &dir.join("chain-gcc-O2-static.dmp"),
    );
}

#[test]
fn minidump_processor_walks_a_mips_chain_through_eh_frame() {
    let dir = fixtures().join("extra/mipsel");
    check_walk(
        &dir.join("chain-gcc-O2-static"),
        &dir.join("chain-gcc-O2-static.dmp"),
    );
}

/// The same walks on minidumps taken now: runs capture.py (qemu-user, gdb-multiarch).
#[test]
#[ignore = "needs qemu-user, gdb-multiarch and binutils for armhf and mipsel; .ci/run installs them"]
fn minidump_processor_walks_fresh_qemu_captures() {
    for dir in ["ehabi", "extra/mipsel"] {
        let binary = fixtures().join(dir).join("chain-gcc-O2-static");
        let out = std::env::temp_dir().join(format!(
            "dumpsyms-capture-{}-{}.dmp",
            std::process::id(),
            dir.replace('/', "-")
        ));
        let status = std::process::Command::new("python3")
            .arg(fixtures().join("ehabi/capture.py"))
            .arg(&binary)
            .arg(&out)
            .status()
            .expect("python3");
        assert!(status.success(), "capture.py failed on {dir}");
        check_walk(&binary, &out);
        std::fs::remove_file(&out).ok();
    }
}

fn check_walk(binary: &Path, minidump: &Path) {
    let work = std::env::temp_dir().join(format!(
        "dumpsyms-walk-{}-{}",
        std::process::id(),
        minidump.to_string_lossy().replace('/', "-")
    ));
    let _ = std::fs::remove_dir_all(&work);
    let store = work.join("symbols");
    let name = store_symbols(binary, &store, true);
    let dump = Minidump::read_path(minidump).unwrap();
    let frames = walk(&dump, &store, 1);
    for (i, f) in frames.iter().enumerate() {
        println!("{i:>2} {:<24} {:<28} {:?}", f.0, f.1, f.2);
    }
    let expected = CHAIN;
    assert!(frames.len() >= expected.len(), "{frames:?}");
    for (i, want) in expected.iter().enumerate() {
        let f = &frames[i];
        assert_eq!(
            (f.0.as_str(), f.1.as_str()),
            (name.as_str(), *want),
            "frame {i}"
        );
        let trust = if i == 0 {
            FrameTrust::Context
        } else {
            FrameTrust::CallFrameInfo
        };
        assert_eq!(f.2, trust, "frame {i} ({want})");
    }
    // Control: without STACK CFI the walker cannot get there through CFI.
    let no_cfi = work.join("symbols-no-cfi");
    store_symbols(binary, &no_cfi, false);
    let control = walk(&dump, &no_cfi, 1);
    assert!(
        control.iter().all(|f| f.2 != FrameTrust::CallFrameInfo),
        "frames recovered through CFI without any: {control:?}"
    );
    // Stack scanning may find the chain's return addresses too (it does on MIPS), but not
    // the same walk: it takes stray code addresses on the stack for frames.
    let named = |frames: &[(String, String, FrameTrust)]| -> Vec<String> {
        frames.iter().map(|f| f.1.clone()).collect()
    };
    assert_ne!(
        named(&control),
        named(&frames),
        "the walk without CFI is the same, so this check proves nothing"
    );
    std::fs::remove_dir_all(&work).ok();
}
