//! Valid inputs to mutate: byte samples for the codecs, arrays of every Arrow type the
//! column layer supports (with nulls, slices, empty), and the streams, containers,
//! archives and Parquet files made from them by every codec.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayData, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray,
    FixedSizeBinaryArray, Int32Array, Int64Array, LargeBinaryArray, LargeStringArray, ListArray,
    NullArray, RecordBatch, RunArray, StringArray, StringViewArray, UInt8Array, UnionArray,
    make_array,
};
use arrow::buffer::{Buffer, NullBuffer};
use arrow::datatypes::{
    DataType, Field, Int8Type, Int16Type, Int32Type, IntervalUnit, Schema, TimeUnit, UInt16Type,
    UnionFields,
};
use colzip::archive::{ArchiveWriter, RawType, Source};
use colzip::column::{self, CodecChoice};

/// Codecs every container and archive seed is made with.
pub const CODECS: [&str; 7] = [
    "stored",
    "lzss",
    "gmatch",
    "gmatch:framed",
    "bwt:block=64k",
    "intpack",
    "auto",
];

const ROWS: usize = 300;

/// Deterministic bytes: runs, small values and noise, so every codec finds something.
pub fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            match (i / 64 + seed as usize) % 4 {
                0 => b'a' + (i % 3) as u8,
                1 => (state % 4) as u8,
                2 => (i / 8) as u8,
                _ => (state >> 8) as u8,
            }
        })
        .collect()
}

/// Byte samples for the bare codecs: empty, tiny, text, numbers, runs, noise.
pub fn samples() -> Vec<Vec<u8>> {
    let text = b"the quick brown fox jumps over the lazy dog; ".repeat(40);
    let ints: Vec<u8> = (0..700u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
    vec![
        Vec::new(),
        vec![7],
        b"abababababab".to_vec(),
        text,
        ints,
        vec![0; 5000],
        bytes(3000, 1),
        bytes(4099, 2),
        bytes(9000, 3),
    ]
}

fn nulls(n: usize) -> NullBuffer {
    NullBuffer::from((0..n).map(|i| i % 5 != 2).collect::<Vec<_>>())
}

fn fixed(data_type: DataType, width: usize) -> ArrayRef {
    let data = ArrayData::builder(data_type)
        .len(ROWS)
        .add_buffer(Buffer::from_vec(bytes(ROWS * width, width as u64)))
        .nulls(Some(nulls(ROWS)))
        .build()
        .expect("valid fixed-width array");
    make_array(data)
}

fn decimal(data_type: DataType, width: usize) -> ArrayRef {
    let mut raw = Vec::with_capacity(ROWS * width);
    for i in 0..ROWS as i128 {
        let v = i * 37 % 1000 - 500;
        let le = v.to_le_bytes();
        raw.extend_from_slice(&le[..width.min(16)]);
        if width == 32 {
            raw.extend_from_slice(&[if v < 0 { 0xff } else { 0 }; 16]);
        }
    }
    let data = ArrayData::builder(data_type)
        .len(ROWS)
        .add_buffer(Buffer::from_vec(raw))
        .nulls(Some(nulls(ROWS)))
        .build()
        .expect("valid decimal array");
    make_array(data)
}

fn words() -> Vec<Option<String>> {
    (0..ROWS)
        .map(|i| (i % 7 != 3).then(|| format!("w{}-{}", i % 13, "x".repeat(i % 9))))
        .collect()
}

/// One array of every flat type the column layer supports, and unions and run-end
/// encoded arrays.
pub fn arrays() -> Vec<ArrayRef> {
    use DataType::*;
    let words = words();
    let word_refs: Vec<Option<&str>> = words.iter().map(|w| w.as_deref()).collect();
    let blobs: Vec<Option<&[u8]>> = word_refs.iter().map(|w| w.map(str::as_bytes)).collect();
    let mut out: Vec<ArrayRef> = vec![
        Arc::new(NullArray::new(40)),
        Arc::new(BooleanArray::from(
            (0..ROWS)
                .map(|i| (i % 6 != 1).then_some(i % 3 == 0))
                .collect::<Vec<_>>(),
        )),
        Arc::new(Int32Array::from(Vec::<i32>::new())),
        Arc::new(Int64Array::from_iter_values((0..ROWS as i64).map(|i| i / 4)).slice(7, 200)),
        Arc::new(StringArray::from(word_refs.clone())),
        Arc::new(LargeStringArray::from(word_refs.clone())),
        Arc::new(StringViewArray::from(word_refs.clone())),
        Arc::new(BinaryArray::from(blobs.clone())),
        Arc::new(LargeBinaryArray::from(blobs.clone())),
        Arc::new(BinaryViewArray::from(blobs)),
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                (0..ROWS).map(|i| (i % 4 != 0).then_some([(i % 5) as u8; 5])),
                5,
            )
            .expect("valid fixed-size binary"),
        ),
        Arc::new(
            word_refs
                .iter()
                .copied()
                .collect::<DictionaryArray<Int8Type>>(),
        ),
        Arc::new(DictionaryArray::<UInt16Type>::new(
            (0..ROWS as u16).map(|i| i % 3).collect(),
            Arc::new(Int64Array::from(vec![10, -20, 30])),
        )),
        Arc::new(UInt8Array::from(bytes(ROWS, 9))),
    ];
    for (data_type, width) in [
        (Int8, 1),
        (Int16, 2),
        (Int32, 4),
        (UInt16, 2),
        (UInt32, 4),
        (UInt64, 8),
        (Float16, 2),
        (Float32, 4),
        (Float64, 8),
        (Date32, 4),
        (Date64, 8),
        (Time32(TimeUnit::Second), 4),
        (Time32(TimeUnit::Millisecond), 4),
        (Time64(TimeUnit::Microsecond), 8),
        (Time64(TimeUnit::Nanosecond), 8),
        (Timestamp(TimeUnit::Millisecond, Some("UTC".into())), 8),
        (Timestamp(TimeUnit::Nanosecond, None), 8),
        (Duration(TimeUnit::Second), 8),
        (Interval(IntervalUnit::YearMonth), 4),
        (Interval(IntervalUnit::DayTime), 8),
        (Interval(IntervalUnit::MonthDayNano), 16),
    ] {
        out.push(fixed(data_type, width));
    }
    out.push(decimal(Decimal32(9, 2), 4));
    out.push(decimal(Decimal64(18, 3), 8));
    out.push(decimal(Decimal128(38, 4), 16));
    out.push(decimal(Decimal256(76, 5), 32));
    out.extend(unions_and_runs());
    out
}

