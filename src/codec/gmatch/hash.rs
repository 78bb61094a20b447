//! Pass 1: the hash of every 4-byte window and the index array of candidates.
//!
//! Rule: within a block of `n` bytes every position `p` with `p + 4 <= n` is hashed with
//! [`hash`]; it writes the table unless [`inserts`] says no (its window equals the
//! previous position's); `index[p]` is the largest writing `q < p` with
//! `hash(q) == hash(p)`, or [`NO_CANDIDATE`] (also at the last three positions, which
//! are not hashed). For a writing `c`, `index[c]` is the next older entry of the same
//! hash's chain, which pass 2 follows to a second candidate ([`super::parse::candidates`]).
//!
//! [`index_array`] computes it the way the kernel does, 32 positions (one warp's lanes)
//! per 32-byte unit against a table that is only updated between units; the result is
//! the sequential rule above, which the tests check against [`index_array_sequential`]
//! (the fused compressor's loop, [`index_array_into`]).

use super::{MIN_MATCH, read_u32_le};

/// log2 of the hash table's entries.
pub const HASH_BITS: u32 = 14;
/// Entries in the hash table (u16 positions: 32 KiB, fits GPU shared memory).
pub const TABLE_SIZE: usize = 1 << HASH_BITS;
/// Multiplier of the multiplicative hash (the one Snappy uses).
pub const HASH_MULTIPLIER: u32 = 0x1E35_A7BD;
/// Marks "no candidate" in the table and the index array. Never a hashed position: the
/// last hashed position of a 65536-byte block is 65532.
pub const NO_CANDIDATE: u16 = u16::MAX;
/// Positions scanned together (a warp's lanes over a 32-byte unit).
pub const UNIT: usize = 32;

/// The hash table of one block: `TABLE_SIZE` entries, plus one write-only entry at
/// index `TABLE_SIZE` where the CPU loop sends the writes of positions that
/// [`inserts`] skips (a branch-free store; never read).
pub type Table = [u16; TABLE_SIZE + 1];

/// Index of the write-only sink entry of a [`Table`].
pub const SINK: usize = TABLE_SIZE;

/// The index array of a block at its largest, as the fused compressor keeps it: pass 1
/// writes the entries of a block's positions before they are read, and the entry at
/// position [`NO_CANDIDATE`] (never a hashed position) stays [`NO_CANDIDATE`], so
/// `index[index[p]]` is [`NO_CANDIDATE`] when `index[p]` is.
pub type BlockIndex = [u16; super::BLOCK_SIZE];

/// A fresh index array: zeros (pages the allocator need not touch until pass 1 writes
/// them), and [`NO_CANDIDATE`] at position [`NO_CANDIDATE`].
pub fn new_index() -> Box<BlockIndex> {
    let mut index: Box<BlockIndex> = vec![0; super::BLOCK_SIZE]
        .into_boxed_slice()
        .try_into()
        .expect("BLOCK_SIZE entries");
    index[usize::from(NO_CANDIDATE)] = NO_CANDIDATE;
    index
}

/// A fresh, empty table.
pub fn new_table() -> Box<Table> {
    Box::new([NO_CANDIDATE; TABLE_SIZE + 1])
}

/// Hash of the little-endian 4-byte word at a position: top `HASH_BITS` bits of the
/// product with [`HASH_MULTIPLIER`] modulo 2^32.
#[inline(always)]
pub fn hash(word: u32) -> usize {
    (word.wrapping_mul(HASH_MULTIPLIER) >> (32 - HASH_BITS)) as usize
}

/// Whether position `p` (word `word`) is written to the table: not when its window equals
/// the previous position's (inside a run of 5+ equal bytes), so the table keeps the
/// first position of a run, whose match with a later run is the longest.
#[inline(always)]
pub fn inserts(block: &[u8], p: usize, word: u32) -> bool {
    p == 0 || read_u32_le(block, p - 1) != word
}

/// Number of hashed positions of a block of `n` bytes (positions `0..n-3`).
#[inline]
pub fn hashed_positions(n: usize) -> usize {
    (n + 1).saturating_sub(MIN_MATCH)
}

