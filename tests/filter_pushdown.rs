//! Filters pushed into a compressed table's scan (exact pushdown) give exactly DataFusion's
//! answers: random predicates over random columns with every edge value (NULL, NaN, ±0.0,
//! ±infinity, decimals at their precision's limits, empty and non-ASCII strings, dates at
//! the epoch and far from it) run on a `CompressedTable`, whose scan evaluates them, and
//! on a `MemTable` with the same rows, where DataFusion's own filter does.
#![cfg(feature = "datafusion")]

mod common;

use std::sync::Arc;

use arrow::array::{
    ArrayRef, BooleanArray, Date32Array, Decimal128Array, Float32Array, Float64Array, Int32Array,
    Int64Array, RecordBatch, StringArray, StringViewArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use colzip::datafusion::table::{CompressOptions, CompressedTable};
use common::Rng;
use common::sql::{find_scan, try_run};
use datafusion::datasource::MemTable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;

const ROWS: usize = 6_000;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("i", DataType::Int64, true),
        Field::new("n", DataType::Int32, true),
        Field::new("f", DataType::Float64, true),
        Field::new("g", DataType::Float32, true),
        Field::new("p", DataType::Decimal128(15, 2), true),
        Field::new("w", DataType::Decimal128(38, 0), true),
        Field::new("d", DataType::Date32, true),
        Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new("b", DataType::Boolean, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("v", DataType::Utf8View, true),
    ]))
}

const WORDS: [&str; 9] = ["", "a", "ab", "abc", "b", "é", "日本", "a%b", "zz"];
const DECIMAL38_MAX: i128 = 99_999_999_999_999_999_999_999_999_999_999_999_999;
/// Days of 0001-01-01 and 9999-12-31 from the epoch.
const DAYS: [i32; 6] = [0, -1, 1, -719_162, 2_932_896, 10_000];

/// Some value of `pool`, or NULL one time in `nulls`.
fn pick<T: Copy>(rng: &mut Rng, pool: &[T], nulls: u64) -> Option<T> {
    if rng.below(nulls) == 0 {
        None
    } else {
        Some(pool[rng.below(pool.len() as u64) as usize])
    }
}

const INTS: [i64; 9] = [i64::MIN, -7, -1, 0, 1, 2, 7, 1_000, i64::MAX];
const FLOATS: [f64; 9] = [
    f64::NAN,
    -0.0,
    0.0,
    1.5,
    -1.5,
    f64::INFINITY,
    f64::NEG_INFINITY,
    2.0,
    1e300,
];
const CENTS: [i64; 7] = [
    -999_999_999_999_999,
    -1,
    0,
    1,
    150,
    200,
    999_999_999_999_999,
];
const WIDE: [i128; 5] = [-DECIMAL38_MAX, -1, 0, 1, DECIMAL38_MAX];

fn batch(rng: &mut Rng, first_id: usize, rows: usize) -> RecordBatch {
    let mut col = |f: &mut dyn FnMut(&mut Rng) -> ArrayRef| f(rng);
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            (first_id..first_id + rows).map(|i| i as i64),
        )),
        col(&mut |r| Arc::new(Int64Array::from_iter((0..rows).map(|_| pick(r, &INTS, 9))))),
        col(&mut |r| {
            Arc::new(Int32Array::from_iter((0..rows).map(|_| {
                pick(r, &INTS, 7).map(|v| v.clamp(i32::MIN as i64, i32::MAX as i64) as i32)
            })))
        }),
        col(&mut |r| {
            Arc::new(Float64Array::from_iter(
                (0..rows).map(|_| pick(r, &FLOATS, 8)),
            ))
        }),
        col(&mut |r| {
            Arc::new(Float32Array::from_iter(
                (0..rows).map(|_| pick(r, &FLOATS, 8).map(|v| v as f32)),
            ))
        }),
        col(&mut |r| {
            Arc::new(
                Decimal128Array::from_iter((0..rows).map(|_| pick(r, &CENTS, 6).map(i128::from)))
                    .with_precision_and_scale(15, 2)
                    .unwrap(),
            )
        }),
        col(&mut |r| {
            Arc::new(
                Decimal128Array::from_iter((0..rows).map(|_| pick(r, &WIDE, 6)))
                    .with_precision_and_scale(38, 0)
                    .unwrap(),
            )
        }),
        col(&mut |r| Arc::new(Date32Array::from_iter((0..rows).map(|_| pick(r, &DAYS, 8))))),
        col(&mut |r| {
            Arc::new(TimestampMicrosecondArray::from_iter((0..rows).map(|_| {
                pick(r, &DAYS, 8).map(|d| d as i64 * 86_400_000_000 + 1)
            })))
        }),
        col(&mut |r| {
            Arc::new(BooleanArray::from_iter(
                (0..rows).map(|_| pick(r, &[true, false], 5)),
            ))
        }),
        col(&mut |r| {
            Arc::new(StringArray::from_iter(
                (0..rows).map(|_| pick(r, &WORDS, 7)),
            ))
        }),
        col(&mut |r| {
            Arc::new(StringViewArray::from_iter(
                (0..rows).map(|_| pick(r, &WORDS, 7)),
            ))
        }),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// The same rows as a compressed table (three partitions of blocks of 700 rows, scanned a
