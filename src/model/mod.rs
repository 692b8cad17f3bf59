//! The in-memory model of a symbol file, whatever format it was read from: what every
//! debug-info reader produces (`debuginfo.rs`), functions' line and inline records held
//! compactly until written (`body.rs`), and the module they build (`module.rs`), which
//! breakpad/ writes, named by the ids and architecture of `ids.rs`, with a PDB's x86
//! frame data as `stack_win.rs`'s rows.

pub(crate) mod body;
pub(crate) mod cfi;
pub(crate) mod debuginfo;
pub mod ids;
pub mod module;
pub(crate) mod stack_win;
