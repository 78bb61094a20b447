//! Compression on the GPU: the bytes of [`crate::codec::intpack::compress`] for a batch
//! of buffers of one width, through the step pipeline shared with lzss
//! ([`crate::codec::blocks_gpu::compress`]): a step is a run of 1024-value blocks (of one
//! or several buffers) of about [`Gpu::step_bytes`] of input; the kernels encode them, the
//! host reads back the launch's offsets and copies each buffer's slice of the size table
//! and its encodings to their places. Headers and tails (the bytes after the last whole
//! value) are written by the host.

use super::launch::IntpackShape;
use crate::codec::blocks_gpu;
use crate::codec::error::Result;
use crate::codec::interface::Sink;
use crate::codec::intpack::IntpackParams;
use crate::gpu::{Gpu, HostMemory};

/// Compresses `inputs` with `params` into `sink`; returns each output's length.
pub(crate) fn compress(
    gpu: &Gpu,
    params: &IntpackParams,
    inputs: &[&[u8]],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<Vec<usize>> {
    params.validate()?;
    let shape = IntpackShape {
        width: params.width,
    };
    blocks_gpu::compress::compress(gpu, shape, inputs, memory, sink)
}
