//! Compression on the GPU: the bytes of the CPU reference (`compress_raw`,
//! `compress_framed`, `compress_blocks`) for a batch of buffers, through the step
//! pipeline. Every 64 KiB block of every buffer is a CUDA block of the block kernel; a
//! step is the blocks of about [`Gpu::step_bytes`] of input, in order. The device lays each
//! step's output out and assembles it (`gmatch_layout`, `gmatch_assemble`), so the host
//! reads back the finished bytes and only writes each buffer's header (the raw preamble,
//! the stream identifier, or the blocks format's length and size table) into the room the
//! layout left for it.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::super::blocks::{self, BLOCK_TABLE_ENTRY};
use super::super::frame::STREAM_IDENTIFIER;
use super::super::{BLOCK_SIZE, NAME};
use super::launch::{
    CompressKernels, CompressLaunch, INPUT_PADDING, LayoutFormat, RECORD_BYTES, SCRATCH_BYTES,
    SLOT_BYTES, enqueue_compress, max_launch_output,
};
use crate::codec::SnappyFormat;
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::codec::varint;
use crate::gpu::{
    ArrayPack, Gpu, GpuError, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline,
    upload_pieces,
};

/// A 64 KiB (or shorter, last) block of a buffer.
#[derive(Clone, Copy, Debug)]
struct Block {
    buffer: usize,
    start: usize,
    len: usize,
}

/// The header a buffer's output starts with (the size table of the blocks format zeroed,
/// filled as its blocks come back).
pub(super) fn header(format: SnappyFormat, len: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    match format {
        SnappyFormat::Raw => {
            let len = u32::try_from(len).map_err(|_| CodecError::TooLarge {
                codec: NAME,
                claimed: len as u64,
                limit: u64::from(u32::MAX),
            })?;
            varint::write_u64(&mut out, u64::from(len));
        }
        SnappyFormat::Framed => out.extend_from_slice(&STREAM_IDENTIFIER),
        SnappyFormat::Blocks => {
            varint::write_u64(&mut out, len as u64);
            out.resize(out.len() + BLOCK_TABLE_ENTRY * len.div_ceil(BLOCK_SIZE), 0);
        }
    }
    Ok(out)
}

/// One step: its blocks, and the buffers whose headers open before each block (and after
/// the last, for empty buffers at the end of the batch).
struct Step {
    blocks: Range<usize>,
    opening: Vec<Vec<usize>>,
    trailing: Vec<usize>,
}

/// Compresses `inputs` in `format` into `sink`; returns each output's length. Outputs in
/// `Sink::Buffers` must hold the format's worst case.
pub(crate) fn compress(
    gpu: &Gpu,
    format: SnappyFormat,
    inputs: &[&[u8]],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<Vec<usize>> {
    let headers = inputs
        .iter()
        .map(|input| header(format, input.len()))
        .collect::<Result<Vec<_>>>()?;
    let mut blocks = Vec::new();
    for (buffer, input) in inputs.iter().enumerate() {
        for start in (0..input.len()).step_by(BLOCK_SIZE) {
            blocks.push(Block {
                buffer,
                start,
                len: (input.len() - start).min(BLOCK_SIZE),
            });
        }
    }
    let steps = plan_steps(inputs, &blocks, gpu.step_bytes());
    let mut stages = CompressStages {
        gpu,
        kernels: CompressKernels::new(gpu)?,
        format,
        inputs,
        memory,
        blocks,
        headers,
        sink,
        written: vec![0; inputs.len()],
        next_base: 0,
        base: 0,
    };
    if stages.blocks.is_empty() {
        // Only empty buffers: their headers are their whole outputs.
        let mut at = 0;
        for i in 0..inputs.len() {
            stages.open(i, at);
            at += stages.headers[i].len();
            let header = &stages.headers[i];
            let out = stages.sink.output(i);
            if out.len() < header.len() {
                return Err(output_too_small(i));
            }
            out[..header.len()].copy_from_slice(header);
        }
    } else {
        run_pipeline(gpu, steps, &mut stages)?;
    }
    Ok(stages.written)
}

/// Cuts the blocks into steps of about [`Gpu::step_bytes`] and places every buffer's header:
/// before its first block, or (empty buffers) before the next buffer's first block.
fn plan_steps(inputs: &[&[u8]], blocks: &[Block], step_bytes: usize) -> Vec<Step> {
    let per_step = (step_bytes / BLOCK_SIZE).max(1);
    let mut steps: Vec<Step> = Vec::new();
    let mut waiting: Vec<usize> = Vec::new();
    let mut next_buffer = 0;
    for (b, block) in blocks.iter().enumerate() {
        if b % per_step == 0 {
            steps.push(Step {
                blocks: b..b,
                opening: Vec::new(),
                trailing: Vec::new(),
            });
        }
        let step = steps.last_mut().expect("a step was pushed");
        while next_buffer <= block.buffer {
            waiting.push(next_buffer);
            next_buffer += 1;
        }
        let opening = if block.start == 0 {
            std::mem::take(&mut waiting)
        } else {
            Vec::new()
        };
        step.opening.push(opening);
        step.blocks.end = b + 1;
    }
    if let Some(last) = steps.last_mut() {
        last.trailing = (next_buffer..inputs.len()).collect();
    }
    steps
}

struct CompressStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: CompressKernels,
    format: SnappyFormat,
    inputs: &'s [&'s [u8]],
    memory: HostMemory,
    blocks: Vec<Block>,
    headers: Vec<Vec<u8>>,
    sink: &'s mut Sink<'a, 'b>,
    /// Bytes of each output written so far (its length once the batch is done).
    written: Vec<usize>,
    /// Where the next step's output starts in a packed sink: advanced when a step is
    /// collected (its total known), which happens in step order, before the step before
    /// it finishes.
    next_base: usize,
    /// Where the step being finished starts.
    base: usize,
}

