//! G-match: LZ77 with a hash table in two parallel passes, writing the **Snappy format**.
//!
//! This is the CPU reference of the `gmatch` codec. It defines the bytes; the CUDA
//! kernels must write exactly the same ones. Every Snappy reader decodes them (the raw
//! format of `snappy::RawDecompress`, `snap::raw::Decoder`, Parquet SNAPPY pages, and
//! the framing format of `snap::read::FrameDecoder`). The byte-level specification is
//! the gmatch section of `docs/FORMAT.md`; this is the summary.
//!
//! # Raw format (Snappy)
//! `varint(uncompressed length ≤ u32::MAX)` followed by elements. An element starts with
//! a tag byte whose low two bits give its kind:
//!
//! | low bits | element | layout |
//! |---|---|---|
//! | `00` | literal | `len-1` in the tag's upper 6 bits if `< 60`; else 60/61/62/63 = that many (1..4) little-endian bytes of `len-1` follow; then `len` bytes |
//! | `01` | copy-1 | length `4 + bits 2..4`, offset `bits 5..7 << 8 \| next byte` (11 bits) |
//! | `10` | copy-2 | length `1 + upper 6 bits`, offset: next 2 bytes LE |
//! | `11` | copy-4 | length `1 + upper 6 bits`, offset: next 4 bytes LE |
//!
//! A copy repeats `len` bytes starting `offset` bytes back (overlap allowed).
//!
//! # How G-match chooses its elements (the rules a GPU must reproduce)
//! The input is cut into independent **blocks of 65536 bytes** (the last may be
//! shorter); a raw stream is the varint followed by each block's elements in order. A
//! block's elements never refer outside it, so blocks compress in parallel (rayon here,
//! one CUDA block each on the GPU). Within a block of `n` bytes:
//!
//! 1. **Pass 1, hashing ([`hash`]).** Every position `p ≤ n-4` is hashed:
//!    `h(p) = (u32_le(block[p..p+4]) * 0x1E35A7BD mod 2^32) >> 18` (a 2^14-entry table of
//!    u16 positions, 32 KiB of shared memory). A position **writes** the table unless
//!    its window equals the previous position's (`p > 0` and `block[p-1..p+3] ==
//!    block[p..p+4]`, i.e. inside a run of 5+ equal bytes), so a run is remembered by
//!    its first position. The **index array** holds for every `p` the largest writing
//!    `q < p` with `h(q) = h(p)`, or none. The GPU scans 32-byte units with 32 lanes: a
//!    lane takes the highest lower writing lane of its unit with the same hash
//!    (`__match_any_sync` among writing lanes + a mask of the lanes below), else the
//!    table entry as it was before the unit; after the unit, per hash, the highest
//!    writing lane writes its position. That equals the sequential rule, so it is
//!    deterministic and loses nothing (the paper's lanes miss same-unit repeats).
//! 2. **Candidates, verification and skip pointers ([`parse::candidates`],
//!    [`parse::verify_candidates`], [`parse::skip_pointers`]).** Position `p` has up to
//!    3 candidates, read from the index array as pass 1 wrote it: `c1 = index[p]`,
//!    `c2 = index[c1]` (the entry before `c1` on the same hash chain) and the shifted
//!    `c3 = index[p + 3] - 3` (where the window sharing `p`'s last byte occurred, moved
//!    back; none if `p + 3 >= n` or `index[p + 3]` is none or `< 3`). A candidate is kept
//!    only if its 4 bytes equal those at `p` (one 4-byte compare per candidate).
//!    `next[p]` is the first position `≥ p` with a kept candidate (the paper's
//!    preprocessed index array).
//! 3. **Pass 2, greedy parse ([`parse::greedy_parse`]).** From `p = next[0]`: the match
//!    length of a kept candidate `c` is the longest common prefix of `block[p..n]` and
//!    `block[c..n]` (found with 4-byte compares, ended inside the last word; never past
//!    the block end); the match at `p` is the kept candidate with the longest match, the
//!    first of `c1, c2, c3` on a tie ([`parse::best_match`]); then `p = next[p + len]`.
//!    Bytes between matches are literals. This is the sequential greedy parse; a GPU may
//!    compute it any way that yields the same matches (one thread walking the skip
//!    pointers, or per-chunk speculation with a fix-up where paths rejoin).
//! 4. **Tags ([`encode`]).** A literal run of `len` bytes uses the 1-byte tag if
//!    `len ≤ 60`, tag 60 + 1 byte if `len ≤ 256`, else tag 61 + 2 bytes (a run never
//!    exceeds 65536). A match of length `L` at offset `o` (`1 ≤ o < 65536`): while
//!    `L ≥ 68` emit copy-2 of 64; then if `L > 64` emit copy-2 of 60; the remaining
//!    `L` (4..=64) is a copy-1 if `L ≤ 11` and `o < 2048`, else a copy-2. Copy-4 is
//!    never written (but is decoded).
//!
//! The CPU compressor ([`compress_raw`]) fuses these steps into two loops per block
//! (pass 1 by the sequential rule, then one scan that gathers, verifies and extends the
//! candidates of each position it reaches and emits); the staged functions
//! ([`encode::compress_block_staged`]) mirror the kernels and the tests check that both
//! give the same bytes.
//!
//! # Framing format (Snappy framing)
//! Stream identifier chunk `ff 06 00 00 "sNaPpY"`, then one chunk per 65536 bytes of
//! input: the chunk is compressed (type `0x00`) unless its compressed form is not
//! smaller than `len - len/8` bytes, then it is stored (type `0x01`). Each data chunk
//! carries the masked CRC-32C of its uncompressed bytes. The decoder accepts padding
//! and reserved skippable chunks, repeated stream identifiers (concatenated streams)
//! and an empty stream, and rejects reserved unskippable chunks. See [`frame`].
//!
//! # Blocks format (colzip's containers)
//! A length, a size table and one raw Snappy stream per 64 KiB block ([`blocks`]), so a
//! part decodes as a batch of independent blocks. Each block stream is exactly
//! [`compress_raw`] of its bytes.
//!
//! # Decoding
//! The decoders accept any valid Snappy stream, not only G-match's, and validate every
//! tag, length and offset: corrupt input gives `Err`, never a panic, and nothing is
//! allocated beyond the claimed output size once it has been checked against the
//! limit and against what the stream could possibly produce (64 bytes per 3 bytes).

