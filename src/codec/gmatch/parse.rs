//! Pass 2: candidate verification, skip pointers, match extension and the greedy parse.
//!
//! Rules (per block of `n` bytes, given the index array of pass 1, `index`):
//! - the **candidates** of `p` ([`candidates`]) are, in this order, the first two
//!   entries of its hash chain, `c1 = index[p]` and `c2 = index[c1]` (none if `c1` is
//!   none), and the **shifted** candidate `c3 = index[p + 3] - 3` (none if `p + 3 >= n`,
//!   `index[p + 3]` is none or below 3): where the window sharing only its last byte
//!   with `p`'s occurred, moved back to `p`. All are read from the index array as pass 1
//!   wrote it (before verification);
//! - a candidate `c` of `p` is **kept** iff `block[c..c+4] == block[p..p+4]`;
//! - `next[p]` (for `0 <= p <= n`) is the smallest `q >= p` with a kept candidate, or `n`;
//! - the **match length** of a kept candidate `c` of `p` is the longest common prefix of
//!   `block[p..n]` and `block[c..n]` (so never past the block end; overlap with `p` is
//!   allowed); the **match** at `p` is its kept candidate with the longest match length,
//!   the first in the order `c1, c2, c3` among equally long ones;
//! - the **parse** starts at `p = next[0]`, takes the match at `p`, and continues at
//!   `next[p + len]`; everything not covered by a match is literal.

use std::hint::select_unpredictable;

use super::hash::BlockIndex;
use super::hash::NO_CANDIDATE;
use super::{BLOCK_SIZE, MIN_MATCH, read_u32_le, read_u64_le};

/// One match of the parse: `len` bytes at block position `pos` repeat those `offset`
/// bytes earlier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Match {
    pub pos: u32,
    pub offset: u32,
    pub len: u32,
}

/// Whether candidate `cand` of a position whose 4-byte word is `word` is kept:
/// its 4 bytes are equal.
#[inline(always)]
pub fn keeps(block: &[u8], cand: usize, word: u32) -> bool {
    read_u32_le(block, cand) == word
}

/// Candidates per position: two from the hash chain, one shifted.
pub const CANDIDATES: usize = 3;

/// The shifted candidate of `p` comes from the window at `p + SHIFT` (the last window
/// that overlaps `p`'s, in its last byte).
pub const SHIFT: usize = 3;

/// The candidates of one position in their order (`c1, c2, c3`); [`NO_CANDIDATE`] where
/// there is none or where verification rejected it.
pub type Candidates = [u16; CANDIDATES];

/// The candidates of position `p` before verification, from the index array of pass 1
/// (`index.len()` is the block length): `index[p]`, `index[index[p]]` and
/// `index[p + SHIFT] - SHIFT`. Every candidate is below `p`.
#[inline(always)]
pub fn candidates(index: &[u16], p: usize) -> Candidates {
    let mut out = [NO_CANDIDATE; CANDIDATES];
    let first = index[p];
    if first != NO_CANDIDATE {
        out[0] = first;
        out[1] = index[usize::from(first)];
    }
    if let Some(&later) = index.get(p + SHIFT)
        && later != NO_CANDIDATE
        && usize::from(later) >= SHIFT
    {
        out[2] = later - SHIFT as u16;
    }
    out
}

/// The kept candidates of every position (independent gathers and 4-byte compares per
/// position) from the index array of pass 1, which it reads unchanged: rejected
/// candidates become [`NO_CANDIDATE`].
pub fn verify_candidates(block: &[u8], index: &[u16]) -> Vec<Candidates> {
    (0..index.len())
        .map(|p| {
            let mut kept = candidates(index, p);
            for cand in &mut kept {
                if *cand != NO_CANDIDATE && !keeps(block, usize::from(*cand), read_u32_le(block, p))
                {
                    *cand = NO_CANDIDATE;
                }
            }
            kept
        })
        .collect()
}

/// The skip pointers of the verified candidates: `next[p]` is the first position `>= p`
/// with a kept candidate, `kept.len()` if none; `next` has `kept.len() + 1` entries.
/// (The paper stores them as negative values in the zero slots of the index array and
/// fills them chunk by chunk from the rear; the values are the same.)
pub fn skip_pointers(kept: &[Candidates]) -> Vec<u32> {
    let n = kept.len();
    let mut next = vec![n as u32; n + 1];
    let mut following = n as u32;
    for p in (0..n).rev() {
        if kept[p].iter().any(|&c| c != NO_CANDIDATE) {
            following = p as u32;
        }
        next[p] = following;
    }
    next
}

