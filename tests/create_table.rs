//! `CREATE TABLE` in a session in compressed mode: the table is a `CompressedTable`
//! compressed with the session's options, holding the query's rows, with DataFusion's
//! rules for IF NOT EXISTS, OR REPLACE and existing tables; plain sessions keep
//! `MemTable`s.
#![cfg(feature = "datafusion")]

use std::sync::Arc;

use arrow::array::RecordBatch;
use colzip::datafusion::session::{
    self, TableKind,
    statements::{self, Format},
};
use colzip::datafusion::table::{CompressOptions, CompressedTable};
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;

/// A session in compressed mode, every column gmatch, small blocks so the tables have
/// several.
fn compressed_session() -> SessionContext {
    let ctx = session::context().unwrap();
    let options = CompressOptions {
        codec: "gmatch".parse().unwrap(),
        block_rows: 1000,
        ..CompressOptions::default()
    };
    session::set_table_kind(&ctx, TableKind::Compressed(options));
    ctx
}

async fn run(ctx: &SessionContext, sql: &str) -> colzip::Result<Vec<RecordBatch>> {
    let frame = session::sql(ctx, sql).await?;
    frame.collect().await.map_err(colzip::Error::from)
}

async fn table_provider(ctx: &SessionContext, name: &str) -> Arc<dyn TableProvider> {
    ctx.table_provider(name).await.unwrap()
}

async fn csv(ctx: &SessionContext, sql: &str) -> String {
    let batches = run(ctx, sql).await.unwrap();
    let schema = batches
        .first()
        .map(|b| b.schema())
        .unwrap_or_else(|| Arc::new(arrow::datatypes::Schema::empty()));
    statements::render(&schema, &batches, Format::Csv).unwrap()
}

const QUERY: &str = "SELECT value AS id, value % 7 AS bucket, \
                     CASE WHEN value % 3 = 0 THEN NULL ELSE concat('item-', value % 50) END AS label \
                     FROM generate_series(1, 5000)";

#[tokio::test]
async fn create_table_as_select_makes_a_compressed_table_of_the_query_rows() {
    let ctx = compressed_session();
    let created = run(&ctx, &format!("CREATE TABLE t AS {QUERY}"))
        .await
        .unwrap();
    assert_eq!(created.iter().map(|b| b.num_rows()).sum::<usize>(), 0);

    let provider = table_provider(&ctx, "t").await;
    let table = provider
        .downcast_ref::<CompressedTable>()
        .expect("CREATE TABLE in compressed mode makes a CompressedTable");
    assert_eq!(table.num_rows(), 5000);
    assert!(table.compressed_bytes() < table.plain_bytes());
    // The session's codec, or `stored` where a part would not shrink.
    for codecs in table.column_codecs() {
        assert!(
            codecs
                .iter()
                .all(|c| c.starts_with("gmatch") || *c == "stored"),
            "{codecs:?}"
        );
    }
    let held = csv(&ctx, "SELECT * FROM t ORDER BY id").await;
    let queried = csv(&ctx, &format!("{QUERY} ORDER BY id")).await;
    assert_eq!(held, queried);
    assert_eq!(held.lines().count(), 5001);
    assert!(held.starts_with("id,bucket,label\n1,1,item-1\n2,2,item-2\n3,3,\n"));

    // INSERT INTO appends, compressed like the rest.
    run(&ctx, "INSERT INTO t VALUES (0, 0, 'zero')")
        .await
        .unwrap();
    assert_eq!(table.num_rows(), 5001);
    assert_eq!(
        csv(&ctx, "SELECT label FROM t WHERE id = 0").await,
        "label\nzero\n"
    );
}

#[tokio::test]
async fn create_table_with_columns_makes_an_empty_table_for_insert() {
    let ctx = compressed_session();
    run(
        &ctx,
        "CREATE TABLE people (id BIGINT NOT NULL, name VARCHAR)",
    )
    .await
    .unwrap();
    let provider = table_provider(&ctx, "people").await;
    let table = provider.downcast_ref::<CompressedTable>().unwrap();
    assert_eq!(table.num_rows(), 0);
    assert_eq!(
        csv(&ctx, "SELECT count(*) AS n FROM people").await,
        "n\n0\n"
    );

    run(
        &ctx,
        "INSERT INTO people VALUES (1, 'ada'), (2, NULL), (3, 'grace')",
    )
    .await
    .unwrap();
    assert_eq!(table.num_rows(), 3);
    assert_eq!(
        csv(&ctx, "SELECT id, name FROM people ORDER BY id").await,
        "id,name\n1,ada\n2,\n3,grace\n"
    );

    // Columns given with a query cast its results, as DataFusion does.
    run(&ctx, "CREATE TABLE narrow (n INT) AS VALUES (1), (2)")
        .await
        .unwrap();
    let narrow = table_provider(&ctx, "narrow").await;
    assert!(narrow.is::<CompressedTable>());
    assert_eq!(
        narrow.schema().field(0).data_type(),
        &arrow::datatypes::DataType::Int32
    );
}

