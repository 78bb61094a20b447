#![cfg(feature = "parquet")]
//! Parquet files written by colzip (gmatch-made SNAPPY pages) and read by colzip's
//! batched reader, checked against the parquet crate's own writer and reader, and (when
//! Python has them) pyarrow and DuckDB.

use std::sync::Arc;

use arrow::array::*;
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::concat_batches;
use arrow::datatypes::*;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use colzip::codec::{Placement, gmatch};
use colzip::parquet::read::{ReadOptions, read_batches};
use colzip::parquet::write::{DataPageVersion, ParquetWriter, WriteOptions, write_batches};
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_reader::ParquetRecordBatchReader;
use parquet::basic::Compression;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::{ParquetMetaData, ParquetMetaDataReader};
use parquet::file::properties::{WriterProperties, WriterVersion};
use parquet::file::serialized_reader::SerializedPageReader;

const ROWS: usize = 3000;

/// A small deterministic generator (no two tests share state).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// Every 7th row null (a different phase per column through `phase`).
fn validity(phase: usize) -> NullBuffer {
    NullBuffer::from(
        (0..ROWS)
            .map(|i| !(i + phase).is_multiple_of(7))
            .collect::<Vec<_>>(),
    )
}

fn nullable<T: Clone>(values: Vec<T>, phase: usize) -> Vec<Option<T>> {
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| (!(i + phase).is_multiple_of(7)).then_some(v))
        .collect()
}

