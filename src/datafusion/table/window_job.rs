//! What one window of a compressed scan decodes and how: its projected columns, the row
//! filter's first and the rest only where rows pass, on the GPU where the window's filter
//! has a form the GPU tests, and the join filters applied to the batches that result.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result};

use super::Block;
use super::decoded::DecodedBlock;
use super::device_filter::{self, DeviceTests};
use super::dictionary;
use super::dynamic_filter::{DynamicFilters, Generation, Snapshot, narrow};
use super::options::Residence;
use super::row_filter::RowFilter;
use crate::codec::Placement;
use crate::column::{self, PlainNode};
use rayon::prelude::*;

use super::scan_metrics::Metrics;
use super::window::Window;

/// What every window of one partition's scan decodes with.
pub(super) struct Job {
    /// The table's schema (the types its columns are handed out in).
    pub(super) table: SchemaRef,
    pub(super) projection: Vec<usize>,
    pub(super) schema: SchemaRef,
    pub(super) batch_size: usize,
    pub(super) placement: Placement,
    pub(super) filter: Option<Arc<RowFilter>>,
    /// The filter as tests the GPU evaluates, when it has that form (no test without a
    /// filter).
    pub(super) device_tests: Option<DeviceTests>,
    pub(super) residence: Residence,
    pub(super) dynamic: Option<DynamicFilters>,
    /// Whether the next window decodes the filter's columns and the others in one call
    /// (see [`Job::run_filtered`]).
    pub(super) decode_in_one_call: AtomicBool,
    pub(super) metrics: Metrics,
}

/// A window's batches, and the generation of the dynamic filters applied to them.
pub(super) type Filtered = (Vec<RecordBatch>, Generation);

/// Key columns built for the dynamic filters' test, by table column.
type Keys = Vec<(usize, ArrayRef)>;

/// The dynamic filters as a window tests them before building its other columns.
struct Late<'a> {
    dynamic: &'a DynamicFilters,
    snapshot: &'a Snapshot,
}

impl Job {
    /// `batches` without the rows the dynamic filters reject as they stand now.
    pub(super) fn apply_dynamic(&self, batches: Vec<RecordBatch>) -> Result<Filtered> {
        let Some(dynamic) = &self.dynamic else {
            return Ok((batches, 0));
        };
        let timer = self.metrics.dynamic_filter_time.timer();
        let (batches, generation, dropped) = dynamic.apply(batches)?;
        timer.done();
        self.metrics.dynamic_filter_dropped.add(dropped);
        Ok((batches, generation))
    }

    /// Decodes `window`'s projected columns (batched calls): the rows the row filter and
    /// the dynamic filters as they stand keep, in batches of at most the session's batch
    /// size, with the generation of the dynamic filters applied.
    ///
    /// Late materialisation by the dynamic filters too: their key columns are decoded and
    /// tested with the row filter's, and the other columns built only for the rows that
    /// pass (a join that keeps a twentieth of lineitem's rows builds a twentieth of its
    /// other columns).
    pub(super) fn run(&self, window: &Window) -> Result<Filtered> {
        let blocks: Vec<&Block> = window.blocks.iter().map(|b| b.as_ref()).collect();
        let snapshot = match &self.dynamic {
            Some(dynamic) if !self.projection.is_empty() => dynamic.snapshot()?,
            _ => None,
        };
        let late = match (&self.dynamic, &snapshot) {
            (Some(dynamic), Some(snapshot)) => Some(Late { dynamic, snapshot }),
            _ => None,
        };
        let late = late.as_ref();
        let batches = match &self.filter {
            Some(filter) => self.run_filtered(&blocks, Some(filter), late)?,
            // Every row, from the streams resident on the GPU where it has them.
            None => match self.select_on_device(&blocks, late)? {
                Some(batches) => batches,
                None if late.is_some() => self.run_filtered(&blocks, None, late)?,
                None => self.run_unfiltered(&blocks, window.rows)?,
            },
        };
        Ok((batches, snapshot.map_or(0, |s| s.generation())))
    }

