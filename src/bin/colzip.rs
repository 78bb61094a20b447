//! `colzip`: compress typed columns from the command line. A thin layer over the library:
//! it parses arguments, shows progress on stderr, and prints one-line errors.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};
use colzip::archive::{self, InputKind, OutputKind, RawType};
use colzip::bench;
use colzip::codec::lzss::LzssParams;
use colzip::codec::{Codec, Placement, SnappyFormat, gmatch};
use colzip::column::CodecChoice;
#[cfg(feature = "datafusion")]
use colzip::datafusion::session::query_bench::Store;
#[cfg(feature = "datafusion")]
use colzip::datafusion::session::{self, TableKind, TpchEvent, shell};
#[cfg(feature = "datafusion")]
use colzip::datafusion::table::CompressOptions;
use colzip::gpu::{BACKEND_ENV, Backend, Gpu};
use colzip::tpch::{self, Config, Contender, Event, Format, Table};
use colzip::{Error, Result};
use indicatif::{ProgressBar, ProgressStyle};

#[derive(Parser)]
#[command(
    name = "colzip",
    version,
    about = "Compress typed Arrow columns: multi-byte LZSS, G-match (Snappy), BWT+MTF+Huffman"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum SnappyArg {
    Raw,
    Framed,
}

/// `--backend`, shared by the subcommands that run codecs.
#[derive(Args, Clone, Copy)]
struct BackendArg {
    /// Where the codecs run: auto (the GPU when usable, for inputs of 1 MiB or more), cpu,
    /// or gpu (an error when there is none); codecs without a GPU path run on the CPU
    #[arg(long, env = BACKEND_ENV, default_value = "auto")]
    backend: Backend,
}

