//! The device-resident form: buffers uploaded once and kept on the GPU, compressed or
//! decoded there by the kernels alone, for callers that keep their data in GPU memory
//! and for `colzip bench`'s kernel figures. Every block of every buffer is in one launch.

use std::ops::Range;

use cudarc::driver::CudaSlice;

use super::compress::block_values;
use super::launch::{
    CompressKernels, CompressLaunch, DecodeKernels, DecodeLaunch, decode_error_reason,
    decode_failure, enqueue_compress, enqueue_decompress, slot_bytes,
};
use crate::codec::batch::DeviceJob;
use crate::codec::error::{CodecError, Result};
use crate::codec::intpack::{BLOCK_VALUES, IntpackParams, NAME, read_layout};
use crate::gpu::{ArrayPack, Gpu, Lane, copy_to_device, copy_to_host};

/// Compression of resident buffers.
pub(crate) struct DeviceCompress {
    kernels: CompressKernels,
    blocks: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    spans: [Range<usize>; 2],
    scratch: CudaSlice<u8>,
    sizes: CudaSlice<u8>,
    offsets: CudaSlice<u8>,
    out: CudaSlice<u8>,
}

/// Every buffer's whole values at a multiple of 8 of one device buffer, with its blocks'
/// places and value counts.
fn place_blocks(inputs: &[&[u8]], width: usize) -> (Vec<u8>, Vec<u64>, Vec<u16>) {
    let mut joined = Vec::new();
    let (mut block_in, mut values) = (Vec::new(), Vec::new());
    for input in inputs {
        joined.resize(joined.len().div_ceil(8) * 8, 0);
        let body = input.len() - input.len() % width;
        for k in 0..(body / width).div_ceil(BLOCK_VALUES) {
            block_in.push((joined.len() + k * BLOCK_VALUES * width) as u64);
            values.push(block_values(body, width, k));
        }
        joined.extend_from_slice(&input[..body]);
    }
    (joined, block_in, values)
}

pub(crate) fn device_compress(
    gpu: &Gpu,
    lane: &mut Lane,
    params: &IntpackParams,
    inputs: &[&[u8]],
) -> Result<DeviceCompress> {
    params.validate()?;
    let (joined, block_in, values) = place_blocks(inputs, usize::from(params.width));
    let blocks = block_in.len();
    let mut meta = ArrayPack::new();
    let spans = [meta.push_u64(&block_in), meta.push_u16(&values)].map(|id| meta.span(id));
    let mut input = lane.take_device("resident.in", joined.len() + 8)?;
    copy_to_device(lane.stream(), &joined, &mut input)?;
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    let slot = slot_bytes(params.width);
    let job = DeviceCompress {
        kernels: CompressKernels::new(gpu, params.width)?,
        blocks,
        input,
        meta,
        spans,
        scratch: lane.take_device("resident.scratch", blocks * slot)?,
        sizes: lane.take_device("resident.sizes", 2 * blocks)?,
        offsets: lane.take_device("resident.offsets", 8 * (blocks + 1))?,
        out: lane.take_device("resident.out", blocks * (2 + slot))?,
    };
    lane.synchronize()?;
    Ok(job)
}

impl DeviceJob for DeviceCompress {
    fn enqueue(&mut self, lane: &mut Lane) -> Result<()> {
        enqueue_compress(
            lane.stream(),
            &self.kernels,
            CompressLaunch {
                blocks: self.blocks,
                input: self.input.slice(..),
                block_in: self.meta.slice(self.spans[0].clone()),
                block_values: self.meta.slice(self.spans[1].clone()),
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
        let at = 8 * self.blocks;
        copy_to_host(lane.stream(), &self.offsets.slice(at..at + 8), &mut total)?;
        lane.synchronize()?;
        Ok(2 * self.blocks + u64::from_le_bytes(total) as usize)
    }
}

/// Decoding of resident streams (all of one width).
pub(crate) struct DeviceDecompress {
    kernels: DecodeKernels,
    blocks: usize,
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
    let (mut tables, mut payloads) = (Vec::new(), Vec::new());
    let (mut block_out, mut values) = (Vec::new(), Vec::new());
    let mut width = None;
    let mut at = 0usize;
    for (stream, &len) in streams.iter().zip(lens) {
        let layout = read_layout(stream, Some(len))?;
        if *width.get_or_insert(layout.width) != layout.width {
            return Err(CodecError::invalid(
                NAME,
                "the device-resident form decodes streams of one width",
            ));
        }
        let blocks = layout.offsets.len() - 1;
        tables.extend_from_slice(&stream[layout.blocks_at - 2 * blocks..layout.blocks_at]);
        payloads.extend_from_slice(
            &stream[layout.blocks_at..layout.blocks_at + layout.offsets[blocks]],
        );
        at = at.div_ceil(8) * 8;
        for k in 0..blocks {
            block_out.push((at + k * BLOCK_VALUES * layout.width) as u64);
            values.push(block_values(layout.body, layout.width, k));
        }
        at += layout.body;
    }
    let Some(width) = width else {
        return Err(CodecError::invalid(NAME, "no stream to decode"));
    };
    let blocks = block_out.len();
    let payload_len = payloads.len();
    tables.extend_from_slice(&payloads);
    let mut meta = ArrayPack::new();
    let spans = [meta.push_u64(&block_out), meta.push_u16(&values)].map(|id| meta.span(id));
    let mut input = lane.take_device("resident.in", tables.len())?;
    copy_to_device(lane.stream(), &tables, &mut input)?;
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    let job = DeviceDecompress {
        kernels: DecodeKernels::new(gpu, width as u8)?,
        blocks,
        payload_len,
        input,
        meta,
        spans,
        offsets: lane.take_device("resident.offsets", 8 * (blocks + 1))?,
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
            DecodeLaunch {
                blocks: self.blocks,
                table_and_payload: self.input.slice(..),
                payload_len: self.payload_len,
                offsets: self.offsets.slice_mut(..),
                block_out: self.meta.slice(self.spans[0].clone()),
                block_values: self.meta.slice(self.spans[1].clone()),
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
        if let Some((code, block)) = decode_failure(&status) {
            return Err(CodecError::corrupt(
                NAME,
                format!("block {block}: {} (GPU)", decode_error_reason(code)),
            ));
        }
        Ok(self.out_len)
    }
}
