//! `lzss` on the GPU: whole streams through the kernels' launchers in [`crate::gpu::lzss`]
//! (kernels I–III and the decoder). They write and read exactly the streams of the CPU
//! reference in [`crate::codec::lzss`] (`docs/FORMAT.md`, section `lzss`): this module
//! writes the header and lays out the size table, payloads and tail around what the
//! kernels produce, and validates a stream as the CPU decoder does before decoding it.
//!
//! Large inputs go through in blocks of [`BLOCK_BYTES`]: while the GPU works on one block
//! on one lane, the previous block's results come back and are copied out on another, so
//! host↔device copies overlap compute. Host data is staged through pinned buffers.
//!
//! ```no_run
//! use colzip::codec::lzss::{self, LzssParams};
//! use colzip::gpu::Gpu;
//! let gpu = Gpu::get()?;
//! let params = LzssParams::new(4, 32, 2048)?;
//! let data: Vec<u8> = (0..1_000_000u32).flat_map(|v| (v / 7).to_le_bytes()).collect();
//! let stream = lzss::gpu::compress(gpu, &data, &params)?;
//! // The same bytes as the CPU reference, decodable by either side.
//! assert_eq!(stream, lzss::compress(&data, &params));
//! assert_eq!(lzss::gpu::decompress(gpu, &stream, usize::MAX)?, data);
//! # Ok::<(), colzip::Error>(())
//! ```

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::decode::{StreamLayout, read_layout};
use crate::codec::CodecError;
use crate::codec::lzss::{self, LzssParams};
use crate::gpu::lzss::{
    CompressBuffers, CompressKernels, DecodeKernels, LzssShape, decode_error_reason,
    decode_failure, enqueue_compress, enqueue_decompress,
};
use crate::gpu::{Gpu, LaneGuard, copy_to_device, copy_to_host, parallel_copy, time_on_device};
use crate::{Error, Result};

/// Input bytes per block of the pipeline (rounded down to whole chunks): large enough
/// that launches and copies are amortised, small enough that two lanes' buffers stay a
/// small part of device memory.
pub const BLOCK_BYTES: usize = 64 << 20;

/// The launchers' view of `params` (validated by the caller).
fn shape_of(params: &LzssParams) -> LzssShape {
    LzssShape {
        symbol_width: params.symbol_width,
        window: params.window,
        chunk_size: params.chunk_size,
    }
}

/// A decoder error code as the CPU decoder's kind of error: a corrupt `lzss` stream.
fn decode_error(code: u32, chunk: u64) -> Error {
    let reason = decode_error_reason(code);
    CodecError::corrupt(lzss::NAME, format!("chunk {chunk}: {reason} (GPU)")).into()
}

fn read_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

/// Where a pipeline reads its input: pageable memory is staged through a lane's pinned
/// buffer; pinned memory (the benchmark's end-to-end runs) is copied from directly.
#[derive(Clone, Copy)]
pub enum HostInput<'a> {
    Pageable(&'a [u8]),
    /// Memory from a [`crate::gpu::PinnedBuffer`].
    Pinned(&'a [u8]),
}

impl<'a> HostInput<'a> {
    fn bytes(self) -> &'a [u8] {
        match self {
            HostInput::Pageable(b) | HostInput::Pinned(b) => b,
        }
    }
}

/// Copies `range` of `input` to the device buffer `name` of `lane` at `at`, through the
/// lane's pinned buffer `staging` when the input is pageable.
fn upload(
    gpu: &Gpu,
    lane: &mut LaneGuard<'_>,
    input: HostInput<'_>,
    ranges: &[Range<usize>],
    dst: &mut CudaSlice<u8>,
) -> Result<()> {
    let total: usize = ranges.iter().map(|r| r.len()).sum();
    match input {
        HostInput::Pinned(bytes) => {
            let mut at = 0;
            for r in ranges {
                copy_to_device(lane.stream(), &bytes[r.clone()], dst, at)?;
                at += r.len();
            }
        }
        HostInput::Pageable(bytes) => {
            let mut staging = lane.take_pinned(gpu, "lzss.in", total)?;
            let mut at = 0;
            for r in ranges {
                parallel_copy(
                    &mut staging.as_mut_slice()[at..at + r.len()],
                    &bytes[r.clone()],
                );
                at += r.len();
            }
            copy_to_device(lane.stream(), &staging.as_slice()[..total], dst, 0)?;
            lane.put_pinned("lzss.in", staging);
        }
    }
    Ok(())
}

