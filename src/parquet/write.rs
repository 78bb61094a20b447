//! Writing standard Parquet files whose column chunks are SNAPPY and whose page bytes are
//! `gmatch`'s Snappy raw streams (made on the GPU when there is one, the same bytes on
//! the CPU). Every Parquet reader reads them: the chunk metadata says SNAPPY and the page
//! payloads are valid Snappy.
//!
//! ```
//! use std::sync::Arc;
//! use arrow::array::{ArrayRef, Int64Array, StringArray};
//! use arrow::record_batch::RecordBatch;
//! use colzip::codec::Placement;
//! use colzip::parquet::write::{write_batches, WriteOptions};
//!
//! let batch = RecordBatch::try_from_iter([
//!     ("id", Arc::new(Int64Array::from_iter_values(0..10_000)) as ArrayRef),
//!     ("tag", Arc::new(StringArray::from_iter_values((0..10_000).map(|i| format!("t{}", i % 9))))),
//! ])?;
//! let options = WriteOptions::default()
//!     .with_placement(Placement::CPU)
//!     .with_row_group_size(4_000);
//! let mut file = Vec::new();
//! let summary = write_batches(&mut file, batch.schema(), [batch.clone()], &options)?;
//! assert_eq!((summary.rows, summary.row_groups), (10_000, 3));
//! assert!(summary.compressed_bytes < summary.uncompressed_bytes);
//!
//! // Any Parquet reader reads it; here the parquet crate's own.
//! let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReader::try_new(
//!     bytes::Bytes::from(file), 100_000)?;
//! let back: Vec<RecordBatch> = reader.collect::<Result<_, _>>()?;
//! assert_eq!(arrow::compute::concat_batches(&batch.schema(), &back)?, batch);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # How: encode UNCOMPRESSED, then compress the pages of several row groups in one batch
//! The parquet crate has no codec hook. Two routes were possible (see DATAFUSION.md):
//! typed column writers with a `PageWriter` of ours, or a post-pass over pages that
//! arrow-rs encoded without compression. This module takes the **post-pass**, per batch
//! of row groups, because
//! - arrow-rs's own encoders stay in charge of every Arrow type it writes (dictionaries,
//!   string/binary views, decimals, intervals, nested lists/structs/maps with their
//!   levels, statistics, page index): nothing of that is re-implemented here, so the
//!   file is what `ArrowWriter` would write with SNAPPY except for the bytes Snappy
//!   chooses (the same pages, the same page boundaries, since the stock writer splits
//!   pages on their uncompressed size);
//! - a `PageWriter` must return each page's compressed size at once, which would force
//!   one GPU call per page; the post-pass holds every page of its row groups before it
//!   compresses, so all of them go to the GPU in **one batched call**.
//!
//! The writer holds completed row groups until it has
//! [`WriteOptions::parallel_row_groups`] of them (or is flushed or closed), then for
//! all of them together: (1) every (row group, leaf column) pair is encoded in one
//! parallel pass (rayon) by an `ArrowColumnWriter` configured UNCOMPRESSED, so that a
//! slow column of one row group runs beside the other row groups' columns instead of
//! bounding its row group while cores idle; each task then lays its chunk out in file
//! order from the encoder's own page store and reads its pages back with
//! `SerializedPageReader` (`encode`, `capture`: no shared scratch file); (2) every page
//! payload (the whole page for data page v1 and dictionary pages, only the values for
//! data page v2, whose levels stay uncompressed) is compressed in one call
//! (`src/parquet/pages.rs`); (3) each chunk is re-serialized with `SerializedPageWriter` and
//! its metadata rebuilt (codec SNAPPY, sizes, page offsets, offset index), in
//! parallel; (4) the chunks are spliced into the output with `append_column`, row group
//! by row group in order. Chunk statistics and the column index describe values, so
//! they are kept as encoded.
//!
//! Steps (2)–(4) of one batch run while step (1) of the next batch runs
//! (`rayon::join`): the GPU (or the cores the encoders leave idle) compresses while the
//! encoders work. The writer so holds at most `parallel_row_groups` row groups of input
//! plus the encoded pages of the batch before. Row group boundaries follow
//! [`WriteOptions::row_group_size`] and [`ParquetWriter::flush`] alone, so the bytes do
//! not depend on how many row groups go together.
//!
//! Like the stock writer, a data page v2 whose compressed values are not smaller than
//! the page (times the properties' v2 compression ratio threshold) is stored with
//! `is_compressed = false`; v1 and dictionary pages are always written compressed, as
//! the stock writer does (gmatch expands incompressible bytes by a few bytes at most).
//!
//! Bloom filters, when the base properties ask for them, are built by the encoders and
//! carried over. Not supported: content-defined chunking (refused with an error) and
//! encryption.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::column::page::{CompressedPage, Page, PageWriter};
use parquet::column::writer::ColumnCloseResult;
use parquet::file::properties::{
    DEFAULT_MAX_ROW_GROUP_ROW_COUNT, DEFAULT_PAGE_SIZE, WriterProperties, WriterPropertiesPtr,
    WriterVersion,
};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use rayon::prelude::*;

