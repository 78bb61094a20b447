//! The windows of a compressed scan: a partition's blocks cut into runs decoded by one
//! batched call each, the first ones smaller so that the query starts sooner, and the
//! stream state that decodes the next window while the query works on the current one.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::BatchCoalescer;
use datafusion::error::Result;

use super::Block;
use super::dynamic_filter::Generation;

use super::window_job::{Filtered, Job};

/// Plain bytes of the projected columns that one window of a scan decodes in one batched
/// call, by default ([`super::CompressOptions::scan_window_bytes`]): enough to send the
/// call to the GPU under `auto` and to keep the pool busy, small enough that a partition
/// holds little more than two windows at a time. (Smaller windows, and a queue merging
/// the partitions' windows into shared calls, are both slower: docs/PERFORMANCE.md,
/// "Where the compressed store's scan time goes".)
pub const WINDOW_BYTES: usize = 64 << 20;

/// The least share of a block's bytes a window counts when the GPU selects its rows, so
/// that a window decodes at most 8 × [`WINDOW_BYTES`] on the device, whatever its zones
/// say.
const LEAST_DEVICE_SHARE: f64 = 1.0 / 8.0;

/// How many windows a scan starts with below [`WINDOW_BYTES`], each half the next: a
/// query's operators start on the first rows sooner, while the GPU decodes the rest.
/// With the first window started before the stream is polled, this shortens the queries
/// whose operators would otherwise wait for a whole window (docs/PERFORMANCE.md).
const RAMP_STEPS: usize = 3;

/// A run of consecutive blocks decoded together, and how many of its rows to hand out.
pub(super) struct Window {
    pub(super) blocks: Vec<Arc<Block>>,
    pub(super) rows: usize,
}

/// The blocks cut into windows of about `window_bytes` of projected plain bytes (at least
/// one block each), with the rows each hands out under `limit`. With `shares` (each
/// block's expected share of passing rows, when only those reach the host), a block
/// counts for that share of its bytes, at least [`LEAST_DEVICE_SHARE`].
pub(super) fn windows(
    blocks: &[Arc<Block>],
    projection: &[usize],
    limit: Option<usize>,
    window_bytes: usize,
    shares: Option<&[f64]>,
) -> Vec<Window> {
    let mut out = Vec::new();
    let mut remaining = limit.unwrap_or(usize::MAX);
    let mut current = Window {
        blocks: Vec::new(),
        rows: 0,
    };
    let mut bytes = 0;
    // The first windows are smaller (an eighth, a quarter, a half of `window_bytes`), so
    // that the query has rows to work on while the larger ones decode.
    let bound = |windows: usize| window_bytes >> RAMP_STEPS.saturating_sub(windows);
    for (i, block) in blocks.iter().enumerate() {
        if remaining == 0 {
            break;
        }
        let plain: usize = projection
            .iter()
            .map(|&c| block.columns[c].plain_bytes())
            .sum();
        let block_bytes = match shares.and_then(|s| s.get(i)) {
            Some(share) => (plain as f64 * share.max(LEAST_DEVICE_SHARE)) as usize,
            None => plain,
        };
        if !current.blocks.is_empty() && bytes + block_bytes > bound(out.len()) {
            out.push(std::mem::replace(
                &mut current,
                Window {
                    blocks: Vec::new(),
                    rows: 0,
                },
            ));
            bytes = 0;
        }
        let rows = block.rows.min(remaining);
        remaining -= rows;
        current.blocks.push(block.clone());
        current.rows += rows;
        bytes += block_bytes;
    }
    if !current.blocks.is_empty() {
        out.push(current);
    }
    out
}

/// The windows of a partition's scan still to decode, and the one decoding ahead.
pub(super) struct Windows {
    pub(super) job: Arc<Job>,
    pub(super) windows: std::vec::IntoIter<Window>,
    pub(super) next: Option<tokio::task::JoinHandle<Result<Filtered>>>,
    /// Rows still to hand out under the scan's limit.
    pub(super) remaining: usize,
}