    /// The rows of `passing` (a block's rows that the row filter keeps) that the dynamic
    /// filters keep too, as a bit for each passing row, `None` when they keep them all;
    /// and the key columns tested, by table column, for the caller to build from. `key`
    /// gives table column `c`'s passing rows.
    fn dynamic_keep(
        &self,
        late: &Late<'_>,
        passing: usize,
        key: impl Fn(usize) -> Result<ArrayRef>,
    ) -> Result<(Option<BooleanBuffer>, Keys)> {
        if passing == 0 {
            return Ok((None, Vec::new()));
        }
        let timer = self.metrics.dynamic_filter_time.timer();
        let keys = late
            .snapshot
            .columns()
            .iter()
            .map(|&p| Ok((self.projection[p], key(self.projection[p])?)))
            .collect::<Result<Keys>>()?;
        let arrays = keys.iter().map(|(_, a)| a.clone()).collect();
        let batch = late.snapshot.stand_ins(&self.schema, arrays, passing)?;
        let keep = late.dynamic.keep(late.snapshot, &batch)?;
        timer.done();
        let kept = keep.count_set_bits();
        self.metrics.dynamic_filter_dropped.add(passing - kept);
        Ok(((kept < passing).then_some(keep), keys))
    }

    /// Every row of the window up to `rows`.
    fn run_unfiltered(&self, blocks: &[&Block], rows: usize) -> Result<Vec<RecordBatch>> {
        let width = self.projection.len();
        let mut arrays = self.decode(blocks, &self.projection)?.into_iter();
        let mut out = Vec::new();
        let mut remaining = rows;
        for block in blocks {
            let columns: Vec<ArrayRef> = arrays.by_ref().take(width).collect();
            let options = RecordBatchOptions::new().with_row_count(Some(block.rows));
            let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
            let rows = block.rows.min(remaining);
            remaining -= rows;
            // Slices of the session's batch size, as other sources hand out.
            for (offset, len) in chunks(rows, self.batch_size) {
                out.push(batch.slice(offset, len));
            }
            if remaining == 0 {
                break;
            }
        }
        Ok(out)
    }

