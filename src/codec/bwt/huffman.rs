//! Length-limited canonical Huffman with several tables, selected per fixed-size bit
//! segment, and a gap array per fixed-size bit subsequence so that the bitstream decodes
//! in parallel.
//!
//! * Bits are written most significant first: bit `i` of a byte string is bit `7 - i % 8`
//!   of byte `i / 8`.
//! * Code lengths are `1..=MAX_CODE_LEN` for every symbol of the alphabet (a complete
//!   prefix code: the Kraft sum is exactly 1). Codes are canonical: ordered by
//!   (length, symbol), consecutive values within a length.
//! * The bitstream of `total_bits` bits is cut into segments of `2^seg_log2` bits. A
//!   codeword is coded with the table selected for the segment in which it *starts*.
//! * It is also cut into subsequences of `2^sub_log2` bits. `gap[s]` is the offset from
//!   the start of subsequence `s` to the first codeword starting at or after it (or to
//!   `total_bits` when none does). Gaps are `< MAX_CODE_LEN`, 4 bits each.
//! * Decoding subsequence `s` starts at `s * S + gap[s]` and decodes every codeword that
//!   starts before `min((s + 1) * S, total_bits)`; it must stop exactly where subsequence
//!   `s + 1` starts (`(s + 1) * S + gap[s + 1]`), or at `total_bits` for the last one.
//!   Subsequences are independent: this decoder runs them in parallel and concatenates.

use rayon::prelude::*;

use super::NAME;
use crate::codec::error::{CodecError, Result};

/// Longest codeword, in bits.
pub const MAX_CODE_LEN: u32 = 16;
/// Most tables per block.
pub const MAX_TABLES: usize = 8;
/// Width of one gap array entry.
pub const GAP_BITS: u32 = 4;
/// Bits resolved by the first-level decode lookup.
const LUT_BITS: u32 = 10;
/// Subsequences decoded per parallel task.
const SUBS_PER_TASK: usize = 256;

fn corrupt(reason: &str) -> CodecError {
    CodecError::corrupt(NAME, reason)
}

// ---------------------------------------------------------------------------------
// Bit I/O
// ---------------------------------------------------------------------------------

/// MSB-first bit writer.
#[derive(Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    pub fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(bytes),
            acc: 0,
            nbits: 0,
        }
    }

    /// Appends the low `n` bits of `v` (`n <= 32`, `v < 2^n`).
    #[inline]
    pub fn put(&mut self, v: u32, n: u32) {
        debug_assert!(n <= 32 && (n == 32 || v >> n == 0));
        if n == 0 {
            return;
        }
        self.acc = (self.acc << n) | u64::from(v);
        self.nbits += n;
        if self.nbits >= 32 {
            self.nbits -= 32;
            self.out
                .extend_from_slice(&((self.acc >> self.nbits) as u32).to_be_bytes());
        }
    }

    pub fn bit_len(&self) -> u64 {
        self.out.len() as u64 * 8 + u64::from(self.nbits)
    }

    /// Pads with zero bits to a byte boundary and returns the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        while self.nbits >= 8 {
            self.nbits -= 8;
            self.out.push((self.acc >> self.nbits) as u8);
        }
        if self.nbits > 0 {
            self.out.push((self.acc << (8 - self.nbits)) as u8);
        }
        self.out
    }
}

#[inline]
fn load_be64(data: &[u8], byte: usize) -> u64 {
    match data.get(byte..byte + 8) {
        Some(s) => u64::from_be_bytes(s.try_into().unwrap()),
        None => {
            let mut buf = [0u8; 8];
            if byte < data.len() {
                let tail = &data[byte..];
                buf[..tail.len()].copy_from_slice(tail);
            }
            u64::from_be_bytes(buf)
        }
    }
}

/// The `n` bits (`1..=32`) at bit `pos`, zero-filled past the end.
#[inline]
fn peek(data: &[u8], pos: u64, n: u32) -> u32 {
    let byte = (pos >> 3) as usize;
    ((load_be64(data, byte) << (pos & 7)) >> (64 - n)) as u32
}

/// MSB-first sequential bit reader with bounds checks.
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: u64,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader { data, pos: 0 }
    }

    /// Reads `n` bits (`1..=32`).
    pub fn read(&mut self, n: u32) -> Result<u32> {
        if self.pos + u64::from(n) > self.data.len() as u64 * 8 {
            return Err(corrupt("truncated block side information"));
        }
        let v = peek(self.data, self.pos, n);
        self.pos += u64::from(n);
        Ok(v)
    }

    pub fn bit(&mut self) -> Result<bool> {
        Ok(self.read(1)? == 1)
    }

    /// Bits consumed so far.
    pub fn bit_pos(&self) -> u64 {
        self.pos
    }
}

