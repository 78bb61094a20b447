//! The decoder's tables: a first-level lookup and canonical ranges, and their device image.

use super::*;

/// Bytes of one table's device image ([`DecodeTable::write_device_image`]).
pub(crate) const DEVICE_TABLE_BYTES: usize = 2784;

/// Decoding structures of one table.
pub struct DecodeTable {
    /// `symbol << 5 | len` for codes of at most `LUT_BITS` bits, indexed by the next
    /// `LUT_BITS` bits; 0 where the code is longer.
    lut: Vec<u16>,
    first: [u32; MAX_CODE_LEN as usize + 1],
    count: [u32; MAX_CODE_LEN as usize + 1],
    offset: [u32; MAX_CODE_LEN as usize + 1],
    sorted: Vec<u16>,
}

impl DecodeTable {
    /// Builds the table; `lens` must be a complete code (checked by the caller).
    pub(super) fn new(lens: &[u8]) -> Self {
        let codes = canonical_codes(lens);
        let mut lut = vec![0u16; 1 << LUT_BITS];
        let mut count = [0u32; MAX_CODE_LEN as usize + 1];
        for (s, (&l, &c)) in lens.iter().zip(&codes).enumerate() {
            let l32 = u32::from(l);
            count[l as usize] += 1;
            if l32 <= LUT_BITS {
                let lo = (c << (LUT_BITS - l32)) as usize;
                let hi = lo + (1usize << (LUT_BITS - l32));
                lut[lo..hi].fill(((s as u16) << 5) | u16::from(l));
            }
        }
        let mut first = [0u32; MAX_CODE_LEN as usize + 1];
        let mut offset = [0u32; MAX_CODE_LEN as usize + 1];
        for l in 1..=MAX_CODE_LEN as usize {
            first[l] = (first[l - 1] + count[l - 1]) << 1;
            offset[l] = offset[l - 1] + count[l - 1];
        }
        let mut sorted: Vec<u16> = (0..lens.len() as u16).collect();
        sorted.sort_by_key(|&s| (lens[s as usize], s));
        DecodeTable {
            lut,
            first,
            count,
            offset,
            sorted,
        }
    }

    /// Appends the table in the GPU decoder's layout (`struct Table` in
    /// `kernels/bwt_decompress.cu`): the LUT, the sorted symbols (260 slots), then
    /// `first`, `count` and `offset`, padded to [`DEVICE_TABLE_BYTES`].
    pub(crate) fn write_device_image(&self, out: &mut Vec<u8>) {
        let start = out.len();
        out.extend(self.lut.iter().flat_map(|v| v.to_le_bytes()));
        out.extend((0..260).flat_map(|i| self.sorted.get(i).copied().unwrap_or(0).to_le_bytes()));
        for array in [&self.first, &self.count, &self.offset] {
            out.extend(array.iter().flat_map(|v| v.to_le_bytes()));
        }
        out.resize(start + DEVICE_TABLE_BYTES, 0);
    }

    /// Decodes the symbol whose code starts the 16 bits `bits`; returns (symbol, length).
    #[inline]
    pub(super) fn decode(&self, bits: u32) -> (u16, u32) {
        let e = self.lut[(bits >> (MAX_CODE_LEN - LUT_BITS)) as usize];
        if e != 0 {
            return (e >> 5, u32::from(e & 31));
        }
        for l in LUT_BITS + 1..=MAX_CODE_LEN {
            let c = bits >> (MAX_CODE_LEN - l);
            let d = c.wrapping_sub(self.first[l as usize]);
            if d < self.count[l as usize] {
                return (self.sorted[(self.offset[l as usize] + d) as usize], l);
            }
        }
        unreachable!("complete prefix code always decodes")
    }
}