    /// The rows of the window `filter` keeps, in batches of the session's batch size. Late
    /// materialisation: the filter's columns are decoded and it is evaluated first (on
    /// the plain parts where it can be: `row_filter`), then the other projected columns
    /// are decoded only for the blocks where some row passes. That costs a second batched
    /// call per window, which buys nothing while every block has a passing row (most
    /// filters of TPC-H over unsorted columns): after such a window the partition decodes
    /// every column in one call, until a block without a passing row turns up again.
    fn run_filtered(
        &self,
        blocks: &[&Block],
        filter: Option<&RowFilter>,
        late: Option<&Late<'_>>,
    ) -> Result<Vec<RecordBatch>> {
        if filter.is_some()
            && let Some(batches) = self.select_on_device(blocks, late)?
        {
            return Ok(batches);
        }
        let mut read: Vec<usize> = filter.map_or_else(Vec::new, |f| f.columns().to_vec());
        if let Some(late) = late {
            read.extend(late.snapshot.columns().iter().map(|&p| self.projection[p]));
            read.sort_unstable();
            read.dedup();
        }
        let others: Vec<usize> = self
            .projection
            .iter()
            .copied()
            .filter(|c| read.binary_search(c).is_err())
            .collect();
        let one_call = !others.is_empty() && self.decode_in_one_call.load(Ordering::Relaxed);
        let first: Vec<usize> = if one_call {
            read.iter().chain(&others).copied().collect()
        } else {
            read.to_vec()
        };
        let mut decoded: Vec<DecodedBlock<'_>> = blocks
            .iter()
            .map(|block| DecodedBlock::new(block, &self.table))
            .collect();
        let all: Vec<&mut DecodedBlock<'_>> = decoded.iter_mut().collect();
        self.decode_into(all, &first)?;

        let timer = self.metrics.filter_time.timer();
        let masks = decoded
            .par_iter()
            .map(|block| {
                let mask = match filter {
                    Some(filter) => filter.evaluate(block)?,
                    None => BooleanBuffer::new_set(block.rows()),
                };
                let Some(late) = late else {
                    return Ok(mask);
                };
                let passing = mask.count_set_bits();
                let all = passing == block.rows();
                let key = |c| {
                    if all {
                        block.array(c)
                    } else {
                        block.kept_rows(c, &mask)
                    }
                };
                Ok(match self.dynamic_keep(late, passing, key)?.0 {
                    Some(keep) => narrow(&mask, &keep),
                    None => mask,
                })
            })
            .collect::<Result<Vec<BooleanBuffer>>>()?;
        timer.done();
        let passing: Vec<usize> = masks.iter().map(BooleanBuffer::count_set_bits).collect();
        let without = passing.iter().filter(|&&n| n == 0).count();
        if filter.is_some() {
            self.metrics
                .filter_rows_in
                .add(blocks.iter().map(|b| b.rows).sum());
        }
        self.metrics.blocks_without_survivors.add(without);
        self.decode_in_one_call
            .store(without == 0, Ordering::Relaxed);
        if self.projection.is_empty() {
            // Only a row count (`count(*)` under a filter): batches without columns.
            return row_count_batches(&self.schema, passing.iter().sum(), self.batch_size);
        }
        if !one_call {
            // The other projected columns, only where some row passes.
            self.decode_where_passing(&mut decoded, &passing, &others)?;
        }

        let timer = self.metrics.arrays_time.timer();
        let batches = decoded
            .par_iter()
            .zip(&masks)
            .zip(&passing)
            .map(|((block, keep), &n)| self.batches_of(block, keep, n))
            .collect::<Result<Vec<Vec<RecordBatch>>>>()?;
        timer.done();
        Ok(batches.into_iter().flatten().collect())
    }

