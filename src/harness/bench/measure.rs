//! One benchmark row: a codec over a batch of buffers through the batched interface, in
//! each of its three forms of memory, checked byte for byte.
//!
//! - **kernel** (`compress_gbps`, `decompress_gbps`): the device-resident form, the
//!   buffers on the GPU and the kernels alone, timed with device events;
//! - **pinned** (`compress_e2e_gbps`, `decompress_e2e_gbps`): pinned host memory to
//!   pinned host memory, through the step pipeline, wall clock;
//! - **ordinary** (`compress_vec_gbps`, `decompress_vec_gbps`): the public call a library
//!   user makes from ordinary memory, wall clock: `compress_batch` on `Vec`s, and the
//!   zero-copy `decompress_buffers`, whose outputs the caller reads as Arrow buffers (on
//!   the GPU, buffers of the pinned pool, warm after the first, unmeasured call).
//!
//! Every figure is the median of the runs, in uncompressed bytes per second (10^9). The
//! GPU's streams must equal the CPU's, and every decoder's output the input.

use std::time::Instant;

use super::timing::time_on_device;
use crate::codec::{Codec, CodecId, Packed, Placement};
use crate::gpu::{Gpu, PinnedBuffer};
use crate::measure::upper_median;
use crate::memory::parallel_concat;
use crate::{Error, Result};

/// The figures of one row.
#[derive(Clone, Copy, Debug, Default)]
pub struct Figures {
    pub compressed: usize,
    pub compress_kernel: f64,
    pub decompress_kernel: f64,
    pub compress_pinned: f64,
    pub decompress_pinned: f64,
    pub compress_vec: f64,
    pub decompress_vec: f64,
    /// GPUs the ordinary-memory calls split their batch across (0: the CPU).
    pub gpus: usize,
}

impl Figures {
    /// A CPU row's figures: `raw` bytes in `compress` and `decompress` seconds of wall
    /// time on all cores, the same figure in all three forms.
    pub fn wall(compressed: usize, raw: usize, compress: f64, decompress: f64) -> Self {
        let (c, d) = (gbps(raw, compress), gbps(raw, decompress));
        Figures {
            compressed,
            compress_kernel: c,
            decompress_kernel: d,
            compress_pinned: c,
            decompress_pinned: d,
            compress_vec: c,
            decompress_vec: d,
            gpus: 0,
        }
    }
}

/// Median wall time of `runs` calls of `f` (after one unmeasured call), seconds: the
/// [`upper_median`], one of the runs.
pub(crate) fn median_seconds(runs: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed().as_secs_f64());
    }
    Ok(upper_median(&mut times))
}

/// Uncompressed bytes per second, in 10^9.
pub(crate) fn gbps(bytes: usize, seconds: f64) -> f64 {
    if seconds.is_nan() {
        f64::NAN // not measured
    } else if seconds > 0.0 {
        bytes as f64 / seconds / 1e9
    } else {
        0.0
    }
}

/// The CPU row of `codec` on `buffers` (all cores, ordinary memory; the three forms are
/// the same figure), with the streams for the GPU row to be checked against.
pub fn cpu_row(codec: &Codec, buffers: &[&[u8]], runs: usize) -> Result<(Figures, Packed)> {
    let total: usize = buffers.iter().map(|b| b.len()).sum();
    let lens: Vec<usize> = buffers.iter().map(|b| b.len()).collect();
    let mut streams = Packed::default();
    let compress = median_seconds(runs, || {
        streams = codec.compress_batch(&Placement::CPU, buffers)?;
        Ok(())
    })?;
    let refs = streams.to_refs();
    let mut back = Packed::default();
    let decompress = median_seconds(runs, || {
        back = codec.id().decompress_batch(&Placement::CPU, &refs, &lens)?;
        Ok(())
    })?;
    check_equal(&back, buffers, "the CPU decoder did not round-trip")?;
    let figures = Figures::wall(streams.bytes().len(), total, compress, decompress);
    Ok((figures, streams))
}

