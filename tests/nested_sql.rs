//! A CompressedTable with nested columns (List, Struct, Map, FixedSizeList, unions,
//! run-end encoded) answers queries as a MemTable of the same batches does, and colzip's
//! SQL functions take nested columns.
#![cfg(feature = "datafusion")]

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, DictionaryArray, FixedSizeListBuilder, Float64Array, Float64Builder,
    Int8Array, Int32Array, Int64Array, Int64Builder, ListBuilder, MapBuilder, NullArray,
    RecordBatch, RunArray, StringArray, StringBuilder, StructArray, UnionArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Fields, Int8Type, Int32Type, UnionFields};
use colzip::column::{self, CodecChoice};
use colzip::datafusion::table::{CompressOptions, CompressedTable};
use datafusion::datasource::MemTable;
use datafusion::prelude::{SessionConfig, SessionContext};

const ROWS: usize = 2400;

fn nested_batch() -> RecordBatch {
    let words = ["red", "green", "blue", "", "violet"];
    let mut tags = ListBuilder::new(StringBuilder::new());
    let mut props = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    let mut pair = FixedSizeListBuilder::new(Float64Builder::new(), 2);
    for i in 0..ROWS {
        if i % 7 == 3 {
            tags.append_null();
        } else {
            for k in 0..i % 4 {
                if (i + k) % 9 == 0 {
                    tags.values().append_null();
                } else {
                    tags.values().append_value(words[(i + k) % words.len()]);
                }
            }
            tags.append(true);
        }
        for k in 0..i % 3 {
            props.keys().append_value(format!("k{}", (i + k) % 5));
            if k == 1 && i % 2 == 0 {
                props.values().append_null();
            } else {
                props.values().append_value((i * k) as i64);
            }
        }
        props.append(i % 11 != 5).unwrap();
        pair.values().append_value(i as f64 / 4.0);
        if i % 13 == 1 {
            pair.values().append_null();
        } else {
            pair.values().append_value(-(i as f64));
        }
        pair.append(i % 10 != 9);
    }
    let point = StructArray::try_new(
        Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("label", DataType::Utf8, false),
        ]),
        vec![
            Arc::new(Int32Array::from_iter(
                (0..ROWS).map(|i| (i % 5 != 0).then_some((i % 50) as i32)),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..ROWS).map(|i| format!("p{}", i % 30)),
            )),
        ],
        Some(NullBuffer::from(
            (0..ROWS).map(|i| i % 8 != 6).collect::<Vec<_>>(),
        )),
    )
    .unwrap();
    RecordBatch::try_from_iter([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..ROWS as i64)) as ArrayRef,
        ),
        ("tags", Arc::new(tags.finish()) as ArrayRef),
        ("point", Arc::new(point) as ArrayRef),
        ("props", Arc::new(props.finish()) as ArrayRef),
        ("pair", Arc::new(pair.finish()) as ArrayRef),
    ])
    .unwrap()
}

/// The batch sliced into uneven pieces: every nested column arrives sliced.
fn pieces(batch: &RecordBatch) -> Vec<RecordBatch> {
    let cuts = [0, 333, 1000, 1001, 2000, ROWS];
    cuts.windows(2)
        .map(|w| batch.slice(w[0], w[1] - w[0]))
        .collect()
}

/// The batch as a CompressedTable and as a MemTable, each in a session of
/// `target_partitions` (1: aggregates see the rows in table order).
fn contexts(target_partitions: usize) -> (SessionContext, SessionContext) {
    let batch = nested_batch();
    let schema = batch.schema();
    let config = || SessionConfig::new().with_target_partitions(target_partitions);
    let compressed = SessionContext::new_with_config(config());
    let table = CompressedTable::try_new(
        schema.clone(),
        vec![pieces(&batch)],
        &CompressOptions::default(),
    )
    .unwrap();
    assert!(table.compressed_bytes() < table.plain_bytes());
    compressed.register_table("t", Arc::new(table)).unwrap();
    colzip::datafusion::register(&compressed).unwrap();
    let memory = SessionContext::new_with_config(config());
    let mem = MemTable::try_new(schema, vec![pieces(&batch)]).unwrap();
    memory.register_table("t", Arc::new(mem)).unwrap();
    colzip::datafusion::register(&memory).unwrap();
    (compressed, memory)
}

