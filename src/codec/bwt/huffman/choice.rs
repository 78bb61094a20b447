//! Table choice: how many tables a block gets, their training over symbol groups, and
//! the assignment of each segment to the table that codes it shortest.

use super::*;

/// Symbols per group in the table-training passes.
pub(super) const TRAIN_GROUP: usize = 50;
/// Training passes over fixed symbol groups, then passes with the real segmentation.
pub(super) const TRAIN_PASSES: usize = 4;
pub(super) const SEGMENT_PASSES: usize = 2;

/// How many tables a block of `nsym` symbols gets.
pub fn table_count(nsym: usize) -> usize {
    match nsym {
        0..200 => 1,
        200..600 => 2,
        600..1200 => 3,
        1200..2400 => 4,
        2400..4800 => 5,
        4800..40000 => 6,
        _ => MAX_TABLES,
    }
}

/// Starting cost vectors: table `t` is cheap on a band of symbols holding about
/// `1/nt` of the occurrences.
pub(super) fn initial_lengths(freq: &[u32], nt: usize) -> Vec<Vec<u8>> {
    if nt == 1 {
        return vec![build_lengths(freq, MAX_CODE_LEN)];
    }
    let total: u64 = freq.iter().map(|&f| u64::from(f)).sum();
    let mut out = Vec::with_capacity(nt);
    let mut sym = 0usize;
    let mut cum = 0u64;
    for t in 0..nt {
        let goal = total * (t as u64 + 1) / nt as u64;
        let lo = sym;
        while sym < freq.len() && (sym == lo || cum + u64::from(freq[sym]) <= goal || t + 1 == nt) {
            cum += u64::from(freq[sym]);
            sym += 1;
        }
        out.push(
            (0..freq.len())
                .map(|s| if s >= lo && s < sym { 1 } else { 8 })
                .collect(),
        );
    }
    out
}

/// Per-symbol code lengths of all tables packed in 16-bit lanes: table `t` in word
/// `t / 4`, bits `16 * (t % 4)..`. Lanes of absent tables hold `MAX_CODE_LEN`.
pub(super) fn pack_lengths(lens: &[Vec<u8>], alphabet_size: usize) -> Vec<[u64; 2]> {
    (0..alphabet_size)
        .map(|s| {
            let mut w = [0u64; 2];
            for t in 0..MAX_TABLES {
                let l = lens.get(t).map_or(MAX_CODE_LEN as u64, |l| u64::from(l[s]));
                w[t / 4] |= l << (16 * (t % 4));
            }
            w
        })
        .collect()
}

#[inline]
pub(super) fn lane(w: &[u64; 2], t: usize) -> u64 {
    (w[t / 4] >> (16 * (t % 4))) & 0xffff
}

pub(super) const LANE_ONES: u64 = 0x0001_0001_0001_0001;

/// Picks, for each segment in turn, the table under which the most codewords start in
/// that segment (ties: the earlier end, then the lower table). Returns the selectors and
/// adds each symbol's occurrence to its table's counts when `freqs` is given.
///
/// All tables are simulated at once in 16-bit lanes (`seg_log2 <= 10` keeps every lane
/// below 2^15).
pub(super) fn assign_segments(
    symbols: &[u16],
    lens: &[Vec<u8>],
    seg_log2: u8,
    mut freqs: Option<&mut Vec<Vec<u32>>>,
) -> Vec<u8> {
    assert!(seg_log2 <= 10);
    let packed = pack_lengths(lens, lens[0].len());
    let mut selectors = Vec::new();
    let (mut i, mut pos) = (0usize, 0u64);
    while i < symbols.len() {
        let end = ((pos >> seg_log2) + 1) << seg_log2;
        // lane value 0x8000 + rem - 1 - S has its top bit set while S < rem
        let r = ((end - pos - 1) | 0x8000) * LANE_ONES;
        let mut sum = [0u64; 2];
        let mut count = [0u64; 2];
        for &sym in &symbols[i..] {
            let a0 = ((r - sum[0]) >> 15) & LANE_ONES;
            let a1 = ((r - sum[1]) >> 15) & LANE_ONES;
            if a0 | a1 == 0 {
                break;
            }
            let c = &packed[sym as usize];
            sum[0] += c[0] & (a0 * 0xffff);
            sum[1] += c[1] & (a1 * 0xffff);
            count[0] += a0;
            count[1] += a1;
        }
        let mut best = (0usize, 0usize, u64::MAX);
        for t in 0..lens.len() {
            let j = i + lane(&count, t) as usize;
            let p = pos + lane(&sum, t);
            if j > best.1 || (j == best.1 && p < best.2) {
                best = (t, j, p);
            }
        }
        debug_assert_eq!(selectors.len() as u64, pos >> seg_log2);
        selectors.push(best.0 as u8);
        if let Some(f) = freqs.as_deref_mut() {
            for &s in &symbols[i..best.1] {
                f[best.0][s as usize] += 1;
            }
        }
        i = best.1;
        pos = best.2;
    }
    selectors
}