/// Length of the common prefix of `block[pos..]` and `block[cand..]` (`cand < pos`),
/// given that the first [`MIN_MATCH`] bytes are known to be equal.
#[inline(always)]
pub fn match_len(block: &[u8], pos: usize, cand: usize) -> usize {
    match_len_from(block, pos, cand, MIN_MATCH)
}

/// Length of the common prefix of `block[pos..]` and `block[cand..]` (`cand < pos`),
/// given that the first `known` bytes are equal: 16 bytes per step while 16 remain
/// ([`bytes16`]), then 8 (XOR, then the lowest differing byte), then byte by byte.
#[inline(always)]
fn match_len_from(block: &[u8], pos: usize, cand: usize, known: usize) -> usize {
    let n = block.len();
    assert!(cand < pos && pos + known <= n);
    let mut len = known;
    while pos + len + 64 <= n {
        // SAFETY: `cand + len + 64 < pos + len + 64 <= n`.
        let equal = unsafe { bytes16::equal_prefix64(block, pos + len, cand + len) };
        len += equal;
        if equal < 64 {
            return len;
        }
    }
    while pos + len + 16 <= n {
        // SAFETY: `cand + len + 16 < pos + len + 16 <= n`.
        let equal = unsafe {
            bytes16::equal_prefix(
                bytes16::load(block, pos + len),
                bytes16::load(block, cand + len),
            )
        };
        len += equal;
        if equal < 16 {
            return len;
        }
    }
    if pos + len + 8 <= n {
        let diff = read_u64_le(block, pos + len) ^ read_u64_le(block, cand + len);
        if diff != 0 {
            return len + (diff.trailing_zeros() / 8) as usize;
        }
        len += 8;
    }
    while pos + len < n && block[pos + len] == block[cand + len] {
        len += 1;
    }
    len
}

/// The match at `pos` from its kept candidates (at least one): the candidate with the
/// longest match, the first among equally long ones; `(candidate, length)`.
#[inline]
pub fn best_match(block: &[u8], pos: usize, kept: &Candidates) -> (usize, usize) {
    let mut best = (0, 0);
    for &cand in kept {
        if cand != NO_CANDIDATE {
            let len = match_len(block, pos, usize::from(cand));
            if len > best.1 {
                best = (usize::from(cand), len);
            }
        }
    }
    debug_assert!(best.1 >= MIN_MATCH);
    best
}

/// The match at `pos` (whose window is `word`) from its unverified candidates, or `None`
/// if none is kept: the same choice as [`best_match`] after verification. A later
/// candidate is only extended if it also matches the byte where the best so far stops
/// (else it cannot be longer), which spares most extensions.
#[inline(always)]
pub fn best_kept_match(
    block: &[u8],
    pos: usize,
    word: u32,
    cands: &Candidates,
) -> Option<(usize, usize)> {
    let mut best = (0, 0);
    for &cand in cands {
        let c = usize::from(cand);
        if cand != NO_CANDIDATE
            && keeps(block, c, word)
            && (best.1 == 0
                || (pos + best.1 < block.len() && block[c + best.1] == block[pos + best.1]))
        {
            let len = match_len(block, pos, c);
            if len > best.1 {
                best = (c, len);
            }
        }
    }
    (best.1 > 0).then_some(best)
}

/// Bytes compared with each candidate at once by [`match_at`]: a candidate
/// equal on all of them is extended.
pub const REACH: usize = 16;

