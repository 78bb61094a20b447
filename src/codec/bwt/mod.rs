//! `bwt`: a bzip2-like block compressor whose every stage has a parallel decoder:
//! Burrows–Wheeler transform by suffix sorting, move-to-front, zero-run coding and
//! canonical Huffman with several tables and a gap array.
//!
//! # Stream format (all integers little-endian; `varint` is [`crate::codec::varint`])
//!
//! ```text
//! stream    = "CZBW" version:u8(=1) block_size:varint length:varint
//!             seg_log2:u8 sub_log2:u8 aux_log2:u8
//!             entry * nblocks                      nblocks = ceil(length / block_size)
//!             payload * nblocks                    concatenated, nothing after
//! entry     = kind:u8 payload_len:varint crc32c:u32
//! ```
//!
//! Block `i` holds bytes `[i * block_size, min((i + 1) * block_size, length))` of the
//! input; `crc32c` is CRC-32C (Castagnoli) of those bytes. Payload offsets are prefix
//! sums of `payload_len`, so a decoder (or a GPU) locates every block from the directory.
//! Kind 0 stores the block raw (`payload_len == n`). Kind 1 is
//!
//! ```text
//! payload   = aux:varint * ((n - 1) / 2^aux_log2 + 1)    BWT row of each sampled suffix, 1..=n
//!             total_bits:varint                         Huffman bitstream length, 1..=16 n
//!             side                                      bit-packed, MSB first, zero-padded to a byte
//!             bits[ceil(total_bits / 8)]                the Huffman bitstream, zero-padded
//! side      = used_groups:16 (used_bytes:16) * popcount(used_groups)
//!             ntables-1:3  lengths * ntables  gap:4 * nsub  selector * nseg
//! ```
//!
//! Decoding kind 1: read the side information, decode the bitstream (subsequences in
//! parallel, located by the gap array; codewords use the table selected for the segment
//! they start in), undo the zero-run coding into exactly `n` MTF values, undo MTF over the
//! block's alphabet, invert the BWT (stretches between sampled suffixes in parallel),
//! check the CRC. `docs/FORMAT-bwt.md` is the byte-level specification; the stage modules
//! document their parts: [`transform`], [`mtf`], [`zrle`], [`huffman`].
//!
//! Blocks are independent and processed in parallel; the output does not depend on the
//! number of threads. A block that does not shrink is stored, so the stream exceeds the
//! input by at most the header plus 10 bytes per block.

mod family;
pub mod gpu;
pub mod huffman;
pub mod mtf;
pub mod transform;
pub mod zrle;

pub(crate) use family::Bwt;
use rayon::prelude::*;

use crate::codec::error::{CodecError, Result};
use crate::codec::output::grow;
use crate::codec::varint;
use huffman::{BitReader, BitWriter, Geometry, MAX_CODE_LEN};

/// The codec's name, as used in specs and errors.
pub const NAME: &str = "bwt";
/// Stream magic.
pub const MAGIC: [u8; 4] = *b"CZBW";
/// Format version.
pub const VERSION: u8 = 1;
/// Smallest and largest block size.
pub const MIN_BLOCK_SIZE: u32 = 64 << 10;
pub const MAX_BLOCK_SIZE: u32 = 64 << 20;
/// Default block size (4 MiB).
pub const DEFAULT_BLOCK_SIZE: u32 = 4 << 20;
/// Table-selector segment: 2^8 = 256 bits.
pub const SEG_LOG2: u8 = 8;
/// Gap-array subsequence: 2^11 = 2048 bits.
pub const SUB_LOG2: u8 = 11;
/// Sampling rate of the BWT auxiliary indices: one per 2^14 bytes.
pub const AUX_LOG2: u8 = 14;

pub(crate) const KIND_RAW: u8 = 0;
pub(crate) const KIND_BWT: u8 = 1;

/// Parameters of the encoder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BwtParams {
    /// Uncompressed bytes per block, `MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE`.
    pub block_size: u32,
}

impl BwtParams {
    /// Validated parameters.
    pub fn new(block_size: u32) -> Result<Self> {
        if !(MIN_BLOCK_SIZE..=MAX_BLOCK_SIZE).contains(&block_size) {
            return Err(CodecError::invalid(
                NAME,
                format!("block size {block_size} outside {MIN_BLOCK_SIZE}..={MAX_BLOCK_SIZE}"),
            ));
        }
        Ok(BwtParams { block_size })
    }
}

