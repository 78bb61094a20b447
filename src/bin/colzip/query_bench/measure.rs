//! Building each store and timing its queries: the Parquet stores' files, the loads, the
//! timed runs and their medians, the peak resident memory.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use datafusion::common::config::TableParquetOptions;
use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};
use rayon::prelude::*;

use super::same_result;
use super::{Config, Event, QueryRow, Store, StoreRow};
use colzip::archive::interrupted;
use colzip::codec::Placement;
use colzip::datafusion::session::{TableKind, register_generated, run_query};
use colzip::datafusion::table::CompressedTable;
use colzip::gpu::Backend;
use colzip::measure::median_duration;
use colzip::memory::{PeakResident, release_free_memory};
use colzip::tpch::{self, Table, TableData};
use colzip::{Error, Result};

/// How often [`PeakResident`] samples the resident memory while a store's queries run.
const RSS_INTERVAL: Duration = Duration::from_millis(10);

/// Where the `parquet` store's files go.
pub(super) enum ParquetDir {
    /// Removed when dropped, and by the CLI's handler when a signal ends the process
    /// (while `_registered` lives).
    Temporary {
        dir: tempfile::TempDir,
        _registered: interrupted::Registered,
    },
    Given(PathBuf),
}

/// The start of a temporary directory's name: `colzip-queries.PID.XXXXXX`, so that a
/// later run removes those of a run that was killed (SIGKILL runs no handler).
const TEMPORARY_PREFIX: &str = "colzip-queries.";

impl ParquetDir {
    /// `dir` (made if missing; none of the stores' files may exist), or a temporary one.
    pub(super) fn new(dir: Option<&Path>) -> Result<ParquetDir> {
        let Some(dir) = dir else {
            let parent = std::env::temp_dir();
            colzip::archive::remove_stale_dirs(&parent, TEMPORARY_PREFIX);
            let temp = tempfile::Builder::new()
                .prefix(&format!("{TEMPORARY_PREFIX}{}.", std::process::id()))
                .tempdir()
                .map_err(Error::file("create a temporary directory in", &parent))?;
            let _registered = interrupted::register(temp.path(), interrupted::Kind::Tree);
            return Ok(ParquetDir::Temporary {
                dir: temp,
                _registered,
            });
        };
        std::fs::create_dir_all(dir).map_err(Error::file("create", dir))?;
        // DataFusion takes paths as URLs: an absolute one names the same files wherever
        // it resolves them.
        let dir = std::fs::canonicalize(dir).map_err(Error::file("resolve", dir))?;
        for table in Table::ALL {
            for path in [
                parquet_path(&dir, table),
                colzip_parquet_path(&dir, table),
                dir.join(table.name()),
            ] {
                if path.symlink_metadata().is_ok() {
                    return Err(Error::format(format!(
                        "{} exists: give --dir a directory without the stores' \
                         <table>.parquet and <table>.colzip.parquet files and <table> \
                         directories",
                        path.display()
                    )));
                }
            }
        }
        Ok(ParquetDir::Given(dir))
    }

