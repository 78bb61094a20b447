//! Step 1: matching, one GPU thread per symbol position (and the CPU's hash chains that
//! find the same matches only where the parse needs them).

use super::*;
// Step 1: matching (one GPU thread per symbol position).

/// A match: `len` symbols copied from `dist` symbols before the current position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Match {
    /// Length in symbols, `min_match_len(S)..=max_match_len(S)`.
    pub len: u16,
    /// Distance in symbols, `1..=W`.
    pub dist: u8,
}

/// The matching rule, written as directly as a GPU thread would run it: the match of
/// symbol `i` of `chunk` (its bytes, a whole number of `symbol_width`-byte symbols), or
/// `None` when the longest one is shorter than [`min_match_len`].
///
/// For `d` in `1..=min(window, i)` in increasing order it counts the symbols `k` with
/// `sym[i + k] == sym[i - d + k]` (stopping at the first difference or at
/// `min(max_match_len, m - i)`), keeps a strictly longer count only (so ties go to the
/// smallest `d`), and stops early when a count reaches the cap. Overlap (`len > d`) is
/// allowed.
pub fn longest_match(chunk: &[u8], symbol_width: u8, window: u8, i: usize) -> Option<Match> {
    let s = usize::from(symbol_width);
    let m = chunk.len() / s;
    if i >= m {
        return None;
    }
    let sym = |k: usize| &chunk[k * s..(k + 1) * s];
    let cap = max_match_len(symbol_width).min(m - i);
    let (mut best_len, mut best_dist) = (0usize, 0usize);
    for d in 1..=usize::from(window).min(i) {
        let mut len = 0;
        while len < cap && sym(i + len) == sym(i - d + len) {
            len += 1;
        }
        if len > best_len {
            best_len = len;
            best_dist = d;
            if len == cap {
                break;
            }
        }
    }
    (best_len >= min_match_len(symbol_width)).then_some(Match {
        len: best_len as u16,
        dist: best_dist as u8,
    })
}

/// [`longest_match`] for every symbol of a chunk: the array a GPU block builds in shared
/// memory before the parse.
pub fn find_matches(chunk: &[u8], symbol_width: u8, window: u8) -> Vec<Option<Match>> {
    let m = chunk.len() / usize::from(symbol_width);
    (0..m)
        .map(|i| longest_match(chunk, symbol_width, window, i))
        .collect()
}

/// Bits of the compressor's hash-chain head table.
pub(super) const HASH_BITS: u32 = 13;
/// "No previous position" in the chain links.
pub(super) const NO_POS: u32 = u32::MAX;

/// The CPU's fast way to the same matches as [`longest_match`]: hash chains over the first
/// `min_match_len` symbols of every position link each position to the previous one with
/// the same hash, so a search visits, nearest first, exactly the candidates that can give
/// a match long enough to take (plus hash collisions, which the comparison rejects).
pub(super) struct MatchFinder {
    /// Hash -> `base + position + 1` of the latest position with that hash (0: none).
    head: Vec<u32>,
    /// Position in the chunk -> previous position in the chunk with the same hash.
    prev: Vec<u32>,
    /// Generation offset of the current chunk, so `head` needs no clearing between chunks.
    base: u32,
}

impl MatchFinder {
    pub(super) fn new(max_symbols: usize) -> Self {
        MatchFinder {
            head: vec![0; 1 << HASH_BITS],
            prev: vec![NO_POS; max_symbols],
            base: 0,
        }
    }

    /// Links every position of `chunk` (of `m` symbols) that has `K` symbols after it.
    pub(super) fn index<const S: usize>(&mut self, chunk: &[u8]) {
        let m = chunk.len() / S;
        if self.base > u32::MAX / 2 {
            self.head.fill(0);
            self.base = 0;
        }
        let k = min_match_len(S as u8);
        let key_bytes = k * S;
        let base = self.base;
        for i in 0..(m + 1).saturating_sub(k) {
            let mut buf = [0u8; 8];
            buf[..key_bytes].copy_from_slice(&chunk[i * S..i * S + key_bytes]);
            let h = hash(u64::from_le_bytes(buf));
            let cand = self.head[h];
            self.prev[i] = if cand > base { cand - base - 1 } else { NO_POS };
            self.head[h] = base + i as u32 + 1;
        }
        self.base = base + m as u32;
    }

    /// The match at position `i` of the chunk last indexed: identical to
    /// `longest_match(chunk, S, window, i)`.
    #[inline]
    pub(super) fn find<const S: usize>(
        &self,
        chunk: &[u8],
        window: usize,
        i: usize,
    ) -> Option<Match> {
        let m = chunk.len() / S;
        let k = min_match_len(S as u8);
        let cap = max_match_len(S as u8).min(m - i);
        if cap < k {
            return None;
        }
        let max_dist = window.min(i);
        let mut best_len = k - 1;
        let mut best_dist = 0;
        let mut p = self.prev[i];
        while p != NO_POS {
            let pos = p as usize;
            let d = i - pos;
            if d > max_dist {
                break;
            }
            // A candidate can only win if it also matches the symbol at `best_len`.
            let (a, b) = ((pos + best_len) * S, (i + best_len) * S);
            if chunk[a..a + S] == chunk[b..b + S] {
                let len = common_prefix(chunk, pos * S, i * S, cap * S) / S;
                if len > best_len {
                    best_len = len;
                    best_dist = d;
                    if len == cap {
                        break;
                    }
                }
            }
            p = self.prev[pos];
        }
        (best_dist != 0).then_some(Match {
            len: best_len as u16,
            dist: best_dist as u8,
        })
    }
}

#[inline]
pub(super) fn hash(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - HASH_BITS)) as usize
}

/// Number of equal bytes at `bytes[a..]` and `bytes[b..]` (`a < b`), at most `max`
/// (`b + max <= bytes.len()`).
#[inline]
pub(super) fn common_prefix(bytes: &[u8], a: usize, b: usize, max: usize) -> usize {
    let mut n = 0;
    while n + 8 <= max {
        let x = u64::from_le_bytes(bytes[a + n..a + n + 8].try_into().unwrap());
        let y = u64::from_le_bytes(bytes[b + n..b + n + 8].try_into().unwrap());
        let diff = x ^ y;
        if diff != 0 {
            return n + (diff.trailing_zeros() / 8) as usize;
        }
        n += 8;
    }
    while n < max && bytes[a + n] == bytes[b + n] {
        n += 1;
    }
    n
}
