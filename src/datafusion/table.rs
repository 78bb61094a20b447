//! Compressed in-memory tables: a DataFusion [`TableProvider`] whose record batches are
//! held with every column compressed by the column layer, and decompressed, only for the
//! columns a query reads, when a scan runs.
//!
//! A table is a list of partitions (scanned in parallel), each a list of *blocks*: up to
//! [`CompressOptions::block_rows`] rows with one [`CompressedColumn`] per column. A scan
//! decompresses the projected columns of all the blocks of a partition in one parallel
//! call (on the rayon pool, each part on the GPU when the [`Placement`] says so), then
//! hands DataFusion batches of the session's batch size.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{Int64Array, RecordBatch, StringArray};
//! use colzip::datafusion::table::{CompressOptions, CompressedTable};
//! use datafusion::prelude::SessionContext;
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let batch = RecordBatch::try_from_iter([
//!     ("id", Arc::new(Int64Array::from_iter_values(0..10_000)) as _),
//!     ("tag", Arc::new(StringArray::from_iter_values((0..10_000).map(|i| ["red", "green"][i % 2]))) as _),
//! ])?;
//! let table = CompressedTable::try_new(batch.schema(), vec![vec![batch]], &CompressOptions::default())?;
//! assert!(table.compressed_bytes() < table.plain_bytes());
//!
//! let ctx = SessionContext::new();
//! ctx.register_table("t", Arc::new(table))?;
//! let rows = ctx.sql("SELECT count(*) FROM t WHERE tag = 'red'").await?.collect().await?;
//! assert_eq!(arrow::util::pretty::pretty_format_batches(&rows)?.to_string().matches("5000").count(), 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod archive;
mod decoded;
mod dictionary;
mod filter;
mod memory;
mod plain_test;
mod row_filter;
mod scan;
mod sink;
mod zones;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, RwLock};

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, SchemaExt, Statistics};
use datafusion::dataframe::DataFrame;
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::utils::conjunction;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::SessionContext;
use rayon::prelude::*;

use crate::codec::Placement;
use crate::column::{self, AutoCodecs, CodecChoice, CompressedColumn};
use crate::gpu::Backend;
use crate::{Error, Result};

pub use memory::arrow_memory;
pub use scan::{CompressedScanExec, WINDOW_BYTES};

/// Rows per compressed block unless [`CompressOptions::block_rows`] says otherwise: large
/// enough for the codecs to find repeats, small enough that a limit or a partition's
/// decompression does not touch much more than it needs.
pub const DEFAULT_BLOCK_ROWS: usize = 64 * 1024;

/// How a [`CompressedTable`] compresses its columns.
#[derive(Clone, Debug)]
pub struct CompressOptions {
    /// The codec of every column not named in `columns`.
    pub codec: CodecChoice,
    /// Codecs of particular columns, by name.
    pub columns: HashMap<String, CodecChoice>,
    /// Where the codecs run, compressing and decompressing.
    pub placement: Placement,
    /// Rows per block: the input batches of a partition are cut and joined to this size.
    pub block_rows: usize,
    /// Plain bytes of the projected columns a scan decodes per batched call (a window of
    /// whole blocks, at least one): what a partition's scan holds, twice over, at a time.
    pub scan_window_bytes: usize,
    /// Whether scans evaluate the filters they can themselves (exact pushdown: the rows
    /// they hand out all pass, and the other columns are decoded only for blocks where
    /// some row does). When false, every filter stays above the scan, which only skips
    /// blocks by their zones.
    pub scan_filters: bool,
}

impl Default for CompressOptions {
    /// `auto` for every column, on the CPU, blocks of [`DEFAULT_BLOCK_ROWS`], scans by
    /// windows of [`scan::WINDOW_BYTES`] that evaluate the filters they can.
    fn default() -> Self {
        CompressOptions {
            codec: CodecChoice::Auto,
            columns: HashMap::new(),
            placement: Placement::CPU,
            block_rows: DEFAULT_BLOCK_ROWS,
            scan_window_bytes: scan::WINDOW_BYTES,
            scan_filters: true,
        }
    }
}

