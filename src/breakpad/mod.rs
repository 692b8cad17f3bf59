//! The Breakpad text format: the only place that knows its syntax, both ways. Public
//! for its reader, [`symfile`] (what `dumpsyms symbolize` looks addresses up in), and
//! [`write_module`]. STACK CFI records' text is made in `cfi.rs`; the postfix
//! expressions of their rules are translated from DWARF by the unwind readers, which
//! write through it. Records are streamed
//! into the writer it is handed, in the order MODULE, INFO, FILE, INLINE_ORIGIN, FUNC
//! (with its INLINE and line records), PUBLIC, then STACK records.
//!
//! FUNC blocks, most of a symbol file, are decoded and formatted in parallel a bounded
//! chunk at a time and written in address order, so the text is never held whole and
//! the bytes do not depend on the thread count.

use std::io::{self, Write};

use rayon::prelude::*;

use crate::error::Warnings;
use crate::model::body::{InlineRef, UnitBodies};
use crate::model::module::{Function, Module};
use crate::model::stack_win::StackWin;

pub(crate) mod cfi;
pub(crate) mod header;
pub(crate) mod store;
pub mod symfile;

/// Functions formatted together: enough to keep every core busy, few enough that the
/// chunk's text stays a few MB.
const FUNC_CHUNK: usize = 2048;

/// The `INFO GENERATOR` value.
pub(crate) const GENERATOR: &str = concat!("dumpsyms ", env!("CARGO_PKG_VERSION"));

/// How a symbol file is written, apart from what its module holds: the switches that
/// change the text (`-m`, `--no-generator`), given to the writer rather than kept in
/// the model.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct WriteOptions {
    /// Write the optional `m` field of FUNC and PUBLIC records (`-m`).
    pub multiple: bool,
    /// Write `INFO GENERATOR` (`--no-generator` leaves it out).
    pub generator: bool,
}

impl Default for WriteOptions {
    fn default() -> WriteOptions {
        WriteOptions {
            multiple: false,
            generator: true,
        }
    }
}

impl From<&crate::options::Options> for WriteOptions {
    fn from(opts: &crate::options::Options) -> WriteOptions {
        WriteOptions {
            multiple: opts.multiple_field,
            generator: opts.generator,
        }
    }
}

/// Writes `module` as a Breakpad symbol file, as `opts` says. Returns what had to be
/// left out while writing, and why: unwind records that cannot be expressed in the
/// format, or past the output the input's size allows, are only found as they are
/// rendered.
pub fn write_module(m: &Module, opts: &WriteOptions, w: &mut dyn Write) -> io::Result<Warnings> {
    write_header(m, opts, w)?;
    for (i, f) in m.files.iter().enumerate() {
        writeln!(w, "FILE {i} {f}")?;
    }
    for (i, o) in m.origins.iter().enumerate() {
        writeln!(w, "INLINE_ORIGIN {i} {o}")?;
    }
    write_functions(m, opts, w)?;
    for p in &m.publics {
        writeln!(
            w,
            "PUBLIC {}{:x} {:x} {}",
            flag(opts, p.multiple),
            p.address,
            p.param_size,
            p.name
        )?;
    }
    write_stack_win(&m.stack_win, w)?;
    match &m.cfi {
        Some(tables) => tables.write(&cfi::Text, w),
        None => Ok(Warnings::default()),
    }
}

/// `MODULE` and the `INFO` records.
fn write_header(m: &Module, opts: &WriteOptions, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "MODULE {} {} {} {}", m.os, m.arch, m.debug_id, m.name)?;
    match (&m.code_id, &m.code_file) {
        (Some(id), Some(file)) => writeln!(w, "INFO CODE_ID {id} {file}")?,
        (Some(id), None) => writeln!(w, "INFO CODE_ID {id}")?,
        (None, _) => {}
    }
    if opts.generator {
        writeln!(w, "INFO GENERATOR {GENERATOR}")?;
    }
    for (key, value) in &m.extra_info {
        writeln!(w, "INFO {key} {value}")?;
    }
    Ok(())
}

/// Every FUNC with its line and INLINE records: formatted in parallel, [`FUNC_CHUNK`]
/// functions at a time, written in address order.
fn write_functions(m: &Module, opts: &WriteOptions, w: &mut dyn Write) -> io::Result<()> {
    for chunk in m.functions.chunks(FUNC_CHUNK) {
        let texts: Vec<Vec<u8>> = chunk
            .par_chunks(64)
            .map(|fs| {
                // Sized from the encoded records (a byte of them is 3 to 5 of text):
                // with `--inlines`, a fixed guess was grown by doubling several times.
                let body = |f: &Function| m.body_of(f).map_or(0, |(_, b)| b.len());
                let size: usize = fs.iter().map(|f| 64 + f.name.len() + 5 * body(f)).sum();
                let mut text = Vec::with_capacity(size);
                for f in fs {
                    write_function(m, opts, f, &mut text);
                }
                text
            })
            .collect();
        for t in texts {
            w.write_all(&t)?;
        }
    }
    Ok(())
}

