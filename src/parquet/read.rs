//! Reading Parquet into Arrow record batches with the SNAPPY pages of a row group
//! decompressed in one batch: one GPU call per row group when the placement has a GPU
//! (the batched codec interface, which decodes any Snappy stream, not only
//! gmatch's), else all pages in parallel on the CPU. Files from any writer are read.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Int32Array};
//! use arrow::record_batch::RecordBatch;
//! use colzip::codec::Placement;
//! use colzip::parquet::read::{read_batches, ReadOptions};
//! use colzip::parquet::write::{write_batches, WriteOptions};
//!
//! let batch = RecordBatch::try_from_iter([
//!     ("v", Arc::new(Int32Array::from(vec![Some(3), None, Some(5)])) as ArrayRef),
//! ])?;
//! let mut file = Vec::new();
//! write_batches(&mut file, batch.schema(), [batch.clone()],
//!     &WriteOptions::default().with_placement(Placement::CPU))?;
//! let read = read_batches(bytes::Bytes::from(file),
//!     &ReadOptions::default().with_placement(Placement::CPU))?;
//! assert_eq!(read.batches, vec![batch]);
//! assert_eq!(read.summary.snappy_pages, 2); // a dictionary page and a data page
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How, and where the GPU cannot help
//! The parquet crate decompresses inside its page reader and has no codec hook, so this
//! reader does the page work itself and hands the crate's Arrow decoding UNCOMPRESSED
//! pages through its public low-level interface (`RowGroups`/`PageReader` and
//! `ParquetRecordBatchReader::try_new_with_row_groups`): for each row group, the
//! pages of every projected SNAPPY chunk are read raw (a `SerializedPageReader` over the
//! chunk's metadata marked UNCOMPRESSED returns the payloads as stored), all their
//! payloads are decompressed in one call, and the pages are rebuilt uncompressed (data
//! page v2: levels as stored, values decompressed, `is_compressed = false`).
//!
//! Chunks with another codec (ZSTD, GZIP, LZ4…) are decompressed by the parquet crate's
//! own codec on the CPU, chunk by chunk; UNCOMPRESSED chunks pass through. Encrypted files
//! are not supported. This reader reads whole row groups (projection of top-level
//! columns only, no row filters or page pruning); for those, SQL goes through
//! DataFusion's stock Parquet reader (see `crate::datafusion::format`).

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::{FieldLevels, ProjectionMask, parquet_to_arrow_field_levels};
use parquet::file::metadata::ParquetMetaData;
use parquet::file::reader::ChunkReader;

use super::row_group::RowGroupPages;
use crate::codec::Placement;
use crate::gpu::Backend;
use crate::{Error, Result};

/// How [`ParquetReader`] reads.
#[derive(Clone, Debug)]
pub struct ReadOptions {
    /// Rows per record batch (the last batch of a row group may hold fewer).
    pub batch_size: usize,
    /// Top-level columns to read, by index; `None`: all.
    pub projection: Option<Vec<usize>>,
    /// Where pages are decompressed; `None`: `Placement::new(Backend::from_env())`.
    pub placement: Option<Placement>,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            batch_size: 8192,
            projection: None,
            placement: None,
        }
    }
}

impl ReadOptions {
    /// Sets [`Self::batch_size`].
    pub fn with_batch_size(mut self, rows: usize) -> Self {
        self.batch_size = rows;
        self
    }

    /// Sets [`Self::projection`].
    pub fn with_projection(mut self, columns: Vec<usize>) -> Self {
        self.projection = Some(columns);
        self
    }

    /// Sets [`Self::placement`].
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = Some(placement);
        self
    }
}

/// What a read did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReadSummary {
    pub rows: u64,
    pub row_groups: usize,
    /// SNAPPY page payloads decompressed by colzip.
    pub snappy_pages: usize,
    /// Their compressed and decompressed bytes.
    pub compressed_bytes: u64,
    pub decompressed_bytes: u64,
    /// Wall-clock seconds of the batched decompression calls.
    pub decompress_seconds: f64,
    /// Row groups whose pages were decompressed on the GPU.
    pub gpu_row_groups: usize,
    /// Column chunks with another codec, left to the parquet crate.
    pub other_codec_chunks: usize,
}

/// A Parquet file opened for reading, row group by row group.
pub struct ParquetReader<R: ChunkReader + 'static> {
    reader: Arc<R>,
    metadata: Arc<ParquetMetaData>,
    schema: SchemaRef,
    levels: FieldLevels,
    mask: ProjectionMask,
    batch_size: usize,
    placement: Placement,
    summary: ReadSummary,
}

