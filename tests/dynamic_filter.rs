//! Filters a hash join hands the compressed scan of its probe side (DataFusion's dynamic
//! filters): the scan drops the rows they reject, and every join still gives exactly the
//! answer it gives over `MemTable`s, which ignore these filters. Keys of several types
//! with NULLs, every join type, and build sides that keep few, some or no probe keys.
#![cfg(feature = "datafusion")]

mod common;

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use colzip::datafusion::table::{CompressOptions, CompressedScanExec, CompressedTable};
use common::Rng;
use common::sql::try_run;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};

const FACT_ROWS: usize = 40_000;
const KEYS: u64 = 5_000;

fn fact_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("k", DataType::Int64, true),
        Field::new("k32", DataType::Int32, true),
        Field::new("ks", DataType::Utf8, true),
        Field::new("kd", DataType::Date32, true),
        Field::new("kp", DataType::Decimal128(15, 2), true),
        Field::new("x", DataType::Int64, false),
    ]))
}

fn dim_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("dk", DataType::Int64, true),
        Field::new("dk32", DataType::Int32, true),
        Field::new("dks", DataType::Utf8, true),
        Field::new("dkd", DataType::Date32, true),
        Field::new("dkp", DataType::Decimal128(15, 2), true),
        Field::new("tag", DataType::Int32, false),
    ]))
}

/// A key below `KEYS`, or NULL one time in 50.
fn key(rng: &mut Rng) -> Option<i64> {
    (rng.below(50) != 0).then(|| rng.below(KEYS) as i64)
}

/// The columns of rows with keys `keys`, every key column derived from the same key.
fn key_columns(keys: &[Option<i64>]) -> Vec<ArrayRef> {
    vec![
        Arc::new(Int64Array::from(keys.to_vec())),
        Arc::new(Int32Array::from_iter(
            keys.iter().map(|k| k.map(|k| k as i32 - 2_500)),
        )),
        Arc::new(StringArray::from_iter(
            keys.iter().map(|k| k.map(|k| format!("key-{k}"))),
        )),
        Arc::new(Date32Array::from_iter(
            keys.iter().map(|k| k.map(|k| k as i32 * 7 - 20_000)),
        )),
        Arc::new(
            Decimal128Array::from_iter(keys.iter().map(|k| k.map(|k| k as i128 * 101 - 999)))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ),
    ]
}

fn fact(rng: &mut Rng, first: usize, rows: usize) -> RecordBatch {
    let keys: Vec<Option<i64>> = (0..rows).map(|_| key(rng)).collect();
    let mut columns: Vec<ArrayRef> = vec![Arc::new(Int64Array::from_iter_values(
        (first..first + rows).map(|i| i as i64),
    ))];
    columns.extend(key_columns(&keys));
    columns.push(Arc::new(Int64Array::from_iter_values(
        (0..rows).map(|_| rng.below(1_000) as i64),
    )));
    RecordBatch::try_new(fact_schema(), columns).unwrap()
}

fn dim(rng: &mut Rng, rows: usize) -> RecordBatch {
    let keys: Vec<Option<i64>> = (0..rows).map(|_| key(rng)).collect();
    let mut columns = key_columns(&keys);
    columns.push(Arc::new(Int32Array::from_iter_values(
        (0..rows).map(|_| rng.below(100) as i32),
    )));
    RecordBatch::try_new(dim_schema(), columns).unwrap()
}

/// `f` (the fact table) compressed in four partitions of small blocks and windows, and
/// `d` (the dimension) as a `MemTable`, next to both as `MemTable`s.
fn contexts(seed: u64) -> (SessionContext, SessionContext) {
    contexts_with(seed, SessionConfig::new().with_target_partitions(4), false)
}

/// As [`contexts`], with hash joins that repartition both sides (their filters route each
/// row to its partition's test: a `CASE` over the row's hash), and scans that apply those
/// filters when `routed`.
fn partitioned_contexts(seed: u64, routed: bool) -> (SessionContext, SessionContext) {
    let mut config = SessionConfig::new().with_target_partitions(4);
    let optimizer = &mut config.options_mut().optimizer;
    optimizer.hash_join_single_partition_threshold = 0;
    optimizer.hash_join_single_partition_threshold_rows = 0;
    contexts_with(seed, config, routed)
}

