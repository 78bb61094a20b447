//! The processes of a cluster: a stock Ballista scheduler ([`run_scheduler`]) and
//! executor ([`run_executor`]) with colzip's functions registered and colzip's extension
//! codecs set, and a client session connected to a scheduler ([`remote_context`]). What
//! `colzip cluster scheduler`, `colzip cluster executor` and `colzip sql --remote` run.
//!
//! The client plans each statement and sends the logical plan to the scheduler, which
//! splits it into stages and hands their tasks to the executors; the executors read the
//! Parquet files by path (every executor must see them at the same path), run colzip's
//! functions on their CPU or GPU, write `COPY` output, and keep shuffle data for the next
//! stage; the client fetches the last stage's output.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use ballista::extension::SessionContextExt;
use ballista_core::config::TaskSchedulingPolicy;
use ballista_core::extension::SessionConfigExt;
use ballista_core::registry::BallistaFunctionRegistry;
use ballista_executor::executor_process::{ExecutorProcessConfig, start_executor_process};
use ballista_scheduler::cluster::BallistaCluster;
use ballista_scheduler::config::SchedulerConfig;
use ballista_scheduler::scheduler_process::start_server;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::codec::{LogicalCodec, PhysicalCodec};
use crate::{Error, Result};

/// Ballista's session configuration with colzip's codecs: what the scheduler and the
/// executors start every session from.
fn base_config() -> SessionConfig {
    super::session_config(SessionConfig::new_with_ballista())
}

fn ballista_error(what: &str, e: impl std::fmt::Display) -> Error {
    Error::format(format!("{what}: {e}"))
}

/// How a scheduler is run.
#[derive(Clone, Debug)]
pub struct SchedulerOptions {
    /// Address to listen on for clients and executors (gRPC).
    pub bind: SocketAddr,
    /// Seconds without a heartbeat after which an executor counts as lost and its tasks
    /// are run again elsewhere (Ballista's default: 180).
    pub executor_timeout: Duration,
}

impl SchedulerOptions {
    pub fn new(bind: SocketAddr) -> Self {
        SchedulerOptions {
            bind,
            executor_timeout: Duration::from_secs(180),
        }
    }
}

/// Runs a Ballista scheduler with colzip's codecs and functions until it fails (or the
/// task is dropped). Jobs, stages and executors are kept in memory.
pub async fn run_scheduler(options: SchedulerOptions) -> Result<()> {
    let timeout = options.executor_timeout.as_secs().max(1);
    let mut config = SchedulerConfig::default()
        .with_hostname(options.bind.ip().to_string())
        .with_port(options.bind.port())
        // Executors ask for tasks (as in Ballista's standalone mode): they need no port of
        // their own for the scheduler to push to, only the one they serve output on.
        .with_scheduler_policy(TaskSchedulingPolicy::PullStaged)
        .with_override_config_producer(Arc::new(base_config))
        .with_override_session_builder(Arc::new(|config: SessionConfig| {
            super::session_state(config)
                .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))
        }))
        // A lost executor is noticed within a fifth of the timeout.
        .with_no_executors_grace_period_seconds(timeout);
    config.bind_host = options.bind.ip().to_string();
    config.executor_timeout_seconds = timeout;
    config.expire_dead_executor_interval_seconds = (timeout / 5).max(1);
    config.override_logical_codec = Some(Arc::new(LogicalCodec::default()));
    config.override_physical_codec = Some(Arc::new(PhysicalCodec::default()));
    let cluster = BallistaCluster::new_from_config(&config)
        .await
        .map_err(|e| ballista_error("starting the scheduler", e))?;
    start_server(cluster, options.bind, Arc::new(config))
        .await
        .map_err(|e| ballista_error(&format!("scheduler on {}", options.bind), e))
}

