//! The 22 TPC-H queries over plain and compressed tables, with the memory each holds:
//! `cargo run --release --example compressed_tpch [SF] [CODEC]` (default SF 0.1, `auto`).
//!
//! Both sessions generate the eight tables in-process; the compressed one holds every
//! column compressed (on the GPU when there is one, `COLZIP_BACKEND` to choose) and
//! decompresses only the columns a query reads. Each query runs once to warm up, then
//! once timed; the results of the two sessions are compared as printed tables.

use std::time::Duration;

use colzip::datafusion::session::{
    QueryRun, TableKind, TpchSession,
    statements::{self, Format},
};
use colzip::datafusion::table::CompressOptions;

fn printed(run: &QueryRun) -> colzip::Result<String> {
    match run.batches.first() {
        Some(batch) => statements::render(&batch.schema(), &run.batches, Format::Csv),
        None => Ok(String::new()),
    }
}

async fn timed(session: &TpchSession) -> colzip::Result<Vec<QueryRun>> {
    session.run_queries(1..=22).await?; // warm-up
    session.run_queries(1..=22).await
}

#[tokio::main]
async fn main() -> colzip::Result<()> {
    let mut args = std::env::args().skip(1);
    let sf: f64 = match args.next() {
        Some(text) => text
            .parse()
            .map_err(|e| colzip::Error::format(format!("SF must be a number: {e}")))?,
        None => 0.1,
    };
    let codec = args.next().unwrap_or_else(|| "auto".into()).parse()?;
    let plain = TpchSession::new(sf, TableKind::Plain)?;
    let compressed =
        TpchSession::new(sf, TableKind::Compressed(CompressOptions::from_env(codec)?))?;
    let mb = |bytes: usize| bytes as f64 / 1e6;
    println!(
        "SF {sf}: plain tables hold {:.1} MB, {} {:.1} MB: {:.2}x smaller",
        mb(plain.held_bytes()),
        compressed.kind().describe(),
        mb(compressed.held_bytes()),
        plain.held_bytes() as f64 / compressed.held_bytes().max(1) as f64
    );
    let (plain_runs, compressed_runs) = (timed(&plain).await?, timed(&compressed).await?);
    let (mut plain_total, mut compressed_total) = (Duration::ZERO, Duration::ZERO);
    println!("query  plain s  compressed s  slowdown  same result");
    for (p, c) in plain_runs.iter().zip(&compressed_runs) {
        plain_total += p.elapsed;
        compressed_total += c.elapsed;
        println!(
            "Q{:<5} {:>7.3}  {:>12.3}  {:>8.2}  {}",
            p.query,
            p.elapsed.as_secs_f64(),
            c.elapsed.as_secs_f64(),
            c.elapsed.as_secs_f64() / p.elapsed.as_secs_f64().max(1e-9),
            printed(p)? == printed(c)?
        );
    }
    println!(
        "total  {:>7.3}  {:>12.3}  {:>8.2}",
        plain_total.as_secs_f64(),
        compressed_total.as_secs_f64(),
        compressed_total.as_secs_f64() / plain_total.as_secs_f64().max(1e-9)
    );
    Ok(())
}
