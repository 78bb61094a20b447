//! Filters a compressed table's scan evaluates on the GPU (the window's columns decoded
//! in device memory, the tests and the copying of the passing rows there) give exactly
//! DataFusion's answers: random conjunctions of comparisons, `BETWEEN`, `IN` lists and
//! `IS [NOT] NULL` over integer, decimal, date and timestamp columns holding their
//! types' extremes, on tables compressed with several codecs and block sizes (blocks
//! smaller and larger than a kernel tile), against a `MemTable` with the same rows.
//! A string column with few distinct values is held as dictionaries: the GPU tests its
//! keys against each block's answers (equality, `IN`, `LIKE`, comparisons) and selects
//! them, and the host makes the strings (of a `Utf8` and a `Utf8View` column). A decimal
//! stored four bytes wide in some blocks and eight in others is tested and selected there.
//! Without a GPU these tests say they were skipped; with `COLZIP_REQUIRE_GPU=1` a missing
//! GPU is a failure.
#![cfg(feature = "datafusion")]

mod common;

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Date32Array, Decimal128Array, Float64Array, Int8Array, Int16Array, Int32Array,
    Int64Array, RecordBatch, StringArray, StringViewArray, TimestampMicrosecondArray, UInt8Array,
    UInt32Array,
};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use colzip::codec::Placement;
use colzip::datafusion::table::{
    AggregateOverCompressedScan, CompressOptions, CompressedTable, Residence,
};
use common::sql::{find_scan, try_run};
use common::{Rng, gpu_or_skip};
use datafusion::datasource::MemTable;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};

const ROWS: usize = 30_000;

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("a", DataType::Int64, false),
        Field::new("n", DataType::Int32, false),
        Field::new("t", DataType::Int16, false),
        Field::new("s", DataType::Int8, false),
        Field::new("u", DataType::UInt32, false),
        Field::new("b", DataType::UInt8, false),
        Field::new("p", DataType::Decimal128(15, 2), false),
        Field::new("d", DataType::Date32, false),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, None),
            false,
        ),
        Field::new("f", DataType::Float64, false),
        Field::new("name", DataType::Utf8, false),
        Field::new("v", DataType::Utf8View, false),
        Field::new("q", DataType::Decimal128(38, 4), false),
    ]))
}

/// Edge values of each column, besides small ones.
const I64_EDGES: [i64; 5] = [i64::MIN, i64::MAX, 0, -1, 1];
const I32_EDGES: [i32; 5] = [i32::MIN, i32::MAX, 0, -1, 1];
/// Days of 0001-01-01 and 9999-12-31 from the epoch.
const DAYS: [i32; 5] = [0, -1, 1, -719_162, 2_932_896];

fn small(rng: &mut Rng, span: u64) -> i64 {
    rng.below(2 * span + 1) as i64 - span as i64
}

