//! Launchers of the G-match compression kernels (`kernels/gmatch_compress.cu`: the
//! elements of every 64 KiB block, then the assembly of the final bytes) and of the
//! masked CRC-32C kernel (`kernels/crc32c.cu`), with the sizes and record layout those
//! sources assume. They queue work for data already on the device; the Snappy raw and
//! framing formats around the blocks are built by `colzip::codec::gmatch::gpu`.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::device::{Gpu, KernelSource, gpu_error};
use crate::{Error, Result};

/// The block and assembly kernels.
pub const GMATCH_COMPRESS: KernelSource = KernelSource {
    name: "gmatch_compress.cu",
    source: include_str!("../../kernels/gmatch_compress.cu"),
};
/// Masked CRC-32C of byte ranges.
pub const CRC32C: KernelSource = KernelSource {
    name: "crc32c.cu",
    source: include_str!("../../kernels/crc32c.cu"),
};

/// Bytes per block (`GM_BLOCK`).
pub const BLOCK_BYTES: usize = 1 << 16;
/// Bytes of a block's element slot (`GM_SLOT`): more than any block's elements.
pub const SLOT_BYTES: usize = BLOCK_BYTES + BLOCK_BYTES / 16 + 64;
/// `out_sizes` value of a block whose elements did not fit its slot (never expected).
pub const SLOT_OVERFLOW: u32 = u32::MAX;
/// Bytes the input buffer must extend past its data: the kernels read whole aligned
/// words around the last bytes.
pub const INPUT_PADDING: usize = 16;
/// Bytes of an assembly record (`GM_RECORD`).
pub const RECORD_BYTES: usize = 64;
/// Most prefix bytes of a record.
pub const MAX_PREFIX: usize = 32;
/// Scratch bytes per block: the u16 index array and the u32 match of every position.
pub const SCRATCH_BYTES: usize = BLOCK_BYTES * (2 + 4);

/// Threads per block of the block kernel (`GM_THREADS`, fixed by its segments).
const BLOCK_THREADS: u32 = 256;
/// Threads per record of the assembly kernel and per range of the CRC kernel.
const COPY_THREADS: u32 = 256;

/// The kernels, loaded once per call site.
pub(crate) struct GmatchKernels {
    blocks: CudaFunction,
    assemble: CudaFunction,
    crc: CudaFunction,
}

impl GmatchKernels {
    pub(crate) fn new(gpu: &Gpu) -> Result<Self> {
        Ok(GmatchKernels {
            blocks: gpu.function(&GMATCH_COMPRESS, "gmatch_blocks")?,
            assemble: gpu.function(&GMATCH_COMPRESS, "gmatch_assemble")?,
            crc: gpu.function(&CRC32C, "crc32c_masked")?,
        })
    }
}

/// One output piece: `prefix` then the body (the block's elements from its slot, or
/// `body_len` input bytes from `src` when `stored`), written at `dst`; with `crc`, bytes
/// 4..8 of the prefix become the block's masked CRC-32C.
#[derive(Clone, Debug)]
pub struct AssembleRecord {
    pub dst: u64,
    pub src: u64,
    pub body_len: u32,
    pub stored: bool,
    pub crc: bool,
    pub prefix: Vec<u8>,
}

impl AssembleRecord {
    /// Bytes the record writes.
    pub fn len(&self) -> usize {
        self.prefix.len() + self.body_len as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The record in the kernel's layout.
    pub fn encode(&self, out: &mut Vec<u8>) {
        debug_assert!(self.prefix.len() <= MAX_PREFIX && (!self.crc || self.prefix.len() >= 8));
        let flags = u32::from(self.stored) | (u32::from(self.crc) << 1);
        out.extend_from_slice(&self.dst.to_le_bytes());
        out.extend_from_slice(&self.src.to_le_bytes());
        out.extend_from_slice(&self.body_len.to_le_bytes());
        out.extend_from_slice(&flags.to_le_bytes());
        out.extend_from_slice(&(self.prefix.len() as u32).to_le_bytes());
        out.extend_from_slice(&[0; 4]);
        let mut prefix = [0u8; MAX_PREFIX];
        prefix[..self.prefix.len()].copy_from_slice(&self.prefix);
        out.extend_from_slice(&prefix);
    }
}

fn launch_error(e: impl std::fmt::Display) -> Error {
    gpu_error("kernel launch", e)
}

fn grid(count: u64, what: &str) -> Result<u32> {
    u32::try_from(count).map_err(|_| Error::Gpu(format!("too many {what} in one launch")))
}

/// Device arrays of a batch of blocks: `input` (data plus [`INPUT_PADDING`]), each
/// block's start (u64) and length (u32, 1..=65536), [`SCRATCH_BYTES`] of `scratch` and
/// [`SLOT_BYTES`] of `slots` per block, and a u32 per block for the element sizes.
pub(crate) struct BlockBatch<'a> {
    pub input: &'a CudaSlice<u8>,
    pub block_in: &'a CudaSlice<u64>,
    pub block_len: &'a CudaSlice<u32>,
    pub scratch: &'a mut CudaSlice<u8>,
    pub slots: &'a mut CudaSlice<u8>,
    pub sizes: &'a mut CudaSlice<u32>,
    pub count: u64,
}