/// Block boundaries: whole chunks of at most [`BLOCK_BYTES`].
fn blocks(body: usize, chunk: usize) -> Vec<Range<usize>> {
    let step = (BLOCK_BYTES / chunk).max(1) * chunk;
    (0..body)
        .step_by(step)
        .map(|a| a..(a + step).min(body))
        .collect()
}

/// Two lanes when a second is free (copies overlap compute), else one.
fn lanes(gpu: &Gpu, blocks: usize) -> Result<Vec<LaneGuard<'_>>> {
    let mut lanes = vec![gpu.lane()?];
    if blocks > 1
        && let Some(second) = gpu.try_lane()?
    {
        lanes.push(second);
    }
    Ok(lanes)
}

/// Where a pipeline writes: a `Vec` (through the lane's pinned staging buffer, since
/// device-to-host copies into pageable memory run at a fortieth of the speed), or a
/// caller's buffer, copied to directly (pinned memory for full speed).
enum HostOutput<'a> {
    Vec(&'a mut Vec<u8>),
    Slice { out: &'a mut [u8], len: usize },
}

impl HostOutput<'_> {
    fn len(&self) -> usize {
        match self {
            HostOutput::Vec(v) => v.len(),
            HostOutput::Slice { len, .. } => *len,
        }
    }

    /// Copies `range` of `device` to the end of the output (staged for a `Vec`).
    fn append_from_device(
        &mut self,
        gpu: &Gpu,
        lane: &mut LaneGuard<'_>,
        device: &CudaSlice<u8>,
        range: Range<usize>,
    ) -> Result<()> {
        let n = range.len();
        match self {
            HostOutput::Vec(v) => {
                let mut staging = lane.take_pinned(gpu, "lzss.out", n)?;
                copy_to_host(
                    lane.stream(),
                    device,
                    range,
                    &mut staging.as_mut_slice()[..n],
                )?;
                lane.synchronize()?;
                let at = v.len();
                v.resize(at + n, 0);
                parallel_copy(&mut v[at..], &staging.as_slice()[..n]);
                lane.put_pinned("lzss.out", staging);
            }
            HostOutput::Slice { out, len } => {
                if *len + n > out.len() {
                    return Err(Error::format("output buffer too small"));
                }
                copy_to_host(lane.stream(), device, range, &mut out[*len..*len + n])?;
                lane.synchronize()?;
                *len += n;
            }
        }
        Ok(())
    }

    /// Bytes already in the output at `at`, overwritten by `range` of `device`.
    fn overwrite_from_device(
        &mut self,
        lane: &mut LaneGuard<'_>,
        device: &CudaSlice<u8>,
        range: Range<usize>,
        at: usize,
    ) -> Result<()> {
        let n = range.len();
        let dst = match self {
            HostOutput::Vec(v) => &mut v[at..at + n],
            HostOutput::Slice { out, .. } => &mut out[at..at + n],
        };
        // Small (the size table's slice of a block): pageable is fine.
        copy_to_host(lane.stream(), device, range, dst)?;
        lane.synchronize()
    }

    fn extend(&mut self, bytes: &[u8]) -> Result<()> {
        match self {
            HostOutput::Vec(v) => v.extend_from_slice(bytes),
            HostOutput::Slice { out, len } => {
                let end = *len + bytes.len();
                if end > out.len() {
                    return Err(Error::format("output buffer too small"));
                }
                out[*len..end].copy_from_slice(bytes);
                *len = end;
            }
        }
        Ok(())
    }
}

/// Compresses `input` on the GPU: the same bytes as [`lzss::compress`].
pub fn compress(gpu: &Gpu, input: &[u8], params: &LzssParams) -> Result<Vec<u8>> {
    compress_from(gpu, HostInput::Pageable(input), params)
}

/// [`compress`] from pageable or pinned host memory.
pub fn compress_from(gpu: &Gpu, input: HostInput<'_>, params: &LzssParams) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(lzss::max_compressed_len(input.bytes().len(), params));
    compress_pipeline(gpu, input, params, HostOutput::Vec(&mut out))?;
    Ok(out)
}

/// [`compress`] into `out` (at least [`lzss::max_compressed_len`] bytes; pinned memory,
/// such as a [`crate::gpu::PinnedBuffer`], for full speed); returns the stream's length.
pub fn compress_into(
    gpu: &Gpu,
    input: HostInput<'_>,
    params: &LzssParams,
    out: &mut [u8],
) -> Result<usize> {
    let need = lzss::max_compressed_len(input.bytes().len(), params);
    if out.len() < need {
        return Err(Error::format(format!(
            "output buffer of {} bytes, lzss may need {need}",
            out.len()
        )));
    }
    compress_pipeline(gpu, input, params, HostOutput::Slice { out, len: 0 })
}

