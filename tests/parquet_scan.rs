#![cfg(feature = "datafusion")]
//! The `COLZIP_PARQUET` scan (pages decompressed in batched calls, here on the CPU
//! backend) gives what DataFusion's stock Parquet reader gives, query by query, over
//! the same files: files DataFusion wrote (SNAPPY, ZSTD and UNCOMPRESSED chunks, data
//! pages v1 and v2), files colzip wrote, directories of several files; and it prunes
//! row groups and pages with pushed filters.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use datafusion::physical_plan::display::DisplayableExecutionPlan;
use datafusion::physical_plan::metrics::MetricValue;
use datafusion::physical_plan::{ExecutionPlan, collect, displayable};
use datafusion::prelude::SessionContext;

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::common::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

fn text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

/// 5000 rows: a sorted key (row groups and pages prune on it), nulls, dictionary and
/// plain strings, decimals, dates, doubles, booleans.
const DATA: &str = "SELECT v AS id, \
    CASE WHEN v % 7 = 0 THEN NULL ELSE concat('name-', CAST(v % 13 AS VARCHAR)) END AS name, \
    concat('tag-', CAST(v % 4 AS VARCHAR)) AS tag, \
    concat('unique-', CAST(v * 7919 AS VARCHAR)) AS note, \
    CAST(v AS DOUBLE) / 4 AS ratio, \
    CAST(v * 3 AS DECIMAL(15, 2)) AS price, \
    arrow_cast(CAST(18000 + v % 900 AS INT), 'Date32') AS day, \
    CASE WHEN v % 11 = 0 THEN NULL ELSE v % 2 = 0 END AS even \
    FROM generate_series(1, 5000) AS t(v)";

/// Queries both readers answer; every result is ordered, or a count.
const QUERIES: &[&str] = &[
    "SELECT * FROM {t} ORDER BY id",
    "SELECT count(*) AS n FROM {t}",
    "SELECT count(*) AS n FROM {t} WHERE id BETWEEN 1234 AND 1301",
    "SELECT id, name, price FROM {t} WHERE id BETWEEN 1234 AND 1301 ORDER BY id",
    "SELECT id, note FROM {t} WHERE id > 4990 OR id < 3 ORDER BY id",
    "SELECT name, count(*) AS n, sum(price) AS p, min(day) AS d, max(ratio) AS r \
     FROM {t} GROUP BY name ORDER BY name",
    "SELECT tag, count(even) AS n, sum(CASE WHEN even THEN 1 ELSE 0 END) AS e \
     FROM {t} GROUP BY tag ORDER BY tag",
    "SELECT id FROM {t} WHERE name IS NULL AND id < 200 ORDER BY id",
    "SELECT day, count(*) AS n FROM {t} WHERE day = DATE '2019-04-20' GROUP BY day",
    "SELECT * FROM {t} ORDER BY id LIMIT 7",
    "SELECT count(*) AS n FROM (SELECT id FROM {t} LIMIT 9)",
    "SELECT count(*) AS n FROM (SELECT 1 FROM {t} LIMIT 4321)",
    // A scan of zero columns: the rows are counted, no page is read.
    "SELECT count(*) AS n FROM {t} WHERE random() >= 0",
    "SELECT count(*) AS n FROM {t} WHERE id > 100000",
];

/// Registers `location` as `stock` (DataFusion's reader) and `ours` (colzip's scan, CPU
/// backend) and checks that every query gives the same result on both.
async fn same_results(ctx: &SessionContext, location: &str) {
    for (table, format) in [
        ("stock", "PARQUET"),
        ("ours", "COLZIP_PARQUET OPTIONS ('backend' 'cpu')"),
    ] {
        run(ctx, &format!("DROP TABLE IF EXISTS {table}"))
            .await
            .unwrap();
        run(
            ctx,
            &format!("CREATE EXTERNAL TABLE {table} STORED AS {format} LOCATION '{location}'"),
        )
        .await
        .unwrap();
    }
    for query in QUERIES {
        let stock = text(&run(ctx, &query.replace("{t}", "stock")).await.unwrap());
        let ours = text(&run(ctx, &query.replace("{t}", "ours")).await.unwrap());
        assert_eq!(ours, stock, "{location}: {query}");
    }
    // The scan is colzip's, not the stock one.
    // (A bare count(*) is answered from the statistics, without a scan.)
    let plan = physical_plan(ctx, "SELECT sum(id) FROM ours").await;
    let shown = displayable(plan.as_ref()).indent(true).to_string();
    assert!(shown.contains("file_type=colzip_parquet"), "{shown}");
}

