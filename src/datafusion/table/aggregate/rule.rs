//! The physical optimizer rule that puts a [`FixedPointAggregateExec`] in place of a
//! partial `AggregateExec` (and the `ProjectionExec` under it, if any) over a
//! [`CompressedScanExec`], when every aggregate is one it evaluates.

use std::sync::Arc;

use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TransformedResult, TreeNode};
use datafusion::error::Result;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::aggregate::AggregateFunctionExpr;
use datafusion::physical_expr::expressions::{Column, Literal};
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::aggregates::{AggregateExec, AggregateMode};
use datafusion::physical_plan::projection::{ProjectionExec, ProjectionExpr};
use datafusion::physical_plan::{ExecutionPlan, InputOrderMode};

use super::exec::FixedPointAggregateExec;
use super::expr::{FixedPointExpr, ValueType};
use super::states::Function;
use crate::datafusion::table::CompressedScanExec;

/// Replaces partial aggregations over compressed scans by [`FixedPointAggregateExec`]:
/// `sum` and `avg` of decimal arithmetic (`+`, `-`, `*` of decimal columns and literals),
/// `sum` of integer columns, and `count`, grouped by any columns or none. Any other
/// aggregate, a `FILTER`, `DISTINCT` or `ORDER BY` inside one, grouping sets, or input
/// that arrives sorted leaves the plan as it is.
#[derive(Debug, Default)]
pub struct AggregateOverCompressedScan;

impl PhysicalOptimizerRule for AggregateOverCompressedScan {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _config: &ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        plan.transform_up(|node| {
            Ok(match fixed_point_aggregate(&node)? {
                Some(replaced) => Transformed::yes(replaced),
                None => Transformed::no(node),
            })
        })
        .data()
    }

    fn name(&self) -> &str {
        "aggregate_over_compressed_scan"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// The replacement of `plan`, when it is a partial aggregation this rule takes.
fn fixed_point_aggregate(plan: &Arc<dyn ExecutionPlan>) -> Result<Option<Arc<dyn ExecutionPlan>>> {
    let Some(aggregate) = plan.downcast_ref::<AggregateExec>() else {
        return Ok(None);
    };
    // Without aggregates it is a DISTINCT's grouping, which DataFusion's own partial
    // aggregation passes on ungrouped when nearly every row is distinct.
    if *aggregate.mode() != AggregateMode::Partial
        || aggregate.aggr_expr().is_empty()
        || !aggregate.group_expr().is_single()
        || aggregate.limit_options().is_some()
        || !aggregate.dynamic_expressions_produced().is_empty()
        || *aggregate.input_order_mode() != InputOrderMode::Linear
        || aggregate.filter_expr().iter().any(Option::is_some)
    {
        return Ok(None);
    }
    let input = aggregate.input();
    let (scan, projection): (&Arc<dyn ExecutionPlan>, &[ProjectionExpr]) =
        match input.downcast_ref::<ProjectionExec>() {
            Some(projection) => (projection.input(), projection.expr()),
            None => (input, &[]),
        };
    if scan.downcast_ref::<CompressedScanExec>().is_none() {
        return Ok(None);
    }
    let through = |expr: &Arc<dyn PhysicalExpr>| -> Result<Arc<dyn PhysicalExpr>> {
        if projection.is_empty() {
            return Ok(expr.clone());
        }
        through_projection(expr, projection)
    };
    let schema = scan.schema();
    let mut functions = Vec::new();
    for function in aggregate.aggr_expr() {
        let arguments = function
            .expressions()
            .iter()
            .map(through)
            .collect::<Result<Vec<_>>>()?;
        let Some(function_here) = function_of(function, &arguments, &schema) else {
            return Ok(None);
        };
        functions.push((function_here, function.name().to_string()));
    }
    let groups = aggregate
        .group_expr()
        .expr()
        .iter()
        .map(|(expr, name)| Ok((through(expr)?, name.clone())))
        .collect::<Result<Vec<_>>>()?;
    let replaced =
        FixedPointAggregateExec::try_new(scan.clone(), groups, functions, aggregate.schema())?;
    Ok(replaced.map(|exec| Arc::new(exec) as Arc<dyn ExecutionPlan>))
}

/// `expr` over the projection's output as an expression over its input.
fn through_projection(
    expr: &Arc<dyn PhysicalExpr>,
    projection: &[ProjectionExpr],
) -> Result<Arc<dyn PhysicalExpr>> {
    // Bottom-up, so a column replaced by its projected expression is not visited again
    // (that expression's columns are the input's).
    expr.clone()
        .transform_up(|node| {
            Ok(match node.downcast_ref::<Column>() {
                Some(column) => match projection.get(column.index()) {
                    Some(projected) => Transformed::yes(projected.expr.clone()),
                    None => Transformed::no(node),
                },
                None => Transformed::no(node),
            })
        })
        .data()
}

/// The aggregate as evaluated here, when it is one of the supported forms.
fn function_of(
    function: &AggregateFunctionExpr,
    arguments: &[Arc<dyn PhysicalExpr>],
    schema: &arrow::datatypes::Schema,
) -> Option<Function> {
    if function.is_distinct() || !function.order_bys().is_empty() || arguments.len() != 1 {
        return None;
    }
    let argument = &arguments[0];
    match function.fun().name() {
        "count" => {
            if let Some(literal) = argument.downcast_ref::<Literal>() {
                return (!literal.value().is_null()).then_some(Function::Count(None));
            }
            let (expr, _) = FixedPointExpr::compile(argument, schema)?;
            Some(Function::Count(Some(expr)))
        }
        "sum" => match FixedPointExpr::compile(argument, schema)? {
            (expr, ValueType::Decimal(..) | ValueType::Integer(64)) => Some(Function::Sum(expr)),
            _ => None,
        },
        "avg" => match FixedPointExpr::compile(argument, schema)? {
            (expr, ValueType::Decimal(..)) => Some(Function::Avg(expr)),
            _ => None,
        },
        _ => None,
    }
}
