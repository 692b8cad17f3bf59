//! The worker threads every dump runs on, with the stack it needs.
//!
//! GNU's demangler parses into stack arrays (up to ~1.2 MiB for the longest name it is
//! given) and recursion on deep names adds more, so a dump on rayon's default 2 MiB
//! stacks could overflow where the command's would not. The library therefore runs each
//! dump on a pool of its own, one per thread count asked for, built once and kept: a
//! library caller and the command give the same bytes.

use std::sync::{Arc, Mutex};

use rayon::{ThreadPool, ThreadPoolBuilder};

/// As large as a main thread's.
const STACK: usize = 8 << 20;

/// Pools by thread count (0: one per CPU).
static POOLS: Mutex<Vec<(usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());

/// Runs `work` on the pool of `jobs` threads (`None`: one per CPU), or right here when
/// this thread is already one of that pool's (a batch dumping files in parallel).
pub(crate) fn run<R: Send>(
    jobs: Option<usize>,
    work: impl FnOnce() -> R + Send,
) -> Result<R, String> {
    let pool = pool(jobs.unwrap_or(0))?;
    Ok(pool.install(work))
}

fn pool(threads: usize) -> Result<Arc<ThreadPool>, String> {
    let mut pools = POOLS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, pool)) = pools.iter().find(|(n, _)| *n == threads) {
        return Ok(pool.clone());
    }
    let pool = ThreadPoolBuilder::new()
        .stack_size(STACK)
        .num_threads(threads)
        .thread_name(|i| format!("dumpsyms-{i}"))
        .build()
        .map_err(|e| format!("cannot start worker threads: {e}"))?;
    let pool = Arc::new(pool);
    pools.push((threads, pool.clone()));
    Ok(pool)
}
