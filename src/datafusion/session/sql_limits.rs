//! How large a parsed SQL statement colzip plans: DataFusion plans long operator chains
//! and long `UNION` chains in time quadratic in their length, so a statement past these
//! limits is refused with a one-line error before planning. The limits are session
//! options, `colzip.max_expression_depth`, `colzip.max_nesting` and
//! `colzip.max_set_operations`, which `SET` changes:
//!
//! ```
//! use colzip::datafusion::session::{self, statements::{self, Format}};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let ctx = session::context()?;
//! let sum = vec!["1"; 50].join("+");
//! let mut out = Vec::new();
//! statements::run_sql(&ctx, "SET colzip.max_expression_depth = 10", Format::Csv, &mut out).await?;
//! let err = statements::run_sql(&ctx, &format!("SELECT {sum}"), Format::Csv, &mut out).await;
//! assert!(err.unwrap_err().to_string().contains("nests 50 levels deep; the limit is 10"));
//! # Ok::<(), colzip::Error>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::any::Any;
use std::ops::ControlFlow;

use datafusion::common::DataFusionError;
use datafusion::common::config::{ConfigEntry, ConfigExtension, ExtensionOptions};
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{CopyToSource, Statement};
use datafusion::sql::sqlparser::ast::{Expr, Query, SetExpr, Visit, Visitor};

use crate::limits::{MOST_EXPRESSION_DEPTH, MOST_NESTING, MOST_SET_OPERATIONS};
use crate::{Error, Result};

/// The largest statement colzip plans (the `colzip.*` session options).
///
/// Written out rather than with DataFusion's `extensions_options!`, whose entries leave out
/// the `colzip.` prefix: `SHOW colzip.max_expression_depth` would then be refused and
/// `information_schema.df_settings` list the bare names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SqlLimits {
    /// The deepest a SQL expression may nest: a chain `a + b + …` or `x OR y OR …`
    /// nests one level a term. Planning time grows with the square of the depth.
    pub max_expression_depth: usize,
    /// The most nesting a statement holds, summed over its expressions: each expression
    /// counts the expressions open around it (a chain of `n` terms about `n²`). Planning
    /// time grows with this sum.
    pub max_nesting: usize,
    /// The most set operations (UNION, INTERSECT, EXCEPT) in a statement. Planning
    /// time grows with the square of their number.
    pub max_set_operations: usize,
}

impl Default for SqlLimits {
    fn default() -> Self {
        SqlLimits {
            max_expression_depth: MOST_EXPRESSION_DEPTH,
            max_nesting: MOST_NESTING,
            max_set_operations: MOST_SET_OPERATIONS,
        }
    }
}

impl ExtensionOptions for SqlLimits {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn as_any_mut(&mut self) -> &mut dyn Any {
        self
    }

    fn cloned(&self) -> Box<dyn ExtensionOptions> {
        Box::new(self.clone())
    }

    fn set(&mut self, key: &str, value: &str) -> datafusion::error::Result<()> {
        let field = match key {
            "max_expression_depth" => &mut self.max_expression_depth,
            "max_nesting" => &mut self.max_nesting,
            "max_set_operations" => &mut self.max_set_operations,
            _ => {
                return Err(DataFusionError::Configuration(format!(
                    "no option colzip.{key} (there are colzip.max_expression_depth, \
                     colzip.max_nesting and colzip.max_set_operations)"
                )));
            }
        };
        *field = value.trim().parse().map_err(|_| {
            DataFusionError::Configuration(format!(
                "colzip.{key} takes a count of 0 or more, not '{value}'"
            ))
        })?;
        Ok(())
    }

    fn entries(&self) -> Vec<ConfigEntry> {
        let entry = |key: &str, value: usize, description| ConfigEntry {
            key: format!("{}.{key}", Self::PREFIX),
            value: Some(value.to_string()),
            description,
        };
        vec![
            entry(
                "max_expression_depth",
                self.max_expression_depth,
                "The deepest a SQL expression may nest: a chain `a + b + …` or `x OR y OR …` \
                 nests one level a term. Planning time grows with the square of the depth.",
            ),
            entry(
                "max_nesting",
                self.max_nesting,
                "The most nesting a statement holds, summed over its expressions: each \
                 expression counts the expressions open around it (a chain of n terms about \
                 n²). Planning time grows with this sum.",
            ),
            entry(
                "max_set_operations",
                self.max_set_operations,
                "The most set operations (UNION, INTERSECT, EXCEPT) in a statement. Planning \
                 time grows with the square of their number.",
            ),
        ]
    }
}

