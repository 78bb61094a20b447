//! Decoding: the header and size table are checked against the stream's bytes before
//! anything is allocated for the output; then every block decodes on its own, groups of
//! them in parallel.

use rayon::prelude::*;

use super::bits::{packed_len, unpack_field};
use super::frame::{read_delta_frame_into, read_frame, read_frame_into, read_word};
use super::fused::unpack_frame_into;
use super::scheme::{POSITION_BITS, Scheme, index_bits};
use super::varint;
use super::word::Word;
use super::{BLOCK_VALUES, CodecError, FIXED_HEADER_LEN, IntpackParams, NAME, Result, VERSION};

/// Decompresses a stream that must hold exactly `expected_len` bytes. The header, the
/// size table and the stream's length are checked first, every block against the
/// smallest encoding, so the output allocated is backed by the stream's bytes (at most
/// `1024 W` bytes per `4 + W` of them); its pages are mapped as the blocks write them.
///
/// ```
/// use colzip::codec::intpack::{self, IntpackParams};
/// let keys: Vec<u8> = (0..3000u32).flat_map(|i| (i / 3).to_le_bytes()).collect();
/// let stream = intpack::compress(&keys, &IntpackParams::new(4)?);
/// assert_eq!(intpack::decompress(&stream, keys.len())?, keys);
/// assert!(intpack::decompress(&stream, keys.len() + 1).is_err());
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn decompress(stream: &[u8], expected_len: usize) -> Result<Vec<u8>> {
    let layout = read_layout(stream, Some(expected_len))?;
    let mut out = crate::memory::try_zeroed(layout.len).ok_or(CodecError::OutOfMemory {
        codec: NAME,
        bytes: layout.len as u64,
    })?;
    decode_into(stream, &layout, &mut out)?;
    Ok(out)
}

/// Decompresses a stream into `out`, which must be exactly the stream's length.
///
/// ```
/// use colzip::codec::intpack::{self, IntpackParams};
/// let input: Vec<u8> = (0..5000u16).flat_map(|i| (i % 300).to_le_bytes()).collect();
/// let stream = intpack::compress(&input, &IntpackParams::new(2)?);
/// let mut out = vec![0u8; input.len()];
/// intpack::decompress_into(&stream, &mut out)?;
/// assert_eq!(out, input);
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn decompress_into(stream: &[u8], out: &mut [u8]) -> Result<()> {
    let layout = read_layout(stream, Some(out.len()))?;
    decode_into(stream, &layout, out)
}

/// Decodes a validated stream into `out` (exactly its length): the blocks, then the tail.
fn decode_into(stream: &[u8], layout: &StreamLayout, out: &mut [u8]) -> Result<()> {
    let tail = layout.len - layout.body;
    let (body, rest) = out.split_at_mut(layout.body);
    decode_blocks(stream, layout, body)?;
    rest.copy_from_slice(&stream[stream.len() - tail..]);
    Ok(())
}

/// The uncompressed length a stream claims, once its header and size table are checked
/// against its bytes (nothing is decoded).
pub fn decompressed_len(stream: &[u8]) -> Result<usize> {
    Ok(read_layout(stream, None)?.len)
}

/// Reads and validates the header: the parameters and the uncompressed length.
pub fn read_header(stream: &[u8]) -> Result<(IntpackParams, u64)> {
    parse_header(stream).map(|(params, len, _)| (params, len))
}

/// Decodes one block encoding into `out`, which holds the block's values (`1..=1024` of
/// `width` bytes): the per-block half of [`decompress`].
pub fn decode_block(block: &[u8], out: &mut [u8], width: u8) -> Result<()> {
    IntpackParams::new(width)?;
    let w = usize::from(width);
    if !out.len().is_multiple_of(w) || !(1..=BLOCK_VALUES).contains(&(out.len() / w)) {
        return Err(CodecError::invalid(
            NAME,
            format!("a block of {} bytes is not 1..=1024 values", out.len()),
        ));
    }
    let res = match width {
        1 => BlockDecoder::<u8>::new().decode(block, out),
        2 => BlockDecoder::<u16>::new().decode(block, out),
        4 => BlockDecoder::<u32>::new().decode(block, out),
        _ => BlockDecoder::<u64>::new().decode(block, out),
    };
    res.map_err(|reason| CodecError::corrupt(NAME, reason))
}

