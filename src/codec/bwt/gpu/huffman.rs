//! The Huffman stage of compression on the device (`kernels/bwt_huffman.cu`): for the
//! zero-run symbols of many blocks at once, the tables, selectors, gap array and
//! bitstream of [`crate::codec::bwt::huffman::encode`], bit for bit. Only the coded
//! blocks come back: their bitstreams, selectors and gaps packed in one buffer, and the
//! tables' code lengths.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use super::symbols::Symbols;
use crate::codec::bwt::huffman::{Encoded, MAX_TABLES};
use crate::codec::bwt::{SEG_LOG2, SUB_LOG2};
use crate::gpu::{
    Gpu, GpuError, GpuResult, KernelSource, Lane, copy_to_device, copy_to_host, launch_error,
    launch_for,
};

/// The Huffman stage's kernels.
pub const BWT_HUFFMAN: KernelSource = KernelSource {
    name: "bwt_huffman.cu",
    source: include_str!("../../../../kernels/bwt_huffman.cu"),
};

/// Constants and struct sizes of the kernel file (`static_assert`ed there).
const HUF_THREADS: u32 = 256;
const ROW: usize = 260;
const TRAIN_GROUP: usize = 50;
const SYM_TILE: usize = 8192;
const SEG_CTA: usize = 256;
const LAYOUT_WORDS: usize = 16;
const RESULT_BYTES: usize = 32 + MAX_TABLES * ROW;
const STATE_BYTES: usize = 15632;
/// Training passes over fixed groups, then with the real segmentation
/// (`huffman::choice`'s `TRAIN_PASSES` and `SEGMENT_PASSES`).
const TRAIN_PASSES: usize = 4;
const SEGMENT_PASSES: usize = 2;
/// Threads per block of `hufe_encode` (a thread per segment).
const ENCODE_THREADS: u32 = 256;
/// The longest codeword, so a block of `n` symbols has at most `16 n` bits.
const MAX_BITS_PER_SYMBOL: usize = 16;

pub(crate) struct HuffmanKernels {
    histogram: CudaFunction,
    start: CudaFunction,
    groups: CudaFunction,
    build: CudaFunction,
    segment: CudaFunction,
    count: CudaFunction,
    finish: CudaFunction,
    encode: CudaFunction,
}

impl HuffmanKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        let f = |name: &str| gpu.function(&BWT_HUFFMAN, &[], name);
        Ok(HuffmanKernels {
            histogram: f("hufe_histogram")?,
            start: f("hufe_start")?,
            groups: f("hufe_groups")?,
            build: f("hufe_build")?,
            segment: f("hufe_segment")?,
            count: f("hufe_count")?,
            finish: f("hufe_finish")?,
            encode: f("hufe_encode")?,
        })
    }
}

/// Segment records a block of at most `n` symbols can need: segments of its longest
/// bitstream, and one more for the selector of a final segment without a codeword start.
fn segment_capacity(n: usize) -> usize {
    ((MAX_BITS_PER_SYMBOL * n) >> SEG_LOG2) + 2
}

/// Each block's first unit of every launch shape (`struct Layout`), and the totals.
struct Plan {
    /// Per block: sym_at, seg_at, tile_at, group_at, segcta_at.
    blocks: Vec<[usize; 5]>,
    records: usize,
    tiles: usize,
    group_ctas: usize,
    seg_ctas: usize,
}

impl Plan {
    fn new(sym_at: &[usize], max_symbols: &[usize]) -> Self {
        let mut plan = Plan {
            blocks: Vec::with_capacity(sym_at.len()),
            records: 0,
            tiles: 0,
            group_ctas: 0,
            seg_ctas: 0,
        };
        for (&at, &n) in sym_at.iter().zip(max_symbols) {
            plan.blocks
                .push([at, plan.records, plan.tiles, plan.group_ctas, plan.seg_ctas]);
            let records = segment_capacity(n);
            plan.records += records;
            plan.tiles += n.div_ceil(SYM_TILE).max(1);
            plan.group_ctas += n
                .div_ceil(TRAIN_GROUP)
                .div_ceil(HUF_THREADS as usize)
                .max(1);
            plan.seg_ctas += records.div_ceil(SEG_CTA);
        }
        plan
    }

