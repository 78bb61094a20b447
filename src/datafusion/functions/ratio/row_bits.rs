//! What each row of an array counts for when `colzip_ratio` cuts a group's values into
//! chunks: a size in bits that depends on the row's value alone, never on how the array
//! is laid out, so that the same values are cut at the same rows whatever batches they
//! arrive in, sliced or not, and whichever Arrow form a session reads them as (a local
//! session reads Parquet strings as `Utf8View`, Ballista as `Utf8`).
//!
//! A row counts one bit (its validity) and its value:
//!
//! - Null: nothing; Boolean: 1 bit; a fixed-width value (integers, floats, decimals,
//!   dates, times, timestamps, durations, intervals, fixed-size binary): its width.
//! - A string or binary value, in any of its forms: 4 bytes (a length) and its bytes;
//!   NULL counts as empty.
//! - A list, large list, list view or map: 4 bytes and its items, each counted by these
//!   rules; NULL counts as empty. A fixed-size list: its items. A struct: its fields.
//! - A dictionary-encoded or run-end encoded row: the value it stands for (a NULL key: one
//!   bit). A union row: 1 byte (its type id) and its child's value.
//!
//! It is close to the column layer's plain bytes (which narrow lengths and decimals and
//! keep a validity part only where there are nulls), without compressing anything.

use arrow::array::{Array, ArrayRef, AsArray, OffsetSizeTrait, RunArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Int16Type, Int32Type, Int64Type, RunEndIndexType};
use datafusion::common::{DataFusionError, Result};

/// Bits of a length, as the rules count it.
const LENGTH_BITS: u64 = 32;

/// Bits of a union's type id.
const TYPE_ID_BITS: u64 = 8;

/// The bits each row of `array` counts for (see the module docs).
pub(super) fn row_bits(array: &dyn Array) -> Result<Vec<u64>> {
    match array.data_type() {
        // These stand for another row (or a child's row), validity included.
        DataType::Dictionary(..) => dictionary_bits(array),
        DataType::RunEndEncoded(ends, _) => match ends.data_type() {
            DataType::Int16 => run_bits(array.as_run::<Int16Type>()),
            DataType::Int32 => run_bits(array.as_run::<Int32Type>()),
            DataType::Int64 => run_bits(array.as_run::<Int64Type>()),
            other => unsupported(other),
        },
        DataType::Union(..) => union_bits(array),
        _ => {
            let mut bits = payload_bits(array)?;
            let counts_as_empty_when_null = matches!(
                array.data_type(),
                DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Binary
                    | DataType::LargeBinary
                    | DataType::BinaryView
                    | DataType::List(_)
                    | DataType::LargeList(_)
                    | DataType::ListView(_)
                    | DataType::LargeListView(_)
                    | DataType::Map(..)
            );
            if counts_as_empty_when_null && let Some(nulls) = array.nulls() {
                for (i, b) in bits.iter_mut().enumerate() {
                    if nulls.is_null(i) {
                        *b = LENGTH_BITS;
                    }
                }
            }
            for b in &mut bits {
                *b += 1;
            }
            Ok(bits)
        }
    }
}

fn unsupported<T>(data_type: &DataType) -> Result<T> {
    Err(DataFusionError::Execution(format!(
        "values of type {data_type} cannot be cut into chunks"
    )))
}

