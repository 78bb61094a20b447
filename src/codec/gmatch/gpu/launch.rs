//! Launchers of the G-match kernels, with the constants the kernel files take from here
//! (`-D` defines: block size, hash parameters, slot and record layout, format codes):
//! `kernels/gmatch_compress.cu` (the elements of every 64 KiB block, the layout of a
//! launch's output, the assembly of the final bytes), `kernels/crc32c.cu` (masked
//! CRC-32C of byte ranges) and `kernels/snappy_decompress.cu` (the batched raw decoder).
//! They queue work on a stream for data already on the device; the pipelines around them
//! are `compress.rs` and `decompress.rs`.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg,
};

use super::super::hash::{HASH_BITS, HASH_MULTIPLIER, NO_CANDIDATE};
use super::super::{BLOCK_SIZE, NAME};
use crate::codec::SnappyFormat;
use crate::codec::crc_gpu::crc_function;
use crate::gpu::{
    Define, Gpu, GpuResult, KernelSource, check_device_len, grid_blocks, launch_error,
};

/// The compression kernels.
pub const GMATCH_COMPRESS: KernelSource = KernelSource {
    name: "gmatch_compress.cu",
    source: include_str!("../../../../kernels/gmatch_compress.cu"),
};
/// The batched raw decoder.
pub const SNAPPY_DECOMPRESS: KernelSource = KernelSource {
    name: "snappy_decompress.cu",
    source: include_str!("../../../../kernels/snappy_decompress.cu"),
};

/// Bytes of a block's element slot (`GM_SLOT`): more than any block's elements can take
/// (each match of 4+ bytes saves a byte, each literal run costs at most 3).
pub const SLOT_BYTES: usize = BLOCK_SIZE + BLOCK_SIZE / 16 + 64;
/// Element size the block kernel reports for a block whose elements did not fit its slot
/// (never expected; the layout kernel turns it into an error flag).
pub const SLOT_OVERFLOW: u32 = u32::MAX;
/// Bytes the input buffer must extend past its data: the kernels read whole aligned
/// words around the last bytes.
pub const INPUT_PADDING: usize = 16;
/// Bytes of an assembly record (`GM_RECORD`).
pub const RECORD_BYTES: usize = 64;
/// Scratch bytes per block: the u16 index array and the u32 match of every position.
pub const SCRATCH_BYTES: usize = BLOCK_SIZE * (2 + 4);
/// Bytes the decoder's input and output must extend past their last buffer: it reads
/// whole aligned words around a buffer's bytes.
pub const WORD_SLACK: usize = 4;

/// Threads per block of the block kernel (`GM_THREADS`, fixed by its segments).
const BLOCK_THREADS: u32 = 256;
/// Threads per record of the assembly kernel and per range of the CRC kernel.
const COPY_THREADS: u32 = 256;
/// Threads of the layout kernel's single block.
const LAYOUT_THREADS: u32 = 1024;
/// Warps (buffers) per block of the decoder (`SD_WARPS`).
const DECODE_WARPS: u32 = 4;

/// How a launch's blocks are laid out (`GM_FORMAT_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum LayoutFormat {
    /// Elements only (a raw stream's blocks after its preamble).
    Raw = 0,
    /// Framing-format chunks (header, CRC, preamble and elements, or stored bytes).
    Framed = 1,
    /// Each block its own raw stream (preamble and elements).
    Blocks = 2,
}

impl From<SnappyFormat> for LayoutFormat {
    /// How the kernels lay out the blocks of streams in `format`.
    fn from(format: SnappyFormat) -> Self {
        match format {
            SnappyFormat::Raw => LayoutFormat::Raw,
            SnappyFormat::Framed => LayoutFormat::Framed,
            SnappyFormat::Blocks => LayoutFormat::Blocks,
        }
    }
}

/// Why the decoder rejected a buffer (`S_*` in `kernels/snappy_decompress.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum SnappyDecodeError {
    TruncatedTag = 1,
    LiteralPastInput = 2,
    PastLength = 3,
    BadOffset = 4,
    Short = 5,
}

impl SnappyDecodeError {
    const ALL: [SnappyDecodeError; 5] = [
        SnappyDecodeError::TruncatedTag,
        SnappyDecodeError::LiteralPastInput,
        SnappyDecodeError::PastLength,
        SnappyDecodeError::BadOffset,
        SnappyDecodeError::Short,
    ];