/// A step on the device: its buffers (given back to the lane when it finishes) and what
/// its output is made of.
struct Submitted {
    step: Step,
    input: CudaSlice<u8>,
    launch: Launch,
    results: PinnedBuffer,
}

/// One launch of the compression kernels over blocks already on the device (a pipeline
/// step, or the device-resident form): its metadata uploaded and its buffers taken from
/// the lane. [`Launch::enqueue`] may be repeated (to time the kernels).
pub(crate) struct Launch {
    count: usize,
    format: LayoutFormat,
    leads: Vec<u32>,
    spans: [Range<usize>; 4],
    device: DeviceBuffers,
}

impl Launch {
    /// Uploads the blocks' offsets, lengths (each at most 64 KiB, one after another in the
    /// input) and leads, and takes the buffers for them.
    pub(crate) fn prepare(
        gpu: &Gpu,
        lane: &mut Lane,
        format: LayoutFormat,
        lens: &[usize],
        leads: Vec<u32>,
    ) -> Result<Launch> {
        let count = lens.len();
        let mut block_in = Vec::with_capacity(count);
        let mut at = 0u64;
        for &len in lens {
            block_in.push(at);
            at += len as u64;
        }
        let lens32: Vec<u32> = lens.iter().map(|&l| l as u32).collect();
        let lens64: Vec<u64> = lens.iter().map(|&l| l as u64).collect();
        let mut meta = ArrayPack::new();
        let spans = [
            meta.push_u64(&block_in),
            meta.push_u32(&lens32),
            meta.push_u64(&lens64),
            meta.push_u32(&leads),
        ]
        .map(|id| meta.span(id));
        let device = DeviceBuffers {
            meta: meta.upload(gpu, lane, "gmatch.meta", "gmatch.meta")?,
            scratch: lane.take_device("gmatch.scratch", count * SCRATCH_BYTES)?,
            slots: lane.take_device("gmatch.slots", count * SLOT_BYTES)?,
            sizes: lane.take_device("gmatch.sizes", 4 * count)?,
            crcs: lane.take_device("gmatch.crcs", 4 * count)?,
            records: lane.take_device("gmatch.records", count * RECORD_BYTES)?,
            results: lane.take_device("gmatch.results", 16 + 4 * count)?,
            output: lane.take_device("gmatch.out", max_launch_output(&lens32, &leads))?,
        };
        Ok(Launch {
            count,
            format,
            leads,
            spans,
            device,
        })
    }

    /// Queues the kernels over `input` (the blocks one after another, plus
    /// [`INPUT_PADDING`] bytes).
    pub(crate) fn enqueue(
        &mut self,
        lane: &mut Lane,
        kernels: &CompressKernels,
        input: &CudaSlice<u8>,
    ) -> Result<()> {
        let d = &mut self.device;
        let (status, stream_lens) = d.results.split_at_mut(16);
        enqueue_compress(
            lane.stream(),
            kernels,
            CompressLaunch {
                count: self.count,
                format: self.format,
                input: input.slice(..),
                block_in: d.meta.slice(self.spans[0].clone()),
                block_len: d.meta.slice(self.spans[1].clone()),
                block_len64: d.meta.slice(self.spans[2].clone()),
                lead: d.meta.slice(self.spans[3].clone()),
                scratch: d.scratch.slice_mut(..),
                slots: d.slots.slice_mut(..),
                sizes: d.sizes.slice_mut(..),
                crcs: d.crcs.slice_mut(..),
                records: d.records.slice_mut(..),
                stream_lens,
                status,
                output: d.output.slice_mut(..),
            },
        )?;
        Ok(())
    }