impl Default for BwtParams {
    fn default() -> Self {
        BwtParams {
            block_size: DEFAULT_BLOCK_SIZE,
        }
    }
}

fn corrupt(reason: impl Into<String>) -> CodecError {
    CodecError::corrupt(NAME, reason)
}

/// The largest stream an input of `len` bytes can give with `params`: the header, a
/// directory entry per block (kind, varint length, CRC) and every block stored.
pub fn max_compressed_len(len: usize, params: &BwtParams) -> usize {
    let bs = block_size(params);
    (4 + 1 + 10 + 10 + 3) + len.div_ceil(bs).saturating_mul(1 + 10 + 4) + len
}

/// The block size `params` give, within the format's bounds.
pub(crate) fn block_size(params: &BwtParams) -> usize {
    params.block_size.clamp(MIN_BLOCK_SIZE, MAX_BLOCK_SIZE) as usize
}

/// Compresses `input` into a self-describing stream.
pub fn compress(input: &[u8], params: &BwtParams) -> Vec<u8> {
    let bs = block_size(params);
    let blocks: Vec<CodedBlock> = input
        .par_chunks(bs)
        .map(|b| {
            let (bwt, aux) = transform::forward(b, AUX_LOG2);
            CodedBlock::choose(b, encode_transformed(bwt, &aux))
        })
        .collect();
    assemble(input, bs, &blocks)
}

/// A block as the stream holds it: its kind, its payload (empty when stored) and the
/// CRC-32C of its bytes.
pub(crate) struct CodedBlock {
    kind: u8,
    payload: Vec<u8>,
    crc: u32,
}

impl CodedBlock {
    /// `block` coded as `payload`, or stored when that is not smaller.
    pub(crate) fn choose(block: &[u8], payload: Vec<u8>) -> Self {
        Self::with_crc(block.len(), payload, crc32c::crc32c(block))
    }

    /// [`CodedBlock::choose`] for a block of `len` bytes whose CRC-32C is `crc`.
    pub(crate) fn with_crc(len: usize, payload: Vec<u8>, crc: u32) -> Self {
        if payload.len() < len {
            CodedBlock {
                kind: KIND_BWT,
                payload,
                crc,
            }
        } else {
            CodedBlock {
                kind: KIND_RAW,
                payload: Vec::new(),
                crc,
            }
        }
    }
}

/// The stream of `input` cut into blocks of `bs` bytes, coded as `blocks`.
pub(crate) fn assemble(input: &[u8], bs: usize, blocks: &[CodedBlock]) -> Vec<u8> {
    let payload: usize = blocks.iter().map(|b| b.payload.len()).sum();
    let mut out = Vec::with_capacity(32 + blocks.len() * 15 + payload);
    out.extend_from_slice(&MAGIC);
    out.push(VERSION);
    varint::write_u64(&mut out, bs as u64);
    varint::write_u64(&mut out, input.len() as u64);
    out.extend_from_slice(&[SEG_LOG2, SUB_LOG2, AUX_LOG2]);
    for (block, raw) in blocks.iter().zip(input.chunks(bs)) {
        out.push(block.kind);
        let len = if block.kind == KIND_RAW {
            raw.len()
        } else {
            block.payload.len()
        };
        varint::write_u64(&mut out, len as u64);
        out.extend_from_slice(&block.crc.to_le_bytes());
    }
    for (block, raw) in blocks.iter().zip(input.chunks(bs)) {
        out.extend_from_slice(if block.kind == KIND_RAW {
            raw
        } else {
            &block.payload
        });
    }
    out
}

/// The BWT payload of one non-empty block from its transform (`bwt`, as long as the
/// block) and auxiliary indices at rate `2^AUX_LOG2`: move-to-front, zero runs, then
/// [`encode_symbols`].
pub(crate) fn encode_transformed(bwt: Vec<u8>, aux: &[u32]) -> Vec<u8> {
    let alphabet = mtf::alphabet(&bwt);
    let values = mtf::encode(&bwt, &alphabet);
    drop(bwt);
    let (symbols, freq) = zrle::encode(&values, alphabet.len() + 1);
    drop(values);
    encode_symbols(&alphabet, &symbols, &freq, aux)
}

