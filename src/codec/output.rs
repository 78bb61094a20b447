//! Growing a decoder's output: decoders append to their output as they decode, never
//! allocating by a stream's claimed size, and a failed allocation is an error.

use super::error::{CodecError, Result};

/// Appends `additional` zero bytes to `out`, an error instead of an abort when memory is
/// short. Decoders grow their output with this as they decode, never by a claimed size.
pub(crate) fn grow(out: &mut Vec<u8>, additional: usize, codec: &'static str) -> Result<()> {
    let bytes = out.len() as u64 + additional as u64;
    out.try_reserve(additional)
        .map_err(|_| CodecError::OutOfMemory { codec, bytes })?;
    out.resize(out.len() + additional, 0);
    Ok(())
}
