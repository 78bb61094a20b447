//! Tag emission, the per-block compressors (fused and staged) and [`compress_raw`].
//!
//! Tag rules:
//! - literal run of `len` bytes (`1 ..= 65536` here): `len <= 60` → one tag byte
//!   `(len-1) << 2`; `len <= 256` → `60 << 2`, `len-1`; else `61 << 2`, `len-1` as u16 LE.
//! - match of length `L >= 4` at offset `1 <= o < 65536`: while `L >= 68` a copy-2 of 64;
//!   then if `L > 64` a copy-2 of 60; the rest (`4 ..= 64`) is a copy-1 when `L <= 11`
//!   and `o < 2048`, else a copy-2. (Each piece keeps at least 4 bytes, so the tail can
//!   always be a copy-1 when the offset allows.)

use std::cell::RefCell;
use std::hint::select_unpredictable;
use std::marker::PhantomData;
use std::mem::MaybeUninit;

use rayon::prelude::*;

use super::super::error::{CodecError, Result};
use super::super::varint;
use super::hash::{self, BlockIndex, Table, hashed_positions};
use super::parse::{self, Match};
use super::{BLOCK_SIZE, MIN_MATCH, NAME, read_u32_le};

const TAG_LITERAL: u8 = 0b00;
const TAG_COPY1: u8 = 0b01;
const TAG_COPY2: u8 = 0b10;

/// Room kept past the worst case: every element is stored as one fixed-size write of
/// up to this many bytes, of which it keeps its own.
const SLACK: usize = 32;

/// Writes elements into uninitialised room at the end of a `Vec` (see [`with_writer`]).
/// Each fixed-size store first checks that `SLACK` bytes are left at the write
/// position (a block's elements fit in `max_compressed_len(n)`, so the check never
/// fails; it keeps a wrong bound from writing out of the room).
struct Writer<'a> {
    start: *mut u8,
    /// The next byte to write.
    dst: *mut u8,
    /// The room's end less `SLACK`: the last position of a fixed-size store.
    limit: *mut u8,
    _room: PhantomData<&'a mut [MaybeUninit<u8>]>,
}

impl<'a> Writer<'a> {
    fn new(room: &'a mut [MaybeUninit<u8>]) -> Self {
        assert!(room.len() >= SLACK);
        let start = room.as_mut_ptr().cast::<u8>();
        Writer {
            start,
            dst: start,
            // SAFETY: `room.len() - SLACK` is within the room.
            limit: unsafe { start.add(room.len() - SLACK) },
            _room: PhantomData,
        }
    }

    /// Bytes written.
    fn len(&self) -> usize {
        self.dst as usize - self.start as usize
    }

