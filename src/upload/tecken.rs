//! Mozilla's Tecken: the files zipped in the store layout (`<name>/<debug id>/<name>.sym`),
//! posted as a multipart form with an `Auth-Token` header; success is 201. Sets larger
//! than the zip limit go in several zips.

use std::io::Write as _;

use super::multipart::Form;
use super::{FilePart, Sent, SymbolFile, Uploader, post_form};

pub(super) fn send(
    up: &Uploader,
    agent: &ureq::Agent,
    files: &[SymbolFile],
) -> Vec<(String, Result<Sent, String>)> {
    let mut out = Vec::new();
    for batch in batches(files, up.zip_limit) {
        let what = batch
            .iter()
            .map(|f| f.path.display().to_string())
            .collect::<Vec<_>>()
            .join(", ");
        out.push((what, send_zip(up, agent, &batch)));
    }
    out
}

/// Files in order, cut into batches whose sizes add up to at most `limit` (a file
/// larger than that goes alone).
fn batches(files: &[SymbolFile], limit: u64) -> Vec<Vec<SymbolFile>> {
    let mut out: Vec<Vec<SymbolFile>> = Vec::new();
    let mut size = 0u64;
    for f in files {
        let len = f.len().unwrap_or(0);
        if out.is_empty() || size.saturating_add(len) > limit {
            out.push(Vec::new());
            size = 0;
        }
        size = size.saturating_add(len);
        if let Some(last) = out.last_mut() {
            last.push(f.clone());
        }
    }
    out
}

fn send_zip(up: &Uploader, agent: &ureq::Agent, batch: &[SymbolFile]) -> Result<Sent, String> {
    let zip_path = std::env::temp_dir().join(format!(
        "dumpsyms-upload-{}-{}.zip",
        std::process::id(),
        xxhash_rust::xxh3::xxh3_64(batch[0].store_path().as_bytes())
    ));
    let result = write_zip(&zip_path, batch)
        .map_err(|e| format!("{}: {e}", zip_path.display()))
        .and_then(|()| post(up, agent, &zip_path));
    let _ = std::fs::remove_file(&zip_path);
    result
}

fn write_zip(path: &std::path::Path, batch: &[SymbolFile]) -> std::io::Result<()> {
    // create_new: the name in the shared temporary directory is predictable, so a file
    // or link someone else put there is never opened (or followed) and overwritten.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for f in batch {
        zip.start_file(f.store_path(), options)
            .map_err(std::io::Error::other)?;
        std::io::copy(&mut std::fs::File::open(&f.path)?, &mut zip)?;
    }
    zip.finish().map_err(std::io::Error::other)?.flush()
}

fn post(up: &Uploader, agent: &ureq::Agent, zip_path: &std::path::Path) -> Result<Sent, String> {
    let token = up.token.as_deref().unwrap_or("");
    let form = Form::new(&zip_path.display().to_string());
    let file = FilePart {
        field: "symbols.zip",
        filename: "symbols.zip",
        content_type: "application/zip",
        path: zip_path,
    };
    post_form(up, agent, &form, &file, &[("Auth-Token", token)], 201)
}
