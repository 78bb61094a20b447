#![cfg(feature = "parquet")]
//! By hand only (`--ignored`), in the test profile, no DataFusion or release build needed:
//!
//! - `COLZIP_GOLDEN_DIR=DIR cargo test --test parquet_write_speed dump -- --ignored`
//!   writes the writer's files for a set of inputs and options (v1/v2, nested and
//!   nullable columns, dictionaries off, bloom filters, page statistics, flushes) to DIR:
//!   run it with two versions of the writer and `cmp` the files, since a change to the
//!   writer's pipeline must not change a byte;
//! - `cargo test --test parquet_write_speed time -- --ignored --nocapture` times a CPU
//!   write of TPC-H lineitem against the stock `ArrowWriter` with SNAPPY, twice.
//!   `COLZIP_SF` (0.2), `COLZIP_RG_ROWS` (200000), `COLZIP_COLUMNS` (all, or a comma
//!   list) and `COLZIP_PARALLEL_RG` (for both: the writer's default) change the input and
//!   options; `RAYON_NUM_THREADS` the cores used.

use std::sync::Arc;
use std::time::Instant;

use arrow::array::*;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use colzip::codec::Placement;
use colzip::parquet::write::{DataPageVersion, ParquetWriter, WriteOptions};
use colzip::tpch::{Table, generate};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::file::properties::{EnabledStatistics, WriterProperties};

fn lineitem(sf: f64) -> RecordBatch {
    let data = generate(Table::Lineitem, sf).unwrap();
    RecordBatch::try_new(data.schema, data.columns).unwrap()
}

/// Nullable, nested and dictionary columns.
fn nested(rows: usize) -> RecordBatch {
    let ints: ArrayRef = Arc::new(Int32Array::from_iter(
        (0..rows).map(|i| (i % 5 != 0).then_some((i * 31 % 1000) as i32)),
    ));
    let text: ArrayRef =
        Arc::new(StringArray::from_iter((0..rows).map(|i| {
            (i % 7 != 3).then(move || format!("v{}-{}", i % 53, "y".repeat(i % 9)))
        })));
    let dict: ArrayRef = Arc::new(
        (0..rows)
            .map(|i| ["red", "green", "blue"][i % 3])
            .collect::<DictionaryArray<Int32Type>>(),
    );
    let list: ArrayRef = Arc::new(ListArray::from_iter_primitive::<Int64Type, _, _>(
        (0..rows)
            .map(|i| (i % 11 != 0).then(move || (0..(i % 4)).map(move |j| Some((i + j) as i64)))),
    ));
    let inner: ArrayRef = Arc::new(Float64Array::from_iter(
        (0..rows).map(|i| (i % 3 != 0).then_some(i as f64 / 8.0)),
    ));
    let structs: ArrayRef = Arc::new(StructArray::from(vec![(
        Arc::new(Field::new("f", DataType::Float64, true)),
        inner,
    )]));
    RecordBatch::try_from_iter([
        ("ints", ints),
        ("text", text),
        ("dict", dict),
        ("list", list),
        ("struct", structs),
    ])
    .unwrap()
}

/// Writes `batch` in uneven pieces, flushing once in the middle when `flush_at` says so.
fn write(batch: &RecordBatch, options: &WriteOptions, flush_at: Option<usize>) -> Vec<u8> {
    let mut writer = ParquetWriter::try_new(Vec::new(), batch.schema(), options).unwrap();
    let mut offset = 0;
    let mut piece = 1000;
    while offset < batch.num_rows() {
        let take = piece.min(batch.num_rows() - offset);
        writer.write(&batch.slice(offset, take)).unwrap();
        offset += take;
        if flush_at.is_some_and(|at| offset >= at && offset - take < at) {
            writer.flush().unwrap();
        }
        piece = piece * 3 % 7919 + 500;
    }
    writer.close().unwrap().1
}

