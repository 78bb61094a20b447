//! `colzip sql` and `colzip queries`: the DataFusion layer.

#[cfg(feature = "datafusion")]
use std::io::Write;
use std::path::PathBuf;

use clap::Args;
#[cfg(feature = "datafusion")]
use colzip::codec::Placement;
use colzip::column::CodecChoice;
#[cfg(feature = "datafusion")]
use colzip::datafusion::session::{self, TableKind, TpchEvent};
#[cfg(feature = "datafusion")]
use colzip::datafusion::table::{CompressOptions, Residence};
#[cfg(feature = "datafusion")]
use colzip::reporting::Format;
#[cfg(feature = "datafusion")]
use colzip::tpch::Table;
use colzip::{Error, Result};

use crate::BackendArg;
#[cfg(feature = "datafusion")]
use crate::progress::progress_bar;
#[cfg(feature = "datafusion")]
use crate::query_bench::{self, Store};
#[cfg(feature = "datafusion")]
use crate::shell;

/// A store of `colzip queries`; without the SQL layer any text (the command then says
/// that it is not built in).
#[cfg(not(feature = "datafusion"))]
type Store = String;

/// `colzip queries`' arguments.
#[derive(Args)]
pub struct QueriesArgs {
    /// Scale factor
    #[arg(long, default_value_t = 0.1, value_parser = crate::parse_scale_factor)]
    sf: f64,
    /// Comma-separated stores, measured in this order: memory, compressed, parquet,
    /// colzip-parquet (files colzip wrote, read by colzip's Parquet scan)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "memory,compressed,parquet"
    )]
    stores: Vec<Store>,
    /// Comma-separated queries, 1 to 22 [default: all 22]
    #[arg(long, value_delimiter = ',', value_parser = clap::value_parser!(u8).range(1..=22))]
    queries: Option<Vec<u8>>,
    /// Timed runs per query and store, after one warm-up run
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    runs: u32,
    #[arg(long, default_value = "auto", help = crate::codec_help("Codec of the compressed store"))]
    codec: CodecChoice,
    /// Directory for the parquet store's files, <table>.parquet (<table>/part-N.parquet
    /// with the parquet reference; kept; they must not exist yet) [default: a temporary
    /// directory, removed at the end]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// table or json
    #[arg(long, default_value = "table", value_parser = ["table", "json"])]
    format: String,
    /// Also draw the median seconds per query and store as bars into this SVG file
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Leave every filter above the compressed store's scans (they only skip blocks by
    /// their zones), to measure what evaluating them in the scan gives
    #[arg(long)]
    no_scan_filters: bool,
    /// Leave the filters of joins that repartition both sides to the joins: by default the
    /// compressed store's scans test each row against its own partition's build side,
    /// where they read columns besides the join keys
    #[arg(long)]
    no_partitioned_join_filters: bool,
    /// Where the compressed store keeps its blocks: auto (on the GPU while it has room,
    /// uploaded at load; the host without a GPU), gpu (as auto, an error without a GPU) or
    /// host (scans on the GPU upload what they decode)
    #[arg(long, default_value = "auto", value_parser = ["auto", "gpu", "host"])]
    residence: String,
    /// The store every result is compared with: memory (the tables generated whole and
    /// held in memory) or parquet (each table generated a few parts at a time, written to
    /// Parquet files under --dir/<table>/ and compressed as it comes, never held whole:
    /// for scale factors whose plain tables do not fit in memory; memory cannot be among
    /// the stores then)
    #[arg(long, default_value = "memory", value_parser = ["memory", "parquet"])]
    reference: String,
    #[command(flatten)]
    backend: BackendArg,
}