/// Dense and sparse unions (type ids 5, 2, 9; a list field) and run-end encoded arrays
/// (Int16 and Int32 run ends, strings and integers with nulls), some sliced.
fn unions_and_runs() -> Vec<ArrayRef> {
    let fields = UnionFields::try_new(
        [5, 2, 9],
        [
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new(
                "l",
                DataType::List(Arc::new(Field::new_list_field(DataType::Int32, true))),
                true,
            ),
        ],
    )
    .expect("union fields");
    let type_ids: Vec<i8> = (0..ROWS).map(|i| [5, 2, 9, 5][i * 7 % 4]).collect();
    let numbers = |n: usize| -> ArrayRef {
        Arc::new(Int64Array::from_iter(
            (0..n as i64).map(|i| (i % 7 != 2).then_some(i / 3)),
        ))
    };
    let strings = |n: usize| -> ArrayRef {
        let words = words();
        Arc::new(StringArray::from_iter(words.into_iter().cycle().take(n)))
    };
    let lists = |n: usize| -> ArrayRef {
        Arc::new(ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..n).map(|i| {
                (i % 5 != 3).then(|| {
                    (0..i % 4)
                        .map(|v| (v != 2).then_some(v as i32))
                        .collect::<Vec<_>>()
                })
            }),
        ))
    };
    let mut counts = [0i32; 10];
    let offsets: Vec<i32> = type_ids
        .iter()
        .map(|&id| {
            counts[id as usize] += 1;
            counts[id as usize] - 1
        })
        .collect();
    let dense = UnionArray::try_new(
        fields.clone(),
        type_ids.clone().into(),
        Some(offsets.into()),
        vec![
            numbers(counts[5] as usize),
            strings(counts[2] as usize),
            lists(counts[9] as usize),
        ],
    )
    .expect("dense union");
    let sparse = UnionArray::try_new(
        fields,
        type_ids.into(),
        None,
        vec![numbers(ROWS), strings(ROWS), lists(ROWS)],
    )
    .expect("sparse union");
    let ends: Vec<i32> = (1..=ROWS as i32)
        .filter(|i| i % 6 == 0 || *i == ROWS as i32)
        .collect();
    let short: Vec<i16> = ends.iter().map(|&e| e as i16).collect();
    let text = RunArray::<Int32Type>::try_new(&ends.clone().into(), &strings(ends.len()))
        .expect("run-end strings");
    let ints = RunArray::<Int16Type>::try_new(&short.into(), &numbers(ends.len()))
        .expect("run-end integers");
    let (dense, sparse, text): (ArrayRef, ArrayRef, ArrayRef) =
        (Arc::new(dense), Arc::new(sparse), Arc::new(text));
    vec![
        dense.clone(),
        dense.slice(11, 200),
        sparse.slice(5, 250),
        text.slice(7, 200),
        Arc::new(ints),
    ]
}

/// Column containers of every array under every codec.
pub fn containers(arrays: &[ArrayRef]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for array in arrays {
        for codec in CODECS {
            let codec: CodecChoice = codec.parse().expect("codec");
            let field = Field::new("c", array.data_type().clone(), true)
                .with_metadata([("k".to_string(), "v".to_string())].into());
            let column = column::compress_field(&field, array.as_ref(), &codec).expect("compress");
            out.push(column.to_bytes().expect("container"));
        }
    }
    out
}

