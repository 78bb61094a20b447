//! SQL text run statement by statement in a session: each statement parsed, planned
//! (`CREATE TABLE` making compressed tables in a session set to compressed mode, see
//! [`set_table_kind`](super::set_table_kind); the rest is DataFusion's) and its result
//! printed as a table, JSON or CSV as its batches arrive (in memory that does not grow
//! with the result: see `stream` and `table`). `colzip sql`'s shell runs its statements
//! through these.
//!
//! ```
//! use colzip::datafusion::session::{self, statements::{self, Format}};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let ctx = session::context()?;
//! let mut out = Vec::new();
//! statements::run_sql(&ctx, "CREATE TABLE t AS VALUES (1, 'a'), (2, 'b'); SELECT count(*) AS n FROM t", Format::Json, &mut out).await?;
//! assert_eq!(String::from_utf8(out).unwrap(), "[{\"n\":2}]\n");
//! # Ok::<(), colzip::Error>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod cells;
mod stream;
mod table;
mod yields;

use std::io::Write;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::arrow::json;
use datafusion::physical_plan::SendableRecordBatchStream;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::{DFParserBuilder, Statement};
use datafusion::sql::sqlparser::dialect::dialect_from_str;

use crate::{Error, Result};

/// How results are printed: a boxed text table (`NULL` for nulls), one JSON array of row
/// objects per statement on one line, or CSV with a header line (statements separated
/// by an empty line). Statements without columns (`CREATE TABLE`) print nothing.
pub use crate::reporting::Format;

/// Parses `sql` into its statements (a syntax error anywhere runs none of them).
pub fn parse(ctx: &SessionContext, sql: &str) -> Result<Vec<Statement>> {
    let state = ctx.state();
    let options = state.config().options();
    let dialect_name = &options.sql_parser.dialect;
    let dialect = dialect_from_str(dialect_name)
        .ok_or_else(|| Error::format(format!("unsupported SQL dialect '{dialect_name}'")))?;
    let statements = DFParserBuilder::new(sql)
        .with_dialect(dialect.as_ref())
        .with_recursion_limit(options.sql_parser.recursion_limit.get())
        .build()
        .and_then(|mut parser| parser.parse_statements())
        .map_err(Error::from)?;
    Ok(statements.into_iter().collect())
}

/// Runs one parsed statement and returns its result, collected; [`execute_stream`] gives
/// it a batch at a time.
pub async fn execute(
    ctx: &SessionContext,
    statement: Statement,
) -> Result<(SchemaRef, Vec<RecordBatch>)> {
    use futures::TryStreamExt;
    let (schema, stream) = execute_stream(ctx, statement).await?;
    let batches = stream.try_collect().await.map_err(Error::from)?;
    Ok((schema, batches))
}

/// Plans one parsed statement and starts it; its result comes as the stream's batches
/// are polled, and dropping the stream stops the work. `CREATE TABLE` holds its table as
/// the session's [`table_kind`](super::table_kind) says. A statement larger than the
/// session's [`SqlLimits`](super::sql_limits::SqlLimits) is refused before planning
/// (checked here, not at parsing, so that a `SET` before it in the same text applies).
pub async fn execute_stream(
    ctx: &SessionContext,
    statement: Statement,
) -> Result<(SchemaRef, SendableRecordBatchStream)> {
    super::sql_limits::check(&statement, &super::sql_limits::of(ctx))?;
    let plan = ctx
        .state()
        .statement_to_plan(statement)
        .await
        .map_err(|e| name_missing_file(ctx, e))?;
    let frame = super::execute_logical_plan(ctx, plan).await?;
    let schema: SchemaRef = std::sync::Arc::new(frame.schema().as_arrow().clone());
    let task = std::sync::Arc::new(frame.task_ctx());
    let plan = frame.create_physical_plan().await.map_err(Error::from)?;
    let plan = yields::above_joins(plan)?;
    let stream = datafusion::physical_plan::execute_stream(plan, task).map_err(Error::from)?;
    Ok((schema, stream))
}

/// DataFusion's error for a table it did not find, when the name has the extension of a
/// file tables are made of (`'nope.parquet'`) and nothing is at that path: said as the
/// missing file it is, not as "table 'datafusion.public.nope.parquet' not found".
fn name_missing_file(ctx: &SessionContext, error: datafusion::error::DataFusionError) -> Error {
    let missing = match error.find_root() {
        datafusion::error::DataFusionError::Plan(message) => {
            let options = ctx.state().config().options().catalog.clone();
            let prefix = format!(
                "table '{}.{}.",
                options.default_catalog, options.default_schema
            );
            message
                .strip_prefix(&prefix)
                .and_then(|m| m.strip_suffix("' not found"))
                .map(std::path::PathBuf::from)
                .filter(|path| {
                    let table_file = path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
                        matches!(
                            e.to_ascii_lowercase().as_str(),
                            "parquet"
                                | "csv"
                                | "tsv"
                                | "json"
                                | "jsonl"
                                | "ndjson"
                                | "arrow"
                                | "avro"
                                | "czip"
                        )
                    });
                    table_file && path.symlink_metadata().is_err()
                })
        }
        _ => None,
    };
    match missing {
        Some(path) => Error::format(format!("{}: no such file or directory", path.display())),
        None => Error::from(error),
    }
}

