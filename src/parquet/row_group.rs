//! One row group's projected column chunks turned into pages the parquet crate's Arrow
//! decoder takes: the raw pages of every projected chunk are read, the payloads of all its
//! SNAPPY pages are decompressed in ONE batched call (GPU when the placement says so), and
//! the pages are handed to `ParquetRecordBatchReader::try_new_with_row_groups`
//! uncompressed. Shared by [`super::read::ParquetReader`] and the SQL scan
//! (`crate::datafusion::parquet_scan`).
//!
//! With a row selection (page pruning) and the file's offset index, the data pages whose
//! rows the selection skips entirely are left out of the batched call: the decoder skips
//! them without reading. Should it read one after all, that page is decompressed then, on
//! the CPU, so a wrong guess costs time, never a wrong result.

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ParquetRecordBatchReader, RowGroups, RowSelection};
use parquet::arrow::{FieldLevels, ProjectionMask};
use parquet::basic::Compression;
use parquet::column::page::{Page, PageIterator, PageMetadata, PageReader};
use parquet::errors::ParquetError;
use parquet::file::metadata::{ParquetMetaData, RowGroupMetaData};
use parquet::file::reader::ChunkReader;

use super::pages;
use crate::codec::Placement;
use crate::{Error, Result};

/// What decompressing one row group's pages did.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct DecompressStats {
    /// SNAPPY page payloads decompressed in the batched call.
    pub snappy_pages: usize,
    /// Their compressed and decompressed bytes.
    pub compressed_bytes: u64,
    pub decompressed_bytes: u64,
    /// Wall-clock seconds of the batched call.
    pub seconds: f64,
    /// Whether the batched call ran on the GPU.
    pub on_gpu: bool,
    /// Column chunks with another codec, left to the parquet crate (CPU).
    pub other_codec_chunks: usize,
    /// SNAPPY pages left compressed because the row selection skips all their rows.
    pub skipped_pages: usize,
}

/// A page ready for the decoder, or one the selection skips, still compressed.
#[derive(Clone)]
enum PageSlot {
    Ready {
        page: Page,
        /// Rows of a data page, when the offset index says.
        rows: Option<usize>,
    },
    /// A SNAPPY page whose payload is decompressed only if the decoder reads it.
    Deferred {
        page: Page,
        rows: Option<usize>,
        /// The most bytes its payload may decode to (the chunk's uncompressed size).
        limit: usize,
    },
}

/// The pages of one row group's projected column chunks, ready for the Arrow decoder.
pub struct RowGroupPages {
    metadata: Arc<ParquetMetaData>,
    index: usize,
    rows: usize,
    /// Per leaf column of the file: its pages when projected.
    columns: Vec<Option<Vec<PageSlot>>>,
}

