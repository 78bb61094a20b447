//! The `COLZIP_PARQUET` file format: `COPY … TO … STORED AS COLZIP_PARQUET` writes
//! standard Parquet whose SNAPPY pages come from colzip's `gmatch` (GPU when present,
//! the same bytes on the CPU; see [`crate::parquet::write`]), and `CREATE EXTERNAL TABLE
//! … STORED AS COLZIP_PARQUET LOCATION …` reads such files, or any Parquet file, back.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use datafusion::prelude::SessionContext;
//! let ctx = SessionContext::new();
//! colzip::datafusion::format::register(&ctx)?;
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("squares.parquet");
//! let path = path.to_str().unwrap();
//! ctx.sql(&format!(
//!     "COPY (SELECT v, v * v AS sq FROM generate_series(1, 1000) AS t(v)) TO '{path}' \
//!      STORED AS COLZIP_PARQUET OPTIONS ('backend' 'cpu', 'row_group_size' '400')"
//! )).await?.collect().await?;
//! ctx.sql(&format!("CREATE EXTERNAL TABLE squares STORED AS COLZIP_PARQUET LOCATION '{path}'"))
//!     .await?.collect().await?;
//! let batches = ctx.sql("SELECT sum(sq) AS s FROM squares").await?.collect().await?;
//! let sum = batches[0].column(0).as_any().downcast_ref::<arrow::array::Int64Array>().unwrap();
//! assert_eq!(sum.value(0), (1..=1000i64).map(|v| v * v).sum::<i64>());
//! # Ok(())
//! # }
//! ```
//!
//! # Options
//! `OPTIONS ('key' 'value', …)` of `COPY` (and of `CREATE EXTERNAL TABLE`, for later
//! `INSERT INTO`s):
//!
//! | key | values | default |
//! |---|---|---|
//! | `backend` | `auto`, `cpu`, `gpu` | `COLZIP_BACKEND`, else `auto` |
//! | `row_group_size` | rows per row group | DataFusion's `datafusion.execution.parquet.max_row_group_size` |
//! | `data_page_size` | target bytes per data page | DataFusion's `data_pagesize_limit` |
//! | `data_page_version` | `1` or `2` | DataFusion's `writer_version` |
//! | `parallel_row_groups` | row groups encoded together (memory: that many row groups of input) | a quarter of the threads, 1 to 8 |
//! | `codec` | `gmatch` (the only codec that writes Parquet's SNAPPY) | `gmatch` |
//!
//! Any other key is an error naming it (when the statement is planned for execution).
//! Every other Parquet writer setting (statistics, dictionaries, page index,
//! `created_by`, …) is DataFusion's session default, so a `COLZIP_PARQUET` file has the
//! same row groups and pages as `STORED AS PARQUET` with SNAPPY would write.
//!
//! # Reading
//! Scans of `COLZIP_PARQUET` tables (files from any Parquet writer) use colzip's scan,
//! [`crate::datafusion::parquet_scan`]: each row group's SNAPPY pages are decompressed in
//! one batched call (on the GPU with `backend` `gpu`; under `auto` and `cpu` on the
//! CPU's cores, which measured faster than the GPU for calls of one row group: see
//! `parquet_scan`; the same results either way) and decoded by the parquet crate, with the projection, `LIMIT`, partitioned
//! scans and row-group and page pruning by pushed filters (filters stay `Inexact`:
//! DataFusion applies them above the scan). The backend is the `backend` option. Schema
//! inference and statistics are DataFusion's `ParquetFormat`'s, after colzip checked the
//! footer. Sessions of [`crate::datafusion::session::context`] read Parquet paths
//! (`SELECT … FROM 'dir/*.parquet'`) the same way; `STORED AS PARQUET` stays DataFusion's
//! stock reader, which also has bloom-filter pruning and row-level filter pushdown.

use std::collections::HashMap;
use std::fmt;
use std::io::Write;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::Session;
use datafusion::common::file_options::parquet_writer::ParquetWriterOptions;
use datafusion::common::runtime::SpawnedTask;
use datafusion::common::{DataFusionError, GetExt, Statistics, not_impl_err};
use datafusion::config::TableParquetOptions;
use datafusion::datasource::file_format::file_compression_type::FileCompressionType;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::write::demux::DemuxedStreamReceiver;
use datafusion::datasource::file_format::write::{ObjectWriterBuilder, get_writer_schema};
use datafusion::datasource::file_format::{FileFormat, FileFormatFactory, FileMeta};
use datafusion::datasource::physical_plan::{FileScanConfig, FileSink, FileSinkConfig, FileSource};
use datafusion::datasource::provider::DefaultTableFactory;
use datafusion::datasource::sink::{DataSink, DataSinkExec};
use datafusion::datasource::source::DataSourceExec;
use datafusion::datasource::table_schema::TableSchema;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use datafusion::physical_expr::LexOrdering;
use datafusion::physical_expr_common::sort_expr::LexRequirement;
use datafusion::physical_plan::{DisplayAs, DisplayFormatType, ExecutionPlan};
use datafusion::prelude::SessionContext;
use tokio::io::AsyncWriteExt;

