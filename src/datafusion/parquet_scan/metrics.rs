//! What the scan reports in `EXPLAIN ANALYZE` and through the plan's metrics, beside the
//! pruning metrics of DataFusion's own Parquet reader (`row_groups_pruned_statistics`,
//! `page_index_rows_pruned`, …, which it shares with it).

use datafusion::physical_plan::metrics::{Count, ExecutionPlanMetricsSet, MetricBuilder, Time};

use crate::parquet::row_group::DecompressStats;

/// Name of the metric holding the time spent in batched page decompression.
pub const DECOMPRESS_TIME: &str = "decompress_time";
/// Name of the metric counting the SNAPPY pages decompressed by colzip.
pub const PAGES_DECOMPRESSED: &str = "pages_decompressed";
/// Name of the metric counting the bytes those pages decompressed to.
pub const BYTES_DECOMPRESSED: &str = "bytes_decompressed";

/// The scan's own metrics for one partition.
#[derive(Clone, Debug)]
pub(super) struct ScanMetrics {
    /// Row groups read (after pruning).
    pub row_groups_read: Count,
    /// Row groups whose pages were decompressed on the GPU.
    pub gpu_row_groups: Count,
    pub pages_decompressed: Count,
    /// SNAPPY pages never decompressed: the row selection skipped all their rows.
    pub pages_skipped: Count,
    pub bytes_compressed: Count,
    pub bytes_decompressed: Count,
    /// Chunks of another codec (ZSTD, GZIP, …) the parquet crate decompressed.
    pub other_codec_chunks: Count,
    /// Time in the batched decompression calls.
    pub decompress_time: Time,
    /// Time decoding pages into Arrow arrays.
    pub decode_time: Time,
}

impl ScanMetrics {
    pub(super) fn new(metrics: &ExecutionPlanMetricsSet, partition: usize) -> Self {
        let counter = |name: &'static str| MetricBuilder::new(metrics).counter(name, partition);
        let time = |name: &'static str| MetricBuilder::new(metrics).subset_time(name, partition);
        ScanMetrics {
            row_groups_read: counter("row_groups_read"),
            gpu_row_groups: counter("gpu_row_groups"),
            pages_decompressed: counter(PAGES_DECOMPRESSED),
            pages_skipped: counter("pages_skipped_by_selection"),
            bytes_compressed: counter("bytes_compressed"),
            bytes_decompressed: counter(BYTES_DECOMPRESSED),
            other_codec_chunks: counter("other_codec_chunks"),
            decompress_time: time(DECOMPRESS_TIME),
            decode_time: time("decode_time"),
        }
    }

    /// Adds what one row group's decompression did.
    pub(super) fn record(&self, stats: &DecompressStats) {
        self.row_groups_read.add(1);
        self.gpu_row_groups.add(usize::from(stats.on_gpu));
        self.pages_decompressed.add(stats.snappy_pages);
        self.pages_skipped.add(stats.skipped_pages);
        self.bytes_compressed
            .add(usize::try_from(stats.compressed_bytes).unwrap_or(usize::MAX));
        self.bytes_decompressed
            .add(usize::try_from(stats.decompressed_bytes).unwrap_or(usize::MAX));
        self.other_codec_chunks.add(stats.other_codec_chunks);
        self.decompress_time
            .add_duration(std::time::Duration::from_secs_f64(stats.seconds));
    }
}
