//! The decoder: subsequences located by the gap array, decoded in parallel.

use super::*;

/// Decodes subsequence `s`, appending its symbols to `out`.
pub(super) fn decode_subsequence(
    side: &Side,
    bits: &[u8],
    total_bits: u64,
    geo: Geometry,
    s: usize,
    out: &mut Vec<u16>,
) -> Result<()> {
    let base = (s as u64) << geo.sub_log2;
    let start = base + u64::from(side.gaps[s]);
    let end = (base + (1u64 << geo.sub_log2)).min(total_bits);
    let next = match side.gaps.get(s + 1) {
        Some(&g) => base + (1u64 << geo.sub_log2) + u64::from(g),
        None => total_bits,
    };
    if (s == 0 && start != 0) || start > total_bits {
        return Err(corrupt("gap array points outside the bitstream"));
    }
    let mut pos = start;
    while pos < end {
        let table = &side.tables[side.selectors[(pos >> geo.seg_log2) as usize] as usize];
        let (sym, len) = table.decode(peek(bits, pos, MAX_CODE_LEN));
        pos += u64::from(len);
        out.push(sym);
    }
    if pos != next {
        return Err(corrupt("codewords do not meet the next gap array entry"));
    }
    Ok(())
}

/// Decodes the whole bitstream (`bits` holds at least `total_bits` bits), subsequences
/// in parallel. At most `max_symbols` symbols are accepted.
pub fn decode(
    side: &Side,
    bits: &[u8],
    total_bits: u64,
    geo: Geometry,
    max_symbols: usize,
) -> Result<Vec<u16>> {
    let nsub = side.gaps.len();
    let parts: Vec<Vec<u16>> = (0..nsub.div_ceil(SUBS_PER_TASK))
        .into_par_iter()
        .map(|task| {
            let mut out = Vec::new();
            for s in task * SUBS_PER_TASK..((task + 1) * SUBS_PER_TASK).min(nsub) {
                decode_subsequence(side, bits, total_bits, geo, s, &mut out)?;
                if out.len() > max_symbols {
                    return Err(corrupt("more symbols than the block can hold"));
                }
            }
            Ok(out)
        })
        .collect::<Result<_>>()?;
    let total: usize = parts.iter().map(Vec::len).sum();
    if total > max_symbols {
        return Err(corrupt("more symbols than the block can hold"));
    }
    let mut out = Vec::with_capacity(total);
    for p in parts {
        out.extend_from_slice(&p);
    }
    Ok(out)
}
