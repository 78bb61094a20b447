//! G-match against `snap` per 64 KiB page, on the CPU: `cargo bench --no-default-features
//! --bench gmatch_pages` (`COLZIP_BENCH_SF`, default 0.1, sets the TPC-H scale factor).
//!
//! The lineitem columns in the plain form GPU papers measure (l_quantity int32,
//! l_shipdate int32 days, l_orderkey int64, l_comment concatenated text), generated
//! in-process and cut into 64 KiB pages (the unit of Parquet pages and nvCOMP's batches).
//! Each iteration compresses every page of a column:
//!
//! - `…/1 thread`: one page after another on one thread, `gmatch::compress_raw` against
//!   `snap::raw::Encoder::compress` (one encoder and output buffer reused), i.e. the
//!   per-core speed of the two compressors;
//! - `…/2 threads`: the pages spread over a 2-thread rayon pool;
//! - `decompress/…`: one thread, `gmatch::decompress_raw` and `snap::raw::Decoder` on
//!   each codec's own pages.
//!
//! Throughput is uncompressed bytes per second.

use std::hint::black_box;

use colzip::bench::plain_columns;
use colzip::codec::gmatch;
use colzip::tpch::Table;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use rayon::prelude::*;

const PAGE: usize = 64 * 1024;
const COLUMNS: [&str; 4] = ["l_quantity", "l_shipdate", "l_orderkey", "l_comment"];

fn scale_factor() -> f64 {
    std::env::var("COLZIP_BENCH_SF")
        .ok()
        .and_then(|sf| sf.parse().ok())
        .unwrap_or(0.1)
}

fn snap_pages(pages: &[&[u8]], encoder: &mut snap::raw::Encoder, out: &mut [u8]) -> usize {
    pages
        .iter()
        .map(|page| encoder.compress(page, out).expect("snap compresses"))
        .sum()
}

fn gmatch_vs_snap(c: &mut Criterion) {
    let names: Vec<String> = COLUMNS.iter().map(|name| name.to_string()).collect();
    let columns =
        plain_columns(Table::Lineitem, scale_factor(), Some(&names)).expect("lineitem columns");
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(2)
        .build()
        .expect("2-thread pool");
    for column in &columns {
        let pages: Vec<&[u8]> = column.bytes.chunks(PAGE).collect();
        let bytes = column.bytes.len() as u64;

        let mut group =
            c.benchmark_group(format!("gmatch vs snap per page/{}/1 thread", column.name));
        group.throughput(Throughput::Bytes(bytes));
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
            b.iter(|| black_box(snap_pages(&pages, &mut encoder, &mut out)))
        });
        group.finish();

        let mut group =
            c.benchmark_group(format!("gmatch vs snap per page/{}/2 threads", column.name));
        group.throughput(Throughput::Bytes(bytes));
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

        let gmatch_pages: Vec<Vec<u8>> = pages
            .iter()
            .map(|page| gmatch::compress_raw(page).expect("gmatch compresses"))
            .collect();
        let snap_pages: Vec<Vec<u8>> = pages
            .iter()
            .map(|page| {
                snap::raw::Encoder::new()
                    .compress_vec(page)
                    .expect("snap compresses")
            })
            .collect();
        let mut group = c.benchmark_group(format!(
            "gmatch vs snap per page/{}/decompress",
            column.name
        ));
        group.throughput(Throughput::Bytes(bytes));
        group.sample_size(10);
        group.bench_function("gmatch", |b| {
            b.iter(|| {
                for page in &gmatch_pages {
                    black_box(gmatch::decompress_raw(page).expect("gmatch decodes"));
                }
            })
        });
        let mut decoder = snap::raw::Decoder::new();
        let mut out = vec![0; PAGE];
        group.bench_function("snap", |b| {
            b.iter(|| {
                for page in &snap_pages {
                    black_box(decoder.decompress(page, &mut out).expect("snap decodes"));
                }
            })
        });
        group.finish();
    }
}

criterion_group!(benches, gmatch_vs_snap);
criterion_main!(benches);
