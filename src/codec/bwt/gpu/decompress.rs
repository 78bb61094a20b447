//! Decompression on the GPU of a batch of `bwt` streams, through the step pipeline.
//!
//! The host reads what the CPU decoder reads before decoding, with the same code and the
//! same checks: each stream's header and block directory, and each block's auxiliary
//! indices, side information (alphabet, tables, gap array, selectors) and bitstream
//! bounds ([`parse_block`]). Stored blocks are copied and their CRCs checked here. The
//! coded blocks go to the device in steps of whole blocks (about [`Gpu::step_bytes`] of
//! output): their bitstreams and descriptions up, every stage of the decoder and the
//! CRCs in kernels (`launch.rs`), the bytes and the verdicts back.

use rayon::prelude::*;

use super::launch::DecodeKernels;
use super::step::{Block, StepBuffers, check_crc, check_verdicts, plan_blocks};
use crate::codec::bwt::{Header, KIND_BWT, KIND_RAW, NAME, ParsedBlock, parse_block};
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::gpu::{Gpu, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline};

/// Decodes `inputs` (each decoding to exactly `lens[i]` bytes) into `sink`.
pub(crate) fn decompress(
    gpu: &Gpu,
    inputs: &[&[u8]],
    lens: &[usize],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let (headers, blocks) = plan_blocks(inputs, lens)?;
    sink.expect_outputs(lens, NAME)?;
    for block in blocks.iter().filter(|b| b.kind() == KIND_RAW) {
        let payload = block.payload(inputs);
        let out = &mut sink.output(block.stream)[block.out_at..block.out_at + block.n()];
        out.copy_from_slice(payload);
        check_crc(block.crc(), crc32c::crc32c(out))?;
    }
    let coded: Vec<Block> = blocks
        .into_iter()
        .filter(|b| b.kind() == KIND_BWT)
        .collect();
    let steps = plan_steps(&coded, gpu.step_bytes());
    let mut stages = DecodeStages {
        gpu,
        kernels: DecodeKernels::new(gpu)?,
        inputs,
        headers: &headers,
        blocks: &coded,
        memory,
        sink,
    };
    run_pipeline(gpu, steps, &mut stages)
}

/// Runs of consecutive blocks of at most `step` output bytes (at least one block each).
fn plan_steps(blocks: &[Block], step: usize) -> Vec<std::ops::Range<usize>> {
    let mut steps = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        if i > start && bytes + block.n() > step {
            steps.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += block.n();
    }
    if start < blocks.len() {
        steps.push(start..blocks.len());
    }
    steps
}

struct DecodeStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: DecodeKernels,
    inputs: &'s [&'s [u8]],
    headers: &'s [Header],
    blocks: &'s [Block],
    memory: HostMemory,
    sink: &'s mut Sink<'a, 'b>,
}

struct Submitted {
    step: std::ops::Range<usize>,
    verdicts: PinnedBuffer,
    staged: Option<PinnedBuffer>,
    buffers: StepBuffers,
}

/// Names of the step's pinned buffers (kept by the lane between steps and calls).
const VERDICTS: &str = "bwt.verdicts";
const STAGED: &str = "bwt.staged";

impl Stages for DecodeStages<'_, '_, '_> {
    type Step = std::ops::Range<usize>;
    type Submitted = Submitted;
    type Collected = Submitted;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, step: Self::Step) -> Result<Submitted> {
        let blocks = &self.blocks[step.clone()];
        let inputs = self.inputs;
        let headers = self.headers;
        let parsed: Vec<ParsedBlock<'_>> = blocks
            .par_iter()
            .map(|b| parse_block(b.payload(inputs), b.n(), &headers[b.stream]))
            .collect::<Result<_>>()?;
        let mut buffers =
            StepBuffers::upload(self.gpu, lane, &parsed, blocks, headers, self.memory)?;
        buffers.enqueue(lane.stream(), &self.kernels)?;
        let count = blocks.len();
        let out_len = buffers.out_len;
        let mut verdicts = lane.take_pinned(self.gpu, VERDICTS, 8 * count)?;
        copy_to_host(
            lane.stream(),
            &buffers.verdicts(),
            &mut verdicts.as_mut_slice()[..8 * count],
        )?;
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, STAGED, out_len)?;
            copy_to_host(
                lane.stream(),
                &buffers.out.slice(..out_len),
                &mut staging.as_mut_slice()[..out_len],
            )?;
            Some(staging)
        } else {
            let mut at = 0;
            for block in blocks {
                let target =
                    &mut self.sink.output(block.stream)[block.out_at..block.out_at + block.n()];
                copy_to_host(
                    lane.stream(),
                    &buffers.out.slice(at..at + block.n()),
                    target,
                )?;
                at += block.n();
            }
            None
        };
        Ok(Submitted {
            step,
            verdicts,
            staged,
            buffers,
        })
    }

    fn collect(&mut self, _lane: &mut Lane, s: Submitted) -> Result<Submitted> {
        Ok(s)
    }

    fn finish(&mut self, lane: &mut Lane, s: Submitted) -> Result<()> {
        lane.synchronize()?;
        let blocks = &self.blocks[s.step.clone()];
        check_verdicts(blocks, &s.verdicts.as_slice()[..8 * blocks.len()])?;
        if let Some(staging) = &s.staged {
            let bytes = &staging.as_slice()[..s.buffers.out_len];
            let mut at = 0;
            let pieces: Vec<(usize, usize, &[u8])> = blocks
                .iter()
                .map(|block| {
                    at += block.n();
                    (block.stream, block.out_at, &bytes[at - block.n()..at])
                })
                .collect();
            self.sink.scatter(&pieces);
        }
        if let Some(staging) = s.staged {
            lane.put_pinned(STAGED, staging);
        }
        lane.put_pinned(VERDICTS, s.verdicts);
        s.buffers.put_back(lane);
        Ok(())
    }
}
