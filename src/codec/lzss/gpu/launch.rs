//! Launchers of the `lzss` kernels: kernels I–III (`kernels/lzss_compress.cu`,
//! `kernels/scan.cu`) and the decoder (`kernels/lzss_decompress.cu`), with the launch
//! shapes (threads, warps, shared memory) each kernel's source assumes and the decoder's
//! reason codes (a Rust enum, passed to the kernel file as `-D` defines). A launch covers
//! the chunks of one or more streams of the same parameters, each chunk given by its
//! place in the device input (a multiple of 8) and its length; the size table and
//! offsets are the launch's, across its streams. They queue work on a stream for data
//! already on the device; the pipelines around them are `compress.rs` and
//! `decompress.rs`.

use std::sync::Arc;

use cudarc::driver::sys::CUfunction_attribute;
use cudarc::driver::{
    CudaFunction, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg,
};

use crate::gpu::{Define, Gpu, GpuError, GpuResult, KernelSource, launch_error};

/// Kernels I and III.
pub const LZSS_COMPRESS: KernelSource = KernelSource {
    name: "lzss_compress.cu",
    source: include_str!("../../../../kernels/lzss_compress.cu"),
};
/// The decoder.
pub const LZSS_DECOMPRESS: KernelSource = KernelSource {
    name: "lzss_decompress.cu",
    source: include_str!("../../../../kernels/lzss_decompress.cu"),
};
/// Kernel II: the prefix sum of chunk sizes.
pub const SCAN: KernelSource = KernelSource {
    name: "scan.cu",
    source: include_str!("../../../../kernels/scan.cu"),
};

/// Every kernel file of lzss with the defines its launchers compile it with.
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    vec![
        (LZSS_COMPRESS, Vec::new()),
        (LZSS_DECOMPRESS, LzssDecodeError::defines()),
        (SCAN, Vec::new()),
    ]
}

/// Why the decoder rejected a chunk (`E_*` in `kernels/lzss_decompress.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum LzssDecodeError {
    Total = 1,
    Size = 2,
    TokenCount = 3,
    Flags = 4,
    Sections = 5,
    Literal = 6,
    Distance = 7,
    MatchEnd = 8,
    Unfilled = 9,
}

impl LzssDecodeError {
    const ALL: [(LzssDecodeError, &'static str); 9] = [
        (LzssDecodeError::Total, "E_TOTAL"),
        (LzssDecodeError::Size, "E_SIZE"),
        (LzssDecodeError::TokenCount, "E_TOKEN_COUNT"),
        (LzssDecodeError::Flags, "E_FLAGS"),
        (LzssDecodeError::Sections, "E_SECTIONS"),
        (LzssDecodeError::Literal, "E_LITERAL"),
        (LzssDecodeError::Distance, "E_DISTANCE"),
        (LzssDecodeError::MatchEnd, "E_MATCH_END"),
        (LzssDecodeError::Unfilled, "E_UNFILLED"),
    ];

    /// The error a status word holds, `None` for 0 or an unknown code.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL
            .into_iter()
            .map(|(e, _)| e)
            .find(|e| *e as u32 == code)
    }

    /// What the CPU decoder says of the same defect.
    pub fn reason(self) -> &'static str {
        match self {
            LzssDecodeError::Total => "the chunk sizes do not add up to the payload",
            LzssDecodeError::Size => "a chunk size is not in 1..=the chunk's length",
            LzssDecodeError::TokenCount => "truncated or out-of-range token count",
            LzssDecodeError::Flags => "truncated flags or flag padding bits set",
            LzssDecodeError::Sections => "section sizes do not add up to the payload",
            LzssDecodeError::Literal => "literals pass the chunk end",
            LzssDecodeError::Distance => {
                "match distance not in 1..=window or reaches before the chunk start"
            }
            LzssDecodeError::MatchEnd => "match passes the chunk end",
            LzssDecodeError::Unfilled => "tokens do not fill the chunk",
        }
    }

    fn defines() -> Vec<Define> {
        Self::ALL
            .into_iter()
            .map(|(e, name)| Define::new(name, e as u32))
            .collect()
    }
}

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

