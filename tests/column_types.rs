//! Every Arrow type the column layer supports round-trips to an equal array under every
//! codec, with nulls, slices (non-zero offsets), empty and all-null arrays.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayData, ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, DictionaryArray,
    FixedSizeBinaryArray, Int16Array, Int32Array, Int64Array, LargeBinaryArray, LargeStringArray,
    RunArray, StringArray, StringViewArray, UnionArray, make_array, new_null_array,
};
use arrow::buffer::{Buffer, NullBuffer};
use arrow::datatypes::{
    DataType, Field, Int8Type, Int16Type, Int32Type, IntervalUnit, TimeUnit, UInt16Type,
    UnionFields,
};
use colzip::column::{self, CodecChoice, CompressedColumn};

const ROWS: usize = 3000;

/// Deterministic pseudo-random bytes (xorshift), repetitive enough to compress.
fn bytes(n: usize, seed: u64) -> Vec<u8> {
    let mut state = seed | 1;
    (0..n)
        .map(|i| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            if i % 7 < 3 {
                (state % 4) as u8
            } else {
                (state >> 8) as u8
            }
        })
        .collect()
}

fn nulls(n: usize) -> NullBuffer {
    NullBuffer::from((0..n).map(|i| i % 5 != 2).collect::<Vec<_>>())
}

/// A fixed-width array of `data_type` with `width`-byte values made by `value(i)`.
fn fixed(data_type: DataType, width: usize, with_nulls: bool) -> ArrayRef {
    let raw = bytes(ROWS * width, width as u64 + 7);
    let data = ArrayData::builder(data_type)
        .len(ROWS)
        .add_buffer(Buffer::from_vec(raw))
        .nulls(with_nulls.then(|| nulls(ROWS)))
        .build()
        .unwrap();
    make_array(data)
}

