//! The TPC-H column experiment: every column of the chosen tables compressed with each
//! contender, every round trip verified, ratios and throughputs reported.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, ArrayRef, Int32Array, Int64Array, UInt8Array};
use arrow::datatypes::DataType;
use serde::Serialize;

use super::baselines::Baseline;
use crate::codec::{CodecSpec, Placement, Suited, registry};
use crate::column::{self, CodecChoice, CompressedColumn, plain};
use crate::gpu::Backend;
use crate::tpch::{self, Table, TableData};
use crate::{Error, Result};

/// One compressor in the experiment: a colzip codec or a baseline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Contender {
    Colzip(CodecChoice),
    Baseline(Baseline),
}

impl Contender {
    /// colzip's codecs for any bytes with default parameters, then the baselines.
    pub fn defaults() -> Vec<Contender> {
        let mut all = Contender::colzip_defaults();
        all.extend(Baseline::DEFAULTS.into_iter().map(Contender::Baseline));
        all
    }

    /// colzip's codecs for any bytes (the registry's), with default parameters.
    pub fn colzip_defaults() -> Vec<Contender> {
        registry::names_suited(Suited::AnyBytes)
            .into_iter()
            .map(|name| {
                let spec = CodecSpec::named(name).expect("a registered name");
                Contender::Colzip(CodecChoice::Spec(spec))
            })
            .collect()
    }

    /// Parses a comma-separated list. A piece of the form `key=value` continues the codec
    /// before it, so `lzss:s=2,w=128,gmatch` names two contenders.
    pub fn parse_list(text: &str) -> Result<Vec<Contender>> {
        let mut specs: Vec<String> = Vec::new();
        for piece in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match specs.last_mut() {
                Some(last) if piece.contains('=') && !piece.contains(':') => {
                    last.push(',');
                    last.push_str(piece);
                }
                _ => specs.push(piece.to_string()),
            }
        }
        if specs.is_empty() {
            return Err(Error::format("no codec given"));
        }
        specs.iter().map(|s| s.parse()).collect()
    }
}

impl FromStr for Contender {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.parse::<Baseline>() {
            Ok(baseline) => Ok(Contender::Baseline(baseline)),
            Err(_) => text.parse::<CodecChoice>().map(Contender::Colzip),
        }
    }
}

impl fmt::Display for Contender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Contender::Colzip(CodecChoice::Spec(spec)) => {
                // A codec with its default parameters goes by its bare name, which keeps
                // reports readable.
                if CodecSpec::named(spec.family()) == Some(*spec) {
                    f.write_str(spec.family())
                } else {
                    spec.fmt(f)
                }
            }
            Contender::Colzip(choice) => choice.fmt(f),
            Contender::Baseline(baseline) => baseline.fmt(f),
        }
    }
}

/// One measured (column, contender) pair; the fields of `colzip tpch --format json`.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Row {
    pub table: String,
    pub column: String,
    pub arrow_type: String,
    pub rows: u64,
    /// Arrow's in-memory bytes of the column (buffers of this slice).
    pub raw_bytes: u64,
    pub codec: String,
    /// `gpu` when the GPU ran the codec on some part of the column (compressing or
    /// decompressing), else `cpu` (always for baselines).
    pub backend: String,
    /// Bytes of codec streams, for colzip and baselines alike (colzip's container adds a
    /// fixed header per column: field, lengths and checksums, 40 to 80 bytes).
    pub compressed_bytes: u64,
    pub ratio: f64,
    /// raw_bytes per second of compression, in GB/s (10^9 bytes).
    pub compress_gbps: f64,
    pub decompress_gbps: f64,
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    pub sf: f64,
    pub tables: Vec<Table>,
    pub contenders: Vec<Contender>,
    /// Runs per measurement; the fastest counts.
    pub repeat: usize,
    /// Store decimals and strings in the plain forms GPU papers measure (see [`peer_form`]).
    pub peer_forms: bool,
    /// Where colzip's codecs run (baselines always run on the CPU). Under `Auto` the GPU
    /// takes the parts of at least [`GPU_MIN_BYTES`](crate::codec::GPU_MIN_BYTES).
    pub backend: Backend,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sf: 0.1,
            tables: Table::ALL.to_vec(),
            contenders: Contender::defaults(),
            repeat: 1,
            peer_forms: false,
            backend: Backend::Auto,
        }
    }
}

