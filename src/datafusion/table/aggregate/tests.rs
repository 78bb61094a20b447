//! The operator against DataFusion's own aggregation over the same compressed table:
//! same rows (or both an error), on fixed and random queries, and the rule shown to fire.

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Decimal128Array, Float64Array, Int32Array, Int64Array, RecordBatch, StringArray,
};
use arrow::util::pretty::pretty_format_batches;
use datafusion::execution::SessionStateBuilder;
use datafusion::physical_plan::{ExecutionPlan, displayable};
use datafusion::prelude::SessionContext;

use super::AggregateOverCompressedScan;
use crate::datafusion::table::{CompressOptions, CompressedTable};

/// A small deterministic generator (xorshift64*).
struct Random(u64);

impl Random {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Rows with NULLs, negatives, empty and non-ASCII strings, values near Decimal128(38)'s
/// limits and Int64's, in `partitions` partitions.
fn table(rows: usize, partitions: usize, seed: u64) -> CompressedTable {
    let mut random = Random(seed | 1);
    let tags = ["A", "B", "", "é", "longer than twelve bytes"];
    let mut batches = Vec::new();
    for part in 0..partitions {
        let n = rows / partitions;
        let mut r = |m: u64| random.below(m);
        let g1: Vec<Option<&str>> = (0..n)
            .map(|_| (r(9) != 0).then(|| tags[r(tags.len() as u64) as usize]))
            .collect();
        let g2: Vec<Option<i32>> = (0..n)
            .map(|_| (r(11) != 0).then(|| r(4) as i32 - 1))
            .collect();
        let d1: Vec<Option<i128>> = (0..n)
            .map(|_| (r(7) != 0).then(|| r(20_000_000) as i128 - 5_000_000))
            .collect();
        let d2: Vec<Option<i128>> = (0..n).map(|_| Some(r(11) as i128)).collect();
        let d3: Vec<Option<i128>> = (0..n)
            .map(|_| {
                (r(5) != 0).then(|| {
                    let big = (r(u64::MAX) as i128) << 60;
                    if r(2) == 0 { big } else { -big }
                })
            })
            .collect();
        let d4: Vec<Option<i128>> = (0..n)
            .map(|_| (r(13) != 0).then(|| r(1_000_000) as i128 - 1_000))
            .collect();
        let d5: Vec<Option<i128>> = (0..n)
            .map(|_| (r(4) != 0).then(|| (r(u64::MAX) as i128) * 4 - (1 << 65)))
            .collect();
        let big: Vec<Option<i64>> = (0..n)
            .map(|_| {
                (r(6) != 0).then(|| (r(u64::MAX) as i64) / if r(3) == 0 { 1 } else { 1 << 20 })
            })
            .collect();
        let small: Vec<Option<i32>> = (0..n)
            .map(|_| (r(8) != 0).then(|| r(100) as i32 - 20))
            .collect();
        let float: Vec<Option<f64>> = (0..n)
            .map(|_| match r(6) {
                0 => None,
                1 => Some(f64::NAN),
                2 => Some(-0.0),
                _ => Some(r(1000) as f64 / 7.0),
            })
            .collect();
        let decimal = |values: Vec<Option<i128>>, p: u8, s: i8| -> ArrayRef {
            Arc::new(
                Decimal128Array::from(values)
                    .with_precision_and_scale(p, s)
                    .unwrap(),
            )
        };
        let batch = RecordBatch::try_from_iter([
            ("g1", Arc::new(StringArray::from(g1)) as ArrayRef),
            ("g2", Arc::new(Int32Array::from(g2)) as ArrayRef),
            ("d1", decimal(d1, 15, 2)),
            ("d2", decimal(d2, 15, 2)),
            ("d3", decimal(d3, 38, 10)),
            ("d4", decimal(d4, 10, 4)),
            ("d5", decimal(d5, 20, 3)),
            ("big", Arc::new(Int64Array::from(big)) as ArrayRef),
            ("small", Arc::new(Int32Array::from(small)) as ArrayRef),
            ("f", Arc::new(Float64Array::from(float)) as ArrayRef),
            (
                "part",
                Arc::new(Int32Array::from(vec![part as i32; n])) as ArrayRef,
            ),
        ])
        .unwrap();
        batches.push(vec![batch]);
    }
    let options = CompressOptions {
        block_rows: 1000,
        ..CompressOptions::default()
    };
    CompressedTable::try_new(batches[0][0].schema(), batches, &options).unwrap()
}

/// A session over `table` with the rule (`with_rule`) or DataFusion's plans alone.
fn session(table: Arc<CompressedTable>, with_rule: bool) -> SessionContext {
    let mut builder = SessionStateBuilder::new().with_default_features();
    if with_rule {
        builder = builder.with_physical_optimizer_rule(Arc::new(AggregateOverCompressedScan));
    }
    let ctx = SessionContext::new_with_state(builder.build());
    ctx.register_table("t", table).unwrap();
    ctx
}

/// The query's sorted rows as text, or its error; and whether its plan has the operator.
async fn run(ctx: &SessionContext, sql: &str) -> (Result<String, String>, bool) {
    let frame = match ctx.sql(sql).await {
        Ok(frame) => frame,
        Err(e) => return (Err(e.to_string()), false),
    };
    let plan = match frame.clone().create_physical_plan().await {
        Ok(plan) => plan,
        Err(e) => return (Err(e.to_string()), false),
    };
    let replaced = has_operator(&plan);
    let batches = match datafusion::physical_plan::collect(plan, ctx.task_ctx()).await {
        Ok(batches) => batches,
        Err(e) => return (Err(e.to_string()), replaced),
    };
    let text = pretty_format_batches(&batches).unwrap().to_string();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    (Ok(lines.join("\n")), replaced)
}

fn has_operator(plan: &Arc<dyn ExecutionPlan>) -> bool {
    displayable(plan.as_ref())
        .indent(false)
        .to_string()
        .contains("FixedPointAggregateExec")
}

/// `sql` gives the same rows with and without the rule; returns whether the rule fired.
async fn same_answers(table: &Arc<CompressedTable>, sql: &str) -> bool {
    let (with, replaced) = run(&session(table.clone(), true), sql).await;
    let (without, replaced_without) = run(&session(table.clone(), false), sql).await;
    assert!(!replaced_without);
    match (&with, &without) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "{sql}"),
        (Err(_), Err(_)) => {}
        _ => panic!("{sql}: with the rule {with:?}, without {without:?}"),
    }
    replaced
}

