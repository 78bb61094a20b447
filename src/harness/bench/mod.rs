//! `colzip bench`: every codec through the batched interface, on the GPU and the CPU in
//! the same run. The data is TPC-H lineitem generated in-process, each column in the
//! plain form GPU papers measure ([`peer_form`]: ints, cents, days,
//! concatenated text), or a user's own file (`--file PATH --type T`).
//!
//! Suites: `lzss` (every (S, W, C) of the grid, the column as one buffer), `gmatch`
//! (`gmatch:raw` on 64 KiB pages in one batch, as nvCOMP's Snappy batches; `gmatch`, the
//! blocks format containers store, and `gmatch:framed`, on the column as one buffer; and
//! `snap-stream:raw`, the GPU decoding pages the `snap` crate wrote) and `bwt` (the
//! column as one buffer, with `bzip2 -9` on all cores as its CPU peer); every other codec
//! of the registry with a GPU path (`intpack`) has a suite of its default spec, settled
//! for the column's width, on the column as one buffer. Each GPU row has
//! three forms ([`measure`]): kernel (device-resident), pinned host→host, and ordinary
//! memory (the public call); each has its CPU row from the same run (all cores, ordinary
//! memory; `snap` for the Snappy rows). GB/s are uncompressed bytes per second (10^9); a
//! figure not measured is `NaN` (JSON `null`, `-` in tables): the `snap` rows decode
//! streams `snap` wrote. bwt's compression kernel figure is its resident form: every GPU
//! stage on the lanes and steps of the pinned path, timed by events of the whole run
//! (host waits between its stages included), without the host's assembly of payloads and
//! streams. Every GPU stream is checked equal to the CPU's and to
//! decode back; a difference is an error, not a row.
//!
//! lzss and gmatch measure lineitem's fixed-width plain columns, bwt the string columns
//! [`BWT_COLUMNS`], codecs for integers [`INTPACK_COLUMNS`], unless columns are named (of any table: their prefix says which).
//!
//! ```no_run
//! use colzip::harness::bench::{Config, gpulz_grid, run};
//! let config = Config { grid: gpulz_grid(), ..Config::default() };
//! let rows = run(&config, &mut |_| {})?;
//! println!("{}", colzip::reporting::render(&rows, colzip::reporting::Format::Table)?);
//! # Ok::<(), colzip::Error>(())
//! ```

pub mod measure;
mod rows;
mod timing;

use std::path::{Path, PathBuf};

use arrow::array::{Array, ArrayRef};
use serde::Serialize;

use crate::archive::RawType;
use crate::codec::lzss::{self, LzssParams};
use crate::codec::{CodecSpec, Suited, bwt, gmatch, registry};
use crate::gpu::Gpu;
use crate::harness::columns::{Row, peer_form};
use crate::reporting::ReportRow;
use crate::tpch::{Table, generate};
use crate::{Error, Result};
pub use measure::Figures;

/// What `colzip bench` measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    /// `lzss` over the (S, W, C) grid.
    Lzss,
    /// `gmatch:raw` pages, `gmatch` blocks, `gmatch:framed`, `snap-stream:raw`.
    Gmatch,
    /// `bwt` on the column as one buffer, and `bzip2 -9`.
    Bwt,
    /// Any other codec of the registry with a GPU path (`intpack`, ...): its default spec
    /// on the column as one buffer, settled for the column's width.
    Codec(CodecSpec),
}

impl Suite {
    /// Rows per column: GPU and CPU rows (each only when asked for).
    pub fn rows_per_column(self, grid: usize, gpu: bool, cpu: bool) -> usize {
        let (gpu_rows, cpu_rows) = match self {
            Suite::Lzss => (grid, grid),
            Suite::Gmatch => (GMATCH_ROWS / 2, GMATCH_ROWS / 2),
            Suite::Bwt => (1, 2),
            Suite::Codec(_) => (1, 1),
        };
        (if gpu { gpu_rows } else { 0 }) + if cpu { cpu_rows } else { 0 }
    }
}

impl Suite {
    /// Every suite: one per codec of the registry with a GPU path, in the registry's
    /// order.
    pub fn all() -> Vec<Suite> {
        registry::codecs()
            .filter(|c| c.has_gpu_path)
            .filter_map(|c| CodecSpec::named(c.name))
            .map(|spec| match spec.family() {
                lzss::NAME => Suite::Lzss,
                gmatch::NAME => Suite::Gmatch,
                bwt::NAME => Suite::Bwt,
                _ => Suite::Codec(spec),
            })
            .collect()
    }