/// Events for a progress display.
pub enum Event<'a> {
    Generating(Table),
    Generated(&'a TableData),
    Measured(&'a Row),
}

/// Runs the experiment; `on_event` sees progress as it happens.
pub fn run(config: &Config, on_event: &mut dyn FnMut(Event<'_>)) -> Result<Vec<Row>> {
    if config.repeat == 0 {
        return Err(Error::format("repeat must be at least 1"));
    }
    let placement = Placement::new(config.backend)?;
    let mut rows = Vec::new();
    for &table in &config.tables {
        on_event(Event::Generating(table));
        let mut data = tpch::generate(table, config.sf)?;
        if config.peer_forms {
            data.columns = data.columns.iter().map(peer_form).collect::<Result<_>>()?;
        }
        on_event(Event::Generated(&data));
        for (field, array) in data.schema.fields().iter().zip(&data.columns) {
            for contender in &config.contenders {
                let row = measure(
                    table,
                    field.name(),
                    array,
                    contender,
                    config.repeat,
                    placement,
                )?;
                on_event(Event::Measured(&row));
                rows.push(row);
            }
        }
    }
    Ok(rows)
}

fn fastest<T>(repeat: usize, mut f: impl FnMut() -> Result<T>) -> Result<(T, Duration)> {
    let mut best: Option<(T, Duration)> = None;
    for _ in 0..repeat {
        let start = Instant::now();
        let value = f()?;
        let elapsed = start.elapsed();
        if best.as_ref().is_none_or(|(_, b)| elapsed < *b) {
            best = Some((value, elapsed));
        }
    }
    Ok(best.expect("repeat >= 1"))
}

/// Compresses one column with one contender, checks the round trip, and times both ways.
/// colzip's codecs run where `placement` puts them; baselines on the CPU.
pub fn measure(
    table: Table,
    column_name: &str,
    array: &ArrayRef,
    contender: &Contender,
    repeat: usize,
    placement: Placement,
) -> Result<Row> {
    measure_column(
        table.name(),
        column_name,
        array,
        contender,
        repeat,
        placement,
    )
}

/// [`measure`] for a column of any table, named by `table` (the SQL function
/// `colzip_stats` measures tables of a DataFusion session this way).
pub fn measure_column(
    table: &str,
    column_name: &str,
    array: &ArrayRef,
    contender: &Contender,
    repeat: usize,
    placement: Placement,
) -> Result<Row> {
    let raw_bytes = arrow_bytes(array)?;
    let mut on_gpu = false;
    let (compressed_bytes, back, compress_time, decompress_time) = match contender {
        Contender::Colzip(choice) => {
            on_gpu = runs_on_gpu(array, choice, placement)?;
            let ((bytes, streams), compress_time) = fastest(repeat, || {
                let compressed = column::compress_on(array.as_ref(), choice, placement)?;
                Ok((compressed.to_bytes()?, compressed.compressed_bytes()))
            })?;
            let (back, decompress_time) = fastest(repeat, || {
                CompressedColumn::from_bytes(&bytes)
                    .and_then(|c| column::decompress_on(&c, placement))
            })?;
            (streams as u64, back, compress_time, decompress_time)
        }
        Contender::Baseline(baseline) => {
            let ((node, streams), compress_time) = fastest(repeat, || {
                let node = plain::encode(array.as_ref())?;
                let streams = node
                    .all_parts()
                    .iter()
                    .map(|p| baseline.compress(&p.bytes))
                    .collect::<Result<Vec<_>>>()?;
                Ok((node, streams))
            })?;
            let (back, decompress_time) = fastest(repeat, || {
                let decoded = decode_parts(&node, &mut streams.iter(), *baseline)?;
                plain::decode(array.data_type(), decoded)
            })?;
            let size = streams.iter().flatten().map(|s| s.len() as u64).sum();
            (size, back, compress_time, decompress_time)
        }
    };
    if back.as_ref() != array.as_ref() {
        return Err(Error::format(format!(
            "{table}.{column_name}: {contender} did not round-trip"
        )));
    }
    let gbps = |time: Duration| raw_bytes as f64 / time.as_secs_f64().max(1e-9) / 1e9;
    Ok(Row {
        table: table.to_string(),
        column: column_name.to_string(),
        arrow_type: array.data_type().to_string(),
        rows: array.len() as u64,
        raw_bytes,
        codec: contender.to_string(),
        backend: if on_gpu { "gpu" } else { "cpu" }.to_string(),
        compressed_bytes,
        ratio: raw_bytes as f64 / compressed_bytes.max(1) as f64,
        compress_gbps: gbps(compress_time),
        decompress_gbps: gbps(decompress_time),
    })
}

/// Whether compressing `array` with `choice` runs a codec on the GPU for some part. The
/// GPU decodes only parts it could have encoded (a part that did not shrink is stored and
/// decoded by neither), so this also covers decompression. Outside the timed runs.
fn runs_on_gpu(array: &ArrayRef, choice: &CodecChoice, placement: Placement) -> Result<bool> {
    if placement.gpu().is_none() {
        return Ok(false);
    }
    // The column layer sends all parts of one codec in one call, placed by its total.
    let node = plain::encode(array.as_ref())?;
    let mut totals: std::collections::BTreeMap<crate::codec::CodecId, usize> = Default::default();
    for part in node.all_parts() {
        *totals.entry(choice.spec_for(part).id()).or_default() += part.bytes.len();
    }
    Ok(totals.into_iter().any(|(id, total)| {
        placement
            .gpu_for(id, crate::codec::Direction::Compress, total)
            .is_some()
    }))
}

/// Arrow's in-memory bytes of `array`: `ArrayData::get_slice_memory_size`, which counts
/// only the 16-byte views of Utf8View/BinaryView arrays, plus those views' data buffers.
pub fn arrow_bytes(array: &ArrayRef) -> Result<u64> {
    let data = array.to_data();
    let mut bytes = data.get_slice_memory_size()?;
    if matches!(array.data_type(), DataType::Utf8View | DataType::BinaryView) {
        bytes += data.buffers()[1..].iter().map(|b| b.len()).sum::<usize>();
    }
    Ok(bytes as u64)
}

/// Decodes the baseline's streams into a node shaped like `node` (parts depth first, the
/// order `all_parts` gives); `node` only lends the roles, widths and lengths.
fn decode_parts<'a>(
    node: &plain::PlainNode,
    streams: &mut impl Iterator<Item = &'a Vec<Vec<u8>>>,
    baseline: Baseline,
) -> Result<plain::PlainNode> {
    let mut parts = Vec::with_capacity(node.parts.len());
    for part in &node.parts {
        let pieces = streams
            .next()
            .ok_or_else(|| Error::format("missing baseline stream"))?;
        parts.push(plain::PlainPart {
            role: part.role,
            width: part.width,
            bytes: arrow::buffer::Buffer::from_vec(baseline.decompress(pieces, part.bytes.len())?),
        });
    }
    let children = node
        .children
        .iter()
        .map(|child| decode_parts(child, streams, baseline))
        .collect::<Result<_>>()?;
    Ok(plain::PlainNode {
        rows: node.rows,
        null_count: node.null_count,
        parts,
        children,
    })
}

/// The plain forms GPU compression papers measure (and `../shared/GPU.md`'s peers):
/// decimals as Int32 whole units when every value is whole and fits, else as Int64 of the
/// unscaled value (cents for money); strings as their concatenated bytes (UInt8).
pub fn peer_form(array: &ArrayRef) -> Result<ArrayRef> {
    Ok(match array.data_type() {
        DataType::Decimal128(_, scale) => {
            let values = arrow::array::AsArray::as_primitive::<arrow::datatypes::Decimal128Type>(
                array.as_ref(),
            );
            let unit = 10i128
                .checked_pow(u32::try_from(*scale).unwrap_or(0))
                .unwrap_or(1);
            let whole = values
                .values()
                .iter()
                .all(|v| v % unit == 0 && i32::try_from(v / unit).is_ok());
            if whole {
                Arc::new(Int32Array::from_iter_values(
                    values.values().iter().map(|v| (v / unit) as i32),
                ))
            } else {
                let unscaled: Option<Vec<i64>> = values
                    .values()
                    .iter()
                    .map(|v| i64::try_from(*v).ok())
                    .collect();
                match unscaled {
                    Some(v) => Arc::new(Int64Array::from(v)),
                    None => array.clone(),
                }
            }
        }
        DataType::Utf8View | DataType::Utf8 | DataType::LargeUtf8 => {
            let node = plain::encode(array.as_ref())?;
            let data = node
                .parts
                .into_iter()
                .find(|p| p.role == plain::PartRole::Data)
                .map(|p| p.bytes.to_vec())
                .unwrap_or_default();
            Arc::new(UInt8Array::from(data))
        }
        _ => array.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_name_the_backend_that_ran() {
        let config = Config {
            sf: 0.001,
            tables: vec![Table::Nation],
            contenders: Contender::parse_list("lzss,snap").unwrap(),
            backend: Backend::Cpu,
            ..Config::default()
        };
        let rows = run(&config, &mut |_| {}).unwrap();
        assert!(!rows.is_empty());
        assert!(rows.iter().all(|r| r.backend == "cpu"), "{rows:?}");
        // Under auto, nation's columns are far below the GPU threshold: the CPU runs them.
        let auto = Config {
            backend: Backend::Auto,
            ..config
        };
        let rows = run(&auto, &mut |_| {}).unwrap();
        assert!(rows.iter().all(|r| r.backend == "cpu"), "{rows:?}");
    }
}
