//! The Snappy framing format.
//!
//! A chunk is a type byte, a 3-byte little-endian length and that many bytes:
//!
//! | type | chunk | body |
//! |---|---|---|
//! | `0xff` | stream identifier | `sNaPpY` (length 6) |
//! | `0x00` | compressed data | masked CRC-32C (u32 LE) of the uncompressed bytes, then a raw stream of ≤ 65536 bytes |
//! | `0x01` | uncompressed data | masked CRC-32C, then ≤ 65536 bytes |
//! | `0x02..=0x7f` | reserved unskippable | rejected |
//! | `0x80..=0xfd` | reserved skippable | ignored |
//! | `0xfe` | padding | ignored |
//!
//! Writing: the stream identifier, then one data chunk per 65536 bytes of input (the last
//! shorter; none for empty input). A chunk of `n` bytes is written compressed when its
//! raw stream (varint + the block's G-match elements) is shorter than `n - n/8` bytes,
//! else uncompressed. Chunks are compressed in parallel.
//!
//! Reading: the stream must start with a stream identifier (an empty stream decodes to
//! nothing); identifiers may repeat (concatenated streams). Headers are scanned first
//! (each chunk's claim checked against what it can produce, the total against the
//! limit), then data chunks are decoded and CRC-checked in parallel, about 8 MiB of
//! output at a time, the output growing with each step; the first error in stream order
//! is returned. [`decompress_framed_to`] hands each step to a sink instead, so memory
//! stays that of one step.

use rayon::prelude::*;

use super::super::error::{CodecError, Result};
use super::super::output::grow;
use super::super::varint;
use super::decode::{check_producible, decode_elements};
use super::encode::{compress_block_here, max_compressed_len};
use super::{BLOCK_SIZE, NAME};

/// The stream identifier chunk that starts every framed stream.
pub const STREAM_IDENTIFIER: [u8; 10] = *b"\xff\x06\x00\x00sNaPpY";
/// Largest uncompressed size of one data chunk.
pub const MAX_CHUNK_DATA: usize = BLOCK_SIZE;

pub(super) const CHUNK_COMPRESSED: u8 = 0x00;
pub(super) const CHUNK_UNCOMPRESSED: u8 = 0x01;
const CHUNK_PADDING: u8 = 0xfe;
const CHUNK_STREAM_ID: u8 = 0xff;

/// The CRC-32C of `data`, masked as the framing format requires:
/// `rotate_right(crc, 15) + 0xa282ead8` (mod 2^32).
pub fn masked_crc32c(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
        .rotate_right(15)
        .wrapping_add(0xa282_ead8)
}

pub(super) fn push_chunk_header(out: &mut Vec<u8>, kind: u8, body_len: usize) {
    debug_assert!(body_len < 1 << 24);
    let len = (body_len as u32).to_le_bytes();
    out.extend_from_slice(&[kind, len[0], len[1], len[2]]);
}

/// Whether a chunk of `len` bytes whose raw stream (preamble included) is `raw_len`
/// bytes is stored uncompressed: when the stream does not save at least an eighth.
pub(super) fn stores(len: usize, raw_len: usize) -> bool {
    raw_len >= len - len / 8
}

/// One data chunk (header, CRC, body) for up to 65536 bytes.
fn frame_chunk(data: &[u8]) -> Vec<u8> {
    let crc = masked_crc32c(data).to_le_bytes();
    let mut raw = Vec::with_capacity(max_compressed_len(data.len()));
    varint::write_u64(&mut raw, data.len() as u64);
    compress_block_here(data, &mut raw);
    let mut chunk = Vec::with_capacity(8 + raw.len().min(data.len()));
    if !stores(data.len(), raw.len()) {
        push_chunk_header(&mut chunk, CHUNK_COMPRESSED, 4 + raw.len());
        chunk.extend_from_slice(&crc);
        chunk.extend_from_slice(&raw);
    } else {
        push_chunk_header(&mut chunk, CHUNK_UNCOMPRESSED, 4 + data.len());
        chunk.extend_from_slice(&crc);
        chunk.extend_from_slice(data);
    }
    chunk
}