    /// The suite's name: its codec's.
    pub fn name(self) -> &'static str {
        match self {
            Suite::Lzss => lzss::NAME,
            Suite::Gmatch => gmatch::NAME,
            Suite::Bwt => bwt::NAME,
            Suite::Codec(spec) => spec.family(),
        }
    }

    /// Every suite's name.
    pub fn names() -> Vec<&'static str> {
        Suite::all().into_iter().map(Suite::name).collect()
    }
}

impl std::str::FromStr for Suite {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Suite::all()
            .into_iter()
            .find(|suite| suite.name() == s.trim())
            .ok_or_else(|| {
                Error::format(format!(
                    "unknown benchmark suite '{}' (expected {})",
                    s.trim(),
                    crate::codec::registry::or_list(&Suite::names())
                ))
            })
    }
}

/// A column's values as plain little-endian bytes.
#[derive(Clone, Debug)]
pub struct PlainColumn {
    /// Where it comes from: a TPC-H table's name, or `file`.
    pub table: String,
    pub name: String,
    /// The Arrow type of the plain form (Int32, Int64, UInt8 for text, ...).
    pub arrow_type: String,
    /// Bytes per value (lzss's symbol width follows it).
    pub width: usize,
    pub rows: u64,
    pub bytes: Vec<u8>,
}

impl PlainColumn {
    /// The file name `--write-columns` gives it, with the extension
    /// `../shared/tools/peers.py` reads the element type from.
    pub fn file_name(&self) -> String {
        let ext = match self.arrow_type.as_str() {
            "Int32" | "Date32" => "i32",
            "Int64" => "i64",
            "UInt8" => "txt",
            _ => "bin",
        };
        format!("{}.{ext}", self.name)
    }
}

/// The string columns the bwt suite measures when no columns are named: TPC-H's comment
/// columns, a name and a short categorical string.
pub const BWT_COLUMNS: [&str; 5] = [
    "l_comment",
    "o_comment",
    "ps_comment",
    "p_name",
    "l_shipinstruct",
];

/// The plain form of one generated column, or `None` when it has no fixed-width one.
fn plain_column(table: Table, name: &str, array: &ArrayRef) -> Result<Option<PlainColumn>> {
    let plain = peer_form(array)?;
    let d = plain.to_data();
    let Some(width) = d.data_type().primitive_width() else {
        return Ok(None);
    };
    let values = &d.buffers()[0].as_slice()[d.offset() * width..(d.offset() + d.len()) * width];
    Ok(Some(PlainColumn {
        table: table.name().to_string(),
        name: name.to_string(),
        arrow_type: plain.data_type().to_string(),
        width,
        rows: array.len() as u64,
        bytes: values.to_vec(),
    }))
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
        columns.extend(plain_column(table, field.name(), array)?);
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

/// The integer columns the suites of codecs for integers (intpack) measure when no columns
/// are named: lineitem's keys, quantities, prices, discounts and dates.
pub const INTPACK_COLUMNS: [&str; 7] = [
    "l_quantity",
    "l_shipdate",
    "l_orderkey",
    "l_extendedprice",
    "l_partkey",
    "l_suppkey",
    "l_discount",
];

/// The columns a suite measures when none are named, or `None` for lineitem's
/// fixed-width columns.
fn default_columns(suite: Suite) -> Option<&'static [&'static str]> {
    match suite {
        Suite::Bwt => Some(&BWT_COLUMNS),
        Suite::Codec(spec) if codec_suits(spec, Suited::Integers) => Some(&INTPACK_COLUMNS),
        _ => None,
    }
}

/// Whether the codec of `spec` suits `suited`.
fn codec_suits(spec: CodecSpec, suited: Suited) -> bool {
    registry::codecs().any(|c| c.name == spec.family() && c.suited == suited)
}

/// A column to measure and the suites that measure it.
#[derive(Clone, Debug)]
pub struct Planned {
    pub column: PlainColumn,
    pub suites: Vec<Suite>,
}

