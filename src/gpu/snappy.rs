//! Launcher of the batched Snappy raw decoder (`kernels/snappy_decompress.cu`): one warp
//! per buffer, for element bytes already on the device. The stream-level path (preambles,
//! framing, uploads) is `colzip::codec::gmatch::gpu`.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::device::{Gpu, KernelSource, gpu_error};
use crate::{Error, Result};

/// The batched raw decoder.
pub const SNAPPY_DECOMPRESS: KernelSource = KernelSource {
    name: "snappy_decompress.cu",
    source: include_str!("../../kernels/snappy_decompress.cu"),
};

/// Bytes the decoder's input and output arrays must extend past their last buffer: it
/// reads whole aligned words around a buffer's bytes.
pub const WORD_SLACK: usize = 4;

/// Warps (buffers) per block of the decoder.
const DECODE_WARPS: u32 = 4;

/// The decoder kernel.
pub(crate) struct SnappyDecoder {
    function: CudaFunction,
}

impl SnappyDecoder {
    pub(crate) fn new(gpu: &Gpu) -> Result<Self> {
        Ok(SnappyDecoder {
            function: gpu.function(&SNAPPY_DECOMPRESS, "snappy_decode_raw")?,
        })
    }
}

/// Device arrays of a batch: the element bytes and the outputs, with per-buffer u64
/// offsets and lengths, and a u32 status per buffer. `input` and `output` extend
/// [`WORD_SLACK`] bytes past their last buffer.
pub(crate) struct DecodeBatch<'a> {
    pub input: &'a CudaSlice<u8>,
    pub in_offsets: &'a CudaSlice<u64>,
    pub in_lens: &'a CudaSlice<u64>,
    pub output: &'a mut CudaSlice<u8>,
    pub out_offsets: &'a CudaSlice<u64>,
    pub out_lens: &'a CudaSlice<u64>,
    pub status: &'a mut CudaSlice<u32>,
    pub count: u64,
}

/// Queues the decoder over a batch. The offsets and lengths must lie within `input` and
/// `output` (the launcher's caller builds them from the buffers it concatenated).
pub(crate) fn enqueue_decode(
    stream: &Arc<CudaStream>,
    decoder: &SnappyDecoder,
    batch: DecodeBatch<'_>,
) -> Result<()> {
    if batch.count == 0 {
        return Ok(());
    }
    let grid = u32::try_from(batch.count.div_ceil(u64::from(DECODE_WARPS)))
        .map_err(|_| Error::Gpu("too many buffers in one batch".into()))?;
    let count = batch.count;
    let mut launch = stream.launch_builder(&decoder.function);
    launch
        .arg(batch.input)
        .arg(batch.in_offsets)
        .arg(batch.in_lens)
        .arg(batch.output)
        .arg(batch.out_offsets)
        .arg(batch.out_lens)
        .arg(&count)
        .arg(batch.status);
    let config = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (32 * DECODE_WARPS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: each warp reads in[in_offsets[b]..+in_lens[b]] and the aligned words that
    // hold bytes of out[out_offsets[b]..+out_lens[b]] (at most 3 bytes past the last
    // buffer: the caller allocates WORD_SLACK more), and writes only that output range
    // and status[b], for b < count; the kernel checks every element against the lengths.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(|e| gpu_error("kernel launch", e))
}

/// The reason for a decoder status code (kernels/snappy_decompress.cu).
pub fn decode_error_reason(code: u32) -> &'static str {
    match code {
        1 => "truncated tag",
        2 => "literal runs past the stream",
        3 => "element runs past the claimed length",
        4 => "copy offset of 0 or before the output start",
        5 => "stream ends before the claimed length",
        _ => "unknown decoder error",
    }
}
