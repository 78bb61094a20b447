//! The launch sequences of the codecs whose streams are blocks with a u16 size table:
//! compression is the codec's encoder, the scan of the sizes
//! (`kernels/size_table_scan.cu`) and the codec's compaction; decoding is the scan of the
//! size table and the codec's decoder. A launch covers the blocks of one or more streams
//! of one parameter set, each block given by its place in the device input or output (a
//! multiple of 8) and a u16 ([`BlockCodec::block_len`]); the size table and offsets are
//! the launch's, across its streams. Also here: the decoders' status word and the
//! reason codes they set. The codecs' own kernels, with the launch shapes and shared
//! memory their sources assume, are in their `gpu/launch.rs`.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg,
};

use super::{BlockCodec, Words};
use crate::gpu::{
    Define, Gpu, GpuError, GpuResult, KernelSource, check_device_len, grid_blocks, launch_error,
};

/// The scan of the sizes: their exclusive prefix sum, each block's offset.
pub const SIZE_TABLE_SCAN: KernelSource = KernelSource {
    name: "size_table_scan.cu",
    source: include_str!("../../../kernels/size_table_scan.cu"),
};

/// The kernel file of this module with the defines its launchers compile it with.
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    vec![(SIZE_TABLE_SCAN, Vec::new())]
}

/// The scan kernel, for a codec's [`BlockEncoder::scan`] and [`BlockDecoder::scan`].
pub(crate) fn scan_function(gpu: &Gpu) -> GpuResult<CudaFunction> {
    gpu.function(&SIZE_TABLE_SCAN, &[], "scan_sizes_u16")
}

/// Threads of the scan kernel's single block.
const SCAN_THREADS: u32 = 1024;

/// The scan's launch: one block.
fn scan_config() -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The device arrays of a compression launch of `blocks` blocks: the input, each
/// block's place in it (u64, a multiple of 8) and its [`BlockCodec::block_len`] (u16), a
/// slot of [`BlockCodec::slot_bytes`] per block in `scratch`, the sizes (u16), the
/// offsets (u64, `blocks + 1`: the last is the total) and `out`, which receives the size
/// table (2 bytes per block) then the encodings.
pub(crate) struct CompressLaunch<'a> {
    pub blocks: usize,
    pub input: CudaView<'a, u8>,
    pub block_in: CudaView<'a, u8>,
    pub block_lens: CudaView<'a, u8>,
    pub scratch: CudaViewMut<'a, u8>,
    pub sizes: CudaViewMut<'a, u8>,
    pub offsets: CudaViewMut<'a, u8>,
    pub out: CudaViewMut<'a, u8>,
}

/// The device arrays of a decode launch of `blocks` blocks: the size table (u16 per
/// block) then `payload_len` bytes of encodings, the offsets the scan writes (u64,
/// `blocks + 1`), each block's place in `out` (u64, a multiple of 8) and its
/// [`BlockCodec::block_len`] (u16), and `error` (8 bytes, zeroed here: a reason code and
/// `u32::MAX -` the lowest failing block).
pub(crate) struct DecodeLaunch<'a> {
    pub blocks: usize,
    pub table_and_payload: CudaView<'a, u8>,
    pub payload_len: usize,
    pub offsets: CudaViewMut<'a, u8>,
    pub block_out: CudaView<'a, u8>,
    pub block_lens: CudaView<'a, u8>,
    pub out: CudaViewMut<'a, u8>,
    pub error: CudaViewMut<'a, u8>,
}