    /// The window's passing rows selected on the GPU (`device_filter`), when the
    /// placement gives the window a GPU and its filter has the form the GPU evaluates
    /// (without a filter, every row: the GPU decodes the fixed-width columns from their
    /// resident streams); `None` otherwise. The dynamic filters of `late` are tested on
    /// the passing rows' key columns before the others are built.
    fn select_on_device(
        &self,
        blocks: &[&Block],
        late: Option<&Late<'_>>,
    ) -> Result<Option<Vec<RecordBatch>>> {
        let Some(tests) = &self.device_tests else {
            return Ok(None);
        };
        let columns = self.filter.as_ref().map_or(&[][..], |f| f.columns());
        let plain: usize = blocks
            .iter()
            .flat_map(|b| {
                columns
                    .iter()
                    .chain(&self.projection)
                    .map(|&c| &b.columns[c])
            })
            .map(|c| c.plain_bytes())
            .sum();
        let Some(gpu) = self.placement.gpu_for_bytes(plain) else {
            return Ok(None);
        };
        let window = device_filter::Window {
            blocks,
            table: &self.table,
            projection: &self.projection,
            keep_resident: self.residence != Residence::Host,
        };
        let timer = self.metrics.time.timer();
        let device_timer = self.metrics.device_select_time.timer();
        let selected = device_filter::select_window(gpu, tests, &window);
        device_timer.done();
        timer.done();
        let Some(selected) = selected? else {
            return Ok(None);
        };
        let passing: Vec<usize> = selected.masks.iter().map(|m| m.count_set_bits()).collect();
        if self.filter.is_some() {
            self.metrics
                .filter_rows_in
                .add(blocks.iter().map(|b| b.rows).sum());
        }
        self.metrics
            .blocks_without_survivors
            .add(passing.iter().filter(|&&n| n == 0).count());
        self.metrics.bytes_to_device.add(selected.bytes_to_device);
        self.metrics
            .bytes_from_device
            .add(selected.bytes_from_device);
        self.metrics.device_selected_blocks.add(blocks.len());
        if self.projection.is_empty() {
            let total = passing.iter().sum();
            return row_count_batches(&self.schema, total, self.batch_size).map(Some);
        }
        // The columns the GPU does not select from, decoded for the blocks with passing
        // rows.
        let mut decoded: Vec<DecodedBlock<'_>> = blocks
            .iter()
            .map(|block| DecodedBlock::new(block, &self.table))
            .collect();
        let host = &selected.host_columns;
        self.decode_where_passing(&mut decoded, &passing, host)?;
        let timer = self.metrics.arrays_time.timer();
        let batches = decoded
            .par_iter()
            .enumerate()
            .zip(selected.masks.par_iter())
            .zip(passing.par_iter())
            .map(|(((b, block), passing_mask), &n)| {
                if n == 0 {
                    return Ok(Vec::new());
                }
                let all = n == block.rows();
                // Table column `c`'s passing rows, or those of them `keep` marks.
                let rows_of = |c: usize, keep: Option<&BooleanBuffer>| {
                    let ty = self.table.field(c).data_type();
                    if selected.on_device(c) {
                        return selected.array(blocks[b], b, c, ty, keep);
                    }
                    match keep {
                        None if all => block.array(c),
                        None => block.kept_rows(c, passing_mask),
                        Some(keep) => block.kept_rows(c, &narrow(passing_mask, keep)),
                    }
                };
                let (keep, keys) = match late {
                    Some(late) => self.dynamic_keep(late, n, |c| rows_of(c, None))?,
                    None => (None, Vec::new()),
                };
                let kept = keep.as_ref().map_or(n, BooleanBuffer::count_set_bits);
                if kept == 0 {
                    return Ok(Vec::new());
                }
                let columns = self
                    .projection
                    .iter()
                    .map(|&c| match (keys.iter().find(|(k, _)| *k == c), &keep) {
                        // A key column is built once, for the test.
                        (Some((_, array)), None) => Ok(array.clone()),
                        (Some((_, array)), Some(keep)) => Ok(arrow::compute::filter(
                            array,
                            &BooleanArray::new(keep.clone(), None),
                        )?),
                        (None, keep) => rows_of(c, keep.as_ref()),
                    })
                    .collect::<Result<Vec<ArrayRef>>>()?;
                self.batches(columns, kept)
            })
            .collect::<Result<Vec<Vec<RecordBatch>>>>()?;
        timer.done();
        Ok(Some(batches.into_iter().flatten().collect()))
    }

