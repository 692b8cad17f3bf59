//! The network: fetching debug files from debuginfod servers and PDBs from symbol
//! servers. Everything that talks
//! HTTP lives here, so that the rest of the dumper reads only local files.

pub mod debuginfod;
pub(crate) mod http;
pub mod symsrv;
