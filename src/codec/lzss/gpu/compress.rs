//! Compression on the GPU: the bytes of [`crate::codec::lzss::compress`] for a batch of
//! buffers of the same parameters, through the step pipeline. A step is a run of chunks
//! (of one or several buffers) of about [`Gpu::step_bytes`]; kernels I–III encode them, the
//! host reads back the launch's payload offsets and copies each buffer's slice of the
//! size table and its payloads to their places. Headers and tails (the bytes after the
//! last whole symbol) are written by the host.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::launch::{CompressKernels, CompressLaunch, LzssShape, enqueue_compress};
use crate::codec::batch::Sink;
use crate::codec::error::{CodecError, Result};
use crate::codec::lzss::{self, LzssParams, NAME};
use crate::gpu::{
    ArrayPack, Gpu, GpuError, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline,
    upload_pieces,
};

/// Chunks `chunks` of buffer `buffer`.
#[derive(Clone, Debug)]
pub(super) struct Piece {
    pub buffer: usize,
    pub chunks: Range<usize>,
}

/// What the host knows of a buffer's stream before its chunks are encoded.
struct Stream {
    header: Vec<u8>,
    body: usize,
    chunks: usize,
}

/// Cuts every buffer's chunks into steps of about [`Gpu::step_bytes`] of input.
pub(super) fn plan_steps(
    chunk_counts: &[usize],
    chunk_size: usize,
    step_bytes: usize,
) -> Vec<Vec<Piece>> {
    let per_step = (step_bytes / chunk_size).max(1);
    let mut steps: Vec<Vec<Piece>> = vec![Vec::new()];
    let mut room = per_step;
    for (buffer, &chunks) in chunk_counts.iter().enumerate() {
        let mut next = 0;
        while next < chunks {
            if room == 0 {
                steps.push(Vec::new());
                room = per_step;
            }
            let take = room.min(chunks - next);
            steps.last_mut().expect("a step").push(Piece {
                buffer,
                chunks: next..next + take,
            });
            next += take;
            room -= take;
        }
    }
    steps.retain(|step| !step.is_empty());
    steps
}

/// Compresses `inputs` with `params` into `sink`; returns each output's length.
pub(crate) fn compress(
    gpu: &Gpu,
    params: &LzssParams,
    inputs: &[&[u8]],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<Vec<usize>> {
    params.validate()?;
    let s = usize::from(params.symbol_width);
    let c = params.chunk_size as usize;
    let streams: Vec<Stream> = inputs
        .iter()
        .map(|input| {
            let mut header = Vec::with_capacity(16);
            lzss::write_header(&mut header, params, input.len() as u64);
            let body = input.len() - input.len() % s;
            Stream {
                header,
                body,
                chunks: body.div_ceil(c),
            }
        })
        .collect();
    if let Sink::Buffers(outputs) = sink {
        for (i, (output, input)) in outputs.iter().zip(inputs).enumerate() {
            if output.len() < lzss::max_compressed_len(input.len(), params) {
                return Err(CodecError::invalid(
                    NAME,
                    format!("output buffer {i} is smaller than the worst case"),
                ));
            }
        }
    }
    let counts: Vec<usize> = streams.iter().map(|s| s.chunks).collect();
    let steps = plan_steps(&counts, c, gpu.step_bytes());
    let mut stages = CompressStages {
        gpu,
        kernels: CompressKernels::new(gpu, &shape(params))?,
        params: *params,
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
    // Buffers with no chunk (shorter than a symbol) were not in any step; the last
    // buffer is closed once all its chunks are written.
    stages.open_up_to(inputs.len())?;
    if let Some(last) = inputs.len().checked_sub(1) {
        stages.close(last)?;
    }
    Ok(stages.lens)
}

pub(super) fn shape(params: &LzssParams) -> LzssShape {
    LzssShape {
        symbol_width: params.symbol_width,
        window: params.window,
        chunk_size: params.chunk_size,
    }
}

struct CompressStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: CompressKernels,
    params: LzssParams,
    inputs: &'s [&'s [u8]],
    memory: HostMemory,
    streams: Vec<Stream>,
    sink: &'s mut Sink<'a, 'b>,
    /// Payload bytes of each buffer written so far.
    payload_written: Vec<usize>,
    /// Each output's length, once its last chunk is written.
    lens: Vec<usize>,
    /// Buffers whose headers are written (and, in a packed sink, whose start is set).
    opened: usize,
    /// The end of the last finished output in a packed sink.
    packed_end: usize,
}