/// few blocks at a time) and as a `MemTable`, each registered as `t`.
fn contexts(seed: u64) -> (SessionContext, SessionContext) {
    let mut rng = Rng(seed);
    let third = ROWS / 3;
    let partitions: Vec<Vec<RecordBatch>> = (0..3)
        .map(|p| {
            vec![
                batch(&mut rng, p * third, 1_000),
                batch(&mut rng, p * third + 1_000, third - 1_000),
            ]
        })
        .collect();
    let options = CompressOptions {
        block_rows: 700,
        scan_window_bytes: 20_000,
        ..CompressOptions::default()
    };
    let compressed = SessionContext::new();
    compressed
        .register_table(
            "t",
            Arc::new(CompressedTable::try_new(schema(), partitions.clone(), &options).unwrap()),
        )
        .unwrap();
    let plain = SessionContext::new();
    plain
        .register_table(
            "t",
            Arc::new(MemTable::try_new(schema(), partitions).unwrap()),
        )
        .unwrap();
    (compressed, plain)
}

/// A literal for column `column` in SQL.
fn literal(rng: &mut Rng, column: &str) -> String {
    let choose =
        |rng: &mut Rng, pool: &[&str]| pool[rng.below(pool.len() as u64) as usize].to_string();
    match column {
        "i" | "n" => choose(
            rng,
            &[
                "-9223372036854775808",
                "-7",
                "0",
                "1",
                "7",
                "1000",
                "9223372036854775807",
                "-1",
            ],
        ),
        "f" | "g" => choose(
            rng,
            &[
                "'NaN'::double",
                "-0.0",
                "0.0",
                "1.5",
                "-1.5",
                "'inf'::double",
                "'-inf'::double",
                "2",
            ],
        ),
        "p" => choose(
            rng,
            &[
                "0",
                "0.00",
                "1.50",
                "-0.01",
                "2",
                "9999999999999.99",
                "-9999999999999.99",
                "1.505",
            ],
        ),
        "w" => choose(
            rng,
            &[
                "0",
                "1",
                "-1",
                "99999999999999999999999999999999999999",
                "-99999999999999999999999999999999999999",
            ],
        ),
        "d" => choose(
            rng,
            &[
                "DATE '1970-01-01'",
                "DATE '1969-12-31'",
                "DATE '0001-01-01'",
                "DATE '9999-12-31'",
                "DATE '1997-05-19'",
            ],
        ),
        "ts" => choose(
            rng,
            &[
                "TIMESTAMP '1970-01-01 00:00:00'",
                "TIMESTAMP '1970-01-01 00:00:00.000001'",
                "TIMESTAMP '9999-12-31 00:00:00.000001'",
                "TIMESTAMP '0001-01-01 00:00:00'",
            ],
        ),
        "b" => choose(rng, &["true", "false"]),
        _ => choose(
            rng,
            &["''", "'a'", "'ab'", "'é'", "'日本'", "'zz'", "'a%b'"],
        ),
    }
}

const VALUE_COLUMNS: [&str; 11] = ["i", "n", "f", "g", "p", "w", "d", "ts", "b", "s", "v"];

