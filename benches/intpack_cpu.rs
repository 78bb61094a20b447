//! intpack's CPU throughput per core count against this machine's memory bandwidth, on
//! the intpack suite's TPC-H lineitem integer columns: `cargo bench --bench intpack_cpu`.
//!
//! Environment: `INTPACK_SF` (scale factor, default 1), `INTPACK_THREADS` (comma-separated
//! core counts, default `1,<all>`), `INTPACK_RUNS` (timed runs, median counts, default 5),
//! `INTPACK_COLUMNS` (comma-separated, default the intpack suite's seven),
//! `INTPACK_DECODE_ONLY` (set: only `decompress_into`, for a profiler).
//!
//! Each figure is uncompressed GB per wall second, and in brackets per CPU second of the
//! process (all its threads): on a machine shared with other work the second is what the
//! code costs, the first what it got.
//!
//! The roofline rows measure what decoding is bounded by: a write of the output (fill) and
//! a copy (read + write) over 512 MiB, its pages mapped beforehand, and per column a fill
//! of the column's own size (which may stay in a large last-level cache, as the decoded
//! column then does). Decoding is measured twice: into a buffer whose pages are already
//! mapped (the codec's own speed) and through `decompress`, which maps a fresh output's
//! pages (what a caller of the allocating API sees). No criterion: one pass over 7 columns
//! and 2 core counts takes seconds, and the median of a few runs is what is quoted.

use std::hint::black_box;
use std::time::Instant;

use colzip::codec::CodecSpec;
use colzip::codec::intpack::{self, BLOCK_VALUES, IntpackParams, SCHEMES};
use colzip::harness::bench::{Suite, tpch_plan};
use colzip::measure::upper_median;
use rayon::prelude::*;

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// CPU seconds the process has used, all threads.
fn process_cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid clock id and a pointer to a timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut now) };
    now.tv_sec as f64 + now.tv_nsec as f64 / 1e9
}

/// Median wall seconds and median CPU seconds of `runs` calls of `f`, after one
/// unmeasured call.
struct Timing {
    wall: f64,
    cpu: f64,
}

fn time(runs: usize, mut f: impl FnMut()) -> Timing {
    f();
    let (mut walls, mut cpus): (Vec<f64>, Vec<f64>) = (0..runs.max(1))
        .map(|_| {
            let (start, cpu) = (Instant::now(), process_cpu_seconds());
            f();
            (start.elapsed().as_secs_f64(), process_cpu_seconds() - cpu)
        })
        .unzip();
    Timing {
        wall: upper_median(&mut walls),
        cpu: upper_median(&mut cpus),
    }
}

/// `bytes` per wall second and per CPU second, in GB.
fn rate(bytes: usize, timing: &Timing) -> String {
    let gbps = |seconds: f64| bytes as f64 / seconds / 1e9;
    format!("{:>6.2} ({:>6.2})", gbps(timing.wall), gbps(timing.cpu))
}

/// Fill and copy bandwidth over 512 MiB (pages mapped first), split across the pool's
/// threads as rayon does for the codec.
fn roofline(runs: usize) {
    const BYTES: usize = 512 << 20;
    const PIECE: usize = 1 << 20;
    let source = vec![1u8; BYTES];
    let mut target = vec![2u8; BYTES];
    let fill = time(runs, || {
        target
            .par_chunks_mut(PIECE)
            .for_each(|c| c.fill(black_box(3)));
    });
    let copy = time(runs, || {
        target
            .par_chunks_mut(PIECE)
            .zip(source.par_chunks(PIECE))
            .for_each(|(t, s)| t.copy_from_slice(s));
    });
    black_box(&target);
    println!(
        "{:<16} fill {} GB/s   copy {} GB/s (bytes copied; read + write is twice that)",
        "roofline 512 MiB",
        rate(BYTES, &fill),
        rate(BYTES, &copy)
    );
}

/// Fill bandwidth of a buffer of `len` bytes whose pages are mapped: the store traffic
/// decoding into such a buffer cannot beat.
fn fill(len: usize, runs: usize) -> Timing {
    let mut target = vec![1u8; len];
    let timing = time(runs, || {
        target
            .par_chunks_mut(1 << 20)
            .for_each(|c| c.fill(black_box(3)));
    });
    black_box(&target);
    timing
}

/// Blocks per scheme in the column's stream (which decoding path its time goes to).
fn scheme_counts(input: &[u8], width: u8) -> [usize; SCHEMES] {
    let mut counts = [0; SCHEMES];
    let mut scratch = Vec::new();
    let body = input.len() - input.len() % usize::from(width);
    for block in input[..body].chunks(BLOCK_VALUES * usize::from(width)) {
        scratch.clear();
        let scheme = intpack::encode_block(block, width, &mut scratch).expect("valid block");
        counts[scheme as usize] += 1;
    }
    counts
}

fn main() {
    let sf: f64 = env_or("INTPACK_SF", 1.0);
    let runs: usize = env_or("INTPACK_RUNS", 5);
    let decode_only = std::env::var_os("INTPACK_DECODE_ONLY").is_some();
    let all = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads: Vec<usize> = std::env::var("INTPACK_THREADS")
        .unwrap_or_else(|_| format!("1,{all}"))
        .split(',')
        .filter_map(|t| t.trim().parse().ok())
        .collect();
    let named: Option<Vec<String>> = std::env::var("INTPACK_COLUMNS")
        .ok()
        .map(|list| list.split(',').map(str::to_string).collect());
    let suite = Suite::Codec(intpack::NAME.parse::<CodecSpec>().expect("intpack's spec"));
    let plan = tpch_plan(sf, named.as_deref(), &[suite]).expect("TPC-H columns");
    let streams: Vec<Vec<u8>> = plan
        .iter()
        .map(|planned| {
            let column = &planned.column;
            let params = IntpackParams::for_type_width(column.width);
            if !decode_only {
                println!(
                    "{:<16} W={} blocks per scheme (frame, delta, runs+frame, runs+delta, dictionary, exceptions): {:?}",
                    column.name,
                    params.width,
                    scheme_counts(&column.bytes, params.width)
                );
            }
            intpack::compress(&column.bytes, &params)
        })
        .collect();
    for &cores in &threads {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(cores)
            .build()
            .expect("thread pool");
        println!("-- {cores} core(s), SF {sf}, median of {runs}, GB/s wall (per CPU second)");
        pool.install(|| {
            if !decode_only {
                roofline(runs);
            }
            for (planned, stream) in plan.iter().zip(&streams) {
                let column = &planned.column;
                let input = &column.bytes;
                let mut out = vec![0u8; input.len()];
                let into = time(runs, || {
                    intpack::decompress_into(stream, &mut out).expect("valid stream");
                });
                assert!(out == *input, "{}: decoding did not round-trip", column.name);
                if decode_only {
                    println!("{:<16} decompress_into {}", column.name, rate(input.len(), &into));
                    continue;
                }
                let params = IntpackParams::for_type_width(column.width);
                let compress = time(runs, || {
                    black_box(intpack::compress(input, &params));
                });
                let fresh = time(runs, || {
                    black_box(intpack::decompress(stream, input.len()).expect("valid stream"));
                });
                println!(
                    "{:<16} ratio {:>6.3}  compress {}  decompress_into {}  decompress (fresh pages) {}  fill (same size) {}",
                    column.name,
                    input.len() as f64 / stream.len() as f64,
                    rate(input.len(), &compress),
                    rate(input.len(), &into),
                    rate(input.len(), &fresh),
                    rate(input.len(), &fill(input.len(), runs)),
                );
            }
        });
    }
}