/// The BWT payload from the block's zero-run symbols (`freq`: their counts, one per
/// symbol of the alphabet of `alphabet.len() + 1`): the auxiliary indices, the Huffman
/// side information and bitstream. The CPU and GPU paths share it.
pub(crate) fn encode_symbols(
    alphabet: &[u8],
    symbols: &[u16],
    freq: &[u32],
    aux: &[u32],
) -> Vec<u8> {
    let geo = Geometry {
        seg_log2: SEG_LOG2,
        sub_log2: SUB_LOG2,
    };
    payload(alphabet, &huffman::encode(symbols, freq, geo), aux)
}

/// The BWT payload of a block from its alphabet, its Huffman coding and its auxiliary
/// indices (the GPU encoder makes `enc` on the device).
pub(crate) fn payload(alphabet: &[u8], enc: &huffman::Encoded, aux: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(enc.bits.len() + 1024);
    for &a in aux {
        varint::write_u64(&mut out, u64::from(a));
    }
    varint::write_u64(&mut out, enc.total_bits);
    let mut side = BitWriter::with_capacity(1024);
    write_used(&mut side, alphabet);
    enc.write_side(&mut side);
    out.extend_from_slice(&side.finish());
    out.extend_from_slice(&enc.bits);
    out
}

fn write_used(w: &mut BitWriter, alphabet: &[u8]) {
    let mut map = [0u16; 16];
    for &b in alphabet {
        map[(b >> 4) as usize] |= 0x8000 >> (b & 15);
    }
    let groups = map.iter().enumerate().fold(
        0u32,
        |g, (i, &m)| if m != 0 { g | (0x8000 >> i) } else { g },
    );
    w.put(groups, 16);
    for &m in map.iter().filter(|&&m| m != 0) {
        w.put(u32::from(m), 16);
    }
}

fn read_used(r: &mut BitReader) -> Result<Vec<u8>> {
    let groups = r.read(16)?;
    let mut alphabet = Vec::new();
    for g in 0..16u32 {
        if groups & (0x8000 >> g) != 0 {
            let m = r.read(16)?;
            if m == 0 {
                return Err(corrupt("empty byte group marked as used"));
            }
            alphabet.extend(
                (0..16u32)
                    .filter(|b| m & (0x8000 >> b) != 0)
                    .map(|b| (g * 16 + b) as u8),
            );
        }
    }
    if alphabet.is_empty() {
        return Err(corrupt("block uses no byte values"));
    }
    Ok(alphabet)
}

/// Stream-level fields.
pub(crate) struct Header {
    pub(crate) block_size: u32,
    pub(crate) length: u64,
    pub(crate) geo: Geometry,
    pub(crate) aux_log2: u8,
    /// Bytes taken by the header.
    len: usize,
}

pub(crate) fn parse_header(stream: &[u8]) -> Result<Header> {
    if stream.len() < 5 || stream[..4] != MAGIC {
        return Err(corrupt("missing CZBW magic"));
    }
    if stream[4] != VERSION {
        return Err(corrupt(format!("unsupported version {}", stream[4])));
    }
    let mut pos = 5;
    let (bs, used) = varint::read_u64(&stream[pos..], NAME)?;
    pos += used;
    let (length, used) = varint::read_u64(&stream[pos..], NAME)?;
    pos += used;
    let [seg_log2, sub_log2, aux_log2] = stream
        .get(pos..pos + 3)
        .ok_or_else(|| corrupt("truncated header"))?
        .try_into()
        .unwrap();
    pos += 3;
    if !(u64::from(MIN_BLOCK_SIZE)..=u64::from(MAX_BLOCK_SIZE)).contains(&bs) {
        return Err(corrupt(format!("block size {bs} out of range")));
    }
    // segments must be at least as long as the longest codeword, so every segment but
    // the last has a codeword start
    if !(5..=16).contains(&seg_log2)
        || !(seg_log2..=24).contains(&sub_log2)
        || !(1..=30).contains(&aux_log2)
    {
        return Err(corrupt("bad bitstream geometry"));
    }
    Ok(Header {
        block_size: bs as u32,
        length,
        geo: Geometry { seg_log2, sub_log2 },
        aux_log2,
        len: pos,
    })
}

/// Reads the parameters and uncompressed length of a stream.
pub fn read_header(stream: &[u8]) -> Result<(BwtParams, u64)> {
    let h = parse_header(stream)?;
    Ok((
        BwtParams {
            block_size: h.block_size,
        },
        h.length,
    ))
}

