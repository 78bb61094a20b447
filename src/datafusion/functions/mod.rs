//! colzip's SQL functions, registered with a DataFusion session by [`register`]:
//!
//! | function | kind | returns |
//! |---|---|---|
//! | [`colzip_ratio(column, 'codec')`](#colzip_ratio-and-colzip_compressed_size) | aggregate | Float64: plain bytes / compressed bytes of the group's values, summed over chunks of about 4 MiB |
//! | [`colzip_compressed_size(column, 'codec')`](#colzip_ratio-and-colzip_compressed_size) | aggregate | UInt64: bytes of codec streams of the group's values, summed over chunks of about 4 MiB |
//! | [`colzip_ratio_exact(column, 'codec')`](#colzip_ratio_exact-and-colzip_compressed_size_exact), [`colzip_compressed_size_exact`](#colzip_ratio_exact-and-colzip_compressed_size_exact) | aggregate | the same of the group's values compressed as one column, for one process |
//! | [`colzip_compress(value, 'codec')`](#colzip_compress-and-colzip_decompress) | scalar | Binary: a self-describing blob per value |
//! | [`colzip_decompress(blob [, 'type'])`](#colzip_compress-and-colzip_decompress) | scalar | the value, with its original type |
//! | [`colzip_stats('table' [, 'codec,…'])`](#colzip_stats) | table | one row per column and codec, the fields of `colzip tpch --format json`; `ratio`: `raw_bytes` (Arrow's in-memory bytes) / compressed bytes |
//!
//! A codec argument is a string literal in the forms of [`CodecChoice`](crate::column::CodecChoice):
//! `auto` or a spec of any codec of the registry ([`codecs`](crate::codec::registry::codecs)),
//! such as `lzss:s=2`, `gmatch:raw` or `bwt`; the functions' documentation (`SHOW
//! FUNCTIONS`) and their errors list every form. Wrong codecs or options, arguments of the wrong type or
//! number, a codec that is not a literal, and types the column layer does not compress are
//! planning errors (of `SessionContext::sql`) naming the function, the argument and what it
//! accepts. The codecs run where `COLZIP_BACKEND` (default `auto`) puts them, read when
//! [`register`] is called: on the GPU, when there is one, for parts of 1 MiB or more.
//!
//! # colzip_ratio and colzip_compressed_size
//!
//! What they measure, exactly: the rows of a group that a partial aggregation receives,
//! in the order it receives them, are cut into chunks, and each chunk is compressed as one
//! column by the column layer ([`column::compress_on`](crate::column::compress_on)), nulls
//! included. `colzip_compressed_size` is the sum of the chunks' compressed bytes (codec
//! streams; a container adds 40–80 bytes of header), `colzip_ratio` the sum of their
//! [`plain_bytes`](crate::column::CompressedColumn::plain_bytes) over the sum of their
//! [`compressed_bytes`](crate::column::CompressedColumn::compressed_bytes).
//!
//! Where chunks end: each row counts a number of bits that depends on its value alone —
//! one bit of validity, and a fixed-width value's width (a boolean: one bit); a string or
//! binary value's 4 bytes of length and its bytes (NULL: none), in whichever form
//! (`Utf8`, `LargeUtf8`, `Utf8View`, …); a list's or map's 4 bytes and its items; a
//! fixed-size list's items; a struct's fields; a dictionary key or a run-end encoded row
//! as the value it stands for (a NULL key: one bit); a union row a byte and its child's
//! value. A chunk ends at the first row that brings its count to 4 MiB (2^25 bits) or
//! more; the rows left when the partial aggregation ends make a last, shorter chunk. The
//! partial state is three sums (rows, plain bytes, compressed bytes); merging adds them.
//!
//! So the result does not depend on how the rows were cut into batches, on the order
//! partial states are merged in, or on how many executors and GPUs did the work (every
//! device writes the CPU's bytes). It does depend on which rows each partial aggregation
//! saw and in which order: there is one per input partition, so the partitioning counts
//! (`datafusion.execution.target_partitions`, by default the number of cores, and how
//! DataFusion splits the files or repartitions the rows; a partition that runs ahead may
//! read files queued for another unless
//! `datafusion.execution.enable_file_stream_work_stealing` is off). With one partition and
//! no repartitioning (`SET datafusion.execution.target_partitions = 1`) the chunks are the
//! group's values in table order, and a group under 4 MiB is compressed whole, as the
//! `_exact` forms do. Where each partition gets fixed rows in a fixed order (a scan and
//! filters without work stealing; not rows merged from several partitions, as after a
//! join or a repartition by hash), the same query gives the same result, locally or on a
//! cluster. Dictionary-encoded and run-end encoded values are compressed in the encoding
//! their batches carry (a batch boundary can split a run).
//!
//! Why 4 MiB: no codec works on larger units by default (lzss' 2–16 KiB chunks, gmatch's
//! 64 KiB blocks, intpack's 1024 values, bwt's 4 MiB blocks), so a chunk compresses about
//! as the whole column would (within 2% on text in the tests); a chunk is large enough for
//! `auto` placement to run it on the GPU; and a partial aggregation holds at most one
//! chunk (4 MiB and a row) per group, reported to DataFusion's memory pool.
//!
//! A group without rows gives NULL for both (as SUM does), and so does the ratio of a
//! column without plain bytes (type Null). An all-NULL group is compressed like any other
//! (its validity bitmap). `DISTINCT` is refused.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
//! use colzip::column::{self, CodecChoice};
//! use datafusion::datasource::MemTable;
//! use datafusion::prelude::SessionContext;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let flags: ArrayRef = Arc::new(StringArray::from(vec!["A", "B", "A", "A"]));
//! let notes: ArrayRef = Arc::new(StringArray::from(vec!["ok ok ok", "late", "ok ok", "ok"]));
//! let batch = RecordBatch::try_from_iter([("flag", flags), ("note", notes.clone())])?;
//! let ctx = SessionContext::new();
//! ctx.register_table("t", Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]])?))?;
//! colzip::datafusion::functions::register(&ctx)?;
//!
//! let sql = "SELECT colzip_ratio(note, 'bwt') AS ratio, colzip_compressed_size(note, 'gmatch') AS size FROM t";
//! let out = ctx.sql(sql).await?.collect().await?;
//! let ratio = out[0].column(0).as_any().downcast_ref::<arrow::array::Float64Array>().unwrap().value(0);
//! let bwt = column::compress(&notes, &"bwt".parse::<CodecChoice>()?)?;
//! // Under 4 MiB in one batch: one chunk, the whole column.
//! assert_eq!(ratio, bwt.plain_bytes() as f64 / bwt.compressed_bytes() as f64);
//! let sql = "SELECT colzip_ratio_exact(note, 'bwt') FROM t";
//! let exact = ctx.sql(sql).await?.collect().await?;
//! assert_eq!(exact[0].column(0).as_any().downcast_ref::<arrow::array::Float64Array>().unwrap().value(0), ratio);
//!
//! // Per group.
//! let sql = "SELECT flag, colzip_ratio(note, 'lzss') FROM t GROUP BY flag ORDER BY flag";
//! assert_eq!(ctx.sql(sql).await?.collect().await?[0].num_rows(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
//!
//! # colzip_ratio_exact and colzip_compressed_size_exact
//!
//! Each group's values are compressed as one column, in the order they reach the
//! aggregate; the ratio and the size are defined as above for that one chunk. Table order
//! when the input has one partition and DataFusion does not repartition it, where the
//! results equal what the column layer gives for the group's values in table order.
//! Otherwise partial groups are merged in the order the partitions finish, and the result
//! can vary slightly between runs (as the order of a set is not defined in SQL). The
//! partial state is the group's values (a one-element list), so merging is exact but holds
//! every value until the group is evaluated, and on a cluster every value crosses the
//! shuffle: these forms are meant for one process. Empty groups and NULLs are treated as
//! above.
//!
//! # colzip_compress and colzip_decompress
//!
//! `colzip_compress(value, 'codec')` compresses each value on its own into the column
//! container of a one-value array ([`CompressedColumn::to_bytes`](crate::column::CompressedColumn::to_bytes)):
//! self-describing and checksummed, at 40–80 bytes of header per value, so it is meant for
//! long text and binary values. `colzip_decompress(blob)` gives the value back with its
//! type: `colzip_compress` records the type in its result field's metadata (key
//! [`TYPE_METADATA_KEY`]), which the planner carries through projections, subqueries and
//! tables made from them. Blobs that come without it (read back from a file, say) take the
//! type as a second argument in Arrow's notation, `colzip_decompress(blob, 'Utf8')`; it
//! also overrides the metadata, and a value of another type is cast to it (an error when
//! the cast fails). NULL gives NULL both ways. Blobs record string and binary views in
//! their classic form ([`blob_type`]: `Utf8View` as `Utf8`), so a value gives the same
//! blob in a local session (which reads Parquet strings as `Utf8View`) and on a Ballista
//! cluster (which reads them as `Utf8`).
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{Array, ArrayRef, BooleanArray, Int64Array, RecordBatch, StringArray};
//! use datafusion::datasource::MemTable;
//! use datafusion::prelude::SessionContext;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let text: ArrayRef = Arc::new(StringArray::from(vec![Some("a long comment, a long comment"), None]));
//! let id: ArrayRef = Arc::new(Int64Array::from(vec![7, 8]));
//! let batch = RecordBatch::try_from_iter([("text", text), ("id", id)])?;
//! let ctx = SessionContext::new();
//! ctx.register_table("t", Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]])?))?;
//! colzip::datafusion::functions::register(&ctx)?;
//!
//! let sql = "SELECT colzip_decompress(colzip_compress(text, 'bwt')) = text AS same_text, \
//!                   colzip_decompress(colzip_compress(id, 'lzss')) = id AS same_id FROM t";
//! let out = ctx.sql(sql).await?.collect().await?;
//! let same_text = out[0].column(0).as_any().downcast_ref::<BooleanArray>().unwrap();
//! assert!(same_text.value(0) && same_text.is_null(1)); // NULL in, NULL out
//! let same_id = out[0].column(1).as_any().downcast_ref::<BooleanArray>().unwrap();
//! assert!(same_id.value(0) && same_id.value(1));
//!
//! // Blobs kept in a table, decompressed with the type given.
//! ctx.sql("CREATE TABLE blobs AS SELECT colzip_compress(text, 'gmatch') AS b FROM t").await?.collect().await?;
//! let out = ctx.sql("SELECT colzip_decompress(b, 'Utf8') FROM blobs").await?.collect().await?;
//! assert_eq!(out[0].column(0).data_type(), &arrow::datatypes::DataType::Utf8);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```
//!
//! # colzip_stats
//!
//! `colzip_stats('table' [, 'codec,codec,…'])` measures every column of a table of the
//! session with each codec (default `lzss,gmatch,bwt`; the list also takes `auto` and the
//! CPU baselines of `colzip tpch`: `snap`, `lz4`, `zstd-N`, `bzip2-N`), verifying each
//! round trip, and returns one row per column and codec with the fields of
//! `colzip tpch --format json`: `table`, `column`, `arrow_type`, `rows`, `raw_bytes`,
//! `codec`, `backend`, `compressed_bytes`, `ratio` (raw bytes / compressed bytes),
//! `compress_gbps`, `decompress_gbps`. The work is done when the query runs, one column at
//! a time.
//!
//! Its `raw_bytes` are Arrow's in-memory bytes (the array's buffers, a `Utf8View` string
//! costing a 16-byte view besides its bytes), the measure `colzip tpch` reports; the
//! `colzip_ratio` aggregate divides colzip's plain bytes (values, offsets, validity) as
//! `colzip info` does. The compressed bytes are the same, so for a view-typed string
//! column `ratio` here is higher than `colzip_ratio`'s: two definitions, each named.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
//! use datafusion::datasource::MemTable;
//! use datafusion::prelude::SessionContext;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let id: ArrayRef = Arc::new(Int64Array::from_iter_values(0..1000));
//! let name: ArrayRef = Arc::new(StringArray::from_iter_values((0..1000).map(|i| format!("name {}", i % 7))));
//! let batch = RecordBatch::try_from_iter([("id", id), ("name", name)])?;
//! let ctx = SessionContext::new();
//! ctx.register_table("t", Arc::new(MemTable::try_new(batch.schema(), vec![vec![batch]])?))?;
//! colzip::datafusion::functions::register(&ctx)?;
//!
//! let out = ctx.sql("SELECT \"column\", codec, ratio FROM colzip_stats('t', 'lzss,snap')").await?.collect().await?;
//! assert_eq!(out.iter().map(|b| b.num_rows()).sum::<usize>(), 4); // 2 columns x 2 codecs
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })
//! # }
//! ```