    /// The error a status word holds, `None` for success (0) or an unknown code.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL.into_iter().find(|e| *e as u32 == code)
    }

    /// What the CPU decoder says of the same defect.
    pub fn reason(self) -> &'static str {
        match self {
            SnappyDecodeError::TruncatedTag => "truncated tag",
            SnappyDecodeError::LiteralPastInput => "literal runs past the stream",
            SnappyDecodeError::PastLength => "element runs past the claimed length",
            SnappyDecodeError::BadOffset => "copy offset of 0 or before the output start",
            SnappyDecodeError::Short => "stream ends before the claimed length",
        }
    }
}

/// Every kernel file of gmatch with the defines its launchers compile it with.
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    vec![
        (GMATCH_COMPRESS, compress_defines()),
        (SNAPPY_DECOMPRESS, decode_defines()),
    ]
}

fn compress_defines() -> Vec<Define> {
    vec![
        Define::new("GM_BLOCK", BLOCK_SIZE),
        Define::new("GM_HASH_BITS", HASH_BITS),
        Define::new("GM_MULT", format!("{HASH_MULTIPLIER:#x}u")),
        Define::new("GM_NONE", format!("{NO_CANDIDATE:#x}u")),
        Define::new("GM_THREADS", BLOCK_THREADS),
        Define::new("GM_SLOT", SLOT_BYTES),
        Define::new("GM_SLOT_OVERFLOW", format!("{SLOT_OVERFLOW:#x}u")),
        Define::new("GM_RECORD", RECORD_BYTES),
        Define::new("GM_FORMAT_RAW", LayoutFormat::Raw as u32),
        Define::new("GM_FORMAT_FRAMED", LayoutFormat::Framed as u32),
        Define::new("GM_FORMAT_BLOCKS", LayoutFormat::Blocks as u32),
    ]
}

fn decode_defines() -> Vec<Define> {
    let mut defines = vec![Define::new("SD_WARPS", DECODE_WARPS)];
    for (name, error) in [
        ("S_TRUNCATED_TAG", SnappyDecodeError::TruncatedTag),
        ("S_LITERAL_INPUT", SnappyDecodeError::LiteralPastInput),
        ("S_PAST_LENGTH", SnappyDecodeError::PastLength),
        ("S_OFFSET", SnappyDecodeError::BadOffset),
        ("S_SHORT", SnappyDecodeError::Short),
    ] {
        defines.push(Define::new(name, error as u32));
    }
    defines
}

/// The compression kernels, loaded once per call.
pub(crate) struct CompressKernels {
    blocks: CudaFunction,
    layout: CudaFunction,
    assemble: CudaFunction,
    crc: CudaFunction,
}

impl CompressKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        let defines = compress_defines();
        Ok(CompressKernels {
            blocks: gpu.function(&GMATCH_COMPRESS, &defines, "gmatch_blocks")?,
            layout: gpu.function(&GMATCH_COMPRESS, &defines, "gmatch_layout")?,
            assemble: gpu.function(&GMATCH_COMPRESS, &defines, "gmatch_assemble")?,
            crc: crc_function(gpu)?,
        })
    }
}

/// The device arrays of a launch of `count` blocks: the input (data plus
/// [`INPUT_PADDING`]) and each block's start (u64) and length (u32, 1..=65536), the
/// headers' room before each block (`lead`, u32), [`SCRATCH_BYTES`] of `scratch` and
/// [`SLOT_BYTES`] of `slots` per block, the element sizes (u32), the CRCs (u32, framed),
/// the records ([`RECORD_BYTES`] each), the stream lengths (u32) and the status (two
/// u64: the output's total, an overflow flag), and the output.
pub(crate) struct CompressLaunch<'a> {
    pub count: usize,
    pub format: LayoutFormat,
    pub input: CudaView<'a, u8>,
    pub block_in: CudaView<'a, u8>,
    pub block_len: CudaView<'a, u8>,
    /// The lengths again as u64, for the CRC kernel (framed launches).
    pub block_len64: CudaView<'a, u8>,
    pub lead: CudaView<'a, u8>,
    pub scratch: CudaViewMut<'a, u8>,
    pub slots: CudaViewMut<'a, u8>,
    pub sizes: CudaViewMut<'a, u8>,
    pub crcs: CudaViewMut<'a, u8>,
    pub records: CudaViewMut<'a, u8>,
    pub stream_lens: CudaViewMut<'a, u8>,
    pub status: CudaViewMut<'a, u8>,
    pub output: CudaViewMut<'a, u8>,
}