/// Compresses `input` into the Snappy framing format.
pub fn compress_framed(input: &[u8]) -> Vec<u8> {
    let mut out = STREAM_IDENTIFIER.to_vec();
    if input.len() <= MAX_CHUNK_DATA {
        if !input.is_empty() {
            out.extend_from_slice(&frame_chunk(input));
        }
        return out;
    }
    let chunks: Vec<Vec<u8>> = input.par_chunks(MAX_CHUNK_DATA).map(frame_chunk).collect();
    out.reserve_exact(chunks.iter().map(Vec::len).sum());
    for chunk in &chunks {
        out.extend_from_slice(chunk);
    }
    out
}

/// Decodes a Snappy framed stream.
pub fn decompress_framed(stream: &[u8]) -> Result<Vec<u8>> {
    decompress_framed_with_limit(stream, usize::MAX)
}

/// A data chunk found by the header scan.
pub(super) struct DataChunk<'a> {
    pub(super) compressed: bool,
    pub(super) stored_crc: u32,
    /// The raw stream, preamble included (compressed), or the bytes (uncompressed).
    pub(super) body: &'a [u8],
    pub(super) out_len: usize,
}

fn corrupt(reason: impl Into<String>) -> CodecError {
    CodecError::corrupt(NAME, reason)
}

/// The uncompressed length of a framed stream, once every chunk header is checked
/// (nothing is decoded).
pub fn framed_output_len(stream: &[u8]) -> Result<u64> {
    ChunkWalker::new(stream).try_fold(0u64, |total, chunk| Ok(total + chunk?.out_len as u64))
}

/// Output decoded per step: the chunks of a step decode in parallel into memory that is
/// added just before, so memory grows with the output actually produced.
const STEP_BYTES: usize = 8 << 20;

/// Decodes a Snappy framed stream whose total output must not exceed `max_output`.
pub fn decompress_framed_with_limit(stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    for_each_step(stream, max_output, |step_chunks, len| {
        let start = out.len();
        grow(&mut out, len, NAME)?;
        decode_step(step_chunks, &mut out[start..])
    })?;
    Ok(out)
}

/// Decodes a Snappy framed stream into `out`, which must be exactly its output length (a
/// caller that knows the length allocates once and every core decodes in place). The
/// headers are checked first: a stream that holds more than `out` is refused with
/// [`CodecError::TooLarge`], one that holds less as corrupt, both before decoding; then
/// all data chunks decode in parallel, the first error in stream order returned.
pub fn decompress_framed_into(stream: &[u8], out: &mut [u8]) -> Result<()> {
    let chunks = scan_chunks(stream, out.len())?;
    let total: usize = chunks.iter().map(|c| c.out_len).sum();
    if total != out.len() {
        return Err(corrupt(format!(
            "framed stream holds {total} bytes, expected {}",
            out.len()
        )));
    }
    decode_step(&chunks, out)
}

/// Decodes a Snappy framed stream step by step (about 8 MiB of output each), handing
/// each step's bytes to `sink` in stream order: memory stays proportional to a step,
/// whatever the stream's length. The headers are checked first, the total against
/// `max_output` included, so a bad structure or a claim over the limit fails before any
/// output. Returns the bytes decoded.
pub fn decompress_framed_to<E: From<CodecError>>(
    stream: &[u8],
    max_output: usize,
    mut sink: impl FnMut(&[u8]) -> std::result::Result<(), E>,
) -> std::result::Result<u64, E> {
    let mut buffer = Vec::new();
    let mut total = 0u64;
    for_each_step(stream, max_output, |step_chunks, len| {
        buffer.clear();
        grow(&mut buffer, len, NAME)?;
        decode_step(step_chunks, &mut buffer)?;
        total += len as u64;
        sink(&buffer)
    })?;
    Ok(total)
}