/// One column of (nearly) every Arrow type `ArrowWriter` writes, with nulls, values that
/// repeat (so dictionaries and Snappy have something to find) and some that do not.
fn every_type_batch() -> RecordBatch {
    let mut rng = Lcg(42);
    let small: Vec<i64> = (0..ROWS).map(|_| (rng.next() % 50) as i64).collect();
    let wide: Vec<i64> = (0..ROWS).map(|_| rng.next() as i64 - (1 << 30)).collect();
    let words: Vec<String> = (0..ROWS)
        .map(|i| format!("word-{}-{}", small[i], "x".repeat(i % 13)))
        .collect();
    let tz: Arc<str> = Arc::from("+01:00");

    let mut columns: Vec<(&str, ArrayRef)> = vec![
        (
            "i8",
            Arc::new(Int8Array::from(nullable(
                small.iter().map(|&v| v as i8).collect(),
                0,
            ))),
        ),
        (
            "i16",
            Arc::new(Int16Array::from(nullable(
                wide.iter().map(|&v| v as i16).collect(),
                1,
            ))),
        ),
        (
            "i32",
            Arc::new(Int32Array::from(nullable(
                wide.iter().map(|&v| v as i32).collect(),
                2,
            ))),
        ),
        ("i64", Arc::new(Int64Array::from(nullable(wide.clone(), 3)))),
        (
            "u8",
            Arc::new(UInt8Array::from(nullable(
                small.iter().map(|&v| v as u8).collect(),
                4,
            ))),
        ),
        (
            "u16",
            Arc::new(UInt16Array::from(nullable(
                wide.iter().map(|&v| v as u16).collect(),
                5,
            ))),
        ),
        (
            "u32",
            Arc::new(UInt32Array::from(nullable(
                wide.iter().map(|&v| v as u32).collect(),
                6,
            ))),
        ),
        (
            "u64",
            Arc::new(UInt64Array::from(nullable(
                wide.iter().map(|&v| v as u64).collect(),
                0,
            ))),
        ),
        (
            "f16",
            arrow::compute::cast(
                &Float32Array::from(nullable(small.iter().map(|&v| v as f32 / 4.0).collect(), 1)),
                &DataType::Float16,
            )
            .unwrap(),
        ),
        (
            "f32",
            Arc::new(Float32Array::from(nullable(
                wide.iter().map(|&v| v as f32 / 3.0).collect(),
                2,
            ))),
        ),
        (
            "f64",
            Arc::new(Float64Array::from(nullable(
                small.iter().map(|&v| v as f64 * 0.25).collect(),
                3,
            ))),
        ),
        (
            "dec32",
            Arc::new(
                Decimal32Array::from(nullable(small.iter().map(|&v| v as i32 * 101).collect(), 4))
                    .with_precision_and_scale(9, 2)
                    .unwrap(),
            ),
        ),
        (
            "dec64",
            Arc::new(
                Decimal64Array::from(nullable(wide.clone(), 5))
                    .with_precision_and_scale(18, 3)
                    .unwrap(),
            ),
        ),
        (
            "dec128",
            Arc::new(
                Decimal128Array::from(nullable(wide.iter().map(|&v| v as i128 * 7).collect(), 6))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ),
        (
            "dec256",
            Arc::new(
                Decimal256Array::from(nullable(
                    wide.iter().map(|&v| i256::from_i128(v as i128)).collect(),
                    0,
                ))
                .with_precision_and_scale(40, 5)
                .unwrap(),
            ),
        ),
        (
            "date32",
            Arc::new(Date32Array::from(nullable(
                small.iter().map(|&v| 19_000 + v as i32).collect(),
                1,
            ))),
        ),
        (
            "date64",
            Arc::new(Date64Array::from(nullable(
                small.iter().map(|&v| (19_000 + v) * 86_400_000).collect(),
                2,
            ))),
        ),
        (
            "time32s",
            Arc::new(Time32SecondArray::from(nullable(
                small.iter().map(|&v| v as i32 * 60).collect(),
                3,
            ))),
        ),
        (
            "time32ms",
            Arc::new(Time32MillisecondArray::from(nullable(
                small.iter().map(|&v| v as i32 * 1000).collect(),
                4,
            ))),
        ),
        (
            "time64us",
            Arc::new(Time64MicrosecondArray::from(nullable(
                small.iter().map(|&v| v * 1_000_000).collect(),
                5,
            ))),
        ),
        (
            "time64ns",
            Arc::new(Time64NanosecondArray::from(nullable(
                small.iter().map(|&v| v * 1_000_000_000).collect(),
                6,
            ))),
        ),
        (
            "ts_s",
            Arc::new(TimestampSecondArray::from(nullable(wide.clone(), 0))),
        ),
        (
            "ts_ms",
            Arc::new(
                TimestampMillisecondArray::from(nullable(wide.clone(), 1))
                    .with_timezone(tz.clone()),
            ),
        ),
        (
            "ts_us",
            Arc::new(TimestampMicrosecondArray::from(nullable(wide.clone(), 2))),
        ),
        (
            "ts_ns",
            Arc::new(TimestampNanosecondArray::from(nullable(wide.clone(), 3)).with_timezone(tz)),
        ),
        (
            "duration",
            Arc::new(DurationMillisecondArray::from(nullable(wide.clone(), 4))),
        ),
        (
            "interval_ym",
            Arc::new(IntervalYearMonthArray::from(nullable(
                small.iter().map(|&v| v as i32).collect(),
                5,
            ))),
        ),
        (
            "bool",
            Arc::new(BooleanArray::from(nullable(
                small.iter().map(|&v| v % 3 == 0).collect(),
                6,
            ))),
        ),
        (
            "utf8",
            Arc::new(StringArray::from(nullable(words.clone(), 0))),
        ),
        (
            "large_utf8",
            Arc::new(LargeStringArray::from(nullable(words.clone(), 1))),
        ),
        (
            "utf8_view",
            Arc::new(StringViewArray::from(nullable(words.clone(), 2))),
        ),
        (
            "binary",
            Arc::new(BinaryArray::from(nullable(
                words.iter().map(|w| w.as_bytes()).collect(),
                3,
            ))),
        ),
        (
            "large_binary",
            Arc::new(LargeBinaryArray::from(nullable(
                words.iter().map(|w| w.as_bytes()).collect(),
                4,
            ))),
        ),
        (
            "binary_view",
            Arc::new(BinaryViewArray::from(nullable(
                words.iter().map(|w| w.as_bytes()).collect(),
                5,
            ))),
        ),
        (
            "fixed_binary",
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    nullable(wide.iter().map(|v| v.to_le_bytes()).collect(), 6).into_iter(),
                    8,
                )
                .unwrap(),
            ),
        ),
        (
            "dict_utf8",
            Arc::new(
                nullable(small.iter().map(|v| format!("k{v}")).collect(), 0)
                    .iter()
                    .map(|v| v.as_deref())
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
        ),
        (
            "dict_i8_utf8",
            Arc::new(
                nullable(small.iter().map(|v| format!("s{}", v % 5)).collect(), 1)
                    .iter()
                    .map(|v| v.as_deref())
                    .collect::<DictionaryArray<Int8Type>>(),
            ),
        ),
    ];

    // Nested: lists, a large list of strings, a fixed-size list, a struct, a map.
    let list_offsets = OffsetBuffer::<i32>::from_lengths((0..ROWS).map(|i| i % 4));
    let list_values =
        Int32Array::from_iter_values((0..list_offsets.last().copied().unwrap()).map(|v| v % 97));
    columns.push((
        "list_i32",
        Arc::new(ListArray::new(
            Arc::new(Field::new_list_field(DataType::Int32, false)),
            list_offsets,
            Arc::new(list_values),
            Some(validity(2)),
        )),
    ));
    let large_offsets = OffsetBuffer::<i64>::from_lengths((0..ROWS).map(|i| i % 3));
    let large_values = StringArray::from_iter(
        (0..large_offsets.last().copied().unwrap())
            .map(|v| (v % 5 != 0).then(|| format!("e{}", v % 11))),
    );
    columns.push((
        "large_list_utf8",
        Arc::new(LargeListArray::new(
            Arc::new(Field::new_list_field(DataType::Utf8, true)),
            large_offsets,
            Arc::new(large_values),
            Some(validity(3)),
        )),
    ));
    let fixed_values = Float32Array::from_iter_values((0..ROWS * 3).map(|v| (v % 17) as f32));
    columns.push((
        "fixed_list_f32",
        Arc::new(FixedSizeListArray::new(
            Arc::new(Field::new_list_field(DataType::Float32, false)),
            3,
            Arc::new(fixed_values),
            Some(validity(4)),
        )),
    ));
    let struct_fields = Fields::from(vec![
        Field::new("a", DataType::Int64, true),
        Field::new("b", DataType::Utf8, true),
    ]);
    columns.push((
        "struct",
        Arc::new(StructArray::new(
            struct_fields,
            vec![
                Arc::new(Int64Array::from(nullable(small.clone(), 5))) as ArrayRef,
                Arc::new(StringArray::from(nullable(words.clone(), 6))),
            ],
            Some(validity(0)),
        )),
    ));
    let map_offsets = OffsetBuffer::<i32>::from_lengths((0..ROWS).map(|i| i % 3));
    let entries = map_offsets.last().copied().unwrap() as usize;
    let entry_fields = Fields::from(vec![
        Field::new("keys", DataType::Utf8, false),
        Field::new("values", DataType::Int64, true),
    ]);
    let entries_array = StructArray::new(
        entry_fields.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(
                (0..entries).map(|v| format!("m{}", v % 3)),
            )) as ArrayRef,
            Arc::new(Int64Array::from_iter(
                (0..entries).map(|v| (v % 4 != 0).then_some(v as i64)),
            )),
        ],
        None,
    );
    columns.push((
        "map",
        Arc::new(MapArray::new(
            Arc::new(Field::new("entries", DataType::Struct(entry_fields), false)),
            map_offsets,
            entries_array,
            Some(validity(1)),
            false,
        )),
    ));

    RecordBatch::try_from_iter(columns).unwrap()
}