/// The match at `pos` by the rules above, or `None` if no candidate is kept, for a
/// position with [`REACH`] bytes left (`pos + 16 <= block.len() <= 65536`), from the
/// index array of pass 1 ([`BlockIndex`]). The same choice as [`best_kept_match`] of
/// [`candidates`], computed with one 16-byte compare per candidate and no branch: it
/// verifies the candidate (its first 4 bytes) and gives its match length unless all 16
/// bytes are equal, so only such candidates are extended.
#[inline(always)]
pub fn match_at(block: &[u8], index: &BlockIndex, pos: usize) -> Option<(usize, usize)> {
    assert!(pos + REACH <= block.len() && block.len() <= BLOCK_SIZE);
    // SAFETY: `pos + SHIFT < block.len() <= BLOCK_SIZE`, the length of `index`.
    let (first, later) = unsafe { (*index.get_unchecked(pos), *index.get_unchecked(pos + SHIFT)) };
    // Every candidate is below `pos`; a missing one is a value `>= pos`: NO_CANDIDATE,
    // `index[NO_CANDIDATE]` for c2, and for c3 the wrapped difference of NO_CANDIDATE
    // or of an entry below 3 (all above 65520 >= pos).
    let cands = [
        usize::from(first),
        usize::from(index[usize::from(first)]),
        usize::from(later.wrapping_sub(SHIFT as u16)),
    ];
    // SAFETY: `pos + 16 <= block.len()`.
    let here = unsafe { bytes16::load(block, pos) };
    // Leading bytes equal to `pos`'s, 0..=16, 0 for a missing candidate (a candidate is
    // kept on 4 or more). (The conditions here are data: `select_unpredictable` keeps
    // them branch-free.)
    let equal = cands.map(|cand| {
        let present = cand < pos;
        // SAFETY: 16 bytes at `cand < pos`, or at `pos` itself for a missing candidate.
        let there = unsafe { bytes16::load(block, select_unpredictable(present, cand, pos)) };
        select_unpredictable(present, bytes16::equal_prefix(here, there), 0)
    });
    // The first of the longest: a later candidate replaces only with more equal bytes.
    let (mut cand, mut len) = (cands[0], equal[0]);
    for k in 1..CANDIDATES {
        let longer = equal[k] > len;
        cand = select_unpredictable(longer, cands[k], cand);
        len = select_unpredictable(longer, equal[k], len);
    }
    if len < MIN_MATCH {
        None
    } else if len < REACH {
        Some((cand, len))
    } else {
        Some(longest_extended(block, pos, cands, equal))
    }
}

/// 16 bytes of a block compared at once: with SSE2 (every x86-64 CPU) one byte compare
/// and a mask, elsewhere two 8-byte XORs ([`bytes16_portable`]).
#[cfg(target_arch = "x86_64")]
mod bytes16 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8};

    #[derive(Clone, Copy)]
    pub struct Bytes16(__m128i);

    /// The 16 bytes at `at`.
    ///
    /// # Safety
    /// `at + 16 <= block.len()`.
    #[inline(always)]
    pub unsafe fn load(block: &[u8], at: usize) -> Bytes16 {
        debug_assert!(at + 16 <= block.len());
        // SAFETY: the caller guarantees 16 bytes at `at`; the load may be unaligned.
        Bytes16(unsafe { _mm_loadu_si128(block.as_ptr().add(at).cast()) })
    }

    /// How many leading bytes of `a` and `b` are equal (0..=16).
    #[inline(always)]
    pub fn equal_prefix(a: Bytes16, b: Bytes16) -> usize {
        // Bit i set where byte i is equal; the bits above 15 of the complement are set.
        // SAFETY: SSE2 is part of the x86-64 baseline.
        let equal = unsafe { _mm_movemask_epi8(_mm_cmpeq_epi8(a.0, b.0)) } as u32;
        (!equal).trailing_zeros() as usize
    }

    /// How many leading bytes of the 64 at `a` and at `b` are equal (0..=64): four
    /// 16-byte compares whose masks make one word, so a match's length up to 64 more
    /// bytes comes without a branch per 16 bytes.
    ///
    /// # Safety
    /// `a + 64 <= block.len()` and `b + 64 <= block.len()`.
    #[inline(always)]
    pub unsafe fn equal_prefix64(block: &[u8], a: usize, b: usize) -> usize {
        debug_assert!(a + 64 <= block.len() && b + 64 <= block.len());
        let mut equal = 0u64;
        for k in 0..4 {
            // SAFETY: 16 bytes at `a + 16k` and `b + 16k` (the caller's bound); SSE2 is
            // part of the x86-64 baseline.
            let mask = unsafe {
                _mm_movemask_epi8(_mm_cmpeq_epi8(
                    load(block, a + 16 * k).0,
                    load(block, b + 16 * k).0,
                ))
            } as u16;
            equal |= u64::from(mask) << (16 * k);
        }
        (!equal).trailing_zeros() as usize
    }
}

#[cfg(not(target_arch = "x86_64"))]
use bytes16_portable as bytes16;

