//! The encoder: the bitstream, gap array and selectors of one block, with the tables
//! [`super::choice`] trained.

use super::*;

/// The encoder's output for one block.
pub struct Encoded {
    pub lens: Vec<Vec<u8>>,
    pub selectors: Vec<u8>,
    pub gaps: Vec<u8>,
    pub bits: Vec<u8>,
    pub total_bits: u64,
}

impl Encoded {
    /// Writes the table count, the tables, the gap array and the selectors.
    pub fn write_side(&self, w: &mut BitWriter) {
        w.put(self.lens.len() as u32 - 1, 3);
        for l in &self.lens {
            write_lengths(w, l);
        }
        for &g in &self.gaps {
            w.put(u32::from(g), GAP_BITS);
        }
        let mut mtf: Vec<u8> = (0..self.lens.len() as u8).collect();
        for &t in &self.selectors {
            let j = mtf.iter().position(|&x| x == t).unwrap();
            w.put(((1u32 << j) - 1) << 1, j as u32 + 1);
            mtf.copy_within(0..j, 1);
            mtf[0] = t;
        }
    }
}

// Encoder

/// Encodes `symbols` (each `< freq.len()`, `freq.len() >= 2`, at least one symbol).
pub fn encode(symbols: &[u16], freq: &[u32], geo: Geometry) -> Encoded {
    let a = freq.len();
    let nt = table_count(symbols.len());
    let mut lens = initial_lengths(freq, nt);

    if nt > 1 {
        for _ in 0..TRAIN_PASSES {
            let mut f = vec![vec![0u32; a]; nt];
            let packed = pack_lengths(&lens, a);
            for g in symbols.chunks(TRAIN_GROUP) {
                // group costs of all tables at once (at most 50 * 16 per lane)
                let mut cost = [0u64; 2];
                for &s in g {
                    cost[0] += packed[s as usize][0];
                    cost[1] += packed[s as usize][1];
                }
                let mut best = (u64::MAX, 0usize);
                for t in 0..lens.len() {
                    let c = lane(&cost, t);
                    if c < best.0 {
                        best = (c, t);
                    }
                }
                for &s in g {
                    f[best.1][s as usize] += 1;
                }
            }
            lens = f.iter().map(|f| build_lengths(f, MAX_CODE_LEN)).collect();
        }
        for _ in 0..SEGMENT_PASSES {
            let mut f = vec![vec![0u32; a]; lens.len()];
            assign_segments(symbols, &lens, geo.seg_log2, Some(&mut f));
            // tables that no segment chose are dropped
            f.retain(|t| t.iter().any(|&x| x > 0));
            lens = f.iter().map(|f| build_lengths(f, MAX_CODE_LEN)).collect();
        }
    }

    let selectors = assign_segments(symbols, &lens, geo.seg_log2, None);
    let codes: Vec<Vec<u32>> = lens.iter().map(|l| canonical_codes(l)).collect();
    let mut w = BitWriter::with_capacity(symbols.len() / 2 + 16);
    let mut gaps = Vec::new();
    let sub_bits = 1u64 << geo.sub_log2;
    for &s in symbols {
        let pos = w.bit_len();
        while (gaps.len() as u64) * sub_bits <= pos {
            gaps.push((pos - gaps.len() as u64 * sub_bits) as u8);
        }
        let t = selectors[(pos >> geo.seg_log2) as usize] as usize;
        w.put(codes[t][s as usize], u32::from(lens[t][s as usize]));
    }
    let total_bits = w.bit_len();
    let mut selectors = selectors;
    while (gaps.len() as u64) < geo.subsequences(total_bits) {
        gaps.push((total_bits - gaps.len() as u64 * sub_bits) as u8);
    }
    // a final segment in which no codeword starts repeats the previous selector
    while (selectors.len() as u64) < geo.segments(total_bits) {
        selectors.push(*selectors.last().unwrap());
    }
    Encoded {
        lens,
        selectors,
        gaps,
        bits: w.finish(),
        total_bits,
    }
}