    pub(super) fn path(&self) -> &Path {
        match self {
            ParquetDir::Temporary { dir, .. } => dir.path(),
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
pub(super) struct Loaded {
    pub(super) store: Store,
    pub(super) ctx: SessionContext,
    pub(super) bytes_held: u64,
    pub(super) load_seconds: f64,
}

pub(super) async fn measure(
    config: &Config,
    placement: Placement,
    parquet_dir: Option<ParquetDir>,
    progress: &(dyn Fn(Event<'_>) + Sync),
) -> Result<(Vec<QueryRow>, Vec<StoreRow>)> {
    // The reference store, loaded first, and the generated tables when they are held
    // whole (with the memory store); without it, the compressed store is built as the
    // reference's files are written.
    let (reference, data, mut streamed_compressed) = match config.reference {
        Store::Memory => {
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
            let memory = load(Store::Memory, &data, placement, config, None, progress).await?;
            (memory, data, None)
        }
        _ => {
            let dir = parquet_dir.as_ref().ok_or_else(|| {
                Error::format("the parquet reference needs a directory for its files")
            })?;
            let (parquet, compressed) =
                super::streamed::load(config, placement, dir.path(), progress).await?;
            (parquet, Vec::new(), compressed)
        }
    };

    let reference_store = reference.store;
    let timed = config.stores.contains(&reference_store);
    let mut rows = Vec::new();
    let mut stores = Vec::new();
    let mut answers = HashMap::new();
    release_free_memory();
    let sampler = PeakResident::start(RSS_INTERVAL);
    let rss_before = colzip::memory::resident_bytes();
    for &query in &config.queries {
        if timed {
            let (row, batches) =
                time_query(&reference.ctx, reference_store, query, config.runs, None).await?;
            progress(Event::Measured(&row));
            rows.push(row);
            answers.insert(query, batches);
        } else {
            progress(Event::Reference {
                store: reference_store,
                query,
            });
            answers.insert(query, run_query(&reference.ctx, query).await?.batches);
        }
    }
    let peak = sampler.stop();
    if timed {
        let row = store_row(&reference, peak, rss_before, &rows);
        progress(Event::Done(&row));
        stores.push(row);
    }

    // The other stores are built from the generated batches (the Parquet stores from the
    // reference's session), which are then dropped with the reference: each store's
    // queries run with only its own data held.
    let mut others = Vec::new();
    for &store in config.stores.iter().filter(|&&s| s != reference_store) {
        if store == Store::Compressed
            && let Some(compressed) = streamed_compressed.take()
        {
            others.push(compressed);
            continue;
        }
        let source = store.is_parquet().then_some(&reference.ctx);
        let dir = parquet_dir.as_ref().map(ParquetDir::path);
        others.push(load(store, &data, placement, config, source.zip(dir), progress).await?);
    }
    drop(data);
    drop(reference);
    for store in others {
        release_free_memory();
        let sampler = PeakResident::start(RSS_INTERVAL);
        let rss_before = colzip::memory::resident_bytes();
        for &query in &config.queries {
            let (row, _) = time_query(
                &store.ctx,
                store.store,
                query,
                config.runs,
                answers.get(&query).map(Vec::as_slice),
            )
            .await?;
            progress(Event::Measured(&row));
            rows.push(row);
        }
        let peak = sampler.stop();
        let mut row = store_row(&store, peak, rss_before, &rows);
        if store.store == Store::Compressed {
            row.gpu_resident_bytes = Some(gpu_resident_bytes(&store.ctx).await);
            row.pinned_pool_bytes = Some(colzip::gpu::PinnedPool::global().held() as u64);
        }
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

/// Bytes of the session's compressed tables kept in GPU memory.
async fn gpu_resident_bytes(ctx: &SessionContext) -> u64 {
    let mut total = 0;
    for table in Table::ALL {
        if let Ok(provider) = ctx.table_provider(table.name()).await
            && let Some(compressed) = provider.downcast_ref::<CompressedTable>()
        {
            total += compressed.gpu_resident_bytes() as u64;
        }
    }
    total
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
        gpu_resident_bytes: None,
        pinned_pool_bytes: None,
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
    let ctx = colzip::datafusion::session::context_from_env()?;
    let sum = |tables: Vec<colzip::datafusion::session::TableMemory>| {
        tables.iter().map(|t| t.held_bytes as u64).sum()
    };
    let bytes_held = match store {
        Store::Memory => sum(register_generated(
            &ctx,
            data.to_vec(),
            &TableKind::Plain,
            &|_| {},
        )?),
        Store::Compressed => {
            let kind = TableKind::Compressed(config.compress_options(placement));
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
    let sampler = PeakResident::start(RSS_INTERVAL);
    let warm = run_query(ctx, query).await?;
    let expected = reference.unwrap_or(&warm.batches);
    let mut difference = match reference {
        Some(reference) => same_result::difference(reference, &warm.batches)?,
        None => None,
    };
    let mut times = Vec::with_capacity(runs);
    let mut planning = Vec::with_capacity(runs);
    let (mut scan, mut decompress) = (0.0, 0.0);
    for _ in 0..runs {
        let run = run_query(ctx, query).await?;
        times.push(run.elapsed);
        planning.push(run.planning);
        scan += run.scan_seconds / runs as f64;
        decompress += run.decompress_seconds / runs as f64;
        if difference.is_none() {
            difference = same_result::difference(expected, &run.batches)?;
        }
    }
    let row = QueryRow {
        store,
        query,
        seconds: median_duration(&mut times).as_secs_f64(),
        plan_seconds: median_duration(&mut planning).as_secs_f64(),
        rows: warm.rows(),
        equal: difference.is_none(),
        difference,
        scan_seconds: store.is_parquet().then_some(scan),
        decompress_seconds: (store == Store::ColzipParquet).then_some(decompress),
        peak_rss_bytes: sampler.stop(),
    };
    Ok((row, warm.batches))
}
