//! Launchers of the `lzss` kernels: kernels I and III (`kernels/lzss_compress.cu`) and
//! the decoder (`kernels/lzss_decompress.cu`), with the launch shapes (threads, warps,
//! shared memory) each kernel's source assumes and the decoder's reason codes (a Rust
//! enum, passed to the kernel file as `-D` defines); and lzss as a [`BlockCodec`]. Kernel
//! II, the scan of the chunk sizes, and the launch sequences around these kernels are
//! shared with intpack ([`crate::codec::blocks_gpu::launch`]): a launch covers the chunks
//! of one or more streams of the same parameters, each chunk given by its place in the
//! device input (a multiple of 8) and its length.

use cudarc::driver::{CudaFunction, CudaStream, LaunchConfig, PushKernelArg};

use crate::codec::blocks_gpu::launch::{
    BlockDecoder, BlockEncoder, CompressLaunch, DecodeLaunch, ReasonCode, reason_codes,
    scan_function,
};
use crate::codec::blocks_gpu::{BlockCodec, Buffers, Table, Words};
use crate::codec::lzss::{self, LzssParams, StreamLayout};
use crate::gpu::{Define, Gpu, GpuResult, KernelSource, SharedOptIn, allow_shared, launch_error};

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

/// Every kernel file of lzss with the defines its launchers compile it with (kernel II is
/// the shared scan, listed in [`crate::codec::blocks_gpu::launch`]).
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    vec![
        (LZSS_COMPRESS, Vec::new()),
        (LZSS_DECOMPRESS, LzssDecodeError::defines()),
    ]
}

reason_codes! {
    /// Why the decoder rejected a chunk (`E_*` in `kernels/lzss_decompress.cu`), in the
    /// words the CPU decoder says of the same defect.
    pub enum LzssDecodeError {
        Total = 1, "E_TOTAL", "the chunk sizes do not add up to the payload";
        Size = 2, "E_SIZE", "a chunk size is not in 1..=the chunk's length";
        TokenCount = 3, "E_TOKEN_COUNT", "truncated or out-of-range token count";
        Flags = 4, "E_FLAGS", "truncated flags or flag padding bits set";
        Sections = 5, "E_SECTIONS", "section sizes do not add up to the payload";
        Literal = 6, "E_LITERAL", "literals pass the chunk end";
        Distance = 7, "E_DISTANCE",
            "match distance not in 1..=window or reaches before the chunk start";
        MatchEnd = 8, "E_MATCH_END", "match passes the chunk end";
        Unfilled = 9, "E_UNFILLED", "tokens do not fill the chunk";
    }
}

/// What the launchers need of a stream's parameters (`S`, `W`, `C`), as plain numbers.
/// The caller has validated them: `symbol_width` 1, 2, 4 or 8, `window` 1..=255,
/// `chunk_size` a multiple of 8 in 2048..=16384.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LzssShape {
    /// Symbol width `S` in bytes.
    pub symbol_width: u8,
    /// Sliding window `W` in symbols.
    pub window: u8,
    /// Chunk size `C` in bytes.
    pub chunk_size: u32,
}

/// What the launchers need of `params`.
pub(crate) fn shape(params: &LzssParams) -> LzssShape {
    LzssShape {
        symbol_width: params.symbol_width,
        window: params.window,
        chunk_size: params.chunk_size,
    }
}

/// The parameters `shape` holds (all of them).
fn params(shape: &LzssShape) -> LzssParams {
    LzssParams {
        symbol_width: shape.symbol_width,
        window: shape.window,
        chunk_size: shape.chunk_size,
    }
}

/// lzss as the shared pipelines see it: blocks are chunks of `C` bytes, each given to
/// the kernels by its length in bytes, with a scratch slot of `C` bytes (a chunk that
/// does not shrink is stored).
impl BlockCodec for LzssShape {
    type Reason = LzssDecodeError;
    type Encoder = CompressKernels;
    type Decoder = DecodeKernels;
    type Layout = StreamLayout;

    const WORDS: Words = Words {
        codec: lzss::NAME,
        block: "chunk",
        places: "chunk places",
        lens: "chunk lengths",
        payload: "payload bytes",
        grid_blocks: "chunks",
        one_set: "one parameter set",
        decode_checks_blocks: false,
    };
    const BUFFERS: Buffers = Buffers {
        input: "lzss.in",
        meta: "lzss.meta",
        scratch: "lzss.scratch",
        sizes: "lzss.sizes",
        offsets: "lzss.offsets",
        out: "lzss.out",
        staged: "lzss.staged",
        error: "lzss.error",
    };

    fn of_layout(layout: &StreamLayout) -> Self {
        shape(&layout.params)
    }

