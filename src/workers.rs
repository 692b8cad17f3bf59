//! The worker threads every dump runs on, with the stack it needs.
//!
//! GNU's demangler parses into stack arrays (up to ~1.2 MiB for the longest name it is
//! given) and recursion on deep names adds more, so a dump on rayon's default 2 MiB
//! stacks could overflow where the command's would not. The library therefore runs each
//! dump on a pool of its own, one per thread count asked for, built once and kept: a
//! library caller and the command give the same bytes. A batch gives each file in
//! flight a pool of its own instead ([`for_one_file`]), with the same stacks.

use std::sync::{Arc, Mutex};

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
) -> Result<R, String> {
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
/// that one file alone can still use several cores and the threads stay few.
pub(crate) fn for_one_file(threads: usize) -> Result<ThreadPool, String> {
    build(per_file(threads.max(1)))
}

/// Workers per file of a batch on `threads` threads: about their square root, at least
/// two (one file's parallel work has a second core while the other files' are serial).
fn per_file(threads: usize) -> usize {
    let root = (1..=threads).find(|r| r * r >= threads).unwrap_or(1);
    root.max(2).min(threads)
}

fn build(threads: usize) -> Result<ThreadPool, String> {
    ThreadPoolBuilder::new()
        .stack_size(STACK)
        .num_threads(threads)
        .thread_name(|i| format!("dumpsyms-{i}"))
        .start_handler(|_| ON_WORKER.set(true))
        .build()
        .map_err(|e| format!("cannot start worker threads: {e}"))
}

fn pool(threads: usize) -> Result<Arc<ThreadPool>, String> {
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

    #[test]
    fn a_file_of_a_batch_gets_about_the_square_root_of_the_threads() {
        let got: Vec<usize> = [1, 2, 3, 4, 10, 16, 64].map(per_file).to_vec();
        assert_eq!(got, [1, 2, 2, 2, 4, 4, 8]);
    }

    #[test]
    fn a_dump_on_a_files_pool_stays_on_it() {
        let pool = for_one_file(9).unwrap();
        assert_eq!(pool.current_num_threads(), 3);
        // A dump's own `run` (asking for another count) runs on the file's pool, not
        // on a shared one it would hand the work to.
        let inside = pool.install(|| run(Some(5), rayon::current_num_threads).unwrap());
        assert_eq!(inside, 3);
        // Outside every pool, `run` goes to the pool of the count asked for.
        assert_eq!(run(Some(5), rayon::current_num_threads).unwrap(), 5);
    }
}