/// The columns at `sf` that `suites` measure: those named (of any table, found by their
/// prefix), or each suite's default; every table generated once. With no suite, lineitem's
/// columns (for `--write-columns`).
pub fn tpch_plan(sf: f64, named: Option<&[String]>, suites: &[Suite]) -> Result<Vec<Planned>> {
    // (table, column or every fixed-width one, suite)
    let mut wants: Vec<(Table, Option<&str>, Option<Suite>)> = Vec::new();
    let every_suite: Vec<Option<Suite>> = if suites.is_empty() {
        vec![None]
    } else {
        suites.iter().copied().map(Some).collect()
    };
    for &suite in &every_suite {
        match (named, suite) {
            (Some(names), _) => {
                for name in names {
                    let table = Table::of_column(name).ok_or_else(|| {
                        Error::format(format!("no TPC-H table has a column '{name}'"))
                    })?;
                    wants.push((table, Some(name.as_str()), suite));
                }
            }
            (None, suite) => match suite.and_then(default_columns) {
                Some(names) => {
                    for &name in names {
                        wants.push((
                            Table::of_column(name).expect("a TPC-H column"),
                            Some(name),
                            suite,
                        ));
                    }
                }
                None => wants.push((Table::Lineitem, None, suite)),
            },
        }
    }
    let mut tables: Vec<Table> = Vec::new();
    for (table, _, _) in &wants {
        if !tables.contains(table) {
            tables.push(*table);
        }
    }
    // Planned columns with the index of the first want naming them, to keep that order.
    let mut planned: Vec<(usize, Planned)> = Vec::new();
    for table in tables {
        let data = generate(table, sf)?;
        for (field, array) in data.schema.fields().iter().zip(&data.columns) {
            let matching: Vec<usize> = (0..wants.len())
                .filter(|&i| {
                    let (t, name, _) = wants[i];
                    t == table && name.is_none_or(|n| n == field.name())
                })
                .collect();
            let Some(&first) = matching.first() else {
                continue;
            };
            let Some(column) = plain_column(table, field.name(), array)? else {
                if wants[first].1.is_some() {
                    return Err(Error::format(format!(
                        "{table}.{} has no plain fixed-width form",
                        field.name()
                    )));
                }
                continue;
            };
            let mut suites: Vec<Suite> = matching.iter().filter_map(|&i| wants[i].2).collect();
            suites.dedup();
            planned.push((first, Planned { column, suites }));
        }
    }
    for (table, name, _) in &wants {
        if let Some(name) = name
            && !planned.iter().any(|(_, p)| p.column.name == *name)
        {
            return Err(Error::format(format!("{table} has no column '{name}'")));
        }
    }
    planned.sort_by_key(|(first, _)| *first);
    Ok(planned.into_iter().map(|(_, p)| p).collect())
}

/// A user's file as one plain column of `raw_type` values.
pub fn file_column(path: &Path, raw_type: RawType) -> Result<PlainColumn> {
    let bytes = std::fs::read(path)
        .map_err(|e| Error::format(format!("cannot read {}: {e}", path.display())))?;
    let width = raw_type.width().unwrap_or(1);
    if !bytes.len().is_multiple_of(width) {
        return Err(Error::format(format!(
            "{} holds {} bytes, not a whole number of {}-byte {} values",
            path.display(),
            bytes.len(),
            width,
            raw_type.name()
        )));
    }
    Ok(PlainColumn {
        table: "file".to_string(),
        name: path
            .file_name()
            .map_or_else(|| "input".to_string(), |n| n.to_string_lossy().into_owned()),
        arrow_type: raw_type.name().to_string(),
        width,
        rows: (bytes.len() / width) as u64,
        bytes,
    })
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

/// Where the benchmark's columns come from.
#[derive(Clone, Debug)]
pub enum Source {
    /// TPC-H lineitem at a scale factor, all fixed-width plain columns or those named.
    Tpch {
        sf: f64,
        columns: Option<Vec<String>>,
    },
    /// A user's file of raw values.
    File { path: PathBuf, raw_type: RawType },
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub source: Source,
    pub grid: Vec<LzssParams>,
    /// The suites to run.
    pub suites: Vec<Suite>,
    /// Timed runs per figure (the median counts).
    pub runs: usize,
    /// Run the GPU rows (the GPU must be usable).
    pub gpu: bool,
    /// Also run the CPU rows.
    pub cpu: bool,
    /// Write each plain column to this directory (for peers on the same bytes).
    pub write_columns: Option<PathBuf>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            source: Source::Tpch {
                sf: 1.0,
                columns: None,
            },
            grid: gpulz_grid(),
            suites: vec![Suite::Lzss, Suite::Gmatch],
            runs: 5,
            gpu: true,
            cpu: true,
            write_columns: None,
        }
    }
}

