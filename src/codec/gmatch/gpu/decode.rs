//! Decompression: raw streams in batches (one launch for many buffers, such as the pages
//! of a row group) and framed streams (their compressed chunks are one batch, and their
//! CRCs are computed on the GPU over the decoded bytes). The host reads each stream's
//! preamble and frame headers; the kernel (`kernels/snappy_decompress.cu`) checks every
//! element. Any stream the CPU decoder rejects is an `Err` here too.

use super::super::NAME;
use super::super::decode::raw_elements;
use super::super::frame::{DataChunk, check_crc, scan_chunks};
use crate::Result;
use crate::codec::error::CodecError;
use crate::gpu::gmatch::{GmatchKernels, enqueue_crc};
use crate::gpu::snappy::{
    DecodeBatch, SnappyDecoder, WORD_SLACK, decode_error_reason, enqueue_decode,
};
use crate::gpu::time_on_device;
use crate::gpu::{
    Gpu, LaneGuard, PinnedBuffer, copy_to_device, copy_to_host, gpu_error, parallel_concat,
    parallel_copy,
};

use cudarc::driver::CudaSlice;

/// Decodes Snappy raw streams, each claiming at most `max_output` bytes, in one launch.
pub fn decompress_raw_batch(
    gpu: &Gpu,
    streams: &[&[u8]],
    max_output: usize,
) -> Result<Vec<Vec<u8>>> {
    let mut items = Vec::with_capacity(streams.len());
    for stream in streams {
        items.push(elements_of(stream, max_output)?);
    }
    let mut job = Decoding::upload(gpu, &items, false)?;
    job.enqueue()?;
    let (bytes, _) = job.finish()?;
    let ends = std::mem::take(&mut job.ends);
    job.release();
    let mut start = 0;
    Ok(ends
        .iter()
        .map(|&end| {
            let out = bytes[start..end].to_vec();
            start = end;
            out
        })
        .collect())
}

/// Decodes one Snappy raw stream claiming at most `max_output` bytes.
pub fn decompress_raw(gpu: &Gpu, stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    let item = elements_of(stream, max_output)?;
    let mut job = Decoding::upload(gpu, &[item], false)?;
    job.enqueue()?;
    let (bytes, _) = job.finish()?;
    job.release();
    Ok(bytes)
}

/// Decodes a Snappy framed stream whose total output is at most `max_output` bytes: its
/// compressed chunks in one launch, their CRCs on the GPU, stored chunks' on the host.
pub fn decompress_framed(gpu: &Gpu, stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    Ok(decode_framed(gpu, stream, max_output, None)?.1)
}

/// [`decompress_framed`], with the kernels timed over `runs` (median, seconds) when given.
fn decode_framed(
    gpu: &Gpu,
    stream: &[u8],
    max_output: usize,
    runs: Option<usize>,
) -> Result<(f64, Vec<u8>)> {
    let chunks = scan_chunks(stream, max_output)?;
    let items = framed_items(&chunks)?;
    let mut job = Decoding::upload(gpu, &items, true)?;
    let seconds = match runs {
        Some(runs) => {
            let cuda_stream = job.lane.stream().clone();
            time_on_device(gpu, &cuda_stream, runs, || job.enqueue())?
        }
        None => {
            job.enqueue()?;
            0.0
        }
    };
    let (decoded, crcs) = job.finish()?;
    let ends = std::mem::take(&mut job.ends);
    job.release();
    let total: usize = chunks.iter().map(|c| c.out_len).sum();
    let mut out = Vec::with_capacity(total);
    let mut next = 0;
    for chunk in &chunks {
        if chunk.compressed {
            let start = if next == 0 { 0 } else { ends[next - 1] };
            if crcs[next] != chunk.stored_crc {
                return Err(CodecError::Checksum {
                    codec: NAME,
                    stored: chunk.stored_crc,
                    computed: crcs[next],
                }
                .into());
            }
            out.extend_from_slice(&decoded[start..ends[next]]);
            next += 1;
        } else {
            check_crc(chunk, chunk.body)?;
            out.extend_from_slice(chunk.body);
        }
    }
    Ok((seconds, out))
}

/// Kernel time of decoding raw streams (median of `runs`, seconds), with the decoded
/// buffers concatenated (for the caller to check).
pub fn time_raw_batch(gpu: &Gpu, streams: &[&[u8]], runs: usize) -> Result<(f64, Vec<u8>)> {
    let items = streams
        .iter()
        .map(|s| elements_of(s, usize::MAX))
        .collect::<Result<Vec<_>>>()?;
    let mut job = Decoding::upload(gpu, &items, false)?;
    let stream = job.lane.stream().clone();
    let seconds = time_on_device(gpu, &stream, runs, || job.enqueue())?;
    let (bytes, _) = job.finish()?;
    job.release();
    Ok((seconds, bytes))
}

/// Kernel time of decoding a framed stream (its compressed chunks and their CRCs; median
/// of `runs`, seconds), with the output.
pub fn time_framed(gpu: &Gpu, stream: &[u8], runs: usize) -> Result<(f64, Vec<u8>)> {
    decode_framed(gpu, stream, usize::MAX, Some(runs))
}

fn framed_items<'a>(chunks: &[DataChunk<'a>]) -> Result<Vec<(&'a [u8], usize)>> {
    chunks
        .iter()
        .filter(|c| c.compressed)
        .map(|c| elements_of(c.body, c.out_len))
        .collect()
}

/// A raw stream's elements and claimed length, checked as the CPU decoder checks them.
fn elements_of(stream: &[u8], max_output: usize) -> Result<(&[u8], usize)> {
    Ok(raw_elements(stream, max_output)?)
}