/// A codec's compression kernels for one parameter set.
pub(crate) trait BlockEncoder: Send {
    /// The scan ([`scan_function`]).
    fn scan(&self) -> &CudaFunction;
    /// Queues the encoder over `grid` blocks: block i's encoding into its slot of
    /// `scratch`, its size into `sizes[i]`.
    fn encode(&self, stream: &CudaStream, l: &mut CompressLaunch<'_>, grid: u32) -> GpuResult<()>;
    /// Queues the compaction: the size table, then every encoding at its offset.
    fn compact(&self, stream: &CudaStream, l: &mut CompressLaunch<'_>, grid: u32) -> GpuResult<()>;
}

/// A codec's decoding kernels for one parameter set.
pub(crate) trait BlockDecoder: Send {
    /// The scan ([`scan_function`]).
    fn scan(&self) -> &CudaFunction;
    /// Queues the decoder over `grid` blocks, after the scan wrote the offsets.
    fn decode(&self, stream: &CudaStream, l: &mut DecodeLaunch<'_>, grid: u32) -> GpuResult<()>;
}

/// Checks a launch's block places (u64) and [`BlockCodec::block_len`]s (u16).
fn check_blocks(words: &Words, places: usize, lens: usize, blocks: usize) -> GpuResult<()> {
    check_device_len(words.codec, words.places, places, 8 * blocks)?;
    check_device_len(words.codec, words.lens, lens, 2 * blocks)
}

/// Queues the encoder, the scan and the compaction on `stream`.
pub(crate) fn enqueue_compress<C: BlockCodec>(
    stream: &Arc<CudaStream>,
    codec: &C,
    kernels: &C::Encoder,
    mut l: CompressLaunch<'_>,
) -> GpuResult<()> {
    if l.blocks == 0 {
        return Ok(());
    }
    let words = &C::WORDS;
    check_device_len(
        words.codec,
        "scratch",
        l.scratch.len(),
        l.blocks * codec.slot_bytes(),
    )?;
    check_device_len(words.codec, "sizes", l.sizes.len(), 2 * l.blocks)?;
    check_device_len(words.codec, "offsets", l.offsets.len(), 8 * (l.blocks + 1))?;
    check_blocks(words, l.block_in.len(), l.block_lens.len(), l.blocks)?;
    let grid = grid_blocks(l.blocks, words.grid_blocks)?;
    kernels.encode(stream, &mut l, grid)?;

    let blocks = l.blocks as u64;
    let mut launch = stream.launch_builder(kernels.scan());
    launch.arg(&mut l.sizes).arg(&blocks).arg(&mut l.offsets);
    // SAFETY: reads `blocks` u16 sizes, writes `blocks + 1` u64 offsets.
    unsafe { launch.launch(scan_config()) }.map_err(launch_error)?;

    kernels.compact(stream, &mut l, grid)
}

/// Queues the scan of the size table and the decoder on `stream`.
pub(crate) fn enqueue_decompress<C: BlockCodec>(
    stream: &Arc<CudaStream>,
    kernels: &C::Decoder,
    mut l: DecodeLaunch<'_>,
) -> GpuResult<()> {
    if l.blocks == 0 {
        return Ok(());
    }
    let words = &C::WORDS;
    check_device_len(words.codec, "offsets", l.offsets.len(), 8 * (l.blocks + 1))?;
    check_device_len(words.codec, "error", l.error.len(), 8)?;
    check_device_len(
        words.codec,
        "input",
        l.table_and_payload.len(),
        2 * l.blocks + l.payload_len,
    )?;
    if words.decode_checks_blocks {
        check_blocks(words, l.block_out.len(), l.block_lens.len(), l.blocks)?;
    }
    stream
        .memset_zeros(&mut l.error)
        .map_err(|e| GpuError::driver("memset", e))?;
    let blocks = l.blocks as u64;
    let mut launch = stream.launch_builder(kernels.scan());
    launch
        .arg(&l.table_and_payload)
        .arg(&blocks)
        .arg(&mut l.offsets);
    // SAFETY: reads `blocks` u16 sizes, writes `blocks + 1` u64 offsets.
    unsafe { launch.launch(scan_config()) }.map_err(launch_error)?;

    let grid = grid_blocks(l.blocks, words.grid_blocks)?;
    kernels.decode(stream, &mut l, grid)
}

/// The decoder's outcome from the 8 bytes it leaves in `error`: `None` when every block
/// decoded, else the reason and the lowest failing block of the launch.
pub(crate) fn decode_failure(status: &[u8]) -> Option<(u32, u32)> {
    let code = u32::from_le_bytes(status[..4].try_into().expect("4 bytes"));
    if code == 0 {
        return None;
    }
    let block = u32::MAX - u32::from_le_bytes(status[4..8].try_into().expect("4 bytes"));
    Some((code, block))
}

/// A decoder's reason codes (`E_*` in its kernel file, passed to it as `-D` defines): a
/// `#[repr(u32)]` enum, 0 meaning no error.
pub(crate) trait ReasonCode: Copy + 'static {
    /// Every code with its `E_*` name.
    const CODES: &'static [(Self, &'static str)];
    /// The code's number.
    fn code(self) -> u32;
    /// What the defect is.
    fn text(self) -> &'static str;

    /// The error a status word holds, `None` for 0 or an unknown code.
    fn find(code: u32) -> Option<Self> {
        Self::CODES
            .iter()
            .map(|&(e, _)| e)
            .find(|e| e.code() == code)
    }

    /// What a status word's code means.
    fn reason_of(code: u32) -> &'static str {
        Self::find(code).map_or("unknown decoder error", Self::text)
    }

    /// The `-D` defines of every code.
    fn defines() -> Vec<Define> {
        Self::CODES
            .iter()
            .map(|&(e, name)| Define::new(name, e.code()))
            .collect()
    }
}

/// Declares a decoder's reason codes: a public `#[repr(u32)]` enum (0 is no error), each
/// code with its `E_*` name in the kernel file and what the defect is; with `from_code`,
/// `reason` and [`ReasonCode`] (which gives the kernel file its `-D` defines).
macro_rules! reason_codes {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($variant:ident = $code:literal, $define:literal, $reason:literal;)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[repr(u32)]
        pub enum $name {
            $($variant = $code,)+
        }

        impl $name {
            /// Every code with its `E_*` name.
            const ALL: &'static [($name, &'static str)] = &[$(($name::$variant, $define),)+];

            /// The error a status word holds, `None` for 0 or an unknown code.
            pub fn from_code(code: u32) -> Option<Self> {
                <Self as $crate::codec::blocks_gpu::launch::ReasonCode>::find(code)
            }

            /// What the defect is, in the CPU decoder's words where it has them.
            pub fn reason(self) -> &'static str {
                match self {
                    $($name::$variant => $reason,)+
                }
            }
        }

        impl $crate::codec::blocks_gpu::launch::ReasonCode for $name {
            const CODES: &'static [(Self, &'static str)] = Self::ALL;

            fn code(self) -> u32 {
                self as u32
            }

            fn text(self) -> &'static str {
                self.reason()
            }
        }
    };
}
pub(crate) use reason_codes;
