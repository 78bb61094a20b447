//! `colzip`: compress typed columns from the command line. A thin layer over the library:
//! it parses arguments, shows progress on stderr, and prints one-line errors.

mod bench_plot;
mod cluster;
mod experiments;
mod files;
mod peers;
mod plot;
mod progress;
#[cfg(feature = "datafusion")]
mod query_bench;
mod ratios;
#[cfg(feature = "datafusion")]
mod shell;
mod sql;
mod stdout;

use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use colzip::gpu::{BACKEND_ENV, Backend};
use colzip::{Error, Result};

#[derive(Parser)]
#[command(
    name = "colzip",
    version,
    about = "Compress typed Arrow columns: multi-byte LZSS, G-match (Snappy), BWT+MTF+Huffman, integer packing"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Rename finished output files into place without first flushing them to disk:
    /// faster, but after a power loss an output may exist and be empty or short
    #[arg(long, global = true)]
    no_fsync: bool,
    /// Say on stderr what colzip decides and cleans up besides its work: where
    /// `compress` and `decompress` run the codecs under `--backend auto`, and the
    /// temporary files that killed runs left next to an output it writes, which it removes
    #[arg(long, global = true)]
    verbose: bool,
}

#[derive(Clone, Copy, ValueEnum)]
enum SnappyArg {
    Raw,
    Framed,
}

/// `--backend`, shared by the subcommands that run codecs.
#[derive(Args, Clone, Copy)]
struct BackendArg {
    /// Where the codecs run: auto (the GPU when usable, for batches of 1 MiB or more;
    /// compress and decompress: for files of 1 GiB or more, since the GPU's start-up
    /// costs a few tenths of a second), cpu, or gpu (an error when there is none); codecs
    /// without a GPU path run on the CPU
    #[arg(long, env = BACKEND_ENV, default_value = "auto")]
    backend: Backend,
}

#[derive(Subcommand)]
enum Command {
    /// Compress a file: Arrow IPC or Parquet (detected), CSV or JSON lines (by the name or
    /// --type; columns typed by inference), or raw typed values, column by column, into a
    /// .czip archive; or, with --snappy, any file into a bare Snappy stream.
    Compress(files::CompressArgs),
    /// Decompress a .czip archive (back to what it was made from), or with --snappy a Snappy stream.
    Decompress(files::DecompressArgs),
    /// Show an archive's columns (Arrow type, rows, nulls), codecs and ratios. Checks every
    /// CRC of the archive and its column containers and every codec stream's header;
    /// --verify also decodes every part and checks its xxh3-64 and the codecs' CRCs.
    Info(files::InfoArgs),
    /// Print the first rows of an archive (-n, default 10) as a table, JSON or CSV,
    /// decoding only the batches they are in.
    Head(files::HeadArgs),
    /// Show the GPU colzip would use (or why there is none) and run its self-test kernel.
    Gpu(experiments::GpuArgs),
    /// The TPC-H column experiment: generate tables in-process, compress every column with
    /// each codec and the CPU baselines, verify round trips, report ratios and GB/s.
    Tpch(experiments::TpchArgs),
    /// GPU benchmark: every codec through the batched interface on TPC-H lineitem
    /// generated in-process (each column in its plain form) or on your own file: lzss
    /// over GPULZ's (S, W, C) grid and G-match (raw pages, blocks, framed, snap-written
    /// pages). Per row the ratio and GB/s in three forms: kernel (data resident on the
    /// GPU), pinned host->host, and ordinary memory (the public call), with the CPU rows
    /// in the same run. Without a GPU (or with --backend cpu), the CPU rows alone.
    Bench(experiments::BenchArgs),
    /// SQL shell: DataFusion with colzip's SQL functions and the COLZIP_PARQUET format,
    /// optionally over the eight TPC-H tables generated in-process; with --compressed the
    /// tables, TPC-H and CREATE TABLE's, hold every column compressed. Runs -c or --file
    /// and exits; otherwise reads statements ending in ';' from stdin (`\q` or end of input
    /// quits).
    Sql(sql::SqlArgs),
    /// The 22 TPC-H queries over several stores of the same tables, generated once
    /// in-process: memory (DataFusion MemTables), compressed (colzip compressed tables),
    /// parquet (SNAPPY files DataFusion wrote, read by its stock reader), colzip-parquet
    /// (files colzip's COPY wrote, read by colzip's scan). Each query runs
    /// once to warm up, then --runs timed runs (the median counts); every result is
    /// compared with the reference store's (memory, or parquet with --reference parquet,
    /// which never holds a whole table; it runs first, untimed and unreported when not
    /// listed). Progress on stderr; exit status 1 when any result differs.
    Queries(sql::QueriesArgs),
    /// The processes of a Ballista cluster with colzip registered: `colzip cluster
    /// scheduler` and `colzip cluster executor` (on 127.0.0.1:50050 and 127.0.0.1:50051
    /// unless --bind and --scheduler say otherwise); `colzip sql --remote
    /// df://127.0.0.1:50050` runs statements on it. Ballista has no authentication.
    /// Needs a build with `--features ballista`.
    Cluster(cluster::ClusterArgs),
}

