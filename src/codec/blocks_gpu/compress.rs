//! Compression on the GPU: the bytes of the codec's CPU reference for a batch of buffers
//! of one parameter set, through the step pipeline. A step is a run of blocks (of one or
//! several buffers) of about [`Gpu::step_bytes`] of input; the kernels encode them, the
//! host reads back the launch's offsets and copies each buffer's slice of the size table
//! and its encodings to their places. Headers and tails (the bytes after the last whole
//! value) are written by the host.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::launch::{CompressLaunch, enqueue_compress};
use super::{BlockCodec, give_back};
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::gpu::{
    ArrayPack, Gpu, GpuError, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline,
    upload_pieces,
};

/// Blocks `blocks` of buffer `buffer`.
#[derive(Clone, Debug)]
pub(crate) struct Piece {
    pub buffer: usize,
    pub blocks: Range<usize>,
}

/// What the host knows of a buffer's stream before its blocks are encoded.
struct Stream {
    header: Vec<u8>,
    /// Bytes of whole values.
    body: usize,
    blocks: usize,
}

/// Cuts every buffer's blocks into steps of about `step_bytes` of input (`block_bytes`
/// per whole block).
pub(crate) fn plan_steps(
    block_counts: &[usize],
    block_bytes: usize,
    step_bytes: usize,
) -> Vec<Vec<Piece>> {
    let per_step = (step_bytes / block_bytes).max(1);
    let mut steps: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut room = per_step;
    for (buffer, &blocks) in block_counts.iter().enumerate() {
        let mut next = 0;
        while next < blocks {
            if room == 0 {
                steps.push(Vec::new());
                room = per_step;
            }
            let take = room.min(blocks - next);
            steps.last_mut().expect("a step").push(Piece {
                buffer,
                blocks: next..next + take,
            });
            next += take;
            room -= take;
        }
    }
    steps.retain(|step| !step.is_empty());
    steps
}

/// Compresses `inputs` with `codec` (its parameters validated) into `sink`; returns each
/// output's length.
pub(crate) fn compress<C: BlockCodec>(
    gpu: &Gpu,
    codec: C,
    inputs: &[&[u8]],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<Vec<usize>> {
    let w = codec.value_width();
    let streams: Vec<Stream> = inputs
        .iter()
        .map(|input| {
            let body = input.len() - input.len() % w;
            Stream {
                header: codec.header(input.len()),
                body,
                blocks: body.div_ceil(codec.block_bytes()),
            }
        })
        .collect();
    if let Sink::Buffers(outputs) = sink {
        for (i, (output, input)) in outputs.iter().zip(inputs).enumerate() {
            if output.len() < codec.max_compressed_len(input.len()) {
                return Err(CodecError::invalid(
                    C::WORDS.codec,
                    format!("output buffer {i} is smaller than the worst case"),
                ));
            }
        }
    }
    let counts: Vec<usize> = streams.iter().map(|s| s.blocks).collect();
    let steps = plan_steps(&counts, codec.block_bytes(), gpu.step_bytes());
    let mut stages = CompressStages {
        gpu,
        kernels: codec.encoder(gpu)?,
        codec,
        inputs,
        memory,
        streams,
        sink,
        payload_written: vec![0; inputs.len()],
        lens: vec![0; inputs.len()],
        opened: 0,
        packed_end: 0,
    };
    run_pipeline(gpu, steps, &mut stages)?;
    // Buffers with no block (shorter than a value) were not in any step; the last buffer
    // is closed once all its blocks are written.
    stages.open_up_to(inputs.len())?;
    if let Some(last) = inputs.len().checked_sub(1) {
        stages.close(last)?;
    }
    Ok(stages.lens)
}

struct CompressStages<'s, 'a, 'b, C: BlockCodec> {
    gpu: &'s Gpu,
    kernels: C::Encoder,
    codec: C,
    inputs: &'s [&'s [u8]],
    memory: HostMemory,
    streams: Vec<Stream>,
    sink: &'s mut Sink<'a, 'b>,
    /// Encoding bytes of each buffer written so far.
    payload_written: Vec<usize>,
    /// Each output's length, once its last block is written.
    lens: Vec<usize>,
    /// Buffers whose headers are written (and, in a packed sink, whose start is set).
    opened: usize,
    /// The end of the last finished output in a packed sink.
    packed_end: usize,
}