// ---------------------------------------------------------------------------------
// Code construction
// ---------------------------------------------------------------------------------

/// Huffman code lengths for `weights` (all >= 1), ties broken by symbol index.
fn huffman_lengths(weights: &[u64]) -> Vec<u8> {
    let n = weights.len();
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (weights[i], i));
    // nodes 0..n are leaves (by symbol), n.. internal in creation order
    let mut parent = vec![0usize; 2 * n - 1];
    let mut iw: Vec<u64> = Vec::with_capacity(n - 1);
    let (mut li, mut ii) = (0usize, 0usize);
    for k in 0..n - 1 {
        let mut pick = || {
            let leaf = (li < n).then(|| weights[order[li]]);
            let internal = (ii < k).then(|| iw[ii]);
            match (leaf, internal) {
                (Some(l), Some(m)) if m < l => {
                    ii += 1;
                    (n + ii - 1, m)
                }
                (Some(l), _) => {
                    li += 1;
                    (order[li - 1], l)
                }
                (None, Some(m)) => {
                    ii += 1;
                    (n + ii - 1, m)
                }
                (None, None) => unreachable!(),
            }
        };
        let (a, wa) = pick();
        let (b, wb) = pick();
        parent[a] = n + k;
        parent[b] = n + k;
        iw.push(wa + wb);
    }
    // depths: the root is the last internal node; parents are created after children
    let mut depth = vec![0u8; 2 * n - 1];
    for node in (0..2 * n - 2).rev() {
        depth[node] = depth[parent[node]] + 1;
    }
    depth.truncate(n);
    depth
}

/// Code lengths in `1..=max_len` for every symbol (`freqs.len() >= 2`), from frequencies
/// (0 counts as 1). If the Huffman code is too deep, weights are halved (`w / 2 + 1`)
/// until it fits.
pub fn build_lengths(freqs: &[u32], max_len: u32) -> Vec<u8> {
    assert!(freqs.len() >= 2 && freqs.len() <= 1 << max_len);
    let mut weights: Vec<u64> = freqs.iter().map(|&f| u64::from(f.max(1))).collect();
    loop {
        let lens = huffman_lengths(&weights);
        if lens.iter().all(|&l| u32::from(l) <= max_len) {
            return lens;
        }
        for w in &mut weights {
            *w = *w / 2 + 1;
        }
    }
}

/// Canonical codes for valid lengths.
pub fn canonical_codes(lens: &[u8]) -> Vec<u32> {
    let mut count = [0u32; MAX_CODE_LEN as usize + 2];
    for &l in lens {
        count[l as usize] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; MAX_CODE_LEN as usize + 2];
    for l in 1..=MAX_CODE_LEN as usize {
        next[l] = (next[l - 1] + count[l - 1]) << 1;
    }
    lens.iter()
        .map(|&l| {
            let c = next[l as usize];
            next[l as usize] += 1;
            c
        })
        .collect()
}

