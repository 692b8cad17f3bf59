//! Mozilla's Tecken: the files zipped in the store layout (`<name>/<debug id>/<name>.sym`),
//! posted as a multipart form with an `Auth-Token` header; success is 201. Sets larger
//! than the zip limit go in several zips.

use std::io::Write as _;

use super::multipart::Form;
use super::{FilePart, Sent, Session, Source, SymbolFile, UploadError, post_form};

/// Sends one zip of `batch`: what it is about (its files) and what came of it.
pub(super) fn send(run: &Session, batch: &[SymbolFile]) -> (String, Result<Sent, UploadError>) {
    let what = batch
        .iter()
        .map(|f| f.path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ");
    (what, run.within(|| send_zip(run, batch)))
}

/// Files in order, cut into batches whose sizes add up to at most `limit` (a file
/// larger than that goes alone).
pub(super) fn batches(files: &[SymbolFile], limit: u64) -> Vec<Vec<SymbolFile>> {
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

fn send_zip(run: &Session, batch: &[SymbolFile]) -> Result<Sent, UploadError> {
    // Unnamed (`O_TMPFILE` where there is one): a killed run leaves no zip behind.
    let zip = tempfile::tempfile()
        .and_then(|file| write_zip(file, batch))
        .map_err(|source| UploadError::Zip {
            dir: std::env::temp_dir(),
            source,
        })?;
    run.up
        .fits("the zip", zip.metadata().map_or(0, |m| m.len()))?;
    post(run, &zip, &batch[0].store_path())
}

fn write_zip(file: std::fs::File, batch: &[SymbolFile]) -> std::io::Result<std::fs::File> {
    let mut zip = zip::ZipWriter::new(file);
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated)
        .large_file(true);
    for f in batch {
        zip.start_file(f.store_path(), options)
            .map_err(std::io::Error::other)?;
        std::io::copy(&mut std::fs::File::open(&f.path)?, &mut zip)?;
    }
    let mut file = zip.finish().map_err(std::io::Error::other)?;
    file.flush()?;
    Ok(file)
}

/// Posts the zip; `seed` (its first file's place) makes the form's boundary.
fn post(run: &Session, zip: &std::fs::File, seed: &str) -> Result<Sent, UploadError> {
    let token = run.up.token.as_deref().unwrap_or("");
    let form = Form::new(seed);
    let file = FilePart {
        field: "symbols.zip",
        filename: "symbols.zip",
        content_type: "application/zip",
        source: Source::Unnamed(zip),
    };
    post_form(run, &form, &file, &[("Auth-Token", token)], 201)
}