fn contexts_with(
    seed: u64,
    config: SessionConfig,
    partitioned_join_filters: bool,
) -> (SessionContext, SessionContext) {
    let mut rng = Rng(seed);
    let quarter = FACT_ROWS / 4;
    let facts: Vec<Vec<RecordBatch>> = (0..4)
        .map(|p| vec![fact(&mut rng, p * quarter, quarter)])
        .collect();
    let dims = vec![vec![dim(&mut rng, 2_000)]];
    let options = CompressOptions {
        block_rows: 1_000,
        scan_window_bytes: 30_000,
        partitioned_join_filters,
        ..CompressOptions::default()
    };
    let compressed = SessionContext::new_with_config(config.clone());
    compressed
        .register_table(
            "f",
            Arc::new(CompressedTable::try_new(fact_schema(), facts.clone(), &options).unwrap()),
        )
        .unwrap();
    let plain = SessionContext::new_with_config(config);
    plain
        .register_table(
            "f",
            Arc::new(MemTable::try_new(fact_schema(), facts).unwrap()),
        )
        .unwrap();
    for ctx in [&compressed, &plain] {
        ctx.register_table(
            "d",
            Arc::new(MemTable::try_new(dim_schema(), dims.clone()).unwrap()),
        )
        .unwrap();
    }
    (compressed, plain)
}

fn scans(plan: &Arc<dyn ExecutionPlan>, out: &mut Vec<Arc<dyn ExecutionPlan>>) {
    if plan.downcast_ref::<CompressedScanExec>().is_some() {
        out.push(plan.clone());
    }
    for child in plan.children() {
        scans(child, out);
    }
}

