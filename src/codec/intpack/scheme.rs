//! A block's analysis: the exact length of each scheme, and the choice (the shortest, the
//! lowest scheme on a tie), which is normative for byte identity.
//!
//! [`scheme_lengths`] computes all five lengths straight from the definitions in
//! `docs/FORMAT.md` (sorting, grouping, nothing skipped): the reference the GPU and the
//! fast [`Analysis`] the encoder runs are tested against. The fast analysis skips a
//! scheme's exact length only where that scheme cannot be the shortest.

use std::collections::BTreeSet;

use super::bits::packed_len;
use super::frame::{delta_frame_len, frame_bits, frame_len};
use super::word::Word;
use super::{BLOCK_VALUES, CodecError, IntpackParams, NAME, Result};

/// The number of schemes.
pub const SCHEMES: usize = 5;

/// How a block is written (its first byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Scheme {
    /// Frame of reference: the frame of the values.
    Frame = 0,
    /// The delta frame of the values.
    Delta = 1,
    /// Runs of equal values: the run values as a frame, and the run lengths.
    RunsFrame = 2,
    /// Runs of equal values: the run values as a delta frame, and the run lengths.
    RunsDelta = 3,
    /// The sorted distinct values as a delta frame, and each value's index among them.
    Dictionary = 4,
}

impl Scheme {
    /// Every scheme, in order of their numbers.
    pub const ALL: [Scheme; SCHEMES] = [
        Scheme::Frame,
        Scheme::Delta,
        Scheme::RunsFrame,
        Scheme::RunsDelta,
        Scheme::Dictionary,
    ];

    /// The scheme of a block's first byte, or `None` for a byte above 4.
    pub fn from_u8(byte: u8) -> Option<Scheme> {
        Scheme::ALL.get(usize::from(byte)).copied()
    }
}

/// The scheme a block is written in, given the exact lengths of the five encodings: the
/// shortest, and on a tie the lowest scheme number.
///
/// ```
/// use colzip::codec::intpack::{Scheme, choose_scheme};
/// assert_eq!(choose_scheme(&[30, 20, 20, 25, 20]), Scheme::Delta);
/// assert_eq!(choose_scheme(&[30, 21, 20, 25, 20]), Scheme::RunsFrame);
/// ```
pub fn choose_scheme(lengths: &[usize; SCHEMES]) -> Scheme {
    let mut best = Scheme::Frame;
    for scheme in Scheme::ALL {
        if lengths[scheme as usize] < lengths[best as usize] {
            best = scheme;
        }
    }
    best
}

/// The exact length of each scheme's encoding of one block of `values.len() / width`
/// values (1..=1024 of `width` bytes, little-endian), straight from the definitions;
/// `choose_scheme` of them is the scheme [`super::compress`] writes.
///
/// ```
/// use colzip::codec::intpack::{Scheme, choose_scheme, scheme_lengths};
/// // Sorted keys, each repeated four times: runs with delta values.
/// let keys: Vec<u8> = (0..1024u64).flat_map(|i| (1_000 + i / 4).to_le_bytes()).collect();
/// let lengths = scheme_lengths(&keys, 8)?;
/// assert_eq!(lengths[Scheme::RunsDelta as usize], 1 + 2 + (8 + 1 + 8) + (1 + 2));
/// assert_eq!(choose_scheme(&lengths), Scheme::RunsDelta);
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn scheme_lengths(values: &[u8], width: u8) -> Result<[usize; SCHEMES]> {
    IntpackParams::new(width)?;
    let w = usize::from(width);
    let n = values.len() / w;
    if !values.len().is_multiple_of(w) || !(1..=BLOCK_VALUES).contains(&n) {
        return Err(CodecError::invalid(
            NAME,
            format!("a block of {} bytes is not 1..=1024 values", values.len()),
        ));
    }
    // Values as signed integers: signed order is the integers' order.
    let bits = 8 * u32::from(width);
    let modulus = 1i128 << bits;
    let signed = |x: i128| {
        let x = x.rem_euclid(modulus);
        if x >= modulus / 2 { x - modulus } else { x }
    };
    let v: Vec<i128> = values
        .chunks_exact(w)
        .map(|c| {
            let mut le = [0u8; 8];
            le[..w].copy_from_slice(c);
            signed(i128::from(u64::from_le_bytes(le)))
        })
        .collect();
    let deltas = |x: &[i128]| -> Vec<i128> { x.windows(2).map(|p| signed(p[1] - p[0])).collect() };
    // `b` of a frame: the bits of max - min (0 for no values).
    let b = |x: &[i128]| -> u32 {
        match (x.iter().min(), x.iter().max()) {
            (Some(lo), Some(hi)) => 128 - ((hi - lo) as u128).leading_zeros(),
            _ => 0,
        }
    };
    let mut run_values = Vec::new();
    let mut run_lengths = Vec::new();
    for &x in &v {
        if run_values.last() == Some(&x) {
            *run_lengths.last_mut().unwrap() += 1;
        } else {
            run_values.push(x);
            run_lengths.push(1i128);
        }
    }
    let r = run_values.len();
    let dictionary: Vec<i128> = v
        .iter()
        .copied()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let d = dictionary.len();
    let lengths_frame = frame_len(r, 2, b(&run_lengths));
    Ok([
        1 + frame_len(n, w, b(&v)),
        1 + delta_frame_len(n, w, b(&deltas(&v))),
        1 + 2 + frame_len(r, w, b(&run_values)) + lengths_frame,
        1 + 2 + delta_frame_len(r, w, b(&deltas(&run_values))) + lengths_frame,
        1 + 2 + delta_frame_len(d, w, b(&deltas(&dictionary))) + packed_len(n, index_bits(d)),
    ])
}

