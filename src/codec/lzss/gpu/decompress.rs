//! Decompression on the GPU of a batch of `lzss` streams, through the step pipeline.
//! Each stream is validated as the CPU decoder validates it (header, size table, total
//! length) before anything is decoded; streams of the same parameters share launches
//! (the kernels are specialised by symbol width). A step is a run of chunks of about
//! [`Gpu::step_bytes`] of output: their slices of the size tables, then their payloads, go to
//! the device; the decoder writes every chunk at its place; tails are copied by the host.

use std::collections::BTreeMap;

use cudarc::driver::CudaSlice;

use super::compress::{Piece, plan_steps, shape};
use super::launch::{
    DecodeKernels, DecodeLaunch, decode_error_reason, decode_failure, enqueue_decompress,
};
use crate::codec::batch::Sink;
use crate::codec::error::{CodecError, Result};
use crate::codec::lzss::{LzssParams, NAME, StreamLayout, read_layout};
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
    let mut layouts = Vec::with_capacity(inputs.len());
    for (i, (stream, &len)) in inputs.iter().zip(lens).enumerate() {
        let layout = read_layout(stream, len)?;
        if layout.len != len {
            return Err(CodecError::corrupt(
                NAME,
                format!("stream {i} claims {} bytes, expected {len}", layout.len),
            ));
        }
        layouts.push(layout);
    }
    sink.expect_outputs(lens, NAME)?;
    // Tails first (host copies), then every group of streams of the same parameters.
    let mut groups: BTreeMap<(u8, u8, u32), Vec<usize>> = BTreeMap::new();
    for (i, layout) in layouts.iter().enumerate() {
        let tail = &inputs[i][inputs[i].len() - (layout.len - layout.body)..];
        sink.output(i)[layout.body..layout.len].copy_from_slice(tail);
        let p = layout.params;
        groups
            .entry((p.symbol_width, p.window, p.chunk_size))
            .or_default()
            .push(i);
    }
    for members in groups.values() {
        let params = layouts[members[0]].params;
        let counts: Vec<usize> = members
            .iter()
            .map(|&i| layouts[i].body.div_ceil(params.chunk_size as usize))
            .collect();
        let steps = plan_steps(&counts, params.chunk_size as usize, gpu.step_bytes());
        let mut stages = DecodeStages {
            gpu,
            kernels: DecodeKernels::new(gpu, &shape(&params))?,
            params,
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

struct DecodeStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: DecodeKernels,
    params: LzssParams,
    /// The streams of this group (indices into the batch); pieces name them by position.
    members: &'s [usize],
    inputs: &'s [&'s [u8]],
    layouts: &'s [StreamLayout],
    memory: HostMemory,
    sink: &'s mut Sink<'a, 'b>,
}