/// Validates every header and the total, then calls `step` with consecutive groups of
/// data chunks and their output length.
fn for_each_step<'a, E: From<CodecError>>(
    stream: &'a [u8],
    max_output: usize,
    mut step: impl FnMut(&[DataChunk<'a>], usize) -> std::result::Result<(), E>,
) -> std::result::Result<(), E> {
    let mut total = 0u64;
    for chunk in ChunkWalker::new(stream) {
        total += chunk?.out_len as u64;
        if total > max_output as u64 {
            return Err(CodecError::TooLarge {
                codec: NAME,
                claimed: total,
                limit: max_output as u64,
            }
            .into());
        }
    }
    let mut group = Vec::new();
    let mut len = 0;
    for chunk in ChunkWalker::new(stream) {
        let chunk = chunk?;
        len += chunk.out_len;
        group.push(chunk);
        if len >= STEP_BYTES {
            step(&group, len)?;
            group.clear();
            len = 0;
        }
    }
    if !group.is_empty() {
        step(&group, len)?;
    }
    Ok(())
}

/// Decodes `chunks` into `out` (exactly their output), in parallel when there are several;
/// the first error in stream order is returned.
fn decode_step(chunks: &[DataChunk<'_>], out: &mut [u8]) -> Result<()> {
    let mut slices = Vec::with_capacity(chunks.len());
    let mut rest = out;
    for chunk in chunks {
        let (head, tail) = rest.split_at_mut(chunk.out_len);
        slices.push(head);
        rest = tail;
    }
    if chunks.len() <= 1 {
        return chunks
            .iter()
            .zip(slices)
            .try_for_each(|(c, s)| decode_chunk(c, s));
    }
    let results: Vec<Result<()>> = chunks
        .par_iter()
        .zip(slices)
        .map(|(c, s)| decode_chunk(c, s))
        .collect();
    results.into_iter().collect()
}

/// Walks the chunk headers: validates the structure, the stream identifiers and each
/// data chunk's size, and the running total against `max_output`.
pub(super) fn scan_chunks(stream: &[u8], max_output: usize) -> Result<Vec<DataChunk<'_>>> {
    let mut chunks = Vec::new();
    let mut total = 0u64;
    for chunk in ChunkWalker::new(stream) {
        let chunk = chunk?;
        total += chunk.out_len as u64;
        if total > max_output as u64 {
            return Err(CodecError::TooLarge {
                codec: NAME,
                claimed: total,
                limit: max_output as u64,
            });
        }
        chunks.push(chunk);
    }
    Ok(chunks)
}

/// The data chunks of a framed stream, in order, each header validated; skippable
/// chunks and stream identifiers are checked and passed over.
struct ChunkWalker<'a> {
    stream: &'a [u8],
    pos: usize,
    first: bool,
}

impl<'a> ChunkWalker<'a> {
    fn new(stream: &'a [u8]) -> Self {
        ChunkWalker {
            stream,
            pos: 0,
            first: true,
        }
    }