use super::parquet_scan::ColzipParquetSource;
use crate::gpu::{Backend, GpuError};
use crate::parquet::footer;
use crate::parquet::write::{
    DataPageVersion, ParquetWriter, WriteOptions, default_parallel_row_groups,
};
use crate::{Error, codec::Placement};

/// The format's name in `STORED AS` (case-insensitive).
pub const FORMAT_NAME: &str = "colzip_parquet";

/// Registers the format on `ctx`, for `COPY … STORED AS COLZIP_PARQUET` and
/// `CREATE EXTERNAL TABLE … STORED AS COLZIP_PARQUET`. Registering twice is harmless.
pub fn register(ctx: &SessionContext) -> crate::Result<()> {
    let state = ctx.state_ref();
    let mut state = state.write();
    state
        .register_file_format(Arc::new(ColzipParquetFactory), true)
        .map_err(|e| Error::format(format!("registering {FORMAT_NAME}: {e}")))?;
    state.table_factories_mut().insert(
        FORMAT_NAME.to_ascii_uppercase(),
        Arc::new(DefaultTableFactory::new()),
    );
    Ok(())
}

/// The options a statement gave; `None` where DataFusion's default applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FormatOptions {
    pub backend: Option<Backend>,
    pub row_group_size: Option<usize>,
    pub data_page_size: Option<usize>,
    pub data_page_version: Option<DataPageVersion>,
    pub parallel_row_groups: Option<usize>,
}

impl FormatOptions {
    /// Parses statement options (keys with or without DataFusion's `format.` prefix).
    /// Unknown keys and bad values are errors that name them.
    pub fn parse(options: &HashMap<String, String>) -> crate::Result<FormatOptions> {
        let mut parsed = FormatOptions::default();
        let mut keys: Vec<_> = options.keys().collect();
        keys.sort();
        for key in keys {
            let value = options[key].trim();
            let bad = |reason: String| {
                Error::format(format!(
                    "{FORMAT_NAME} option '{key}' = '{value}': {reason}"
                ))
            };
            let positive = || match value.parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(bad("expected a positive integer".into())),
            };
            match key.strip_prefix("format.").unwrap_or(key) {
                "backend" => {
                    parsed.backend = Some(value.parse().map_err(|e: GpuError| bad(e.to_string()))?)
                }
                "row_group_size" => parsed.row_group_size = Some(positive()?),
                "data_page_size" => parsed.data_page_size = Some(positive()?),
                "parallel_row_groups" => parsed.parallel_row_groups = Some(positive()?),
                "data_page_version" => {
                    parsed.data_page_version =
                        Some(value.parse().map_err(|e: Error| bad(e.to_string()))?)
                }
                "codec" => {
                    if !matches!(value.to_ascii_lowercase().as_str(), "gmatch" | "gmatch:raw") {
                        return Err(bad("only 'gmatch' writes Parquet's SNAPPY pages".into()));
                    }
                }
                // Consumed by DataFusion's COPY planning itself.
                "execution.keep_partition_by_columns" => {}
                _ => {
                    return Err(Error::format(format!(
                        "unknown {FORMAT_NAME} option '{key}' (known: backend, \
                         row_group_size, data_page_size, data_page_version, \
                         parallel_row_groups, codec)"
                    )));
                }
            }
        }
        Ok(parsed)
    }

    /// The options as statement options: [`FormatOptions::parse`] gives them back.
    pub fn to_map(&self) -> HashMap<String, String> {
        let mut map = HashMap::new();
        let mut put = |key: &str, value: Option<String>| {
            if let Some(value) = value {
                map.insert(key.to_string(), value);
            }
        };
        put("backend", self.backend.map(|b| b.to_string()));
        put("row_group_size", self.row_group_size.map(|n| n.to_string()));
        put("data_page_size", self.data_page_size.map(|n| n.to_string()));
        put(
            "data_page_version",
            self.data_page_version.map(|v| match v {
                DataPageVersion::V1 => "1".to_string(),
                DataPageVersion::V2 => "2".to_string(),
            }),
        );
        put(
            "parallel_row_groups",
            self.parallel_row_groups.map(|n| n.to_string()),
        );
        map
    }
}

