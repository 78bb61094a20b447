//! Launchers of the `bwt` decoding kernels (`kernels/bwt_decompress.cu`, and the CRC-32C
//! kernel of `kernels/crc32c.cu`), with the launch shapes each kernel's source assumes,
//! the device layout of a block's description ([`BlockInfo`]) and the decoder's reason
//! codes (a Rust enum, passed to the kernel file as `-D` defines). They queue work on a
//! stream for data already on the device; the pipeline around them is `decompress.rs`.

use std::sync::Arc;

use cudarc::driver::{
    CudaFunction, CudaStream, CudaView, CudaViewMut, LaunchConfig, PushKernelArg,
};

use super::super::NAME;
use crate::codec::crc_gpu::crc_function;
use crate::gpu::{
    Define, Gpu, GpuResult, KernelSource, check_device_len, launch_error, launch_for,
};

/// The decoder's kernels.
pub const BWT_DECOMPRESS: KernelSource = KernelSource {
    name: "bwt_decompress.cu",
    source: include_str!("../../../../kernels/bwt_decompress.cu"),
};

/// Symbols per move-to-front chunk (`MTF_CHUNK`).
pub(crate) const MTF_CHUNK: usize = 2048;
/// Threads per block of `bwt_mtf_chunks` (`MTF_THREADS`).
const MTF_THREADS: u32 = 64;
/// Bytes of the last column per warp of the LF kernels (`PIECE`).
pub(crate) const PIECE: usize = 4096;
/// Warps per block of `bwt_histogram` and `bwt_lf` (`LF_WARPS`).
const LF_WARPS: u32 = 4;
/// Threads per block of the kernels with a thread per subsequence or stretch.
const THREADS: u32 = 128;
/// Threads per block of the per-block kernels (one per byte value).
const BLOCK_THREADS: u32 = 256;
/// Threads per range of the CRC kernel.
pub(crate) const CRC_THREADS: u32 = 256;

/// Every kernel file of bwt with the defines its launchers compile it with.
pub(crate) fn kernel_builds() -> Vec<(KernelSource, Vec<Define>)> {
    vec![
        (BWT_DECOMPRESS, BwtDecodeError::defines()),
        (super::forward::BWT_FORWARD, Vec::new()),
        (super::symbols::BWT_ENCODE, Vec::new()),
        (super::huffman::BWT_HUFFMAN, Vec::new()),
    ]
}

/// Why the GPU decoder rejected a block (`B_*` in `kernels/bwt_decompress.cu`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum BwtDecodeError {
    Gap = 1,
    Codewords = 2,
    Symbols = 3,
    Run = 4,
    Length = 5,
    Indices = 6,
}

impl BwtDecodeError {
    const ALL: [(BwtDecodeError, &'static str); 6] = [
        (BwtDecodeError::Gap, "B_GAP"),
        (BwtDecodeError::Codewords, "B_CODEWORDS"),
        (BwtDecodeError::Symbols, "B_SYMBOLS"),
        (BwtDecodeError::Run, "B_RUN"),
        (BwtDecodeError::Length, "B_LENGTH"),
        (BwtDecodeError::Indices, "B_INDICES"),
    ];

    /// The error a status word holds, `None` for 0 or an unknown code.
    pub fn from_code(code: u32) -> Option<Self> {
        Self::ALL
            .into_iter()
            .map(|(e, _)| e)
            .find(|e| *e as u32 == code)
    }

    fn defines() -> Vec<Define> {
        Self::ALL
            .iter()
            .map(|&(e, name)| Define::new(name, e as u32))
            .collect()
    }

    /// What the error says, in the CPU decoder's words where it has them.
    pub fn reason(self) -> &'static str {
        match self {
            BwtDecodeError::Gap => "gap array points outside the bitstream",
            BwtDecodeError::Codewords => "codewords do not meet the next gap array entry",
            BwtDecodeError::Symbols => "more symbols than the block can hold",
            BwtDecodeError::Run => "zero run overflows the block",
            BwtDecodeError::Length => "the symbols do not make the block's length",
            BwtDecodeError::Indices => "BWT indices do not meet the rebuilt text",
        }
    }
}