/// Runs the statements of `sql` in order, printing each result to `out` (CSV results
/// separated by an empty line); stops at the first error. Returns the number of
/// statements run. A panic (a bug) comes back as [`Error::Panic`], so that one statement
/// cannot end the shell.
pub async fn run_sql(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    out: &mut dyn Write,
) -> Result<usize> {
    Ok(run_sql_rows(ctx, sql, format, None, out).await?.len())
}

/// [`run_sql`], printing at most `max_rows` rows of each table (all rows in JSON and CSV,
/// which programs read); returns each statement's row count (`None` for statements
/// without columns, such as `CREATE TABLE`).
pub async fn run_sql_rows(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    max_rows: Option<usize>,
    out: &mut dyn Write,
) -> Result<Vec<Option<usize>>> {
    run_sql_timed(ctx, sql, format, max_rows, out, None).await
}

/// [`run_sql_rows`], writing to `timings` (when given) one line per statement: its row
/// count and the seconds it took, as `N rows in S s` (`done in S s` without columns).
pub async fn run_sql_timed(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    max_rows: Option<usize>,
    out: &mut dyn Write,
    timings: Option<&mut dyn Write>,
) -> Result<Vec<Option<usize>>> {
    use futures::FutureExt;
    std::panic::AssertUnwindSafe(run_sql_unguarded(ctx, sql, format, max_rows, out, timings))
        .catch_unwind()
        .await
        .unwrap_or_else(|payload| Err(crate::panics::error(payload)))
}

/// The line [`run_sql_timed`] writes for a statement of `rows` rows that took `seconds`.
pub fn timing_line(rows: Option<usize>, seconds: f64) -> String {
    match rows {
        Some(1) => format!("1 row in {seconds:.3} s"),
        Some(n) => format!("{n} rows in {seconds:.3} s"),
        None => format!("done in {seconds:.3} s"),
    }
}

/// [`run_sql_rows`] without the panic guard.
async fn run_sql_unguarded(
    ctx: &SessionContext,
    sql: &str,
    format: Format,
    max_rows: Option<usize>,
    out: &mut dyn Write,
    mut timings: Option<&mut dyn Write>,
) -> Result<Vec<Option<usize>>> {
    let statements = parse(ctx, sql)?;
    let mut rows = Vec::with_capacity(statements.len());
    let mut printed_before = false;
    for statement in statements {
        let started = std::time::Instant::now();
        let (schema, batches) = execute_stream(ctx, statement).await?;
        let statement_rows = if schema.fields().is_empty() {
            // DDL prints nothing, and is no result for CSV to separate.
            stream::drain(batches).await?;
            None
        } else {
            if format == Format::Csv && printed_before {
                writeln!(out)?;
            }
            printed_before = true;
            Some(stream::print(&schema, batches, format, max_rows, out).await?)
        };
        rows.push(statement_rows);
        if let Some(timings) = timings.as_deref_mut() {
            let line = timing_line(statement_rows, started.elapsed().as_secs_f64());
            writeln!(timings, "{line}")?;
        }
    }
    Ok(rows)
}

/// Formats a result. Statements without columns (DDL such as `CREATE TABLE`) print
/// nothing, in every format.
pub fn render(schema: &SchemaRef, batches: &[RecordBatch], format: Format) -> Result<String> {
    match format {
        Format::Table => {
            if schema.fields().is_empty() {
                return Ok(String::new());
            }
            if batches.iter().all(|b| b.num_rows() == 0) {
                // The header alone, from the schema (no batch may be there to give it).
                let table = arrow::util::pretty::pretty_format_batches_with_schema(
                    schema.clone(),
                    batches,
                )?;
                return Ok(format!("{table}\n"));
            }
            let options = cells::format_options();
            let batches = cells::clip_wide_cells(batches)?;
            let table =
                arrow::util::pretty::pretty_format_batches_with_options(&batches, &options)?;
            Ok(format!("{table}\n"))
        }
        Format::Json => {
            if schema.fields().is_empty() {
                return Ok(String::new());
            }
            // Every key in every object: a NULL is `null`, not a missing key.
            let mut writer = json::WriterBuilder::new()
                .with_explicit_nulls(true)
                .build::<_, json::writer::JsonArray>(Vec::new());
            for batch in batches {
                writer.write(batch)?;
            }
            writer.finish()?;
            let mut text = String::from_utf8(writer.into_inner())
                .map_err(|e| Error::format(format!("JSON output is not UTF-8: {e}")))?;
            if text.is_empty() {
                // The writer writes nothing when it was given no rows.
                text.push_str("[]");
            }
            text.push('\n');
            Ok(text)
        }
        Format::Csv => {
            if schema.fields().is_empty() {
                return Ok(String::new());
            }
            let mut bytes = Vec::new();
            if batches.is_empty() {
                bytes = stream::csv_bytes(&RecordBatch::new_empty(schema.clone()), true)?;
            }
            for (i, batch) in batches.iter().enumerate() {
                bytes.extend(stream::csv_bytes(batch, i == 0)?);
            }
            String::from_utf8(bytes)
                .map_err(|e| Error::format(format!("CSV output is not UTF-8: {e}")))
        }
    }
}
