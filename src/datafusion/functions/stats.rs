//! The table function `colzip_stats('table' [, 'codec,codec,…'])`: every column of a
//! session's table compressed with each codec, one row per column and codec with the
//! fields of `colzip tpch --format json` ([`columns::Row`]), measured by the same code
//! ([`columns::measure_column`], round trip verified).
//!
//! A table function sees only its arguments and the session while the query is planned,
//! and looking a table up is asynchronous. So the call checks its arguments and that the
//! table exists (planning errors), and returns a provider that finds the table in the
//! session its `scan` is given. The scan ([`StatsExec`]) has one single-column scan of
//! the table per column as its children; executing it reads and measures one column at a
//! time (so only one column and its compressed form are held), on a blocking thread, and
//! yields one batch per column.

use std::fmt;
use std::sync::{Arc, LazyLock};

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, RecordBatch, StringArray, UInt64Array, new_empty_array,
};
use arrow::compute::concat;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use async_trait::async_trait;
use datafusion::catalog::{Session, TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::common::{
    DataFusionError, ResolvedTableReference, Result, TableReference, internal_err, plan_err,
};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{Expr, TableType};
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    ChildrenPropertiesMode, DisplayAs, DisplayFormatType, ExecutionPlan, Partitioning,
    PlanProperties, ReplaceChildrenOptions, SendableRecordBatchStream, collect_partitioned,
};
use futures::StreamExt;

use super::args::{
    check_arity, check_compressible, codec_forms, literal_of, placement, string_literal,
};
use crate::gpu::Backend;
use crate::harness::columns::{self, Contender};
use crate::reporting::ReportRow;

const NAME: &str = "colzip_stats";
const USAGE: &str = "colzip_stats('table' [, 'codec,codec,…'])";

/// The output schema: `columns::Row`'s fields, in its report order.
static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| {
    let fields = <columns::Row as ReportRow>::HEADER.iter().map(|&name| {
        let data_type = match name {
            "rows" | "raw_bytes" | "compressed_bytes" => DataType::UInt64,
            "ratio" | "compress_gbps" | "decompress_gbps" => DataType::Float64,
            _ => DataType::Utf8,
        };
        Field::new(name, data_type, false)
    });
    Arc::new(Schema::new(fields.collect::<Vec<_>>()))
});

/// The table function.
#[derive(Debug)]
pub(super) struct Stats {
    backend: Backend,
}

impl Stats {
    pub(super) fn new(backend: Backend) -> Self {
        Stats { backend }
    }
}

/// The codecs of argument 2.
fn parse_contenders(expr: &Expr) -> Result<Vec<Contender>> {
    let text = string_literal(NAME, 2, "codecs", literal_of(expr))?;
    Contender::parse_list(text).map_err(|e| {
        DataFusionError::Plan(format!(
            "{NAME}: invalid codec list '{text}' in argument 2: {e}; expected comma-separated codecs \
             ({}) or baselines (snap, lz4, zstd-1..22, bzip2-1..9)",
            codec_forms()
        ))
    })
}

/// The table `name` resolves to in `session`, if it exists there.
fn resolve(session: &dyn Session, name: &str) -> Option<ResolvedTableReference> {
    let catalog = &session.config_options().catalog;
    let reference =
        TableReference::from(name).resolve(&catalog.default_catalog, &catalog.default_schema);
    let exists = session
        .catalog_list()
        .catalog(&reference.catalog)
        .and_then(|c| c.schema(&reference.schema))
        .is_some_and(|s| s.table_exist(&reference.table));
    exists.then_some(reference)
}

impl TableFunctionImpl for Stats {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        check_arity(NAME, exprs.len(), 1, 2, USAGE)?;
        let name = string_literal(NAME, 1, "table", literal_of(&exprs[0]))?;
        let contenders = match exprs.get(1) {
            Some(expr) => parse_contenders(expr)?,
            None => Contender::colzip_defaults(),
        };
        let Some(reference) = resolve(args.session(), name) else {
            return plan_err!("{NAME}: argument 1: table '{name}' not found in the session");
        };
        Ok(Arc::new(StatsTable {
            name: name.to_string(),
            reference,
            contenders,
            backend: self.backend,
        }))
    }
}

/// What `colzip_stats(…)` returns: the rows are made when its scan is executed.
#[derive(Debug)]
struct StatsTable {
    /// The table as the call named it (the rows' `table`).
    name: String,
    reference: ResolvedTableReference,
    contenders: Vec<Contender>,
    backend: Backend,
}