fn batch(rng: &mut Rng, first_id: usize, rows: usize) -> RecordBatch {
    let pick_i64 = |rng: &mut Rng| {
        if rng.below(20) == 0 {
            I64_EDGES[rng.below(5) as usize]
        } else {
            small(rng, 50)
        }
    };
    let a: Vec<i64> = (0..rows).map(|_| pick_i64(rng)).collect();
    let n: Vec<i32> = (0..rows)
        .map(|_| {
            if rng.below(20) == 0 {
                I32_EDGES[rng.below(5) as usize]
            } else {
                small(rng, 1000) as i32
            }
        })
        .collect();
    let t: Vec<i16> = (0..rows)
        .map(|_| [i16::MIN, i16::MAX, 0, 7, -7][rng.below(5) as usize])
        .collect();
    let s: Vec<i8> = (0..rows).map(|_| small(rng, 127) as i8).collect();
    let u: Vec<u32> = (0..rows)
        .map(|_| [0, 1, u32::MAX, 3_000_000_000, 42][rng.below(5) as usize])
        .collect();
    let b: Vec<u8> = (0..rows).map(|_| rng.below(256) as u8).collect();
    let p: Vec<i128> = (0..rows).map(|_| i128::from(small(rng, 10_000))).collect();
    let d: Vec<i32> = (0..rows)
        .map(|_| {
            if rng.below(10) == 0 {
                DAYS[rng.below(5) as usize]
            } else {
                8_000 + small(rng, 3000) as i32
            }
        })
        .collect();
    let ts: Vec<i64> = (0..rows)
        .map(|_| small(rng, 1_000_000) * 1_000_000)
        .collect();
    let f: Vec<f64> = (0..rows).map(|_| small(rng, 100) as f64 / 4.0).collect();
    // Few distinct strings, so that blocks hold them as dictionaries: among them the
    // empty string, a non-ASCII one and one too long to sit inside a view.
    let name: Vec<String> = (0..rows)
        .map(|i| match i % 16 {
            13 => String::new(),
            14 => "é".to_string(),
            15 => "a name longer than twelve bytes".to_string(),
            k => format!("n{k}"),
        })
        .collect();
    // Small in a batch's first third, beyond 32 bits after it: blocks of one window store
    // it four bytes wide or eight.
    let q: Vec<i128> = (0..rows)
        .map(|i| {
            let v = i128::from(small(rng, 1_000_000));
            match (i < rows / 3, rng.below(40)) {
                (true, _) => v,
                (false, 0) => i64::MAX.into(),
                (false, 1) => i64::MIN.into(),
                (false, _) => v * 1_000_000_000,
            }
        })
        .collect();
    let columns: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from_iter_values(
            (first_id..first_id + rows).map(|i| i as i64),
        )),
        Arc::new(Int64Array::from(a)),
        Arc::new(Int32Array::from(n)),
        Arc::new(Int16Array::from(t)),
        Arc::new(Int8Array::from(s)),
        Arc::new(UInt32Array::from(u)),
        Arc::new(UInt8Array::from(b)),
        Arc::new(
            Decimal128Array::from(p)
                .with_precision_and_scale(15, 2)
                .unwrap(),
        ),
        Arc::new(Date32Array::from(d)),
        Arc::new(TimestampMicrosecondArray::from(ts)),
        Arc::new(Float64Array::from(f)),
        Arc::new(StringArray::from(name.clone())),
        Arc::new(StringViewArray::from(name)),
        Arc::new(
            Decimal128Array::from(q)
                .with_precision_and_scale(38, 4)
                .unwrap(),
        ),
    ];
    RecordBatch::try_new(schema(), columns).unwrap()
}

/// The rows as a compressed table on `gpu` (every window on it, whatever its size) and
/// as a `MemTable`, each registered as `t`.
fn contexts(
    gpu: &'static colzip::gpu::Gpu,
    codec: &str,
    block_rows: usize,
    seed: u64,
    residence: Residence,
) -> (SessionContext, SessionContext) {
    let mut rng = Rng(seed);
    let half = ROWS / 2;
    let partitions: Vec<Vec<RecordBatch>> = (0..2)
        .map(|p| vec![batch(&mut rng, p * half, half)])
        .collect();
    let options = CompressOptions {
        codec: codec.parse().unwrap(),
        placement: Placement::on(gpu),
        block_rows,
        scan_window_bytes: 200_000,
        residence,
        ..CompressOptions::default()
    };
    // Decimal literals as decimals: read as floats, some (`70.07`) fold to a comparison
    // at another scale, which is not an integer test and would leave the GPU untested.
    let session = || {
        SessionContext::new_with_config(
            SessionConfig::new().set_bool("datafusion.sql_parser.parse_float_as_decimal", true),
        )
    };
    // The compressed side also runs colzip's aggregate rule, so the queries' partial
    // aggregations over the GPU's scans go through `FixedPointAggregateExec` and are
    // checked against DataFusion's own over the `MemTable`.
    let compressed = SessionContext::new_with_state(
        SessionStateBuilder::new()
            .with_config(
                SessionConfig::new().set_bool("datafusion.sql_parser.parse_float_as_decimal", true),
            )
            .with_default_features()
            .with_physical_optimizer_rule(Arc::new(AggregateOverCompressedScan))
            .build(),
    );
    let table = CompressedTable::try_new(schema(), partitions.clone(), &options).unwrap();
    compressed.register_table("t", Arc::new(table)).unwrap();
    let plain = session();
    let table = MemTable::try_new(schema(), partitions).unwrap();
    plain.register_table("t", Arc::new(table)).unwrap();
    (compressed, plain)
}

