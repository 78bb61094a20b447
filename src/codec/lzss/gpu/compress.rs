//! Compression on the GPU: the bytes of [`crate::codec::lzss::compress`] for a batch of
//! buffers of the same parameters, through the step pipeline shared with intpack
//! ([`crate::codec::blocks_gpu::compress`]): a step is a run of chunks (of one or several
//! buffers) of about [`Gpu::step_bytes`]; kernels I–III encode them, the host reads back
//! the launch's payload offsets and copies each buffer's slice of the size table and its
//! payloads to their places. Headers and tails (the bytes after the last whole symbol)
//! are written by the host.

use super::launch::shape;
use crate::codec::blocks_gpu;
use crate::codec::error::Result;
use crate::codec::interface::Sink;
use crate::codec::lzss::LzssParams;
use crate::gpu::{Gpu, HostMemory};

/// Compresses `inputs` with `params` into `sink`; returns each output's length.
pub(crate) fn compress(
    gpu: &Gpu,
    params: &LzssParams,
    inputs: &[&[u8]],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<Vec<usize>> {
    params.validate()?;
    blocks_gpu::compress::compress(gpu, shape(params), inputs, memory, sink)
}
