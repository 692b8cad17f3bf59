//! The worker threads every dump runs on, with the stack it needs.
//!
//! GNU's demangler parses into stack arrays (up to ~1.2 MiB for the longest name it is
//! given) and recursion on deep names adds more, so a dump on rayon's default 2 MiB
//! stacks could overflow where the command's would not. The library therefore runs each
//! dump on a pool of its own, one per thread count asked for, built once and kept: a
//! library caller and the command give the same bytes. A batch gives each file in
//! flight a pool of its own instead ([`for_one_file`]), with the same stacks.

use std::sync::{Arc, Barrier, Condvar, Mutex};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// As large as a main thread's.
const STACK: usize = 8 << 20;

/// Pools by thread count (0: one per CPU).
static POOLS: Mutex<Vec<(usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread is a worker of one of these pools (with their stack).
    static ON_WORKER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `work` on the pool of `jobs` threads (`None`: one per CPU), or right here when
/// this thread is already a worker of one of these pools (a batch dumping files in
/// parallel, each on the pool it was given: see [`for_one_file`]).
pub(crate) fn run<R: Send>(
    jobs: Option<usize>,
    work: impl FnOnce() -> R + Send,
) -> Result<R, std::io::Error> {
    if ON_WORKER.get() {
        return Ok(work());
    }
    let pool = pool(jobs.unwrap_or(0))?;
    Ok(pool.install(work))
}

/// A pool of its own for one of a batch's feeders, which dumps a file at a time on it,
/// where `threads` files are in flight at once (as many as the batch has threads).
///
/// On one shared pool, a worker that waited inside one file's dump (for the other half
/// of a split it had handed out) took another feeder's whole next file to run meanwhile,
/// and the first file's end (writing its records, freeing them) could only resume when
/// that file was done. A pool per feeder keeps each file's work on its own pool; the
/// pools together have more threads than cores, and the kernel shares the cores out:
/// on this tree (two cores, `--inlines`) the busy share of the cores went from 1.85 of
/// 2 to 1.93. Each pool has about the square root of `threads` workers (at least two), so
/// that one file alone can still use several cores and the threads stay few; while other
/// files wait in the batch's queue, all but one of them are held ([`Tail`]).
pub(crate) fn for_one_file(threads: usize, tail: &Arc<Tail>) -> Result<ThreadPool, std::io::Error> {
    let pool = build(per_file(threads.max(1)))?;
    tail.hold(&pool);
    Ok(pool)
}

/// Whether a batch's last file has been taken; until then, all but one worker of each
/// of its feeders' pools are held off the cores.
///
/// With files queued every core already has a file's work; a second worker per file
/// then only adds threads for the kernel to share the same cores between (two files
/// with an inflating thread and two workers each: six threads on two cores). Held, the
/// whole tree with `--inlines` switched threads 6,200 times rather than 9,400 and took
/// 2.3% less CPU and 1.2% less wall, means of 30 alternating runs (docs/PERFORMANCE.md). Once nothing is queued a file may be the last one running, and its
/// held workers are let go so that it has the cores the finished feeders leave.
#[derive(Default)]
pub(crate) struct Tail {
    begun: Mutex<bool>,
    changed: Condvar,
}

impl Tail {
    /// Nothing is queued any more: every held worker is let go, and none is held again.
    pub(crate) fn begin(&self) {
        *self.begun.lock().unwrap_or_else(|e| e.into_inner()) = true;
        self.changed.notify_all();
    }

    /// Holds all but one of `pool`'s workers until [`Tail::begin`], each in a job that
    /// waits for it, and returns once they are held (or let go), so that the file
    /// installed next starts on the one worker left.
    fn hold(self: &Arc<Self>, pool: &ThreadPool) {
        let wanted = pool.current_num_threads().saturating_sub(1);
        let held = Arc::new(Barrier::new(wanted + 1));
        for _ in 0..wanted {
            let (held, tail) = (held.clone(), self.clone());
            pool.spawn(move || {
                held.wait();
                let mut begun = tail.begun.lock().unwrap_or_else(|e| e.into_inner());
                while !*begun {
                    begun = tail.changed.wait(begun).unwrap_or_else(|e| e.into_inner());
                }
            });
        }
        // The pool is new and idle: each of its other workers takes one of these jobs.
        held.wait();
    }
}

/// Lets a batch's held workers go when dropped: when a feeder stops, however it stops.
pub(crate) struct BeginOnDrop<'a>(pub &'a Tail);