async fn query(ctx: &SessionContext, sql: &str) -> RecordBatch {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let schema = batches[0].schema();
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

#[tokio::test]
async fn compressed_table_with_nested_columns_answers_like_a_memtable() {
    let (compressed, memory) = contexts(4);
    for sql in [
        "SELECT * FROM t ORDER BY id",
        "SELECT id, tags, props FROM t WHERE id BETWEEN 300 AND 1200 ORDER BY id",
        "SELECT id, point['x'] AS x, point['label'] AS label, cardinality(tags) AS n \
         FROM t WHERE point['x'] > 20 ORDER BY id",
        "SELECT point['label'] AS label, count(*) AS c, sum(cardinality(tags)) AS tags \
         FROM t GROUP BY point['label'] ORDER BY label",
        "SELECT id, pair FROM t WHERE pair IS NULL OR id % 100 = 0 ORDER BY id",
    ] {
        let got = query(&compressed, sql).await;
        let want = query(&memory, sql).await;
        assert!(want.num_rows() > 0, "{sql}");
        assert_eq!(got, want, "{sql}");
    }
}

#[tokio::test]
async fn sql_functions_take_nested_columns() {
    let (ctx, _) = contexts(1);
    let batch = nested_batch();
    for name in ["tags", "point", "props", "pair"] {
        let column = batch.column_by_name(name).unwrap();
        let direct = column::compress(column.as_ref(), &"lzss".parse::<CodecChoice>().unwrap())
            .unwrap()
            .compressed_bytes() as u64;
        // One partition, so the aggregate sees the column in table order: exactly what
        // the column layer gives for the whole column.
        let sizes = query(
            &ctx,
            &format!("SELECT colzip_compressed_size({name}, 'lzss') AS s FROM t"),
        )
        .await;
        let size = sizes
            .column(0)
            .as_primitive::<arrow::datatypes::UInt64Type>()
            .value(0);
        assert_eq!(size, direct, "{name}");

        let back = query(
            &ctx,
            &format!(
                "SELECT {name} AS v, colzip_decompress(colzip_compress({name}, 'auto')) AS back \
                 FROM t ORDER BY id"
            ),
        )
        .await;
        assert_eq!(
            back.column(1).data_type(),
            back.column(0).data_type(),
            "{name}"
        );
        assert_eq!(back.column(1).as_ref(), back.column(0).as_ref(), "{name}");
        assert_eq!(back.num_rows(), ROWS);
    }
}

#[test]
fn nested_columns_are_compressed_part_by_part() {
    let batch = nested_batch();
    let table = CompressedTable::try_new(
        batch.schema(),
        vec![pieces(&batch)],
        &CompressOptions::default(),
    )
    .unwrap();
    // Every column holds some compressed bytes and names its codecs.
    let codecs = table.column_codecs();
    assert_eq!(codecs.len(), batch.num_columns());
    assert!(codecs.iter().all(|c| !c.is_empty()), "{codecs:?}");
    assert!(table.column_compressed_bytes().iter().all(|&b| b > 0));
}

/// Unions (dense and sparse, type ids 5/2/9) and run-end encoded strings, nulls in their
/// children and values.
fn union_and_run_batch() -> RecordBatch {
    let fields = UnionFields::try_new(
        [5, 2, 9],
        [
            Field::new("n", DataType::Int64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("f", DataType::Float64, true),
        ],
    )
    .unwrap();
    let type_ids: Vec<i8> = (0..ROWS).map(|i| [5, 2, 9][i * 7 % 3]).collect();
    let numbers = |n: usize| -> ArrayRef {
        Arc::new(Int64Array::from_iter(
            (0..n as i64).map(|i| (i % 11 != 4).then_some(i * 3)),
        ))
    };
    let strings = |n: usize| -> ArrayRef {
        Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 13 != 6).then(|| format!("s{}", i % 40))),
        ))
    };
    let floats = |n: usize| -> ArrayRef {
        Arc::new(Float64Array::from_iter(
            (0..n).map(|i| (i % 9 != 2).then_some(i as f64 / 8.0)),
        ))
    };
    let mut counts = [0usize; 10];
    let offsets: Vec<i32> = type_ids
        .iter()
        .map(|&id| {
            counts[id as usize] += 1;
            counts[id as usize] as i32 - 1
        })
        .collect();
    let dense = UnionArray::try_new(
        fields.clone(),
        type_ids.clone().into(),
        Some(offsets.into()),
        vec![numbers(counts[5]), strings(counts[2]), floats(counts[9])],
    )
    .unwrap();
    let sparse = UnionArray::try_new(
        fields,
        type_ids.into(),
        None,
        vec![numbers(ROWS), strings(ROWS), floats(ROWS)],
    )
    .unwrap();
    let mut ends = Vec::new();
    let mut end = 0;
    while end < ROWS {
        end = (end + 1 + ends.len() % 5).min(ROWS);
        ends.push(end as i32);
    }
    let run_values = StringArray::from_iter(
        (0..ends.len()).map(|i| (i % 6 != 1).then(|| ["red", "green", "blue"][i % 3])),
    );
    let runs = RunArray::<Int32Type>::try_new(&ends.into(), &run_values).unwrap();
    let dictionary = DictionaryArray::<Int8Type>::try_new(
        Int8Array::from_iter((0..ROWS).map(|i| (i % 17 != 5).then_some((i % 4) as i8))),
        Arc::new(StringArray::from(vec![
            Some("a"),
            None,
            Some("c"),
            Some("d"),
        ])),
    )
    .unwrap();
    // Nullable: their nulls are their children's, which `null_count` does not see.
    RecordBatch::try_from_iter_with_nullable([
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..ROWS as i64)) as ArrayRef,
            false,
        ),
        ("u", Arc::new(dense) as ArrayRef, true),
        ("su", Arc::new(sparse) as ArrayRef, true),
        ("r", Arc::new(runs) as ArrayRef, true),
        // The same holds for a dictionary whose values have nulls, and a Null column.
        ("d", Arc::new(dictionary) as ArrayRef, true),
        ("z", Arc::new(NullArray::new(ROWS)) as ArrayRef, true),
    ])
    .unwrap()
}