fn df_error(error: Error) -> DataFusionError {
    DataFusionError::Configuration(error.to_string())
}

/// Creates [`ColzipParquetFormat`]s; registered under [`FORMAT_NAME`].
#[derive(Debug, Default)]
pub struct ColzipParquetFactory;

impl GetExt for ColzipParquetFactory {
    fn get_ext(&self) -> String {
        FORMAT_NAME.to_string()
    }
}

impl FileFormatFactory for ColzipParquetFactory {
    fn create(
        &self,
        state: &dyn Session,
        format_options: &HashMap<String, String>,
    ) -> datafusion::common::Result<Arc<dyn FileFormat>> {
        let options = FormatOptions::parse(format_options).map_err(df_error)?;
        let parquet = state.default_table_options().parquet;
        Ok(Arc::new(ColzipParquetFormat::new(parquet, options)))
    }

    fn default(&self) -> Arc<dyn FileFormat> {
        Arc::new(ColzipParquetFormat::new(
            TableParquetOptions::default(),
            FormatOptions::default(),
        ))
    }
}

/// Writes through colzip's writer, scans with colzip's scan
/// ([`ColzipParquetSource`]); schema and statistics inference are DataFusion's
/// `ParquetFormat`'s (it holds one).
#[derive(Debug)]
pub struct ColzipParquetFormat {
    inner: ParquetFormat,
    parquet: TableParquetOptions,
    options: FormatOptions,
}

impl ColzipParquetFormat {
    /// A format with DataFusion's Parquet `parquet` options and colzip's `options`.
    pub fn new(parquet: TableParquetOptions, options: FormatOptions) -> Self {
        ColzipParquetFormat {
            inner: ParquetFormat::default().with_options(parquet.clone()),
            parquet,
            options,
        }
    }

    /// The writer options for a sink: DataFusion's Parquet settings, SNAPPY via gmatch,
    /// and the statement's options over them.
    fn write_options(&self) -> crate::Result<WriteOptions> {
        // The Arrow schema is embedded by colzip's writer (as `ArrowWriter` does), so
        // DataFusion's conversion must not ask for it in its key-value metadata.
        let mut parquet = self.parquet.clone();
        parquet.global.skip_arrow_metadata = true;
        let properties = ParquetWriterOptions::try_from(&parquet)
            .map_err(|e| Error::format(format!("Parquet writer options: {e}")))?
            .writer_options()
            .clone();
        let backend = match self.options.backend {
            Some(backend) => backend,
            None => Backend::from_env()?,
        };
        let version = match properties.writer_version() {
            parquet::file::properties::WriterVersion::PARQUET_1_0 => DataPageVersion::V1,
            parquet::file::properties::WriterVersion::PARQUET_2_0 => DataPageVersion::V2,
        };
        Ok(WriteOptions {
            row_group_size: self
                .options
                .row_group_size
                .or(properties.max_row_group_row_count())
                .unwrap_or(parquet::file::properties::DEFAULT_MAX_ROW_GROUP_ROW_COUNT),
            data_page_size: self
                .options
                .data_page_size
                .unwrap_or(properties.data_page_size_limit()),
            data_page_version: self.options.data_page_version.unwrap_or(version),
            parallel_row_groups: self
                .options
                .parallel_row_groups
                .unwrap_or_else(default_parallel_row_groups),
            placement: Some(Placement::new(backend)?),
            properties: Some(properties),
        })
    }
}

#[async_trait]
impl FileFormat for ColzipParquetFormat {
    fn get_ext(&self) -> String {
        // Files written into a directory are named *.parquet: they are plain Parquet.
        self.inner.get_ext()
    }

    fn get_ext_with_compression(
        &self,
        compression: &FileCompressionType,
    ) -> datafusion::common::Result<String> {
        self.inner.get_ext_with_compression(compression)
    }

    fn compression_type(&self) -> Option<FileCompressionType> {
        // Not `None`: `CREATE EXTERNAL TABLE` over a directory then globs `*.parquet`
        // (the extension of this type) instead of `*.colzip_parquet`, which finds nothing.
        Some(FileCompressionType::UNCOMPRESSED)
    }

    async fn infer_schema(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        objects: &[ObjectMeta],
    ) -> datafusion::common::Result<SchemaRef> {
        for object in objects {
            check_footer(store, object).await?;
        }
        self.inner.infer_schema(state, store, objects).await
    }

