//! The scan of a compressed table: per partition, the projected columns of its blocks are
//! decompressed in one parallel call, off the async runtime's threads.

use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::SchemaRef;
use datafusion::common::Statistics;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::StreamExt;

use super::{Block, Partitions, block_statistics};
use crate::codec::Placement;
use crate::column;

/// Scans a [`CompressedTable`](super::CompressedTable): one output partition per table
/// partition, only the projected columns decompressed.
///
/// Metrics (shown by `EXPLAIN ANALYZE`): `output_rows`, `decompressed_columns` (column
/// blocks decompressed), `decompressed_bytes` (their plain parts) and `decompress_time`.
pub struct CompressedScanExec {
    partitions: Partitions,
    projection: Vec<usize>,
    /// Names of the projected columns, for display.
    names: Vec<String>,
    limit: Option<usize>,
    placement: Placement,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl CompressedScanExec {
    pub(super) fn try_new(
        schema: &SchemaRef,
        partitions: Partitions,
        projection: Vec<usize>,
        limit: Option<usize>,
        placement: Placement,
    ) -> Result<Self> {
        let projected = Arc::new(schema.project(&projection)?);
        let names = projected
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(projected),
            Partitioning::UnknownPartitioning(partitions.len()),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(CompressedScanExec {
            partitions,
            projection,
            names,
            limit,
            placement,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// The projected column indexes (into the table's schema).
    pub fn projection(&self) -> &[usize] {
        &self.projection
    }

    /// The row limit pushed into the scan, if any.
    pub fn limit(&self) -> Option<usize> {
        self.limit
    }
}

impl fmt::Debug for CompressedScanExec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompressedScanExec")
            .field("partitions", &self.partitions.len())
            .field("projection", &self.names)
            .field("limit", &self.limit)
            .finish()
    }
}

impl DisplayAs for CompressedScanExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                write!(
                    f,
                    "CompressedScanExec: partitions={}, projection=[{}]",
                    self.partitions.len(),
                    self.names.join(", ")
                )?;
                if let Some(limit) = self.limit {
                    write!(f, ", limit={limit}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => write!(f, "columns={}", self.names.join(", ")),
        }
    }
}

impl ExecutionPlan for CompressedScanExec {
    fn name(&self) -> &str {
        "CompressedScanExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        Vec::new()
    }

    fn apply_expressions(
        &self,
        _f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    fn replace_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
        _options: ReplaceChildrenOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if !children.is_empty() {
            return Err(DataFusionError::Internal(
                "CompressedScanExec has no children".into(),
            ));
        }
        Ok(self)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.replace_children(
            children,
            ReplaceChildrenOptions::new(ChildrenPropertiesMode::Recompute),
        )
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let blocks = self.partitions.get(partition).ok_or_else(|| {
            DataFusionError::Internal(format!(
                "CompressedScanExec has {} partitions, partition {partition} was asked for",
                self.partitions.len()
            ))
        })?;
        // Only the blocks a limit needs (each partition may stop at the limit).
        let mut needed = Vec::new();
        let mut rows = 0;
        for block in blocks {
            if self.limit.is_some_and(|limit| rows >= limit) {
                break;
            }
            rows += block.rows;
            needed.push(block.clone());
        }
        let job = Job {
            blocks: needed,
            projection: self.projection.clone(),
            schema: self.schema(),
            limit: self.limit,
            batch_size: context.session_config().batch_size().max(1),
            placement: self.placement,
            metrics: Metrics::new(&self.metrics, partition),
        };
        let schema = self.schema();
        let stream = futures::stream::once(async move {
            tokio::task::spawn_blocking(move || job.run())
                .await
                .map_err(|e| DataFusionError::External(Box::new(e)))?
        })
        .flat_map(|result: Result<Vec<RecordBatch>>| match result {
            Ok(batches) => futures::stream::iter(batches.into_iter().map(Ok).collect::<Vec<_>>()),
            Err(e) => futures::stream::iter(vec![Err(e)]),
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(schema, stream)))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }

