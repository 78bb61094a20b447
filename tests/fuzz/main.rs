//! Fuzzing on the stable toolchain: a structure-aware mutation harness per decoder
//! (lzss, gmatch raw and framed, Snappy streams of other writers, bwt, intpack, column containers,
//! archives, Parquet pages), seeded with valid streams of every codec and type.
//!
//! Every input must end in `Ok` equal to the original (or, where the format has no
//! checksum, equal to a reference decoder's output, or for intpack, which has neither, of
//! the length asked for and stable under re-encoding; for forged checksums, a valid
//! decode), or in `Err`: no panic, no abort, no allocation above the input's bound
//! (counted by the global allocator below), no hang (a watchdog ends the run).
//!
//! `cargo test --test fuzz` runs 10^4 inputs per target (CI); `scripts/fuzz.sh` runs more.
//! Environment: `COLZIP_FUZZ_INPUTS` (per target), `COLZIP_FUZZ_TARGETS` (comma-separated
//! names), `COLZIP_FUZZ_SEED` (base seed), `COLZIP_FUZZ_FROM` (first input number, to
//! replay one: `COLZIP_FUZZ_FROM=N COLZIP_FUZZ_INPUTS=1`), `COLZIP_FUZZ_HANG_SECS`,
//! `COLZIP_FUZZ_SAVE` (a directory where failing inputs are written), `COLZIP_FUZZ_DUMP`
//! (a directory where every input is written, for replays).

mod alloc;
mod mutate;
mod reference;
mod seeds;
mod targets;

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use mutate::Rng;
use targets::{Meter, Target, Verdict};

#[global_allocator]
static ALLOCATOR: alloc::Counting = alloc::Counting;

/// Inputs finished so far, watched for progress by the watchdog.
static PROGRESS: AtomicU64 = AtomicU64::new(0);

fn env<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".into()
    }
}

fn all_targets() -> Vec<Box<dyn Target>> {
    let mut targets: Vec<Box<dyn Target>> = vec![
        Box::new(targets::Lzss::new()),
        Box::new(targets::Snappy::gmatch(false)),
        Box::new(targets::Snappy::gmatch(true)),
        Box::new(targets::Snappy::other_writers()),
        Box::new(targets::Bwt::new()),
        Box::new(targets::Intpack::new()),
        Box::new(targets::Container::new()),
        Box::new(targets::Archives::new()),
    ];
    #[cfg(feature = "parquet")]
    targets.push(Box::new(targets::Parquet::new()));
    targets
}

/// A seed for target `name`'s input `n`, reproducible from the base seed.
fn input_seed(base: u64, name: &str, n: u64) -> u64 {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    base ^ h ^ n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
}

/// Ends the process when no input finishes for `limit`: a hang is a failure.
fn watchdog(limit: Duration) {
    std::thread::spawn(move || {
        let mut last = PROGRESS.load(Relaxed);
        let mut since = Instant::now();
        loop {
            std::thread::sleep(Duration::from_millis(500));
            let now = PROGRESS.load(Relaxed);
            if now != last {
                (last, since) = (now, Instant::now());
            } else if since.elapsed() > limit {
                eprintln!(
                    "fuzz: HANG: no input finished for {limit:?} (target {} input {})",
                    alloc::TARGET.load(Relaxed),
                    alloc::INPUT.load(Relaxed)
                );
                std::process::exit(3);
            }
        }
    });
}

fn main() -> ExitCode {
    // Panics are caught and reported per input; the default hook's report would flood.
    std::panic::set_hook(Box::new(|_| {}));
    let inputs: u64 = env("COLZIP_FUZZ_INPUTS", 10_000);
    let from: u64 = env("COLZIP_FUZZ_FROM", 0);
    let base: u64 = env("COLZIP_FUZZ_SEED", 1);
    let wanted: Option<Vec<String>> = std::env::var("COLZIP_FUZZ_TARGETS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_string()).collect());
    watchdog(Duration::from_secs(env("COLZIP_FUZZ_HANG_SECS", 120)));

    let mut failures = 0u64;
    for (index, target) in all_targets().iter().enumerate() {
        if wanted
            .as_ref()
            .is_some_and(|w| !w.iter().any(|n| n == target.name()))
        {
            continue;
        }
        alloc::TARGET.store(index, Relaxed);
        let start = Instant::now();
        let (mut decoded, mut refused, mut failed) = (0u64, 0u64, 0u64);
        let (mut worst_peak, mut worst_ratio) = (0usize, 0f64);
        for n in from..from + inputs {
            alloc::INPUT.store(n as usize, Relaxed);
            let mut rng = Rng::new(input_seed(base, target.name(), n));
            let seed = rng.below(target.seeds());
            let case = target.input(&mut rng, seed);
            if let Ok(dir) = std::env::var("COLZIP_FUZZ_DUMP") {
                let path = std::path::Path::new(&dir).join(format!("{}-{n}", target.name()));
                std::fs::write(&path, &case.bytes).expect("dump an input");
            }
            let bound = targets::bound(target.limit(seed), case.bytes.len());
            let mut meter = Meter {
                bound,
                peak: 0,
                largest: 0,
            };
            let mut problem = match target.run(&case, seed, &mut meter) {
                Ok(Verdict::Decoded) => {
                    decoded += 1;
                    None
                }
                Ok(Verdict::Refused) => {
                    refused += 1;
                    None
                }
                Err(message) => Some(message),
            };
            if problem.is_none() && (meter.peak > bound || meter.largest > bound) {
                problem = Some(format!(
                    "memory over the bound of {bound} bytes: peak {}, largest request {}",
                    meter.peak, meter.largest
                ));
            }
            worst_peak = worst_peak.max(meter.peak);
            worst_ratio = worst_ratio.max(meter.peak as f64 / bound as f64);
            if let Some(message) = problem {
                failed += 1;
                if let Ok(dir) = std::env::var("COLZIP_FUZZ_SAVE") {
                    let path = std::path::Path::new(&dir).join(format!("{}-{n}", target.name()));
                    if let Err(e) = std::fs::write(&path, &case.bytes) {
                        eprintln!("fuzz: cannot save {}: {e}", path.display());
                    }
                }
                if failed <= 20 {
                    eprintln!(
                        "fuzz: FAIL {} input {n} (seed {seed}, {} bytes{}): {message}\n  \
                         replay: COLZIP_FUZZ_TARGETS={} COLZIP_FUZZ_SEED={base} COLZIP_FUZZ_FROM={n} COLZIP_FUZZ_INPUTS=1",
                        target.name(),
                        case.bytes.len(),
                        if case.forged {
                            ", checksums forged"
                        } else {
                            ""
                        },
                        target.name()
                    );
                }
            }
            PROGRESS.fetch_add(1, Relaxed);
        }
        failures += failed;
        println!(
            "fuzz {:<14} {inputs} inputs: {decoded} decoded, {refused} refused, {failed} failed; \
             peak heap {:.1} MiB ({:.0}% of its bound at most); {:.1} s",
            target.name(),
            worst_peak as f64 / (1 << 20) as f64,
            worst_ratio * 100.0,
            start.elapsed().as_secs_f64()
        );
    }
    if failures > 0 {
        eprintln!("fuzz: {failures} failing inputs");
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
