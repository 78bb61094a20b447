//! colzip on a Ballista cluster (feature `ballista`): a standalone scheduler and executor
//! in this process run SQL with colzip's scalar functions, aggregates, table function and
//! `COLZIP_PARQUET` writer, with the results of a local session; and colzip's extension
//! codecs carry plans with colzip's functions into a session that lacks them.
#![cfg(feature = "ballista")]

use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use arrow::util::pretty::pretty_format_batches;
use colzip::cluster::codec::{LogicalCodec, PhysicalCodec};
use datafusion::execution::FunctionRegistry;
use datafusion::physical_plan::{collect, displayable};
use datafusion::prelude::{ParquetReadOptions, SessionConfig, SessionContext};
use datafusion_proto::bytes::{
    logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};

/// A Parquet file of 3,000 rows: id, a flag of 3 values, a repetitive note (NULL at times).
fn write_table(dir: &std::path::Path) -> String {
    let n = 3000i64;
    let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..n));
    let flag: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| ["A", "N", "R"][(i % 3) as usize]),
    ));
    let note: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| {
        (i % 17 != 0).then(|| {
            format!(
                "order {} shipped by {} mail",
                i % 50,
                ["air", "rail", "truck"][(i % 4 % 3) as usize]
            )
        })
    })));
    let batch = RecordBatch::try_from_iter([("id", id), ("flag", flag), ("note", note)]).unwrap();
    let path = dir.join("t.parquet");
    let file = std::fs::File::create(&path).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    path.to_str().unwrap().to_string()
}

/// One partition: aggregates see the values in file order on both sides.
fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(1)
}

fn local_context() -> SessionContext {
    let ctx = SessionContext::new_with_config(config());
    colzip::datafusion::register(&ctx).unwrap();
    ctx
}

async fn rows(ctx: &SessionContext, sql: &str) -> String {
    let batches = ctx
        .sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"));
    pretty_format_batches(&batches).unwrap().to_string()
}

const QUERIES: &[&str] = &[
    // Scalar functions.
    "SELECT id, encode(colzip_compress(note, 'lzss'), 'hex') AS c, \
            colzip_decompress(colzip_compress(note, 'bwt')) = note AS same \
     FROM t WHERE id % 100 = 7 ORDER BY id",
    // Aggregates, per group.
    "SELECT flag, colzip_compressed_size(note, 'lzss') AS size, colzip_ratio(id, 'gmatch') AS ratio \
     FROM t GROUP BY flag ORDER BY flag",
];

/// The table function (timings left out). Its table travels in logical plans, its scan
/// not yet (see `colzip::datafusion::functions::StatsTableParts`).
const STATS: &str = "SELECT \"table\", \"column\", arrow_type, rows, raw_bytes, codec, compressed_bytes \
     FROM colzip_stats('t', 'lzss,snap') ORDER BY \"column\", codec";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_queries_equal_local_queries() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_table(dir.path());
    let local = local_context();
    local
        .register_parquet("t", &path, ParquetReadOptions::default())
        .await
        .unwrap();
    let cluster = colzip::cluster::standalone::context(config())
        .await
        .unwrap();
    cluster
        .register_parquet("t", &path, ParquetReadOptions::default())
        .await
        .unwrap();

    for sql in QUERIES {
        let expected = rows(&local, sql).await;
        assert!(expected.lines().count() > 4, "{sql}: {expected}");
        assert_eq!(rows(&cluster, sql).await, expected, "{sql}");
    }

    // COPY … STORED AS colzip_parquet, written on the executor, reads back the same.
    let out = dir.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let target = out.join("copy.parquet");
    let copy = format!(
        "COPY (SELECT * FROM t ORDER BY id) TO '{}' STORED AS colzip_parquet",
        target.display()
    );
    let written = rows(&cluster, &copy).await;
    assert!(written.contains("3000"), "{written}");
    local
        .register_parquet(
            "copy",
            target.to_str().unwrap(),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        rows(&local, "SELECT * FROM copy ORDER BY id").await,
        rows(&local, "SELECT * FROM t ORDER BY id").await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codecs_carry_plans_into_a_session_without_colzip() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_table(dir.path());
    let local = local_context();
    local
        .register_parquet("t", &path, ParquetReadOptions::default())
        .await
        .unwrap();
    // No colzip functions here: the codecs rebuild them from the plans.
    let bare = SessionContext::new_with_config(config());
    assert!(bare.udf("colzip_compress").is_err());

    for sql in &QUERIES[..2] {
        let frame = local.sql(sql).await.unwrap();
        let logical = frame.logical_plan().clone();
        let bytes =
            logical_plan_to_bytes_with_extension_codec(&logical, &LogicalCodec::default()).unwrap();
        let decoded = logical_plan_from_bytes_with_extension_codec(
            &bytes,
            &bare.task_ctx(),
            &LogicalCodec::default(),
        )
        .unwrap();
        assert_eq!(format!("{decoded}"), format!("{logical}"), "{sql}");

        let physical = frame.create_physical_plan().await.unwrap();
        let bytes = physical_plan_to_bytes_with_extension_codec(
            Arc::clone(&physical),
            &PhysicalCodec::default(),
        )
        .unwrap();
        let decoded = physical_plan_from_bytes_with_extension_codec(
            &bytes,
            &bare.task_ctx(),
            &PhysicalCodec::default(),
        )
        .unwrap();
        assert_eq!(
            displayable(decoded.as_ref()).indent(true).to_string(),
            displayable(physical.as_ref()).indent(true).to_string(),
            "{sql}"
        );
        let got = collect(decoded, bare.task_ctx()).await.unwrap();
        assert_eq!(
            pretty_format_batches(&got).unwrap().to_string(),
            rows(&local, sql).await,
            "{sql}"
        );
    }

    // The table function's table, rebuilt where the table it measures is registered.
    let logical = local.sql(STATS).await.unwrap().logical_plan().clone();
    let bytes =
        logical_plan_to_bytes_with_extension_codec(&logical, &LogicalCodec::default()).unwrap();
    bare.register_parquet("t", &path, ParquetReadOptions::default())
        .await
        .unwrap();
    let decoded = logical_plan_from_bytes_with_extension_codec(
        &bytes,
        &bare.task_ctx(),
        &LogicalCodec::default(),
    )
    .unwrap();
    assert_eq!(format!("{decoded}"), format!("{logical}"));
    let got = bare
        .execute_logical_plan(decoded)
        .await
        .unwrap()
        .collect()
        .await
        .unwrap();
    assert_eq!(
        pretty_format_batches(&got).unwrap().to_string(),
        rows(&local, STATS).await
    );
}
