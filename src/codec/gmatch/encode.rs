//! Tag emission, the per-block compressors (fused and staged) and [`compress_raw`].
//!
//! Tag rules:
//! - literal run of `len` bytes (`1 ..= 65536` here): `len <= 60` → one tag byte
//!   `(len-1) << 2`; `len <= 256` → `60 << 2`, `len-1`; else `61 << 2`, `len-1` as u16 LE.
//! - match of length `L >= 4` at offset `1 <= o < 65536`: while `L >= 68` a copy-2 of 64;
//!   then if `L > 64` a copy-2 of 60; the rest (`4 ..= 64`) is a copy-1 when `L <= 11`
//!   and `o < 2048`, else a copy-2. (Each piece keeps at least 4 bytes, so the tail can
//!   always be a copy-1 when the offset allows.)

use rayon::prelude::*;

use super::super::error::{CodecError, Result};
use super::super::varint;
use super::hash::{self, NO_CANDIDATE, Table, hashed_positions};
use super::parse::{self, Match};
use super::{BLOCK_SIZE, NAME, read_u32_le};

const TAG_LITERAL: u8 = 0b00;
const TAG_COPY1: u8 = 0b01;
const TAG_COPY2: u8 = 0b10;

/// Room kept past the worst case so short literals can be moved 16 bytes at a time.
const SLACK: usize = 16;

/// Writes elements into a buffer sized for the worst case of the block.
struct Writer<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl Writer<'_> {
    /// A literal element holding `block[start..end]` (`end - start` ≥ 1, < 2^32).
    #[inline(always)]
    fn literal(&mut self, block: &[u8], start: usize, end: usize) {
        let n = end - start - 1;
        if n < 60 {
            self.buf[self.len] = ((n as u8) << 2) | TAG_LITERAL;
            self.len += 1;
            if n < 16 && start + 16 <= block.len() && self.len + 16 <= self.buf.len() {
                let chunk: [u8; 16] = block[start..start + 16].try_into().expect("16 bytes");
                self.buf[self.len..self.len + 16].copy_from_slice(&chunk);
                self.len += n + 1;
                return;
            }
        } else {
            // 60..=63: 1..=4 little-endian bytes of `len - 1` follow.
            let extra = if n < 1 << 8 {
                1
            } else if n < 1 << 16 {
                2
            } else if n < 1 << 24 {
                3
            } else {
                4
            };
            self.buf[self.len] = ((59 + extra as u8) << 2) | TAG_LITERAL;
            self.buf[self.len + 1..self.len + 1 + extra]
                .copy_from_slice(&(n as u32).to_le_bytes()[..extra]);
            self.len += 1 + extra;
        }
        self.buf[self.len..self.len + n + 1].copy_from_slice(&block[start..end]);
        self.len += n + 1;
    }

    #[inline(always)]
    fn copy2(&mut self, offset: usize, len: usize) {
        debug_assert!((1..=64).contains(&len) && (1..1 << 16).contains(&offset));
        self.buf[self.len..self.len + 3].copy_from_slice(&[
            (((len - 1) as u8) << 2) | TAG_COPY2,
            offset as u8,
            (offset >> 8) as u8,
        ]);
        self.len += 3;
    }

    /// The copy elements of one match (offset `1..65536`, `len >= 4`).
    #[inline(always)]
    fn copy(&mut self, offset: usize, mut len: usize) {
        debug_assert!(len >= super::MIN_MATCH && (1..1 << 16).contains(&offset));
        while len >= 68 {
            self.copy2(offset, 64);
            len -= 64;
        }
        if len > 64 {
            self.copy2(offset, 60);
            len -= 60;
        }
        if len <= 11 && offset < 2048 {
            self.buf[self.len..self.len + 2].copy_from_slice(&[
                (((offset >> 8) as u8) << 5) | (((len - 4) as u8) << 2) | TAG_COPY1,
                offset as u8,
            ]);
            self.len += 2;
        } else {
            self.copy2(offset, len);
        }
    }
}