fn main() -> ExitCode {
    colzip::trace::line(|| "start".to_string());
    colzip::panics::install_hook();
    let cli = Cli::parse();
    let result = colzip::panics::catch(|| run(cli));
    colzip::trace::line(|| "done".to_string());
    let status = match result {
        Ok(()) => 0,
        Err(error) if stdout::closed_under(&error) => return stdout::end_by_sigpipe(),
        Err(error) => {
            let hint = match &error {
                Error::TooLarge { .. }
                | Error::Codec(colzip::codec::CodecError::TooLarge { .. }) => {
                    " (--max-output raises the limit)"
                }
                _ => "",
            };
            eprintln!("colzip: error: {}{hint}", error.report());
            match error {
                // As clap exits for arguments it cannot parse.
                Error::Usage(_) => 2,
                _ => 1,
            }
        }
    };
    if colzip::gpu::Gpu::opened() {
        exit_without_gpu_teardown(status);
    }
    ExitCode::from(status)
}

/// Ends a process that opened a GPU without the CUDA driver's exit handlers. They tear
/// the contexts down piece by piece (unpinning every staging and pool buffer, freeing
/// device memory), which took 0.3-0.4 s of a one-file `colzip compress` on an H200 host;
/// the operating system reclaims all of it at exit anyway. By now every output is
/// written, flushed (as `--no-fsync` says) and renamed, and every temporary file removed:
/// what is left to do is flushing the standard streams.
fn exit_without_gpu_teardown(status: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once; no Rust code runs after it, and no
    // destructor that matters is skipped (see above).
    unsafe { libc::_exit(i32::from(status)) }
}

/// A byte count for clap: [`colzip::memory::parse_byte_size`].
/// The help of a `--codec` option: `auto` and every codec's spec, from the codec
/// registry.
fn codec_help(what: &str) -> String {
    let forms: Vec<String> = colzip::codec::registry::codecs()
        .map(|c| match c.suited {
            colzip::codec::Suited::Integers => format!("{} (integers)", c.syntax),
            _ => c.syntax.to_string(),
        })
        .collect();
    format!(
        "{what}: {}, {}",
        colzip::column::AutoCodecs::syntax(),
        forms.join(", ")
    )
}

fn parse_size(text: &str) -> std::result::Result<u64, String> {
    colzip::memory::parse_byte_size(text)
        .ok_or_else(|| format!("'{text}' is not a byte count (e.g. 4096, 64k, 512m, 2g)"))
}

/// A TPC-H scale factor for clap: positive and finite (bad values are usage errors,
/// exit status 2; one too large for this machine's memory is refused when the tables
/// are planned, naming the memory it would take).
fn parse_scale_factor(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(sf) if sf.is_finite() && sf > 0.0 => Ok(sf),
        _ => Err(format!(
            "'{text}' is not a scale factor: a number above 0 (e.g. 0.1, 1, 10)"
        )),
    }
}

/// A count of worker threads for clap: 1 to 16 per core (at least 256), so a mistyped
/// count cannot spend minutes spawning threads.
fn parse_threads(text: &str) -> std::result::Result<usize, String> {
    let most = colzip::limits::most_workers();
    match text.parse::<usize>() {
        Ok(n) if (1..=most).contains(&n) => Ok(n),
        _ => Err(format!("'{text}' is not a thread count in 1..={most}")),
    }
}

/// A count of timed runs for clap: 1 to 1000.
fn parse_runs(text: &str) -> std::result::Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=1000).contains(&n) => Ok(n),
        _ => Err(format!("'{text}' is not a run count in 1..=1000")),
    }
}

fn run(cli: Cli) -> Result<()> {
    colzip::archive::set_flush_before_rename(!cli.no_fsync);
    if cli.verbose {
        colzip::archive::on_stale_partial_removed(|path| {
            eprintln!(
                "colzip: removed {}, left by a run that was killed",
                path.display()
            )
        });
    }
    match cli.command {
        Command::Compress(args) => {
            colzip::archive::interrupted::install_handlers();
            files::compress_command(args, cli.verbose)
        }
        Command::Decompress(args) => {
            colzip::archive::interrupted::install_handlers();
            files::decompress_command(args, cli.verbose)
        }
        Command::Info(args) => files::info_command(args),
        Command::Head(args) => files::head_command(args),
        Command::Gpu(args) => experiments::gpu_command(args),
        Command::Tpch(args) => experiments::tpch_command(args),
        Command::Bench(args) => experiments::bench_command(args),
        Command::Sql(args) => sql::sql(args),
        Command::Queries(args) => {
            // Its temporary Parquet files are removed when a signal ends it.
            colzip::archive::interrupted::install_handlers();
            sql::queries(args)
        }
        Command::Cluster(args) => cluster::cluster(args),
    }
}