/// [`bytes16`] on two 8-byte words (used where SSE2 is not available; tested against it).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod bytes16_portable {
    #[derive(Clone, Copy)]
    pub struct Bytes16([u64; 2]);

    /// The 16 bytes at `at` (`at + 16 <= block.len()`; unsafe like [`super::bytes16`]'s).
    #[inline(always)]
    pub unsafe fn load(block: &[u8], at: usize) -> Bytes16 {
        use super::super::read_u64_le;
        Bytes16([read_u64_le(block, at), read_u64_le(block, at + 8)])
    }

    /// How many leading bytes of `a` and `b` are equal (0..=16).
    #[inline(always)]
    pub fn equal_prefix(a: Bytes16, b: Bytes16) -> usize {
        let low = ((a.0[0] ^ b.0[0]).trailing_zeros() / 8) as usize;
        let high = ((a.0[1] ^ b.0[1]).trailing_zeros() / 8) as usize;
        low + std::hint::select_unpredictable(low == 8, high, 0)
    }

    /// How many leading bytes of the 64 at `a` and at `b` are equal (0..=64).
    ///
    /// # Safety
    /// None needed here; unsafe like [`super::bytes16`]'s.
    #[inline(always)]
    pub unsafe fn equal_prefix64(block: &[u8], a: usize, b: usize) -> usize {
        use super::super::read_u64_le;
        for k in 0..8 {
            let diff = read_u64_le(block, a + 8 * k) ^ read_u64_le(block, b + 8 * k);
            if diff != 0 {
                return 8 * k + (diff.trailing_zeros() / 8) as usize;
            }
        }
        64
    }
}

/// The first of the longest matches among the candidates equal on all [`REACH`] bytes
/// (at least one; the others cannot be longer). c3 is skipped when it equals c1 or c2
/// (same length, and the earlier one wins); a candidate after one whose match is
/// already that long is only extended if it also matches the byte where that match
/// stops.
#[inline(always)]
fn longest_extended(
    block: &[u8],
    pos: usize,
    cands: [usize; CANDIDATES],
    equal: [usize; CANDIDATES],
) -> (usize, usize) {
    let mut best = (0, 0);
    consider(block, pos, cands[0], equal[0], &mut best);
    consider(block, pos, cands[1], equal[1], &mut best);
    if cands[2] != cands[0] && cands[2] != cands[1] {
        consider(block, pos, cands[2], equal[2], &mut best);
    }
    best
}

/// Replaces `best` by candidate `cand` of `pos` if it is equal on all [`REACH`] bytes
/// (`equal`) and its match is longer.
#[inline(always)]
fn consider(block: &[u8], pos: usize, cand: usize, equal: usize, best: &mut (usize, usize)) {
    let n = block.len();
    if equal < REACH
        || (best.1 > 0 && (pos + best.1 == n || block[cand + best.1] != block[pos + best.1]))
    {
        return;
    }
    let len = match_len_from(block, pos, cand, REACH);
    if len > best.1 {
        *best = (cand, len);
    }
}