mod args;
mod compress;
mod docs;
mod ratio;
mod stats;

use std::sync::Arc;

use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{AggregateUDF, ScalarUDF};
use datafusion::prelude::SessionContext;

use crate::codec::Placement;
use crate::gpu::Backend;
use crate::{Error, Result};
pub use compress::{TYPE_METADATA_KEY, blob_type};
use ratio::{CodecLiteralPlanner, CompressionAggregate, Function};
pub use stats::{StatsExec, StatsScanParts, StatsTableParts};

/// Registers `colzip_ratio`, `colzip_compressed_size`, their `_exact` forms,
/// `colzip_compress`, `colzip_decompress` and `colzip_stats` with `ctx` (see the
/// [module docs](self)).
/// The backend is read from `COLZIP_BACKEND` now: an error when it is not auto, cpu or
/// gpu, or is gpu without a usable GPU.
///
/// ```
/// use datafusion::prelude::SessionContext;
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let ctx = SessionContext::new();
/// colzip::datafusion::functions::register(&ctx)?;
/// let sql = "SELECT colzip_compressed_size(v, 'lzss') FROM (VALUES (1), (1), (2)) AS t(v)";
/// let out = ctx.sql(sql).await?.collect().await?;
/// assert_eq!(out[0].num_rows(), 1);
///
/// // A bad codec is a planning error naming the function and the argument.
/// let err = ctx.sql("SELECT colzip_ratio(v, 'foo') FROM (VALUES (1)) AS t(v)").await.unwrap_err();
/// assert!(err.to_string().contains("colzip_ratio: invalid codec 'foo' in argument 2"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })
/// # }
/// ```
pub fn register(ctx: &SessionContext) -> Result<()> {
    register_on(ctx, Backend::from_env()?)
}

