//! Decompression on the GPU of a batch of streams, through the step pipeline. Each
//! stream is validated by the codec (header, size table, total length) before anything is
//! decoded; streams of the same parameter set share launches (the kernels are
//! specialised by it). A step is a run of blocks of about [`Gpu::step_bytes`] of output:
//! their slices of the size tables, then their encodings, go to the device; the decoder
//! writes every block at its place; tails are copied by the host.

use std::collections::BTreeMap;

use cudarc::driver::CudaSlice;

use super::compress::{Piece, plan_steps};
use super::launch::ReasonCode;
use super::launch::{DecodeLaunch, decode_failure, enqueue_decompress};
use super::{BlockCodec, give_back};
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::gpu::{
    ArrayPack, Gpu, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline,
    upload_pieces,
};

/// Decodes `inputs` (each decoding to exactly `lens[i]` bytes) into `sink`; `read` gives
/// stream `i`'s validated layout (or the error that stops the batch), given the stream
/// and its length.
pub(crate) fn decompress<C: BlockCodec>(
    gpu: &Gpu,
    inputs: &[&[u8]],
    lens: &[usize],
    read: impl Fn(usize, &[u8], usize) -> Result<C::Layout>,
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let layouts = inputs
        .iter()
        .zip(lens)
        .enumerate()
        .map(|(i, (stream, &len))| read(i, stream, len))
        .collect::<Result<Vec<_>>>()?;
    sink.expect_outputs(lens, C::WORDS.codec)?;
    // Tails first (host copies), then every group of streams of the same parameters.
    let mut groups: BTreeMap<C, Vec<usize>> = BTreeMap::new();
    for (i, layout) in layouts.iter().enumerate() {
        let table = C::table(layout);
        let tail = &inputs[i][inputs[i].len() - (table.len - table.body)..];
        sink.output(i)[table.body..table.len].copy_from_slice(tail);
        groups.entry(C::of_layout(layout)).or_default().push(i);
    }
    for (&codec, members) in &groups {
        let counts: Vec<usize> = members
            .iter()
            .map(|&i| C::table(&layouts[i]).blocks())
            .collect();
        let steps = plan_steps(&counts, codec.block_bytes(), gpu.step_bytes());
        let mut stages = DecodeStages {
            gpu,
            kernels: codec.decoder(gpu)?,
            codec,
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

struct DecodeStages<'s, 'a, 'b, C: BlockCodec> {
    gpu: &'s Gpu,
    kernels: C::Decoder,
    codec: C,
    /// The streams of this group (indices into the batch); pieces name them by position.
    members: &'s [usize],
    inputs: &'s [&'s [u8]],
    layouts: &'s [C::Layout],
    memory: HostMemory,
    sink: &'s mut Sink<'a, 'b>,
}

impl<C: BlockCodec> DecodeStages<'_, '_, '_, C> {
    /// The bytes piece `piece` decodes to, and where they start in its buffer.
    fn piece_output(&self, piece: &Piece) -> (usize, usize) {
        let block_bytes = self.codec.block_bytes();
        let body = C::table(&self.layouts[self.members[piece.buffer]]).body;
        let from = piece.blocks.start * block_bytes;
        (from, (piece.blocks.end * block_bytes).min(body) - from)
    }
}

struct Submitted {
    pieces: Vec<Piece>,
    /// Each piece's first block in the launch and its place in the device output.
    first_block: Vec<usize>,
    out_at: Vec<usize>,
    out_len: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    offsets: CudaSlice<u8>,
    output: CudaSlice<u8>,
    error: CudaSlice<u8>,
    host_error: PinnedBuffer,
    staged: Option<PinnedBuffer>,
}