impl CompressStages<'_, '_, '_> {
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
    /// first piece): its slice of the size table and its payloads, as ranges of the step's
    /// output (`offsets`: the step's payload offsets), and their places in the buffer's
    /// output. Counts the payloads as written: call once per piece, in order.
    fn place(&mut self, s: &Submitted, p: usize, offsets: &[u64]) -> Result<Placed> {
        let piece = &s.pieces[p];
        if piece.chunks.start == 0 {
            self.open_up_to(piece.buffer + 1)?;
        }
        let (j0, j1) = (s.first_chunk[p], s.first_chunk[p] + piece.chunks.len());
        let stream = &self.streams[piece.buffer];
        let payload = 2 * s.chunks + offsets[j0] as usize..2 * s.chunks + offsets[j1] as usize;
        let placed = Placed {
            buffer: piece.buffer,
            table: 2 * j0..2 * j1,
            table_at: stream.header.len() + 2 * piece.chunks.start,
            payload_at: stream.header.len()
                + 2 * stream.chunks
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
        let at = stream.header.len() + 2 * stream.chunks + self.payload_written[i];
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
    /// Each piece's first chunk in the launch.
    first_chunk: Vec<usize>,
    chunks: usize,
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

impl Stages for CompressStages<'_, '_, '_> {
    type Step = Vec<Piece>;
    type Submitted = Submitted;
    type Collected = Collected;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, pieces: Vec<Piece>) -> Result<Submitted> {
        let c = self.params.chunk_size as usize;
        let mut uploads: Vec<&[u8]> = Vec::new();
        let mut chunk_in = Vec::new();
        let mut chunk_lens = Vec::new();
        let mut first_chunk = Vec::with_capacity(pieces.len());
        let mut at = 0usize;
        for piece in &pieces {
            let stream = &self.streams[piece.buffer];
            let from = piece.chunks.start * c;
            let to = (piece.chunks.end * c).min(stream.body);
            // Every piece starts at a multiple of 8 in the device input (the kernel loads
            // words): the gap is filled with zeros, never read.
            let aligned = at.div_ceil(8) * 8;
            if aligned > at {
                uploads.push(&ZEROS[..aligned - at]);
            }
            uploads.push(&self.inputs[piece.buffer][from..to]);
            first_chunk.push(chunk_in.len());
            for k in piece.chunks.clone() {
                chunk_in.push((aligned + (k - piece.chunks.start) * c) as u64);
                chunk_lens.push((stream.body - k * c).min(c) as u16);
            }
            at = aligned + (to - from);
        }
        let chunks = chunk_in.len();
        let mut meta = ArrayPack::new();
        let spans = [meta.push_u64(&chunk_in), meta.push_u16(&chunk_lens)].map(|id| meta.span(id));
        let mut input = lane.take_device("lzss.in", at + 8)?;
        upload_pieces(self.gpu, lane, &uploads, self.memory, "lzss.in", &mut input)?;
        let meta_device = meta.upload(self.gpu, lane, "lzss.meta", "lzss.meta")?;
        let mut scratch = lane.take_device("lzss.scratch", chunks * c)?;
        let mut sizes = lane.take_device("lzss.sizes", 2 * chunks)?;
        let mut offsets = lane.take_device("lzss.offsets", 8 * (chunks + 1))?;
        let mut out = lane.take_device("lzss.out", 2 * chunks + at)?;
        enqueue_compress(
            lane.stream(),
            &self.kernels,
            &shape(&self.params),
            CompressLaunch {
                chunks,
                input: input.slice(..),
                chunk_in: meta_device.slice(spans[0].clone()),
                chunk_lens: meta_device.slice(spans[1].clone()),
                scratch: scratch.slice_mut(..),
                sizes: sizes.slice_mut(..),
                offsets: offsets.slice_mut(..),
                out: out.slice_mut(..),
            },
        )?;
        let mut host_offsets = lane.take_pinned(self.gpu, "lzss.offsets", 8 * (chunks + 1))?;
        copy_to_host(
            lane.stream(),
            &offsets.slice(..8 * (chunks + 1)),
            &mut host_offsets.as_mut_slice()[..8 * (chunks + 1)],
        )?;
        Ok(Submitted {
            pieces,
            first_chunk,
            chunks,
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
        let offsets: Vec<u64> = s.host_offsets.as_slice()[..8 * (s.chunks + 1)]
            .chunks_exact(8)
            .map(|w| u64::from_le_bytes(w.try_into().expect("8")))
            .collect();
        let total = offsets[s.chunks] as usize;
        let produced = 2 * s.chunks + total;
        if produced > s.out.len() {
            return Err(GpuError::Limit(format!(
                "lzss kernels reported {total} payload bytes for {} chunks",
                s.chunks
            ))
            .into());
        }
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, "lzss.staged", produced)?;
            copy_to_host(
                lane.stream(),
                &s.out.slice(..produced),
                &mut staging.as_mut_slice()[..produced],
            )?;
            Some(staging)
        } else {
            // Straight into the packed output: each piece's table slice and payloads.
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
        if let Some(staging) = staged {
            lane.put_pinned("lzss.staged", staging);
        }
        lane.put_pinned("lzss.offsets", s.host_offsets);
        for (name, buffer) in [
            ("lzss.in", s.input),
            ("lzss.meta", s.meta),
            ("lzss.scratch", s.scratch),
            ("lzss.sizes", s.sizes),
            ("lzss.offsets", s.offsets),
            ("lzss.out", s.out),
        ] {
            lane.put_device(name, buffer);
        }
        Ok(())
    }
}

/// Zeros that fill the gaps between pieces in a step's device input.
static ZEROS: [u8; 8] = [0; 8];
