//! Containing other crates' panics on damaged input. The `pdb2` crate indexes and splits
//! its buffers with lengths read from the file, so a damaged PDB can panic inside it
//! (`mid > len` in a line table, found by the corruption tests); the cabinet reader
//! likewise. Their parsers are called through [`contained`] and [`contained_as`],
//! which turn such a panic into an error for the caller to report as damage, and keep
//! the panic message off stderr: it is reported as a warning naming the file.

use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Set while this thread runs a contained call.
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// A panic inside another crate's reader: which reader, and what the panic said.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reader} failed on damaged data ({message})")]
pub(crate) struct Panicked {
    reader: &'static str,
    message: String,
}

/// Runs `f`; a panic inside it becomes an error.
pub(crate) fn contained<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    contained_as("the PDB reader", f)
}

/// [`contained`] for another crate's reader, named `reader` in the message.
pub(crate) fn contained_as<T>(reader: &'static str, f: impl FnOnce() -> T) -> Result<T, Panicked> {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        // Chained to the hook in place, which still reports every other panic.
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if !CONTAINED.with(Cell::get) {
                previous(info);
            }
        }));
    });
    let was = CONTAINED.with(|c| c.replace(true));
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(was));
    result.map_err(|payload| {
        let message = panic_message(payload.as_ref()).unwrap_or_else(|| "unknown failure".into());
        Panicked { reader, message }
    })
}

/// What a panic said, when it said it in text (`panic!` with a literal or a format).
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> Option<String> {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error() {
        let r: Result<u8, Panicked> = contained(|| panic!("mid > len"));
        assert_eq!(
            r.unwrap_err().to_string(),
            "the PDB reader failed on damaged data (mid > len)"
        );
        assert_eq!(contained(|| 7), Ok(7));
    }
}
