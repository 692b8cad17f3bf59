//! How long a symbol file takes to read, by `dumpsyms symbolize`'s reader and by
//! rust-minidump's `breakpad-symbols` (what a stack walker does before its first
//! lookup): `cargo run --release --example parse_sym -- ours|breakpad-symbols FILE`.
//! Run under GNU time for memory (bench/symbolize.sh does).

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(reader), Some(path)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: parse_sym ours|breakpad-symbols FILE");
        std::process::exit(2);
    };
    let started = Instant::now();
    let records = match reader.as_str() {
        "ours" => {
            // Mapped, as `dumpsyms symbolize` reads a store's file.
            let file = std::fs::File::open(path).expect("open");
            let map = unsafe { memmap2::Mmap::map(&file) }.expect("map");
            let sym = dumpsyms::breakpad::symfile::SymFile::parse(&map[..]);
            let (funcs, publics) = sym.counts();
            funcs + publics
        }
        "breakpad-symbols" => {
            let sym =
                breakpad_symbols::SymbolFile::from_file(std::path::Path::new(path)).expect("parse");
            sym.functions.ranges_values().count() + sym.publics.len()
        }
        other => {
            eprintln!("no reader {other}");
            std::process::exit(2);
        }
    };
    println!(
        "{reader}: {records} FUNC and PUBLIC records in {:.3} s",
        started.elapsed().as_secs_f64()
    );
}
