//! colzip's SQL functions against the column layer on the same values: aggregates (whole
//! table, GROUP BY, partial states merged; in chunks and whole), per-value
//! compress/decompress, colzip_stats, and the planning errors.
#![cfg(feature = "datafusion")]

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BinaryArray, BooleanArray, Decimal128Array, Float64Array, Int32Array,
    Int64Array, RecordBatch, StringArray, StringViewArray, UInt64Array,
};
use arrow::compute::filter;
use arrow::datatypes::{DataType, Schema};
use colzip::column::{self, CodecChoice, CompressedColumn};
use colzip::datafusion::functions::blob_type;
use colzip::harness::columns::{self, arrow_bytes};
use colzip::reporting::ReportRow;
use colzip::tpch::{self, Table};
use datafusion::common::DataFusionError;
use datafusion::datasource::MemTable;
use datafusion::execution::FunctionRegistry;
use datafusion::prelude::{SessionConfig, SessionContext, col};

const ROWS: usize = 3000;

/// A deterministic table: group key, text with repeats and nulls, ints, decimals,
/// binary and string views; 3 batches per partition.
fn table_columns() -> Vec<(&'static str, ArrayRef)> {
    let words = [
        "carefully",
        "final",
        "deposits",
        "sleep",
        "quickly",
        "ironic",
    ];
    let text = (0..ROWS).map(|i| {
        (i % 11 != 3).then(|| {
            (0..(i % 5 + 1))
                .map(|k| words[(i * 7 + k * 3) % words.len()])
                .collect::<Vec<_>>()
                .join(" ")
        })
    });
    let group = (0..ROWS).map(|i| ["A", "N", "R", "Z"][(i * i / 7) % 4]);
    // Group Z's `maybe` values are all NULL.
    let maybe =
        (0..ROWS).map(|i| (["A", "N", "R", "Z"][(i * i / 7) % 4] != "Z").then_some(i as i32 / 3));
    let ints = (0..ROWS).map(|i| (i % 13 != 0).then_some((i / 4) as i64 * 1000 + (i % 3) as i64));
    let money = Decimal128Array::from_iter(
        (0..ROWS).map(|i| (i % 17 != 0).then_some((i as i128 % 400) * 25 + 90_000)),
    )
    .with_precision_and_scale(15, 2)
    .unwrap();
    let bytes = (0..ROWS).map(|i| (i % 9 != 4).then(|| vec![(i % 251) as u8; i % 40]));
    let view = StringViewArray::from_iter(
        (0..ROWS).map(|i| Some(format!("item number {} of the shipment", i % 97))),
    );
    vec![
        (
            "g",
            Arc::new(StringArray::from_iter_values(group)) as ArrayRef,
        ),
        ("text", Arc::new(StringArray::from_iter(text))),
        ("maybe", Arc::new(Int32Array::from_iter(maybe))),
        ("i", Arc::new(Int64Array::from_iter(ints))),
        ("money", Arc::new(money)),
        ("bin", Arc::new(BinaryArray::from_iter(bytes))),
        ("view", Arc::new(view)),
    ]
}

/// The whole table as one batch (what the expected values are computed on).
fn whole_batch() -> RecordBatch {
    RecordBatch::try_from_iter(table_columns()).unwrap()
}

/// `batch` split into `partitions` partitions of 3 batches each, in row order.
fn split(batch: &RecordBatch, partitions: usize) -> Vec<Vec<RecordBatch>> {
    let pieces = partitions * 3;
    let size = batch.num_rows().div_ceil(pieces);
    let slices: Vec<RecordBatch> = (0..pieces)
        .map(|p| {
            let start = (p * size).min(batch.num_rows());
            batch.slice(start, size.min(batch.num_rows() - start))
        })
        .collect();
    slices.chunks(3).map(|c| c.to_vec()).collect()
}

/// A session with the functions and table `t` in `partitions` partitions.
fn session(partitions: usize) -> SessionContext {
    with_table(SessionContext::new(), partitions)
}

/// A session with table `t` in `partitions` partitions that aggregates each partition on
/// its own (no repartitioning before the partial aggregation, which could send a batch to
/// any partition).
fn partitioned_session(partitions: usize) -> SessionContext {
    let config = SessionConfig::new().with_target_partitions(partitions);
    with_table(SessionContext::new_with_config(config), partitions)
}

/// A session that feeds the aggregates each group's values in table order: one
/// partition, and no repartitioning before the partial aggregation.
fn ordered_session() -> SessionContext {
    with_table(ordered_context(), 1)
}

fn ordered_context() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new().with_target_partitions(1))
}

fn with_table(ctx: SessionContext, partitions: usize) -> SessionContext {
    let batch = whole_batch();
    let table = MemTable::try_new(batch.schema(), split(&batch, partitions)).unwrap();
    ctx.register_table("t", Arc::new(table)).unwrap();
    colzip::datafusion::register(&ctx).unwrap();
    ctx
}

async fn query(ctx: &SessionContext, sql: &str) -> RecordBatch {
    let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| Arc::new(Schema::empty()));
    arrow::compute::concat_batches(&schema, &batches).unwrap()
}