use super::encode::{EncodedBatch, EncodedChunk, Encoder, RowGroupInput};
use super::pages;
use crate::codec::Placement;
use crate::gpu::Backend;
use crate::{Error, Result};

/// Which data page header the writer uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum DataPageVersion {
    /// `DATA_PAGE` (Parquet format 1.0): levels and values compressed together. The
    /// parquet crate's default and the most widely read.
    #[default]
    V1,
    /// `DATA_PAGE_V2`: levels uncompressed, values compressed.
    V2,
}

impl std::str::FromStr for DataPageVersion {
    type Err = Error;

    /// `1`/`v1` or `2`/`v2`.
    fn from_str(text: &str) -> Result<Self> {
        match text.trim().to_ascii_lowercase().as_str() {
            "1" | "v1" | "1.0" => Ok(DataPageVersion::V1),
            "2" | "v2" | "2.0" => Ok(DataPageVersion::V2),
            other => Err(Error::format(format!(
                "unknown data page version '{other}' (expected 1 or 2)"
            ))),
        }
    }
}

impl DataPageVersion {
    fn writer_version(self) -> WriterVersion {
        match self {
            DataPageVersion::V1 => WriterVersion::PARQUET_1_0,
            DataPageVersion::V2 => WriterVersion::PARQUET_2_0,
        }
    }
}

/// How [`ParquetWriter`] writes. The defaults are the parquet crate's (1 Mi rows per row
/// group, 1 MiB pages, data page v1), the backend of `COLZIP_BACKEND` and
/// [`default_parallel_row_groups`].
#[derive(Clone, Debug)]
pub struct WriteOptions {
    /// Rows per row group (the last may hold fewer).
    pub row_group_size: usize,
    /// Completed row groups the writer holds before it encodes them together, and then
    /// compresses and writes together (fewer at a flush or the end). More keep more
    /// cores busy, since the slowest column of one row group overlaps the others' work,
    /// and give the GPU larger batches; the writer holds up to this many row groups of
    /// input, plus the encoded pages of the batch before while it compresses them. It
    /// never changes the file's bytes.
    pub parallel_row_groups: usize,
    /// Target size of a data page's encoded bytes.
    pub data_page_size: usize,
    pub data_page_version: DataPageVersion,
    /// Where pages are compressed; `None`: `Placement::new(Backend::from_env())`.
    pub placement: Option<Placement>,
    /// Everything else (statistics, dictionaries, created_by, key-value metadata…);
    /// its compression, row group size, page size and writer version are replaced by
    /// the fields above. `None`: `WriterProperties::default()`.
    pub properties: Option<WriterProperties>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            row_group_size: DEFAULT_MAX_ROW_GROUP_ROW_COUNT,
            parallel_row_groups: default_parallel_row_groups(),
            data_page_size: DEFAULT_PAGE_SIZE,
            data_page_version: DataPageVersion::V1,
            placement: None,
            properties: None,
        }
    }
}

impl WriteOptions {
    /// Sets [`Self::row_group_size`].
    pub fn with_row_group_size(mut self, rows: usize) -> Self {
        self.row_group_size = rows;
        self
    }

