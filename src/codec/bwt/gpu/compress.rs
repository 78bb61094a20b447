//! Compression of a batch on the GPU: steps of whole blocks go to the device, where every
//! block of a step is suffix-sorted at once (`forward.rs`), move-to-front and zero-run
//! coded (`symbols.rs`) and Huffman coded (`huffman.rs`); the coded parts and auxiliary
//! indices come back, and the host writes each block's payload and CRC, one step while
//! the GPU works on the next. The streams are assembled as the CPU path assembles them
//! ([`assemble`]), so the bytes are the CPU's.

use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

use rayon::prelude::*;

use super::forward::{ForwardKernels, forward};
use super::huffman::{HuffmanKernels, encode_on_device};
use super::symbols::{SymbolKernels, enqueue_symbols, put_back};
use crate::codec::batch::Sink;
use crate::codec::bwt::huffman::Encoded;
use crate::codec::bwt::{AUX_LOG2, BwtParams, CodedBlock, NAME, assemble, block_size, payload};
use crate::codec::error::{CodecError, Result};
use crate::gpu::{Gpu, HostMemory, Lane, copy_to_host, on_host, upload_pieces};

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
fn step_and_workers(gpu: &Gpu, bs: usize) -> (usize, usize) {
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
struct Block {
    input: usize,
    range: Range<usize>,
}

/// A step's blocks as the host assembles them: each block's Huffman coding and
/// alphabet, and the auxiliary indices with where each block's start.
struct Transformed {
    encoded: Vec<Encoded>,
    alphabets: Vec<Vec<u8>>,
    aux: Vec<u32>,
    aux_first: Vec<usize>,
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
    let blocks: Vec<Block> = inputs
        .iter()
        .enumerate()
        .flat_map(|(input, bytes)| {
            (0..bytes.len()).step_by(bs).map(move |at| Block {
                input,
                range: at..(at + bs).min(bytes.len()),
            })
        })
        .collect();
    let (step, workers) = step_and_workers(gpu, bs);
    let steps = plan_steps(&blocks, step);
    let workers = workers.min(steps.len());
    let kernels = Kernels {
        forward: ForwardKernels::new(gpu)?,
        symbols: SymbolKernels::new(gpu)?,
        huffman: HuffmanKernels::new(gpu)?,
    };
    // `workers` threads take steps in turn, each on a lane (stream) of its own, so that
    // one step's Huffman walk (a warp per block) runs beside the next step's sort; the
    // host writes the payloads of the steps done meanwhile. At most `workers` steps wait
    // for the host, so memory stays bounded.
    let next_step = AtomicUsize::new(0);
    let step_count = steps.len();
    let (steps, blocks, kernels, next_step) = (&steps, &blocks, &kernels, &next_step);
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
        let gpu_workers: Vec<_> = (0..workers)
            .map(|_| {
                let to_host = to_host.clone();
                scope.spawn(move || -> Result<()> {
                    let mut lane = gpu.lane()?;
                    loop {
                        let index = next_step.fetch_add(1, Ordering::Relaxed);
                        let Some(step) = steps.get(index) else {
                            return Ok(());
                        };
                        let pieces: Vec<&[u8]> = blocks[step.clone()]
                            .iter()
                            .map(|b| &inputs[b.input][b.range.clone()])
                            .collect();
                        let start = std::time::Instant::now();
                        let lane: &mut Lane = &mut lane;
                        let transformed =
                            on_host(|| transform_step(gpu, lane, kernels, &pieces, memory));
                        crate::trace::line(|| {
                            format!(
                                "bwt transform of a step on the GPU: {:.3} s",
                                start.elapsed().as_secs_f64()
                            )
                        });
                        match transformed {
                            Ok(t) => {
                                if to_host.send((index, pieces, t)).is_err() {
                                    return Ok(()); // the encoder stopped
                                }
                            }
                            Err(e) => {
                                // the other workers stop at their next step
                                next_step.store(steps.len(), Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                    }
                })
            })
            .collect();
        drop(to_host);
        let mut gpu_result = Ok(());
        for worker in gpu_workers {
            let result = worker
                .join()
                .map_err(|_| CodecError::invalid(NAME, "a GPU worker panicked"))?;
            if gpu_result.is_ok() {
                gpu_result = result;
            }
        }
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
fn plan_steps(blocks: &[Block], step: usize) -> Vec<Range<usize>> {
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

/// Every stage of a step's blocks (`pieces`) but the CRCs on the GPU: the forward
/// transform, move-to-front, zero runs and the Huffman stage; their coded parts come back.
fn transform_step(
    gpu: &Gpu,
    lane: &mut crate::gpu::Lane,
    kernels: &Kernels,
    pieces: &[&[u8]],
    memory: HostMemory,
) -> Result<Transformed> {
    let lens: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
    let total: usize = lens.iter().sum();
    let count = lens.len();
    let mut text = lane.take_device("bwtf.text", total)?;
    upload_pieces(gpu, lane, pieces, memory, "bwtf.text", &mut text)?;
    let t = forward(lane, &kernels.forward, &text, &lens, AUX_LOG2)?;
    let s = enqueue_symbols(lane, &kernels.symbols, &t.out, &lens)?;
    let sym_at: Vec<usize> = lens
        .iter()
        .scan(0usize, |at, &len| {
            let start = *at;
            *at += len;
            Some(start)
        })
        .collect();
    let encoded = encode_on_device(gpu, lane, &kernels.huffman, &s, &sym_at, &lens)?;
    let aux_total = *t.aux_first.last().expect("a total");
    let mut aux_bytes = vec![0u8; 4 * aux_total];
    let mut sets = vec![0u8; 32 * count];
    let stream = lane.stream().clone();
    copy_to_host(&stream, &t.aux.slice(..4 * aux_total), &mut aux_bytes)?;
    copy_to_host(&stream, &s.sets.slice(..32 * count), &mut sets)?;
    lane.synchronize()?;
    lane.put_device("bwtf.text", text);
    lane.put_device("bwtf.out", t.out);
    lane.put_device("bwtf.aux", t.aux);
    put_back(lane, s);
    let alphabets = sets
        .chunks_exact(32)
        .map(|set| {
            (0..=255u8)
                .filter(|&v| set[v as usize / 8] & (1 << (v % 8)) != 0)
                .collect()
        })
        .collect();
    let aux = aux_bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    Ok(Transformed {
        encoded,
        alphabets,
        aux,
        aux_first: t.aux_first,
    })
}

/// The payloads and CRCs of a step's blocks on all cores.
fn encode_step(pieces: &[&[u8]], t: Transformed) -> Vec<CodedBlock> {
    pieces
        .par_iter()
        .zip(t.encoded.par_iter().zip(&t.alphabets))
        .enumerate()
        .map(|(b, (piece, (encoded, alphabet)))| {
            let aux = &t.aux[t.aux_first[b]..t.aux_first[b + 1]];
            CodedBlock::choose(piece, payload(alphabet, encoded, aux))
        })
        .collect()
}

/// The kernels of compression.
struct Kernels {
    forward: ForwardKernels,
    symbols: SymbolKernels,
    huffman: HuffmanKernels,
}