async fn physical_plan(ctx: &SessionContext, sql: &str) -> Arc<dyn ExecutionPlan> {
    ctx.sql(sql)
        .await
        .unwrap()
        .create_physical_plan()
        .await
        .unwrap()
}

/// The sum of a metric over the plan's nodes.
fn metric(plan: &Arc<dyn ExecutionPlan>, name: &str) -> usize {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map(|v| match v {
            MetricValue::PruningMetrics {
                pruning_metrics, ..
            } => pruning_metrics.pruned(),
            other => other.as_usize(),
        })
        .unwrap_or(0);
    own + plan
        .children()
        .into_iter()
        .map(|c| metric(c, name))
        .sum::<usize>()
}

/// The plan with its metrics, for failure messages.
fn shown(plan: &Arc<dyn ExecutionPlan>) -> String {
    DisplayableExecutionPlan::with_metrics(plan.as_ref())
        .indent(true)
        .to_string()
}

fn context() -> SessionContext {
    let ctx = SessionContext::new();
    colzip::datafusion::format::register(&ctx).unwrap();
    ctx
}

async fn copy(ctx: &SessionContext, path: &str, stored_as: &str) {
    run(
        ctx,
        &format!("COPY ({DATA}) TO '{path}' STORED AS {stored_as}"),
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn datafusion_files_read_the_same() {
    let ctx = context();
    let dir = tempfile::tempdir().unwrap();
    // Page limits are checked between write batches: small batches make small pages.
    let small = "'format.max_row_group_size' '1000', 'format.data_page_row_count_limit' '100', \
                 'format.write_batch_size' '100'";
    for (name, options) in [
        (
            "snappy_v1",
            format!("{small}, 'format.compression' 'snappy'"),
        ),
        (
            "snappy_v2",
            format!("{small}, 'format.compression' 'snappy', 'format.writer_version' '2.0'"),
        ),
        (
            // ZSTD and UNCOMPRESSED chunks beside SNAPPY ones: the other codecs are the
            // parquet crate's, in the same row group.
            "mixed",
            format!(
                "{small}, 'format.compression' 'zstd(1)', \
                 'format.compression::name' 'snappy', 'format.compression::price' 'uncompressed'"
            ),
        ),
        (
            "no_dictionary",
            format!("{small}, 'format.compression' 'snappy', 'format.dictionary_enabled' 'false'"),
        ),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let path = path.to_str().unwrap();
        copy(&ctx, path, &format!("PARQUET OPTIONS ({options})")).await;
        same_results(&ctx, path).await;
    }
}

#[tokio::test]
async fn colzip_files_and_directories_read_the_same() {
    let ctx = context();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("one.parquet");
    let file = file.to_str().unwrap();
    copy(
        &ctx,
        file,
        "COLZIP_PARQUET OPTIONS ('backend' 'cpu', 'row_group_size' '1000', 'data_page_size' '2000')",
    )
    .await;
    same_results(&ctx, file).await;

    // A directory of three files from two writers, v2 pages in one.
    let many = dir.path().join("many");
    std::fs::create_dir(&many).unwrap();
    let many = many.to_str().unwrap();
    for (name, from, to, stored_as) in [
        (
            "a",
            1,
            2000,
            "PARQUET OPTIONS ('format.compression' 'snappy', 'format.max_row_group_size' '700')",
        ),
        (
            "b",
            2001,
            4000,
            "COLZIP_PARQUET OPTIONS ('backend' 'cpu', 'row_group_size' '600', 'data_page_version' '2')",
        ),
        ("c", 4001, 5000, "COLZIP_PARQUET OPTIONS ('backend' 'cpu')"),
    ] {
        let query = DATA.replace(
            "generate_series(1, 5000)",
            &format!("generate_series({from}, {to})"),
        );
        run(
            &ctx,
            &format!("COPY ({query}) TO '{many}/{name}.parquet' STORED AS {stored_as}"),
        )
        .await
        .unwrap();
    }
    same_results(&ctx, &format!("{many}/")).await;
}

#[tokio::test]
async fn filters_prune_row_groups_and_pages() {
    let ctx = context();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pruned.parquet");
    let path = path.to_str().unwrap();
    copy(
        &ctx,
        path,
        "PARQUET OPTIONS ('format.compression' 'snappy', 'format.max_row_group_size' '1000', \
         'format.data_page_row_count_limit' '100', 'format.write_batch_size' '100')",
    )
    .await;
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS COLZIP_PARQUET LOCATION '{path}' \
             OPTIONS ('backend' 'cpu')"
        ),
    )
    .await
    .unwrap();

    // Everything: 5 row groups read, pages decompressed, nothing pruned.
    let plan = physical_plan(&ctx, "SELECT sum(id) FROM t").await;
    collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    assert_eq!(metric(&plan, "row_groups_read"), 5, "{}", shown(&plan));
    assert!(
        metric(&plan, "pages_decompressed") >= 50,
        "{}",
        shown(&plan)
    );
    assert!(metric(&plan, "bytes_decompressed") > 0, "{}", shown(&plan));

    // Rows 1234..=1301: one row group of five, a page or two of its ten.
    let plan = physical_plan(
        &ctx,
        "SELECT sum(price) FROM t WHERE id BETWEEN 1234 AND 1301",
    )
    .await;
    let result = collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    assert_eq!(
        text(&result),
        text(
            &run(
                &ctx,
                "SELECT CAST(sum(v * 3) AS DECIMAL(25, 2)) AS \"sum(t.price)\" \
                 FROM generate_series(1234, 1301) AS s(v)"
            )
            .await
            .unwrap()
        )
    );
    assert_eq!(metric(&plan, "row_groups_read"), 1, "{}", shown(&plan));
    assert_eq!(
        metric(&plan, "row_groups_pruned_statistics"),
        4,
        "{}",
        shown(&plan)
    );
    assert!(
        metric(&plan, "page_index_rows_pruned") >= 800,
        "{}",
        shown(&plan)
    );
    // Pages of skipped rows are not decompressed: at most 2 pages of each of 2 columns
    // (and their dictionaries).
    assert!(
        metric(&plan, "pages_skipped_by_selection") >= 8,
        "{}",
        shown(&plan)
    );
    assert!(metric(&plan, "pages_decompressed") <= 6, "{}", shown(&plan));

    // A filter nothing passes reads nothing.
    let plan = physical_plan(&ctx, "SELECT count(*) FROM t WHERE id > 9999").await;
    collect(Arc::clone(&plan), ctx.task_ctx()).await.unwrap();
    assert_eq!(metric(&plan, "row_groups_read"), 0, "{}", shown(&plan));
}

