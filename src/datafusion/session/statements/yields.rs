//! Yield points above the operators that make many batches per input batch, so that a
//! cancelled statement stops within milliseconds.
//!
//! A statement is cancelled by dropping its stream, which aborts its tasks; a task stops
//! at its next yield to the runtime. DataFusion yields where batches enter a plan (its
//! scans and exchanges spend the runtime's task budget), but a join can make millions of
//! batches from one input batch (a cross join makes one per row of its build side for
//! each probe batch) without polling its inputs, so the operator above it loops for
//! seconds without yielding: Ctrl-C returned to the prompt while the join kept the
//! runtime's workers busy for seconds more, and the next statement competed with it.
//! A [`CooperativeExec`]
//! above each such operator spends the budget per batch it passes, and the task yields
//! every 128 batches.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::physical_plan::coop::CooperativeExec;
use datafusion::physical_plan::unnest::UnnestExec;

use crate::{Error, Result};

/// `plan` with a [`CooperativeExec`] above every operator of several inputs (the joins)
/// and every `UNNEST`.
pub(super) fn above_joins(plan: Arc<dyn ExecutionPlan>) -> Result<Arc<dyn ExecutionPlan>> {
    plan.transform_up(|node| {
        let many_per_input =
            node.children().len() > 1 || (node.as_ref() as &dyn std::any::Any).is::<UnnestExec>();
        Ok(if many_per_input {
            Transformed::yes(Arc::new(CooperativeExec::new(node)) as Arc<dyn ExecutionPlan>)
        } else {
            Transformed::no(node)
        })
    })
    .map(|t| t.data)
    .map_err(Error::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::prelude::SessionContext;

    #[tokio::test]
    async fn joins_get_a_yield_point_above_them_and_scans_none() {
        let ctx = SessionContext::new();
        let plan = ctx
            .sql(
                "SELECT count(*) FROM generate_series(1, 10) AS a \
                 CROSS JOIN generate_series(1, 10) AS b",
            )
            .await
            .unwrap()
            .create_physical_plan()
            .await
            .unwrap();
        let before = datafusion::physical_plan::displayable(plan.as_ref())
            .indent(false)
            .to_string();
        let plan = above_joins(plan).unwrap();
        let text = datafusion::physical_plan::displayable(plan.as_ref())
            .indent(false)
            .to_string();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let join = lines
            .iter()
            .position(|l| l.starts_with("CrossJoinExec"))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(lines[join - 1].starts_with("CooperativeExec"), "{text}");
        let added = lines.len() - before.lines().count();
        assert_eq!(added, 1, "{before}\n{text}");
    }
}
