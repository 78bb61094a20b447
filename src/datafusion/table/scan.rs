//! The scan of a compressed table: per partition, the projected columns of its blocks are
//! decompressed a window of blocks at a time (about [`WINDOW_BYTES`] of plain bytes, one
//! batched call each, on the GPU under `auto` when there is one), off the async runtime's
//! threads, the next window decoding while the query works on the current one: memory
//! during a scan stays near two windows per partition, not the table's plain size.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use arrow::array::{ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::buffer::BooleanBuffer;
use arrow::compute::BatchCoalescer;
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
use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder, MetricsSet};
use datafusion::physical_plan::statistics::StatisticsArgs;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream,
};
use futures::StreamExt;

use super::decoded::DecodedBlock;
use super::device_filter::{self, DeviceTests};
use super::dictionary;
use super::dynamic_filter::{DynamicFilters, Generation};
use super::options::Residence;
use super::row_filter::RowFilter;
use super::zones::blocks_to_scan;
use super::{Block, Partitions, block_statistics};
use crate::codec::Placement;
use crate::column::{self, PlainNode};
use datafusion::physical_optimizer::pruning::PruningPredicate;
use rayon::prelude::*;

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
            dynamic: DynamicFilters::new(filters),
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

struct Metrics {
    output_rows: datafusion::physical_plan::metrics::Count,
    pruned: datafusion::physical_plan::metrics::Count,
    columns: datafusion::physical_plan::metrics::Count,
    bytes: datafusion::physical_plan::metrics::Count,
    time: datafusion::physical_plan::metrics::Time,
    parts_time: datafusion::physical_plan::metrics::Time,
    arrays_time: datafusion::physical_plan::metrics::Time,
    filter_rows_in: datafusion::physical_plan::metrics::Count,
    blocks_without_survivors: datafusion::physical_plan::metrics::Count,
    filter_time: datafusion::physical_plan::metrics::Time,
    device_selected_blocks: datafusion::physical_plan::metrics::Count,
    bytes_to_device: datafusion::physical_plan::metrics::Count,
    bytes_from_device: datafusion::physical_plan::metrics::Count,
    device_select_time: datafusion::physical_plan::metrics::Time,
    dynamic_filter_dropped: datafusion::physical_plan::metrics::Count,
    dynamic_filter_time: datafusion::physical_plan::metrics::Time,
}

impl Metrics {
    fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        Metrics {
            output_rows: MetricBuilder::new(set).output_rows(partition),
            pruned: MetricBuilder::new(set).counter("blocks_pruned", partition),
            columns: MetricBuilder::new(set).counter("decompressed_columns", partition),
            bytes: MetricBuilder::new(set).counter("decompressed_bytes", partition),
            time: MetricBuilder::new(set).subset_time("decompress_time", partition),
            parts_time: MetricBuilder::new(set).subset_time("decode_parts_time", partition),
            arrays_time: MetricBuilder::new(set).subset_time("build_arrays_time", partition),
            filter_rows_in: MetricBuilder::new(set).counter("filter_rows_in", partition),
            blocks_without_survivors: MetricBuilder::new(set)
                .counter("blocks_without_survivors", partition),
            filter_time: MetricBuilder::new(set).subset_time("filter_time", partition),
            device_selected_blocks: MetricBuilder::new(set)
                .counter("device_selected_blocks", partition),
            bytes_to_device: MetricBuilder::new(set).counter("bytes_to_device", partition),
            bytes_from_device: MetricBuilder::new(set).counter("bytes_from_device", partition),
            device_select_time: MetricBuilder::new(set)
                .subset_time("device_select_time", partition),
            dynamic_filter_dropped: MetricBuilder::new(set)
                .counter("dynamic_filter_dropped_rows", partition),
            dynamic_filter_time: MetricBuilder::new(set)
                .subset_time("dynamic_filter_time", partition),
        }
    }
}

/// Plain bytes of the projected columns that one window of a scan decodes in one batched
/// call, by default ([`super::CompressOptions::scan_window_bytes`]): enough to send the
/// call to the GPU under `auto` and to keep the pool busy, small enough that a partition
/// holds little more than two windows at a time. (Smaller windows, about eight a partition
/// at SF 10, and a queue merging the partitions' windows into shared calls were both
/// measured slower: docs/PERFORMANCE.md, "Where the compressed store's scan time goes".)
pub const WINDOW_BYTES: usize = 64 << 20;

/// The least share of a block's bytes a window counts when the GPU selects its rows, so
/// that a window decodes at most 8 × [`WINDOW_BYTES`] on the device, whatever its zones
/// say.
const LEAST_DEVICE_SHARE: f64 = 1.0 / 8.0;

/// How many windows a scan starts with below [`WINDOW_BYTES`], each half the next: a
/// query's operators start on the first rows sooner, while the GPU decodes the rest. With
/// the first window started before the stream is polled, the geometric mean of Q1, Q2, Q5,
/// Q8, Q9, Q10, Q11 and Q22 on the compressed store measured 1.25× the memory store's
/// times, against 1.45× with neither (SF 10, nvidia-h200, docs/PERFORMANCE.md).
const RAMP_STEPS: usize = 3;

/// A run of consecutive blocks decoded together, and how many of its rows to hand out.
struct Window {
    blocks: Vec<Arc<Block>>,
    rows: usize,
}