fn check_equal(back: &Packed, buffers: &[&[u8]], what: &str) -> Result<()> {
    if back.len() != buffers.len() || back.iter().zip(buffers).any(|(a, b)| a != *b) {
        return Err(Error::format(what.to_string()));
    }
    Ok(())
}

/// Median seconds of the zero-copy decode of `streams` (Arrow buffers on the pinned
/// pool), whose outputs must equal `buffers`. Each run's outputs are dropped before the
/// next starts, so their pool buffer serves it, as for a caller that reads and drops.
fn zero_copy_seconds(
    id: CodecId,
    placement: &Placement,
    streams: &[&[u8]],
    buffers: &[&[u8]],
    runs: usize,
) -> Result<f64> {
    let lens: Vec<usize> = buffers.iter().map(|b| b.len()).collect();
    let mut back = Vec::new();
    let seconds = median_seconds(runs, || {
        back.clear();
        back = id.decompress_buffers(placement, streams, &lens)?;
        Ok(())
    })?;
    if back.len() != buffers.len() || back.iter().zip(buffers).any(|(a, b)| a.as_slice() != *b) {
        return Err(Error::format(
            "the GPU decoder did not round-trip (ordinary memory, zero-copy)",
        ));
    }
    Ok(seconds)
}

/// The public calls' placement: every GPU the process opened, a batch split across them
/// as a library user's would be. The kernel and pinned forms run on one device.
fn every_gpu() -> Result<Placement> {
    Ok(Placement::on_all(
        Gpu::all().map_err(crate::codec::CodecError::from)?,
    ))
}

/// The GPU row of `codec` on `buffers`: all three forms, every stream checked equal to
/// `expected` (the CPU's) when given, every output to the input.
pub fn gpu_row(
    gpu: &'static Gpu,
    codec: &Codec,
    buffers: &[&[u8]],
    expected: Option<&Packed>,
    runs: usize,
) -> Result<Figures> {
    let placement = every_gpu()?;
    let total: usize = buffers.iter().map(|b| b.len()).sum();
    let lens: Vec<usize> = buffers.iter().map(|b| b.len()).collect();
    let id = codec.id();

    // Ordinary memory: the public calls.
    let mut streams = Packed::default();
    let compress_vec = median_seconds(runs, || {
        streams = codec.compress_batch(&placement, buffers)?;
        Ok(())
    })?;
    if let Some(expected) = expected
        && streams != *expected
    {
        return Err(Error::format("GPU and CPU streams differ"));
    }
    let refs = streams.to_refs();
    let decompress_vec = zero_copy_seconds(id, &placement, &refs, buffers, runs)?;

    // Pinned memory: inputs and outputs in page-locked buffers.
    let mut pinned_in = PinnedBuffer::new(gpu, total)?;
    parallel_concat(&mut pinned_in.as_mut_slice()[..total], buffers);
    let mut at = 0;
    let inputs: Vec<&[u8]> = lens
        .iter()
        .map(|&len| {
            at += len;
            &pinned_in.as_slice()[at - len..at]
        })
        .collect();
    let room: usize = lens.iter().map(|&l| codec.max_compressed_len(l)).sum();
    let mut pinned_streams = PinnedBuffer::new(gpu, room)?;
    let mut ranges = Vec::new();
    let compress_pinned = median_seconds(runs, || {
        ranges = codec.compress_pinned(gpu, &inputs, &mut pinned_streams)?;
        Ok(())
    })?;
    let end = ranges.last().map_or(0, |r| r.end);
    if pinned_streams.as_slice()[..end] != *streams.bytes() {
        return Err(Error::format("the pinned pipeline's streams differ"));
    }
    let stream_refs: Vec<&[u8]> = ranges
        .iter()
        .map(|r| &pinned_streams.as_slice()[r.clone()])
        .collect();
    let mut pinned_out = PinnedBuffer::new(gpu, total)?;
    let decompress_pinned = median_seconds(runs, || {
        id.decompress_pinned(gpu, &stream_refs, &lens, &mut pinned_out)?;
        Ok(())
    })?;
    if pinned_out.as_slice()[..total] != pinned_in.as_slice()[..total] {
        return Err(Error::format(
            "the GPU decoder did not round-trip (pinned memory)",
        ));
    }
    drop((pinned_in, pinned_out));

    // Device-resident: the kernels alone (`NaN` for a codec without a resident form).
    let mut lane = gpu.lane()?;
    let stream = lane.stream().clone();
    let compress_kernel = if codec.has_device_compressor() {
        let mut job = codec.device_compressor(gpu, &mut lane, buffers)?;
        let seconds = time_on_device(gpu, &stream, runs, || Ok(job.enqueue(gpu, &mut lane)?))?;
        if job.output_bytes(gpu, &mut lane)? == 0 && total > 0 {
            return Err(Error::format("the resident compression wrote nothing"));
        }
        seconds
    } else {
        f64::NAN
    };
    let mut job = id.device_decompressor(gpu, &mut lane, &refs, &lens)?;
    let decompress_kernel =
        time_on_device(gpu, &stream, runs, || Ok(job.enqueue(gpu, &mut lane)?))?;
    job.output_bytes(gpu, &mut lane)?;

    Ok(Figures {
        compressed: streams.bytes().len(),
        compress_kernel: gbps(total, compress_kernel),
        decompress_kernel: gbps(total, decompress_kernel),
        compress_pinned: gbps(total, compress_pinned),
        decompress_pinned: gbps(total, decompress_pinned),
        compress_vec: gbps(total, compress_vec),
        decompress_vec: gbps(total, decompress_vec),
        gpus: placement.gpus().len(),
    })
}

