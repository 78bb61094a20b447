//! Code construction: length-limited Huffman code lengths and canonical codes.

use super::*;

/// Huffman code lengths for `weights` (all >= 1), ties broken by symbol index.
pub(super) fn huffman_lengths(weights: &[u64]) -> Vec<u8> {
    let n = weights.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (weights[i], i));
    // nodes 0..n are leaves (by symbol), n.. internal in creation order
    let mut parent = vec![0usize; 2 * n - 1];
    let mut iw: Vec<u64> = Vec::with_capacity(n - 1);
    let (mut li, mut ii) = (0usize, 0usize);
    for k in 0..n - 1 {
        let mut pick = || {
            let leaf = (li < n).then(|| weights[order[li]]);
            let internal = (ii < k).then(|| iw[ii]);
            match (leaf, internal) {
                (Some(l), Some(m)) if m < l => {
                    ii += 1;
                    (n + ii - 1, m)
                }
                (Some(l), _) => {
                    li += 1;
                    (order[li - 1], l)
                }
                (None, Some(m)) => {
                    ii += 1;
                    (n + ii - 1, m)
                }
                (None, None) => unreachable!(),
            }
        };
        let (a, wa) = pick();
        let (b, wb) = pick();
        parent[a] = n + k;
        parent[b] = n + k;
        iw.push(wa + wb);
    }
    // depths: the root is the last internal node; parents are created after children
    let mut depth = vec![0u8; 2 * n - 1];
    for node in (0..2 * n - 2).rev() {
        depth[node] = depth[parent[node]] + 1;
    }
    depth.truncate(n);
    depth
}

/// Code lengths in `1..=max_len` for every symbol (`freqs.len() >= 2`), from frequencies
/// (0 counts as 1). If the Huffman code is too deep, weights are halved (`w / 2 + 1`)
/// until it fits.
pub fn build_lengths(freqs: &[u32], max_len: u32) -> Vec<u8> {
    assert!(freqs.len() >= 2 && freqs.len() <= 1 << max_len);
    let mut weights: Vec<u64> = freqs.iter().map(|&f| u64::from(f.max(1))).collect();
    loop {
        let lens = huffman_lengths(&weights);
        if lens.iter().all(|&l| u32::from(l) <= max_len) {
            return lens;
        }
        for w in &mut weights {
            *w = *w / 2 + 1;
        }
    }
}

/// Canonical codes for valid lengths.
pub fn canonical_codes(lens: &[u8]) -> Vec<u32> {
    let mut count = [0u32; MAX_CODE_LEN as usize + 2];
    for &l in lens {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; MAX_CODE_LEN as usize + 2];
    for l in 1..=MAX_CODE_LEN as usize {
        next[l] = (next[l - 1] + count[l - 1]) << 1;
    }
    lens.iter()
        .map(|&l| {
            let c = next[l as usize];
            next[l as usize] += 1;
            c
        })
        .collect()
}

/// Whether `lens` (all in `1..=MAX_CODE_LEN`) form a complete prefix code.
pub(super) fn is_complete(lens: &[u8]) -> bool {
    let kraft: u64 = lens
        .iter()
        .map(|&l| 1u64 << (MAX_CODE_LEN - u32::from(l)))
        .sum();
    kraft == 1u64 << MAX_CODE_LEN
}
