//! A block's analysis: the exact length of each scheme, and the choice (the shortest, the
//! lowest scheme on a tie), which is normative for byte identity.
//!
//! [`scheme_lengths`] computes all six lengths straight from the definitions in
//! `docs/FORMAT.md` (sorting, grouping, nothing skipped): the reference the GPU and the
//! fast [`Analysis`] the encoder runs are tested against. The fast analysis skips a
//! scheme's exact length only where that scheme cannot be the shortest.

use std::collections::BTreeSet;

use super::bits::packed_len;
use super::frame::{delta_frame_len, frame_bits, frame_len};
use super::word::Word;
use super::{BLOCK_VALUES, CodecError, IntpackParams, NAME, Result};

/// The number of schemes.
pub const SCHEMES: usize = 6;

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
    /// A frame whose values keep their low `b` bits, with the few that need more bits
    /// (exceptions) listed by position with their high bits.
    FrameExceptions = 5,
}

impl Scheme {
    /// Every scheme, in order of their numbers.
    pub const ALL: [Scheme; SCHEMES] = [
        Scheme::Frame,
        Scheme::Delta,
        Scheme::RunsFrame,
        Scheme::RunsDelta,
        Scheme::Dictionary,
        Scheme::FrameExceptions,
    ];

    /// The scheme of a block's first byte, or `None` for a byte above 5.
    pub fn from_u8(byte: u8) -> Option<Scheme> {
        Scheme::ALL.get(usize::from(byte)).copied()
    }
}

/// The scheme a block is written in, given the exact lengths of the six encodings: the
/// shortest, and on a tie the lowest scheme number.
///
/// ```
/// use colzip::codec::intpack::{Scheme, choose_scheme};
/// assert_eq!(choose_scheme(&[30, 20, 20, 25, 20, 20]), Scheme::Delta);
/// assert_eq!(choose_scheme(&[30, 21, 20, 25, 20, 20]), Scheme::RunsFrame);
/// assert_eq!(choose_scheme(&[30, 21, 21, 25, 21, 20]), Scheme::FrameExceptions);
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
    // Frame with exceptions: every width b below the frame's, the shortest.
    let (lo, b_all) = (v.iter().min().copied().unwrap_or(0), b(&v));
    let exceptions_len = (0..b_all)
        .map(|b| {
            let e = v.iter().filter(|&&x| (x - lo) >> b != 0).count();
            exceptions_frame_len(n, w, b, e, b_all - b)
        })
        .min()
        .unwrap_or(NOT_SHORTEST);
    Ok([
        1 + frame_len(n, w, b(&v)),
        1 + delta_frame_len(n, w, b(&deltas(&v))),
        1 + 2 + frame_len(r, w, b(&run_values)) + lengths_frame,
        1 + 2 + delta_frame_len(r, w, b(&deltas(&run_values))) + lengths_frame,
        1 + 2 + delta_frame_len(d, w, b(&deltas(&dictionary))) + packed_len(n, index_bits(d)),
        exceptions_len,
    ])
}

/// Bits of an exception's position in a block (`n <= 1024`).
pub(crate) const POSITION_BITS: u32 = 10;

/// The length of scheme 5 for `n` values of `w` bytes with low width `b`, `e` exceptions
/// and `h` high bits each: scheme byte, `b`, `ref`, `e`, `h`, then the three fields.
pub(crate) const fn exceptions_frame_len(n: usize, w: usize, b: u32, e: usize, h: u32) -> usize {
    1 + 1 + w + 2 + 1 + packed_len(n, b) + packed_len(e, POSITION_BITS) + packed_len(e, h)
}