impl<C: BlockCodec> CompressStages<'_, '_, '_, C> {
    /// Writes the headers of the buffers up to `end` (exclusive), closing each earlier
    /// buffer first: an output is closed (its tail written, its length known) when the
    /// next one opens, so a packed sink knows where the next one starts.
    fn open_up_to(&mut self, end: usize) -> Result<()> {
        while self.opened < end {
            let i = self.opened;
            if i > 0 {
                self.close(i - 1)?;
            }
            self.sink.set_start(i, self.packed_end);
            let header = &self.streams[i].header;
            self.sink.output(i)[..header.len()].copy_from_slice(header);
            self.opened += 1;
        }
        Ok(())
    }

    /// Where piece `p` of a step goes (opening its buffer first when it is the buffer's
    /// first piece): its slice of the size table and its encodings, as ranges of the
    /// step's output (`offsets`: the step's encoding offsets), and their places in the
    /// buffer's output. Counts the encodings as written: call once per piece, in order.
    fn place(&mut self, s: &Submitted, p: usize, offsets: &[u64]) -> Result<Placed> {
        let piece = &s.pieces[p];
        if piece.blocks.start == 0 {
            self.open_up_to(piece.buffer + 1)?;
        }
        let (j0, j1) = (s.first_block[p], s.first_block[p] + piece.blocks.len());
        let stream = &self.streams[piece.buffer];
        let payload = 2 * s.blocks + offsets[j0] as usize..2 * s.blocks + offsets[j1] as usize;
        let placed = Placed {
            buffer: piece.buffer,
            table: 2 * j0..2 * j1,
            table_at: stream.header.len() + 2 * piece.blocks.start,
            payload_at: stream.header.len()
                + 2 * stream.blocks
                + self.payload_written[piece.buffer],
            payload,
        };
        self.payload_written[piece.buffer] += placed.payload.len();
        Ok(placed)
    }

    /// Writes buffer `i`'s tail and records its length.
    fn close(&mut self, i: usize) -> Result<()> {
        if self.lens[i] != 0 {
            return Ok(());
        }
        let stream = &self.streams[i];
        let at = stream.header.len() + 2 * stream.blocks + self.payload_written[i];
        let tail = &self.inputs[i][stream.body..];
        let out = self.sink.output(i);
        out[at..at + tail.len()].copy_from_slice(tail);
        self.lens[i] = at + tail.len();
        self.packed_end += self.lens[i];
        Ok(())
    }
}

/// Where a piece of a step goes: see `CompressStages::place`.
struct Placed {
    buffer: usize,
    table: Range<usize>,
    table_at: usize,
    payload: Range<usize>,
    payload_at: usize,
}

struct Submitted {
    pieces: Vec<Piece>,
    /// Each piece's first block in the launch.
    first_block: Vec<usize>,
    blocks: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    scratch: CudaSlice<u8>,
    sizes: CudaSlice<u8>,
    offsets: CudaSlice<u8>,
    out: CudaSlice<u8>,
    host_offsets: PinnedBuffer,
}

struct Collected {
    submitted: Submitted,
    staged: Option<PinnedBuffer>,
    offsets: Vec<u64>,
}