/// Bytes of table `t` held in GPU memory.
async fn resident_bytes(ctx: &SessionContext) -> usize {
    let provider = ctx.table_provider("t").await.unwrap();
    provider
        .downcast_ref::<CompressedTable>()
        .expect("a compressed table")
        .gpu_resident_bytes()
}

/// A literal for `column` in SQL, often an edge of its type.
fn literal(rng: &mut Rng, column: &str) -> String {
    let pick = |rng: &mut Rng, pool: &[String]| pool[rng.below(pool.len() as u64) as usize].clone();
    let numbers = |edges: &[String], rng: &mut Rng, span: u64| {
        if rng.below(3) == 0 {
            pick(rng, edges)
        } else {
            small(rng, span).to_string()
        }
    };
    match column {
        "a" => numbers(&I64_EDGES.map(|v| v.to_string()), rng, 50),
        "n" => numbers(&I32_EDGES.map(|v| v.to_string()), rng, 1000),
        "t" => numbers(
            &["-32768", "32767", "7", "-7", "0"].map(String::from),
            rng,
            10,
        ),
        "s" => numbers(&["-128", "127", "0"].map(String::from), rng, 127),
        "u" => pick(
            rng,
            &["0", "1", "42", "3000000000", "4294967295"].map(String::from),
        ),
        "b" => rng.below(256).to_string(),
        "p" => format!("{}.{:02}", small(rng, 100), rng.below(100)),
        "q" => match rng.below(4) {
            0 => format!("{}.{:04}", small(rng, 100), rng.below(10_000)),
            1 => format!("{}000.5", small(rng, 1_000_000)),
            2 => "922337203685477.5807".to_string(),
            _ => "-922337203685477.5808".to_string(),
        },
        "d" => pick(
            rng,
            &[
                "DATE '1970-01-01'",
                "DATE '1969-12-31'",
                "DATE '0001-01-01'",
                "DATE '9999-12-31'",
                "DATE '1992-03-04'",
                "DATE '1991-06-01'",
            ]
            .map(String::from),
        ),
        _ => pick(
            rng,
            &[
                "TIMESTAMP '1970-01-01 00:00:00'",
                "TIMESTAMP '1969-12-20 01:02:03'",
                "TIMESTAMP '1970-01-05 00:00:00'",
            ]
            .map(String::from),
        ),
    }
}

/// A string literal for `name`, one it holds or not.
fn name_literal(rng: &mut Rng) -> String {
    let pool = [
        "'n1'",
        "'n12'",
        "''",
        "'é'",
        "'a name longer than twelve bytes'",
        "'zz'",
        "'N1'",
    ];
    pool[rng.below(pool.len() as u64) as usize].to_string()
}

/// One conjunct on a dictionary column (`name`, or `v`, its `Utf8View` twin), which the
/// GPU tests on its keys.
fn name_atom(rng: &mut Rng) -> String {
    let atom = name_conjunct(rng);
    if rng.below(2) == 0 {
        atom.replacen("name", "v", 1)
    } else {
        atom
    }
}

fn name_conjunct(rng: &mut Rng) -> String {
    match rng.below(7) {
        0 => format!("name = {}", name_literal(rng)),
        1 => format!("name <> {}", name_literal(rng)),
        2 => format!("name > {}", name_literal(rng)),
        3 => {
            let not = if rng.below(2) == 0 { "NOT " } else { "" };
            let items: Vec<String> = (0..1 + rng.below(3)).map(|_| name_literal(rng)).collect();
            format!("name {not}IN ({})", items.join(", "))
        }
        4 => "name LIKE 'n1%'".to_string(),
        5 => "name NOT LIKE '%2'".to_string(),
        _ => format!(
            "name IS {}NULL",
            if rng.below(2) == 0 { "NOT " } else { "" }
        ),
    }
}

