//! STACK CFI records: `STACK CFI INIT <address> <size> <rules>` where a function's
//! unwind rules start, `STACK CFI <address> <rules>` where they change, each rule
//! `<register>: <postfix expression>` (see docs/breakpad-symbol-files.md). The unwind
//! readers hand over rows; the records' text is made here alone.
//!
//! Lines are assembled in a `String` and written once: this runs for every row of every
//! function, and formatting each rule through `write!` was most of its time.

use crate::unwind::rows::{Key, Row, Rule, Token, Value};

/// Starts `STACK CFI INIT <address> <len>` in `line`.
pub(crate) fn begin_init(line: &mut String, address: u64, len: u64) {
    line.push_str("STACK CFI INIT ");
    push_hex(line, address);
    line.push(' ');
    push_hex(line, len);
}

/// Starts `STACK CFI <address>` in `line`.
pub(crate) fn begin_change(line: &mut String, address: u64) {
    line.push_str("STACK CFI ");
    push_hex(line, address);
}

/// Lower-case hex, as `{:x}` writes it.
fn push_hex(line: &mut String, mut v: u64) {
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b"0123456789abcdef"[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    // Hex digits are ASCII.
    line.push_str(std::str::from_utf8(&digits[at..]).unwrap_or_default());
}

/// A decimal number, without `fmt`: every rule of every row goes through here.
fn push_num(out: &mut String, n: u64) {
    out.push_str(itoa::Buffer::new().format(n));
}

/// `reg + n` in postfix.
fn push_plus(out: &mut String, reg: &str, n: i64) {
    out.push_str(reg);
    if n != 0 {
        out.push(' ');
        push_num(out, n.unsigned_abs());
        out.push_str(if n > 0 { " +" } else { " -" });
    }
}

/// A row value as a postfix expression.
pub(crate) fn push_value(out: &mut String, v: Value) {
    match v {
        Value::Plus(reg, n) => push_plus(out, reg, n),
        Value::BelowCfa(n) => {
            out.push_str(".cfa ");
            push_num(out, n.unsigned_abs());
            out.push_str(if n >= 0 { " - ^" } else { " + ^" });
        }
        Value::At(reg, n) => {
            push_plus(out, reg, n);
            out.push_str(" ^");
        }
        Value::Reg(reg) => out.push_str(reg),
        Value::Undefined => out.push_str(".undef"),
    }
}

/// A postfix expression: its tokens, a space apart.
pub(crate) fn push_tokens(out: &mut String, tokens: &[Token]) {
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        match *t {
            Token::Name(s) | Token::Op(s) => out.push_str(s),
            Token::Num(n) => push_num(out, n),
        }
    }
}

/// A rule's value as the records write it: a row value, or a DWARF rule (a value or a
/// translated expression). One writer of INIT and change records serves both.
trait RuleValue: PartialEq {
    fn push_to(&self, out: &mut String);
}

impl RuleValue for Value {
    fn push_to(&self, out: &mut String) {
        push_value(out, *self);
    }
}

impl RuleValue for Rule {
    fn push_to(&self, out: &mut String) {
        match self {
            Rule::Value(v) => push_value(out, *v),
            Rule::Postfix(tokens) => push_tokens(out, tokens),
        }
    }
}

#[cfg(any(feature = "fuzzing", test))]
/// A postfix expression as text, for tests and the fuzz targets.
pub(crate) fn postfix_text(tokens: &[Token]) -> String {
    let mut out = String::new();
    push_tokens(&mut out, tokens);
    out
}

/// Appends ` <register>: <value>`.
fn push_key<V: RuleValue>(out: &mut String, key: Key, v: &V) {
    out.push(' ');
    out.push_str(key.name());
    out.push_str(": ");
    v.push_to(out);
}

/// `STACK CFI INIT <address> <len>` and every rule.
fn push_init<V: RuleValue>(line: &mut String, address: u64, len: u64, rules: &[(Key, V)]) {
    begin_init(line, address, len);
    for (k, v) in rules {
        push_key(line, *k, v);
    }
}

