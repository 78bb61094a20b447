//! `colzip cluster scheduler|executor`: the processes of a Ballista cluster with colzip
//! registered (feature `ballista`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Subcommand};
#[cfg(not(feature = "ballista"))]
use colzip::Error;
use colzip::Result;

/// `colzip cluster`'s arguments.
#[derive(Args)]
pub struct ClusterArgs {
    #[command(subcommand)]
    role: Role,
}

/// The scheduler's address when none is given: this host only.
const SCHEDULER: &str = "127.0.0.1:50050";
/// An executor's address when none is given: this host only.
const EXECUTOR: &str = "127.0.0.1:50051";

#[derive(Subcommand)]
enum Role {
    /// Run a Ballista scheduler with colzip's functions and codecs: clients (`colzip sql
    /// --remote df://HOST:PORT`) send it queries, it plans them into stages and hands the
    /// tasks to the executors that registered with it. Runs until stopped (Ctrl-C).
    /// Ballista has no authentication: whoever reaches the port can run queries that read
    /// and write files as the executors' user, so it listens on 127.0.0.1 unless --bind
    /// says otherwise.
    Scheduler(SchedulerArgs),
    /// Run a Ballista executor with colzip's functions and codecs: it registers with the
    /// scheduler, runs the tasks it is given (reading Parquet files by path, running
    /// colzip's codecs on its GPU when there is one) and serves their output on --bind.
    /// Runs until stopped (Ctrl-C). Ballista has no authentication: whoever reaches the
    /// port can fetch task output, so it listens on 127.0.0.1 unless --bind says
    /// otherwise.
    Executor(ExecutorArgs),
}

#[derive(Args)]
struct SchedulerArgs {
    /// Address to listen on (gRPC for clients and executors); another host's executors
    /// and clients need an address they can reach, on a private network
    #[arg(long, value_name = "HOST:PORT", default_value = SCHEDULER)]
    bind: SocketAddr,
    /// Seconds without news from an executor after which it counts as lost and its
    /// tasks run again on the others
    #[arg(long, value_name = "SECONDS", default_value_t = 180)]
    executor_timeout: u64,
}

#[derive(Args)]
struct ExecutorArgs {
    /// The scheduler's address
    #[arg(long, value_name = "HOST:PORT", default_value = SCHEDULER)]
    scheduler: String,
    /// Address to serve task output on (Arrow Flight) and to register with; each
    /// executor of a host needs its own port (--bind 127.0.0.1:50052 for a second one)
    #[arg(long, value_name = "HOST:PORT", default_value = EXECUTOR)]
    bind: SocketAddr,
    /// Use only these GPUs (CUDA ordinals, comma-separated), as COLZIP_GPUS does
    /// [default: COLZIP_GPUS, else every GPU]
    #[arg(long, value_name = "N", value_delimiter = ',')]
    gpu: Option<Vec<usize>>,
    /// Tasks run at once [default: one per CPU core]
    #[arg(long, value_name = "C", value_parser = clap::value_parser!(u32).range(1..))]
    concurrency: Option<u32>,
    /// Directory for shuffle files [default: a temporary directory, removed at exit]
    #[arg(long)]
    work_dir: Option<PathBuf>,
}

