//! The backend choice reaches the codecs: with a GPU, `lzss` and `gmatch` parts run there (every part
//! under `gpu`, parts of at least `GPU_MIN_BYTES` under `auto`) and write the CPU's bytes;
//! the TPC-H rows say which backend ran. Without a GPU these tests say they were skipped;
//! with `COLZIP_REQUIRE_GPU=1` a missing GPU is a failure.

mod common;

use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array, StringArray};
use colzip::codec::Direction::{Compress, Decompress};
use colzip::codec::{CodecId, GPU_MIN_BYTES, Placement};
use colzip::column::{self, CodecChoice, CompressedColumn};
use colzip::gpu::Backend;
use colzip::harness::columns::{self, Config, Contender};
use colzip::tpch::Table;
use common::gpu_or_skip;

#[test]
fn placements_follow_the_backend() {
    let Some(gpu) = gpu_or_skip("placements_follow_the_backend") else {
        return;
    };
    let forced = Placement::new(Backend::Gpu).unwrap();
    let auto = Placement::new(Backend::Auto).unwrap();
    assert!(std::ptr::eq(forced.gpu().unwrap(), gpu));
    for direction in [Compress, Decompress] {
        assert!(forced.gpu_for(CodecId::Lzss, direction, 0).is_some());
        assert!(forced.gpu_for(CodecId::GmatchRaw, direction, 0).is_some());
        assert!(
            forced
                .gpu_for(CodecId::GmatchFramed, direction, 0)
                .is_some()
        );
        assert!(
            auto.gpu_for(CodecId::Lzss, direction, GPU_MIN_BYTES - 1)
                .is_none()
        );
        assert!(
            auto.gpu_for(CodecId::Lzss, direction, GPU_MIN_BYTES)
                .is_some()
        );
        assert!(
            forced
                .gpu_for(CodecId::Stored, direction, 1 << 30)
                .is_none()
        );
    }
    // bwt runs on the GPU both ways (issue 14).
    assert!(forced.gpu_for(CodecId::Bwt, Compress, 1 << 30).is_some());
    assert!(forced.gpu_for(CodecId::Bwt, Decompress, 0).is_some());
    assert!(Placement::new(Backend::Cpu).unwrap().gpu().is_none());
}

#[test]
fn columns_compressed_on_the_gpu_equal_the_cpu_containers() {
    let Some(_gpu) = gpu_or_skip("columns_compressed_on_the_gpu_equal_the_cpu_containers") else {
        return;
    };
    let arrays: Vec<ArrayRef> = vec![
        // Small: under `auto` on the CPU, under `gpu` on the GPU.
        Arc::new(Int32Array::from_iter(
            (0..5000).map(|i| (i % 7 != 0).then_some(i / 3)),
        )),
        // 4 MiB of values: over the threshold.
        Arc::new(Int64Array::from_iter_values((0..(1 << 19)).map(|i| i / 5))),
        Arc::new(StringArray::from_iter_values(
            (0..200_000).map(|i| format!("item {} of {}", i % 977, i % 13)),
        )),
    ];
    for choice in ["lzss", "lzss:s=1,w=255", "auto", "gmatch", "gmatch:framed"] {
        let choice: CodecChoice = choice.parse().unwrap();
        for array in &arrays {
            let cpu = column::compress(array.as_ref(), &choice).unwrap();
            for backend in [Backend::Gpu, Backend::Auto] {
                let placement = Placement::new(backend).unwrap();
                let on = column::compress_on(array.as_ref(), &choice, placement).unwrap();
                assert_eq!(on, cpu, "{choice} {backend} {}", array.data_type());
                let bytes = on.to_bytes().unwrap();
                let back = column::decompress_on(
                    &CompressedColumn::from_bytes(&bytes).unwrap(),
                    placement,
                )
                .unwrap();
                assert_eq!(&back, array, "{choice} {backend}");
            }
        }
    }
}

#[test]
fn parts_compress_concurrently_on_the_gpu() {
    let Some(_gpu) = gpu_or_skip("parts_compress_concurrently_on_the_gpu") else {
        return;
    };
    // More columns at once than lanes: callers wait for a lane, none fails.
    let placement = Placement::new(Backend::Gpu).unwrap();
    let arrays: Vec<ArrayRef> = (0..24)
        .map(|k| {
            Arc::new(Int64Array::from_iter_values(
                (0..200_000).map(move |i| i / (k + 1)),
            )) as ArrayRef
        })
        .collect();
    use rayon::prelude::*;
    for choice in ["lzss", "gmatch"] {
        let choice: CodecChoice = choice.parse().unwrap();
        arrays.par_iter().for_each(|array| {
            let on = column::compress_on(array.as_ref(), &choice, placement).unwrap();
            assert_eq!(on, column::compress(array.as_ref(), &choice).unwrap());
            assert_eq!(&column::decompress_on(&on, placement).unwrap(), array);
        });
    }
}

#[test]
fn tpch_rows_name_the_gpu_when_it_ran() {
    let Some(_gpu) = gpu_or_skip("tpch_rows_name_the_gpu_when_it_ran") else {
        return;
    };
    let config = Config {
        sf: 0.01,
        tables: vec![Table::Region, Table::Orders],
        contenders: Contender::parse_list("lzss,gmatch,snap").unwrap(),
        backend: Backend::Gpu,
        ..Config::default()
    };
    let rows = columns::run(&config, &mut |_| {}).unwrap();
    for row in &rows {
        let expected = if row.codec == "snap" { "cpu" } else { "gpu" };
        assert_eq!(row.backend, expected, "{row:?}");
    }
    // Under auto only columns with a part of at least GPU_MIN_BYTES go to the GPU: at
    // SF 0.01 none (orders has 15,000 rows).
    let auto = Config {
        backend: Backend::Auto,
        ..config
    };
    let rows = columns::run(&auto, &mut |_| {}).unwrap();
    assert!(rows.iter().all(|r| r.backend == "cpu"));
}
