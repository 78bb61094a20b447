//! The eight TPC-H tables generated in-process and registered in a session, plain or
//! compressed, with the memory each holds; and timed runs of the 22 queries over them.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use rayon::prelude::*;

use super::TableKind;
use crate::datafusion::parquet_scan::metrics::DECOMPRESS_TIME;
use crate::datafusion::table::{CompressedTable, arrow_memory};
use crate::tpch::{self, Table, TableData, queries};
use crate::{Error, Result};

/// One registered table and the memory it holds.
#[derive(Clone, Debug, PartialEq)]
pub struct TableMemory {
    pub table: Table,
    pub rows: usize,
    /// Arrow memory of the generated batches (what a `MemTable` holds).
    pub plain_bytes: usize,
    /// Memory the registered table holds: `plain_bytes` for a plain table, the codec
    /// streams for a compressed one.
    pub held_bytes: usize,
    /// Time to generate the table's batches.
    pub generate_time: Duration,
    /// Time to build the table from them (compression, for a compressed table).
    pub load_time: Duration,
}

/// Progress while tables are being made.
#[derive(Debug)]
pub enum TpchEvent<'a> {
    Generating(Table),
    Loaded(&'a TableMemory),
}

/// A session holding the TPC-H tables; see the [module docs](super).
pub struct TpchSession {
    ctx: SessionContext,
    sf: f64,
    kind: TableKind,
    tables: Vec<TableMemory>,
}

/// One query's run: its time (planning and execution) and its result.
#[derive(Clone, Debug)]
pub struct QueryRun {
    pub query: usize,
    /// Planning and execution.
    pub elapsed: Duration,
    /// The part of `elapsed` before execution began: parsing, logical and physical
    /// planning (the table providers' `scan` calls included).
    pub planning: Duration,
    pub batches: Vec<RecordBatch>,
    /// Time the plan's file scans took, summed over their partitions, in seconds (zero
    /// without file scans).
    pub scan_seconds: f64,
    /// Time colzip's Parquet scans spent in batched page decompression, summed over their
    /// partitions, in seconds (zero without them).
    pub decompress_seconds: f64,
}

impl QueryRun {
    /// Rows returned.
    pub fn rows(&self) -> usize {
        self.batches.iter().map(|b| b.num_rows()).sum()
    }
}

impl TpchSession {
    /// A fresh [`context`](super::context) with the eight tables at scale factor `sf`.
    pub fn new(sf: f64, kind: TableKind) -> Result<Self> {
        Self::with_progress(super::context()?, sf, kind, &|_| {})
    }