impl ConfigExtension for SqlLimits {
    const PREFIX: &'static str = "colzip";
}

/// `ctx`'s limits: its `colzip.*` options, or the defaults in a session without them.
pub fn of(ctx: &SessionContext) -> SqlLimits {
    ctx.state()
        .config()
        .options()
        .extensions
        .get::<SqlLimits>()
        .cloned()
        .unwrap_or_default()
}

/// Refuses `statement` when an expression nests deeper, its expressions nest more in all,
/// or it holds more set operations, than `limits` allow.
pub fn check(statement: &Statement, limits: &SqlLimits) -> Result<()> {
    let mut size = Size::default();
    match statement {
        Statement::Statement(statement) => {
            let _ = statement.visit(&mut size);
        }
        Statement::CopyTo(copy) => {
            if let CopyToSource::Query(query) = &copy.source {
                let _ = query.visit(&mut size);
            }
        }
        Statement::Explain(explain) => return check(&explain.statement, limits),
        Statement::CreateExternalTable(_) | Statement::Reset(_) => {}
    }
    if size.deepest > limits.max_expression_depth {
        return Err(Error::format(format!(
            "an expression of this statement nests {} levels deep; the limit is {} \
             (SET colzip.max_expression_depth = N changes it; planning time grows with \
             the square of the depth; a chain `x = 1 OR x = 2 OR …` is `x IN (1, 2, …)`)",
            size.deepest, limits.max_expression_depth
        )));
    }
    if size.nesting > limits.max_nesting {
        return Err(Error::format(format!(
            "the expressions of this statement nest {} levels in all; the limit is {} \
             (each expression counts those around it; SET colzip.max_nesting = N changes \
             it; planning time grows with this sum)",
            size.nesting, limits.max_nesting
        )));
    }
    if size.set_operations > limits.max_set_operations {
        return Err(Error::format(format!(
            "this statement holds {} set operations (UNION, INTERSECT, EXCEPT); the limit \
             is {} (SET colzip.max_set_operations = N changes it; planning time grows with \
             the square of their number)",
            size.set_operations, limits.max_set_operations
        )));
    }
    Ok(())
}

/// What [`check`] measures, gathered in one walk of the statement.
#[derive(Default)]
struct Size {
    /// Expressions open around the one being visited.
    open: usize,
    /// The deepest `open` reached.
    deepest: usize,
    /// `open` summed over every expression.
    nesting: usize,
    /// Set operations in every query of the statement.
    set_operations: usize,
}

impl Visitor for Size {
    type Break = ();

    fn pre_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.open += 1;
        self.deepest = self.deepest.max(self.open);
        self.nesting = self.nesting.saturating_add(self.open);
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, _: &Expr) -> ControlFlow<()> {
        self.open -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_query(&mut self, query: &Query) -> ControlFlow<()> {
        self.set_operations += set_operations(&query.body);
        ControlFlow::Continue(())
    }
}