    /// Sets [`Self::parallel_row_groups`].
    pub fn with_parallel_row_groups(mut self, row_groups: usize) -> Self {
        self.parallel_row_groups = row_groups;
        self
    }

    /// Sets [`Self::data_page_size`].
    pub fn with_data_page_size(mut self, bytes: usize) -> Self {
        self.data_page_size = bytes;
        self
    }

    /// Sets [`Self::data_page_version`].
    pub fn with_data_page_version(mut self, version: DataPageVersion) -> Self {
        self.data_page_version = version;
        self
    }

    /// Sets [`Self::placement`].
    pub fn with_placement(mut self, placement: Placement) -> Self {
        self.placement = Some(placement);
        self
    }

    /// Sets [`Self::properties`].
    pub fn with_properties(mut self, properties: WriterProperties) -> Self {
        self.properties = Some(properties);
        self
    }

    /// The output file's properties with `compression` (SNAPPY for the file, UNCOMPRESSED
    /// for the encoding pass).
    fn properties_with(&self, compression: Compression) -> Result<WriterProperties> {
        if self.row_group_size == 0 {
            return Err(Error::format("row_group_size must be at least 1"));
        }
        if self.parallel_row_groups == 0 {
            return Err(Error::format("parallel_row_groups must be at least 1"));
        }
        if self.data_page_size == 0 {
            return Err(Error::format("data_page_size must be at least 1"));
        }
        let base = self.properties.clone().unwrap_or_default();
        if base.content_defined_chunking().is_some() {
            return Err(Error::Unsupported(
                "content-defined chunking in the Parquet writer properties".into(),
            ));
        }
        Ok(base
            .into_builder()
            .set_compression(compression)
            .set_writer_version(self.data_page_version.writer_version())
            .set_data_page_size_limit(self.data_page_size)
            .set_max_row_group_row_count(Some(self.row_group_size))
            .build())
    }
}

/// The default of [`WriteOptions::parallel_row_groups`]: a quarter of the rayon pool's
/// threads, from 1 to 8. A row group's leaf columns already run in parallel; a few row
/// groups at once are enough to hide one slow column (e.g. TPC-H `l_comment`, several
/// times the average column's encoding time) without holding much more memory.
pub fn default_parallel_row_groups() -> usize {
    rayon::current_num_threads().div_ceil(4).clamp(1, 8)
}

/// What a write did, for reports and benchmarks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteSummary {
    pub rows: u64,
    pub row_groups: usize,
    /// Pages compressed (data and dictionary pages; v2 pages stored uncompressed
    /// because compression did not pay are counted too).
    pub pages: usize,
    /// Bytes handed to the compressor (page payloads).
    pub uncompressed_bytes: u64,
    /// Bytes it returned.
    pub compressed_bytes: u64,
    /// Wall-clock seconds spent in the compression stage (all batched calls; each runs
    /// beside the encoding of the next row groups, so on the CPU they share the cores).
    pub compress_seconds: f64,
    /// Wall-clock seconds spent encoding row groups (arrow-rs's encoders, in parallel;
    /// beside the compression and writing of the batch before).
    pub encode_seconds: f64,
    /// Wall-clock seconds spent rebuilding chunks around their compressed pages and
    /// appending them to the file.
    pub write_seconds: f64,
    /// Row groups whose pages were compressed on the GPU.
    pub gpu_row_groups: usize,
    /// Size of the finished file (after [`ParquetWriter::close`]).
    pub file_bytes: u64,
}

/// A streaming writer: give it record batches, it writes a row group every
/// [`WriteOptions::row_group_size`] rows, and [`Self::close`] writes the footer.
///
/// Row groups go through in batches of [`WriteOptions::parallel_row_groups`]: once a
/// batch is complete it is encoded while the batch before it is compressed and written
/// (`rayon::join`), so a row group's bytes reach the output one batch later, or at
/// [`Self::flush`] / [`Self::close`], which write everything buffered.
pub struct ParquetWriter<W: Write + Send> {
    schema: SchemaRef,
    row_group_size: usize,
    parallel_row_groups: usize,
    /// The row group being filled.
    pending: RowGroupInput,
    /// Completed row groups not encoded yet.
    complete: Vec<RowGroupInput>,
    encoder: Encoder,
    /// Encoded row groups waiting to be compressed and written.
    encoded: Option<EncodedBatch>,
    output: Output<W>,
}

