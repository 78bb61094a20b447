//! A reference `lzss` decoder written straight from `docs/FORMAT.md`, one token at a
//! time, for the differential oracle: a stream without a checksum may decode to other
//! bytes after a mutation, but colzip's decoder must then agree with this one (same
//! output, or both refuse).

fn varint(bytes: &[u8]) -> Option<(u64, usize)> {
    let mut value = 0u64;
    for (i, &b) in bytes.iter().enumerate().take(10) {
        if i == 9 && b > 1 {
            return None;
        }
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some((value, i + 1));
        }
    }
    None
}

/// The decoded bytes, or `None` where the format says the stream is invalid (or claims
/// more than `limit`).
pub fn lzss(stream: &[u8], limit: usize) -> Option<Vec<u8>> {
    if stream.len() < 5 || stream[0] != 1 {
        return None;
    }
    let s = usize::from(stream[1]);
    let w = usize::from(stream[2]);
    let c = usize::from(u16::from_le_bytes([stream[3], stream[4]]));
    if ![1, 2, 4, 8].contains(&s) || w == 0 || !(2048..=16384).contains(&c) || c % 8 != 0 {
        return None;
    }
    let (n, used) = varint(&stream[5..])?;
    if n > limit as u64 {
        return None;
    }
    let n = usize::try_from(n).ok()?;
    let body = n - n % s;
    let k = body.div_ceil(c);
    let mut pos = 5 + used;
    let table_end = pos.checked_add(k.checked_mul(2)?)?;
    if table_end > stream.len() {
        return None;
    }
    let sizes: Vec<usize> = stream[pos..table_end]
        .chunks_exact(2)
        .map(|e| usize::from(u16::from_le_bytes([e[0], e[1]])))
        .collect();
    pos = table_end;
    let total: usize = sizes.iter().sum();
    if pos + total + n % s != stream.len() {
        return None;
    }
    let min = match s {
        1 => 3,
        2 => 2,
        _ => 1,
    };
    let mut out = Vec::with_capacity(n.min(stream.len() * 1100));
    for (i, &size) in sizes.iter().enumerate() {
        let raw = c.min(body - i * c);
        if size == 0 || size > raw {
            return None;
        }
        let payload = &stream[pos..pos + size];
        pos += size;
        if size == raw {
            out.extend_from_slice(payload);
            continue;
        }
        let m = raw / s;
        if payload.len() < 2 {
            return None;
        }
        let t = usize::from(u16::from_le_bytes([payload[0], payload[1]]));
        if t == 0 || t > m {
            return None;
        }
        let f = t.div_ceil(8);
        let flags = payload.get(2..2 + f)?;
        if (t..f * 8).any(|bit| flags[bit / 8] >> (bit % 8) & 1 != 0) {
            return None;
        }
        let is_match = |tok: usize| flags[tok / 8] >> (tok % 8) & 1 == 1;
        let matches = (0..t).filter(|&tok| is_match(tok)).count();
        let literals = t - matches;
        if payload.len() != 2 + f + literals * s + 2 * matches {
            return None;
        }
        let lit = &payload[2 + f..2 + f + literals * s];
        let lens = &payload[2 + f + literals * s..2 + f + literals * s + matches];
        let dists = &payload[2 + f + literals * s + matches..];
        let start = out.len();
        let (mut li, mut mi, mut o) = (0, 0, 0usize);
        for tok in 0..t {
            if !is_match(tok) {
                if o + 1 > m {
                    return None;
                }
                out.extend_from_slice(&lit[li * s..(li + 1) * s]);
                li += 1;
                o += 1;
            } else {
                let len = usize::from(lens[mi]) + min;
                let d = usize::from(dists[mi]);
                mi += 1;
                if d == 0 || d > w || d > o || o + len > m {
                    return None;
                }
                for _ in 0..len * s {
                    let byte = out[out.len() - d * s];
                    out.push(byte);
                }
                o += len;
            }
        }
        if o != m || out.len() - start != raw {
            return None;
        }
    }
    out.extend_from_slice(&stream[pos..]);
    Some(out)
}