    fn statistics_from_inputs(
        &self,
        _input_stats: &[Arc<Statistics>],
        args: &StatisticsArgs,
    ) -> Result<Arc<Statistics>> {
        self.statistics_of(args.partition())
    }

    // Still called by parts of DataFusion 55 that have not moved to the statistics
    // context; both give the same answer.
    #[allow(deprecated)]
    fn partition_statistics(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        self.statistics_of(partition)
    }
}

impl CompressedScanExec {
    fn statistics_of(&self, partition: Option<usize>) -> Result<Arc<Statistics>> {
        let statistics = match partition {
            Some(p) => {
                let blocks = self.partitions.get(p).ok_or_else(|| {
                    DataFusionError::Internal(format!("no partition {p} in CompressedScanExec"))
                })?;
                block_statistics(blocks.iter(), &self.projection, self.limit)
            }
            None => {
                // Each partition stops at the limit on its own, so the whole scan may
                // return up to limit × partitions rows: exact only without a limit.
                let mut s =
                    block_statistics(self.partitions.iter().flatten(), &self.projection, None);
                if let Some(limit) = self.limit {
                    let bound = s
                        .num_rows
                        .map(|rows| rows.min(limit * self.partitions.len()));
                    s.num_rows = bound.to_inexact();
                }
                s
            }
        };
        Ok(Arc::new(statistics))
    }
}

struct Metrics {
    output_rows: datafusion::physical_plan::metrics::Count,
    columns: datafusion::physical_plan::metrics::Count,
    bytes: datafusion::physical_plan::metrics::Count,
    time: datafusion::physical_plan::metrics::Time,
}

impl Metrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Metrics {
            output_rows: MetricBuilder::new(set).output_rows(partition),
            columns: MetricBuilder::new(set).counter("decompressed_columns", partition),
            bytes: MetricBuilder::new(set).counter("decompressed_bytes", partition),
            time: MetricBuilder::new(set).subset_time("decompress_time", partition),
        }
    }
}

/// The decompression of one partition, run on a blocking thread.
struct Job {
    blocks: Vec<Arc<Block>>,
    projection: Vec<usize>,
    schema: SchemaRef,
    limit: Option<usize>,
    batch_size: usize,
    placement: Placement,
    metrics: Metrics,
}

impl Job {
    fn run(self) -> Result<Vec<RecordBatch>> {
        let timer = self.metrics.time.timer();
        // Every (block, column) pair at once: the pool sees all of the partition's work.
        let pairs: Vec<(usize, usize)> = (0..self.blocks.len())
            .flat_map(|b| self.projection.iter().map(move |&c| (b, c)))
            .collect();
        let columns: Vec<&column::CompressedColumn> = pairs
            .iter()
            .map(|&(b, c)| &self.blocks[b].columns[c])
            .collect();
        let arrays: Vec<ArrayRef> = column::decompress_columns_on(&columns, self.placement)
            .map_err(DataFusionError::from)?;
        timer.done();
        self.metrics.columns.add(arrays.len());
        self.metrics.bytes.add(
            pairs
                .iter()
                .map(|&(b, c)| self.blocks[b].columns[c].plain_bytes())
                .sum(),
        );
        let width = self.projection.len();
        let mut arrays = arrays.into_iter();
        let mut out = Vec::new();
        let mut remaining = self.limit.unwrap_or(usize::MAX);
        for block in &self.blocks {
            let columns: Vec<ArrayRef> = arrays.by_ref().take(width).collect();
            let options = RecordBatchOptions::new().with_row_count(Some(block.rows));
            let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
            let rows = block.rows.min(remaining);
            remaining -= rows;
            // Slices of the session's batch size, as other sources hand out.
            let mut offset = 0;
            while offset < rows {
                let len = self.batch_size.min(rows - offset);
                out.push(batch.slice(offset, len));
                offset += len;
            }
            if remaining == 0 {
                break;
            }
        }
        self.metrics
            .output_rows
            .add(out.iter().map(|b| b.num_rows()).sum());
        Ok(out)
    }
}
