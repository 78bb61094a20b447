//! Distributed SQL on [Ballista](https://datafusion.apache.org/ballista/) (feature
//! `ballista`): colzip's scalar functions, aggregates, the `colzip_stats` table function
//! and the `COLZIP_PARQUET` writer in queries planned by a Ballista scheduler and run on
//! its executors.
//!
//! - [`codec`]: the logical and physical extension codecs that carry colzip's functions,
//!   tables and writer in distributed plans.
//! - [`server`]: a scheduler and an executor as processes of their own (what `colzip
//!   cluster scheduler|executor` run) and a client session on a remote scheduler (what
//!   `colzip sql --remote` uses).
//! - [`standalone`]: a scheduler and an executor in this process, for tests and examples.
//!
//! Tables for the cluster are files (`register_parquet`, `CREATE EXTERNAL TABLE … STORED
//! AS PARQUET`): in-memory tables do not travel in plans. Files written with
//! `COLZIP_PARQUET` are read back as plain `PARQUET`. A `colzip_stats` scan runs on an
//! executor, reading the table through the table's own scans.

pub mod codec;
pub mod server;
pub mod standalone;

use std::sync::Arc;

use ballista_core::extension::SessionConfigExt;
use datafusion::execution::SessionState;
use datafusion::prelude::{SessionConfig, SessionContext};

/// `config` with colzip's extension codecs as Ballista's.
pub fn session_config(config: SessionConfig) -> SessionConfig {
    config
        .with_ballista_logical_extension_codec(Arc::new(codec::LogicalCodec::default()))
        .with_ballista_physical_extension_codec(Arc::new(codec::PhysicalCodec::default()))
}

/// A session state with colzip registered ([`crate::datafusion::register`]) and colzip's
/// codecs: what a client, a scheduler and an executor start from.
pub fn session_state(config: SessionConfig) -> crate::Result<SessionState> {
    let ctx = SessionContext::new_with_config(session_config(config));
    crate::datafusion::register(&ctx)?;
    Ok(ctx.state())
}
