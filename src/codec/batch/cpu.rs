//! The batched interface on the CPU: buffers in parallel on rayon's pool (and each
//! codec's blocks in parallel inside a buffer), so one large buffer and many small ones
//! both use every core.

use rayon::prelude::*;

use super::super::error::{CodecError, Result};
use super::super::id::CodecId;
use super::super::interface::wrong_len;
use super::{Codec, Packed};
use crate::memory::parallel_concat;

pub(super) fn compress_into(
    codec: &Codec,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) -> Result<Vec<usize>> {
    inputs
        .par_iter()
        .zip(outputs.par_iter_mut())
        .map(|(input, output)| {
            let stream = codec.compress_on_cpu(input)?;
            let target = output.get_mut(..stream.len()).ok_or_else(|| {
                CodecError::invalid(codec.id().name(), "output smaller than the stream")
            })?;
            target.copy_from_slice(&stream);
            Ok(stream.len())
        })
        .collect()
}

pub(super) fn compress_batch(codec: &Codec, inputs: &[&[u8]]) -> Result<Packed> {
    let streams = inputs
        .par_iter()
        .map(|input| codec.compress_on_cpu(input))
        .collect::<Result<Vec<_>>>()?;
    let sizes: Vec<usize> = streams.iter().map(Vec::len).collect();
    let mut bytes = vec![0u8; sizes.iter().sum()];
    let pieces: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    parallel_concat(&mut bytes, &pieces);
    Ok(Packed::from_sizes(bytes, &sizes))
}

/// One stream's output in a buffer of its own, which must hold exactly `expected` bytes:
/// the decoders grow it as they decode (bounded by what the stream's bytes can produce and
/// by `expected`), so a claimed length allocates nothing by itself.
pub(super) fn decompress_owned(codec: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
    let decoded = codec.decompress_with_limit(stream, expected)?;
    if decoded.len() != expected {
        return Err(wrong_len(codec.name(), decoded.len(), expected));
    }
    Ok(decoded)
}

pub(super) fn decompress_into(
    codec: CodecId,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) -> Result<()> {
    inputs
        .par_iter()
        .zip(outputs.par_iter_mut())
        .try_for_each(|(stream, out)| codec.decompress_exact(stream, out))
}