/// Decompresses a stream made by [`compress`].
pub fn decompress(stream: &[u8]) -> Result<Vec<u8>> {
    decompress_with_limit(stream, usize::MAX)
}

/// A block found in the directory: kind, payload offset and length, output length, CRC.
pub(crate) type Entry = (u8, usize, usize, usize, u32);

/// Reads and checks the block directory against the stream: every entry's kind and
/// payload length, and the payloads filling the rest of the stream exactly. Returns the
/// entries and where the payloads start. Allocates at most one entry per 6 stream bytes.
pub(crate) fn read_directory(stream: &[u8], h: &Header) -> Result<(Vec<Entry>, usize)> {
    let length = usize::try_from(h.length).map_err(|_| corrupt("length does not fit in memory"))?;
    let bs = h.block_size as usize;
    let nblocks = length.div_ceil(bs);
    let mut pos = h.len;
    // each directory entry takes at least 6 bytes
    if nblocks > (stream.len() - pos) / 6 {
        return Err(corrupt("truncated block directory"));
    }
    let mut entries = Vec::with_capacity(nblocks);
    let mut payload_total = 0usize;
    for i in 0..nblocks {
        let n = bs.min(length - i * bs);
        let kind = *stream
            .get(pos)
            .ok_or_else(|| corrupt("truncated block directory"))?;
        pos += 1;
        let (plen, used) = varint::read_u64(stream.get(pos..).unwrap_or(&[]), NAME)?;
        pos += used;
        let crc = stream
            .get(pos..pos + 4)
            .ok_or_else(|| corrupt("truncated block directory"))?;
        let crc = u32::from_le_bytes(crc.try_into().unwrap());
        pos += 4;
        let plen = usize::try_from(plen).map_err(|_| corrupt("block payload too large"))?;
        match kind {
            KIND_RAW if plen != n => return Err(corrupt("stored block length mismatch")),
            // aux varints, total_bits, at least 5 side bytes and 1 bitstream byte
            KIND_BWT if plen < transform::aux_count(n, h.aux_log2) + 7 => {
                return Err(corrupt("BWT block payload too short"));
            }
            KIND_RAW | KIND_BWT => {}
            _ => return Err(corrupt(format!("unknown block kind {kind}"))),
        }
        entries.push((kind, payload_total, plen, n, crc));
        payload_total = payload_total
            .checked_add(plen)
            .ok_or_else(|| corrupt("block payloads overflow"))?;
    }
    if stream.len() - pos != payload_total {
        return Err(corrupt("block payloads do not fill the stream"));
    }
    Ok((entries, pos))
}

/// The uncompressed length a stream claims, once its header and block directory are
/// checked against its bytes (nothing is decoded).
pub fn decompressed_len(stream: &[u8]) -> Result<u64> {
    let h = parse_header(stream)?;
    read_directory(stream, &h)?;
    Ok(h.length)
}

/// Like [`decompress`], failing with [`CodecError::TooLarge`] before allocating when the
/// stream claims more than `max_output` bytes.
pub fn decompress_with_limit(stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    let h = parse_header(stream)?;
    if h.length > max_output as u64 || usize::try_from(h.length).is_err() {
        return Err(CodecError::TooLarge {
            codec: NAME,
            claimed: h.length,
            limit: max_output as u64,
        });
    }
    let bs = h.block_size as usize;
    let (entries, pos) = read_directory(stream, &h)?;
    let payloads = &stream[pos..];
    // Blocks decode a step at a time into output added just before: memory grows with
    // the blocks actually decoded, not with the header's claim. The first step is one
    // block and each successful step doubles the next, up to one block per thread (or
    // 64 MiB), so a stream whose blocks do not decode fails after its first.
    let most = rayon::current_num_threads().max(STEP_BYTES / bs).max(1);
    let mut per_step = 1;
    let mut out = Vec::new();
    let mut next = 0;
    while next < entries.len() {
        let step = &entries[next..(next + per_step).min(entries.len())];
        next += step.len();
        per_step = (per_step * 2).min(most);
        let start = out.len();
        let len: usize = step.iter().map(|e| e.3).sum();
        grow(&mut out, len, NAME)?;
        out[start..]
            .par_chunks_mut(bs.max(1))
            .zip(step.par_iter())
            .try_for_each(|(dst, &(kind, off, plen, n, crc))| {
                debug_assert_eq!(dst.len(), n);
                let p = &payloads[off..off + plen];
                if kind == KIND_RAW {
                    dst.copy_from_slice(p);
                } else {
                    decode_block(p, dst, &h)?;
                }
                let computed = crc32c::crc32c(dst);
                if computed != crc {
                    return Err(CodecError::Checksum {
                        codec: NAME,
                        stored: crc,
                        computed,
                    });
                }
                Ok(())
            })?;
    }
    Ok(out)
}

