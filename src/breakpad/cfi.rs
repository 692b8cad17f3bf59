//! STACK CFI records: `STACK CFI INIT <address> <size> <rules>` where a function's
//! unwind rules start, `STACK CFI <address> <rules>` where they change, each rule
//! `<register>: <postfix expression>` (see docs/breakpad-symbol-files.md). The unwind
//! readers hand over rows; the records' text is made here alone.
//!
//! Records are appended as bytes to the function's buffer: this runs for every row of
//! every function, and formatting each rule through `write!` was most of its time.

use crate::model::cfi::{CfiText, Key, Row, Rule, Token, Value};

use super::hex;

/// Starts `STACK CFI INIT <address> <len>` in `out`.
fn begin_init(out: &mut Vec<u8>, address: u64, len: u64) {
    out.extend_from_slice(b"STACK CFI INIT ");
    hex(out, address);
    out.push(b' ');
    hex(out, len);
}

/// Starts `STACK CFI <address>` in `out`.
fn begin_change(out: &mut Vec<u8>, address: u64) {
    out.extend_from_slice(b"STACK CFI ");
    hex(out, address);
}

/// A decimal number, without `fmt`: every rule of every row goes through here.
fn push_num(out: &mut Vec<u8>, n: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
}

/// `reg + n` in postfix.
fn push_plus(out: &mut Vec<u8>, reg: &str, n: i64) {
    out.extend_from_slice(reg.as_bytes());
    if n != 0 {
        out.push(b' ');
        push_num(out, n.unsigned_abs());
        out.extend_from_slice(if n > 0 { b" +" } else { b" -" });
    }
}

/// A row value as a postfix expression.
fn push_value(out: &mut Vec<u8>, v: Value) {
    match v {
        Value::Plus(reg, n) => push_plus(out, reg, n),
        Value::BelowCfa(n) => {
            out.extend_from_slice(b".cfa ");
            push_num(out, n.unsigned_abs());
            out.extend_from_slice(if n >= 0 { b" - ^" } else { b" + ^" });
        }
        Value::At(reg, n) => {
            push_plus(out, reg, n);
            out.extend_from_slice(b" ^");
        }
        Value::Reg(reg) => out.extend_from_slice(reg.as_bytes()),
        Value::Undefined => out.extend_from_slice(b".undef"),
    }
}

/// A postfix expression: its tokens, a space apart.
fn push_tokens(out: &mut Vec<u8>, tokens: &[Token]) {
    for (i, t) in tokens.iter().enumerate() {
        if i > 0 {
            out.push(b' ');
        }
        match *t {
            Token::Name(s) | Token::Op(s) => out.extend_from_slice(s.as_bytes()),
            Token::Num(n) => push_num(out, n),
        }
    }
}

/// A rule's value as the records write it: a row value, or a DWARF rule (a value or a
/// translated expression). One writer of INIT and change records serves both.
trait RuleValue: PartialEq {
    fn push_to(&self, out: &mut Vec<u8>);
}

impl RuleValue for Value {
    fn push_to(&self, out: &mut Vec<u8>) {
        push_value(out, *self);
    }
}

impl RuleValue for Rule {
    fn push_to(&self, out: &mut Vec<u8>) {
        match self {
            Rule::Value(v) => push_value(out, *v),
            Rule::Postfix(tokens) => push_tokens(out, tokens),
        }
    }
}

#[cfg(any(feature = "fuzzing", test))]
/// A postfix expression as text, for tests and the fuzz targets.
pub(crate) fn postfix_text(tokens: &[Token]) -> String {
    let mut out = Vec::new();
    push_tokens(&mut out, tokens);
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(any(feature = "fuzzing", test))]
/// A row value as text, for tests and the fuzz targets.
pub(crate) fn value_text(v: Value) -> String {
    let mut out = Vec::new();
    push_value(&mut out, v);
    String::from_utf8_lossy(&out).into_owned()
}

/// Appends ` <register>: <value>`.
fn push_key<V: RuleValue>(out: &mut Vec<u8>, key: Key, v: &V) {
    out.push(b' ');
    out.extend_from_slice(key.name().as_bytes());
    out.extend_from_slice(b": ");
    v.push_to(out);
}

/// `STACK CFI INIT <address> <len>` and every rule.
fn push_init<V: RuleValue>(out: &mut Vec<u8>, address: u64, len: u64, rules: &[(Key, V)]) {
    begin_init(out, address, len);
    for (k, v) in rules {
        push_key(out, *k, v);
    }
}

/// `STACK CFI <address>` and only what changed since `prev`; a rule that went back to its
/// default (restore, restore_state) is written as the register's own value, or the
/// walker would keep the old one.
fn push_change<V: RuleValue>(
    out: &mut Vec<u8>,
    address: u64,
    prev: &[(Key, V)],
    current: &[(Key, V)],
) {
    begin_change(out, address);
    for (k, v) in current {
        if !prev.iter().any(|(pk, pv)| pk == k && pv == v) {
            push_key(out, *k, v);
        }
    }
    for (k, _) in prev {
        if !current.iter().any(|(ck, _)| ck == k) {
            push_key(out, *k, &Value::Reg(k.name()));
        }
    }
}

/// The text of STACK CFI records, as the unwind tables are handed it (see
/// [`CfiText`] for what each record holds).
pub(crate) struct Text;

impl CfiText for Text {
    fn rows(&self, rows: &[Row], len: u32, address: &dyn Fn(u32) -> u64, out: &mut Vec<u8>) {
        let mut prev: &[(Key, Value)] = &[];
        for (i, (rva, rules)) in rows.iter().enumerate() {
            let at = address(*rva);
            if i == 0 {
                push_init(out, at, u64::from(len), rules);
            } else {
                push_change(out, at, prev, rules);
            }
            out.push(b'\n');
            prev = rules;
        }
    }

    fn row(
        &self,
        out: &mut Vec<u8>,
        address: u64,
        len: u64,
        prev: Option<&[(Key, Rule)]>,
        current: &[(Key, Rule)],
    ) -> bool {
        match prev {
            None => push_init(out, address, len, current),
            Some(prev) if prev != current => push_change(out, address, prev, current),
            Some(_) => return false,
        }
        out.push(b'\n');
        true
    }

    fn init(&self, out: &mut Vec<u8>, address: u64, len: u64, rules: &[(Key, Value)]) {
        push_init(out, address, len, rules);
        out.push(b'\n');
    }
}

#[cfg(any(feature = "fuzzing", test))]
/// Rules as text pairs, for tests and the fuzz targets.
pub(crate) fn to_strings(rules: &[(Key, Value)]) -> Vec<(String, String)> {
    rules
        .iter()
        .map(|&(k, v)| (k.name().to_string(), value_text(v)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_fmt_writes_them() {
        for n in [0i64, 1, -1, 16, -16, i64::MAX, i64::MIN] {
            let plus = value_text(Value::Plus("sp", n));
            let want = match n {
                0 => "sp".to_string(),
                n if n > 0 => format!("sp {n} +"),
                n => format!("sp {} -", n.unsigned_abs()),
            };
            assert_eq!(plus, want);
            let below = value_text(Value::BelowCfa(n));
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
        Text.rows(&rows, 0x20, &u64::from, &mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "STACK CFI INIT 10 20 .cfa: sp .ra: x30\n\
             STACK CFI 14 .cfa: sp 16 + .ra: .cfa 8 - ^ x19: .cfa 16 - ^\n\
             STACK CFI 18 .cfa: x29 8 - .ra: x30 x19: sp 8 + ^\n\
             STACK CFI 1c .cfa: sp x19: x19\n"
        );
    }
}