/// `STACK CFI <address>` and only what changed since `prev`; a rule that went back to its
/// default (restore, restore_state) is written as the register's own value, or the
/// walker would keep the old one.
fn push_change<V: RuleValue>(
    line: &mut String,
    address: u64,
    prev: &[(Key, V)],
    current: &[(Key, V)],
) {
    begin_change(line, address);
    for (k, v) in current {
        if !prev.iter().any(|(pk, pv)| pk == k && pv == v) {
            push_key(line, *k, v);
        }
    }
    for (k, _) in prev {
        if !current.iter().any(|(ck, _)| ck == k) {
            push_key(line, *k, &Value::Reg(k.name()));
        }
    }
}

/// Writes `rows` (the first at the function's start) as an INIT record of `len` bytes
/// and one record per change, naming only what changed. `address` turns a row's RVA
/// into the address written.
pub(crate) fn write_rows(rows: &[Row], len: u32, address: impl Fn(u32) -> u64, out: &mut Vec<u8>) {
    let mut prev: &[(Key, Value)] = &[];
    let mut line = String::new();
    for (i, (rva, rules)) in rows.iter().enumerate() {
        line.clear();
        let at = address(*rva);
        if i == 0 {
            push_init(&mut line, at, u64::from(len), rules);
        } else {
            push_change(&mut line, at, prev, rules);
        }
        line.push('\n');
        out.extend_from_slice(line.as_bytes());
        prev = rules;
    }
}

/// The line (ending in a newline) for a DWARF CFI row at `address` whose rules are
/// `current`: after a row whose rules were `prev`, a change record; for the first row
/// (`prev` is `None`), an INIT record of `len` bytes. False, with nothing written, when
/// the rules did not change.
pub(crate) fn row_line(
    line: &mut String,
    address: u64,
    len: u64,
    prev: Option<&[(Key, Rule)]>,
    current: &[(Key, Rule)],
) -> bool {
    match prev {
        None => push_init(line, address, len, current),
        Some(prev) if prev != current => push_change(line, address, prev, current),
        Some(_) => return false,
    }
    line.push('\n');
    true
}

/// One `STACK CFI INIT` record holding for all of `[start, start + len)`.
pub(crate) fn init_record(address: u64, len: u64, rules: &[(Key, Value)]) -> String {
    let mut line = String::new();
    push_init(&mut line, address, len, rules);
    line.push('\n');
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_fmt_writes_them() {
        for v in [0u64, 1, 9, 10, 15, 16, 255, 0x1234_5678, u64::MAX] {
            let mut hex = String::new();
            push_hex(&mut hex, v);
            assert_eq!(hex, format!("{v:x}"));
        }
        for n in [0i64, 1, -1, 16, -16, i64::MAX, i64::MIN] {
            let mut plus = String::new();
            push_value(&mut plus, Value::Plus("sp", n));
            let want = match n {
                0 => "sp".to_string(),
                n if n > 0 => format!("sp {n} +"),
                n => format!("sp {} -", n.unsigned_abs()),
            };
            assert_eq!(plus, want);
            let mut below = String::new();
            push_value(&mut below, Value::BelowCfa(n));
            let want = match n {
                n if n >= 0 => format!(".cfa {n} - ^"),
                n => format!(".cfa {} + ^", n.unsigned_abs()),
            };
            assert_eq!(below, want);
        }
    }

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
        write_rows(&rows, 0x20, u64::from, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "STACK CFI INIT 10 20 .cfa: sp .ra: x30\n\
             STACK CFI 14 .cfa: sp 16 + .ra: .cfa 8 - ^ x19: .cfa 16 - ^\n\
             STACK CFI 18 .cfa: x29 8 - .ra: x30 x19: sp 8 + ^\n\
             STACK CFI 1c .cfa: sp x19: x19\n"
        );
    }
}