#[async_trait]
impl TableProvider for StatsTable {
    fn schema(&self) -> SchemaRef {
        Arc::clone(&SCHEMA)
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        // A hint: the plan keeps its limit above the scan, and a column's row is made
        // whole or not at all.
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let reference = &self.reference;
        let table = match state
            .catalog_list()
            .catalog(&reference.catalog)
            .and_then(|c| c.schema(&reference.schema))
        {
            Some(schema) => schema.table(&reference.table).await?,
            None => None,
        };
        let Some(table) = table else {
            return plan_err!("{NAME}: table '{}' not found in the session", self.name);
        };
        let mut columns = Vec::new();
        for (i, field) in table.schema().fields().iter().enumerate() {
            check_compressible(NAME, 1, field.data_type()).map_err(|_| {
                DataFusionError::Plan(format!(
                    "{NAME}: column '{}' of '{}' has type {}, which colzip cannot compress",
                    field.name(),
                    self.name,
                    field.data_type()
                ))
            })?;
            let scan = table.scan(state, Some(&vec![i]), &[], None).await?;
            columns.push(scan);
        }
        Ok(Arc::new(StatsExec::with_contenders(
            StatsScanParts {
                table: self.name.clone(),
                contenders: self.contenders.iter().map(Contender::to_string).collect(),
                backend: self.backend,
                projection: projection.cloned(),
            },
            self.contenders.clone(),
            columns,
        )?))
    }
}

/// What a `colzip_stats` scan needs besides its per-column scans: what a plan codec
/// carries to another process ([`StatsExec::parts`]) and rebuilds there
/// ([`StatsExec::try_new`]).
#[derive(Clone, Debug)]
pub struct StatsScanParts {
    /// The table as the call named it (the rows' `table`).
    pub table: String,
    /// The codecs and baselines measured, each as `colzip_stats`' second argument names
    /// one (`lzss`, `gmatch:raw`, `zstd-3`).
    pub contenders: Vec<String>,
    pub backend: Backend,
    /// The output columns (indices into the schema of `colzip_stats`' rows), all when `None`.
    pub projection: Option<Vec<usize>>,
}

/// The scan of `colzip_stats(…)`: one partition, a batch of rows per column. Its
/// children are single-column scans of the measured table, one per column, so the plan
/// (a table's Parquet scans, say) can be sent to a Ballista executor and measured there.
#[derive(Debug)]
pub struct StatsExec {
    parts: StatsScanParts,
    /// `parts.contenders`, parsed.
    contenders: Vec<Contender>,
    columns: Vec<Arc<dyn ExecutionPlan>>,
    properties: Arc<PlanProperties>,
}

impl StatsExec {
    /// The scan measuring each of `columns` (single-column scans) with `parts.contenders`;
    /// an error names a contender that is not a codec or baseline.
    pub fn try_new(parts: StatsScanParts, columns: Vec<Arc<dyn ExecutionPlan>>) -> Result<Self> {
        let contenders = parse_each(&parts.contenders)?;
        Self::with_contenders(parts, contenders, columns)
    }

    /// [`try_new`](Self::try_new) with `parts.contenders` already parsed.
    fn with_contenders(
        parts: StatsScanParts,
        contenders: Vec<Contender>,
        columns: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Self> {
        if let Some(scan) = columns.iter().find(|c| c.schema().fields().len() != 1) {
            return internal_err!(
                "{NAME}: a column scan yields {} columns, not one",
                scan.schema().fields().len()
            );
        }
        let schema = match &parts.projection {
            Some(indices) => Arc::new(SCHEMA.project(indices)?),
            None => Arc::clone(&SCHEMA),
        };
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema),
            Partitioning::UnknownPartitioning(1),
            EmissionType::Incremental,
            Boundedness::Bounded,
        );
        Ok(StatsExec {
            parts,
            contenders,
            columns,
            properties: Arc::new(properties),
        })
    }

    /// What it measures besides its children.
    pub fn parts(&self) -> &StatsScanParts {
        &self.parts
    }
}

impl DisplayAs for StatsExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let codecs = &self.parts.contenders;
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "StatsExec: table={}, columns={}, codecs=[{}]",
                self.parts.table,
                self.columns.len(),
                codecs.join(", ")
            ),
            DisplayFormatType::TreeRender => write!(f, "codecs={}", codecs.join(", ")),
        }
    }
}

impl ExecutionPlan for StatsExec {
    fn name(&self) -> &str {
        "StatsExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        self.columns.iter().collect()
    }

    /// A column's values are measured in the table's order: the optimizer must not
    /// repartition the column scans (round robin would interleave their rows).
    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false; self.columns.len()]
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
        Ok(Arc::new(StatsExec::with_contenders(
            self.parts.clone(),
            self.contenders.clone(),
            children,
        )?))
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
        ctx: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        if partition != 0 {
            return internal_err!(
                "StatsExec has one partition, partition {partition} was asked for"
            );
        }
        let StatsScanParts {
            table,
            backend,
            projection,
            ..
        } = self.parts.clone();
        let contenders = self.contenders.clone();
        let batches = futures::stream::iter(self.columns.clone()).then(move |scan| {
            let (ctx, table, contenders, projection) = (
                Arc::clone(&ctx),
                table.clone(),
                contenders.clone(),
                projection.clone(),
            );
            async move {
                let field = scan.schema().field(0).clone();
                // In partition order, so a column's values keep the table's order.
                let batches = collect_partitioned(scan, ctx).await?;
                let arrays: Vec<ArrayRef> = batches
                    .iter()
                    .flatten()
                    .map(|b| Arc::clone(b.column(0)))
                    .collect();
                let measure = move || {
                    let rows = measure_column(
                        &table,
                        field.name(),
                        field.data_type(),
                        &arrays,
                        &contenders,
                        backend,
                    )?;
                    match &projection {
                        Some(indices) => Ok(rows.project(indices)?),
                        None => Ok(rows),
                    }
                };
                tokio::task::spawn_blocking(measure)
                    .await
                    .map_err(|e| DataFusionError::External(Box::new(e)))?
            }
        });
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema(),
            batches,
        )))
    }
}