pub mod blocks;
pub mod decode;
mod decode_fast;
pub mod encode;
mod family;
pub mod frame;
pub mod gpu;
pub mod hash;
pub mod parse;

pub use blocks::{
    blocks_output_len, compress_blocks, decompress_blocks, decompress_blocks_into, max_blocks_len,
};
pub use decode::{
    decompress_raw, decompress_raw_into, decompress_raw_with_limit, raw_decompressed_len,
    raw_output_len,
};
pub use encode::{compress_raw, max_compressed_len};
pub(crate) use family::Gmatch;
pub use family::SnappyFormat;
pub use frame::{
    compress_framed, decompress_framed, decompress_framed_into, decompress_framed_to,
    decompress_framed_with_limit, framed_output_len,
};

/// The codec's name in specs and errors.
pub const NAME: &str = "gmatch";

/// Bytes per independent block (and per frame chunk): offsets stay below 65536.
pub const BLOCK_SIZE: usize = 1 << 16;

/// The shortest match: the hash covers 4 bytes and the match is verified on 4 bytes.
pub const MIN_MATCH: usize = 4;

/// The 4 bytes at `pos` as a little-endian word (caller guarantees `pos + 4 <= len`).
#[inline(always)]
pub(crate) fn read_u32_le(bytes: &[u8], pos: usize) -> u32 {
    let word: [u8; 4] = bytes[pos..pos + 4].try_into().expect("4 bytes");
    u32::from_le_bytes(word)
}

/// The 8 bytes at `pos` as a little-endian word (caller guarantees `pos + 8 <= len`).
#[inline(always)]
pub(crate) fn read_u64_le(bytes: &[u8], pos: usize) -> u64 {
    let word: [u8; 8] = bytes[pos..pos + 8].try_into().expect("8 bytes");
    u64::from_le_bytes(word)
}

#[cfg(test)]
mod tests;