impl<C: BlockCodec> Stages for CompressStages<'_, '_, '_, C> {
    type Step = Vec<Piece>;
    type Submitted = Submitted;
    type Collected = Collected;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, pieces: Vec<Piece>) -> Result<Submitted> {
        let names = &C::BUFFERS;
        let block_bytes = self.codec.block_bytes();
        let mut uploads: Vec<&[u8]> = Vec::new();
        let (mut block_in, mut block_lens) = (Vec::new(), Vec::new());
        let mut first_block = Vec::with_capacity(pieces.len());
        let mut at = 0usize;
        for piece in &pieces {
            let stream = &self.streams[piece.buffer];
            let from = piece.blocks.start * block_bytes;
            let to = (piece.blocks.end * block_bytes).min(stream.body);
            // Every piece starts at a multiple of 8 in the device input (the kernels load
            // words or whole values): the gap is filled with zeros, never read.
            let aligned = at.div_ceil(8) * 8;
            if aligned > at {
                uploads.push(&ZEROS[..aligned - at]);
            }
            uploads.push(&self.inputs[piece.buffer][from..to]);
            first_block.push(block_in.len());
            for k in piece.blocks.clone() {
                block_in.push((aligned + (k - piece.blocks.start) * block_bytes) as u64);
                block_lens.push(self.codec.block_len(stream.body, k));
            }
            at = aligned + (to - from);
        }
        let blocks = block_in.len();
        let mut meta = ArrayPack::new();
        let spans = [meta.push_u64(&block_in), meta.push_u16(&block_lens)].map(|id| meta.span(id));
        let mut input = lane.take_device(names.input, at + 8)?;
        upload_pieces(
            self.gpu,
            lane,
            &uploads,
            self.memory,
            names.input,
            &mut input,
        )?;
        let meta_device = meta.upload(self.gpu, lane, names.meta, names.meta)?;
        let slot = self.codec.slot_bytes();
        let mut scratch = lane.take_device(names.scratch, blocks * slot)?;
        let mut sizes = lane.take_device(names.sizes, 2 * blocks)?;
        let mut offsets = lane.take_device(names.offsets, 8 * (blocks + 1))?;
        let mut out = lane.take_device(names.out, self.codec.out_bytes(blocks, at))?;
        enqueue_compress(
            lane.stream(),
            &self.codec,
            &self.kernels,
            CompressLaunch {
                blocks,
                input: input.slice(..),
                block_in: meta_device.slice(spans[0].clone()),
                block_lens: meta_device.slice(spans[1].clone()),
                scratch: scratch.slice_mut(..),
                sizes: sizes.slice_mut(..),
                offsets: offsets.slice_mut(..),
                out: out.slice_mut(..),
            },
        )?;
        let mut host_offsets = lane.take_pinned(self.gpu, names.offsets, 8 * (blocks + 1))?;
        copy_to_host(
            lane.stream(),
            &offsets.slice(..8 * (blocks + 1)),
            &mut host_offsets.as_mut_slice()[..8 * (blocks + 1)],
        )?;
        Ok(Submitted {
            pieces,
            first_block,
            blocks,
            input,
            meta: meta_device,
            scratch,
            sizes,
            offsets,
            out,
            host_offsets,
        })
    }

    fn collect(&mut self, lane: &mut Lane, s: Submitted) -> Result<Collected> {
        lane.synchronize()?;
        let offsets: Vec<u64> = s.host_offsets.as_slice()[..8 * (s.blocks + 1)]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8")))
            .collect();
        let total = offsets[s.blocks] as usize;
        let produced = 2 * s.blocks + total;
        if produced > s.out.len() {
            let words = &C::WORDS;
            return Err(GpuError::Limit(format!(
                "{} kernels reported {total} {} for {} {}s",
                words.codec, words.payload, s.blocks, words.block
            ))
            .into());
        }
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, C::BUFFERS.staged, produced)?;
            copy_to_host(
                lane.stream(),
                &s.out.slice(..produced),
                &mut staging.as_mut_slice()[..produced],
            )?;
            Some(staging)
        } else {
            // Straight into the packed output: each piece's table slice and encodings.
            for p in 0..s.pieces.len() {
                let placed = self.place(&s, p, &offsets)?;
                let out = self.sink.output(placed.buffer);
                for (from, at) in [
                    (placed.table, placed.table_at),
                    (placed.payload, placed.payload_at),
                ] {
                    copy_to_host(
                        lane.stream(),
                        &s.out.slice(from.clone()),
                        &mut out[at..at + from.len()],
                    )?;
                }
            }
            None
        };
        Ok(Collected {
            submitted: s,
            staged,
            offsets,
        })
    }

    fn finish(&mut self, lane: &mut Lane, collected: Collected) -> Result<()> {
        lane.synchronize()?;
        let Collected {
            submitted: s,
            staged,
            offsets,
        } = collected;
        if let Some(staging) = &staged {
            let bytes = staging.as_slice();
            let mut pieces: Vec<(usize, usize, &[u8])> = Vec::new();
            for p in 0..s.pieces.len() {
                let placed = self.place(&s, p, &offsets)?;
                pieces.push((placed.buffer, placed.table_at, &bytes[placed.table]));
                pieces.push((placed.buffer, placed.payload_at, &bytes[placed.payload]));
            }
            self.sink.scatter(&pieces);
        }
        let names = &C::BUFFERS;
        give_back(
            lane,
            staged.map(|staging| (names.staged, staging)),
            (names.offsets, s.host_offsets),
            [
                (names.input, s.input),
                (names.meta, s.meta),
                (names.scratch, s.scratch),
                (names.sizes, s.sizes),
                (names.offsets, s.offsets),
                (names.out, s.out),
            ],
        );
        Ok(())
    }
}

/// Zeros that fill the gaps between pieces in a step's device input.
static ZEROS: [u8; 8] = [0; 8];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_cut_buffers_into_whole_blocks() {
        let steps = plan_steps(&[3, 0, 5], 4096, 4 * 4096);
        let shape: Vec<Vec<(usize, Range<usize>)>> = steps
            .iter()
            .map(|s| s.iter().map(|p| (p.buffer, p.blocks.clone())).collect())
            .collect();
        assert_eq!(shape, vec![vec![(0, 0..3), (2, 0..1)], vec![(2, 1..5)]]);
        // At least one block per step, however small the step.
        let steps = plan_steps(&[2], 2048, 1000);
        assert_eq!(steps.len(), 2);
        assert!(plan_steps(&[0, 0], 2048, 1 << 20).is_empty());
    }
}
