//! `lzss` on the GPU: kernels I–III (`kernels/lzss_compress.cu`, `kernels/scan.cu`) and the
//! decoder (`kernels/lzss_decompress.cu`). They write and read exactly the streams of the
//! CPU reference in [`crate::codec::lzss`] (`docs/FORMAT.md`, section `lzss`).
//!
//! Large inputs go through in blocks of [`BLOCK_BYTES`]: while the GPU works on one block
//! on one lane, the previous block's results come back and are copied out on another, so
//! host↔device copies overlap compute. Host data is staged through pinned buffers.
//!
//! ```no_run
//! use colzip::codec::lzss::LzssParams;
//! use colzip::gpu::{Gpu, lzss};
//! let gpu = Gpu::get()?;
//! let params = LzssParams::new(4, 32, 2048)?;
//! let data: Vec<u8> = (0..1_000_000u32).flat_map(|v| (v / 7).to_le_bytes()).collect();
//! let stream = lzss::compress(gpu, &data, &params)?;
//! // The same bytes as the CPU reference, decodable by either side.
//! assert_eq!(stream, colzip::codec::lzss::compress(&data, &params));
//! assert_eq!(lzss::decompress(gpu, &stream, usize::MAX)?, data);
//! # Ok::<(), colzip::Error>(())
//! ```

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::device::{Gpu, KernelSource, gpu_error};
use super::lane::{LaneGuard, parallel_copy};
use crate::codec::CodecError;
use crate::codec::lzss::{self, LzssParams};
use crate::{Error, Result};

/// Kernels I and III.
pub const LZSS_COMPRESS: KernelSource = KernelSource {
    name: "lzss_compress.cu",
    source: include_str!("../../kernels/lzss_compress.cu"),
};
/// The decoder.
pub const LZSS_DECOMPRESS: KernelSource = KernelSource {
    name: "lzss_decompress.cu",
    source: include_str!("../../kernels/lzss_decompress.cu"),
};
/// Kernel II: the prefix sum of chunk sizes.
pub const SCAN: KernelSource = KernelSource {
    name: "scan.cu",
    source: include_str!("../../kernels/scan.cu"),
};

/// Input bytes per block of the pipeline (rounded down to whole chunks): large enough
/// that launches and copies are amortised, small enough that two lanes' buffers stay a
/// small part of device memory.
pub const BLOCK_BYTES: usize = 64 << 20;

/// Threads of the scan kernel's single block.
const SCAN_THREADS: u32 = 1024;
/// Warps per block of the compaction kernel (one chunk each).
const COMPACT_WARPS: u32 = 8;

fn round8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Shared memory of kernel I for `params`: the layout written in `lzss_compress.cu`.
pub fn compress_shared_bytes(params: &LzssParams) -> usize {
    let c = params.chunk_size as usize;
    let m = c / usize::from(params.symbol_width);
    2 * round8(c) + 3 * round8(2 * m) + round8(m) + round8(4 * (m / 32 + 1)) + 128
}

/// Threads of kernel I: a quarter of the chunk's symbols (each warp then matches four
/// groups of 32 positions), 64..=1024.
fn chunk_threads(params: &LzssParams) -> u32 {
    let m = params.chunk_size as usize / usize::from(params.symbol_width);
    ((m / 4).div_ceil(32) * 32).clamp(64, 1024) as u32
}

/// Shared memory of one decoder warp: the chunk, and a byte per symbol.
fn decode_warp_bytes(params: &LzssParams) -> usize {
    let c = params.chunk_size as usize;
    round8(c) + round8(c / usize::from(params.symbol_width))
}

/// Warps (chunks) per block of the decoder: up to 64 KiB of shared memory per block.
fn decode_warps(params: &LzssParams) -> u32 {
    (65536 / decode_warp_bytes(params)).clamp(1, 8) as u32
}

fn launch_error(e: impl std::fmt::Display) -> Error {
    gpu_error("kernel launch", e)
}