/// Scheme 5's best low width for a block whose values, less their minimum, have
/// `histogram[t]` values of `t` significant bits (`t <= b_all`, the frame's `b`): the
/// shortest length over `b` in `0..b_all` and that `b` (the lowest on a tie), or `None`
/// when `b_all` is 0.
pub(crate) fn best_exceptions_width(
    histogram: &[u16; 65],
    n: usize,
    w: usize,
    b_all: u32,
) -> Option<(usize, u32)> {
    // e(b): the values with more than b bits, counted down from the widest.
    let mut best: Option<(usize, u32)> = None;
    let mut above = 0usize;
    for b in (0..b_all).rev() {
        above += usize::from(histogram[b as usize + 1]);
        let length = exceptions_frame_len(n, w, b, above, b_all - b);
        if best.is_none_or(|(shortest, _)| length <= shortest) {
            best = Some((length, b));
        }
    }
    best
}

/// Bits of a dictionary index among `d` values: `bits(d - 1)`.
pub(crate) fn index_bits(d: usize) -> u32 {
    usize::BITS - d.saturating_sub(1).leading_zeros()
}

/// A length the fast analysis did not compute because that scheme cannot be the
/// shortest.
pub(crate) const NOT_SHORTEST: usize = usize::MAX;

/// Block ranges (max - min) below this count their distinct values
/// with a bitmap of the range (at most 32 KiB) rather than by sorting.
const BITMAP_RANGE: u64 = 1 << 18;

/// Where the sorted distinct values of a measured block are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Distinct {
    /// Not measured.
    Unknown,
    /// The block never descends: they are the run values.
    Runs,
    /// The bitmap of `value - min`.
    Bitmap,
    /// The sorted keys `value - min` (duplicates included).
    Keys,
    /// [`Analysis::dictionary`] (sorted and deduplicated while measuring).
    Dictionary,
}