impl<W: Write + Send> std::fmt::Debug for ParquetWriter<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParquetWriter")
            .field("schema", &self.schema)
            .field("placement", &self.output.placement)
            .field("summary", &self.output.summary)
            .finish_non_exhaustive()
    }
}

impl<W: Write + Send> ParquetWriter<W> {
    /// Starts a file with `schema` on `writer` (the magic bytes are written at once).
    /// Errors for Arrow types Parquet cannot hold and for a bad `COLZIP_BACKEND`.
    pub fn try_new(writer: W, schema: SchemaRef, options: &WriteOptions) -> Result<Self> {
        let placement = match options.placement {
            Some(placement) => placement,
            None => Placement::new(Backend::from_env()?)?,
        };
        let file_props = options.properties_with(Compression::SNAPPY)?;
        // Encoders whose properties are the same but UNCOMPRESSED.
        let encoder =
            Encoder::try_new(&schema, options.properties_with(Compression::UNCOMPRESSED)?)?;
        // The stock writer sets up the file: the Parquet schema converted from Arrow and
        // the embedded Arrow schema (`ARROW:schema`) in the key-value metadata.
        let writer = Counted {
            inner: writer,
            count: 0,
        };
        let (file, _) = ArrowWriter::try_new(writer, schema.clone(), Some(file_props))?
            .into_serialized_writer()?;
        let output = Output {
            file,
            placement,
            encoded_props: Arc::clone(encoder.properties()),
            summary: WriteSummary::default(),
        };
        Ok(ParquetWriter {
            schema,
            row_group_size: options.row_group_size,
            parallel_row_groups: options.parallel_row_groups,
            pending: RowGroupInput::default(),
            complete: Vec::new(),
            encoder,
            encoded: None,
            output,
        })
    }

    /// The Arrow schema the file holds.
    pub fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    /// Buffers `batch`; once [`WriteOptions::parallel_row_groups`] row groups are
    /// complete, encodes them and writes the batch encoded before.
    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.check_schema(batch)?;
        let mut offset = 0;
        while offset < batch.num_rows() {
            let take = (batch.num_rows() - offset).min(self.row_group_size - self.pending.rows);
            self.pending.batches.push(batch.slice(offset, take));
            self.pending.rows += take;
            offset += take;
            if self.pending.rows == self.row_group_size {
                self.complete.push(std::mem::take(&mut self.pending));
                if self.complete.len() >= self.parallel_row_groups {
                    self.advance(false)?;
                }
            }
        }
        Ok(())
    }

    /// Writes every buffered row now: the row groups encoded or completed, and the rows
    /// after them as one more row group (nothing when no rows are buffered).
    pub fn flush(&mut self) -> Result<()> {
        if self.pending.rows > 0 {
            self.complete.push(std::mem::take(&mut self.pending));
        }
        self.advance(true)
    }

    /// The summary so far (complete after [`Self::close`]).
    pub fn summary(&self) -> &WriteSummary {
        &self.output.summary
    }

    /// Writes the last row groups and the footer; returns the summary and the writer.
    pub fn close(mut self) -> Result<(WriteSummary, W)> {
        self.flush()?;
        let counted = self.output.file.into_inner()?;
        let mut summary = self.output.summary;
        summary.file_bytes = counted.count;
        Ok((summary, counted.inner))
    }

    fn check_schema(&self, batch: &RecordBatch) -> Result<()> {
        let expected = self.schema.fields();
        let got = batch.schema();
        let same = got.fields().len() == expected.len()
            && got
                .fields()
                .iter()
                .zip(expected)
                .all(|(a, b)| a.data_type() == b.data_type());
        if !same {
            return Err(Error::format(format!(
                "record batch schema {got} does not match the file's schema {}",
                self.schema
            )));
        }
        Ok(())
    }

    /// Encodes the completed row groups while the batch encoded before is compressed and
    /// written; with `drain`, then compresses and writes them too.
    fn advance(&mut self, drain: bool) -> Result<()> {
        let groups = std::mem::take(&mut self.complete);
        let previous = self.encoded.take();
        let (encoder, output) = (&mut self.encoder, &mut self.output);
        let ((encoded, encode_seconds), written) = rayon::join(
            || {
                let start = Instant::now();
                (encoder.encode(groups), start.elapsed().as_secs_f64())
            },
            || previous.map_or(Ok(()), |batch| output.write(batch)),
        );
        written?;
        let encoded = encoded?;
        self.output.summary.encode_seconds += encode_seconds;
        if drain {
            self.output.write(encoded)
        } else {
            self.encoded = Some(encoded);
            Ok(())
        }
    }
}

