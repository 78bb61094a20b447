//! The rows of each suite: which buffers, which codecs, which CPU counterparts.

use rayon::prelude::*;

use super::measure::{Figures, cpu_row, gpu_decode_row, gpu_row, median_seconds};
use super::{BenchRow, Config, PlainColumn, codec_name};
use crate::codec::bwt::BwtParams;
use crate::codec::lzss::LzssParams;
use crate::codec::{Codec, CodecId, CodecSpec, Direction, Placement, SnappyFormat};
use crate::gpu::Gpu;
use crate::harness::columns::{Baseline, Row};
use crate::{Error, Result};

/// Bytes per page of the batched Snappy rows (the unit nvCOMP's Snappy batches use).
pub const PAGE_BYTES: usize = 1 << 16;

fn row(column: &PlainColumn, codec: &str, backend: &str, f: &Figures) -> BenchRow {
    let n = column.bytes.len();
    BenchRow {
        row: Row {
            table: column.table.clone(),
            column: column.name.clone(),
            arrow_type: column.arrow_type.clone(),
            rows: column.rows,
            raw_bytes: n as u64,
            codec: codec.to_string(),
            backend: backend.to_string(),
            compressed_bytes: f.compressed as u64,
            ratio: n as f64 / f.compressed.max(1) as f64,
            compress_gbps: f.compress_kernel,
            decompress_gbps: f.decompress_kernel,
        },
        compress_e2e_gbps: f.compress_pinned,
        decompress_e2e_gbps: f.decompress_pinned,
        compress_vec_gbps: f.compress_vec,
        decompress_vec_gbps: f.decompress_vec,
        gpus: f.gpus,
    }
}

/// Names the column and codec in an error.
fn within<T>(column: &PlainColumn, codec: &str, result: Result<T>) -> Result<T> {
    result.map_err(|e| Error::format(format!("{}.{} {codec}: {e}", column.table, column.name)))
}

/// A GPU row and (when configured) its CPU row, the GPU's streams checked against the CPU's.
/// A codec that compresses only on the CPU gets a GPU row of decoding alone, of the
/// CPU's streams.
fn pair(
    gpu: Option<&'static Gpu>,
    config: &Config,
    column: &PlainColumn,
    name: &str,
    codec: &Codec,
    buffers: &[&[u8]],
    emit: &mut dyn FnMut(BenchRow),
) -> Result<()> {
    let cpu = if config.cpu {
        Some(within(
            column,
            name,
            cpu_row(codec, buffers, config.runs.min(3)),
        )?)
    } else {
        None
    };
    let Some(gpu) = gpu else {
        if let Some((figures, _)) = cpu {
            emit(row(column, name, "cpu", &figures));
        }
        return Ok(());
    };
    let gpu_figures = if codec.id().has_gpu_path(Direction::Compress) {
        within(
            column,
            name,
            gpu_row(
                gpu,
                codec,
                buffers,
                cpu.as_ref().map(|(_, s)| s),
                config.runs,
            ),
        )?
    } else {
        let streams = match &cpu {
            Some((_, streams)) => streams.clone(),
            None => within(
                column,
                name,
                codec
                    .compress_batch(&Placement::CPU, buffers)
                    .map_err(Error::from),
            )?,
        };
        let refs = streams.to_refs();
        within(
            column,
            name,
            gpu_decode_row(gpu, codec.id(), &refs, buffers, config.runs),
        )?
    };
    emit(row(column, name, "gpu", &gpu_figures));
    if let Some((figures, _)) = cpu {
        emit(row(column, name, "cpu", &figures));
    }
    Ok(())
}

/// The CPU row of a baseline compressor on `column` (all cores, 4 MiB pieces).
fn baseline_row(column: &PlainColumn, baseline: Baseline, runs: usize) -> Result<BenchRow> {
    let name = baseline.to_string();
    let mut pieces = Vec::new();
    let compress = median_seconds(runs, || {
        pieces = baseline.compress(&column.bytes)?;
        Ok(())
    })?;
    let mut back = Vec::new();
    let decompress = median_seconds(runs, || {
        back = baseline.decompress(&pieces, column.bytes.len())?;
        Ok(())
    })?;
    if back != column.bytes {
        return Err(Error::format(format!(
            "{}: {name} did not round-trip",
            column.name
        )));
    }
    let compressed = pieces.iter().map(Vec::len).sum();
    let figures = Figures::wall(compressed, column.bytes.len(), compress, decompress);
    Ok(row(column, &name, "cpu", &figures))
}