#[tokio::test]
async fn path_queries_use_the_scan() {
    let ctx = colzip::datafusion::session::context().unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, from, to) in [("x", 1, 300), ("y", 301, 1000)] {
        run(
            &ctx,
            &format!(
                "COPY (SELECT v FROM generate_series({from}, {to}) AS t(v)) \
                 TO '{}/{name}.parquet' STORED AS PARQUET",
                dir.path().display()
            ),
        )
        .await
        .unwrap();
    }
    let dir = dir.path().to_str().unwrap();
    for location in [
        format!("{dir}/"),
        format!("{dir}/*.parquet"),
        format!("{dir}/y.parquet"),
    ] {
        let sql = format!("SELECT count(*), sum(v) FROM '{location}'");
        let plan = physical_plan(&ctx, &sql).await;
        let shown = displayable(plan.as_ref()).indent(true).to_string();
        assert!(shown.contains("file_type=colzip_parquet"), "{shown}");
        let (count, sum) = if location.ends_with("y.parquet") {
            (700, (301..=1000).sum::<i64>())
        } else {
            (1000, (1..=1000).sum::<i64>())
        };
        let got = text(&run(&ctx, &sql).await.unwrap());
        assert!(got.contains(&format!("| {count} ")), "{got}");
        assert!(got.contains(&format!("| {sum} ")), "{got}");
    }
    // Other formats are DataFusion's, as before.
    let csv = format!("{dir}/z.csv");
    run(
        &ctx,
        &format!("COPY (SELECT 5 AS k) TO '{csv}' STORED AS CSV"),
    )
    .await
    .unwrap();
    let got = text(&run(&ctx, &format!("SELECT k FROM '{csv}'")).await.unwrap());
    assert!(got.contains("| 5 "), "{got}");
}

#[tokio::test]
async fn corrupt_files_are_errors() {
    let ctx = context();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("good.parquet");
    let path = path.to_str().unwrap();
    copy(
        &ctx,
        path,
        "PARQUET OPTIONS ('format.compression' 'snappy')",
    )
    .await;
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE t STORED AS COLZIP_PARQUET LOCATION '{path}' \
             OPTIONS ('backend' 'cpu')"
        ),
    )
    .await
    .unwrap();
    // Damage the middle of the pages after the table was made: the scan's error says
    // the data is corrupt, and nothing panics.
    let mut bytes = std::fs::read(path).unwrap();
    let middle = bytes.len() / 3;
    for b in &mut bytes[middle..middle + 2000] {
        *b = b.wrapping_mul(31).wrapping_add(7);
    }
    std::fs::write(path, &bytes).unwrap();
    let err = run(&ctx, "SELECT * FROM t").await.unwrap_err().to_string();
    assert!(
        err.contains("corrupt") || err.contains("Parquet") || err.contains("parquet"),
        "{err}"
    );
}
