//! The integration tests, one binary: each module is an area (`cargo test --test it
//! hostile::` runs one). One binary links the crate once, where 24 did it 24 times.

mod common;

mod archives;
mod byid;
mod cfi_oracle;
mod cli;
mod corrupt;
mod cross_unit;
mod debug_map;
mod debugfiles;
mod debuginfod;
mod ehabi;
mod golden;
mod hostile;
mod hostile_archives;
mod hostile_net;
mod hostile_packages;
mod interrupted;
mod macho;
mod msfz;
mod named_paths;
mod names;
mod oracle;
mod packages;
mod peers;
mod regress;
mod shard;
mod store;
mod swift;
mod symbolize;
mod symbolize_maps;
mod system_libc;
mod system_names;
mod system_sweep;
mod unwind_e2e;
mod upload;
mod windows;
mod windows_names;