fn compressed(values: &ArrayRef, codec: &str) -> CompressedColumn {
    column::compress(values.as_ref(), &codec.parse::<CodecChoice>().unwrap()).unwrap()
}

fn ratio_of(c: &CompressedColumn) -> f64 {
    c.plain_bytes() as f64 / c.compressed_bytes() as f64
}

fn f64s(batch: &RecordBatch, i: usize) -> &Float64Array {
    batch.column(i).as_primitive()
}

fn u64s(batch: &RecordBatch, i: usize) -> &UInt64Array {
    batch.column(i).as_primitive()
}

const VALUE_COLUMNS: [&str; 6] = ["text", "maybe", "i", "money", "bin", "view"];

#[tokio::test]
async fn ratios_and_sizes_equal_the_column_layer() {
    let ctx = ordered_session();
    let batch = whole_batch();
    for codec in [
        "lzss",
        "gmatch",
        "bwt",
        "auto",
        "lzss:s=2,w=64",
        "gmatch:framed",
    ] {
        // Each column is less than a chunk (4 MiB): both forms compress it whole.
        let calls: Vec<String> = VALUE_COLUMNS
            .iter()
            .map(|c| {
                format!(
                    "colzip_ratio({c}, '{codec}'), colzip_compressed_size({c}, '{codec}'), \
                     colzip_ratio_exact({c}, '{codec}'), colzip_compressed_size_exact({c}, '{codec}')"
                )
            })
            .collect();
        let out = query(&ctx, &format!("SELECT {} FROM t", calls.join(", "))).await;
        assert_eq!(out.num_rows(), 1);
        for (k, name) in VALUE_COLUMNS.iter().enumerate() {
            let expected = compressed(batch.column_by_name(name).unwrap(), codec);
            for form in [0, 2] {
                assert_eq!(
                    f64s(&out, 4 * k + form).value(0),
                    ratio_of(&expected),
                    "{name} {codec} {form}"
                );
                assert_eq!(
                    u64s(&out, 4 * k + form + 1).value(0),
                    expected.compressed_bytes() as u64,
                    "{name} {codec} {form}"
                );
            }
        }
    }
}

#[tokio::test]
async fn group_by_compresses_each_group() {
    let ctx = ordered_session();
    let batch = whole_batch();
    let sql = "SELECT g, colzip_ratio(text, 'bwt'), colzip_compressed_size(i, 'lzss'), \
               colzip_ratio(maybe, 'gmatch'), colzip_compressed_size(money, 'auto') \
               FROM t GROUP BY g ORDER BY g";
    let out = query(&ctx, sql).await;
    assert_eq!(out.num_rows(), 4);
    let groups = out.column(0).as_string::<i32>();
    for row in 0..out.num_rows() {
        let g = groups.value(row);
        let keep = BooleanArray::from_iter(
            batch
                .column(0)
                .as_string::<i32>()
                .iter()
                .map(|v| Some(v == Some(g))),
        );
        let values = |name: &str| filter(batch.column_by_name(name).unwrap(), &keep).unwrap();
        assert_eq!(
            f64s(&out, 1).value(row),
            ratio_of(&compressed(&values("text"), "bwt")),
            "{g}"
        );
        assert_eq!(
            u64s(&out, 2).value(row),
            compressed(&values("i"), "lzss").compressed_bytes() as u64,
            "{g}"
        );
        // Group Z's values are all NULL: compressed like any other group (a validity part).
        let maybe = values("maybe");
        assert_eq!(maybe.null_count() == maybe.len(), g == "Z");
        assert_eq!(
            f64s(&out, 3).value(row),
            ratio_of(&compressed(&maybe, "gmatch")),
            "{g}"
        );
        assert_eq!(
            u64s(&out, 4).value(row),
            compressed(&values("money"), "auto").compressed_bytes() as u64,
            "{g}"
        );
    }
}

