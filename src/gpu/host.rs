//! The runtime's own pool of host threads, for the host work of callers holding lanes
//! (gathering into and scattering out of pinned staging, parsing and entropy-coding
//! steps).
//!
//! Why a pool of its own: callers take lanes from rayon's global pool (a table's blocks,
//! a query's partitions), and a caller that finds every lane taken waits. Were the lane
//! holders' host work on the global pool too, it could queue behind workers that are all
//! waiting for lanes, which only that work would give back: a deadlock (as when a
//! compressed table's blocks are compressed one call per worker). Threads of this pool
//! never wait for a lane ([`Gpu::lane`](super::Gpu::lane) makes them a new one), so the
//! host work of lane holders always goes on.

use std::sync::OnceLock;

/// The pool: as many threads as rayon's global pool had when it was first used.
fn pool() -> Option<&'static rayon::ThreadPool> {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|k| format!("colzip-gpu-host-{k}"))
            .build()
            .ok()
    })
    .as_ref()
}

/// Runs `work` on the runtime's host pool: its parallel iterators use that pool's
/// threads. The calling thread waits without running other jobs: a worker of rayon's
/// global pool that waited inside `install` would run that pool's jobs meanwhile, and
/// those (another window of a table to compress, say) wait for lanes or host work in
/// turn, nesting without bound on its stack (a stack overflow at SF 10). So such a
/// worker hands `work` to a thread of its own and blocks. When the pool cannot be made
/// (no threads left), `work` runs where it is.
pub fn on_host<R: Send>(work: impl FnOnce() -> R + Send) -> R {
    let Some(pool) = pool() else {
        return work();
    };
    if pool.current_thread_index().is_some() {
        return work();
    }
    if rayon::current_thread_index().is_none() {
        // Not a rayon worker: `install` blocks this thread until the work is done.
        return pool.install(work);
    }
    std::thread::scope(|scope| {
        scope
            .spawn(|| pool.install(work))
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// True on a thread of the host pool.
pub(crate) fn is_host_thread() -> bool {
    pool().is_some_and(|pool| pool.current_thread_index().is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn work_runs_on_the_host_pool_and_its_iterators_too() {
        assert!(!is_host_thread());
        let on_pool: Vec<bool> = on_host(|| {
            assert!(is_host_thread());
            (0..64).into_par_iter().map(|_| is_host_thread()).collect()
        });
        assert!(on_pool.into_iter().all(|b| b));
        // From workers of rayon's global pool, many at once.
        let from_workers: Vec<bool> = (0..64)
            .into_par_iter()
            .map(|_| on_host(is_host_thread))
            .collect();
        assert!(from_workers.into_iter().all(|b| b));
    }
}