fn compress_pipeline(
    gpu: &Gpu,
    input: HostInput<'_>,
    params: &LzssParams,
    mut out: HostOutput<'_>,
) -> Result<usize> {
    params.validate()?;
    let bytes = input.bytes();
    let s = usize::from(params.symbol_width);
    let c = params.chunk_size as usize;
    let body = bytes.len() - bytes.len() % s;
    let chunks = body.div_ceil(c);
    let mut header = Vec::with_capacity(16);
    lzss::write_header(&mut header, params, bytes.len() as u64);
    out.extend(&header)?;
    let table_at = out.len();
    // The size table's place; each block fills its slice.
    out.extend(&vec![0u8; 2 * chunks])?;
    let blocks = blocks(body, c);
    if !blocks.is_empty() {
        let kernels = CompressKernels::new(gpu, &shape_of(params))?;
        let mut lanes = lanes(gpu, blocks.len())?;
        let mut in_flight: Option<(usize, Range<usize>)> = None;
        for (b, block) in blocks.iter().enumerate() {
            let l = b % lanes.len();
            if lanes.len() == 1
                && let Some((pl, prev)) = in_flight.take()
            {
                finish_compress(gpu, &mut lanes[pl], prev, params, &mut out, table_at)?;
            }
            submit_compress(gpu, &mut lanes[l], &kernels, input, block.clone(), params)?;
            if let Some((pl, prev)) = in_flight.replace((l, block.clone())) {
                finish_compress(gpu, &mut lanes[pl], prev, params, &mut out, table_at)?;
            }
        }
        if let Some((pl, prev)) = in_flight {
            finish_compress(gpu, &mut lanes[pl], prev, params, &mut out, table_at)?;
        }
    }
    out.extend(&bytes[body..])?;
    Ok(out.len())
}

/// Uploads one block and queues its kernels and the copy of its payload total.
fn submit_compress(
    gpu: &Gpu,
    lane: &mut LaneGuard<'_>,
    kernels: &CompressKernels,
    input: HostInput<'_>,
    block: Range<usize>,
    params: &LzssParams,
) -> Result<()> {
    let len = block.len();
    let chunks = len.div_ceil(params.chunk_size as usize);
    let mut device_in = lane.take_device("lzss.in", len)?;
    upload(gpu, lane, input, &[block], &mut device_in)?;
    let shape = shape_of(params);
    let mut buffers = CompressBuffers::take(lane, len, &shape)?;
    enqueue_compress(
        lane.stream(),
        kernels,
        &shape,
        &device_in,
        len,
        &mut buffers,
    )?;
    let mut total = lane.take_pinned(gpu, "lzss.total", 8)?;
    copy_to_host(
        lane.stream(),
        &buffers.offsets,
        8 * chunks..8 * chunks + 8,
        &mut total.as_mut_slice()[..8],
    )?;
    lane.put_pinned("lzss.total", total);
    buffers.give_back(lane);
    lane.put_device("lzss.in", device_in);
    Ok(())
}

/// Waits for a block, brings its size table and payloads back and appends them.
fn finish_compress(
    gpu: &Gpu,
    lane: &mut LaneGuard<'_>,
    block: Range<usize>,
    params: &LzssParams,
    out: &mut HostOutput<'_>,
    table_at: usize,
) -> Result<()> {
    let c = params.chunk_size as usize;
    let chunks = block.len().div_ceil(c);
    lane.synchronize()?;
    let total_buf = lane.take_pinned(gpu, "lzss.total", 8)?;
    let total = read_u64(total_buf.as_slice()) as usize;
    lane.put_pinned("lzss.total", total_buf);
    if total > block.len() {
        return Err(Error::Gpu(format!(
            "lzss kernels reported {total} payload bytes for a {}-byte block",
            block.len()
        )));
    }
    let device_out = lane.take_device("lzss.out", 2 * chunks + total)?;
    let first_chunk = block.start / c;
    let result = out
        .overwrite_from_device(lane, &device_out, 0..2 * chunks, table_at + 2 * first_chunk)
        .and_then(|()| {
            out.append_from_device(gpu, lane, &device_out, 2 * chunks..2 * chunks + total)
        });
    lane.put_device("lzss.out", device_out);
    result
}

/// Decompresses an `lzss` stream on the GPU, refusing one that claims more than
/// `max_output` bytes; any stream the CPU decoder rejects is an `Err` here too.
pub fn decompress(gpu: &Gpu, stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    decompress_from(gpu, HostInput::Pageable(stream), max_output)
}

