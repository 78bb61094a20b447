//! Opening one file of a scan: its footer (and page index when filters may use it) is
//! fetched, the [`FilePlan`] says what to read, and the batches stream one row group at a
//! time: the projected chunks of the row group are fetched (async), then, on a blocking
//! thread, all their SNAPPY pages are decompressed in one batched call; the batches are
//! decoded from those pages one at a time as the stream is polled. Memory per partition:
//! about one row group of the projected columns, compressed and decompressed.

use std::sync::Arc;

use arrow::array::RecordBatchOptions;
use arrow::datatypes::Schema;
use arrow::record_batch::RecordBatch;
use datafusion::common::Result;
use datafusion::common::runtime::SpawnedTask;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::ParquetFileMetrics;
use datafusion::datasource::physical_plan::{FileOpenFuture, FileOpener};
use datafusion::error::DataFusionError;
use futures::StreamExt;
use parquet::file::metadata::ParquetMetaData;

use super::fetch;
use super::metrics::ScanMetrics;
use super::plan::FilePlan;
use super::source::ScanConfig;
use crate::parquet::row_group::RowGroupPages;

/// Opens the files of one partition.
pub(super) struct ColzipParquetOpener {
    config: Arc<ScanConfig>,
    partition: usize,
    metrics: ScanMetrics,
}

impl ColzipParquetOpener {
    pub(super) fn new(config: Arc<ScanConfig>, partition: usize) -> Self {
        let metrics = ScanMetrics::new(&config.metrics, partition);
        ColzipParquetOpener {
            config,
            partition,
            metrics,
        }
    }
}

impl FileOpener for ColzipParquetOpener {
    fn open(&self, file: PartitionedFile) -> Result<FileOpenFuture> {
        let config = Arc::clone(&self.config);
        let metrics = self.metrics.clone();
        let file_metrics = ParquetFileMetrics::new(
            self.partition,
            file.object_meta.location.as_ref(),
            &config.metrics,
        );
        Ok(Box::pin(async move {
            let page_index = config.page_index && config.pruning && config.predicate.is_some();
            let metadata = {
                let _timer = file_metrics.metadata_load_time.timer();
                fetch::load_metadata(&config.store, &file.object_meta, page_index).await?
            };
            let plan = FilePlan::try_new(&config, &file, &metadata, &file_metrics)?;
            let scan = FileScan {
                config,
                metrics,
                file,
                metadata: Arc::new(metadata),
                plan: Arc::new(plan),
                next: 0,
                rows_sent: 0,
                current: None,
            };
            let batches = futures::stream::try_unfold(scan, |mut scan| async move {
                Ok::<_, DataFusionError>(scan.next_batch().await?.map(|batch| (batch, scan)))
            });
            Ok(batches.boxed())
        }))
    }
}

/// The state of one file's scan.
struct FileScan {
    config: Arc<ScanConfig>,
    metrics: ScanMetrics,
    file: PartitionedFile,
    metadata: Arc<ParquetMetaData>,
    plan: Arc<FilePlan>,
    /// The next entry of `plan.row_groups`.
    next: usize,
    rows_sent: usize,
    /// The batches of the row group being read, decoded one at a time.
    current: Option<Batches>,
}

/// A row group's batches, adapted to the table's schema.
type Batches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

impl FileScan {
    /// The next batch of the file; `None` at the end (or the limit). Each batch is
    /// decoded here, when asked for (as DataFusion's own reader does), so it goes on to
    /// the operators above while still in cache.
    async fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        loop {
            let left = match self.config.limit {
                Some(limit) if self.rows_sent >= limit => return Ok(None),
                Some(limit) => limit - self.rows_sent,
                None => usize::MAX,
            };
            if let Some(batches) = self.current.as_mut() {
                let next = {
                    let _timer = self.metrics.decode_time.timer();
                    batches.next()
                };
                match next {
                    Some(batch) => {
                        let batch = batch?;
                        let batch = if batch.num_rows() > left {
                            batch.slice(0, left)
                        } else {
                            batch
                        };
                        self.rows_sent += batch.num_rows();
                        return Ok(Some(batch));
                    }
                    None => self.current = None,
                }
            }
            match self.next_row_group(left).await? {
                Some(batches) => self.current = Some(batches),
                None => return Ok(None),
            }
        }
    }

    /// The batches of the next row group to read (at most `left` rows are wanted);
    /// `None` at the end.
    async fn next_row_group(&mut self, left: usize) -> Result<Option<Batches>> {
        let Some((index, selection)) = self.plan.row_groups.get(self.next).cloned() else {
            return Ok(None);
        };
        self.next += 1;

        if self.plan.leaves.is_empty() {
            // No column of this file is read (`count(*)`, or only columns it lacks):
            // the rows are counted, nothing is fetched.
            let rows = match &selection {
                Some(selection) => selection.row_count(),
                None => usize::try_from(self.metadata.row_group(index).num_rows()).unwrap_or(0),
            };
            let empty = Arc::new(Schema::empty());
            let batch_size = self.config.batch_size;
            let batches = (0..rows.min(left))
                .step_by(batch_size)
                .map(|start| {
                    let count = batch_size.min(rows.min(left) - start);
                    let batch = RecordBatch::try_new_with_options(
                        Arc::clone(&empty),
                        vec![],
                        &RecordBatchOptions::new().with_row_count(Some(count)),
                    )?;
                    self.plan.adapter.adapt_batch(&batch)
                })
                .collect::<Result<Vec<_>>>()?;
            return Ok(Some(Box::new(batches.into_iter().map(Ok))));
        }
        let parts = fetch::fetch_chunks(
            &self.config.store,
            &self.file.object_meta,
            &self.metadata,
            index,
            &self.plan.leaves,
        )
        .await?;
        let config = Arc::clone(&self.config);
        let metrics = self.metrics.clone();
        let metadata = Arc::clone(&self.metadata);
        let plan = Arc::clone(&self.plan);
        // Decompression (CPU or GPU work): off the async runtime's threads.
        let batches = SpawnedTask::spawn_blocking(move || -> Result<Batches> {
            let (pages, stats) = RowGroupPages::read(
                &Arc::new(parts),
                metadata,
                index,
                &plan.mask,
                &config.placement,
                selection.as_ref(),
            )?;
            metrics.record(&stats);
            let batches = pages.batches(&plan.levels, config.batch_size, selection)?;
            Ok(Box::new(
                batches.map(move |batch| plan.adapter.adapt_batch(&batch?)),
            ))
        })
        .join()
        .await
        .map_err(|e| DataFusionError::ExecutionJoin(Box::new(e)))??;
        Ok(Some(batches))
    }
}
