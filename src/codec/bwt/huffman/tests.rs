use super::*;

const GEO: Geometry = Geometry {
    seg_log2: 7,
    sub_log2: 10,
};

fn round_trip(symbols: &[u16], a: usize, geo: Geometry) -> u64 {
    let mut freq = vec![0u32; a];
    for &s in symbols {
        freq[s as usize] += 1;
    }
    let enc = encode(symbols, &freq, geo);
    assert!(enc.gaps.iter().all(|&g| u32::from(g) < MAX_CODE_LEN));
    let mut w = BitWriter::default();
    enc.write_side(&mut w);
    let side_bytes = w.finish();
    let mut r = BitReader::new(&side_bytes);
    let side = read_side(&mut r, a, enc.total_bits, geo).unwrap();
    assert_eq!(side.selectors, enc.selectors);
    assert_eq!(side.gaps, enc.gaps);
    let dec = decode(&side, &enc.bits, enc.total_bits, geo, symbols.len()).unwrap();
    assert_eq!(dec, symbols);
    enc.total_bits
}

use crate::codec::test_data::lcg_next as lcg;

#[test]
fn lengths_are_limited_and_complete() {
    // Fibonacci frequencies force deep trees
    let mut f = vec![1u32, 1];
    while f.len() < 40 {
        let x = f[f.len() - 1] + f[f.len() - 2];
        f.push(x);
    }
    for max in [9, 12, 16] {
        let l = build_lengths(&f, max);
        assert!(l.iter().all(|&x| x >= 1 && u32::from(x) <= max));
        let kraft: f64 = l.iter().map(|&x| 0.5f64.powi(x as i32)).sum();
        assert!((kraft - 1.0).abs() < 1e-12);
    }
    assert_eq!(build_lengths(&[5, 0], 16), [1, 1]);
    let l = build_lengths(&[0; 257], 16);
    assert!(is_complete(&l));
}

#[test]
fn canonical_codes_are_prefix_free() {
    let lens = build_lengths(&[10, 1, 1, 5, 7, 3, 3, 100, 0, 2], 16);
    let codes = canonical_codes(&lens);
    for i in 0..lens.len() {
        for j in 0..lens.len() {
            if i != j && lens[i] <= lens[j] {
                assert_ne!(codes[j] >> (lens[j] - lens[i]), codes[i]);
            }
        }
    }
}

#[test]
fn round_trips_various() {
    let mut seed = 7;
    round_trip(&[0], 2, GEO);
    round_trip(&[1, 0, 1, 1], 2, GEO);
    let uniform: Vec<u16> = (0..5000).map(|_| (lcg(&mut seed) % 257) as u16).collect();
    round_trip(&uniform, 257, GEO);
    // skewed, with regime changes so that several tables pay off
    let skew: Vec<u16> = (0..60000)
        .map(|i| {
            let r = lcg(&mut seed);
            let band = if (i / 700) % 3 == 0 { 0 } else { 20 };
            if r.is_multiple_of(4) {
                (r % 40) as u16
            } else {
                band + (r % 3) as u16
            }
        })
        .collect();
    for geo in [
        GEO,
        Geometry {
            seg_log2: 5,
            sub_log2: 5,
        },
        Geometry {
            seg_log2: 9,
            sub_log2: 14,
        },
    ] {
        round_trip(&skew, 41, geo);
    }
    // long codes (beyond the lookup table) are exercised
    let mut deep = Vec::new();
    let mut f = 1usize;
    for s in 0..20u16 {
        deep.extend(std::iter::repeat_n(s, f));
        f = (f * 3 / 2).max(f + 1);
    }
    round_trip(&deep, 20, GEO);
}

#[test]
fn several_tables_beat_one() {
    let mut seed = 3;
    let syms: Vec<u16> = (0..100_000)
        .map(|i| {
            let r = lcg(&mut seed);
            if (i / 2000) % 2 == 0 {
                (r % 4) as u16
            } else {
                4 + (r % 60) as u16
            }
        })
        .collect();
    let multi = round_trip(&syms, 64, GEO);
    let mut freq = vec![0u32; 64];
    syms.iter().for_each(|&s| freq[s as usize] += 1);
    let l = build_lengths(&freq, MAX_CODE_LEN);
    let single: u64 = syms.iter().map(|&s| u64::from(l[s as usize])).sum();
    assert!(multi < single * 9 / 10, "{multi} vs {single}");
}

#[test]
fn rejects_bad_tables_and_gaps() {
    // incomplete code: two symbols both of length 2
    let mut w = BitWriter::default();
    w.put(0, 3);
    write_lengths(&mut w, &[2, 2]);
    let b = w.finish();
    assert!(read_side(&mut BitReader::new(&b), 2, 8, GEO).is_err());
    // length 0 or 17
    let mut w = BitWriter::default();
    w.put(0, 3);
    w.put(0, 5);
    let b = w.finish();
    assert!(read_side(&mut BitReader::new(&b), 2, 8, GEO).is_err());
    // gap inconsistency
    let syms: Vec<u16> = (0..3000).map(|i| (i * 7 % 13) as u16).collect();
    let mut freq = vec![0u32; 13];
    syms.iter().for_each(|&s| freq[s as usize] += 1);
    let enc = encode(&syms, &freq, GEO);
    let mut w = BitWriter::default();
    enc.write_side(&mut w);
    let b = w.finish();
    let mut side = read_side(&mut BitReader::new(&b), 13, enc.total_bits, GEO).unwrap();
    side.gaps[1] ^= 1;
    assert!(decode(&side, &enc.bits, enc.total_bits, GEO, syms.len()).is_err());
    side.gaps[1] ^= 1;
    assert!(decode(&side, &enc.bits, enc.total_bits, GEO, syms.len() - 1).is_err());
    assert!(decode(&side, &enc.bits, enc.total_bits - 1, GEO, syms.len()).is_err());
}