/// Blocks per rayon task.
const TASK_BLOCKS: usize = 32;

/// Where the parts of a validated stream lie.
pub(crate) struct StreamLayout {
    /// `W`, the uncompressed bytes `N` and the part of them that is whole values.
    pub(crate) width: usize,
    pub(crate) len: usize,
    pub(crate) body: usize,
    /// Byte offset in the stream of the first block encoding.
    pub(crate) blocks_at: usize,
    /// Offset of every block's encoding from `blocks_at`, and their total last.
    pub(crate) offsets: Vec<usize>,
}

/// Header fields and the header's length in bytes.
fn parse_header(stream: &[u8]) -> Result<(IntpackParams, u64, usize)> {
    if stream.len() <= FIXED_HEADER_LEN {
        return Err(CodecError::corrupt(NAME, "stream shorter than its header"));
    }
    if stream[0] != VERSION {
        return Err(CodecError::corrupt(
            NAME,
            format!("unknown version {}", stream[0]),
        ));
    }
    let params = IntpackParams { width: stream[1] };
    params.validate().map_err(|_| {
        CodecError::corrupt(NAME, format!("value width {} in the header", stream[1]))
    })?;
    let (len, used) = varint::read_u64(&stream[FIXED_HEADER_LEN..], NAME)?;
    Ok((params, len, FIXED_HEADER_LEN + used))
}

/// Validates the header (and its length against `expected`, when given), the size table
/// against the stream's end, and the sizes' total against the bytes after the table.
pub(crate) fn read_layout(stream: &[u8], expected: Option<usize>) -> Result<StreamLayout> {
    let (params, claimed, header_len) = parse_header(stream)?;
    if let Some(expected) = expected.filter(|&e| e as u64 != claimed) {
        return Err(CodecError::corrupt(
            NAME,
            format!("stream holds {claimed} bytes, {expected} expected"),
        ));
    }
    let n = usize::try_from(claimed)
        .map_err(|_| CodecError::corrupt(NAME, "length does not fit in memory"))?;
    let w = usize::from(params.width);
    let body = n - n % w;
    let blocks = (body / w).div_ceil(BLOCK_VALUES);
    let table_end = blocks
        .checked_mul(2)
        .and_then(|t| t.checked_add(header_len))
        .filter(|&end| end <= stream.len())
        .ok_or_else(|| CodecError::corrupt(NAME, "size table runs past the stream"))?;
    // Every size is checked against the smallest encoding (scheme 0 with b = 0) so that
    // the output a stream can claim is bounded by its bytes.
    let smallest = 2 + w;
    let mut offsets = Vec::with_capacity(blocks + 1);
    let mut total = 0usize;
    for (i, entry) in stream[header_len..table_end].chunks_exact(2).enumerate() {
        let size = usize::from(u16::from_le_bytes([entry[0], entry[1]]));
        if size < smallest {
            return Err(CodecError::corrupt(
                NAME,
                format!("block {i}: size {size}, below the smallest encoding ({smallest})"),
            ));
        }
        offsets.push(total);
        total += size;
    }
    offsets.push(total);
    let expected_len = table_end + total + (n - body);
    if expected_len != stream.len() {
        return Err(CodecError::corrupt(
            NAME,
            format!(
                "stream is {} bytes, its header and size table say {expected_len}",
                stream.len()
            ),
        ));
    }
    Ok(StreamLayout {
        width: w,
        len: n,
        body,
        blocks_at: table_end,
        offsets,
    })
}

/// Decodes the blocks of a validated stream into `out` (their values exactly), in
/// parallel groups.
fn decode_blocks(stream: &[u8], layout: &StreamLayout, out: &mut [u8]) -> Result<()> {
    match layout.width {
        1 => decode_blocks_impl::<u8>(stream, layout, out),
        2 => decode_blocks_impl::<u16>(stream, layout, out),
        4 => decode_blocks_impl::<u32>(stream, layout, out),
        _ => decode_blocks_impl::<u64>(stream, layout, out),
    }
}

