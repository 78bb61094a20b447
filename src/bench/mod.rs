//! `colzip bench`: the GPU benchmark. It generates TPC-H lineitem in-process, takes each
//! column in the plain form GPU papers measure ([`crate::tpch::peer_form`]: ints, cents,
//! days, concatenated text), and measures the chosen suites: every `lzss` parameter set
//! of the grid, and the G-match rows ([`gmatch`]: `gmatch:raw`, `gmatch:framed`,
//! `snap-stream:raw`). For each:
//!
//! - on the GPU: the ratio, kernel compression and decompression GB/s (device events,
//!   data resident on the device, median of `runs`), and end-to-end GB/s from pinned host
//!   memory to host memory (median of `runs`, copies overlapped with compute);
//! - on the CPU, in the same run: the reference codec on all host cores (one run).
//!
//! GB/s are uncompressed bytes per second (10^9). Every GPU stream is checked equal to the
//! CPU's bytes and to decode back to the column; a difference is an error, not a row.
//!
//! ```no_run
//! use colzip::bench::{Config, gpulz_grid, run};
//! let config = Config { sf: 1.0, grid: gpulz_grid(), ..Config::default() };
//! let rows = run(&config, &mut |_| {})?;
//! println!("{}", colzip::tpch::render(&rows, colzip::tpch::Format::Table)?);
//! # Ok::<(), colzip::Error>(())
//! ```

use std::time::Instant;

use arrow::array::Array;
use serde::Serialize;

use crate::codec::lzss::gpu::{self as gpu_lzss, HostInput};
use crate::codec::lzss::{self, LzssParams};
use crate::gpu::{Gpu, PinnedBuffer, parallel_copy};
use crate::tpch::{ReportRow, Row, Table, generate, peer_form};
use crate::{Error, Result};

pub mod gmatch;

/// What `colzip bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// `lzss` over the (S, W, C) grid.
    Lzss,
    /// `gmatch:raw`, `gmatch:framed` and `snap-stream:raw`.
    Gmatch,
}

impl std::str::FromStr for Suite {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.trim() {
            "lzss" => Ok(Suite::Lzss),
            "gmatch" => Ok(Suite::Gmatch),
            other => Err(Error::format(format!(
                "unknown benchmark suite '{other}' (expected lzss or gmatch)"
            ))),
        }
    }
}

/// A column's values as plain little-endian bytes.
#[derive(Clone, Debug)]
pub struct PlainColumn {
    pub table: Table,
    pub name: String,
    /// The Arrow type of the plain form (Int32, Int64, UInt8 for text, ...).
    pub arrow_type: String,
    pub rows: u64,
    pub bytes: Vec<u8>,
}

/// The fixed-width columns of `table` at `sf` in their plain forms (strings become their
/// concatenated bytes); columns not in `only` (when given) are left out.
pub fn plain_columns(table: Table, sf: f64, only: Option<&[String]>) -> Result<Vec<PlainColumn>> {
    let data = generate(table, sf)?;
    let mut columns = Vec::new();
    for (field, array) in data.schema.fields().iter().zip(&data.columns) {
        if only.is_some_and(|names| !names.iter().any(|n| n == field.name())) {
            continue;
        }
        let plain = peer_form(array)?;
        let d = plain.to_data();
        let Some(width) = d.data_type().primitive_width() else {
            continue;
        };
        let values = &d.buffers()[0].as_slice()[d.offset() * width..(d.offset() + d.len()) * width];
        columns.push(PlainColumn {
            table,
            name: field.name().clone(),
            arrow_type: plain.data_type().to_string(),
            rows: array.len() as u64,
            bytes: values.to_vec(),
        });
    }
    if let Some(names) = only {
        for name in names {
            if !columns.iter().any(|c| &c.name == name) {
                return Err(Error::format(format!("{table} has no column '{name}'")));
            }
        }
    }
    Ok(columns)
}

