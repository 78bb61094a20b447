//! The codecs, on plain bytes. This layer knows nothing of Arrow: it turns a byte slice
//! (with a symbol width where that matters) into a self-describing stream and back.
//!
//! | codec | module | stream |
//! |---|---|---|
//! | multi-byte LZSS (GPULZ) | [`lzss`] | header + chunk size table + chunks |
//! | G-match | [`gmatch`] | the Snappy raw or framing format |
//! | BWT + MTF + Huffman | [`bwt`] | header + independent blocks with gap arrays |
//!
//! [`CodecSpec`] names a codec and its parameters as text (`lzss:s=2,w=128,c=2048`,
//! `gmatch:framed`, `bwt:block=4m`), the form used by the CLI and SQL. The byte-level
//! formats are specified in `docs/FORMAT.md`. [`CodecSpec::compress_on`] and
//! [`CodecId::decompress_on`] run a codec on the GPU where it has a GPU path (`lzss` now),
//! as a [`Placement`] decides; the bytes are the same as on the CPU.

pub mod bwt;
mod error;
pub mod gmatch;
pub mod lzss;
mod spec;
#[cfg(test)]
pub(crate) mod test_data;
pub mod varint;

pub use error::{CodecError, Result};

/// Appends `additional` zero bytes to `out`, an error instead of an abort when memory is
/// short. Decoders grow their output with this as they decode, never by a claimed size.
pub(crate) fn grow(out: &mut Vec<u8>, additional: usize, codec: &'static str) -> Result<()> {
    let bytes = out.len() as u64 + additional as u64;
    out.try_reserve(additional)
        .map_err(|_| CodecError::OutOfMemory { codec, bytes })?;
    out.resize(out.len() + additional, 0);
    Ok(())
}
pub use spec::{CodecId, CodecSpec, GPU_MIN_BYTES, Placement, SnappyFormat};