fn options() -> WriteOptions {
    WriteOptions::default()
        .with_placement(Placement::CPU)
        .with_row_group_size(1200)
        .with_data_page_size(2048)
}

fn ours(batch: &RecordBatch, options: &WriteOptions) -> Bytes {
    let mut file = Vec::new();
    // Two writes, so that a row group spans batches.
    let half = batch.num_rows() / 2;
    let parts = [
        batch.slice(0, half),
        batch.slice(half, batch.num_rows() - half),
    ];
    write_batches(&mut file, batch.schema(), parts, options).unwrap();
    Bytes::from(file)
}

fn stock(batch: &RecordBatch, compression: Compression, version: WriterVersion) -> Bytes {
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_writer_version(version)
        .set_max_row_group_row_count(Some(1200))
        .set_data_page_size_limit(2048)
        .build();
    let mut writer = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props)).unwrap();
    let half = batch.num_rows() / 2;
    writer.write(&batch.slice(0, half)).unwrap();
    writer
        .write(&batch.slice(half, batch.num_rows() - half))
        .unwrap();
    Bytes::from(writer.into_inner().unwrap())
}

fn stock_read(file: &Bytes) -> RecordBatch {
    let reader = ParquetRecordBatchReader::try_new(file.clone(), 1 << 20).unwrap();
    let schema = reader.schema();
    let batches: Vec<_> = reader.collect::<Result<_, _>>().unwrap();
    concat_batches(&schema, &batches).unwrap()
}