/// The file being written and what it takes to finish encoded row groups into it.
struct Output<W: Write + Send> {
    file: SerializedFileWriter<Counted<W>>,
    placement: Placement,
    /// The encoders' properties (for the v2 compression threshold).
    encoded_props: WriterPropertiesPtr,
    summary: WriteSummary,
}

impl<W: Write + Send> Output<W> {
    /// Compresses every page of `batch` in one call, rebuilds its chunks in parallel
    /// and appends them, row group by row group in order.
    fn write(&mut self, batch: EncodedBatch) -> Result<()> {
        let EncodedBatch { row_groups, chunks } = batch;
        if row_groups.is_empty() {
            return Ok(());
        }
        let payloads: Vec<&[u8]> = chunks
            .iter()
            .flat_map(|chunk| &chunk.pages)
            .map(|page| &page.buffer()[pages::levels_len(page)..])
            .collect();
        let (compressed, stats) = pages::compress_all(&self.placement, &payloads)?;
        let summary = &mut self.summary;
        summary.pages += payloads.len();
        summary.uncompressed_bytes += payloads.iter().map(|p| p.len() as u64).sum::<u64>();
        summary.compressed_bytes += compressed.iter().map(|c| c.len() as u64).sum::<u64>();
        summary.compress_seconds += stats.seconds;
        if stats.on_gpu {
            summary.gpu_row_groups += row_groups.len();
        }

        // Each chunk takes its pages' payloads, in order.
        let start = Instant::now();
        let mut compressed = compressed.into_iter();
        let payloads: Vec<Vec<Bytes>> = chunks
            .iter()
            .map(|chunk| compressed.by_ref().take(chunk.pages.len()).collect())
            .collect();
        let props = &self.encoded_props;
        let rebuilt: Vec<(Bytes, ColumnCloseResult)> = chunks
            .into_par_iter()
            .zip(payloads)
            .map(|(chunk, payloads)| rebuild_chunk(chunk, payloads, props))
            .collect::<Result<_>>()?;

        let leaves = self.file.schema_descr().num_columns();
        let mut rebuilt = rebuilt.into_iter();
        for rows in row_groups {
            let mut row_group = self.file.next_row_group()?;
            for (bytes, close) in rebuilt.by_ref().take(leaves) {
                row_group.append_column(&bytes, close)?;
            }
            row_group.close()?;
            self.summary.rows += rows as u64;
            self.summary.row_groups += 1;
        }
        self.summary.write_seconds += start.elapsed().as_secs_f64();
        Ok(())
    }
}

/// The output writer, counting the bytes of the file.
struct Counted<W> {
    inner: W,
    count: u64,
}

impl<W: Write> Write for Counted<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.count += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// Writes `batches` (all of `schema`) to `writer` as one file.
///
/// ```
/// # use std::sync::Arc;
/// # use arrow::array::{ArrayRef, Float64Array};
/// # use arrow::record_batch::RecordBatch;
/// use colzip::codec::Placement;
/// use colzip::parquet::write::{write_batches, DataPageVersion, WriteOptions};
/// let batch = RecordBatch::try_from_iter([
///     ("x", Arc::new(Float64Array::from(vec![Some(1.5), None, Some(2.5)])) as ArrayRef),
/// ])?;
/// let options = WriteOptions::default()
///     .with_placement(Placement::CPU)
///     .with_data_page_version(DataPageVersion::V2);
/// let summary = write_batches(std::io::sink(), batch.schema(), [batch], &options)?;
/// assert_eq!(summary.rows, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_batches<W, I>(
    writer: W,
    schema: SchemaRef,
    batches: I,
    options: &WriteOptions,
) -> Result<WriteSummary>
where
    W: Write + Send,
    I: IntoIterator<Item = RecordBatch>,
{
    let mut file = ParquetWriter::try_new(writer, schema, options)?;
    for batch in batches {
        file.write(&batch)?;
    }
    Ok(file.close()?.0)
}