/// The encoder's analysis of one block, with the scratch it keeps between blocks. After
/// [`Analysis::run`] the fields describe the block (values in ordered form: [`Word::flip`]).
///
/// Each scheme's length follows from a few ranges: the values' (scheme 0), their
/// differences' (1), the nonzero differences' (the run values' differences: 3), the run
/// lengths' (2 and 3) and the sorted distinct values' differences (4). The first three
/// come from two passes over the block; the run lengths and the distinct values are
/// measured only when a lower bound of their schemes' length beats the shortest so far.
pub(crate) struct Analysis<T: Word> {
    /// The block's values, in ordered form.
    pub values: Vec<T>,
    pub min: T,
    pub max: T,
    /// Minimum and maximum of the differences `v[j+1] - v[j]` (`HIGHEST` and `LOWEST` when
    /// there are none).
    pub delta_min: T,
    pub delta_max: T,
    /// The same of the nonzero differences: the differences of the run values.
    pub step_min: T,
    pub step_max: T,
    /// Runs of equal values; their values (ordered form), lengths and the lengths' range
    /// once [`Self::measure_runs`] ran.
    pub runs: usize,
    pub run_values: Vec<T>,
    pub run_lengths: Vec<u16>,
    pub run_length_min: u16,
    pub run_length_max: u16,
    runs_measured: bool,
    /// Where each run starts (scratch of `measure_runs`).
    run_starts: Vec<u16>,
    /// Whether no value is below the one before it (signed order).
    ascending: bool,
    /// Distinct values: their count and the range of their differences.
    pub distinct: usize,
    pub gap_min: T,
    pub gap_max: T,
    found: Distinct,
    /// The sorted distinct values (ordered form), once [`Self::build_dictionary`] ran.
    pub dictionary: Vec<T>,
    /// `value - min` of the block, sorted, and the radix sort's other buffer.
    keys: Vec<u32>,
    spare: Vec<u32>,
    /// The bitmap of `value - min` when the range is small, and each of its words' rank
    /// (distinct values before it); `bitmap_words` of it are in use (zero elsewhere).
    bitmap: Vec<u64>,
    ranks: Vec<u16>,
    bitmap_words: usize,
    /// Scheme 5's low width `b` (when its length was measured).
    pub exception_bits: u32,
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
            step_min: T::default(),
            step_max: T::default(),
            runs: 0,
            run_values: Vec::with_capacity(BLOCK_VALUES),
            run_lengths: Vec::with_capacity(BLOCK_VALUES),
            run_length_min: 0,
            run_length_max: 0,
            runs_measured: false,
            run_starts: vec![0; BLOCK_VALUES + 1],
            ascending: true,
            distinct: 0,
            gap_min: T::default(),
            gap_max: T::default(),
            found: Distinct::Unknown,
            dictionary: Vec::with_capacity(BLOCK_VALUES),
            keys: Vec::with_capacity(BLOCK_VALUES),
            spare: Vec::with_capacity(BLOCK_VALUES),
            bitmap: vec![0; (BITMAP_RANGE / 64) as usize],
            ranks: vec![0; (BITMAP_RANGE / 64) as usize],
            bitmap_words: 0,
            exception_bits: 0,
            lengths: [NOT_SHORTEST; SCHEMES],
            scheme: Scheme::Frame,
        }
    }

    /// Analyses one block (`1..=1024` whole values) and chooses its scheme.
    pub fn run(&mut self, block: &[u8]) {
        self.bitmap[..self.bitmap_words].fill(0);
        self.bitmap_words = 0;
        self.found = Distinct::Unknown;
        self.runs_measured = false;
        self.dictionary.clear();
        self.values.clear();
        self.values
            .extend(block.chunks_exact(T::BYTES).map(|c| T::load(c).flip()));
        let n = self.values.len();
        let w = T::BYTES;

        let steps = Steps::of(&self.values);
        (self.min, self.max) = (steps.min, steps.max);
        (self.delta_min, self.delta_max) = (steps.delta_min, steps.delta_max);
        (self.step_min, self.step_max) = (steps.step_min, steps.step_max);
        self.runs = steps.changes + 1;
        self.ascending = steps.descents == 0;
        let runs = self.runs;
        let b0 = frame_bits(self.min, self.max);
        let b1 = if n > 1 {
            frame_bits(self.delta_min, self.delta_max)
        } else {
            0
        };
        let b_steps = if runs > 1 {
            frame_bits(self.step_min, self.step_max)
        } else {
            0
        };
        let mut lengths = [NOT_SHORTEST; SCHEMES];
        lengths[0] = 1 + frame_len(n, w, b0);
        lengths[1] = 1 + delta_frame_len(n, w, b1);
        if runs == n {
            // Every run is one value: schemes 0 and 1 with 5 bytes more.
            lengths[2] = lengths[0] + 5;
            lengths[3] = lengths[1] + 5;
        } else {
            // The run values' range is the block's and their differences are the
            // nonzero ones; only the lengths' b is unknown, and it is at least 1 when
            // r does not divide n (the lengths are not all equal).
            let runs_frame = 1 + 2 + frame_len(runs, w, b0);
            let runs_delta = 1 + 2 + delta_frame_len(runs, w, b_steps);
            let lengths_floor = frame_len(runs, 2, u32::from(!n.is_multiple_of(runs)));
            if runs_frame.min(runs_delta) + lengths_floor < lengths[0].min(lengths[1]) {
                self.measure_runs();
                let lengths_frame = frame_len(
                    runs,
                    2,
                    frame_bits(self.run_length_min, self.run_length_max),
                );
                lengths[2] = runs_frame + lengths_frame;
                lengths[3] = runs_delta + lengths_frame;
            }
        }
        let best = lengths[..4].iter().copied().min().unwrap_or(NOT_SHORTEST);
        if let Some(length) = self.dictionary_length(best) {
            lengths[4] = length;
        }
        // Scheme 5 is at least 8 + W bytes (one exception of one high bit).
        let best = lengths[..5].iter().copied().min().unwrap_or(NOT_SHORTEST);
        if b0 > 0 && best > 8 + w {
            let mut histogram = [0u16; 65];
            let min = self.min;
            for &v in &self.values {
                histogram[v.sub(min).bits() as usize] += 1;
            }
            if let Some((length, b)) = best_exceptions_width(&histogram, n, w, b0) {
                lengths[5] = length;
                self.exception_bits = b;
            }
        }
        self.lengths = lengths;
        self.scheme = choose_scheme(&lengths);
    }

    /// Splits the block into runs: their values, lengths and the lengths' range.
    pub fn measure_runs(&mut self) {
        if self.runs_measured {
            return;
        }
        self.runs_measured = true;
        let values = &self.values;
        let n = values.len();
        // Every position is written as a start; only a change of value keeps it.
        let starts = &mut self.run_starts;
        let mut runs = 1;
        for j in 1..n {
            starts[runs] = j as u16;
            runs += usize::from(values[j] != values[j - 1]);
        }
        starts[0] = 0;
        starts[runs] = n as u16;
        self.run_values.clear();
        self.run_lengths.clear();
        let (mut lo, mut hi) = (u16::MAX, 0u16);
        for pair in starts[..=runs].windows(2) {
            let length = pair[1] - pair[0];
            lo = lo.min(length);
            hi = hi.max(length);
            self.run_lengths.push(length);
            self.run_values.push(values[usize::from(pair[0])]);
        }
        (self.run_length_min, self.run_length_max) = (lo, hi);
    }

    /// The exact length of the dictionary encoding, or `None` when it cannot be shorter
    /// than `best` (then it is not measured to the end). The distinct values are the run
    /// values when the block never descends; else they are counted in a bitmap of
    /// `value - min` when the range is small, else by sorting; their differences are
    /// scanned last, stopping once their `b` makes the dictionary too long.
    fn dictionary_length(&mut self, best: usize) -> Option<usize> {
        let n = self.values.len();
        let w = T::BYTES;
        let length =
            |d: usize, b: u32| 1 + 2 + delta_frame_len(d, w, b) + packed_len(n, index_bits(d));
        // At least min(2, r) values, with no gap bits at best.
        if length(self.runs.min(2), 0) >= best {
            return None;
        }
        if self.ascending {
            self.found = Distinct::Runs;
            let d = self.runs;
            (self.distinct, self.gap_min, self.gap_max) = (d, self.step_min, self.step_max);
            let b = if d > 1 {
                frame_bits(self.step_min, self.step_max)
            } else {
                0
            };
            return Some(length(d, b));
        }
        // Not ascending: at least two distinct values.
        let d = self.count_distinct();
        if length(d, 0) >= best {
            return None;
        }
        // The gaps' frame may take `spare` bytes: `b <= 8 * spare / (d - 1)`.
        let spare = best - 1 - length(d, 0);
        let max_bits = 8 * spare / (d - 1);
        let limit = if max_bits >= 64 {
            u64::MAX
        } else {
            (1u64 << max_bits) - 1
        };
        let (gap_min, gap_max) = self.scan_gaps(limit)?;
        (self.distinct, self.gap_min, self.gap_max) = (d, gap_min, gap_max);
        Some(length(d, frame_bits(gap_min, gap_max)))
    }

    /// Counts the distinct values of a block that is not ascending (so its range is not
    /// 0), leaving them where [`Self::scan_gaps`] and the encoder find them.
    fn count_distinct(&mut self) -> usize {
        let range = self.max.sub(self.min).to_u64();
        let (min, values) = (self.min, &self.values);
        if range < BITMAP_RANGE {
            self.found = Distinct::Bitmap;
            let words = (range / 64) as usize + 1;
            self.bitmap_words = words;
            if words == 1 {
                // In a register: no store waits for the one before.
                let mut word = 0u64;
                for &v in values {
                    word |= 1 << v.sub(min).to_u64();
                }
                self.bitmap[0] = word;
            } else {
                for &v in values {
                    let offset = v.sub(min).to_u64() as usize;
                    self.bitmap[offset >> 6] |= 1 << (offset & 63);
                }
            }
            self.bitmap[..words]
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum()
        } else if range <= u64::from(u32::MAX) {
            self.found = Distinct::Keys;
            self.keys.clear();
            self.keys
                .extend(values.iter().map(|&v| v.sub(min).to_u64() as u32));
            radix_sort(&mut self.keys, &mut self.spare, 64 - range.leading_zeros());
            1 + self.keys.windows(2).filter(|p| p[0] != p[1]).count()
        } else {
            self.found = Distinct::Dictionary;
            self.dictionary.extend_from_slice(values);
            self.dictionary.sort_unstable();
            self.dictionary.dedup();
            self.dictionary.len()
        }
    }

    /// The range of the differences of the sorted distinct values counted by
    /// [`Self::count_distinct`], or `None` once that range exceeds `limit`.
    fn scan_gaps(&self, limit: u64) -> Option<(T, T)> {
        let mut gaps = Gaps::<T>::new(limit);
        match self.found {
            Distinct::Bitmap => {
                for (index, &word) in self.bitmap[..self.bitmap_words].iter().enumerate() {
                    let mut rest = word;
                    while rest != 0 {
                        gaps.add((index * 64) as u64 + u64::from(rest.trailing_zeros()))?;
                        rest &= rest - 1;
                    }
                }
            }
            Distinct::Keys => {
                for &key in &self.keys {
                    gaps.add(u64::from(key))?;
                }
            }
            _ => {
                for &v in &self.dictionary {
                    gaps.add(v.sub(self.min).to_u64())?;
                }
            }
        }
        Some((gaps.min, gaps.max))
    }

    /// Fills [`Self::dictionary`] with the sorted distinct values (the block must have
    /// been measured: its scheme is the dictionary).
    pub fn build_dictionary(&mut self) {
        let min = self.min;
        match self.found {
            Distinct::Runs => {
                // Ascending: the distinct values are the run values, in order.
                self.dictionary.clear();
                self.dictionary.extend_from_slice(&self.values);
                self.dictionary.dedup();
            }
            Distinct::Unknown => {
                self.dictionary.clear();
                self.dictionary.extend_from_slice(&self.values);
                self.dictionary.sort_unstable();
                self.dictionary.dedup();
            }
            Distinct::Bitmap => {
                self.dictionary.clear();
                for (index, &word) in self.bitmap[..self.bitmap_words].iter().enumerate() {
                    self.ranks[index] = self.dictionary.len() as u16;
                    let mut rest = word;
                    while rest != 0 {
                        let offset = (index * 64) as u64 + u64::from(rest.trailing_zeros());
                        self.dictionary.push(min.add(T::from_u64(offset)));
                        rest &= rest - 1;
                    }
                }
            }
            Distinct::Keys => {
                self.dictionary.clear();
                self.keys.dedup();
                self.dictionary.extend(
                    self.keys
                        .iter()
                        .map(|&k| min.add(T::from_u64(u64::from(k)))),
                );
            }
            Distinct::Dictionary => {}
        }
    }

    /// The index of value `v` in [`Self::dictionary`] (built, and holding it).
    #[inline]
    pub fn index_of(&self, v: T) -> usize {
        if self.found == Distinct::Bitmap {
            let offset = v.sub(self.min).to_u64() as usize;
            let word = self.bitmap[offset >> 6];
            let below = word & ((1u64 << (offset & 63)) - 1);
            usize::from(self.ranks[offset >> 6]) + below.count_ones() as usize
        } else {
            self.dictionary.binary_search(&v).unwrap_or(0)
        }
    }
}