/// One block's place in a launch's buffers and its geometry: `struct BlockInfo` of the
/// kernel file, field for field (64 bytes).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BlockInfo {
    pub bits_at: u64,
    /// Also where its symbols are, and (plus its index) its LF entries.
    pub out_at: u64,
    pub n: u32,
    pub total_bits: u32,
    pub sub_first: u32,
    pub nsub: u32,
    pub sel_at: u32,
    pub table_first: u32,
    pub chunk_first: u32,
    pub piece_first: u32,
    pub aux_at: u32,
    pub naux: u32,
    pub used: u32,
    pub seg_log2: u8,
    pub sub_log2: u8,
    pub aux_log2: u8,
}

impl BlockInfo {
    /// Size of the device struct.
    pub const BYTES: usize = 2 * 8 + 11 * 4 + 4;

    /// Appends the device struct's bytes.
    pub fn write(&self, out: &mut Vec<u8>) {
        for v in [self.bits_at, self.out_at] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for v in [
            self.n,
            self.total_bits,
            self.sub_first,
            self.nsub,
            self.sel_at,
            self.table_first,
            self.chunk_first,
            self.piece_first,
            self.aux_at,
            self.naux,
            self.used,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        out.extend_from_slice(&[self.seg_log2, self.sub_log2, self.aux_log2, 0]);
    }
}

/// The decoding kernels, loaded once per call.
pub(crate) struct DecodeKernels {
    huffman: CudaFunction,
    symbol_offsets: CudaFunction,
    mtf_chunks: CudaFunction,
    mtf_compose: CudaFunction,
    histogram: CudaFunction,
    rank_bases: CudaFunction,
    lf: CudaFunction,
    walk: CudaFunction,
    crc: CudaFunction,
}

impl DecodeKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        let defines = BwtDecodeError::defines();
        let f = |name: &str| gpu.function(&BWT_DECOMPRESS, &defines, name);
        Ok(DecodeKernels {
            huffman: f("bwt_huffman")?,
            symbol_offsets: f("bwt_symbol_offsets")?,
            mtf_chunks: f("bwt_mtf_chunks")?,
            mtf_compose: f("bwt_mtf_compose")?,
            histogram: f("bwt_histogram")?,
            rank_bases: f("bwt_rank_bases")?,
            lf: f("bwt_lf")?,
            walk: f("bwt_walk")?,
            crc: crc_function(gpu)?,
        })
    }
}

/// The device arrays of a launch over `blocks` blocks with `subs` subsequences, `chunks`
/// MTF chunks, `pieces` LF pieces and `auxs` auxiliary indices in all (each array's
/// element type is the kernel's; sizes are checked before launching).
pub(crate) struct DecodeLaunch<'a> {
    pub blocks: usize,
    pub subs: usize,
    pub chunks: usize,
    pub pieces: usize,
    pub auxs: usize,
    /// The blocks' bitstreams, one after another.
    pub bits: CudaView<'a, u8>,
    /// [`BlockInfo`] per block.
    pub infos: CudaView<'a, u8>,
    /// u32 per subsequence, MTF chunk, LF piece and auxiliary index: its block.
    pub sub_block: CudaView<'a, u8>,
    pub chunk_block: CudaView<'a, u8>,
    pub piece_block: CudaView<'a, u8>,
    pub aux_block: CudaView<'a, u8>,
    /// u8 per subsequence: its gap.
    pub gaps: CudaView<'a, u8>,
    /// u8 per segment: its table.
    pub selectors: CudaView<'a, u8>,
    /// The tables' device images.
    pub tables: CudaView<'a, u8>,
    /// 256 bytes per block: its alphabet.
    pub alphabets: CudaView<'a, u8>,
    /// u32 per auxiliary index.
    pub aux: CudaView<'a, u8>,
    /// u64 offset and length per block of its output (for the CRCs).
    pub out_offsets: CudaView<'a, u8>,
    pub out_lens: CudaView<'a, u8>,
    /// Scratch: u32 per subsequence, u32 per block, u16 per byte of output, u64 and 256
    /// bytes per chunk, 1 KiB per piece, u64 per byte of output plus one per block.
    pub counts: CudaViewMut<'a, u8>,
    pub sym_counts: CudaViewMut<'a, u8>,
    pub symbols: CudaViewMut<'a, u8>,
    pub values: CudaViewMut<'a, u8>,
    pub lists: CudaViewMut<'a, u8>,
    pub piece_counts: CudaViewMut<'a, u8>,
    pub entries: CudaViewMut<'a, u8>,
    /// u32 per block, zeroed: 0 or a [`BwtDecodeError`] code; and the blocks' masked CRCs.
    pub status: CudaViewMut<'a, u8>,
    pub crcs: CudaViewMut<'a, u8>,
    /// The output, with the sum of the blocks' lengths.
    pub out: CudaViewMut<'a, u8>,
    pub out_len: usize,
}

