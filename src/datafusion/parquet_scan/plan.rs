//! What the scan reads of one file: the Arrow types the file's columns are read as (the
//! table's: strings as views where the table says so), the projected leaf columns, and the
//! row groups (and, with a page index, the rows within them) the pushed filters may keep,
//! pruned with DataFusion's own Parquet pruning (`RowGroupAccessPlanFilter`,
//! `PagePruningAccessPlanFilter`) so the scan prunes exactly what the stock reader does.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use datafusion::common::ScalarValue;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::parquet::{
    PagePruningAccessPlanFilter, ParquetAccessPlan, ParquetFileMetrics, RowGroupAccess,
    RowGroupAccessPlanFilter, apply_file_schema_type_coercions,
};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::simplifier::PhysicalExprSimplifier;
use datafusion::physical_expr_adapter::{
    BatchAdapter, BatchAdapterFactory, DefaultPhysicalExprAdapterFactory,
    PhysicalExprAdapterFactory, replace_columns_with_literals,
};
use datafusion::physical_optimizer::pruning::PruningPredicateBuilder;
use parquet::arrow::arrow_reader::RowSelection;
use parquet::arrow::{FieldLevels, ProjectionMask, parquet_to_arrow_field_levels};
use parquet::file::metadata::ParquetMetaData;

use super::source::ScanConfig;
use crate::{Error, Result};

/// How one file is read.
pub(super) struct FilePlan {
    /// The leaf columns read and how the decoder assembles them.
    pub mask: ProjectionMask,
    pub leaves: Vec<usize>,
    pub levels: FieldLevels,
    /// Turns the decoder's batches into the projected columns of the table's file
    /// schema (casts, columns this file lacks as nulls).
    pub adapter: BatchAdapter,
    /// Row groups to read, in order, with the rows to keep of each (`None`: all).
    pub row_groups: Vec<(usize, Option<RowSelection>)>,
}

impl FilePlan {
    pub(super) fn try_new(
        config: &ScanConfig,
        file: &PartitionedFile,
        metadata: &ParquetMetaData,
        file_metrics: &ParquetFileMetrics,
    ) -> Result<FilePlan> {
        let file_meta = metadata.file_metadata();
        let descr = file_meta.schema_descr();
        let stored =
            parquet::arrow::parquet_to_arrow_schema(descr, file_meta.key_value_metadata())?;
        let logical = config.table_schema.file_schema();
        // Read the file's columns as the table types them (Utf8View, Utf8 for binary…),
        // as the stock reader does.
        let physical =
            Arc::new(apply_file_schema_type_coercions(logical, &stored).unwrap_or(stored));

        // The projected table columns this file has, by name; the others become nulls.
        let target = Arc::new(logical.project(&config.file_columns)?);
        let mut roots: Vec<usize> = target
            .fields()
            .iter()
            .filter_map(|f| physical.index_of(f.name()).ok())
            .collect();
        roots.sort_unstable();
        roots.dedup();
        let mask = ProjectionMask::roots(descr, roots.iter().copied());
        let leaves = (0..descr.num_columns())
            .filter(|&c| mask.leaf_included(c))
            .collect();
        let levels = parquet_to_arrow_field_levels(descr, mask.clone(), Some(physical.fields()))?;
        let read_schema = Arc::new(physical.project(&roots)?);
        let adapter = BatchAdapterFactory::new(Arc::clone(&target)).make_adapter(&read_schema)?;

        let row_groups = prune(config, file, metadata, &physical, file_metrics)?;
        Ok(FilePlan {
            mask,
            leaves,
            levels,
            adapter,
            row_groups,
        })
    }
}

/// The row groups (and rows) the predicate may keep, within the file's byte range.
fn prune(
    config: &ScanConfig,
    file: &PartitionedFile,
    metadata: &ParquetMetaData,
    physical: &SchemaRef,
    file_metrics: &ParquetFileMetrics,
) -> Result<Vec<(usize, Option<RowSelection>)>> {
    let groups = metadata.row_groups();
    let mut filter = RowGroupAccessPlanFilter::new(ParquetAccessPlan::new_all(groups.len()));
    if let Some(range) = &file.range {
        filter.prune_by_range(groups, range);
    }
    let predicate = config
        .predicate
        .as_ref()
        .filter(|_| config.pruning)
        .and_then(|p| file_predicate(config, file, p, physical));
    let mut plan = match &predicate {
        Some(predicate) => {
            if let Some(pruning) = PruningPredicateBuilder::new()
                .with_file_schema(Arc::clone(physical))
                .try_build(Arc::clone(predicate))
                .ok()
                .filter(|p| !p.always_true())
            {
                filter.prune_by_statistics(
                    physical,
                    metadata.file_metadata().schema_descr(),
                    groups,
                    &pruning,
                    file_metrics,
                );
            }
            filter.build()
        }
        None => filter.build(),
    };
    if let Some(predicate) = &predicate
        && config.page_index
        && metadata.column_index().is_some()
        && metadata.offset_index().is_some()
    {
        let pages = PagePruningAccessPlanFilter::new(predicate, Arc::clone(physical));
        if pages.filter_number() > 0 {
            plan = pages.prune_plan_with_page_index(
                plan,
                physical,
                metadata.file_metadata().schema_descr(),
                metadata,
                file_metrics,
            );
        }
    }
    let mut kept = Vec::new();
    for (index, access) in plan.into_inner().into_iter().enumerate() {
        match access {
            RowGroupAccess::Skip => {}
            RowGroupAccess::Scan => kept.push((index, None)),
            RowGroupAccess::Selection(selection) => {
                let rows = usize::try_from(groups[index].num_rows()).unwrap_or(0);
                if selection.row_count() + selection.skipped_row_count() != rows {
                    return Err(Error::format(format!(
                        "the page index of row group {index} does not cover its {rows} rows: \
                         the file is corrupt"
                    )));
                }
                if selection.selects_any() {
                    kept.push((index, Some(selection)));
                }
            }
        }
    }
    Ok(kept)
}

/// The pushed predicate in terms of this file's columns: partition columns replaced by
/// the file's values, columns it lacks by nulls, casts where its types differ; `None`
/// when it cannot be (then nothing is pruned: the filter above the scan still applies).
fn file_predicate(
    config: &ScanConfig,
    file: &PartitionedFile,
    predicate: &Arc<dyn PhysicalExpr>,
    physical: &SchemaRef,
) -> Option<Arc<dyn PhysicalExpr>> {
    let partition_values: HashMap<String, ScalarValue> = config
        .table_schema
        .table_partition_cols()
        .iter()
        .zip(&file.partition_values)
        .map(|(field, value)| (field.name().clone(), value.clone()))
        .collect();
    let predicate = replace_columns_with_literals(Arc::clone(predicate), &partition_values).ok()?;
    let rewriter = DefaultPhysicalExprAdapterFactory
        .create(
            Arc::clone(config.table_schema.file_schema()),
            Arc::clone(physical),
        )
        .ok()?;
    let rewritten = rewriter.rewrite(predicate).ok()?;
    PhysicalExprSimplifier::new(physical)
        .simplify(rewritten)
        .ok()
}
