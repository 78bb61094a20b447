//! The metrics a compressed scan counts per partition, which `EXPLAIN ANALYZE` shows (the
//! list is in [`CompressedScanExec`](super::CompressedScanExec)'s documentation).

use datafusion::physical_plan::metrics::{ExecutionPlanMetricsSet, MetricBuilder};

pub(super) struct Metrics {
    pub(super) output_rows: datafusion::physical_plan::metrics::Count,
    pub(super) pruned: datafusion::physical_plan::metrics::Count,
    pub(super) columns: datafusion::physical_plan::metrics::Count,
    pub(super) bytes: datafusion::physical_plan::metrics::Count,
    pub(super) time: datafusion::physical_plan::metrics::Time,
    pub(super) parts_time: datafusion::physical_plan::metrics::Time,
    pub(super) arrays_time: datafusion::physical_plan::metrics::Time,
    pub(super) filter_rows_in: datafusion::physical_plan::metrics::Count,
    pub(super) blocks_without_survivors: datafusion::physical_plan::metrics::Count,
    pub(super) filter_time: datafusion::physical_plan::metrics::Time,
    pub(super) device_selected_blocks: datafusion::physical_plan::metrics::Count,
    pub(super) bytes_to_device: datafusion::physical_plan::metrics::Count,
    pub(super) bytes_from_device: datafusion::physical_plan::metrics::Count,
    pub(super) device_select_time: datafusion::physical_plan::metrics::Time,
    pub(super) dynamic_filter_dropped: datafusion::physical_plan::metrics::Count,
    pub(super) dynamic_filter_time: datafusion::physical_plan::metrics::Time,
}

impl Metrics {
    pub(super) fn new(set: &ExecutionPlanMetricsSet, partition: usize) -> Self {
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
