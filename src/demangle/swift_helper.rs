//! Swift's demangler in a helper process, for the `dumpsyms` command.
//!
//! Swift 6.3.1's demangler is a C++ library that malformed names break in ways no guard
//! in the process can contain: besides what `swift_guard.cpp` catches (exceptions,
//! failed assertions, abort(), runaway output), `$eSSTf4p` (8 bytes, found by the
//! `demangle_swift` fuzz target) makes it allocate nodes until memory runs out (24 GB
//! and 47 s here, through malloc, which no budget sees) and then write through a null
//! pointer. So the command hands Swift names to a copy of itself started as a helper,
//! with its data capped at [`HELPER_MEMORY`], its standard error closed (the
//! demangler's own "fatal error" lines), and [`WAIT`] to answer each name. A helper that
//! dies or does not answer is replaced, and its name stays raw; after [`MAX_DEATHS`]
//! Swift names are no longer demangled. In a process that starts no helper
//! ([`isolate`]), as a library caller's by default, Swift names stay raw: services that
//! dump uploaded files with `dump_bytes` are where such names arrive.
//!
//! The protocol, on the helper's standard input and output: a name as its length (u32,
//! little-endian) then its bytes; an answer as 1 and the demangled name's length and
//! bytes, or 0 and length 0 for a name the demangler cannot read.

use std::io::{self, Read, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The first argument that makes the `dumpsyms` executable a helper.
pub const HELPER_ARG: &str = "--internal-swift-demangler";

/// How long the helper may take over one name; a real one takes microseconds.
const WAIT: Duration = Duration::from_secs(2);

/// Helpers that may die or hang before Swift names are left raw.
const MAX_DEATHS: usize = 8;

/// The helper's data segment (heap and anonymous mappings): a real name needs a few
/// MiB at most.
const HELPER_MEMORY: u64 = 256 << 20;

/// Longest name or answer passed: names longer than this are left raw before they get
/// here ([`super::too_deep`]).
const MAX_MESSAGE: usize = 1 << 20;

struct Helper {
    child: Child,
    to: ChildStdin,
    from: ChildStdout,
    /// Bytes read from the helper and not yet taken.
    pending: Vec<u8>,
}

/// One helper slot of the pool; a helper is started on first use.
#[derive(Default)]
struct Slot {
    helper: Option<Helper>,
}

struct Pool {
    exe: PathBuf,
    /// One slot per worker thread, so that workers do not wait on each other's round
    /// trips (a name takes ~5 µs to demangle, and as much again to pass both ways).
    slots: Vec<Mutex<Slot>>,
    deaths: AtomicUsize,
}

static POOL: OnceLock<Pool> = OnceLock::new();

/// Sends the process's Swift names to helpers started from `exe` (the `dumpsyms`
/// executable, which must answer [`HELPER_ARG`] with [`serve`]).
pub fn isolate(exe: PathBuf) {
    let slots = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    let _ = POOL.set(Pool {
        exe,
        slots: (0..slots).map(|_| Mutex::new(Slot::default())).collect(),
        deaths: AtomicUsize::new(0),
    });
}

/// True once [`isolate`] was called.
pub fn isolated() -> bool {
    POOL.get().is_some()
}

/// The helper's answer for `raw` (`None` inside when it cannot read the name, or the
/// helper failed); `None` when this process starts no helper.
pub fn demangle(raw: &str) -> Option<Option<String>> {
    let pool = POOL.get()?;
    if pool.deaths.load(Ordering::Relaxed) >= MAX_DEATHS {
        return Some(None);
    }
    // A free slot if there is one, else this thread's own.
    let mut slot = pool
        .slots
        .iter()
        .find_map(|s| s.try_lock().ok())
        .unwrap_or_else(|| {
            let mine = &pool.slots[thread_number() % pool.slots.len()];
            // A poisoned lock only means a caller panicked; the slot is still whole.
            mine.lock().unwrap_or_else(|e| e.into_inner())
        });
    Some(slot.ask(pool, raw))
}

/// A small number for this thread, to spread waiting threads over the slots.
fn thread_number() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static MINE: usize = NEXT.fetch_add(1, Ordering::Relaxed);
    }
    MINE.with(|n| *n)
}

impl Slot {
    fn ask(&mut self, pool: &Pool, raw: &str) -> Option<String> {
        if self.helper.is_none() {
            self.helper = start(pool);
        }
        let answer = self.helper.as_mut()?.ask(raw);
        answer.unwrap_or_else(|_| {
            if let Some(mut dead) = self.helper.take() {
                let _ = dead.child.kill();
                let _ = dead.child.wait();
            }
            pool.deaths.fetch_add(1, Ordering::Relaxed);
            None
        })
    }
}

