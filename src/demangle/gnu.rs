//! GNU's C++ demangler, the one `c++filt`, gdb and Google Breakpad's dumper use, reached
//! through the C++ runtime's `abi::__cxa_demangle` (Itanium C++ ABI, §3.4).
//!
//! Why not only cpp_demangle: it rejects names GNU demangles (templates whose arguments
//! are expressions: `enable_if<…>`, `sr` forms), spells special names its own way
//! (`{virtual override thunk(…)}` for `virtual thunk to …`), and on a large C++ program
//! it was a fifth of the whole dump's time; GNU's is about three times faster. No Rust
//! crate carries GNU's demangler, and libstdc++ is on every glibc Linux system (apt
//! itself links it), so it is taken from there rather than rewritten.

use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_int, c_void};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
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
/// names read by cpp_demangle instead. Names given to [`demangle_ahead`] on this
/// thread are answered from what it found.
pub(super) fn demangle(raw: &str) -> Option<String> {
    if raw.contains("sr") {
        let ahead = AHEAD
            .try_with(|a| a.borrow().get(raw).cloned())
            .ok()
            .flatten();
        if let Some(answer) = ahead {
            return answer;
        }
        return watched(&[raw.to_string()]).pop().flatten();
    }
    unwatched(raw)
}

/// Demangles the names among `names` that [`demangle`] would watch (those with `sr`
/// in them), all in one handoff to this thread's helper, and keeps the answers for
/// `demangle` on this thread until [`forget_ahead`]. One handoff per name costs two
/// thread wake-ups, which on ceph-osd with `--inlines` (2,400 such names) were 2% of
/// the dump's CPU.
pub(super) fn demangle_ahead(names: Vec<String>) {
    let mut names: Vec<String> = (names.into_iter())
        .filter(|n| n.contains("sr") && n.len() <= MAX_LEN)
        .collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return;
    }
    let answers = watched(&names);
    let _ = AHEAD.try_with(|a| a.borrow_mut().extend(names.into_iter().zip(answers)));
}

/// Drops the answers [`demangle_ahead`] kept on this thread.
pub(super) fn forget_ahead() {
    let _ = AHEAD.try_with(|a| *a.borrow_mut() = HashMap::new());
}

/// Names handed to a helper at once, and its answers, in order, kept as it goes: when
/// it stops coming back, their number says which name it is stuck on.
struct Batch {
    names: Arc<[String]>,
    answers: Arc<Mutex<Vec<Option<String>>>>,
}

/// A thread that demangles the watched names of one worker thread, kept from one name
/// to the next. `sr` is common after all (GCC's `.isra` clones carry it): a thread
/// started per name was 2,655 threads and 3% of ceph-osd's dump.
struct Helper {
    batches: Option<mpsc::Sender<Batch>>,
    /// One message per batch done.
    done: mpsc::Receiver<()>,
    thread: Option<std::thread::JoinHandle<()>>,
    /// In its thread's name, `gnu-dm-<seq>`, so that tests can find it.
    #[cfg_attr(not(test), allow(dead_code))]
    seq: usize,
}

static HELPERS_STARTED: AtomicUsize = AtomicUsize::new(0);