    /// Queues the copy back of the status words and stream lengths.
    fn read_results(&self, gpu: &Gpu, lane: &mut Lane) -> Result<PinnedBuffer> {
        let len = 16 + 4 * self.count;
        let mut results = lane.take_pinned(gpu, "gmatch.results", len)?;
        copy_to_host(
            lane.stream(),
            &self.device.results.slice(..len),
            &mut results.as_mut_slice()[..len],
        )?;
        Ok(results)
    }

    /// Reads back and checks the output's total (the device-resident form).
    pub(crate) fn output_len(&self, gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let results = self.read_results(gpu, lane)?;
        lane.synchronize()?;
        let checked = self.checked_results(&results);
        lane.put_pinned("gmatch.results", results);
        Ok(checked?.1)
    }

    /// After the lane synchronised: the stream length of every block and the output's
    /// total, checked.
    fn checked_results(&self, results: &PinnedBuffer) -> Result<(Vec<u32>, usize)> {
        let results = results.as_slice();
        let word = |k: usize| u64::from_le_bytes(results[8 * k..8 * k + 8].try_into().expect("8"));
        if word(1) != 0 {
            return Err(GpuError::Limit(
                "gmatch: a block's elements did not fit their slot".into(),
            )
            .into());
        }
        let stream_lens: Vec<u32> = results[16..16 + 4 * self.count]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4")))
            .collect();
        let expected: u64 = stream_lens
            .iter()
            .zip(&self.leads)
            .map(|(&s, &l)| u64::from(s) + u64::from(l))
            .sum();
        match usize::try_from(word(0)) {
            Ok(total) if total as u64 == expected && total <= self.device.output.len() => {
                Ok((stream_lens, total))
            }
            _ => Err(GpuError::Limit("gmatch: the layout's total does not add up".into()).into()),
        }
    }
}

struct Collected {
    submitted: Submitted,
    stream_lens: Vec<u32>,
    total: usize,
    /// Where the step's output starts in a packed sink.
    base: usize,
    staged: Option<PinnedBuffer>,
}

/// A step's device buffers (but its input), taken from its lane and given back when it
/// finishes.
pub(crate) struct DeviceBuffers {
    meta: CudaSlice<u8>,
    scratch: CudaSlice<u8>,
    slots: CudaSlice<u8>,
    sizes: CudaSlice<u8>,
    crcs: CudaSlice<u8>,
    records: CudaSlice<u8>,
    /// Two status words (the output's total, the overflow flag), then the stream lengths.
    results: CudaSlice<u8>,
    output: CudaSlice<u8>,
}

impl DeviceBuffers {
    const NAMES: [&'static str; 8] = [
        "gmatch.meta",
        "gmatch.scratch",
        "gmatch.slots",
        "gmatch.sizes",
        "gmatch.crcs",
        "gmatch.records",
        "gmatch.results",
        "gmatch.out",
    ];

    fn give_back(self, lane: &mut Lane) {
        let buffers = [
            self.meta,
            self.scratch,
            self.slots,
            self.sizes,
            self.crcs,
            self.records,
            self.results,
            self.output,
        ];
        for (name, buffer) in Self::NAMES.into_iter().zip(buffers) {
            lane.put_device(name, buffer);
        }
    }
}

impl CompressStages<'_, '_, '_> {
    /// Opens output `i`: in a packed sink it starts at `at` of the step whose output
    /// starts at `self.base`; its header is counted as written (the caller writes it).
    fn open(&mut self, i: usize, at: usize) {
        self.sink.set_start(i, self.base + at);
        self.written[i] = self.headers[i].len();
    }
}

fn output_too_small(i: usize) -> CodecError {
    CodecError::invalid(
        NAME,
        format!("output buffer {i} is smaller than the worst case"),
    )
}