/// Ranges of a block's values and differences, from one pass (and a second over the
/// differences when runs ascend or descend).
struct Steps<T> {
    /// The values' range.
    min: T,
    max: T,
    /// Range of all differences, and of the nonzero ones.
    delta_min: T,
    delta_max: T,
    step_min: T,
    step_max: T,
    /// Differences that are not 0 (run boundaries), and values below their predecessor.
    changes: usize,
    descents: usize,
}

impl<T: Word> Steps<T> {
    #[inline]
    fn of(values: &[T]) -> Self {
        // Two slices of one length, so that the loops vectorize.
        let pairs = values.len().saturating_sub(1);
        let (before, after) = (&values[..pairs], &values[values.len() - pairs..]);
        let (mut delta_min, mut delta_max) = (T::HIGHEST, T::LOWEST);
        let (mut min, mut max) = (values[0], values[0]);
        let (mut zeros, mut descents) = (0u32, 0u32);
        let zero = T::default().flip();
        for (&a, &b) in before.iter().zip(after) {
            min = min.min(b);
            max = max.max(b);
            let d = b.sub(a).flip();
            delta_min = delta_min.min(d);
            delta_max = delta_max.max(d);
            zeros += u32::from(d == zero);
            descents += u32::from(b < a);
        }
        let changes = pairs - zeros as usize;
        // The nonzero differences have the same range as all of them unless some are 0
        // and 0 is the smallest or the largest (ascending or descending runs).
        let (step_min, step_max) = if zeros == 0 || (delta_min != zero && delta_max != zero) {
            (delta_min, delta_max)
        } else if changes == 0 {
            (T::HIGHEST, T::LOWEST)
        } else {
            let (mut lo, mut hi) = (T::HIGHEST, T::LOWEST);
            for (&a, &b) in before.iter().zip(after) {
                let d = b.sub(a).flip();
                let same = d == zero;
                lo = lo.min(if same { T::HIGHEST } else { d });
                hi = hi.max(if same { T::LOWEST } else { d });
            }
            (lo, hi)
        };
        Steps {
            min,
            max,
            delta_min,
            delta_max,
            step_min,
            step_max,
            changes,
            descents: descents as usize,
        }
    }
}