/// The rows of group `g` (all rows for `None`) of `column` in each partition of
/// [`split`]`(batch, partitions)`.
fn rows_per_partition(
    batch: &RecordBatch,
    partitions: usize,
    g: Option<&str>,
    column: &str,
) -> Vec<ArrayRef> {
    split(batch, partitions)
        .iter()
        .map(|batches| {
            let part = arrow::compute::concat_batches(&batch.schema(), batches).unwrap();
            let keep = BooleanArray::from_iter(
                part.column(0)
                    .as_string::<i32>()
                    .iter()
                    .map(|v| Some(g.is_none() || v == g)),
            );
            filter(part.column_by_name(column).unwrap(), &keep).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn chunked_states_add_up_each_partitions_chunks() {
    // Four partitions, each aggregated on its own: each ends its group's last chunk at its
    // last row, and the final aggregation adds the four partial sums in whatever order
    // they come.
    let ctx = partitioned_session(4);
    let batch = whole_batch();
    let sums = |parts: Vec<ArrayRef>, codec: &str| {
        parts.iter().fold((0, 0), |(plain, streams), values| {
            let c = compressed(values, codec);
            (plain + c.plain_bytes(), streams + c.compressed_bytes())
        })
    };
    let out = query(
        &ctx,
        "SELECT colzip_compressed_size(text, 'gmatch'), colzip_ratio(view, 'bwt'), count(*) FROM t",
    )
    .await;
    let (_, text) = sums(rows_per_partition(&batch, 4, None, "text"), "gmatch");
    assert_eq!(u64s(&out, 0).value(0), text as u64);
    let (plain, streams) = sums(rows_per_partition(&batch, 4, None, "view"), "bwt");
    assert_eq!(f64s(&out, 1).value(0), plain as f64 / streams as f64);
    // Four chunks are not one: the whole column compresses to another size.
    let whole = compressed(batch.column_by_name("text").unwrap(), "gmatch");
    assert_ne!(whole.compressed_bytes(), text);

    // Per group too, and the same whatever order the queries run in.
    let sql = "SELECT g, colzip_ratio(i, 'lzss'), colzip_compressed_size(maybe, 'gmatch') \
               FROM t GROUP BY g ORDER BY g";
    let out = query(&ctx, sql).await;
    assert_eq!(out.num_rows(), 4);
    let groups = out.column(0).as_string::<i32>();
    for row in 0..out.num_rows() {
        let g = Some(groups.value(row));
        let (plain, streams) = sums(rows_per_partition(&batch, 4, g, "i"), "lzss");
        assert_eq!(
            f64s(&out, 1).value(row),
            plain as f64 / streams as f64,
            "{g:?}"
        );
        let (_, maybe) = sums(rows_per_partition(&batch, 4, g, "maybe"), "gmatch");
        assert_eq!(u64s(&out, 2).value(row), maybe as u64, "{g:?}");
    }
    for _ in 0..3 {
        assert_eq!(query(&ctx, sql).await, out);
    }
}

#[tokio::test]
async fn exact_partial_states_merge_exactly_across_partitions() {
    // Four partitions: four partial states per group, merged in an order DataFusion picks.
    // `stored` does not depend on the values' order, so the merge must be exact.
    let ctx = partitioned_session(4);
    let batch = whole_batch();
    let out = query(
        &ctx,
        "SELECT colzip_compressed_size_exact(text, 'stored'), colzip_ratio_exact(view, 'stored'), count(*) FROM t",
    )
    .await;
    let text = compressed(batch.column_by_name("text").unwrap(), "stored");
    assert_eq!(u64s(&out, 0).value(0), text.plain_bytes() as u64);
    assert_eq!(f64s(&out, 1).value(0), 1.0);
    // Per group too.
    let out = query(
        &ctx,
        "SELECT g, colzip_compressed_size_exact(bin, 'stored') FROM t GROUP BY g ORDER BY g",
    )
    .await;
    let bin = batch.column_by_name("bin").unwrap();
    let groups = out.column(0).as_string::<i32>();
    for row in 0..out.num_rows() {
        let g = groups.value(row);
        let keep = BooleanArray::from_iter(
            batch
                .column(0)
                .as_string::<i32>()
                .iter()
                .map(|v| Some(v == Some(g))),
        );
        let values = filter(bin, &keep).unwrap();
        assert_eq!(
            u64s(&out, 1).value(row),
            compressed(&values, "stored").plain_bytes() as u64
        );
    }
}

/// Row `i` of [`large_table`]'s text: about 40 bytes, NULL now and then.
fn large_text(i: usize) -> Option<String> {
    (i % 101 != 7).then(|| format!("line {} of a rather repetitive comment {}", i % 977, i % 13))
}

/// 300,000 rows of [`large_text`] (about 14 MiB: four chunks) in one partition, cut
/// into batches of `batch_rows`.
fn large_table(batch_rows: usize) -> SessionContext {
    let rows = 300_000;
    let text: ArrayRef = Arc::new(StringArray::from_iter((0..rows).map(large_text)));
    let batch = RecordBatch::try_from_iter([("text", text)]).unwrap();
    let batches: Vec<RecordBatch> = (0..rows)
        .step_by(batch_rows)
        .map(|start| batch.slice(start, batch_rows.min(rows - start)))
        .collect();
    let ctx = ordered_context();
    let table = MemTable::try_new(batch.schema(), vec![batches]).unwrap();
    ctx.register_table("big", Arc::new(table)).unwrap();
    colzip::datafusion::register(&ctx).unwrap();
    ctx
}

#[tokio::test]
async fn a_large_group_is_cut_into_chunks_of_4_mib() {
    // The chunks by the documented count: a row is 1 bit of validity, 4 bytes of length
    // and its bytes; a chunk ends at the row that brings it to 4 MiB.
    let rows = 300_000;
    let (mut chunks, mut start, mut bits) = (Vec::new(), 0, 0u64);
    for i in 0..rows {
        bits += 1 + 32 + 8 * large_text(i).map_or(0, |t| t.len() as u64);
        if bits >= 8 << 22 {
            chunks.push(start..i + 1);
            (start, bits) = (i + 1, 0);
        }
    }
    chunks.push(start..rows);
    assert_eq!(chunks.len(), 4);
    let (mut plain, mut streams) = (0, 0);
    for chunk in chunks {
        let values: ArrayRef = Arc::new(StringArray::from_iter(chunk.map(large_text)));
        let c = compressed(&values, "gmatch");
        (plain, streams) = (plain + c.plain_bytes(), streams + c.compressed_bytes());
    }
    let whole: ArrayRef = Arc::new(StringArray::from_iter((0..rows).map(large_text)));
    let whole = compressed(&whole, "gmatch");

    let sql = "SELECT colzip_ratio(text, 'gmatch'), colzip_compressed_size(text, 'gmatch'), \
               colzip_ratio_exact(text, 'gmatch'), colzip_compressed_size_exact(text, 'gmatch') FROM big";
    // Batch boundaries do not move the chunks.
    for batch_rows in [300_000, 8192, 1000, 77] {
        let out = query(&large_table(batch_rows), sql).await;
        assert_eq!(
            f64s(&out, 0).value(0),
            plain as f64 / streams as f64,
            "{batch_rows}"
        );
        assert_eq!(u64s(&out, 1).value(0), streams as u64, "{batch_rows}");
        assert_eq!(f64s(&out, 2).value(0), ratio_of(&whole), "{batch_rows}");
        assert_eq!(u64s(&out, 3).value(0), whole.compressed_bytes() as u64);
    }
    // Chunks of 4 MiB compress about as the whole column does.
    let (chunked, exact) = (plain as f64 / streams as f64, ratio_of(&whole));
    assert!(streams != whole.compressed_bytes() && (chunked / exact - 1.0).abs() < 0.02);
}

#[tokio::test]
async fn no_rows_give_null() {
    let ctx = session(1);
    let out = query(
        &ctx,
        "SELECT colzip_ratio(text, 'bwt'), colzip_compressed_size(i, 'lzss'), \
         colzip_ratio_exact(text, 'bwt'), colzip_compressed_size_exact(i, 'lzss') FROM t WHERE i < 0",
    )
    .await;
    assert_eq!(out.num_rows(), 1);
    assert!((0..4).all(|c| out.column(c).is_null(0)));
}

#[tokio::test]
async fn lineitem_group_by_returnflag() {
    let data = tpch::generate(Table::Lineitem, 0.001).unwrap();
    let batch = RecordBatch::try_new(data.schema.clone(), data.columns.clone()).unwrap();
    let ctx = SessionContext::new();
    ctx.register_table(
        "lineitem",
        Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch.clone()]]).unwrap()),
    )
    .unwrap();
    colzip::datafusion::register(&ctx).unwrap();
    let out = query(
        &ctx,
        "SELECT l_returnflag, colzip_ratio(l_comment, 'bwt'), colzip_ratio(l_comment, 'gmatch') \
         FROM lineitem GROUP BY 1 ORDER BY 1",
    )
    .await;
    assert_eq!(out.num_rows(), 3);
    let flags = batch
        .column_by_name("l_returnflag")
        .unwrap()
        .as_string_view();
    let comments = batch.column_by_name("l_comment").unwrap();
    let out_flags = out.column(0).as_string_view();
    for row in 0..3 {
        let keep =
            BooleanArray::from_iter(flags.iter().map(|f| Some(f == Some(out_flags.value(row)))));
        let values = filter(comments, &keep).unwrap();
        assert_eq!(
            f64s(&out, 1).value(row),
            ratio_of(&compressed(&values, "bwt"))
        );
        assert_eq!(
            f64s(&out, 2).value(row),
            ratio_of(&compressed(&values, "gmatch"))
        );
        assert!(f64s(&out, 1).value(row) > 1.5);
    }
}

