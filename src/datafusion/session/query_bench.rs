//! The 22 TPC-H queries over several stores of the same data, every result checked
//! against the plain in-memory one: what `colzip queries` runs.
//!
//! The eight tables are generated once, in-process, and held by each [`Store`]:
//!
//! - `memory`: DataFusion `MemTable`s of the generated batches;
//! - `compressed`: colzip [`CompressedTable`](crate::datafusion::table::CompressedTable)s,
//!   every column compressed with the chosen codec on the chosen backend;
//! - `parquet`: one SNAPPY Parquet file per table, written by DataFusion
//!   (`DataFrame::write_parquet`) and read by DataFusion's stock Parquet reader;
//! - `colzip-parquet`: one Parquet file per table written by colzip (`COPY … STORED AS
//!   COLZIP_PARQUET`, gmatch's SNAPPY pages), read by colzip's Parquet scan
//!   ([`crate::datafusion::parquet_scan`]: each row group's pages decompressed in one
//!   batched call); the `COPY` on the chosen backend, the scan's decompression on the GPU
//!   only with `gpu` (under `auto` the scan decompresses on the CPU: see `parquet_scan`).
//!
//! Each query runs once to warm up, then [`Config::runs`] timed runs (planning and
//! execution; the median counts). Every run's result, the warm-up's included, is compared
//! with the `memory` store's ([`same_result::difference`]: values as printed, floats with a
//! relative tolerance). The `memory` store always runs first and gives the reference; when
//! it is not among the stores asked for, each query runs on it once, untimed, and it is
//! not reported. For the Parquet stores, each store's row also gives the time its file
//! scans took and, for `colzip-parquet`, the part of it spent decompressing pages (both
//! summed over partitions, per run). Stores run one after another, each holding only its own data while its
//! queries run (the generated batches are dropped once the other stores are loaded), so
//! each store's peak resident memory is its own.
//!
//! ```
//! use colzip::datafusion::session::query_bench::{self, Config, Store};
//!
//! let config = Config {
//!     sf: 0.001,
//!     stores: vec![Store::Memory, Store::Compressed],
//!     queries: vec![1, 6],
//!     runs: 1,
//!     ..Config::default()
//! };
//! let report = query_bench::run(&config, &|_| {})?;
//! assert!(report.all_equal());
//! assert_eq!(report.queries.len(), 4);
//! assert!(report.stores[1].bytes_held < report.stores[0].bytes_held);
//! # Ok::<(), colzip::Error>(())
//! ```

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use datafusion::common::config::TableParquetOptions;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use rayon::prelude::*;
use serde::Serialize;

use super::{TableKind, register_generated, run_query, same_result};
use crate::codec::Placement;
use crate::column::CodecChoice;
use crate::datafusion::table::CompressOptions;
use crate::gpu::Backend;
use crate::memory::{PeakResident, release_free_memory};
use crate::tpch::{self, Table, TableData};
use crate::{Error, Result};

/// How often [`PeakResident`] samples the resident memory while a store's queries run.
const RSS_INTERVAL: Duration = Duration::from_millis(10);

/// Where the tables are held; see the [module docs](self).
///
/// ```
/// use colzip::datafusion::session::query_bench::Store;
/// assert_eq!("parquet".parse::<Store>()?, Store::Parquet);
/// assert_eq!("colzip-parquet".parse::<Store>()?, Store::ColzipParquet);
/// # Ok::<(), colzip::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// DataFusion `MemTable`s.
    Memory,
    /// colzip `CompressedTable`s.
    Compressed,
    /// SNAPPY Parquet files written and read by DataFusion.
    Parquet,
    /// Parquet files written by colzip, read by colzip's scan.
    #[serde(rename = "colzip-parquet")]
    ColzipParquet,
}

impl Store {
    /// The four stores, in their default order.
    pub const ALL: [Store; 4] = [
        Store::Memory,
        Store::Compressed,
        Store::Parquet,
        Store::ColzipParquet,
    ];

    /// Whether the store reads Parquet files.
    pub fn is_parquet(self) -> bool {
        matches!(self, Store::Parquet | Store::ColzipParquet)
    }