    /// Stores `bytes` at the end and keeps the first `keep` of them (`keep <= N`).
    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: [u8; N], keep: usize) {
        const { assert!(N <= SLACK) };
        debug_assert!(keep <= N);
        assert!(self.dst <= self.limit, "element writer out of room");
        // SAFETY: `dst <= limit`: `SLACK >= N` bytes of room at `dst`; `dst` stays within
        // the room (`keep <= N`).
        unsafe {
            self.dst.cast::<[u8; N]>().write_unaligned(bytes);
            self.dst = self.dst.add(keep);
        }
    }

    /// Appends `bytes` (any length).
    #[inline(always)]
    fn put_slice(&mut self, bytes: &[u8]) {
        let left = self.limit as usize + SLACK - self.dst as usize;
        assert!(bytes.len() <= left, "element writer out of room");
        // SAFETY: `bytes.len()` bytes of room at `dst` (checked above); the room is a
        // `Vec`'s spare capacity, which `bytes` cannot overlap while it is borrowed.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), self.dst, bytes.len());
            self.dst = self.dst.add(bytes.len());
        }
    }

    /// A literal element holding `block[start..end]` (`end - start` ≥ 1, < 2^32).
    #[inline(always)]
    fn literal(&mut self, block: &[u8], start: usize, end: usize) {
        let n = end - start - 1;
        // Up to 16 bytes: the tag and 16 bytes in one store when the block has them.
        if n < 16 && block.len() - start >= 16 {
            let mut element = [0u8; 17];
            element[0] = ((n as u8) << 2) | TAG_LITERAL;
            element[1..].copy_from_slice(&block[start..start + 16]);
            self.put(element, n + 2);
            return;
        }
        if n < 60 {
            self.put([((n as u8) << 2) | TAG_LITERAL], 1);
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
            let [b0, b1, b2, b3] = (n as u32).to_le_bytes();
            self.put(
                [((59 + extra as u8) << 2) | TAG_LITERAL, b0, b1, b2, b3],
                1 + extra,
            );
        }
        self.literal_bytes(block, start, end);
    }

    /// Appends `block[start..end]`: up to 64 bytes as 16-byte moves when the block and
    /// the room both hold the length rounded up to 16 (the bytes stored past `end`'s
    /// copy are overwritten by the next element or stay in spare capacity), else as
    /// one copy.
    #[inline(always)]
    fn literal_bytes(&mut self, block: &[u8], start: usize, end: usize) {
        let len = end - start;
        let rounded = (len + 15) & !15;
        let left = self.limit as usize + SLACK - self.dst as usize;
        if len <= 64 && rounded <= left && rounded <= block.len() - start {
            for i in (0..rounded).step_by(16) {
                let chunk: [u8; 16] = block[start + i..start + i + 16]
                    .try_into()
                    .expect("16 bytes");
                // SAFETY: `i + 16 <= rounded <= left`: within the room at `dst`.
                unsafe { self.dst.add(i).cast::<[u8; 16]>().write_unaligned(chunk) };
            }
            // SAFETY: `len <= rounded <= left`.
            self.dst = unsafe { self.dst.add(len) };
        } else {
            self.put_slice(&block[start..end]);
        }
    }

    #[inline(always)]
    fn copy2(&mut self, offset: usize, len: usize) {
        debug_assert!((1..=64).contains(&len) && (1..1 << 16).contains(&offset));
        let [lo, hi] = (offset as u16).to_le_bytes();
        self.put([(((len - 1) as u8) << 2) | TAG_COPY2, lo, hi, 0], 3);
    }

    /// The copy elements of one match (offset `1..65536`, `len >= 4`).
    #[inline(always)]
    fn copy(&mut self, offset: usize, mut len: usize) {
        debug_assert!(len >= super::MIN_MATCH && (1..1 << 16).contains(&offset));
        if len > 64 {
            len = self.long_copy_head(offset, len);
        }
        // 4..=64 left: a copy-1 or a copy-2, chosen without a branch.
        let copy1 = len <= 11 && offset < 2048;
        let short =
            ((offset >> 8) << 5) | ((len - 4) << 2) | usize::from(TAG_COPY1) | (offset & 0xFF) << 8;
        let long = ((len - 1) << 2) | usize::from(TAG_COPY2) | offset << 8;
        let word = select_unpredictable(copy1, short, long);
        let keep = select_unpredictable(copy1, 2, 3);
        self.put((word as u32).to_le_bytes(), keep);
    }

    /// The leading copy-2 elements of a match longer than 64 bytes; returns what is left
    /// (4..=64 bytes).
    #[inline(never)]
    fn long_copy_head(&mut self, offset: usize, mut len: usize) -> usize {
        while len >= 68 {
            self.copy2(offset, 64);
            len -= 64;
        }
        if len > 64 {
            self.copy2(offset, 60);
            len -= 60;
        }
        len
    }
}

/// Runs `write` on a [`Writer`] over room for a block of `block_len` bytes at the end
/// of `out`, then keeps what it wrote. (The writer is passed by value and handed back,
/// so that the compressor's loop can keep it in registers.)
fn with_writer(
    out: &mut Vec<u8>,
    block_len: usize,
    write: impl for<'w> FnOnce(Writer<'w>) -> Writer<'w>,
) {
    let room = max_compressed_len(block_len) + SLACK;
    out.reserve(room);
    let written = write(Writer::new(&mut out.spare_capacity_mut()[..room])).len();
    // SAFETY: the writer stored every byte it kept, the first `written` of the spare
    // capacity.
    unsafe { out.set_len(out.len() + written) };
}

/// Appends a literal element holding `bytes` (1 to `u32::MAX` bytes).
pub fn emit_literal(out: &mut Vec<u8>, bytes: &[u8]) {
    assert!(!bytes.is_empty());
    with_writer(out, bytes.len(), |mut w| {
        w.literal(bytes, 0, bytes.len());
        w
    });
}

/// Appends the copy elements of one match (offset `1..65536`, `len >= 4`).
pub fn emit_copy(out: &mut Vec<u8>, offset: usize, len: usize) {
    assert!(len >= super::MIN_MATCH && (1..1 << 16).contains(&offset));
    with_writer(out, len, |mut w| {
        w.copy(offset, len);
        w
    });
}