/// Runs `write` on a [`Writer`] over room for a block of `block_len` bytes at the end
/// of `out`, then keeps only what it wrote.
fn with_writer(out: &mut Vec<u8>, block_len: usize, write: impl FnOnce(&mut Writer<'_>)) {
    let base = out.len();
    out.resize(base + max_compressed_len(block_len) + SLACK, 0);
    let mut writer = Writer {
        buf: &mut out[base..],
        len: 0,
    };
    write(&mut writer);
    let written = writer.len;
    out.truncate(base + written);
}

/// Appends a literal element holding `bytes` (1 to `u32::MAX` bytes).
pub fn emit_literal(out: &mut Vec<u8>, bytes: &[u8]) {
    assert!(!bytes.is_empty());
    with_writer(out, bytes.len(), |w| w.literal(bytes, 0, bytes.len()));
}

/// Appends the copy elements of one match (offset `1..65536`, `len >= 4`).
pub fn emit_copy(out: &mut Vec<u8>, offset: usize, len: usize) {
    assert!(len >= super::MIN_MATCH && (1..1 << 16).contains(&offset));
    let base = out.len();
    out.resize(base + 3 * len.div_ceil(60), 0);
    let mut writer = Writer {
        buf: &mut out[base..],
        len: 0,
    };
    writer.copy(offset, len);
    let written = writer.len;
    out.truncate(base + written);
}

/// Appends a block's elements given its matches (sorted, non-overlapping): literals fill
/// the gaps.
pub fn encode_block(block: &[u8], matches: &[Match], out: &mut Vec<u8>) {
    with_writer(out, block.len(), |w| {
        let mut literal_start = 0usize;
        for m in matches {
            let pos = m.pos as usize;
            if literal_start < pos {
                w.literal(block, literal_start, pos);
            }
            w.copy(m.offset as usize, m.len as usize);
            literal_start = pos + m.len as usize;
        }
        if literal_start < block.len() {
            w.literal(block, literal_start, block.len());
        }
    });
}

/// The elements of one block by the staged pipeline the kernels run: pass 1 (index
/// array), verification of the candidates, skip pointers, greedy parse, tags.
/// Same bytes as [`compress_block`].
pub fn compress_block_staged(block: &[u8], out: &mut Vec<u8>) {
    let index = hash::index_array(block);
    let kept = parse::verify_candidates(block, &index);
    let next = parse::skip_pointers(&kept);
    let matches = parse::greedy_parse(block, &kept, &next);
    encode_block(block, &matches, out);
}

/// Working memory of the fused compressor for one thread: the hash table and the index
/// array of the block.
pub struct Workspace {
    table: Box<Table>,
    index: Vec<u16>,
}

impl Workspace {
    /// An empty workspace; the index array grows to the largest block compressed with it.
    pub fn new() -> Self {
        Workspace {
            table: hash::new_table(),
            index: Vec::new(),
        }
    }
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

/// The elements of one block (`block.len() <= 65536`), the steps fused into two loops:
/// pass 1 by the sequential rule ([`hash::index_array_into`]), then one scan that
/// gathers, verifies and extends each position's candidates
/// ([`parse::best_kept_match`]), emits the match and resumes after it. Same bytes as
/// [`compress_block_staged`].
pub fn compress_block(block: &[u8], workspace: &mut Workspace, out: &mut Vec<u8>) {
    debug_assert!(block.len() <= BLOCK_SIZE);
    with_writer(out, block.len(), |w| {
        compress_block_fused(block, workspace, w)
    });
}

fn compress_block_fused(block: &[u8], workspace: &mut Workspace, w: &mut Writer<'_>) {
    let n = block.len();
    let hashed = hashed_positions(n);
    let mut literal_start = 0usize;
    if hashed > 0 {
        let Workspace { table, index } = workspace;
        if index.len() < n {
            index.resize(n, NO_CANDIDATE);
        }
        let index = &mut index[..n];
        hash::index_array_into(block, table, index);
        let index: &[u16] = index;
        let mut pos = 0usize;
        while pos < hashed {
            let word = read_u32_le(block, pos);
            let cands = parse::candidates(index, pos);
            match parse::best_kept_match(block, pos, word, &cands) {
                None => pos += 1,
                Some((cand, len)) => {
                    if literal_start < pos {
                        w.literal(block, literal_start, pos);
                    }
                    w.copy(pos - cand, len);
                    pos += len;
                    literal_start = pos;
                }
            }
        }
    }
    if literal_start < n {
        w.literal(block, literal_start, n);
    }
}

/// An upper bound of [`compress_raw`]'s output for `input_len` bytes (as Snappy's:
/// `32 + n + n/6`; the true worst case is about `n + n/65 + 3` per block plus the varint).
pub fn max_compressed_len(input_len: usize) -> usize {
    32usize
        .saturating_add(input_len)
        .saturating_add(input_len / 6)
}

/// Compresses `input` into a Snappy raw stream. Blocks are compressed in parallel; the
/// bytes do not depend on the number of threads. `Err` only when the input is longer
/// than `u32::MAX` bytes (the format's limit).
pub fn compress_raw(input: &[u8]) -> Result<Vec<u8>> {
    let len = u32::try_from(input.len()).map_err(|_| CodecError::TooLarge {
        codec: NAME,
        claimed: input.len() as u64,
        limit: u64::from(u32::MAX),
    })?;
    let mut out = Vec::new();
    varint::write_u64(&mut out, u64::from(len));
    if input.len() <= BLOCK_SIZE {
        out.reserve(max_compressed_len(input.len()));
        compress_block(input, &mut Workspace::new(), &mut out);
        return Ok(out);
    }
    let blocks: Vec<Vec<u8>> = input
        .par_chunks(BLOCK_SIZE)
        .map_init(Workspace::new, |workspace, block| {
            let mut elements = Vec::with_capacity(max_compressed_len(block.len()));
            compress_block(block, workspace, &mut elements);
            elements
        })
        .collect();
    out.reserve_exact(blocks.iter().map(Vec::len).sum());
    for block in &blocks {
        out.extend_from_slice(block);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_tags() {
        for (len, header) in [
            (1usize, vec![0x00]),
            (60, vec![59 << 2]),
            (61, vec![60 << 2, 60]),
            (256, vec![60 << 2, 255]),
            (257, vec![61 << 2, 0, 1]),
            (65536, vec![61 << 2, 0xff, 0xff]),
            (65537, vec![62 << 2, 0, 0, 1]),
        ] {
            let mut out = Vec::new();
            emit_literal(&mut out, &vec![7u8; len]);
            assert_eq!(&out[..header.len()], &header[..], "len {len}");
            assert_eq!(out.len(), header.len() + len);
        }
    }

    #[test]
    fn copy_tags_and_splits() {
        let cases: [(usize, usize, Vec<u8>); 7] = [
            (1, 4, vec![0x01, 1]),
            (2047, 11, vec![(7 << 5) | (7 << 2) | 1, 0xff]),
            (2048, 4, vec![(3 << 2) | 2, 0, 8]),
            (5, 12, vec![(11 << 2) | 2, 5, 0]),
            (5, 64, vec![(63 << 2) | 2, 5, 0]),
            (5, 67, vec![(59 << 2) | 2, 5, 0, (3 << 2) | 1, 5]),
            (5, 68, vec![(63 << 2) | 2, 5, 0, 1, 5]),
        ];
        for (offset, len, expected) in cases {
            let mut out = Vec::new();
            emit_copy(&mut out, offset, len);
            assert_eq!(out, expected, "offset {offset} len {len}");
        }
    }

    #[test]
    fn max_len_bounds_incompressible_input() {
        let mut state = 1u32;
        let input: Vec<u8> = (0..200_000)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 17;
                state ^= state << 5;
                state as u8
            })
            .collect();
        assert!(compress_raw(&input).unwrap().len() <= max_compressed_len(input.len()));
    }
}