/// Whether `lens` (all in `1..=MAX_CODE_LEN`) form a complete prefix code.
fn is_complete(lens: &[u8]) -> bool {
    let kraft: u64 = lens
        .iter()
        .map(|&l| 1u64 << (MAX_CODE_LEN - u32::from(l)))
        .sum();
    kraft == 1u64 << MAX_CODE_LEN
}

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
    fn new(lens: &[u8]) -> Self {
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
    fn decode(&self, bits: u32) -> (u16, u32) {
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

// ---------------------------------------------------------------------------------
// Side information: tables, gap array, selectors
// ---------------------------------------------------------------------------------

/// Bit geometry of the stream: segment and subsequence sizes (log2 of bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub seg_log2: u8,
    pub sub_log2: u8,
}

impl Geometry {
    fn count(total_bits: u64, log2: u8) -> u64 {
        total_bits.div_ceil(1u64 << log2)
    }
    pub fn segments(&self, total_bits: u64) -> u64 {
        Self::count(total_bits, self.seg_log2)
    }
    pub fn subsequences(&self, total_bits: u64) -> u64 {
        Self::count(total_bits, self.sub_log2)
    }
}

fn write_lengths(w: &mut BitWriter, lens: &[u8]) {
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

fn read_lengths(r: &mut BitReader, alphabet_size: usize) -> Result<Vec<u8>> {
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
    let avail = (r.data.len() as u64 * 8).saturating_sub(r.bit_pos());
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

// ---------------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------------

/// Symbols per group in the table-training passes.
const TRAIN_GROUP: usize = 50;
/// Training passes over fixed symbol groups, then passes with the real segmentation.
const TRAIN_PASSES: usize = 4;
const SEGMENT_PASSES: usize = 2;

/// How many tables a block of `nsym` symbols gets.
pub fn table_count(nsym: usize) -> usize {
    match nsym {
        0..200 => 1,
        200..600 => 2,
        600..1200 => 3,
        1200..2400 => 4,
        2400..4800 => 5,
        4800..40000 => 6,
        _ => MAX_TABLES,
    }
}

/// Starting cost vectors: table `t` is cheap on a band of symbols holding about
/// `1/nt` of the occurrences.
fn initial_lengths(freq: &[u32], nt: usize) -> Vec<Vec<u8>> {
    if nt == 1 {
        return vec![build_lengths(freq, MAX_CODE_LEN)];
    }
    let total: u64 = freq.iter().map(|&f| u64::from(f)).sum();
    let mut out = Vec::with_capacity(nt);
    let mut sym = 0usize;
    let mut cum = 0u64;
    for t in 0..nt {
        let goal = total * (t as u64 + 1) / nt as u64;
        let lo = sym;
        while sym < freq.len() && (sym == lo || cum + u64::from(freq[sym]) <= goal || t + 1 == nt) {
            cum += u64::from(freq[sym]);
            sym += 1;
        }
        out.push(
            (0..freq.len())
                .map(|s| if s >= lo && s < sym { 1 } else { 8 })
                .collect(),
        );
    }
    out
}

/// Per-symbol code lengths of all tables packed in 16-bit lanes: table `t` in word
/// `t / 4`, bits `16 * (t % 4)..`. Lanes of absent tables hold `MAX_CODE_LEN`.
fn pack_lengths(lens: &[Vec<u8>], alphabet_size: usize) -> Vec<[u64; 2]> {
    (0..alphabet_size)
        .map(|s| {
            let mut w = [0u64; 2];
            for t in 0..MAX_TABLES {
                let l = lens.get(t).map_or(MAX_CODE_LEN as u64, |l| u64::from(l[s]));
                w[t / 4] |= l << (16 * (t % 4));
            }
            w
        })
        .collect()
}

#[inline]
fn lane(w: &[u64; 2], t: usize) -> u64 {
    (w[t / 4] >> (16 * (t % 4))) & 0xffff
}

const LANE_ONES: u64 = 0x0001_0001_0001_0001;

/// Picks, for each segment in turn, the table under which the most codewords start in
/// that segment (ties: the earlier end, then the lower table). Returns the selectors and
/// adds each symbol's occurrence to its table's counts when `freqs` is given.
///
/// All tables are simulated at once in 16-bit lanes (`seg_log2 <= 10` keeps every lane
/// below 2^15).
fn assign_segments(
    symbols: &[u16],
    lens: &[Vec<u8>],
    seg_log2: u8,
    mut freqs: Option<&mut Vec<Vec<u32>>>,
) -> Vec<u8> {
    assert!(seg_log2 <= 10);
    let packed = pack_lengths(lens, lens[0].len());
    let mut selectors = Vec::new();
    let (mut i, mut pos) = (0usize, 0u64);
    while i < symbols.len() {
        let end = ((pos >> seg_log2) + 1) << seg_log2;
        // lane value 0x8000 + rem - 1 - S has its top bit set while S < rem
        let r = ((end - pos - 1) | 0x8000) * LANE_ONES;
        let mut sum = [0u64; 2];
        let mut count = [0u64; 2];
        for &sym in &symbols[i..] {
            let a0 = ((r - sum[0]) >> 15) & LANE_ONES;
            let a1 = ((r - sum[1]) >> 15) & LANE_ONES;
            if a0 | a1 == 0 {
                break;
            }
            let c = &packed[sym as usize];
            sum[0] += c[0] & (a0 * 0xffff);
            sum[1] += c[1] & (a1 * 0xffff);
            count[0] += a0;
            count[1] += a1;
        }
        let mut best = (0usize, 0usize, u64::MAX);
        for t in 0..lens.len() {
            let j = i + lane(&count, t) as usize;
            let p = pos + lane(&sum, t);
            if j > best.1 || (j == best.1 && p < best.2) {
                best = (t, j, p);
            }
        }
        debug_assert_eq!(selectors.len() as u64, pos >> seg_log2);
        selectors.push(best.0 as u8);
        if let Some(f) = freqs.as_deref_mut() {
            for &s in &symbols[i..best.1] {
                f[best.0][s as usize] += 1;
            }
        }
        i = best.1;
        pos = best.2;
    }
    selectors
}

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

// ---------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------

/// Decodes subsequence `s`, appending its symbols to `out`.
fn decode_subsequence(
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

#[cfg(test)]
mod tests {
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
}