/// Writes `records` (sorted by address).
fn write_stack_win(records: &[StackWin], w: &mut dyn Write) -> io::Result<()> {
    for r in records {
        write!(
            w,
            "STACK WIN {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} {:x} ",
            r.kind,
            r.rva,
            r.code_size,
            r.prolog_size,
            r.epilog_size,
            r.params_size,
            r.saved_regs_size,
            r.locals_size,
            r.max_stack_size
        )?;
        match &r.program {
            Some(p) => writeln!(w, "1 {p}")?,
            None => writeln!(w, "0 {}", u8::from(r.allocates_base_pointer))?,
        }
    }
    Ok(())
}

fn flag(opts: &WriteOptions, multiple: bool) -> &'static str {
    if multiple && opts.multiple { "m " } else { "" }
}

/// One FUNC record with its INLINE and line records. The numbers are formatted by hand:
/// this writes most of a symbol file's bytes, and `fmt` machinery was a tenth of a
/// large dump's time.
fn write_function(m: &Module, opts: &WriteOptions, f: &Function, out: &mut Vec<u8>) {
    out.extend_from_slice(b"FUNC ");
    out.extend_from_slice(flag(opts, f.multiple).as_bytes());
    hex(out, f.address);
    out.push(b' ');
    hex(out, f.size);
    out.push(b' ');
    hex(out, u64::from(f.param_size));
    out.push(b' ');
    out.extend_from_slice(f.name.as_bytes());
    out.push(b'\n');
    let Some((unit, bytes)) = m.body_of(f) else {
        return;
    };
    let mut num = itoa::Buffer::new();
    let start = f.address.wrapping_add(m.bias);
    let mut lines = Vec::new();
    crate::model::body::visit(start, bytes, &mut lines, |s| {
        write_inline(&s, unit, m.bias, &mut num, out);
    });
    for l in &lines {
        hex(out, l.address.wrapping_sub(m.bias));
        out.push(b' ');
        hex(out, l.size);
        out.push(b' ');
        out.extend_from_slice(num.format(l.line).as_bytes());
        out.push(b' ');
        out.extend_from_slice(num.format(unit.file(l.file)).as_bytes());
        out.push(b'\n');
    }
}

/// An `INLINE` record, its ids mapped through `unit`'s and its addresses made
/// module-relative.
fn write_inline(
    s: &InlineRef<'_>,
    unit: &UnitBodies,
    bias: u64,
    num: &mut itoa::Buffer,
    out: &mut Vec<u8>,
) {
    out.extend_from_slice(b"INLINE ");
    for n in [
        s.depth,
        s.call_line,
        unit.file(s.call_file),
        unit.origin(s.origin),
    ] {
        out.extend_from_slice(num.format(n).as_bytes());
        out.push(b' ');
    }
    out.pop();
    for &(lo, hi) in s.ranges {
        out.push(b' ');
        hex(out, lo.wrapping_sub(bias));
        out.push(b' ');
        hex(out, hi.wrapping_sub(lo));
    }
    out.push(b'\n');
}

/// Lower-case hex without leading zeros, as `{:x}` writes it.
fn hex(out: &mut Vec<u8>, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let n = ((67 - (v | 1).leading_zeros()) / 4) as usize;
    // A copy of a constant 16 bytes, then cut: copying a slice of variable length was
    // a call to memcpy per number, 1% of a dump with --inlines.
    let start = out.len();
    out.extend_from_slice(&[0u8; 16]);
    for (k, d) in out[start..start + n].iter_mut().rev().enumerate() {
        *d = DIGITS[((v >> (4 * k)) & 0xf) as usize];
    }
    out.truncate(start + n);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_matches_fmt() {
        for v in [
            0,
            1,
            0xf,
            0x10,
            0x11,
            0xff,
            0x100,
            0xdead_beef,
            u64::MAX,
            1 << 63,
            (1 << 60) - 1,
        ] {
            let mut out = Vec::new();
            hex(&mut out, v);
            assert_eq!(String::from_utf8(out).unwrap(), format!("{v:x}"));
        }
    }
}
