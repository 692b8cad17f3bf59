//! STACK CFI agrees with `readelf --debug-dump=frames-interp` (recorded by
//! fixtures/make-fixtures.sh): at every address each FDE covers, the CFA rule, the
//! return-address rule and every register column readelf shows must match what our
//! records give at that address. Required: 99.9% of addresses on every architecture.

use std::collections::{BTreeMap, HashMap};

use crate::common::*;

const REQUIRED: f64 = 0.999;

/// One FDE's table as readelf prints it.
#[derive(Debug, Clone)]
struct Table {
    section: String,
    start: u64,
    end: u64,
    /// Column names after LOC and CFA (the last is "ra").
    columns: Vec<String>,
    /// (location, [CFA, columns...]).
    rows: Vec<(u64, Vec<String>)>,
}

/// A CIE's table: column names and its first row.
type CieTable = (Vec<String>, Vec<String>);

fn parse_readelf(text: &str) -> Vec<Table> {
    enum Block {
        None,
        Cie(String),
        Fde(usize),
    }
    let mut tables: Vec<(Table, String)> = Vec::new(); // with their CIE's offset
    let mut cies: HashMap<(String, String), CieTable> = HashMap::new();
    let mut section = String::new();
    let mut block = Block::None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Contents of the ") {
            section = rest.split(' ').next().unwrap().to_string();
            block = Block::None;
            continue;
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() >= 4 && fields[3] == "CIE" {
            cies.insert(
                (section.clone(), fields[0].to_string()),
                (Vec::new(), Vec::new()),
            );
            block = Block::Cie(fields[0].to_string());
        } else if fields.len() >= 6 && fields[3] == "FDE" {
            let cie = fields[4].trim_start_matches("cie=").to_string();
            let (a, b) = fields[5]
                .trim_start_matches("pc=")
                .split_once("..")
                .unwrap();
            let table = Table {
                section: section.clone(),
                start: u64::from_str_radix(a, 16).unwrap(),
                end: u64::from_str_radix(b, 16).unwrap(),
                columns: Vec::new(),
                rows: Vec::new(),
            };
            tables.push((table, cie));
            block = Block::Fde(tables.len() - 1);
        } else if fields.first() == Some(&"LOC") {
            let cols: Vec<String> = fields[2..].iter().map(|s| s.to_string()).collect();
            match &block {
                Block::Fde(i) => tables[*i].0.columns = cols,
                Block::Cie(off) => cies.get_mut(&(section.clone(), off.clone())).unwrap().0 = cols,
                Block::None => {}
            }
        } else if fields.len() >= 2 && fields[1] != "ZERO" && fields[0].len() >= 8 {
            let Ok(loc) = u64::from_str_radix(fields[0], 16) else {
                continue;
            };
            let values: Vec<String> = fields[1..].iter().map(|s| s.to_string()).collect();
            match &block {
                Block::Fde(i) => tables[*i].0.rows.push((loc, values)),
                Block::Cie(off) => {
                    let cie = cies.get_mut(&(section.clone(), off.clone())).unwrap();
                    if cie.1.is_empty() {
                        cie.1 = values;
                    }
                }
                Block::None => {}
            }
        }
    }
    tables
        .into_iter()
        .map(|(mut t, cie)| {
            // readelf prints no table for an FDE without instructions: the CIE's initial
            // rules hold for the whole range.
            if t.rows.is_empty()
                && let Some((cols, row)) = cies.get(&(t.section.clone(), cie))
            {
                t.columns = cols.clone();
                t.rows.push((t.start, row.clone()));
            }
            t
        })
        .collect()
}

/// A STACK CFI record's address and `(register, rule)` pairs.
type CfiRow = (u64, Vec<(String, String)>);

/// Our STACK CFI records: INIT blocks (address, size, rows).
struct Cfi {
    blocks: Vec<(u64, u64, Vec<CfiRow>)>,
}