    /// The projected columns of `block`'s `passing` rows that `keep` marks, in batches of
    /// the session's size. Only the passing rows are built, on the decoding thread:
    /// fixed-width values are filtered at their stored width and only then widened, and
    /// dictionaries filtered before their strings are made. Building every row and
    /// filtering afterwards, as `FilterExec` would, writes each kept value twice, which
    /// costs most where nearly every row passes (docs/PERFORMANCE.md).
    fn batches_of(
        &self,
        block: &DecodedBlock<'_>,
        keep: &BooleanBuffer,
        passing: usize,
    ) -> Result<Vec<RecordBatch>> {
        if passing == 0 {
            return Ok(Vec::new());
        }
        let all = passing == block.rows();
        let columns = self
            .projection
            .iter()
            .map(|&c| {
                if all {
                    block.array(c)
                } else {
                    block.kept_rows(c, keep)
                }
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        self.batches(columns, passing)
    }

    /// `columns` (the projection's, `rows` rows each) in batches of the session's size.
    fn batches(&self, columns: Vec<ArrayRef>, rows: usize) -> Result<Vec<RecordBatch>> {
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        Ok(chunks(rows, self.batch_size)
            .map(|(offset, len)| batch.slice(offset, len))
            .collect())
    }

    /// Decodes `columns` of the blocks of `decoded` where some row passes (`passing`
    /// holds each block's count), in one batched call.
    fn decode_where_passing(
        &self,
        decoded: &mut [DecodedBlock<'_>],
        passing: &[usize],
        columns: &[usize],
    ) -> Result<()> {
        if columns.is_empty() {
            return Ok(());
        }
        let live: Vec<&mut DecodedBlock<'_>> = decoded
            .iter_mut()
            .zip(passing)
            .filter(|(_, n)| **n > 0)
            .map(|(block, _)| block)
            .collect();
        if live.is_empty() {
            return Ok(());
        }
        self.decode_into(live, columns)
    }

    /// Decodes `columns` of every block of `blocks` to plain parts in one batched call and
    /// hands each block its columns' nodes.
    fn decode_into(&self, blocks: Vec<&mut DecodedBlock<'_>>, columns: &[usize]) -> Result<()> {
        let parts: Vec<&Block> = blocks.iter().map(|b| b.block()).collect();
        let mut nodes = self.decode_plain(&parts, columns)?.into_iter();
        for block in blocks {
            for &c in columns {
                let node = nodes.next().ok_or_else(|| {
                    DataFusionError::Internal("fewer plain nodes than columns decoded".into())
                })?;
                block.insert(c, node);
            }
        }
        Ok(())
    }

    /// Decodes `columns` of every block of `blocks` to plain parts in one batched call:
    /// the pool (or the GPU) sees the whole window. The nodes come block by block, each
    /// block's in the order of `columns`.
    fn decode_plain(&self, blocks: &[&Block], columns: &[usize]) -> Result<Vec<PlainNode>> {
        let timer = self.metrics.time.timer();
        let parts = column_parts(blocks, columns);
        let parts_timer = self.metrics.parts_time.timer();
        let nodes = column::decompress_columns_to_plain(&parts, self.placement)
            .map_err(DataFusionError::from)?;
        parts_timer.done();
        timer.done();
        self.metrics.columns.add(parts.len());
        self.metrics
            .bytes
            .add(parts.iter().map(|c| c.plain_bytes()).sum());
        Ok(nodes)
    }

    /// Decodes `columns` of every block of `blocks` to arrays in the table's types, block
    /// by block, each block's in the order of `columns`.
    fn decode(&self, blocks: &[&Block], columns: &[usize]) -> Result<Vec<ArrayRef>> {
        let nodes = self.decode_plain(blocks, columns)?;
        let timer = self.metrics.time.timer();
        let arrays_timer = self.metrics.arrays_time.timer();
        let arrays = column::arrays_from_plain(&column_parts(blocks, columns), nodes)
            .map_err(DataFusionError::from)?;
        // Columns stored as dictionaries come back in the table's string type.
        let types = columns
            .iter()
            .cycle()
            .map(|&c| self.table.field(c).data_type());
        let arrays = arrays
            .into_iter()
            .zip(types)
            .map(|(array, ty)| dictionary::in_table_type(array, ty))
            .collect::<crate::Result<Vec<ArrayRef>>>()
            .map_err(DataFusionError::from)?;
        arrays_timer.done();
        timer.done();
        Ok(arrays)
    }
}

/// `columns` of every block of `blocks`, block by block.
fn column_parts<'a>(blocks: &[&'a Block], columns: &[usize]) -> Vec<&'a column::CompressedColumn> {
    blocks
        .iter()
        .flat_map(|b| columns.iter().map(move |&c| &b.columns[c]))
        .collect()
}

/// `(offset, length)` of each piece of `rows` rows cut into pieces of `size` (the last
/// shorter); `size` is at least 1.
pub(super) fn chunks(rows: usize, size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..rows)
        .step_by(size)
        .map(move |offset| (offset, size.min(rows - offset)))
}

/// `rows` rows of `schema`, which has no fields, in batches of `batch_size`.
pub(super) fn row_count_batches(
    schema: &SchemaRef,
    rows: usize,
    batch_size: usize,
) -> Result<Vec<RecordBatch>> {
    chunks(rows, batch_size)
        .map(|(_, n)| {
            let options = RecordBatchOptions::new().with_row_count(Some(n));
            Ok(RecordBatch::try_new_with_options(
                schema.clone(),
                Vec::new(),
                &options,
            )?)
        })
        .collect()
}
