//! Parquet from a query: TPC-H lineitem written by `COPY … STORED AS COLZIP_PARQUET`
//! (SNAPPY pages made by gmatch, on the GPU when there is one) and by DataFusion's own
//! `STORED AS PARQUET` with SNAPPY, read back in SQL; then the compression stage alone,
//! gmatch against the `snap` crate on all cores over the same pages.
//! `cargo run --release --example parquet_from_query [SF] [DIR] [RUNS]` (default SF 0.1,
//! a temporary directory, 5 runs of each `COPY`, alternating, medians reported).

use std::path::{Path, PathBuf};
use std::time::Instant;

use bytes::Bytes;
use colzip::codec::Placement;
use colzip::datafusion::session::{
    TableKind, TpchSession,
    statements::{self, Format},
};
use colzip::gpu::Backend;
use colzip::measure::median;
use colzip::parquet::write::{WriteOptions, write_batches};
use datafusion::prelude::SessionContext;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, SerializedFileReader};
use rayon::prelude::*;

fn fail(e: impl std::fmt::Display) -> colzip::Error {
    colzip::Error::format(e.to_string())
}

async fn sql(ctx: &SessionContext, text: &str) -> colzip::Result<Vec<arrow::array::RecordBatch>> {
    ctx.sql(text)
        .await
        .map_err(fail)?
        .collect()
        .await
        .map_err(fail)
}

/// Seconds to run `text`, which writes `path` (removed first, so every run writes a new
/// file), and the file's size.
async fn timed_copy(ctx: &SessionContext, text: &str, path: &Path) -> colzip::Result<(f64, u64)> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    let start = Instant::now();
    sql(ctx, text).await?;
    let seconds = start.elapsed().as_secs_f64();
    Ok((seconds, std::fs::metadata(path)?.len()))
}

/// The page payloads of an UNCOMPRESSED Parquet file: what a SNAPPY writer compresses.
fn page_payloads(file: Bytes) -> colzip::Result<Vec<Bytes>> {
    let reader = SerializedFileReader::new(file).map_err(fail)?;
    let mut pages = Vec::new();
    for g in 0..reader.num_row_groups() {
        let group = reader.get_row_group(g).map_err(fail)?;
        for c in 0..group.num_columns() {
            for page in group.get_column_page_reader(c).map_err(fail)? {
                pages.push(page.map_err(fail)?.buffer().clone());
            }
        }
    }
    Ok(pages)
}