/// Lets `function` use `bytes` of dynamic shared memory, when the device has them.
fn allow_shared(gpu: &Gpu, function: &CudaFunction, bytes: usize, what: &str) -> GpuResult<()> {
    let limit = gpu.info().shared_memory_per_block;
    // Opt in to everything the device allows beyond the kernel's static shared memory,
    // the same value for every caller (the attribute belongs to the function, which
    // threads with different chunk sizes share); each launch asks for what it needs.
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
            (limit - static_bytes) as i32,
        )
        .map_err(|e| GpuError::driver("shared memory attribute", e))?;
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
    pub(crate) fn new(gpu: &Gpu, params: &LzssShape) -> GpuResult<Self> {
        let matcher = Matcher::chosen();
        let (name, extra) = match matcher {
            Matcher::Ballot => ("lzss_chunks_s", 0),
            Matcher::Chains => ("lzss_chunks_chained_s", chain_head_bytes(params)),
        };
        let chunks = gpu.function(
            &LZSS_COMPRESS,
            &[],
            &format!("{name}{}", params.symbol_width),
        )?;
        let shared_bytes = compress_shared_bytes(params) + extra;
        allow_shared(gpu, &chunks, shared_bytes, "lzss compression")?;
        Ok(CompressKernels {
            chunks,
            scan: gpu.function(&SCAN, &[], "scan_sizes_u16")?,
            compact: gpu.function(&LZSS_COMPRESS, &[], "lzss_compact")?,
            shared_bytes,
        })
    }
}

/// The device arrays of a compression launch of `chunks` chunks: the input, each
/// chunk's place in it (u64, a multiple of 8) and length (u16), C bytes of `scratch` per
/// chunk, the sizes (u16), the offsets (u64, `chunks + 1`: the last is the payload
/// total) and `out`, which receives the size table (2 bytes per chunk) then the payloads.
pub(crate) struct CompressLaunch<'a> {
    pub chunks: usize,
    pub input: CudaView<'a, u8>,
    pub chunk_in: CudaView<'a, u8>,
    pub chunk_lens: CudaView<'a, u8>,
    pub scratch: CudaViewMut<'a, u8>,
    pub sizes: CudaViewMut<'a, u8>,
    pub offsets: CudaViewMut<'a, u8>,
    pub out: CudaViewMut<'a, u8>,
}

fn check_len(what: &str, have: usize, need: usize) -> GpuResult<()> {
    if have < need {
        return Err(GpuError::Limit(format!(
            "lzss {what}: {have} bytes on the device, {need} needed"
        )));
    }
    Ok(())
}

/// Queues kernels I–III on `stream`.
pub(crate) fn enqueue_compress(
    stream: &Arc<CudaStream>,
    kernels: &CompressKernels,
    params: &LzssShape,
    mut l: CompressLaunch<'_>,
) -> GpuResult<()> {
    let c = params.chunk_size;
    let chunks = l.chunks as u64;
    if chunks == 0 {
        return Ok(());
    }
    check_len("scratch", l.scratch.len(), l.chunks * c as usize)?;
    check_len("sizes", l.sizes.len(), 2 * l.chunks)?;
    check_len("offsets", l.offsets.len(), 8 * (l.chunks + 1))?;
    check_len("chunk places", l.chunk_in.len(), 8 * l.chunks)?;
    check_len("chunk lengths", l.chunk_lens.len(), 2 * l.chunks)?;
    let grid = u32::try_from(chunks).map_err(|_| GpuError::Limit("too many chunks".into()))?;
    let window = u32::from(params.window);
    let mut launch = stream.launch_builder(&kernels.chunks);
    launch
        .arg(&l.input)
        .arg(&l.chunk_in)
        .arg(&l.chunk_lens)
        .arg(&c)
        .arg(&window)
        .arg(&mut l.scratch)
        .arg(&mut l.sizes);
    let config = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (chunk_threads(params), 1, 1),
        shared_mem_bytes: kernels.shared_bytes as u32,
    };
    // SAFETY: kernel I reads chunk i's bytes (within `input`, as the caller placed them)
    // and writes its payload within scratch[i*C..(i+1)*C] and sizes[i], i < chunks.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let mut launch = stream.launch_builder(&kernels.scan);
    launch.arg(&mut l.sizes).arg(&chunks).arg(&mut l.offsets);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads `chunks` u16 sizes, writes `chunks + 1` u64 offsets.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let mut launch = stream.launch_builder(&kernels.compact);
    launch
        .arg(&l.input)
        .arg(&l.chunk_in)
        .arg(&l.chunk_lens)
        .arg(&c)
        .arg(&mut l.scratch)
        .arg(&mut l.sizes)
        .arg(&mut l.offsets)
        .arg(&chunks)
        .arg(&mut l.out);
    let config = LaunchConfig {
        grid_dim: (grid.div_ceil(COMPACT_WARPS), 1, 1),
        block_dim: (32 * COMPACT_WARPS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: writes the table (2 * chunks bytes) and payloads whose sizes are at most
    // their chunks' lengths; the caller sized `out` for the table and every chunk stored.
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
    pub(crate) fn new(gpu: &Gpu, params: &LzssShape) -> GpuResult<Self> {
        let decode = gpu.function(
            &LZSS_DECOMPRESS,
            &LzssDecodeError::defines(),
            &format!("lzss_decode_s{}", params.symbol_width),
        )?;
        let warps = decode_warps(params);
        let shared_bytes = decode_shared_bytes(params);
        allow_shared(gpu, &decode, shared_bytes, "lzss decompression")?;
        Ok(DecodeKernels {
            decode,
            scan: gpu.function(&SCAN, &[], "scan_sizes_u16")?,
            warps,
            shared_bytes,
        })
    }
}

/// The device arrays of a decode launch of `chunks` chunks: the size table (u16 per
/// chunk) then `payload_len` payload bytes, the offsets the scan writes (u64, `chunks +
/// 1`), each chunk's place in `out` (u64, a multiple of 8) and length (u16), and `error`
/// (8 bytes, zeroed here: a reason code and `u32::MAX -` the lowest failing chunk).
pub(crate) struct DecodeLaunch<'a> {
    pub chunks: usize,
    pub table_and_payload: CudaView<'a, u8>,
    pub payload_len: usize,
    pub offsets: CudaViewMut<'a, u8>,
    pub chunk_out: CudaView<'a, u8>,
    pub chunk_lens: CudaView<'a, u8>,
    pub out: CudaViewMut<'a, u8>,
    pub error: CudaViewMut<'a, u8>,
}