#[tokio::test]
async fn compress_and_decompress_round_trip_per_row() {
    let ctx = session(2);
    let batch = whole_batch();
    for (name, codec) in [
        ("text", "bwt"),
        ("bin", "gmatch"),
        ("i", "lzss"),
        ("money", "auto"),
        ("maybe", "lzss:s=4"),
        ("view", "gmatch:framed"),
    ] {
        let sql = format!(
            "SELECT colzip_compress({name}, '{codec}') AS blob, \
                    colzip_decompress(colzip_compress({name}, '{codec}')) AS back, \
                    colzip_decompress(colzip_compress({name}, '{codec}')) = {name} AS same \
             FROM t"
        );
        let out = query(&ctx, &sql).await;
        let original = batch.column_by_name(name).unwrap();
        assert_eq!(out.column(1).data_type(), original.data_type(), "{name}");
        assert_eq!(out.column(1).as_ref(), original.as_ref(), "{name}");
        let blobs = out.column(0).as_binary::<i32>();
        let same = out.column(2).as_boolean();
        for row in 0..ROWS {
            assert_eq!(
                blobs.is_null(row),
                original.is_null(row),
                "{name} row {row}"
            );
            assert_eq!(same.is_null(row), original.is_null(row), "{name} row {row}");
            if original.is_null(row) {
                continue;
            }
            assert!(same.value(row), "{name} row {row}");
            // The blob is the column container of the one value, views in their classic
            // form (Utf8View as Utf8): the same bytes whichever form a session reads.
            let blob = CompressedColumn::from_bytes(blobs.value(row)).unwrap();
            let value = original.slice(row, 1);
            let canonical = arrow::compute::cast(&value, &blob_type(value.data_type())).unwrap();
            assert_eq!(&column::decompress(&blob).unwrap(), &canonical);
            assert_eq!(blob.field().name(), "", "{name}");
        }
    }
}

