//! Move-to-front and zero-run coding of transformed blocks on the device
//! (`kernels/bwt_encode.cu`): the symbols the Huffman stage codes, exactly
//! [`crate::codec::bwt::zrle::encode`] of [`crate::codec::bwt::mtf::encode`], for many
//! blocks at once, by chunks whose first lists are composed per block.

use std::sync::Arc;

use cudarc::driver::{CudaFunction, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};

use crate::gpu::{
    Gpu, GpuError, GpuResult, KernelSource, Lane, copy_to_device, launch_error, launch_for,
};

/// The encoder's kernels.
pub const BWT_ENCODE: KernelSource = KernelSource {
    name: "bwt_encode.cu",
    source: include_str!("../../../../kernels/bwt_encode.cu"),
};

/// Bytes per chunk (`MTF_CHUNK`) and threads per block of `bwte_chunks` (`MTF_THREADS`).
const MTF_CHUNK: usize = 2048;
const MTF_THREADS: u32 = 64;
/// Threads per block of `bwte_alphabet`.
const THREADS: u32 = 128;

pub(crate) struct SymbolKernels {
    alphabet: CudaFunction,
    chunks: CudaFunction,
    compose: CudaFunction,
}

impl SymbolKernels {
    pub(crate) fn new(gpu: &Gpu) -> GpuResult<Self> {
        let f = |name: &str| gpu.function(&BWT_ENCODE, &[], name);
        Ok(SymbolKernels {
            alphabet: f("bwte_alphabet")?,
            chunks: f("bwte_chunks")?,
            compose: f("bwte_compose")?,
        })
    }
}

/// The symbols of a run of blocks on the device: block `b`'s `counts[b]` symbols (u16)
/// start at symbol `starts[b]` of `symbols`; `sets` holds each block's alphabet as 256
/// bits (8 u32).
pub(crate) struct Symbols {
    pub symbols: CudaSlice<u8>,
    pub counts: CudaSlice<u8>,
    pub sets: CudaSlice<u8>,
}

/// Names of the device buffers (kept by the lane between steps).
const NAMES: [&str; 9] = [
    "bwte.meta",
    "bwte.sets",
    "bwte.lists",
    "bwte.info",
    "bwte.symat",
    "bwte.carry",
    "bwte.used",
    "bwte.counts",
    "bwte.symbols",
];

/// Queues move-to-front and zero runs over the blocks of `lens` bytes that lie one after
/// another in `text` (on the device). The buffers come from `lane`; [`put_back`] returns
/// them.
pub(crate) fn enqueue_symbols(
    lane: &mut Lane,
    k: &SymbolKernels,
    text: &CudaSlice<u8>,
    lens: &[usize],
) -> GpuResult<Symbols> {
    let count = lens.len();
    let n: usize = lens.iter().sum();
    if n >= u32::MAX as usize {
        return Err(GpuError::Limit(format!(
            "bwt symbols: {n} bytes in one run"
        )));
    }
    // starts (count + 1 u32), chunk_first (count u32), chunk_block (one u32 per chunk).
    let mut meta: Vec<u8> = Vec::new();
    let mut chunk_first = Vec::with_capacity(count);
    let mut chunk_block = Vec::new();
    let mut at = 0u32;
    for (b, &len) in lens.iter().enumerate() {
        meta.extend_from_slice(&at.to_le_bytes());
        chunk_first.push(chunk_block.len() as u32);
        chunk_block.extend(std::iter::repeat_n(b as u32, len.div_ceil(MTF_CHUNK)));
        at += len as u32;
    }
    meta.extend_from_slice(&at.to_le_bytes());
    let first_at = meta.len();
    meta.extend(chunk_first.iter().flat_map(|v| v.to_le_bytes()));
    let block_at = meta.len();
    meta.extend(chunk_block.iter().flat_map(|v| v.to_le_bytes()));
    let chunks = chunk_block.len();

    let stream: Arc<CudaStream> = lane.stream().clone();
    let mut meta_device = lane.take_device(NAMES[0], meta.len())?;
    copy_to_device(&stream, &meta, &mut meta_device)?;
    let mut sets = lane.take_device(NAMES[1], 32 * count)?;
    stream
        .memset_zeros(&mut sets.slice_mut(..32 * count))
        .map_err(|e| GpuError::driver("memset", e))?;
    let mut lists = lane.take_device(NAMES[2], 256 * chunks)?;
    let mut info = lane.take_device(NAMES[3], 16 * chunks)?;
    let mut sym_at = lane.take_device(NAMES[4], 8 * chunks)?;
    let mut carry = lane.take_device(NAMES[5], 8 * chunks)?;
    let mut used = lane.take_device(NAMES[6], 4 * count)?;
    let mut counts = lane.take_device(NAMES[7], 8 * count)?;
    let mut symbols = lane.take_device(NAMES[8], 2 * n)?;
    let starts = meta_device.slice(..first_at);
    let firsts = meta_device.slice(first_at..block_at);
    let blocks = meta_device.slice(block_at..);
    let (chunks64, count32) = (chunks as u64, count as u32);

    // SAFETY (every launch): the kernels index the text by `starts` (blocks within n
    // bytes), the per-chunk arrays below `chunks` and the per-block ones below `count`,
    // all allocated for that above; a block writes at most as many symbols as it has
    // bytes, at its own start in `symbols` (2n bytes).
    let mut launch = stream.launch_builder(&k.alphabet);
    launch
        .arg(text)
        .arg(&starts)
        .arg(&blocks)
        .arg(&firsts)
        .arg(&chunks64)
        .arg(&mut sets);
    unsafe { launch.launch(launch_for(chunks, THREADS, "chunks")?) }.map_err(launch_error)?;
    for write in [0u32, 1] {
        let mut launch = stream.launch_builder(&k.chunks);
        launch
            .arg(text)
            .arg(&starts)
            .arg(&blocks)
            .arg(&firsts)
            .arg(&chunks64)
            .arg(&sets)
            .arg(&mut lists)
            .arg(&mut info)
            .arg(&sym_at)
            .arg(&carry)
            .arg(&used)
            .arg(&mut symbols)
            .arg(&write);
        unsafe { launch.launch(launch_for(chunks, MTF_THREADS, "chunks")?) }
            .map_err(launch_error)?;
        if write == 0 {
            let mut launch = stream.launch_builder(&k.compose);
            launch
                .arg(&starts)
                .arg(&firsts)
                .arg(&count32)
                .arg(&sets)
                .arg(&mut lists)
                .arg(&info)
                .arg(&mut sym_at)
                .arg(&mut carry)
                .arg(&mut used)
                .arg(&mut counts);
            let config = LaunchConfig {
                grid_dim: (count32.max(1), 1, 1),
                block_dim: (256, 1, 1),
                shared_mem_bytes: 0,
            };
            unsafe { launch.launch(config) }.map_err(launch_error)?;
        }
    }
    for (name, buffer) in [
        (NAMES[0], meta_device),
        (NAMES[2], lists),
        (NAMES[3], info),
        (NAMES[4], sym_at),
        (NAMES[5], carry),
        (NAMES[6], used),
    ] {
        lane.put_device(name, buffer);
    }
    Ok(Symbols {
        symbols,
        counts,
        sets,
    })
}

/// Gives a run's output buffers back to `lane`.
pub(crate) fn put_back(lane: &mut Lane, s: Symbols) {
    lane.put_device(NAMES[7], s.counts);
    lane.put_device(NAMES[8], s.symbols);
    lane.put_device(NAMES[1], s.sets);
}
