//! Launchers of the `lzss` kernels: kernels I–III (`kernels/lzss_compress.cu`,
//! `kernels/scan.cu`) and the decoder (`kernels/lzss_decompress.cu`), with the launch
//! shapes (threads, warps, shared memory) each kernel's source assumes. They queue work
//! on a stream for data already on the device and know nothing of the stream format
//! around the chunks (`docs/FORMAT.md`, section `lzss`, specifies it; the stream-level GPU
//! path that uploads, launches and assembles streams is `colzip::codec::lzss::gpu`).

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::device::{Gpu, KernelSource, gpu_error};
use super::lane::LaneGuard;
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

/// What the launchers need of a stream's parameters (`S`, `W`, `C`), as plain numbers.
/// The caller has validated them: `symbol_width` 1, 2, 4 or 8, `window` 1..=255,
/// `chunk_size` a multiple of 8 in 2048..=16384.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LzssShape {
    /// Symbol width `S` in bytes.
    pub symbol_width: u8,
    /// Sliding window `W` in symbols.
    pub window: u8,
    /// Chunk size `C` in bytes.
    pub chunk_size: u32,
}

/// Threads of the scan kernel's single block.
const SCAN_THREADS: u32 = 1024;
/// Warps per block of the compaction kernel (one chunk each).
const COMPACT_WARPS: u32 = 8;

fn round8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Shared memory of kernel I for `params`: the layout written in `lzss_compress.cu`.
pub fn compress_shared_bytes(params: &LzssShape) -> usize {
    let c = params.chunk_size as usize;
    let m = c / usize::from(params.symbol_width);
    2 * round8(c) + 3 * round8(2 * m) + round8(m) + round8(4 * (m / 32 + 1)) + 128
}

/// Threads of kernel I: a quarter of the chunk's symbols (each warp then matches four
/// groups of 32 positions), 64..=1024.
fn chunk_threads(params: &LzssShape) -> u32 {
    let m = params.chunk_size as usize / usize::from(params.symbol_width);
    ((m / 4).div_ceil(32) * 32).clamp(64, 1024) as u32
}

/// Warps of a decoder block, one block per chunk (at most MAX_WARPS in the kernel): 8
/// for chunks of 4096 symbols or more, which shortens the chain of 32-token batches each
/// warp walks; 4 below, where fewer warps per block fit more blocks (measured on the
/// H100, docs/PERFORMANCE.md).
fn decode_warps(params: &LzssShape) -> u32 {
    let m = params.chunk_size / u32::from(params.symbol_width);
    if m >= 4096 { 8 } else { 4 }
}

/// Shared memory of a decoder block: the chunk, and a u16 source per symbol.
fn decode_shared_bytes(params: &LzssShape) -> usize {
    let c = params.chunk_size as usize;
    round8(c) + round8(2 * (c / usize::from(params.symbol_width)))
}

fn launch_error(e: impl std::fmt::Display) -> Error {
    gpu_error("kernel launch", e)
}

/// Lets `function` use `bytes` of dynamic shared memory, when the device has them.
fn allow_shared(gpu: &Gpu, function: &CudaFunction, bytes: usize, what: &str) -> Result<()> {
    let limit = gpu.info().shared_memory_per_block;
    // Opt in to everything the device allows beyond the kernel's static shared memory,
    // the same value for every caller (the attribute belongs to the function, which
    // threads with different chunk sizes share); each launch asks for what it needs.
    let static_bytes = function
        .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        .map_err(|e| gpu_error("shared memory attribute", e))? as usize;
    if bytes + static_bytes > limit {
        return Err(Error::Gpu(format!(
            "{what} needs {} bytes of shared memory per block, the device has {limit}",
            bytes + static_bytes
        )));
    }
    function
        .set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            (limit - static_bytes) as i32,
        )
        .map_err(|e| gpu_error("shared memory attribute", e))?;
    Ok(())
}

/// The compression kernels for one symbol width.
pub(crate) struct CompressKernels {
    chunks: CudaFunction,
    scan: CudaFunction,
    compact: CudaFunction,
    shared_bytes: usize,
}

/// How kernel I finds each position's longest match (both give the same matches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matcher {
    /// Every distance of the window, 32 positions per ballot.
    Ballot,
    /// Hash chains over the first `min_match_len` symbols, as the CPU does.
    Chains,
}

impl Matcher {
    /// The matcher kernel I uses: hash chains, which measured faster than the ballots
    /// on every TPC-H column but one setting (docs/PERFORMANCE.md, "What limits what");
    /// `COLZIP_LZSS_MATCHER=ballot|chains` forces one, for measuring both.
    pub fn chosen() -> Matcher {
        match std::env::var("COLZIP_LZSS_MATCHER").as_deref() {
            Ok("ballot") => Matcher::Ballot,
            _ => Matcher::Chains,
        }
    }
}

/// Bytes of one hash-chain head table (kernels/lzss_compress.cu, HASH_SIZE u16s).
const CHAIN_HEAD_BYTES: usize = 2 << 12;

/// Head tables kernel I needs: one per segment linked in parallel
/// (`chain_segments` in kernels/lzss_compress.cu: chunks of 4096 symbols or more).
fn chain_head_bytes(params: &LzssShape) -> usize {
    let m = params.chunk_size as usize / usize::from(params.symbol_width);
    let warps = chunk_threads(params) as usize / 32;
    let segments = if m >= 4096 {
        8.min(warps).min(m / 2048)
    } else {
        1
    };
    CHAIN_HEAD_BYTES * segments
}

impl CompressKernels {
    pub(crate) fn new(gpu: &Gpu, params: &LzssShape) -> Result<Self> {
        let matcher = Matcher::chosen();
        let (name, extra) = match matcher {
            Matcher::Ballot => ("lzss_chunks_s", 0),
            Matcher::Chains => ("lzss_chunks_chained_s", chain_head_bytes(params)),
        };
        let chunks = gpu.function(&LZSS_COMPRESS, &format!("{name}{}", params.symbol_width))?;
        let shared_bytes = compress_shared_bytes(params) + extra;
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
    pub(crate) fn take(lane: &mut LaneGuard<'_>, body: usize, params: &LzssShape) -> Result<Self> {
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
    params: &LzssShape,
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
    pub(crate) fn new(gpu: &Gpu, params: &LzssShape) -> Result<Self> {
        let decode = gpu.function(
            &LZSS_DECOMPRESS,
            &format!("lzss_decode_s{}", params.symbol_width),
        )?;
        let warps = decode_warps(params);
        let shared_bytes = decode_shared_bytes(params);
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
    params: &LzssShape,
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
    let grid = u32::try_from(chunks).map_err(|_| Error::Gpu("too many chunks".into()))?;
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

/// The decoder's outcome from the 8 bytes `enqueue_decompress` leaves in `error` (a
/// reason code, then `u32::MAX -` the lowest failing chunk): `None` when every chunk
/// decoded, else `Some((code, chunk))` with `chunk` counted from the launch's first.
pub(crate) fn decode_failure(status: &[u8]) -> Option<(u32, u32)> {
    let code = u32::from_le_bytes(status[..4].try_into().expect("4 bytes"));
    if code == 0 {
        return None;
    }
    let chunk = u32::MAX - u32::from_le_bytes(status[4..8].try_into().expect("4 bytes"));
    Some((code, chunk))
}

/// The reason for a decoder error code (kernels/lzss_decompress.cu).
pub fn decode_error_reason(code: u32) -> &'static str {
    match code {
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
    }
}
