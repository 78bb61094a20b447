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
    /// Hash -> `base + position + 1` of the latest position with that hash (0: none);
    /// an array, so that the hash's range proves every index in bounds.
    head: Box<[u32; 1 << HASH_BITS]>,
    /// Position in the chunk -> previous position in the chunk with the same hash.
    prev: Vec<u32>,
    /// Generation offset of the current chunk, so `head` needs no clearing between chunks.
    base: u32,
}

impl MatchFinder {
    pub(super) fn new(max_symbols: usize) -> Self {
        MatchFinder {
            head: Box::new([0; 1 << HASH_BITS]),
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
        let n = (m + 1).saturating_sub(k);
        let prev = &mut self.prev[..n];
        let head = &mut *self.head;
        let mut link = |i: usize, key: u64| {
            let h = hash(key);
            let cand = head[h];
            prev[i] = if cand > base { cand - base - 1 } else { NO_POS };
            head[h] = base + i as u32 + 1;
        };
        // Positions with 8 bytes after them read the key as one word, masked to its bytes.
        let mask = u64::MAX >> (64 - 8 * key_bytes);
        let wide = n.min((chunk.len() + 1).saturating_sub(8).div_ceil(S));
        for i in 0..wide {
            let word = u64::from_le_bytes(chunk[i * S..i * S + 8].try_into().unwrap());
            link(i, word & mask);
        }
        for i in wide..n {
            let mut buf = [0u8; 8];
            buf[..key_bytes].copy_from_slice(&chunk[i * S..i * S + key_bytes]);
            link(i, u64::from_le_bytes(buf));
        }
        self.base = base + m as u32;
    }

    /// The match at position `i` of the chunk last indexed: identical to
    /// `longest_match(chunk, S, window, i)`.
    #[inline(always)]
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
            return None; // too near the end: `prev[i]` was not set for this chunk
        }
        let max_dist = window.min(i);
        // `NO_POS` gives a distance larger than any window (`i < NO_POS`), so one compare
        // ends the chain whether it runs out or leaves the window.
        let mut pos = self.prev[i] as usize;
        let mut d = i.wrapping_sub(pos);
        if d > max_dist {
            return None;
        }
        let mut best_len = k - 1;
        let mut best_dist = 0;
        loop {
            // A candidate can only win if it also matches the symbol at `best_len`.
            if symbol::<S>(chunk, pos + best_len) == symbol::<S>(chunk, i + best_len) {
                let len = common_prefix(chunk, pos * S, i * S, cap * S) / S;
                if len > best_len {
                    best_len = len;
                    best_dist = d;
                    if len == cap {
                        break;
                    }
                }
            }
            pos = self.prev[pos] as usize;
            d = i.wrapping_sub(pos);
            if d > max_dist {
                break;
            }
        }
        (best_dist != 0).then_some(Match {
            len: best_len as u16,
            dist: best_dist as u8,
        })
    }
}

/// Symbol `at` of `chunk` as an integer: one load instead of a slice compare.
#[inline(always)]
fn symbol<const S: usize>(chunk: &[u8], at: usize) -> u64 {
    let mut buf = [0u8; 8];
    buf[..S].copy_from_slice(&chunk[at * S..at * S + S]);
    u64::from_le_bytes(buf)
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
