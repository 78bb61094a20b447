//! Launchers of the `intpack` kernels: the encoder, the prefix sum of the encodings'
//! sizes (lzss's `scan.cu`) and the compaction (`kernels/intpack_compress.cu`), and the
//! decoder (`kernels/intpack_decompress.cu`), with the launch shapes and shared memory
//! each kernel's source assumes and the decoder's reason codes (a Rust enum, passed to
//! the kernel file as `-D` defines). A launch covers the blocks of one or more streams of
//! the same width `W`, each block given by its place (a multiple of 8) and its value
//! count; the size table and offsets are the launch's, across its streams. They queue
//! work on a stream for data already on the device; the pipelines around them are
//! `compress.rs` and `decompress.rs`.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaFunction, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg,
};

use crate::codec::intpack::BLOCK_VALUES;
use crate::codec::lzss::gpu::launch::SCAN;
use crate::gpu::{Define, Gpu, GpuError, GpuResult, KernelSource, launch_error};

/// The encoder and the compaction (after the shared arithmetic of both kernel files).
pub const INTPACK_COMPRESS: KernelSource = KernelSource {
    name: "intpack_compress.cu",
    source: concat!(
        include_str!("../../../../kernels/intpack_common.cuh"),
        include_str!("../../../../kernels/intpack_compress.cu")
    ),
};
/// The decoder (after the shared arithmetic of both kernel files).
pub const INTPACK_DECOMPRESS: KernelSource = KernelSource {
    name: "intpack_decompress.cu",
    source: concat!(
        include_str!("../../../../kernels/intpack_common.cuh"),
        include_str!("../../../../kernels/intpack_decompress.cu")
    ),
};

/// Threads of an encoder or decoder block (one per 1024-value block): each owns 4
/// consecutive values.
const THREADS: u32 = 256;
/// Threads of a compaction block (one per encoding).
const COMPACT_THREADS: u32 = 128;
/// Threads of the scan kernel's single block.
const SCAN_THREADS: u32 = 1024;

/// The block shape both kernel files are compiled with.
fn shape_defines() -> Vec<Define> {
    vec![
        Define::new("INTPACK_BLOCK_VALUES", BLOCK_VALUES),
        Define::new("INTPACK_THREADS", THREADS),
    ]
}

/// Every kernel file of intpack with the defines its launchers compile it with (the scan
/// is lzss's, listed there).
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    let mut decode = shape_defines();
    decode.extend(IntpackDecodeError::defines());
    vec![
        (INTPACK_COMPRESS, shape_defines()),
        (INTPACK_DECOMPRESS, decode),
    ]
}

/// Why the decoder rejected a block (`E_*` in `kernels/intpack_decompress.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum IntpackDecodeError {
    Total = 1,
    Size = 2,
    Scheme = 3,
    Width = 4,
    Count = 5,
    Length = 6,
    Runs = 7,
    Index = 8,
    Exceptions = 9,
}

impl IntpackDecodeError {
    const ALL: [(IntpackDecodeError, &'static str); 9] = [
        (IntpackDecodeError::Total, "E_TOTAL"),
        (IntpackDecodeError::Size, "E_SIZE"),
        (IntpackDecodeError::Scheme, "E_SCHEME"),
        (IntpackDecodeError::Width, "E_WIDTH"),
        (IntpackDecodeError::Count, "E_COUNT"),
        (IntpackDecodeError::Length, "E_LENGTH"),
        (IntpackDecodeError::Runs, "E_RUNS"),
        (IntpackDecodeError::Index, "E_INDEX"),
        (IntpackDecodeError::Exceptions, "E_EXCEPTIONS"),
    ];

    /// The error a status word holds, `None` for 0 or an unknown code.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL
            .into_iter()
            .map(|(e, _)| e)
            .find(|e| *e as u32 == code)
    }

