//! A real stack walker over our symbol files: rust-minidump's minidump-processor with a
//! symbol store in the layout symbol servers use.

use std::path::Path;

use breakpad_symbols::{SimpleSymbolSupplier, Symbolizer};
use minidump::Minidump;
use minidump_processor::process_minidump;
use minidump_unwind::FrameTrust;

/// The call chain of `fixtures/src/chain.c`, innermost first.
pub const CHAIN: [&str; 5] = [
    "chain_wait",
    "chain_level3",
    "chain_level2",
    "chain_level1",
    "main",
];

/// Writes our symbol file for `binary` (with STACK CFI when `cfi`) into `store` in the
/// layout rust-minidump's simple supplier reads; returns the module name.
pub fn store_symbols(binary: &Path, store: &Path, cfi: bool) -> String {
    let opts = dumpsyms::Options {
        cfi,
        ..Default::default()
    };
    let d = dumpsyms::dump(binary, &opts).unwrap_or_else(|e| panic!("{e}"));
    let m = &d.module;
    let dir = store.join(&m.name).join(&m.debug_id);
    std::fs::create_dir_all(&dir).unwrap();
    let mut file = std::fs::File::create(dir.join(format!("{}.sym", m.name))).unwrap();
    dumpsyms::write_module(m, &mut file).unwrap();
    m.name.clone()
}

/// Walks thread `tid` of `dump` with the symbol files in `store`:
/// (module file name, function, how the frame was found).
pub fn walk<T: std::ops::Deref<Target = [u8]>>(
    dump: &Minidump<'_, T>,
    store: &Path,
    tid: u32,
) -> Vec<(String, String, FrameTrust)> {
    let provider = Symbolizer::new(SimpleSymbolSupplier::new(vec![store.to_path_buf()]));
    let state = futures_executor::block_on(process_minidump(dump, &provider)).unwrap();
    let thread = state
        .threads
        .iter()
        .find(|t| t.thread_id == tid)
        .expect("the thread");
    thread
        .frames
        .iter()
        .map(|f| {
            let module = f
                .module
                .as_ref()
                .map(|m| {
                    Path::new(&*m.name)
                        .file_name()
                        .unwrap()
                        .to_string_lossy()
                        .into_owned()
                })
                .unwrap_or_default();
            (module, f.function_name.clone().unwrap_or_default(), f.trust)
        })
        .collect()
}