impl Drop for BeginOnDrop<'_> {
    fn drop(&mut self) {
        self.0.begin();
    }
}

/// Workers per file of a batch on `threads` threads: about their square root, at least
/// two (one file's parallel work has a second core while the other files' are serial).
fn per_file(threads: usize) -> usize {
    let root = (1..=threads).find(|r| r * r >= threads).unwrap_or(1);
    root.max(2).min(threads)
}

fn build(threads: usize) -> Result<ThreadPool, std::io::Error> {
    ThreadPoolBuilder::new()
        .stack_size(STACK)
        .num_threads(threads)
        .thread_name(|i| format!("dumpsyms-{i}"))
        .start_handler(|_| ON_WORKER.set(true))
        .build()
        // rayon's error, kept as the source: the system refused a thread.
        .map_err(std::io::Error::other)
}

fn pool(threads: usize) -> Result<Arc<ThreadPool>, std::io::Error> {
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, pool)) = pools.iter().find(|(n, _)| *n == threads) {
        return Ok(pool.clone());
    }
    let pool = build(threads)?;
    let pool = Arc::new(pool);
    pools.push((threads, pool.clone()));
    Ok(pool)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_file_of_a_batch_gets_about_the_square_root_of_the_threads() {
        let got: Vec<usize> = [1, 2, 3, 4, 10, 16, 64].map(per_file).to_vec();
        assert_eq!(got, [1, 2, 2, 2, 4, 4, 8]);
    }

    /// The most of `tasks` jobs, each taking `each`, that ran at once on `pool`.
    fn most_at_once(pool: &ThreadPool, tasks: usize, each: std::time::Duration) -> usize {
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        pool.install(|| {
            rayon::scope(|s| {
                for _ in 0..tasks {
                    s.spawn(|_| {
                        let n = now.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(n, Ordering::SeqCst);
                        std::thread::sleep(each);
                        now.fetch_sub(1, Ordering::SeqCst);
                    });
                }
            })
        });
        most.into_inner()
    }

    #[test]
    fn a_files_pool_works_on_one_worker_until_the_tail_begins() {
        let tail = Arc::new(Tail::default());
        let pool = for_one_file(9, &tail).unwrap();
        assert_eq!(pool.current_num_threads(), 3);
        // Jobs long enough for a free worker to take some: none is free.
        let tick = std::time::Duration::from_millis(20);
        assert_eq!(most_at_once(&pool, 6, tick), 1);
        tail.begin();
        assert!(all_at_once(&pool, 3));
        // A pool made once the tail has begun holds none.
        let late = for_one_file(4, &tail).unwrap();
        assert_eq!(late.current_num_threads(), 2);
        assert!(all_at_once(&late, 2));
    }

    /// Whether `k` jobs on `pool`, each waiting (up to a minute) for all `k` to have
    /// started, all ran at once.
    fn all_at_once(pool: &ThreadPool, k: usize) -> bool {
        let (arrived, all) = (Mutex::new(0usize), Condvar::new());
        let met = AtomicUsize::new(0);
        pool.install(|| {
            rayon::scope(|s| {
                for _ in 0..k {
                    s.spawn(|_| {
                        let mut n = arrived.lock().unwrap();
                        *n += 1;
                        all.notify_all();
                        let minute = std::time::Duration::from_secs(60);
                        let (n, _) = all.wait_timeout_while(n, minute, |n| *n < k).unwrap();
                        if *n == k {
                            met.fetch_add(1, Ordering::SeqCst);
                        }
                    });
                }
            })
        });
        met.into_inner() == k
    }

    #[test]
    fn a_dump_on_a_files_pool_stays_on_it() {
        let tail = Arc::new(Tail::default());
        tail.begin();
        let pool = for_one_file(9, &tail).unwrap();
        assert_eq!(pool.current_num_threads(), 3);
        // A dump's own `run` (asking for another count) runs on the file's pool, not
        // on a shared one it would hand the work to.
        let inside = pool.install(|| run(Some(5), rayon::current_num_threads).unwrap());
        assert_eq!(inside, 3);
        // Outside every pool, `run` goes to the pool of the count asked for.
        assert_eq!(run(Some(5), rayon::current_num_threads).unwrap(), 5);
    }
}