impl RowGroupPages {
    /// Reads the pages of row group `index`'s chunks that `mask` selects from `reader`
    /// (which needs to hold only those chunks' bytes) and decompresses every SNAPPY
    /// payload the `selection` may need in one call on `placement`.
    pub fn read<R: ChunkReader + 'static>(
        reader: &Arc<R>,
        metadata: Arc<ParquetMetaData>,
        index: usize,
        mask: &ProjectionMask,
        placement: &Placement,
        selection: Option<&RowSelection>,
    ) -> Result<(RowGroupPages, DecompressStats)> {
        let count = metadata.num_row_groups();
        if index >= count {
            return Err(Error::format(format!(
                "row group {index} does not exist (the file has {count})"
            )));
        }
        let row_group = metadata.row_group(index);
        let rows = usize::try_from(row_group.num_rows())
            .map_err(|_| Error::format("a row group has a negative row count"))?;
        let selected = selection.map(selected_ranges);
        let mut stats = DecompressStats::default();

        // Raw pages of every projected chunk; SNAPPY payloads are gathered for one call.
        let mut columns: Vec<Option<Vec<PageSlot>>> = Vec::with_capacity(row_group.num_columns());
        let mut jobs: Vec<(usize, usize)> = Vec::new(); // (column, page) of each payload
        for (column, chunk) in row_group.columns().iter().enumerate() {
            if !mask.leaf_included(column) {
                columns.push(None);
                continue;
            }
            let snappy = chunk.compression() == Compression::SNAPPY;
            let pages = if snappy {
                let raw = chunk
                    .clone()
                    .into_builder()
                    .set_compression(Compression::UNCOMPRESSED)
                    .build()?;
                pages::read_chunk_pages(reader, &raw, rows)?
            } else {
                if chunk.compression() != Compression::UNCOMPRESSED {
                    stats.other_codec_chunks += 1;
                }
                pages::read_chunk_pages(reader, chunk, rows)?
            };
            let page_rows = data_page_rows(&metadata, index, column, rows, &pages);
            let limit = usize::try_from(chunk.uncompressed_size()).unwrap_or(0);
            let mut slots = Vec::with_capacity(pages.len());
            let mut data_page = 0;
            for (page_index, page) in pages.into_iter().enumerate() {
                let is_dict = matches!(page, Page::DictionaryPage { .. });
                let range = if is_dict {
                    None
                } else {
                    data_page += 1;
                    page_rows
                        .as_ref()
                        .and_then(|r| r.get(data_page - 1).cloned())
                };
                let rows = range.as_ref().map(|r| r.end - r.start);
                let skipped = match (&selected, &range) {
                    (Some(selected), Some(range)) => !overlaps(selected, range),
                    _ => false,
                };
                if snappy && is_compressed(&page) {
                    if skipped {
                        stats.skipped_pages += 1;
                        slots.push(PageSlot::Deferred { page, rows, limit });
                        continue;
                    }
                    jobs.push((column, page_index));
                }
                slots.push(PageSlot::Ready { page, rows });
            }
            columns.push(Some(slots));
        }

        let mut streams = Vec::with_capacity(jobs.len());
        let mut limits = Vec::with_capacity(jobs.len());
        for &(column, page_index) in &jobs {
            let PageSlot::Ready { page, .. } =
                &columns[column].as_ref().expect("projected")[page_index]
            else {
                unreachable!("only ready pages are batched")
            };
            streams.push(compressed_values(page)?);
            let limit = row_group.column(column).uncompressed_size();
            limits.push(usize::try_from(limit).unwrap_or(0));
        }
        let (decoded, batch) = pages::decompress_all(placement, &streams, &limits)?;
        stats.snappy_pages = streams.len();
        stats.compressed_bytes = streams.iter().map(|s| s.len() as u64).sum();
        stats.decompressed_bytes = decoded.iter().map(|d| d.len() as u64).sum();
        stats.seconds = batch.seconds;
        stats.on_gpu = batch.on_gpu && !streams.is_empty();
        drop(streams);
        for (&(column, page_index), values) in jobs.iter().zip(decoded) {
            let slots = columns[column].as_mut().expect("projected");
            let slot = std::mem::replace(&mut slots[page_index], placeholder());
            let PageSlot::Ready { page, rows } = slot else {
                unreachable!("only ready pages are batched")
            };
            slots[page_index] = PageSlot::Ready {
                page: pages::with_payload(page, values, false),
                rows,
            };
        }
        Ok((
            RowGroupPages {
                metadata,
                index,
                rows,
                columns,
            },
            stats,
        ))
    }

    /// The row group's rows.
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Decodes the pages into record batches of `levels`' fields (the projected columns,
    /// in the file's order) of at most `batch_size` rows, the rows `selection` keeps.
    ///
    /// The parquet crate's decoders panic (out-of-bounds slices) on some corrupt levels
    /// or values instead of returning an error; the panic is caught and returned as an
    /// error, so a corrupt file never takes the caller down.
    pub fn decode(
        &self,
        levels: &FieldLevels,
        batch_size: usize,
        selection: Option<RowSelection>,
    ) -> Result<Vec<RecordBatch>> {
        self.batches(levels, batch_size, selection)?.collect()
    }

    /// [`Self::decode`] one batch at a time: each batch is decoded when the iterator is
    /// asked for it (a scan hands it on before decoding the next, as the parquet crate's
    /// own reader does, instead of holding a whole row group decoded).
    pub fn batches(
        &self,
        levels: &FieldLevels,
        batch_size: usize,
        selection: Option<RowSelection>,
    ) -> Result<RowGroupBatches> {
        let reader = caught(|| {
            Ok(ParquetRecordBatchReader::try_new_with_row_groups(
                levels, self, batch_size, selection,
            )?)
        })?;
        Ok(RowGroupBatches {
            reader: Some(reader),
            validate: self.unchecked_byte_arrays(),
        })
    }
}

/// The batches of a row group, decoded one by one; see [`RowGroupPages::batches`]. It
/// ends after the first error.
pub struct RowGroupBatches {
    reader: Option<ParquetRecordBatchReader>,
    /// Whether each batch is checked in full (see [`RowGroupPages::unchecked_byte_arrays`]).
    validate: bool,
}