#[cfg(feature = "datafusion")]
pub fn queries(args: QueriesArgs) -> Result<()> {
    use query_bench::Event;

    let config = query_bench::Config {
        sf: args.sf,
        stores: args.stores,
        queries: match args.queries {
            Some(list) => list.into_iter().map(usize::from).collect(),
            None => (1..=22).collect(),
        },
        runs: args.runs as usize,
        codec: args.codec,
        backend: args.backend.backend,
        dir: args.dir,
        scan_filters: !args.no_scan_filters,
        partitioned_join_filters: !args.no_partitioned_join_filters,
        residence: args.residence.parse()?,
        reference: args.reference.parse()?,
    };
    let format: Format = args.format.parse()?;
    if let Some(path) = &args.plot {
        // Before the run, not after minutes of it.
        crate::plot::check_plot_path(path, true)?;
    }
    let mb = |bytes: u64| bytes as f64 / 1e6;
    // A bar on a terminal; otherwise one line per event (a log of the run).
    let bar = progress_bar();
    let terminal = !bar.is_hidden();
    bar.set_length((config.stores.len() * config.queries.len()) as u64);
    let reference = config.reference;
    let report = query_bench::run(&config, &|event| {
        if let Event::Measured(_) = event {
            bar.inc(1);
        }
        let line = match event {
            Event::Generating(table) => format!("generating {table} at SF {}", config.sf),
            Event::Generated { table, rows } => format!("generated {table}: {rows} rows"),
            Event::Loading(store) => format!("loading the {store} store"),
            Event::Loaded {
                store,
                bytes_held,
                seconds,
            } => format!(
                "loaded the {store} store: {:.1} MB in {seconds:.3} s",
                mb(bytes_held)
            ),
            Event::Reference { store, query } => {
                format!("Q{query} on {store} (the reference, untimed)")
            }
            Event::Measured(row) => format!(
                "Q{} on {}: {:.3} s, {} rows, {}",
                row.query,
                row.store,
                row.seconds,
                row.rows,
                if row.equal {
                    format!("equal to {reference}")
                } else {
                    format!("DIFFERS from {reference}")
                }
            ),
            Event::Done(row) => format!(
                "{} store done: peak RSS {}",
                row.store,
                row.peak_rss_bytes
                    .map_or("unknown".into(), |b| format!("{:.1} MB", mb(b)))
            ),
        };
        if terminal {
            bar.set_message(line);
        } else {
            eprintln!("colzip queries: {line}");
        }
    })?;
    bar.finish_and_clear();
    if let Some(path) = &args.plot {
        let groups: Vec<String> = config.queries.iter().map(|q| format!("Q{q}")).collect();
        let series: Vec<crate::plot::Series> = report
            .stores
            .iter()
            .map(|store| crate::plot::Series {
                name: store.store.to_string(),
                values: config
                    .queries
                    .iter()
                    .map(|&q| {
                        report
                            .queries
                            .iter()
                            .find(|r| r.query == q && r.store == store.store)
                            .map_or(0.0, |r| r.seconds)
                    })
                    .collect(),
            })
            .collect();
        let title = format!(
            "colzip queries --sf {}: median seconds of {} runs",
            config.sf, config.runs
        );
        crate::plot::plot_bars(&groups, &series, "seconds", path, &title)?;
        eprintln!("colzip queries: wrote the plot to {}", path.display());
    }
    let text = match format {
        Format::Json => format!("{}\n", report.to_json()?),
        _ => report.to_table(),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    if !report.all_equal() {
        let differ = report.queries.iter().filter(|q| !q.equal).count();
        return Err(Error::format(format!(
            "{differ} of {} results differ from the memory store's",
            report.queries.len()
        )));
    }
    Ok(())
}

#[cfg(not(feature = "datafusion"))]
pub fn queries(args: QueriesArgs) -> Result<()> {
    let _ = (
        args.sf,
        args.stores,
        args.queries,
        args.runs,
        args.codec,
        args.dir,
        args.format,
        args.plot,
        args.backend,
    );
    Err(Error::Unsupported(
        "colzip queries needs the 'datafusion' feature".into(),
    ))
}

/// `colzip sql`'s arguments.
#[derive(Args)]
pub struct SqlArgs {
    /// Generate the TPC-H tables at this scale factor and register them by name
    #[arg(long, value_name = "SF", value_parser = crate::parse_scale_factor)]
    tpch: Option<f64>,
    /// Run the statements on a Ballista cluster: the scheduler at df://HOST:PORT (see
    /// `colzip cluster`). Tables are files every executor reads by path (CREATE EXTERNAL
    /// TABLE … STORED AS PARQUET LOCATION '…'); needs a build with `--features ballista`
    #[arg(long, value_name = "df://HOST:PORT", conflicts_with_all = ["tpch", "compressed"])]
    remote: Option<String>,
    /// Hold tables with every column compressed: the TPC-H tables, and those made by
    /// CREATE TABLE [AS query] (which INSERT INTO then fills compressed too)
    #[arg(long)]
    compressed: bool,
    #[arg(
        long,
        default_value = "auto",
        requires = "compressed",
        help = crate::codec_help("Codec of the compressed tables")
    )]
    codec: CodecChoice,
    /// Leave every filter above the compressed tables' scans (they only skip blocks by
    /// their zones) instead of evaluating it in the scan
    #[arg(long, requires = "compressed")]
    no_scan_filters: bool,
    /// Leave the filters of joins that repartition both sides to the joins: by default the
    /// compressed tables' scans test each row against its own partition's build side,
    /// where they read columns besides the join keys
    #[arg(long, requires = "compressed")]
    no_partitioned_join_filters: bool,
    /// Where the compressed tables keep their blocks: auto (on the GPU while it has room,
    /// uploaded when a table is loaded or inserted into; the host without a GPU), gpu (as
    /// auto, an error without a GPU) or host (scans on the GPU upload what they decode)
    #[arg(long, default_value = "auto", requires = "compressed", value_parser = ["auto", "gpu", "host"])]
    residence: String,
    /// SQL to run; several statements separated by ';' run in order
    #[arg(
        short = 'c',
        long = "command",
        conflicts_with = "file",
        allow_hyphen_values = true
    )]
    command: Option<String>,
    /// File of SQL statements to run (long form only: `-f` means --force in colzip)
    #[arg(long)]
    file: Option<PathBuf>,
    /// table, json or csv
    #[arg(long, default_value = "table", value_parser = ["table", "json", "csv"])]
    format: String,
    /// Rows of each table result to print (0: all) [default: 40 on a terminal, else all]
    #[arg(long, value_name = "N")]
    maxrows: Option<usize>,
    /// Print each statement's row count and time to stderr (`N rows in S s`), for -c,
    /// --file and piped input (the terminal shell always shows them; `\timing` toggles)
    #[arg(long)]
    timing: bool,
    #[command(flatten)]
    backend: BackendArg,
}