/// Queues the whole compression of a launch: the block kernel, the CRCs (framed), the
/// layout and the assembly. The output's size is known once `status` is read back; the
/// caller sized `output` for the worst case (`max_launch_output`).
pub(crate) fn enqueue_compress(
    stream: &Arc<CudaStream>,
    kernels: &CompressKernels,
    mut l: CompressLaunch<'_>,
) -> GpuResult<()> {
    if l.count == 0 {
        return Ok(());
    }
    let count = l.count;
    check_device_len(NAME, "scratch", l.scratch.len(), count * SCRATCH_BYTES)?;
    check_device_len(NAME, "slots", l.slots.len(), count * SLOT_BYTES)?;
    check_device_len(NAME, "records", l.records.len(), count * RECORD_BYTES)?;
    check_device_len(NAME, "sizes", l.sizes.len(), count * 4)?;
    check_device_len(NAME, "stream lengths", l.stream_lens.len(), count * 4)?;
    check_device_len(NAME, "status", l.status.len(), 16)?;
    let (mut index, mut best) = l.scratch.split_at_mut(count * BLOCK_SIZE * 2);
    let mut launch = stream.launch_builder(&kernels.blocks);
    launch
        .arg(&l.input)
        .arg(&l.block_in)
        .arg(&l.block_len)
        .arg(&mut index)
        .arg(&mut best)
        .arg(&mut l.slots)
        .arg(&mut l.sizes);
    let config = LaunchConfig {
        grid_dim: (grid_blocks(count, "blocks")?, 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: block b reads input[block_in[b] .. + block_len[b] + padding], writes its own
    // 65536 u16 + 65536 u32 of scratch, SLOT_BYTES of slots (checked in the kernel) and
    // sizes[b]; every array was checked above for `count` blocks.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    if l.format == LayoutFormat::Framed {
        let count64 = count as u64;
        let mut launch = stream.launch_builder(&kernels.crc);
        launch
            .arg(&l.input)
            .arg(&l.block_in)
            .arg(&l.block_len64)
            .arg(&count64)
            .arg(&mut l.crcs);
        let config = LaunchConfig {
            grid_dim: (grid_blocks(count, "ranges")?, 1, 1),
            block_dim: (COPY_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: block r reads input[block_in[r] .. + len[r]] and writes crcs[r], r < count.
        unsafe { launch.launch(config) }.map_err(launch_error)?;
    }

    let count64 = count as u64;
    let format = l.format as u32;
    let mut launch = stream.launch_builder(&kernels.layout);
    launch
        .arg(&mut l.sizes)
        .arg(&l.block_len)
        .arg(&l.block_in)
        .arg(&l.lead)
        .arg(&count64)
        .arg(&format)
        .arg(&mut l.records)
        .arg(&mut l.stream_lens)
        .arg(&mut l.status);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (LAYOUT_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: one block reads `count` entries of sizes, block_len, block_in and lead, and
    // writes `count` records and stream lengths and two status words.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let mut launch = stream.launch_builder(&kernels.assemble);
    launch
        .arg(&mut l.records)
        .arg(&count64)
        .arg(&mut l.slots)
        .arg(&l.input)
        .arg(&mut l.crcs)
        .arg(&mut l.output);
    let config = LaunchConfig {
        grid_dim: (grid_blocks(count, "records")?, 1, 1),
        block_dim: (COPY_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the layout kernel placed record r's bytes within the worst-case output the
    // caller sized `output` for; each reads its slot or its block's input range.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// Bytes a launch of blocks of `lens` with `leads` can write at most.
pub(crate) fn max_launch_output(lens: &[u32], leads: &[u32]) -> usize {
    lens.iter()
        .zip(leads)
        .map(|(&len, &lead)| lead as usize + 16 + super::super::max_compressed_len(len as usize))
        .sum()
}

/// The decoder and, for framed streams, the CRC kernel.
pub(crate) struct DecodeKernels {
    decode: CudaFunction,
    crc: CudaFunction,
}

impl DecodeKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        Ok(DecodeKernels {
            decode: gpu.function(&SNAPPY_DECOMPRESS, &decode_defines(), "snappy_decode_raw")?,
            crc: crc_function(gpu)?,
        })
    }
}

/// Where every buffer of a decode launch is: its element bytes in the launch's input and
/// its output in the launch's output (u64 offsets and lengths, as the kernel reads them).
#[derive(Default, Debug)]
pub(crate) struct DecodeLayout {
    in_offsets: Vec<u64>,
    in_lens: Vec<u64>,
    out_offsets: Vec<u64>,
    out_lens: Vec<u64>,
}

impl DecodeLayout {
    pub(crate) fn push(&mut self, input: std::ops::Range<usize>, output: std::ops::Range<usize>) {
        self.in_offsets.push(input.start as u64);
        self.in_lens.push(input.len() as u64);
        self.out_offsets.push(output.start as u64);
        self.out_lens.push(output.len() as u64);
    }

    pub(crate) fn len(&self) -> usize {
        self.in_offsets.len()
    }

    /// The four arrays packed for one upload, and each one's bytes in the pack (input
    /// offsets, input lengths, output offsets, output lengths).
    pub(crate) fn pack(&self) -> (crate::gpu::ArrayPack, [std::ops::Range<usize>; 4]) {
        let mut pack = crate::gpu::ArrayPack::new();
        let ids = [
            pack.push_u64(&self.in_offsets),
            pack.push_u64(&self.in_lens),
            pack.push_u64(&self.out_offsets),
            pack.push_u64(&self.out_lens),
        ];
        let spans = ids.map(|id| pack.span(id));
        (pack, spans)
    }
}

/// The device arrays of a decode launch of `count` buffers: element bytes and outputs
/// (each extending [`WORD_SLACK`] past its last buffer), u64 offsets and lengths of each,
/// a u32 status per buffer and, with `crcs`, a u32 masked CRC of each output.
pub(crate) struct DecodeLaunch<'a> {
    pub count: usize,
    pub input: CudaView<'a, u8>,
    pub in_offsets: CudaView<'a, u8>,
    pub in_lens: CudaView<'a, u8>,
    pub output: CudaViewMut<'a, u8>,
    pub out_offsets: CudaView<'a, u8>,
    pub out_lens: CudaView<'a, u8>,
    pub status: CudaViewMut<'a, u8>,
    pub crcs: Option<CudaViewMut<'a, u8>>,
}

/// Queues the decoder over a launch (and the CRCs of the outputs). The offsets and
/// lengths must lie within `input` and `output`: the caller builds them from the buffers
/// it packed.
pub(crate) fn enqueue_decode(
    stream: &Arc<CudaStream>,
    kernels: &DecodeKernels,
    mut l: DecodeLaunch<'_>,
) -> GpuResult<()> {
    if l.count == 0 {
        return Ok(());
    }
    check_device_len(NAME, "statuses", l.status.len(), 4 * l.count)?;
    let count = l.count as u64;
    let grid = grid_blocks(l.count.div_ceil(DECODE_WARPS as usize), "buffers to decode")?;
    let mut launch = stream.launch_builder(&kernels.decode);
    launch
        .arg(&l.input)
        .arg(&l.in_offsets)
        .arg(&l.in_lens)
        .arg(&mut l.output)
        .arg(&l.out_offsets)
        .arg(&l.out_lens)
        .arg(&count)
        .arg(&mut l.status);
    let config = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (32 * DECODE_WARPS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: each warp reads in[in_offsets[b]..+in_lens[b]] and the aligned words that
    // hold bytes of out[out_offsets[b]..+out_lens[b]] (at most 3 bytes past the last
    // buffer: the caller allocates WORD_SLACK more), and writes only that output range
    // and status[b], for b < count; the kernel checks every element against the lengths.
    unsafe { launch.launch(config) }.map_err(launch_error)?;
    if let Some(mut crcs) = l.crcs {
        check_device_len(NAME, "crcs", crcs.len(), 4 * l.count)?;
        let mut launch = stream.launch_builder(&kernels.crc);
        launch
            .arg(&mut l.output)
            .arg(&l.out_offsets)
            .arg(&l.out_lens)
            .arg(&count)
            .arg(&mut crcs);
        let config = LaunchConfig {
            grid_dim: (grid_blocks(l.count, "CRCs")?, 1, 1),
            block_dim: (COPY_THREADS, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: block r reads out[out_offsets[r] .. + out_lens[r]] and writes crcs[r].
        unsafe { launch.launch(config) }.map_err(launch_error)?;
    }
    Ok(())
}