/// Queues the whole decoding of a launch: symbols, bytes of the last column, the LF
/// mapping, the walks, the CRCs. `status` and `crcs` hold the verdicts once the stream
/// reaches them.
pub(crate) fn enqueue_decompress(
    stream: &Arc<CudaStream>,
    kernels: &DecodeKernels,
    mut l: DecodeLaunch<'_>,
) -> GpuResult<()> {
    let (blocks, subs, chunks, pieces, auxs) = (l.blocks, l.subs, l.chunks, l.pieces, l.auxs);
    if blocks == 0 {
        return Ok(());
    }
    check_device_len(
        NAME,
        "block infos",
        l.infos.len(),
        blocks * BlockInfo::BYTES,
    )?;
    check_device_len(NAME, "subsequence blocks", l.sub_block.len(), subs * 4)?;
    check_device_len(NAME, "chunk blocks", l.chunk_block.len(), chunks * 4)?;
    check_device_len(NAME, "piece blocks", l.piece_block.len(), pieces * 4)?;
    check_device_len(NAME, "aux blocks", l.aux_block.len(), auxs * 4)?;
    check_device_len(NAME, "gaps", l.gaps.len(), subs)?;
    check_device_len(NAME, "alphabets", l.alphabets.len(), blocks * 256)?;
    check_device_len(NAME, "aux", l.aux.len(), auxs * 4)?;
    check_device_len(NAME, "output offsets", l.out_offsets.len(), blocks * 8)?;
    check_device_len(NAME, "output lengths", l.out_lens.len(), blocks * 8)?;
    check_device_len(NAME, "counts", l.counts.len(), subs * 4)?;
    check_device_len(NAME, "symbol counts", l.sym_counts.len(), blocks * 4)?;
    check_device_len(NAME, "symbols", l.symbols.len(), l.out_len * 2)?;
    check_device_len(NAME, "values", l.values.len(), chunks * 8)?;
    check_device_len(NAME, "lists", l.lists.len(), chunks * 256)?;
    check_device_len(NAME, "piece counts", l.piece_counts.len(), pieces * 1024)?;
    check_device_len(NAME, "entries", l.entries.len(), (l.out_len + blocks) * 8)?;
    check_device_len(NAME, "status", l.status.len(), blocks * 4)?;
    check_device_len(NAME, "crcs", l.crcs.len(), blocks * 4)?;
    check_device_len(NAME, "output", l.out.len(), l.out_len)?;
    let (subs64, chunks64, pieces64, auxs64) =
        (subs as u64, chunks as u64, pieces as u64, auxs as u64);
    let blocks32 = blocks as u32;

    // SAFETY (every launch below): the kernels index each array by the block
    // descriptions the host built for these buffers (their extents checked above) and
    // check every value the bits decode to before using it as an index.
    for write in [0u32, 1] {
        let mut launch = stream.launch_builder(&kernels.huffman);
        launch
            .arg(&l.infos)
            .arg(&l.sub_block)
            .arg(&subs64)
            .arg(&l.gaps)
            .arg(&l.selectors)
            .arg(&l.tables)
            .arg(&l.bits)
            .arg(&mut l.counts)
            .arg(&mut l.symbols)
            .arg(&mut l.status)
            .arg(&write);
        unsafe { launch.launch(launch_for(subs, THREADS, "subsequences")?) }
            .map_err(launch_error)?;
        if write == 0 {
            let mut launch = stream.launch_builder(&kernels.symbol_offsets);
            launch
                .arg(&l.infos)
                .arg(&blocks32)
                .arg(&mut l.counts)
                .arg(&mut l.sym_counts)
                .arg(&mut l.status);
            unsafe { launch.launch(per_block(blocks32)) }.map_err(launch_error)?;
        }
    }
    for write in [0u32, 1] {
        let mut launch = stream.launch_builder(&kernels.mtf_chunks);
        launch
            .arg(&l.infos)
            .arg(&l.chunk_block)
            .arg(&chunks64)
            .arg(&mut l.symbols)
            .arg(&mut l.sym_counts)
            .arg(&mut l.values)
            .arg(&mut l.lists)
            .arg(&mut l.out)
            .arg(&mut l.status)
            .arg(&write);
        unsafe { launch.launch(launch_for(chunks, MTF_THREADS, "chunks")?) }
            .map_err(launch_error)?;
        if write == 0 {
            let mut launch = stream.launch_builder(&kernels.mtf_compose);
            launch
                .arg(&l.infos)
                .arg(&blocks32)
                .arg(&l.alphabets)
                .arg(&mut l.sym_counts)
                .arg(&mut l.values)
                .arg(&mut l.lists)
                .arg(&mut l.status);
            unsafe { launch.launch(per_block(blocks32)) }.map_err(launch_error)?;
        }
    }
    let mut launch = stream.launch_builder(&kernels.histogram);
    launch
        .arg(&l.infos)
        .arg(&l.piece_block)
        .arg(&pieces64)
        .arg(&mut l.out)
        .arg(&mut l.piece_counts)
        .arg(&mut l.status);
    unsafe { launch.launch(per_piece(pieces)?) }.map_err(launch_error)?;
    let mut launch = stream.launch_builder(&kernels.rank_bases);
    launch
        .arg(&l.infos)
        .arg(&blocks32)
        .arg(&mut l.piece_counts)
        .arg(&mut l.status);
    unsafe { launch.launch(per_block(blocks32)) }.map_err(launch_error)?;
    let mut launch = stream.launch_builder(&kernels.lf);
    launch
        .arg(&l.infos)
        .arg(&l.piece_block)
        .arg(&pieces64)
        .arg(&mut l.out)
        .arg(&mut l.piece_counts)
        .arg(&l.aux)
        .arg(&mut l.entries)
        .arg(&mut l.status);
    unsafe { launch.launch(per_piece(pieces)?) }.map_err(launch_error)?;
    let mut launch = stream.launch_builder(&kernels.walk);
    launch
        .arg(&l.infos)
        .arg(&l.aux_block)
        .arg(&auxs64)
        .arg(&l.aux)
        .arg(&mut l.entries)
        .arg(&mut l.out)
        .arg(&mut l.status);
    unsafe { launch.launch(launch_for(auxs, THREADS, "stretches")?) }.map_err(launch_error)?;
    let blocks64 = blocks as u64;
    let mut launch = stream.launch_builder(&kernels.crc);
    launch
        .arg(&mut l.out)
        .arg(&l.out_offsets)
        .arg(&l.out_lens)
        .arg(&blocks64)
        .arg(&mut l.crcs);
    let mut crc_config = per_block(blocks32);
    crc_config.block_dim = (CRC_THREADS, 1, 1);
    unsafe { launch.launch(crc_config) }.map_err(launch_error)?;
    Ok(())
}

/// A warp per LF piece, [`LF_WARPS`] per block.
fn per_piece(pieces: usize) -> GpuResult<LaunchConfig> {
    let mut launch = launch_for(pieces, LF_WARPS, "pieces")?;
    launch.block_dim = (LF_WARPS * 32, 1, 1);
    Ok(launch)
}

/// The CRC-32C that `crc32c_masked` wrote masked (as the Snappy framing format masks).
pub(crate) fn unmask_crc(masked: u32) -> u32 {
    masked.wrapping_sub(0xa282_ead8).rotate_left(15)
}

/// One block of [`BLOCK_THREADS`] per data block.
fn per_block(blocks: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK_THREADS, 1, 1),
        shared_mem_bytes: 0,
    }
}