#[tokio::test]
async fn compressed_table_with_union_and_run_end_columns_answers_like_a_memtable() {
    let batch = union_and_run_batch();
    let schema = batch.schema();
    let compressed = SessionContext::new();
    let table = CompressedTable::try_new(
        schema.clone(),
        vec![pieces(&batch)],
        &CompressOptions::default(),
    )
    .unwrap();
    // Null counts: exact where the validity is all there is to it (id), the row count
    // for the Null column, unknown for the rest.
    let nulls: Vec<_> = datafusion::datasource::TableProvider::statistics(&table)
        .unwrap()
        .column_statistics
        .into_iter()
        .map(|c| c.null_count)
        .collect();
    use datafusion::common::stats::Precision::{Absent, Exact};
    assert_eq!(
        nulls,
        [Exact(0), Absent, Absent, Absent, Absent, Exact(ROWS)]
    );
    compressed.register_table("t", Arc::new(table)).unwrap();
    colzip::datafusion::register(&compressed).unwrap();
    let memory = SessionContext::new();
    let mem = MemTable::try_new(schema, vec![pieces(&batch)]).unwrap();
    memory.register_table("t", Arc::new(mem)).unwrap();
    for sql in [
        "SELECT * FROM t ORDER BY id",
        "SELECT id, u, r FROM t WHERE id BETWEEN 300 AND 1200 ORDER BY id",
        // Their nulls are in their children (a dictionary's also in its values, a Null
        // column's in none): the scan's null counts must not prune blocks that hold
        // some, nor answer count(column) from the validity alone.
        "SELECT count(*) AS n FROM t WHERE r IS NULL",
        "SELECT count(*) AS n FROM t WHERE u IS NULL AND id < 1000",
        "SELECT count(*) AS n FROM t WHERE su IS NOT NULL",
        "SELECT count(*) AS n FROM t WHERE d IS NULL",
        "SELECT count(*) AS n FROM t WHERE z IS NULL",
        "SELECT count(r) AS r, count(u) AS u, count(d) AS d, count(z) AS z FROM t",
    ] {
        let got = query(&compressed, sql).await;
        let want = query(&memory, sql).await;
        assert!(want.num_rows() > 0, "{sql}");
        assert_eq!(got, want, "{sql}");
    }
    for name in ["u", "su", "r"] {
        let back = query(
            &compressed,
            &format!(
                "SELECT {name} AS v, colzip_decompress(colzip_compress({name}, 'auto')) AS back \
                 FROM t ORDER BY id"
            ),
        )
        .await;
        assert_eq!(back.column(1).as_ref(), back.column(0).as_ref(), "{name}");
    }
}