/// The greedy parse of a block from its verified candidates and skip pointers.
pub fn greedy_parse(block: &[u8], kept: &[Candidates], next: &[u32]) -> Vec<Match> {
    let n = block.len();
    let mut matches = Vec::new();
    let mut pos = next[0] as usize;
    while pos < n {
        let (cand, len) = best_match(block, pos, &kept[pos]);
        matches.push(Match {
            pos: pos as u32,
            offset: (pos - cand) as u32,
            len: len as u32,
        });
        pos = next[pos + len] as usize;
    }
    matches
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_pointers_point_forward() {
        let none = [NO_CANDIDATE; CANDIDATES];
        let mut second = none;
        second[CANDIDATES - 1] = 1;
        let kept = [none, [0; CANDIDATES], none, none, second, none];
        assert_eq!(skip_pointers(&kept), vec![1, 1, 4, 4, 4, 6, 6]);
        assert_eq!(skip_pointers(&[]), vec![0]);
    }

    #[test]
    fn bytes16_equals_portable() {
        let block: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 13 / 5) as u8).collect();
        for a in (0..block.len() - 16).step_by(7) {
            for b in (a % 61..block.len() - 16).step_by(13) {
                // SAFETY: 16 bytes at `a` and `b`.
                let (wide, portable) = unsafe {
                    (
                        bytes16::equal_prefix(bytes16::load(&block, a), bytes16::load(&block, b)),
                        bytes16_portable::equal_prefix(
                            bytes16_portable::load(&block, a),
                            bytes16_portable::load(&block, b),
                        ),
                    )
                };
                let expected = (0..16)
                    .take_while(|&i| block[a + i] == block[b + i])
                    .count();
                assert_eq!((wide, portable), (expected, expected), "{a} {b}");
            }
        }
    }

    #[test]
    fn equal_prefix64_equals_portable() {
        let block: Vec<u8> = (0..4096u32).map(|i| (i * 7 % 29 / 19) as u8).collect();
        for a in (0..block.len() - 64).step_by(5) {
            for b in (a % 67..block.len() - 64).step_by(11) {
                // SAFETY: 64 bytes at `a` and `b`.
                let (wide, portable) = unsafe {
                    (
                        bytes16::equal_prefix64(&block, a, b),
                        bytes16_portable::equal_prefix64(&block, a, b),
                    )
                };
                let expected = (0..64)
                    .take_while(|&i| block[a + i] == block[b + i])
                    .count();
                assert_eq!((wide, portable), (expected, expected), "{a} {b}");
            }
        }
    }

    #[test]
    fn match_len_stops_at_mismatch_and_block_end() {
        let block = b"abcdefghabcdefghXabcdefghabcdefgh";
        assert_eq!(match_len(block, 8, 0), 8);
        assert_eq!(match_len(block, 25, 0), 8);
        let zeros = [0u8; 40];
        assert_eq!(match_len(&zeros, 1, 0), 39);
        assert_eq!(match_len(&zeros, 30, 3), 10);
    }

    /// The pass-1 index array, its verified candidates, skip pointers and greedy parse.
    fn parse(block: &[u8]) -> (Vec<Candidates>, Vec<Match>) {
        let index = super::super::hash::index_array(block);
        let kept = verify_candidates(block, &index);
        let next = skip_pointers(&kept);
        let matches = greedy_parse(block, &kept, &next);
        (kept, matches)
    }

    #[test]
    fn the_longer_of_two_candidates_wins() {
        // "abcdX" at 0, "abcdY" at 5, then "abcdXyz": c1 = 5 matches 4 bytes, c2 = 0
        // matches 5; the farther but longer one is taken.
        let block = b"abcdXabcdYabcdXyz";
        let (kept, matches) = parse(block);
        assert_eq!(kept[10], [5, 0, NO_CANDIDATE]);
        assert_eq!(
            matches,
            vec![
                Match {
                    pos: 5,
                    offset: 5,
                    len: 4
                },
                Match {
                    pos: 10,
                    offset: 10,
                    len: 5
                }
            ]
        );
        // Equally long: the nearer one.
        let block = b"abcdXabcdYabcdZ";
        let (_, matches) = parse(block);
        assert_eq!(
            matches[1],
            Match {
                pos: 10,
                offset: 5,
                len: 4
            }
        );
    }

    #[test]
    fn the_shifted_candidate_finds_what_the_chain_misses() {
        // Runs of six zero bytes, each followed by a different pair (like the bytes of
        // consecutive i64 keys). The last run's most recent two runs (16, 8) match 6
        // bytes; the window 3 bytes on, "0001", occurred at 3, so c3 = 0 matches 8.
        let mut block = Vec::new();
        for tail in [b"1a", b"2b", b"3c", b"1a"] {
            block.extend_from_slice(&[b'0'; 6]);
            block.extend_from_slice(tail);
        }
        block.push(b'!');
        let (kept, matches) = parse(&block);
        assert_eq!(kept[24], [16, 8, 0]);
        assert_eq!(
            matches.last(),
            Some(&Match {
                pos: 24,
                offset: 24,
                len: 8
            })
        );
        // Without the shifted candidate it would be 6 bytes at offset 8.
        let mut kept = kept;
        kept[24][2] = NO_CANDIDATE;
        assert_eq!(best_match(&block, 24, &kept[24]), (16, 6));
    }

    #[test]
    fn the_chain_goes_on_through_a_rejected_candidate() {
        // Two different words with the same hash: A B A. At the second A, c1 (B) is
        // rejected and c2 (the first A) is kept.
        use super::super::hash::hash;
        let mut seen = std::collections::HashMap::new();
        let block = (0x0101_0101u32..)
            .filter_map(|w| seen.insert(hash(w), w).map(|v| (v, w)))
            .map(|(a, b)| {
                [a, b, a]
                    .iter()
                    .flat_map(|w| w.to_le_bytes())
                    .collect::<Vec<u8>>()
            })
            .find(|block| {
                // No other window of the block shares the hash.
                let index = super::super::hash::index_array(block);
                index[8] == 4 && index[4] == 0
            })
            .unwrap();
        let (kept, matches) = parse(&block);
        assert_eq!(kept[8], [NO_CANDIDATE, 0, NO_CANDIDATE]);
        assert_eq!(
            matches,
            vec![Match {
                pos: 8,
                offset: 8,
                len: 4
            }]
        );
    }

    #[test]
    fn parse_of_a_repeat() {
        let block = b"0123456789012345678901234567890123456789xyz";
        let index = super::super::hash::index_array(block);
        let kept = verify_candidates(block, &index);
        let next = skip_pointers(&kept);
        let matches = greedy_parse(block, &kept, &next);
        assert_eq!(
            matches,
            vec![Match {
                pos: 10,
                offset: 10,
                len: 30
            }]
        );
    }
}