/// Queues the decoder.
pub(crate) fn enqueue_decompress(
    stream: &Arc<CudaStream>,
    kernels: &DecodeKernels,
    params: &LzssShape,
    mut l: DecodeLaunch<'_>,
) -> GpuResult<()> {
    let c = params.chunk_size;
    let chunks = l.chunks as u64;
    if chunks == 0 {
        return Ok(());
    }
    check_len("offsets", l.offsets.len(), 8 * (l.chunks + 1))?;
    check_len("error", l.error.len(), 8)?;
    check_len(
        "input",
        l.table_and_payload.len(),
        2 * l.chunks + l.payload_len,
    )?;
    stream
        .memset_zeros(&mut l.error)
        .map_err(|e| GpuError::driver("memset", e))?;
    let mut launch = stream.launch_builder(&kernels.scan);
    launch
        .arg(&l.table_and_payload)
        .arg(&chunks)
        .arg(&mut l.offsets);
    let config = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (SCAN_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: reads `chunks` u16 sizes, writes `chunks + 1` u64 offsets.
    unsafe { launch.launch(config) }.map_err(launch_error)?;

    let payload_len = l.payload_len as u64;
    let window = u32::from(params.window);
    let mut launch = stream.launch_builder(&kernels.decode);
    launch
        .arg(&l.table_and_payload)
        .arg(&mut l.offsets)
        .arg(&chunks)
        .arg(&payload_len)
        .arg(&l.chunk_out)
        .arg(&l.chunk_lens)
        .arg(&c)
        .arg(&window)
        .arg(&mut l.out)
        .arg(&mut l.error);
    let grid = u32::try_from(chunks).map_err(|_| GpuError::Limit("too many chunks".into()))?;
    let config = LaunchConfig {
        grid_dim: (grid, 1, 1),
        block_dim: (32 * kernels.warps, 1, 1),
        shared_mem_bytes: kernels.shared_bytes as u32,
    };
    // SAFETY: the decoder checks every size, offset, length and distance against the
    // lengths passed here before reading or writing; chunk i writes only
    // out[chunk_out[i] .. + chunk_lens[i]], which the caller placed within `out`.
    unsafe { launch.launch(config) }
        .map(|_| ())
        .map_err(launch_error)
}

/// The decoder's outcome from the 8 bytes it leaves in `error`: `None` when every chunk
/// decoded, else the reason and the lowest failing chunk of the launch.
pub(crate) fn decode_failure(status: &[u8]) -> Option<(u32, u32)> {
    let code = u32::from_le_bytes(status[..4].try_into().expect("4 bytes"));
    if code == 0 {
        return None;
    }
    let chunk = u32::MAX - u32::from_le_bytes(status[4..8].try_into().expect("4 bytes"));
    Some((code, chunk))
}

/// The reason for a decoder error code.
pub fn decode_error_reason(code: u32) -> &'static str {
    LzssDecodeError::from_code(code).map_or("unknown decoder error", LzssDecodeError::reason)
}