/// Serializes one chunk's pages with their compressed payloads and rebuilds the chunk's
/// metadata (SNAPPY, sizes, offsets) and offset index, as the stock column writer would
/// have recorded them.
fn rebuild_chunk(
    chunk: EncodedChunk,
    payloads: Vec<Bytes>,
    props: &WriterProperties,
) -> Result<(Bytes, ColumnCloseResult)> {
    let EncodedChunk { pages, close } = chunk;
    if payloads.len() != pages.len() {
        return Err(Error::format(
            "a chunk got not as many compressed payloads as pages",
        ));
    }
    let threshold =
        props.column_data_page_v2_compression_ratio_threshold(close.metadata.column_path());
    let mut sink = TrackedWrite::new(Vec::new());
    let mut total_compressed = 0i64;
    let mut total_uncompressed = 0i64;
    let mut dictionary_offset = None;
    let mut data_offset = None;
    let mut data_pages = Vec::new();
    {
        let mut writer = SerializedPageWriter::new(&mut sink);
        for (page, payload) in pages.into_iter().zip(payloads) {
            let page = compressed_page(page, payload, threshold);
            let spec = writer.write_page(page)?;
            total_compressed += spec.compressed_size as i64;
            total_uncompressed += spec.uncompressed_size as i64;
            match spec.page_type {
                parquet::basic::PageType::DICTIONARY_PAGE => {
                    dictionary_offset.get_or_insert(spec.offset as i64);
                }
                _ => {
                    data_offset.get_or_insert(spec.offset as i64);
                    data_pages.push((spec.offset as i64, spec.compressed_size as i32));
                }
            }
        }
        writer.close()?;
    }
    let bytes_written = sink.bytes_written() as u64;
    let buffer = sink.into_inner()?;
    let metadata = close
        .metadata
        .into_builder()
        .set_compression(Compression::SNAPPY)
        .set_total_compressed_size(total_compressed)
        .set_total_uncompressed_size(total_uncompressed)
        .set_dictionary_page_offset(dictionary_offset)
        .set_data_page_offset(data_offset.unwrap_or(0))
        .build()?;
    let mut offset_index = close.offset_index;
    if let Some(index) = offset_index.as_mut() {
        if index.page_locations.len() != data_pages.len() {
            return Err(Error::format(format!(
                "offset index lists {} pages, the chunk has {} data pages",
                index.page_locations.len(),
                data_pages.len()
            )));
        }
        for (location, (offset, size)) in index.page_locations.iter_mut().zip(&data_pages) {
            location.offset = *offset;
            location.compressed_page_size = *size;
        }
    }
    let close = ColumnCloseResult {
        bytes_written,
        rows_written: close.rows_written,
        metadata,
        bloom_filter: close.bloom_filter,
        column_index: close.column_index,
        offset_index,
    };
    Ok((Bytes::from(buffer), close))
}

/// The page with its payload replaced by `payload` (the compressed bytes), as the stock
/// writer would have made it.
fn compressed_page(page: Page, payload: Bytes, v2_threshold: f64) -> CompressedPage {
    let uncompressed_size = page.buffer().len();
    let page = match page {
        Page::DataPageV2 { .. } => {
            // The stock writer's rule: keep the values uncompressed unless compression
            // makes them smaller than the page times the threshold.
            if (payload.len() as f64) < uncompressed_size as f64 * v2_threshold {
                pages::with_payload(page, payload, true)
            } else {
                let values = page.buffer().slice(pages::levels_len(&page)..);
                pages::with_payload(page, values, false)
            }
        }
        _ => pages::with_payload(page, payload, true),
    };
    CompressedPage::new(page, uncompressed_size)
}