fn metadata(file: &Bytes) -> ParquetMetaData {
    ParquetMetaDataReader::new()
        .with_page_index_policy(parquet::file::metadata::PageIndexPolicy::Required)
        .parse_and_finish(file)
        .unwrap()
}

/// Every chunk's pages as stored (payloads not decompressed), in file order.
fn raw_pages(file: &Bytes) -> Vec<Vec<Page>> {
    let meta = metadata(file);
    let mut out = Vec::new();
    for rg in meta.row_groups() {
        for chunk in rg.columns() {
            let raw = chunk
                .clone()
                .into_builder()
                .set_compression(Compression::UNCOMPRESSED)
                .build()
                .unwrap();
            let mut reader = SerializedPageReader::new(
                Arc::new(file.clone()),
                &raw,
                rg.num_rows() as usize,
                None,
            )
            .unwrap();
            let mut pages = Vec::new();
            while let Some(page) = reader.get_next_page().unwrap() {
                pages.push(page);
            }
            out.push(pages);
        }
    }
    out
}

/// The compressed part of a page: all of it, or a v2 page's values.
fn payload(page: &Page) -> (&[u8], bool) {
    match page {
        Page::DataPageV2 {
            buf,
            def_levels_byte_len,
            rep_levels_byte_len,
            is_compressed,
            ..
        } => (
            &buf[(def_levels_byte_len + rep_levels_byte_len) as usize..],
            *is_compressed,
        ),
        other => (other.buffer(), true),
    }
}

#[test]
fn every_type_round_trips_through_the_parquet_crate_reader_v1_and_v2() {
    let batch = every_type_batch();
    for version in [DataPageVersion::V1, DataPageVersion::V2] {
        let file = ours(&batch, &options().with_data_page_version(version));
        assert_eq!(stock_read(&file), batch, "{version:?}");
        let meta = metadata(&file);
        assert_eq!(meta.num_row_groups(), 3);
        for rg in meta.row_groups() {
            for chunk in rg.columns() {
                assert_eq!(
                    chunk.compression(),
                    Compression::SNAPPY,
                    "{:?}",
                    chunk.column_path()
                );
                assert!(
                    chunk.statistics().is_some(),
                    "{:?} lacks statistics",
                    chunk.column_path()
                );
            }
        }
        // The page index is there, as the stock writer writes it, and points at pages.
        let offsets = meta.offset_index().expect("offset index");
        assert!(meta.column_index().is_some());
        for (rg, rg_offsets) in meta.row_groups().iter().zip(offsets) {
            for (chunk, index) in rg.columns().iter().zip(rg_offsets) {
                let first = index.page_locations()[0].offset;
                assert_eq!(first, chunk.data_page_offset(), "{:?}", chunk.column_path());
                let (start, len) = chunk.byte_range();
                let last = index.page_locations().last().unwrap();
                assert!(last.offset + last.compressed_page_size as i64 == (start + len) as i64);
            }
        }
    }
}

