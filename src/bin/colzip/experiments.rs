//! `colzip gpu`, `tpch` and `bench`: the device check and the experiments.

use std::io::Write;
use std::path::PathBuf;

use clap::Args;
use colzip::archive::RawType;
use colzip::codec::lzss::LzssParams;
use colzip::gpu::Gpu;
use colzip::harness::bench;
use colzip::harness::columns::{self, CodecSummary, Config, Contender, Event};
use colzip::reporting::{Format, render};
use colzip::tpch::{self, Table};
use colzip::{Error, Result};

use crate::BackendArg;
use crate::bench_plot::BenchPlot;
use crate::plot;
use crate::progress::{ProgressLines, progress_bar};

/// `colzip gpu`'s arguments.
#[derive(Args)]
pub struct GpuArgs {
    /// table or json
    #[arg(long, default_value = "table")]
    format: Format,
}

/// `colzip tpch`'s arguments.
#[derive(Args)]
pub struct TpchArgs {
    /// Scale factor
    #[arg(long, default_value_t = 0.1, value_parser = crate::parse_scale_factor)]
    sf: f64,
    /// Comma-separated tables [default: all eight]
    #[arg(long)]
    tables: Option<String>,
    #[arg(long, help = codecs_help())]
    codecs: Option<String>,
    /// table, json or csv
    #[arg(long, default_value = "table")]
    format: Format,
    /// Runs per measurement (the fastest counts)
    #[arg(long, default_value_t = 1, value_parser = crate::parse_runs)]
    repeat: usize,
    /// Worker threads [default: all cores]
    #[arg(long, value_parser = crate::parse_threads)]
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
}

/// `colzip bench`'s arguments.
#[derive(Args)]
pub struct BenchArgs {
    /// Scale factor of the TPC-H tables
    #[arg(long, default_value_t = 1.0, value_parser = crate::parse_scale_factor)]
    sf: f64,
    /// Measure this file instead of TPC-H (raw values of --type)
    #[arg(long)]
    file: Option<PathBuf>,
    /// How --file's bytes are read: bytes, int8..int64, uint8..uint64, float32, float64
    #[arg(short = 't', long = "type", default_value = "bytes")]
    raw_type: RawType,
    /// Write each measured plain column to this directory (one file per column, so that
    /// other codecs measure the same bytes, as scripts/bench-vs-peers.sh does with nvCOMP)
    #[arg(long)]
    write_columns: Option<PathBuf>,
    #[arg(long, value_delimiter = ',', default_value = "lzss,gmatch", help = suites_help())]
    suites: Vec<String>,
    /// Comma-separated TPC-H columns of any table (l_comment, o_comment, ...) [default:
    /// lzss and gmatch: lineitem's fixed-width plain columns; bwt: l_comment, o_comment,
    /// ps_comment, p_name, l_shipinstruct; intpack: l_quantity, l_shipdate, l_orderkey,
    /// l_extendedprice, l_partkey, l_suppkey, l_discount]
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
    #[arg(long, default_value_t = 5, value_parser = crate::parse_runs)]
    runs: usize,
    /// Leave out the CPU reference rows
    #[arg(long)]
    no_cpu: bool,
    /// table, json or csv
    #[arg(long, default_value = "table")]
    format: Format,
    /// Also draw ratio against compression and decompression GB/s into this SVG file, a
    /// point per row: GPU rows at their kernel figure, CPU rows (wall-clock, all cores)
    /// and --peers rows as series of their own
    #[arg(long, value_name = "FILE.svg")]
    plot: Option<PathBuf>,
    /// Also draw these peers' rows (the JSON array ../shared/tools/peers.py and
    /// scripts/typed-peers.py print: peer, column, ratio, compress_gbps,
    /// decompress_gbps) on the columns this run measures; repeat for several files
    #[arg(long, value_name = "FILE.json", requires = "plot")]
    peers: Vec<PathBuf>,
    /// Replace the --plot file if it exists
    #[arg(short, long)]
    force: bool,
    /// Which rows: auto (GPU and CPU rows; the CPU rows alone, with a note, when there is
    /// no usable GPU), cpu (the CPU rows alone: measure a machine without a GPU), gpu (an
    /// error without a GPU)
    #[arg(long, env = colzip::gpu::BACKEND_ENV, default_value = "auto")]
    backend: colzip::gpu::Backend,
}

