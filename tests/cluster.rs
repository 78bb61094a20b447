//! colzip on a Ballista cluster (feature `ballista`): a standalone scheduler and executor
//! in this process run SQL with colzip's scalar functions, aggregates and
//! `COLZIP_PARQUET` writer, and TPC-H queries, with the results (and files) of a local
//! session; and colzip's extension codecs carry plans with colzip's functions into a
//! session that lacks them; colzip's chunked aggregates over groups of several chunks
//! give a local session's results over one partition and two. Then the same with a
//! scheduler and two executors started as `colzip cluster` processes (on 127.0.0.1, ports
//! chosen at run time), and an executor killed in the middle of a query. Every test is
//! bounded in time.
#![cfg(all(feature = "cli", feature = "ballista"))]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

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

/// Two Parquet files of 20,000 rows each in `dir/wide/`: a flag of 2 values and a note of
/// about 300 bytes (NULL at times), about 12 MiB of notes in all, so that each flag's
/// group holds more than one of `colzip_ratio`'s 4 MiB chunks. Two files, so that a scan
/// over two partitions has a file for each on a cluster as locally (Ballista drops the
/// round-robin repartition a local session would spread one file's batches with); SNAPPY
/// pages keep them under the 10 MiB from which a scan cuts files into byte ranges instead.
fn write_wide_table(dir: &Path) -> String {
    let n = 40_000usize;
    let flag: ArrayRef = Arc::new(StringArray::from_iter_values(
        (0..n).map(|i| ["A", "B"][i % 2]),
    ));
    let note: ArrayRef = Arc::new(StringArray::from_iter((0..n).map(|i| {
        (i % 23 != 5).then(|| {
            format!(
                "order {} line {}: {}",
                i % 997,
                i % 7,
                "carefully packed deposits sleep ".repeat(8 + i % 3)
            )
        })
    })));
    let batch = RecordBatch::try_from_iter([("flag", flag), ("note", note)]).unwrap();
    let wide = dir.join("wide");
    std::fs::create_dir(&wide).unwrap();
    for part in 0..2 {
        let file = std::fs::File::create(wide.join(format!("part-{part}.parquet"))).unwrap();
        let props = parquet::file::properties::WriterProperties::builder()
            .set_compression(parquet::basic::Compression::SNAPPY)
            .build();
        let mut writer =
            parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
        writer.write(&batch.slice(part * n / 2, n / 2)).unwrap();
        writer.close().unwrap();
    }
    format!("{}/", wide.display())
}

/// colzip's chunked aggregates over groups of several chunks, any partitioning.
const WIDE: &str = "SELECT flag, count(*) AS n, colzip_ratio(note, 'gmatch') AS ratio, \
     colzip_compressed_size(note, 'lzss') AS size FROM wide GROUP BY flag ORDER BY flag";

/// With the whole-group form, whose result depends on the order partial states merge in:
/// one partition only.
const WIDE_EXACT: &str = "SELECT flag, colzip_ratio(note, 'gmatch') AS ratio, \
     colzip_ratio_exact(note, 'gmatch') AS exact, colzip_compressed_size_exact(note, 'lzss') AS size \
     FROM wide GROUP BY flag ORDER BY flag";

/// How many groups of [`WIDE_EXACT`] have a chunked ratio other than the whole group's
/// (all of them, since every group spans chunks).
const CHUNKED_DIFFERS: &str = "SELECT count(*) AS n FROM (SELECT colzip_ratio(note, 'gmatch') AS r, \
     colzip_ratio_exact(note, 'gmatch') AS e FROM wide GROUP BY flag) WHERE r <> e";

/// `ctx` with the table `wide` of [`write_wide_table`] at `path`.
async fn register_wide(ctx: &SessionContext, path: &str) {
    ctx.register_parquet("wide", path, ParquetReadOptions::default())
        .await
        .unwrap();
}