impl Iterator for RowGroupBatches {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Result<RecordBatch>> {
        let reader = self.reader.as_mut()?;
        let validate = self.validate;
        let next = caught(|| {
            let Some(batch) = reader.next().transpose()? else {
                return Ok(None);
            };
            // The crate checks UTF-8 only where the Parquet column's converted type says
            // UTF8; a corrupt footer that drops it, under an embedded Arrow schema of
            // Utf8, yields strings it never checked (the fuzz harness found one). Arrays
            // that do not hold Arrow's invariants never leave this reader. A full check
            // is a pass over every decoded byte, so it is done only where such a column
            // is read.
            if validate {
                for column in batch.columns() {
                    column
                        .to_data()
                        .validate_full()
                        .map_err(|e| Error::format(format!("the Parquet data is corrupt: {e}")))?;
                }
            }
            Ok(Some(batch))
        });
        match next {
            Ok(Some(batch)) => Some(Ok(batch)),
            Ok(None) => {
                self.reader = None;
                None
            }
            Err(e) => {
                self.reader = None;
                Some(Err(e))
            }
        }
    }
}

/// Runs `work`, turning a panic of the parquet crate's decoders into an error.
fn caught<T>(work: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(work)).unwrap_or_else(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::format(format!(
            "the Parquet page data is corrupt (the decoder failed: {reason})"
        )))
    })
}

impl RowGroupPages {
    /// Whether a projected column holds byte arrays that the decoder does not check as
    /// UTF-8 (no UTF8 converted type), which Arrow's string arrays might then hold.
    fn unchecked_byte_arrays(&self) -> bool {
        let schema = self.metadata.file_metadata().schema_descr();
        self.columns.iter().enumerate().any(|(leaf, pages)| {
            let column = schema.column(leaf);
            pages.is_some()
                && matches!(
                    column.physical_type(),
                    parquet::basic::Type::BYTE_ARRAY | parquet::basic::Type::FIXED_LEN_BYTE_ARRAY
                )
                && column.converted_type() != parquet::basic::ConvertedType::UTF8
        })
    }
}

/// The payload of a SNAPPY page that is compressed: all of a v1 or dictionary page, the
/// values after a v2 page's levels.
fn compressed_values(page: &Page) -> Result<&[u8]> {
    let levels = pages::levels_len(page);
    let buffer = page.buffer();
    if levels > buffer.len() {
        return Err(Error::format(
            "a data page v2 claims more level bytes than it holds: the file is corrupt",
        ));
    }
    Ok(&buffer[levels..])
}

/// The row range of each data page of a column chunk, from the file's offset index;
/// `None` without one, or where it does not match the chunk's data pages.
fn data_page_rows(
    metadata: &ParquetMetaData,
    row_group: usize,
    column: usize,
    rows: usize,
    pages: &[Page],
) -> Option<Vec<Range<usize>>> {
    let locations = metadata
        .offset_index()?
        .get(row_group)?
        .get(column)?
        .page_locations();
    let data_pages = pages
        .iter()
        .filter(|p| !matches!(p, Page::DictionaryPage { .. }))
        .count();
    if locations.len() != data_pages {
        return None;
    }
    let starts: Vec<usize> = locations
        .iter()
        .map(|l| usize::try_from(l.first_row_index).ok())
        .collect::<Option<_>>()?;
    let mut ranges = Vec::with_capacity(starts.len());
    for (i, &start) in starts.iter().enumerate() {
        let end = starts.get(i + 1).copied().unwrap_or(rows);
        if end < start || end > rows {
            return None; // not a valid index: skip nothing
        }
        ranges.push(start..end);
    }
    Some(ranges)
}

/// The row ranges a selection keeps, in order.
fn selected_ranges(selection: &RowSelection) -> Vec<Range<usize>> {
    let mut ranges = Vec::new();
    let mut row = 0usize;
    for selector in selection.iter() {
        let end = row.saturating_add(selector.row_count);
        if !selector.skip && end > row {
            ranges.push(row..end);
        }
        row = end;
    }
    ranges
}

/// Whether any of the sorted `ranges` overlaps `range` (an empty page overlaps none,
/// but is cheap: it is kept anyway).
fn overlaps(ranges: &[Range<usize>], range: &Range<usize>) -> bool {
    if range.is_empty() {
        return true;
    }
    let first = ranges.partition_point(|r| r.end <= range.start);
    ranges.get(first).is_some_and(|r| r.start < range.end)
}