/// The set operations of one query's body, without those of the queries nested in it
/// (the visitor counts those at their own query), walked with a stack rather than by
/// recursion: the chain is as deep as it is long.
fn set_operations(body: &SetExpr) -> usize {
    let mut count = 0;
    let mut pending = vec![body];
    while let Some(set) = pending.pop() {
        if let SetExpr::SetOperation { left, right, .. } = set {
            count += 1;
            pending.push(left);
            pending.push(right);
        }
    }
    count
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::parser::DFParser;

    async fn rows(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<String> {
        let batches = ctx.sql(sql).await?.collect().await?;
        Ok(arrow::util::pretty::pretty_format_batches(&batches)?.to_string())
    }

    #[tokio::test]
    async fn the_options_show_and_list_under_their_names() {
        let ctx = crate::datafusion::session::context().unwrap();
        rows(&ctx, "SET colzip.max_expression_depth = 42")
            .await
            .unwrap();
        let shown = rows(&ctx, "SHOW colzip.max_expression_depth")
            .await
            .unwrap();
        assert!(
            shown.contains("colzip.max_expression_depth") && shown.contains("42"),
            "{shown}"
        );
        assert_eq!(of(&ctx).max_expression_depth, 42);
        let listed = rows(
            &ctx,
            "SELECT name, value FROM information_schema.df_settings \
             WHERE name LIKE 'colzip.%' ORDER BY name",
        )
        .await
        .unwrap();
        assert!(listed.contains("colzip.max_set_operations"), "{listed}");
        assert!(listed.contains("colzip.max_expression_depth"), "{listed}");
        assert!(listed.contains("colzip.max_nesting"), "{listed}");
        for bad in [
            "SET colzip.max_set_operations = -1",
            "SET colzip.max_set_operations = 'many'",
            "SET colzip.no_such_option = 1",
        ] {
            let err = rows(&ctx, bad).await.unwrap_err().to_string();
            assert!(err.contains("colzip."), "{bad}: {err}");
        }
        assert_eq!(of(&ctx).max_set_operations, MOST_SET_OPERATIONS);
    }

    fn parsed(sql: &str) -> Statement {
        DFParser::parse_sql(sql).unwrap().pop_front().unwrap()
    }

    #[test]
    fn depth_counts_one_level_a_term() {
        // `1+1+1+1`: three additions over the literals, four levels.
        let statement = parsed("SELECT 1+1+1+1");
        let mut limits = SqlLimits {
            max_expression_depth: 3,
            ..SqlLimits::default()
        };
        let err = check(&statement, &limits).unwrap_err().to_string();
        assert!(err.contains("nests 4 levels deep; the limit is 3"), "{err}");
        limits.max_expression_depth = 4;
        check(&statement, &limits).unwrap();
    }

    #[test]
    fn nesting_sums_the_depth_of_every_expression() {
        // `((1+1)+1)+1`: additions at depths 1, 2 and 3, literals at 4, 4, 3 and 2.
        let statement = parsed("SELECT 1+1+1+1");
        let mut limits = SqlLimits {
            max_nesting: 18,
            ..SqlLimits::default()
        };
        let err = check(&statement, &limits).unwrap_err().to_string();
        assert!(
            err.contains("nest 19 levels in all; the limit is 18"),
            "{err}"
        );
        limits.max_nesting = 19;
        check(&statement, &limits).unwrap();
        // Many expressions each within the depth limit: bounded as a whole.
        let sums = vec![vec!["1"; 100].join("+"); 30].join(", ");
        let statement = parsed(&format!("SELECT {sums}"));
        let limits = SqlLimits {
            max_expression_depth: 100,
            max_nesting: 200_000,
            ..SqlLimits::default()
        };
        let err = check(&statement, &limits).unwrap_err().to_string();
        assert!(err.contains("colzip.max_nesting"), "{err}");
    }

    #[test]
    fn set_operations_count_every_union_once() {
        let statement = parsed("SELECT 1 UNION ALL SELECT 2 UNION ALL (SELECT 3 UNION SELECT 4)");
        let mut limits = SqlLimits {
            max_set_operations: 2,
            ..SqlLimits::default()
        };
        let err = check(&statement, &limits).unwrap_err().to_string();
        assert!(err.contains("holds 3 set operations"), "{err}");
        limits.max_set_operations = 3;
        check(&statement, &limits).unwrap();
    }

    #[test]
    fn explain_is_measured_as_its_statement() {
        let sum = vec!["1"; 20].join("+");
        let statement = parsed(&format!("EXPLAIN SELECT {sum}"));
        let limits = SqlLimits {
            max_expression_depth: 19,
            ..SqlLimits::default()
        };
        let err = check(&statement, &limits).unwrap_err().to_string();
        assert!(
            err.contains("nests 20 levels deep; the limit is 19"),
            "{err}"
        );
    }
}