/// Lets `function` use `bytes` of dynamic shared memory, when the device has them.
fn allow_shared(gpu: &Gpu, function: &CudaFunction, bytes: usize, what: &str) -> Result<()> {
    let limit = gpu.info().shared_memory_per_block;
    if bytes > limit {
        return Err(Error::Gpu(format!(
            "{what} needs {bytes} bytes of shared memory per block, the device has {limit}"
        )));
    }
    if bytes > 48 * 1024 {
        function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
            .map_err(|e| gpu_error("shared memory attribute", e))?;
    }
    Ok(())
}

/// The compression kernels for one symbol width.
pub(crate) struct CompressKernels {
    chunks: CudaFunction,
    scan: CudaFunction,
    compact: CudaFunction,
    shared_bytes: usize,
}

impl CompressKernels {
    pub(crate) fn new(gpu: &Gpu, params: &LzssParams) -> Result<Self> {
        let chunks = gpu.function(
            &LZSS_COMPRESS,
            &format!("lzss_chunks_s{}", params.symbol_width),
        )?;
        let shared_bytes = compress_shared_bytes(params);
        allow_shared(gpu, &chunks, shared_bytes, "lzss compression")?;
        Ok(CompressKernels {
            chunks,
            scan: gpu.function(&SCAN, "scan_sizes_u16")?,
            compact: gpu.function(&LZSS_COMPRESS, "lzss_compact")?,
            shared_bytes,
        })
    }
}

/// Device buffers of one compression: `out` receives the size table and the payloads;
/// `offsets[chunks]` (8 bytes at `8 * chunks`) the payload total.
pub(crate) struct CompressBuffers {
    pub scratch: CudaSlice<u8>,
    pub sizes: CudaSlice<u8>,
    pub offsets: CudaSlice<u8>,
    pub out: CudaSlice<u8>,
}

impl CompressBuffers {
    pub(crate) fn take(lane: &mut LaneGuard<'_>, body: usize, params: &LzssParams) -> Result<Self> {
        let chunks = body.div_ceil(params.chunk_size as usize);
        Ok(CompressBuffers {
            scratch: lane.take_device("lzss.scratch", body)?,
            sizes: lane.take_device("lzss.sizes", 2 * chunks)?,
            offsets: lane.take_device("lzss.offsets", 8 * (chunks + 1))?,
            out: lane.take_device("lzss.out", 2 * chunks + body)?,
        })
    }

    pub(crate) fn give_back(self, lane: &mut LaneGuard<'_>) {
        lane.put_device("lzss.scratch", self.scratch);
        lane.put_device("lzss.sizes", self.sizes);
        lane.put_device("lzss.offsets", self.offsets);
        lane.put_device("lzss.out", self.out);
    }
}