/// [`decompress`] from pageable or pinned host memory.
pub fn decompress_from(gpu: &Gpu, input: HostInput<'_>, max_output: usize) -> Result<Vec<u8>> {
    let layout = read_layout(input.bytes(), max_output)?;
    let mut out = Vec::with_capacity(layout.len);
    decompress_pipeline(gpu, input, &layout, HostOutput::Vec(&mut out))?;
    Ok(out)
}

/// [`decompress`] into `out` (pinned memory for full speed); returns the decoded length.
/// On an error, `out` holds unspecified bytes.
pub fn decompress_into(
    gpu: &Gpu,
    input: HostInput<'_>,
    out: &mut [u8],
    max_output: usize,
) -> Result<usize> {
    let layout = read_layout(input.bytes(), max_output.min(out.len()))?;
    decompress_pipeline(gpu, input, &layout, HostOutput::Slice { out, len: 0 })
}

fn decompress_pipeline(
    gpu: &Gpu,
    input: HostInput<'_>,
    layout: &StreamLayout,
    mut out: HostOutput<'_>,
) -> Result<usize> {
    let stream = input.bytes();
    let c = layout.params.chunk_size as usize;
    let blocks = blocks(layout.body, c);
    if !blocks.is_empty() {
        let kernels = DecodeKernels::new(gpu, &shape_of(&layout.params))?;
        let mut lanes = lanes(gpu, blocks.len())?;
        let mut in_flight: Option<(usize, Range<usize>)> = None;
        for (b, block) in blocks.iter().enumerate() {
            let l = b % lanes.len();
            if lanes.len() == 1
                && let Some((pl, prev)) = in_flight.take()
            {
                finish_decompress(gpu, &mut lanes[pl], prev, c, &mut out)?;
            }
            submit_decompress(gpu, &mut lanes[l], &kernels, input, layout, block.clone())?;
            if let Some((pl, prev)) = in_flight.replace((l, block.clone())) {
                finish_decompress(gpu, &mut lanes[pl], prev, c, &mut out)?;
            }
        }
        if let Some((pl, prev)) = in_flight {
            finish_decompress(gpu, &mut lanes[pl], prev, c, &mut out)?;
        }
    }
    out.extend(&stream[stream.len() - (layout.len - layout.body)..])?;
    Ok(out.len())
}

fn submit_decompress(
    gpu: &Gpu,
    lane: &mut LaneGuard<'_>,
    kernels: &DecodeKernels,
    input: HostInput<'_>,
    layout: &StreamLayout,
    block: Range<usize>,
) -> Result<()> {
    let c = layout.params.chunk_size as usize;
    let (first, last) = (block.start / c, block.len().div_ceil(c) + block.start / c);
    let table = layout.table_at + 2 * first..layout.table_at + 2 * last;
    let payload_at = layout.payload_at;
    let payload = payload_at + layout.offsets[first]..payload_at + layout.offsets[last];
    let payload_len = payload.len();
    let mut device_in = lane.take_device("lzss.in", table.len() + payload_len)?;
    upload(gpu, lane, input, &[table, payload], &mut device_in)?;
    let mut offsets = lane.take_device("lzss.offsets", 8 * (last - first + 1))?;
    let mut device_out = lane.take_device("lzss.out", block.len())?;
    let mut error = lane.take_device("lzss.error", 8)?;
    enqueue_decompress(
        lane.stream(),
        kernels,
        &shape_of(&layout.params),
        &device_in,
        payload_len,
        block.len(),
        &mut offsets,
        &mut device_out,
        &mut error,
    )?;
    let mut status = lane.take_pinned(gpu, "lzss.total", 8)?;
    copy_to_host(lane.stream(), &error, 0..8, &mut status.as_mut_slice()[..8])?;
    lane.put_pinned("lzss.total", status);
    lane.put_device("lzss.error", error);
    lane.put_device("lzss.out", device_out);
    lane.put_device("lzss.offsets", offsets);
    lane.put_device("lzss.in", device_in);
    Ok(())
}

/// Waits for a block's decoder, checks its error flag and brings its bytes back.
fn finish_decompress(
    gpu: &Gpu,
    lane: &mut LaneGuard<'_>,
    block: Range<usize>,
    chunk_size: usize,
    out: &mut HostOutput<'_>,
) -> Result<()> {
    lane.synchronize()?;
    let status = lane.take_pinned(gpu, "lzss.total", 8)?;
    let failure = decode_failure(status.as_slice());
    lane.put_pinned("lzss.total", status);
    if let Some((code, chunk)) = failure {
        return Err(decode_error(
            code,
            (block.start / chunk_size) as u64 + u64::from(chunk),
        ));
    }
    let device_out = lane.take_device("lzss.out", block.len())?;
    let result = out.append_from_device(gpu, lane, &device_out, 0..block.len());
    lane.put_device("lzss.out", device_out);
    result
}