#[tokio::test]
async fn fixed_queries_give_datafusions_answers() {
    let table = Arc::new(table(12_000, 3, 7));
    let replaced = [
        // TPC-H Q1's shape, with NULLs in the groups and the arguments.
        "SELECT g1, g2, sum(d1), sum(d1 * (1 - d2)), sum(d1 * (1 - d2) * (1 + d2)), \
         avg(d1), avg(d2), count(*), count(d1), sum(big), sum(small) \
         FROM t WHERE small > 5 GROUP BY g1, g2",
        // Without GROUP BY; and where no row passes (NULL sums, zero counts).
        "SELECT sum(d1 * d2), avg(d1), count(*), count(d4) FROM t",
        "SELECT sum(d1 * d2), avg(d1), count(*) FROM t WHERE g2 > 100",
        "SELECT g1, sum(d1), avg(d4) FROM t WHERE g2 > 100 GROUP BY g1",
        // Different scales added; a literal with a scale; subtraction.
        "SELECT g2, sum(d4 + d1), sum(d1 - d4 * CAST(3.25 AS DECIMAL(4, 2))), avg(d4 - CAST(0.5 AS DECIMAL(2, 1))) FROM t GROUP BY g2",
        // Decimals beyond 64 bits: the checked products.
        "SELECT g1, sum(d5), avg(d5), sum(d5 * d2) FROM t GROUP BY g1",
        "SELECT part, sum(d3 * d2) FROM t GROUP BY part",
        // A group column that is also summed, and an expression as the group.
        "SELECT small, sum(small), count(small) FROM t GROUP BY small",
    ];
    for sql in replaced {
        assert!(
            same_answers(&table, sql).await,
            "the rule did not fire: {sql}"
        );
    }
    // Overflow of a product of large decimals: an error both ways.
    let overflow = "SELECT sum(d3 * d3) FROM t";
    let (with, replaced) = run(&session(table.clone(), true), overflow).await;
    assert!(replaced && with.is_err(), "{with:?}");
    assert!(same_answers(&table, overflow).await);
    // Floats (NaN, -0.0), MIN/MAX and DISTINCT are left to DataFusion.
    for sql in [
        "SELECT g1, sum(f), avg(f) FROM t GROUP BY g1",
        "SELECT g1, max(d1) FROM t GROUP BY g1",
        "SELECT g1, sum(DISTINCT d1) FROM t GROUP BY g1",
        "SELECT avg(small) FROM t",
        // Sums of Decimal128(38) are kept as Decimal256.
        "SELECT g1, sum(d3), avg(d3) FROM t GROUP BY g1",
    ] {
        assert!(!same_answers(&table, sql).await, "the rule fired: {sql}");
    }
}

/// Random arithmetic over the decimal columns, random aggregates and groups, random
/// filters: the same answers with and without the rule.
#[tokio::test]
async fn random_queries_give_datafusions_answers() {
    let table = Arc::new(table(6_000, 2, 99));
    let mut random = Random(0x5eed);
    fn expr(random: &mut Random, depth: u32) -> String {
        if depth == 0 || random.below(3) == 0 {
            return match random.below(6) {
                0 => "d1".into(),
                1 => "d2".into(),
                2 => "d4".into(),
                3 => format!(
                    "CAST('{}.{:02}' AS DECIMAL(5, 2))",
                    random.below(100),
                    random.below(100)
                ),
                4 => format!("{}", random.below(10)),
                _ => "d3".into(),
            };
        }
        let op = ["+", "-", "*"][random.below(3) as usize];
        format!(
            "({} {op} {})",
            expr(random, depth - 1),
            expr(random, depth - 1)
        )
    }
    let mut fired = 0;
    for _ in 0..40 {
        let aggregates: Vec<String> = (0..1 + random.below(3))
            .map(|_| {
                let function = ["sum", "avg", "count"][random.below(3) as usize];
                format!("{function}({})", expr(&mut random, 3))
            })
            .collect();
        let groups = ["", "g1", "g2", "g1, g2"][random.below(4) as usize];
        let filter = [
            "",
            "WHERE small > 10",
            "WHERE d1 < 0",
            "WHERE g1 = 'é' OR d2 IS NULL",
        ][random.below(4) as usize];
        let sql = if groups.is_empty() {
            format!("SELECT {} FROM t {filter}", aggregates.join(", "))
        } else {
            format!(
                "SELECT {groups}, {} FROM t {filter} GROUP BY {groups}",
                aggregates.join(", ")
            )
        };
        fired += usize::from(same_answers(&table, &sql).await);
    }
    assert!(
        fired >= 20,
        "the rule fired on {fired} of 40 random queries"
    );
}
