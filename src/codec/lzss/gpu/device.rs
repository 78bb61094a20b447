//! The device-resident form ([`crate::codec::blocks_gpu::device`]): buffers uploaded once
//! and kept on the GPU, compressed or decoded there by the kernels alone, for callers that
//! keep their data in GPU memory and for `colzip bench`'s kernel figures. Every chunk of
//! every buffer is in one launch.

use super::launch::{LzssShape, shape};
use crate::codec::blocks_gpu;
use crate::codec::blocks_gpu::device::{DeviceCompress, DeviceDecompress};
use crate::codec::error::Result;
use crate::codec::lzss::{LzssParams, read_layout};
use crate::gpu::{Gpu, Lane};

/// Compression of resident buffers.
pub(crate) fn device_compress(
    gpu: &Gpu,
    lane: &mut Lane,
    params: &LzssParams,
    inputs: &[&[u8]],
) -> Result<DeviceCompress<LzssShape>> {
    params.validate()?;
    blocks_gpu::device::device_compress(gpu, lane, shape(params), inputs)
}

/// Decoding of resident streams (all of one parameter set).
pub(crate) fn device_decompress(
    gpu: &Gpu,
    lane: &mut Lane,
    streams: &[&[u8]],
    lens: &[usize],
) -> Result<DeviceDecompress<LzssShape>> {
    blocks_gpu::device::device_decompress(gpu, lane, streams, lens, read_layout)
}