/// A string read as `Utf8` (Ballista) or as `Utf8View` (a local session's default) gives
/// the same blob; each decodes back to its own column's type.
#[tokio::test]
async fn blobs_do_not_depend_on_string_views() {
    let ctx = session(2);
    let sql = "SELECT colzip_compress(text, 'bwt') AS a, \
                      colzip_compress(arrow_cast(text, 'Utf8View'), 'bwt') AS b, \
                      colzip_compress(bin, 'lzss') AS c, \
                      colzip_compress(arrow_cast(bin, 'BinaryView'), 'lzss') AS d, \
                      colzip_compress(view, 'gmatch') AS e, \
                      colzip_compress(arrow_cast(view, 'Utf8'), 'gmatch') AS f, \
                      colzip_decompress(colzip_compress(arrow_cast(text, 'Utf8View'), 'bwt')) AS back \
               FROM t";
    let out = query(&ctx, sql).await;
    for (x, y) in [(0, 1), (2, 3), (4, 5)] {
        assert_eq!(out.column(x).as_ref(), out.column(y).as_ref(), "{x} vs {y}");
        assert!(out.column(x).null_count() < ROWS, "{x}");
    }
    assert_eq!(out.column(6).data_type(), &DataType::Utf8View);
    let text = whole_batch().column_by_name("text").unwrap().clone();
    assert_eq!(
        out.column(6).as_ref(),
        arrow::compute::cast(&text, &DataType::Utf8View)
            .unwrap()
            .as_ref()
    );
    // The classic forms of nested views too.
    let nested = DataType::List(Arc::new(arrow::datatypes::Field::new(
        "item",
        DataType::Utf8View,
        true,
    )));
    assert_eq!(
        blob_type(&nested),
        DataType::List(Arc::new(arrow::datatypes::Field::new(
            "item",
            DataType::Utf8,
            true
        )))
    );
}

#[tokio::test]
async fn decompress_takes_the_type_when_blobs_lack_it() {
    let ctx = SessionContext::new();
    colzip::datafusion::register(&ctx).unwrap();
    // Blobs made outside SQL: no type in the field's metadata.
    let ints: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), None, Some(-70_000)]));
    let blob = |i: usize| {
        (!ints.is_null(i)).then(|| compressed(&ints.slice(i, 1), "lzss").to_bytes().unwrap())
    };
    let blobs = BinaryArray::from_iter((0..3).map(blob));
    let words: ArrayRef = Arc::new(StringArray::from(vec!["12", "x", "7"]));
    let word_blobs = BinaryArray::from_iter(
        (0..3).map(|i| Some(compressed(&words.slice(i, 1), "bwt").to_bytes().unwrap())),
    );
    let batch = RecordBatch::try_from_iter([
        ("b", Arc::new(blobs) as ArrayRef),
        ("w", Arc::new(word_blobs) as ArrayRef),
    ])
    .unwrap();
    ctx.register_table(
        "blobs",
        Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap()),
    )
    .unwrap();

    let out = query(
        &ctx,
        "SELECT colzip_decompress(b, 'Int32'), colzip_decompress(b, 'Int64') FROM blobs",
    )
    .await;
    assert_eq!(out.column(0).as_ref(), ints.as_ref());
    assert_eq!(
        out.column(1).as_ref(),
        &Int64Array::from(vec![Some(5), None, Some(-70_000)]) as &dyn Array
    );

    // Table made from colzip_compress keeps the type in its metadata.
    query(&ctx, "CREATE TABLE kept AS SELECT colzip_compress(w, 'gmatch') AS c FROM (SELECT colzip_decompress(w, 'Utf8') AS w FROM blobs)").await;
    let out = query(&ctx, "SELECT colzip_decompress(c) FROM kept").await;
    assert_eq!(out.column(0).as_ref(), words.as_ref());

    // A value that does not cast, and bytes that are no blob: execution errors.
    let err = ctx
        .sql("SELECT colzip_decompress(w, 'Int64') FROM blobs")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("colzip_decompress: row 1 holds a Utf8 value, which does not cast to Int64"),
        "{err}"
    );
    let err = ctx
        .sql("SELECT colzip_decompress(X'00010203', 'Utf8')")
        .await
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("colzip_decompress: row 0 is not a colzip blob"),
        "{err}"
    );
    // NULL in, NULL out, whatever the argument's type.
    let out = query(
        &ctx,
        "SELECT colzip_decompress(NULL, 'Utf8'), colzip_compress(CAST(NULL AS VARCHAR), 'bwt')",
    )
    .await;
    assert!(out.column(0).is_null(0) && out.column(1).is_null(0));
}