/// A random predicate the scan evaluates: comparisons, BETWEEN, IN, IS [NOT] NULL, prefix
/// LIKE, and AND / OR / NOT of them, `depth` levels deep at most.
fn predicate(rng: &mut Rng, depth: u32) -> String {
    if depth > 0 && rng.below(3) == 0 {
        let a = predicate(rng, depth - 1);
        let b = predicate(rng, depth - 1);
        return match rng.below(3) {
            0 => format!("({a} AND {b})"),
            1 => format!("({a} OR {b})"),
            _ => format!("NOT ({a})"),
        };
    }
    let column = VALUE_COLUMNS[rng.below(VALUE_COLUMNS.len() as u64) as usize];
    let text = matches!(column, "s" | "v");
    match rng.below(if text { 7 } else { 5 }) {
        0 | 1 => {
            let op = ["=", "<>", "<", "<=", ">", ">="][rng.below(6) as usize];
            if rng.below(2) == 0 {
                format!("{column} {op} {}", literal(rng, column))
            } else {
                format!("{} {op} {column}", literal(rng, column))
            }
        }
        2 => {
            let not = if rng.below(2) == 0 { "" } else { "NOT " };
            let (a, b) = (literal(rng, column), literal(rng, column));
            format!("{column} {not}BETWEEN {a} AND {b}")
        }
        3 => {
            let not = if rng.below(2) == 0 { "" } else { "NOT " };
            let list: Vec<String> = (0..1 + rng.below(3))
                .map(|_| literal(rng, column))
                .collect();
            format!("{column} {not}IN ({})", list.join(", "))
        }
        4 => {
            let not = if rng.below(2) == 0 { "" } else { "NOT " };
            format!("{column} IS {not}NULL")
        }
        5 => {
            let not = if rng.below(2) == 0 { "" } else { "NOT " };
            let prefix = ["", "a", "ab", "é", "日", "a%"][rng.below(6) as usize];
            format!("{column} {not}LIKE '{prefix}%'")
        }
        _ => {
            // A string function of the column compared with literals.
            let word =
                |rng: &mut Rng| format!("'{}'", WORDS[rng.below(WORDS.len() as u64) as usize]);
            match rng.below(6) {
                0 => {
                    let list: Vec<String> = (0..1 + rng.below(3)).map(|_| word(rng)).collect();
                    let (start, length) = (rng.below(4) as i64 - 1, rng.below(3));
                    format!(
                        "substring({column}, {start}, {length}) IN ({})",
                        list.join(", ")
                    )
                }
                1 => format!("length({column}) > {}", rng.below(4)),
                2 => format!("starts_with({column}, {})", word(rng)),
                3 => format!("upper({column}) = {}", word(rng).to_uppercase()),
                4 => format!(
                    "left({column}, {}) <> {}",
                    rng.below(3) as i64 - 1,
                    word(rng)
                ),
                _ => format!("btrim({column}, 'a') = {}", word(rng)),
            }
        }
    }
}

