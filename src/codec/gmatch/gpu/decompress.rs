//! Decompression on the GPU of a batch of streams in any of gmatch's formats (raw
//! Snappy streams of any writer, framed streams, blocks), through the step pipeline.
//! The host checks each stream's structure as the CPU decoder does (preambles, frame
//! headers, block tables) and cuts the batch into units — a raw stream, a block, a framed
//! chunk — whose outputs are known; the kernel (`kernels/snappy_decompress.cu`) decodes a
//! step's units, one warp each, and checks every element. Framed chunks' CRCs are
//! computed on the GPU; stored chunks are copied and checked on the host. Any stream the
//! CPU decoder rejects is an `Err` here too.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::super::NAME;
use super::super::blocks::{block_elements, blocks_layout};
use super::super::decode::raw_elements;
use super::super::frame::{masked_crc32c, scan_chunks};
use super::launch::{
    DecodeKernels, DecodeLaunch, DecodeLayout, SnappyDecodeError, WORD_SLACK, enqueue_decode,
};
use crate::codec::SnappyFormat;
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::gpu::{
    Gpu, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline, upload_pieces,
};

/// Where a unit's output comes from.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    /// Snappy elements, decoded on the GPU.
    Elements(&'a [u8]),
    /// A stored framed chunk's bytes, copied by the host.
    Stored(&'a [u8]),
}

/// A piece of one output: `out_len` bytes at `out_at` of output `buffer`, with the
/// masked CRC-32C a framed chunk stores.
#[derive(Clone, Copy)]
pub(super) struct Unit<'a> {
    pub buffer: usize,
    pub out_at: usize,
    pub out_len: usize,
    pub source: Source<'a>,
    pub crc: Option<u32>,
}

/// The units of every stream, checked against the expected output lengths.
pub(super) fn units<'a>(
    format: SnappyFormat,
    inputs: &[&'a [u8]],
    lens: &[usize],
) -> Result<Vec<Unit<'a>>> {
    let mut units = Vec::new();
    for (buffer, (&stream, &len)) in inputs.iter().zip(lens).enumerate() {
        match format {
            SnappyFormat::Raw => {
                let (elements, claimed) = raw_elements(stream, len)?;
                if claimed != len {
                    return Err(CodecError::corrupt(
                        NAME,
                        format!("stream claims {claimed} bytes, expected {len}"),
                    ));
                }
                if len > 0 {
                    units.push(Unit {
                        buffer,
                        out_at: 0,
                        out_len: len,
                        source: Source::Elements(elements),
                        crc: None,
                    });
                }
            }
            SnappyFormat::Blocks => {
                let layout = blocks_layout(stream, len)?;
                for index in 0..layout.blocks.len() {
                    let out_at = index * super::super::BLOCK_SIZE;
                    units.push(Unit {
                        buffer,
                        out_at,
                        out_len: (len - out_at).min(super::super::BLOCK_SIZE),
                        source: Source::Elements(block_elements(&layout, index)?),
                        crc: None,
                    });
                }
            }
            SnappyFormat::Framed => {
                let mut out_at = 0;
                for chunk in scan_chunks(stream, len)? {
                    let source = if chunk.compressed {
                        let (elements, claimed) = raw_elements(chunk.body, chunk.out_len)?;
                        debug_assert_eq!(claimed, chunk.out_len);
                        Source::Elements(elements)
                    } else {
                        Source::Stored(chunk.body)
                    };
                    units.push(Unit {
                        buffer,
                        out_at,
                        out_len: chunk.out_len,
                        source,
                        crc: Some(chunk.stored_crc),
                    });
                    out_at += chunk.out_len;
                }
                if out_at != len {
                    return Err(CodecError::corrupt(
                        NAME,
                        format!("framed stream holds {out_at} bytes, expected {len}"),
                    ));
                }
            }
        }
    }
    Ok(units)
}

/// Decodes `inputs` (each of `format`, each decoding to exactly `lens[i]` bytes) into
/// `sink`.
pub(crate) fn decompress(
    gpu: &Gpu,
    format: SnappyFormat,
    inputs: &[&[u8]],
    lens: &[usize],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let units = units(format, inputs, lens)?;
    sink.expect_outputs(lens, NAME)?;
    let steps = plan_steps(&units, gpu.step_bytes());
    let mut stages = DecodeStages {
        gpu,
        kernels: DecodeKernels::new(gpu)?,
        framed: format == SnappyFormat::Framed,
        inputs,
        units,
        memory,
        sink,
    };
    run_pipeline(gpu, steps, &mut stages)
}

