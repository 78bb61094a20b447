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

/// `HUF_THREADS`, `ROW` and the sizes of `struct Layout` and `struct Result` in the
/// kernel file.
const HUF_THREADS: u32 = 256;
const ROW: usize = 260;
const LAYOUT_BYTES: usize = 32;
const RESULT_BYTES: usize = 32 + MAX_TABLES * ROW;
/// Threads per block of `hufe_encode` (a thread per segment).
const ENCODE_THREADS: u32 = 256;
/// The longest codeword, so a block of `n` symbols has at most `16 n` bits.
const MAX_BITS_PER_SYMBOL: usize = 16;

pub(crate) struct HuffmanKernels {
    tables: CudaFunction,
    encode: CudaFunction,
}

impl HuffmanKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        let f = |name: &str| gpu.function(&BWT_HUFFMAN, &[], name);
        Ok(HuffmanKernels {
            tables: f("hufe_tables")?,
            encode: f("hufe_encode")?,
        })
    }
}

/// Segment records a block of at most `n` symbols can need: segments of its longest
/// bitstream, and one more for the selector of a final segment without a codeword start.
fn segment_capacity(n: usize) -> usize {
    ((MAX_BITS_PER_SYMBOL * n) >> SEG_LOG2) + 2
}

/// Device buffer names (kept by the lane between steps).
const NAMES: [&str; 7] = [
    "bwth.layout",
    "bwth.sel",
    "bwth.segsym",
    "bwth.segpos",
    "bwth.codes",
    "bwth.results",
    "bwth.out",
];
const PINNED_OUT: &str = "bwth.out.host";

/// What the first kernel reports of one block (`struct Result`).
struct BlockResult {
    total_bits: u64,
    ntables: usize,
    nseg: usize,
    alphabet: usize,
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
        ntables,
        nseg,
        alphabet,
        lens,
    })
}

/// Where a block's parts lie in the packed output.
#[derive(Clone, Copy)]
struct Placed {
    bits: usize,
    sel: usize,
    gaps: usize,
}

const fn align4(n: usize) -> usize {
    n.next_multiple_of(4)
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
    let Symbols {
        symbols,
        counts,
        sets,
    } = on_device;
    let count = sym_at.len();
    let mut seg_at = Vec::with_capacity(count + 1);
    let mut records = 0usize;
    for &n in max_symbols {
        seg_at.push(records);
        records += segment_capacity(n);
    }
    seg_at.push(records);
    if records >= u32::MAX as usize
        || sym_at
            .iter()
            .zip(max_symbols)
            .any(|(a, n)| a + n >= u32::MAX as usize)
    {
        return Err(GpuError::Limit(format!(
            "bwt Huffman: {records} segment records in one run"
        )));
    }
    let layout_bytes = |placed: Option<&[Placed]>| -> Vec<u8> {
        let mut bytes = Vec::with_capacity(LAYOUT_BYTES * count);
        for b in 0..count {
            let p = placed.map_or(
                Placed {
                    bits: 0,
                    sel: 0,
                    gaps: 0,
                },
                |p| p[b],
            );
            for v in [
                sym_at[b],
                seg_at[b],
                p.bits,
                p.sel,
                p.gaps,
                max_symbols[b],
                0,
                0,
            ] {
                bytes.extend_from_slice(&(v as u32).to_le_bytes());
            }
        }
        bytes
    };

    let stream: Arc<CudaStream> = lane.stream().clone();
    let mut layout = lane.take_device(NAMES[0], LAYOUT_BYTES * count)?;
    copy_to_device(&stream, &layout_bytes(None), &mut layout)?;
    let mut sel = lane.take_device(NAMES[1], records)?;
    let mut seg_sym = lane.take_device(NAMES[2], 4 * records)?;
    let mut seg_pos = lane.take_device(NAMES[3], 4 * records)?;
    let mut codes = lane.take_device(NAMES[4], 2 * MAX_TABLES * ROW * count)?;
    let mut results = lane.take_device(NAMES[5], RESULT_BYTES * count)?;
    let (count32, seg_log2, sub_log2) = (count as u32, u32::from(SEG_LOG2), u32::from(SUB_LOG2));

    // SAFETY: a thread block per block reads its symbols below sym_at + min(count,
    // max_symbols) (within `symbols` by the caller's contract), and writes its segment
    // records below its capacity (`segment_capacity` of at most max_symbols symbols), its
    // codes and its result, all allocated above for `count` blocks.
    let mut launch = stream.launch_builder(&k.tables);
    launch
        .arg(symbols)
        .arg(counts)
        .arg(sets)
        .arg(&layout)
        .arg(&count32)
        .arg(&seg_log2)
        .arg(&mut sel)
        .arg(&mut seg_sym)
        .arg(&mut seg_pos)
        .arg(&mut codes)
        .arg(&mut results);
    let config = LaunchConfig {
        grid_dim: (count32.max(1), 1, 1),
        block_dim: (HUF_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    unsafe { launch.launch(config) }.map_err(launch_error)?;
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
        .map(|(b, bytes)| parse_result(bytes, max_symbols[b], seg_at[b + 1] - seg_at[b]))
        .collect::<GpuResult<_>>()?;

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
    copy_to_device(&stream, &layout_bytes(Some(&placed)), &mut layout)?;
    let mut out = lane.take_device(NAMES[6], out_len)?;
    stream
        .memset_zeros(&mut out.slice_mut(..out_len))
        .map_err(|e| GpuError::driver("memset", e))?;
    let records64 = records as u64;
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
    unsafe { launch.launch(launch_for(records, ENCODE_THREADS, "segments")?) }
        .map_err(launch_error)?;
    let mut host = lane.take_pinned(gpu, PINNED_OUT, out_len.max(1))?;
    copy_to_host(
        &stream,
        &out.slice(..out_len),
        &mut host.as_mut_slice()[..out_len],
    )?;
    lane.synchronize()?;
    let packed = &host.as_slice()[..out_len];
    let encoded = blocks
        .into_iter()
        .zip(&placed)
        .map(|(r, p)| {
            debug_assert_eq!(r.lens.len(), r.ntables);
            debug_assert!(r.lens.iter().all(|l| l.len() == r.alphabet));
            let nsub = r.total_bits.div_ceil(1 << SUB_LOG2) as usize;
            Encoded {
                lens: r.lens,
                selectors: packed[p.sel..p.sel + r.nseg].to_vec(),
                gaps: packed[p.gaps..p.gaps + nsub].to_vec(),
                bits: packed[p.bits..p.bits + r.total_bits.div_ceil(8) as usize].to_vec(),
                total_bits: r.total_bits,
            }
        })
        .collect();
    lane.put_pinned(PINNED_OUT, host);
    for (name, buffer) in NAMES
        .into_iter()
        .zip([layout, sel, seg_sym, seg_pos, codes, results, out])
    {
        lane.put_device(name, buffer);
    }
    Ok(encoded)
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
