//! Decompression on the GPU of a batch of `intpack` streams, through the step pipeline.
//! Each stream's header, size table and length are validated by the CPU decoder's own
//! check ([`read_layout`]) before anything is decoded; streams of the same width share
//! launches (the kernels are specialised by width). A step is a run of blocks of about
//! [`Gpu::step_bytes`] of output: their slices of the size tables, then their encodings,
//! go to the device; the decoder writes every block's values at their place; tails are
//! copied by the host.

use std::collections::BTreeMap;

use cudarc::driver::CudaSlice;

use super::compress::{Piece, block_values, plan_steps};
use super::launch::{
    DecodeKernels, DecodeLaunch, decode_error_reason, decode_failure, enqueue_decompress,
};
use crate::codec::batch::Sink;
use crate::codec::error::{CodecError, Result};
use crate::codec::intpack::{BLOCK_VALUES, NAME, StreamLayout, read_layout};
use crate::gpu::{
    ArrayPack, Gpu, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline,
    upload_pieces,
};

/// Decodes `inputs` (each decoding to exactly `lens[i]` bytes) into `sink`.
pub(crate) fn decompress(
    gpu: &Gpu,
    inputs: &[&[u8]],
    lens: &[usize],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let layouts = inputs
        .iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (stream, &len))| {
            read_layout(stream, Some(len)).map_err(|e| in_stream(e, i, inputs.len()))
        })
        .collect::<Result<Vec<_>>>()?;
    sink.expect_outputs(lens, NAME)?;
    // Tails first (host copies), then every group of streams of the same width.
    let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, layout) in layouts.iter().enumerate() {
        let tail = &inputs[i][inputs[i].len() - (layout.len - layout.body)..];
        sink.output(i)[layout.body..layout.len].copy_from_slice(tail);
        groups.entry(layout.width).or_default().push(i);
    }
    for (&width, members) in &groups {
        let counts: Vec<usize> = members
            .iter()
            .map(|&i| layouts[i].offsets.len() - 1)
            .collect();
        let steps = plan_steps(&counts, BLOCK_VALUES * width, gpu.step_bytes());
        let mut stages = DecodeStages {
            gpu,
            kernels: DecodeKernels::new(gpu, width as u8)?,
            width,
            members,
            inputs,
            layouts: &layouts,
            memory,
            sink,
        };
        run_pipeline(gpu, steps, &mut stages)?;
    }
    Ok(())
}

/// A layout error of stream `i`, saying which stream when the batch has several.
fn in_stream(e: CodecError, i: usize, count: usize) -> CodecError {
    match e {
        CodecError::Corrupt { reason, .. } if count > 1 => {
            CodecError::corrupt(NAME, format!("stream {i}: {reason}"))
        }
        e => e,
    }
}

struct DecodeStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: DecodeKernels,
    width: usize,
    /// The streams of this group (indices into the batch); pieces name them by position.
    members: &'s [usize],
    inputs: &'s [&'s [u8]],
    layouts: &'s [StreamLayout],
    memory: HostMemory,
    sink: &'s mut Sink<'a, 'b>,
}

impl DecodeStages<'_, '_, '_> {
    /// The bytes of values piece `piece` decodes to, and where they start in its buffer.
    fn piece_output(&self, piece: &Piece) -> (usize, usize) {
        let block_bytes = BLOCK_VALUES * self.width;
        let body = self.layouts[self.members[piece.buffer]].body;
        let from = piece.blocks.start * block_bytes;
        (from, (piece.blocks.end * block_bytes).min(body) - from)
    }
}

struct Submitted {
    pieces: Vec<Piece>,
    /// Each piece's first block in the launch and its place in the device output.
    first_block: Vec<usize>,
    out_at: Vec<usize>,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    offsets: CudaSlice<u8>,
    output: CudaSlice<u8>,
    error: CudaSlice<u8>,
    host_error: PinnedBuffer,
    staged: Option<PinnedBuffer>,
}