    async fn infer_stats(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> datafusion::common::Result<Statistics> {
        check_footer(store, object).await?;
        self.inner
            .infer_stats(state, store, table_schema, object)
            .await
    }

    async fn infer_ordering(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> datafusion::common::Result<Option<LexOrdering>> {
        self.inner
            .infer_ordering(state, store, table_schema, object)
            .await
    }

    async fn infer_stats_and_ordering(
        &self,
        state: &dyn Session,
        store: &Arc<dyn ObjectStore>,
        table_schema: SchemaRef,
        object: &ObjectMeta,
    ) -> datafusion::common::Result<FileMeta> {
        check_footer(store, object).await?;
        self.inner
            .infer_stats_and_ordering(state, store, table_schema, object)
            .await
    }

    async fn create_physical_plan(
        &self,
        _state: &dyn Session,
        conf: FileScanConfig,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        // `conf` carries the ColzipParquetSource of `file_source`, projection included.
        Ok(DataSourceExec::from_data_source(conf))
    }

    async fn create_writer_physical_plan(
        &self,
        input: Arc<dyn ExecutionPlan>,
        _state: &dyn Session,
        conf: FileSinkConfig,
        order_requirements: Option<LexRequirement>,
    ) -> datafusion::common::Result<Arc<dyn ExecutionPlan>> {
        if conf.insert_op != InsertOp::Append {
            return not_impl_err!("{FORMAT_NAME} only appends: overwrites are not supported");
        }
        let sink = Arc::new(
            // colzip's own error (a missing GPU reads as everywhere else), not a
            // configuration error: the options were parsed when the format was made.
            ColzipParquetSink::new(conf, self.parquet.clone(), self.options.clone())
                .map_err(DataFusionError::from)?,
        );
        Ok(Arc::new(DataSinkExec::new(input, sink, order_requirements)))
    }

    fn file_source(&self, table_schema: TableSchema) -> Arc<dyn FileSource> {
        Arc::new(ColzipParquetSource::new(
            table_schema,
            &self.parquet,
            self.options.backend,
        ))
    }
}

/// Reads and checks a file's footer (`crate::parquet::footer`) before DataFusion's
/// Parquet reader sees it: the parquet crate panics on some corrupt footers.
async fn check_footer(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
) -> datafusion::common::Result<()> {
    let fail = |e: Error| {
        DataFusionError::External(Box::new(Error::format(format!(
            "{} is not a valid Parquet file: {e}",
            object.location
        ))))
    };
    let size = object.size;
    if size < 12 {
        return Err(fail(Error::format(format!("{size} bytes"))));
    }
    let tail = store.get_range(&object.location, size - 8..size).await?;
    let tail: &[u8; 8] = tail[..]
        .try_into()
        .map_err(|_| fail(Error::format("short read")))?;
    let len = footer::metadata_len(tail).map_err(fail)? as u64;
    if len > size - 12 {
        return Err(fail(Error::format(format!(
            "a footer of {len} bytes in a file of {size}"
        ))));
    }
    let metadata = store
        .get_range(&object.location, size - 8 - len..size - 8)
        .await?;
    footer::decode_metadata(&metadata, size).map_err(fail)?;
    Ok(())
}

/// Writes each output file of a `COPY`/`INSERT` with [`ParquetWriter`].
#[derive(Debug)]
pub struct ColzipParquetSink {
    config: FileSinkConfig,
    options: WriteOptions,
    /// What `options` was made from (what a plan codec carries to another process).
    parquet: TableParquetOptions,
    format: FormatOptions,
}

impl ColzipParquetSink {
    /// A sink writing the files of `config` with DataFusion's Parquet options `parquet`
    /// and colzip's `format` options over them (as the format's writer plan makes it).
    pub fn new(
        config: FileSinkConfig,
        parquet: TableParquetOptions,
        format: FormatOptions,
    ) -> crate::Result<ColzipParquetSink> {
        let options = ColzipParquetFormat::new(parquet.clone(), format.clone()).write_options()?;
        Ok(ColzipParquetSink {
            config,
            options,
            parquet,
            format,
        })
    }

    /// The files written.
    pub fn config(&self) -> &FileSinkConfig {
        &self.config
    }

    /// DataFusion's Parquet options the sink was made with.
    pub fn parquet_options(&self) -> &TableParquetOptions {
        &self.parquet
    }

    /// colzip's options the sink was made with.
    pub fn format_options(&self) -> &FormatOptions {
        &self.format
    }
}

impl DisplayAs for ColzipParquetSink {
    fn fmt_as(&self, _t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ColzipParquetSink(url={})", self.config.original_url)
    }
}

#[async_trait]
impl DataSink for ColzipParquetSink {
    fn schema(&self) -> &SchemaRef {
        self.config.output_schema()
    }

    async fn write_all(
        &self,
        data: SendableRecordBatchStream,
        context: &Arc<TaskContext>,
    ) -> datafusion::common::Result<u64> {
        FileSink::write_all(self, data, context).await
    }
}

/// Bytes the writer hands to the upload at a time.
const UPLOAD_CHUNK: usize = 8 << 20;

/// The writer's output, sent to the upload task in chunks, so the upload of one part of
/// the file runs beside the writing of the next.
struct ChunkSender {
    chunks: tokio::sync::mpsc::Sender<Vec<u8>>,
    buffer: Vec<u8>,
}

impl ChunkSender {
    /// Sends what is buffered (from a blocking thread); fails once the upload stopped.
    fn send(&mut self) -> std::io::Result<()> {
        if self.buffer.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buffer, Vec::with_capacity(UPLOAD_CHUNK));
        self.chunks.blocking_send(chunk).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "the upload of the file stopped",
            )
        })
    }
}