#[derive(Subcommand)]
enum Command {
    /// Compress a file: raw typed values, Arrow IPC or Parquet (detected), column by column,
    /// into a .czip archive; or, with --snappy, any file into a bare Snappy stream.
    Compress {
        input: PathBuf,
        /// Output path [default: INPUT.czip, or INPUT.snappy / INPUT.sz with --snappy]
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Codec: auto, lzss[:s=1|2|4|8,w=1..255,c=2048..16384,level=1..4], gmatch[:raw|framed], bwt[:block=4m], stored
        #[arg(short, long, default_value = "auto")]
        codec: CodecChoice,
        /// How a raw file's bytes are read: bytes, int8..int64, uint8..uint64, float32,
        /// float64, utf8-lines [default: bytes]; not for Arrow IPC and Parquet files, whose
        /// schema gives the types
        #[arg(short = 't', long = "type")]
        raw_type: Option<RawType>,
        /// Write a bare Snappy stream made by gmatch (raw or framing format) instead of an archive
        #[arg(long, value_enum)]
        snappy: Option<SnappyArg>,
        /// Overwrite the output if it exists
        #[arg(short, long)]
        force: bool,
        /// Summary format: table, json or csv
        #[arg(long, default_value = "table")]
        format: Format,
        #[command(flatten)]
        backend: BackendArg,
    },
    /// Decompress a .czip archive (back to what it was made from), or with --snappy a Snappy stream.
    Decompress {
        input: PathBuf,
        /// Output path [default: INPUT without its .czip / .snappy / .sz extension]
        #[arg(short, long)]
        output: Option<PathBuf>,
        /// Output kind for archives: raw, arrow or parquet [default: the archive's source]
        #[arg(long)]
        to: Option<OutputKind>,
        /// Read a bare Snappy stream (raw or framing format)
        #[arg(long, value_enum)]
        snappy: Option<SnappyArg>,
        #[arg(short, long)]
        force: bool,
        /// Fail, before decoding, when the output would exceed this many bytes (suffixes
        /// k, m, g, t: powers of 1024) [default: no limit]
        #[arg(long, value_name = "BYTES", value_parser = parse_size)]
        max_output: Option<u64>,
        #[command(flatten)]
        backend: BackendArg,
    },
    /// Show an archive's columns, codecs and ratios. Checks every CRC of the archive and
    /// its column containers and every codec stream's header; --verify also decodes every
    /// part and checks its xxh3-64 and the codecs' CRCs.
    Info {
        input: PathBuf,
        /// table or json
        #[arg(long, default_value = "table")]
        format: Format,
        /// Decode every part and check every checksum the archive holds
        #[arg(long)]
        verify: bool,
        /// With --verify: fail when the archive would decode to more than this many bytes
        #[arg(long, value_name = "BYTES", value_parser = parse_size, requires = "verify")]
        max_output: Option<u64>,
    },
    /// Show the GPU colzip would use (or why there is none) and run its self-test kernel.
    Gpu {
        /// table or json
        #[arg(long, default_value = "table")]
        format: Format,
    },
    /// The TPC-H column experiment: generate tables in-process, compress every column with
    /// each codec and the CPU baselines, verify round trips, report ratios and GB/s.
    Tpch {
        /// Scale factor
        #[arg(long, default_value_t = 0.1)]
        sf: f64,
        /// Comma-separated tables [default: all eight]
        #[arg(long)]
        tables: Option<String>,
        /// Comma-separated codecs and baselines, e.g. lzss:s=2,w=128,c=2048,gmatch,bwt,auto,snap,lz4,zstd-1,zstd-3,bzip2-9
        #[arg(long)]
        codecs: Option<String>,
        /// table, json or csv
        #[arg(long, default_value = "table")]
        format: Format,
        /// Runs per measurement (the fastest counts)
        #[arg(long, default_value_t = 1)]
        repeat: usize,
        /// Worker threads [default: all cores]
        #[arg(long)]
        threads: Option<usize>,
        /// Measure decimals as Int32/Int64 and strings as their concatenated bytes, the forms GPU papers use
        #[arg(long)]
        peer_forms: bool,
        /// Print only the per-codec totals over all measured columns (a table ends with
        /// them anyway)
        #[arg(long)]
        summary: bool,
        /// Also draw ratio against compression and decompression GB/s per codec (the
        /// totals) into this SVG file
        #[arg(long, value_name = "FILE.svg")]
        plot: Option<PathBuf>,
        #[command(flatten)]
        backend: BackendArg,
    },
    /// GPU benchmark: every codec through the batched interface on TPC-H lineitem
    /// generated in-process (each column in its plain form) or on your own file: lzss
    /// over GPULZ's (S, W, C) grid and G-match (raw pages, blocks, framed, snap-written
    /// pages). Per row the ratio and GB/s in three forms: kernel (data resident on the
    /// GPU), pinned host->host, and ordinary memory (the public call), with the CPU rows
    /// in the same run. Needs a GPU.
    Bench {
        /// Scale factor of the TPC-H tables
        #[arg(long, default_value_t = 1.0)]
        sf: f64,
        /// Measure this file instead of TPC-H (raw values of --type)
        #[arg(long)]
        file: Option<PathBuf>,
        /// How --file's bytes are read: bytes, int8..int64, uint8..uint64, float32, float64
        #[arg(short = 't', long = "type", default_value = "bytes")]
        raw_type: RawType,
        /// Write each measured plain column to this directory (one file per column, for
        /// peers such as ../shared/tools/peers.py on the same bytes)
        #[arg(long)]
        write_columns: Option<PathBuf>,
        /// Suites to run: lzss, gmatch, bwt (`none` with --write-columns: only write the files)
        #[arg(long, value_delimiter = ',', default_value = "lzss,gmatch")]
        suites: Vec<String>,
        /// Comma-separated TPC-H columns of any table (l_comment, o_comment, ...) [default:
        /// lzss and gmatch: lineitem's fixed-width plain columns; bwt: l_comment, o_comment,
        /// ps_comment, p_name, l_shipinstruct]
        #[arg(long)]
        columns: Option<String>,
        /// Symbol widths S of the grid
        #[arg(long, value_delimiter = ',', default_value = "1,2,4")]
        s: Vec<u8>,
        /// Windows W of the grid, in symbols
        #[arg(long, value_delimiter = ',', default_value = "32,64,128,255")]
        w: Vec<u8>,
        /// Chunk sizes C of the grid, in bytes
        #[arg(long, value_delimiter = ',', default_value = "2048,4096,8192,16384")]
        c: Vec<u32>,
        /// Timed runs per GPU figure (the median counts)
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Leave out the CPU reference rows
        #[arg(long)]
        no_cpu: bool,
        /// table, json or csv
        #[arg(long, default_value = "table")]
        format: Format,
    },
    /// SQL shell: DataFusion with colzip's SQL functions and the COLZIP_PARQUET format,
    /// optionally over the eight TPC-H tables generated in-process; with --compressed the
    /// tables, TPC-H and CREATE TABLE's, hold every column compressed. Runs -c or -f and
    /// exits; otherwise reads statements ending in ';' from stdin (`\q` or end of input
    /// quits).
    Sql(SqlArgs),
    /// The 22 TPC-H queries over several stores of the same tables, generated once
    /// in-process: memory (DataFusion MemTables), compressed (colzip compressed tables),
    /// parquet (SNAPPY files DataFusion wrote, read by its stock reader). Each query runs
    /// once to warm up, then --runs timed runs (the median counts); every result is
    /// compared with the memory store's (which runs first, untimed and unreported when not
    /// listed). Progress on stderr; exit status 1 when any result differs.
    Queries(QueriesArgs),
}