impl CompressOptions {
    /// `codec` for every column, placed by `COLZIP_BACKEND` (the GPU when present unless
    /// it says `cpu`).
    ///
    /// ```
    /// use colzip::datafusion::table::CompressOptions;
    /// let options = CompressOptions::from_env("gmatch".parse()?)?.with_column("l_comment", "bwt".parse()?);
    /// assert_eq!(options.codec_for("l_comment"), "bwt".parse()?);
    /// assert_eq!(options.codec_for("l_orderkey"), "gmatch".parse()?);
    /// # Ok::<(), colzip::Error>(())
    /// ```
    pub fn from_env(codec: CodecChoice) -> Result<Self> {
        Ok(CompressOptions {
            codec,
            placement: Placement::new(Backend::from_env()?)?,
            ..CompressOptions::default()
        })
    }

    /// Compresses column `name` with `codec`.
    pub fn with_column(mut self, name: impl Into<String>, codec: CodecChoice) -> Self {
        self.columns.insert(name.into(), codec);
        self
    }

    /// The codec column `name` is compressed with. Plain `auto` leaves bwt out: a table is
    /// compressed to be scanned, and bwt is the slowest codec to decode, on the CPU (about
    /// 30 times slower than gmatch: 0.25 against 7 GB/s on 16 cores) and on the GPU alike.
    /// TPC-H SF 10 on the H100 (docs/PERFORMANCE.md): without it the queries' geometric
    /// mean went from 1.01× to 0.88× the memory store's and loading from 41 to 18 s, for
    /// 2.4 GB held instead of 1.8. Named codecs and `auto:among=` (bwt included, if asked)
    /// are kept as given.
    ///
    /// ```
    /// use colzip::codec::Placement;
    /// use colzip::column::{AutoCodecs, CodecChoice};
    /// use colzip::datafusion::table::CompressOptions;
    /// let options = CompressOptions { placement: Placement::CPU, ..CompressOptions::default() };
    /// let fast = AutoCodecs::parse("lzss+gmatch+intpack").unwrap();
    /// assert_eq!(options.codec_for("l_comment"), CodecChoice::AutoAmong(fast));
    /// # Ok::<(), colzip::Error>(())
    /// ```
    pub fn codec_for(&self, name: &str) -> CodecChoice {
        match self.columns.get(name).copied().unwrap_or(self.codec) {
            CodecChoice::Auto => {
                CodecChoice::AutoAmong(AutoCodecs::ALL.without(crate::codec::bwt::NAME))
            }
            choice => choice,
        }
    }
}

/// Up to [`CompressOptions::block_rows`] rows of a table, every column compressed, with
/// each column's zone (minimum and maximum) for pruning.
#[derive(Debug)]
pub(crate) struct Block {
    rows: usize,
    columns: Vec<CompressedColumn>,
    zones: Vec<Option<zones::Zone>>,
}

impl Block {
    fn compressed_bytes(&self) -> usize {
        self.columns.iter().map(|c| c.compressed_bytes()).sum()
    }
}

/// The partitions of a table: lists of shared blocks (a scan takes a snapshot of them).
type Partitions = Vec<Vec<Arc<Block>>>;

/// An in-memory table with every column compressed; see the [module docs](self).
pub struct CompressedTable {
    schema: SchemaRef,
    partitions: Arc<RwLock<Partitions>>,
    options: CompressOptions,
    /// Arrow memory of the batches compressed so far.
    plain_bytes: Arc<RwLock<usize>>,
}

impl fmt::Debug for CompressedTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompressedTable")
            .field("schema", &self.schema)
            .field("partitions", &self.partition_count())
            .field("rows", &self.num_rows())
            .field("compressed_bytes", &self.compressed_bytes())
            .finish()
    }
}

impl CompressedTable {
    /// Compresses `partitions` (each a list of batches of `schema`; at least one partition
    /// is kept, so an empty table can still take `INSERT INTO`). Blocks are compressed in
    /// parallel. A batch whose columns do not match `schema` is an error naming the column.
    pub fn try_new(
        schema: SchemaRef,
        partitions: Vec<Vec<RecordBatch>>,
        options: &CompressOptions,
    ) -> Result<Self> {
        if options.block_rows == 0 {
            return Err(Error::format("block_rows must be at least 1"));
        }
        let plain: Vec<RecordBatch> = partitions.iter().flatten().cloned().collect();
        let plain_bytes = arrow_memory(&plain);
        drop(plain);
        let compressed = compress_partitions(&schema, partitions, options)?;
        Ok(Self::holding(schema, compressed, options, plain_bytes))
    }

