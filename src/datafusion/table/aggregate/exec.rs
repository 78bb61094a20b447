//! The operator: a partial aggregation whose input is a compressed scan's batches, with
//! the projection between them folded into its arguments. It emits the partial
//! aggregation's own schema, so the plan above it (repartition, final aggregation) is
//! unchanged.

use std::fmt;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{FieldRef, Schema, SchemaRef};
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::EmitTo;
use datafusion::physical_expr::{EquivalenceProperties, PhysicalExpr};
use datafusion::physical_plan::aggregates::group_values::{GroupValues, new_group_values};
use datafusion::physical_plan::aggregates::order::GroupOrdering;
use datafusion::physical_plan::execution_plan::{Boundedness, EmissionType};
use datafusion::physical_plan::metrics::{
    BaselineMetrics, Count, ExecutionPlanMetricsSet, MetricBuilder, MetricsSet,
};
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::{
    DisplayAs, DisplayFormatType, ExecutionPlan, ExecutionPlanProperties, PlanProperties,
    SendableRecordBatchStream,
};
use futures::StreamExt;

use super::expr::{Evaluation, FixedPointExpr};
use super::states::{Accumulator, Function};

/// Groups held before their states are emitted and forgotten: a partial aggregation may
/// emit a group more than once (the final one merges them), so memory stays bounded
/// whatever the number of groups.
const MOST_GROUPS_HELD: usize = 1 << 20;

/// A partial aggregation over a compressed scan: `sum`, `avg` and `count` of decimal
/// arithmetic and integer columns, evaluated as unscaled integers and added into
/// per-group states, which it emits as DataFusion's partial aggregation does (its final
/// aggregation merges them). [`AggregateOverCompressedScan`](super::AggregateOverCompressedScan)
/// puts it in plans.
#[derive(Debug)]
pub struct FixedPointAggregateExec {
    input: Arc<dyn ExecutionPlan>,
    /// GROUP BY expressions over the input's schema, with their output names.
    groups: Vec<(Arc<dyn PhysicalExpr>, String)>,
    /// Each aggregate's function and state fields, and its name for display.
    aggregates: Vec<(Function, Vec<FieldRef>, String)>,
    schema: SchemaRef,
    properties: Arc<PlanProperties>,
    metrics: ExecutionPlanMetricsSet,
}