/// A store of `colzip queries`; without the SQL layer any text (the command then says
/// that it is not built in).
#[cfg(not(feature = "datafusion"))]
type Store = String;

/// `colzip queries`' arguments.
#[derive(Args)]
struct QueriesArgs {
    /// Scale factor
    #[arg(long, default_value_t = 0.1)]
    sf: f64,
    /// Comma-separated stores, measured in this order: memory, compressed, parquet
    /// (colzip-parquet, the GPU Parquet scan, is not built yet)
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
    /// Codec of the compressed store: auto, lzss[:s=…,w=…,c=…], gmatch, bwt, stored
    #[arg(long, default_value = "auto")]
    codec: CodecChoice,
    /// Directory for the parquet store's files, <table>.parquet (kept; they must not
    /// exist yet) [default: a temporary directory, removed at the end]
    #[arg(long)]
    dir: Option<PathBuf>,
    /// table or json
    #[arg(long, default_value = "table", value_parser = ["table", "json"])]
    format: String,
    #[command(flatten)]
    backend: BackendArg,
}

#[cfg(feature = "datafusion")]
fn queries(args: QueriesArgs) -> Result<()> {
    use session::query_bench::{self, Event};

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
    };
    let format: Format = args.format.parse()?;
    let mb = |bytes: u64| bytes as f64 / 1e6;
    let report = query_bench::run(&config, &|event| {
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
            Event::Reference(query) => format!("Q{query} on memory (the reference, untimed)"),
            Event::Measured(row) => format!(
                "Q{} on {}: {:.3} s, {} rows, {}",
                row.query,
                row.store,
                row.seconds,
                row.rows,
                if row.equal {
                    "equal to memory"
                } else {
                    "DIFFERS from memory"
                }
            ),
            Event::Done(row) => format!(
                "{} store done: peak RSS {}",
                row.store,
                row.peak_rss_bytes
                    .map_or("unknown".into(), |b| format!("{:.1} MB", mb(b)))
            ),
        };
        eprintln!("colzip queries: {line}");
    })?;
    let text = match format {
        Format::Json => format!("{}\n", report.to_json()?),
        _ => report.to_table(),
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    let differ = report.queries.iter().filter(|q| !q.equal).count();
    if differ > 0 {
        return Err(Error::format(format!(
            "{differ} of {} results differ from the memory store's",
            report.queries.len()
        )));
    }
    Ok(())
}

#[cfg(not(feature = "datafusion"))]
fn queries(args: QueriesArgs) -> Result<()> {
    let _ = (
        args.sf,
        args.stores,
        args.queries,
        args.runs,
        args.codec,
        args.dir,
        args.format,
        args.backend,
    );
    Err(Error::Unsupported(
        "colzip queries needs the 'datafusion' feature".into(),
    ))
}

