//! Sessions for colzip: a DataFusion [`SessionContext`] with colzip's functions and file
//! format registered ([`context`]), optionally the eight TPC-H tables generated in-process
//! as plain `MemTable`s or as [`CompressedTable`](super::table::CompressedTable)s
//! ([`TpchSession`]), `CREATE TABLE` making compressed tables in a session put in
//! compressed mode ([`set_table_kind`], [`sql`]), and SQL text run statement by statement
//! with each result printed as a table, JSON or CSV ([`statements`]), which `colzip sql`'s
//! shell is built on.
//!
//! ```
//! use colzip::datafusion::session::{TableKind, TpchSession};
//!
//! # tokio::runtime::Runtime::new()?.block_on(async {
//! let session = TpchSession::new(0.001, TableKind::Compressed(Default::default()))?;
//! assert!(session.held_bytes() < session.plain_bytes());
//! let run = session.run_query(6).await?;
//! assert_eq!(run.rows(), 1);
//! # Ok::<(), colzip::Error>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod create_table;
mod guards;
pub mod sql_limits;
pub mod statements;
mod table_kind;
mod tpch;

use std::sync::Arc;

use datafusion::execution::SessionStateBuilder;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::table::AggregateOverCompressedScan;

use crate::Result;

pub use create_table::{execute_logical_plan, set_table_kind, sql, table_kind};
pub use table_kind::TableKind;
pub use tpch::{
    QueryRun, TableMemory, TpchEvent, TpchSession, register_generated, register_tables, run_query,
};

/// A session context with colzip's SQL functions and `COLZIP_PARQUET` format registered
/// (see [`register`](super::register)), the information schema on, so `SHOW TABLES`
/// and `DESCRIBE` work, and files queried by their path (`FROM 'dir/t.parquet'`: Parquet,
/// CSV, JSON, Arrow).
///
/// ```
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let ctx = colzip::datafusion::session::context()?;
/// let rows = ctx.sql("SHOW TABLES").await.unwrap().collect().await.unwrap();
/// assert!(!rows.is_empty());
/// # Ok::<(), colzip::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn context() -> Result<SessionContext> {
    context_with_config(SessionConfig::new())
}

/// [`context`] with DataFusion's options also read from `DATAFUSION_*` environment
/// variables, as `datafusion-cli` reads them (`DATAFUSION_EXECUTION_TARGET_PARTITIONS=8`,
/// say): the session `colzip queries` runs in. Variables that name no option are not
/// read; a value its option does not take is an error.
pub fn context_from_env() -> Result<SessionContext> {
    context_with_config(SessionConfig::from_env()?)
}

/// [`context`] with colzip's functions on `backend` (a GPU backend without a usable GPU is
/// an error here, before any statement) and DataFusion's options from the environment as
/// in [`context_from_env`]: the session of `colzip sql`.
pub fn context_on(backend: crate::gpu::Backend) -> Result<SessionContext> {
    let ctx = super::parquet_scan::enable_url_tables(with_colzip_rules(
        SessionConfig::from_env()?
            .with_information_schema(true)
            .with_option_extension(sql_limits::SqlLimits::default()),
    ));
    super::register_on(&ctx, backend)?;
    Ok(ctx)
}

/// [`context`] with `config` (the information schema is turned on).
pub fn context_with_config(config: SessionConfig) -> Result<SessionContext> {
    // Files are tables by their path too: SELECT * FROM 'data/t.parquet', Parquet read
    // by colzip's scan.
    let ctx = super::parquet_scan::enable_url_tables(with_colzip_rules(
        config
            .with_information_schema(true)
            .with_option_extension(sql_limits::SqlLimits::default()),
    ));
    super::register(&ctx)?;
    Ok(ctx)
}

/// A session with `config`, DataFusion's defaults, and colzip's physical optimizer rule
/// ([`AggregateOverCompressedScan`]) after DataFusion's own.
fn with_colzip_rules(config: SessionConfig) -> SessionContext {
    let state = SessionStateBuilder::new()
        .with_config(config)
        .with_default_features()
        .with_physical_optimizer_rule(Arc::new(AggregateOverCompressedScan))
        .build();
    SessionContext::new_with_state(state)
}
