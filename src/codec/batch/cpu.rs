//! The batched interface on the CPU: buffers in parallel on rayon's pool (and each
//! codec's blocks in parallel inside a buffer), so one large buffer and many small ones
//! both use every core.

use rayon::prelude::*;

use super::super::bwt;
use super::super::error::{CodecError, Result};
use super::super::gmatch;
use super::super::id::CodecId;
use super::super::intpack;
use super::super::lzss;
use super::super::spec::SnappyFormat;
use super::{Codec, Packed};
use crate::gpu::parallel_concat;

/// One buffer's stream.
fn compress_one(codec: &Codec, input: &[u8]) -> Result<Vec<u8>> {
    Ok(match codec {
        Codec::Stored => input.to_vec(),
        Codec::Lzss(params) => lzss::try_compress(input, params)?,
        Codec::Gmatch(SnappyFormat::Raw) => gmatch::compress_raw(input)?,
        Codec::Gmatch(SnappyFormat::Framed) => gmatch::compress_framed(input),
        Codec::Gmatch(SnappyFormat::Blocks) => gmatch::compress_blocks(input),
        Codec::Bwt(params) => bwt::compress(input, params),
        Codec::Intpack(params) => intpack::try_compress(input, params)?,
    })
}

pub(super) fn compress_into(
    codec: &Codec,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) -> Result<Vec<usize>> {
    inputs
        .par_iter()
        .zip(outputs.par_iter_mut())
        .map(|(input, output)| {
            let stream = compress_one(codec, input)?;
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
        .map(|input| compress_one(codec, input))
        .collect::<Result<Vec<_>>>()?;
    let sizes: Vec<usize> = streams.iter().map(Vec::len).collect();
    let mut bytes = vec![0u8; sizes.iter().sum()];
    let pieces: Vec<&[u8]> = streams.iter().map(Vec::as_slice).collect();
    parallel_concat(&mut bytes, &pieces);
    Ok(Packed::from_sizes(bytes, &sizes))
}

/// One stream's output, exactly `out.len()` bytes.
fn decompress_one(codec: CodecId, stream: &[u8], out: &mut [u8]) -> Result<()> {
    match codec {
        CodecId::Stored => {
            if stream.len() != out.len() {
                return Err(wrong_len(codec, stream.len(), out.len()));
            }
            out.copy_from_slice(stream);
            Ok(())
        }
        CodecId::GmatchBlocks => gmatch::decompress_blocks_into(stream, out),
        // Chunks decode in parallel straight into `out`, which the caller sized: no
        // output grown step by step and copied again on one core.
        CodecId::GmatchFramed => gmatch::decompress_framed_into(stream, out),
        CodecId::GmatchRaw => gmatch::decompress_raw_into(stream, out),
        CodecId::Lzss => lzss::decompress_into(stream, out),
        // The header's length is checked against `out` before anything is decoded.
        CodecId::Intpack => intpack::decompress_into(stream, out),
        _ => {
            let decoded = decompress_owned(codec, stream, out.len())?;
            out.copy_from_slice(&decoded);
            Ok(())
        }
    }
}

/// One stream's output in a buffer of its own, which must hold exactly `expected` bytes:
/// the decoders grow it as they decode (bounded by what the stream's bytes can produce and
/// by `expected`), so a claimed length allocates nothing by itself.
pub(super) fn decompress_owned(codec: CodecId, stream: &[u8], expected: usize) -> Result<Vec<u8>> {
    let decoded = match codec {
        CodecId::Stored => stream.to_vec(),
        // The table is checked against the stream before the output is allocated, so the
        // claim is bounded by the bytes (64 KiB of output per 4 bytes of table).
        CodecId::GmatchBlocks => gmatch::decompress_blocks(stream, expected)?,
        CodecId::Lzss => lzss::decompress_with_limit(stream, expected)?,
        CodecId::GmatchRaw => gmatch::decompress_raw_with_limit(stream, expected)?,
        CodecId::GmatchFramed => gmatch::decompress_framed_with_limit(stream, expected)?,
        CodecId::Bwt => bwt::decompress_with_limit(stream, expected)?,
        // The claim is checked against `expected` and the size table against the stream
        // before the output is allocated (the table bounds it: 1024 values a block of at
        // least 2 + W bytes).
        CodecId::Intpack => intpack::decompress(stream, expected)?,
    };
    if decoded.len() != expected {
        return Err(wrong_len(codec, decoded.len(), expected));
    }
    Ok(decoded)
}

fn wrong_len(codec: CodecId, got: usize, expected: usize) -> CodecError {
    CodecError::corrupt(
        codec.name(),
        format!("decoded {got} bytes, expected {expected}"),
    )
}

pub(super) fn decompress_into(
    codec: CodecId,
    inputs: &[&[u8]],
    outputs: &mut [&mut [u8]],
) -> Result<()> {
    inputs
        .par_iter()
        .zip(outputs.par_iter_mut())
        .try_for_each(|(stream, out)| decompress_one(codec, stream, out))
}