impl Stages for CompressStages<'_, '_, '_> {
    type Step = Step;
    type Submitted = Submitted;
    type Collected = Collected;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, step: Step) -> Result<Submitted> {
        let blocks = &self.blocks[step.blocks.clone()];
        let pieces: Vec<&[u8]> = blocks
            .iter()
            .map(|b| &self.inputs[b.buffer][b.start..b.start + b.len])
            .collect();
        let lens: Vec<usize> = blocks.iter().map(|b| b.len).collect();
        let leads: Vec<u32> = step
            .opening
            .iter()
            .map(|opening| opening.iter().map(|&i| self.headers[i].len() as u32).sum())
            .collect();
        let total: usize = lens.iter().sum();
        let mut input = lane.take_device("gmatch.in", total + INPUT_PADDING)?;
        upload_pieces(
            self.gpu,
            lane,
            &pieces,
            self.memory,
            "gmatch.in",
            &mut input,
        )?;
        let mut launch = Launch::prepare(self.gpu, lane, self.format.into(), &lens, leads)?;
        launch.enqueue(lane, &self.kernels, &input)?;
        let results = launch.read_results(self.gpu, lane)?;
        Ok(Submitted {
            step,
            input,
            launch,
            results,
        })
    }

    fn collect(&mut self, lane: &mut Lane, submitted: Submitted) -> Result<Collected> {
        lane.synchronize()?;
        let (stream_lens, total) = submitted.launch.checked_results(&submitted.results)?;
        let base = self.next_base;
        let trailing: usize = submitted
            .step
            .trailing
            .iter()
            .map(|&i| self.headers[i].len())
            .sum();
        self.next_base += total + trailing;
        let source = submitted.launch.device.output.slice(0..total);
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, "gmatch.staged", total)?;
            copy_to_host(lane.stream(), &source, &mut staging.as_mut_slice()[..total])?;
            Some(staging)
        } else {
            let target = self
                .sink
                .packed_from(base)
                .ok_or_else(|| GpuError::Limit("packed output expected".into()))?;
            if target.len() < total {
                return Err(CodecError::invalid(NAME, "packed output buffer too small"));
            }
            copy_to_host(lane.stream(), &source, &mut target[..total])?;
            None
        };
        Ok(Collected {
            submitted,
            stream_lens,
            total,
            base,
            staged,
        })
    }

    fn finish(&mut self, lane: &mut Lane, collected: Collected) -> Result<()> {
        lane.synchronize()?;
        let Collected {
            submitted,
            stream_lens,
            total,
            base,
            staged,
        } = collected;
        self.base = base;
        let Submitted {
            step,
            input,
            launch,
            results,
        } = submitted;
        // Walk the step's output: the headers opening before each block, then the block's
        // stream; pieces of one output are contiguous. Headers and size-table entries are
        // written after the scatter, whose parallel copies are the first to touch a fresh
        // output's pages (a header written first would fault them in on this thread).
        let mut at = 0usize;
        let mut opened = Vec::new();
        let mut table_entries = Vec::new();
        let mut pieces: Vec<(usize, usize, Range<usize>)> = Vec::new();
        for (k, b) in step.blocks.clone().enumerate() {
            for &i in &step.opening[k] {
                self.open(i, at);
                opened.push(i);
                at += self.headers[i].len();
            }
            let block = self.blocks[b];
            let len = stream_lens[k] as usize;
            if self.format == SnappyFormat::Blocks {
                let entry = blocks::table_entry_at(self.inputs[block.buffer].len(), block.start);
                table_entries.push((block.buffer, entry, len as u32));
            }
            match pieces.last_mut() {
                Some((i, _, range)) if *i == block.buffer && range.end == at => range.end += len,
                _ => pieces.push((block.buffer, self.written[block.buffer], at..at + len)),
            }
            self.written[block.buffer] += len;
            at += len;
        }
        debug_assert_eq!(at, total);
        for &i in &step.trailing {
            self.open(i, at);
            opened.push(i);
            at += self.headers[i].len();
        }
        if let Some(staging) = &staged {
            for (i, offset, range) in &pieces {
                if self.sink.output(*i).len() < offset + range.len() {
                    return Err(output_too_small(*i));
                }
            }
            let bytes = staging.as_slice();
            let scattered: Vec<(usize, usize, &[u8])> = pieces
                .iter()
                .map(|(i, offset, range)| (*i, *offset, &bytes[range.clone()]))
                .collect();
            self.sink.scatter(&scattered);
        }
        for i in opened {
            let header = &self.headers[i];
            let out = self.sink.output(i);
            if out.len() < header.len() {
                return Err(output_too_small(i));
            }
            out[..header.len()].copy_from_slice(header);
        }
        for (i, entry, len) in table_entries {
            self.sink.output(i)[entry..entry + BLOCK_TABLE_ENTRY]
                .copy_from_slice(&len.to_le_bytes());
        }
        if let Some(staging) = staged {
            lane.put_pinned("gmatch.staged", staging);
        }
        lane.put_pinned("gmatch.results", results);
        lane.put_device("gmatch.in", input);
        launch.device.give_back(lane);
        Ok(())
    }
}