/// How an executor is run.
#[derive(Clone, Debug)]
pub struct ExecutorOptions {
    /// The scheduler's address.
    pub scheduler: SocketAddr,
    /// Address for the executor's Arrow Flight service (other executors and clients
    /// fetch its stages' output there); also the address it registers with.
    pub bind: SocketAddr,
    /// Tasks it runs at once (0: one per CPU core).
    pub concurrency: usize,
    /// Directory for shuffle files (a temporary directory, removed at exit, when `None`).
    pub work_dir: Option<std::path::PathBuf>,
}

/// Runs a Ballista executor with colzip's codecs and functions, registered with the
/// scheduler at `options.scheduler`, until it fails or is stopped. It waits up to 30 s
/// for the scheduler to answer.
pub async fn run_executor(options: ExecutorOptions) -> Result<()> {
    let state = super::session_state(base_config())?;
    // Ballista stops gracefully on SIGINT and SIGTERM, and its directory below is removed
    // then; a hang-up (the terminal closing) would end the process where it stands and
    // leave the directory. It becomes a SIGTERM.
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangup = signal(SignalKind::hangup())?;
        tokio::spawn(async move {
            if hangup.recv().await.is_some() {
                // SAFETY: raising a signal in this process, whose SIGTERM Ballista handles.
                unsafe { libc::raise(libc::SIGTERM) };
            }
        });
    }
    let temporary;
    let work_dir = match &options.work_dir {
        Some(dir) => dir.clone(),
        None => {
            temporary = tempfile::Builder::new()
                .prefix("colzip-executor-")
                .tempdir()?;
            temporary.path().to_path_buf()
        }
    };
    let host = options.bind.ip().to_string();
    let config = ExecutorProcessConfig {
        bind_host: host.clone(),
        external_host: Some(host),
        port: options.bind.port(),
        scheduler_host: options.scheduler.ip().to_string(),
        scheduler_port: options.scheduler.port(),
        scheduler_connect_timeout_seconds: 30,
        vcores: options.concurrency,
        task_scheduling_policy: TaskSchedulingPolicy::PullStaged,
        work_dir: Some(work_dir.to_string_lossy().into_owned()),
        override_function_registry: Some(Arc::new(BallistaFunctionRegistry::from(&state))),
        override_config_producer: Some(Arc::new(base_config)),
        override_logical_codec: Some(Arc::new(LogicalCodec::default())),
        override_physical_codec: Some(Arc::new(PhysicalCodec::default())),
        ..ExecutorProcessConfig::default()
    };
    start_executor_process(Arc::new(config))
        .await
        .map_err(|e| ballista_error(&format!("executor on {}", options.bind), e))
}

/// A session whose statements the scheduler at `url` (`df://HOST:PORT`) plans and its
/// executors run, with colzip's functions and codecs. `config` adds to Ballista's
/// settings (which read Parquet strings as `Utf8`). Tables for it are files
/// (`CREATE EXTERNAL TABLE … STORED AS PARQUET LOCATION '…'`), read by path on the
/// executors.
pub async fn remote_context(url: &str, config: SessionConfig) -> Result<SessionContext> {
    let state = super::session_state(config)?;
    let ctx = SessionContext::remote_with_state(url, state)
        .await
        .map_err(|e| ballista_error(&format!("connecting to the scheduler at {url}"), e))?;
    // As in `standalone::context`: Ballista's client state keeps the configuration, not
    // the functions the planner resolves names with.
    crate::datafusion::register(&ctx)?;
    Ok(ctx)
}

/// The address of a scheduler URL `df://HOST:PORT` (or `HOST:PORT`), resolved.
pub fn scheduler_address(url: &str) -> Result<SocketAddr> {
    use std::net::ToSocketAddrs;
    let rest = url.strip_prefix("df://").unwrap_or(url);
    let rest = rest.trim_end_matches('/');
    rest.to_socket_addrs()
        .map_err(|e| {
            Error::format(format!(
                "'{url}' is not a scheduler address (expected df://HOST:PORT): {e}"
            ))
        })?
        .next()
        .ok_or_else(|| Error::format(format!("'{url}' resolves to no address")))
}