/// The blocks cut into windows of about `window_bytes` of projected plain bytes (at least
/// one block each), with the rows each hands out under `limit`. With `shares` (each
/// block's expected share of passing rows, when only those reach the host), a block
/// counts for that share of its bytes, at least [`LEAST_DEVICE_SHARE`].
fn windows(
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
struct Windows {
    job: Arc<Job>,
    windows: std::vec::IntoIter<Window>,
    next: Option<tokio::task::JoinHandle<Result<Filtered>>>,
    /// Rows still to hand out under the scan's limit.
    remaining: usize,
}

impl Windows {
    /// Starts decoding the next window on a blocking thread (`None` when none is left).
    fn start_next(&mut self) -> Option<tokio::task::JoinHandle<Result<Filtered>>> {
        let window = self.windows.next()?;
        let job = self.job.clone();
        let queued = std::time::Instant::now();
        Some(tokio::task::spawn_blocking(move || {
            let started = std::time::Instant::now();
            let result = job
                .run(&window)
                .and_then(|batches| job.apply_dynamic(batches));
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
    fn refilter(&self, batches: Vec<RecordBatch>, applied: Generation) -> Result<Vec<RecordBatch>> {
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
    fn gather(&self, batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
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
    fn take_up_to_limit(&mut self, mut batches: Vec<RecordBatch>) -> Vec<RecordBatch> {
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

/// What every window of one partition's scan decodes with.
struct Job {
    /// The table's schema (the types its columns are handed out in).
    table: SchemaRef,
    projection: Vec<usize>,
    schema: SchemaRef,
    batch_size: usize,
    placement: Placement,
    filter: Option<Arc<RowFilter>>,
    /// The filter as tests the GPU evaluates, when it has that form (no test without a
    /// filter).
    device_tests: Option<DeviceTests>,
    residence: Residence,
    dynamic: Option<DynamicFilters>,
    /// Whether the next window decodes the filter's columns and the others in one call
    /// (see [`Job::run_filtered`]).
    decode_in_one_call: AtomicBool,
    metrics: Metrics,
}

/// A window's batches, and the generation of the dynamic filters applied to them.
type Filtered = (Vec<RecordBatch>, Generation);

impl Job {
    /// `batches` without the rows the dynamic filters reject as they stand now.
    fn apply_dynamic(&self, batches: Vec<RecordBatch>) -> Result<Filtered> {
        let Some(dynamic) = &self.dynamic else {
            return Ok((batches, 0));
        };
        let timer = self.metrics.dynamic_filter_time.timer();
        let (batches, generation, dropped) = dynamic.apply(batches)?;
        timer.done();
        self.metrics.dynamic_filter_dropped.add(dropped);
        Ok((batches, generation))
    }

    /// Decodes `window`'s projected columns (batched calls): the rows the row filter
    /// keeps, in batches of at most the session's batch size.
    fn run(&self, window: &Window) -> Result<Vec<RecordBatch>> {
        let blocks: Vec<&Block> = window.blocks.iter().map(|b| b.as_ref()).collect();
        match &self.filter {
            Some(filter) => self.run_filtered(&blocks, filter),
            // Every row, from the streams resident on the GPU where it has them.
            None => match self.select_on_device(&blocks)? {
                Some(batches) => Ok(batches),
                None => self.run_unfiltered(&blocks, window.rows),
            },
        }
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
    fn run_filtered(&self, blocks: &[&Block], filter: &RowFilter) -> Result<Vec<RecordBatch>> {
        if let Some(batches) = self.select_on_device(blocks)? {
            return Ok(batches);
        }
        let read = filter.columns();
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
            .map(|block| filter.evaluate(block))
            .collect::<Result<Vec<BooleanBuffer>>>()?;
        timer.done();
        let passing: Vec<usize> = masks.iter().map(BooleanBuffer::count_set_bits).collect();
        let without = passing.iter().filter(|&&n| n == 0).count();
        self.metrics
            .filter_rows_in
            .add(blocks.iter().map(|b| b.rows).sum());
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
    /// resident streams); `None` otherwise.
    fn select_on_device(&self, blocks: &[&Block]) -> Result<Option<Vec<RecordBatch>>> {
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
            .zip(selected.masks.par_iter())
            .zip(selected.arrays.into_par_iter())
            .zip(passing.par_iter())
            .map(|(((block, keep), device), &n)| {
                if n == 0 {
                    return Ok(Vec::new());
                }
                let mut device = device.into_iter();
                let columns = self
                    .projection
                    .iter()
                    .map(|&c| {
                        if host.binary_search(&c).is_err() {
                            device.next().ok_or_else(|| {
                                DataFusionError::Internal(
                                    "a column missing from the GPU's selection".into(),
                                )
                            })
                        } else if n == block.rows() {
                            block.array(c)
                        } else {
                            block.kept_rows(c, keep)
                        }
                    })
                    .collect::<Result<Vec<ArrayRef>>>()?;
                self.batches(columns, n)
            })
            .collect::<Result<Vec<Vec<RecordBatch>>>>()?;
        timer.done();
        Ok(Some(batches.into_iter().flatten().collect()))
    }

    /// The projected columns of `block`'s `passing` rows that `keep` marks, in batches of
    /// the session's size. Only the passing rows are built, on the decoding thread:
    /// fixed-width values are filtered at their stored width and only then widened, and
    /// dictionaries filtered before their strings are made. Building every row and
    /// filtering afterwards, as `FilterExec` would, writes each kept value twice (TPC-H
    /// SF 10 on the H100, docs/PERFORMANCE.md: Q1, which keeps 98.6% of its rows, took
    /// 1.05 s that way and 0.79 s this way).
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
fn chunks(rows: usize, size: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..rows)
        .step_by(size)
        .map(move |offset| (offset, size.min(rows - offset)))
}

/// `rows` rows of `schema`, which has no fields, in batches of `batch_size`.
fn row_count_batches(
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

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
