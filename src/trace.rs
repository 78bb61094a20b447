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

/// The stages of one call, timed one after the other: each [`lap`](Self::lap) names the
/// time since the one before, and [`finish`](Self::finish) prints them on one line. Off
/// (and free) unless tracing.
pub struct Laps {
    last: Option<Instant>,
    laps: Vec<(&'static str, Duration)>,
}

impl Laps {
    pub fn start() -> Laps {
        Laps {
            last: enabled().then(Instant::now),
            laps: Vec::new(),
        }
    }

    /// Ends the stage `name`.
    pub fn lap(&mut self, name: &'static str) {
        if let Some(last) = &mut self.last {
            let now = Instant::now();
            self.laps.push((name, now - *last));
            *last = now;
        }
    }

    /// Prints `what` with the stages' times in milliseconds.
    pub fn finish(self, what: impl FnOnce() -> String) {
        if self.last.is_none() {
            return;
        }
        line(|| {
            let laps: Vec<String> = self
                .laps
                .iter()
                .map(|(name, d)| format!("{name} {:.3}", d.as_secs_f64() * 1e3))
                .collect();
            format!("{} (ms): {}", what(), laps.join(", "))
        });
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