fn parse_cfi(text: &str) -> Cfi {
    let mut blocks: Vec<(u64, u64, Vec<CfiRow>)> = Vec::new();
    let rules = |s: &str| -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = Vec::new();
        for tok in s.split(' ') {
            if let Some(reg) = tok.strip_suffix(':') {
                out.push((reg.to_string(), String::new()));
            } else {
                let last = out.last_mut().expect("rule without register");
                if !last.1.is_empty() {
                    last.1.push(' ');
                }
                last.1.push_str(tok);
            }
        }
        out
    };
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("STACK CFI INIT ") {
            let mut f = rest.splitn(3, ' ');
            let a = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            let n = u64::from_str_radix(f.next().unwrap(), 16).unwrap();
            blocks.push((a, n, vec![(a, rules(f.next().unwrap()))]));
        } else if let Some(rest) = line.strip_prefix("STACK CFI ") {
            let (a, r) = rest.split_once(' ').unwrap();
            let a = u64::from_str_radix(a, 16).unwrap();
            let block = blocks.last_mut().unwrap();
            assert!(
                a > block.2.last().unwrap().0 && a < block.0 + block.1,
                "row outside its INIT: {line}"
            );
            block.2.push((a, rules(r)));
        }
    }
    for w in blocks.windows(2) {
        assert!(
            w[0].0 + w[0].1 <= w[1].0,
            "STACK CFI INIT ranges overlap at {:#x}",
            w[1].0
        );
    }
    Cfi { blocks }
}

impl Cfi {
    /// The rules in force at `addr`.
    fn at(&self, addr: u64) -> Option<BTreeMap<String, String>> {
        let i = self
            .blocks
            .partition_point(|b| b.0 <= addr)
            .checked_sub(1)?;
        let (start, size, rows) = &self.blocks[i];
        if addr >= start + size {
            return None;
        }
        let mut rules = BTreeMap::new();
        for (a, r) in rows.iter().take_while(|(a, _)| *a <= addr) {
            let _ = a;
            for (reg, expr) in r {
                rules.insert(reg.clone(), expr.clone());
            }
        }
        Some(rules)
    }
}

/// Our name for a register readelf names `col` on `arch`.
fn our_name(arch: &str, col: &str) -> String {
    match arch {
        "x86_64" | "i686" => format!("${col}"),
        "ppc" | "ppc64" | "ppc64le" => {
            // readelf names PowerPC registers rN by GCC's numbering.
            let n: u32 = col.trim_start_matches('r').parse().unwrap_or(u32::MAX);
            match n {
                0..=31 => format!("r{n}"),
                32..=63 => format!("f{}", n - 32),
                65 => "lr".into(),
                66 => "ctr".into(),
                68..=75 => format!("cr{}", n - 68),
                76 => "xer".into(),
                77..=108 => format!("v{}", n - 77),
                _ => col.to_string(),
            }
        }
        // readelf names ARM registers r0-r15 and MIPS registers r0-r31; RISC-V by their
        // ABI names, as we do.
        "arm" => match col {
            "r13" => "sp".into(),
            "r14" => "lr".into(),
            "r15" => "pc".into(),
            c => match c.trim_start_matches('r').parse::<u32>() {
                Ok(n @ 64..=95) => format!("s{}", n - 64),
                Ok(n @ 256..=287) => format!("d{}", n - 256),
                _ => c.to_string(),
            },
        },
        // readelf's RISC-V floating-point names are the ABI's; ours (Breakpad's) are
        // f0-f31.
        "riscv64" => {
            const F: [&str; 32] = [
                "ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1",
                "fa2", "fa3", "fa4", "fa5", "fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7",
                "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
            ];
            match F.iter().position(|f| *f == col) {
                Some(n) => format!("f{n}"),
                None => col.to_string(),
            }
        }
        "mips" | "mipsel" | "mips64" | "mips64el" => {
            const MIPS: [&str; 32] = [
                "zero", "at", "v0", "v1", "a0", "a1", "a2", "a3", "t0", "t1", "t2", "t3", "t4",
                "t5", "t6", "t7", "s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7", "t8", "t9", "k0",
                "k1", "gp", "sp", "fp", "ra",
            ];
            let n: usize = col.trim_start_matches('r').parse().unwrap_or(usize::MAX);
            match (MIPS.get(n), n) {
                (Some(name), _) => format!("${name}"),
                (None, 32..=63) => format!("$f{}", n - 32),
                _ => col.to_string(),
            }
        }
        _ => col.to_string(),
    }
}