    /// The `struct Layout` array, with the output places when known.
    fn layout(&self, max_symbols: &[usize], placed: Option<&[Placed]>) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(4 * LAYOUT_WORDS * self.blocks.len());
        for (b, &[sym_at, seg_at, tile_at, group_at, segcta_at]) in self.blocks.iter().enumerate() {
            let p = placed.map_or(Placed::default(), |p| p[b]);
            let words = [
                sym_at,
                seg_at,
                p.bits,
                p.sel,
                p.gaps,
                max_symbols[b],
                tile_at,
                group_at,
                segcta_at,
            ];
            for v in words
                .into_iter()
                .chain(std::iter::repeat(0))
                .take(LAYOUT_WORDS)
            {
                bytes.extend_from_slice(&(v as u32).to_le_bytes());
            }
        }
        bytes
    }
}

/// Device buffer names (kept by the lane between steps).
const NAMES: [&str; 8] = [
    "bwth.layout",
    "bwth.sel",
    "bwth.segsym",
    "bwth.segpos",
    "bwth.codes",
    "bwth.results",
    "bwth.out",
    "bwth.states",
];
const PINNED_OUT: &str = "bwth.out.host";

/// What the first kernel reports of one block (`struct Result`).
struct BlockResult {
    total_bits: u64,
    nseg: usize,
    /// Code lengths per table, one per symbol of the alphabet.
    lens: Vec<Vec<u8>>,
}

fn word(bytes: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(bytes[4 * i..4 * i + 4].try_into().expect("4 bytes"))
}

/// Reads and checks one block's result: a device fault must not become a host panic.
fn parse_result(bytes: &[u8], max_symbols: usize, capacity: usize) -> GpuResult<BlockResult> {
    let total_bits = u64::from(word(bytes, 0));
    let ntables = word(bytes, 1) as usize;
    let nseg = word(bytes, 2) as usize;
    let nsym = word(bytes, 4) as usize;
    let alphabet = word(bytes, 5) as usize;
    let bad = |what: &str| Err(GpuError::Limit(format!("bwt Huffman on the GPU: {what}")));
    if nsym == 0 || nsym > max_symbols {
        return bad("symbol count out of range");
    }
    if !(1..=MAX_TABLES).contains(&ntables) || !(2..=257).contains(&alphabet) {
        return bad("table count or alphabet out of range");
    }
    if total_bits == 0 || total_bits > (MAX_BITS_PER_SYMBOL * nsym) as u64 || nseg > capacity {
        return bad("bitstream length out of range");
    }
    if nseg as u64 != total_bits.div_ceil(1 << SEG_LOG2) {
        return bad("segment count does not match the bitstream");
    }
    let lens = (0..ntables)
        .map(|t| bytes[32 + t * ROW..32 + t * ROW + alphabet].to_vec())
        .collect();
    Ok(BlockResult {
        total_bits,
        nseg,
        lens,
    })
}

/// Where a block's parts lie in the packed output.
#[derive(Clone, Copy, Default)]
struct Placed {
    bits: usize,
    sel: usize,
    gaps: usize,
}

const fn align4(n: usize) -> usize {
    n.next_multiple_of(4)
}

/// A run of blocks coded on the device ([`enqueue_encode`]): the packed parts are in
/// device memory (or still being written on the lane's stream).
pub(crate) struct EncodedOnDevice {
    blocks: Vec<BlockResult>,
    placed: Vec<Placed>,
    /// The packed parts of every block: bitstream (whole words), selectors, gaps.
    out_len: usize,
    /// The device buffers, in the order of [`NAMES`].
    buffers: [CudaSlice<u8>; 8],
}

impl EncodedOnDevice {
    /// Bytes of the packed parts.
    pub(crate) fn packed_len(&self) -> usize {
        self.out_len
    }