/// The index array of a block (`block.len() <= 65536`), computed unit by unit like the
/// kernel: for each 32-byte unit, every lane reads the table as it was before the unit;
/// a lane whose hash also occurs in a lower lane of the same unit takes the highest such
/// lane instead; then, per hash, only the highest lane of the unit writes its position.
pub fn index_array(block: &[u8]) -> Vec<u16> {
    debug_assert!(block.len() <= super::BLOCK_SIZE);
    let mut index = vec![NO_CANDIDATE; block.len()];
    let hashed = hashed_positions(block.len());
    let mut table = new_table();
    for unit_start in (0..hashed).step_by(UNIT) {
        let lanes = (hashed - unit_start).min(UNIT);
        // Each lane: its hash and whether it writes (`inserts`); a non-writing lane is
        // left out of the peer masks.
        let mut hashes = [0usize; UNIT];
        let mut writes = [false; UNIT];
        for lane in 0..lanes {
            let word = read_u32_le(block, unit_start + lane);
            hashes[lane] = hash(word);
            writes[lane] = inserts(block, unit_start + lane, word);
        }
        let peer_of = |lane: usize, other: usize| writes[other] && hashes[other] == hashes[lane];
        // Look-up: the highest lower writing peer (match mask & lanes below), else the table.
        for lane in 0..lanes {
            let peer = (0..lane).rev().find(|&other| peer_of(lane, other));
            index[unit_start + lane] = match peer {
                Some(peer) => (unit_start + peer) as u16,
                None => table[hashes[lane]],
            };
        }
        // Update: per hash, the highest writing lane writes.
        for lane in 0..lanes {
            if writes[lane] && !(lane + 1..lanes).any(|other| peer_of(lane, other)) {
                table[hashes[lane]] = (unit_start + lane) as u16;
            }
        }
    }
    index
}

/// The index array by the sequential rule (one position at a time); equal to
/// [`index_array`].
pub fn index_array_sequential(block: &[u8]) -> Vec<u16> {
    let mut index = vec![NO_CANDIDATE; block.len()];
    index_array_into(block, &mut new_table(), &mut index);
    index
}

/// The sequential rule into `index` (`index.len() == block.len()`), with `table` as the
/// hash table (reset first): the fused compressor's pass 1. Each position is looked up
/// and then written (or, by [`inserts`], sent to the sink entry without a branch),
/// eight positions at a time from the 11 bytes their windows span (fixed-size arrays,
/// so no bounds checks in the loop).
pub fn index_array_into(block: &[u8], table: &mut Table, index: &mut [u16]) {
    let n = block.len();
    assert!(n <= super::BLOCK_SIZE && index.len() == n);
    table.fill(NO_CANDIDATE);
    let hashed = hashed_positions(n);
    index[hashed..].fill(NO_CANDIDATE);
    if hashed == 0 {
        return;
    }
    // The window before position 0 counts as different from it.
    let mut prev_word = !read_u32_le(block, 0);
    let mut insert = |entry: &mut u16, p: usize, word: u32| {
        let h = hash(word);
        *entry = table[h];
        table[if word != prev_word { h } else { SINK }] = p as u16;
        prev_word = word;
    };
    let groups = hashed / 8;
    for (g, entries) in index[..groups * 8].chunks_exact_mut(8).enumerate() {
        let start = g * 8;
        let bytes: &[u8; 11] = block[start..start + 11].try_into().expect("11 bytes");
        for (k, entry) in entries.iter_mut().enumerate() {
            let word = u32::from_le_bytes(bytes[k..k + 4].try_into().expect("4 bytes"));
            insert(entry, start + k, word);
        }
    }
    for (p, entry) in index[..hashed].iter_mut().enumerate().skip(groups * 8) {
        insert(entry, p, read_u32_le(block, p));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::codec::test_data::lcg_bytes;

    #[test]
    fn hash_uses_top_bits() {
        assert_eq!(hash(0), 0);
        assert!(hash(u32::MAX) < TABLE_SIZE);
        assert_eq!(hash(1), (HASH_MULTIPLIER >> 18) as usize);
    }

    #[test]
    fn unit_rule_equals_sequential_rule() {
        for (len, alphabet) in [
            (0, 2),
            (3, 2),
            (4, 2),
            (31, 3),
            (33, 2),
            (100, 1),
            (1000, 4),
            (5000, 255),
            (65536, 3),
        ] {
            let block = lcg_bytes(len, len as u64 + 7, alphabet);
            assert_eq!(
                index_array(&block),
                index_array_sequential(&block),
                "len {len}"
            );
        }
    }

    #[test]
    fn candidates_are_earlier_and_share_the_hash() {
        let block = lcg_bytes(4096, 3, 5);
        let index = index_array(&block);
        for (p, &c) in index.iter().enumerate() {
            if c != NO_CANDIDATE {
                let c = usize::from(c);
                assert!(c < p);
                assert_eq!(hash(read_u32_le(&block, c)), hash(read_u32_le(&block, p)));
                // No writing position between c and p has the same hash.
                let h = hash(read_u32_le(&block, p));
                assert!(inserts(&block, c, read_u32_le(&block, c)));
                assert!((c + 1..p).all(|q| hash(read_u32_le(&block, q)) != h
                    || !inserts(&block, q, read_u32_le(&block, q))));
            }
        }
        assert!(index[4093..].iter().all(|&c| c == NO_CANDIDATE));
    }
}