    fn next_chunk(&mut self) -> Result<Option<DataChunk<'a>>> {
        let stream = self.stream;
        while self.pos < stream.len() {
            let pos = self.pos;
            if stream.len() - pos < 4 {
                return Err(corrupt("truncated chunk header"));
            }
            let kind = stream[pos];
            let len = usize::from(stream[pos + 1])
                | usize::from(stream[pos + 2]) << 8
                | usize::from(stream[pos + 3]) << 16;
            let start = pos + 4;
            if stream.len() - start < len {
                return Err(corrupt(format!(
                    "chunk of type {kind:#04x} claims {len} bytes, {} left",
                    stream.len() - start
                )));
            }
            let body = &stream[start..start + len];
            self.pos = start + len;
            if self.first && kind != CHUNK_STREAM_ID {
                return Err(corrupt("stream does not start with a stream identifier"));
            }
            self.first = false;
            match kind {
                CHUNK_STREAM_ID => {
                    if body != b"sNaPpY" {
                        return Err(corrupt("bad stream identifier"));
                    }
                }
                CHUNK_COMPRESSED | CHUNK_UNCOMPRESSED => {
                    if len < 4 {
                        return Err(corrupt("data chunk shorter than its CRC"));
                    }
                    let data = &body[4..];
                    let out_len = if kind == CHUNK_COMPRESSED {
                        let (claimed, header) = varint::read_u32(data, NAME)?;
                        check_producible(u64::from(claimed), data.len() - header)?;
                        claimed as usize
                    } else {
                        data.len()
                    };
                    if out_len > MAX_CHUNK_DATA {
                        return Err(corrupt(format!(
                            "chunk holds {out_len} bytes, more than {MAX_CHUNK_DATA}"
                        )));
                    }
                    let stored_crc = u32::from_le_bytes(body[..4].try_into().expect("4 bytes"));
                    return Ok(Some(DataChunk {
                        compressed: kind == CHUNK_COMPRESSED,
                        stored_crc,
                        body: data,
                        out_len,
                    }));
                }
                CHUNK_PADDING | 0x80..=0xfd => {}
                _ => {
                    return Err(corrupt(format!(
                        "reserved unskippable chunk type {kind:#04x}"
                    )));
                }
            }
        }
        Ok(None)
    }
}

impl<'a> Iterator for ChunkWalker<'a> {
    type Item = Result<DataChunk<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.next_chunk().transpose();
        if matches!(item, Some(Err(_))) {
            self.pos = self.stream.len();
        }
        item
    }
}

fn decode_chunk(chunk: &DataChunk<'_>, out: &mut [u8]) -> Result<()> {
    if chunk.compressed {
        let (_, header) = varint::read_u32(chunk.body, NAME)?;
        decode_elements(&chunk.body[header..], out)?;
    } else {
        out.copy_from_slice(chunk.body);
    }
    check_crc(chunk, out)
}

/// Compares a decoded chunk's masked CRC-32C with the one its header stores.
pub(super) fn check_crc(chunk: &DataChunk<'_>, out: &[u8]) -> Result<()> {
    let computed = masked_crc32c(out);
    if computed != chunk.stored_crc {
        return Err(CodecError::Checksum {
            codec: NAME,
            stored: chunk.stored_crc,
            computed,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn masked_crc_matches_the_spec_example() {
        // CRC-32C of "123456789" is 0xe3069283.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
        assert_eq!(
            masked_crc32c(b"123456789"),
            0xe306_9283u32.rotate_right(15).wrapping_add(0xa282_ead8)
        );
    }

    #[test]
    fn empty_input_is_the_identifier_alone() {
        assert_eq!(compress_framed(&[]), STREAM_IDENTIFIER.to_vec());
        assert_eq!(
            decompress_framed(&STREAM_IDENTIFIER).unwrap(),
            Vec::<u8>::new()
        );
        assert_eq!(decompress_framed(&[]).unwrap(), Vec::<u8>::new());
    }

    #[test]
    fn stores_incompressible_chunks_and_skips_padding() {
        let mut state = 0x9e37_79b9u32;
        let data: Vec<u8> = (0..1000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                (state >> 8) as u8
            })
            .collect();
        let framed = compress_framed(&data);
        assert_eq!(framed[10], CHUNK_UNCOMPRESSED);
        let mut padded = framed.clone();
        padded.extend_from_slice(&[CHUNK_PADDING, 2, 0, 0, 9, 9, 0x80, 0, 0, 0]);
        padded.extend_from_slice(&STREAM_IDENTIFIER);
        assert_eq!(decompress_framed(&padded).unwrap(), data);
        let mut reserved = framed;
        reserved.extend_from_slice(&[0x02, 0, 0, 0]);
        assert!(decompress_framed(&reserved).is_err());
    }
}
