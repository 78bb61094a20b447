//! The device-resident form ([`crate::codec::blocks_gpu::device`]): buffers uploaded once
//! and kept on the GPU, compressed or decoded there by the kernels alone, for callers that
//! keep their data in GPU memory and for `colzip bench`'s kernel figures. Every block of
//! every buffer is in one launch.

use super::launch::IntpackShape;
use crate::codec::blocks_gpu;
use crate::codec::blocks_gpu::device::{DeviceCompress, DeviceDecompress};
use crate::codec::error::Result;
use crate::codec::intpack::{IntpackParams, read_layout};
use crate::gpu::{Gpu, Lane};

/// Compression of resident buffers.
pub(crate) fn device_compress(
    gpu: &Gpu,
    lane: &mut Lane,
    params: &IntpackParams,
    inputs: &[&[u8]],
) -> Result<DeviceCompress<IntpackShape>> {
    params.validate()?;
    let shape = IntpackShape {
        width: params.width,
    };
    blocks_gpu::device::device_compress(gpu, lane, shape, inputs)
}

/// Decoding of resident streams (all of one width).
pub(crate) fn device_decompress(
    gpu: &Gpu,
    lane: &mut Lane,
    streams: &[&[u8]],
    lens: &[usize],
) -> Result<DeviceDecompress<IntpackShape>> {
    blocks_gpu::device::device_decompress(gpu, lane, streams, lens, |stream, len| {
        read_layout(stream, Some(len))
    })
}