impl<C: BlockCodec> Stages for DecodeStages<'_, '_, '_, C> {
    type Step = Vec<Piece>;
    type Submitted = Submitted;
    type Collected = Submitted;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, pieces: Vec<Piece>) -> Result<Submitted> {
        let names = &C::BUFFERS;
        let block_bytes = self.codec.block_bytes();
        let (mut tables, mut payloads) = (Vec::new(), Vec::new());
        let (mut block_out, mut block_lens) = (Vec::new(), Vec::new());
        let (mut first_block, mut out_at) = (Vec::new(), Vec::new());
        let (mut payload_len, mut at) = (0usize, 0usize);
        for piece in &pieces {
            let i = self.members[piece.buffer];
            let (stream, table) = (self.inputs[i], C::table(&self.layouts[i]));
            let (k0, k1) = (piece.blocks.start, piece.blocks.end);
            tables.push(&stream[table.table_at + 2 * k0..table.table_at + 2 * k1]);
            let (payload_at, offsets) = (table.payload_at, table.offsets);
            let payload = &stream[payload_at + offsets[k0]..payload_at + offsets[k1]];
            payloads.push(payload);
            payload_len += payload.len();
            // Every piece's output starts at a multiple of 8 (the decoder writes words or
            // whole values).
            let aligned = at.div_ceil(8) * 8;
            first_block.push(block_out.len());
            out_at.push(aligned);
            for k in k0..k1 {
                block_out.push((aligned + (k - k0) * block_bytes) as u64);
                block_lens.push(self.codec.block_len(table.body, k));
            }
            at = aligned + self.piece_output(piece).1;
        }
        let blocks = block_out.len();
        let out_len = at;
        tables.extend(payloads);
        let mut meta = ArrayPack::new();
        let spans = [meta.push_u64(&block_out), meta.push_u16(&block_lens)].map(|id| meta.span(id));
        let mut input = lane.take_device(names.input, 2 * blocks + payload_len)?;
        upload_pieces(
            self.gpu,
            lane,
            &tables,
            self.memory,
            names.input,
            &mut input,
        )?;
        let meta_device = meta.upload(self.gpu, lane, names.meta, names.meta)?;
        let mut offsets = lane.take_device(names.offsets, 8 * (blocks + 1))?;
        let mut output = lane.take_device(names.out, out_len)?;
        let mut error = lane.take_device(names.error, 8)?;
        enqueue_decompress::<C>(
            lane.stream(),
            &self.kernels,
            DecodeLaunch {
                blocks,
                table_and_payload: input.slice(..2 * blocks + payload_len),
                payload_len,
                offsets: offsets.slice_mut(..),
                block_out: meta_device.slice(spans[0].clone()),
                block_lens: meta_device.slice(spans[1].clone()),
                out: output.slice_mut(..),
                error: error.slice_mut(..8),
            },
        )?;
        let mut host_error = lane.take_pinned(self.gpu, names.error, 8)?;
        copy_to_host(
            lane.stream(),
            &error.slice(..8),
            &mut host_error.as_mut_slice()[..8],
        )?;
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, names.staged, out_len)?;
            copy_to_host(
                lane.stream(),
                &output.slice(..out_len),
                &mut staging.as_mut_slice()[..out_len],
            )?;
            Some(staging)
        } else {
            let targets: Vec<(usize, usize, std::ops::Range<usize>)> = pieces
                .iter()
                .zip(&out_at)
                .map(|(piece, &at)| {
                    let (from, len) = self.piece_output(piece);
                    (self.members[piece.buffer], from, at..at + len)
                })
                .collect();
            self.sink
                .copy_from_device(lane.stream(), &output, &targets, C::WORDS.codec)?;
            None
        };
        Ok(Submitted {
            pieces,
            first_block,
            out_at,
            out_len,
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
            // The failing block, as its stream and its index there (the first piece
            // starts at block 0 of the launch, so some piece holds it).
            let block = block as usize;
            let p = s
                .first_block
                .partition_point(|&first| first <= block)
                .saturating_sub(1);
            let piece = &s.pieces[p];
            let index = piece.blocks.start + block.saturating_sub(s.first_block[p]);
            return Err(CodecError::corrupt(
                C::WORDS.codec,
                format!(
                    "stream {}, {} {index}: {} (GPU)",
                    self.members[piece.buffer],
                    C::WORDS.block,
                    C::Reason::reason_of(code)
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
            debug_assert!(pieces.iter().all(|(_, _, b)| b.len() <= s.out_len));
            self.sink.scatter(&pieces);
        }
        let names = &C::BUFFERS;
        give_back(
            lane,
            s.staged.map(|staging| (names.staged, staging)),
            (names.error, s.host_error),
            [
                (names.input, s.input),
                (names.meta, s.meta),
                (names.offsets, s.offsets),
                (names.out, s.output),
                (names.error, s.error),
            ],
        );
        Ok(())
    }
}
