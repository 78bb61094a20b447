//! Compression of a batch with the transform on the GPU: steps of whole blocks go to the
//! device, where every block of a step is suffix-sorted at once (`forward.rs`); the
//! transformed bytes and auxiliary indices come back, and the stages after the transform
//! (move-to-front, zero runs, Huffman coding) and the CRCs run on all host cores, one step
//! while the GPU sorts the next. The streams are assembled as the CPU path assembles them
//! ([`assemble`]), so the bytes are the CPU's.

use std::ops::Range;
use std::sync::mpsc;

use rayon::prelude::*;

use super::forward::{ForwardKernels, forward};
use crate::codec::batch::Sink;
use crate::codec::bwt::{
    AUX_LOG2, BwtParams, CodedBlock, NAME, assemble, block_size, encode_transformed,
};
use crate::codec::error::{CodecError, Result};
use crate::gpu::{Gpu, HostMemory, copy_to_host, upload_pieces};

/// The largest step: the sort holds about 50 bytes of device memory per byte of a step.
const MAX_STEP_BYTES: usize = 256 << 20;

/// One block of the batch: its input and its bytes there.
struct Block {
    input: usize,
    range: Range<usize>,
}

/// A step's transform on the host: the transformed bytes of its blocks one after
/// another, and their auxiliary indices with where each block's start.
struct Transformed {
    bwt: Vec<u8>,
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
    // A step holds two blocks per host thread, so that the host stages (one block per
    // thread) keep every core busy while the GPU sorts the next step.
    let step = gpu
        .step_bytes()
        .max(2 * rayon::current_num_threads() * bs)
        .min(MAX_STEP_BYTES);
    let steps = plan_steps(&blocks, step);
    let kernels = ForwardKernels::new(gpu)?;
    let mut lane = gpu.lane()?;
    // The host stages of a step run on another thread (and all cores) while the GPU
    // sorts the next; one step waits at most, so memory stays bounded.
    let (to_host, steps_done) = mpsc::sync_channel::<(Vec<&[u8]>, Transformed)>(1);
    let coded_blocks = std::thread::scope(|scope| {
        let encoder = scope.spawn(move || -> Result<Vec<CodedBlock>> {
            let mut coded = Vec::new();
            for (pieces, transformed) in steps_done {
                let start = std::time::Instant::now();
                coded.extend(encode_step(&pieces, transformed));
                crate::trace::line(|| {
                    format!(
                        "bwt host stages of a step: {:.3} s",
                        start.elapsed().as_secs_f64()
                    )
                });
            }
            Ok(coded)
        });
        let mut gpu_result = Ok(());
        for step in &steps {
            let pieces: Vec<&[u8]> = blocks[step.clone()]
                .iter()
                .map(|b| &inputs[b.input][b.range.clone()])
                .collect();
            let start = std::time::Instant::now();
            let transformed = transform_step(gpu, &mut lane, &kernels, &pieces, memory);
            crate::trace::line(|| {
                format!(
                    "bwt transform of a step on the GPU: {:.3} s",
                    start.elapsed().as_secs_f64()
                )
            });
            match transformed {
                Ok(t) => {
                    if to_host.send((pieces, t)).is_err() {
                        break; // the encoder stopped: its error is reported below
                    }
                }
                Err(e) => {
                    gpu_result = Err(e);
                    break;
                }
            }
        }
        drop(to_host);
        let coded = encoder
            .join()
            .map_err(|_| CodecError::invalid(NAME, "the host encoder panicked"))?;
        gpu_result?;
        coded
    })?;
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

/// The forward transform of a step's blocks (`pieces`) on the GPU, brought back.
fn transform_step(
    gpu: &Gpu,
    lane: &mut crate::gpu::Lane,
    kernels: &ForwardKernels,
    pieces: &[&[u8]],
    memory: HostMemory,
) -> Result<Transformed> {
    let lens: Vec<usize> = pieces.iter().map(|p| p.len()).collect();
    let total: usize = lens.iter().sum();
    let mut text = lane.take_device("bwtf.text", total)?;
    upload_pieces(gpu, lane, pieces, memory, "bwtf.text", &mut text)?;
    let t = forward(lane, kernels, &text, &lens, AUX_LOG2)?;
    let aux_total = *t.aux_first.last().expect("a total");
    let mut bwt = vec![0u8; total];
    let mut aux_bytes = vec![0u8; 4 * aux_total];
    copy_to_host(lane.stream(), &t.out.slice(..total), &mut bwt)?;
    copy_to_host(lane.stream(), &t.aux.slice(..4 * aux_total), &mut aux_bytes)?;
    lane.synchronize()?;
    lane.put_device("bwtf.text", text);
    lane.put_device("bwtf.out", t.out);
    lane.put_device("bwtf.aux", t.aux);
    let aux = aux_bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
        .collect();
    Ok(Transformed {
        bwt,
        aux,
        aux_first: t.aux_first,
    })
}

/// The stages after the transform, and the CRCs, of a step's blocks on all cores.
fn encode_step(pieces: &[&[u8]], t: Transformed) -> Vec<CodedBlock> {
    let mut at = 0;
    let ranges: Vec<Range<usize>> = pieces
        .iter()
        .map(|p| {
            at += p.len();
            at - p.len()..at
        })
        .collect();
    pieces
        .par_iter()
        .zip(ranges)
        .enumerate()
        .map(|(b, (piece, range))| {
            let aux = &t.aux[t.aux_first[b]..t.aux_first[b + 1]];
            CodedBlock::choose(piece, encode_transformed(t.bwt[range].to_vec(), aux))
        })
        .collect()
}