impl Helper {
    /// A helper answering each name with `work`.
    fn start(work: fn(&str) -> Option<String>) -> Option<Helper> {
        let (batches, inbox) = mpsc::channel::<Batch>();
        let (finished, done) = mpsc::channel();
        let seq = HELPERS_STARTED.fetch_add(1, Ordering::Relaxed);
        // The stack the longest name given to it needs (see `unwatched`).
        let longest = format!("_Z{}", "N".repeat(MAX_LEN - 2));
        let thread = std::thread::Builder::new()
            .name(format!("gnu-dm-{seq}"))
            .stack_size(super::stack_for(&longest))
            .spawn(move || {
                for batch in inbox {
                    for name in batch.names.iter() {
                        let answer = work(name);
                        lock(&batch.answers).push(answer);
                    }
                    if finished.send(()).is_err() {
                        break;
                    }
                }
            })
            .ok()?;
        Some(Helper {
            batches: Some(batches),
            done,
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
        drop(self.batches.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

thread_local! {
    static HELPER: std::cell::RefCell<Option<Helper>> = const { std::cell::RefCell::new(None) };
    static AHEAD: std::cell::RefCell<HashMap<String, Option<String>>> =
        std::cell::RefCell::new(HashMap::new());
}

/// A poisoned lock only means a thread panicked holding it; the answers are still valid.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// GNU's answers for `names`, from this thread's helper (see [`demangle`]).
fn watched(names: &[String]) -> Vec<Option<String>> {
    HELPER
        .try_with(|cell| {
            let watch = Watch {
                work: unwatched,
                patience: WATCH,
                abandoned: &ABANDONED,
            };
            watch.answer(&mut cell.borrow_mut(), names)
        })
        // No helper while the thread's locals are torn down: cpp_demangle reads them.
        .unwrap_or_else(|_| vec![None; names.len()])
}

/// How names are answered on a helper thread, and how long one may take.
struct Watch<'w> {
    work: fn(&str) -> Option<String>,
    patience: Duration,
    /// Helpers abandoned so far, by every worker; past [`MAX_ABANDONED`], no name is
    /// given to one.
    abandoned: &'w AtomicUsize,
}

impl Watch<'_> {
    /// The answers for `names` from the helper in `slot` (started if there is none), in
    /// order. A name it spends `patience` on without coming back gets `None`: the helper
    /// is abandoned there (it spins on for good: not joined) and a new one takes the
    /// names after it. `None` for the rest once helpers cannot be had.
    fn answer(&self, slot: &mut Option<Helper>, names: &[String]) -> Vec<Option<String>> {
        let mut out: Vec<Option<String>> = Vec::with_capacity(names.len());
        while out.len() < names.len() {
            if self.abandoned.load(Ordering::Relaxed) >= MAX_ABANDONED {
                break;
            }
            if slot.is_none() {
                *slot = Helper::start(self.work);
            }
            let Some(helper) = slot.as_mut() else { break };
            let batch = Batch {
                names: names[out.len()..].into(),
                answers: Arc::new(Mutex::new(Vec::new())),
            };
            let answers = batch.answers.clone();
            let sent = (helper.batches.as_ref()).is_some_and(|b| b.send(batch).is_ok());
            let ended = if sent {
                self.wait(helper, &answers)
            } else {
                Ended::Gone
            };
            let mut got = lock(&answers);
            if let Ended::Stuck(answered) = ended {
                // What it answered after it was given up on is not taken: it is
                // stuck on the name after the `answered` first.
                got.truncate(answered);
            }
            out.append(&mut got);
            drop(got);
            match ended {
                Ended::Finished => continue,
                Ended::Stuck(_) => {
                    self.abandoned.fetch_add(1, Ordering::Relaxed);
                    if let Some(mut stuck) = slot.take() {
                        stuck.thread = None;
                    }
                }
                // Its thread ended: joined, and a new one takes the names after this.
                Ended::Gone => *slot = None,
            }
            // The name it stopped at (so that every turn of the loop moves on).
            out.push(None);
        }
        out.resize(names.len(), None);
        out
    }

    /// How `helper`'s batch ended, waited for while it makes progress.
    fn wait(&self, helper: &Helper, answers: &Mutex<Vec<Option<String>>>) -> Ended {
        use mpsc::RecvTimeoutError;
        let mut seen = 0;
        loop {
            match helper.done.recv_timeout(self.patience) {
                Ok(()) => return Ended::Finished,
                Err(RecvTimeoutError::Timeout) => {
                    let now = lock(answers).len();
                    if now == seen {
                        return Ended::Stuck(seen);
                    }
                    seen = now;
                }
                Err(RecvTimeoutError::Disconnected) => return Ended::Gone,
            }
        }
    }
}

/// How a helper's batch ended.
enum Ended {
    Finished,
    /// It spent the watch's patience on the name after this many answers.
    Stuck(usize),
    /// Its thread is gone.
    Gone,
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

    /// Answers a name in upper case after `ms` milliseconds (`slow:<ms>`), or never
    /// (`hang`): for watching helpers without the runtime's demangler.
    fn fake(name: &str) -> Option<String> {
        if name == "hang" {
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        if let Some(ms) = name.strip_prefix("slow:") {
            std::thread::sleep(Duration::from_millis(ms.parse().unwrap()));
        }
        Some(name.to_uppercase())
    }

    /// A watch over [`fake`] with `patience_ms` of patience.
    fn fake_watch(patience_ms: u64, abandoned: &AtomicUsize) -> Watch<'_> {
        Watch {
            work: fake,
            patience: Duration::from_millis(patience_ms),
            abandoned,
        }
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn a_stuck_name_in_a_batch_is_none_and_the_names_after_it_are_answered() {
        let abandoned = AtomicUsize::new(0);
        let watch = fake_watch(200, &abandoned);
        let mut slot = None;
        let got = watch.answer(&mut slot, &names(&["a", "hang", "b", "c"]));
        assert_eq!(
            got,
            [Some("A".into()), None, Some("B".into()), Some("C".into())]
        );
        assert_eq!(abandoned.load(Ordering::Relaxed), 1);
        // A new helper took the names after the stuck one, and stays for the next batch.
        let seq = slot.as_ref().map(|h| h.seq).unwrap();
        assert_eq!(watch.answer(&mut slot, &names(&["d"])), [Some("D".into())]);
        assert_eq!(slot.as_ref().map(|h| h.seq), Some(seq));
    }

    #[test]
    fn a_batch_longer_than_the_patience_is_waited_for_while_it_moves() {
        let abandoned = AtomicUsize::new(0);
        let watch = fake_watch(150, &abandoned);
        let list = names(&["slow:60"; 6]);
        let got = watch.answer(&mut None, &list);
        assert_eq!(got, vec![Some("SLOW:60".to_string()); 6]);
        assert_eq!(abandoned.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn past_the_abandoned_helpers_allowed_no_name_is_given_to_one() {
        let abandoned = AtomicUsize::new(0);
        let watch = fake_watch(100, &abandoned);
        let got = watch.answer(&mut None, &names(&["hang", "a", "hang", "b", "c"]));
        assert_eq!(got, [None, Some("A".into()), None, None, None]);
        assert_eq!(abandoned.load(Ordering::Relaxed), MAX_ABANDONED);
    }

    #[test]
    fn names_readied_ahead_read_as_asked_one_by_one() {
        let _serial = HELPERS.lock().unwrap_or_else(|e| e.into_inner());
        let list = names(&[
            "_ZN1A1fIiEENSt9enable_ifIXsr3std7is_sameIT_iEE5valueEvE4typeEv",
            "_ZN5isra_1fEv.isra.0",
            "_Znot-a-name-sr",
            "_ZN1B1gEv",
        ]);
        let want: Vec<Option<String>> = list.iter().map(|n| unwatched(n)).collect();
        assert!(want[0].is_some() && want[1].is_some() && want[2].is_none());
        std::thread::spawn(move || {
            demangle_ahead(list.clone());
            // Only the watched names were readied, each once.
            assert_eq!(AHEAD.with(|a| a.borrow().len()), 3);
            for (name, want) in list.iter().zip(&want) {
                assert_eq!(&demangle(name), want, "{name}");
            }
            // Kept until forgotten; then names are asked one by one again.
            assert_eq!(AHEAD.with(|a| a.borrow().len()), 3);
            forget_ahead();
            assert_eq!(AHEAD.with(|a| a.borrow().len()), 0);
            assert_eq!(demangle(&list[0]), want[0]);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn rejected_and_oversized_names_are_none() {
        assert_eq!(demangle("_Znot-a-name"), None);
        assert_eq!(demangle("_Z1f\0v"), None);
        let huge = format!("_Z{}", "N1A".repeat(MAX_LEN));
        assert_eq!(demangle(&huge), None);
    }
}
