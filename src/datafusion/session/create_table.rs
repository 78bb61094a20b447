//! `CREATE TABLE` in a session whose tables are held compressed (see [`set_table_kind`]).

use std::collections::HashSet;
use std::sync::Arc;

use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{CreateMemoryTable, DdlStatement, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;

use super::TableKind;
use crate::datafusion::table::{CompressOptions, CompressedTable};
use crate::{Error, Result};

/// Puts `ctx` in compressed mode (or back in plain mode): `CREATE TABLE … [AS query]`
/// run through [`sql`] or [`execute_logical_plan`] (as the `colzip sql` runner does) then
/// makes a [`CompressedTable`] compressed with `kind`'s [`CompressOptions`], following
/// DataFusion's rules for `IF NOT EXISTS`, `OR REPLACE` and an existing table; `CREATE
/// TABLE t (col type, …)` makes an empty one that `INSERT INTO` fills. Every other
/// statement, and every statement of a plain session, is DataFusion's. The kind is kept
/// in the session's config, so clones of `ctx` share it.
///
/// DataFusion's own `SessionContext::sql` still makes a `MemTable`: it runs `CREATE
/// TABLE` itself, with no hook for another kind of table.
///
/// ```
/// use colzip::datafusion::session::{self, TableKind};
/// use colzip::datafusion::table::{CompressOptions, CompressedTable};
///
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let ctx = session::context()?;
/// session::set_table_kind(&ctx, TableKind::Compressed(CompressOptions::default()));
/// session::sql(&ctx, "CREATE TABLE t AS SELECT value AS id, value % 3 AS tag FROM generate_series(1, 10000)").await?;
/// session::sql(&ctx, "INSERT INTO t VALUES (0, 0)").await?.collect().await?;
///
/// let provider = ctx.table_provider("t").await?;
/// let table = provider.downcast_ref::<CompressedTable>().expect("a compressed table");
/// assert_eq!(table.num_rows(), 10_001);
/// assert!(table.compressed_bytes() < table.plain_bytes());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn set_table_kind(ctx: &SessionContext, kind: TableKind) {
    ctx.state_ref()
        .write()
        .config_mut()
        .set_extension(Arc::new(kind));
}

/// How `CREATE TABLE` in `ctx` holds its tables: [`TableKind::Plain`] unless
/// [`set_table_kind`] said otherwise.
pub fn table_kind(ctx: &SessionContext) -> TableKind {
    ctx.state()
        .config()
        .get_extension::<TableKind>()
        .map(|kind| kind.as_ref().clone())
        .unwrap_or_default()
}

/// Plans and runs one statement like `SessionContext::sql`, but with `CREATE TABLE`
/// holding its table as the session's [`table_kind`] says. Like DataFusion, DDL runs
/// here; a query or `INSERT` runs when the returned frame is collected.
pub async fn sql(ctx: &SessionContext, sql: &str) -> Result<DataFrame> {
    let plan = ctx
        .state()
        .create_logical_plan(sql)
        .await
        .map_err(Error::from)?;
    execute_logical_plan(ctx, plan).await
}

/// Runs `plan` like `SessionContext::execute_logical_plan`, but with `CREATE TABLE`
/// holding its table as the session's [`table_kind`] says.
pub async fn execute_logical_plan(ctx: &SessionContext, plan: LogicalPlan) -> Result<DataFrame> {
    super::guards::check(&plan)?;
    match (plan, table_kind(ctx)) {
        (
            LogicalPlan::Ddl(DdlStatement::CreateMemoryTable(create)),
            TableKind::Compressed(options),
        ) => create_compressed_table(ctx, create, &options).await,
        (plan, _) => ctx.execute_logical_plan(plan).await.map_err(Error::from),
    }
}

/// `CREATE TABLE` making a [`CompressedTable`], with the outcomes DataFusion gives a
/// `MemTable`: an existing table is kept with `IF NOT EXISTS`, replaced with
/// `OR REPLACE`, and an error otherwise.
async fn create_compressed_table(
    ctx: &SessionContext,
    create: CreateMemoryTable,
    options: &CompressOptions,
) -> Result<DataFrame> {
    let CreateMemoryTable {
        name,
        input,
        if_not_exists,
        or_replace,
        constraints,
        column_defaults,
        temporary,
    } = create;
    if temporary {
        return Err(Error::Unsupported(
            "temporary tables are not supported".into(),
        ));
    }
    // A compressed table has neither (its provider answers `None` for both), and
    // dropping them silently would change what later statements do.
    if !constraints.is_empty() {
        return Err(Error::Unsupported(format!(
            "compressed table '{name}': constraints (PRIMARY KEY, UNIQUE) are not supported"
        )));
    }
    if !column_defaults.is_empty() {
        return Err(Error::Unsupported(format!(
            "compressed table '{name}': column defaults are not supported"
        )));
    }
    let exists = ctx.table(name.clone()).await.is_ok();
    match (if_not_exists, or_replace, exists) {
        (true, true, true) => {
            return Err(Error::format(
                "'IF NOT EXISTS' cannot coexist with 'REPLACE'",
            ));
        }
        (true, false, true) => return empty_result(ctx),
        (false, false, true) => {
            return Err(Error::format(format!("table '{name}' already exists")));
        }
        _ => {}
    }
    unique_column_names(&input)?;
    let frame = DataFrame::new(ctx.state(), Arc::unwrap_or_clone(input));
    // Per-column codecs are given for the whole session: each table takes those of its
    // own columns (as the TPC-H tables do).
    let mut options = options.clone();
    options
        .columns
        .retain(|column, _| frame.schema().field_with_unqualified_name(column).is_ok());
    // The query runs before the old table goes, so a failing one leaves it in place.
    let table = CompressedTable::from_dataframe(frame, &options).await?;
    if exists {
        ctx.deregister_table(name.clone()).map_err(Error::from)?;
    }
    ctx.register_table(name, Arc::new(table))
        .map_err(Error::from)?;
    empty_result(ctx)
}

/// Column names must be unique once the query's qualifiers are dropped (`SELECT a.id,
/// b.id …` cannot make a table).
fn unique_column_names(input: &LogicalPlan) -> Result<()> {
    let mut seen = HashSet::new();
    for field in input.schema().fields() {
        if !seen.insert(field.name().as_str()) {
            return Err(Error::format(format!(
                "the new table would have two columns named '{}'",
                field.name()
            )));
        }
    }
    Ok(())
}

/// What DataFusion returns for DDL: a frame with no columns and no rows.
fn empty_result(ctx: &SessionContext) -> Result<DataFrame> {
    let plan = LogicalPlanBuilder::empty(false)
        .build()
        .map_err(Error::from)?;
    Ok(DataFrame::new(ctx.state(), plan))
}