/// The directory `tempfile` hands out temporary paths in, for this process: Ballista's
/// standalone executor keeps its shuffle files under such a path and never removes them
/// (see `colzip::cluster::standalone::context`). It lies in the target directory, is
/// this process's own, and is removed when the process exits, so that the tests leave
/// nothing in the system's temporary directory.
fn private_temp_dir() -> &'static Path {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    extern "C" fn remove() {
        if let Some(dir) = DIR.get() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
    DIR.get_or_init(|| {
        let parent = Path::new(env!("CARGO_TARGET_TMPDIR"));
        // What a run that did not reach its exit (killed, or aborted) left.
        for entry in std::fs::read_dir(parent).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if let Some(pid) = name.strip_prefix("cluster-tests.")
                && !Path::new("/proc").join(pid).exists()
            {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = parent.join(format!("cluster-tests.{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        tempfile::env::override_temp_dir(&dir)
            .unwrap_or_else(|set| panic!("tempfile's directory was set before: {set:?}"));
        // SAFETY: registers a function without arguments to run at exit; it only
        // removes the directory.
        assert_eq!(unsafe { libc::atexit(remove) }, 0);
        dir
    })
}

/// A standalone cluster's session (`colzip::cluster::standalone::context`), its
/// executor's files in [`private_temp_dir`].
async fn standalone(config: SessionConfig) -> SessionContext {
    private_temp_dir();
    colzip::cluster::standalone::context(config).await.unwrap()
}

/// Fails unless the standalone executors' work went to [`private_temp_dir`]: a stage's
/// output under `.tmpXXXXXX/<job>/<stage>`, as Ballista names it. Had it gone to the
/// system's temporary directory, it would stay there.
fn assert_executor_files_are_private() {
    let stages = std::fs::read_dir(private_temp_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(".tmp"))
        .flat_map(|work| std::fs::read_dir(work).unwrap())
        .flat_map(|job| std::fs::read_dir(job.unwrap().path()).unwrap())
        .count();
    assert!(
        stages > 0,
        "no executor stage directory in {}",
        private_temp_dir().display()
    );
}

/// Every standalone cluster of these tests starts through [`standalone`]: one started
/// directly would leave its executor's files in the system's temporary directory.
#[test]
fn standalone_clusters_start_with_a_private_temporary_directory() {
    let call = concat!("standalone::", "context(");
    assert_eq!(
        include_str!("cluster.rs").matches(call).count(),
        1,
        "start standalone clusters with `standalone()`, not `{call}`"
    );
}

/// One partition: aggregates see the values in file order on both sides.
fn config() -> SessionConfig {
    SessionConfig::new().with_target_partitions(1)
}

/// Two partitions, each reading its own file: a partition that runs ahead would otherwise
/// take the other's file (DataFusion's file-stream work stealing), and which rows each
/// partial aggregation sees would depend on timing.
fn two_partitions() -> SessionConfig {
    config().with_target_partitions(2).set_bool(
        "datafusion.execution.enable_file_stream_work_stealing",
        false,
    )
}

fn local_context() -> SessionContext {
    let ctx = SessionContext::new_with_config(config());
    colzip::datafusion::register(&ctx).unwrap();
    ctx
}

/// A local session over one partition with the table `wide` at `path`.
async fn local_context_with_wide(path: &str) -> SessionContext {
    let ctx = local_context();
    register_wide(&ctx, path).await;
    ctx
}

/// `ctx` with the table `t` of [`write_table`] at `path`.
async fn register_t(ctx: &SessionContext, path: &str) {
    ctx.register_parquet("t", path, ParquetReadOptions::default())
        .await
        .unwrap();
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

/// The table function (timings left out): its table travels in logical plans, its scan
/// (with the table's Parquet scans as children) in physical plans, measured on the
/// executor.
const STATS: &str = "SELECT \"table\", \"column\", arrow_type, rows, raw_bytes, codec, compressed_bytes \
     FROM colzip_stats('t', 'lzss,snap') ORDER BY \"column\", codec";

/// Runs `test`, failing it when it takes longer than `seconds`.
async fn bounded(seconds: u64, test: impl std::future::Future<Output = ()>) {
    tokio::time::timeout(Duration::from_secs(seconds), test)
        .await
        .unwrap_or_else(|_| panic!("the test took longer than {seconds} s"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_queries_equal_local_queries() {
    bounded(120, cluster_queries()).await;
}

async fn cluster_queries() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_table(dir.path());
    let local = local_context();
    register_t(&local, &path).await;
    let cluster = standalone(config()).await;
    register_t(&cluster, &path).await;

    for sql in QUERIES {
        let expected = rows(&local, sql).await;
        assert!(expected.lines().count() > 4, "{sql}: {expected}");
        assert_eq!(rows(&cluster, sql).await, expected, "{sql}");
    }
    assert_executor_files_are_private();

    // Groups of several chunks: the chunked aggregates and the whole-group forms give the
    // local results (over two partitions in `tpch_queries`).
    let wide = write_wide_table(dir.path());
    register_wide(&local, &wide).await;
    register_wide(&cluster, &wide).await;
    for sql in [WIDE_EXACT, WIDE, CHUNKED_DIFFERS] {
        let expected = rows(&local, sql).await;
        assert_eq!(rows(&cluster, sql).await, expected, "{sql}");
    }
    assert!(rows(&local, CHUNKED_DIFFERS).await.contains("| 2 |"));

    // colzip_stats measures on the executor what a local session measures that reads
    // Parquet strings as Ballista does (Utf8, not Utf8View: the types and plain sizes
    // differ, the compressed sizes not).
    let classic = SessionContext::new_with_config(config().set_bool(
        "datafusion.execution.parquet.schema_force_view_types",
        false,
    ));
    colzip::datafusion::register(&classic).unwrap();
    register_t(&classic, &path).await;
    let expected = rows(&classic, STATS).await;
    assert!(expected.contains("| Utf8 "), "{expected}");
    assert_eq!(expected.lines().count(), 6 + 4, "{expected}");
    assert_eq!(rows(&cluster, STATS).await, expected);

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
    bounded(120, codecs_carry_plans()).await;
}

async fn codecs_carry_plans() {
    let dir = tempfile::tempdir().unwrap();
    let path = write_table(dir.path());
    let local = local_context();
    register_t(&local, &path).await;
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
    register_t(&bare, &path).await;
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

/// TPC-H at this scale factor: lineitem has about 60,000 rows.
const SF: f64 = 0.01;
const TPCH_TABLES: [colzip::tpch::Table; 4] = [
    colzip::tpch::Table::Lineitem,
    colzip::tpch::Table::Orders,
    colzip::tpch::Table::Customer,
    colzip::tpch::Table::Part,
];

/// The TPC-H tables generated in-process as Parquet files `<table>.parquet` in `dir`, in
/// row groups of 16,384 rows, without an embedded Arrow schema (as other writers make
/// them): each reader picks its own string form (a local session `Utf8View`, Ballista
/// `Utf8`).
fn write_tpch(dir: &Path) -> Vec<(&'static str, PathBuf)> {
    write_tables(dir, &TPCH_TABLES, SF)
}

fn write_tables(
    dir: &Path,
    tables: &[colzip::tpch::Table],
    sf: f64,
) -> Vec<(&'static str, PathBuf)> {
    tables
        .iter()
        .map(|&table| {
            let data = colzip::tpch::generate(table, sf).unwrap();
            let batch = RecordBatch::try_new(data.schema, data.columns).unwrap();
            let path = dir.join(format!("{}.parquet", table.name()));
            let props = parquet::file::properties::WriterProperties::builder()
                .set_max_row_group_row_count(Some(16_384))
                .build();
            let options = parquet::arrow::arrow_writer::ArrowWriterOptions::new()
                .with_properties(props)
                .with_skip_arrow_metadata(true);
            let file = std::fs::File::create(&path).unwrap();
            let mut writer =
                parquet::arrow::ArrowWriter::try_new_with_options(file, batch.schema(), options)
                    .unwrap();
            writer.write(&batch).unwrap();
            writer.close().unwrap();
            (table.name(), path)
        })
        .collect()
}

async fn register_all(ctx: &SessionContext, tables: &[(&str, PathBuf)]) {
    for (name, path) in tables {
        ctx.register_parquet(*name, path.to_str().unwrap(), ParquetReadOptions::default())
            .await
            .unwrap();
    }
}

/// Q1 with colzip's aggregates per group (one partition: the values reach them in file
/// order on both sides, so the ratios are exact).
const Q1_COLZIP: &str = "select l_returnflag, l_linestatus, count(*) as count_order, sum(l_quantity) as sum_qty, \
       colzip_ratio(l_comment, 'gmatch') as comment_ratio, \
       colzip_compressed_size(l_shipdate, 'intpack') as shipdate_bytes, \
       colzip_ratio(l_extendedprice, 'lzss') as price_ratio \
     from lineitem where l_shipdate <= date '1998-12-01' - interval '90' day \
     group by l_returnflag, l_linestatus order by l_returnflag, l_linestatus";

/// Per ship mode, over a join's output (sizes of `stored` do not depend on row order).
const JOIN_COLZIP: &str = "select l_shipmode, count(*) as n, colzip_compressed_size(o_comment, 'stored') as comments, \
       colzip_ratio(l_shipmode, 'stored') as one \
     from orders join lineitem on o_orderkey = l_orderkey \
     where o_orderpriority = '1-URGENT' group by l_shipmode order by l_shipmode";

/// The TPC-H tables on the standalone cluster: Q1, Q3, Q6, Q12 and Q14 (Q1, Q3 and Q12
/// over two partitions too) and colzip's aggregates give a local session's results, and `COPY … TO 'dir/' STORED AS
/// COLZIP_PARQUET` writes the files a local session writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tpch_on_the_cluster_equals_local() {
    bounded(300, tpch_queries()).await;
}

async fn tpch_queries() {
    let dir = tempfile::tempdir().unwrap();
    let tables = write_tpch(dir.path());
    let local = local_context();
    register_all(&local, &tables).await;
    let cluster = standalone(config()).await;
    register_all(&cluster, &tables).await;

    let mut queries: Vec<&str> = [1, 3, 6, 12, 14]
        .iter()
        .map(|&n| colzip::tpch::queries::query(n).unwrap())
        .collect();
    queries.extend([Q1_COLZIP, JOIN_COLZIP]);
    for sql in queries {
        let expected = rows(&local, sql).await;
        assert!(expected.lines().count() > 4, "{sql}: {expected}");
        assert_eq!(rows(&cluster, sql).await, expected, "{sql}");
    }

    // The TPC-H queries again over two partitions (shuffles between the stages).
    let local2 = SessionContext::new_with_config(two_partitions());
    colzip::datafusion::register(&local2).unwrap();
    register_all(&local2, &tables).await;
    let cluster2 = standalone(two_partitions()).await;
    register_all(&cluster2, &tables).await;
    for n in [1, 3, 12] {
        let sql = colzip::tpch::queries::query(n).unwrap();
        assert_eq!(
            rows(&cluster2, sql).await,
            rows(&local2, sql).await,
            "{sql}"
        );
    }
    // colzip's chunked aggregates over groups of several chunks, a file per partition:
    // each partition ends its own chunks (other figures than one partition's), and the
    // partial sums the shuffle carries add up to the local ones.
    let wide = write_wide_table(dir.path());
    register_wide(&local2, &wide).await;
    register_wide(&cluster2, &wide).await;
    let expected = rows(&local2, WIDE).await;
    assert_ne!(
        expected,
        rows(&local_context_with_wide(&wide).await, WIDE).await
    );
    assert_eq!(rows(&cluster2, WIDE).await, expected);

    // COPY to a directory (three files: DataFusion's demuxer spreads the rows), on the
    // executor and locally; the local writer in a session that reads strings as Ballista
    // does (Utf8, not Utf8View), since a file's footer records its Arrow schema.
    let copy = |to: &Path| {
        format!(
            "COPY (SELECT l_orderkey, l_linenumber, l_shipdate, l_extendedprice, l_shipmode, l_comment \
                   FROM lineitem WHERE l_orderkey % 3 = 0 ORDER BY l_orderkey, l_linenumber) \
             TO '{}/' STORED AS COLZIP_PARQUET",
            to.display()
        )
    };
    let like_ballista = SessionContext::new_with_config(config().set_bool(
        "datafusion.execution.parquet.schema_force_view_types",
        false,
    ));
    colzip::datafusion::register(&like_ballista).unwrap();
    register_all(&like_ballista, &tables).await;
    let (on_cluster, on_local) = (dir.path().join("cluster"), dir.path().join("local"));
    let written = rows(&cluster, &copy(&on_cluster)).await;
    assert_eq!(written, rows(&like_ballista, &copy(&on_local)).await);
    let files = |dir: &Path| {
        let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| {
                let path = e.unwrap().path();
                // <write id>_<part>.parquet: the write id is random.
                let name = path.file_name().unwrap().to_str().unwrap();
                let part = name.rsplit('_').next().unwrap().to_string();
                (part, std::fs::read(&path).unwrap())
            })
            .collect();
        files.sort();
        files
    };
    let (a, b) = (files(&on_cluster), files(&on_local));
    assert!(!a.is_empty());
    assert_eq!(
        a.iter().map(|(n, f)| (n, f.len())).collect::<Vec<_>>(),
        b.iter().map(|(n, f)| (n, f.len())).collect::<Vec<_>>()
    );
    assert!(a == b, "the cluster's files differ from the local ones");
    // And they read back as the rows they were made of.
    local
        .register_parquet(
            "copied",
            &format!("{}/", on_cluster.display()),
            ParquetReadOptions::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        rows(
            &local,
            "SELECT * FROM copied ORDER BY l_orderkey, l_linenumber"
        )
        .await,
        rows(
            &local,
            "SELECT l_orderkey, l_linenumber, l_shipdate, l_extendedprice, l_shipmode, l_comment \
             FROM lineitem WHERE l_orderkey % 3 = 0 ORDER BY l_orderkey, l_linenumber"
        )
        .await
    );
}

/// A `colzip` process of the test, stopped when dropped.
struct Process {
    child: std::process::Child,
}

impl Process {
    /// `colzip args`, its temporary files under `tmp`.
    fn start(args: &[&str], tmp: &Path) -> Process {
        let child = std::process::Command::new(env!("CARGO_BIN_EXE_colzip"))
            .args(args)
            .env("TMPDIR", tmp)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("colzip {args:?}: {e}"));
        Process { child }
    }

    /// Kills the process (SIGKILL: no chance to say goodbye) and waits for it.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Asks the process to stop with SIGTERM, as a service manager does: [`Self::stop_by`].
    fn stop(&mut self) -> bool {
        self.stop_by(libc::SIGTERM)
    }

    /// Sends the process `signal` and waits for it; kills it after 30 s. Whether it
    /// exited by itself.
    fn stop_by(&mut self, signal: libc::c_int) -> bool {
        if self.child.try_wait().ok().flatten().is_some() {
            return true;
        }
        if let Ok(pid) = i32::try_from(self.child.id()) {
            // SAFETY: a plain system call on the child's pid, which is not reaped yet.
            unsafe { libc::kill(pid, signal) };
        }
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::time::Instant::now() < deadline {
            if self.child.try_wait().ok().flatten().is_some() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.kill();
        false
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

/// An address of 127.0.0.1 with a port free now, chosen at random below the ephemeral
/// range: a port the OS hands out for `bind(0)` could also become the local port of a
/// process's outgoing connection (an executor connects to the scheduler before it binds
/// its own port) before the process binds it.
fn free_address() -> std::net::SocketAddr {
    use std::hash::{BuildHasher, RandomState};
    let low: u16 = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse().ok())
        .unwrap_or(32768);
    let (first, count) = (10_000u16, low.saturating_sub(10_000).max(1000));
    for _ in 0..1000 {
        let port = first + (RandomState::new().hash_one(0u8) % u64::from(count)) as u16;
        if let Ok(listener) = std::net::TcpListener::bind(("127.0.0.1", port)) {
            return listener.local_addr().unwrap();
        }
    }
    panic!("no free port of 127.0.0.1 found");
}

/// Waits until something listens on `address` (at most 60 s).
async fn listening(address: std::net::SocketAddr, process: &mut Process) {
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(address).await.is_ok() {
            return;
        }
        if let Some(status) = process.child.try_wait().unwrap() {
            panic!("the process for {address} exited: {status}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("nothing listens on {address} after 60 s");
}

/// A scheduler and two executors as `colzip cluster` processes; the scheduler counts an
/// executor lost after `executor_timeout` seconds of silence. Their temporary files go
/// under `tmp` (removed after the processes stop: fields drop in order).
struct Cluster {
    scheduler: std::net::SocketAddr,
    processes: Vec<Process>,
    tmp: tempfile::TempDir,
}

impl Cluster {
    async fn start(executor_timeout: u64, concurrency: u32) -> Cluster {
        let scheduler = free_address();
        let tmp = tempfile::tempdir().unwrap();
        let mut processes = vec![Process::start(
            &[
                "cluster",
                "scheduler",
                "--bind",
                &scheduler.to_string(),
                "--executor-timeout",
                &executor_timeout.to_string(),
            ],
            tmp.path(),
        )];
        listening(scheduler, &mut processes[0]).await;
        for _ in 0..2 {
            let bind = free_address();
            let mut executor = Process::start(
                &[
                    "cluster",
                    "executor",
                    "--scheduler",
                    &scheduler.to_string(),
                    "--bind",
                    &bind.to_string(),
                    "--concurrency",
                    &concurrency.to_string(),
                ],
                tmp.path(),
            );
            // The executor serves its output once it has reached the scheduler.
            listening(bind, &mut executor).await;
            processes.push(executor);
        }
        Cluster {
            scheduler,
            processes,
            tmp,
        }
    }

    fn url(&self) -> String {
        format!("df://{}", self.scheduler)
    }
}

/// `colzip sql` with `args`, its standard output (it must succeed).
async fn colzip_sql(args: Vec<String>) -> String {
    let run = {
        let args = args.clone();
        move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_colzip"))
                .arg("sql")
                .args(&args)
                .stdin(std::process::Stdio::null())
                .output()
        }
    };
    let out = tokio::task::spawn_blocking(run).await.unwrap().unwrap();
    assert!(
        out.status.success(),
        "colzip sql {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// One scheduler and two executors as `colzip cluster` processes run TPC-H and colzip's
/// functions with a local session's results, from this process's client and from
/// `colzip sql --remote`, whose output equals a local `colzip sql` run's; then they are
/// stopped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn colzip_cluster_processes_equal_local() {
    bounded(300, cluster_processes()).await;
}

async fn cluster_processes() {
    let dir = tempfile::tempdir().unwrap();
    let tables = write_tpch(dir.path());
    let mut cluster = Cluster::start(180, 2).await;
    let remote = colzip::cluster::server::remote_context(&cluster.url(), config())
        .await
        .unwrap();
    register_all(&remote, &tables).await;
    let local = local_context();
    register_all(&local, &tables).await;
    for sql in [
        colzip::tpch::queries::query(1).unwrap(),
        colzip::tpch::queries::query(12).unwrap(),
        Q1_COLZIP,
        JOIN_COLZIP,
    ] {
        assert_eq!(rows(&remote, sql).await, rows(&local, sql).await, "{sql}");
    }
    // Groups of several chunks over two partitions, whose tasks the two executors share:
    // the partial sums they hand over add up to a local session's.
    let wide = write_wide_table(dir.path());
    let remote2 = colzip::cluster::server::remote_context(&cluster.url(), two_partitions())
        .await
        .unwrap();
    let local2 = SessionContext::new_with_config(two_partitions());
    colzip::datafusion::register(&local2).unwrap();
    register_wide(&remote2, &wide).await;
    register_wide(&local2, &wide).await;
    assert_eq!(rows(&remote2, WIDE).await, rows(&local2, WIDE).await);

    // The CLI: the same statements with and without --remote print the same CSV.
    let mut statements = String::from("SET datafusion.execution.target_partitions = 1;\n");
    for (name, path) in &tables {
        statements += &format!(
            "CREATE EXTERNAL TABLE {name} STORED AS PARQUET LOCATION '{}';\n",
            path.display()
        );
    }
    statements += Q1_COLZIP;
    statements += ";\nSELECT encode(colzip_compress(l_comment, 'gmatch'), 'hex') AS blob \
                   FROM lineitem WHERE l_orderkey < 40 ORDER BY l_orderkey, l_linenumber;\n";
    let args = |remote: Option<String>| {
        let mut args = vec![
            "--format".to_string(),
            "csv".into(),
            "-c".into(),
            statements.clone(),
        ];
        args.extend(
            remote
                .into_iter()
                .flat_map(|url| ["--remote".to_string(), url]),
        );
        args
    };
    let on_cluster = colzip_sql(args(Some(cluster.url()))).await;
    let on_local = colzip_sql(args(None)).await;
    assert!(on_cluster.lines().count() > 20, "{on_cluster}");
    assert_eq!(on_cluster, on_local);

    // Stopped as a service manager stops them (SIGTERM), executors first, one of them by
    // a hang-up (SIGHUP, a closed terminal): each exits by itself and removes its
    // temporary shuffle directory.
    for (i, process) in cluster.processes.iter_mut().enumerate().rev() {
        let (signal, name) = match i {
            2 => (libc::SIGHUP, "SIGHUP"),
            _ => (libc::SIGTERM, "SIGTERM"),
        };
        assert!(
            process.stop_by(signal),
            "cluster process {i} did not stop on {name}"
        );
    }
    let left: Vec<_> = std::fs::read_dir(cluster.tmp.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "left in the temporary directory: {left:?}");
    // Stopped: the scheduler no longer answers.
    assert!(
        tokio::net::TcpStream::connect(cluster.scheduler)
            .await
            .is_err()
    );
}

/// An executor killed in the middle of a query: the query fails with an error or
/// Ballista runs the lost tasks again on the other executor (then its result is right);
/// it never hangs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_executor_fails_or_retries_the_query() {
    bounded(240, killed_executor()).await;
}

async fn killed_executor() {
    let dir = tempfile::tempdir().unwrap();
    let tables = write_tables(dir.path(), &[colzip::tpch::Table::Lineitem], 0.05);
    // The scheduler gives up on a silent executor after 5 s.
    let mut cluster = Cluster::start(5, 1).await;
    let partitions = config().with_target_partitions(4);
    let remote = colzip::cluster::server::remote_context(&cluster.url(), partitions.clone())
        .await
        .unwrap();
    register_all(&remote, &tables).await;
    let local = SessionContext::new_with_config(partitions);
    colzip::datafusion::register(&local).unwrap();
    register_all(&local, &tables).await;
    // Slow on purpose (bwt over every comment), with an answer that does not depend on
    // the order of the values.
    let sql = "SELECT l_linenumber, count(*) AS n, colzip_compressed_size(l_comment, 'stored') AS plain, \
                      sum(CAST(colzip_decompress(colzip_compress(l_comment, 'bwt')) = l_comment AS INT)) AS same \
               FROM lineitem GROUP BY l_linenumber ORDER BY l_linenumber";
    let local_started = std::time::Instant::now();
    let expected = rows(&local, sql).await;
    eprintln!("locally: {:.1} s", local_started.elapsed().as_secs_f64());

    let started = std::time::Instant::now();
    let query = tokio::spawn(async move { remote.sql(sql).await?.collect().await });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        !query.is_finished(),
        "the query ended before the kill: make it slower"
    );
    cluster.processes[1].kill();
    let killed_at = started.elapsed();
    let outcome = query.await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    match outcome {
        Ok(batches) => {
            assert_eq!(
                pretty_format_batches(&batches).unwrap().to_string(),
                expected
            );
            eprintln!(
                "retried: the right result in {seconds:.1} s (executor killed at {killed_at:?})"
            );
        }
        Err(e) => {
            let message = e.to_string();
            assert!(!message.is_empty());
            eprintln!("failed in {seconds:.1} s (executor killed at {killed_at:?}): {message}");
        }
    }
}