#[cfg(feature = "datafusion")]
pub fn sql(args: SqlArgs) -> Result<()> {
    let format: Format = args.format.parse()?;
    let kind = if args.compressed {
        TableKind::Compressed(CompressOptions {
            codec: args.codec,
            placement: Placement::new(args.backend.backend)?,
            scan_filters: !args.no_scan_filters,
            partitioned_join_filters: !args.no_partitioned_join_filters,
            residence: args.residence.parse::<Residence>()?,
            ..CompressOptions::default()
        })
    } else {
        TableKind::Plain
    };
    let input = match (args.command, args.file) {
        (Some(sql), _) => shell::Input::Command(sql),
        (None, Some(path)) => shell::Input::File(path),
        (None, None) => shell::Input::Stdin,
    };
    let ctx = match &args.remote {
        Some(url) => remote_context(url)?,
        // The functions run where --backend says (it is COLZIP_BACKEND's default too).
        None => session::context_on(args.backend.backend)?,
    };
    session::set_table_kind(&ctx, kind.clone());
    if let Some(sf) = args.tpch {
        let bar = progress_bar();
        bar.set_length(Table::ALL.len() as u64);
        bar.set_message(format!("generating TPC-H at SF {sf} ({})", kind.describe()));
        session::register_tables(&ctx, sf, &kind, &|event| {
            if let TpchEvent::Loaded(table) = event {
                bar.inc(1);
                bar.set_message(format!("{}: {} rows", table.table, table.rows));
            }
        })?;
        bar.finish_and_clear();
    }
    let max_rows = args
        .maxrows
        .filter(|&n| n > 0)
        .or(args.maxrows.map(|_| usize::MAX));
    shell::run(&ctx, input, format, max_rows, args.timing)
}

/// A session on the cluster whose scheduler is at `url`, after checking that it answers.
#[cfg(feature = "ballista")]
fn remote_context(url: &str) -> Result<datafusion::prelude::SessionContext> {
    use colzip::cluster::server;

    let address = server::scheduler_address(url)?;
    std::net::TcpStream::connect_timeout(&address, std::time::Duration::from_secs(10)).map_err(
        |e| {
            Error::format(format!(
                "cannot reach the scheduler at {url} ({address}): {e}"
            ))
        },
    )?;
    // Ballista's client makes no connection until a statement runs: this runtime only
    // builds the session.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let config = datafusion::prelude::SessionConfig::new().with_information_schema(true);
    runtime.block_on(server::remote_context(url, config))
}

#[cfg(all(feature = "datafusion", not(feature = "ballista")))]
fn remote_context(_url: &str) -> Result<datafusion::prelude::SessionContext> {
    Err(crate::cluster::not_built("colzip sql --remote"))
}

#[cfg(not(feature = "datafusion"))]
pub fn sql(args: SqlArgs) -> Result<()> {
    let _ = (
        args.tpch,
        args.remote,
        args.compressed,
        args.codec,
        args.command,
        args.file,
        args.format,
        args.maxrows,
        args.timing,
        args.backend,
    );
    Err(Error::Unsupported(
        "colzip sql needs the 'datafusion' feature".into(),
    ))
}
