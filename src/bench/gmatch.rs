//! The G-match rows of `colzip bench`: a column cut into 64 KiB pages (the unit nvCOMP's
//! Snappy batches use) compressed and decompressed in one batch (`gmatch:raw`), the
//! column as one framed stream (`gmatch:framed`, 64 KiB chunks with GPU CRCs), and the
//! GPU decoding pages that the `snap` crate wrote (`snap-stream:raw`). Each GPU row has
//! its CPU row from the same run: gmatch's CPU reference, and `snap` on all host cores.
//! Kernel figures are device-event medians; end-to-end figures are wall-clock medians
//! from host memory to host memory (pageable).

use std::time::Instant;

use rayon::prelude::*;

use super::{BenchRow, Config, PlainColumn, gbps, median_seconds};
use crate::codec::gmatch::{self, gpu as gpu_gmatch};
use crate::gpu::Gpu;
use crate::tpch::Row;
use crate::{Error, Result};

/// Bytes per page of the batched rows.
pub const PAGE_BYTES: usize = 1 << 16;

/// Codec fields of the rows.
pub const RAW: &str = "gmatch:raw";
pub const FRAMED: &str = "gmatch:framed";
pub const SNAP_RAW: &str = "snap-stream:raw";

/// Rows per column (GPU and CPU for each of the three).
pub const ROWS: usize = 6;

/// A row's figures.
struct Figures {
    compressed: usize,
    compress: f64,
    decompress: f64,
    compress_e2e: f64,
    decompress_e2e: f64,
}

fn row(column: &PlainColumn, codec: &str, backend: &str, f: &Figures) -> BenchRow {
    let n = column.bytes.len();
    BenchRow {
        row: Row {
            table: column.table.name().to_string(),
            column: column.name.clone(),
            arrow_type: column.arrow_type.clone(),
            rows: column.rows,
            raw_bytes: n as u64,
            codec: codec.to_string(),
            backend: backend.to_string(),
            compressed_bytes: f.compressed as u64,
            ratio: n as f64 / f.compressed.max(1) as f64,
            compress_gbps: gbps(n, f.compress),
            decompress_gbps: gbps(n, f.decompress),
        },
        compress_e2e_gbps: gbps(n, f.compress_e2e),
        decompress_e2e_gbps: gbps(n, f.decompress_e2e),
    }
}

fn total_len(streams: &[Vec<u8>]) -> usize {
    streams.iter().map(Vec::len).sum()
}

fn seconds(f: impl FnOnce() -> Result<()>) -> Result<f64> {
    let start = Instant::now();
    f()?;
    Ok(start.elapsed().as_secs_f64())
}