#[cfg(feature = "ballista")]
pub fn cluster(args: ClusterArgs) -> Result<()> {
    use colzip::cluster::server;

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match args.role {
        Role::Scheduler(args) => {
            let mut options = server::SchedulerOptions::new(args.bind);
            options.executor_timeout = std::time::Duration::from_secs(args.executor_timeout);
            eprintln!(
                "colzip cluster scheduler: listening on {} (clients: colzip sql --remote df://{})",
                args.bind, args.bind
            );
            warn_if_reachable("scheduler", args.bind);
            runtime.block_on(until_stopped(server::run_scheduler(options)))
        }
        Role::Executor(args) => {
            if let Some(gpus) = &args.gpu {
                let list: Vec<String> = gpus.iter().map(|g| g.to_string()).collect();
                // SAFETY: no other thread reads the environment yet: the runtime's workers
                // have not run anything, and no GPU has been opened.
                unsafe { std::env::set_var(colzip::gpu::GPUS_ENV, list.join(",")) };
            }
            let options = server::ExecutorOptions {
                scheduler: server::scheduler_address(&args.scheduler)?,
                bind: args.bind,
                concurrency: args.concurrency.map_or(0, |c| c as usize),
                work_dir: args.work_dir,
            };
            eprintln!(
                "colzip cluster executor: serving on {}, registering with the scheduler at {}",
                options.bind, options.scheduler
            );
            warn_if_reachable("executor", options.bind);
            runtime.block_on(until_stopped(server::run_executor(options)))
        }
    }
}

/// Says, when `bind` is not a loopback address, that other hosts can reach the
/// unauthenticated port.
#[cfg(feature = "ballista")]
fn warn_if_reachable(role: &str, bind: SocketAddr) {
    if !bind.ip().is_loopback() {
        eprintln!(
            "colzip cluster {role}: {bind} can be reached from other hosts and Ballista has no \
             authentication: keep the port on a private network or behind a firewall"
        );
    }
}

/// Runs `process` until it ends or the process is asked to stop (Ctrl-C, SIGTERM).
#[cfg(feature = "ballista")]
async fn until_stopped(process: impl std::future::Future<Output = Result<()>>) -> Result<()> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        result = process => result,
        _ = tokio::signal::ctrl_c() => Ok(()),
        _ = terminate.recv() => Ok(()),
    }
}

#[cfg(not(feature = "ballista"))]
pub fn cluster(args: ClusterArgs) -> Result<()> {
    match args.role {
        Role::Scheduler(SchedulerArgs {
            bind,
            executor_timeout,
        }) => {
            let _ = (bind, executor_timeout);
        }
        Role::Executor(ExecutorArgs {
            scheduler,
            bind,
            gpu,
            concurrency,
            work_dir,
        }) => {
            let _ = (scheduler, bind, gpu, concurrency, work_dir);
        }
    }
    Err(not_built("colzip cluster"))
}

/// The error of a cluster command in a build without the `ballista` feature.
#[cfg(not(feature = "ballista"))]
pub fn not_built(what: &str) -> Error {
    Error::Unsupported(format!(
        "{what} needs the 'ballista' feature; rebuild with `cargo build --release --features ballista`"
    ))
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        args: ClusterArgs,
    }

    fn parse(args: &[&str]) -> Role {
        let args = std::iter::once("cluster").chain(args.iter().copied());
        Command::try_parse_from(args).unwrap().args.role
    }

    fn address(text: &str) -> SocketAddr {
        text.parse().unwrap()
    }

    #[test]
    fn processes_listen_on_this_host_unless_told_otherwise() {
        let Role::Scheduler(scheduler) = parse(&["scheduler"]) else {
            panic!("not the scheduler");
        };
        assert_eq!(scheduler.bind, address("127.0.0.1:50050"));
        let Role::Executor(executor) = parse(&["executor"]) else {
            panic!("not an executor");
        };
        assert_eq!(executor.bind, address("127.0.0.1:50051"));
        assert_eq!(executor.scheduler, "127.0.0.1:50050");

        let Role::Scheduler(scheduler) = parse(&["scheduler", "--bind", "10.0.0.2:6000"]) else {
            panic!("not the scheduler");
        };
        assert_eq!(scheduler.bind, address("10.0.0.2:6000"));
        let told = [
            "executor",
            "--scheduler",
            "10.0.0.2:6000",
            "--bind",
            "10.0.0.3:6001",
        ];
        let Role::Executor(executor) = parse(&told) else {
            panic!("not an executor");
        };
        assert_eq!(executor.bind, address("10.0.0.3:6001"));
        assert_eq!(executor.scheduler, "10.0.0.2:6000");
    }
}