/// Follows sorted offsets from the block's minimum (duplicates skipped), keeping the
/// range of the differences between consecutive distinct ones; `add` gives `None`
/// once that range exceeds `limit`.
struct Gaps<T> {
    first: bool,
    last: u64,
    min: T,
    max: T,
    limit: u64,
}

impl<T: Word> Gaps<T> {
    fn new(limit: u64) -> Self {
        Gaps {
            first: true,
            last: 0,
            min: T::HIGHEST,
            max: T::LOWEST,
            limit,
        }
    }

    #[inline]
    fn add(&mut self, offset: u64) -> Option<()> {
        if self.first {
            self.first = false;
        } else {
            if offset == self.last {
                return Some(());
            }
            let gap = T::from_u64(offset - self.last).flip();
            self.min = self.min.min(gap);
            self.max = self.max.max(gap);
            if self.max.sub(self.min).to_u64() > self.limit {
                return None;
            }
        }
        self.last = offset;
        Some(())
    }
}

/// Sorts `keys` (each below `2^bits`) by least significant digit first, 8 bits a pass;
/// `spare` is the other buffer. A pass whose digit is the same for every key is skipped.
fn radix_sort(keys: &mut Vec<u32>, spare: &mut Vec<u32>, bits: u32) {
    let passes = bits.div_ceil(8) as usize;
    let mut counts = [[0u32; 256]; 4];
    for &key in keys.iter() {
        for (pass, count) in counts.iter_mut().enumerate().take(passes) {
            count[((key >> (8 * pass)) & 255) as usize] += 1;
        }
    }
    spare.clear();
    spare.resize(keys.len(), 0);
    let n = keys.len() as u32;
    for (pass, count) in counts.iter_mut().enumerate().take(passes) {
        let shift = 8 * pass;
        if count[((keys[0] >> shift) & 255) as usize] == n {
            continue;
        }
        let mut at = 0u32;
        for slot in count.iter_mut() {
            let c = *slot;
            *slot = at;
            at += c;
        }
        for &key in keys.iter() {
            let digit = ((key >> shift) & 255) as usize;
            spare[count[digit] as usize] = key;
            count[digit] += 1;
        }
        std::mem::swap(keys, spare);
    }
}