    /// Each block's [`Encoded`], copied back through pinned memory (waits for the lane).
    pub(crate) fn download(&self, gpu: &Gpu, lane: &mut Lane) -> GpuResult<Vec<Encoded>> {
        let out_len = self.out_len;
        let mut host = lane.take_pinned(gpu, PINNED_OUT, out_len.max(1))?;
        let stream = lane.stream().clone();
        copy_to_host(
            &stream,
            &self.buffers[6].slice(..out_len),
            &mut host.as_mut_slice()[..out_len],
        )?;
        lane.synchronize()?;
        let packed = &host.as_slice()[..out_len];
        let encoded = self
            .blocks
            .iter()
            .zip(&self.placed)
            .map(|(r, p)| {
                let nsub = r.total_bits.div_ceil(1 << SUB_LOG2) as usize;
                Encoded {
                    lens: r.lens.clone(),
                    selectors: packed[p.sel..p.sel + r.nseg].to_vec(),
                    gaps: packed[p.gaps..p.gaps + nsub].to_vec(),
                    bits: packed[p.bits..p.bits + r.total_bits.div_ceil(8) as usize].to_vec(),
                    total_bits: r.total_bits,
                }
            })
            .collect();
        lane.put_pinned(PINNED_OUT, host);
        Ok(encoded)
    }

    /// Gives the device buffers back to the lane.
    pub(crate) fn put_back(self, lane: &mut Lane) {
        for (name, buffer) in NAMES.into_iter().zip(self.buffers) {
            lane.put_device(name, buffer);
        }
    }
}

/// Codes the zero-run symbols of a run of blocks on the device: block `b` has `counts[b]`
/// symbols starting at symbol `sym_at[b]`, at most `max_symbols[b]` of them, and the
/// alphabet of `sets[b]` plus one ([`Symbols`]).
/// Returns each block's [`Encoded`], exactly what the CPU encoder makes of those symbols.
pub(crate) fn encode_on_device(
    gpu: &Gpu,
    lane: &mut Lane,
    k: &HuffmanKernels,
    on_device: &Symbols,
    sym_at: &[usize],
    max_symbols: &[usize],
) -> GpuResult<Vec<Encoded>> {
    let encoded = enqueue_encode(lane, k, on_device, sym_at, max_symbols)?;
    let downloaded = encoded.download(gpu, lane);
    encoded.put_back(lane);
    downloaded
}