/// Bits of a dictionary index among `d` values: `bits(d - 1)`.
pub(crate) fn index_bits(d: usize) -> u32 {
    usize::BITS - d.saturating_sub(1).leading_zeros()
}

/// A length the fast analysis did not compute because that scheme cannot be the
/// shortest.
pub(crate) const NOT_SHORTEST: usize = usize::MAX;

/// Block ranges (max - min of the biased values) below this count their distinct values
/// with a bitmap of the range (at most 8 KiB) rather than by sorting.
const BITMAP_RANGE: u64 = 1 << 16;

/// The encoder's analysis of one block, with the scratch it keeps between blocks. After
/// [`Analysis::run`] the fields describe the block (values biased: sign bit flipped).
pub(crate) struct Analysis<T: Word> {
    /// The block's values, biased.
    pub values: Vec<T>,
    pub min: T,
    pub max: T,
    /// Biased minimum and maximum of the differences `v[j+1] - v[j]` (equal when none).
    pub delta_min: T,
    pub delta_max: T,
    /// Runs: values (biased) and lengths; filled only when there are fewer runs than
    /// values (`runs` is counted always).
    pub runs: usize,
    pub run_values: Vec<T>,
    pub run_lengths: Vec<u16>,
    pub run_length_min: u16,
    pub run_length_max: u16,
    pub run_delta_min: T,
    pub run_delta_max: T,
    /// Distinct values, sorted (biased), and the biased minimum and maximum of their
    /// differences; filled only when the dictionary was measured.
    pub dictionary: Vec<T>,
    pub gap_min: T,
    pub gap_max: T,
    /// The bitmap of `value - min` when the range is small, and each of its words' rank
    /// (distinct values before it); `bitmap_words` of it are in use (zero elsewhere).
    bitmap: Vec<u64>,
    ranks: Vec<u16>,
    bitmap_words: usize,
    /// Each scheme's exact length, or [`NOT_SHORTEST`].
    pub lengths: [usize; SCHEMES],
    pub scheme: Scheme,
}

impl<T: Word> Analysis<T> {
    pub fn new() -> Self {
        Analysis {
            values: Vec::with_capacity(BLOCK_VALUES),
            min: T::default(),
            max: T::default(),
            delta_min: T::default(),
            delta_max: T::default(),
            runs: 0,
            run_values: Vec::with_capacity(BLOCK_VALUES),
            run_lengths: Vec::with_capacity(BLOCK_VALUES),
            run_length_min: 0,
            run_length_max: 0,
            run_delta_min: T::default(),
            run_delta_max: T::default(),
            dictionary: Vec::with_capacity(BLOCK_VALUES),
            gap_min: T::default(),
            gap_max: T::default(),
            bitmap: vec![0; (BITMAP_RANGE / 64) as usize],
            ranks: vec![0; (BITMAP_RANGE / 64) as usize],
            bitmap_words: 0,
            lengths: [NOT_SHORTEST; SCHEMES],
            scheme: Scheme::Frame,
        }
    }