/// Output aimed at per decoding step (a step holds at least one block per thread).
const STEP_BYTES: usize = 64 << 20;

/// A kind-1 block's fields, read and checked: everything but what its bitstream
/// decodes to (which the CPU and GPU decoders check as they decode).
pub(crate) struct ParsedBlock<'a> {
    /// Auxiliary BWT indices, each in `1..=n`.
    pub(crate) aux: Vec<u32>,
    pub(crate) total_bits: u64,
    /// The block's distinct bytes, increasing (the MTF alphabet).
    pub(crate) alphabet: Vec<u8>,
    pub(crate) side: huffman::Side,
    /// The Huffman bitstream (`total_bits` bits, zero-padded).
    pub(crate) bits: &'a [u8],
}

/// Reads a kind-1 payload `p` of a block of `n` bytes.
pub(crate) fn parse_block<'a>(p: &'a [u8], n: usize, h: &Header) -> Result<ParsedBlock<'a>> {
    let mut pos = 0usize;
    let naux = transform::aux_count(n, h.aux_log2);
    if naux > p.len() {
        return Err(corrupt("truncated BWT indices"));
    }
    let mut aux = Vec::with_capacity(naux);
    for _ in 0..naux {
        let (a, used) = varint::read_u64(&p[pos..], NAME)?;
        pos += used;
        if a == 0 || a > n as u64 {
            return Err(corrupt("BWT index out of range"));
        }
        aux.push(a as u32);
    }
    let (total_bits, used) = varint::read_u64(&p[pos..], NAME)?;
    pos += used;
    if total_bits == 0 || total_bits > n as u64 * u64::from(MAX_CODE_LEN) {
        return Err(corrupt("bitstream length out of range"));
    }
    let stream_bytes = total_bits.div_ceil(8);
    if stream_bytes > (p.len() - pos) as u64 {
        return Err(corrupt("truncated bitstream"));
    }
    let side_end = p.len() - stream_bytes as usize;
    let side_bytes = &p[pos..side_end];
    let mut r = BitReader::new(side_bytes);
    let alphabet = read_used(&mut r)?;
    let side = huffman::read_side(&mut r, alphabet.len() + 1, total_bits, h.geo)?;
    // the side information must end in its last byte, padded with zeros
    let used_bits = r.bit_pos();
    if used_bits.div_ceil(8) != side_bytes.len() as u64 || has_nonzero_tail(side_bytes, used_bits) {
        return Err(corrupt("side information length mismatch"));
    }
    let bits = &p[side_end..];
    if has_nonzero_tail(bits, total_bits) {
        return Err(corrupt("nonzero padding after the bitstream"));
    }
    Ok(ParsedBlock {
        aux,
        total_bits,
        alphabet,
        side,
        bits,
    })
}

/// Decodes a kind-1 payload into `dst` (`dst.len()` is the block's byte count).
fn decode_block(p: &[u8], dst: &mut [u8], h: &Header) -> Result<()> {
    let n = dst.len();
    let block = parse_block(p, n, h)?;
    let symbols = huffman::decode(&block.side, block.bits, block.total_bits, h.geo, n)?;
    // The block's buffers are sized by `n` only once the symbols are known to make it.
    if zrle::decoded_len(&symbols) != Some(n as u64) {
        return Err(corrupt("the symbols do not make the block's length"));
    }
    let mut bwt = Vec::new();
    grow(&mut bwt, n, NAME)?;
    zrle::decode_mtf(&symbols, &block.alphabet, &mut bwt)?;
    drop(symbols);
    transform::inverse(bwt, &block.aux, h.aux_log2, dst)
}

/// Whether the bits after bit `used` in the last byte of `data` are not all zero.
fn has_nonzero_tail(data: &[u8], used: u64) -> bool {
    let rem = (used % 8) as u32;
    rem != 0 && data.last().is_some_and(|&b| b & (0xffu8 >> rem) != 0)
}

#[cfg(test)]
mod tests;