fn decode_blocks_impl<T: Word>(stream: &[u8], layout: &StreamLayout, out: &mut [u8]) -> Result<()> {
    let block_bytes = BLOCK_VALUES * T::BYTES;
    let encodings = &stream[layout.blocks_at..];
    let failure = out
        .par_chunks_mut(TASK_BLOCKS * block_bytes)
        .enumerate()
        .map(|(task, group)| {
            let mut decoder = BlockDecoder::<T>::new();
            for (k, dst) in group.chunks_mut(block_bytes).enumerate() {
                let i = task * TASK_BLOCKS + k;
                let block = &encodings[layout.offsets[i]..layout.offsets[i + 1]];
                decoder
                    .decode(block, dst)
                    .map_err(|reason| CodecError::corrupt(NAME, format!("block {i}: {reason}")))?;
            }
            Ok(())
        })
        .find_first(|r: &Result<()>| r.is_err());
    match failure {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Runs up to this length are written as this many copies (8 copies of a 4- or 8-byte
/// value are one or two 32-byte stores; TPC-H's orders hold 1 to 7 lines).
const SHORT_RUN: usize = 8;

/// Writes the runs of `values` (`W` bytes each) and `lengths` (2 bytes each) into `out`,
/// which they must fill exactly; a run of length 0 or one past the end is an error
/// before anything outside `out` could be touched.
fn write_runs<T: Word>(values: &[u8], lengths: &[u8], out: &mut [u8]) -> BlockResult {
    let short = SHORT_RUN * T::BYTES;
    let mut start = 0;
    for (value, length) in values.chunks_exact(T::BYTES).zip(lengths.chunks_exact(2)) {
        let value = T::load(value);
        let length = usize::from(u16::load(length));
        if length == 0 {
            return Err("run of length 0");
        }
        let end = start + length * T::BYTES;
        if end > out.len() {
            return Err("run lengths do not add up to the block's values");
        }
        if length <= SHORT_RUN && start + short <= out.len() {
            // A fixed number of copies whatever the length, so the branch follows the
            // (rare) long runs rather than each run's length: the copies past the run
            // are rewritten by the runs after it.
            for slot in out[start..start + short].chunks_exact_mut(T::BYTES) {
                value.store(slot);
            }
        } else {
            for slot in out[start..end].chunks_exact_mut(T::BYTES) {
                value.store(slot);
            }
        }
        start = end;
    }
    if start != out.len() {
        return Err("run lengths do not add up to the block's values");
    }
    Ok(())
}

/// Per-task scratch of the decoder.
struct BlockDecoder<T: Word> {
    /// Unpacked fields of the frame being read.
    fields: Vec<u64>,
    /// Dictionary values.
    values: Vec<T>,
    /// Run values (`W` bytes each) and run lengths (2 bytes each), as decoded.
    run_values: Vec<u8>,
    run_lengths: Vec<u8>,
    /// High bits of a frame's exceptions.
    highs: Vec<u64>,
}

type BlockResult = std::result::Result<(), &'static str>;

impl<T: Word> BlockDecoder<T> {
    fn new() -> Self {
        BlockDecoder {
            fields: vec![0; BLOCK_VALUES],
            values: Vec::with_capacity(BLOCK_VALUES),
            run_values: vec![0; BLOCK_VALUES * T::BYTES],
            run_lengths: vec![0; BLOCK_VALUES * 2],
            highs: vec![0; BLOCK_VALUES],
        }
    }

    /// Decodes `block` into `out` (`1..=1024` whole values); the encoding must be
    /// consumed exactly.
    fn decode(&mut self, block: &[u8], out: &mut [u8]) -> BlockResult {
        let n = out.len() / T::BYTES;
        let scheme = *block.first().ok_or("empty block encoding")?;
        let scheme = Scheme::from_u8(scheme).ok_or("scheme byte greater than 5")?;
        let mut at = 1;
        match scheme {
            Scheme::Frame => read_frame_into::<T>(block, &mut at, out)?,
            Scheme::Delta => read_delta_frame_into::<T>(block, &mut at, out)?,
            Scheme::RunsFrame | Scheme::RunsDelta => {
                let runs = read_count(
                    block,
                    &mut at,
                    n,
                    "run count r of 0 or more than the block's values",
                )?;
                let values = &mut self.run_values[..runs * T::BYTES];
                if scheme == Scheme::RunsFrame {
                    read_frame_into::<T>(block, &mut at, values)?;
                } else {
                    read_delta_frame_into::<T>(block, &mut at, values)?;
                }
                let lengths = &mut self.run_lengths[..runs * 2];
                read_frame_into::<u16>(block, &mut at, lengths)?;
                write_runs::<T>(values, lengths, out)?;
            }
            Scheme::Dictionary => {
                let d = read_count(
                    block,
                    &mut at,
                    n,
                    "dictionary size d of 0 or more than the block's values",
                )?;
                self.read_delta_values(block, &mut at, d)?;
                let end = at + packed_len(n, index_bits(d));
                let field = block.get(at..end).ok_or("block ends inside the indices")?;
                unpack_field(field, index_bits(d), &mut self.fields[..n]);
                at = end;
                for (slot, &index) in out.chunks_exact_mut(T::BYTES).zip(&self.fields[..n]) {
                    let value = self
                        .values
                        .get(index as usize)
                        .ok_or("dictionary index not below d")?;
                    value.store(slot);
                }
            }
            Scheme::FrameExceptions => self.decode_exceptions_frame(block, &mut at, out)?,
        }
        if at != block.len() {
            return Err("bytes left after the block's encoding");
        }
        Ok(())
    }

    /// Scheme 5 after its scheme byte: every value `ref` plus its low bits, then each
    /// exception's high bits added at its position (strictly ascending, below `n`).
    fn decode_exceptions_frame(
        &mut self,
        block: &[u8],
        at: &mut usize,
        out: &mut [u8],
    ) -> BlockResult {
        let n = out.len() / T::BYTES;
        let b = u32::from(*block.get(*at).ok_or("block ends before a frame")?);
        *at += 1;
        let reference = read_word::<T>(block, at)?;
        let e = read_count(
            block,
            at,
            n,
            "exception count e of 0 or more than the block's values",
        )?;
        let h = u32::from(*block.get(*at).ok_or("block ends inside a frame")?);
        *at += 1;
        if h == 0 || b + h > T::BITS {
            return Err("exception frame's h of 0, or b + h larger than 8w");
        }
        // Every value: ref plus its low b bits.
        let end = *at + packed_len(n, b);
        let low = block
            .get(*at..end)
            .ok_or("block ends inside a packed field")?;
        unpack_frame_into(low, b, reference, out);
        *at = end;
        let mut field = |count: usize, bits: u32, into: &mut [u64]| {
            let end = *at + packed_len(count, bits);
            let bytes = block
                .get(*at..end)
                .ok_or("block ends inside a packed field")?;
            unpack_field(bytes, bits, &mut into[..count]);
            *at = end;
            Ok::<(), &'static str>(())
        };
        field(e, POSITION_BITS, &mut self.fields)?;
        field(e, h, &mut self.highs)?;
        let mut next = 0u64;
        for (&j, &high) in self.fields[..e].iter().zip(&self.highs[..e]) {
            if j < next || j >= n as u64 {
                return Err("exception positions not ascending or not below the block's values");
            }
            next = j + 1;
            let slot = &mut out[j as usize * T::BYTES..][..T::BYTES];
            // b + h <= 8w: the high bits land inside the value.
            T::load(slot).add(T::from_u64(high << b)).store(slot);
        }
        Ok(())
    }

    /// Reads a delta frame of `count >= 1` values into `self.values`.
    fn read_delta_values(&mut self, block: &[u8], at: &mut usize, count: usize) -> BlockResult {
        let mut x = read_word::<T>(block, at)?;
        let reference = read_frame::<T>(block, at, &mut self.fields[..count - 1])?;
        self.values.clear();
        self.values.push(x);
        for &u in &self.fields[..count - 1] {
            x = x.add(reference).add(T::from_u64(u));
            self.values.push(x);
        }
        Ok(())
    }
}

/// Reads a `u16` count at `*at` that must be in `1..=n`; `out_of_range` says which.
fn read_count(
    block: &[u8],
    at: &mut usize,
    n: usize,
    out_of_range: &'static str,
) -> std::result::Result<usize, &'static str> {
    let count = usize::from(read_word::<u16>(block, at).map_err(|_| "block ends inside a count")?);
    if count == 0 || count > n {
        return Err(out_of_range);
    }
    Ok(count)
}
