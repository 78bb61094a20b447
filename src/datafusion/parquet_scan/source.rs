//! [`ColzipParquetSource`]: the `FileSource` DataFusion's `DataSourceExec` drives. It
//! takes the projection and the pushed filters, and opens each file (or byte range of
//! one, when DataFusion splits big files over partitions) with
//! [`ColzipParquetOpener`](super::opener::ColzipParquetOpener).

use std::fmt;
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::config::TableParquetOptions;
use datafusion::datasource::physical_plan::parquet::can_expr_be_pushed_down_with_schemas;
use datafusion::datasource::physical_plan::{FileOpener, FileScanConfig, FileSource};
use datafusion::datasource::projection::{ProjectionOpener, SplitProjection};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::object_store::ObjectStore;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::projection::ProjectionExprs;
use datafusion::physical_expr::utils::conjunction;
use datafusion::physical_plan::DisplayFormatType;
use datafusion::physical_plan::filter_pushdown::{FilterPushdownPropagation, PushedDown};
use datafusion::physical_plan::metrics::ExecutionPlanMetricsSet;

use super::opener::ColzipParquetOpener;
use crate::codec::Placement;
use crate::gpu::Backend;

/// The name `EXPLAIN` shows for the scan.
pub const FILE_TYPE: &str = "colzip_parquet";

/// Rows per batch when DataFusion does not say.
const DEFAULT_BATCH_SIZE: usize = 8192;

/// Reads Parquet files with each row group's SNAPPY pages decompressed in one batched
/// call (GPU when the placement has one, else the CPU's cores).
#[derive(Clone)]
pub struct ColzipParquetSource {
    table_schema: TableSchema,
    projection: SplitProjection,
    /// Pushed filters, used to prune (DataFusion keeps applying them above the scan).
    predicate: Option<Arc<dyn PhysicalExpr>>,
    batch_size: Option<usize>,
    metrics: ExecutionPlanMetricsSet,
    /// Where pages are decompressed; `None`: `COLZIP_BACKEND`, else `auto`.
    backend: Option<Backend>,
    /// Prune row groups by statistics (DataFusion's `parquet.pruning`).
    pruning: bool,
    /// Prune pages by the page index (DataFusion's `parquet.enable_page_index`).
    page_index: bool,
}

impl fmt::Debug for ColzipParquetSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ColzipParquetSource")
            .field("predicate", &self.predicate)
            .field("backend", &self.backend)
            .finish_non_exhaustive()
    }
}

impl ColzipParquetSource {
    /// A source over `table_schema`, with DataFusion's Parquet `options` (pruning and
    /// page index settings) and the pages decompressed on `backend`.
    pub fn new(
        table_schema: TableSchema,
        options: &TableParquetOptions,
        backend: Option<Backend>,
    ) -> Self {
        ColzipParquetSource {
            projection: SplitProjection::unprojected(&table_schema),
            table_schema,
            predicate: None,
            batch_size: None,
            metrics: ExecutionPlanMetricsSet::new(),
            backend,
            pruning: options.global.pruning,
            page_index: options.global.enable_page_index,
        }
    }

    /// The pushed filters, ANDed.
    pub fn predicate(&self) -> Option<&Arc<dyn PhysicalExpr>> {
        self.predicate.as_ref()
    }
}

/// Where a scan decompresses pages: `gpu` on the GPU, `auto` and `cpu` on the CPU's
/// cores. The GPU loses under `auto`: each partition's row group is one call of a few
/// MiB, partitions outnumber the lanes, and one warp decodes each 1 MiB page, so the
/// TPC-H queries spend several times the CPU's time decompressing (docs/PERFORMANCE.md).
/// Writing (`COPY`) keeps `auto`.
fn scan_placement(backend: Backend) -> crate::Result<Placement> {
    match backend {
        Backend::Gpu => Ok(Placement::new(Backend::Gpu)?),
        Backend::Auto | Backend::Cpu => Ok(Placement::CPU),
    }
}