    /// The table of compressed `partitions` (at least one is kept, so an empty table can
    /// still take `INSERT INTO`).
    fn holding(
        schema: SchemaRef,
        mut partitions: Partitions,
        options: &CompressOptions,
        plain_bytes: usize,
    ) -> Self {
        if partitions.is_empty() {
            partitions.push(Vec::new());
        }
        CompressedTable {
            schema,
            partitions: Arc::new(RwLock::new(partitions)),
            options: options.clone(),
            plain_bytes: Arc::new(RwLock::new(plain_bytes)),
        }
    }

    /// Runs `sql` in `ctx` and holds its result compressed, in as many partitions as the
    /// query's plan has.
    pub async fn from_query(
        ctx: &SessionContext,
        sql: &str,
        options: &CompressOptions,
    ) -> Result<Self> {
        let frame = ctx.sql(sql).await.map_err(Error::from)?;
        Self::from_dataframe(frame, options).await
    }

    /// Executes `frame` and holds its result compressed.
    pub async fn from_dataframe(frame: DataFrame, options: &CompressOptions) -> Result<Self> {
        let schema: SchemaRef = Arc::new(frame.schema().as_arrow().clone());
        let partitions = frame.collect_partitioned().await.map_err(Error::from)?;
        Self::try_new(schema, partitions, options)
    }

    /// The predicate that prunes blocks for `filters` (their conjunction), or `None` when
    /// there are none or they say nothing about zones (pruning is only an optimization:
    /// a filter it cannot use is left to the filter above the scan).
    fn pruning_predicate(
        &self,
        state: &dyn Session,
        filters: &[Expr],
    ) -> Option<Arc<PruningPredicate>> {
        let expr = conjunction(filters.iter().cloned())?;
        let df_schema =
            datafusion::common::DFSchema::try_from(self.schema.as_ref().clone()).ok()?;
        let physical = state.create_physical_expr(expr, &df_schema).ok()?;
        PruningPredicateBuilder::new()
            .with_file_schema(self.schema.clone())
            .build(physical)
    }

    /// The options the table compresses with (inserted rows too).
    pub fn options(&self) -> &CompressOptions {
        &self.options
    }

    /// Number of partitions (scanned in parallel).
    pub fn partition_count(&self) -> usize {
        self.read().len()
    }

    /// Rows held.
    pub fn num_rows(&self) -> usize {
        self.read().iter().flatten().map(|b| b.rows).sum()
    }

    /// Bytes of codec streams held: the memory the table's data takes.
    pub fn compressed_bytes(&self) -> usize {
        self.read()
            .iter()
            .flatten()
            .map(|b| b.compressed_bytes())
            .sum()
    }

    /// Arrow memory of the batches the table was made from (see [`arrow_memory`]): what
    /// a `MemTable` of the same batches holds.
    pub fn plain_bytes(&self) -> usize {
        *self.plain_bytes.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Compressed bytes of each column, in schema order.
    pub fn column_compressed_bytes(&self) -> Vec<usize> {
        self.column_compressed_bytes_of(&self.read())
    }

    /// The codecs each column's parts ended up with (`auto` chooses per part; a part
    /// that would not shrink is `stored`), in schema order, each list sorted and unique.
    pub fn column_codecs(&self) -> Vec<Vec<&'static str>> {
        let mut codecs = vec![Vec::new(); self.schema.fields().len()];
        for block in self.read().iter().flatten() {
            for (names, column) in codecs.iter_mut().zip(&block.columns) {
                names.extend(column.root().all_parts().iter().map(|p| p.codec.name()));
            }
        }
        for names in &mut codecs {
            names.sort_unstable();
            names.dedup();
        }
        codecs
    }