#[tokio::test]
async fn existing_tables_follow_datafusion_rules() {
    let ctx = compressed_session();
    run(&ctx, "CREATE TABLE t AS SELECT 1 AS a").await.unwrap();

    // Without IF NOT EXISTS or OR REPLACE, an existing table is an error.
    let error = run(&ctx, "CREATE TABLE t AS SELECT 2 AS a")
        .await
        .unwrap_err()
        .to_string();
    assert!(error.contains("already exists"), "{error}");
    assert_eq!(csv(&ctx, "SELECT a FROM t").await, "a\n1\n");

    // IF NOT EXISTS keeps the table, and does not run the query.
    run(&ctx, "CREATE TABLE IF NOT EXISTS t AS SELECT 3 AS a")
        .await
        .unwrap();
    assert_eq!(csv(&ctx, "SELECT a FROM t").await, "a\n1\n");

    // OR REPLACE replaces it, with a compressed table of the new rows and columns.
    run(
        &ctx,
        "CREATE OR REPLACE TABLE t AS SELECT 4 AS a, 'x' AS b UNION ALL SELECT 5, 'y'",
    )
    .await
    .unwrap();
    assert!(table_provider(&ctx, "t").await.is::<CompressedTable>());
    assert_eq!(
        csv(&ctx, "SELECT a, b FROM t ORDER BY a").await,
        "a,b\n4,x\n5,y\n"
    );

    // A new table with either clause is made.
    run(&ctx, "CREATE TABLE IF NOT EXISTS u AS SELECT 6 AS a")
        .await
        .unwrap();
    run(&ctx, "CREATE OR REPLACE TABLE v AS SELECT 7 AS a")
        .await
        .unwrap();
    for name in ["u", "v"] {
        assert!(
            table_provider(&ctx, name).await.is::<CompressedTable>(),
            "{name}"
        );
    }

    // Both clauses together are an error (from the parser or from us).
    assert!(
        run(
            &ctx,
            "CREATE OR REPLACE TABLE IF NOT EXISTS t AS SELECT 8 AS a"
        )
        .await
        .is_err()
    );
    // A failing query leaves the table it would replace.
    assert!(
        run(
            &ctx,
            "CREATE OR REPLACE TABLE t AS SELECT * FROM no_such_table"
        )
        .await
        .is_err()
    );
    assert_eq!(csv(&ctx, "SELECT count(*) AS n FROM t").await, "n\n2\n");
}

#[tokio::test]
async fn what_a_compressed_table_cannot_hold_is_an_error() {
    let ctx = compressed_session();
    for (sql, message) in [
        ("CREATE TABLE d (a INT DEFAULT 5)", "column defaults"),
        ("CREATE TABLE k (a INT PRIMARY KEY)", "constraints"),
        (
            "CREATE TABLE j AS SELECT x.a, y.a FROM (SELECT 1 AS a) x, (SELECT 2 AS a) y",
            "two columns named 'a'",
        ),
        ("CREATE TEMPORARY TABLE tmp AS SELECT 1 AS a", "emporary"),
    ] {
        let error = run(&ctx, sql).await.unwrap_err().to_string();
        assert!(error.contains(message), "{sql}: {error}");
    }
    for name in ["d", "k", "j", "tmp"] {
        assert!(!ctx.table_exist(name).unwrap(), "{name}");
    }
}

#[tokio::test]
async fn session_codecs_for_other_columns_are_left_out() {
    let ctx = session::context().unwrap();
    let options = CompressOptions::default()
        .with_column("label", "bwt".parse().unwrap())
        .with_column("not_here", "lzss".parse().unwrap());
    session::set_table_kind(&ctx, TableKind::Compressed(options));
    run(&ctx, &format!("CREATE TABLE t AS {QUERY}"))
        .await
        .unwrap();
    let provider = table_provider(&ctx, "t").await;
    let table = provider.downcast_ref::<CompressedTable>().unwrap();
    assert_eq!(table.options().columns.len(), 1);
    assert_eq!(table.options().codec_for("label"), "bwt".parse().unwrap());
}

#[tokio::test]
async fn plain_sessions_keep_memtables() {
    let ctx = session::context().unwrap();
    assert!(matches!(session::table_kind(&ctx), TableKind::Plain));
    run(&ctx, &format!("CREATE TABLE t AS {QUERY}"))
        .await
        .unwrap();
    assert!(table_provider(&ctx, "t").await.is::<MemTable>());

    // The shell runner follows the session's kind, plain or compressed.
    let compressed = compressed_session();
    let mut out = Vec::new();
    statements::run_sql(
        &compressed,
        "CREATE TABLE s AS SELECT 1 AS a; SELECT a FROM s",
        Format::Csv,
        &mut out,
    )
    .await
    .unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "a\n1\n");
    assert!(
        table_provider(&compressed, "s")
            .await
            .is::<CompressedTable>()
    );
}

#[tokio::test]
async fn a_plan_of_utf8_whose_batches_are_utf8view_fills_a_compressed_table() {
    // The CASE's branches differ (a literal and concat), so the plan says Utf8 while the
    // batches carry Utf8View.
    let ctx = compressed_session();
    run(
        &ctx,
        "CREATE TABLE c AS SELECT CASE value % 2 WHEN 0 THEN 'a' \
         ELSE concat('b', CAST(value AS VARCHAR)) END AS s FROM generate_series(1, 10)",
    )
    .await
    .unwrap();
    assert_eq!(
        csv(&ctx, "SELECT s FROM c ORDER BY s").await,
        "s\na\na\na\na\na\nb1\nb3\nb5\nb7\nb9\n"
    );
}
