//! CPU throughput of colzip's codecs against snap, lz4_flex and zstd on TPC-H lineitem
//! columns (SF 0.05, generated in-process): `cargo bench --bench codecs`.
//!
//! Throughput is uncompressed bytes per second. colzip's codecs and the baselines run on
//! all cores here the same way the `tpch` experiment runs them (4 MiB pieces for the
//! baselines), so the figures compare like with like.

use std::hint::black_box;

use arrow::array::{Array, ArrayRef};
use colzip::codec::{CodecSpec, bwt, gmatch, lzss};
use colzip::harness::columns::{Baseline, peer_form};
use colzip::tpch::{self, Table};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};

fn column(data: &tpch::TableData, name: &str) -> ArrayRef {
    let index = data.schema.index_of(name).expect("column exists");
    peer_form(&data.columns[index]).expect("peer form")
}

fn plain_bytes(array: &ArrayRef) -> Vec<u8> {
    let data = array.to_data();
    let width = array.data_type().primitive_width().expect("fixed width");
    data.buffers()[0].as_slice()[data.offset() * width..(data.offset() + array.len()) * width]
        .to_vec()
}

fn codecs(c: &mut Criterion) {
    let lineitem = tpch::generate(Table::Lineitem, 0.05).expect("tpch data");
    let inputs: Vec<(&str, Vec<u8>, usize)> = vec![
        (
            "l_quantity_i32",
            plain_bytes(&column(&lineitem, "l_quantity")),
            4,
        ),
        (
            "l_orderkey_i64",
            plain_bytes(&column(&lineitem, "l_orderkey")),
            8,
        ),
        (
            "l_comment_text",
            plain_bytes(&column(&lineitem, "l_comment")),
            1,
        ),
    ];
    for (name, input, width) in &inputs {
        let mut group = c.benchmark_group(format!("compress/{name}"));
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.sample_size(10);
        let ours: Vec<(&str, CodecSpec)> = vec![
            ("lzss", CodecSpec::lzss_default()),
            ("gmatch", "gmatch".parse().unwrap()),
            ("bwt", "bwt".parse().unwrap()),
        ];
        for (label, spec) in &ours {
            group.bench_with_input(BenchmarkId::new(*label, input.len()), input, |b, input| {
                b.iter(|| black_box(spec.compress(input, *width).unwrap()))
            });
        }
        for baseline in [Baseline::Snap, Baseline::Lz4, Baseline::Zstd(1)] {
            group.bench_with_input(
                BenchmarkId::new(baseline.to_string(), input.len()),
                input,
                |b, input| b.iter(|| black_box(baseline.compress(input).unwrap())),
            );
        }
        group.finish();

        let mut group = c.benchmark_group(format!("decompress/{name}"));
        group.throughput(Throughput::Bytes(input.len() as u64));
        group.sample_size(10);
        let lzss_stream = CodecSpec::lzss_default().compress(input, *width).unwrap();
        let gmatch_stream = gmatch::compress_raw(input).unwrap();
        let bwt_stream = bwt::compress(input, &Default::default());
        group.bench_function("lzss", |b| {
            b.iter(|| black_box(lzss::decompress(&lzss_stream).unwrap()))
        });
        group.bench_function("gmatch", |b| {
            b.iter(|| black_box(gmatch::decompress_raw(&gmatch_stream).unwrap()))
        });
        group.bench_function("bwt", |b| {
            b.iter(|| black_box(bwt::decompress(&bwt_stream).unwrap()))
        });
        for baseline in [Baseline::Snap, Baseline::Lz4, Baseline::Zstd(1)] {
            let pieces = baseline.compress(input).unwrap();
            group.bench_function(baseline.to_string(), |b| {
                b.iter(|| black_box(baseline.decompress(&pieces, input.len()).unwrap()))
            });
        }
        group.finish();
    }
}

criterion_group!(benches, codecs);
criterion_main!(benches);