    /// The store's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Compressed => "compressed",
            Store::Parquet => "parquet",
            Store::ColzipParquet => "colzip-parquet",
        }
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Store {
    type Err = Error;

    /// A store by name.
    fn from_str(text: &str) -> Result<Store> {
        let lower = text.trim().to_ascii_lowercase();
        Store::ALL
            .into_iter()
            .find(|s| s.name() == lower)
            .ok_or_else(|| {
                Error::format(format!(
                    "unknown store '{text}' (expected memory, compressed, parquet or \
                     colzip-parquet)"
                ))
            })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// TPC-H scale factor.
    pub sf: f64,
    /// The stores to measure, in the order they run and are reported (no repeats).
    pub stores: Vec<Store>,
    /// The queries, 1 to 22 (no repeats).
    pub queries: Vec<usize>,
    /// Timed runs per query and store, after one warm-up run (at least 1).
    pub runs: usize,
    /// Codec of the `compressed` store.
    pub codec: CodecChoice,
    /// Where the `compressed` store's codecs and the `colzip-parquet` store's page
    /// compression run; its scans decompress on the GPU only with [`Backend::Gpu`].
    pub backend: Backend,
    /// Directory for the Parquet stores' files (`<table>.parquet` for `parquet`,
    /// `<table>.colzip.parquet` for `colzip-parquet`, which must not exist yet; they are
    /// kept); `None`: a temporary directory, removed at the end.
    pub dir: Option<PathBuf>,
    /// Whether the `compressed` store's scans evaluate the filters they can
    /// ([`CompressOptions::scan_filters`]).
    pub scan_filters: bool,
}

impl Default for Config {
    /// SF 0.1, the four stores, the 22 queries, 3 runs, `auto` on the CPU.
    fn default() -> Self {
        Config {
            sf: 0.1,
            stores: Store::ALL.to_vec(),
            queries: (1..=22).collect(),
            runs: 3,
            codec: CodecChoice::Auto,
            backend: Backend::Cpu,
            dir: None,
            scan_filters: true,
        }
    }
}

/// One query on one store.
#[derive(Clone, Debug, Serialize)]
pub struct QueryRow {
    pub store: Store,
    pub query: usize,
    /// Median of the timed runs, planning and execution, in seconds.
    pub seconds: f64,
    /// Rows the query returned.
    pub rows: usize,
    /// Whether every run's result equals the `memory` store's.
    pub equal: bool,
    /// The first difference, when not equal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<String>,
    /// For the Parquet stores: the time its file scans took, summed over their
    /// partitions (the timed runs' mean), in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_seconds: Option<f64>,
    /// For `colzip-parquet`: the part of `scan_seconds` spent decompressing pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompress_seconds: Option<f64>,
}

/// One store: what it holds and what its queries took.
#[derive(Clone, Debug, Serialize)]
pub struct StoreRow {
    pub store: Store,
    /// Memory the tables hold (`memory`: Arrow memory of the batches, `compressed`: the
    /// codec streams), or for the Parquet stores the files' bytes on disk.
    pub bytes_held: u64,
    /// Peak resident memory of the process while the store's queries ran (sampled every
    /// 10 ms); `null` where it cannot be read (not Linux).
    pub peak_rss_bytes: Option<u64>,
    /// Resident memory when the store's queries began: what the peak rose from.
    pub rss_before_bytes: Option<u64>,
    /// Time to build the store from the generated tables (compression; writing the
    /// Parquet files), in seconds.
    pub load_seconds: f64,
    /// For the Parquet stores: the time the file scans of its queries took, summed over
    /// the scans' partitions, per run (the timed runs' mean), in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_seconds: Option<f64>,
    /// For `colzip-parquet`: the part of `scan_seconds` spent in batched page
    /// decompression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompress_seconds: Option<f64>,
}

/// What [`run`] measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub sf: f64,
    /// The `compressed` store's backend, as asked for: auto, cpu or gpu.
    pub backend: String,
    /// The GPU that backend may use, if any.
    pub gpu: Option<String>,
    /// The `compressed` store's codec.
    pub codec: String,
    /// Whether the `compressed` store's scans evaluated the filters they can.
    pub scan_filters: bool,
    pub runs: usize,
    /// One row per store and query, store by store in [`Config::stores`] order.
    pub queries: Vec<QueryRow>,
    /// One row per store, in [`Config::stores`] order.
    pub stores: Vec<StoreRow>,
    /// Each store's per-query times against the `memory` and `parquet` stores' (those
    /// measured).
    pub comparisons: Vec<Comparison>,
}

/// One store's query times relative to another's, query by query: totals hide a store
/// that is slow on most queries behind one query that is slow elsewhere.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub store: Store,
    /// The store compared with.
    pub against: Store,
    /// The geometric mean of the per-query ratios of medians (below 1: faster).
    pub geometric_mean: f64,
    /// The query with the largest ratio, and that ratio.
    pub worst_query: usize,
    pub worst_ratio: f64,
    /// How many queries both stores ran.
    pub queries: usize,
}