#[test]
fn pages_are_gmatch_cpu_bytes_and_match_the_stock_writers_pages() {
    let batch = every_type_batch();
    for (version, writer_version) in [
        (DataPageVersion::V1, WriterVersion::PARQUET_1_0),
        (DataPageVersion::V2, WriterVersion::PARQUET_2_0),
    ] {
        let ours_file = ours(&batch, &options().with_data_page_version(version));
        let stock_file = stock(&batch, Compression::SNAPPY, writer_version);
        let (ours_pages, stock_pages) = (raw_pages(&ours_file), raw_pages(&stock_file));
        assert_eq!(ours_pages.len(), stock_pages.len());
        let mut compared = 0;
        for (ours_chunk, stock_chunk) in ours_pages.iter().zip(&stock_pages) {
            assert_eq!(
                ours_chunk.len(),
                stock_chunk.len(),
                "same page boundaries as the stock writer"
            );
            for (a, b) in ours_chunk.iter().zip(stock_chunk) {
                let ((a_payload, a_compressed), (b_payload, b_compressed)) =
                    (payload(a), payload(b));
                let decode = |p: &[u8], compressed: bool| {
                    if compressed {
                        snap::raw::Decoder::new().decompress_vec(p).unwrap()
                    } else {
                        p.to_vec()
                    }
                };
                let plain = decode(a_payload, a_compressed);
                // The same uncompressed page as the stock writer's…
                assert_eq!(plain, decode(b_payload, b_compressed));
                assert_eq!(
                    a.buffer()[..a.buffer().len() - a_payload.len()],
                    b.buffer()[..b.buffer().len() - b_payload.len()]
                );
                // …and the stored payload is exactly gmatch's CPU stream of it.
                if a_compressed {
                    assert_eq!(a_payload, &gmatch::compress_raw(&plain).unwrap()[..]);
                    compared += 1;
                }
            }
        }
        assert!(compared > 100, "{compared} pages compared");
        let ratio = ours_file.len() as f64 / stock_file.len() as f64;
        eprintln!(
            "{version:?}: colzip {} bytes, stock SNAPPY {} bytes (ratio {ratio:.4})",
            ours_file.len(),
            stock_file.len()
        );
        assert!((0.9..1.1).contains(&ratio), "file size ratio {ratio}");
    }
}

