//! The symbol-store layout: where a module's symbol file goes, `<name>/<debug id>/<file>`,
//! as symbol servers, Breakpad's and Mozilla's tools and rust-minidump's lookup have it.

use std::path::{Path, PathBuf};

use crate::model::module::Module;
use crate::untrusted::UnsafeName;

/// The file name of a module's symbol file in a symbol store: `<name>.sym`, where a
/// Windows module's `.pdb` gives way to `.sym` (`app.pdb/<id>/app.sym`), as symbol
/// servers and rust-minidump's lookup have it.
pub(crate) fn sym_file_name(module_name: &str) -> String {
    let n = module_name;
    let leaf = match n.len().checked_sub(4) {
        Some(i) if n.is_char_boundary(i) && n[i..].eq_ignore_ascii_case(".pdb") => &n[..i],
        _ => n,
    };
    format!("{leaf}.sym")
}

/// Where `module` goes in the symbol store `store`: `<name>/<debug id>/<name>.sym`, where
/// a Windows module's `.pdb` gives way to `.sym` (`app.pdb/<id>/app.sym`). Refused when the name or id, both read from the input, is not a
/// safe single path component (`..`, separators, control characters): the file must
/// land inside the store or nowhere.
pub fn store_path(store: &Path, module: &Module) -> Result<PathBuf, UnsafeName> {
    store_path_as(store, module, &module.name)
}

/// Where `module` goes in `store` under the name `name` (its SONAME, for a copy).
pub(crate) fn store_path_as(
    store: &Path,
    module: &Module,
    name: &str,
) -> Result<PathBuf, UnsafeName> {
    let name = crate::untrusted::path_component(name, "module name")?;
    let id = crate::untrusted::path_component(module.debug_id.as_ref(), "debug id")?;
    Ok(store.join(relative_path(name, id)))
}

/// `<name>/<id>/<file>`, with `/` between the parts whatever the system (the form URLs
/// and zip entries take). `name` and `id` must have passed
/// [`crate::untrusted::path_component`].
pub fn relative_path(name: &str, id: &str) -> String {
    format!("{name}/{id}/{}", sym_file_name(name))
}