/// Each row's value without its validity bit.
fn payload_bits(array: &dyn Array) -> Result<Vec<u64>> {
    let rows = array.len();
    Ok(match array.data_type() {
        DataType::Null => vec![0; rows],
        DataType::Boolean => vec![1; rows],
        DataType::FixedSizeBinary(width) => vec![8 * *width as u64; rows],
        DataType::Utf8 => byte_lengths(array.as_string::<i32>().offsets()),
        DataType::LargeUtf8 => byte_lengths(array.as_string::<i64>().offsets()),
        DataType::Binary => byte_lengths(array.as_binary::<i32>().offsets()),
        DataType::LargeBinary => byte_lengths(array.as_binary::<i64>().offsets()),
        DataType::Utf8View => view_lengths(array.as_string_view().views()),
        DataType::BinaryView => view_lengths(array.as_binary_view().views()),
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            list_items(list.offsets(), list.values())?
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            list_items(list.offsets(), list.values())?
        }
        DataType::Map(..) => {
            let map = array.as_map();
            let entries: ArrayRef = std::sync::Arc::new(map.entries().clone());
            list_items(map.offsets(), &entries)?
        }
        DataType::ListView(_) => {
            let list = array.as_list_view::<i32>();
            view_items(list.offsets(), list.sizes(), list.values())?
        }
        DataType::LargeListView(_) => {
            let list = array.as_list_view::<i64>();
            view_items(list.offsets(), list.sizes(), list.values())?
        }
        DataType::FixedSizeList(..) => {
            let list = array.as_fixed_size_list();
            let sums = prefix_sums(&row_bits(list.values().as_ref())?);
            let size = list.value_length() as usize;
            (0..rows)
                .map(|i| {
                    let start = list.value_offset(i) as usize;
                    range_sum(&sums, start, start + size)
                })
                .collect::<Result<_>>()?
        }
        DataType::Struct(_) => {
            let mut bits = vec![0; rows];
            for column in array.as_struct().columns() {
                for (sum, b) in bits.iter_mut().zip(row_bits(column.as_ref())?) {
                    *sum += b;
                }
            }
            bits
        }
        other => match other.primitive_width() {
            Some(width) => vec![8 * width as u64; rows],
            None => return unsupported(other),
        },
    })
}

/// 4 bytes and the bytes of each value of an offsets-and-bytes array.
fn byte_lengths<O: OffsetSizeTrait>(offsets: &OffsetBuffer<O>) -> Vec<u64> {
    offsets
        .windows(2)
        .map(|w| LENGTH_BITS + 8 * (w[1].as_usize() - w[0].as_usize()) as u64)
        .collect()
}

/// 4 bytes and the bytes of each value of a view array (a view's low 32 bits are its
/// length).
fn view_lengths(views: &[u128]) -> Vec<u64> {
    views
        .iter()
        .map(|&view| LENGTH_BITS + 8 * u64::from(view as u32))
        .collect()
}

/// Running sums of `bits`, one more than there are rows: `sums[j] - sums[i]` is the total
/// of rows `i..j`.
fn prefix_sums(bits: &[u64]) -> Vec<u64> {
    let mut sums = Vec::with_capacity(bits.len() + 1);
    let mut total = 0;
    sums.push(0);
    for &b in bits {
        total += b;
        sums.push(total);
    }
    sums
}

/// The total of rows `start..end` from [`prefix_sums`]; an error for a range outside them
/// (an array whose offsets point past its values).
fn range_sum(sums: &[u64], start: usize, end: usize) -> Result<u64> {
    match (sums.get(start), sums.get(end)) {
        (Some(a), Some(b)) if start <= end => Ok(b - a),
        _ => Err(DataFusionError::Execution(format!(
            "a nested value refers to items {start}..{end} of {}",
            sums.len() - 1
        ))),
    }
}

/// 4 bytes and the items of each list, the items counted only over the range the offsets
/// reach (a slice of a large list does not count the rest).
fn list_items<O: OffsetSizeTrait>(
    offsets: &OffsetBuffer<O>,
    values: &ArrayRef,
) -> Result<Vec<u64>> {
    let first = offsets.first().map_or(0, |o| o.as_usize());
    let last = offsets.last().map_or(0, |o| o.as_usize());
    if first > last || last > values.len() {
        return Err(DataFusionError::Execution(format!(
            "a list refers to items {first}..{last} of {}",
            values.len()
        )));
    }
    let sums = prefix_sums(&row_bits(values.slice(first, last - first).as_ref())?);
    offsets
        .windows(2)
        .map(|w| {
            range_sum(&sums, w[0].as_usize() - first, w[1].as_usize() - first)
                .map(|items| LENGTH_BITS + items)
        })
        .collect()
}