/// Queues the coding of [`encode_on_device`], leaving the packed parts on the device. It
/// waits once for the lane, for the code lengths and segment counts that place the parts.
pub(crate) fn enqueue_encode(
    lane: &mut Lane,
    k: &HuffmanKernels,
    on_device: &Symbols,
    sym_at: &[usize],
    max_symbols: &[usize],
) -> GpuResult<EncodedOnDevice> {
    let Symbols {
        symbols,
        counts,
        sets,
    } = on_device;
    let count = sym_at.len();
    let plan = Plan::new(sym_at, max_symbols);
    if plan.records >= u32::MAX as usize
        || sym_at
            .iter()
            .zip(max_symbols)
            .any(|(a, n)| a + n >= u32::MAX as usize)
    {
        return Err(GpuError::Limit(format!(
            "bwt Huffman: {} segment records in one run",
            plan.records
        )));
    }

    let stream: Arc<CudaStream> = lane.stream().clone();
    let mut layout = lane.take_device(NAMES[0], 4 * LAYOUT_WORDS * count)?;
    copy_to_device(&stream, &plan.layout(max_symbols, None), &mut layout)?;
    let mut sel = lane.take_device(NAMES[1], plan.records)?;
    let mut seg_sym = lane.take_device(NAMES[2], 4 * plan.records)?;
    let mut seg_pos = lane.take_device(NAMES[3], 4 * plan.records)?;
    let mut codes = lane.take_device(NAMES[4], 2 * MAX_TABLES * ROW * count)?;
    let mut results = lane.take_device(NAMES[5], RESULT_BYTES * count)?;
    let mut states = lane.take_device(NAMES[7], STATE_BYTES * count)?;
    stream
        .memset_zeros(&mut states.slice_mut(..STATE_BYTES * count))
        .map_err(|e| GpuError::driver("memset", e))?;
    let (count32, seg_log2, sub_log2) = (count as u32, u32::from(SEG_LOG2), u32::from(SUB_LOG2));
    let records32 = plan.records as u32;
    let per_block = |threads: u32| LaunchConfig {
        grid_dim: (count32.max(1), 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    };
    let ctas = |n: usize, threads: u32| -> GpuResult<LaunchConfig> {
        let mut c = launch_for(n, 1, "thread blocks")?;
        c.block_dim = (threads, 1, 1);
        Ok(c)
    };

    // SAFETY (every launch): each thread block finds its block by the layout's unit
    // offsets, reads that block's symbols below sym_at + min(count, max_sym) (within
    // `symbols` by the caller's contract) and its state, and writes only its block's
    // state, its segment records (below its capacity, checked), codes and result, all
    // allocated above from the same plan.
    let mut launch = stream.launch_builder(&k.histogram);
    launch
        .arg(symbols)
        .arg(counts)
        .arg(&layout)
        .arg(&count32)
        .arg(&mut states);
    unsafe { launch.launch(ctas(plan.tiles, HUF_THREADS)?) }.map_err(launch_error)?;
    let mut launch = stream.launch_builder(&k.start);
    launch
        .arg(counts)
        .arg(sets)
        .arg(&layout)
        .arg(&count32)
        .arg(&mut states);
    unsafe { launch.launch(per_block(HUF_THREADS)) }.map_err(launch_error)?;
    let build = |drop: u32, states: &mut CudaSlice<u8>| -> GpuResult<()> {
        let mut launch = stream.launch_builder(&k.build);
        launch.arg(&count32).arg(&drop).arg(states);
        unsafe { launch.launch(per_block(HUF_THREADS)) }.map_err(launch_error)?;
        Ok(())
    };
    for _ in 0..TRAIN_PASSES {
        let mut launch = stream.launch_builder(&k.groups);
        launch
            .arg(symbols)
            .arg(&layout)
            .arg(&count32)
            .arg(&mut states);
        unsafe { launch.launch(ctas(plan.group_ctas, HUF_THREADS)?) }.map_err(launch_error)?;
        build(0, &mut states)?;
    }
    for pass in 0..=SEGMENT_PASSES {
        // the passes that train, then the last one, for every block, recorded
        let all = u32::from(pass == SEGMENT_PASSES);
        let mut launch = stream.launch_builder(&k.segment);
        launch
            .arg(symbols)
            .arg(&layout)
            .arg(&count32)
            .arg(&records32)
            .arg(&mut states)
            .arg(&seg_log2)
            .arg(&all)
            .arg(&mut sel)
            .arg(&mut seg_sym)
            .arg(&mut seg_pos);
        unsafe { launch.launch(per_block(32)) }.map_err(launch_error)?;
        if all == 0 {
            let mut launch = stream.launch_builder(&k.count);
            launch
                .arg(symbols)
                .arg(&layout)
                .arg(&count32)
                .arg(&mut states)
                .arg(&sel)
                .arg(&seg_sym);
            unsafe { launch.launch(ctas(plan.seg_ctas, SEG_CTA as u32)?) }.map_err(launch_error)?;
            build(1, &mut states)?;
        }
    }
    let mut launch = stream.launch_builder(&k.finish);
    launch
        .arg(&layout)
        .arg(&count32)
        .arg(&records32)
        .arg(&states)
        .arg(&seg_log2)
        .arg(&mut sel)
        .arg(&mut codes)
        .arg(&mut results);
    unsafe { launch.launch(per_block(HUF_THREADS)) }.map_err(launch_error)?;
    let mut result_bytes = vec![0u8; RESULT_BYTES * count];
    copy_to_host(
        &stream,
        &results.slice(..RESULT_BYTES * count),
        &mut result_bytes,
    )?;
    lane.synchronize()?;
    let blocks: Vec<BlockResult> = result_bytes
        .chunks_exact(RESULT_BYTES)
        .enumerate()
        .map(|(b, bytes)| {
            let next = plan.blocks.get(b + 1).map_or(plan.records, |n| n[1]);
            parse_result(bytes, max_symbols[b], next - plan.blocks[b][1])
        })
        .collect::<GpuResult<_>>()?;
    crate::trace::line(|| {
        let segments: usize = blocks.iter().map(|r| r.nseg).sum();
        format!("bwt Huffman on the GPU: {count} blocks, {segments} segments")
    });

    // The packed output: per block its bitstream (whole words), selectors and gaps.
    let mut placed = Vec::with_capacity(count);
    let mut at = 0usize;
    for r in &blocks {
        let bits = at;
        let sel = bits + 4 * r.total_bits.div_ceil(32) as usize;
        let gaps = sel + align4(r.nseg);
        at = gaps + align4(r.total_bits.div_ceil(1 << SUB_LOG2) as usize);
        placed.push(Placed { bits, sel, gaps });
    }
    let out_len = at;
    copy_to_device(
        &stream,
        &plan.layout(max_symbols, Some(&placed)),
        &mut layout,
    )?;
    let mut out = lane.take_device(NAMES[6], out_len)?;
    stream
        .memset_zeros(&mut out.slice_mut(..out_len))
        .map_err(|e| GpuError::driver("memset", e))?;
    let records64 = plan.records as u64;
    // SAFETY: a thread per segment record finds its block by `seg_at`, stops past the
    // block's segment count, and writes its selector, its gaps (boundaries below the
    // block's bitstream length) and its bits (words below it) inside the block's parts
    // of `out` placed above for exactly those lengths.
    let mut launch = stream.launch_builder(&k.encode);
    launch
        .arg(symbols)
        .arg(&layout)
        .arg(&results)
        .arg(&count32)
        .arg(&records64)
        .arg(&sub_log2)
        .arg(&sel)
        .arg(&seg_sym)
        .arg(&seg_pos)
        .arg(&codes)
        .arg(&mut out);
    unsafe { launch.launch(launch_for(plan.records, ENCODE_THREADS, "segments")?) }
        .map_err(launch_error)?;
    Ok(EncodedOnDevice {
        blocks,
        placed,
        out_len,
        buffers: [layout, sel, seg_sym, seg_pos, codes, results, out, states],
    })
}

/// The Huffman stage alone on the device, for tests: each block's symbols (each below
/// its alphabet size, `2..=257`) coded as [`crate::codec::bwt::huffman::encode`] codes
/// them with the format's geometry.
#[doc(hidden)]
pub fn huffman_on_device(gpu: &Gpu, blocks: &[(&[u16], usize)]) -> GpuResult<Vec<Encoded>> {
    let mut symbol_bytes = Vec::new();
    let (mut count_bytes, mut set_bytes) = (Vec::new(), Vec::new());
    let (mut sym_at, mut max_symbols) = (Vec::new(), Vec::new());
    for &(symbols, alphabet) in blocks {
        assert!((2..=257).contains(&alphabet) && !symbols.is_empty());
        sym_at.push(symbol_bytes.len() / 2);
        max_symbols.push(symbols.len());
        symbol_bytes.extend(symbols.iter().flat_map(|s| s.to_le_bytes()));
        count_bytes.extend_from_slice(&(symbols.len() as u64).to_le_bytes());
        let mut set = [0u8; 32];
        for v in 0..alphabet - 1 {
            set[v / 8] |= 1 << (v % 8);
        }
        set_bytes.extend_from_slice(&set);
    }
    let kernels = HuffmanKernels::new(gpu)?;
    let mut guard = gpu.lane()?;
    let lane: &mut Lane = &mut guard;
    let stream = lane.stream().clone();
    let upload = |bytes: &[u8]| -> GpuResult<CudaSlice<u8>> {
        let mut device = stream
            .alloc_zeros::<u8>(bytes.len().max(1))
            .map_err(|e| GpuError::driver("alloc", e))?;
        copy_to_device(&stream, bytes, &mut device)?;
        Ok(device)
    };
    let on_device = Symbols {
        symbols: upload(&symbol_bytes)?,
        counts: upload(&count_bytes)?,
        sets: upload(&set_bytes)?,
    };
    encode_on_device(gpu, lane, &kernels, &on_device, &sym_at, &max_symbols)
}