/// GPULZ's grid: S 1/2/4 × W 32/64/128/255 × C 2048/4096/8192/16384 bytes.
pub fn gpulz_grid() -> Vec<LzssParams> {
    let mut grid = Vec::new();
    for s in [1, 2, 4] {
        for w in [32, 64, 128, 255] {
            for c in [2048, 4096, 8192, 16384] {
                grid.push(LzssParams {
                    symbol_width: s,
                    window: w,
                    chunk_size: c,
                });
            }
        }
    }
    grid
}

/// The codec field of a row: `lzss:s=2,w=128,c=2048`.
pub fn codec_name(params: &LzssParams) -> String {
    format!(
        "lzss:s={},w={},c={}",
        params.symbol_width, params.window, params.chunk_size
    )
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub sf: f64,
    /// Lineitem columns to measure; all when `None`.
    pub columns: Option<Vec<String>>,
    pub grid: Vec<LzssParams>,
    /// The suites to run.
    pub suites: Vec<Suite>,
    /// Timed runs per GPU figure (the median counts).
    pub runs: usize,
    /// Also run the CPU reference (one timed run per figure).
    pub cpu: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sf: 1.0,
            columns: None,
            grid: gpulz_grid(),
            suites: vec![Suite::Lzss, Suite::Gmatch],
            runs: 5,
            cpu: true,
        }
    }
}

/// A row of `colzip bench --format json`: the fields of `colzip tpch --format json`
/// (`compress_gbps`/`decompress_gbps` are kernel figures on the GPU), plus host-to-host
/// figures (equal to the wall-clock ones on the CPU).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BenchRow {
    #[serde(flatten)]
    pub row: Row,
    pub compress_e2e_gbps: f64,
    pub decompress_e2e_gbps: f64,
}

impl ReportRow for BenchRow {
    const HEADER: &'static [&'static str] = &[
        "column",
        "arrow_type",
        "raw_bytes",
        "codec",
        "backend",
        "ratio",
        "compress_gbps",
        "decompress_gbps",
        "compress_e2e_gbps",
        "decompress_e2e_gbps",
    ];

    fn cells(&self) -> Vec<String> {
        let r = &self.row;
        vec![
            r.column.clone(),
            r.arrow_type.clone(),
            r.raw_bytes.to_string(),
            r.codec.clone(),
            r.backend.clone(),
            format!("{:.4}", r.ratio),
            format!("{:.2}", r.compress_gbps),
            format!("{:.2}", r.decompress_gbps),
            format!("{:.2}", self.compress_e2e_gbps),
            format!("{:.2}", self.decompress_e2e_gbps),
        ]
    }

    fn numeric(i: usize) -> bool {
        i == 2 || i >= 5
    }
}

/// Progress of a run.
pub enum Event<'a> {
    Generating,
    Generated(&'a [PlainColumn]),
    Measured(&'a BenchRow),
}

pub(crate) fn gbps(bytes: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 / seconds / 1e9
    } else {
        0.0
    }
}

pub(crate) fn median_seconds(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64());
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}