    /// What the defect is, in the CPU decoder's words where it has them.
    pub fn reason(self) -> &'static str {
        match self {
            IntpackDecodeError::Total => "the block sizes do not add up to the encodings",
            IntpackDecodeError::Size => {
                "a block size is 0, longer than any encoding of its values, or past the stream"
            }
            IntpackDecodeError::Scheme => "scheme byte greater than 5",
            IntpackDecodeError::Width => {
                "frame's b larger than 8w, b > 0 in a frame of no values, or an exception \
                 frame's h of 0 or b + h larger than 8w"
            }
            IntpackDecodeError::Count => {
                "run count r, dictionary size d or exception count e of 0 or more than the \
                 block's values"
            }
            IntpackDecodeError::Length => "the block's encoding does not fill exactly its size",
            IntpackDecodeError::Runs => {
                "run of length 0, or run lengths that do not add up to the block's values"
            }
            IntpackDecodeError::Index => "dictionary index not below d",
            IntpackDecodeError::Exceptions => {
                "exception positions not ascending or not below the block's values"
            }
        }
    }

    fn defines() -> Vec<Define> {
        Self::ALL
            .into_iter()
            .map(|(e, name)| Define::new(name, e as u32))
            .collect()
    }
}

fn round8(x: usize) -> usize {
    x.div_ceil(8) * 8
}

/// Bytes of a block's slot in the encoder's scratch: its longest encoding (scheme 0 with
/// `b = 8W`, `2 + W + 1024 W`) rounded up to 8 (`slot_bytes` in intpack_compress.cu).
pub(crate) fn slot_bytes(width: u8) -> usize {
    let w = usize::from(width);
    round8(2 + w + BLOCK_VALUES * w)
}

/// Shared memory of the encoder: values, sorted values, run starts and the encoding
/// (the layout written in intpack_compress.cu).
fn compress_shared_bytes(width: u8) -> usize {
    let w = usize::from(width);
    2 * BLOCK_VALUES * w + 2 * BLOCK_VALUES + slot_bytes(width) + 8
}

/// Shared memory of the decoder: the staged encoding (at most its longest valid length,
/// `7 + W + 1024 (W + 2)`: runs with `r = n`), the run or dictionary values and the run
/// starts (the layout written in intpack_decompress.cu).
fn decode_shared_bytes(width: u8) -> usize {
    let w = usize::from(width);
    round8(7 + w + BLOCK_VALUES * (w + 2)) + BLOCK_VALUES * w + 4 * BLOCK_VALUES
}

/// Lets `function` use `bytes` of dynamic shared memory, when the device has them.
fn allow_shared(gpu: &Gpu, function: &CudaFunction, bytes: usize, what: &str) -> GpuResult<()> {
    let limit = gpu.info().shared_memory_per_block;
    let static_bytes = function
        .get_attribute(CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)
        .map_err(|e| GpuError::driver("shared memory attribute", e))?
        as usize;
    if bytes + static_bytes > limit {
        return Err(GpuError::Limit(format!(
            "{what} needs {} bytes of shared memory per block, the device has {limit}",
            bytes + static_bytes
        )));
    }
    function
        .set_attribute(
            CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            bytes as i32,
        )
        .map_err(|e| GpuError::driver("shared memory attribute", e))?;
    Ok(())
}

fn check_len(what: &str, have: usize, need: usize) -> GpuResult<()> {
    if have < need {
        return Err(GpuError::Limit(format!(
            "intpack {what}: {have} bytes on the device, {need} needed"
        )));
    }
    Ok(())
}

fn grid(blocks: usize) -> GpuResult<u32> {
    u32::try_from(blocks).map_err(|_| GpuError::Limit("too many intpack blocks".into()))
}

/// The compression kernels for one width.
pub(crate) struct CompressKernels {
    encode: CudaFunction,
    scan: CudaFunction,
    compact: CudaFunction,
    width: u8,
    shared_bytes: usize,
}

