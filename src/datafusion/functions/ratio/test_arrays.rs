//! Arrays of every type colzip's aggregates take, with nulls where the type has them, for
//! the tests of the chunks and of the row sizes.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BinaryArray, BinaryViewArray, BooleanArray, Date32Array, Decimal128Array,
    DictionaryArray, FixedSizeBinaryArray, FixedSizeListArray, Float64Array, Int32Array,
    Int32Builder, Int64Array, LargeBinaryArray, LargeListArray, LargeStringArray, ListArray,
    ListViewArray, MapBuilder, NullArray, RunArray, StringArray, StringBuilder, StringViewArray,
    StructArray, TimestampMicrosecondArray, UnionArray,
};
use arrow::buffer::ScalarBuffer;
use arrow::datatypes::{DataType, Field, Int32Type, UnionFields};

/// Text of row `i`: a few words, NULL every 7th row.
pub(super) fn text(i: usize) -> Option<String> {
    let words = [
        "furiously",
        "final",
        "deposits",
        "",
        "sleep",
        "ironic",
        "über",
    ];
    (i % 7 != 3).then(|| {
        (0..i % 5)
            .map(|k| words[(i * 31 + k * 7) % words.len()])
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn ints(rows: usize) -> impl Iterator<Item = Option<i32>> {
    (0..rows).map(|i| (i % 11 != 5).then_some((i / 3 % 50) as i32))
}

fn int_lists(rows: usize) -> impl Iterator<Item = Option<Vec<Option<i32>>>> {
    (0..rows).map(|i| {
        (i % 13 != 2).then(|| {
            (0..i % 4)
                .map(|k| (k != 2).then_some((i + k) as i32 % 9))
                .collect()
        })
    })
}

/// `(name, array)` of `rows` rows for every type the aggregates take.
pub(super) fn every_type(rows: usize) -> Vec<(&'static str, ArrayRef)> {
    let texts: Vec<Option<String>> = (0..rows).map(text).collect();
    let bytes = || texts.iter().map(|t| t.as_deref().map(str::as_bytes));
    let list = ListArray::from_iter_primitive::<Int32Type, _, _>(int_lists(rows));
    let strings: ArrayRef = Arc::new(StringArray::from_iter(texts.iter().cloned()));
    let numbers: ArrayRef = Arc::new(Int32Array::from_iter(ints(rows)));

    let mut map = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
    for i in 0..rows {
        for k in 0..i % 3 {
            map.keys().append_value(["a", "bb", "ccc"][k]);
            map.values().append_value((i * k) as i32);
        }
        map.append(i % 10 != 9).unwrap();
    }

    let runs = rows.div_ceil(5);
    let run_ends = Int32Array::from_iter_values((1..=runs).map(|r| (r * 5).min(rows) as i32));
    let run_values = StringArray::from_iter((0..runs).map(text));

    let union_fields = UnionFields::try_new(
        [0, 1],
        [
            Field::new("n", DataType::Int32, true),
            Field::new("s", DataType::Utf8, true),
        ],
    )
    .unwrap();
    let type_ids: ScalarBuffer<i8> = (0..rows).map(|i| (i % 3 == 0) as i8).collect();
    let sparse = UnionArray::try_new(
        union_fields.clone(),
        type_ids.clone(),
        None,
        vec![Arc::clone(&numbers), Arc::clone(&strings)],
    )
    .unwrap();
    let (mut counts, mut offsets) = ([0i32; 2], Vec::with_capacity(rows));
    for &id in type_ids.iter() {
        offsets.push(counts[id as usize]);
        counts[id as usize] += 1;
    }
    let dense = UnionArray::try_new(
        union_fields,
        type_ids,
        Some(offsets.into()),
        vec![
            Arc::new(Int32Array::from_iter(ints(counts[0] as usize))),
            Arc::new(StringArray::from_iter((0..counts[1] as usize).map(text))),
        ],
    )
    .unwrap();

    vec![
        ("null", Arc::new(NullArray::new(rows)) as ArrayRef),
        (
            "boolean",
            Arc::new(BooleanArray::from_iter(
                (0..rows).map(|i| (i % 9 != 1).then_some(i % 3 == 0)),
            )),
        ),
        ("int32", Arc::clone(&numbers)),
        (
            "int64",
            Arc::new(Int64Array::from_iter_values(
                (0..rows).map(|i| (i / 4) as i64 * 1000),
            )),
        ),
        (
            "float64",
            Arc::new(Float64Array::from_iter_values(
                (0..rows).map(|i| (i % 100) as f64 / 4.0),
            )),
        ),
        (
            "decimal128",
            Arc::new(
                Decimal128Array::from_iter((0..rows).map(|i| (i % 17 != 0).then_some(i as i128)))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            ),
        ),
        (
            "date32",
            Arc::new(Date32Array::from_iter_values(
                (0..rows).map(|i| 10_000 + (i / 10) as i32),
            )),
        ),
        (
            "timestamp",
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                (0..rows).map(|i| i as i64 * 1_000_000),
            )),
        ),
        (
            "fixed_size_binary",
            Arc::new(
                FixedSizeBinaryArray::try_from_sparse_iter_with_size(
                    (0..rows).map(|i| (i % 6 != 0).then_some([(i % 4) as u8; 3])),
                    3,
                )
                .unwrap(),
            ),
        ),
        ("utf8", Arc::clone(&strings)),
        (
            "large_utf8",
            Arc::new(LargeStringArray::from_iter(texts.iter().cloned())),
        ),
        (
            "utf8_view",
            Arc::new(StringViewArray::from_iter(texts.iter().cloned())),
        ),
        ("binary", Arc::new(BinaryArray::from_iter(bytes()))),
        (
            "large_binary",
            Arc::new(LargeBinaryArray::from_iter(bytes())),
        ),
        ("binary_view", Arc::new(BinaryViewArray::from_iter(bytes()))),
        ("list", Arc::new(list.clone())),
        (
            "large_list",
            Arc::new(LargeListArray::from_iter_primitive::<Int32Type, _, _>(
                int_lists(rows),
            )),
        ),
        ("list_view", Arc::new(ListViewArray::from(list))),
        (
            "fixed_size_list",
            Arc::new(FixedSizeListArray::from_iter_primitive::<Int32Type, _, _>(
                (0..rows).map(|i| (i % 8 != 7).then(|| vec![Some(i as i32 % 5); 2])),
                2,
            )),
        ),
        (
            "struct",
            Arc::new(StructArray::from(vec![
                (
                    Arc::new(Field::new("n", DataType::Int32, true)),
                    Arc::clone(&numbers),
                ),
                (
                    Arc::new(Field::new("s", DataType::Utf8, true)),
                    Arc::clone(&strings),
                ),
            ])),
        ),
        ("map", Arc::new(map.finish())),
        (
            "dictionary",
            Arc::new(
                texts
                    .iter()
                    .map(|t| t.as_deref())
                    .collect::<DictionaryArray<Int32Type>>(),
            ),
        ),
        (
            "run_end_encoded",
            Arc::new(RunArray::<Int32Type>::try_new(&run_ends, &run_values).unwrap()),
        ),
        ("sparse_union", Arc::new(sparse)),
        ("dense_union", Arc::new(dense)),
    ]
}