/// `colzip sql`'s arguments.
#[derive(Args)]
struct SqlArgs {
    /// Generate the TPC-H tables at this scale factor and register them by name
    #[arg(long, value_name = "SF")]
    tpch: Option<f64>,
    /// Hold tables with every column compressed: the TPC-H tables, and those made by
    /// CREATE TABLE [AS query] (which INSERT INTO then fills compressed too)
    #[arg(long)]
    compressed: bool,
    /// Codec of the compressed tables: auto, lzss[:s=…,w=…,c=…], gmatch, bwt, stored
    #[arg(long, default_value = "auto", requires = "compressed")]
    codec: CodecChoice,
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
    #[command(flatten)]
    backend: BackendArg,
}

#[cfg(feature = "datafusion")]
fn sql(args: SqlArgs) -> Result<()> {
    let format: shell::OutputFormat = args.format.parse()?;
    let kind = if args.compressed {
        TableKind::Compressed(CompressOptions {
            codec: args.codec,
            placement: Placement::new(args.backend.backend)?,
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
    let ctx = session::context()?;
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
    shell::run(&ctx, input, format, max_rows)
}

#[cfg(not(feature = "datafusion"))]
fn sql(args: SqlArgs) -> Result<()> {
    let _ = (
        args.tpch,
        args.compressed,
        args.codec,
        args.command,
        args.file,
        args.format,
        args.maxrows,
        args.backend,
    );
    Err(Error::Unsupported(
        "colzip sql needs the 'datafusion' feature".into(),
    ))
}

fn main() -> ExitCode {
    colzip::trace::line(|| "start".to_string());
    colzip::panics::install_hook();
    let cli = Cli::parse();
    let result = colzip::panics::catch(|| run(cli));
    colzip::trace::line(|| "done".to_string());
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            let hint = match &error {
                Error::TooLarge { .. }
                | Error::Codec(colzip::codec::CodecError::TooLarge { .. }) => {
                    " (--max-output raises the limit)"
                }
                _ => "",
            };
            eprintln!("colzip: error: {}{hint}", error.report());
            ExitCode::FAILURE
        }
    }
}

/// A byte count for clap: [`colzip::memory::parse_byte_size`].
fn parse_size(text: &str) -> std::result::Result<u64, String> {
    colzip::memory::parse_byte_size(text)
        .ok_or_else(|| format!("'{text}' is not a byte count (e.g. 4096, 64k, 512m, 2g)"))
}

/// A "not a colzip archive" error names the file, and says so when the file is a Snappy
/// stream that `--snappy` would read.
fn name_non_archive(input: &Path, error: Error) -> Error {
    match error {
        Error::Format(message) if message.starts_with("not a colzip archive") => {
            let mut head = [0u8; 10];
            let framed = std::fs::File::open(input)
                .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut head))
                .is_ok()
                && head == *b"\xff\x06\x00\x00sNaPpY";
            let extension = input.extension().and_then(|e| e.to_str());
            let hint = if framed || extension == Some("sz") {
                "; it looks like a Snappy framed stream: add --snappy framed"
            } else if extension == Some("snappy") {
                "; if it is a raw Snappy stream, add --snappy raw"
            } else {
                ""
            };
            Error::Format(format!("{}: {message}{hint}", input.display()))
        }
        other => other,
    }
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Compress {
            input,
            output,
            codec,
            raw_type,
            snappy,
            force,
            format,
            backend: BackendArg { backend },
        } => {
            // Resolved first: `--backend gpu` without a GPU fails before any file is touched.
            let placement = Placement::new(backend)?;
            let mut pipes = Pipes::default();
            let default_output = |input: &Path| {
                let ext = match snappy {
                    None => "czip",
                    Some(SnappyArg::Raw) => "snappy",
                    Some(SnappyArg::Framed) => "sz",
                };
                Ok(with_extension(input, ext))
            };
            let (input, output) = pipes.paths(&input, output, default_output)?;
            check_output(&input, &output, force || pipes.to_stdout())?;
            let result = compress(&input, &output, codec, raw_type, snappy, placement, backend)?;
            pipes.finish(&output)?;
            print_summary(
                &pipes.shown(&output),
                result.0,
                result.1,
                format,
                pipes.to_stdout(),
            )
        }
        Command::Decompress {
            input,
            output,
            to,
            snappy,
            force,
            max_output,
            backend: BackendArg { backend },
        } => {
            // Resolved first: `--backend gpu` without a GPU fails before any file is touched.
            Placement::new(backend)?;
            let mut pipes = Pipes::default();
            let (input, output) = pipes.paths(&input, output, strip_extension)?;
            check_output(&input, &output, force || pipes.to_stdout())?;
            let max_output = max_output.unwrap_or(u64::MAX);
            decompress(&input, &output, to, snappy, backend, max_output)?;
            pipes.finish(&output)
        }
        Command::Info {
            input,
            format,
            verify,
            max_output,
        } => {
            let info = if verify {
                archive::info_verified(&input, max_output.unwrap_or(u64::MAX))
            } else {
                archive::info(&input)
            }
            .map_err(|e| name_non_archive(&input, e))?;
            print_info(&input, &info, format)
        }
        Command::Gpu { format } => {
            let start = std::time::Instant::now();
            let report = match Gpu::get() {
                Ok(gpu) => {
                    let opened = start.elapsed().as_secs_f64();
                    // The first kernel: from the disk cache when an earlier process
                    // compiled it, else by NVRTC.
                    let origin = gpu
                        .module_with_origin(&colzip::gpu::SELFTEST, &[])
                        .map(|(_, origin)| origin);
                    let first_kernel = start.elapsed().as_secs_f64();
                    // Every codec kernel, so later processes find them all on disk.
                    let mut cached = 0;
                    let builds = colzip::codec::kernel_builds();
                    for (kernel, defines) in &builds {
                        let (_, origin) = gpu.module_with_origin(kernel, defines)?;
                        cached += usize::from(origin == colzip::gpu::KernelOrigin::Cached);
                    }
                    let self_test = gpu
                        .self_test(1 << 24)
                        .map(|()| "passed".to_string())
                        .unwrap_or_else(|e| e.to_string());
                    serde_json::json!({
                        "available": true,
                        "device": gpu.info(),
                        "self_test": self_test,
                        "kernel": origin.map_or_else(|e| serde_json::json!(e.to_string()), |o| serde_json::json!(o)),
                        "open_seconds": opened,
                        "first_kernel_seconds": first_kernel,
                        "codec_kernels": builds.len(),
                        "codec_kernels_cached": cached,
                        "all_kernels_seconds": start.elapsed().as_secs_f64(),
                    })
                }
                Err(reason) => {
                    serde_json::json!({"available": false, "reason": reason.to_string()})
                }
            };
            match format {
                Format::Json => println!("{report}"),
                _ => match report["available"].as_bool() {
                    Some(true) => println!(
                        "{} (compute capability {}, {} SMs, {} bytes): self-test {}; first kernel {} after {:.3} s",
                        report["device"]["name"].as_str().unwrap_or(""),
                        report["device"]["compute_capability"]
                            .as_str()
                            .unwrap_or(""),
                        report["device"]["multiprocessors"],
                        report["device"]["memory_bytes"],
                        report["self_test"].as_str().unwrap_or(""),
                        report["kernel"].as_str().unwrap_or(""),
                        report["first_kernel_seconds"].as_f64().unwrap_or(0.0)
                    ),
                    _ => println!("{}", report["reason"].as_str().unwrap_or("")),
                },
            }
            Ok(())
        }
        Command::Tpch {
            sf,
            tables,
            codecs,
            format,
            repeat,
            threads,
            peer_forms,
            summary,
            plot,
            backend: BackendArg { backend },
        } => {
            if let Some(path) = &plot {
                // Before the run, not after minutes of it.
                tpch::check_plot_path(path)?;
            }
            if let Some(threads) = threads {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build_global()
                    .map_err(|e| Error::format(e.to_string()))?;
            }
            let tables = match tables {
                Some(list) => list
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<Vec<Table>>>()?,
                None => Table::ALL.to_vec(),
            };
            let contenders = match codecs {
                Some(list) => Contender::parse_list(&list)?,
                None => Contender::defaults(),
            };
            let config = Config {
                sf,
                tables,
                contenders,
                repeat,
                peer_forms,
                backend,
            };
            let bar = progress_bar();
            let per_column = config.contenders.len() as u64;
            let rows = tpch::run(&config, &mut |event| match event {
                Event::Generating(table) => {
                    bar.set_message(format!("generating {table} at SF {sf}"))
                }
                Event::Generated(data) => {
                    bar.inc_length(data.columns.len() as u64 * per_column);
                    bar.set_message(format!("{}: {} rows", data.table, data.rows()));
                }
                Event::Measured(row) => {
                    bar.inc(1);
                    bar.set_message(format!("{}.{} {}", row.table, row.column, row.codec));
                }
            })?;
            bar.finish_and_clear();
            let totals = tpch::summarize(&rows);
            if let Some(path) = &plot {
                let title = format!(
                    "colzip tpch --sf {sf}: {} columns",
                    rows.len() / totals.len().max(1)
                );
                tpch::plot_codecs(&totals, path, &title)?;
            }
            let text = match (summary, format) {
                (true, _) => tpch::render(&totals, format)?,
                (false, Format::Table) => format!(
                    "{}\nper codec, over all {} measured columns:\n{}",
                    tpch::render(&rows, format)?,
                    rows.len() / totals.len().max(1),
                    tpch::render(&totals, format)?
                ),
                // Machine-readable output stays one document of rows (--summary for the totals).
                (false, _) => tpch::render(&rows, format)?,
            };
            std::io::stdout().lock().write_all(text.as_bytes())?;
            Ok(())
        }
        Command::Bench {
            sf,
            file,
            raw_type,
            write_columns,
            suites,
            columns,
            s,
            w,
            c,
            runs,
            no_cpu,
            format,
        } => {
            let mut grid = Vec::new();
            for &s in &s {
                for &w in &w {
                    for &c in &c {
                        grid.push(LzssParams::new(s, w, c)?);
                    }
                }
            }
            let source = match file {
                Some(path) => {
                    if columns.is_some() {
                        return Err(Error::format(
                            "--columns names TPC-H columns; it does not go with --file",
                        ));
                    }
                    bench::Source::File { path, raw_type }
                }
                None => bench::Source::Tpch {
                    sf,
                    columns: columns
                        .map(|list| list.split(',').map(|c| c.trim().to_string()).collect()),
                },
            };
            let config = bench::Config {
                source,
                write_columns,
                grid,
                suites: suites
                    .iter()
                    .filter(|s| s.as_str() != "none")
                    .map(|s| s.parse())
                    .collect::<Result<Vec<bench::Suite>>>()?,
                runs,
                cpu: !no_cpu,
            };
            let bar = progress_bar();
            let rows = bench::run(&config, &mut |event| match event {
                bench::Event::Generating => bar.set_message("preparing the columns"),
                bench::Event::Generated(_, rows) => bar.inc_length(rows as u64),
                bench::Event::Measured(row) => {
                    bar.inc(1);
                    bar.set_message(format!(
                        "{} {} {}",
                        row.row.column, row.row.codec, row.row.backend
                    ));
                }
            })?;
            bar.finish_and_clear();
            std::io::stdout()
                .lock()
                .write_all(tpch::render(&rows, format)?.as_bytes())?;
            Ok(())
        }
        Command::Sql(args) => sql(args),
        Command::Queries(args) => queries(args),
    }
}

