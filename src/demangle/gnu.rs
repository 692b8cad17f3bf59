//! GNU's C++ demangler, the one `c++filt`, gdb and Google Breakpad's dumper use, reached
//! through the C++ runtime's `abi::__cxa_demangle` (Itanium C++ ABI, §3.4).
//!
//! Why not only cpp_demangle: it rejects names GNU demangles (templates whose arguments
//! are expressions: `enable_if<…>`, `sr` forms), spells special names its own way
//! (`{virtual override thunk(…)}` for `virtual thunk to …`), and on a large C++ program
//! it was a fifth of the whole dump's time; GNU's is about three times faster. No Rust
//! crate carries GNU's demangler, and libstdc++ is on every glibc Linux system (apt
//! itself links it), so it is taken from there rather than rewritten.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

// `+verbatim`: the runtime library itself, so that linking does not need the
// `libstdc++.so` development link (installed only with g++).
#[link(name = "libstdc++.so.6", kind = "dylib", modifiers = "+verbatim")]
unsafe extern "C" {
    fn __cxa_demangle(
        mangled: *const c_char,
        buffer: *mut c_char,
        length: *mut usize,
        status: *mut c_int,
    ) -> *mut c_char;
}

unsafe extern "C" {
    fn free(ptr: *mut c_void);
}

/// Longest name given to GNU's demangler. It parses into stack arrays of ~72 bytes per
/// byte of name, so a huge crafted name would overflow a worker's stack; longer names
/// (rare even in heavy template code) go to cpp_demangle, which uses the heap.
pub(super) const MAX_LEN: usize = 16 << 10;

/// Abandoned helper threads (see [`watched`]) after which GNU's demangler is no longer
/// given names it could loop on: each spins until the process ends.
const MAX_ABANDONED: usize = 2;

static ABANDONED: AtomicUsize = AtomicUsize::new(0);

/// How long a watched name may take; real ones take microseconds.
const WATCH: Duration = Duration::from_secs(2);

/// The demangled name, or `None` where GNU's demangler rejects the name.
///
/// libstdc++'s demangler (GCC 12's) loops forever on some malformed unresolved names
/// (`sr`): `_Z1fDOsrioDp`, 12 bytes, found by the `demangle` fuzz target, hangs it, and
/// so would any symbol table holding it. It cannot be fixed here nor interrupted, so
/// names with `sr` in them are demangled on a helper thread that is waited for
/// [`WATCH`]; one that does not come back is abandoned and the name goes to
/// cpp_demangle. Past [`MAX_ABANDONED`] such names, GNU's is not asked about `sr` names
/// at all. Only an input holding names that hang GNU's demangler can see its other `sr`
/// names read by cpp_demangle instead.
pub(super) fn demangle(raw: &str) -> Option<String> {
    if raw.contains("sr") {
        return watched(raw);
    }
    unwatched(raw)
}

/// A thread that demangles the watched names of one worker thread, kept from one name
/// to the next. `sr` is common after all (GCC's `.isra` clones carry it): a thread
/// started per name was 2,655 threads and 3% of ceph-osd's dump.
struct Helper {
    names: Option<std::sync::mpsc::Sender<String>>,
    answers: std::sync::mpsc::Receiver<Option<String>>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// In its thread's name, `gnu-dm-<seq>`, so that tests can find it.
    #[cfg_attr(not(test), allow(dead_code))]
    seq: usize,
}

static HELPERS_STARTED: AtomicUsize = AtomicUsize::new(0);