/// The rows of one column, each checked: GPU bytes equal to the CPU's, every decoder's
/// output equal to the column.
pub(super) fn measure(gpu: &Gpu, config: &Config, column: &PlainColumn) -> Result<Vec<BenchRow>> {
    let input = &column.bytes;
    let fail = |codec: &str, what: &str| {
        Error::Gpu(format!("{}.{} {codec}: {what}", column.table, column.name))
    };
    let pages: Vec<&[u8]> = input.chunks(PAGE_BYTES).collect();
    let runs = config.runs;
    let mut rows = Vec::with_capacity(ROWS);

    // gmatch:raw, pages in one batch.
    let (compress, streams) =
        gpu_gmatch::time_compress(gpu, &pages, gpu_gmatch::Format::Raw, runs)?;
    let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    let (decompress, decoded) = gpu_gmatch::time_raw_batch(gpu, &refs, runs)?;
    if decoded != *input {
        return Err(fail(RAW, "the GPU decoder did not round-trip"));
    }
    let compress_e2e = median_seconds(runs, || {
        gpu_gmatch::compress_raw_batch(gpu, &pages).map(drop)
    })?;
    let decompress_e2e = median_seconds(runs, || {
        gpu_gmatch::decompress_raw_batch(gpu, &refs, PAGE_BYTES).map(drop)
    })?;
    let gpu_raw = Figures {
        compressed: total_len(&streams),
        compress,
        decompress,
        compress_e2e,
        decompress_e2e,
    };
    rows.push(row(column, RAW, "gpu", &gpu_raw));
    if config.cpu {
        let mut cpu_streams = Vec::new();
        let compress = seconds(|| {
            cpu_streams = pages
                .par_iter()
                .map(|page| gmatch::compress_raw(page))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(())
        })?;
        if cpu_streams != streams {
            return Err(fail(RAW, "GPU and CPU streams differ"));
        }
        let mut back = Vec::new();
        let decompress = seconds(|| {
            back = streams
                .par_iter()
                .map(|s| gmatch::decompress_raw(s))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            Ok(())
        })?;
        if back.concat() != *input {
            return Err(fail(RAW, "the CPU decoder did not round-trip"));
        }
        rows.push(row(
            column,
            RAW,
            "cpu",
            &wall(total_len(&streams), compress, decompress),
        ));
    }

    // gmatch:framed, the column as one stream.
    let (compress, mut framed) =
        gpu_gmatch::time_compress(gpu, &[input], gpu_gmatch::Format::Framed, runs)?;
    let framed = framed.swap_remove(0);
    let (decompress, decoded) = gpu_gmatch::time_framed(gpu, &framed, runs)?;
    if decoded != *input {
        return Err(fail(FRAMED, "the GPU decoder did not round-trip"));
    }
    let compress_e2e = median_seconds(runs, || gpu_gmatch::compress_framed(gpu, input).map(drop))?;
    let decompress_e2e = median_seconds(runs, || {
        gpu_gmatch::decompress_framed(gpu, &framed, input.len()).map(drop)
    })?;
    rows.push(row(
        column,
        FRAMED,
        "gpu",
        &Figures {
            compressed: framed.len(),
            compress,
            decompress,
            compress_e2e,
            decompress_e2e,
        },
    ));
    if config.cpu {
        let mut cpu_framed = Vec::new();
        let compress = seconds(|| {
            cpu_framed = gmatch::compress_framed(input);
            Ok(())
        })?;
        if cpu_framed != framed {
            return Err(fail(FRAMED, "GPU and CPU streams differ"));
        }
        let mut back = Vec::new();
        let decompress = seconds(|| {
            back = gmatch::decompress_framed(&framed)?;
            Ok(())
        })?;
        if back != *input {
            return Err(fail(FRAMED, "the CPU decoder did not round-trip"));
        }
        rows.push(row(
            column,
            FRAMED,
            "cpu",
            &wall(framed.len(), compress, decompress),
        ));
    }

    // snap-stream:raw: pages written by `snap` on all host cores, decoded on the GPU.
    let mut snap_streams = Vec::new();
    let snap_compress = seconds(|| {
        snap_streams = pages
            .par_iter()
            .map_init(snap::raw::Encoder::new, |encoder, page| {
                encoder.compress_vec(page)
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|e| Error::format(format!("snap: {e}")))?;
        Ok(())
    })?;
    let refs: Vec<&[u8]> = snap_streams.iter().map(Vec::as_slice).collect();
    let (decompress, decoded) = gpu_gmatch::time_raw_batch(gpu, &refs, runs)?;
    if decoded != *input {
        return Err(fail(SNAP_RAW, "the GPU decoder did not round-trip"));
    }
    let decompress_e2e = median_seconds(runs, || {
        gpu_gmatch::decompress_raw_batch(gpu, &refs, PAGE_BYTES).map(drop)
    })?;
    let snap_len = total_len(&snap_streams);
    // The GPU does not compress in this row: its compression figures are 0.
    rows.push(row(
        column,
        SNAP_RAW,
        "gpu",
        &Figures {
            compressed: snap_len,
            compress: 0.0,
            decompress,
            compress_e2e: 0.0,
            decompress_e2e,
        },
    ));
    if config.cpu {
        let mut back = Vec::new();
        let decompress = seconds(|| {
            back = snap_streams
                .par_iter()
                .map_init(snap::raw::Decoder::new, |decoder, s| {
                    decoder.decompress_vec(s)
                })
                .collect::<std::result::Result<Vec<_>, _>>()
                .map_err(|e| Error::format(format!("snap: {e}")))?;
            Ok(())
        })?;
        if back.concat() != *input {
            return Err(fail(SNAP_RAW, "snap did not round-trip"));
        }
        rows.push(row(
            column,
            SNAP_RAW,
            "cpu",
            &wall(snap_len, snap_compress, decompress),
        ));
    }
    Ok(rows)
}

/// Figures of a CPU row: wall-clock seconds, end to end equal to them.
fn wall(compressed: usize, compress: f64, decompress: f64) -> Figures {
    Figures {
        compressed,
        compress,
        decompress,
        compress_e2e: compress,
        decompress_e2e: decompress,
    }
}
