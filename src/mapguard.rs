//! Surviving an input that shrinks while it is mapped.
//!
//! Reading a page of a mapped file past its end raises `SIGBUS`, which kills the
//! process: `cp`, a build or a package manager rewriting a binary while it is dumped
//! would take down a whole `--store` run, leaving no message. Copying inputs into
//! memory instead would cost their whole size in RAM. So the maps are registered here,
//! and a `SIGBUS` handler puts a page of zeros where the file's page was and marks the
//! map: reading goes on over zeros (every reader is bounds-checked, so zeros are just
//! more bad input), and the dump checks the mark when it is done and fails with an
//! error naming the file instead of writing what it read. A fault outside the
//! registered maps is not ours: the default action is restored, and the fault, repeated
//! on return, ends the process as it would have.
//!
//! No crate does this: memmap2 leaves `SIGBUS` to the caller, and the crates that catch
//! signals do not remap a page from inside the handler.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Once, OnceLock};

/// Maps watched at once; past that a map is simply not watched (as before).
const SLOTS: usize = 1024;

/// A slot being filled in: not yet to be matched by the handler.
const CLAIMED: usize = usize::MAX;

struct Slot {
    /// Start address of the map; 0 when the slot is free, [`CLAIMED`] while it is set up.
    start: AtomicUsize,
    end: AtomicUsize,
    /// Set by the handler when a page of this map was past the end of its file.
    truncated: AtomicBool,
}

#[allow(clippy::declare_interior_mutable_const)]
const FREE: Slot = Slot {
    start: AtomicUsize::new(0),
    end: AtomicUsize::new(0),
    truncated: AtomicBool::new(false),
};

static WATCHED: [Slot; SLOTS] = [FREE; SLOTS];
static PAGE: AtomicUsize = AtomicUsize::new(4096);
static INSTALL: Once = Once::new();

/// A watched map; dropped before the map is unmapped.
pub(crate) struct Watch {
    slot: Option<usize>,
}

impl Watch {
    /// Starts watching `len` bytes mapped at `ptr`.
    pub(crate) fn new(ptr: *const u8, len: usize) -> Watch {
        install();
        let start = ptr as usize;
        let slot = WATCHED.iter().position(|s| {
            s.start
                .compare_exchange(0, CLAIMED, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
        });
        if let Some(i) = slot {
            let s = &WATCHED[i];
            s.end.store(start.saturating_add(len), Ordering::Release);
            s.truncated.store(false, Ordering::Release);
            s.start.store(start, Ordering::Release);
        }
        Watch { slot }
    }

    /// Whether a read of the map fell past the end of its file.
    pub(crate) fn truncated(&self) -> bool {
        self.slot
            .is_some_and(|i| WATCHED[i].truncated.load(Ordering::Acquire))
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(i) = self.slot {
            WATCHED[i].start.store(0, Ordering::Release);
        }
    }
}

/// The system's page size, asked of it once (4 KiB if it does not say).
pub(crate) fn page_size() -> usize {
    static SIZE: OnceLock<usize> = OnceLock::new();
    *SIZE.get_or_init(|| {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        usize::try_from(page)
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096)
    })
}

fn install() {
    INSTALL.call_once(|| {
        // SAFETY: sigaction is given a zeroed struct with a valid handler and an
        // empty mask.
        unsafe {
            PAGE.store(page_size(), Ordering::Relaxed);
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigbus as *const () as usize;
            action.sa_flags = libc::SA_SIGINFO | libc::SA_ONSTACK;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(libc::SIGBUS, &action, std::ptr::null_mut());
        }
    });
}

/// Only async-signal-safe work: atomics, `mmap`, `signal`.
extern "C" fn on_sigbus(_: libc::c_int, info: *mut libc::siginfo_t, _: *mut libc::c_void) {
    // SAFETY: the kernel passes a valid siginfo_t to an SA_SIGINFO handler.
    let addr = unsafe { (*info).si_addr() } as usize;
    let page = PAGE.load(Ordering::Relaxed);
    for s in &WATCHED {
        let start = s.start.load(Ordering::Acquire);
        if start == 0 || start == CLAIMED || addr < start || addr >= s.end.load(Ordering::Acquire) {
            continue;
        }
        let at = addr & !(page - 1);
        // SAFETY: the page lies inside a live read-only map of ours (its Watch is
        // dropped before the map is unmapped); replacing it by zeros changes only what
        // later reads of that page see.
        let zeros = unsafe {
            libc::mmap(
                at as *mut libc::c_void,
                page,
                libc::PROT_READ,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if zeros != libc::MAP_FAILED {
            s.truncated.store(true, Ordering::Release);
            return;
        }
        break;
    }
    // SAFETY: restoring the default action is async-signal-safe.
    unsafe {
        libc::signal(libc::SIGBUS, libc::SIG_DFL);
    }
}
