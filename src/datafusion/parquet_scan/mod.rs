//! The SQL scan of `STORED AS COLZIP_PARQUET` tables and of Parquet paths
//! (`SELECT … FROM 'dir/*.parquet'` in sessions made by
//! [`enable_url_tables`]): Parquet files from any writer, each row group's SNAPPY pages
//! decompressed in ONE batched call of colzip's codec interface — on the GPU with the
//! `gpu` backend, on the CPU's cores under `auto` and `cpu`, with the same results — and
//! handed to the parquet crate's Arrow decoder uncompressed
//! ([`crate::parquet::row_group`]).
//!
//! Why `auto` stays on the CPU here: a call holds one row group of one partition (a few
//! MiB of pages), and such calls are slower on the GPU than on one core each (partitions
//! outnumber the lanes; one warp decodes a whole 1 MiB page; the TPC-H figures are in
//! docs/PERFORMANCE.md). Batching the row groups of all partitions into
//! shared GPU calls, and splitting pages across warps, are what the GPU would need.
//!
//! It is a DataFusion `FileSource` ([`ColzipParquetSource`]) under `DataSourceExec`, so
//! DataFusion spreads files and byte ranges of files over partitions, applies the
//! projection and `LIMIT`, and fills in partition columns, as for its own reader. Per
//! file:
//! - the footer is fetched through the object store and checked before the parquet
//!   crate trusts it ([`crate::parquet::footer`]);
//! - pushed filters prune row groups by their statistics and, where the file has a page
//!   index, rows by page statistics (DataFusion's own pruning code, so it prunes what the
//!   stock reader prunes); filters stay `Inexact`: DataFusion still applies them;
//! - each kept row group's projected column chunks are fetched (async), then on a
//!   blocking thread decompressed in one call, then decoded batch by batch as the stream
//!   is polled (as DataFusion's reader decodes); SNAPPY pages that page pruning
//!   skips entirely are never decompressed; one row group per partition is in memory at
//!   a time.
//!
//! Chunks of other codecs (ZSTD, GZIP, LZ4…) are decompressed by the parquet crate on the
//! CPU; UNCOMPRESSED ones pass through. Not supported: encrypted files, INT96 timestamp
//! coercion options, bloom-filter pruning and row-level filter pushdown (late
//! materialization); the filters above the scan keep results right without them.
//!
//! Metrics (`EXPLAIN ANALYZE`): DataFusion's Parquet pruning metrics
//! (`row_groups_pruned_statistics`, `page_index_rows_pruned`, `metadata_load_time`, …)
//! and the scan's own ([`metrics`]): `row_groups_read`, `pages_decompressed`,
//! `bytes_decompressed`, `pages_skipped_by_selection`, `other_codec_chunks`,
//! `gpu_row_groups`, `decompress_time`, `decode_time`.

mod fetch;
pub mod metrics;
mod opener;
mod plan;
mod source;
mod url_table;

pub use source::{ColzipParquetSource, FILE_TYPE};
pub use url_table::enable_url_tables;