/// Every store against the `memory` and `parquet` stores, where both ran some query.
pub fn comparisons(queries: &[QueryRow], stores: &[StoreRow]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for against in [Store::Memory, Store::Parquet] {
        for store in stores.iter().map(|s| s.store).filter(|&s| s != against) {
            let ratios: Vec<(usize, f64)> = queries
                .iter()
                .filter(|q| q.store == store)
                .filter_map(|q| {
                    let reference = queries
                        .iter()
                        .find(|r| r.store == against && r.query == q.query)?;
                    (q.seconds > 0.0 && reference.seconds > 0.0)
                        .then(|| (q.query, q.seconds / reference.seconds))
                })
                .collect();
            let Some(&(worst_query, worst_ratio)) =
                ratios.iter().max_by(|a, b| a.1.total_cmp(&b.1))
            else {
                continue;
            };
            let log_mean = ratios.iter().map(|r| r.1.ln()).sum::<f64>() / ratios.len() as f64;
            out.push(Comparison {
                store,
                against,
                geometric_mean: log_mean.exp(),
                worst_query,
                worst_ratio,
                queries: ratios.len(),
            });
        }
    }
    out
}

/// Progress of a [`run`].
#[derive(Debug)]
pub enum Event<'a> {
    /// A table is being generated.
    Generating(Table),
    /// A table was generated.
    Generated { table: Table, rows: usize },
    /// A store is being built.
    Loading(Store),
    /// A store was built: it holds `bytes_held` bytes, made in `seconds`.
    Loaded {
        store: Store,
        bytes_held: u64,
        seconds: f64,
    },
    /// The reference result of a query is being computed on the `memory` store, which
    /// was not asked for (so it is not timed).
    Reference(usize),
    /// A query was measured on a store.
    Measured(&'a QueryRow),
    /// A store's queries are done.
    Done(&'a StoreRow),
}

impl Report {
    /// Whether every result of every store equals the `memory` store's.
    pub fn all_equal(&self) -> bool {
        self.queries.iter().all(|q| q.equal)
    }

    /// The report as one JSON document.
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::format(e.to_string()))
    }

    /// The report as text: a row per query with a column of seconds per store and
    /// whether all stores agree, the totals, then a row per store, then any differences.
    pub fn to_table(&self) -> String {
        use std::fmt::Write;

        let stores: Vec<Store> = self.stores.iter().map(|s| s.store).collect();
        let mut by_query: Vec<usize> = Vec::new();
        let mut seconds: HashMap<(Store, usize), &QueryRow> = HashMap::new();
        for row in &self.queries {
            if !by_query.contains(&row.query) {
                by_query.push(row.query);
            }
            seconds.insert((row.store, row.query), row);
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "TPC-H SF {}: median seconds of {} timed run(s) after a warm-up; compressed store: \
             codec {}, backend {}{}, filters {}",
            self.sf,
            self.runs,
            self.codec,
            self.backend,
            self.gpu
                .as_ref()
                .map_or(String::new(), |name| format!(" ({name})")),
            if self.scan_filters {
                "evaluated in the scan"
            } else {
                "above the scan"
            }
        );
        let _ = write!(out, "{:<6}", "query");
        for store in &stores {
            let _ = write!(out, " {:>14}", store.name());
        }
        let _ = writeln!(out, "  {:>4}  equal to memory", "rows");
        for &query in &by_query {
            let _ = write!(out, "{:<6}", format!("Q{query}"));
            let mut rows = 0;
            let mut differ = Vec::new();
            for store in &stores {
                match seconds.get(&(*store, query)) {
                    Some(row) => {
                        let _ = write!(out, " {:>14.3}", row.seconds);
                        rows = row.rows.max(rows);
                        if !row.equal {
                            differ.push(store.name());
                        }
                    }
                    None => {
                        let _ = write!(out, " {:>14}", "-");
                    }
                }
            }
            let verdict = if differ.is_empty() {
                "yes".to_string()
            } else {
                format!("NO: {}", differ.join(", "))
            };
            let _ = writeln!(out, "  {rows:>4}  {verdict}");
        }
        let totals: Vec<f64> = stores.iter().map(|s| self.total_seconds(*s)).collect();
        let _ = write!(out, "{:<6}", "total");
        for total in &totals {
            let _ = write!(out, " {total:>14.3}");
        }
        let _ = writeln!(out);
        let _ = writeln!(out);
        let memory = self.stores.iter().find(|s| s.store == Store::Memory);
        let _ = writeln!(
            out,
            "{:<14} {:>12} {:>9} {:>12} {:>12} {:>9} {:>9} {:>9}",
            "store",
            "held MB",
            "vs memory",
            "peak RSS MB",
            "RSS before",
            "load s",
            "queries s",
            "vs memory"
        );
        let mb = |bytes: Option<u64>| {
            bytes.map_or("-".to_string(), |b| format!("{:.1}", b as f64 / 1e6))
        };
        for (row, total) in self.stores.iter().zip(&totals) {
            let (held_ratio, time_ratio) = match memory {
                Some(m) => (
                    format!("{:.2}x", m.bytes_held as f64 / row.bytes_held.max(1) as f64),
                    format!(
                        "{:.2}x",
                        total / self.total_seconds(Store::Memory).max(1e-9)
                    ),
                ),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{:<14} {:>12} {:>9} {:>12} {:>12} {:>9.3} {:>9.3} {:>9}",
                row.store.name(),
                mb(Some(row.bytes_held)),
                held_ratio,
                mb(row.peak_rss_bytes),
                mb(row.rss_before_bytes),
                row.load_seconds,
                total,
                time_ratio
            );
        }
        let _ = writeln!(
            out,
            "(held: smaller by the factor shown; queries: the sum of the medians, slower by \
             the factor shown)"
        );
        for row in &self.stores {
            let Some(scan) = row.scan_seconds else {
                continue;
            };
            let share = row.decompress_seconds.map_or(String::new(), |d| {
                format!(
                    ", decompressing pages {d:.3} s ({:.1}% of it)",
                    100.0 * d / scan.max(1e-9)
                )
            });
            let _ = writeln!(
                out,
                "{}: file scans {scan:.3} s a run (summed over partitions){share}",
                row.store.name()
            );
        }
        for c in &self.comparisons {
            let _ = writeln!(
                out,
                "{} against {}: per-query geometric mean {:.2}x, worst Q{} {:.2}x ({} queries)",
                c.store.name(),
                c.against.name(),
                c.geometric_mean,
                c.worst_query,
                c.worst_ratio,
                c.queries
            );
        }
        for row in self.queries.iter().filter(|q| !q.equal) {
            let _ = writeln!(
                out,
                "Q{} on {} differs from memory: {}",
                row.query,
                row.store,
                row.difference.as_deref().unwrap_or("")
            );
        }
        out
    }

    /// The sum of the medians of `store`'s queries, in seconds.
    pub fn total_seconds(&self, store: Store) -> f64 {
        self.queries
            .iter()
            .filter(|q| q.store == store)
            .map(|q| q.seconds)
            .sum()
    }
}

