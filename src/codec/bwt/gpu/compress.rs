//! Compression of a batch on the GPU: steps of whole blocks go to the device, where every
//! block of a step is suffix-sorted at once (`forward.rs`), move-to-front and zero-run
//! coded (`symbols.rs`), Huffman coded (`huffman.rs`) and its CRC taken; the coded
//! parts, auxiliary indices and CRCs come back, and the host writes each block's payload,
//! one step while the GPU works on the next. The streams are assembled as the CPU path assembles them
//! ([`assemble`]), so the bytes are the CPU's.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use rayon::prelude::*;

use cudarc::driver::{CudaFunction, CudaSlice, CudaView, PushKernelArg};

use super::forward::{self, ForwardKernels, forward};
use super::huffman::{EncodedOnDevice, HuffmanKernels, enqueue_encode};
use super::launch::{CRC_THREADS, unmask_crc};
use super::symbols::{SymbolKernels, Symbols, enqueue_symbols, put_back};
use crate::codec::bwt::huffman::Encoded;
use crate::codec::bwt::{AUX_LOG2, BwtParams, CodedBlock, NAME, assemble, block_size, payload};
use crate::codec::crc_gpu::crc_function;
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::gpu::{
    Gpu, GpuError, HostMemory, Lane, copy_to_device, copy_to_host, launch_error, on_host,
    upload_pieces,
};

/// The largest step: the sort holds about 50 bytes of device memory per byte of a step.
const MAX_STEP_BYTES: usize = 256 << 20;
/// Blocks a step holds at least (within `MAX_STEP_BYTES`): the Huffman stage walks each
/// block's segments with one warp, all blocks side by side, so its time is one block's
/// walk however many run.
const BLOCKS_PER_STEP: usize = 64;
/// Device bytes a step holds per input byte (the sort's keys, suffixes, positions,
/// ranks and flags; the text, its transform and symbols).
const DEVICE_BYTES_PER_BYTE: usize = 56;

/// The step size and how many steps run at once (two when the device holds both with a
/// quarter to spare, one otherwise), within the memory limit if one is set.
pub(super) fn step_and_workers(gpu: &Gpu, bs: usize) -> (usize, usize) {
    let memory = gpu
        .memory_use()
        .limit
        .unwrap_or(gpu.info().memory_bytes as usize)
        / 4
        * 3;
    let step = gpu
        .step_bytes()
        .max(BLOCKS_PER_STEP * bs)
        .min(MAX_STEP_BYTES)
        .min(memory / DEVICE_BYTES_PER_BYTE)
        .max(bs);
    let workers = if 2 * step * DEVICE_BYTES_PER_BYTE <= memory {
        2
    } else {
        1
    };
    (step, workers)
}

/// One block of the batch: its input and its bytes there.
pub(super) struct Block {
    pub input: usize,
    pub range: Range<usize>,
}

/// Where each of consecutive pieces of `lens` bytes starts.
pub(super) fn starts(lens: impl IntoIterator<Item = usize>) -> Vec<usize> {
    lens.into_iter()
        .scan(0, |at, len| {
            let start = *at;
            *at += len;
            Some(start)
        })
        .collect()
}

/// The blocks of `inputs` cut into blocks of `bs` bytes, in order.
pub(super) fn batch_blocks(inputs: &[&[u8]], bs: usize) -> Vec<Block> {
    inputs
        .iter()
        .enumerate()
        .flat_map(|(input, bytes)| {
            (0..bytes.len()).step_by(bs).map(move |at| Block {
                input,
                range: at..(at + bs).min(bytes.len()),
            })
        })
        .collect()
}

/// A step's blocks as the host assembles them: each block's Huffman coding, alphabet
/// and CRC, and the auxiliary indices with where each block's start.
struct Transformed {
    encoded: Vec<Encoded>,
    alphabets: Vec<Vec<u8>>,
    aux: Vec<u32>,
    aux_first: Vec<usize>,
    crcs: Vec<u32>,
}

