//! Compressed in-memory tables: a DataFusion
//! [`TableProvider`](datafusion::catalog::TableProvider) whose record batches are held
//! with every column compressed by the column layer, and decompressed, only for the
//! columns a query reads, when a scan runs.
//!
//! A table is a list of partitions (scanned in parallel), each a list of *blocks*: up to
//! [`CompressOptions::block_rows`] rows with one
//! [`CompressedColumn`](crate::column::CompressedColumn) per column. A scan decompresses
//! the projected columns of all the blocks of a partition in one parallel call (on the
//! rayon pool, each part on the GPU when the [`Placement`](crate::codec::Placement) says
//! so), then hands DataFusion batches of the session's batch size.
//!
//! The files: `options.rs` (how columns are compressed), `load.rs` (batches to compressed
//! blocks), `block.rs` (a block, and the statistics its containers and zones give),
//! `provider.rs` (the `TableProvider`), `scan.rs` (the scan, with `row_filter.rs`,
//! `plain_test.rs`, `filter.rs` and `decoded.rs` for the filters it evaluates, and
//! `dynamic_filter.rs` and `routed_filter.rs` for those joins hand it), `zones.rs`,
//! `dictionary.rs`, `sink.rs` (`INSERT INTO`), `archive.rs` and `memory.rs`.
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

mod aggregate;
mod archive;
mod block;
mod decoded;
mod device_filter;
mod dictionary;
mod dynamic_filter;
mod filter;
mod load;
mod memory;
mod options;
mod plain_test;
mod provider;
mod residence;
mod routed_filter;
mod row_filter;
mod scan;
mod scan_metrics;
mod sink;
mod window;
mod window_job;
mod zones;

use std::fmt;
use std::sync::{Arc, RwLock};

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::utils::conjunction;
use datafusion::physical_optimizer::pruning::{PruningPredicate, PruningPredicateBuilder};
use datafusion::prelude::SessionContext;

use crate::{Error, Result};

pub use aggregate::{AggregateOverCompressedScan, FixedPointAggregateExec};
pub(crate) use block::Block;
use block::{Partitions, block_statistics, sql_null_count};
use load::compress_partitions;
pub use load::warm_kernels;
pub use memory::arrow_memory;
pub use options::{CompressOptions, DEFAULT_BLOCK_ROWS, Residence};
pub use scan::CompressedScanExec;
pub use window::WINDOW_BYTES;

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
        residence::check(options)?;
        let plain: Vec<RecordBatch> = partitions.iter().flatten().cloned().collect();
        let plain_bytes = arrow_memory(&plain);
        drop(plain);
        let started = std::time::Instant::now();
        let compressed = compress_partitions(&schema, partitions, options)?;
        let compressed_at = started.elapsed().as_secs_f64();
        let table = Self::holding(schema, compressed, options, plain_bytes);
        crate::trace::line(|| {
            use crate::trace::{Counter, counted};
            format!(
                "table of {plain_bytes} bytes: compressed in {compressed_at:.3} s, uploaded in {:.3} s \
                 (so far over all loads, thread-seconds: compress {:.3}, dictionaries {:.3}, zones {:.3})",
                started.elapsed().as_secs_f64() - compressed_at,
                counted(Counter::LoadCompress),
                counted(Counter::LoadDictionaries),
                counted(Counter::LoadZones),
            )
        });
        Ok(table)
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
        let placed: Vec<(usize, Arc<Block>)> = partitions
            .iter()
            .enumerate()
            .flat_map(|(p, blocks)| blocks.iter().map(move |block| (p, block.clone())))
            .collect();
        residence::upload(&placed, options);
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

    /// Bytes of the table's compressed columns held in GPU memory: each block's columns
    /// of fixed-width values go there when a scan first selects its rows on the GPU, and
    /// stay until the table is dropped (the rest of [`Self::compressed_bytes`] is host
    /// memory, and all of it stays there too).
    pub fn gpu_resident_bytes(&self) -> usize {
        self.read()
            .iter()
            .flatten()
            .map(|b| b.resident_bytes())
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

    /// Compresses `batches` (of the table's schema) and appends their blocks round robin
    /// over the partitions, as `INSERT INTO` does; the rows added. Scans that began
    /// before see the table as it was. A table loaded a few batches at a time this way
    /// never holds more than those batches uncompressed:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use arrow::array::{Int64Array, RecordBatch};
    /// use arrow::datatypes::{DataType, Field, Schema};
    /// use colzip::datafusion::table::{CompressOptions, CompressedTable};
    ///
    /// let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
    /// let table = CompressedTable::try_new(schema.clone(), vec![Vec::new(); 4], &CompressOptions::default())?;
    /// for start in [0i64, 1000] {
    ///     let values = Int64Array::from_iter_values(start..start + 1000);
    ///     let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values)])?;
    ///     table.insert_batches(vec![batch])?;
    /// }
    /// assert_eq!(table.num_rows(), 2000);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn insert_batches(&self, batches: Vec<RecordBatch>) -> Result<usize> {
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        let plain = arrow_memory(&batches);
        let blocks = compress_partitions(&self.schema, vec![batches], &self.options)?;
        // Where the blocks go, then their upload to those partitions' GPUs, before the
        // write lock: scans keep taking their snapshots meanwhile. An insert running at
        // the same time may pick the same partitions, which only evens out less.
        let (count, start) = {
            let partitions = self.read();
            (
                partitions.len(),
                partitions.iter().map(Vec::len).sum::<usize>(),
            )
        };
        let placed: Vec<(usize, Arc<Block>)> = blocks
            .into_iter()
            .flatten()
            .enumerate()
            .map(|(i, block)| ((start + i) % count, block))
            .collect();
        residence::upload(&placed, &self.options);
        let mut partitions = self.partitions.write().unwrap_or_else(|e| e.into_inner());
        for (partition, block) in placed {
            partitions[partition].push(block);
        }
        *self.plain_bytes.write().unwrap_or_else(|e| e.into_inner()) += plain;
        Ok(rows)
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
