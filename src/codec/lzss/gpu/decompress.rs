//! Decompression on the GPU of a batch of `lzss` streams, through the step pipeline
//! shared with intpack ([`crate::codec::blocks_gpu::decompress`]). Each stream is
//! validated as the CPU decoder validates it (header, size table, total length) before
//! anything is decoded; streams of the same parameters share launches (the kernels are
//! specialised by symbol width). A step is a run of chunks of about [`Gpu::step_bytes`] of
//! output: their slices of the size tables, then their payloads, go to the device; the
//! decoder writes every chunk at its place; tails are copied by the host.

use super::launch::LzssShape;
use crate::codec::blocks_gpu;
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::Sink;
use crate::codec::lzss::{NAME, read_layout};
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
        let layout = read_layout(stream, len)?;
        if layout.len != len {
            return Err(CodecError::corrupt(
                NAME,
                format!("stream {i} claims {} bytes, expected {len}", layout.len),
            ));
        }
        Ok(layout)
    };
    blocks_gpu::decompress::decompress::<LzssShape>(gpu, inputs, lens, read, memory, sink)
}