impl CompressKernels {
    pub(crate) fn new(gpu: &Gpu, width: u8) -> GpuResult<Self> {
        let defines = shape_defines();
        let encode = gpu.function(
            &INTPACK_COMPRESS,
            &defines,
            &format!("intpack_encode_w{width}"),
        )?;
        let shared_bytes = compress_shared_bytes(width);
        allow_shared(gpu, &encode, shared_bytes, "intpack compression")?;
        Ok(CompressKernels {
            encode,
            scan: gpu.function(&SCAN, &[], "scan_sizes_u16")?,
            compact: gpu.function(&INTPACK_COMPRESS, &defines, "intpack_compact")?,
            width,
            shared_bytes,
        })
    }
}

/// The device arrays of a compression launch of `blocks` blocks: the input, each
/// block's place in it (u64, a multiple of 8) and value count (u16, 1..=1024), a slot of
/// [`slot_bytes`] per block in `scratch`, the sizes (u16), the offsets (u64, `blocks +
/// 1`: the last is the total) and `out`, which receives the size table (2 bytes per
/// block) then the encodings.
pub(crate) struct CompressLaunch<'a> {
    pub blocks: usize,
    pub input: CudaView<'a, u8>,
    pub block_in: CudaView<'a, u8>,
    pub block_values: CudaView<'a, u8>,
    pub scratch: CudaViewMut<'a, u8>,
    pub sizes: CudaViewMut<'a, u8>,
    pub offsets: CudaViewMut<'a, u8>,
    pub out: CudaViewMut<'a, u8>,
}