/// A row of `colzip bench --format json`: the fields of `colzip tpch --format json`
/// (`compress_gbps`/`decompress_gbps` are **kernel** figures on the GPU: data resident on
/// the device), plus **pinned** host-to-host (`*_e2e_gbps`) and **ordinary memory**
/// (`*_vec_gbps`, the public calls from ordinary memory: `compress_batch`, and the
/// zero-copy `decompress_buffers` whose outputs are Arrow buffers) figures. CPU rows carry their wall-clock
/// figure (all cores, ordinary memory) in all three.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct BenchRow {
    #[serde(flatten)]
    pub row: Row,
    pub compress_e2e_gbps: f64,
    pub decompress_e2e_gbps: f64,
    pub compress_vec_gbps: f64,
    pub decompress_vec_gbps: f64,
    /// GPUs the ordinary-memory calls split each batch across: every one the process
    /// opened (`COLZIP_GPUS` chooses); 0 for CPU rows. The kernel and pinned figures are
    /// one device's.
    pub gpus: usize,
}

impl ReportRow for BenchRow {
    const HEADER: &'static [&'static str] = &[
        "column",
        "arrow_type",
        "raw_bytes",
        "codec",
        "backend",
        "ratio",
        "kernel_c",
        "kernel_d",
        "pinned_c",
        "pinned_d",
        "vec_c",
        "vec_d",
        "gpus",
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
            speed(r.compress_gbps),
            speed(r.decompress_gbps),
            speed(self.compress_e2e_gbps),
            speed(self.decompress_e2e_gbps),
            speed(self.compress_vec_gbps),
            speed(self.decompress_vec_gbps),
            self.gpus.to_string(),
        ]
    }

    fn numeric(i: usize) -> bool {
        i == 2 || i >= 5
    }
}

/// A GB/s cell: `-` for a direction not measured (`NaN`).
fn speed(gbps: f64) -> String {
    if gbps.is_nan() {
        "-".to_string()
    } else {
        format!("{gbps:.2}")
    }
}

/// Progress of a run.
pub enum Event<'a> {
    Generating,
    /// The columns are ready; this many rows will follow.
    Generated(&'a [Planned], usize),
    Measured(&'a BenchRow),
}

/// Rows per column of the gmatch suite (GPU and CPU rows of its four kinds).
pub const GMATCH_ROWS: usize = 8;

/// Runs the benchmark: the GPU rows and the CPU rows, each when configured.
pub fn run(config: &Config, on_event: &mut dyn FnMut(Event<'_>)) -> Result<Vec<BenchRow>> {
    if config.suites.contains(&Suite::Lzss) && config.grid.is_empty() {
        return Err(Error::format("the parameter grid is empty"));
    }
    if config.suites.is_empty() && config.write_columns.is_none() {
        return Err(Error::format("no benchmark suite chosen"));
    }
    if !config.gpu && !config.cpu && !config.suites.is_empty() {
        return Err(Error::format(
            "neither GPU nor CPU rows asked for: nothing to measure",
        ));
    }
    on_event(Event::Generating);
    let planned = match &config.source {
        Source::Tpch { sf, columns } => tpch_plan(*sf, columns.as_deref(), &config.suites)?,
        Source::File { path, raw_type } => vec![Planned {
            column: file_column(path, *raw_type)?,
            suites: config.suites.clone(),
        }],
    };
    if let Some(dir) = &config.write_columns {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::format(format!("cannot create {}: {e}", dir.display())))?;
        for Planned { column, .. } in &planned {
            let path = dir.join(column.file_name());
            std::fs::write(&path, &column.bytes)
                .map_err(|e| Error::format(format!("cannot write {}: {e}", path.display())))?;
        }
    }
    let expected = planned
        .iter()
        .flat_map(|p| &p.suites)
        .map(|suite| suite.rows_per_column(config.grid.len(), config.gpu, config.cpu))
        .sum();
    on_event(Event::Generated(&planned, expected));
    if config.suites.is_empty() && config.write_columns.is_some() {
        // Only the column files were wanted (for peers): no GPU needed.
        return Ok(Vec::new());
    }
    let gpu = if config.gpu { Some(Gpu::get()?) } else { None };
    let mut rows = Vec::new();
    for Planned { column, suites } in &planned {
        let mut emit = |row: BenchRow| {
            on_event(Event::Measured(&row));
            rows.push(row);
        };
        if suites.contains(&Suite::Gmatch) {
            rows::gmatch(gpu, config, column, &mut emit)?;
        }
        if suites.contains(&Suite::Lzss) {
            for params in &config.grid {
                rows::lzss(gpu, config, column, params, &mut emit)?;
            }
        }
        if suites.contains(&Suite::Bwt) {
            rows::bwt(gpu, config, column, &mut emit)?;
        }
        for suite in suites {
            if let Suite::Codec(spec) = suite {
                rows::codec(gpu, config, column, spec, &mut emit)?;
            }
        }
    }
    Ok(rows)
}