/// Runs the benchmark on `gpu` (and the CPU reference when configured).
pub fn run(config: &Config, on_event: &mut dyn FnMut(Event<'_>)) -> Result<Vec<BenchRow>> {
    let gpu = Gpu::get()?;
    let lzss = config.suites.contains(&Suite::Lzss);
    if lzss && config.grid.is_empty() {
        return Err(Error::format("the parameter grid is empty"));
    }
    if config.suites.is_empty() {
        return Err(Error::format("no benchmark suite chosen"));
    }
    on_event(Event::Generating);
    let columns = plain_columns(Table::Lineitem, config.sf, config.columns.as_deref())?;
    on_event(Event::Generated(&columns));
    let mut rows = Vec::new();
    for column in &columns {
        if config.suites.contains(&Suite::Gmatch) {
            for row in gmatch::measure(gpu, config, column)? {
                on_event(Event::Measured(&row));
                rows.push(row);
            }
        }
        if !lzss {
            continue;
        }
        let input = &column.bytes;
        // Pinned buffers once per column (pinning a GB takes a good part of a second).
        let most = config
            .grid
            .iter()
            .map(|p| lzss::max_compressed_len(input.len(), p))
            .max()
            .unwrap_or(0);
        let mut pinned = Pinned {
            input: PinnedBuffer::new(gpu, input.len())?,
            stream: PinnedBuffer::new(gpu, most)?,
            output: PinnedBuffer::new(gpu, most.max(input.len()))?,
        };
        parallel_copy(&mut pinned.input.as_mut_slice()[..input.len()], input);
        for params in &config.grid {
            for row in measure(gpu, config, column, &mut pinned, params)? {
                on_event(Event::Measured(&row));
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

/// Pinned host buffers of one column: its bytes, a stream, and an output.
struct Pinned {
    input: PinnedBuffer,
    stream: PinnedBuffer,
    output: PinnedBuffer,
}

/// The GPU row and, when configured, the CPU row of one column and parameter set.
fn measure(
    gpu: &Gpu,
    config: &Config,
    column: &PlainColumn,
    pinned: &mut Pinned,
    params: &LzssParams,
) -> Result<Vec<BenchRow>> {
    let input = &column.bytes;
    let n = input.len();
    let name = codec_name(params);
    let fail = |what: &str| Error::Gpu(format!("{}.{} {name}: {what}", column.table, column.name));

    let kernels = gpu_lzss::time_kernels(gpu, input, params, config.runs)?;
    let stream = kernels.stream;
    // End to end: pinned host input to pinned host output, checked after the timing.
    let mut written = 0;
    let compress_e2e = median_seconds(config.runs, || {
        let input = HostInput::Pinned(&pinned.input.as_slice()[..n]);
        written = gpu_lzss::compress_into(gpu, input, params, pinned.stream.as_mut_slice())?;
        Ok(())
    })?;
    if pinned.stream.as_slice()[..written] != stream[..] {
        return Err(fail("the pipeline's stream differs from the kernels'"));
    }
    let decompress_e2e = median_seconds(config.runs, || {
        let input = HostInput::Pinned(&pinned.stream.as_slice()[..stream.len()]);
        written = gpu_lzss::decompress_into(gpu, input, pinned.output.as_mut_slice(), n)?;
        Ok(())
    })?;
    if written != n || pinned.output.as_slice()[..n] != input[..] {
        return Err(fail("end-to-end decompression did not round-trip"));
    }
    let row = |backend: &str, compress: f64, decompress: f64| Row {
        table: column.table.name().to_string(),
        column: column.name.clone(),
        arrow_type: column.arrow_type.clone(),
        rows: column.rows,
        raw_bytes: n as u64,
        codec: name.clone(),
        backend: backend.to_string(),
        compressed_bytes: stream.len() as u64,
        ratio: n as f64 / stream.len().max(1) as f64,
        compress_gbps: gbps(n, compress),
        decompress_gbps: gbps(n, decompress),
    };
    let mut rows = vec![BenchRow {
        row: row("gpu", kernels.compress_seconds, kernels.decompress_seconds),
        compress_e2e_gbps: gbps(n, compress_e2e),
        decompress_e2e_gbps: gbps(n, decompress_e2e),
    }];
    if config.cpu {
        let start = Instant::now();
        let cpu_stream = lzss::try_compress(input, params)?;
        let compress = start.elapsed().as_secs_f64();
        if cpu_stream != stream {
            return Err(fail("GPU and CPU streams differ"));
        }
        let start = Instant::now();
        let back = lzss::decompress(&cpu_stream)?;
        let decompress = start.elapsed().as_secs_f64();
        if back != *input {
            return Err(fail("the CPU decoder did not round-trip"));
        }
        let cpu = row("cpu", compress, decompress);
        rows.push(BenchRow {
            compress_e2e_gbps: cpu.compress_gbps,
            decompress_e2e_gbps: cpu.decompress_gbps,
            row: cpu,
        });
    }
    Ok(rows)
}
