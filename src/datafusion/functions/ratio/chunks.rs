//! The accumulator of `colzip_ratio` and `colzip_compressed_size`: a group's values cut
//! into chunks of about [`CHUNK_BITS`], each compressed as one column by the column layer
//! as soon as it is full, so that what it keeps is at most one chunk of rows and three
//! sums (rows, plain bytes, compressed bytes), and its partial state is those sums.
//!
//! A chunk ends at the first row that brings its count of [`row_bits`] to
//! [`CHUNK_BITS`] or more; the rows left when the accumulator hands over its state or is
//! evaluated make one last, shorter chunk. Since the count depends on the values alone,
//! the chunks do not depend on how the rows were cut into batches; merging adds the sums,
//! so they do not depend on the order partial states are merged in either. What they do
//! depend on is which rows each partial aggregation saw, in which order: each one starts
//! its chunks at its own first row and ends them at its own last.
//!
//! 4 MiB: every codec's own unit is no larger (lzss' 2–16 KiB chunks, gmatch's 64 KiB
//! blocks, intpack's 1024 values, bwt's default 4 MiB block), so a chunk compresses about
//! as the whole column would, its parts are large enough for `auto` placement to send
//! them to the GPU (1 MiB or more), and a partial aggregation holds at most 4 MiB (and one
//! row) per group.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, MutableArrayData, UInt64Array, make_array};
use arrow::compute::concat;
use arrow::datatypes::{DataType, UInt64Type};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::Accumulator;

use super::Measure;
use super::row_bits::row_bits;
use crate::codec::Placement;
use crate::column::{self, CodecChoice};

/// A chunk's size: 4 MiB by [`row_bits`]' count.
pub(super) const CHUNK_BITS: u64 = 8 * (4 << 20);

/// A kept piece is copied out of the arrays it shares when they hold more than this many
/// times its own size (and [`SHARED_SLACK`] more).
const SHARED_FACTOR: u64 = 4;
const SHARED_SLACK: u64 = 64 << 10;

/// The sums a group's chunks add up to: its partial state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Sums {
    pub rows: u64,
    pub plain: u64,
    pub compressed: u64,
}

/// One group's chunks: the sums of those compressed and the rows of the one being filled.
#[derive(Debug)]
pub(super) struct ChunkAccumulator {
    measure: Measure,
    codec: CodecChoice,
    placement: Placement,
    chunk_bits: u64,
    /// The rows of the chunk being filled, in order, and their count.
    pending: Vec<ArrayRef>,
    pending_bits: u64,
    sums: Sums,
}

impl ChunkAccumulator {
    pub(super) fn new(
        measure: Measure,
        codec: CodecChoice,
        placement: Placement,
        chunk_bits: u64,
    ) -> Self {
        ChunkAccumulator {
            measure,
            codec,
            placement,
            chunk_bits: chunk_bits.max(1),
            pending: Vec::new(),
            pending_bits: 0,
            sums: Sums::default(),
        }
    }

    /// Compresses the pending rows as one chunk (nothing when there are none).
    fn flush(&mut self) -> Result<()> {
        let chunk = match self.pending.as_slice() {
            [] => return Ok(()),
            [one] => Arc::clone(one),
            many => concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
        };
        let compressed = column::compress_on(chunk.as_ref(), &self.codec, self.placement)
            .map_err(DataFusionError::from)?;
        self.sums.rows += chunk.len() as u64;
        self.sums.plain += compressed.plain_bytes() as u64;
        self.sums.compressed += compressed.compressed_bytes() as u64;
        self.pending.clear();
        self.pending_bits = 0;
        Ok(())
    }

    /// The sums with the pending rows compressed as a last chunk.
    pub(super) fn finish(&mut self) -> Result<Sums> {
        self.flush()?;
        Ok(self.sums)
    }
}

/// `piece` on its own when it shares much larger arrays (a group's rows are slices of
/// the whole batch's), so that pending rows keep only themselves alive.
fn compact(piece: ArrayRef, bits: u64) -> Result<ArrayRef> {
    let held = piece.get_array_memory_size() as u64;
    if held <= SHARED_FACTOR * bits.div_ceil(8) + SHARED_SLACK {
        return Ok(piece);
    }
    Ok(match piece.data_type() {
        // Views would keep every data buffer they were cut from.
        DataType::Utf8View => Arc::new(piece.as_string_view().gc()),
        DataType::BinaryView => Arc::new(piece.as_binary_view().gc()),
        _ => {
            let data = piece.to_data();
            let mut copy = MutableArrayData::new(vec![&data], false, piece.len());
            copy.try_extend(0, 0, piece.len())?;
            make_array(copy.freeze())
        }
    })
}

