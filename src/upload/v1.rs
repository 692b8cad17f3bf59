//! sym-upload-v1: one multipart POST per file, the fields Breakpad's `sym_upload` sends
//! in its order. Success is 200.

use super::multipart::Form;
use super::{FilePart, Sent, Session, Source, SymbolFile, post_form};

pub(super) fn send(run: &Session, f: &SymbolFile) -> Result<Sent, super::UploadError> {
    run.up.fits("the file", f.len()?)?;
    let mut form = Form::new(&f.store_path());
    form.text("code_file", &f.code_file);
    form.text("cpu", &f.cpu);
    form.text("debug_file", &f.name);
    form.text("debug_identifier", &f.debug_id);
    form.text("os", &f.os);
    let filename = crate::breakpad::store::sym_file_name(&f.name);
    let file = FilePart {
        field: "symbol_file",
        filename: &filename,
        content_type: "application/octet-stream",
        source: Source::Path(&f.path),
    };
    post_form(run, &form, &file, &[], 200)
}