/// What every file opened by one partition shares.
pub(super) struct ScanConfig {
    pub store: Arc<dyn ObjectStore>,
    pub table_schema: TableSchema,
    /// The table's file columns the scan outputs (before the projection on top).
    pub file_columns: Vec<usize>,
    pub predicate: Option<Arc<dyn PhysicalExpr>>,
    pub batch_size: usize,
    pub limit: Option<usize>,
    pub placement: Placement,
    pub metrics: ExecutionPlanMetricsSet,
    pub pruning: bool,
    pub page_index: bool,
}

impl FileSource for ColzipParquetSource {
    fn create_file_opener(
        &self,
        object_store: Arc<dyn ObjectStore>,
        base_config: &FileScanConfig,
        partition: usize,
    ) -> Result<Arc<dyn FileOpener>> {
        let backend = match self.backend {
            Some(backend) => backend,
            None => Backend::from_env()?,
        };
        let config = ScanConfig {
            store: object_store,
            table_schema: self.table_schema.clone(),
            file_columns: self.projection.file_indices.clone(),
            predicate: self.predicate.clone(),
            batch_size: self.batch_size.unwrap_or(DEFAULT_BATCH_SIZE).max(1),
            limit: base_config.limit,
            placement: scan_placement(backend)?,
            metrics: self.metrics.clone(),
            pruning: self.pruning,
            page_index: self.page_index,
        };
        let opener: Arc<dyn FileOpener> =
            Arc::new(ColzipParquetOpener::new(Arc::new(config), partition));
        // Partition columns and expressions of the projection are applied on top.
        ProjectionOpener::try_new(
            self.projection.clone(),
            opener,
            self.table_schema.file_schema(),
        )
    }

    fn table_schema(&self) -> &TableSchema {
        &self.table_schema
    }

    fn with_batch_size(&self, batch_size: usize) -> Arc<dyn FileSource> {
        let mut source = self.clone();
        source.batch_size = Some(batch_size);
        Arc::new(source)
    }

    fn filter(&self) -> Option<Arc<dyn PhysicalExpr>> {
        self.predicate.clone()
    }

    fn projection(&self) -> Option<&ProjectionExprs> {
        Some(&self.projection.source)
    }

    fn metrics(&self) -> &ExecutionPlanMetricsSet {
        &self.metrics
    }

    fn file_type(&self) -> &str {
        FILE_TYPE
    }

    fn fmt_extra(&self, t: DisplayFormatType, f: &mut fmt::Formatter) -> fmt::Result {
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => {
                if let Some(predicate) = &self.predicate {
                    write!(f, ", pruning_predicate={predicate}")?;
                }
                Ok(())
            }
            DisplayFormatType::TreeRender => Ok(()),
        }
    }

    fn try_pushdown_filters(
        &self,
        filters: Vec<Arc<dyn PhysicalExpr>>,
        _config: &ConfigOptions,
    ) -> Result<FilterPushdownPropagation<Arc<dyn FileSource>>> {
        // The filters are used for pruning only (row groups by statistics, pages by the
        // page index); every row that survives still goes through DataFusion's filter,
        // so each is reported as not pushed down (Inexact).
        let unchanged = vec![PushedDown::No; filters.len()];
        let usable: Vec<_> = filters
            .into_iter()
            .filter(|f| can_expr_be_pushed_down_with_schemas(f, self.table_schema.table_schema()))
            .collect();
        if usable.is_empty() {
            return Ok(FilterPushdownPropagation::with_parent_pushdown_result(
                unchanged,
            ));
        }
        let mut source = self.clone();
        source.predicate = Some(conjunction(
            self.predicate.clone().into_iter().chain(usable),
        ));
        Ok(
            FilterPushdownPropagation::with_parent_pushdown_result(unchanged)
                .with_updated_node(Arc::new(source) as Arc<dyn FileSource>),
        )
    }

    fn try_pushdown_projection(
        &self,
        projection: &ProjectionExprs,
    ) -> Result<Option<Arc<dyn FileSource>>> {
        let mut source = self.clone();
        let merged = self.projection.source.try_merge(projection)?;
        source.projection = SplitProjection::new(self.table_schema.file_schema(), &merged);
        Ok(Some(Arc::new(source)))
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        datafusion::physical_plan::apply_expression_roots(
            self.predicate
                .iter()
                .chain(self.projection.source.iter().map(|p| &p.expr)),
            f,
        )
    }
}