/// A progress bar on stderr when it is a terminal, else a hidden one.
fn progress_bar() -> ProgressBar {
    let bar = if std::io::stderr().is_terminal() {
        ProgressBar::new(0)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .expect("valid template"),
    );
    bar
}

/// `colzip compress` from `input` to `output` (files); the plain and compressed sizes.
fn compress(
    input: &Path,
    output: &Path,
    codec: CodecChoice,
    raw_type: Option<RawType>,
    snappy: Option<SnappyArg>,
    placement: Placement,
    backend: Backend,
) -> Result<(u64, u64)> {
    if let Some(snappy) = snappy {
        let data = std::fs::read(input).map_err(Error::file("read", &input))?;
        let codec = Codec::Gmatch(match snappy {
            SnappyArg::Raw => SnappyFormat::Raw,
            SnappyArg::Framed => SnappyFormat::Framed,
        });
        let stream = codec.compress_one(&placement, &data)?;
        archive::write_atomically(output, true, |mut file| Ok(file.write_all(&stream)?))?;
        return Ok((data.len() as u64, stream.len() as u64));
    }
    let kind = InputKind::detect(input, raw_type.unwrap_or(RawType::Bytes))?;
    if let (Some(_), Some(kind_name)) = (raw_type, kind.schema_file()) {
        return Err(Error::format(format!(
            "--type applies to raw files; {} is {kind_name} file, whose schema gives the types",
            input.display(),
        )));
    }
    let size = std::fs::metadata(input)
        .map_err(Error::file("read the metadata of", &input))?
        .len();
    let bar = bytes_bar(size, "compress");
    let summary = archive::compress_file(input, output, kind, &codec, backend, &mut |done| {
        bar.set_position(done)
    })?;
    bar.finish_and_clear();
    Ok((summary.plain_bytes, summary.archive_bytes))
}