/// The values of state column `i` (`name`), which must be UInt64.
fn state_column<'a>(states: &'a [ArrayRef], i: usize, name: &str) -> Result<&'a UInt64Array> {
    states
        .get(i)
        .and_then(|a| a.as_primitive_opt::<UInt64Type>())
        .ok_or_else(|| {
            DataFusionError::Execution(format!(
                "a partial state without its UInt64 column '{name}'"
            ))
        })
}

impl Accumulator for ChunkAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let array = &values[0];
        let bits = row_bits(array.as_ref())?;
        let mut start = 0;
        for (i, &b) in bits.iter().enumerate() {
            self.pending_bits += b;
            if self.pending_bits >= self.chunk_bits {
                self.pending.push(array.slice(start, i + 1 - start));
                self.flush()?;
                start = i + 1;
            }
        }
        if start < array.len() {
            let rest = array.slice(start, array.len() - start);
            self.pending
                .push(compact(rest, bits[start..].iter().sum())?);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let rows = state_column(states, 0, "rows")?;
        let plain = state_column(states, 1, "plain_bytes")?;
        let compressed = state_column(states, 2, "compressed_bytes")?;
        let sum = |a: &UInt64Array| a.iter().flatten().fold(0u64, u64::saturating_add);
        self.sums.rows = self.sums.rows.saturating_add(sum(rows));
        self.sums.plain = self.sums.plain.saturating_add(sum(plain));
        self.sums.compressed = self.sums.compressed.saturating_add(sum(compressed));
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let sums = self.finish()?;
        Ok(vec![
            ScalarValue::UInt64(Some(sums.rows)),
            ScalarValue::UInt64(Some(sums.plain)),
            ScalarValue::UInt64(Some(sums.compressed)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let sums = self.finish()?;
        Ok(self.measure.result(sums.rows, sums.plain, sums.compressed))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .pending
                .iter()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{Int32Array, Int64Array, NullArray, StringArray, StringViewArray};

    use super::super::test_arrays::{every_type, text};
    use super::*;

    fn accumulator(measure: Measure, chunk_bits: u64) -> ChunkAccumulator {
        let codec = "gmatch".parse().unwrap();
        ChunkAccumulator::new(measure, codec, Placement::CPU, chunk_bits)
    }

    /// Feeds `array` to `acc` in consecutive batches whose sizes cycle through `cuts`.
    fn feed(acc: &mut ChunkAccumulator, array: &ArrayRef, cuts: &[usize]) {
        let (mut start, mut k) = (0, 0);
        while start < array.len() {
            let len = cuts[k % cuts.len()].min(array.len() - start);
            acc.update_batch(&[array.slice(start, len)]).unwrap();
            start += len;
            k += 1;
        }
    }

    /// The sums of compressing each of `chunks` on its own.
    fn sums_of(chunks: impl IntoIterator<Item = ArrayRef>) -> Sums {
        let codec: CodecChoice = "gmatch".parse().unwrap();
        let mut sums = Sums::default();
        for chunk in chunks {
            let compressed = column::compress(chunk.as_ref(), &codec).unwrap();
            sums.rows += chunk.len() as u64;
            sums.plain += compressed.plain_bytes() as u64;
            sums.compressed += compressed.compressed_bytes() as u64;
        }
        sums
    }

    fn state_arrays(acc: &mut ChunkAccumulator) -> Vec<ArrayRef> {
        let state = acc.state().unwrap();
        state.iter().map(|s| s.to_array().unwrap()).collect()
    }

    /// 1050 integers without nulls: 65 bits a row, so chunks of 100 rows at 6500 bits.
    fn integers() -> ArrayRef {
        Arc::new(Int64Array::from_iter_values((0..1050).map(|i| i / 3 * 7)))
    }

    /// The integers of rows `0..ends[0]`, `ends[0]..ends[1]`, …, as new arrays.
    fn integer_chunks(ends: &[usize]) -> Vec<ArrayRef> {
        let mut starts = vec![0];
        starts.extend_from_slice(ends);
        starts
            .windows(2)
            .map(|w| {
                Arc::new(Int64Array::from_iter_values(
                    (w[0]..w[1]).map(|i| i as i64 / 3 * 7),
                )) as ArrayRef
            })
            .collect()
    }

    #[test]
    fn a_chunk_ends_at_the_row_that_reaches_its_size() {
        let values = integers();
        let ends = [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1050];
        let expected = sums_of(integer_chunks(&ends));
        for cuts in [&[1050][..], &[1], &[7, 93, 250]] {
            let mut acc = accumulator(Measure::Ratio, 65 * 100);
            feed(&mut acc, &values, cuts);
            assert_eq!(acc.finish().unwrap(), expected, "{cuts:?}");
        }

        // Strings count 1 + 32 + 8 bits per byte a row, computed here from the text.
        let rows = 3000;
        let target = 8 * 2000;
        let strings: ArrayRef = Arc::new(StringArray::from_iter((0..rows).map(text)));
        let chunk = |rows: std::ops::Range<usize>| -> ArrayRef {
            Arc::new(StringArray::from_iter(rows.map(text)))
        };
        let (mut chunks, mut start, mut count) = (Vec::new(), 0, 0);
        for i in 0..rows {
            count += 33 + 8 * text(i).map_or(0, |t| t.len() as u64);
            if count >= target {
                chunks.push(chunk(start..i + 1));
                (start, count) = (i + 1, 0);
            }
        }
        chunks.push(chunk(start..rows));
        assert!(chunks.len() > 5);
        let expected = sums_of(chunks);
        // The same values as views (as a local session reads Parquet strings) too.
        let views: ArrayRef = Arc::new(StringViewArray::from_iter((0..rows).map(text)));
        for (values, cuts) in [
            (&strings, &[rows][..]),
            (&strings, &[3, 500]),
            (&views, &[rows]),
            (&views, &[1, 64]),
        ] {
            let mut acc = accumulator(Measure::Ratio, target);
            feed(&mut acc, values, cuts);
            assert_eq!(acc.finish().unwrap(), expected, "{cuts:?}");
        }
    }

    #[test]
    fn batch_cuts_change_nothing_for_every_type() {
        for (name, array) in every_type(3000) {
            let total: u64 = row_bits(array.as_ref()).unwrap().iter().sum();
            let chunk_bits = total / 6 + 1;
            let mut whole = accumulator(Measure::CompressedSize, chunk_bits);
            feed(&mut whole, &array, &[array.len()]);
            let expected = whole.finish().unwrap();
            assert_eq!(expected.rows, 3000, "{name}");
            for cuts in [&[1][..], &[7, 1, 300], &[1000]] {
                let mut acc = accumulator(Measure::CompressedSize, chunk_bits);
                feed(&mut acc, &array, cuts);
                let got = acc.finish().unwrap();
                if name == "run_end_encoded" {
                    // Runs are measured as the batches hold them: a cut splits a run.
                    assert_eq!(got.rows, expected.rows);
                } else {
                    assert_eq!(got, expected, "{name} {cuts:?}");
                }
            }
        }
    }

    #[test]
    fn merged_states_add_up_and_equal_one_pass_when_split_at_a_chunk_end() {
        let values = integers();
        for measure in [Measure::Ratio, Measure::CompressedSize] {
            let mut one = accumulator(measure, 6500);
            feed(&mut one, &values, &[1050]);
            let one_pass = one.evaluate().unwrap();
            assert!(!one_pass.is_null());

            for (split, ends) in [
                // At a chunk's end: the same chunks.
                (
                    300,
                    &[100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1050][..],
                ),
                // Elsewhere: the first part's last chunk ends at the split.
                (
                    250,
                    &[100, 200, 250, 350, 450, 550, 650, 750, 850, 950, 1050],
                ),
            ] {
                let expected = sums_of(integer_chunks(ends));
                let mut states = Vec::new();
                for (start, len) in [(0, split), (split, 1050 - split)] {
                    let mut part = accumulator(measure, 6500);
                    feed(&mut part, &values.slice(start, len), &[64]);
                    states.push(state_arrays(&mut part));
                }
                for order in [[0, 1], [1, 0]] {
                    let mut merged = accumulator(measure, 6500);
                    for i in order {
                        merged.merge_batch(&states[i]).unwrap();
                    }
                    assert_eq!(merged.finish().unwrap(), expected, "{split}");
                    let result = merged.evaluate().unwrap();
                    assert_eq!(
                        result,
                        measure.result(expected.rows, expected.plain, expected.compressed)
                    );
                    if split == 300 {
                        assert_eq!(result, one_pass);
                    }
                }
            }
        }
    }

    #[test]
    fn empty_groups_give_null() {
        for measure in [Measure::Ratio, Measure::CompressedSize] {
            let mut acc = accumulator(measure, CHUNK_BITS);
            assert!(acc.evaluate().unwrap().is_null());
            acc.update_batch(&[Arc::new(Int32Array::from(Vec::<i32>::new()))])
                .unwrap();
            assert!(acc.evaluate().unwrap().is_null());
            let state = state_arrays(&mut acc);
            let mut merged = accumulator(measure, CHUNK_BITS);
            merged.merge_batch(&state).unwrap();
            merged.merge_batch(&state).unwrap();
            assert!(merged.evaluate().unwrap().is_null());
        }
    }

    #[test]
    fn nulls_are_compressed_like_any_value() {
        // An all-NULL group is its validity part.
        let nulls: ArrayRef = Arc::new(Int32Array::from(vec![None; 500]));
        let expected = sums_of([Arc::clone(&nulls)]);
        assert!(expected.plain > 0 && expected.compressed > 0);
        let mut ratio = accumulator(Measure::Ratio, CHUNK_BITS);
        ratio.update_batch(&[Arc::clone(&nulls)]).unwrap();
        assert_eq!(
            ratio.evaluate().unwrap(),
            ScalarValue::Float64(Some(expected.plain as f64 / expected.compressed as f64))
        );
        // The Null type has no bytes at all: no ratio, a size of 0.
        let none: ArrayRef = Arc::new(NullArray::new(500));
        let mut ratio = accumulator(Measure::Ratio, CHUNK_BITS);
        ratio.update_batch(&[Arc::clone(&none)]).unwrap();
        assert_eq!(ratio.evaluate().unwrap(), ScalarValue::Float64(None));
        let mut size = accumulator(Measure::CompressedSize, CHUNK_BITS);
        size.update_batch(&[none]).unwrap();
        assert_eq!(size.evaluate().unwrap(), ScalarValue::UInt64(Some(0)));
    }

    #[test]
    fn pending_rows_keep_only_themselves_alive() {
        // 100 batches of 100,000 rows each (about 80 MB as integers), of which the group
        // gets 10 rows each: what it holds is its 1000 rows, not the batches.
        let mut ints = accumulator(Measure::Ratio, CHUNK_BITS);
        let mut views = accumulator(Measure::Ratio, CHUNK_BITS);
        for b in 0..100 {
            let batch: ArrayRef = Arc::new(Int64Array::from_iter_values(b..b + 100_000));
            ints.update_batch(&[batch.slice(5000, 10)]).unwrap();
            let batch: ArrayRef = Arc::new(StringViewArray::from_iter_values(
                (0..100_000).map(|i| format!("a string of more than twelve bytes {i}")),
            ));
            views.update_batch(&[batch.slice(5000, 10)]).unwrap();
        }
        assert!(ints.size() < 1 << 20, "{}", ints.size());
        assert!(views.size() < 1 << 20, "{}", views.size());
        assert_eq!(ints.finish().unwrap().rows, 1000);
        assert_eq!(views.finish().unwrap().rows, 1000);
    }

    #[test]
    fn a_state_without_its_sums_is_an_error() {
        let mut acc = accumulator(Measure::Ratio, CHUNK_BITS);
        let wrong: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        let err = acc.merge_batch(&[Arc::clone(&wrong)]).unwrap_err();
        assert!(err.to_string().contains("'rows'"), "{err}");
        let rows: ArrayRef = Arc::new(UInt64Array::from(vec![1]));
        let err = acc.merge_batch(&[rows, wrong]).unwrap_err();
        assert!(err.to_string().contains("'plain_bytes'"), "{err}");
    }
}