/// The gmatch suite of one column.
pub(super) fn gmatch(
    gpu: Option<&'static Gpu>,
    config: &Config,
    column: &PlainColumn,
    emit: &mut dyn FnMut(BenchRow),
) -> Result<()> {
    let pages: Vec<&[u8]> = column.bytes.chunks(PAGE_BYTES).collect();
    let whole = [&column.bytes[..]];
    pair(
        gpu,
        config,
        column,
        "gmatch:raw",
        &Codec::Gmatch(SnappyFormat::Raw),
        &pages,
        emit,
    )?;
    pair(
        gpu,
        config,
        column,
        "gmatch",
        &Codec::Gmatch(SnappyFormat::Blocks),
        &whole,
        emit,
    )?;
    pair(
        gpu,
        config,
        column,
        "gmatch:framed",
        &Codec::Gmatch(SnappyFormat::Framed),
        &whole,
        emit,
    )?;

    // Pages the `snap` crate wrote on all host cores, decoded on the GPU; snap's own CPU
    // figures are the CPU row.
    let name = "snap-stream:raw";
    let runs = config.runs.min(3);
    let mut snap_streams: Vec<Vec<u8>> = Vec::new();
    let compress = median_seconds(runs, || {
        snap_streams = pages
            .par_iter()
            .map_init(snap::raw::Encoder::new, |e, page| e.compress_vec(page))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::format(format!("snap: {e}")))?;
        Ok(())
    })?;
    let refs: Vec<&[u8]> = snap_streams.iter().map(Vec::as_slice).collect();
    if let Some(gpu) = gpu {
        let figures = within(
            column,
            name,
            gpu_decode_row(gpu, CodecId::GmatchRaw, &refs, &pages, config.runs),
        )?;
        emit(row(column, name, "gpu", &figures));
    }
    if config.cpu {
        let mut back: Vec<Vec<u8>> = Vec::new();
        let decompress = median_seconds(runs, || {
            back = refs
                .par_iter()
                .map_init(snap::raw::Decoder::new, |d, s| d.decompress_vec(s))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::format(format!("snap: {e}")))?;
            Ok(())
        })?;
        if back.iter().zip(&pages).any(|(a, b)| a != b) {
            return Err(Error::format(format!(
                "{}: snap did not round-trip",
                column.name
            )));
        }
        let compressed = refs.iter().map(|s| s.len()).sum();
        let figures = Figures::wall(compressed, column.bytes.len(), compress, decompress);
        emit(row(column, name, "cpu", &figures));
    }
    Ok(())
}

/// One lzss parameter set of one column (the column as one buffer).
pub(super) fn lzss(
    gpu: Option<&'static Gpu>,
    config: &Config,
    column: &PlainColumn,
    params: &LzssParams,
    emit: &mut dyn FnMut(BenchRow),
) -> Result<()> {
    let name = codec_name(params);
    pair(
        gpu,
        config,
        column,
        &name,
        &Codec::Lzss(*params),
        &[&column.bytes[..]],
        emit,
    )
}

/// The suite of a codec without a suite of its own (intpack, ...): its `spec` settled for
/// the column's width, on the column as one buffer.
pub(super) fn codec(
    gpu: Option<&'static Gpu>,
    config: &Config,
    column: &PlainColumn,
    spec: &CodecSpec,
    emit: &mut dyn FnMut(BenchRow),
) -> Result<()> {
    let codec = spec.settle(column.width, &column.bytes)?;
    pair(
        gpu,
        config,
        column,
        &spec.to_string(),
        &codec,
        &[&column.bytes[..]],
        emit,
    )
}

/// The bwt suite of one column (the column as one buffer, the default block size), with
/// `bzip2 -9` on all cores as its CPU peer.
pub(super) fn bwt(
    gpu: Option<&'static Gpu>,
    config: &Config,
    column: &PlainColumn,
    emit: &mut dyn FnMut(BenchRow),
) -> Result<()> {
    let codec = Codec::Bwt(BwtParams::default());
    pair(
        gpu,
        config,
        column,
        "bwt",
        &codec,
        &[&column.bytes[..]],
        emit,
    )?;
    if config.cpu {
        emit(baseline_row(
            column,
            Baseline::Bzip2(9),
            config.runs.min(3),
        )?);
    }
    Ok(())
}