/// Appends a block's elements given its matches (sorted, non-overlapping): literals fill
/// the gaps.
pub fn encode_block(block: &[u8], matches: &[Match], out: &mut Vec<u8>) {
    with_writer(out, block.len(), |mut w| {
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
        w
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

/// Working memory of the fused compressor for one thread: the hash table and the
/// index array of a block.
pub struct Workspace {
    table: Box<Table>,
    index: Box<BlockIndex>,
}

impl Workspace {
    /// An empty workspace (160 KiB, of which a block touches what its length needs).
    pub fn new() -> Self {
        Workspace {
            table: hash::new_table(),
            index: hash::new_index(),
        }
    }
}

impl Default for Workspace {
    fn default() -> Self {
        Self::new()
    }
}

thread_local! {
    /// The workspace of the compressors on this thread, allocated once: a fresh one per
    /// call (or per rayon job) would cost page faults and zeroing comparable to a
    /// block's compression.
    static WORKSPACE: RefCell<Workspace> = RefCell::new(Workspace::new());
}

/// [`compress_block`] with this thread's workspace.
pub(crate) fn compress_block_here(block: &[u8], out: &mut Vec<u8>) {
    WORKSPACE.with_borrow_mut(|workspace| compress_block(block, workspace, out))
}

/// The elements of one block (`block.len() <= 65536`), the steps fused into two loops:
/// pass 1 by the sequential rule ([`hash::index_array_into`]), then one scan that
/// gathers, verifies and extends the candidates of each position it reaches
/// ([`parse::match_at`]; the last 15 positions by [`parse::best_kept_match`]), emits
/// the match and resumes after it. Same bytes as [`compress_block_staged`].
pub fn compress_block(block: &[u8], workspace: &mut Workspace, out: &mut Vec<u8>) {
    assert!(block.len() <= BLOCK_SIZE);
    with_writer(out, block.len(), |w| {
        compress_block_fused(block, workspace, w)
    });
}

fn compress_block_fused<'w>(
    block: &[u8],
    workspace: &mut Workspace,
    mut w: Writer<'w>,
) -> Writer<'w> {
    let n = block.len();
    let hashed = hashed_positions(n);
    let mut literal_start = 0usize;
    if hashed > 0 {
        let Workspace { table, index } = workspace;
        hash::index_array_into(block, table, &mut index[..n]);
        let index: &BlockIndex = index;
        // Positions with 16 bytes left, then the last ones by the general code.
        let mut pos = 0usize;
        while pos + parse::REACH <= n {
            match parse::match_at(block, index, pos) {
                None => pos += 1,
                // The shortest match (most of them in integer columns) on its own branch:
                // when predicted, the next position does not wait for the length.
                Some((cand, MIN_MATCH)) => {
                    emit_match(&mut w, block, literal_start, pos, cand, MIN_MATCH);
                    pos += MIN_MATCH;
                    literal_start = pos;
                }
                Some((cand, len)) => {
                    emit_match(&mut w, block, literal_start, pos, cand, len);
                    pos += len;
                    literal_start = pos;
                }
            }
        }
        let index = &index[..n];
        while pos < hashed {
            let word = read_u32_le(block, pos);
            match parse::best_kept_match(block, pos, word, &parse::candidates(index, pos)) {
                None => pos += 1,
                Some((cand, len)) => {
                    emit_match(&mut w, block, literal_start, pos, cand, len);
                    pos += len;
                    literal_start = pos;
                }
            }
        }
    }
    if literal_start < n {
        w.literal(block, literal_start, n);
    }
    w
}

/// The literal `block[literal_start..pos]` (if any) and the copy of the match at `pos`.
#[inline(always)]
fn emit_match(
    w: &mut Writer<'_>,
    block: &[u8],
    literal_start: usize,
    pos: usize,
    cand: usize,
    len: usize,
) {
    if literal_start < pos {
        w.literal(block, literal_start, pos);
    }
    w.copy(pos - cand, len);
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
    let compress = compress_block_here;
    if input.len() <= BLOCK_SIZE {
        // One allocation: the varint (at most 5 bytes) and the block's room.
        let mut out = Vec::with_capacity(5 + max_compressed_len(input.len()) + SLACK);
        varint::write_u64(&mut out, u64::from(len));
        compress(input, &mut out);
        return Ok(out);
    }
    let mut out = Vec::new();
    varint::write_u64(&mut out, u64::from(len));
    let blocks: Vec<Vec<u8>> = input
        .par_chunks(BLOCK_SIZE)
        .map(|block| {
            let mut elements = Vec::new();
            compress(block, &mut elements);
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
