//! The compressed table as DataFusion sees it: its schema, statistics, which filters its
//! scans take, the scan plan and `INSERT INTO`.

use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::stats::Precision;
use datafusion::common::{SchemaExt, Statistics};
use datafusion::datasource::TableType;
use datafusion::datasource::sink::DataSinkExec;
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

use super::block::block_statistics;
use super::{CompressedScanExec, CompressedTable, row_filter, sink};

#[async_trait]
impl TableProvider for CompressedTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let projection = match projection {
            Some(p) => p.clone(),
            None => (0..self.schema.fields().len()).collect(),
        };
        let partitions = self.read().clone();
        let exact: Vec<Expr> = filters
            .iter()
            .filter(|f| self.evaluates(f))
            .cloned()
            .collect();
        let row_filter = row_filter::RowFilter::try_new(state, &self.schema, &exact)?;
        Ok(Arc::new(
            CompressedScanExec::try_new(
                &self.schema,
                partitions,
                projection,
                limit,
                self.options.placement,
                self.options.scan_window_bytes,
            )?
            .with_residence(self.options.residence)
            .with_partitioned_join_filters(self.options.partitioned_join_filters)
            .with_pruning(self.pruning_predicate(state, filters))
            .with_filter(row_filter),
        ))
    }

    /// Every filter is offered to the scan for pruning blocks by their zones. Those the
    /// scan evaluates itself (comparisons, `BETWEEN`, `IN`, `IS NULL`, `LIKE`, boolean
    /// logic over columns and literals) are exact, and DataFusion drops them
    /// above the scan; the others stay above it as well (inexact).
    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> datafusion::error::Result<Vec<TableProviderFilterPushDown>> {
        Ok(filters
            .iter()
            .map(|f| {
                if self.evaluates(f) {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }

    /// Exact row counts and, where the containers tell them, null counts; the total byte
    /// size is the compressed size (the memory held), each column's byte size its
    /// compressed size.
    fn statistics(&self) -> Option<Statistics> {
        let partitions = self.read();
        let all: Vec<usize> = (0..self.schema.fields().len()).collect();
        let mut statistics = block_statistics(partitions.iter().flatten(), &all, None);
        let sizes = self.column_compressed_bytes_of(&partitions);
        statistics.total_byte_size = Precision::Exact(sizes.iter().sum());
        for (c, size) in statistics.column_statistics.iter_mut().zip(sizes) {
            c.byte_size = Precision::Exact(size);
        }
        Some(statistics)
    }

    async fn insert_into(
        &self,
        _state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        if insert_op != InsertOp::Append {
            return datafusion::common::not_impl_err!(
                "{insert_op} is not supported by compressed tables (only INSERT INTO)"
            );
        }
        self.schema
            .logically_equivalent_names_and_types(&input.schema())?;
        let sink = sink::CompressedSink::new(self.shared());
        Ok(Arc::new(DataSinkExec::new(input, Arc::new(sink), None)))
    }
}