#[tokio::test]
async fn stats_measure_every_column_with_every_codec() {
    let ctx = session(2);
    let batch = whole_batch();
    let out = query(&ctx, "SELECT * FROM colzip_stats('t')").await;
    let schema = out.schema();
    let header: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(header, <columns::Row as ReportRow>::HEADER);
    let codecs = ["lzss", "gmatch", "bwt"];
    assert_eq!(out.num_rows(), batch.num_columns() * codecs.len());
    let text = |i: usize| out.column(i).as_string::<i32>();
    for row in 0..out.num_rows() {
        let (name, codec) = (text(1).value(row), text(5).value(row));
        let values = batch.column_by_name(name).unwrap();
        assert_eq!(text(0).value(row), "t");
        assert_eq!(codec, codecs[row % 3], "codecs in order per column");
        assert_eq!(text(2).value(row), values.data_type().to_string());
        assert_eq!(u64s(&out, 3).value(row), ROWS as u64);
        let raw = arrow_bytes(values).unwrap();
        assert_eq!(u64s(&out, 4).value(row), raw, "{name}");
        assert_eq!(text(6).value(row), "cpu");
        let expected = compressed(values, codec).compressed_bytes() as u64;
        assert_eq!(u64s(&out, 7).value(row), expected, "{name} {codec}");
        assert_eq!(f64s(&out, 8).value(row), raw as f64 / expected as f64);
        assert!(f64s(&out, 9).value(row) > 0.0 && f64s(&out, 10).value(row) > 0.0);
    }
    // Named codecs and baselines; filters and projections on the result.
    let out = query(
        &ctx,
        "SELECT codec, compressed_bytes FROM colzip_stats('T', 'lzss:s=2,w=64,snap,zstd-1') WHERE \"column\" = 'text'",
    )
    .await;
    let codecs: Vec<&str> = out.column(0).as_string::<i32>().iter().flatten().collect();
    assert_eq!(codecs, ["lzss:s=2,w=64,c=2048", "snap", "zstd-1"]);
}

/// The message of the error `ctx.sql(sql)` must give: a planning error.
async fn plan_error(ctx: &SessionContext, sql: &str) -> String {
    let err = ctx.sql(sql).await.expect_err(sql);
    assert!(
        matches!(err.find_root(), DataFusionError::Plan(_)),
        "{sql}: not a planning error: {err:?}"
    );
    err.to_string()
}

#[tokio::test]
async fn bad_arguments_are_planning_errors() {
    // Every Arrow type is compressible now, lists, structs, maps, unions and run-end
    // encoded arrays included (tests/nested_sql.rs).
    let ctx = session(1);
    for (sql, expected) in [
        (
            "SELECT colzip_ratio(text, 'foo') FROM t",
            "colzip_ratio: invalid codec 'foo' in argument 2: unknown codec 'foo'",
        ),
        (
            "SELECT colzip_ratio(text, 'foo') FROM t",
            "accepted forms: auto, lzss[:",
        ),
        (
            "SELECT colzip_compressed_size(i, 'lzss:s=3') FROM t",
            "colzip_compressed_size: invalid codec 'lzss:s=3' in argument 2: invalid lzss parameter: symbol width 3",
        ),
        (
            "SELECT colzip_ratio(i, 'bwt:level=2') FROM t",
            "unknown bwt option 'level'",
        ),
        (
            "SELECT colzip_ratio(i) FROM t",
            "colzip_ratio takes 2 arguments (colzip_ratio(column, 'codec')), got 1",
        ),
        (
            "SELECT colzip_ratio(i, 'bwt', 'lzss') FROM t",
            "colzip_ratio takes 2 arguments",
        ),
        (
            "SELECT colzip_ratio(i, text) FROM t",
            "colzip_ratio: argument 2 (codec) must be a string literal such as 'bwt', not an expression",
        ),
        (
            "SELECT colzip_ratio(i, 5) FROM t",
            "colzip_ratio: argument 2 (codec) must be a string literal, got 5 of type Int64",
        ),
        (
            "SELECT colzip_ratio(i, NULL) FROM t",
            "colzip_ratio: argument 2 (codec) must be a string literal",
        ),
        (
            "SELECT colzip_ratio(DISTINCT i, 'bwt') FROM t",
            "colzip_ratio: DISTINCT is not supported",
        ),
        (
            "SELECT colzip_ratio_exact(DISTINCT i, 'bwt') FROM t",
            "colzip_ratio_exact: DISTINCT is not supported",
        ),
        (
            "SELECT colzip_compressed_size_exact(i, 'foo') FROM t",
            "colzip_compressed_size_exact: invalid codec 'foo' in argument 2",
        ),
        (
            "SELECT g, colzip_compressed_size(text, 'gmatch:fast') FROM t GROUP BY g",
            "unknown gmatch option 'fast'",
        ),
        (
            "SELECT colzip_compress(text, 'foo') FROM t",
            "colzip_compress: invalid codec 'foo' in argument 2",
        ),
        (
            "SELECT colzip_compress(text, 5) FROM t",
            "colzip_compress: argument 2 (codec) must be a string literal, got a value of type Int64",
        ),
        (
            "SELECT colzip_compress(text) FROM t",
            "colzip_compress takes 2 arguments (colzip_compress(value, 'codec')), got 1",
        ),
        (
            "SELECT colzip_compress() FROM t",
            "colzip_compress takes 2 arguments (colzip_compress(value, 'codec')), got 0",
        ),
        (
            "SELECT colzip_ratio() FROM t",
            "colzip_ratio takes 2 arguments (colzip_ratio(column, 'codec')), got 0",
        ),
        (
            "SELECT colzip_compress(text, g) FROM t",
            "colzip_compress: argument 2 (codec) must be a string literal such as 'bwt'",
        ),
        (
            "SELECT colzip_decompress(i) FROM t",
            "colzip_decompress: argument 1 (blob) must be binary",
        ),
        (
            "SELECT colzip_decompress(bin) FROM t",
            "colzip_decompress: the type of the blobs in argument 1 is unknown",
        ),
        (
            "SELECT colzip_decompress(bin, 'NotAType') FROM t",
            "colzip_decompress: 'NotAType' in argument 2 (arrow type) is not an Arrow type",
        ),
        (
            "SELECT colzip_decompress(bin, g) FROM t",
            "colzip_decompress: argument 2 (arrow type) must be a string literal",
        ),
        (
            "SELECT colzip_decompress(bin, 'Utf8', 1) FROM t",
            "colzip_decompress takes 1 or 2 arguments",
        ),
        (
            "SELECT * FROM colzip_stats()",
            "colzip_stats takes 1 or 2 arguments (colzip_stats('table' [, 'codec,codec,…'])), got 0",
        ),
        (
            "SELECT * FROM colzip_stats('nope')",
            "colzip_stats: argument 1: table 'nope' not found",
        ),
        (
            "SELECT * FROM colzip_stats(5)",
            "colzip_stats: argument 1 (table) must be a string literal",
        ),
        (
            "SELECT * FROM colzip_stats('t', 'lzss,foo')",
            "colzip_stats: invalid codec list 'lzss,foo' in argument 2",
        ),
        (
            "SELECT * FROM colzip_stats('t', 'lzss', 'x')",
            "colzip_stats takes 1 or 2 arguments",
        ),
    ] {
        let message = plan_error(&ctx, sql).await;
        assert!(
            message.contains(expected),
            "{sql}:\n{message}\nshould contain: {expected}"
        );
        assert!(!message.contains("signature"), "{sql}: {message}");
    }
}

