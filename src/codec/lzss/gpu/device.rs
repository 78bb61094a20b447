//! The device-resident form: buffers uploaded once and kept on the GPU, compressed or
//! decoded there by the kernels alone, for callers that keep their data in GPU memory
//! and for `colzip bench`'s kernel figures. Every chunk of every buffer is in one launch.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::compress::shape;
use super::launch::{
    CompressKernels, CompressLaunch, DecodeKernels, DecodeLaunch, decode_error_reason,
    decode_failure, enqueue_compress, enqueue_decompress,
};
use crate::codec::batch::DeviceJob;
use crate::codec::error::{CodecError, Result};
use crate::codec::lzss::{LzssParams, NAME, read_layout};
use crate::gpu::{ArrayPack, Gpu, Lane, copy_to_device, copy_to_host};

/// Compression of resident buffers.
pub(crate) struct DeviceCompress {
    kernels: CompressKernels,
    params: LzssParams,
    chunks: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    spans: [Range<usize>; 2],
    scratch: CudaSlice<u8>,
    sizes: CudaSlice<u8>,
    offsets: CudaSlice<u8>,
    out: CudaSlice<u8>,
}

/// Every buffer's body at a multiple of 8 of one device buffer, with its chunks' places
/// and lengths.
fn place_chunks(inputs: &[&[u8]], params: &LzssParams) -> (Vec<u8>, Vec<u64>, Vec<u16>) {
    let (s, c) = (usize::from(params.symbol_width), params.chunk_size as usize);
    let mut joined = Vec::new();
    let (mut chunk_in, mut chunk_lens) = (Vec::new(), Vec::new());
    for input in inputs {
        joined.resize(joined.len().div_ceil(8) * 8, 0);
        let body = input.len() - input.len() % s;
        for start in (0..body).step_by(c) {
            chunk_in.push((joined.len() + start) as u64);
            chunk_lens.push((body - start).min(c) as u16);
        }
        joined.extend_from_slice(&input[..body]);
    }
    (joined, chunk_in, chunk_lens)
}

pub(crate) fn device_compress(
    gpu: &Gpu,
    lane: &mut Lane,
    params: &LzssParams,
    inputs: &[&[u8]],
) -> Result<DeviceCompress> {
    params.validate()?;
    let (joined, chunk_in, chunk_lens) = place_chunks(inputs, params);
    let chunks = chunk_in.len();
    let mut meta = ArrayPack::new();
    let spans = [meta.push_u64(&chunk_in), meta.push_u16(&chunk_lens)].map(|id| meta.span(id));
    let mut input = lane.take_device("resident.in", joined.len() + 8)?;
    copy_to_device(lane.stream(), &joined, &mut input)?;
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    let c = params.chunk_size as usize;
    let job = DeviceCompress {
        kernels: CompressKernels::new(gpu, &shape(params))?,
        params: *params,
        chunks,
        input,
        meta,
        spans,
        scratch: lane.take_device("resident.scratch", chunks * c)?,
        sizes: lane.take_device("resident.sizes", 2 * chunks)?,
        offsets: lane.take_device("resident.offsets", 8 * (chunks + 1))?,
        out: lane.take_device("resident.out", 2 * chunks + joined.len())?,
    };
    lane.synchronize()?;
    Ok(job)
}

impl DeviceJob for DeviceCompress {
    fn enqueue(&mut self, lane: &mut Lane) -> Result<()> {
        enqueue_compress(
            lane.stream(),
            &self.kernels,
            &shape(&self.params),
            CompressLaunch {
                chunks: self.chunks,
                input: self.input.slice(..),
                chunk_in: self.meta.slice(self.spans[0].clone()),
                chunk_lens: self.meta.slice(self.spans[1].clone()),
                scratch: self.scratch.slice_mut(..),
                sizes: self.sizes.slice_mut(..),
                offsets: self.offsets.slice_mut(..),
                out: self.out.slice_mut(..),
            },
        )?;
        Ok(())
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let mut total = [0u8; 8];
        let at = 8 * self.chunks;
        copy_to_host(lane.stream(), &self.offsets.slice(at..at + 8), &mut total)?;
        lane.synchronize()?;
        Ok(2 * self.chunks + u64::from_le_bytes(total) as usize)
    }
}