/// Queues the block kernel: every block's elements into its slot, their size into
/// `sizes` ([`SLOT_OVERFLOW`] if they did not fit).
pub(crate) fn enqueue_blocks(
    stream: &Arc<CudaStream>,
    kernels: &GmatchKernels,
    batch: BlockBatch<'_>,
) -> Result<()> {
    if batch.count == 0 {
        return Ok(());
    }
    let count = batch.count as usize;
    if batch.scratch.len() < count * SCRATCH_BYTES || batch.slots.len() < count * SLOT_BYTES {
        return Err(Error::Gpu("gmatch scratch or slots too small".into()));
    }
    let (mut index, mut best) = batch.scratch.split_at_mut(count * BLOCK_BYTES * 2);
    let mut launch = stream.launch_builder(&kernels.blocks);
    launch
        .arg(batch.input)
        .arg(batch.block_in)
        .arg(batch.block_len)
        .arg(&mut index)
        .arg(&mut best)
        .arg(batch.slots)
        .arg(batch.sizes);
    let config = LaunchConfig {
        grid_dim: (grid(batch.count, "blocks")?, 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: block b reads input[block_in[b] .. + block_len[b] + padding], writes its own
    // 65536 u16 + 65536 u32 of scratch, SLOT_BYTES of slots (checked in the kernel) and
    // sizes[b]; the caller sized every array for `count` blocks.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// Queues the masked CRC-32C of `count` ranges of `data` (u64 offsets and lengths) into
/// `crcs`.
pub(crate) fn enqueue_crc(
    stream: &Arc<CudaStream>,
    kernels: &GmatchKernels,
    data: &CudaSlice<u8>,
    offsets: &CudaSlice<u64>,
    lens: &CudaSlice<u64>,
    count: u64,
    crcs: &mut CudaSlice<u32>,
) -> Result<()> {
    if count == 0 {
        return Ok(());
    }
    let mut launch = stream.launch_builder(&kernels.crc);
    launch
        .arg(data)
        .arg(offsets)
        .arg(lens)
        .arg(&count)
        .arg(crcs);
    let config = LaunchConfig {
        grid_dim: (grid(count, "ranges")?, 1, 1),
        block_dim: (COPY_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: block r reads data[offsets[r] .. + lens[r]] (within `data`, as the caller
    // built them) and writes crcs[r], r < count.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// Device arrays of an assembly: `count` encoded records, the slots and input of the
/// block batch, a masked CRC per record, and the output.
pub(crate) struct AssembleBatch<'a> {
    pub records: &'a CudaSlice<u8>,
    pub count: u64,
    pub slots: &'a CudaSlice<u8>,
    pub input: &'a CudaSlice<u8>,
    pub crcs: &'a CudaSlice<u32>,
    pub output: &'a mut CudaSlice<u8>,
}

/// Queues the assembly: record r (of block r) writes its prefix and body at its `dst`.
pub(crate) fn enqueue_assemble(
    stream: &Arc<CudaStream>,
    kernels: &GmatchKernels,
    batch: AssembleBatch<'_>,
) -> Result<()> {
    if batch.count == 0 {
        return Ok(());
    }
    let mut launch = stream.launch_builder(&kernels.assemble);
    launch
        .arg(batch.records)
        .arg(&batch.count)
        .arg(batch.slots)
        .arg(batch.input)
        .arg(batch.crcs)
        .arg(batch.output);
    let config = LaunchConfig {
        grid_dim: (grid(batch.count, "records")?, 1, 1),
        block_dim: (COPY_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the records were built by the caller from the block sizes the block kernel
    // wrote: each writes output[dst .. dst + len) within `output` and reads its slot or
    // its block's input range.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}