/// `colzip gpu`.
pub fn gpu_command(args: GpuArgs) -> Result<()> {
    let GpuArgs { format } = args;
    let start = std::time::Instant::now();
    let mut unavailable = None;
    let report = match Gpu::all() {
        Ok(gpus) => {
            let gpu = &gpus[0];
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
            let self_test = |gpu: &Gpu| {
                gpu.self_test(1 << 24)
                    .map(|()| "passed".to_string())
                    .unwrap_or_else(|e| e.to_string())
            };
            let devices: Vec<_> = gpus
                .iter()
                .map(|g| serde_json::json!({"device": g.info(), "self_test": self_test(g)}))
                .collect();
            serde_json::json!({
                "available": true,
                "device": gpu.info(),
                "self_test": devices[0]["self_test"],
                "devices": devices,
                "kernel": origin.map_or_else(|e| serde_json::json!(e.to_string()), |o| serde_json::json!(o)),
                "open_seconds": opened,
                "first_kernel_seconds": first_kernel,
                "codec_kernels": builds.len(),
                "codec_kernels_cached": cached,
                "all_kernels_seconds": start.elapsed().as_secs_f64(),
            })
        }
        Err(reason) => {
            let report = serde_json::json!({"available": false, "reason": reason.to_string()});
            unavailable = Some(reason);
            report
        }
    };
    match format {
        Format::Json => crate::stdout::line(&report)?,
        _ => {
            if report["available"].as_bool() == Some(true) {
                for entry in report["devices"].as_array().into_iter().flatten() {
                    let device = &entry["device"];
                    crate::stdout::line(format_args!(
                        "GPU {}: {} (compute capability {}, {} SMs, {} bytes): self-test {}",
                        device["ordinal"],
                        device["name"].as_str().unwrap_or(""),
                        device["compute_capability"].as_str().unwrap_or(""),
                        device["multiprocessors"],
                        device["memory_bytes"],
                        entry["self_test"].as_str().unwrap_or(""),
                    ))?;
                }
                crate::stdout::line(format_args!(
                    "first kernel {} after {:.3} s",
                    report["kernel"].as_str().unwrap_or(""),
                    report["first_kernel_seconds"].as_f64().unwrap_or(0.0)
                ))?;
            }
        }
    }
    // A script asking `colzip gpu` whether a GPU is there gets its answer in the exit
    // status too, with the reason worded as `--backend gpu` words it.
    match unavailable {
        Some(reason) => Err(Error::Gpu(reason)),
        None => Ok(()),
    }
}