/// The register holding the return address on link-register machines.
fn link_register(arch: &str) -> Option<&'static str> {
    match arch {
        "aarch64" => Some("x30"),
        "ppc" | "ppc64" | "ppc64le" => Some("lr"),
        "arm" => Some("lr"),
        "riscv64" => Some("ra"),
        "mips" | "mipsel" | "mips64" | "mips64el" => Some("$ra"),
        _ => None,
    }
}

/// `reg+8`, `reg-8`, `reg+0` as our postfix.
fn reg_offset(reg: &str, offset: i64) -> String {
    match offset {
        0 => reg.to_string(),
        o if o > 0 => format!("{reg} {o} +"),
        o => format!("{reg} {} -", -o),
    }
}

fn cfa_offset(prefix: &str, cell: &str) -> Option<i64> {
    cell.strip_prefix(prefix)?.parse().ok()
}

/// Does our rule agree with readelf's cell?
fn agrees(arch: &str, col: &str, cell: &str, ours: Option<&str>, addr: u64) -> bool {
    let is_ra = col == "ra";
    let own = our_name(arch, col);
    match cell {
        "u" if is_ra => ours == Some(".undef") || (ours.is_some() && ours == link_register(arch)),
        "u" => ours.is_none() || ours == Some(own.as_str()) || ours == Some(".undef"),
        "s" => ours.is_none() || ours == Some(own.as_str()),
        "exp" if col == "CFA" => {
            // The PLT's CFA depends on the address: sp + one word, or two once the entry
            // has pushed its argument (from byte 11 of each 16-byte entry), as the psABI
            // expression `breg(sp) w; breg(pc) 0; lit15; and; lit11; ge; shl; plus` says.
            let plt = match arch {
                "x86_64" => Some(if addr & 15 >= 11 {
                    "$rsp 16 +"
                } else {
                    "$rsp 8 +"
                }),
                "i686" => Some(if addr & 15 >= 11 {
                    "$esp 8 +"
                } else {
                    "$esp 4 +"
                }),
                _ => None,
            };
            ours.is_some_and(|o| Some(o) == plt || o.contains('^') || o.contains('@'))
        }
        "exp" => ours.is_some_and(|o| o.ends_with(" ^") && !o.starts_with(".cfa")),
        "vexp" => ours.is_some_and(|o| !o.ends_with(" ^")),
        _ if col == "CFA" => {
            let Some(split) = cell.rfind(['+', '-']) else {
                panic!("{arch}: CFA cell {cell:?} at {addr:#x}");
            };
            let (reg, off) = cell.split_at(split);
            let off: i64 = off.parse().unwrap();
            ours == Some(reg_offset(&our_name(arch, reg), off).as_str())
        }
        _ => {
            if let Some(o) = cfa_offset("c", cell) {
                let expected = if o == 0 {
                    ".cfa ^".to_string()
                } else {
                    format!("{} ^", reg_offset(".cfa", o))
                };
                ours == Some(expected.as_str())
            } else if let Some(o) = cfa_offset("v", cell) {
                ours == Some(reg_offset(".cfa", o).as_str())
            } else {
                // Saved in another register.
                ours == Some(our_name(arch, cell).as_str())
            }
        }
    }
}

#[derive(Default)]
struct Score {
    addresses: usize,
    agree: usize,
    misses: Vec<String>,
}