/// Consecutive units of about [`Gpu::step_bytes`] of output each.
fn plan_steps(units: &[Unit<'_>], limit: usize) -> Vec<Range<usize>> {
    let mut steps: Vec<Range<usize>> = Vec::new();
    let mut bytes = 0;
    for (u, unit) in units.iter().enumerate() {
        match steps.last_mut() {
            Some(step) if bytes + unit.out_len <= limit => step.end = u + 1,
            _ => {
                steps.push(u..u + 1);
                bytes = 0;
            }
        }
        bytes += unit.out_len;
    }
    steps
}

struct DecodeStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: DecodeKernels,
    framed: bool,
    inputs: &'s [&'s [u8]],
    units: Vec<Unit<'s>>,
    memory: HostMemory,
    sink: &'s mut Sink<'a, 'b>,
}

struct Submitted {
    units: Range<usize>,
    /// The decoded units (indices into the step) in launch order.
    decoded: Vec<usize>,
    out_len: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    output: CudaSlice<u8>,
    results: CudaSlice<u8>,
    /// Statuses then CRCs of the decoded units, read back.
    host_results: PinnedBuffer,
    staged: Option<PinnedBuffer>,
}

impl Stages for DecodeStages<'_, '_, '_> {
    type Step = Range<usize>;
    type Submitted = Submitted;
    type Collected = Submitted;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, step: Range<usize>) -> Result<Submitted> {
        let all = &self.units;
        let units = &all[step.clone()];
        // What goes up: per stream, the span covering this step's units, from the stream's
        // start when its first unit is here and to its end when its last one is (whole
        // streams, adjacent in memory, then cross in one copy from pinned memory).
        let mut pieces: Vec<&[u8]> = Vec::new();
        let mut uploaded = 0usize;
        let mut decoded = Vec::new();
        let mut layout = DecodeLayout::default();
        let mut out_at = 0u64;
        let mut k = 0;
        while k < units.len() {
            let buffer = units[k].buffer;
            let mut end = k;
            while end < units.len() && units[end].buffer == buffer {
                end += 1;
            }
            let stream = self.inputs[buffer];
            let base = stream.as_ptr() as usize;
            let place = |unit: &Unit<'_>| -> Option<(usize, usize)> {
                match unit.source {
                    Source::Elements(e) => Some((e.as_ptr() as usize - base, e.len())),
                    Source::Stored(_) => None,
                }
            };
            let first_of_stream = step.start + k == 0 || all[step.start + k - 1].buffer != buffer;
            let last_of_stream =
                step.start + end == all.len() || all[step.start + end].buffer != buffer;
            let placed: Vec<Option<(usize, usize)>> = units[k..end].iter().map(place).collect();
            let from = if first_of_stream {
                0
            } else {
                placed.iter().flatten().map(|p| p.0).min().unwrap_or(0)
            };
            let to = if last_of_stream {
                stream.len()
            } else {
                placed
                    .iter()
                    .flatten()
                    .map(|p| p.0 + p.1)
                    .max()
                    .unwrap_or(from)
            };
            let to = to.max(from);
            pieces.push(&stream[from..to]);
            for (j, unit) in units[k..end].iter().enumerate() {
                if let Some((at, len)) = placed[j] {
                    decoded.push(k + j);
                    let input = uploaded + at - from;
                    let output = out_at as usize;
                    layout.push(input..input + len, output..output + unit.out_len);
                }
                out_at += unit.out_len as u64;
            }
            uploaded += to - from;
            k = end;
        }
        let in_at = uploaded as u64;
        let (in_len, out_len) = (in_at as usize, out_at as usize);
        let count = decoded.len();
        let (meta, spans) = layout.pack();
        let mut input = lane.take_device("snappy.in", in_len + WORD_SLACK)?;
        upload_pieces(
            self.gpu,
            lane,
            &pieces,
            self.memory,
            "snappy.in",
            &mut input,
        )?;
        let meta_device = meta.upload(self.gpu, lane, "snappy.meta", "snappy.meta")?;
        let mut output = lane.take_device("snappy.out", out_len + WORD_SLACK)?;
        let mut results = lane.take_device("snappy.results", 8 * count)?;
        {
            let (status, crcs) = results.split_at_mut(4 * count);
            enqueue_decode(
                lane.stream(),
                &self.kernels,
                DecodeLaunch {
                    count,
                    input: input.slice(..),
                    in_offsets: meta_device.slice(spans[0].clone()),
                    in_lens: meta_device.slice(spans[1].clone()),
                    output: output.slice_mut(..),
                    out_offsets: meta_device.slice(spans[2].clone()),
                    out_lens: meta_device.slice(spans[3].clone()),
                    status,
                    crcs: self.framed.then_some(crcs),
                },
            )?;
        }
        let mut host_results = lane.take_pinned(self.gpu, "snappy.results", 8 * count)?;
        copy_to_host(
            lane.stream(),
            &results.slice(..8 * count),
            &mut host_results.as_mut_slice()[..8 * count],
        )?;
        let source = output.slice(..out_len);
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, "snappy.staged", out_len)?;
            copy_to_host(
                lane.stream(),
                &source,
                &mut staging.as_mut_slice()[..out_len],
            )?;
            Some(staging)
        } else {
            let mut pieces = Vec::with_capacity(units.len());
            let mut at = 0;
            for unit in units {
                // A stored unit's room receives garbage, overwritten with its bytes in
                // `finish`.
                pieces.push((unit.buffer, unit.out_at, at..at + unit.out_len));
                at += unit.out_len;
            }
            self.sink
                .copy_from_device(lane.stream(), &output, &pieces, NAME)?;
            None
        };
        Ok(Submitted {
            units: step,
            decoded,
            out_len,
            input,
            meta: meta_device,
            output,
            results,
            host_results,
            staged,
        })
    }

    fn collect(&mut self, _lane: &mut Lane, submitted: Submitted) -> Result<Submitted> {
        Ok(submitted)
    }

    fn finish(&mut self, lane: &mut Lane, s: Submitted) -> Result<()> {
        lane.synchronize()?;
        let count = s.decoded.len();
        let results = &s.host_results.as_slice()[..8 * count];
        let word = |k: usize| u32::from_le_bytes(results[4 * k..4 * k + 4].try_into().expect("4"));
        let units = &self.units[s.units.clone()];
        for (j, &k) in s.decoded.iter().enumerate() {
            let code = word(j);
            if code != 0 {
                let reason = SnappyDecodeError::from_code(code)
                    .map_or("unknown decoder error", SnappyDecodeError::reason);
                return Err(CodecError::corrupt(
                    NAME,
                    format!("buffer {}: {reason} (GPU)", units[k].buffer),
                ));
            }
            if let Some(stored) = units[k].crc {
                let computed = word(count + j);
                if computed != stored {
                    return Err(CodecError::Checksum {
                        codec: NAME,
                        stored,
                        computed,
                    });
                }
            }
        }
        // Stored chunks: checked and copied by the host (after the step's bytes landed,
        // which left their room untouched... or garbage, overwritten here).
        for unit in units {
            if let Source::Stored(bytes) = unit.source {
                let computed = masked_crc32c(bytes);
                let stored = unit.crc.unwrap_or(computed);
                if computed != stored {
                    return Err(CodecError::Checksum {
                        codec: NAME,
                        stored,
                        computed,
                    });
                }
                self.sink.output(unit.buffer)[unit.out_at..unit.out_at + unit.out_len]
                    .copy_from_slice(bytes);
            }
        }
        if let Some(staging) = &s.staged {
            let bytes = staging.as_slice();
            let mut pieces = Vec::with_capacity(units.len());
            let mut at = 0;
            for unit in units {
                if let Source::Elements(_) = unit.source {
                    pieces.push((unit.buffer, unit.out_at, &bytes[at..at + unit.out_len]));
                }
                at += unit.out_len;
            }
            debug_assert_eq!(at, s.out_len);
            self.sink.scatter(&pieces);
        }
        if let Some(staging) = s.staged {
            lane.put_pinned("snappy.staged", staging);
        }
        lane.put_pinned("snappy.results", s.host_results);
        lane.put_device("snappy.in", s.input);
        lane.put_device("snappy.meta", s.meta);
        lane.put_device("snappy.out", s.output);
        lane.put_device("snappy.results", s.results);
        Ok(())
    }
}