fn start(pool: &Pool) -> Option<Helper> {
    let started = Command::new(&pool.exe)
        .arg(HELPER_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn();
    match started {
        Ok(mut child) => {
            let to = child.stdin.take()?;
            let from = child.stdout.take()?;
            Some(Helper {
                child,
                to,
                from,
                pending: Vec::new(),
            })
        }
        Err(_) => {
            // No helper can be started: no more attempts.
            pool.deaths.store(MAX_DEATHS, Ordering::Relaxed);
            None
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(mut helper) = self.helper.take() {
            let _ = helper.child.kill();
            let _ = helper.child.wait();
        }
    }
}

impl Helper {
    fn ask(&mut self, raw: &str) -> io::Result<Option<String>> {
        let len = u32::try_from(raw.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
        // One write: a request in two would wake the helper twice.
        let mut request = Vec::with_capacity(4 + raw.len());
        request.extend_from_slice(&len.to_le_bytes());
        request.extend_from_slice(raw.as_bytes());
        self.to.write_all(&request)?;
        let deadline = Instant::now() + WAIT;
        self.fill(5, deadline)?;
        let head = &self.pending[..5];
        let (ok, len) = (
            head[0] == 1,
            u32::from_le_bytes([head[1], head[2], head[3], head[4]]),
        );
        let len = len as usize;
        if len > MAX_MESSAGE {
            return Err(io::ErrorKind::InvalidData.into());
        }
        self.fill(5 + len, deadline)?;
        let name = ok.then(|| String::from_utf8_lossy(&self.pending[5..5 + len]).into_owned());
        self.pending.drain(..5 + len);
        Ok(name)
    }

    /// Reads until `want` bytes are pending, or fails once `deadline` has passed.
    fn fill(&mut self, want: usize, deadline: Instant) -> io::Result<()> {
        let mut chunk = [0u8; 4096];
        while self.pending.len() < want {
            let n = read_by(&mut self.from, &mut chunk, deadline)?;
            self.pending.extend_from_slice(&chunk[..n]);
        }
        Ok(())
    }
}

/// Reads what the helper has sent (at least a byte), or fails once `deadline` has
/// passed.
#[cfg(unix)]
fn read_by(from: &mut ChildStdout, buf: &mut [u8], deadline: Instant) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        let mut poll = libc::pollfd {
            fd: from.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        let millis = i32::try_from(left.as_millis()).unwrap_or(i32::MAX).max(1);
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        if ready < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        if ready == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
        return match from.read(buf)? {
            0 => Err(io::ErrorKind::UnexpectedEof.into()),
            n => Ok(n),
        };
    }
}

#[cfg(not(unix))]
fn read_by(from: &mut ChildStdout, buf: &mut [u8], _deadline: Instant) -> io::Result<usize> {
    match from.read(buf)? {
        0 => Err(io::ErrorKind::UnexpectedEof.into()),
        n => Ok(n),
    }
}

/// The helper: answers names on standard input until it closes; the exit code.
pub fn serve() -> u8 {
    limit_memory();
    let stdin = io::stdin();
    let stdout = io::stdout();
    let (mut input, mut output) = (stdin.lock(), stdout.lock());
    loop {
        let mut len = [0u8; 4];
        if input.read_exact(&mut len).is_err() {
            return 0;
        }
        let len = u32::from_le_bytes(len) as usize;
        if len > MAX_MESSAGE {
            return 1;
        }
        let mut name = vec![0; len];
        if input.read_exact(&mut name).is_err() {
            return 1;
        }
        let name = String::from_utf8_lossy(&name);
        let need = super::stack_for(&name);
        let answer = stacker::maybe_grow(need, need, || super::swift::demangle_here(&name));
        let text = answer.as_deref().map_or(&[][..], str::as_bytes);
        let text = &text[..text.len().min(MAX_MESSAGE)];
        // One write, as the request was.
        let mut reply = Vec::with_capacity(5 + text.len());
        reply.push(u8::from(answer.is_some()));
        reply.extend_from_slice(&(text.len() as u32).to_le_bytes());
        reply.extend_from_slice(text);
        let sent = output.write_all(&reply).and_then(|()| output.flush());
        if sent.is_err() {
            return 0;
        }
    }
}

#[cfg(unix)]
fn limit_memory() {
    let limit = libc::rlimit {
        rlim_cur: HELPER_MEMORY as libc::rlim_t,
        rlim_max: HELPER_MEMORY as libc::rlim_t,
    };
    // SAFETY: a valid rlimit for the duration of the call. Without the limit (a
    // refusal is not expected) the helper is still contained by its own process.
    unsafe {
        libc::setrlimit(libc::RLIMIT_DATA, &limit);
    }
}

#[cfg(not(unix))]
fn limit_memory() {}