#[tokio::test]
async fn dataframe_calls_check_the_codec_too() {
    // Without SQL, the aggregate's codec is checked when its accumulator is made.
    let ctx = ordered_session();
    let ratio = ctx.udaf("colzip_ratio").unwrap();
    let df = ctx.table("t").await.unwrap();
    let err = df
        .aggregate(vec![], vec![ratio.call(vec![col("i"), col("text")])])
        .unwrap()
        .collect()
        .await
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("colzip_ratio: argument 2 (codec) must be a string literal"),
        "{err}"
    );
    let df = ctx.table("t").await.unwrap();
    let out = df
        .aggregate(
            vec![],
            vec![ratio.call(vec![col("i"), datafusion::prelude::lit("lzss")])],
        )
        .unwrap()
        .collect()
        .await
        .unwrap();
    let expected = ratio_of(&compressed(
        whole_batch().column_by_name("i").unwrap(),
        "lzss",
    ));
    assert_eq!(
        out[0]
            .column(0)
            .as_primitive::<arrow::datatypes::Float64Type>()
            .value(0),
        expected
    );
    assert_eq!(out[0].schema().field(0).data_type(), &DataType::Float64);
}

#[tokio::test]
async fn every_colzip_function_describes_itself() {
    let ctx = colzip::datafusion::session::context().unwrap();
    let rows = query(
        &ctx,
        "SELECT routine_name, description, syntax_example FROM information_schema.routines \
         WHERE routine_name LIKE 'colzip%' AND routine_name <> 'colzip_stats' ORDER BY routine_name",
    )
    .await;
    let names: Vec<&str> = rows.column(0).as_string::<i32>().iter().flatten().collect();
    assert_eq!(
        names,
        [
            "colzip_compress",
            "colzip_compressed_size",
            "colzip_compressed_size_exact",
            "colzip_decompress",
            "colzip_ratio",
            "colzip_ratio_exact"
        ]
    );
    let description = |i: usize| rows.column(1).as_string::<i32>().value(i);
    for column in 1..3 {
        let texts = rows.column(column).as_string::<i32>();
        for i in 0..6 {
            assert!(
                texts.is_valid(i) && texts.value(i).len() > 20,
                "{}: {:?}",
                rows.column(0).as_string::<i32>().value(i),
                texts
            );
        }
    }
    // colzip_ratio says which bytes its ratio divides, and which colzip_stats' divides,
    // and both chunked aggregates what their chunks are.
    let ratio = description(4);
    assert!(
        ratio.contains("plain bytes") && ratio.contains("raw_bytes"),
        "{ratio}"
    );
    for i in [1, 4] {
        assert!(
            description(i).contains("chunks of about 4 MiB"),
            "{}",
            description(i)
        );
    }
    // The whole-group forms say that their state is the values, for one process.
    for i in [2, 5] {
        assert!(
            description(i).contains("meant for one process"),
            "{}",
            description(i)
        );
    }
}