#[test]
fn reader_reads_ours_and_other_writers_files_equal() {
    let batch = every_type_batch();
    let cpu = ReadOptions::default()
        .with_placement(Placement::CPU)
        .with_batch_size(1000);
    let files = [
        ("ours v1", ours(&batch, &options())),
        (
            "ours v2",
            ours(
                &batch,
                &options().with_data_page_version(DataPageVersion::V2),
            ),
        ),
        (
            "stock snappy v1",
            stock(&batch, Compression::SNAPPY, WriterVersion::PARQUET_1_0),
        ),
        (
            "stock snappy v2",
            stock(&batch, Compression::SNAPPY, WriterVersion::PARQUET_2_0),
        ),
        (
            "stock zstd",
            stock(
                &batch,
                Compression::ZSTD(Default::default()),
                WriterVersion::PARQUET_1_0,
            ),
        ),
        (
            "stock uncompressed",
            stock(
                &batch,
                Compression::UNCOMPRESSED,
                WriterVersion::PARQUET_2_0,
            ),
        ),
    ];
    for (name, file) in files {
        let read = read_batches(file.clone(), &cpu).unwrap();
        let all = concat_batches(&read.schema, &read.batches).unwrap();
        assert_eq!(all, batch, "{name}");
        assert_eq!(read.summary.rows, ROWS as u64);
        assert_eq!(read.summary.row_groups, 3);
        let snappy = name.contains("snappy") || name.contains("ours");
        assert_eq!(read.summary.snappy_pages > 0, snappy, "{name}");
        assert_eq!(
            read.summary.other_codec_chunks > 0,
            name.contains("zstd"),
            "{name}"
        );
        assert!(read.batches.iter().all(|b| b.num_rows() <= 1000));
    }
    // Projection of top-level columns, nested ones included.
    let file = ours(&batch, &options());
    let names = ["i64", "utf8_view", "struct", "map"];
    let indices: Vec<usize> = names
        .iter()
        .map(|n| batch.schema().index_of(n).unwrap())
        .collect();
    let read = read_batches(file, &cpu.clone().with_projection(indices.clone())).unwrap();
    assert_eq!(
        concat_batches(&read.schema, &read.batches).unwrap(),
        batch.project(&indices).unwrap()
    );
}

#[test]
fn row_groups_written_together_give_the_same_bytes() {
    // Encoding several row groups at once, flushing in between or not, never changes
    // where row groups end nor any byte of the file.
    let batch = every_type_batch();
    // A dictionary page limit so small that dictionaries fall back to plain pages: the
    // encoder then stores the dictionary page between data pages, and the writer moves
    // it first.
    let fallback = WriterProperties::builder()
        .set_dictionary_page_size_limit(256)
        .build();
    for (version, properties) in [
        (DataPageVersion::V1, None),
        (DataPageVersion::V2, None),
        (DataPageVersion::V1, Some(fallback.clone())),
        (DataPageVersion::V2, Some(fallback)),
    ] {
        let mut options = options().with_data_page_version(version);
        options.properties = properties;
        let one = ours(&batch, &options.clone().with_parallel_row_groups(1));
        assert_eq!(stock_read(&one), batch);
        for parallel in [2, 3, 8] {
            let together = ours(&batch, &options.clone().with_parallel_row_groups(parallel));
            assert_eq!(together, one, "{version:?}, {parallel} row groups together");
        }
        // A flush writes what is buffered at once, as a row group of its own.
        let write = |parallel: usize| {
            let options = options.clone().with_parallel_row_groups(parallel);
            let mut writer = ParquetWriter::try_new(Vec::new(), batch.schema(), &options).unwrap();
            writer.write(&batch.slice(0, 1000)).unwrap();
            writer.flush().unwrap();
            let written = writer.summary().row_groups;
            writer.write(&batch.slice(1000, ROWS - 1000)).unwrap();
            let (summary, file) = writer.close().unwrap();
            (written, summary.row_groups, file)
        };
        let (written, row_groups, file) = write(1);
        assert_eq!((written, row_groups), (1, 3));
        assert_eq!(write(4), (written, row_groups, file));
    }
}