/// `colzip decompress` from `input` to `output` (files).
fn decompress(
    input: &Path,
    output: &Path,
    to: Option<OutputKind>,
    snappy: Option<SnappyArg>,
    backend: Backend,
    max_output: u64,
) -> Result<()> {
    if let Some(snappy) = snappy {
        // On the CPU: a framed stream states no total length for a GPU decoder to
        // size its output by.
        let stream = std::fs::read(input).map_err(Error::file("read", &input))?;
        let limit = usize::try_from(max_output).unwrap_or(usize::MAX);
        return archive::write_atomically(output, true, |file| {
            let mut out = std::io::BufWriter::new(file);
            match snappy {
                // At most 2^32 - 1 bytes, and what the elements can produce.
                SnappyArg::Raw => {
                    out.write_all(&gmatch::decompress_raw_with_limit(&stream, limit)?)?
                }
                // Chunk by chunk: memory stays that of a few MiB of output.
                SnappyArg::Framed => {
                    gmatch::decompress_framed_to(&stream, limit, |bytes| {
                        out.write_all(bytes).map_err(Error::from)
                    })?;
                }
            }
            Ok(out.flush()?)
        });
    }
    let bar = bytes_bar(0, "decompress");
    archive::decompress_file_with_limit(input, output, to, backend, max_output, &mut |done| {
        bar.set_position(done)
    })
    .map_err(|e| name_non_archive(input, e))?;
    bar.finish_and_clear();
    Ok(())
}