/// Queues the encoder, the scan and the compaction on `stream`.
pub(crate) fn enqueue_compress(
    stream: &Arc<CudaStream>,
    kernels: &CompressKernels,
    mut l: CompressLaunch<'_>,
) -> GpuResult<()> {
    if l.blocks == 0 {
        return Ok(());
    }
    let slot = slot_bytes(kernels.width);
    check_len("scratch", l.scratch.len(), l.blocks * slot)?;
    check_len("sizes", l.sizes.len(), 2 * l.blocks)?;
    check_len("offsets", l.offsets.len(), 8 * (l.blocks + 1))?;
    check_len("block places", l.block_in.len(), 8 * l.blocks)?;
    check_len("block value counts", l.block_values.len(), 2 * l.blocks)?;
    let blocks = l.blocks as u64;
    let mut launch = stream.launch_builder(&kernels.encode);
    launch
        .arg(&l.input)
        .arg(&l.block_in)
        .arg(&l.block_values)
        .arg(&blocks)
        .arg(&mut l.scratch)
        .arg(&mut l.sizes);
    let config = LaunchConfig {
        grid_dim: (grid(l.blocks)?, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: kernels.shared_bytes as u32,
    };
    // SAFETY: block i reads its values (within `input`, as the caller placed them) and
    // writes its encoding within scratch[i * slot .. (i + 1) * slot] and sizes[i].
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let mut launch = stream.launch_builder(&kernels.scan);
    launch.arg(&mut l.sizes).arg(&blocks).arg(&mut l.offsets);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads `blocks` u16 sizes, writes `blocks + 1` u64 offsets.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let slot_stride = slot as u32;
    let mut launch = stream.launch_builder(&kernels.compact);
    launch
        .arg(&mut l.scratch)
        .arg(&slot_stride)
        .arg(&mut l.sizes)
        .arg(&mut l.offsets)
        .arg(&blocks)
        .arg(&mut l.out);
    let config = LaunchConfig {
        grid_dim: (grid(l.blocks)?, 1, 1),
        block_dim: (COMPACT_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: writes the table (2 * blocks bytes) and encodings of at most a slot each;
    // the caller sized `out` for the table and every block's longest encoding.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// The decoder's kernels for one width.
pub(crate) struct DecodeKernels {
    decode: CudaFunction,
    scan: CudaFunction,
    shared_bytes: usize,
}

impl DecodeKernels {
    pub(crate) fn new(gpu: &Gpu, width: u8) -> GpuResult<Self> {
        let mut defines = shape_defines();
        defines.extend(IntpackDecodeError::defines());
        let decode = gpu.function(
            &INTPACK_DECOMPRESS,
            &defines,
            &format!("intpack_decode_w{width}"),
        )?;
        let shared_bytes = decode_shared_bytes(width);
        allow_shared(gpu, &decode, shared_bytes, "intpack decompression")?;
        Ok(DecodeKernels {
            decode,
            scan: gpu.function(&SCAN, &[], "scan_sizes_u16")?,
            shared_bytes,
        })
    }
}

/// The device arrays of a decode launch of `blocks` blocks: the size table (u16 per
/// block) then `payload_len` bytes of encodings, the offsets the scan writes (u64,
/// `blocks + 1`), each block's place in `out` (u64, a multiple of 8) and value count
/// (u16), and `error` (8 bytes, zeroed here: a reason code and `u32::MAX -` the lowest
/// failing block).
pub(crate) struct DecodeLaunch<'a> {
    pub blocks: usize,
    pub table_and_payload: CudaView<'a, u8>,
    pub payload_len: usize,
    pub offsets: CudaViewMut<'a, u8>,
    pub block_out: CudaView<'a, u8>,
    pub block_values: CudaView<'a, u8>,
    pub out: CudaViewMut<'a, u8>,
    pub error: CudaViewMut<'a, u8>,
}

/// Queues the scan of the size table and the decoder.
pub(crate) fn enqueue_decompress(
    stream: &Arc<CudaStream>,
    kernels: &DecodeKernels,
    mut l: DecodeLaunch<'_>,
) -> GpuResult<()> {
    if l.blocks == 0 {
        return Ok(());
    }
    check_len("offsets", l.offsets.len(), 8 * (l.blocks + 1))?;
    check_len("error", l.error.len(), 8)?;
    check_len(
        "input",
        l.table_and_payload.len(),
        2 * l.blocks + l.payload_len,
    )?;
    check_len("block places", l.block_out.len(), 8 * l.blocks)?;
    check_len("block value counts", l.block_values.len(), 2 * l.blocks)?;
    stream
        .memset_zeros(&mut l.error)
        .map_err(|e| GpuError::driver("memset", e))?;
    let blocks = l.blocks as u64;
    let mut launch = stream.launch_builder(&kernels.scan);
    launch
        .arg(&l.table_and_payload)
        .arg(&blocks)
        .arg(&mut l.offsets);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads `blocks` u16 sizes, writes `blocks + 1` u64 offsets.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let payload_len = l.payload_len as u64;
    let mut launch = stream.launch_builder(&kernels.decode);
    launch
        .arg(&l.table_and_payload)
        .arg(&mut l.offsets)
        .arg(&blocks)
        .arg(&payload_len)
        .arg(&l.block_out)
        .arg(&l.block_values)
        .arg(&mut l.out)
        .arg(&mut l.error);
    let config = LaunchConfig {
        grid_dim: (grid(l.blocks)?, 1, 1),
        block_dim: (THREADS, 1, 1),
        shared_mem_bytes: kernels.shared_bytes as u32,
    };
    // SAFETY: the decoder checks every size and field against the lengths passed here
    // before reading; block i writes only its values at out[block_out[i] ..], which the
    // caller placed within `out`.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
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

/// The reason for a decoder error code.
pub fn decode_error_reason(code: u32) -> &'static str {
    IntpackDecodeError::from_code(code).map_or("unknown decoder error", IntpackDecodeError::reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shared_memory_fits_every_width_on_a_48_kib_device() {
        // Besides the dynamic part, about 1 KiB of static shared memory in the encoder
        // (reductions, scan, the bit histogram) and less in the decoder.
        for width in [1u8, 2, 4, 8] {
            assert!(compress_shared_bytes(width) + 2048 <= 48 << 10, "W={width}");
            assert!(decode_shared_bytes(width) + 1024 <= 48 << 10, "W={width}");
        }
        assert_eq!(slot_bytes(8), 8208);
    }

    #[test]
    fn reason_codes_round_trip() {
        for (e, _) in IntpackDecodeError::ALL {
            assert_eq!(IntpackDecodeError::from_code(e as u32), Some(e));
        }
        assert_eq!(IntpackDecodeError::from_code(0), None);
    }
}