#[test]
fn empty_and_all_null_inputs() {
    let schema = Arc::new(Schema::new(vec![Field::new("x", DataType::Utf8, true)]));
    // No rows at all: a valid file without row groups.
    let mut file = Vec::new();
    let summary = write_batches(&mut file, schema.clone(), [], &options()).unwrap();
    assert_eq!(
        (summary.rows, summary.row_groups, summary.file_bytes),
        (0, 0, file.len() as u64)
    );
    let read = read_batches(
        Bytes::from(file),
        &ReadOptions::default().with_placement(Placement::CPU),
    )
    .unwrap();
    assert!(read.batches.is_empty());
    // Only nulls: v2 pages with empty values.
    let nulls = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(StringArray::from(vec![None::<&str>; 500]))],
    )
    .unwrap();
    for version in [DataPageVersion::V1, DataPageVersion::V2] {
        let file = ours(&nulls, &options().with_data_page_version(version));
        assert_eq!(stock_read(&file), nulls);
    }
    // A batch of another schema is refused.
    let other =
        RecordBatch::try_from_iter([("x", Arc::new(Int32Array::from(vec![1])) as ArrayRef)])
            .unwrap();
    let mut writer = ParquetWriter::try_new(Vec::new(), schema, &options()).unwrap();
    assert!(
        writer
            .write(&other)
            .unwrap_err()
            .to_string()
            .contains("does not match")
    );
    // Bad options name what is wrong.
    let err = ParquetWriter::try_new(
        Vec::new(),
        nulls.schema(),
        &options().with_row_group_size(0),
    )
    .unwrap_err();
    assert!(err.to_string().contains("row_group_size"), "{err}");
}