fn print_info(input: &Path, info: &archive::ArchiveInfo, format: Format) -> Result<()> {
    match format {
        Format::Json => println!(
            "{}",
            serde_json::to_string_pretty(info).map_err(|e| Error::format(e.to_string()))?
        ),
        Format::Csv => return Err(Error::format("info prints table or json")),
        Format::Table => {
            println!(
                "{}: {} archive, {} rows in {} batches, {} bytes",
                input.display(),
                info.source,
                info.rows,
                info.batches,
                info.archive_bytes
            );
            println!(
                "{:<24} {:<28} {:>14} {:>14} {:>8}  codecs",
                "column", "type", "plain", "compressed", "ratio"
            );
            for c in &info.columns {
                let codecs: Vec<String> = c
                    .codecs
                    .iter()
                    .map(|(k, v)| format!("{k} ({v} B)"))
                    .collect();
                println!(
                    "{:<24} {:<28} {:>14} {:>14} {:>8.3}  {}",
                    c.name,
                    c.arrow_type,
                    c.plain_bytes,
                    c.compressed_bytes,
                    c.ratio,
                    codecs.join(", ")
                );
            }
            for check in &info.checked {
                println!("checked: {check}");
            }
            for check in &info.not_checked {
                println!("not checked (use --verify): {check}");
            }
        }
    }
    Ok(())
}

/// `-` as an input or output: standard input is spooled to a temporary file (the archive
/// layer maps and detects files), and an output for standard output is written to a
/// temporary file and then copied there. Memory stays bounded; the disk holds one copy.
#[derive(Default)]
struct Pipes {
    dir: Option<tempfile::TempDir>,
    stdout: bool,
}