async fn run(ctx: &SessionContext, sql: &str) -> (String, Arc<dyn ExecutionPlan>) {
    try_run(ctx, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

/// Runs `sql` on both tables: the same answer, and the compressed scan applied the filter
/// itself (no filter left above it). Returns whether the scan did: not when DataFusion
/// refuses the query on the plain table (a literal that overflows the column's decimal
/// type, say), which must then fail on the compressed one too, nor when the planner
/// folded the predicate to a constant (`n > 9223372036854775807` for an `Int32` column).
async fn same_answer(compressed: &SessionContext, plain: &SessionContext, sql: &str) -> bool {
    let (want, _) = match try_run(plain, sql).await {
        Ok(result) => result,
        Err(e) => {
            let got = try_run(compressed, sql).await;
            assert!(
                got.is_err(),
                "{sql}: fails on a MemTable ({e}) but not compressed"
            );
            return false;
        }
    };
    let (got, plan) = run(compressed, sql).await;
    assert_eq!(got, want, "{sql}");
    let shown = datafusion::physical_plan::displayable(plan.as_ref())
        .indent(false)
        .to_string();
    assert!(
        !shown.contains("FilterExec"),
        "{sql}: a filter stayed above the scan\n{shown}"
    );
    find_scan(&plan).is_some_and(|scan| scan.filter().is_some())
}

#[tokio::test]
async fn random_pushed_filters_give_datafusions_answers() {
    let cases = common::cases(300, 40);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (compressed, plain) = contexts(rng.next());
    let mut answered = 0;
    for case in 0..cases {
        let predicate = predicate(&mut rng, 2);
        // Rows and their values, a count alone, and a projection without the filter's
        // columns, in turn.
        let sql = match case % 3 {
            0 => format!("SELECT * FROM t WHERE {predicate} ORDER BY id"),
            1 => format!("SELECT count(*) FROM t WHERE {predicate}"),
            _ => format!("SELECT id, v FROM t WHERE {predicate} ORDER BY id"),
        };
        answered += usize::from(same_answer(&compressed, &plain, &sql).await);
    }
    // Refused and folded predicates are few: the scan filtered in most cases.
    assert!(
        answered * 10 >= cases * 8,
        "{answered} of {cases} filtered by the scan"
    );
}

#[tokio::test]
async fn a_limit_under_a_pushed_filter_counts_rows_that_pass() {
    let (compressed, plain) = contexts(7);
    for sql in [
        "SELECT count(*) FROM (SELECT id FROM t WHERE s = 'é' LIMIT 25)",
        "SELECT count(*) FROM (SELECT id FROM t WHERE f > 0.0 LIMIT 5000)",
        "SELECT count(*) FROM (SELECT id FROM t WHERE i IS NULL AND b LIMIT 3)",
    ] {
        assert!(same_answer(&compressed, &plain, sql).await);
    }
    // The count agrees with the filter's (a limit above what passes keeps every row).
    let (all, _) = run(&compressed, "SELECT count(*) FROM t WHERE s = 'é'").await;
    let (limited, _) = run(
        &compressed,
        "SELECT count(*) FROM (SELECT id FROM t WHERE s = 'é' LIMIT 100000)",
    )
    .await;
    assert_eq!(all, limited);
}

#[tokio::test]
async fn statistics_under_a_pushed_filter_do_not_answer_a_count() {
    // count(*) may be answered from exact statistics: under a filter they must not be.
    let (compressed, plain) = contexts(11);
    assert!(same_answer(&compressed, &plain, "SELECT count(*) FROM t WHERE b").await);
    assert!(
        same_answer(
            &compressed,
            &plain,
            "SELECT count(*), min(id), max(id) FROM t WHERE n = 0"
        )
        .await
    );
}

#[tokio::test]
async fn filters_the_scan_cannot_evaluate_stay_above_it() {
    let (compressed, plain) = contexts(3);
    for sql in [
        "SELECT id FROM t WHERE i + 1 > 2 ORDER BY id",
        "SELECT id FROM t WHERE md5(s) = 'AB' ORDER BY id",
        "SELECT id FROM t WHERE concat(s, 'x') = 'AB' ORDER BY id",
        "SELECT id FROM t WHERE s ILIKE 'A%' ORDER BY id",
    ] {
        let (want, _) = run(&plain, sql).await;
        let (got, plan) = run(&compressed, sql).await;
        assert_eq!(got, want, "{sql}");
        let shown = datafusion::physical_plan::displayable(plan.as_ref())
            .indent(false)
            .to_string();
        assert!(shown.contains("FilterExec"), "{sql}\n{shown}");
    }
}

#[tokio::test]
async fn filters_on_columns_without_nulls_stored_as_dictionaries() {
    // Low-cardinality strings become dictionaries; a conjunct over one is evaluated once
    // per distinct value and once for NULL, which such a column's field must not refuse.
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("mode", DataType::Utf8View, false),
        Field::new("qty", DataType::Int32, false),
    ]));
    let modes = ["AIR", "MAIL", "SHIP", "", "é", "TRUCK BY A LONG ROAD"];
    let rows = 3_000;
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..rows as i64)),
            Arc::new(StringViewArray::from_iter_values(
                (0..rows).map(|i| modes[i * 7 % modes.len()]),
            )),
            Arc::new(Int32Array::from_iter_values(
                (0..rows as i32).map(|i| i % 50),
            )),
        ],
    )
    .unwrap();
    let options = CompressOptions {
        block_rows: 1_000,
        ..CompressOptions::default()
    };
    let partitions = vec![vec![batch]];
    let compressed = SessionContext::new();
    let table = CompressedTable::try_new(schema.clone(), partitions.clone(), &options).unwrap();
    assert!(
        table.column_dictionary_blocks()[1] > 0,
        "the strings are stored as dictionaries"
    );
    compressed.register_table("t", Arc::new(table)).unwrap();
    let plain = SessionContext::new();
    plain
        .register_table(
            "t",
            Arc::new(MemTable::try_new(schema, partitions).unwrap()),
        )
        .unwrap();
    for predicate in [
        "mode = 'MAIL'",
        "mode IN ('AIR', '') AND qty < 10",
        "mode LIKE 'TR%'",
        "mode IS NULL",
        "mode IS NOT NULL AND qty BETWEEN 3 AND 5",
        "NOT (mode <> 'é') OR qty = 49",
    ] {
        for sql in [
            format!("SELECT id, mode FROM t WHERE {predicate} ORDER BY id"),
            format!("SELECT count(*) FROM t WHERE {predicate}"),
        ] {
            same_answer(&compressed, &plain, &sql).await;
        }
    }
}