impl Windows {
    /// Starts decoding the next window on a blocking thread (`None` when none is left).
    pub(super) fn start_next(&mut self) -> Option<tokio::task::JoinHandle<Result<Filtered>>> {
        let window = self.windows.next()?;
        let job = self.job.clone();
        let queued = std::time::Instant::now();
        Some(tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let result = job.run(&window);
            crate::trace::line(|| {
                format!(
                    "scan window: {} blocks, {} of {} columns, queued {:.2} ms, ran {:.2} ms, {} batches",
                    window.blocks.len(),
                    job.projection.len(),
                    job.table.fields().len(),
                    (started - queued).as_secs_f64() * 1e3,
                    started.elapsed().as_secs_f64() * 1e3,
                    result.as_ref().map_or(0, |r| r.0.len())
                )
            });
            result
        }))
    }

    /// A window's batches filtered again when the dynamic filters moved since they were
    /// applied to it: the first windows decode before the joins above have their build
    /// sides.
    pub(super) fn refilter(
        &self,
        batches: Vec<RecordBatch>,
        applied: Generation,
    ) -> Result<Vec<RecordBatch>> {
        match &self.job.dynamic {
            Some(dynamic) if dynamic.has_moved_since(applied)? => {
                Ok(self.job.apply_dynamic(batches)?.0)
            }
            _ => Ok(batches),
        }
    }

    /// A window's batches as the query gets them: batches of at least half the session's
    /// batch size as they are, smaller ones (the passing rows of blocks a filter keeps few
    /// of) joined, as `FilterExec` joins its results. This runs on the task that consumes
    /// the scan, while the next window decodes.
    pub(super) fn gather(&self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
        let batch_size = self.job.batch_size;
        if batches.iter().all(|b| b.num_rows() * 2 >= batch_size) {
            return Ok(batches);
        }
        let timer = self.job.metrics.filter_time.timer();
        let mut coalescer = BatchCoalescer::new(self.job.schema.clone(), batch_size)
            .with_biggest_coalesce_batch_size(Some(batch_size / 2));
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            coalescer.push_batch(batch)?;
            while let Some(batch) = coalescer.next_completed_batch() {
                out.push(batch);
            }
        }
        coalescer.finish_buffered_batch()?;
        while let Some(batch) = coalescer.next_completed_batch() {
            out.push(batch);
        }
        timer.done();
        Ok(out)
    }

    /// The first of `batches`' rows up to the rows still to hand out (counted as the
    /// scan's output).
    pub(super) fn take_up_to_limit(&mut self, mut batches: Vec<RecordBatch>) -> Vec<RecordBatch> {
        let mut kept = 0;
        for batch in batches.iter_mut() {
            if self.remaining == 0 {
                break;
            }
            if batch.num_rows() > self.remaining {
                *batch = batch.slice(0, self.remaining);
            }
            self.remaining -= batch.num_rows();
            kept += 1;
        }
        batches.truncate(kept);
        self.job
            .metrics
            .output_rows
            .add(batches.iter().map(|b| b.num_rows()).sum());
        batches
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column;
    use arrow::array::{ArrayRef, Int64Array};

    fn block(rows: usize) -> Arc<Block> {
        let values: ArrayRef = Arc::new(Int64Array::from_iter_values(0..rows as i64));
        let column = column::compress(&values, &"stored".parse().unwrap()).unwrap();
        Arc::new(Block::new(rows, vec![column], vec![None]))
    }

    #[test]
    fn windows_hold_whole_blocks_up_to_the_byte_bound_and_stop_at_the_limit() {
        // 10 blocks of 1,000 Int64 rows: 8,000 plain bytes each.
        let blocks: Vec<Arc<Block>> = (0..10).map(|_| block(1_000)).collect();
        let sizes = |w: &[Window]| {
            w.iter()
                .map(|w| (w.blocks.len(), w.rows))
                .collect::<Vec<_>>()
        };
        // The first three windows are bounded by an eighth, a quarter and a half of it.
        assert_eq!(
            sizes(&windows(&blocks, &[0], None, 80_000, None)),
            vec![(1, 1_000), (2, 2_000), (5, 5_000), (2, 2_000)]
        );
        // A bound below one block still takes one block per window.
        assert_eq!(
            sizes(&windows(&blocks, &[0], None, 1, None)),
            vec![(1, 1_000); 10]
        );
        // A limit ends the last window mid-block and leaves out the blocks after it.
        assert_eq!(
            sizes(&windows(&blocks, &[0], Some(2_500), 80_000, None)),
            vec![(1, 1_000), (2, 1_500)]
        );
        assert!(windows(&blocks, &[0], Some(0), 20_000, None).is_empty());
        assert!(windows(&[], &[0], None, 20_000, None).is_empty());
        // Blocks expected to keep half their rows count for half their bytes; those
        // expected to keep none, for an eighth (the most blocks a window decodes).
        let half = vec![0.5; 10];
        assert_eq!(
            sizes(&windows(&blocks, &[0], None, 80_000, Some(&half))),
            vec![(2, 2_000), (5, 5_000), (3, 3_000)]
        );
        let none_pass = vec![0.0; 10];
        assert_eq!(
            sizes(&windows(&blocks, &[0], None, 40_000, Some(&none_pass))),
            vec![(5, 5_000); 2]
        );
    }
}
