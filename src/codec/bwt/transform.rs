//! Burrows–Wheeler transform of one block by suffix sorting (libsais), and its inverse.
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
use libsais::bwt::{AuxIndicesSamplingRate, BwtWithAuxIndices};
use libsais::typestate::OwnedBuffer;

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
/// entries, each in `1..=n` (checked: libsais follows no other index than these and
/// those it derives from counts of `bwt`, so any byte content is safe).
pub fn inverse(bwt: Vec<u8>, aux: &[u32], aux_log2: u8, out: &mut [u8]) -> Result<()> {
    let n = bwt.len();
    if n == 0 || n >= i32::MAX as usize || out.len() != n || aux.len() != aux_count(n, aux_log2) {
        return Err(CodecError::corrupt(NAME, "bad BWT block geometry"));
    }
    if aux.iter().any(|&a| a == 0 || a as usize > n) {
        return Err(CodecError::corrupt(NAME, "BWT index out of range"));
    }
    let aux: Vec<i32> = aux.iter().map(|&a| a as i32).collect();
    let rate = AuxIndicesSamplingRate::from(1i32 << aux_log2);
    // SAFETY: the index count matches the rate and length (checked above), every index
    // lies in 1..=n (checked above), and the bytes may be arbitrary.
    let parts: BwtWithAuxIndices<'_, '_, u8, i32, OwnedBuffer, OwnedBuffer> =
        unsafe { BwtWithAuxIndices::from_parts(bwt, aux, rate) };
    parts
        .unbwt()
        .in_borrowed_text_buffer(out)
        .single_threaded()
        .run()
        .map_err(|e| CodecError::corrupt(NAME, format!("inverse BWT failed: {e:?}")))?;
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
    fn inverse_rejects_bad_indices_and_survives_garbage() {
        let mut out = [0u8; 3];
        assert!(inverse(b"abc".to_vec(), &[0], 4, &mut out).is_err());
        assert!(inverse(b"abc".to_vec(), &[4], 4, &mut out).is_err());
        assert!(inverse(b"abc".to_vec(), &[1, 2], 4, &mut out).is_err());
        assert!(inverse(b"abc".to_vec(), &[1], 4, &mut out[..2]).is_err());
        assert!(inverse(Vec::new(), &[], 4, &mut []).is_err());
        // any bytes with in-range indices decode to *something* of the right length
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
            inverse(data, &aux, 3, &mut out).unwrap();
        }
    }
}