    /// The eight tables registered in `ctx`, reporting progress to `progress`.
    pub fn with_progress(
        ctx: SessionContext,
        sf: f64,
        kind: TableKind,
        progress: &(dyn Fn(TpchEvent<'_>) + Sync),
    ) -> Result<Self> {
        let tables = register_tables(&ctx, sf, &kind, progress)?;
        Ok(TpchSession {
            ctx,
            sf,
            kind,
            tables,
        })
    }

    /// The session's context (to run any SQL over the tables).
    pub fn context(&self) -> &SessionContext {
        &self.ctx
    }

    /// The scale factor.
    pub fn sf(&self) -> f64 {
        self.sf
    }

    /// How the tables are held.
    pub fn kind(&self) -> &TableKind {
        &self.kind
    }

    /// Each table's rows and memory, in [`Table::ALL`] order.
    pub fn tables(&self) -> &[TableMemory] {
        &self.tables
    }

    /// Memory the tables hold together.
    pub fn held_bytes(&self) -> usize {
        self.tables.iter().map(|t| t.held_bytes).sum()
    }

    /// Arrow memory of the tables as plain batches.
    pub fn plain_bytes(&self) -> usize {
        self.tables.iter().map(|t| t.plain_bytes).sum()
    }

    /// Runs TPC-H query `n` (1 to 22), timing planning and execution.
    pub async fn run_query(&self, n: usize) -> Result<QueryRun> {
        run_query(&self.ctx, n).await
    }

    /// Runs `queries` one after another (e.g. `1..=22`).
    pub async fn run_queries(
        &self,
        queries: impl IntoIterator<Item = usize>,
    ) -> Result<Vec<QueryRun>> {
        let mut runs = Vec::new();
        for n in queries {
            runs.push(self.run_query(n).await?);
        }
        Ok(runs)
    }
}

/// Generates the eight tables at `sf` on worker threads and registers them in `ctx` under
/// their TPC-H names, as `kind` says, in as many partitions as the session's
/// `target_partitions`.
pub fn register_tables(
    ctx: &SessionContext,
    sf: f64,
    kind: &TableKind,
    progress: &(dyn Fn(TpchEvent<'_>) + Sync),
) -> Result<Vec<TableMemory>> {
    // The eight tables are generated at once: all of them must fit.
    tpch::check_scale_factor(&Table::ALL, sf)?;
    let loaded = Table::ALL
        .par_iter()
        .map(|&table| {
            progress(TpchEvent::Generating(table));
            let start = Instant::now();
            let data = tpch::generate(table, sf)?;
            let generate_time = start.elapsed();
            let (provider, mut memory) = load(ctx, data, kind)?;
            memory.generate_time = generate_time;
            progress(TpchEvent::Loaded(&memory));
            Ok((provider, memory))
        })
        .collect::<Result<Vec<_>>>()?;
    register(ctx, loaded)
}

/// Registers tables generated beforehand (by [`tpch::generate`]) in `ctx` under their
/// TPC-H names, as `kind` says, like [`register_tables`]: one generation can then fill
/// several sessions (a [`TableData`] is cheap to clone: its columns are shared). The
/// [`TableMemory::generate_time`] it reports is zero.
///
/// ```
/// use colzip::datafusion::session::{self, TableKind};
/// use colzip::tpch::{self, Table};
///
/// let data = vec![tpch::generate(Table::Nation, 0.001)?];
/// let ctx = session::context()?;
/// let tables = session::register_generated(&ctx, data, &TableKind::Plain, &|_| {})?;
/// assert_eq!(tables[0].rows, 25);
/// # Ok::<(), colzip::Error>(())
/// ```
pub fn register_generated(
    ctx: &SessionContext,
    tables: Vec<TableData>,
    kind: &TableKind,
    progress: &(dyn Fn(TpchEvent<'_>) + Sync),
) -> Result<Vec<TableMemory>> {
    let loaded = tables
        .into_par_iter()
        .map(|data| {
            let (provider, memory) = load(ctx, data, kind)?;
            progress(TpchEvent::Loaded(&memory));
            Ok((provider, memory))
        })
        .collect::<Result<Vec<_>>>()?;
    register(ctx, loaded)
}

/// DataFusion's file-scan metric of the time spent scanning (and decoding) files.
const SCAN_TIME: &str = "time_elapsed_scanning_total";

/// The sum of the time metric `name` over every node of `plan`, in seconds.
fn plan_seconds(plan: &Arc<dyn ExecutionPlan>, name: &str) -> f64 {
    let own = plan
        .metrics()
        .and_then(|m| m.sum_by_name(name))
        .map_or(0.0, |v| v.as_usize() as f64 / 1e9);
    own + plan
        .children()
        .into_iter()
        .map(|child| plan_seconds(child, name))
        .sum::<f64>()
}

/// Runs TPC-H query `n` (1 to 22) in `ctx`, timing planning and execution.
pub async fn run_query(ctx: &SessionContext, n: usize) -> Result<QueryRun> {
    let sql = queries::query(n)
        .ok_or_else(|| Error::format(format!("there is no TPC-H query {n} (1 to 22)")))?;
    let start = Instant::now();
    let frame = ctx.sql(sql).await.map_err(Error::from)?;
    // As `DataFrame::collect`, keeping the plan for its metrics.
    let task = Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await.map_err(Error::from)?;
    let planning = start.elapsed();
    let batches = datafusion::physical_plan::collect(Arc::clone(&plan), task)
        .await
        .map_err(Error::from)?;
    let elapsed = start.elapsed();
    Ok(QueryRun {
        query: n,
        elapsed,
        planning,
        batches,
        scan_seconds: plan_seconds(&plan, SCAN_TIME),
        decompress_seconds: plan_seconds(&plan, DECOMPRESS_TIME),
    })
}

/// The table provider for `data`, as `kind` says, in as many partitions as `ctx`'s
/// `target_partitions`, and the memory it holds (`generate_time` zero).
fn load(
    ctx: &SessionContext,
    data: TableData,
    kind: &TableKind,
) -> Result<(Arc<dyn TableProvider>, TableMemory)> {
    let config = ctx.state().config().clone();
    let partitions = config.target_partitions().max(1);
    let batch_rows = config.batch_size().max(1);
    let table = data.table;
    let start = Instant::now();
    let rows = data.rows();
    let (provider, plain_bytes, held_bytes): (Arc<dyn TableProvider>, usize, usize) = match kind {
        TableKind::Plain => {
            let parts = split(&data, partitions, batch_rows)?;
            let plain = arrow_memory(&parts.concat());
            let table = MemTable::try_new(data.schema.clone(), parts).map_err(Error::from)?;
            (Arc::new(table), plain, plain)
        }
        TableKind::Compressed(options) => {
            // One batch per partition: the table cuts them into its blocks.
            let parts = split(&data, partitions, usize::MAX)?;
            let schema = data.schema.clone();
            drop(data);
            // Per-column codecs are given for the whole session: each table
            // takes those of its own columns.
            let mut options = options.clone();
            options
                .columns
                .retain(|name, _| schema.field_with_name(name).is_ok());
            let table = CompressedTable::try_new(schema, parts, &options)?;
            let (plain, held) = (table.plain_bytes(), table.compressed_bytes());
            (Arc::new(table), plain, held)
        }
    };
    let memory = TableMemory {
        table,
        rows,
        plain_bytes,
        held_bytes,
        generate_time: Duration::ZERO,
        load_time: start.elapsed(),
    };
    Ok((provider, memory))
}

/// Registers the loaded tables in `ctx` by name; their memory, in the order given.
fn register(
    ctx: &SessionContext,
    loaded: Vec<(Arc<dyn TableProvider>, TableMemory)>,
) -> Result<Vec<TableMemory>> {
    let mut tables = Vec::new();
    for (provider, memory) in loaded {
        ctx.register_table(memory.table.name(), provider)
            .map_err(Error::from)?;
        tables.push(memory);
    }
    Ok(tables)
}

/// The table's rows in up to `partitions` contiguous ranges, each cut into batches of at
/// most `batch_rows` rows (slices: no copy).
fn split(data: &TableData, partitions: usize, batch_rows: usize) -> Result<Vec<Vec<RecordBatch>>> {
    let whole = RecordBatch::try_new(data.schema.clone(), data.columns.clone())?;
    let rows = whole.num_rows();
    let count = partitions.min(rows).max(1);
    let mut out = Vec::with_capacity(count);
    for p in 0..count {
        let (start, end) = (rows * p / count, rows * (p + 1) / count);
        let mut batches = Vec::new();
        let mut offset = start;
        while offset < end {
            let len = batch_rows.min(end - offset);
            batches.push(whole.slice(offset, len));
            offset += len;
        }
        out.push(batches);
    }
    Ok(out)
}