/// [`register`] with the functions running on `backend` (what `colzip sql --backend`
/// chooses), not `COLZIP_BACKEND`'s.
pub fn register_on(ctx: &SessionContext, backend: Backend) -> Result<()> {
    // Fail now, not in the first query, when the backend cannot be had.
    Placement::new(backend)?;
    for function in Function::ALL {
        ctx.register_udaf(AggregateUDF::from(CompressionAggregate::new(
            function, backend,
        )));
    }
    ctx.register_udf(ScalarUDF::from(compress::Compress::new(backend)));
    ctx.register_udf(ScalarUDF::from(compress::Decompress::new(backend)));
    ctx.register_udtf("colzip_stats", Arc::new(stats::Stats::new(backend)));
    ctx.state_ref()
        .write()
        .register_expr_planner(Arc::new(CodecLiteralPlanner))
        .map_err(|e| Error::format(format!("registering colzip's SQL functions: {e}")))
}

/// Which colzip function `udf` is, and the backend it was made with: `None` for other
/// functions. With [`scalar_udf`], what a plan codec needs to carry colzip's scalar
/// functions to a process where they are not registered.
pub fn scalar_udf_parts(udf: &ScalarUDF) -> Option<(&'static str, Backend)> {
    let inner = udf.inner().as_ref() as &dyn std::any::Any;
    if let Some(f) = inner.downcast_ref::<compress::Compress>() {
        return Some(("colzip_compress", f.backend()));
    }
    inner
        .downcast_ref::<compress::Decompress>()
        .map(|f| ("colzip_decompress", f.backend()))
}

/// The scalar function `name` (`colzip_compress` or `colzip_decompress`) on `backend`.
pub fn scalar_udf(name: &str, backend: Backend) -> Option<ScalarUDF> {
    match name {
        "colzip_compress" => Some(ScalarUDF::from(compress::Compress::new(backend))),
        "colzip_decompress" => Some(ScalarUDF::from(compress::Decompress::new(backend))),
        _ => None,
    }
}

/// Which colzip aggregate `udaf` is, and its backend: `None` for other aggregates.
pub fn aggregate_udf_parts(udaf: &AggregateUDF) -> Option<(&'static str, Backend)> {
    let inner = udaf.inner().as_ref() as &dyn std::any::Any;
    let (function, backend) = inner.downcast_ref::<CompressionAggregate>()?.parts();
    Some((function.name(), backend))
}

/// The aggregate `name` (`colzip_ratio`, `colzip_compressed_size`, `colzip_ratio_exact`
/// or `colzip_compressed_size_exact`) on `backend`.
pub fn aggregate_udf(name: &str, backend: Backend) -> Option<AggregateUDF> {
    let function = Function::ALL.into_iter().find(|f| f.name() == name)?;
    Some(AggregateUDF::from(CompressionAggregate::new(
        function, backend,
    )))
}