/// Kernel times of one input, with data resident on the device (no PCIe): the median of
/// `runs` timed launches each way, measured with device events, after one warm-up.
#[derive(Clone, Debug)]
pub struct KernelTimes {
    /// The stream the kernels wrote (checked to decode back to the input).
    pub stream: Vec<u8>,
    /// Kernels I–III, seconds.
    pub compress_seconds: f64,
    /// The size-table scan and the decoder, seconds.
    pub decompress_seconds: f64,
}

/// Compresses and decompresses `input` with the data on the device, timing the kernels
/// only; the decoded bytes are compared with the input (an `Err` when they differ).
pub fn time_kernels(
    gpu: &Gpu,
    input: &[u8],
    params: &LzssParams,
    runs: usize,
) -> Result<KernelTimes> {
    params.validate()?;
    let s = usize::from(params.symbol_width);
    let c = params.chunk_size as usize;
    let body = input.len() - input.len() % s;
    let chunks = body.div_ceil(c);
    let mut stream_bytes = Vec::with_capacity(lzss::max_compressed_len(input.len(), params));
    lzss::write_header(&mut stream_bytes, params, input.len() as u64);
    if body == 0 {
        stream_bytes.extend_from_slice(input);
        return Ok(KernelTimes {
            stream: stream_bytes,
            compress_seconds: 0.0,
            decompress_seconds: 0.0,
        });
    }
    let shape = shape_of(params);
    let compress_kernels = CompressKernels::new(gpu, &shape)?;
    let decode_kernels = DecodeKernels::new(gpu, &shape)?;
    let mut lane = gpu.lane()?;
    let stream = lane.stream().clone();
    let mut device_in = lane.take_device("bench.in", body)?;
    copy_to_device(&stream, &input[..body], &mut device_in, 0)?;
    let mut buffers = CompressBuffers::take(&mut lane, body, &shape)?;
    let compress_seconds = time_on_device(gpu, &stream, runs, || {
        enqueue_compress(
            &stream,
            &compress_kernels,
            &shape,
            &device_in,
            body,
            &mut buffers,
        )
    })?;
    let mut total = [0u8; 8];
    copy_to_host(
        &stream,
        &buffers.offsets,
        8 * chunks..8 * chunks + 8,
        &mut total,
    )?;
    lane.synchronize()?;
    let total = read_u64(&total) as usize;
    if total > body {
        return Err(Error::Gpu(format!(
            "kernels reported {total} payload bytes for {body}"
        )));
    }
    let produced = 2 * chunks + total;
    let at = stream_bytes.len();
    stream_bytes.resize(at + produced, 0);
    copy_to_host(&stream, &buffers.out, 0..produced, &mut stream_bytes[at..])?;
    lane.synchronize()?;
    stream_bytes.extend_from_slice(&input[body..]);

    let mut offsets = lane.take_device("bench.offsets", 8 * (chunks + 1))?;
    let mut decoded = lane.take_device("bench.decoded", body)?;
    let mut error = lane.take_device("bench.error", 8)?;
    let decompress_seconds = time_on_device(gpu, &stream, runs, || {
        enqueue_decompress(
            &stream,
            &decode_kernels,
            &shape,
            &buffers.out,
            total,
            body,
            &mut offsets,
            &mut decoded,
            &mut error,
        )
    })?;
    let mut status = [0u8; 8];
    copy_to_host(&stream, &error, 0..8, &mut status)?;
    let mut back = vec![0u8; body];
    copy_to_host(&stream, &decoded, 0..body, &mut back)?;
    lane.synchronize()?;
    if let Some((code, chunk)) = decode_failure(&status) {
        return Err(decode_error(code, u64::from(chunk)));
    }
    if back != input[..body] {
        return Err(Error::Gpu("lzss kernels did not round-trip".into()));
    }
    buffers.give_back(&mut lane);
    for (name, buffer) in [
        ("bench.in", device_in),
        ("bench.offsets", offsets),
        ("bench.decoded", decoded),
        ("bench.error", error),
    ] {
        lane.put_device(name, buffer);
    }
    Ok(KernelTimes {
        stream: stream_bytes,
        compress_seconds,
        decompress_seconds,
    })
}