#[tokio::main]
async fn main() -> colzip::Result<()> {
    let mut args = std::env::args().skip(1);
    let sf: f64 = match args.next() {
        Some(text) => text
            .parse()
            .map_err(|e| fail(format!("SF must be a number: {e}")))?,
        None => 0.1,
    };
    let scratch = tempfile::tempdir()?;
    let dir = args
        .next()
        .map(PathBuf::from)
        .unwrap_or_else(|| scratch.path().into());
    let runs: usize = match args.next() {
        Some(text) => text
            .parse()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(|| fail(format!("RUNS must be a whole number >= 1, not '{text}'")))?,
        None => 5,
    };
    let session = TpchSession::new(sf, TableKind::Plain)?;
    let ctx = session.context();
    let ours = dir.join("lineitem-colzip.parquet");
    let stock = dir.join("lineitem-stock.parquet");
    let ours_sql = format!(
        "COPY (SELECT * FROM lineitem) TO '{}' STORED AS COLZIP_PARQUET",
        ours.display()
    );
    let stock_sql = format!(
        "COPY (SELECT * FROM lineitem) TO '{}' STORED AS PARQUET OPTIONS ('compression' 'snappy')",
        stock.display()
    );
    // Alternating runs, so a slow phase of the machine does not fall on one writer only.
    let (mut ours_runs, mut stock_runs) = (Vec::new(), Vec::new());
    let (mut ours_bytes, mut stock_bytes) = (0, 0);
    for run in 1..=runs {
        let (s, bytes) = timed_copy(ctx, &ours_sql, &ours).await?;
        ours_runs.push(s);
        ours_bytes = bytes;
        let (s, bytes) = timed_copy(ctx, &stock_sql, &stock).await?;
        stock_runs.push(s);
        stock_bytes = bytes;
        eprintln!(
            "run {run}/{runs}: COLZIP_PARQUET {:.3} s, PARQUET SNAPPY {:.3} s",
            ours_runs[run - 1],
            stock_runs[run - 1]
        );
    }
    let (ours_s, stock_s) = (median(&mut ours_runs), median(&mut stock_runs));
    println!("lineitem SF {sf}, written from a query (median of {runs} runs):");
    println!("  COLZIP_PARQUET   {ours_s:>7.3} s  {ours_bytes:>12} bytes");
    println!(
        "  PARQUET, SNAPPY  {stock_s:>7.3} s  {stock_bytes:>12} bytes  (ours: {:.2}x faster, size {:+.2}%)",
        stock_s / ours_s,
        (ours_bytes as f64 / stock_bytes as f64 - 1.0) * 100.0
    );
    // Any Parquet reader reads the file; here DataFusion's, in SQL.
    sql(
        ctx,
        &format!(
            "CREATE EXTERNAL TABLE li STORED AS COLZIP_PARQUET LOCATION '{}'",
            ours.display()
        ),
    )
    .await?;
    let check = "SELECT count(*) AS n, sum(l_quantity) AS q, max(l_comment) AS c FROM";
    let shown = |batches: Vec<arrow::array::RecordBatch>| match batches.first() {
        Some(b) => statements::render(&b.schema(), &batches, Format::Csv),
        None => Ok(String::new()),
    };
    let read = shown(sql(ctx, &format!("{check} li")).await?)?;
    let table = shown(sql(ctx, &format!("{check} lineitem")).await?)?;
    println!(
        "  read back in SQL: {}",
        if read == table {
            "the same aggregates as the table"
        } else {
            "DIFFERENT aggregates"
        }
    );

    // The compression stage alone, on the same pages: the writer's batched gmatch
    // (GPU when present) against snap on every core.
    let batches: Vec<_> = sql(ctx, "SELECT * FROM lineitem").await?;
    let schema = batches
        .first()
        .ok_or_else(|| fail("lineitem is empty"))?
        .schema();
    let placement = Placement::new(Backend::from_env()?)?;
    let mut file = Vec::new();
    let summary = write_batches(
        &mut file,
        schema.clone(),
        batches.clone(),
        &WriteOptions::default().with_placement(placement),
    )?;
    let mut plain = Vec::new();
    let props = WriterProperties::builder()
        .set_compression(parquet::basic::Compression::UNCOMPRESSED)
        .build();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(&mut plain, schema, Some(props)).map_err(fail)?;
    for batch in &batches {
        writer.write(batch).map_err(fail)?;
    }
    writer.close().map_err(fail)?;
    let pages = page_payloads(Bytes::from(plain))?;
    let start = Instant::now();
    let snap_bytes: usize = pages
        .par_iter()
        .map(|p| snap::raw::Encoder::new().compress_vec(p).map(|c| c.len()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(fail)?
        .iter()
        .sum();
    let snap_s = start.elapsed().as_secs_f64();
    let gbps = |s: f64| summary.uncompressed_bytes as f64 / s / 1e9;
    println!(
        "compression stage, {} pages, {} bytes ({} of {} row groups on the GPU):",
        summary.pages, summary.uncompressed_bytes, summary.gpu_row_groups, summary.row_groups
    );
    println!(
        "  gmatch (colzip writer)      {:>7.3} s  {:>7.2} GB/s  -> {} bytes",
        summary.compress_seconds,
        gbps(summary.compress_seconds),
        summary.compressed_bytes
    );
    println!(
        "  snap, {:>2} threads           {:>7.3} s  {:>7.2} GB/s  -> {} bytes  (gmatch {:.2}x faster)",
        rayon::current_num_threads(),
        snap_s,
        gbps(snap_s),
        snap_bytes,
        snap_s / summary.compress_seconds
    );
    println!(
        "  writer stages (the encoding overlaps the rest): encode {:.3} s, compress {:.3} s, rebuild and append {:.3} s",
        summary.encode_seconds, summary.compress_seconds, summary.write_seconds
    );
    Ok(())
}