/// Generates the tables, builds the stores and runs the queries on each, as `config`
/// says, reporting progress to `progress`. Builds its own tokio runtime: call it from
/// outside one. An error stops the run; results that differ do not (see
/// [`Report::all_equal`]).
pub fn run(config: &Config, progress: &(dyn Fn(Event<'_>) + Sync)) -> Result<Report> {
    check(config)?;
    // Before minutes of work: `--backend gpu` without a GPU, a bad scale factor, a
    // Parquet directory that cannot be used.
    let placement = Placement::new(config.backend)?;
    tpch::check_scale_factor(&Table::ALL, config.sf)?;
    let parquet_dir = if config.stores.iter().any(|s| s.is_parquet()) {
        Some(ParquetDir::new(config.dir.as_deref())?)
    } else {
        None
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (queries, stores) = runtime.block_on(measure(config, placement, parquet_dir, progress))?;
    Ok(Report {
        comparisons: comparisons(&queries, &stores),
        sf: config.sf,
        backend: config.backend.to_string(),
        gpu: placement.gpu().map(|g| g.info().name.clone()),
        codec: config.codec.to_string(),
        scan_filters: config.scan_filters,
        runs: config.runs,
        queries,
        stores,
    })
}

fn check(config: &Config) -> Result<()> {
    if config.stores.is_empty() {
        return Err(Error::format("no store to measure"));
    }
    if config.queries.is_empty() {
        return Err(Error::format("no query to run"));
    }
    if config.runs == 0 {
        return Err(Error::format("at least one timed run is needed"));
    }
    for (i, store) in config.stores.iter().enumerate() {
        if config.stores[..i].contains(store) {
            return Err(Error::format(format!("store {store} is named twice")));
        }
    }
    for (i, &query) in config.queries.iter().enumerate() {
        if tpch::queries::query(query).is_none() {
            return Err(Error::format(format!(
                "there is no TPC-H query {query} (1 to 22)"
            )));
        }
        if config.queries[..i].contains(&query) {
            return Err(Error::format(format!("query {query} is named twice")));
        }
    }
    Ok(())
}

/// Where the `parquet` store's files go.
enum ParquetDir {
    Temporary(tempfile::TempDir),
    Given(PathBuf),
}

impl ParquetDir {
    /// `dir` (made if missing; none of the stores' files may exist), or a temporary one.
    fn new(dir: Option<&Path>) -> Result<ParquetDir> {
        let Some(dir) = dir else {
            let temp = tempfile::Builder::new()
                .prefix("colzip-queries")
                .tempdir()
                .map_err(Error::file(
                    "create a temporary directory in",
                    &std::env::temp_dir(),
                ))?;
            return Ok(ParquetDir::Temporary(temp));
        };
        std::fs::create_dir_all(dir).map_err(Error::file("create", dir))?;
        // DataFusion takes paths as URLs: an absolute one names the same files wherever
        // it resolves them.
        let dir = std::fs::canonicalize(dir).map_err(Error::file("resolve", dir))?;
        for table in Table::ALL {
            for path in [parquet_path(&dir, table), colzip_parquet_path(&dir, table)] {
                if path.symlink_metadata().is_ok() {
                    return Err(Error::format(format!(
                        "{} exists: give --dir a directory without the stores' \
                         <table>.parquet and <table>.colzip.parquet files",
                        path.display()
                    )));
                }
            }
        }
        Ok(ParquetDir::Given(dir))
    }

    fn path(&self) -> &Path {
        match self {
            ParquetDir::Temporary(temp) => temp.path(),
            ParquetDir::Given(dir) => dir,
        }
    }
}

fn parquet_path(dir: &Path, table: Table) -> PathBuf {
    dir.join(format!("{}.parquet", table.name()))
}

/// Where the `colzip-parquet` store's file of `table` goes.
fn colzip_parquet_path(dir: &Path, table: Table) -> PathBuf {
    dir.join(format!("{}.colzip.parquet", table.name()))
}

/// A store ready for its queries.
struct Loaded {
    store: Store,
    ctx: SessionContext,
    bytes_held: u64,
    load_seconds: f64,
}

async fn measure(
    config: &Config,
    placement: Placement,
    parquet_dir: Option<ParquetDir>,
    progress: &(dyn Fn(Event<'_>) + Sync),
) -> Result<(Vec<QueryRow>, Vec<StoreRow>)> {
    let data: Vec<TableData> = Table::ALL
        .par_iter()
        .map(|&table| {
            progress(Event::Generating(table));
            let data = tpch::generate(table, config.sf)?;
            progress(Event::Generated {
                table,
                rows: data.rows(),
            });
            Ok(data)
        })
        .collect::<Result<_>>()?;

    // The reference: the memory store, first, while the generated batches are held anyway.
    let memory = load(Store::Memory, &data, placement, config, None, progress).await?;
    let timed = config.stores.contains(&Store::Memory);
    let mut rows = Vec::new();
    let mut stores = Vec::new();
    let mut reference = HashMap::new();
    release_free_memory();
    let sampler = PeakResident::start(RSS_INTERVAL);
    let rss_before = crate::memory::resident_bytes();
    for &query in &config.queries {
        if timed {
            let (row, batches) =
                time_query(&memory.ctx, Store::Memory, query, config.runs, None).await?;
            progress(Event::Measured(&row));
            rows.push(row);
            reference.insert(query, batches);
        } else {
            progress(Event::Reference(query));
            reference.insert(query, run_query(&memory.ctx, query).await?.batches);
        }
    }
    let peak = sampler.stop();
    if timed {
        let row = store_row(&memory, peak, rss_before, &rows);
        progress(Event::Done(&row));
        stores.push(row);
    }

    // The other stores are built from the generated batches, which are then dropped with
    // the memory store: each store's queries run with only its own data held.
    let mut others = Vec::new();
    for &store in config.stores.iter().filter(|&&s| s != Store::Memory) {
        let source = store.is_parquet().then_some(&memory.ctx);
        let dir = parquet_dir.as_ref().map(ParquetDir::path);
        others.push(load(store, &data, placement, config, source.zip(dir), progress).await?);
    }
    drop(data);
    drop(memory);
    for store in others {
        release_free_memory();
        let sampler = PeakResident::start(RSS_INTERVAL);
        let rss_before = crate::memory::resident_bytes();
        for &query in &config.queries {
            let (row, _) = time_query(
                &store.ctx,
                store.store,
                query,
                config.runs,
                reference.get(&query).map(Vec::as_slice),
            )
            .await?;
            progress(Event::Measured(&row));
            rows.push(row);
        }
        let peak = sampler.stop();
        let row = store_row(&store, peak, rss_before, &rows);
        progress(Event::Done(&row));
        stores.push(row);
        // Dropped here, before the next store's queries.
    }
    // Report in the order asked for.
    let order = |store: Store| config.stores.iter().position(|&s| s == store);
    stores.sort_by_key(|row| order(row.store));
    rows.sort_by_key(|row| order(row.store));
    Ok((rows, stores))
}

/// The row of `store`, whose queries' rows are among `rows`.
fn store_row(
    store: &Loaded,
    peak: Option<u64>,
    rss_before: Option<u64>,
    rows: &[QueryRow],
) -> StoreRow {
    let own = || rows.iter().filter(|r| r.store == store.store);
    let total = |values: Vec<Option<f64>>| values.into_iter().sum::<Option<f64>>();
    StoreRow {
        store: store.store,
        bytes_held: store.bytes_held,
        peak_rss_bytes: peak,
        rss_before_bytes: rss_before,
        load_seconds: store.load_seconds,
        scan_seconds: total(own().map(|r| r.scan_seconds).collect()),
        decompress_seconds: total(own().map(|r| r.decompress_seconds).collect()),
    }
}

/// Builds `store` from `data` in a fresh session; the `parquet` store writes its files
/// from `parquet` (the memory store's session, and the directory).
async fn load(
    store: Store,
    data: &[TableData],
    placement: Placement,
    config: &Config,
    parquet: Option<(&SessionContext, &Path)>,
    progress: &(dyn Fn(Event<'_>) + Sync),
) -> Result<Loaded> {
    progress(Event::Loading(store));
    let start = Instant::now();
    let ctx = super::context()?;
    let sum = |tables: Vec<super::TableMemory>| tables.iter().map(|t| t.held_bytes as u64).sum();
    let bytes_held = match store {
        Store::Memory => sum(register_generated(
            &ctx,
            data.to_vec(),
            &TableKind::Plain,
            &|_| {},
        )?),
        Store::Compressed => {
            let kind = TableKind::Compressed(CompressOptions {
                codec: config.codec,
                placement,
                scan_filters: config.scan_filters,
                ..CompressOptions::default()
            });
            sum(register_generated(&ctx, data.to_vec(), &kind, &|_| {})?)
        }
        Store::Parquet => {
            let (source, dir) = parquet.ok_or_else(|| {
                Error::format("the parquet store is written from the memory store")
            })?;
            write_parquet(source, &ctx, dir).await?
        }
        Store::ColzipParquet => {
            let (source, dir) = parquet.ok_or_else(|| {
                Error::format("the colzip-parquet store is written from the memory store")
            })?;
            write_colzip_parquet(source, &ctx, dir, config.backend).await?
        }
    };
    let loaded = Loaded {
        store,
        ctx,
        bytes_held,
        load_seconds: start.elapsed().as_secs_f64(),
    };
    progress(Event::Loaded {
        store,
        bytes_held,
        seconds: loaded.load_seconds,
    });
    Ok(loaded)
}

/// Writes every table of `source` to `dir/<table>.parquet` with DataFusion's writer and
/// SNAPPY, and registers the files in `ctx` with DataFusion's Parquet reader; their bytes.
async fn write_parquet(source: &SessionContext, ctx: &SessionContext, dir: &Path) -> Result<u64> {
    let mut bytes = 0;
    for table in Table::ALL {
        let path = parquet_path(dir, table);
        let name = path
            .to_str()
            .ok_or_else(|| Error::format(format!("{} is not UTF-8", dir.display())))?;
        let mut options = TableParquetOptions::default();
        options.global.compression = Some("snappy".into());
        source
            .table(table.name())
            .await
            .map_err(Error::from)?
            .write_parquet(
                name,
                DataFrameWriteOptions::new().with_single_file_output(true),
                Some(options),
            )
            .await
            .map_err(Error::from)?;
        bytes += std::fs::metadata(&path)
            .map_err(Error::file("read the metadata of", &path))?
            .len();
        ctx.register_parquet(table.name(), name, ParquetReadOptions::default())
            .await
            .map_err(Error::from)?;
    }
    Ok(bytes)
}

/// Writes every table of `source` to `dir/<table>.colzip.parquet` with colzip's writer
/// (`COPY … STORED AS COLZIP_PARQUET` on `backend`), and registers the files in `ctx` as
/// `COLZIP_PARQUET` tables, read by colzip's scan on `backend`; their bytes.
async fn write_colzip_parquet(
    source: &SessionContext,
    ctx: &SessionContext,
    dir: &Path,
    backend: Backend,
) -> Result<u64> {
    let mut bytes = 0;
    for table in Table::ALL {
        let path = colzip_parquet_path(dir, table);
        let name = path
            .to_str()
            .ok_or_else(|| Error::format(format!("{} is not UTF-8", dir.display())))?;
        // A path in SQL: quotes doubled.
        let quoted = name.replace('\'', "''");
        let options = format!("OPTIONS ('backend' '{backend}')");
        for (session, statement) in [
            (
                source,
                format!(
                    "COPY {} TO '{quoted}' STORED AS COLZIP_PARQUET {options}",
                    table.name()
                ),
            ),
            (
                ctx,
                format!(
                    "CREATE EXTERNAL TABLE {} STORED AS COLZIP_PARQUET LOCATION '{quoted}' \
                     {options}",
                    table.name()
                ),
            ),
        ] {
            session
                .sql(&statement)
                .await
                .map_err(Error::from)?
                .collect()
                .await
                .map_err(Error::from)?;
        }
        bytes += std::fs::metadata(&path)
            .map_err(Error::file("read the metadata of", &path))?
            .len();
    }
    Ok(bytes)
}

/// Runs `query` once to warm up and `runs` times timed on `ctx`; compares every result
/// with `reference` (the warm-up's own result when `None`). The row, and the warm-up's
/// result.
async fn time_query(
    ctx: &SessionContext,
    store: Store,
    query: usize,
    runs: usize,
    reference: Option<&[RecordBatch]>,
) -> Result<(QueryRow, Vec<RecordBatch>)> {
    let warm = run_query(ctx, query).await?;
    let expected = reference.unwrap_or(&warm.batches);
    let mut difference = match reference {
        Some(reference) => same_result::difference(reference, &warm.batches)?,
        None => None,
    };
    let mut times = Vec::with_capacity(runs);
    let (mut scan, mut decompress) = (0.0, 0.0);
    for _ in 0..runs {
        let run = run_query(ctx, query).await?;
        times.push(run.elapsed);
        scan += run.scan_seconds / runs as f64;
        decompress += run.decompress_seconds / runs as f64;
        if difference.is_none() {
            difference = same_result::difference(expected, &run.batches)?;
        }
    }
    let row = QueryRow {
        store,
        query,
        seconds: median(&mut times).as_secs_f64(),
        rows: warm.rows(),
        equal: difference.is_none(),
        difference,
        scan_seconds: store.is_parquet().then_some(scan),
        decompress_seconds: (store == Store::ColzipParquet).then_some(decompress),
    };
    Ok((row, warm.batches))
}

/// The median of `times` (the mean of the middle two of an even count).
fn median(times: &mut [Duration]) -> Duration {
    times.sort();
    match times.len() {
        0 => Duration::ZERO,
        n if n % 2 == 1 => times[n / 2],
        n => (times[n / 2 - 1] + times[n / 2]) / 2,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians() {
        let ms = Duration::from_millis;
        assert_eq!(median(&mut [ms(5)]), ms(5));
        assert_eq!(median(&mut [ms(9), ms(1), ms(5)]), ms(5));
        assert_eq!(median(&mut [ms(9), ms(1), ms(5), ms(3)]), ms(4));
    }

    #[test]
    fn bad_configs_are_refused() {
        let bad = |config: Config| check(&config).unwrap_err().to_string();
        assert!(
            bad(Config {
                stores: vec![],
                ..Config::default()
            })
            .contains("no store")
        );
        assert!(
            bad(Config {
                queries: vec![23],
                ..Config::default()
            })
            .contains("query 23")
        );
        assert!(
            bad(Config {
                queries: vec![1, 1],
                ..Config::default()
            })
            .contains("twice")
        );
        assert!(
            bad(Config {
                stores: vec![Store::Parquet, Store::Parquet],
                ..Config::default()
            })
            .contains("twice")
        );
        assert!(
            bad(Config {
                runs: 0,
                ..Config::default()
            })
            .contains("timed run")
        );
        assert!(
            "disk"
                .parse::<Store>()
                .unwrap_err()
                .to_string()
                .contains("expected memory")
        );
    }

    #[test]
    fn the_table_shows_differences_and_totals() {
        let row = |store: Store, query, seconds, equal: bool| QueryRow {
            store,
            query,
            seconds,
            rows: 3,
            equal,
            difference: (!equal).then(|| "row 1, column 2: 5 where 4 was expected".into()),
            scan_seconds: store.is_parquet().then_some(2.0),
            decompress_seconds: (store == Store::ColzipParquet).then_some(0.5),
        };
        let store = |store: Store, bytes_held| StoreRow {
            store,
            bytes_held,
            peak_rss_bytes: Some(3_000_000),
            rss_before_bytes: None,
            load_seconds: 0.5,
            scan_seconds: store.is_parquet().then_some(4.0),
            decompress_seconds: (store == Store::ColzipParquet).then_some(1.0),
        };
        let mut report = Report {
            comparisons: Vec::new(),
            scan_filters: true,
            sf: 0.5,
            backend: "cpu".into(),
            gpu: None,
            codec: "gmatch".into(),
            runs: 3,
            queries: vec![
                row(Store::Memory, 6, 1.0, true),
                row(Store::Memory, 1, 2.0, true),
                row(Store::Parquet, 6, 1.5, true),
                row(Store::Parquet, 1, 4.0, false),
                row(Store::ColzipParquet, 6, 1.0, true),
                row(Store::ColzipParquet, 1, 3.0, true),
            ],
            stores: vec![
                store(Store::Memory, 8_000_000),
                store(Store::Parquet, 2_000_000),
                store(Store::ColzipParquet, 2_500_000),
            ],
        };
        report.comparisons = comparisons(&report.queries, &report.stores);
        assert!(!report.all_equal());
        assert_eq!(report.total_seconds(Store::Parquet), 5.5);
        // colzip-parquet against memory: Q6 1.0x, Q1 1.5x; against parquet: 0.667x, 0.75x.
        assert!(
            text_has(
                &report.to_table(),
                "colzip-parquet against memory: per-query geometric mean 1.22x, worst Q1 1.50x (2 queries)"
            ),
            "{}",
            report.to_table()
        );
        assert!(text_has(
            &report.to_table(),
            "colzip-parquet against parquet: per-query geometric mean 0.71x, worst Q1 0.75x"
        ));
        assert!(text_has(
            &report.to_table(),
            "parquet against memory: per-query geometric mean 1.73x, worst Q1 2.00x"
        ));
        let text = report.to_table();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("SF 0.5") && lines[0].contains("codec gmatch"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("Q6 ") && lines[2].ends_with("yes"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("Q1 ") && lines[3].ends_with("NO: parquet"),
            "{text}"
        );
        assert!(
            lines[4].contains("3.000") && lines[4].contains("5.500"),
            "{text}"
        );
        let parquet = lines.iter().find(|l| l.starts_with("parquet ")).unwrap();
        assert!(
            parquet.contains("4.00x") && parquet.contains("1.83x"),
            "{text}"
        );
        let ours = lines
            .iter()
            .find(|l| l.starts_with("colzip-parquet "))
            .unwrap();
        assert!(ours.contains("3.20x") && ours.contains("1.33x"), "{text}");
        // The share of scan time spent decompressing; the stock reader has no such part.
        assert!(
            text.contains("colzip-parquet: file scans 4.000 s a run")
                && text.contains("(25.0% of it)"),
            "{text}"
        );
        assert!(
            text.contains("parquet: file scans 4.000 s a run (summed over partitions)\n"),
            "{text}"
        );
        assert!(text.ends_with(
            "Q1 on parquet differs from memory: row 1, column 2: 5 where 4 was expected\n"
        ));
        let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
        assert_eq!(json["stores"][2]["store"], "colzip-parquet");
        assert_eq!(json["stores"][2]["decompress_seconds"], 1.0);
        assert_eq!(json["stores"][1].get("decompress_seconds"), None);
        assert_eq!(json["queries"][5]["decompress_seconds"], 0.5);
        assert_eq!(json["queries"][3]["equal"], false);
        assert_eq!(json["queries"][0].get("difference"), None);
        assert_eq!(
            json["stores"][1]["rss_before_bytes"],
            serde_json::Value::Null
        );
        assert_eq!(json["comparisons"][0]["store"], "parquet");
        assert_eq!(json["comparisons"][0]["against"], "memory");
        assert_eq!(json["comparisons"][0]["worst_query"], 1);
    }

    fn text_has(text: &str, line_start: &str) -> bool {
        text.lines().any(|l| l.starts_with(line_start))
    }

    #[test]
    fn a_given_parquet_dir_is_made_and_its_files_are_not_overwritten() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("new/sub");
        assert!(ParquetDir::new(Some(&dir)).is_ok());
        assert!(dir.is_dir());
        std::fs::write(dir.join("orders.parquet"), b"mine").unwrap();
        let error = ParquetDir::new(Some(&dir)).err().unwrap().to_string();
        assert!(error.contains("orders.parquet exists"), "{error}");
    }
}