/// A seed archive and what it decodes to.
pub struct Archive {
    pub bytes: Vec<u8>,
    pub source: Source,
    pub batches: Vec<RecordBatch>,
    pub trailing_newline: bool,
}

fn archive(source: Source, batches: Vec<RecordBatch>, codec: &str, trailing: bool) -> Archive {
    let schema = match source {
        Source::Raw(raw) => raw.schema(),
        _ => batches[0].schema(),
    };
    let mut writer = ArchiveWriter::new(Vec::new(), schema, source).expect("writer");
    let codec: CodecChoice = codec.parse().expect("codec");
    for batch in &batches {
        writer.write_batch(batch, &codec).expect("batch");
    }
    Archive {
        bytes: writer.finish(trailing).expect("finish"),
        source,
        batches,
        trailing_newline: trailing,
    }
}

/// Archives of raw, Arrow IPC and Parquet sources, with zero, one and several batches.
pub fn archives() -> Vec<Archive> {
    let raw_batch = |raw: RawType, array: ArrayRef| {
        RecordBatch::try_new(raw.schema(), vec![array]).expect("raw batch")
    };
    let ints = |from: i32| -> ArrayRef { Arc::new(Int32Array::from_iter_values(from..from + 500)) };
    let lines = |n: usize| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(
            (0..n).map(|i| format!("line {}", i % 17)),
        ))
    };
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, true),
        Field::new("name", DataType::Utf8, false),
        Field::new("x", DataType::Float64, true),
    ]));
    let table = |from: i64| {
        RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(Int64Array::from_iter(
                    (from..from + 200).map(|i| (i % 9 != 0).then_some(i / 3)),
                )),
                Arc::new(StringArray::from_iter_values(
                    (from..from + 200).map(|i| format!("n{}", i % 11)),
                )),
                fixed(DataType::Float64, 8).slice(0, 200),
            ],
        )
        .expect("table batch")
    };
    let mut out = Vec::new();
    for (i, codec) in CODECS.into_iter().enumerate() {
        out.push(archive(
            Source::Raw(RawType::Int32),
            vec![
                raw_batch(RawType::Int32, ints(0)),
                raw_batch(RawType::Int32, ints(500)),
            ],
            codec,
            false,
        ));
        out.push(archive(
            Source::Raw(RawType::Utf8Lines),
            vec![raw_batch(RawType::Utf8Lines, lines(100 + i))],
            codec,
            i % 2 == 0,
        ));
        out.push(archive(
            if i % 2 == 0 {
                Source::ArrowIpc
            } else {
                Source::Parquet
            },
            vec![table(0), table(200), table(400)],
            codec,
            false,
        ));
    }
    out.push(archive(
        Source::Raw(RawType::Bytes),
        vec![raw_batch(
            RawType::Bytes,
            Arc::new(UInt8Array::from(Vec::<u8>::new())),
        )],
        "auto",
        false,
    ));
    let empty = ArchiveWriter::new(Vec::new(), schema.clone(), Source::ArrowIpc).expect("writer");
    out.push(Archive {
        bytes: empty.finish(false).expect("finish"),
        source: Source::ArrowIpc,
        batches: Vec::new(),
        trailing_newline: false,
    });
    out
}

/// Parquet files written by colzip (gmatch SNAPPY pages), with small row groups and
/// pages so that a file has several of each; data page v1 and v2.
#[cfg(feature = "parquet")]
pub fn parquet_files() -> Vec<(Vec<u8>, Vec<RecordBatch>)> {
    use colzip::codec::Placement;
    use colzip::parquet::write::{DataPageVersion, WriteOptions, write_batches};
    let schema = Arc::new(Schema::new(vec![
        Field::new("n", DataType::Int32, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("b", DataType::Binary, false),
        Field::new("f", DataType::Float64, true),
    ]));
    let words = words();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int32Array::from_iter(
                (0..ROWS as i32).map(|i| (i % 7 != 0).then_some(i / 5)),
            )),
            Arc::new(StringArray::from(
                words.iter().map(|w| w.as_deref()).collect::<Vec<_>>(),
            )),
            Arc::new(BinaryArray::from_iter_values(
                (0..ROWS).map(|i| bytes(i % 23, i as u64)),
            )),
            fixed(DataType::Float64, 8),
        ],
    )
    .expect("parquet batch");
    let mut out = Vec::new();
    for version in [DataPageVersion::V1, DataPageVersion::V2] {
        for rows in [ROWS, 64] {
            let options = WriteOptions::default()
                .with_placement(Placement::CPU)
                .with_row_group_size(rows)
                .with_data_page_size(256)
                .with_data_page_version(version)
                .with_parallel_row_groups(1);
            let mut file = Vec::new();
            write_batches(&mut file, schema.clone(), [batch.clone()], &options)
                .expect("parquet file");
            out.push((file, vec![batch.clone()]));
        }
    }
    out
}