/// Decoding of resident streams (all of one parameter set).
pub(crate) struct DeviceDecompress {
    kernels: DecodeKernels,
    params: LzssParams,
    chunks: usize,
    payload_len: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    spans: [Range<usize>; 2],
    offsets: CudaSlice<u8>,
    out: CudaSlice<u8>,
    error: CudaSlice<u8>,
    out_len: usize,
}

pub(crate) fn device_decompress(
    gpu: &Gpu,
    lane: &mut Lane,
    streams: &[&[u8]],
    lens: &[usize],
) -> Result<DeviceDecompress> {
    let mut tables = Vec::new();
    let mut payloads = Vec::new();
    let (mut chunk_out, mut chunk_lens) = (Vec::new(), Vec::new());
    let mut params = None;
    let mut at = 0usize;
    for (stream, &len) in streams.iter().zip(lens) {
        let layout = read_layout(stream, len)?;
        if *params.get_or_insert(layout.params) != layout.params {
            return Err(CodecError::invalid(
                NAME,
                "the device-resident form decodes streams of one parameter set",
            ));
        }
        let c = layout.params.chunk_size as usize;
        let chunks = layout.body.div_ceil(c);
        tables.extend_from_slice(&stream[layout.table_at..layout.table_at + 2 * chunks]);
        payloads.extend_from_slice(
            &stream[layout.payload_at..layout.payload_at + layout.offsets[chunks]],
        );
        at = at.div_ceil(8) * 8;
        for k in 0..chunks {
            chunk_out.push((at + k * c) as u64);
            chunk_lens.push((layout.body - k * c).min(c) as u16);
        }
        at += layout.body;
    }
    let Some(params) = params else {
        return Err(CodecError::invalid(NAME, "no stream to decode"));
    };
    let chunks = chunk_out.len();
    let payload_len = payloads.len();
    tables.extend_from_slice(&payloads);
    let mut meta = ArrayPack::new();
    let spans = [meta.push_u64(&chunk_out), meta.push_u16(&chunk_lens)].map(|id| meta.span(id));
    let mut input = lane.take_device("resident.in", tables.len())?;
    copy_to_device(lane.stream(), &tables, &mut input)?;
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    let job = DeviceDecompress {
        kernels: DecodeKernels::new(gpu, &shape(&params))?,
        params,
        chunks,
        payload_len,
        input,
        meta,
        spans,
        offsets: lane.take_device("resident.offsets", 8 * (chunks + 1))?,
        out: lane.take_device("resident.out", at.max(1))?,
        error: lane.take_device("resident.error", 8)?,
        out_len: at,
    };
    lane.synchronize()?;
    Ok(job)
}

impl DeviceJob for DeviceDecompress {
    fn enqueue(&mut self, lane: &mut Lane) -> Result<()> {
        enqueue_decompress(
            lane.stream(),
            &self.kernels,
            &shape(&self.params),
            DecodeLaunch {
                chunks: self.chunks,
                table_and_payload: self.input.slice(..),
                payload_len: self.payload_len,
                offsets: self.offsets.slice_mut(..),
                chunk_out: self.meta.slice(self.spans[0].clone()),
                chunk_lens: self.meta.slice(self.spans[1].clone()),
                out: self.out.slice_mut(..),
                error: self.error.slice_mut(..8),
            },
        )?;
        Ok(())
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let mut status = [0u8; 8];
        copy_to_host(lane.stream(), &self.error.slice(..8), &mut status)?;
        lane.synchronize()?;
        if let Some((code, chunk)) = decode_failure(&status) {
            return Err(CodecError::corrupt(
                NAME,
                format!("chunk {chunk}: {} (GPU)", decode_error_reason(code)),
            ));
        }
        Ok(self.out_len)
    }
}