struct Submitted {
    pieces: Vec<Piece>,
    /// Each piece's first chunk in the launch and its place in the device output.
    first_chunk: Vec<usize>,
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

impl Stages for DecodeStages<'_, '_, '_> {
    type Step = Vec<Piece>;
    type Submitted = Submitted;
    type Collected = Submitted;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, pieces: Vec<Piece>) -> Result<Submitted> {
        let c = self.params.chunk_size as usize;
        let (mut tables, mut payloads) = (Vec::new(), Vec::new());
        let (mut chunk_out, mut chunk_lens) = (Vec::new(), Vec::new());
        let (mut first_chunk, mut out_at) = (Vec::new(), Vec::new());
        let (mut payload_len, mut at) = (0usize, 0usize);
        for piece in &pieces {
            let i = self.members[piece.buffer];
            let (stream, layout) = (self.inputs[i], &self.layouts[i]);
            let (k0, k1) = (piece.chunks.start, piece.chunks.end);
            tables.push(&stream[layout.table_at + 2 * k0..layout.table_at + 2 * k1]);
            let payload = &stream
                [layout.payload_at + layout.offsets[k0]..layout.payload_at + layout.offsets[k1]];
            payloads.push(payload);
            payload_len += payload.len();
            // Every piece's output starts at a multiple of 8 (the decoder writes words).
            let aligned = at.div_ceil(8) * 8;
            first_chunk.push(chunk_out.len());
            out_at.push(aligned);
            for k in k0..k1 {
                chunk_out.push((aligned + (k - k0) * c) as u64);
                chunk_lens.push((layout.body - k * c).min(c) as u16);
            }
            at = aligned + ((k1 * c).min(layout.body) - k0 * c);
        }
        let chunks = chunk_out.len();
        let out_len = at;
        tables.extend(payloads);
        let mut meta = ArrayPack::new();
        let spans = [meta.push_u64(&chunk_out), meta.push_u16(&chunk_lens)].map(|id| meta.span(id));
        let mut input = lane.take_device("lzss.in", 2 * chunks + payload_len)?;
        upload_pieces(self.gpu, lane, &tables, self.memory, "lzss.in", &mut input)?;
        let meta_device = meta.upload(self.gpu, lane, "lzss.meta", "lzss.meta")?;
        let mut offsets = lane.take_device("lzss.offsets", 8 * (chunks + 1))?;
        let mut output = lane.take_device("lzss.out", out_len)?;
        let mut error = lane.take_device("lzss.error", 8)?;
        enqueue_decompress(
            lane.stream(),
            &self.kernels,
            &shape(&self.params),
            DecodeLaunch {
                chunks,
                table_and_payload: input.slice(..2 * chunks + payload_len),
                payload_len,
                offsets: offsets.slice_mut(..),
                chunk_out: meta_device.slice(spans[0].clone()),
                chunk_lens: meta_device.slice(spans[1].clone()),
                out: output.slice_mut(..),
                error: error.slice_mut(..8),
            },
        )?;
        let mut host_error = lane.take_pinned(self.gpu, "lzss.error", 8)?;
        copy_to_host(
            lane.stream(),
            &error.slice(..8),
            &mut host_error.as_mut_slice()[..8],
        )?;
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, "lzss.staged", out_len)?;
            copy_to_host(
                lane.stream(),
                &output.slice(..out_len),
                &mut staging.as_mut_slice()[..out_len],
            )?;
            Some(staging)
        } else {
            for (p, piece) in pieces.iter().enumerate() {
                let i = self.members[piece.buffer];
                let from = piece.chunks.start * c;
                let len = (piece.chunks.end * c).min(self.layouts[i].body) - from;
                let target = &mut self.sink.output(i)[from..from + len];
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
            first_chunk,
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
        if let Some((code, chunk)) = decode_failure(&s.host_error.as_slice()[..8]) {
            // The failing chunk, as its stream and its index there.
            let chunk = chunk as usize;
            let p = s.first_chunk.partition_point(|&first| first <= chunk) - 1;
            let piece = &s.pieces[p.min(s.pieces.len() - 1)];
            let index = piece.chunks.start + chunk - s.first_chunk[p.min(s.pieces.len() - 1)];
            return Err(CodecError::corrupt(
                NAME,
                format!(
                    "stream {}, chunk {index}: {} (GPU)",
                    self.members[piece.buffer],
                    decode_error_reason(code)
                ),
            ));
        }
        if let Some(staging) = &s.staged {
            let c = self.params.chunk_size as usize;
            let bytes = staging.as_slice();
            let pieces: Vec<(usize, usize, &[u8])> = s
                .pieces
                .iter()
                .enumerate()
                .map(|(p, piece)| {
                    let i = self.members[piece.buffer];
                    let from = piece.chunks.start * c;
                    let len = (piece.chunks.end * c).min(self.layouts[i].body) - from;
                    (i, from, &bytes[s.out_at[p]..s.out_at[p] + len])
                })
                .collect();
            debug_assert!(pieces.iter().all(|(_, _, b)| b.len() <= s.out_len));
            self.sink.scatter(&pieces);
        }
        if let Some(staging) = s.staged {
            lane.put_pinned("lzss.staged", staging);
        }
        lane.put_pinned("lzss.error", s.host_error);
        for (name, buffer) in [
            ("lzss.in", s.input),
            ("lzss.meta", s.meta),
            ("lzss.offsets", s.offsets),
            ("lzss.out", s.output),
            ("lzss.error", s.error),
        ] {
            lane.put_device(name, buffer);
        }
        Ok(())
    }
}
