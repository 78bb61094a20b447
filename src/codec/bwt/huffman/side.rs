//! Side information: the table count, the tables' code lengths, the gap array and the
//! selectors.

use super::*;

/// Bit geometry of the stream: segment and subsequence sizes (log2 of bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub seg_log2: u8,
    pub sub_log2: u8,
}

impl Geometry {
    pub(super) fn count(total_bits: u64, log2: u8) -> u64 {
        total_bits.div_ceil(1u64 << log2)
    }
    pub fn segments(&self, total_bits: u64) -> u64 {
        Self::count(total_bits, self.seg_log2)
    }
    pub fn subsequences(&self, total_bits: u64) -> u64 {
        Self::count(total_bits, self.sub_log2)
    }
}

pub(super) fn write_lengths(w: &mut BitWriter, lens: &[u8]) {
    let mut cur = u32::from(lens[0]);
    w.put(cur, 5);
    for &l in lens {
        let l = u32::from(l);
        while cur < l {
            w.put(0b10, 2);
            cur += 1;
        }
        while cur > l {
            w.put(0b11, 2);
            cur -= 1;
        }
        w.put(0, 1);
    }
}

pub(super) fn read_lengths(r: &mut BitReader, alphabet_size: usize) -> Result<Vec<u8>> {
    let mut cur = r.read(5)?;
    let mut lens = Vec::with_capacity(alphabet_size);
    for _ in 0..alphabet_size {
        loop {
            if cur == 0 || cur > MAX_CODE_LEN {
                return Err(corrupt("code length out of range"));
            }
            if !r.bit()? {
                break;
            }
            if r.bit()? {
                cur -= 1;
            } else {
                cur += 1;
            }
        }
        lens.push(cur as u8);
    }
    if !is_complete(&lens) {
        return Err(corrupt("Huffman table is not a complete prefix code"));
    }
    Ok(lens)
}

/// Everything the decoder needs besides the bitstream.
pub struct Side {
    pub tables: Vec<DecodeTable>,
    pub selectors: Vec<u8>,
    pub gaps: Vec<u8>,
}

/// Reads the table count, the tables, the gap array and the selectors.
pub fn read_side(
    r: &mut BitReader,
    alphabet_size: usize,
    total_bits: u64,
    geo: Geometry,
) -> Result<Side> {
    let ntables = r.read(3)? as usize + 1;
    let mut tables = Vec::with_capacity(ntables);
    for _ in 0..ntables {
        tables.push(DecodeTable::new(&read_lengths(r, alphabet_size)?));
    }
    let nsub = geo.subsequences(total_bits);
    let nseg = geo.segments(total_bits);
    // each gap takes GAP_BITS and each selector at least one bit: bound before allocating
    let avail = r.remaining_bits();
    if nsub * u64::from(GAP_BITS) + nseg > avail {
        return Err(corrupt("truncated gap array or selectors"));
    }
    let mut gaps = Vec::with_capacity(nsub as usize);
    for _ in 0..nsub {
        gaps.push(r.read(GAP_BITS)? as u8);
    }
    let mut mtf: Vec<u8> = (0..ntables as u8).collect();
    let mut selectors = Vec::with_capacity(nseg as usize);
    for _ in 0..nseg {
        let mut j = 0usize;
        while r.bit()? {
            j += 1;
            if j >= ntables {
                return Err(corrupt("selector out of range"));
            }
        }
        let t = mtf[j];
        mtf.copy_within(0..j, 1);
        mtf[0] = t;
        selectors.push(t);
    }
    Ok(Side {
        tables,
        selectors,
        gaps,
    })
}