    /// Analyses one block (`1..=1024` whole values) and chooses its scheme.
    pub fn run(&mut self, block: &[u8]) {
        self.bitmap[..self.bitmap_words].fill(0);
        self.bitmap_words = 0;
        self.values.clear();
        self.values
            .extend(block.chunks_exact(T::BYTES).map(|c| T::load(c).flip()));
        let n = self.values.len();
        let w = T::BYTES;

        let (min, max) = min_max(&self.values);
        (self.min, self.max) = (min, max);
        let (delta_min, delta_max, runs) = deltas_and_runs(&self.values);
        (self.delta_min, self.delta_max, self.runs) = (delta_min, delta_max, runs);
        let b0 = frame_bits(min, max);
        let b1 = frame_bits(delta_min, delta_max);
        let mut lengths = [NOT_SHORTEST; SCHEMES];
        lengths[0] = 1 + frame_len(n, w, b0);
        lengths[1] = 1 + delta_frame_len(n, w, b1);
        if runs < n {
            self.collect_runs();
            // The run values' minimum and maximum are the block's.
            let lengths_frame = frame_len(
                runs,
                2,
                frame_bits(self.run_length_min, self.run_length_max),
            );
            let b3 = frame_bits(self.run_delta_min, self.run_delta_max);
            lengths[2] = 1 + 2 + frame_len(runs, w, b0) + lengths_frame;
            lengths[3] = 1 + 2 + delta_frame_len(runs, w, b3) + lengths_frame;
        } else {
            // Every run is one value: the schemes 0 and 1 with 5 bytes more.
            lengths[2] = lengths[0] + 5;
            lengths[3] = lengths[1] + 5;
        }
        let best = lengths[..4].iter().copied().min().unwrap_or(NOT_SHORTEST);
        // The dictionary is at least its count, the first value and an empty frame
        // (d = 1, no index bits): measured only when that could be shorter.
        if 1 + 2 + delta_frame_len(1, w, 0) < best {
            self.measure_dictionary();
            let d = self.dictionary.len();
            lengths[4] = 1
                + 2
                + delta_frame_len(d, w, frame_bits(self.gap_min, self.gap_max))
                + packed_len(n, index_bits(d));
        }
        self.lengths = lengths;
        self.scheme = choose_scheme(&lengths);
    }

    /// Splits the values into runs: their values, lengths, and the ranges of the lengths
    /// and of the run values' differences.
    fn collect_runs(&mut self) {
        self.run_values.clear();
        self.run_lengths.clear();
        let mut start = 0;
        let values = &self.values;
        for j in 1..values.len() {
            if values[j] != values[j - 1] {
                self.run_values.push(values[j - 1]);
                self.run_lengths.push((j - start) as u16);
                start = j;
            }
        }
        self.run_values.push(values[values.len() - 1]);
        self.run_lengths.push((values.len() - start) as u16);
        let (lo, hi) = min_max(&self.run_lengths);
        (self.run_length_min, self.run_length_max) = (lo, hi);
        let (lo, hi, _) = deltas_and_runs(&self.run_values);
        (self.run_delta_min, self.run_delta_max) = (lo, hi);
    }

    /// The sorted distinct values and the range of their differences: from a bitmap of
    /// `value - min` when the range is small, else by sorting.
    fn measure_dictionary(&mut self) {
        self.dictionary.clear();
        let range = self.max.sub(self.min).to_u64();
        if range < BITMAP_RANGE {
            let words = (range / 64) as usize + 1;
            self.bitmap_words = words;
            for &v in &self.values {
                let offset = v.sub(self.min).to_u64() as usize;
                self.bitmap[offset >> 6] |= 1 << (offset & 63);
            }
            for (index, &word) in self.bitmap[..words].iter().enumerate() {
                self.ranks[index] = self.dictionary.len() as u16;
                let mut rest = word;
                while rest != 0 {
                    let offset = (index * 64) as u64 + u64::from(rest.trailing_zeros());
                    self.dictionary.push(self.min.add(T::from_u64(offset)));
                    rest &= rest - 1;
                }
            }
        } else {
            self.dictionary.extend_from_slice(&self.values);
            self.dictionary.sort_unstable();
            self.dictionary.dedup();
        }
        let (lo, hi, _) = deltas_and_runs(&self.dictionary);
        (self.gap_min, self.gap_max) = (lo, hi);
    }

    /// The index of biased value `v` in [`Self::dictionary`] (which must hold it).
    #[inline]
    pub fn index_of(&self, v: T) -> usize {
        if self.bitmap_words > 0 {
            let offset = v.sub(self.min).to_u64() as usize;
            let word = self.bitmap[offset >> 6];
            let below = word & ((1u64 << (offset & 63)) - 1);
            usize::from(self.ranks[offset >> 6]) + below.count_ones() as usize
        } else {
            self.dictionary.binary_search(&v).unwrap_or(0)
        }
    }
}

/// Minimum and maximum of a non-empty slice.
#[inline]
fn min_max<T: Copy + Ord>(values: &[T]) -> (T, T) {
    let mut lo = values[0];
    let mut hi = values[0];
    for &v in values {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    (lo, hi)
}

/// The biased minimum and maximum of the differences of consecutive values (both 0 with
/// fewer than two values), and the number of runs of equal values.
#[inline]
fn deltas_and_runs<T: Word>(values: &[T]) -> (T, T, usize) {
    let Some((&first, rest)) = values.split_first() else {
        return (T::default(), T::default(), 0);
    };
    let Some(&second) = rest.first() else {
        return (T::default(), T::default(), 1);
    };
    let mut lo = second.sub(first).flip();
    let mut hi = lo;
    let mut changes = 0usize;
    for (&a, &b) in values.iter().zip(rest) {
        let d = b.sub(a).flip();
        lo = lo.min(d);
        hi = hi.max(d);
        changes += usize::from(a != b);
    }
    (lo, hi, changes + 1)
}
