//! G-match against `snap` per 64 KiB page, on the CPU: `cargo bench --no-default-features
//! --bench gmatch_pages` (`COLZIP_BENCH_SF`, default 0.1, sets the TPC-H scale factor).
//!
//! The lineitem columns in the plain form GPU papers measure (l_quantity int32,
//! l_shipdate int32 days, l_orderkey int64, l_comment concatenated text), generated
//! in-process and cut into 64 KiB pages (the unit of Parquet pages and nvCOMP's batches).
//! Each iteration compresses every page of a column:
//!
//! - `…/1 thread`: one page after another on one thread, `gmatch::compress_raw` against
//!   `snap::raw::Encoder::compress` (one encoder and output buffer reused), and
//!   `gmatch::decompress_raw_into` against `snap::raw::Decoder` on each codec's pages,
//!   both into one reused buffer (as the batched interface decodes into its output): the
//!   per-core speeds, timed in the thread's CPU time (on Linux), so that other work on
//!   a shared machine does not count;
//! - `…/2 threads`: the pages compressed over a 2-thread rayon pool (wall time).
//!
//! Throughput is uncompressed bytes per second.

use std::hint::black_box;
use std::sync::OnceLock;
use std::time::Duration;

use colzip::codec::gmatch;
use colzip::harness::bench::{PlainColumn, plain_columns};
use colzip::tpch::Table;
use criterion::measurement::{Measurement, ValueFormatter, WallTime};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;

const PAGE: usize = 64 * 1024;
const COLUMNS: [&str; 4] = ["l_quantity", "l_shipdate", "l_orderkey", "l_comment"];

/// The lineitem columns, generated once for all groups.
fn columns() -> &'static [PlainColumn] {
    static COLUMNS_DATA: OnceLock<Vec<PlainColumn>> = OnceLock::new();
    COLUMNS_DATA.get_or_init(|| {
        let sf = std::env::var("COLZIP_BENCH_SF")
            .ok()
            .and_then(|sf| sf.parse().ok())
            .unwrap_or(0.1);
        let names: Vec<String> = COLUMNS.iter().map(|name| name.to_string()).collect();
        plain_columns(Table::Lineitem, sf, Some(&names)).expect("lineitem columns")
    })
}

fn pages(column: &PlainColumn) -> Vec<&[u8]> {
    column.bytes.chunks(PAGE).collect()
}

fn one_thread(c: &mut Criterion<ThreadCpuTime>) {
    for column in columns() {
        let pages = pages(column);
        let mut group =
            c.benchmark_group(format!("gmatch vs snap per page/{}/1 thread", column.name));
        group.throughput(Throughput::Bytes(column.bytes.len() as u64));
        group.sample_size(10);
        group.bench_function("gmatch", |b| {
            b.iter(|| {
                for page in &pages {
                    black_box(gmatch::compress_raw(page).expect("gmatch compresses"));
                }
            })
        });
        let mut encoder = snap::raw::Encoder::new();
        let mut out = vec![0; snap::raw::max_compress_len(PAGE)];
        group.bench_function("snap", |b| {
            b.iter(|| {
                for page in &pages {
                    black_box(encoder.compress(page, &mut out).expect("snap compresses"));
                }
            })
        });

        let gmatch_pages: Vec<Vec<u8>> = pages
            .iter()
            .map(|page| gmatch::compress_raw(page).expect("gmatch compresses"))
            .collect();
        let snap_pages: Vec<Vec<u8>> = pages
            .iter()
            .map(|page| encoder.compress_vec(page).expect("snap compresses"))
            .collect();
        group.bench_function("gmatch decompress", |b| {
            b.iter(|| {
                for (page, stream) in pages.iter().zip(&gmatch_pages) {
                    let out = &mut out[..page.len()];
                    gmatch::decompress_raw_into(stream, out).expect("gmatch decodes");
                    black_box(out);
                }
            })
        });
        let mut decoder = snap::raw::Decoder::new();
        group.bench_function("snap decompress", |b| {
            b.iter(|| {
                for page in &snap_pages {
                    black_box(decoder.decompress(page, &mut out).expect("snap decodes"));
                }
            })
        });
        group.finish();
    }
}

fn two_threads(c: &mut Criterion) {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("2-thread pool");
    for column in columns() {
        let pages = pages(column);
        let mut group =
            c.benchmark_group(format!("gmatch vs snap per page/{}/2 threads", column.name));
        group.throughput(Throughput::Bytes(column.bytes.len() as u64));
        group.sample_size(10);
        group.bench_function("gmatch", |b| {
            b.iter(|| {
                pool.install(|| {
                    pages
                        .par_iter()
                        .map(|page| gmatch::compress_raw(page).expect("gmatch compresses").len())
                        .sum::<usize>()
                })
            })
        });
        group.bench_function("snap", |b| {
            b.iter(|| {
                pool.install(|| {
                    pages
                        .par_iter()
                        .map_init(
                            || {
                                (
                                    snap::raw::Encoder::new(),
                                    vec![0; snap::raw::max_compress_len(PAGE)],
                                )
                            },
                            |(encoder, out), page| {
                                encoder.compress(page, out).expect("snap compresses")
                            },
                        )
                        .sum::<usize>()
                })
            })
        });
        group.finish();
    }
}

/// The CPU time of the measuring thread (wall time where it is not available).
struct ThreadCpuTime;

impl Measurement for ThreadCpuTime {
    type Intermediate = Duration;
    type Value = Duration;

    fn start(&self) -> Duration {
        thread_cpu_time()
    }
    fn end(&self, start: Duration) -> Duration {
        thread_cpu_time() - start
    }
    fn add(&self, a: &Duration, b: &Duration) -> Duration {
        *a + *b
    }
    fn zero(&self) -> Duration {
        Duration::ZERO
    }
    fn to_f64(&self, value: &Duration) -> f64 {
        value.as_nanos() as f64
    }
    fn formatter(&self) -> &dyn ValueFormatter {
        // Nanoseconds, formatted like wall time.
        static WALL_TIME: WallTime = WallTime;
        WALL_TIME.formatter()
    }
}

#[cfg(all(target_os = "linux", target_pointer_width = "64"))]
fn thread_cpu_time() -> Duration {
    #[repr(C)]
    struct Timespec {
        seconds: i64,
        nanoseconds: i64,
    }
    unsafe extern "C" {
        fn clock_gettime(clock: i32, time: *mut Timespec) -> i32;
    }
    const CLOCK_THREAD_CPUTIME_ID: i32 = 3;
    let mut time = Timespec {
        seconds: 0,
        nanoseconds: 0,
    };
    // SAFETY: clock_gettime (glibc or musl, linked by std) writes one timespec.
    let rc = unsafe { clock_gettime(CLOCK_THREAD_CPUTIME_ID, &mut time) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(time.seconds as u64, time.nanoseconds as u32)
}

#[cfg(not(all(target_os = "linux", target_pointer_width = "64")))]
fn thread_cpu_time() -> Duration {
    static START: OnceLock<std::time::Instant> = OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

criterion_group! {
    name = per_core;
    config = Criterion::default().with_measurement(ThreadCpuTime);
    targets = one_thread
}
criterion_group!(parallel, two_threads);
criterion_main!(per_core, parallel);
