//! What a run unpacks into a store must not outlive it: the directory goes when the run
//! ends, when it is interrupted (SIGINT, SIGTERM), and, when it was killed outright
//! (SIGKILL, a power cut), at the next run into the same store.
//!
//! Each directory is named with its process id and a hash of its host's name
//! (`.dumpsyms-unpacking-<pid>.<host>-…`), so a later run on the same host can tell a
//! live run's directory, which it leaves alone, from one whose process is gone. A
//! store shared between machines or containers (a CI cache volume) holds directories
//! whose process ids mean nothing here: those are removed only when a day old.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicI32, Ordering};

/// The start of every unpack directory's name.
pub(crate) const PREFIX: &str = ".dumpsyms-unpacking-";

/// The stores this process unpacks into: on SIGINT or SIGTERM, its directories in them
/// (those named with its [`prefix`]) are removed.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The write end of the pipe the signal handler tells the cleaner through; -1 until
/// the handler is installed.
static WAKE: AtomicI32 = AtomicI32::new(-1);

/// How old another host's unpack directory must be to be taken for a leftover: no
/// real store run unpacks for a day.
const FOREIGN_AGE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// The name prefix of a new unpack directory of this process.
pub(crate) fn prefix() -> String {
    format!("{PREFIX}{}.{:08x}-", std::process::id(), host())
}

/// A hash of this host's name (FNV-1a, 32 bits): what tells this host's process ids
/// from another's.
fn host() -> u32 {
    let mut name = [0u8; 256];
    // SAFETY: the buffer and its length; the name is NUL-terminated within it.
    let ok = unsafe { libc::gethostname(name.as_mut_ptr().cast(), name.len()) } == 0;
    let len = name.iter().position(|&b| b == 0).unwrap_or(name.len());
    let name = if ok { &name[..len] } else { &[][..] };
    name.iter().fold(0x811c_9dc5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Watches `store`, before this process makes an unpack directory in it: if the
/// process is interrupted, whatever directories of its own are in it then are removed.
/// By the store, not the directory: a directory registered once made would be left
/// behind by a signal between its making and its registering (seen under load).
pub(crate) fn watch(store: &Path) {
    install();
    let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
    if !live.iter().any(|s| s == store) {
        live.push(store.to_path_buf());
    }
}

/// This process's unpack directories in `store`.
fn own_in(store: &Path) -> Vec<PathBuf> {
    let mine = prefix();
    let Ok(entries) = std::fs::read_dir(store) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(&mine)))
        .map(|e| e.path())
        .collect()
}

/// Removes the unpack directories in `store` whose process is no longer running: a run
/// killed outright could not remove its own. A directory of a process that still runs
/// (another run into the same store) is left alone. The directories removed.
pub(crate) fn remove_stale(store: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(store) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(PREFIX)) else {
            continue;
        };
        let owner = rest.split('-').next().and_then(|o| o.split_once('.'));
        let stale = match owner {
            Some((pid, host_hash)) if u32::from_str_radix(host_hash, 16) == Ok(host()) => {
                pid.parse::<i32>().is_ok_and(|pid| pid > 0 && !alive(pid))
            }
            // Another host's, or made by a dumpsyms that did not name its process.
            _ => entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > FOREIGN_AGE),
        };
        if !stale {
            continue;
        }
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) && std::fs::remove_dir_all(&path).is_ok() {
            removed.push(path);
        }
    }
    removed.sort();
    removed
}

/// Whether a process `pid` exists (one this user may not signal exists too).
fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only asks whether the process exists.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH)
}

/// Installs, once, handlers for SIGINT and SIGTERM that remove the live directories and
/// then let the signal end the process as it would have: only where the signal's action
/// is still the default (a program embedding the library that handles them itself
/// keeps its own handling). The handler only writes a byte to a pipe (what a signal
/// handler may safely do); a thread of its own does the removing.
fn install() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let mut fds = [0; 2];
        // SAFETY: two ints for the pipe's ends.
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let [read, write] = fds;
        let cleaner = std::thread::Builder::new()
            .name("dumpsyms-interrupt".into())
            .spawn(move || clean_on_signal(read));
        if cleaner.is_err() {
            return;
        }
        WAKE.store(write, Ordering::SeqCst);
        for signal in [libc::SIGINT, libc::SIGTERM] {
            // SAFETY: the old action is read into a zeroed struct, and the new one is a
            // plain handler that calls only write(2).
            unsafe {
                let mut old: libc::sigaction = std::mem::zeroed();
                if libc::sigaction(signal, std::ptr::null(), &mut old) != 0
                    || old.sa_sigaction != libc::SIG_DFL
                {
                    continue;
                }
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
                action.sa_flags = libc::SA_RESTART;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(signal, &action, std::ptr::null_mut());
            }
        }
    });
}

extern "C" fn on_signal(signal: libc::c_int) {
    let fd = WAKE.load(Ordering::Relaxed);
    let byte = signal as u8;
    // SAFETY: write(2) is async-signal-safe; one byte from a live local.
    unsafe { libc::write(fd, (&byte as *const u8).cast(), 1) };
}

/// Waits for a signal's byte, removes the live directories, then ends the process by
/// that signal with its default action (the exit status a shell expects of Ctrl-C).
fn clean_on_signal(read: libc::c_int) {
    let mut byte = 0u8;
    loop {
        // SAFETY: one byte into a live local, from the pipe made for it.
        let n = unsafe { libc::read(read, (&mut byte as *mut u8).cast(), 1) };
        if n == 1 {
            break;
        }
        if n < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return;
    }
    let stores = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for dir in stores.iter().flat_map(|s| own_in(s)) {
        let _ = std::fs::remove_dir_all(dir);
    }
    let signal = libc::c_int::from(byte);
    // SAFETY: the default action is restored and the signal sent to this process.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    // Not reached: the default action of SIGINT and SIGTERM ends the process.
    std::process::exit(128 + signal);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_directories_of_processes_gone_are_stale() {
        let store = std::env::temp_dir().join(format!("dumpsyms-leftovers-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&store);
        let mine = store.join(format!("{}abc", prefix()));
        // No process has pid 2^22 + 1 (the kernel's largest is 2^22).
        let gone = store.join(format!("{PREFIX}4194305.{:08x}-xyz", host()));
        // Another host's: its process ids are not this host's to judge.
        let foreign = store.join(format!("{PREFIX}4194305.{:08x}-xyz", host() ^ 1));
        let old_style = store.join(format!("{PREFIX}Ab3xYz"));
        for d in [&mine, &gone, &foreign, &old_style] {
            std::fs::create_dir_all(d.join("0")).unwrap();
        }
        assert_eq!(remove_stale(&store), std::slice::from_ref(&gone));
        assert!(mine.is_dir() && old_style.is_dir() && foreign.is_dir() && !gone.exists());
        assert_eq!(own_in(&store), [mine]);
        std::fs::remove_dir_all(&store).unwrap();
    }
}
