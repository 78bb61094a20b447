//! Decompression on the GPU of a batch of `intpack` streams, through the step pipeline
//! shared with lzss ([`crate::codec::blocks_gpu::decompress`]). Each stream's header,
//! size table and length are validated by the CPU decoder's own check ([`read_layout`])
//! before anything is decoded; streams of the same width share launches (the kernels are
//! specialised by width). A step is a run of blocks of about [`Gpu::step_bytes`] of
//! output: their slices of the size tables, then their encodings, go to the device; the
//! decoder writes every block's values at their place; tails are copied by the host.

use super::launch::IntpackShape;
use crate::codec::blocks_gpu;
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::codec::intpack::{NAME, read_layout};
use crate::gpu::{Gpu, HostMemory};

/// Decodes `inputs` (each decoding to exactly `lens[i]` bytes) into `sink`.
pub(crate) fn decompress(
    gpu: &Gpu,
    inputs: &[&[u8]],
    lens: &[usize],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let read = |i: usize, stream: &[u8], len: usize| {
        read_layout(stream, Some(len)).map_err(|e| in_stream(e, i, inputs.len()))
    };
    blocks_gpu::decompress::decompress::<IntpackShape>(gpu, inputs, lens, read, memory, sink)
}

/// A layout error of stream `i`, saying which stream when the batch has several.
fn in_stream(e: CodecError, i: usize, count: usize) -> CodecError {
    match e {
        CodecError::Corrupt { reason, .. } if count > 1 => {
            CodecError::corrupt(NAME, format!("stream {i}: {reason}"))
        }
        e => e,
    }
}
