//! Parquet files with GPU-made SNAPPY pages: the GPU writes the same file bytes as the
//! CPU, and the reader's batched GPU page decompression reads ours and the stock
//! writer's files back equal. Without a GPU these tests say they were skipped; with
//! `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.
#![cfg(feature = "parquet")]

mod common;

use std::sync::Arc;

use arrow::array::{ArrayRef, Decimal128Array, Int32Array, Int64Array, StringArray};
use arrow::compute::concat_batches;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use colzip::codec::Placement;
use colzip::gpu::Backend;
use colzip::parquet::read::{ReadOptions, read_batches};
use colzip::parquet::write::{DataPageVersion, WriteOptions, write_batches};
use common::gpu_or_skip;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::WriterProperties;

/// Columns of several widths with repeats, nulls and text: several MiB, so that row
/// groups go to the GPU under `auto` too.
fn batch() -> RecordBatch {
    let n = 400_000;
    let keys: ArrayRef = Arc::new(Int64Array::from_iter_values((0..n).map(|i| i / 4)));
    let quantities: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..n).map(|i| (i % 11 != 0).then_some((i * 7 % 50) as i32)),
    ));
    let prices: ArrayRef = Arc::new(
        Decimal128Array::from_iter_values((0..n).map(|i| (i as i128 * 7919) % 10_000_000))
            .with_precision_and_scale(15, 2)
            .unwrap(),
    );
    let comments: ArrayRef =
        Arc::new(StringArray::from_iter((0..n).map(|i| {
            (i % 13 != 0).then(|| format!("note {} about part {}", i % 977, i % 31))
        })));
    RecordBatch::try_from_iter([
        ("key", keys),
        ("quantity", quantities),
        ("price", prices),
        ("comment", comments),
    ])
    .unwrap()
}

fn write(batch: &RecordBatch, placement: Placement, version: DataPageVersion) -> (Vec<u8>, usize) {
    let options = WriteOptions::default()
        .with_placement(placement)
        .with_row_group_size(150_000)
        .with_data_page_version(version);
    let mut file = Vec::new();
    let summary = write_batches(&mut file, batch.schema(), [batch.clone()], &options).unwrap();
    (file, summary.gpu_row_groups)
}

#[test]
fn gpu_writes_the_cpu_file_and_reads_it_back() {
    let Some(_gpu) = gpu_or_skip("gpu_writes_the_cpu_file_and_reads_it_back") else {
        return;
    };
    let batch = batch();
    for version in [DataPageVersion::V1, DataPageVersion::V2] {
        let (cpu, on_gpu) = write(&batch, Placement::CPU, version);
        assert_eq!(on_gpu, 0);
        for backend in [Backend::Gpu, Backend::Auto] {
            let placement = Placement::new(backend).unwrap();
            let (gpu, on_gpu) = write(&batch, placement, version);
            assert_eq!(
                on_gpu, 3,
                "{backend} {version:?}: every row group on the GPU"
            );
            assert!(
                gpu == cpu,
                "{backend} {version:?}: the GPU wrote other bytes"
            );
            let read = read_batches(
                Bytes::from(gpu),
                &ReadOptions::default().with_placement(placement),
            )
            .unwrap();
            assert_eq!(read.summary.gpu_row_groups, 3, "{backend} {version:?}");
            assert_eq!(concat_batches(&read.schema, &read.batches).unwrap(), batch);
        }
    }
}

#[test]
fn gpu_reads_the_stock_writers_snappy_pages() {
    let Some(_gpu) = gpu_or_skip("gpu_reads_the_stock_writers_snappy_pages") else {
        return;
    };
    let batch = batch();
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(150_000))
        .build();
    let mut file = Vec::new();
    let mut writer = ArrowWriter::try_new(&mut file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let placement = Placement::new(Backend::Gpu).unwrap();
    let read = read_batches(
        Bytes::from(file),
        &ReadOptions::default().with_placement(placement),
    )
    .unwrap();
    assert_eq!(read.summary.gpu_row_groups, 3);
    assert_eq!(concat_batches(&read.schema, &read.batches).unwrap(), batch);
}
