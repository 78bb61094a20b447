//! Burrows–Wheeler transform of one block by suffix sorting (libsais), and its inverse
//! (our own LF walk, which the GPU decoder repeats exactly).
//!
//! Convention (the one libsais and libcubwt share): the block `T[0..n)` is sorted as if a
//! unique sentinel `$`, smaller than every byte, followed it. Of the `n + 1` sorted
//! suffixes of `T$`, row 0 is the suffix `$`; row `r` has the suffix starting at `SA[r]`.
//! The full last column is `L[r] = T[SA[r] - 1]`, with `$` in the one row whose suffix
//! starts at 0. The transform is `L` without that `$`: `n` bytes, `U[0] = T[n - 1]`.
//!
//! Auxiliary indices with sampling rate `R = 2^k` make the inverse parallel: `AUX[j]` is
//! the row (in `1..=n`) whose suffix starts at `j * R`, for `j = 0 ..= (n - 1) / R`.
//! `AUX[0]` is the classic primary index. Each stretch `T[j*R .. (j+1)*R)` can be rebuilt
//! from `AUX[j + 1]` (or from the sentinel row for the last) independently of the others.

use libsais::BwtConstruction;
use libsais::bwt::AuxIndicesSamplingRate;

use super::NAME;
use crate::codec::error::{CodecError, Result};

/// Number of auxiliary indices for a block of `n` bytes (`n >= 1`) at rate `2^aux_log2`.
pub fn aux_count(n: usize, aux_log2: u8) -> usize {
    ((n - 1) >> aux_log2) + 1
}

/// Forward transform: returns the transformed bytes and the auxiliary indices
/// (each in `1..=n`). `block` must be non-empty and shorter than 2^31.
pub fn forward(block: &[u8], aux_log2: u8) -> (Vec<u8>, Vec<u32>) {
    assert!(!block.is_empty() && block.len() < i32::MAX as usize);
    let rate = 1i32 << aux_log2;
    let res = BwtConstruction::for_text(block)
        .with_owned_temporary_array_buffer32()
        .single_threaded()
        .with_aux_indices(AuxIndicesSamplingRate::from(rate))
        .run()
        .expect("libsais BWT construction failed on valid input");
    let (bwt, aux, _) = res.into_parts();
    let aux = aux.iter().map(|&a| a as u32).collect();
    (bwt, aux)
}

/// Inverse transform into `out` (as long as `bwt`). `aux` must have [`aux_count`]
/// entries, each in `1..=n` (checked). Each stretch `j` is rebuilt backwards from the row
/// of the suffix after it (`AUX[j + 1]`, or the sentinel row 0 for the last) by the LF
/// mapping, and must end on its own row `AUX[j]`: any other end is an error, so corrupt
/// indices are caught here and not only by the block's CRC. The GPU decoder
/// (`kernels/bwt_decompress.cu`, `bwt_lf` and `bwt_walk`) computes exactly this.
pub fn inverse(bwt: Vec<u8>, aux: &[u32], aux_log2: u8, out: &mut [u8]) -> Result<()> {
    let n = bwt.len();
    if n == 0 || n >= i32::MAX as usize || out.len() != n || aux.len() != aux_count(n, aux_log2) {
        return Err(CodecError::corrupt(NAME, "bad BWT block geometry"));
    }
    if aux.iter().any(|&a| a == 0 || a as usize > n) {
        return Err(CodecError::corrupt(NAME, "BWT index out of range"));
    }
    // Rows of up to 2^24 pack with their byte into a u32, larger ones into a u64.
    if n < 1 << 24 {
        walk::<u32>(&bwt, aux, aux_log2, out)
    } else {
        walk::<u64>(&bwt, aux, aux_log2, out)
    }
}

/// An LF entry: `LF(row) << 8 | L[row]`.
trait Entry: Copy + Default {
    fn pack(lf: usize, byte: u8) -> Self;
    fn byte(self) -> u8;
    fn next(self) -> usize;
}

impl Entry for u32 {
    fn pack(lf: usize, byte: u8) -> Self {
        (lf as u32) << 8 | u32::from(byte)
    }
    fn byte(self) -> u8 {
        self as u8
    }
    fn next(self) -> usize {
        (self >> 8) as usize
    }
}

impl Entry for u64 {
    fn pack(lf: usize, byte: u8) -> Self {
        (lf as u64) << 8 | u64::from(byte)
    }
    fn byte(self) -> u8 {
        self as u8
    }
    fn next(self) -> usize {
        (self >> 8) as usize
    }
}

/// Walkers advanced together, so that their cache misses overlap.
const WALKERS: usize = 8;