/// One conjunct the GPU evaluates, over a random column.
fn atom(rng: &mut Rng) -> String {
    if rng.below(6) == 0 {
        return name_atom(rng);
    }
    let columns = ["a", "n", "t", "s", "u", "b", "p", "q", "d", "ts"];
    let column = columns[rng.below(columns.len() as u64) as usize];
    match rng.below(8) {
        0 => format!("{column} = {}", literal(rng, column)),
        1 => format!("{column} <> {}", literal(rng, column)),
        2 => format!("{column} < {}", literal(rng, column)),
        3 => format!("{column} >= {}", literal(rng, column)),
        4 => format!(
            "{column} BETWEEN {} AND {}",
            literal(rng, column),
            literal(rng, column)
        ),
        5 | 6 => {
            let not = if rng.below(2) == 0 { "NOT " } else { "" };
            let items: Vec<String> = (0..1 + rng.below(4))
                .map(|_| literal(rng, column))
                .collect();
            format!("{column} {not}IN ({})", items.join(", "))
        }
        _ => {
            let not = if rng.below(2) == 0 { "NOT " } else { "" };
            format!("{column} IS {not}NULL")
        }
    }
}

/// Runs `sql` on both tables and checks the answers are equal; returns the blocks the
/// compressed scan selected on the GPU (`None` when DataFusion refuses the query on the
/// plain table, which must then fail on the compressed one too).
async fn same_answer(
    compressed: &SessionContext,
    plain: &SessionContext,
    sql: &str,
) -> Option<usize> {
    let want = match try_run(plain, sql).await {
        Ok((want, _)) => want,
        Err(e) => {
            assert!(
                try_run(compressed, sql).await.is_err(),
                "{sql}: fails on a MemTable ({e}) but not compressed"
            );
            return None;
        }
    };
    let (got, plan) = try_run(compressed, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    assert_eq!(got, want, "{sql}");
    let selected = find_scan(&plan)
        .and_then(|scan| scan.metrics())
        .and_then(|m| m.sum_by_name("device_selected_blocks"))
        .map_or(0, |v| v.as_usize());
    Some(selected)
}

#[tokio::test(flavor = "multi_thread")]
async fn random_filters_on_the_gpu_give_datafusions_answers() {
    let Some(gpu) = gpu_or_skip("random_filters_on_the_gpu_give_datafusions_answers") else {
        return;
    };
    let mut rng = Rng(0x5eed_cafe_f00d);
    // Blocks below a tile (4,096 rows), across tiles with a ragged end, and large.
    for (codec, block_rows) in [("auto", 700), ("lzss", 9_001), ("stored", 5_000)] {
        let (compressed, plain) = contexts(gpu, codec, block_rows, rng.next(), Residence::Auto);
        let (mut asked, mut on_gpu, mut off_gpu) = (0, 0, Vec::new());
        for case in 0..60 {
            let atoms: Vec<String> = (0..1 + rng.below(3)).map(|_| atom(&mut rng)).collect();
            let predicate = atoms.join(" AND ");
            let sql = match case % 3 {
                0 => format!(
                    "SELECT id, a, n, t, s, u, b, p, q, d, ts, f FROM t WHERE {predicate} ORDER BY id"
                ),
                1 => format!("SELECT count(*) FROM t WHERE {predicate}"),
                _ => format!("SELECT id, name, v FROM t WHERE {predicate} ORDER BY id"),
            };
            let Some(selected) = same_answer(&compressed, &plain, &sql).await else {
                continue;
            };
            // Only `auto` holds the strings as dictionaries; under the other codecs a test
            // of one runs on the host.
            let strings_on_host = codec != "auto"
                && atoms
                    .iter()
                    .any(|a| a.contains("name") || a.starts_with("v "));
            if case % 3 != 2 && !strings_on_host {
                asked += 1;
                on_gpu += usize::from(selected > 0);
                if selected == 0 {
                    off_gpu.push(sql);
                }
            }
        }
        // The planner folds some predicates to constants, and a window whose rows the
        // zones rule out is never decoded: most queries still selected on the GPU.
        assert!(
            on_gpu * 10 >= asked * 6,
            "{codec}: {on_gpu} of {asked} queries selected rows on the GPU; not: {off_gpu:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn tpch_shaped_filters_select_on_the_gpu() {
    let Some(gpu) = gpu_or_skip("tpch_shaped_filters_select_on_the_gpu") else {
        return;
    };
    // lzss: a codec the GPU decodes into device memory for every column (`auto` may give
    // a column gmatch, whose columns the scan filters on the host).
    let (compressed, plain) = contexts(gpu, "lzss", 6_000, 11, Residence::Auto);
    let sent = |plan: &Arc<dyn ExecutionPlan>| {
        find_scan(plan)
            .and_then(|scan| scan.metrics())
            .and_then(|m| m.sum_by_name("bytes_to_device"))
            .map_or(0, |v| v.as_usize())
    };
    // The blocks went to the GPU when the table was loaded: no scan sends them.
    let sql = "SELECT count(*) FROM t WHERE n < 100 AND d > DATE '1980-01-01'";
    let (first, plan) = try_run(&compressed, sql).await.unwrap();
    assert_eq!(sent(&plan), 0, "{sql}: sent although resident");
    assert!(resident_bytes(&compressed).await > 0);
    // Kept on the host, they cross at every scan.
    let (host, _) = contexts(gpu, "lzss", 6_000, 11, Residence::Host);
    assert_eq!(resident_bytes(&host).await, 0);
    for _ in 0..2 {
        let (again, plan) = try_run(&host, sql).await.unwrap();
        assert_eq!(again, first);
        assert!(sent(&plan) > 0, "{sql}: nothing sent from the host");
    }
    assert_eq!(resident_bytes(&host).await, 0);
    for sql in [
        // Sums of decimals and integers: exact whatever the order the rows come in.
        "SELECT sum(p), sum(n), count(*) FROM t WHERE d >= DATE '1991-06-01' \
         AND d < DATE '1992-06-01' AND p BETWEEN 0.05 AND 70.07 AND n < 24",
        "SELECT count(*), min(a), max(a) FROM t WHERE u IN (1, 42) AND s <> 0",
        "SELECT id FROM t WHERE a = 9223372036854775807 ORDER BY id",
        "SELECT id FROM t WHERE a = -9223372036854775808 ORDER BY id",
        "SELECT count(*) FROM t WHERE ts > TIMESTAMP '1970-01-05 00:00:00'",
        "SELECT count(*) FROM t WHERE d IS NOT NULL AND b >= 200",
        // No filter: every row, its fixed-width columns from the resident streams.
        "SELECT sum(n), sum(p), min(ts), max(d), min(u), count(*), min(name) FROM t",
        "SELECT id, a, s, name FROM t ORDER BY id LIMIT 7",
    ] {
        let selected = same_answer(&compressed, &plain, sql).await.expect(sql);
        assert!(selected > 0, "{sql}: no block selected on the GPU");
    }
    // Blocks of 1,000 rows: those of a partition's first third store `q` four bytes
    // wide, the rest eight, and windows of several blocks span both.
    let (compressed, plain) = contexts(gpu, "lzss", 1_000, 11, Residence::Auto);
    for sql in [
        "SELECT id, q FROM t WHERE q < -5.0001 AND q > -922337203685477.5808 ORDER BY id",
        "SELECT sum(q), min(q), max(q), count(*) FROM t WHERE n < 500",
        "SELECT id, q FROM t WHERE q BETWEEN -100.0 AND 100.0 ORDER BY id",
    ] {
        let selected = same_answer(&compressed, &plain, sql).await.expect(sql);
        assert!(selected > 0, "{sql}: no block selected on the GPU");
    }
    // Under `auto` the string column is held as dictionaries with intpack keys: the GPU
    // tests the keys against each block's answers, which the host makes from the strings.
    let (compressed, plain) = contexts(gpu, "auto", 6_000, 11, Residence::Auto);
    for sql in [
        "SELECT count(*), min(id), max(name) FROM t WHERE name IN ('n1', 'n7', 'zz')",
        "SELECT id, name FROM t WHERE name = 'é' OR name = '' ORDER BY id",
        "SELECT id, name, p FROM t WHERE name LIKE 'a name%' ORDER BY id",
        "SELECT name, count(*) FROM t WHERE name <> 'n3' GROUP BY name ORDER BY name",
        "SELECT count(*) FROM t WHERE name > 'n5'",
        // `v`, the `Utf8View` twin of `name`, made on the host from its keys, and `q`
        // tested and selected on the GPU.
        "SELECT id, v, q FROM t WHERE v IN ('n1', '', 'a name longer than twelve bytes') ORDER BY id",
        "SELECT v, count(*), sum(q), min(q), max(q) FROM t WHERE v <> 'n3' GROUP BY v ORDER BY v",
        "SELECT id, v FROM t WHERE q < -5.0001 AND q > -922337203685477.5808 ORDER BY id",
        "SELECT v, sum(q) FROM t GROUP BY v ORDER BY v",
    ] {
        let selected = same_answer(&compressed, &plain, sql).await.expect(sql);
        assert!(selected > 0, "{sql}: no block selected on the GPU");
    }
}

/// Joins whose build side the compressed scan's GPU selection is filtered by (the
/// join's dynamic filter, tested on the selected key column before the other columns are
/// built): the answers equal a `MemTable`'s, and the scan both selected on the GPU and
/// dropped rows by the join's filter.
#[tokio::test(flavor = "multi_thread")]
async fn join_filters_test_the_gpus_selection_before_the_other_columns_are_built() {
    let Some(gpu) =
        gpu_or_skip("join_filters_test_the_gpus_selection_before_the_other_columns_are_built")
    else {
        return;
    };
    // `auto`: `name` and `v` held as dictionaries, their keys selected on the GPU.
    let (compressed, plain) = contexts(gpu, "auto", 6_000, 23, Residence::Auto);
    let keys: Vec<i64> = (-1000..=1000).step_by(7).collect();
    let dim = RecordBatch::try_new(
        Arc::new(Schema::new(vec![
            Field::new("k", DataType::Int32, false),
            Field::new("tag", DataType::Int64, false),
        ])),
        vec![
            Arc::new(Int32Array::from_iter_values(keys.iter().map(|&k| k as i32))),
            Arc::new(Int64Array::from_iter_values(
                keys.iter().map(|k| k.rem_euclid(5)),
            )),
        ],
    )
    .unwrap();
    for ctx in [&compressed, &plain] {
        ctx.register_batch("d", dim.clone()).unwrap();
    }
    for sql in [
        // Every row selected, then tested on `n` before the decimals are widened and the
        // strings made.
        "SELECT t.id, t.p, t.q, t.name, t.v, d.tag FROM t JOIN d ON t.n = d.k \
         WHERE d.tag = 0 ORDER BY t.id",
        // The rows the GPU's tests keep, then the join's test on those.
        "SELECT t.id, t.p, t.name, d.tag FROM t JOIN d ON t.n = d.k \
         WHERE d.tag = 1 AND t.a < 20 ORDER BY t.id",
        "SELECT count(*), sum(t.p), sum(t.q) FROM t WHERE t.n IN (SELECT k FROM d WHERE tag = 2)",
        // A dictionary key column: the join's test on strings made from the keys.
        "SELECT t.id, t.name, t.p FROM t JOIN (VALUES ('n3'), ('é')) AS l(x) ON t.name = l.x \
         ORDER BY t.id",
    ] {
        let (want, _) = try_run(&plain, sql).await.expect(sql);
        let (got, plan) = try_run(&compressed, sql).await.expect(sql);
        assert_eq!(got, want, "{sql}");
        let metrics = find_scan(&plan).and_then(|scan| scan.metrics()).expect(sql);
        let sum = |name: &str| metrics.sum_by_name(name).map_or(0, |v| v.as_usize());
        assert!(
            sum("device_selected_blocks") > 0,
            "{sql}: no block selected on the GPU"
        );
        assert!(
            sum("dynamic_filter_dropped_rows") > 0,
            "{sql}: the join's filter dropped no row in the scan"
        );
    }
}