#[tokio::test]
async fn show_functions_lists_every_colzip_function() {
    let ctx = colzip::datafusion::session::context().unwrap();
    let shown = query(&ctx, "SHOW FUNCTIONS LIKE 'colzip%'").await;
    let cell = |name: &str, row: usize| {
        let column = shown.column_by_name(name).unwrap();
        (!column.is_null(row))
            .then(|| arrow::util::display::array_value_to_string(column, row).unwrap())
    };
    let rows = |function: &str| -> Vec<usize> {
        (0..shown.num_rows())
            .filter(|&row| cell("function_name", row).as_deref() == Some(function))
            .collect()
    };
    // Every colzip routine the information schema knows is shown, whatever its kind.
    let routines = query(
        &ctx,
        "SELECT DISTINCT routine_name FROM information_schema.routines \
         WHERE routine_name LIKE 'colzip%' ORDER BY routine_name",
    )
    .await;
    let names: Vec<String> = routines
        .column(0)
        .as_string::<i32>()
        .iter()
        .map(|n| n.unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "colzip_compress",
            "colzip_compressed_size",
            "colzip_compressed_size_exact",
            "colzip_decompress",
            "colzip_ratio",
            "colzip_ratio_exact",
            "colzip_stats"
        ]
    );
    for name in &names {
        assert!(!rows(name).is_empty(), "{name} is not in SHOW FUNCTIONS");
    }
    // Scalars and aggregates with their description, parameter names, types and return
    // type, as DataFusion's built-ins are shown.
    for (function, parameters, return_type) in [
        ("colzip_compress", "[value, codec]", "Binary"),
        ("colzip_decompress", "[blob]", "Null"),
        ("colzip_decompress", "[blob, arrow type]", "Null"),
        ("colzip_ratio", "[column, codec]", "Float64"),
        ("colzip_compressed_size", "[column, codec]", "UInt64"),
        ("colzip_ratio_exact", "[column, codec]", "Float64"),
        ("colzip_compressed_size_exact", "[column, codec]", "UInt64"),
    ] {
        let found = rows(function);
        let row = found
            .iter()
            .copied()
            .find(|&row| cell("parameters", row).as_deref() == Some(parameters))
            .unwrap_or_else(|| panic!("{function}{parameters} not shown"));
        let description = cell("description", row).unwrap_or_default();
        assert!(description.len() > 20, "{function}: {description:?}");
        assert!(cell("syntax_example", row).unwrap().starts_with(function));
        assert_eq!(cell("return_type", row).as_deref(), Some(return_type));
        let types = cell("parameter_types", row).unwrap();
        assert!(
            types.contains("String") || parameters == "[blob]",
            "{function}: {types}"
        );
    }
    // The value argument is shown with example types; any compressible type is accepted.
    let compress_types: Vec<String> = rows("colzip_compress")
        .into_iter()
        .filter_map(|row| cell("parameter_types", row))
        .collect();
    assert!(
        compress_types.contains(&"[Int64, String]".to_string()),
        "{compress_types:?}"
    );
    // DataFusion lists table functions without parameters or description.
    let stats = rows("colzip_stats");
    assert_eq!(cell("function_type", stats[0]).as_deref(), Some("TABLE"));
}

#[tokio::test]
async fn columns_named_like_the_schema_probe_still_need_literals() {
    // The information schema probes signatures with fields arg_0, arg_1, … and no
    // literals: columns of those names where a literal belongs fail when the query runs,
    // as other columns fail when it is planned.
    let ints: ArrayRef = Arc::new(Int64Array::from(vec![7]));
    let blob = compressed(&ints, "lzss").to_bytes().unwrap();
    let blobs: ArrayRef = Arc::new(BinaryArray::from_iter_values([blob]));
    let types: ArrayRef = Arc::new(StringArray::from(vec!["Int64"]));
    let batch = RecordBatch::try_from_iter([("arg_0", blobs), ("arg_1", types)]).unwrap();
    let ctx = SessionContext::new();
    let table = MemTable::try_new(batch.schema(), vec![vec![batch]]).unwrap();
    ctx.register_table("p", Arc::new(table)).unwrap();
    colzip::datafusion::functions::register(&ctx).unwrap();
    for (sql, expected) in [
        (
            "SELECT colzip_decompress(arg_0, arg_1) FROM p",
            "colzip_decompress: argument 2 (arrow type) must be a string literal",
        ),
        (
            "SELECT colzip_decompress(arg_0) FROM p",
            "colzip_decompress: the type of the blobs in argument 1 is unknown",
        ),
        (
            "SELECT colzip_compress(arg_0, arg_1) FROM p",
            "colzip_compress: argument 2 (codec) must be a string literal",
        ),
    ] {
        let err = match ctx.sql(sql).await {
            Ok(df) => df.collect().await.unwrap_err(),
            Err(e) => e,
        };
        assert!(err.to_string().contains(expected), "{sql}: {err}");
    }
    // With the literal, the same columns decode.
    let out = query(&ctx, "SELECT colzip_decompress(arg_0, 'Int64') FROM p").await;
    assert_eq!(out.column(0).as_ref(), ints.as_ref());
}