#[test]
fn corrupt_and_truncated_files_are_errors() {
    let batch = every_type_batch().project(&[3, 28, 36]).unwrap(); // i64, utf8, list
    let file = ours(&batch, &options());
    let cpu = ReadOptions::default().with_placement(Placement::CPU);
    for cut in [0, 3, 8, file.len() / 2, file.len() - 9, file.len() - 1] {
        assert!(
            read_batches(file.slice(..cut), &cpu).is_err(),
            "cut at {cut}"
        );
    }
    // A page whose Snappy preamble claims more than its chunk holds.
    let meta = metadata(&file);
    let chunk = meta.row_group(0).column(0);
    let first_page = raw_pages(&file)[0][0].buffer().clone();
    let (start, len) = chunk.byte_range();
    let chunk_bytes = &file[start as usize..(start + len) as usize];
    let at = start as usize + find(chunk_bytes, &first_page).expect("page payload in its chunk");
    let mut bad = file.to_vec();
    bad[at..at + 5].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    let err = read_batches(Bytes::from(bad), &cpu).unwrap_err();
    assert!(err.to_string().contains("corrupt"), "{err}");
    // Any single flipped byte in the data: an error or some batches, never a panic.
    for step in 0..200 {
        let mut bad = file.to_vec();
        let at = 4 + (step * 7919) % (file.len() - 12);
        bad[at] ^= 0x5a;
        let _ = read_batches(Bytes::from(bad), &cpu);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// pyarrow and DuckDB read our files (v1 and v2) and see the values we wrote; skipped
/// when Python lacks them unless COLZIP_REQUIRE_READERS=1.
#[test]
fn pyarrow_and_duckdb_read_our_files() {
    let n: usize = 2500;
    let ids: Vec<i64> = (0..n as i64).collect();
    let names: Vec<Option<String>> = (0..n)
        .map(|i| (i % 5 != 0).then(|| format!("name {}", i % 37)))
        .collect();
    let prices: Vec<Option<i128>> = (0..n)
        .map(|i| (i % 6 != 0).then_some((i * 137 % 100_000) as i128))
        .collect();
    let flags: Vec<Option<bool>> = (0..n).map(|i| (i % 4 != 0).then_some(i % 3 == 0)).collect();
    let ratios: Vec<Option<f64>> = (0..n)
        .map(|i| (i % 9 != 0).then_some(i as f64 / 8.0))
        .collect();
    let days: Vec<i32> = (0..n).map(|i| 10_000 + (i % 400) as i32).collect();
    let lists: Vec<Option<Vec<i32>>> = (0..n)
        .map(|i| (i % 8 != 0).then(|| (0..(i % 4) as i32).collect()))
        .collect();
    let pair_a: Vec<Option<i32>> = (0..n)
        .map(|i| (i % 3 != 0).then_some(i as i32 % 100))
        .collect();

    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8View, true),
        Field::new("price", DataType::Decimal128(15, 2), true),
        Field::new("flag", DataType::Boolean, true),
        Field::new("ratio", DataType::Float64, true),
        Field::new("day", DataType::Date32, false),
        Field::new(
            "list",
            DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
            true,
        ),
        Field::new(
            "pair",
            DataType::Struct(Fields::from(vec![Field::new("a", DataType::Int32, true)])),
            true,
        ),
    ]));
    let list_array = ListArray::from_iter_primitive::<Int32Type, _, _>(lists.iter().map(|l| {
        l.as_ref()
            .map(|v| v.iter().map(|&x| Some(x)).collect::<Vec<_>>())
    }));
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from(ids.clone())),
            Arc::new(StringViewArray::from(
                names.iter().map(|n| n.as_deref()).collect::<Vec<_>>(),
            )),
            Arc::new(
                Decimal128Array::from(prices.clone())
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
            Arc::new(BooleanArray::from(flags.clone())),
            Arc::new(Float64Array::from(ratios.clone())),
            Arc::new(Date32Array::from(days.clone())),
            Arc::new(list_array),
            Arc::new(StructArray::new(
                Fields::from(vec![Field::new("a", DataType::Int32, true)]),
                vec![Arc::new(Int32Array::from(pair_a.clone())) as ArrayRef],
                None,
            )),
        ],
    )
    .unwrap();

    // The expected values as Python readers show them (normalised by the script).
    let date = |d: i32| {
        let date = chrono_free_date(d);
        serde_json::Value::String(date)
    };
    let expected = serde_json::json!({
        "num_rows": n,
        "columns": {
            "id": ids,
            "name": names,
            "price": prices.iter().map(|p| p.map(|v| format!("{}.{:02}", v / 100, v % 100))).collect::<Vec<_>>(),
            "flag": flags,
            "ratio": ratios,
            "day": days.iter().map(|&d| date(d)).collect::<Vec<_>>(),
            "list": lists,
            "pair": pair_a.iter().map(|a| serde_json::json!({ "a": a })).collect::<Vec<_>>(),
        }
    });

    let dir = tempfile::tempdir().unwrap();
    let expected_path = dir.path().join("expected.json");
    std::fs::write(&expected_path, expected.to_string()).unwrap();
    let require = std::env::var("COLZIP_REQUIRE_READERS").is_ok_and(|v| v == "1");
    for version in [DataPageVersion::V1, DataPageVersion::V2] {
        let path = dir.path().join(format!("{version:?}.parquet"));
        let options = WriteOptions::default()
            .with_placement(Placement::CPU)
            .with_row_group_size(1000)
            .with_data_page_size(4096)
            .with_data_page_version(version);
        let mut writer = ParquetWriter::try_new(
            std::fs::File::create(&path).unwrap(),
            schema.clone(),
            &options,
        )
        .unwrap();
        writer.write(&batch).unwrap();
        writer.close().unwrap();
        let output = std::process::Command::new("python3")
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/readers/read_parquet.py"
            ))
            .arg(&path)
            .arg(&expected_path)
            .output();
        let output = match output {
            Ok(output) => output,
            Err(e) if !require => {
                eprintln!("SKIPPED pyarrow/DuckDB check: cannot run python3 ({e})");
                return;
            }
            Err(e) => panic!("cannot run python3: {e}"),
        };
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if output.status.code() == Some(3) && !require {
            eprintln!("SKIPPED pyarrow/DuckDB check: {stdout}{stderr}");
            return;
        }
        assert!(
            output.status.success(),
            "{version:?}: readers disagree:\n{stdout}\n{stderr}"
        );
        eprintln!("{version:?}: {stdout}");
    }
}

/// Days since 1970-01-01 as `YYYY-MM-DD` (civil-from-days, Howard Hinnant's algorithm).
fn chrono_free_date(days: i32) -> String {
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}
