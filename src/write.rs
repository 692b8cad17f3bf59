//! The Breakpad text format: the only place that knows its syntax. Records are streamed
//! into the writer it is handed, in the order MODULE, INFO, FILE, INLINE_ORIGIN, FUNC
//! (with its INLINE and line records), PUBLIC, then STACK records.

use std::io::{self, Write};

use crate::module::Module;

/// The `INFO GENERATOR` value.
pub const GENERATOR: &str = concat!("dumpsyms ", env!("CARGO_PKG_VERSION"));

/// Writes `module` as a Breakpad symbol file.
pub fn write_module(m: &Module, w: &mut dyn Write) -> io::Result<()> {
    writeln!(w, "MODULE {} {} {} {}", m.os, m.arch, m.debug_id, m.name)?;
    if let Some(code_id) = &m.code_id {
        writeln!(w, "INFO CODE_ID {code_id}")?;
    }
    writeln!(w, "INFO GENERATOR {GENERATOR}")?;
    if m.header_only {
        return Ok(());
    }
    for (i, f) in m.files.iter().enumerate() {
        writeln!(w, "FILE {i} {f}")?;
    }
    for (i, o) in m.origins.iter().enumerate() {
        writeln!(w, "INLINE_ORIGIN {i} {o}")?;
    }
    let flag = |multiple: bool| {
        if multiple && m.write_multiple {
            "m "
        } else {
            ""
        }
    };
    for f in &m.functions {
        writeln!(
            w,
            "FUNC {}{:x} {:x} 0 {}",
            flag(f.multiple),
            f.address,
            f.size,
            f.name
        )?;
        for s in &f.inlines {
            write!(
                w,
                "INLINE {} {} {} {}",
                s.depth, s.call_line, s.call_file, s.origin
            )?;
            for (a, size) in &s.ranges {
                write!(w, " {a:x} {size:x}")?;
            }
            writeln!(w)?;
        }
        for l in &f.lines {
            writeln!(w, "{:x} {:x} {} {}", l.address, l.size, l.line, l.file)?;
        }
    }
    for p in &m.publics {
        writeln!(w, "PUBLIC {}{:x} 0 {}", flag(p.multiple), p.address, p.name)?;
    }
    if let Some(cfi) = &m.cfi {
        cfi.write(w)?;
    }
    Ok(())
}
