//! The writer's encoding stage: row groups of Arrow batches to UNCOMPRESSED column chunks
//! by arrow-rs's own encoders, every (row group, leaf column) pair of a batch of row
//! groups in one parallel pass (so that a slow column of one row group runs beside the
//! other row groups' columns instead of bounding its row group while cores idle), each
//! chunk then laid out from its encoder's page store ([`super::capture`]) and read back
//! page by page, on the same thread.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use parquet::arrow::ArrowWriter;
use parquet::arrow::arrow_writer::{
    ArrowColumnChunk, ArrowColumnWriter, ArrowLeafColumn, ArrowRowGroupWriterFactory,
    compute_leaves,
};
use parquet::column::page::Page;
use parquet::column::writer::ColumnCloseResult;
use parquet::file::properties::{WriterProperties, WriterPropertiesPtr};
use rayon::prelude::*;

use super::capture::{CapturedChunk, PageCapture};
use super::pages;
use crate::{Error, Result};

/// The batches (slices) of one row group.
#[derive(Default)]
pub(crate) struct RowGroupInput {
    pub batches: Vec<RecordBatch>,
    pub rows: usize,
}

/// Row groups encoded together: their row counts and their chunks, row group by row
/// group, leaf column by leaf column.
#[derive(Default)]
pub(crate) struct EncodedBatch {
    pub row_groups: Vec<usize>,
    pub chunks: Vec<EncodedChunk>,
}

/// A chunk encoded UNCOMPRESSED: its pages (payloads not compressed yet) and its close
/// result (metadata, indexes, bloom filter; page offsets relative to the chunk).
pub(crate) struct EncodedChunk {
    pub pages: Vec<Page>,
    pub close: ColumnCloseResult,
}

/// Makes the column writers of each row group (whose page stores it can read) and runs
/// them.
pub(crate) struct Encoder {
    schema: SchemaRef,
    factory: ArrowRowGroupWriterFactory,
    capture: Arc<PageCapture>,
    properties: WriterPropertiesPtr,
    /// The file's index of the next row group to encode.
    next_row_group: usize,
}

impl Encoder {
    /// Encoders for `schema` with `properties`, which should say UNCOMPRESSED.
    pub(crate) fn try_new(schema: &SchemaRef, properties: WriterProperties) -> Result<Self> {
        // The stock writer converts the schema and makes the factory; its own output is
        // never used.
        let (scratch, factory) =
            ArrowWriter::try_new(std::io::sink(), schema.clone(), Some(properties))?
                .into_serialized_writer()?;
        let capture = Arc::new(PageCapture::default());
        Ok(Encoder {
            schema: schema.clone(),
            factory: factory.with_page_store_factory(capture.clone()),
            capture,
            properties: Arc::clone(scratch.properties()),
            next_row_group: 0,
        })
    }

    /// The properties the chunks were encoded with.
    pub(crate) fn properties(&self) -> &WriterPropertiesPtr {
        &self.properties
    }

    /// Encodes `groups`, all of their (row group, leaf column) pairs in one parallel
    /// pass.
    pub(crate) fn encode(&mut self, groups: Vec<RowGroupInput>) -> Result<EncodedBatch> {
        let chunks = self
            .tasks(&groups)?
            .into_par_iter()
            .map(EncodingTask::run)
            .collect::<Result<_>>()?;
        Ok(EncodedBatch {
            row_groups: groups.iter().map(|group| group.rows).collect(),
            chunks,
        })
    }

    /// One task per (row group, leaf column), row group by row group: the leaf column's
    /// encoder, its slices of the row group and where its pages will be.
    fn tasks(&mut self, groups: &[RowGroupInput]) -> Result<Vec<EncodingTask>> {
        let schema = &self.schema;
        let leaves: Vec<Vec<Vec<ArrowLeafColumn>>> = groups
            .par_iter()
            .map(|group| leaf_columns(schema, group))
            .collect::<Result<_>>()?;
        let mut tasks = Vec::new();
        for (group, leaves) in groups.iter().zip(leaves) {
            // (Serial: the stores made by one call are the ones `take_created` lists.)
            let writers = self.factory.create_column_writers(self.next_row_group)?;
            let captured = self.capture.take_created(writers.len())?;
            if leaves.len() != writers.len() {
                return Err(Error::format("leaf columns and column writers differ"));
            }
            self.next_row_group += 1;
            for ((writer, leaves), captured) in writers.into_iter().zip(leaves).zip(captured) {
                tasks.push(EncodingTask {
                    writer,
                    leaves,
                    captured,
                    rows: group.rows,
                });
            }
        }
        Ok(tasks)
    }
}

/// The row group's slices of each leaf column, in column writer order.
fn leaf_columns(schema: &SchemaRef, group: &RowGroupInput) -> Result<Vec<Vec<ArrowLeafColumn>>> {
    let mut leaves: Vec<Vec<ArrowLeafColumn>> = Vec::new();
    for batch in &group.batches {
        let mut slot = 0;
        for (field, column) in schema.fields().iter().zip(batch.columns()) {
            for leaf in compute_leaves(field, column)? {
                if slot == leaves.len() {
                    leaves.push(Vec::new());
                }
                leaves[slot].push(leaf);
                slot += 1;
            }
        }
    }
    Ok(leaves)
}

/// Encoding one leaf column of one row group.
struct EncodingTask {
    writer: ArrowColumnWriter,
    leaves: Vec<ArrowLeafColumn>,
    captured: CapturedChunk,
    rows: usize,
}

impl EncodingTask {
    /// Encodes the column and reads its pages back from the encoder's own bytes.
    fn run(self) -> Result<EncodedChunk> {
        let EncodingTask {
            mut writer,
            leaves,
            captured,
            rows,
        } = self;
        for leaf in &leaves {
            writer.write(leaf)?;
        }
        drop(leaves);
        let mut chunk = writer.close()?;
        let close = take_close(&mut chunk);
        drop(chunk);
        let (bytes, close) = captured.into_file_order(close)?;
        let pages = pages::read_chunk_pages(&Arc::new(bytes), &close.metadata, rows)?;
        Ok(EncodedChunk { pages, close })
    }
}

/// The chunk's close result, moved out (the bloom filter and indexes are taken, not
/// cloned).
fn take_close(chunk: &mut ArrowColumnChunk) -> ColumnCloseResult {
    let close = chunk.close_mut();
    ColumnCloseResult {
        bytes_written: close.bytes_written,
        rows_written: close.rows_written,
        metadata: close.metadata.clone(),
        bloom_filter: close.bloom_filter.take(),
        column_index: close.column_index.take(),
        offset_index: close.offset_index.take(),
    }
}