fn walk<E: Entry>(bwt: &[u8], aux: &[u32], aux_log2: u8, out: &mut [u8]) -> Result<()> {
    let n = bwt.len();
    let primary = aux[0] as usize;
    // Row 0 is the sentinel's; the rows starting with byte c follow those of smaller bytes.
    let mut counts = [0usize; 256];
    for &b in bwt {
        counts[b as usize] += 1;
    }
    let mut next = [0usize; 256];
    let mut sum = 1;
    for (slot, count) in next.iter_mut().zip(counts) {
        *slot = sum;
        sum += count;
    }
    // The last column is `bwt` with the sentinel at the primary row (whose entry is 0).
    let mut entries = vec![E::default(); n + 1];
    for (i, &b) in bwt.iter().enumerate() {
        let row = i + usize::from(i >= primary);
        entries[row] = E::pack(next[b as usize], b);
        next[b as usize] += 1;
    }
    let rate = 1usize << aux_log2;
    let start_row = |j: usize| aux.get(j + 1).map_or(0, |&a| a as usize);
    let mismatch = || CodecError::corrupt(NAME, "BWT indices do not meet the rebuilt text");
    // Every stretch but the last is `rate` bytes: groups of them walk in step.
    let full = aux.len() - 1;
    for group in (0..full).step_by(WALKERS) {
        let walkers = WALKERS.min(full - group);
        let mut rows = [0usize; WALKERS];
        for (w, row) in rows.iter_mut().enumerate().take(walkers) {
            *row = start_row(group + w);
        }
        for k in (0..rate).rev() {
            for (w, row) in rows.iter_mut().enumerate().take(walkers) {
                let e = entries[*row];
                out[(group + w) * rate + k] = e.byte();
                *row = e.next();
            }
        }
        for (w, &row) in rows.iter().enumerate().take(walkers) {
            if row != aux[group + w] as usize {
                return Err(mismatch());
            }
        }
    }
    let mut row = 0;
    for i in (full * rate..n).rev() {
        let e = entries[row];
        out[i] = e.byte();
        row = e.next();
    }
    if row != aux[full] as usize {
        return Err(mismatch());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Definition-level reference: sort suffixes of `T$` naively.
    fn naive(block: &[u8], aux_log2: u8) -> (Vec<u8>, Vec<u32>) {
        let n = block.len();
        let mut sa: Vec<usize> = (0..n).collect();
        sa.sort_by(|&a, &b| block[a..].cmp(&block[b..]));
        let mut out = Vec::with_capacity(n);
        let mut aux = vec![0u32; aux_count(n, aux_log2)];
        out.push(block[n - 1]); // row 0: suffix "$", preceded by T[n-1]
        for (r, &s) in sa.iter().enumerate() {
            if s % (1 << aux_log2) == 0 {
                aux[s >> aux_log2] = (r + 1) as u32;
            }
            if s != 0 {
                out.push(block[s - 1]);
            }
        }
        (out, aux)
    }

    #[test]
    fn matches_definition_and_inverts() {
        let samples: [&[u8]; 6] = [
            b"a",
            b"banana",
            b"ababacabac",
            b"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            b"the quick brown fox jumps over the lazy dog; the end",
            &[0, 255, 0, 255, 1, 1, 0, 0, 7],
        ];
        for s in samples {
            for aux_log2 in [1u8, 2, 3, 16] {
                let (bwt, aux) = forward(s, aux_log2);
                assert_eq!((bwt.clone(), aux.clone()), naive(s, aux_log2), "{s:?}");
                let mut out = vec![0; s.len()];
                inverse(bwt, &aux, aux_log2, &mut out).unwrap();
                assert_eq!(out, s);
            }
        }
    }

    #[test]
    fn indices_that_do_not_meet_are_errors() {
        let text = b"the quick brown fox jumps over the lazy dog; the end".repeat(5);
        let (bwt, aux) = forward(&text, 4);
        let mut out = vec![0; text.len()];
        inverse(bwt.clone(), &aux, 4, &mut out).unwrap();
        assert_eq!(out, text);
        for j in 0..aux.len() {
            let mut bad = aux.clone();
            bad[j] = bad[j] % text.len() as u32 + 1;
            assert!(
                inverse(bwt.clone(), &bad, 4, &mut out).is_err(),
                "index {j}"
            );
        }
    }

    #[test]
    fn inverse_rejects_bad_indices_and_survives_garbage() {
        let mut out = [0u8; 3];
        assert!(inverse(b"abc".to_vec(), &[0], 4, &mut out).is_err());
        assert!(inverse(b"abc".to_vec(), &[4], 4, &mut out).is_err());
        assert!(inverse(b"abc".to_vec(), &[1, 2], 4, &mut out).is_err());
        assert!(inverse(b"abc".to_vec(), &[1], 4, &mut out[..2]).is_err());
        assert!(inverse(Vec::new(), &[], 4, &mut []).is_err());
        // any bytes with in-range indices decode or are an error, never a panic
        let mut x = 12345u32;
        for len in 1..300usize {
            let data: Vec<u8> = (0..len)
                .map(|_| {
                    x = x.wrapping_mul(1664525).wrapping_add(1013904223);
                    (x >> 29) as u8
                })
                .collect();
            let aux: Vec<u32> = (0..aux_count(len, 3))
                .map(|j| 1 + (j * 7 % len) as u32)
                .collect();
            let mut out = vec![0; len];
            let _ = inverse(data, &aux, 3, &mut out);
        }
    }
}