impl<R: ChunkReader + 'static> std::fmt::Debug for ParquetReader<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetReader")
            .field("schema", &self.schema)
            .field("row_groups", &self.metadata.num_row_groups())
            .field("placement", &self.placement)
            .finish_non_exhaustive()
    }
}

impl<R: ChunkReader + 'static> ParquetReader<R> {
    /// Reads the footer and the schema (the embedded Arrow schema when present, as the
    /// parquet crate's reader does).
    pub fn try_new(reader: R, options: &ReadOptions) -> Result<Self> {
        if options.batch_size == 0 {
            return Err(Error::format("batch_size must be at least 1"));
        }
        let placement = match options.placement {
            Some(placement) => placement,
            None => Placement::new(Backend::from_env()?)?,
        };
        let metadata = super::footer::read_metadata(&reader)?;
        let file = metadata.file_metadata();
        let descr = file.schema_descr();
        let full = parquet::arrow::parquet_to_arrow_schema(descr, file.key_value_metadata())?;
        let mask = match &options.projection {
            None => ProjectionMask::all(),
            Some(columns) => {
                let roots = descr.root_schema().get_fields().len();
                if let Some(bad) = columns.iter().find(|&&c| c >= roots) {
                    return Err(Error::format(format!(
                        "projection names column {bad}, the file has {roots}"
                    )));
                }
                ProjectionMask::roots(descr, columns.iter().copied())
            }
        };
        let levels = parquet_to_arrow_field_levels(descr, mask.clone(), Some(full.fields()))?;
        // The batches' schema: the projected fields, as the Arrow reader builds them.
        let schema = match &options.projection {
            None => Arc::new(full),
            Some(_) => Arc::new(full.project(&projected_roots(&options.projection))?),
        };
        Ok(ParquetReader {
            reader: Arc::new(reader),
            metadata: Arc::new(metadata),
            schema,
            levels,
            mask,
            batch_size: options.batch_size,
            placement,
            summary: ReadSummary::default(),
        })
    }

    /// The Arrow schema of the batches (projected).
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// The file's metadata.
    pub fn metadata(&self) -> &Arc<ParquetMetaData> {
        &self.metadata
    }

    /// The summary of the reads so far.
    pub fn summary(&self) -> &ReadSummary {
        &self.summary
    }

    /// Reads row group `index` into record batches.
    pub fn read_row_group(&mut self, index: usize) -> Result<Vec<RecordBatch>> {
        let (pages, stats) = RowGroupPages::read(
            &self.reader,
            Arc::clone(&self.metadata),
            index,
            &self.mask,
            &self.placement,
            None,
        )?;
        self.summary.snappy_pages += stats.snappy_pages;
        self.summary.compressed_bytes += stats.compressed_bytes;
        self.summary.decompressed_bytes += stats.decompressed_bytes;
        self.summary.decompress_seconds += stats.seconds;
        self.summary.gpu_row_groups += usize::from(stats.on_gpu);
        self.summary.other_codec_chunks += stats.other_codec_chunks;
        let batches = pages.decode(&self.levels, self.batch_size, None)?;
        // The reader builds its schema from the fields, without metadata; give the
        // batches the file's (projected) schema, as the stock builder reports it.
        let batches = batches
            .into_iter()
            .map(|b| b.with_schema(self.schema.clone()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        self.summary.rows += pages.rows() as u64;
        self.summary.row_groups += 1;
        Ok(batches)
    }

    /// Reads every row group.
    pub fn read_all(&mut self) -> Result<Vec<RecordBatch>> {
        let mut out = Vec::new();
        for index in 0..self.metadata.num_row_groups() {
            out.extend(self.read_row_group(index)?);
        }
        Ok(out)
    }
}

/// The result of [`read_batches`].
#[derive(Clone, Debug)]
pub struct ReadOutput {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
    pub summary: ReadSummary,
}

/// Reads a whole Parquet file (a `bytes::Bytes` or a `std::fs::File`).
pub fn read_batches<R: ChunkReader + 'static>(
    reader: R,
    options: &ReadOptions,
) -> Result<ReadOutput> {
    let mut file = ParquetReader::try_new(reader, options)?;
    let batches = file.read_all()?;
    Ok(ReadOutput {
        schema: file.schema().clone(),
        batches,
        summary: file.summary().clone(),
    })
}

fn projected_roots(projection: &Option<Vec<usize>>) -> Vec<usize> {
    // Sorted and deduplicated: a ProjectionMask keeps the file's column order.
    let mut roots = projection.clone().unwrap_or_default();
    roots.sort_unstable();
    roots.dedup();
    roots
}