/// 4 bytes and the items of each list view.
fn view_items<O: OffsetSizeTrait>(
    offsets: &[O],
    sizes: &[O],
    values: &ArrayRef,
) -> Result<Vec<u64>> {
    let sums = prefix_sums(&row_bits(values.as_ref())?);
    offsets
        .iter()
        .zip(sizes)
        .map(|(&offset, &size)| {
            let start = offset.as_usize();
            range_sum(&sums, start, start + size.as_usize()).map(|items| LENGTH_BITS + items)
        })
        .collect()
}

/// The bits of the value each key stands for; a NULL key counts one bit.
fn dictionary_bits(array: &dyn Array) -> Result<Vec<u64>> {
    let dictionary = array.as_any_dictionary();
    let values = row_bits(dictionary.values().as_ref())?;
    if values.is_empty() {
        // Only NULL keys can point into an empty dictionary.
        return Ok(vec![1; array.len()]);
    }
    let keys = dictionary.normalized_keys();
    let nulls = dictionary.keys().logical_nulls();
    Ok(keys
        .iter()
        .enumerate()
        .map(|(i, &key)| match &nulls {
            Some(nulls) if nulls.is_null(i) => 1,
            _ => values[key],
        })
        .collect())
}

/// The bits of the value each row's run holds.
fn run_bits<R: RunEndIndexType>(array: &RunArray<R>) -> Result<Vec<u64>> {
    let values = row_bits(array.values().as_ref())?;
    (0..array.len())
        .map(|i| {
            let run = array.get_physical_index(i);
            values.get(run).copied().ok_or_else(|| {
                DataFusionError::Execution(format!(
                    "row {i} of a run-end encoded array falls in run {run} of {}",
                    values.len()
                ))
            })
        })
        .collect()
}

