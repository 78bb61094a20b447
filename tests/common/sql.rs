//! What the SQL test binaries share: a query's printed result with its plan, and the
//! compressed scan in a plan.
#![allow(dead_code)]

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::util::pretty::pretty_format_batches;
use colzip::datafusion::table::CompressedScanExec;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::SessionContext;

/// The first compressed scan in `plan`, depth first.
pub fn find_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&CompressedScanExec> {
    if let Some(scan) = plan.downcast_ref::<CompressedScanExec>() {
        return Some(scan);
    }
    plan.children().into_iter().find_map(find_scan)
}

/// The result of `sql` as text and its plan (its metrics filled in), or DataFusion's
/// error.
pub async fn try_run(
    ctx: &SessionContext,
    sql: &str,
) -> datafusion::error::Result<(String, Arc<dyn ExecutionPlan>)> {
    let plan = ctx.sql(sql).await?.create_physical_plan().await?;
    let batches: Vec<RecordBatch> = collect(plan.clone(), ctx.task_ctx()).await?;
    Ok((pretty_format_batches(&batches)?.to_string(), plan))
}
