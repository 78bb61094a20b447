//! Opt-in timing lines on stderr (`COLZIP_TRACE=1`): where a run's wall time goes
//! (opening the GPU, each pipeline step's host stages, the reading, coding and writing
//! threads of a file). Off by default, and then free.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// The environment variable that turns the timing lines on.
pub const TRACE_ENV: &str = "COLZIP_TRACE";

fn start() -> &'static Option<Instant> {
    static START: OnceLock<Option<Instant>> = OnceLock::new();
    START.get_or_init(|| {
        std::env::var(TRACE_ENV)
            .is_ok_and(|v| !v.is_empty() && v != "0")
            .then(Instant::now)
    })
}

/// Whether timing lines are wanted.
pub fn enabled() -> bool {
    start().is_some()
}

/// Prints `what` with the time since tracing began.
pub fn line(what: impl FnOnce() -> String) {
    if let Some(start) = start() {
        eprintln!(
            "[colzip {:8.3} s] {}",
            start.elapsed().as_secs_f64(),
            what()
        );
    }
}

/// Time spent in a stage, summed over its calls.
#[derive(Default, Debug, Clone, Copy)]
pub struct Busy(Duration);

impl Busy {
    /// Runs `f`, adding its duration when tracing.
    pub fn time<T>(&mut self, f: impl FnOnce() -> T) -> T {
        if !enabled() {
            return f();
        }
        let started = Instant::now();
        let out = f();
        self.0 += started.elapsed();
        out
    }

    pub fn seconds(&self) -> f64 {
        self.0.as_secs_f64()
    }

    /// Adds another tally's time (work timed on several threads).
    pub fn add(&mut self, other: &Busy) {
        self.0 += other.0;
    }
}

/// Process-wide totals of the host work around the GPU, for the pipeline's trace line.
#[derive(Clone, Copy, Debug)]
pub enum Counter {
    /// Copying inputs into pinned staging.
    Gather,
    /// Copying outputs out of pinned staging.
    Scatter,
    /// Waiting for a lane's queued work.
    Wait,
    /// A table load's column compression, summed over its threads.
    LoadCompress,
    /// A table load's dictionary tries, summed over its threads.
    LoadDictionaries,
    /// A table load's zone maps, summed over its threads.
    LoadZones,
}

static COUNTERS: [AtomicU64; 6] = [const { AtomicU64::new(0) }; 6];

/// Runs `f`, adding its duration to `counter` when tracing.
pub fn count<T>(counter: Counter, f: impl FnOnce() -> T) -> T {
    if !enabled() {
        return f();
    }
    let started = Instant::now();
    let out = f();
    COUNTERS[counter as usize].fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    out
}

/// The seconds counted so far under `counter`.
pub fn counted(counter: Counter) -> f64 {
    COUNTERS[counter as usize].load(Ordering::Relaxed) as f64 / 1e9
}
