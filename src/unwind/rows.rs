//! Rows of unwind rules as plain values, and their STACK CFI text: what the Windows
//! readers (x64 and arm64 `.pdata`) produce. A function has a row per prologue (and
//! epilogue) instruction, most of them a rule or two away from the one before; keeping
//! rules as small copyable values lets the writer find what changed without formatting
//! or comparing text, which was most of a large PE's dump time.

use std::io::{self, Write};

/// What a rule is for. Ordered as written: `.cfa`, `.ra`, then registers by number.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Key {
    Cfa,
    Ra,
    /// A register: its number (which identifies it, and orders) and name.
    Reg(u16, &'static str),
}

impl Key {
    /// Compared by this alone: a register's name follows from its number, and
    /// comparing numbers is what makes finding a row's changes cheap.
    fn rank(&self) -> u32 {
        match self {
            Key::Cfa => 0,
            Key::Ra => 1,
            Key::Reg(n, _) => 2 + u32::from(*n),
        }
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.rank() == other.rank()
    }
}

impl Eq for Key {}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Key {
    fn cmp(&self, other: &Key) -> std::cmp::Ordering {
        self.rank().cmp(&other.rank())
    }
}

impl Key {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Key::Cfa => ".cfa",
            Key::Ra => ".ra",
            Key::Reg(_, name) => name,
        }
    }
}

/// A rule's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Value {
    /// `reg + n` (the CFA's rule).
    Plus(&'static str, i64),
    /// The value saved `n` bytes below the CFA: `.cfa n - ^`.
    BelowCfa(i64),
    /// The value saved at `reg + n`.
    At(&'static str, i64),
    /// The value held in a register (`.ra: x30`; a register restored: its own name).
    Reg(&'static str),
}

/// One row: its address and its rules, sorted by key.
pub(crate) type Row = (u32, Vec<(Key, Value)>);

/// `reg + n` in postfix.
fn push_plus(out: &mut Vec<u8>, reg: &str, n: i64) -> io::Result<()> {
    match n {
        0 => write!(out, "{reg}"),
        n if n > 0 => write!(out, "{reg} {n} +"),
        n => write!(out, "{reg} {} -", n.unsigned_abs()),
    }
}

fn push_value(out: &mut Vec<u8>, v: Value) -> io::Result<()> {
    match v {
        Value::Plus(reg, n) => push_plus(out, reg, n),
        Value::BelowCfa(n) if n >= 0 => write!(out, ".cfa {n} - ^"),
        Value::BelowCfa(n) => write!(out, ".cfa {} + ^", n.unsigned_abs()),
        Value::At(reg, n) => {
            push_plus(out, reg, n)?;
            out.write_all(b" ^")
        }
        Value::Reg(reg) => out.write_all(reg.as_bytes()),
    }
}

fn push_rule(out: &mut Vec<u8>, key: Key, v: Value) -> io::Result<()> {
    write!(out, " {}: ", key.name())?;
    push_value(out, v)
}

/// Writes `rows` (the first at the function's start) as an INIT record of `len` bytes
/// and one record per change, naming only what changed; a rule that goes away is
/// written as the register's own value. `address` turns a row's RVA into the address
/// written.
pub(crate) fn write(
    rows: &[Row],
    len: u32,
    address: impl Fn(u32) -> u64,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let mut prev: &[(Key, Value)] = &[];
    for (i, (rva, rules)) in rows.iter().enumerate() {
        let at = address(*rva);
        if i == 0 {
            write!(out, "STACK CFI INIT {at:x} {len:x}")?;
            for &(k, v) in rules {
                push_rule(out, k, v)?;
            }
        } else {
            write!(out, "STACK CFI {at:x}")?;
            for &(k, v) in rules {
                if !prev.contains(&(k, v)) {
                    push_rule(out, k, v)?;
                }
            }
            for &(k, _) in prev {
                if !rules.iter().any(|r| r.0 == k) {
                    push_rule(out, k, Value::Reg(k.name()))?;
                }
            }
        }
        out.push(b'\n');
        prev = rules;
    }
    Ok(())
}

/// Rules as text pairs, for tests and the fuzz targets.
pub(crate) fn to_strings(rules: &[(Key, Value)]) -> Vec<(String, String)> {
    rules
        .iter()
        .map(|&(k, v)| {
            let mut value = Vec::new();
            // Writing into memory cannot fail.
            let _ = push_value(&mut value, v);
            (
                k.name().to_string(),
                String::from_utf8_lossy(&value).into_owned(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_changes_are_written() {
        let init = vec![
            (Key::Cfa, Value::Plus("sp", 0)),
            (Key::Ra, Value::Reg("x30")),
        ];
        let saved = vec![
            (Key::Cfa, Value::Plus("sp", 16)),
            (Key::Ra, Value::BelowCfa(8)),
            (Key::Reg(19, "x19"), Value::BelowCfa(16)),
        ];
        let fp = vec![
            (Key::Cfa, Value::Plus("x29", -8)),
            (Key::Ra, Value::Reg("x30")),
            (Key::Reg(19, "x19"), Value::At("sp", 8)),
        ];
        let mut out = Vec::new();
        let rows = [
            (0x10, init.clone()),
            (0x14, saved),
            (0x18, fp),
            (0x1c, init),
        ];
        write(&rows, 0x20, u64::from, &mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "STACK CFI INIT 10 20 .cfa: sp .ra: x30\n\
             STACK CFI 14 .cfa: sp 16 + .ra: .cfa 8 - ^ x19: .cfa 16 - ^\n\
             STACK CFI 18 .cfa: x29 8 - .ra: x30 x19: sp 8 + ^\n\
             STACK CFI 1c .cfa: sp x19: x19\n"
        );
    }
}