/// Whether the page's payload is compressed (v2 pages may store theirs as is).
fn is_compressed(page: &Page) -> bool {
    match page {
        Page::DataPageV2 { is_compressed, .. } => *is_compressed,
        _ => true,
    }
}

fn placeholder() -> PageSlot {
    PageSlot::Ready {
        page: Page::DictionaryPage {
            buf: Bytes::new(),
            num_values: 0,
            encoding: parquet::basic::Encoding::PLAIN,
            is_sorted: false,
        },
        rows: None,
    }
}

impl RowGroups for RowGroupPages {
    fn num_rows(&self) -> usize {
        self.rows
    }

    fn column_chunks(&self, i: usize) -> parquet::errors::Result<Box<dyn PageIterator>> {
        let pages = self
            .columns
            .get(i)
            .and_then(|c| c.as_ref())
            .ok_or_else(|| ParquetError::General(format!("column {i} was not read")))?;
        let reader: Box<dyn PageReader> = Box::new(PagesReader(pages.iter().cloned().collect()));
        Ok(Box::new(OnePageReader(Some(reader))))
    }

    fn row_groups(&self) -> Box<dyn Iterator<Item = &RowGroupMetaData> + '_> {
        Box::new(std::iter::once(self.metadata.row_group(self.index)))
    }

    fn metadata(&self) -> &ParquetMetaData {
        &self.metadata
    }
}

/// A column chunk's pages, decompressed (deferred ones when read).
struct PagesReader(VecDeque<PageSlot>);

impl PagesReader {
    fn take(slot: PageSlot) -> parquet::errors::Result<Page> {
        match slot {
            PageSlot::Ready { page, .. } => Ok(page),
            PageSlot::Deferred { page, limit, .. } => {
                let general = |e: Error| ParquetError::General(e.to_string());
                let values = compressed_values(&page).map_err(general)?;
                let (mut decoded, _) =
                    pages::decompress_all(&Placement::CPU, &[values], &[limit]).map_err(general)?;
                let values = decoded.pop().unwrap_or_default();
                Ok(pages::with_payload(page, values, false))
            }
        }
    }
}

impl Iterator for PagesReader {
    type Item = parquet::errors::Result<Page>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.pop_front().map(Self::take)
    }
}

impl PageReader for PagesReader {
    fn get_next_page(&mut self) -> parquet::errors::Result<Option<Page>> {
        self.0.pop_front().map(Self::take).transpose()
    }

    fn peek_next_page(&mut self) -> parquet::errors::Result<Option<PageMetadata>> {
        Ok(self.0.front().map(|slot| {
            let (page, rows) = match slot {
                PageSlot::Ready { page, rows } | PageSlot::Deferred { page, rows, .. } => {
                    (page, *rows)
                }
            };
            match page {
                Page::DataPage { num_values, .. } => PageMetadata {
                    num_rows: rows,
                    num_levels: Some(*num_values as usize),
                    is_dict: false,
                },
                Page::DataPageV2 {
                    num_values,
                    num_rows,
                    ..
                } => PageMetadata {
                    num_rows: Some(*num_rows as usize),
                    num_levels: Some(*num_values as usize),
                    is_dict: false,
                },
                Page::DictionaryPage { .. } => PageMetadata {
                    num_rows: None,
                    num_levels: None,
                    is_dict: true,
                },
            }
        }))
    }

    fn skip_next_page(&mut self) -> parquet::errors::Result<()> {
        self.0.pop_front();
        Ok(())
    }
}

/// The page iterator of one chunk: yields its page reader once.
struct OnePageReader(Option<Box<dyn PageReader>>);

impl Iterator for OnePageReader {
    type Item = parquet::errors::Result<Box<dyn PageReader>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.0.take().map(Ok)
    }
}

impl PageIterator for OnePageReader {}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::arrow::arrow_reader::RowSelector;

    #[test]
    fn selected_ranges_and_overlaps() {
        let selection = RowSelection::from(vec![
            RowSelector::skip(10),
            RowSelector::select(5),
            RowSelector::skip(20),
            RowSelector::select(1),
        ]);
        let ranges = selected_ranges(&selection);
        assert_eq!(ranges, vec![10..15, 35..36]);
        assert!(!overlaps(&ranges, &(0..10)));
        assert!(overlaps(&ranges, &(0..11)));
        assert!(overlaps(&ranges, &(14..20)));
        assert!(!overlaps(&ranges, &(15..35)));
        assert!(overlaps(&ranges, &(35..40)));
        assert!(!overlaps(&ranges, &(36..100)));
    }
}