/// A type id byte and the bits of the child's row each row refers to.
fn union_bits(array: &dyn Array) -> Result<Vec<u64>> {
    let union = array.as_union();
    let mut children: Vec<Option<Vec<u64>>> = vec![None; 128];
    let mut bits = Vec::with_capacity(union.len());
    for i in 0..union.len() {
        let id = union.type_id(i);
        let slot = children
            .get_mut(id as u8 as usize)
            .ok_or_else(|| DataFusionError::Execution(format!("union type id {id}")))?;
        if slot.is_none() {
            *slot = Some(row_bits(union.child(id).as_ref())?);
        }
        let child = slot.as_deref().unwrap_or_default();
        let row = union.value_offset(i);
        let value = child.get(row).copied().ok_or_else(|| {
            DataFusionError::Execution(format!(
                "union row {i} refers to row {row} of a child of {}",
                child.len()
            ))
        })?;
        bits.push(TYPE_ID_BITS + value);
    }
    Ok(bits)
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow::array::{
        BooleanArray, Decimal128Array, DictionaryArray, FixedSizeBinaryArray, Int32Array,
        Int64Array, ListArray, NullArray, StringArray, StructArray, UnionArray,
    };
    use arrow::buffer::ScalarBuffer;
    use arrow::datatypes::{Field, UnionFields};

    use super::super::test_arrays::{every_type, text};
    use super::*;

    fn bits(array: impl Array) -> Vec<u64> {
        row_bits(&array).unwrap()
    }

    #[test]
    fn a_row_counts_its_validity_bit_and_its_value() {
        assert_eq!(bits(Int64Array::from(vec![Some(1), None])), [65, 65]);
        assert_eq!(
            bits(
                Decimal128Array::from(vec![7])
                    .with_precision_and_scale(9, 2)
                    .unwrap()
            ),
            [129]
        );
        assert_eq!(bits(BooleanArray::from(vec![true, false])), [2, 2]);
        assert_eq!(bits(NullArray::new(2)), [1, 1]);
        let fixed = FixedSizeBinaryArray::try_from_iter([[1u8, 2, 3]].into_iter()).unwrap();
        assert_eq!(bits(fixed), [25]);
        // A length, then the bytes; NULL counts as empty.
        assert_eq!(
            bits(StringArray::from(vec![Some("abc"), None, Some("")])),
            [1 + 32 + 24, 33, 33]
        );
        // A length, then the items, each with its validity bit.
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>([
            Some(vec![Some(1), None]),
            None,
            Some(vec![]),
        ]);
        assert_eq!(bits(lists), [1 + 32 + 2 * 33, 33, 33]);
        let fields = StructArray::from(vec![
            (
                Arc::new(Field::new("n", DataType::Int32, true)),
                Arc::new(Int32Array::from(vec![1])) as ArrayRef,
            ),
            (
                Arc::new(Field::new("s", DataType::Utf8, true)),
                Arc::new(StringArray::from(vec!["x"])) as ArrayRef,
            ),
        ]);
        assert_eq!(bits(fields), [1 + 33 + 41]);
        // What a key or a run stands for.
        let keys: DictionaryArray<Int32Type> =
            vec![Some("ab"), None, Some("ab")].into_iter().collect();
        assert_eq!(bits(keys), [49, 1, 49]);
        let runs = RunArray::<Int32Type>::try_new(
            &Int32Array::from(vec![2, 3]),
            &StringArray::from(vec![Some("ab"), None]),
        )
        .unwrap();
        assert_eq!(bits(runs), [49, 49, 33]);
        // A type id byte and the child's row.
        let union = UnionArray::try_new(
            UnionFields::try_new(
                [0, 1],
                [
                    Field::new("n", DataType::Int32, true),
                    Field::new("s", DataType::Utf8, true),
                ],
            )
            .unwrap(),
            ScalarBuffer::from(vec![0i8, 1]),
            None,
            vec![
                Arc::new(Int32Array::from(vec![5, 6])),
                Arc::new(StringArray::from(vec!["a", "bcd"])),
            ],
        )
        .unwrap();
        assert_eq!(bits(union), [8 + 33, 8 + 1 + 32 + 24]);
    }

    #[test]
    fn the_same_values_count_the_same_in_every_form() {
        let rows = 500;
        let arrays: HashMap<&str, ArrayRef> = every_type(rows).into_iter().collect();
        let of = |name: &str| row_bits(arrays[name].as_ref()).unwrap();
        for same in [
            &[
                "utf8",
                "large_utf8",
                "utf8_view",
                "binary",
                "large_binary",
                "binary_view",
            ][..],
            &["list", "large_list", "list_view"],
        ] {
            for name in same {
                assert_eq!(of(name), of(same[0]), "{name} against {}", same[0]);
            }
        }
        // A key counts as its value, a NULL key one bit.
        let keys = arrays["dictionary"]
            .as_any_dictionary()
            .keys()
            .logical_nulls()
            .unwrap();
        let strings = of("utf8");
        let expected: Vec<u64> = (0..rows)
            .map(|i| if keys.is_null(i) { 1 } else { strings[i] })
            .collect();
        assert_eq!(of("dictionary"), expected);
        // A run-end encoded row counts as the value of its run.
        let decoded = StringArray::from_iter((0..rows).map(|i| text(i / 5)));
        assert_eq!(of("run_end_encoded"), bits(decoded));
    }

    #[test]
    fn a_slice_counts_its_own_rows() {
        for (name, array) in every_type(500) {
            let whole = row_bits(array.as_ref()).unwrap();
            let slice = row_bits(array.slice(37, 200).as_ref()).unwrap();
            assert_eq!(slice, whole[37..237], "{name}");
            assert!(whole.iter().all(|&b| b >= 1), "{name}");
        }
    }
}