/// The GPU's decoding of streams another writer made (kernel, pinned, ordinary), checked
/// against `buffers`; the compression figures are `NaN` (not measured).
pub fn gpu_decode_row(
    gpu: &'static Gpu,
    id: CodecId,
    streams: &[&[u8]],
    buffers: &[&[u8]],
    runs: usize,
) -> Result<Figures> {
    let placement = every_gpu()?;
    let total: usize = buffers.iter().map(|b| b.len()).sum();
    let lens: Vec<usize> = buffers.iter().map(|b| b.len()).collect();
    let decompress_vec = zero_copy_seconds(id, &placement, streams, buffers, runs)?;
    let stream_total: usize = streams.iter().map(|s| s.len()).sum();
    let mut pinned_streams = PinnedBuffer::new(gpu, stream_total)?;
    parallel_concat(&mut pinned_streams.as_mut_slice()[..stream_total], streams);
    let mut at = 0;
    let refs: Vec<&[u8]> = streams
        .iter()
        .map(|s| {
            at += s.len();
            &pinned_streams.as_slice()[at - s.len()..at]
        })
        .collect();
    let mut pinned_out = PinnedBuffer::new(gpu, total)?;
    let decompress_pinned = median_seconds(runs, || {
        id.decompress_pinned(gpu, &refs, &lens, &mut pinned_out)?;
        Ok(())
    })?;
    let mut lane = gpu.lane()?;
    let mut job = id.device_decompressor(gpu, &mut lane, streams, &lens)?;
    let stream = lane.stream().clone();
    let decompress_kernel =
        time_on_device(gpu, &stream, runs, || Ok(job.enqueue(gpu, &mut lane)?))?;
    job.output_bytes(gpu, &mut lane)?;
    Ok(Figures {
        compressed: stream_total,
        decompress_kernel: gbps(total, decompress_kernel),
        decompress_pinned: gbps(total, decompress_pinned),
        decompress_vec: gbps(total, decompress_vec),
        // Not measured: another writer made the streams.
        compress_kernel: f64::NAN,
        compress_pinned: f64::NAN,
        compress_vec: f64::NAN,
        gpus: placement.gpus().len(),
    })
}
