//! Move-to-front over the block's own alphabet.
//!
//! The list starts as the bytes used in the block, in increasing order (so values are
//! `< used`, the number of distinct bytes). Each byte is replaced by its position in the
//! list and then moved to the front. A GPU can compute the same values with the
//! scan-based MTF of Patel et al. (partial lists per chunk, merged by a scan).

/// The distinct bytes of `data` in increasing order.
pub fn alphabet(data: &[u8]) -> Vec<u8> {
    let mut seen = [false; 256];
    for &b in data {
        seen[b as usize] = true;
    }
    (0..=255u8).filter(|&b| seen[b as usize]).collect()
}

/// Forward MTF. Every byte of `data` must be in `alphabet`.
pub fn encode(data: &[u8], alphabet: &[u8]) -> Vec<u8> {
    let mut list = [0u8; 256];
    list[..alphabet.len()].copy_from_slice(alphabet);
    let mut out = Vec::with_capacity(data.len());
    for &b in data {
        if list[0] == b {
            out.push(0);
            continue;
        }
        let mut prev = list[0];
        let mut i = 1;
        // shift right until `b` is found; it is present by contract
        loop {
            let cur = list[i];
            list[i] = prev;
            if cur == b {
                break;
            }
            prev = cur;
            i += 1;
        }
        list[0] = b;
        out.push(i as u8);
    }
    out
}

/// Inverse MTF in place: each value (which the caller guarantees is `< alphabet.len()`)
/// is replaced by the byte it stands for.
pub fn decode(values: &mut [u8], alphabet: &[u8]) {
    let mut list = [0u8; 256];
    list[..alphabet.len()].copy_from_slice(alphabet);
    for v in values.iter_mut() {
        let i = *v as usize;
        let b = list[i];
        if i != 0 {
            list.copy_within(0..i, 1);
            list[0] = b;
        }
        *v = b;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips() {
        let samples: [&[u8]; 4] = [
            b"",
            b"cbbbaaaaa",
            b"abracadabra, abracadabra",
            &[255, 0, 255, 0, 3, 3, 3],
        ];
        for s in samples {
            let a = alphabet(s);
            let mut v = encode(s, &a);
            assert!(v.iter().all(|&x| (x as usize) < a.len().max(1)));
            decode(&mut v, &a);
            assert_eq!(v, s);
        }
        let all: Vec<u8> = (0..=255u8).rev().chain(0..=255u8).collect();
        let a = alphabet(&all);
        let mut v = encode(&all, &a);
        assert_eq!(v[0], 255);
        decode(&mut v, &a);
        assert_eq!(v, all);
    }

    #[test]
    fn paper_example() {
        let a = alphabet(b"abc");
        assert_eq!(encode(b"cbbbaaaaa", &a), [2, 2, 0, 0, 2, 0, 0, 0, 0]);
    }
}