    /// How many blocks of each column hold it as a dictionary (low-cardinality strings
    /// under `auto`), in schema order.
    pub fn column_dictionary_blocks(&self) -> Vec<usize> {
        let mut counts = vec![0; self.schema.fields().len()];
        for block in self.read().iter().flatten() {
            for ((count, column), field) in counts
                .iter_mut()
                .zip(&block.columns)
                .zip(self.schema.fields())
            {
                if column.data_type() != field.data_type() {
                    *count += 1;
                }
            }
        }
        counts
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Partitions> {
        // A panic while holding the lock cannot leave the lists half-written: writers
        // only push whole blocks.
        self.partitions.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends compressed blocks round robin over the partitions (used by inserts).
    fn append(&self, batches: Vec<RecordBatch>) -> Result<usize> {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let plain = arrow_memory(&batches);
        let blocks = compress_partitions(&self.schema, vec![batches], &self.options)?;
        let mut partitions = self.partitions.write().unwrap_or_else(|e| e.into_inner());
        let count = partitions.len();
        let start = partitions.iter().map(Vec::len).sum::<usize>();
        for (i, block) in blocks.into_iter().flatten().enumerate() {
            partitions[(start + i) % count].push(block);
        }
        *self.plain_bytes.write().unwrap_or_else(|e| e.into_inner()) += plain;
        Ok(rows)
    }
}

/// Cuts each partition's batches into blocks and compresses all blocks in parallel.
fn compress_partitions(
    schema: &SchemaRef,
    partitions: Vec<Vec<RecordBatch>>,
    options: &CompressOptions,
) -> Result<Partitions> {
    let codecs: Vec<CodecChoice> = schema
        .fields()
        .iter()
        .map(|f| options.codec_for(f.name()))
        .collect();
    for name in options.columns.keys() {
        if schema.field_with_name(name).is_err() {
            return Err(Error::format(format!(
                "a codec was given for column '{name}', which the table does not have"
            )));
        }
    }
    let blocks: Vec<Vec<RecordBatch>> = partitions
        .into_iter()
        .map(|batches| cut_blocks(schema, batches, options.block_rows))
        .collect::<Result<_>>()?;
    if options.placement.gpu().is_some() {
        return compress_windows_on_gpu(schema, blocks, &codecs, options.placement);
    }
    blocks
        .into_par_iter()
        .map(|partition| {
            partition
                .into_par_iter()
                .map(|batch| compress_block(schema, &batch, &codecs, options.placement))
                .collect::<Result<Vec<_>>>()
        })
        .collect()
}

/// Plain bytes of the blocks compressed together in one batched call when a GPU may run
/// them: as large as a scan's window, so the GPU gets calls it can fill.
const COMPRESS_WINDOW_BYTES: usize = scan::WINDOW_BYTES;

/// [`compress_partitions`]' GPU path: the blocks of every partition in windows of about
/// [`COMPRESS_WINDOW_BYTES`], each window's columns in one batched call, the windows on
/// all of rayon's workers at once: calls of 64 MiB fill the GPU, where one call per block
/// (64K rows) left it waiting on launches; windows at once overlap one window's host
/// stages (sampling for `auto`, plain encoding, checksums) with others' GPU work. SF 10
/// on the H100: one window after another loaded in 80.7 s, windows at once in 31.7 s
/// (33.0 s on the CPU's cores).
fn compress_windows_on_gpu(
    schema: &SchemaRef,
    partitions: Vec<Vec<RecordBatch>>,
    codecs: &[CodecChoice],
    placement: Placement,
) -> Result<Partitions> {
    let partition_count = partitions.len();
    let mut windows: Vec<(usize, Vec<RecordBatch>)> = Vec::new();
    for (partition, blocks) in partitions.into_iter().enumerate() {
        let mut window: Vec<RecordBatch> = Vec::new();
        let mut window_bytes = 0;
        for block in blocks {
            window_bytes += block.get_array_memory_size();
            window.push(block);
            if window_bytes >= COMPRESS_WINDOW_BYTES {
                windows.push((partition, std::mem::take(&mut window)));
                window_bytes = 0;
            }
        }
        if !window.is_empty() {
            windows.push((partition, window));
        }
    }
    // `collect` keeps the windows' order, so each partition's blocks stay in order.
    let compressed: Vec<(usize, Vec<Arc<Block>>)> = windows
        .into_par_iter()
        .map(|(partition, window)| {
            Ok((
                partition,
                compress_blocks(schema, &window, codecs, placement)?,
            ))
        })
        .collect::<Result<_>>()?;
    let mut out: Partitions = vec![Vec::new(); partition_count];
    for (partition, blocks) in compressed {
        out[partition].extend(blocks);
    }
    Ok(out)
}

fn compress_block(
    schema: &SchemaRef,
    batch: &RecordBatch,
    codecs: &[CodecChoice],
    placement: Placement,
) -> Result<Arc<Block>> {
    Ok(compress_blocks(schema, std::slice::from_ref(batch), codecs, placement)?.remove(0))
}

/// Compresses `batches` (blocks of `schema`): the columns sharing a codec choice, over
/// all the blocks, in one batched call.
fn compress_blocks(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    codecs: &[CodecChoice],
    placement: Placement,
) -> Result<Vec<Arc<Block>>> {
    // The columns sharing a codec choice (usually all of them) go in one batched call:
    // fewer, larger calls keep the GPU busy.
    let mut groups: Vec<(CodecChoice, Vec<usize>)> = Vec::new();
    for (i, codec) in codecs.iter().enumerate() {
        match groups.iter_mut().find(|(c, _)| c == codec) {
            Some((_, members)) => members.push(i),
            None => groups.push((*codec, vec![i])),
        }
    }
    let width = codecs.len();
    let mut columns: Vec<Option<CompressedColumn>> = vec![None; width * batches.len()];
    for (codec, members) in groups {
        let inputs: Vec<(&Field, &dyn Array)> = batches
            .iter()
            .flat_map(|batch| {
                members
                    .iter()
                    .map(move |&i| (schema.field(i), batch.column(i).as_ref()))
            })
            .collect();
        let compressed = column::compress_columns_on(&inputs, &codec, placement)?;
        let slots = (0..batches.len()).flat_map(|b| members.iter().map(move |&i| b * width + i));
        for (slot, column) in slots.zip(compressed) {
            columns[slot] = Some(column);
        }
        if matches!(codec, CodecChoice::Auto | CodecChoice::AutoAmong(_)) {
            try_dictionaries(schema, batches, &members, &codec, placement, &mut columns)?;
        }
    }
    let mut columns = columns.into_iter();
    batches
        .iter()
        .map(|batch| {
            let block_columns = columns
                .by_ref()
                .take(width)
                .map(|c| c.expect("every column is in one group"))
                .collect();
            let zones = batch
                .columns()
                .par_iter()
                .map(|array| zones::Zone::of(array.as_ref()))
                .collect();
            Ok(Arc::new(Block {
                rows: batch.num_rows(),
                columns: block_columns,
                zones,
            }))
        })
        .collect()
}

/// Under `auto`, the low-cardinality string columns among `members` of each of `batches`
/// are compressed as dictionaries too (one batched call), and the dictionary replaces the
/// plain column in `columns` (block-major, a slot per table column) where
/// [`dictionary::keep`] says.
fn try_dictionaries(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    members: &[usize],
    codec: &CodecChoice,
    placement: Placement,
    columns: &mut [Option<CompressedColumn>],
) -> Result<()> {
    let width = schema.fields().len();
    let candidates: Vec<(usize, usize, ArrayRef)> = batches
        .par_iter()
        .enumerate()
        .flat_map_iter(|(b, batch)| {
            members.iter().filter_map(move |&i| {
                dictionary::candidate(batch.column(i)).map(|d| (b * width + i, batch.num_rows(), d))
            })
        })
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    let fields: Vec<Field> = candidates
        .iter()
        .map(|(slot, _, array)| {
            let field = schema.field(slot % width);
            Field::new(field.name(), array.data_type().clone(), field.is_nullable())
        })
        .collect();
    let inputs: Vec<(&Field, &dyn Array)> = fields
        .iter()
        .zip(&candidates)
        .map(|(field, (_, _, array))| (field, array.as_ref()))
        .collect();
    let compressed = column::compress_columns_on(&inputs, codec, placement)?;
    for ((slot, rows, _), dictionary) in candidates.iter().zip(compressed) {
        let plain = columns[*slot].as_ref().map_or(0, |c| c.compressed_bytes());
        if dictionary::keep(dictionary.compressed_bytes(), plain, *rows) {
            columns[*slot] = Some(dictionary);
        }
    }
    Ok(())
}

/// The batches of one partition as blocks of `block_rows` rows (the last one shorter),
/// each checked against `schema`. A batch of exactly one block is kept as it is.
fn cut_blocks(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
    block_rows: usize,
) -> Result<Vec<RecordBatch>> {
    let mut blocks = Vec::new();
    let mut pending: Vec<RecordBatch> = Vec::new();
    let mut pending_rows = 0;
    for batch in batches {
        let mut rest = conform(schema, batch)?;
        while rest.num_rows() > 0 {
            let take = (block_rows - pending_rows).min(rest.num_rows());
            pending.push(rest.slice(0, take));
            pending_rows += take;
            rest = rest.slice(take, rest.num_rows() - take);
            if pending_rows == block_rows {
                blocks.push(join(schema, std::mem::take(&mut pending))?);
                pending_rows = 0;
            }
        }
    }
    if pending_rows > 0 {
        blocks.push(join(schema, pending)?);
    }
    Ok(blocks)
}

fn join(schema: &SchemaRef, mut batches: Vec<RecordBatch>) -> Result<RecordBatch> {
    if batches.len() == 1 {
        return Ok(batches.pop().expect("one batch"));
    }
    Ok(arrow::compute::concat_batches(schema, &batches)?)
}

/// `batch` under `schema`, or an error naming the first column that does not match.
fn conform(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch> {
    if batch.num_columns() != schema.fields().len() {
        return Err(Error::format(format!(
            "a batch has {} columns but the table has {}",
            batch.num_columns(),
            schema.fields().len()
        )));
    }
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, array) in schema.fields().iter().zip(batch.columns()) {
        if field.data_type() == array.data_type() {
            columns.push(array.clone());
        } else if same_values(field.data_type(), array.data_type()) {
            // A plan may say Utf8 where its operators hand out Utf8View (a CASE whose
            // branches differ, say): the same strings, in the table's layout.
            columns.push(arrow::compute::cast(array, field.data_type())?);
        } else {
            return Err(Error::format(format!(
                "column '{}' is {} in the table but {} in a batch",
                field.name(),
                field.data_type(),
                array.data_type()
            )));
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Whether two types hold the same values in other layouts: the string types (Utf8,
/// LargeUtf8, Utf8View) among themselves, and the binary types likewise.
fn same_values(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let strings = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let binaries = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    (strings(a) && strings(b)) || (binaries(a) && binaries(b))
}

/// The nulls of `column` as queries count them (`IS NULL`, `count(column)`: Arrow's
/// logical nulls), when its container tells them without decoding anything. The root
/// node's null count is its validity's; a Null column has none but every row is null,
/// and a union's or a run-end encoded array's nulls are in its children, a dictionary's
/// also in its values: those are unknown (`None`) unless the values have no nulls.
fn sql_null_count(column: &CompressedColumn) -> Option<usize> {
    let root = column.root();
    let own_nulls_only =
        |t: &DataType| !matches!(t, DataType::Union(..) | DataType::RunEndEncoded(..));
    match column.data_type() {
        DataType::Null => Some(root.rows),
        DataType::Dictionary(_, values) => {
            let clean = root.children.first().is_some_and(|v| v.null_count == 0)
                && own_nulls_only(values)
                && !matches!(values.as_ref(), DataType::Null);
            clean.then_some(root.null_count)
        }
        other => own_nulls_only(other).then_some(root.null_count),
    }
}

/// Statistics of `blocks` for the columns in `projection`: exact row counts, exact null
/// counts where the containers tell them ([`sql_null_count`]), byte sizes as
/// decompressed (what the scan produces, which join planning compares).
fn block_statistics<'a>(
    blocks: impl Iterator<Item = &'a Arc<Block>>,
    projection: &[usize],
    limit: Option<usize>,
) -> Statistics {
    let mut rows = 0;
    let mut columns = vec![(Some(0usize), 0usize); projection.len()];
    let mut ranges = vec![ColumnRange::Empty; projection.len()];
    for block in blocks {
        rows += block.rows;
        for ((stat, range), &i) in columns.iter_mut().zip(&mut ranges).zip(projection) {
            let column = &block.columns[i];
            stat.0 = stat.0.zip(sql_null_count(column)).map(|(a, b)| a + b);
            stat.1 += column.plain_bytes();
            range.widen(block.zones[i].as_ref(), block.rows);
        }
    }
    let total: usize = columns.iter().map(|c| c.1).sum();
    let mut statistics = Statistics {
        num_rows: Precision::Exact(rows),
        total_byte_size: Precision::Inexact(total),
        column_statistics: columns
            .into_iter()
            .zip(ranges)
            .map(|((nulls, bytes), range)| {
                let mut c = ColumnStatistics::new_unknown();
                c.null_count = nulls.map_or(Precision::Absent, Precision::Exact);
                c.byte_size = Precision::Inexact(bytes);
                // Bounds, not necessarily attained (inexact): DataFusion estimates a
                // join's size from its keys' ranges, as it does from Parquet's statistics.
                if let ColumnRange::Known(min, max) = range {
                    c.min_value = Precision::Inexact(min);
                    c.max_value = Precision::Inexact(max);
                }
                c
            })
            .collect(),
    };
    if let Some(limit) = limit.filter(|&l| l < rows) {
        statistics.num_rows = Precision::Exact(limit);
        let scale = |bytes: usize| (bytes as f64 * limit as f64 / rows as f64) as usize;
        statistics.total_byte_size = Precision::Inexact(scale(total));
        for c in &mut statistics.column_statistics {
            c.null_count = Precision::Absent;
            c.byte_size = c.byte_size.map(scale);
        }
    }
    statistics
}

/// The range of a column's values over some blocks, from their zones.
#[derive(Clone)]
enum ColumnRange {
    /// No block with rows yet.
    Empty,
    Known(ScalarValue, ScalarValue),
    /// Some block with rows has no zone (a type without one, or only NULLs).
    Unknown,
}

impl ColumnRange {
    /// Takes in a block of `rows` rows whose zone for the column is `zone`.
    fn widen(&mut self, zone: Option<&zones::Zone>, rows: usize) {
        if rows == 0 {
            return;
        }
        let Some((min, max)) = zone.map(zones::Zone::bounds) else {
            *self = ColumnRange::Unknown;
            return;
        };
        *self = match std::mem::replace(self, ColumnRange::Unknown) {
            ColumnRange::Empty => ColumnRange::Known(min.clone(), max.clone()),
            ColumnRange::Known(low, high) => {
                let (Some(below), Some(above)) = (min.partial_cmp(&low), max.partial_cmp(&high))
                else {
                    return;
                };
                ColumnRange::Known(
                    if below.is_lt() { min.clone() } else { low },
                    if above.is_gt() { max.clone() } else { high },
                )
            }
            ColumnRange::Unknown => ColumnRange::Unknown,
        };
    }
}

#[async_trait]
impl TableProvider for CompressedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let projection = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let partitions = self.read().clone();
        let exact: Vec<Expr> = filters
            .iter()
            .filter(|f| self.evaluates(f))
            .cloned()
            .collect();
        let row_filter = row_filter::RowFilter::try_new(state, &self.schema, &exact)?;
        Ok(Arc::new(
            CompressedScanExec::try_new(
                &self.schema,
                partitions,
                projection,
                limit,
                self.options.placement,
                self.options.scan_window_bytes,
            )?
            .with_pruning(self.pruning_predicate(state, filters))
            .with_filter(row_filter),
        ))
    }

    /// Every filter is offered to the scan for pruning blocks by their zones. Those the
    /// scan evaluates itself (comparisons, `BETWEEN`, `IN`, `IS NULL`, `LIKE`, boolean
    /// logic over columns and literals) are exact, and DataFusion drops them
    /// above the scan; the others stay above it as well (inexact).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if self.evaluates(f) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }

    /// Exact row counts and, where the containers tell them, null counts; the total byte
    /// size is the compressed size (the memory held), each column's byte size its
    /// compressed size.
    fn statistics(&self) -> Option<Statistics> {
        let partitions = self.read();
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let mut statistics = block_statistics(partitions.iter().flatten(), &all, None);
        let sizes = self.column_compressed_bytes_of(&partitions);
        statistics.total_byte_size = Precision::Exact(sizes.iter().sum());
        for (c, size) in statistics.column_statistics.iter_mut().zip(sizes) {
            c.byte_size = Precision::Exact(size);
        }
        Some(statistics)
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return datafusion::common::not_impl_err!(
                "{insert_op} is not supported by compressed tables (only INSERT INTO)"
            );
        }
        self.schema
            .logically_equivalent_names_and_types(&input.schema())?;
        let sink = sink::CompressedSink::new(self.shared());
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}

impl CompressedTable {
    /// Whether this table's scans apply `filter` to rows themselves.
    fn evaluates(&self, filter: &Expr) -> bool {
        self.options.scan_filters && filter::evaluable(filter, &self.schema)
    }

    fn column_compressed_bytes_of(&self, partitions: &Partitions) -> Vec<usize> {
        let mut sizes = vec![0; self.schema.fields().len()];
        for block in partitions.iter().flatten() {
            for (size, column) in sizes.iter_mut().zip(&block.columns) {
                *size += column.compressed_bytes();
            }
        }
        sizes
    }

    /// A handle on the same partitions (for the insert sink, which outlives `&self`).
    fn shared(&self) -> CompressedTable {
        CompressedTable {
            schema: self.schema.clone(),
            partitions: self.partitions.clone(),
            options: self.options.clone(),
            plain_bytes: self.plain_bytes.clone(),
        }
    }
}