fn decimal(data_type: DataType, width: usize, magnitude: i128) -> ArrayRef {
    let mut raw = Vec::with_capacity(ROWS * width);
    for i in 0..ROWS as i128 {
        let v = (i * 7919 % 100_003 - 50_000) * magnitude;
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
        .unwrap();
    make_array(data)
}

fn words(i: usize) -> Option<String> {
    if i % 9 == 4 {
        return None;
    }
    let vocab = [
        "furiously",
        "final",
        "deposits",
        "",
        "sleep",
        "quickly",
        "ironic",
        "packages",
        "über",
    ];
    Some(
        (0..i % 6)
            .map(|k| vocab[(i * 31 + k * 7) % vocab.len()])
            .collect::<Vec<_>>()
            .join(" "),
    )
}

fn all_arrays() -> Vec<(String, ArrayRef)> {
    let mut arrays: Vec<(String, ArrayRef)> = Vec::new();
    let fixed_types = [
        (DataType::Int8, 1),
        (DataType::Int16, 2),
        (DataType::Int32, 4),
        (DataType::Int64, 8),
        (DataType::UInt8, 1),
        (DataType::UInt16, 2),
        (DataType::UInt32, 4),
        (DataType::UInt64, 8),
        (DataType::Float16, 2),
        (DataType::Float32, 4),
        (DataType::Float64, 8),
        (DataType::Date32, 4),
        (DataType::Date64, 8),
        (DataType::Time32(TimeUnit::Second), 4),
        (DataType::Time32(TimeUnit::Millisecond), 4),
        (DataType::Time64(TimeUnit::Microsecond), 8),
        (DataType::Time64(TimeUnit::Nanosecond), 8),
        (DataType::Timestamp(TimeUnit::Second, None), 8),
        (
            DataType::Timestamp(TimeUnit::Millisecond, Some("+02:00".into())),
            8,
        ),
        (
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            8,
        ),
        (DataType::Timestamp(TimeUnit::Nanosecond, None), 8),
        (DataType::Duration(TimeUnit::Second), 8),
        (DataType::Duration(TimeUnit::Nanosecond), 8),
        (DataType::Interval(IntervalUnit::YearMonth), 4),
        (DataType::Interval(IntervalUnit::DayTime), 8),
        (DataType::Interval(IntervalUnit::MonthDayNano), 16),
    ];
    for (data_type, width) in fixed_types {
        arrays.push((
            format!("{data_type}"),
            fixed(data_type.clone(), width, false),
        ));
        arrays.push((
            format!("{data_type} with nulls"),
            fixed(data_type, width, true),
        ));
    }
    arrays.push(("Decimal32".into(), decimal(DataType::Decimal32(9, 2), 4, 1)));
    arrays.push((
        "Decimal64".into(),
        decimal(DataType::Decimal64(18, 2), 8, 1),
    ));
    arrays.push((
        "Decimal128 narrow".into(),
        decimal(DataType::Decimal128(15, 2), 16, 1),
    ));
    arrays.push((
        "Decimal128 wide".into(),
        decimal(DataType::Decimal128(38, 0), 16, 1 << 70),
    ));
    arrays.push((
        "Decimal256 narrow".into(),
        decimal(DataType::Decimal256(40, 2), 32, 3),
    ));
    arrays.push((
        "Decimal256 wide".into(),
        decimal(DataType::Decimal256(76, 2), 32, 1 << 90),
    ));
    arrays.push((
        "Boolean".into(),
        Arc::new(BooleanArray::from_iter(
            (0..ROWS).map(|i| (i % 11 != 3).then_some(i % 3 == 0)),
        )),
    ));
    let text: Vec<Option<String>> = (0..ROWS).map(words).collect();
    arrays.push(("Utf8".into(), Arc::new(StringArray::from(text.clone()))));
    arrays.push((
        "LargeUtf8".into(),
        Arc::new(LargeStringArray::from(text.clone())),
    ));
    arrays.push((
        "Utf8View".into(),
        Arc::new(StringViewArray::from(text.clone())),
    ));
    let binary: Vec<Option<Vec<u8>>> = text
        .iter()
        .map(|t| t.as_ref().map(|s| s.as_bytes().to_vec()))
        .collect();
    let binary_refs: Vec<Option<&[u8]>> = binary.iter().map(|b| b.as_deref()).collect();
    arrays.push((
        "Binary".into(),
        Arc::new(BinaryArray::from(binary_refs.clone())),
    ));
    arrays.push((
        "LargeBinary".into(),
        Arc::new(LargeBinaryArray::from(binary_refs.clone())),
    ));
    arrays.push((
        "BinaryView".into(),
        Arc::new(BinaryViewArray::from(binary_refs)),
    ));
    let fsb: Vec<Option<Vec<u8>>> = (0..ROWS)
        .map(|i| (i % 4 != 1).then(|| bytes(12, i as u64 % 17)))
        .collect();
    arrays.push((
        "FixedSizeBinary(12)".into(),
        Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size(fsb.into_iter(), 12).unwrap(),
        ),
    ));
    let dict: DictionaryArray<Int32Type> = text.iter().map(|t| t.as_deref()).collect();
    arrays.push(("Dictionary(Int32, Utf8)".into(), Arc::new(dict)));
    let keys = arrow::array::UInt16Array::from_iter(
        (0..ROWS).map(|i| (i % 13 != 0).then_some((i % 40) as u16)),
    );
    let values: ArrayRef = Arc::new(Int64Array::from_iter(
        (0..40).map(|i| (i % 6 != 0).then_some(i * 1000)),
    ));
    arrays.push((
        "Dictionary(UInt16, Int64)".into(),
        Arc::new(DictionaryArray::<UInt16Type>::try_new(keys, values).unwrap()),
    ));
    let small: DictionaryArray<Int8Type> = vec!["a", "b", "a"].into_iter().collect();
    arrays.push(("Dictionary(Int8, Utf8)".into(), Arc::new(small)));
    arrays.push(("Null".into(), new_null_array(&DataType::Null, ROWS)));
    // Run-end encoded and union arrays of flat values (nested ones, and these types
    // inside others, are in tests/nested_types.rs).
    let run_ends: Vec<i32> = (1..=ROWS as i32)
        .filter(|i| i % 7 == 0 || *i == ROWS as i32)
        .collect();
    let run_values =
        Int64Array::from_iter((0..run_ends.len() as i64).map(|i| (i % 5 != 1).then_some(i / 3)));
    arrays.push((
        "RunEndEncoded(Int32, Int64)".into(),
        Arc::new(
            RunArray::<Int32Type>::try_new(&Int32Array::from(run_ends.clone()), &run_values)
                .unwrap(),
        ),
    ));
    let short_ends: Vec<i16> = run_ends.iter().map(|&e| e as i16).collect();
    let run_text: StringArray = (0..short_ends.len()).map(words).collect();
    arrays.push((
        "RunEndEncoded(Int16, Utf8)".into(),
        Arc::new(RunArray::<Int16Type>::try_new(&Int16Array::from(short_ends), &run_text).unwrap()),
    ));
    let union_fields = UnionFields::try_new(
        [5, 2, 9],
        [
            Field::new("i", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("b", DataType::Boolean, true),
        ],
    )
    .unwrap();
    let type_ids: Vec<i8> = (0..ROWS).map(|i| [5, 2, 9, 5][i % 4]).collect();
    let numbers: ArrayRef = Arc::new(Int64Array::from_iter(
        (0..ROWS as i64).map(|i| (i % 6 != 0).then_some(i * 3)),
    ));
    let strings: ArrayRef = Arc::new(StringArray::from_iter((0..ROWS).map(words)));
    let flags: ArrayRef = Arc::new(BooleanArray::from_iter(
        (0..ROWS).map(|i| (i % 10 != 4).then_some(i % 3 == 0)),
    ));
    arrays.push((
        "Union(Sparse)".into(),
        Arc::new(
            UnionArray::try_new(
                union_fields.clone(),
                type_ids.clone().into(),
                None,
                vec![numbers.clone(), strings.clone(), flags.clone()],
            )
            .unwrap(),
        ),
    ));
    // Dense: each type id's rows in order in its child.
    let mut counts = [0i32; 10];
    let offsets: Vec<i32> = type_ids
        .iter()
        .map(|&id| {
            counts[id as usize] += 1;
            counts[id as usize] - 1
        })
        .collect();
    arrays.push((
        "Union(Dense)".into(),
        Arc::new(
            UnionArray::try_new(
                union_fields,
                type_ids.into(),
                Some(offsets.into()),
                vec![
                    numbers.slice(0, counts[5] as usize),
                    strings.slice(0, counts[2] as usize),
                    flags.slice(0, counts[9] as usize),
                ],
            )
            .unwrap(),
        ),
    ));
    arrays
}

fn codecs() -> Vec<CodecChoice> {
    [
        "auto",
        "lzss",
        "lzss:s=1,w=32",
        "lzss:s=8,w=255,c=16384",
        "gmatch",
        "gmatch:framed",
        "bwt:block=64k",
        "intpack",
        "intpack:w=1",
        "stored",
    ]
    .iter()
    .map(|s| s.parse().unwrap())
    .collect()
}

fn assert_round_trip(name: &str, array: &ArrayRef, codec: &CodecChoice) {
    let field = Field::new("col", array.data_type().clone(), true)
        .with_metadata(HashMap::from([("origin".to_string(), "test".to_string())]));
    let compressed = column::compress_field(&field, array.as_ref(), codec).unwrap();
    let bytes = compressed.to_bytes().unwrap();
    let parsed = CompressedColumn::from_bytes(&bytes).unwrap();
    assert_eq!(parsed, compressed, "{name} / {codec}: container");
    assert_eq!(parsed.field(), &field);
    let back = column::decompress(&parsed).unwrap();
    assert_eq!(back.data_type(), array.data_type(), "{name} / {codec}");
    assert_eq!(back.as_ref(), array.as_ref(), "{name} / {codec}");
    assert_eq!(back.null_count(), array.null_count(), "{name} / {codec}");
}

#[test]
fn every_type_round_trips_with_every_codec() {
    for (name, array) in all_arrays() {
        for codec in codecs() {
            assert_round_trip(&name, &array, &codec);
        }
    }
}

#[test]
fn slices_round_trip() {
    for (name, array) in all_arrays() {
        let n = array.len();
        for (offset, len) in [(1, n - 1), (n / 4, n / 3), (n - 3, 3), (n / 2, 0)] {
            let sliced = array.slice(offset, len);
            assert_round_trip(
                &format!("{name}[{offset}..+{len}]"),
                &sliced,
                &CodecChoice::Auto,
            );
        }
    }
}

#[test]
fn empty_and_all_null_arrays_round_trip() {
    for (name, array) in all_arrays() {
        let empty = array.slice(0, 0);
        assert_round_trip(&format!("empty {name}"), &empty, &"lzss".parse().unwrap());
        if !matches!(array.data_type(), DataType::Null) {
            let all_null = new_null_array(array.data_type(), 100);
            assert_round_trip(
                &format!("all-null {name}"),
                &all_null,
                &"gmatch".parse().unwrap(),
            );
        }
    }
}

#[test]
fn decimals_are_stored_narrow() {
    let array = decimal(DataType::Decimal128(15, 2), 16, 1);
    let compressed = column::compress(array.as_ref(), &"stored".parse().unwrap()).unwrap();
    let values = compressed
        .root()
        .parts
        .iter()
        .find(|p| p.role == column::PartRole::Values)
        .unwrap();
    assert_eq!(values.width, 4);
    assert_eq!(values.raw_len, ROWS * 4);
}

#[test]
fn never_much_larger_than_the_plain_parts() {
    let random: ArrayRef = Arc::new(arrow::array::UInt8Array::from(
        (0..100_000u64)
            .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
            .collect::<Vec<_>>(),
    ));
    for codec in codecs() {
        let compressed = column::compress(random.as_ref(), &codec).unwrap();
        let container = compressed.to_bytes().unwrap().len();
        assert!(container <= 100_000 + 64, "{codec}: {container} bytes");
    }
}