/// Compresses `inputs` with `params` into `sink`; returns each stream's length.
pub(crate) fn compress(
    gpu: &Gpu,
    params: &BwtParams,
    inputs: &[&[u8]],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<Vec<usize>> {
    let bs = block_size(params);
    let blocks = batch_blocks(inputs, bs);
    let (step, workers) = step_and_workers(gpu, bs);
    let steps = plan_steps(&blocks, step);
    let workers = workers.min(steps.len());
    let kernels = Kernels::new(gpu)?;
    // `workers` threads take steps in turn, each on a lane (stream) of its own, so that
    // one step's Huffman walk (a warp per block) runs beside the next step's sort; the
    // host writes the payloads of the steps done meanwhile. At most `workers` steps wait
    // for the host, so memory stays bounded.
    let step_count = steps.len();
    let (steps, blocks, kernels) = (&steps, &blocks, &kernels);
    let (to_host, steps_done) = mpsc::sync_channel::<(usize, Vec<&[u8]>, Transformed)>(workers);
    let coded_blocks = std::thread::scope(|scope| {
        let encoder = scope.spawn(move || -> Vec<Option<Vec<CodedBlock>>> {
            let mut coded: Vec<Option<Vec<CodedBlock>>> = (0..step_count).map(|_| None).collect();
            for (index, pieces, transformed) in steps_done {
                let start = std::time::Instant::now();
                coded[index] = Some(on_host(|| encode_step(&pieces, transformed)));
                crate::trace::line(|| {
                    format!(
                        "bwt host stages of a step: {:.3} s",
                        start.elapsed().as_secs_f64()
                    )
                });
            }
            coded
        });
        let gpu_result = on_lanes(gpu, workers, step_count, |lane, index| {
            let pieces: Vec<&[u8]> = blocks[steps[index].clone()]
                .iter()
                .map(|b| &inputs[b.input][b.range.clone()])
                .collect();
            let start = std::time::Instant::now();
            let transformed = on_host(|| transform_step(gpu, lane, kernels, &pieces, memory))?;
            crate::trace::line(|| {
                format!(
                    "bwt transform of a step on the GPU: {:.3} s",
                    start.elapsed().as_secs_f64()
                )
            });
            // false: the encoder stopped
            Ok(to_host.send((index, pieces, transformed)).is_ok())
        });
        drop(to_host);
        let coded = encoder
            .join()
            .map_err(|_| CodecError::invalid(NAME, "the host encoder panicked"))?;
        gpu_result?;
        coded
            .into_iter()
            .map(|step| step.ok_or_else(|| CodecError::invalid(NAME, "a step was not coded")))
            .collect::<Result<Vec<_>>>()
            .map(|steps| steps.into_iter().flatten().collect::<Vec<CodedBlock>>())
    })?;
    // The rest is host work (the lanes went back with their workers).
    let mut sizes = Vec::with_capacity(inputs.len());
    let (mut at, mut first) = (0usize, 0usize);
    for (i, input) in inputs.iter().enumerate() {
        let count = input.len().div_ceil(bs);
        let stream = assemble(input, bs, &coded_blocks[first..first + count]);
        first += count;
        sink.set_start(i, at);
        sink.output(i)[..stream.len()].copy_from_slice(&stream);
        at += stream.len();
        sizes.push(stream.len());
    }
    Ok(sizes)
}

/// Runs of consecutive blocks of at most `step` bytes (at least one block each).
pub(super) fn plan_steps(blocks: &[Block], step: usize) -> Vec<Range<usize>> {
    let mut steps = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        if i > start && bytes + block.range.len() > step {
            steps.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += block.range.len();
    }
    if start < blocks.len() {
        steps.push(start..blocks.len());
    }
    steps
}

/// Runs `work(lane, step)` for steps `0..count` on `workers` threads, each with a lane
/// of its own, taking steps in turn. `work` returns false to stop every worker (its
/// consumer went away); the first error stops them too and is returned.
pub(super) fn on_lanes(
    gpu: &Gpu,
    workers: usize,
    count: usize,
    work: impl Fn(&mut Lane, usize) -> Result<bool> + Sync,
) -> Result<()> {
    let next = AtomicUsize::new(0);
    let (next, work) = (&next, &work);
    std::thread::scope(|scope| {
        let threads: Vec<_> = (0..workers.min(count))
            .map(|_| {
                scope.spawn(move || -> Result<()> {
                    let mut lane = gpu.lane()?;
                    loop {
                        let index = next.fetch_add(1, Ordering::Relaxed);
                        if index >= count {
                            return Ok(());
                        }
                        match work(&mut lane, index) {
                            Ok(true) => {}
                            stop => {
                                // the other workers stop at their next step
                                next.store(count, Ordering::Relaxed);
                                return stop.map(|_| ());
                            }
                        }
                    }
                })
            })
            .collect();
        let mut result = Ok(());
        for thread in threads {
            let outcome = thread
                .join()
                .map_err(|_| CodecError::invalid(NAME, "a GPU worker panicked"))?;
            if result.is_ok() {
                result = outcome;
            }
        }
        result
    })
}

/// A step's stages queued on the device: the forward transform, move-to-front, zero
/// runs, the Huffman stage and each block's CRC. Only the code lengths and segment counts
/// have come back so far (the Huffman stage places its output by them).
pub(super) struct StepOnDevice {
    transformed: forward::Transformed,
    symbols: Symbols,
    encoded: EncodedOnDevice,
    /// Each block's CRC-32C, masked ([`unmask_crc`]).
    crcs: CudaSlice<u8>,
    count: usize,
}

/// Queues every stage of the blocks of `lens` whose bytes lie one after another in
/// `text`.
pub(super) fn enqueue_step(
    lane: &mut Lane,
    kernels: &Kernels,
    text: &CudaView<'_, u8>,
    lens: &[usize],
) -> Result<StepOnDevice> {
    let count = lens.len();
    // A block's bytes and its symbols (at most one per byte) start at the same index.
    let starts = starts(lens.iter().copied());
    let crcs = enqueue_crcs(lane, &kernels.crc, text, &starts, lens)?;
    let transformed = forward(lane, &kernels.forward, text, lens, AUX_LOG2)?;
    let symbols = enqueue_symbols(lane, &kernels.symbols, &transformed.out, lens)?;
    let encoded = enqueue_encode(lane, &kernels.huffman, &symbols, &starts, lens)?;
    Ok(StepOnDevice {
        transformed,
        symbols,
        encoded,
        crcs,
        count,
    })
}

impl StepOnDevice {
    /// Bytes the step leaves on the device for the host: the packed codes, the auxiliary
    /// indices, the alphabets and the CRCs.
    fn output_bytes(&self) -> usize {
        let aux_total = *self.transformed.aux_first.last().expect("a total");
        self.encoded.packed_len() + 4 * aux_total + (32 + 4) * self.count
    }

    /// The coded parts copied to the host (waits for the lane); the buffers go back to it.
    fn download(self, gpu: &Gpu, lane: &mut Lane) -> Result<Transformed> {
        let count = self.count;
        let aux_total = *self.transformed.aux_first.last().expect("a total");
        let mut aux_bytes = vec![0u8; 4 * aux_total];
        let mut sets = vec![0u8; 32 * count];
        let mut crc_bytes = vec![0u8; 4 * count];
        let stream = lane.stream().clone();
        let aux = self.transformed.aux.slice(..4 * aux_total);
        copy_to_host(&stream, &aux, &mut aux_bytes)?;
        copy_to_host(&stream, &self.symbols.sets.slice(..32 * count), &mut sets)?;
        copy_to_host(&stream, &self.crcs.slice(..4 * count), &mut crc_bytes)?;
        let encoded = self.encoded.download(gpu, lane); // waits for the lane
        let aux_first = self.transformed.aux_first.clone();
        self.put_back(lane);
        let alphabets = sets
            .chunks_exact(32)
            .map(|set| {
                (0..=255u8)
                    .filter(|&v| set[v as usize / 8] & (1 << (v % 8)) != 0)
                    .collect()
            })
            .collect();
        let word = |c: &[u8]| u32::from_le_bytes(c.try_into().expect("4 bytes"));
        Ok(Transformed {
            encoded: encoded?,
            alphabets,
            aux: aux_bytes.chunks_exact(4).map(word).collect(),
            aux_first,
            crcs: crc_bytes
                .chunks_exact(4)
                .map(|c| unmask_crc(word(c)))
                .collect(),
        })
    }

    /// Gives the buffers back to the lane (without copying anything out: the
    /// device-resident form); returns [`StepOnDevice::output_bytes`].
    pub(super) fn put_back(self, lane: &mut Lane) -> usize {
        let bytes = self.output_bytes();
        self.encoded.put_back(lane);
        lane.put_device(CRCS, self.crcs);
        lane.put_device("bwtf.out", self.transformed.out);
        lane.put_device("bwtf.aux", self.transformed.aux);
        put_back(lane, self.symbols);
        bytes
    }
}

/// The device buffer of a step's masked CRCs (and of their ranges).
const CRCS: &str = "bwtf.crcs";
const CRC_RANGES: &str = "bwtf.crc_ranges";

/// Queues the CRC-32C of each block of `text` (at `starts`, of `lens` bytes; masked, 4
/// bytes each) with the kernel the decoder checks blocks with.
fn enqueue_crcs(
    lane: &mut Lane,
    kernel: &CudaFunction,
    text: &CudaView<'_, u8>,
    starts: &[usize],
    lens: &[usize],
) -> Result<CudaSlice<u8>> {
    let count = lens.len();
    // starts, then lengths, as u64
    let ranges: Vec<u8> = starts
        .iter()
        .chain(lens)
        .flat_map(|&n| (n as u64).to_le_bytes())
        .collect();
    let stream = lane.stream().clone();
    let mut device_ranges = lane.take_device(CRC_RANGES, ranges.len())?;
    copy_to_device(&stream, &ranges, &mut device_ranges)?;
    let mut crcs = lane.take_device(CRCS, 4 * count)?;
    let count64 = count as u64;
    let count32 =
        u32::try_from(count).map_err(|_| GpuError::Limit(format!("{count} blocks in one step")))?;
    let offsets = device_ranges.slice(..8 * count);
    let lens_view = device_ranges.slice(8 * count..16 * count);
    let mut launch = stream.launch_builder(kernel);
    launch
        .arg(text)
        .arg(&offsets)
        .arg(&lens_view)
        .arg(&count64)
        .arg(&mut crcs);
    // SAFETY: a thread block per range reads the range's bytes (within `text`: the ranges
    // tile the step's text) and writes its 4 bytes of `crcs`.
    let config = cudarc::driver::LaunchConfig {
        grid_dim: (count32.max(1), 1, 1),
        block_dim: (CRC_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    unsafe { launch.launch(config) }.map_err(launch_error)?;
    drop(launch);
    lane.put_device(CRC_RANGES, device_ranges);
    Ok(crcs)
}

/// Every stage of a step's blocks (`pieces`) on the GPU; their coded parts come back.
fn transform_step(
    gpu: &Gpu,
    lane: &mut Lane,
    kernels: &Kernels,
    pieces: &[&[u8]],
    memory: HostMemory,
) -> Result<Transformed> {
    let lens: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
    let total: usize = lens.iter().sum();
    let mut text = lane.take_device("bwtf.text", total)?;
    upload_pieces(gpu, lane, pieces, memory, "bwtf.text", &mut text)?;
    let step = enqueue_step(lane, kernels, &text.slice(..total), &lens);
    let transformed = step.and_then(|step| step.download(gpu, lane));
    lane.put_device("bwtf.text", text);
    transformed
}

/// The payloads of a step's blocks on all cores.
fn encode_step(pieces: &[&[u8]], t: Transformed) -> Vec<CodedBlock> {
    pieces
        .par_iter()
        .zip(t.encoded.par_iter().zip(&t.alphabets))
        .zip(&t.crcs)
        .enumerate()
        .map(|(b, ((piece, (encoded, alphabet)), &crc))| {
            let aux = &t.aux[t.aux_first[b]..t.aux_first[b + 1]];
            CodedBlock::with_crc(piece.len(), payload(alphabet, encoded, aux), crc)
        })
        .collect()
}

/// The kernels of compression.
pub(super) struct Kernels {
    forward: ForwardKernels,
    symbols: SymbolKernels,
    huffman: HuffmanKernels,
    crc: CudaFunction,
}

impl Kernels {
    pub(super) fn new(gpu: &Gpu) -> Result<Self> {
        Ok(Kernels {
            forward: ForwardKernels::new(gpu)?,
            symbols: SymbolKernels::new(gpu)?,
            huffman: HuffmanKernels::new(gpu)?,
            crc: crc_function(gpu)?,
        })
    }
}
