//! Snappy decompression on the GPU, for any valid stream (G-match's, the `snap`
//! crate's, other writers'): raw streams in batches (one launch for many buffers, such
//! as the pages of a row group) and framed streams (their chunks are one batch). The
//! host reads each stream's preamble and frame headers; the kernel
//! (`kernels/snappy_decompress.cu`) checks every element; the host checks each framed
//! chunk's CRC. Any stream the CPU decoder rejects is an `Err` here too.
//!
//! ```no_run
//! use colzip::codec::gmatch;
//! use colzip::gpu::Gpu;
//! let gpu = Gpu::get()?;
//! let pages: Vec<Vec<u8>> = (0..64u8).map(|i| vec![i; 100_000]).collect();
//! let streams: Vec<Vec<u8>> = pages.iter().map(|p| gmatch::compress_raw(p)).collect::<Result<_, _>>()?;
//! let refs: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
//! let decoded = gmatch::gpu::decompress_raw_batch(gpu, &refs, usize::MAX)?;
//! assert_eq!(decoded, pages);
//! # Ok::<(), colzip::Error>(())
//! ```

use super::NAME;
use super::decode::check_producible;
use super::frame::{check_crc, scan_chunks};
use crate::codec::error::CodecError;
use crate::codec::varint;
use crate::gpu::snappy::{DecodeBatch, SnappyDecoder, decode_error_reason, enqueue_decode};
use crate::gpu::{Gpu, copy_to_device, copy_to_host, parallel_copy};
use crate::{Error, Result};

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
    let (bytes, ends) = decode_batch(gpu, &items)?;
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
    Ok(decode_batch(gpu, &[item])?.0)
}

/// Decodes a Snappy framed stream whose total output is at most `max_output` bytes:
/// its compressed chunks in one launch, then every chunk's CRC on the host.
pub fn decompress_framed(gpu: &Gpu, stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    let chunks = scan_chunks(stream, max_output)?;
    let mut items = Vec::new();
    for chunk in chunks.iter().filter(|c| c.compressed) {
        items.push(elements_of(chunk.body, chunk.out_len)?);
    }
    let (decoded, ends) = decode_batch(gpu, &items)?;
    let total: usize = chunks.iter().map(|c| c.out_len).sum();
    let mut out = Vec::with_capacity(total);
    let mut next = 0;
    for chunk in &chunks {
        let at = out.len();
        if chunk.compressed {
            let start = if next == 0 { 0 } else { ends[next - 1] };
            out.extend_from_slice(&decoded[start..ends[next]]);
            next += 1;
        } else {
            out.extend_from_slice(chunk.body);
        }
        check_crc(chunk, &out[at..])?;
    }
    Ok(out)
}

/// A raw stream's elements and claimed length, checked as the CPU decoder checks them
/// before decoding.
fn elements_of(stream: &[u8], max_output: usize) -> Result<(&[u8], usize)> {
    let (len, header) = varint::read_u32(stream, NAME)?;
    if u64::from(len) > max_output as u64 {
        return Err(CodecError::TooLarge {
            codec: NAME,
            claimed: u64::from(len),
            limit: max_output as u64,
        }
        .into());
    }
    let body = &stream[header..];
    check_producible(u64::from(len), body.len())?;
    Ok((body, len as usize))
}

/// Decodes `(elements, claimed length)` pairs; returns the outputs concatenated and the
/// end of each.
fn decode_batch(gpu: &Gpu, items: &[(&[u8], usize)]) -> Result<(Vec<u8>, Vec<usize>)> {
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
    let ends: Vec<usize> = out_offsets
        .iter()
        .zip(&out_lens)
        .map(|(o, l)| (o + l) as usize)
        .collect();
    if items.is_empty() || out_total == 0 && in_total == 0 {
        return Ok((Vec::new(), ends));
    }
    let decoder = SnappyDecoder::new(gpu)?;
    let mut lane = gpu.lane()?;
    let stream = lane.stream().clone();
    let gpu_err = |what: &str| {
        let what = what.to_string();
        move |e: cudarc::driver::DriverError| Error::Gpu(format!("{what}: {e}"))
    };

    let mut staging = lane.take_pinned(gpu, "snappy.io", in_total.max(out_total))?;
    for ((elements, _), &at) in items.iter().zip(&in_offsets) {
        let at = at as usize;
        parallel_copy(
            &mut staging.as_mut_slice()[at..at + elements.len()],
            elements,
        );
    }
    let mut input = lane.take_device("snappy.in", in_total)?;
    copy_to_device(&stream, &staging.as_slice()[..in_total], &mut input, 0)?;
    let mut output = lane.take_device("snappy.out", out_total)?;
    let upload = |v: &[u64]| stream.clone_htod(v).map_err(gpu_err("copy to device"));
    let (d_in_offsets, d_in_lens) = (upload(&in_offsets)?, upload(&in_lens)?);
    let (d_out_offsets, d_out_lens) = (upload(&out_offsets)?, upload(&out_lens)?);
    let mut status = stream
        .alloc_zeros::<u32>(items.len())
        .map_err(gpu_err("device allocation"))?;
    enqueue_decode(
        &stream,
        &decoder,
        DecodeBatch {
            input: &input,
            in_offsets: &d_in_offsets,
            in_lens: &d_in_lens,
            output: &mut output,
            out_offsets: &d_out_offsets,
            out_lens: &d_out_lens,
            status: &mut status,
            count: items.len() as u64,
        },
    )?;
    let codes = stream
        .clone_dtoh(&status)
        .map_err(gpu_err("copy to host"))?;
    lane.synchronize()?;
    if let Some((i, &code)) = codes.iter().enumerate().find(|(_, c)| **c != 0) {
        let what = if items.len() > 1 {
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
    copy_to_host(
        &stream,
        &output,
        0..out_total,
        &mut staging.as_mut_slice()[..out_total],
    )?;
    lane.synchronize()?;
    let mut bytes = vec![0u8; out_total];
    parallel_copy(&mut bytes, &staging.as_slice()[..out_total]);
    lane.put_pinned("snappy.io", staging);
    lane.put_device("snappy.in", input);
    lane.put_device("snappy.out", output);
    Ok((bytes, ends))
}