/// Measures one column (its batches' arrays) with every contender: one batch of rows.
fn measure_column(
    table: &str,
    column: &str,
    data_type: &DataType,
    arrays: &[ArrayRef],
    contenders: &[Contender],
    backend: Backend,
) -> Result<RecordBatch> {
    let array = match arrays {
        [] => new_empty_array(data_type),
        [one] => Arc::clone(one),
        many => concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
    };
    // Views of batches sliced from one buffer, concatenated, count that buffer once per
    // batch in `raw_bytes`: compact them as a freshly built column would be.
    let array: ArrayRef = match array.data_type() {
        DataType::Utf8View => Arc::new(array.as_string_view().gc()),
        DataType::BinaryView => Arc::new(array.as_binary_view().gc()),
        _ => array,
    };
    let placement = placement(backend)?;
    let rows = contenders
        .iter()
        .map(|contender| columns::measure_column(table, column, &array, contender, 1, placement))
        .collect::<crate::Result<Vec<_>>>()
        .map_err(DataFusionError::from)?;
    rows_batch(&rows)
}

/// `rows` as a batch of [`SCHEMA`].
fn rows_batch(rows: &[columns::Row]) -> Result<RecordBatch> {
    let text = |f: fn(&columns::Row) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    let count = |f: fn(&columns::Row) -> u64| -> ArrayRef {
        Arc::new(UInt64Array::from_iter_values(rows.iter().map(f)))
    };
    let real = |f: fn(&columns::Row) -> f64| -> ArrayRef {
        Arc::new(Float64Array::from_iter_values(rows.iter().map(f)))
    };
    let columns = vec![
        text(|r| &r.table),
        text(|r| &r.column),
        text(|r| &r.arrow_type),
        count(|r| r.rows),
        count(|r| r.raw_bytes),
        text(|r| &r.codec),
        text(|r| &r.backend),
        count(|r| r.compressed_bytes),
        real(|r| r.ratio),
        real(|r| r.compress_gbps),
        real(|r| r.decompress_gbps),
    ];
    Ok(RecordBatch::try_new(Arc::clone(&SCHEMA), columns)?)
}

/// The parts of a `colzip_stats(…)` table: what a plan codec carries to another process
/// ([`StatsTableParts::of_table`]) and rebuilds there ([`StatsTableParts::table`]).
/// (Its scan travels as a [`StatsExec`].)
#[derive(Clone, Debug)]
pub struct StatsTableParts {
    /// The table as the call named it.
    pub name: String,
    /// Catalog, schema and table of it.
    pub reference: [String; 3],
    /// The codecs and baselines measured, as in [`StatsScanParts::contenders`].
    pub contenders: Vec<String>,
    pub backend: Backend,
}

impl StatsTableParts {
    /// The parts of `provider` when it is what `colzip_stats(…)` returned.
    pub fn of_table(provider: &dyn TableProvider) -> Option<StatsTableParts> {
        let table = (provider as &dyn std::any::Any).downcast_ref::<StatsTable>()?;
        let r = &table.reference;
        Some(StatsTableParts {
            name: table.name.clone(),
            reference: [
                r.catalog.to_string(),
                r.schema.to_string(),
                r.table.to_string(),
            ],
            contenders: table.contenders.iter().map(Contender::to_string).collect(),
            backend: table.backend,
        })
    }

    /// The table function's result made of these parts; an error names a contender that
    /// is not a codec or baseline.
    pub fn table(self) -> Result<Arc<dyn TableProvider>> {
        let contenders = parse_each(&self.contenders)?;
        let [catalog, schema, table] = self.reference;
        Ok(Arc::new(StatsTable {
            name: self.name,
            reference: ResolvedTableReference {
                catalog: catalog.into(),
                schema: schema.into(),
                table: table.into(),
            },
            contenders,
            backend: self.backend,
        }))
    }
}

/// Each of `texts` as a contender.
fn parse_each(texts: &[String]) -> Result<Vec<Contender>> {
    texts
        .iter()
        .map(|text| {
            text.parse().map_err(|e| {
                DataFusionError::Plan(format!("{NAME}: '{text}' is no codec or baseline: {e}"))
            })
        })
        .collect()
}