/// A batch of `(elements, claimed length)` on the device, ready to decode (again, for
/// timing): the outputs are concatenated, `ends` holds the end of each.
struct Decoding<'g> {
    lane: LaneGuard<'g>,
    decoder: SnappyDecoder,
    crc: Option<GmatchKernels>,
    count: usize,
    out_total: usize,
    ends: Vec<usize>,
    staging: PinnedBuffer,
    input: CudaSlice<u8>,
    output: CudaSlice<u8>,
    in_offsets: CudaSlice<u64>,
    in_lens: CudaSlice<u64>,
    out_offsets: CudaSlice<u64>,
    out_lens: CudaSlice<u64>,
    status: CudaSlice<u32>,
    crcs: CudaSlice<u32>,
}

impl<'g> Decoding<'g> {
    fn upload(gpu: &'g Gpu, items: &[(&[u8], usize)], crc: bool) -> Result<Self> {
        let mut in_offsets = Vec::with_capacity(items.len());
        let mut in_lens = Vec::with_capacity(items.len());
        let mut out_offsets = Vec::with_capacity(items.len());
        let mut out_lens = Vec::with_capacity(items.len());
        let (mut in_total, mut out_total) = (0usize, 0usize);
        for (elements, len) in items {
            in_offsets.push(in_total as u64);
            in_lens.push(elements.len() as u64);
            out_offsets.push(out_total as u64);
            out_lens.push(*len as u64);
            in_total += elements.len();
            out_total += len;
        }
        let ends = out_offsets
            .iter()
            .zip(&out_lens)
            .map(|(o, l)| (o + l) as usize)
            .collect();
        let mut lane = gpu.lane()?;
        let stream = lane.stream().clone();
        let mut staging = lane.take_pinned(gpu, "snappy.io", in_total.max(out_total))?;
        let pieces: Vec<&[u8]> = items.iter().map(|(elements, _)| *elements).collect();
        parallel_concat(&mut staging.as_mut_slice()[..in_total], &pieces);
        // (The kernel reads whole aligned words around a buffer's bytes.)
        let mut input = lane.take_device("snappy.in", in_total + WORD_SLACK)?;
        copy_to_device(&stream, &staging.as_slice()[..in_total], &mut input, 0)?;
        let output = lane.take_device("snappy.out", out_total + WORD_SLACK)?;
        let upload = |v: &[u64]| {
            stream
                .clone_htod(v)
                .map_err(|e| gpu_error("copy to device", e))
        };
        let (d_in_offsets, d_in_lens) = (upload(&in_offsets)?, upload(&in_lens)?);
        let (d_out_offsets, d_out_lens) = (upload(&out_offsets)?, upload(&out_lens)?);
        let zeros = |n: usize| {
            stream
                .alloc_zeros::<u32>(n.max(1))
                .map_err(|e| gpu_error("device allocation", e))
        };
        Ok(Decoding {
            decoder: SnappyDecoder::new(gpu)?,
            crc: if crc {
                Some(GmatchKernels::new(gpu)?)
            } else {
                None
            },
            count: items.len(),
            out_total,
            ends,
            staging,
            input,
            output,
            in_offsets: d_in_offsets,
            in_lens: d_in_lens,
            out_offsets: d_out_offsets,
            out_lens: d_out_lens,
            status: zeros(items.len())?,
            crcs: zeros(items.len())?,
            lane,
        })
    }

    /// Queues the decoder (and the CRCs of the outputs).
    fn enqueue(&mut self) -> Result<()> {
        let stream = self.lane.stream().clone();
        enqueue_decode(
            &stream,
            &self.decoder,
            DecodeBatch {
                input: &self.input,
                in_offsets: &self.in_offsets,
                in_lens: &self.in_lens,
                output: &mut self.output,
                out_offsets: &self.out_offsets,
                out_lens: &self.out_lens,
                status: &mut self.status,
                count: self.count as u64,
            },
        )?;
        if let Some(kernels) = &self.crc {
            enqueue_crc(
                &stream,
                kernels,
                &self.output,
                &self.out_offsets,
                &self.out_lens,
                self.count as u64,
                &mut self.crcs,
            )?;
        }
        Ok(())
    }

    /// Waits, checks every status and returns the outputs and CRCs.
    fn finish(&mut self) -> Result<(Vec<u8>, Vec<u32>)> {
        let stream = self.lane.stream().clone();
        let codes = stream
            .clone_dtoh(&self.status)
            .map_err(|e| gpu_error("copy to host", e))?;
        let crcs = stream
            .clone_dtoh(&self.crcs)
            .map_err(|e| gpu_error("copy to host", e))?;
        self.lane.synchronize()?;
        if let Some((i, &code)) = codes[..self.count]
            .iter()
            .enumerate()
            .find(|(_, c)| **c != 0)
        {
            let what = if self.count > 1 {
                format!("buffer {i}: ")
            } else {
                String::new()
            };
            return Err(CodecError::corrupt(
                NAME,
                format!("{what}{} (GPU)", decode_error_reason(code)),
            )
            .into());
        }
        let n = self.out_total;
        copy_to_host(
            &stream,
            &self.output,
            0..n,
            &mut self.staging.as_mut_slice()[..n],
        )?;
        self.lane.synchronize()?;
        let mut bytes = vec![0u8; n];
        parallel_copy(&mut bytes, &self.staging.as_slice()[..n]);
        Ok((bytes, crcs))
    }

    /// Gives the reusable buffers back to the lane for the next call.
    fn release(self) {
        let Decoding {
            mut lane,
            staging,
            input,
            output,
            ..
        } = self;
        lane.put_pinned("snappy.io", staging);
        lane.put_device("snappy.in", input);
        lane.put_device("snappy.out", output);
    }
}
