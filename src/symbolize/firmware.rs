//! A firmware image's identity as ESP-IDF prints it (`ELF file SHA256: 5f1e0a9c…`): the
//! SHA-256 of the ELF file itself, which has no build ID to go by.

use std::path::Path;

use sha2::Digest as _;

/// The SHA-256 of the file at `path`, lowercase hex; None if it cannot be read.
pub(super) fn sha256_hex(path: &Path) -> Option<String> {
    let input = crate::load::Input::open(path).ok()?;
    let sum = sha2::Sha256::digest(input.bytes());
    Some(sum.iter().map(|b| format!("{b:02x}")).collect())
}
