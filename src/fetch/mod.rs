//! The network: fetching debug files from debuginfod servers. Everything that talks
//! HTTP lives here, so that the rest of the dumper reads only local files.

pub mod debuginfod;
pub(crate) mod http;