/// `colzip tpch`.
pub fn tpch_command(args: TpchArgs) -> Result<()> {
    let TpchArgs {
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
    } = args;
    if let Some(path) = &plot {
        // Before the run, not after minutes of it.
        plot::check_plot_path(path, true)?;
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
    // Before any progress line: a scale factor that cannot be generated is the only output.
    tpch::check_scale_factor(&config.tables, sf)?;
    // One step per column and contender, counted before any table is generated, so the
    // bar only moves forwards. Without a terminal, a line every few seconds instead.
    let bar = progress_bar();
    let steps: usize = config
        .tables
        .iter()
        .map(|t| t.column_count())
        .sum::<usize>()
        * config.contenders.len();
    bar.set_length(steps as u64);
    let mut lines = bar.is_hidden().then(|| ProgressLines::new("tpch"));
    let mut measured = 0;
    let rows = columns::run(&config, &mut |event| {
        let message = match event {
            Event::Generating(table) => format!("generating {table} at SF {sf}"),
            Event::Generated(data) => format!("{}: {} rows", data.table, data.rows()),
            Event::Measured(row) => {
                bar.inc(1);
                measured += 1;
                let message = format!("{}.{} {}", row.table, row.column, row.codec);
                if let Some(lines) = &mut lines {
                    lines.step(|| format!("{measured}/{steps} measured ({message})"));
                }
                bar.set_message(message);
                return;
            }
        };
        if let Some(lines) = &mut lines {
            lines.stage(&message);
        }
        bar.set_message(message);
    })?;
    bar.finish_and_clear();
    let totals = columns::summarize(&rows);
    if let Some(path) = &plot {
        let title = format!(
            "colzip tpch --sf {sf}: {} columns",
            rows.len() / totals.len().max(1)
        );
        plot::plot_codecs(&codec_points(&totals), path, &title)?;
        eprintln!("colzip tpch: wrote the plot to {}", path.display());
    }
    let text = match (summary, format) {
        (true, _) => render(&totals, format)?,
        (false, Format::Table) => format!(
            "{}\nper codec, over all {} measured columns:\n{}",
            render(&rows, format)?,
            rows.len() / totals.len().max(1),
            render(&totals, format)?
        ),
        // Machine-readable output stays one document of rows (--summary for the totals).
        (false, _) => render(&rows, format)?,
    };
    std::io::stdout().lock().write_all(text.as_bytes())?;
    Ok(())
}

/// `colzip bench`.
pub fn bench_command(args: BenchArgs) -> Result<()> {
    let BenchArgs {
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
        plot,
        peers,
        force,
        backend,
    } = args;
    // Before the run, not after minutes of it.
    let plot = plot
        .map(|path| BenchPlot::prepare(&path, &peers, force))
        .transpose()?;
    let mut grid = Vec::new();
    for &s in &s {
        for &w in &w {
            for &c in &c {
                grid.push(LzssParams::new(s, w, c)?);
            }
        }
    }
    let mut source_title = format!("--sf {sf}");
    let source = match file {
        Some(path) => {
            if columns.is_some() {
                return Err(Error::usage(
                    "--columns names TPC-H columns; it does not go with --file",
                ));
            }
            source_title = format!("--file {}", path.display());
            bench::Source::File { path, raw_type }
        }
        None => bench::Source::Tpch {
            sf,
            columns: columns.map(|list| list.split(',').map(|c| c.trim().to_string()).collect()),
        },
    };
    let suites = suites
        .iter()
        .filter(|s| s.as_str() != "none")
        .map(|s| s.parse())
        .collect::<Result<Vec<bench::Suite>>>()?;
    let gpu = match backend {
        colzip::gpu::Backend::Cpu => false,
        colzip::gpu::Backend::Gpu => true,
        colzip::gpu::Backend::Auto if suites.is_empty() => false,
        colzip::gpu::Backend::Auto => match Gpu::get() {
            Ok(_) => true,
            Err(reason) if no_cpu => {
                return Err(Error::format(format!(
                    "no usable GPU ({reason}), and --no-cpu leaves out the CPU rows: nothing to measure"
                )));
            }
            Err(reason) => {
                eprintln!(
                    "colzip bench: no usable GPU ({reason}): measuring the CPU rows alone (--backend gpu makes this an error)"
                );
                false
            }
        },
    };
    if !gpu && no_cpu && !suites.is_empty() {
        return Err(Error::usage(
            "--backend cpu with --no-cpu: nothing to measure",
        ));
    }
    let config = bench::Config {
        source,
        write_columns,
        grid,
        suites,
        runs,
        gpu,
        cpu: !no_cpu,
    };
    let bar = progress_bar();
    let mut columns_planned = 0;
    let rows = bench::run(&config, &mut |event| match event {
        bench::Event::Generating => bar.set_message("preparing the columns"),
        bench::Event::Generated(planned, rows) => {
            columns_planned = planned.len();
            bar.inc_length(rows as u64)
        }
        bench::Event::Measured(row) => {
            bar.inc(1);
            bar.set_message(format!(
                "{} {} {}",
                row.row.column, row.row.codec, row.row.backend
            ));
        }
    })?;
    bar.finish_and_clear();
    if let (Some(dir), true) = (&config.write_columns, config.suites.is_empty()) {
        // Only the files were wanted: say where they went, instead of an empty table.
        eprintln!(
            "colzip bench: wrote {columns_planned} column files to {}",
            dir.display()
        );
        return Ok(());
    }
    // The rows first: a plot that cannot be written loses no measurement.
    std::io::stdout()
        .lock()
        .write_all(render(&rows, format)?.as_bytes())?;
    if let Some(plot) = &plot {
        for note in plot.draw(&rows, &source_title)? {
            eprintln!("colzip bench: not in the plot: {note}");
        }
        eprintln!("colzip bench: wrote the plot to {}", plot.path().display());
    }
    Ok(())
}

/// The help of `--codecs`: an example naming every codec of the registry, then baselines.
fn codecs_help() -> String {
    let names: Vec<&str> = colzip::codec::registry::codecs()
        .filter(|c| c.suited != colzip::codec::Suited::Nothing)
        .map(|c| c.name)
        .collect();
    format!(
        "Comma-separated codecs and baselines, e.g. {},lzss:s=2,w=128,auto,snap,lz4,zstd-1,zstd-3,bzip2-9",
        names.join(",")
    )
}

/// The help of `--suites`: every benchmark suite.
fn suites_help() -> String {
    format!(
        "Suites to run: {} (`none` with --write-columns: only write the files)",
        bench::Suite::names().join(", ")
    )
}

/// The points `--plot` draws: one per codec of `totals`.
fn codec_points(totals: &[CodecSummary]) -> Vec<plot::CodecPoint> {
    totals
        .iter()
        .map(|t| plot::CodecPoint {
            name: t.codec.clone(),
            ratio: t.ratio,
            compress_gbps: t.compress_gbps,
            decompress_gbps: t.decompress_gbps,
        })
        .collect()
}