#[test]
#[ignore]
fn dump_golden_files() {
    let dir = std::path::PathBuf::from(std::env::var("COLZIP_GOLDEN_DIR").unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let items = lineitem(0.02);
    let nest = nested(20_000);
    let parallel: usize = std::env::var("COLZIP_PARALLEL_RG").map_or(1, |s| s.parse().unwrap());
    let base = || {
        WriteOptions::default()
            .with_placement(Placement::CPU)
            .with_parallel_row_groups(parallel)
    };
    let rich = WriterProperties::builder()
        .set_dictionary_enabled(false)
        .set_bloom_filter_enabled(true)
        .set_statistics_enabled(EnabledStatistics::Page)
        .build();
    let cases: Vec<(&str, &RecordBatch, WriteOptions, Option<usize>)> = vec![
        ("li-v1", &items, base().with_row_group_size(25_000), None),
        (
            "li-v2-pages",
            &items,
            base()
                .with_row_group_size(30_000)
                .with_data_page_size(16 << 10)
                .with_data_page_version(DataPageVersion::V2),
            Some(40_000),
        ),
        (
            "li-rich",
            &items,
            base().with_row_group_size(50_000).with_properties(rich),
            None,
        ),
        ("li-one", &items, base(), None),
        (
            "nested-v1",
            &nest,
            base().with_row_group_size(3000).with_data_page_size(1024),
            Some(7000),
        ),
        (
            "nested-v2",
            &nest,
            base()
                .with_row_group_size(2500)
                .with_data_page_size(2048)
                .with_data_page_version(DataPageVersion::V2),
            Some(4100),
        ),
    ];
    for (name, batch, options, flush_at) in cases {
        let file = write(batch, &options, flush_at);
        std::fs::write(dir.join(format!("{name}.parquet")), file).unwrap();
    }
}

#[test]
#[ignore]
fn time_lineitem_write() {
    let sf: f64 = std::env::var("COLZIP_SF").map_or(0.2, |s| s.parse().unwrap());
    let rows: usize = std::env::var("COLZIP_RG_ROWS").map_or(200_000, |s| s.parse().unwrap());
    let mut batch = lineitem(sf);
    if let Ok(names) = std::env::var("COLZIP_COLUMNS") {
        let schema = batch.schema();
        let indices: Vec<usize> = names
            .split(',')
            .map(|name| schema.index_of(name).unwrap())
            .collect();
        batch = batch.project(&indices).unwrap();
    }
    let pieces: Vec<RecordBatch> = (0..batch.num_rows())
        .step_by(8192)
        .map(|at| batch.slice(at, 8192.min(batch.num_rows() - at)))
        .collect();
    for _ in 0..2 {
        let start = Instant::now();
        let props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(rows))
            .build();
        let mut stock = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).unwrap();
        for piece in &pieces {
            stock.write(piece).unwrap();
        }
        let stock_len = stock.into_inner().unwrap().len();
        let stock_s = start.elapsed().as_secs_f64();

        let start = Instant::now();
        let mut options = WriteOptions::default()
            .with_placement(Placement::CPU)
            .with_row_group_size(rows);
        if let Ok(n) = std::env::var("COLZIP_PARALLEL_RG") {
            options = options.with_parallel_row_groups(n.parse().unwrap());
        }
        let mut ours = ParquetWriter::try_new(Vec::new(), batch.schema(), &options).unwrap();
        for piece in &pieces {
            ours.write(piece).unwrap();
        }
        let (summary, file) = ours.close().unwrap();
        let ours_s = start.elapsed().as_secs_f64();
        println!(
            "lineitem SF {sf} ({} rows, {rows} per row group): stock SNAPPY {stock_s:.3} s \
             ({stock_len} B); colzip {ours_s:.3} s ({} B, compress {:.3} s)",
            batch.num_rows(),
            file.len(),
            summary.compress_seconds
        );
    }
}
