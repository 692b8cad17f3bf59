//! Writes one binary's symbol file to standard output through the library, as
//! `dumpsyms BINARY` does (with default options: no debuginfod, no symbol server):
//!
//! ```sh
//! cargo run --release --example dump -- /usr/lib/x86_64-linux-gnu/libc.so.6 > libc.sym
//! ```

use std::path::Path;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args_os()
        .nth(1)
        .ok_or("usage: dump BINARY > BINARY.sym")?;
    let dump = dumpsyms::dump(Path::new(&path), &dumpsyms::Options::default())?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    // Some problems are only found while writing (unwind rules the format cannot hold).
    let left_out = dumpsyms::write_module(&dump.module, &Default::default(), &mut out)?;
    std::io::Write::flush(&mut out)?;
    for warning in dump.warnings.iter().chain(&left_out) {
        eprintln!("warning: {}: {warning}", dump.module.name);
    }
    Ok(())
}