impl Pipes {
    fn dir(&mut self) -> Result<&Path> {
        if self.dir.is_none() {
            let dir = tempfile::Builder::new()
                .prefix("colzip-pipe")
                .tempdir()
                .map_err(Error::file(
                    "create a temporary directory in",
                    &std::env::temp_dir(),
                ))?;
            self.dir = Some(dir);
        }
        Ok(self
            .dir
            .as_ref()
            .map(|d| d.path())
            .unwrap_or(Path::new(".")))
    }

    /// The files to read and write: `-` (and, after a `-` input, no `-o`) stand for the
    /// standard streams; `default_output` names the output of a file input.
    fn paths(
        &mut self,
        input: &Path,
        output: Option<PathBuf>,
        default_output: impl Fn(&Path) -> Result<PathBuf>,
    ) -> Result<(PathBuf, PathBuf)> {
        let dash = Path::new("-");
        let from_stdin = input == dash;
        let input = if from_stdin {
            let path = self.dir()?.join("stdin");
            let mut file = std::fs::File::create(&path).map_err(Error::file("create", &path))?;
            std::io::copy(&mut std::io::stdin().lock(), &mut file)
                .map_err(Error::file("spool standard input to", &path))?;
            path
        } else {
            input.to_path_buf()
        };
        self.stdout = match &output {
            Some(output) => output == dash,
            None => from_stdin,
        };
        let output = match output {
            _ if self.stdout => self.dir()?.join("stdout"),
            Some(output) => output,
            None => default_output(&input)?,
        };
        Ok((input, output))
    }

    fn to_stdout(&self) -> bool {
        self.stdout
    }

    /// The output's name in messages.
    fn shown(&self, output: &Path) -> PathBuf {
        if self.stdout {
            PathBuf::from("-")
        } else {
            output.to_path_buf()
        }
    }

    /// Copies a standard-output result to standard output.
    fn finish(&self, output: &Path) -> Result<()> {
        if self.stdout {
            let mut file = std::fs::File::open(output).map_err(Error::file("read", output))?;
            let mut stdout = std::io::stdout().lock();
            std::io::copy(&mut file, &mut stdout)?;
            stdout.flush()?;
        }
        Ok(())
    }
}

fn with_extension(path: &Path, ext: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(ext);
    PathBuf::from(name)
}

fn strip_extension(path: &Path) -> Result<PathBuf> {
    match path.extension().and_then(|e| e.to_str()) {
        Some("czip" | "snappy" | "sz") => Ok(path.with_extension("")),
        _ => Err(Error::format(format!(
            "cannot derive an output name from {} (no .czip/.snappy/.sz extension): give one with -o",
            path.display()
        ))),
    }
}

fn check_output(input: &Path, output: &Path, force: bool) -> Result<()> {
    if !input.is_file() {
        return Err(Error::format(format!(
            "{} is not a readable file",
            input.display()
        )));
    }
    // `symlink_metadata`: a symlink at the output counts as existing, even a dangling one.
    if output.symlink_metadata().is_ok() && !force {
        return Err(Error::format(format!(
            "{} exists (use --force to overwrite)",
            output.display()
        )));
    }
    Ok(())
}

fn bytes_bar(len: u64, what: &str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} {msg} [{elapsed_precise}] {bytes} ({bytes_per_sec})",
        )
        .expect("valid template"),
    );
    bar.set_message(what.to_string());
    bar
}

/// The summary of a compression, on stdout, or on stderr when stdout holds the data.
fn print_summary(
    output: &Path,
    plain: u64,
    compressed: u64,
    format: Format,
    on_stderr: bool,
) -> Result<()> {
    let ratio = plain as f64 / compressed.max(1) as f64;
    let line = match format {
        Format::Json => serde_json::json!({"output": output.display().to_string(), "plain_bytes": plain, "compressed_bytes": compressed, "ratio": ratio}).to_string(),
        _ => format!(
            "{}: {plain} -> {compressed} bytes (ratio {ratio:.3})",
            output.display()
        ),
    };
    if on_stderr {
        eprintln!("{line}");
    } else {
        println!("{line}");
    }
    Ok(())
}
