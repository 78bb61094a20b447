//! The scan of a compressed table: per partition, the projected columns of its blocks are
//! decompressed a window of blocks at a time (about [`WINDOW_BYTES`](super::WINDOW_BYTES) of plain bytes, one
//! batched call each, on the GPU under `auto` when there is one), off the async runtime's
//! threads, the next window decoding while the query works on the current one: memory
//! during a scan stays near two windows per partition, not the table's plain size.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::common::Statistics;
use datafusion::common::config::ConfigOptions;
use datafusion::common::stats::Precision;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::filter_pushdown::{
    ChildPushdownResult, FilterPushdownPhase, FilterPushdownPropagation, PushedDown,
};
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricsSet};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::StreamExt;

use super::device_filter::DeviceTests;
use super::dynamic_filter::DynamicFilters;
use super::options::Residence;
use super::row_filter::RowFilter;
use super::zones::blocks_to_scan;
use super::{Block, Partitions, block_statistics};
use crate::codec::Placement;
use datafusion::physical_optimizer::pruning::PruningPredicate;

use super::scan_metrics::Metrics;
use super::window::{Windows, windows};
use super::window_job::Job;

/// Scans a [`CompressedTable`](super::CompressedTable): one output partition per table
/// partition, only the projected columns decompressed.
///
/// Blocks whose zones rule out every row under the pushed filters are skipped. The filters
/// the scan evaluates itself (pushed down as `Exact`) are applied to
/// the rows: their columns are decoded first, and the other projected columns only for
/// the blocks where some row passes.
///
/// Metrics (shown by `EXPLAIN ANALYZE`): `output_rows`, `blocks_pruned` (blocks skipped by
/// their zones), `decompressed_columns` (column blocks decompressed),
/// `decompressed_bytes` (their plain parts) and `decompress_time`, the sum of
/// `decode_parts_time` (the codecs' batched calls, checksums included) and
/// `build_arrays_time` (Arrow arrays from the plain parts); with a row filter also
/// `filter_rows_in` (rows the filter read), `blocks_without_survivors` (blocks whose other
/// columns were never decoded) and `filter_time` (evaluating it and keeping the rows that
/// pass). Windows whose filter runs on the GPU (`device_filter`) count
/// `device_selected_blocks`, `bytes_to_device` (compressed streams sent),
/// `bytes_from_device` (passing rows and bitmaps brought back) and `device_select_time`
/// (decoding, testing and copying there, and building the arrays). Filters that joins
/// above hand the scan (`dynamic_filter` in the plan) count `dynamic_filter_dropped_rows`
/// and `dynamic_filter_time`.
pub struct CompressedScanExec {
    /// The table's schema (the zones are of its columns).
    schema_full: SchemaRef,
    partitions: Partitions,
    projection: Vec<usize>,
    /// Names of the projected columns, for display.
    names: Vec<String>,
    limit: Option<usize>,
    placement: Placement,
    /// Projected plain bytes decoded per batched call.
    window_bytes: usize,
    residence: Residence,
    /// Prunes blocks by their zones (from the pushed filters).
    pruning: Option<Arc<PruningPredicate>>,
    /// The pushed filters the scan applies to rows (exact pushdown).
    filter: Option<Arc<RowFilter>>,
    /// Filters the joins above hand the scan once their build sides are known.
    dynamic: Option<DynamicFilters>,
    /// Whether those of partitioned joins are applied too.
    partitioned_join_filters: bool,
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
        window_bytes: usize,
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
            schema_full: schema.clone(),
            partitions,
            projection,
            names,
            limit,
            placement,
            window_bytes: window_bytes.max(1),
            residence: Residence::Auto,
            pruning: None,
            filter: None,
            dynamic: None,
            partitioned_join_filters: false,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        })
    }

    /// Skips, in every partition, the blocks whose zones `predicate` rules out.
    /// Whether blocks that are not yet on a GPU stay there once a scan uploaded them.
    pub(super) fn with_residence(mut self, residence: Residence) -> Self {
        self.residence = residence;
        self
    }

    /// Whether the filters of joins that repartition both sides are applied too
    /// ([`super::CompressOptions::partitioned_join_filters`]).
    pub(super) fn with_partitioned_join_filters(mut self, apply: bool) -> Self {
        self.partitioned_join_filters = apply;
        self
    }

    pub(super) fn with_pruning(mut self, predicate: Option<Arc<PruningPredicate>>) -> Self {
        self.pruning = predicate;
        self
    }

    /// Applies `filter` to the rows: only those for which it is true are output.
    pub(super) fn with_filter(mut self, filter: Option<RowFilter>) -> Self {
        self.filter = filter.map(Arc::new);
        self
    }

    /// A copy of the plan, with metrics of its own.
    fn clone_plan(&self) -> Self {
        CompressedScanExec {
            schema_full: self.schema_full.clone(),
            partitions: self.partitions.clone(),
            projection: self.projection.clone(),
            names: self.names.clone(),
            limit: self.limit,
            placement: self.placement,
            window_bytes: self.window_bytes,
            residence: self.residence,
            pruning: self.pruning.clone(),
            filter: self.filter.clone(),
            dynamic: self.dynamic.clone(),
            partitioned_join_filters: self.partitioned_join_filters,
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }
    }

    /// The dynamic filters the joins above handed the scan, as text (`None` without).
    pub fn dynamic_filter(&self) -> Option<String> {
        self.dynamic.as_ref().map(|d| d.to_string())
    }

    /// The pushed filters the scan applies to rows itself, as text (`None` without).
    pub fn filter(&self) -> Option<String> {
        self.filter.as_ref().map(|f| f.to_string())
    }

    /// The columns a window decodes: the projected ones and those the row filter reads.
    fn decoded_columns(&self) -> Vec<usize> {
        let mut columns = self.projection.clone();
        if let Some(filter) = &self.filter {
            columns.extend(filter.columns());
            columns.sort_unstable();
            columns.dedup();
        }
        columns
    }

    /// Whether the scan prunes blocks by a pushed filter.
    pub fn prunes(&self) -> bool {
        self.pruning.is_some()
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
            .field("filter", &self.filter())
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
                if let Some(filter) = &self.filter {
                    write!(f, ", filter=[{filter}]")?;
                }
                if let Some(dynamic) = &self.dynamic {
                    write!(f, ", dynamic_filter=[{dynamic}]")?;
                }
                if let Some(limit) = self.limit {
                    write!(f, ", limit={limit}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => {
                write!(f, "columns={}", self.names.join(", "))?;
                if let Some(filter) = &self.filter {
                    write!(f, "\nfilter={filter}")?;
                }
                Ok(())
            }
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

    // The dynamic filters are reported so that the join producing them sees that they
    // have a consumer: a join computes its filter only then.
    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for expr in self.dynamic.iter().flat_map(|d| d.exprs()) {
            if f(expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    /// Takes the dynamic filters among the parent filters (see `dynamic_filter`). They
    /// are reported as not pushed down, since the join above keeps testing its rows;
    /// other filters reach the scan through the table provider.
    fn handle_child_pushdown_result(
        &self,
        _phase: FilterPushdownPhase,
        child_pushdown_result: ChildPushdownResult,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn ExecutionPlan>>> {
        let parents = child_pushdown_result.parent_filters;
        let taken: Vec<Arc<dyn PhysicalExpr>> = parents
            .iter()
            .map(|p| &p.filter)
            .filter(|f| DynamicFilters::accepts(f))
            .cloned()
            .collect();
        let propagation = FilterPushdownPropagation::with_parent_pushdown_result(vec![
                PushedDown::No;
                parents.len()
            ]);
        if taken.is_empty() {
            return Ok(propagation);
        }
        let mut filters = self
            .dynamic
            .as_ref()
            .map_or_else(Vec::new, |d| d.exprs().to_vec());
        filters.extend(taken);
        let scan = CompressedScanExec {
            dynamic: DynamicFilters::new(
                filters,
                self.partitioned_join_filters,
                self.schema().fields().len(),
            ),
            ..self.clone_plan()
        };
        Ok(propagation.with_updated_node(Arc::new(scan)))
    }

    // A plan run again (a recursive query's term) gets new filters from its joins; the
    // ones held here belong to the run before.
    fn reset_state(self: Arc<Self>) -> Result<Arc<dyn ExecutionPlan>> {
        if self.dynamic.is_none() {
            return Ok(self);
        }
        Ok(Arc::new(CompressedScanExec {
            dynamic: None,
            ..self.clone_plan()
        }))
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
        let metrics = Metrics::new(&self.metrics, partition);
        // The blocks the pushed filters do not rule out.
        let keep = match &self.pruning {
            Some(predicate) => blocks_to_scan(predicate, blocks, &self.schema_full),
            None => vec![true; blocks.len()],
        };
        metrics
            .pruned
            .add(keep.iter().filter(|&&scan| !scan).count());
        let needed: Vec<Arc<Block>> = blocks
            .iter()
            .zip(&keep)
            .filter(|(_, scan)| **scan)
            .map(|(b, _)| b.clone())
            .collect();
        // The limit, each partition's own: the windows stop at the blocks it needs when
        // every row of a block is output, and the output is cut to it (`Windows`). Under
        // a filter (row or dynamic) a block's rows only bound what it gives, so only the
        // output is cut.
        let limit = self
            .limit
            .filter(|_| self.filter.is_none() && self.dynamic.is_none());
        let device_tests = match self.filter.as_ref() {
            Some(filter) => DeviceTests::of(filter),
            None => Some(DeviceTests::every_row()),
        };
        // Where the GPU selects the rows, only the passing ones come back to the host: a
        // window then counts each block's bytes by the share of its rows its zones say
        // will pass, and covers more blocks for fewer round trips to the device.
        let shares: Option<Vec<f64>> = device_tests
            .as_ref()
            .filter(|_| self.filter.is_some() && self.placement.gpu().is_some())
            .map(|tests| {
                needed
                    .iter()
                    .map(|block| tests.passing_share(block, &self.schema_full))
                    .collect()
            });
        let job = Arc::new(Job {
            table: self.schema_full.clone(),
            projection: self.projection.clone(),
            schema: self.schema(),
            batch_size: context.session_config().batch_size().max(1),
            placement: self.placement,
            filter: self.filter.clone(),
            device_tests,
            residence: self.residence,
            dynamic: self.dynamic.clone(),
            decode_in_one_call: AtomicBool::new(false),
            metrics,
        });
        let windows = windows(
            &needed,
            &self.decoded_columns(),
            limit,
            self.window_bytes,
            shares.as_deref(),
        );
        crate::trace::line(|| {
            format!(
                "scan: partition {partition}, {} of {} blocks in {} windows, columns [{}]",
                windows.iter().map(|w| w.blocks.len()).sum::<usize>(),
                blocks.len(),
                windows.len(),
                self.names.join(", ")
            )
        });
        let mut state = Windows {
            job,
            windows: windows.into_iter(),
            next: None,
            remaining: self.limit.unwrap_or(usize::MAX),
        };
        // The first window starts decoding now, not when the stream is first polled: a
        // join polls its probe side only once its build side is complete, and the scan's
        // first rows are then ready.
        if tokio::runtime::Handle::try_current().is_ok() {
            state.next = state.start_next();
        }
        // Each window decodes on a blocking thread; the next one starts as soon as the
        // current one is handed out, so decoding overlaps the query's work on it, and at
        // most two windows' plain columns are held at a time.
        let stream = futures::stream::unfold(state, |mut state| async move {
            let current = match state.next.take() {
                Some(handle) => handle,
                None => state.start_next()?,
            };
            let result = match current.await {
                Ok(result) => result,
                Err(e) => Err(DataFusionError::External(Box::new(e))),
            };
            // The next window decodes while this one's rows are gathered and consumed.
            if result.is_ok() {
                state.next = state.start_next();
            }
            let result = result
                .and_then(|(batches, applied)| state.refilter(batches, applied))
                .and_then(|batches| state.gather(batches))
                .map(|batches| state.take_up_to_limit(batches));
            if result.is_err() || state.remaining == 0 {
                // Stop after an error or at the limit.
                state.windows = Vec::new().into_iter();
                if let Some(next) = state.next.take() {
                    next.abort();
                }
            }
            Some((result, state))
        })
        .flat_map(|result: Result<Vec<RecordBatch>>| match result {
            Ok(batches) => futures::stream::iter(batches.into_iter().map(Ok).collect::<Vec<_>>()),
            Err(e) => futures::stream::iter(vec![Err(e)]),
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            stream,
        )))
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
        let mut statistics = match partition {
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
        if self.filter.is_some() {
            // The blocks' counts bound what passes the filter; they no longer tell it. The
            // estimate is DataFusion's own for a filter it cannot analyse (a `FilterExec`
            // over this scan would give the same), so that join planning sees the same
            // sizes with the filter in the scan as with the filter above it.
            statistics = statistics.to_inexact();
            let keep = |n: usize| (n as f64 * FILTER_SELECTIVITY_ESTIMATE).ceil() as usize;
            statistics.num_rows = statistics.num_rows.map(keep);
            statistics.total_byte_size = statistics.total_byte_size.map(keep);
            for column in &mut statistics.column_statistics {
                column.byte_size = column.byte_size.map(keep);
                column.null_count = Precision::Absent;
            }
        }
        Ok(Arc::new(statistics))
    }
}

/// The share of rows a row filter is assumed to keep when estimating the scan's output:
/// the default selectivity of DataFusion's `FilterExec`.
const FILTER_SELECTIVITY_ESTIMATE: f64 = 0.2;