impl Stages for DecodeStages<'_, '_, '_> {
    type Step = Vec<Piece>;
    type Submitted = Submitted;
    type Collected = Submitted;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, pieces: Vec<Piece>) -> Result<Submitted> {
        let (mut tables, mut payloads) = (Vec::new(), Vec::new());
        let (mut block_out, mut values) = (Vec::new(), Vec::new());
        let (mut first_block, mut out_at) = (Vec::new(), Vec::new());
        let (mut payload_len, mut at) = (0usize, 0usize);
        let block_bytes = BLOCK_VALUES * self.width;
        for piece in &pieces {
            let i = self.members[piece.buffer];
            let (stream, layout) = (self.inputs[i], &self.layouts[i]);
            let (k0, k1) = (piece.blocks.start, piece.blocks.end);
            let table_at = layout.blocks_at - 2 * (layout.offsets.len() - 1);
            tables.push(&stream[table_at + 2 * k0..table_at + 2 * k1]);
            let payload = &stream
                [layout.blocks_at + layout.offsets[k0]..layout.blocks_at + layout.offsets[k1]];
            payloads.push(payload);
            payload_len += payload.len();
            // Every piece's output starts at a multiple of 8 (the decoder writes values).
            let aligned = at.div_ceil(8) * 8;
            first_block.push(block_out.len());
            out_at.push(aligned);
            for k in k0..k1 {
                block_out.push((aligned + (k - k0) * block_bytes) as u64);
                values.push(block_values(layout.body, self.width, k));
            }
            at = aligned + self.piece_output(piece).1;
        }
        let blocks = block_out.len();
        let out_len = at;
        tables.extend(payloads);
        let mut meta = ArrayPack::new();
        let spans = [meta.push_u64(&block_out), meta.push_u16(&values)].map(|id| meta.span(id));
        let mut input = lane.take_device("intpack.in", 2 * blocks + payload_len)?;
        upload_pieces(
            self.gpu,
            lane,
            &tables,
            self.memory,
            "intpack.in",
            &mut input,
        )?;
        let meta_device = meta.upload(self.gpu, lane, "intpack.meta", "intpack.meta")?;
        let mut offsets = lane.take_device("intpack.offsets", 8 * (blocks + 1))?;
        let mut output = lane.take_device("intpack.out", out_len)?;
        let mut error = lane.take_device("intpack.error", 8)?;
        enqueue_decompress(
            lane.stream(),
            &self.kernels,
            DecodeLaunch {
                blocks,
                table_and_payload: input.slice(..2 * blocks + payload_len),
                payload_len,
                offsets: offsets.slice_mut(..),
                block_out: meta_device.slice(spans[0].clone()),
                block_values: meta_device.slice(spans[1].clone()),
                out: output.slice_mut(..),
                error: error.slice_mut(..8),
            },
        )?;
        let mut host_error = lane.take_pinned(self.gpu, "intpack.error", 8)?;
        copy_to_host(
            lane.stream(),
            &error.slice(..8),
            &mut host_error.as_mut_slice()[..8],
        )?;
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, "intpack.staged", out_len)?;
            copy_to_host(
                lane.stream(),
                &output.slice(..out_len),
                &mut staging.as_mut_slice()[..out_len],
            )?;
            Some(staging)
        } else {
            for (p, piece) in pieces.iter().enumerate() {
                let (from, len) = self.piece_output(piece);
                let target = &mut self.sink.output(self.members[piece.buffer])[from..from + len];
                copy_to_host(
                    lane.stream(),
                    &output.slice(out_at[p]..out_at[p] + len),
                    target,
                )?;
            }
            None
        };
        Ok(Submitted {
            pieces,
            first_block,
            out_at,
            input,
            meta: meta_device,
            offsets,
            output,
            error,
            host_error,
            staged,
        })
    }

    fn collect(&mut self, _lane: &mut Lane, s: Submitted) -> Result<Submitted> {
        Ok(s)
    }

    fn finish(&mut self, lane: &mut Lane, s: Submitted) -> Result<()> {
        lane.synchronize()?;
        if let Some((code, block)) = decode_failure(&s.host_error.as_slice()[..8]) {
            // The failing block, as its stream and its index there.
            let block = block as usize;
            let p = s
                .first_block
                .partition_point(|&first| first <= block)
                .saturating_sub(1);
            let piece = &s.pieces[p];
            let index = piece.blocks.start + block.saturating_sub(s.first_block[p]);
            return Err(CodecError::corrupt(
                NAME,
                format!(
                    "stream {}, block {index}: {} (GPU)",
                    self.members[piece.buffer],
                    decode_error_reason(code)
                ),
            ));
        }
        if let Some(staging) = &s.staged {
            let bytes = staging.as_slice();
            let pieces: Vec<(usize, usize, &[u8])> = s
                .pieces
                .iter()
                .enumerate()
                .map(|(p, piece)| {
                    let (from, len) = self.piece_output(piece);
                    (
                        self.members[piece.buffer],
                        from,
                        &bytes[s.out_at[p]..s.out_at[p] + len],
                    )
                })
                .collect();
            self.sink.scatter(&pieces);
        }
        if let Some(staging) = s.staged {
            lane.put_pinned("intpack.staged", staging);
        }
        lane.put_pinned("intpack.error", s.host_error);
        for (name, buffer) in [
            ("intpack.in", s.input),
            ("intpack.meta", s.meta),
            ("intpack.offsets", s.offsets),
            ("intpack.out", s.output),
            ("intpack.error", s.error),
        ] {
            lane.put_device(name, buffer);
        }
        Ok(())
    }
}
