#![cfg(feature = "datafusion")]
//! `COPY … TO … STORED AS COLZIP_PARQUET` and `CREATE EXTERNAL TABLE … STORED AS
//! COLZIP_PARQUET` on a plain `SessionContext`.

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use bytes::Bytes;
use colzip::codec::Placement;
use datafusion::prelude::SessionContext;
use parquet::basic::Compression;
use parquet::file::metadata::ParquetMetaDataReader;

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::common::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

fn text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

const QUERY: &str = "SELECT v AS id, \
    CASE WHEN v % 7 = 0 THEN NULL ELSE concat('name-', CAST(v % 13 AS VARCHAR)) END AS name, \
    CAST(v AS DOUBLE) / 4 AS ratio, \
    CAST(v * 3 AS DECIMAL(15, 2)) AS price, \
    v % 2 = 0 AS even, \
    make_array(v, v + 1) AS pair, \
    named_struct('a', v % 5, 'b', CASE WHEN v % 3 = 0 THEN NULL ELSE 'x' END) AS s \
    FROM generate_series(1, 5000) AS t(v)";

#[tokio::test]
async fn copy_then_external_table_gives_the_same_rows() {
    let ctx = SessionContext::new();
    colzip::datafusion::format::register(&ctx).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let expected = text(&run(&ctx, &format!("{QUERY} ORDER BY id")).await.unwrap());
    for (name, options) in [
        (
            "v1",
            "OPTIONS ('backend' 'cpu', 'row_group_size' '2000', 'parallel_row_groups' '2')",
        ),
        (
            "v2",
            "OPTIONS ('format.backend' 'cpu', 'data_page_version' '2', 'codec' 'gmatch')",
        ),
        ("default", ""),
    ] {
        let path = dir.path().join(format!("{name}.parquet"));
        let path = path.to_str().unwrap();
        let copied = run(
            &ctx,
            &format!("COPY ({QUERY}) TO '{path}' STORED AS COLZIP_PARQUET {options}"),
        )
        .await
        .unwrap();
        assert!(text(&copied).contains("5000"), "{}", text(&copied));

        // Standard Parquet: every chunk SNAPPY, pages gmatch's bytes.
        let file = Bytes::from(std::fs::read(path).unwrap());
        let meta = ParquetMetaDataReader::new()
            .parse_and_finish(&file)
            .unwrap();
        assert_eq!(meta.file_metadata().num_rows(), 5000);
        if name == "v1" {
            assert_eq!(meta.num_row_groups(), 3);
        }
        assert!(
            meta.row_groups()
                .iter()
                .flat_map(|rg| rg.columns())
                .all(|c| c.compression() == Compression::SNAPPY)
        );

        let table = format!("t_{name}");
        run(
            &ctx,
            &format!("CREATE EXTERNAL TABLE {table} STORED AS COLZIP_PARQUET LOCATION '{path}'"),
        )
        .await
        .unwrap();
        let back = text(
            &run(&ctx, &format!("SELECT * FROM {table} ORDER BY id"))
                .await
                .unwrap(),
        );
        assert_eq!(back, expected, "{name}");

        // colzip's own reader agrees.
        let read = colzip::parquet::read::read_batches(
            file,
            &colzip::parquet::read::ReadOptions::default().with_placement(Placement::CPU),
        )
        .unwrap();
        assert_eq!(read.summary.rows, 5000);
        assert!(read.summary.snappy_pages > 0);
    }
}

#[tokio::test]
async fn directory_output_and_insert_into() {
    let ctx = SessionContext::new();
    colzip::datafusion::register(&ctx).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = format!("{}/parts/", dir.path().to_str().unwrap());
    run(
        &ctx,
        &format!(
            "COPY (SELECT v, v % 3 AS k FROM generate_series(1, 900) AS t(v)) TO '{out}' \
         STORED AS COLZIP_PARQUET PARTITIONED BY (k) OPTIONS ('backend' 'cpu')"
        ),
    )
    .await
    .unwrap();
    run(&ctx, &format!("CREATE EXTERNAL TABLE parts (v BIGINT, k BIGINT) STORED AS COLZIP_PARQUET PARTITIONED BY (k) LOCATION '{out}'"))
        .await
        .unwrap();
    let sums = run(
        &ctx,
        "SELECT k, count(*) AS n, sum(v) AS s FROM parts GROUP BY k ORDER BY k",
    )
    .await
    .unwrap();
    let expected = run(&ctx, "SELECT v % 3 AS k, count(*) AS n, sum(v) AS s FROM generate_series(1, 900) AS t(v) GROUP BY k ORDER BY k").await.unwrap();
    assert_eq!(text(&sums), text(&expected));
    // INSERT INTO an external table of this format writes through colzip too.
    let table_dir = format!("{}/ins/", dir.path().to_str().unwrap());
    std::fs::create_dir_all(&table_dir).unwrap();
    run(
        &ctx,
        &format!(
            "CREATE EXTERNAL TABLE ins (v BIGINT) STORED AS COLZIP_PARQUET LOCATION '{table_dir}'"
        ),
    )
    .await
    .unwrap();
    run(
        &ctx,
        "INSERT INTO ins SELECT v FROM generate_series(1, 100) AS t(v)",
    )
    .await
    .unwrap();
    let count = text(
        &run(&ctx, "SELECT count(*) AS n, sum(v) AS s FROM ins")
            .await
            .unwrap(),
    );
    assert!(count.contains("| 100 | 5050 |"), "{count}");
    let files: Vec<_> = std::fs::read_dir(&table_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(files.len(), 1);
    let meta = ParquetMetaDataReader::new()
        .parse_and_finish(&Bytes::from(std::fs::read(&files[0]).unwrap()))
        .unwrap();
    assert!(
        meta.row_groups()
            .iter()
            .flat_map(|rg| rg.columns())
            .all(|c| c.compression() == Compression::SNAPPY)
    );
}

#[tokio::test]
async fn bad_options_are_clear_errors() {
    let ctx = SessionContext::new();
    colzip::datafusion::format::register(&ctx).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.parquet");
    let path = path.to_str().unwrap();
    for (options, needle) in [
        (
            "('compression' 'zstd')",
            "unknown colzip_parquet option 'format.compression'",
        ),
        ("('backend' 'tpu')", "unknown backend 'tpu'"),
        ("('row_group_size' '0')", "expected a positive integer"),
        (
            "('parallel_row_groups' '0')",
            "option 'format.parallel_row_groups' = '0': expected a positive integer",
        ),
        ("('data_page_version' '3')", "unknown data page version '3'"),
        ("('codec' 'bwt')", "only 'gmatch' writes"),
    ] {
        let sql =
            format!("COPY (SELECT 1 AS x) TO '{path}' STORED AS COLZIP_PARQUET OPTIONS {options}");
        let err = match ctx.sql(&sql).await {
            Err(e) => e,
            Ok(df) => df.collect().await.unwrap_err(),
        };
        assert!(err.to_string().contains(needle), "{options}: {err}");
        assert!(
            !std::path::Path::new(path).exists(),
            "{options}: nothing is written"
        );
    }
    // The table side rejects them the same way.
    let err = run(&ctx, &format!("CREATE EXTERNAL TABLE b STORED AS COLZIP_PARQUET LOCATION '{path}' OPTIONS ('nonsense' '1')"))
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("unknown colzip_parquet option"),
        "{err}"
    );
}