fn score_fixture(arch: &str, name: &str, score: &mut Score) {
    let path = fixtures().join("bin").join(arch).join(name);
    let readelf = std::fs::read_to_string(
        fixtures()
            .join("oracle")
            .join(arch)
            .join(format!("{name}.frames")),
    )
    .unwrap();
    let tables = parse_readelf(&readelf);
    let mut opts = dumpsyms::Options::default();
    opts.keep_load_address = true;
    let text = dump_text(&path, &opts);
    let cfi = parse_cfi(&text);
    let eh: Vec<(u64, u64)> = tables
        .iter()
        .filter(|t| t.section == ".eh_frame")
        .map(|t| (t.start, t.end))
        .collect();
    for t in &tables {
        // Tombstoned FDEs of discarded code, and .debug_frame FDEs that .eh_frame also
        // describes (we write those from .eh_frame).
        if t.start == 0 || t.end <= t.start || t.rows.is_empty() {
            continue;
        }
        if t.section == ".debug_frame" && eh.iter().any(|&(s, e)| s <= t.start && t.start < e) {
            continue;
        }
        for addr in t.start..t.end {
            score.addresses += 1;
            let row = t
                .rows
                .iter()
                .rev()
                .find(|(loc, _)| *loc <= addr)
                .unwrap_or(&t.rows[0]);
            let Some(ours) = cfi.at(addr) else {
                if score.misses.len() < 6 {
                    score.misses.push(format!(
                        "{name} {addr:#x}: no STACK CFI; readelf {:?}",
                        row.1
                    ));
                }
                continue;
            };
            let mut ok = true;
            let cols = std::iter::once("CFA").chain(t.columns.iter().map(String::as_str));
            for (col, cell) in cols.zip(&row.1) {
                let key = match col {
                    "CFA" => ".cfa".to_string(),
                    "ra" => ".ra".to_string(),
                    c => our_name(arch, c),
                };
                if !agrees(arch, col, cell, ours.get(&key).map(String::as_str), addr) {
                    ok = false;
                    if score.misses.len() < 6 {
                        score.misses.push(format!(
                            "{name} {addr:#x}: {col} readelf {cell:?}, ours {:?}",
                            ours.get(&key)
                        ));
                    }
                }
            }
            score.agree += usize::from(ok);
        }
    }
}

#[test]
fn stack_cfi_agrees_with_readelf() {
    let mut by_arch: BTreeMap<String, Score> = BTreeMap::new();
    for (arch, name, _) in fixture_binaries() {
        score_fixture(&arch, &name, by_arch.entry(arch.clone()).or_default());
    }
    let mut failed = Vec::new();
    for (arch, s) in &by_arch {
        let rate = s.agree as f64 / s.addresses as f64;
        println!(
            "{arch:<8} {:>7} addresses {:>8.3}% agree",
            s.addresses,
            100.0 * rate
        );
        for m in &s.misses {
            println!("    {m}");
        }
        if rate < REQUIRED || s.addresses < 1000 {
            failed.push(arch.clone());
        }
    }
    for arch in [
        "x86_64", "i686", "aarch64", "ppc", "ppc64", "ppc64le", "arm", "riscv64", "mips", "mipsel",
        "mips64", "mips64el",
    ] {
        assert!(by_arch.contains_key(arch), "no fixtures for {arch}");
    }
    assert!(failed.is_empty(), "below {REQUIRED}: {failed:?}");
}

#[test]
fn readelf_parser_reads_cie_defaults_for_empty_fdes() {
    let text = "Contents of the .eh_frame section:\n\n\
        00000000 0000000000000014 00000000 CIE \"zR\" cf=1 df=-8 ra=16\n   LOC           CFA      ra    \n\
        0000000000000000 rsp+8    c-8   \n\n\
        00000018 0000000000000014 0000001c FDE cie=00000000 pc=0000000000001080..0000000000001088\n\n";
    let t = parse_readelf(text);
    assert_eq!(t.len(), 1);
    assert_eq!(
        t[0].rows,
        vec![(0x1080, vec!["rsp+8".to_string(), "c-8".to_string()])]
    );
    assert_eq!(t[0].columns, vec!["ra".to_string()]);
}