/// Runs `sql` on both contexts, asserts the same answer, and returns the rows the
/// compressed scans' dynamic filters dropped and whether a scan held one.
async fn same_answer(
    compressed: &SessionContext,
    plain: &SessionContext,
    sql: &str,
) -> (usize, bool) {
    let (want, _) = try_run(plain, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    let (got, plan) = try_run(compressed, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(got, want, "{sql}");
    let mut found = Vec::new();
    scans(&plan, &mut found);
    let held = found.iter().any(|s| {
        s.downcast_ref::<CompressedScanExec>()
            .is_some_and(|s| s.dynamic_filter().is_some())
    });
    let dropped = found
        .iter()
        .filter_map(|s| s.metrics())
        .filter_map(|m| m.sum_by_name("dynamic_filter_dropped_rows"))
        .map(|v| v.as_usize())
        .sum();
    (dropped, held)
}

const KEY_PAIRS: [(&str, &str); 5] = [
    ("k", "dk"),
    ("k32", "dk32"),
    ("ks", "dks"),
    ("kd", "dkd"),
    ("kp", "dkp"),
];

#[tokio::test]
async fn joins_give_memtable_answers_with_the_scan_dropping_rejected_rows() {
    let (compressed, plain) = contexts(0x00d1_ce5e_ed00_0001);
    every_join_gives_memtable_answers(&compressed, &plain).await;
}

#[tokio::test]
async fn partitioned_joins_give_memtable_answers_with_the_scan_dropping_rejected_rows() {
    let (compressed, plain) = partitioned_contexts(0x00d1_ce5e_ed00_0003, true);
    every_join_gives_memtable_answers(&compressed, &plain).await;
}

async fn every_join_gives_memtable_answers(compressed: &SessionContext, plain: &SessionContext) {
    let (compressed, plain) = (compressed, plain);
    let mut dropped_somewhere = 0;
    for (fk, dk) in KEY_PAIRS {
        // Few build keys (IN list), many (hash lookup), none at all.
        for tags in ["tag < 3", "tag < 60", "tag < 0"] {
            let queries = [
                format!(
                    "SELECT f.id, f.x, d.tag FROM f JOIN d ON f.{fk} = d.{dk} WHERE d.{tags} ORDER BY f.id, d.tag"
                ),
                format!(
                    "SELECT count(*), sum(f.x) FROM f WHERE f.{fk} IN (SELECT {dk} FROM d WHERE {tags})"
                ),
                format!(
                    "SELECT count(*), sum(f.x) FROM f WHERE EXISTS (SELECT 1 FROM d WHERE d.{dk} = f.{fk} AND d.{tags})"
                ),
                format!(
                    "SELECT count(*), sum(f.x) FROM f WHERE f.{fk} NOT IN (SELECT {dk} FROM d WHERE {tags})"
                ),
                format!(
                    "SELECT count(*), count(d.tag), sum(f.x) FROM f LEFT JOIN d ON f.{fk} = d.{dk} AND d.{tags}"
                ),
                format!(
                    "SELECT count(*), count(f.id), sum(d.tag) FROM f RIGHT JOIN (SELECT * FROM d WHERE {tags}) d ON f.{fk} = d.{dk}"
                ),
                format!(
                    "SELECT count(*), count(f.id), count(d.tag) FROM f FULL JOIN (SELECT * FROM d WHERE {tags}) d ON f.{fk} = d.{dk}"
                ),
                format!(
                    "SELECT count(*) FROM f JOIN d ON f.{fk} = d.{dk} AND f.k32 = d.dk32 WHERE d.{tags} AND f.x < 500"
                ),
            ];
            for sql in &queries {
                dropped_somewhere += same_answer(compressed, plain, sql).await.0;
            }
        }
    }
    assert!(dropped_somewhere > 0, "no dynamic filter dropped a row");
}

#[tokio::test]
async fn a_selective_join_drops_most_probe_rows_in_the_scan() {
    let (compressed, plain) = contexts(0x00d1_ce5e_ed00_0002);
    let (dropped, held) = same_answer(&compressed, &plain, SELECTIVE).await;
    assert!(held, "{SELECTIVE}: the scan holds no dynamic filter");
    assert_most_rows_dropped(dropped);
}

/// A join whose build side keeps about 2% of the dimension's rows.
const SELECTIVE: &str = "SELECT count(*), sum(f.x) FROM f JOIN d ON f.k = d.dk WHERE d.tag < 2";

/// About 2% of the dimension's rows pass, so at least 90% of the fact rows are rejected
/// (whether or not the first window decodes before the filter is known).
fn assert_most_rows_dropped(dropped: usize) {
    assert!(
        dropped * 10 >= FACT_ROWS * 9,
        "{SELECTIVE}: the scan dropped {dropped} of {FACT_ROWS} rows"
    );
}

#[tokio::test]
async fn a_selective_partitioned_join_drops_most_probe_rows_in_the_scan_by_default() {
    let routed = CompressOptions::default().partitioned_join_filters;
    let (compressed, plain) = partitioned_contexts(0x00d1_ce5e_ed00_0004, routed);
    let sql = SELECTIVE;
    let plan = compressed
        .sql(&format!("EXPLAIN {sql}"))
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    let text = arrow::util::pretty::pretty_format_batches(&plan)
        .unwrap()
        .to_string();
    assert!(
        text.contains("Partitioned"),
        "{sql}: not a partitioned join:\n{text}"
    );
    let (dropped, held) = same_answer(&compressed, &plain, sql).await;
    assert!(held, "{sql}: the scan holds no dynamic filter");
    assert_most_rows_dropped(dropped);
}

#[tokio::test]
async fn partitioned_joins_filters_are_left_to_the_join_when_turned_off() {
    let (compressed, plain) = partitioned_contexts(0x00d1_ce5e_ed00_0005, false);
    let sql = SELECTIVE;
    let (dropped, held) = same_answer(&compressed, &plain, sql).await;
    assert!(held, "{sql}: the scan holds no dynamic filter");
    assert_eq!(
        dropped, 0,
        "{sql}: the scan applied a partitioned join's filter"
    );
}
