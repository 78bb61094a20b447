//! Zero-run coding of MTF values into Huffman symbols.
//!
//! Symbols: `RUNA = 0`, `RUNB = 1`, and `v + 1` for an MTF value `v >= 1`. A run of
//! `k >= 1` zeros is written in bijective base 2, least significant digit first, with
//! digit 1 as `RUNA` and digit 2 as `RUNB`: `k = sum(d_i * 2^i)`. A run ends at the
//! first symbol that is not `RUNA`/`RUNB` or at the end of the block's symbols. With
//! `used` distinct bytes the alphabet has `used + 1` symbols (`0 ..= used`).

use super::NAME;
use crate::codec::error::{CodecError, Result};

pub const RUNA: u16 = 0;
pub const RUNB: u16 = 1;

fn push_run(out: &mut Vec<u16>, mut k: u64) {
    while k > 0 {
        if k & 1 == 1 {
            out.push(RUNA);
            k = (k - 1) >> 1;
        } else {
            out.push(RUNB);
            k = (k - 2) >> 1;
        }
    }
}

/// MTF values to symbols; also returns the symbol frequencies (`alphabet_size` entries).
pub fn encode(values: &[u8], alphabet_size: usize) -> (Vec<u16>, Vec<u32>) {
    let mut out = Vec::with_capacity(values.len() / 2 + 16);
    let mut run = 0u64;
    for &v in values {
        if v == 0 {
            run += 1;
        } else {
            push_run(&mut out, run);
            run = 0;
            out.push(u16::from(v) + 1);
        }
    }
    push_run(&mut out, run);
    let mut freq = vec![0u32; alphabet_size];
    for &s in &out {
        freq[s as usize] += 1;
    }
    (out, freq)
}

/// How many MTF values `symbols` decode to, or `None` when a zero run has more digits
/// than any block allows (33). Cheap, and allocates nothing: decoders check it against
/// the block's length before allocating the block.
pub fn decoded_len(symbols: &[u16]) -> Option<u64> {
    let mut total = 0u64;
    let mut shift = 0u32;
    for &s in symbols {
        if s <= RUNB {
            if shift > 32 {
                return None;
            }
            total = total.checked_add(u64::from(s + 1) << shift)?;
            shift += 1;
        } else {
            total = total.checked_add(1)?;
            shift = 0;
        }
    }
    Some(total)
}

/// Symbols back to exactly `n` MTF values. Symbols are `< alphabet_size` by contract
/// (the Huffman tables cannot produce others); runs past `n` and a short result are errors.
pub fn decode(symbols: &[u16], n: usize) -> Result<Vec<u8>> {
    let over = || CodecError::corrupt(NAME, "zero run overflows the block");
    let mut out = Vec::with_capacity(n);
    let mut run = 0u64;
    let mut shift = 0u32;
    for &s in symbols {
        if s <= RUNB {
            if shift > 32 {
                return Err(over());
            }
            run += u64::from(s + 1) << shift;
            shift += 1;
            continue;
        }
        if run > 0 {
            if run > (n - out.len()) as u64 {
                return Err(over());
            }
            out.resize(out.len() + run as usize, 0);
            run = 0;
            shift = 0;
        }
        if out.len() == n {
            return Err(over());
        }
        out.push((s - 1) as u8);
    }
    if run > (n - out.len()) as u64 {
        return Err(over());
    }
    out.resize(out.len() + run as usize, 0);
    if out.len() != n {
        return Err(CodecError::corrupt(
            NAME,
            "block decodes to fewer bytes than declared",
        ));
    }
    Ok(out)
}

/// Zero-run decoding fused with inverse MTF (the CPU decoder's fast path): symbols to
/// exactly `out.len()` bytes over `alphabet`. Symbols are `<= alphabet.len()` by contract.
/// Same result as [`decode`] followed by [`super::mtf::decode`].
pub fn decode_mtf(symbols: &[u16], alphabet: &[u8], out: &mut [u8]) -> Result<()> {
    let n = out.len();
    let over = || CodecError::corrupt(NAME, "zero run overflows the block");
    let mut list = [0u8; 256];
    list[..alphabet.len()].copy_from_slice(alphabet);
    let mut filled = 0usize;
    let mut run = 0u64;
    let mut shift = 0u32;
    for &s in symbols {
        if s <= RUNB {
            if shift > 32 {
                return Err(over());
            }
            run += u64::from(s + 1) << shift;
            shift += 1;
            continue;
        }
        if run > 0 {
            if run >= (n - filled) as u64 {
                return Err(over());
            }
            out[filled..filled + run as usize].fill(list[0]);
            filled += run as usize;
            run = 0;
            shift = 0;
        }
        if filled == n {
            return Err(over());
        }
        let i = (s - 1) as usize;
        let b = list[i];
        let mut k = i;
        while k > 0 {
            list[k] = list[k - 1];
            k -= 1;
        }
        list[0] = b;
        out[filled] = b;
        filled += 1;
    }
    if run != (n - filled) as u64 {
        return Err(if run > (n - filled) as u64 {
            over()
        } else {
            CodecError::corrupt(NAME, "block decodes to fewer bytes than declared")
        });
    }
    out[filled..].fill(list[0]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_bijective_base_two() {
        for k in 1..2000u64 {
            let mut s = Vec::new();
            push_run(&mut s, k);
            let vals = decode(&s, k as usize).unwrap();
            assert_eq!(vals.len() as u64, k);
            assert!(s.len() as u32 <= 64 - k.leading_zeros());
        }
        let (s, _) = encode(&[0, 0, 0], 3);
        assert_eq!(s, [RUNA, RUNA]); // 3 = 1 + 2*1
        let (s, _) = encode(&[0, 0], 3);
        assert_eq!(s, [RUNB]);
    }

    #[test]
    fn round_trips() {
        let v: Vec<u8> = [0, 0, 0, 5, 1, 0, 2, 0, 0, 0, 0, 0, 0, 0, 9, 0].to_vec();
        let (s, f) = encode(&v, 11);
        assert_eq!(f.iter().sum::<u32>() as usize, s.len());
        assert_eq!(decode(&s, v.len()).unwrap(), v);
        // fused path agrees with decode + inverse MTF
        let alphabet: Vec<u8> = (100..110).collect();
        let mut bytes = vec![0u8; v.len()];
        decode_mtf(&s, &alphabet, &mut bytes).unwrap();
        let mut expect = v.clone();
        super::super::mtf::decode(&mut expect, &alphabet);
        assert_eq!(bytes, expect);
        assert!(decode_mtf(&s, &alphabet, &mut vec![0u8; v.len() - 1]).is_err());
        assert!(decode_mtf(&s, &alphabet, &mut vec![0u8; v.len() + 1]).is_err());
        let (s, _) = encode(&[], 2);
        assert!(s.is_empty());
        let z = vec![0u8; 100_000];
        let (s, _) = encode(&z, 2);
        assert_eq!(decode(&s, z.len()).unwrap(), z);
    }

    #[test]
    fn rejects_overflow_and_short() {
        assert!(decode(&[RUNB, RUNB], 5).is_err());
        assert!(decode(&[RUNA], 2).is_err());
        assert!(decode(&[3, 3, 3], 2).is_err());
        assert!(decode(&[RUNB; 200], 1 << 20).is_err());
        assert!(decode(&[RUNA, 3, RUNB], 3).is_err());
    }
}
