//! A standalone Ballista cluster: a scheduler and an executor in this process (on free
//! ports of localhost), both with colzip registered and colzip's codecs, and a client
//! session connected to them. For tests and examples.

use ballista::extension::SessionContextExt;
use datafusion::prelude::{SessionConfig, SessionContext};

use crate::{Error, Result};

/// Starts a scheduler and an executor in this process and returns a session whose
/// queries they plan and run. Call it within a tokio runtime; the cluster lives as long
/// as the runtime.
///
/// The executor keeps its shuffle files in a directory `.tmpXXXXXX/<job>/<stage>/…` of
/// `tempfile`'s temporary directory (`$TMPDIR` or `/tmp`) that nothing removes, not even
/// when the runtime ends: Ballista's standalone executor drops the `TempDir` it names
/// the directory after at once, and creates the path again when a stage writes. A
/// process that starts standalone clusters and must leave nothing behind points
/// `tempfile` at a directory it removes itself, before the first call
/// (`tempfile::env::override_temp_dir`, as `tests/cluster.rs` does). `colzip cluster
/// executor` processes do not have this problem: they remove their work directory when
/// they stop.
///
/// ```no_run
/// # tokio::runtime::Runtime::new()?.block_on(async {
/// let ctx = colzip::cluster::standalone::context(Default::default()).await?;
/// ctx.register_parquet("t", "data/t.parquet", Default::default()).await.unwrap();
/// let sql = "SELECT colzip_ratio(v, 'lzss') FROM t";
/// let rows = ctx.sql(sql).await.unwrap().collect().await.unwrap();
/// # Ok::<(), colzip::Error>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub async fn context(config: SessionConfig) -> Result<SessionContext> {
    let state = super::session_state(config)?;
    let ctx = SessionContext::standalone_with_state(state)
        .await
        .map_err(|e| Error::format(format!("starting a standalone Ballista cluster: {e}")))?;
    // The client session Ballista builds keeps the configuration (with the codecs) but
    // not the state's functions: the planner needs colzip's names too.
    crate::datafusion::register(&ctx)?;
    Ok(ctx)
}