    fn table(layout: &StreamLayout) -> Table<'_> {
        Table {
            len: layout.len,
            body: layout.body,
            table_at: layout.table_at,
            payload_at: layout.payload_at,
            offsets: &layout.offsets,
        }
    }

    fn value_width(&self) -> usize {
        usize::from(self.symbol_width)
    }

    fn block_bytes(&self) -> usize {
        self.chunk_size as usize
    }

    fn block_len(&self, body: usize, k: usize) -> u16 {
        let c = self.chunk_size as usize;
        (body - k * c).min(c) as u16
    }

    fn slot_bytes(&self) -> usize {
        self.chunk_size as usize
    }

    /// The table and at most every chunk's bytes (and the gaps between pieces).
    fn out_bytes(&self, blocks: usize, input: usize) -> usize {
        2 * blocks + input
    }

    fn header(&self, len: usize) -> Vec<u8> {
        let mut header = Vec::with_capacity(16);
        lzss::write_header(&mut header, &params(self), len as u64);
        header
    }

    fn max_compressed_len(&self, len: usize) -> usize {
        lzss::max_compressed_len(len, &params(self))
    }

    fn encoder(&self, gpu: &Gpu) -> GpuResult<CompressKernels> {
        CompressKernels::new(gpu, self)
    }

    fn decoder(&self, gpu: &Gpu) -> GpuResult<DecodeKernels> {
        DecodeKernels::new(gpu, self)
    }
}

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
/// warp walks; 4 below, where fewer warps per block fit more blocks (measured:
/// docs/PERFORMANCE.md).
fn decode_warps(params: &LzssShape) -> u32 {
    let m = params.chunk_size / u32::from(params.symbol_width);
    if m >= 4096 { 8 } else { 4 }
}

/// Shared memory of a decoder block: the chunk, and a u16 source per symbol.
fn decode_shared_bytes(params: &LzssShape) -> usize {
    let c = params.chunk_size as usize;
    round8(c) + round8(2 * (c / usize::from(params.symbol_width)))
}

/// The opt-in to shared memory of kernel I and the decoder: everything the device allows,
/// the same value for every caller (the attribute belongs to the function, which threads
/// with different chunk sizes share); each launch asks for what it needs.
const SHARED_OPT_IN: SharedOptIn = SharedOptIn::DeviceLimit;

/// The compression kernels for one parameter set.
pub(crate) struct CompressKernels {
    params: LzssShape,
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
        allow_shared(
            gpu,
            &chunks,
            shared_bytes,
            "lzss compression",
            SHARED_OPT_IN,
        )?;
        Ok(CompressKernels {
            params: *params,
            chunks,
            scan: scan_function(gpu)?,
            compact: gpu.function(&LZSS_COMPRESS, &[], "lzss_compact")?,
            shared_bytes,
        })
    }
}

impl BlockEncoder for CompressKernels {
    fn scan(&self) -> &CudaFunction {
        &self.scan
    }

    /// Kernel I.
    fn encode(&self, stream: &CudaStream, l: &mut CompressLaunch<'_>, grid: u32) -> GpuResult<()> {
        let c = self.params.chunk_size;
        let window = u32::from(self.params.window);
        let mut launch = stream.launch_builder(&self.chunks);
        launch
            .arg(&l.input)
            .arg(&l.block_in)
            .arg(&l.block_lens)
            .arg(&c)
            .arg(&window)
            .arg(&mut l.scratch)
            .arg(&mut l.sizes);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (chunk_threads(&self.params), 1, 1),
            shared_mem_bytes: self.shared_bytes as u32,
        };
        // SAFETY: kernel I reads chunk i's bytes (within `input`, as the caller placed
        // them) and writes its payload within scratch[i*C..(i+1)*C] and sizes[i], i <
        // chunks.
        unsafe { launch.launch(config) }.map_err(launch_error)?;
        Ok(())
    }

    /// Kernel III.
    fn compact(&self, stream: &CudaStream, l: &mut CompressLaunch<'_>, grid: u32) -> GpuResult<()> {
        let c = self.params.chunk_size;
        let chunks = l.blocks as u64;
        let mut launch = stream.launch_builder(&self.compact);
        launch
            .arg(&l.input)
            .arg(&l.block_in)
            .arg(&l.block_lens)
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
        // their chunks' lengths; the caller sized `out` for the table and every chunk
        // stored.
        unsafe { launch.launch(config) }
            .map(|_| ())
            .map_err(launch_error)
    }
}

/// The decoder's kernels for one parameter set.
pub(crate) struct DecodeKernels {
    params: LzssShape,
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
        allow_shared(
            gpu,
            &decode,
            shared_bytes,
            "lzss decompression",
            SHARED_OPT_IN,
        )?;
        Ok(DecodeKernels {
            params: *params,
            decode,
            scan: scan_function(gpu)?,
            warps,
            shared_bytes,
        })
    }
}

impl BlockDecoder for DecodeKernels {
    fn scan(&self) -> &CudaFunction {
        &self.scan
    }

    fn decode(&self, stream: &CudaStream, l: &mut DecodeLaunch<'_>, grid: u32) -> GpuResult<()> {
        let c = self.params.chunk_size;
        let chunks = l.blocks as u64;
        let payload_len = l.payload_len as u64;
        let window = u32::from(self.params.window);
        let mut launch = stream.launch_builder(&self.decode);
        launch
            .arg(&l.table_and_payload)
            .arg(&mut l.offsets)
            .arg(&chunks)
            .arg(&payload_len)
            .arg(&l.block_out)
            .arg(&l.block_lens)
            .arg(&c)
            .arg(&window)
            .arg(&mut l.out)
            .arg(&mut l.error);
        let config = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (32 * self.warps, 1, 1),
            shared_mem_bytes: self.shared_bytes as u32,
        };
        // SAFETY: the decoder checks every size, offset, length and distance against the
        // lengths passed here before reading or writing; chunk i writes only
        // out[chunk_out[i] .. + chunk_lens[i]], which the caller placed within `out`.
        unsafe { launch.launch(config) }
            .map(|_| ())
            .map_err(launch_error)
    }
}