impl FixedPointAggregateExec {
    /// The operator over `input`, emitting `schema` (the partial aggregation's: the group
    /// columns, then each aggregate's state fields in order); `None` when a state there is
    /// not one computed here.
    pub(super) fn try_new(
        input: Arc<dyn ExecutionPlan>,
        groups: Vec<(Arc<dyn PhysicalExpr>, String)>,
        aggregates: Vec<(Function, String)>,
        schema: SchemaRef,
    ) -> Result<Option<Self>> {
        let mut fields = schema.fields().iter().skip(groups.len());
        let aggregates = aggregates
            .into_iter()
            .map(|(function, name)| {
                let count = match function {
                    Function::Avg(_) => 2,
                    Function::Sum(_) | Function::Count(_) => 1,
                };
                let states: Vec<FieldRef> = fields.by_ref().take(count).cloned().collect();
                Accumulator::new(function.clone(), states.clone())?;
                Some((function, states, name))
            })
            .collect::<Option<Vec<_>>>();
        let Some(aggregates) = aggregates else {
            return Ok(None);
        };
        if fields.next().is_some() {
            return Err(DataFusionError::Internal(
                "the aggregation's schema has more state fields than its aggregates".into(),
            ));
        }
        let properties = PlanProperties::new(
            EquivalenceProperties::new(schema.clone()),
            input.output_partitioning().clone(),
            EmissionType::Final,
            Boundedness::Bounded,
        );
        Ok(Some(FixedPointAggregateExec {
            input,
            groups,
            aggregates,
            schema,
            properties: Arc::new(properties),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }
}

impl DisplayAs for FixedPointAggregateExec {
    fn fmt_as(&self, t: DisplayFormatType, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let groups: Vec<&str> = self.groups.iter().map(|(_, n)| n.as_str()).collect();
        let aggregates: Vec<&str> = self.aggregates.iter().map(|(.., n)| n.as_str()).collect();
        match t {
            DisplayFormatType::Default | DisplayFormatType::Verbose => write!(
                f,
                "FixedPointAggregateExec: mode=Partial, gby=[{}], aggr=[{}]",
                groups.join(", "),
                aggregates.join(", ")
            ),
            DisplayFormatType::TreeRender => write!(f, "gby={}", groups.join(", ")),
        }
    }
}

impl ExecutionPlan for FixedPointAggregateExec {
    fn name(&self) -> &str {
        "FixedPointAggregateExec"
    }

    fn properties(&self) -> &Arc<PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn apply_expressions(
        &self,
        f: &mut dyn FnMut(&Arc<dyn PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        for (expr, _) in &self.groups {
            if f(expr)? == TreeNodeRecursion::Stop {
                return Ok(TreeNodeRecursion::Stop);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    }

    fn with_new_children(
        self: Arc<Self>,
        children: Vec<Arc<dyn ExecutionPlan>>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let [input] = <[_; 1]>::try_from(children).map_err(|_| {
            DataFusionError::Internal("FixedPointAggregateExec has one child".into())
        })?;
        Ok(Arc::new(FixedPointAggregateExec {
            input,
            groups: self.groups.clone(),
            aggregates: self.aggregates.clone(),
            schema: self.schema.clone(),
            properties: self.properties.clone(),
            metrics: ExecutionPlanMetricsSet::new(),
        }))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<TaskContext>,
    ) -> Result<SendableRecordBatchStream> {
        let input = self.input.execute(partition, context)?;
        let baseline = BaselineMetrics::new(&self.metrics, partition);
        let rows_in = MetricBuilder::new(&self.metrics).counter("input_rows", partition);
        let group_fields: Vec<FieldRef> = self.schema.fields()[..self.groups.len()].to_vec();
        let state = Box::new(Aggregation {
            groups: self.groups.clone(),
            group_values: if self.groups.is_empty() {
                None
            } else {
                Some(new_group_values(
                    Arc::new(Schema::new(group_fields)),
                    &GroupOrdering::None,
                )?)
            },
            group_ids: Vec::new(),
            accumulators: self
                .aggregates
                .iter()
                .map(|(function, fields, _)| {
                    Accumulator::new(function.clone(), fields.clone()).ok_or_else(|| {
                        DataFusionError::Internal(format!("no accumulator for {function:?}"))
                    })
                })
                .collect::<Result<_>>()?,
            arguments: self
                .aggregates
                .iter()
                .map(|(function, ..)| function.argument().cloned())
                .collect(),
            schema: self.schema.clone(),
            rows_in,
        });
        let output = futures::stream::unfold(
            (input, Some(state), baseline),
            |(mut input, state, baseline)| async move {
                let mut state = state?;
                loop {
                    match input.next().await {
                        Some(Ok(batch)) => {
                            let timer = baseline.elapsed_compute().timer();
                            let update = state.update(&batch);
                            timer.done();
                            match update {
                                Ok(Some(full)) => {
                                    record_batch(&baseline, &full);
                                    return Some((Ok(full), (input, Some(state), baseline)));
                                }
                                Ok(None) => {}
                                Err(e) => return Some((Err(e), (input, None, baseline))),
                            }
                        }
                        Some(Err(e)) => return Some((Err(e), (input, None, baseline))),
                        None => {
                            let timer = baseline.elapsed_compute().timer();
                            let last = state.emit();
                            timer.done();
                            if let Ok(batch) = &last {
                                record_batch(&baseline, batch);
                            }
                            return Some((last, (input, None, baseline)));
                        }
                    }
                }
            },
        );
        Ok(Box::pin(RecordBatchStreamAdapter::new(
            self.schema.clone(),
            output,
        )))
    }

    fn metrics(&self) -> Option<MetricsSet> {
        Some(self.metrics.clone_inner())
    }
}

/// One partition's running aggregation.
struct Aggregation {
    groups: Vec<(Arc<dyn PhysicalExpr>, String)>,
    /// The distinct group keys seen (`None` without GROUP BY: one group).
    group_values: Option<Box<dyn GroupValues>>,
    /// Each row's group, for the batch being added.
    group_ids: Vec<usize>,
    accumulators: Vec<Accumulator>,
    /// Each accumulator's argument (apart from them, so one batch's evaluation can keep
    /// their values while the accumulators change).
    arguments: Vec<Option<FixedPointExpr>>,
    schema: SchemaRef,
    rows_in: Count,
}

impl Aggregation {
    /// Adds `batch`'s rows; the states of every group so far when they reached
    /// [`MOST_GROUPS_HELD`].
    fn update(&mut self, batch: &RecordBatch) -> Result<Option<RecordBatch>> {
        self.rows_in.add(batch.num_rows());
        let group_count = match &mut self.group_values {
            None => {
                self.group_ids.clear();
                self.group_ids.resize(batch.num_rows(), 0);
                1
            }
            Some(values) => {
                let keys = self
                    .groups
                    .iter()
                    .map(|(expr, _)| expr.evaluate(batch)?.into_array(batch.num_rows()))
                    .collect::<Result<Vec<ArrayRef>>>()?;
                values.intern(&keys, &mut self.group_ids)?;
                values.len()
            }
        };
        let mut evaluation = Evaluation::new(batch);
        for (accumulator, argument) in self.accumulators.iter_mut().zip(&self.arguments) {
            let values = match argument {
                Some(argument) => Some(evaluation.values(argument)?),
                None => None,
            };
            accumulator.update(values.as_ref(), &self.group_ids, group_count);
        }
        if self.group_values.is_some() && group_count >= MOST_GROUPS_HELD {
            return self.emit().map(Some);
        }
        Ok(None)
    }

    /// The states of every group held, which are then forgotten. Without GROUP BY, one
    /// row even when no row came in, as DataFusion's partial aggregation emits.
    fn emit(&mut self) -> Result<RecordBatch> {
        let (mut columns, group_count) = match &mut self.group_values {
            None => (Vec::new(), 1),
            Some(values) => {
                let count = values.len();
                let keys = if count == 0 {
                    Vec::new()
                } else {
                    values.emit(EmitTo::All)?
                };
                (keys, count)
            }
        };
        if group_count == 0 {
            return Ok(RecordBatch::new_empty(self.schema.clone()));
        }
        for accumulator in &mut self.accumulators {
            columns.extend(accumulator.take_states(group_count, self.group_values.is_some())?);
        }
        let columns = columns
            .into_iter()
            .zip(self.schema.fields())
            .map(|(column, field)| {
                if column.data_type() == field.data_type() {
                    Ok(column)
                } else {
                    Ok(cast(&column, field.data_type())?)
                }
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// Counts an emitted batch and its rows in the operator's `output_rows` and
/// `output_batches`, as DataFusion's own operators do.
fn record_batch(baseline: &BaselineMetrics, batch: &RecordBatch) {
    baseline.record_output(batch.num_rows());
    baseline.output_batches().add(1);
}