impl Write for ChunkSender {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(buf);
        if self.buffer.len() >= UPLOAD_CHUNK {
            self.send()?;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Fails with the path and the reason when a local output's directory cannot take a
/// new file. The local object store would otherwise loop forever where creating a file
/// says "not found" in a directory that exists (`/proc`): it creates the directory and
/// tries again. Missing directories are created first, as the store would.
fn check_writable(path: &datafusion::object_store::path::Path) -> datafusion::common::Result<()> {
    let file = std::path::PathBuf::from(format!("/{}", path.as_ref()));
    let dir = file.parent().unwrap_or(std::path::Path::new("/"));
    dir_takes_files(dir).map_err(|source| {
        DataFusionError::External(Box::new(Error::File {
            action: "write",
            path: file,
            source,
        }))
    })
}

/// Whether `dir` (created with its parents when missing) takes a new file: one is
/// created there and removed.
pub(crate) fn dir_takes_files(dir: &std::path::Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)
        .and_then(|()| tempfile::tempfile_in(dir))
        .map(drop)
}

#[async_trait]
impl FileSink for ColzipParquetSink {
    fn config(&self) -> &FileSinkConfig {
        &self.config
    }

    async fn spawn_writer_tasks_and_join(
        &self,
        context: &Arc<TaskContext>,
        demux_task: SpawnedTask<datafusion::common::Result<()>>,
        mut file_stream_rx: DemuxedStreamReceiver,
        object_store: Arc<dyn ObjectStore>,
    ) -> datafusion::common::Result<u64> {
        let schema = get_writer_schema(&self.config);
        let buffer_size = context
            .session_config()
            .options()
            .execution
            .objectstore_writer_buffer_size;
        let mut tasks = Vec::new();
        let local = self.config.object_store_url.as_str().starts_with("file://");
        while let Some((path, mut rx)) = file_stream_rx.recv().await {
            if local {
                check_writable(&path)?;
            }
            let mut upload = ObjectWriterBuilder::new(
                FileCompressionType::UNCOMPRESSED,
                &path,
                Arc::clone(&object_store),
            )
            .with_buffer_size(Some(buffer_size))
            .build()?;
            let options = self.options.clone();
            let schema = Arc::clone(&schema);
            tasks.push(SpawnedTask::spawn(async move {
                // The writer (CPU or GPU work) runs on a blocking thread, taking batches
                // as they come and sending the file's bytes to this task, which uploads
                // them meanwhile.
                let (chunks_tx, mut chunks) = tokio::sync::mpsc::channel(2);
                let writing = SpawnedTask::spawn_blocking(move || -> crate::Result<u64> {
                    let output = ChunkSender {
                        chunks: chunks_tx,
                        buffer: Vec::with_capacity(UPLOAD_CHUNK),
                    };
                    let mut writer = ParquetWriter::try_new(output, schema, &options)?;
                    while let Some(batch) = rx.blocking_recv() {
                        writer.write(&batch)?;
                    }
                    let (summary, mut output) = writer.close()?;
                    output.send()?;
                    Ok(summary.rows)
                });
                while let Some(chunk) = chunks.recv().await {
                    upload.write_all(&chunk).await?;
                }
                let rows = writing
                    .await
                    .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))?
                    .map_err(DataFusionError::from)?;
                upload.shutdown().await?;
                Ok::<u64, DataFusionError>(rows)
            }));
        }
        let mut rows = 0;
        for task in tasks {
            rows += task
                .join_unwind()
                .await
                .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        }
        demux_task
            .join_unwind()
            .await
            .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        Ok(rows)
    }
}