impl Helper {
    fn start() -> Option<Helper> {
        let (names, inbox) = std::sync::mpsc::channel::<String>();
        let (outbox, answers) = std::sync::mpsc::channel();
        let seq = HELPERS_STARTED.fetch_add(1, Ordering::Relaxed);
        // The stack the longest name given to it needs (see `unwatched`).
        let longest = format!("_Z{}", "N".repeat(MAX_LEN - 2));
        let thread = std::thread::Builder::new()
            .name(format!("gnu-dm-{seq}"))
            .stack_size(super::stack_for(&longest))
            .spawn(move || {
                for name in inbox {
                    if outbox.send(unwatched(&name)).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Helper {
            names: Some(names),
            answers,
            thread: Some(thread),
            seq,
        })
    }
}

impl Drop for Helper {
    /// Ends the helper and waits for it: one still tearing down after its worker
    /// returned holds memory no one accounts for (LeakSanitizer in the `demangle` fuzz
    /// target reported it as a leak). An abandoned helper has no thread left to join.
    fn drop(&mut self) {
        drop(self.names.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

thread_local! {
    static HELPER: std::cell::RefCell<Option<Helper>> = const { std::cell::RefCell::new(None) };
}

fn watched(raw: &str) -> Option<String> {
    use std::sync::mpsc::RecvTimeoutError;
    if ABANDONED.load(Ordering::Relaxed) >= MAX_ABANDONED {
        return None;
    }
    // No helper while the thread's locals are torn down: cpp_demangle reads the name.
    HELPER
        .try_with(|cell| {
            let mut slot = cell.borrow_mut();
            if slot.is_none() {
                *slot = Helper::start();
            }
            let helper = slot.as_mut()?;
            let sent = helper
                .names
                .as_ref()
                .is_some_and(|names| names.send(raw.to_string()).is_ok());
            let answer = if sent {
                helper.answers.recv_timeout(WATCH)
            } else {
                Err(RecvTimeoutError::Disconnected)
            };
            match answer {
                Ok(result) => result,
                Err(RecvTimeoutError::Timeout) => {
                    // It spins on for good: not joined, and the next name gets a new one.
                    ABANDONED.fetch_add(1, Ordering::Relaxed);
                    if let Some(mut stuck) = slot.take() {
                        stuck.thread = None;
                    }
                    None
                }
                Err(RecvTimeoutError::Disconnected) => {
                    *slot = None;
                    None
                }
            }
        })
        .ok()
        .flatten()
}

fn unwatched(raw: &str) -> Option<String> {
    if raw.len() > MAX_LEN {
        return None;
    }
    let mut name = Vec::with_capacity(raw.len() + 1);
    name.extend_from_slice(raw.as_bytes());
    if name.contains(&0) {
        return None;
    }
    name.push(0);
    let mut status: c_int = 0;
    // SAFETY: `name` is NUL-terminated and outlives the call; with a null buffer the
    // function allocates the result with malloc, or returns null with a nonzero status.
    let out = unsafe {
        __cxa_demangle(
            name.as_ptr().cast(),
            std::ptr::null_mut(),
            std::ptr::null_mut(),
            &mut status,
        )
    };
    if out.is_null() {
        return None;
    }
    // SAFETY: a non-null result is a NUL-terminated string we now own.
    let text = super::utf8_lossy(unsafe { CStr::from_ptr(out) }.to_bytes()).into_owned();
    // SAFETY: allocated by the runtime's malloc (not the Rust allocator), freed once.
    unsafe { free(out.cast()) };
    (status == 0).then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// Taken by every test that starts helper threads, so that counting them is exact.
    static HELPERS: Mutex<()> = Mutex::new(());

    /// Whether the helper thread numbered `seq` is running.
    fn helper_running(seq: usize) -> bool {
        let want = format!("gnu-dm-{seq}");
        std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| std::fs::read_to_string(task.ok()?.path().join("comm")).ok())
            .any(|comm| comm.trim_end() == want)
    }

    fn own_helper() -> Option<usize> {
        HELPER.with(|h| h.borrow().as_ref().map(|h| h.seq))
    }

    #[test]
    fn a_worker_keeps_one_helper_and_takes_it_along() {
        let _serial = HELPERS.lock().unwrap_or_else(|e| e.into_inner());
        let name = "_ZN1A1fIiEENSt9enable_ifIXsr3std7is_sameIT_iEE5valueEvE4typeEv";
        let seq = std::thread::spawn(move || {
            assert_eq!(own_helper(), None);
            assert!(demangle(name).is_some());
            let seq = own_helper().expect("a helper started");
            for _ in 0..200 {
                assert!(demangle(name).is_some());
                assert_eq!(own_helper(), Some(seq));
            }
            assert!(helper_running(seq));
            seq
        })
        .join()
        .unwrap();
        // Its worker is gone, and the helper with it, joined, not left tearing down.
        assert!(!helper_running(seq));
    }

    #[test]
    fn special_names_and_expressions_read_as_cxxfilt_reads_them() {
        let _serial = HELPERS.lock().unwrap_or_else(|e| e.into_inner());
        // Answers from GNU c++filt 2.40.
        for (raw, want) in [
            ("_ZThn8_N1B1fEv", "non-virtual thunk to B::f()"),
            ("_ZGVZ1fvE1x", "guard variable for f()::x"),
            ("_ZTV1A", "vtable for A"),
            (
                "_ZN1A1fIiEENSt9enable_ifIXsr3std7is_sameIT_iEE5valueEvE4typeEv",
                "std::enable_if<std::is_same<int, int>::value, void>::type A::f<int>()",
            ),
            ("_ZNK1A1fEv.cold", "A::f() const [clone .cold]"),
        ] {
            assert_eq!(demangle(raw).as_deref(), Some(want), "{raw}");
        }
    }

    #[test]
    fn names_that_loop_the_runtime_demangler_come_back() {
        let _serial = HELPERS.lock().unwrap_or_else(|e| e.into_inner());
        // Found by the demangle fuzz target: libstdc++ 12's demangler never returns.
        let started = std::time::Instant::now();
        assert_eq!(demangle("_Z1fDOsrioDp"), None);
        assert!(started.elapsed() < WATCH + Duration::from_secs(1));
    }

    #[test]
    fn rejected_and_oversized_names_are_none() {
        assert_eq!(demangle("_Znot-a-name"), None);
        assert_eq!(demangle("_Z1f\0v"), None);
        let huge = format!("_Z{}", "N1A".repeat(MAX_LEN));
        assert_eq!(demangle(&huge), None);
    }
}