/// Queues kernels I–III on `stream` for the `body` bytes (whole symbols) at the start of
/// `input`.
pub(crate) fn enqueue_compress(
    stream: &Arc<CudaStream>,
    kernels: &CompressKernels,
    params: &LzssParams,
    input: &CudaSlice<u8>,
    body: usize,
    buffers: &mut CompressBuffers,
) -> Result<()> {
    let c = params.chunk_size;
    let chunks = body.div_ceil(c as usize) as u64;
    if chunks == 0 {
        return Ok(());
    }
    let grid = u32::try_from(chunks).map_err(|_| Error::Gpu("too many chunks".into()))?;
    let body_len = body as u64;
    let window = u32::from(params.window);
    let mut launch = stream.launch_builder(&kernels.chunks);
    launch
        .arg(input)
        .arg(&body_len)
        .arg(&c)
        .arg(&window)
        .arg(&mut buffers.scratch)
        .arg(&mut buffers.sizes);
    let config = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (chunk_threads(params), 1, 1),
        shared_mem_bytes: kernels.shared_bytes as u32,
    };
    // SAFETY: kernel I reads `body` bytes of `input` and writes chunk i's payload within
    // scratch[i*C..(i+1)*C] and sizes[i], for i < chunks (the grid), all allocated.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let mut launch = stream.launch_builder(&kernels.scan);
    launch
        .arg(&buffers.sizes)
        .arg(&chunks)
        .arg(&mut buffers.offsets);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads `chunks` u16 sizes, writes `chunks + 1` u64 offsets.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let mut launch = stream.launch_builder(&kernels.compact);
    launch
        .arg(input)
        .arg(&body_len)
        .arg(&c)
        .arg(&buffers.scratch)
        .arg(&buffers.sizes)
        .arg(&buffers.offsets)
        .arg(&chunks)
        .arg(&mut buffers.out);
    let config = LaunchConfig {
        grid_dim: (grid.div_ceil(COMPACT_WARPS), 1, 1),
        block_dim: (32 * COMPACT_WARPS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: writes the table (2 * chunks bytes) and payloads whose sizes sum to at most
    // `body`, within `out` (2 * chunks + body bytes).
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// The decoder's kernels for one symbol width.
pub(crate) struct DecodeKernels {
    decode: CudaFunction,
    scan: CudaFunction,
    warps: u32,
    shared_bytes: usize,
}

impl DecodeKernels {
    pub(crate) fn new(gpu: &Gpu, params: &LzssParams) -> Result<Self> {
        let decode = gpu.function(
            &LZSS_DECOMPRESS,
            &format!("lzss_decode_s{}", params.symbol_width),
        )?;
        let warps = decode_warps(params);
        let shared_bytes = warps as usize * decode_warp_bytes(params);
        allow_shared(gpu, &decode, shared_bytes, "lzss decompression")?;
        Ok(DecodeKernels {
            decode,
            scan: gpu.function(&SCAN, "scan_sizes_u16")?,
            warps,
            shared_bytes,
        })
    }
}

/// Queues the decoder: `table_and_payload` holds the size table of `chunks` chunks then
/// `payload_len` payload bytes; `out` receives `body` bytes; `error` (8 bytes, zeroed
/// here) receives the reason code and `u32::MAX -` the lowest failing chunk.
#[allow(clippy::too_many_arguments)]
pub(crate) fn enqueue_decompress(
    stream: &Arc<CudaStream>,
    kernels: &DecodeKernels,
    params: &LzssParams,
    table_and_payload: &CudaSlice<u8>,
    payload_len: usize,
    body: usize,
    offsets: &mut CudaSlice<u8>,
    out: &mut CudaSlice<u8>,
    error: &mut CudaSlice<u8>,
) -> Result<()> {
    let c = params.chunk_size;
    let chunks = body.div_ceil(c as usize) as u64;
    if chunks == 0 {
        return Ok(());
    }
    stream
        .memset_zeros(&mut error.slice_mut(0..8))
        .map_err(|e| gpu_error("memset", e))?;
    let mut launch = stream.launch_builder(&kernels.scan);
    launch
        .arg(table_and_payload)
        .arg(&chunks)
        .arg(&mut *offsets);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads `chunks` u16 sizes, writes `chunks + 1` u64 offsets.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let payload_len = payload_len as u64;
    let body_len = body as u64;
    let window = u32::from(params.window);
    let mut launch = stream.launch_builder(&kernels.decode);
    launch
        .arg(table_and_payload)
        .arg(&*offsets)
        .arg(&chunks)
        .arg(&payload_len)
        .arg(&body_len)
        .arg(&c)
        .arg(&window)
        .arg(out)
        .arg(error);
    let grid = u32::try_from(chunks.div_ceil(u64::from(kernels.warps)))
        .map_err(|_| Error::Gpu("too many chunks".into()))?;
    let config = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (32 * kernels.warps, 1, 1),
        shared_mem_bytes: kernels.shared_bytes as u32,
    };
    // SAFETY: the decoder checks every size, offset, length and distance against the
    // buffers' lengths passed here before reading or writing.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// The reason for a decoder error code (kernels/lzss_decompress.cu).
fn decode_error(code: u32, chunk: u64) -> Error {
    let reason = match code {
        1 => "the chunk sizes do not add up to the payload",
        2 => "a chunk size is not in 1..=the chunk's length",
        3 => "truncated or out-of-range token count",
        4 => "truncated flags or flag padding bits set",
        5 => "section sizes do not add up to the payload",
        6 => "literals pass the chunk end",
        7 => "match distance not in 1..=window or reaches before the chunk start",
        8 => "match passes the chunk end",
        9 => "tokens do not fill the chunk",
        _ => "unknown decoder error",
    };
    CodecError::corrupt(lzss::NAME, format!("chunk {chunk}: {reason} (GPU)")).into()
}

fn read_u64(bytes: &[u8]) -> u64 {
    u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"))
}

fn copy_to_device(
    stream: &Arc<CudaStream>,
    src: &[u8],
    dst: &mut CudaSlice<u8>,
    at: usize,
) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    stream
        .memcpy_htod(src, &mut dst.slice_mut(at..at + src.len()))
        .map_err(|e| gpu_error("copy to device", e))
}

fn copy_to_host(
    stream: &Arc<CudaStream>,
    src: &CudaSlice<u8>,
    range: Range<usize>,
    dst: &mut [u8],
) -> Result<()> {
    if range.is_empty() {
        return Ok(());
    }
    stream
        .memcpy_dtoh(&src.slice(range), dst)
        .map_err(|e| gpu_error("copy to host", e))
}

/// Where a pipeline reads its input: pageable memory is staged through a lane's pinned
/// buffer; pinned memory (the benchmark's end-to-end runs) is copied from directly.
#[derive(Clone, Copy)]
pub enum HostInput<'a> {
    Pageable(&'a [u8]),
    /// Memory from a [`super::PinnedBuffer`].
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
/// such as a [`super::PinnedBuffer`], for full speed); returns the stream's length.
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
        let kernels = CompressKernels::new(gpu, params)?;
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
    let mut buffers = CompressBuffers::take(lane, len, params)?;
    enqueue_compress(
        lane.stream(),
        kernels,
        params,
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

/// A validated stream: where its table, payloads and tail lie.
struct Layout {
    params: LzssParams,
    len: usize,
    body: usize,
    table_at: usize,
    /// Payload offset (from the payload start) of every chunk, and the total last.
    offsets: Vec<usize>,
}

impl Layout {
    /// Validates the header, the size table and the total length as the CPU decoder does.
    fn read(stream: &[u8], max_output: usize) -> Result<Layout> {
        let (params, claimed, table_at) = lzss::parse_header(stream)?;
        if claimed > max_output as u64 {
            return Err(CodecError::TooLarge {
                codec: lzss::NAME,
                claimed,
                limit: max_output as u64,
            }
            .into());
        }
        let corrupt = |reason: String| Error::from(CodecError::corrupt(lzss::NAME, reason));
        let len = usize::try_from(claimed)
            .map_err(|_| corrupt("length does not fit in memory".into()))?;
        let s = usize::from(params.symbol_width);
        let c = params.chunk_size as usize;
        let body = len - len % s;
        let chunks = body.div_ceil(c);
        let payload_at = chunks
            .checked_mul(2)
            .and_then(|t| t.checked_add(table_at))
            .filter(|&end| end <= stream.len())
            .ok_or_else(|| corrupt("chunk size table runs past the stream".into()))?;
        let mut offsets = Vec::with_capacity(chunks + 1);
        let mut total = 0usize;
        for (i, entry) in stream[table_at..payload_at].chunks_exact(2).enumerate() {
            let size = usize::from(u16::from_le_bytes([entry[0], entry[1]]));
            let raw = c.min(body - i * c);
            if size == 0 || size > raw {
                return Err(corrupt(format!("chunk {i}: size {size} not in 1..={raw}")));
            }
            offsets.push(total);
            total += size;
        }
        offsets.push(total);
        let expected = payload_at + total + len % s;
        if expected != stream.len() {
            return Err(corrupt(format!(
                "stream is {} bytes, its header and size table say {expected}",
                stream.len()
            )));
        }
        Ok(Layout {
            params,
            len,
            body,
            table_at,
            offsets,
        })
    }

    fn payload_at(&self) -> usize {
        self.table_at + 2 * (self.offsets.len() - 1)
    }
}

/// Decompresses an `lzss` stream on the GPU, refusing one that claims more than
/// `max_output` bytes; any stream the CPU decoder rejects is an `Err` here too.
pub fn decompress(gpu: &Gpu, stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    decompress_from(gpu, HostInput::Pageable(stream), max_output)
}

/// [`decompress`] from pageable or pinned host memory.
pub fn decompress_from(gpu: &Gpu, input: HostInput<'_>, max_output: usize) -> Result<Vec<u8>> {
    let layout = Layout::read(input.bytes(), max_output)?;
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
    let layout = Layout::read(input.bytes(), max_output.min(out.len()))?;
    decompress_pipeline(gpu, input, &layout, HostOutput::Slice { out, len: 0 })
}

fn decompress_pipeline(
    gpu: &Gpu,
    input: HostInput<'_>,
    layout: &Layout,
    mut out: HostOutput<'_>,
) -> Result<usize> {
    let stream = input.bytes();
    let c = layout.params.chunk_size as usize;
    let blocks = blocks(layout.body, c);
    if !blocks.is_empty() {
        let kernels = DecodeKernels::new(gpu, &layout.params)?;
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
    layout: &Layout,
    block: Range<usize>,
) -> Result<()> {
    let c = layout.params.chunk_size as usize;
    let (first, last) = (block.start / c, block.len().div_ceil(c) + block.start / c);
    let table = layout.table_at + 2 * first..layout.table_at + 2 * last;
    let payload_at = layout.payload_at();
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
        &layout.params,
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
    let bytes = status.as_slice();
    let code = u32::from_le_bytes(bytes[..4].try_into().expect("4 bytes"));
    let chunk = u32::MAX - u32::from_le_bytes(bytes[4..8].try_into().expect("4 bytes"));
    lane.put_pinned("lzss.total", status);
    if code != 0 {
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

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}

/// Times `runs` enqueues of `work` on `stream` with device events (after a warm-up).
fn time_on_device(
    gpu: &Gpu,
    stream: &Arc<CudaStream>,
    runs: usize,
    mut work: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let event = || {
        gpu.context()
            .new_event(Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT))
            .map_err(|e| gpu_error("event", e))
    };
    let (start, end) = (event()?, event()?);
    work()?;
    let mut times = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        start.record(stream).map_err(|e| gpu_error("event", e))?;
        work()?;
        end.record(stream).map_err(|e| gpu_error("event", e))?;
        let ms = start.elapsed_ms(&end).map_err(|e| gpu_error("event", e))?;
        times.push(f64::from(ms) / 1e3);
    }
    Ok(median(times))
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
    let compress_kernels = CompressKernels::new(gpu, params)?;
    let decode_kernels = DecodeKernels::new(gpu, params)?;
    let mut lane = gpu.lane()?;
    let stream = lane.stream().clone();
    let mut device_in = lane.take_device("bench.in", body)?;
    copy_to_device(&stream, &input[..body], &mut device_in, 0)?;
    let mut buffers = CompressBuffers::take(&mut lane, body, params)?;
    let compress_seconds = time_on_device(gpu, &stream, runs, || {
        enqueue_compress(
            &stream,
            &compress_kernels,
            params,
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
            params,
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
    let code = u32::from_le_bytes(status[..4].try_into().expect("4 bytes"));
    if code != 0 {
        let chunk = u32::MAX - u32::from_le_bytes(status[4..].try_into().expect("4 bytes"));
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
