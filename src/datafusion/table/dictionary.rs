//! Low-cardinality strings held as dictionaries: a block's string column with few distinct
//! values (ship modes, priorities, flags, brands, containers…) may be stored as an Arrow
//! dictionary (`Int16` codes, which `auto` gives to intpack, and the distinct strings),
//! and is cast back to the table's string type when scanned.
//!
//! The dictionary form decodes one to two orders of magnitude faster than the strings
//! through bwt or gmatch (TPC-H's `l_shipmode` and `p_type`, say) and is usually smaller
//! too. `auto` keeps it
//! unless it costs more than one bit per row over the plain form (`l_returnflag`: 16.8 KB
//! against 11.1 KB for 64K rows), so a scan never pays the slow decode to save less.

use std::collections::HashSet;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::compute::{cast, take};
use arrow::datatypes::DataType;

use crate::Result;

/// The most distinct values a block's column may have to be tried as a dictionary.
const MOST_DISTINCT: usize = 4096;

/// The type a dictionary-encoded string column is stored as.
fn dictionary_type() -> DataType {
    DataType::Dictionary(Box::new(DataType::Int16), Box::new(DataType::Utf8))
}

/// `array` as a dictionary when it is a string column with at most [`MOST_DISTINCT`]
/// distinct values, and at most one per four rows (a dictionary of mostly distinct values
/// holds the strings and codes besides).
pub(crate) fn candidate(array: &ArrayRef) -> Option<ArrayRef> {
    let limit = MOST_DISTINCT.min(array.len() / 4);
    let few = match array.data_type() {
        DataType::Utf8 => at_most_distinct(array.as_string::<i32>().iter(), limit),
        DataType::LargeUtf8 => at_most_distinct(array.as_string::<i64>().iter(), limit),
        DataType::Utf8View => at_most_distinct(array.as_string_view().iter(), limit),
        _ => false,
    };
    if !few {
        return None;
    }
    cast(array, &dictionary_type()).ok()
}

/// Whether `values` hold at most `limit` distinct non-null values (stops counting past it).
fn at_most_distinct<'a>(values: impl Iterator<Item = Option<&'a str>>, limit: usize) -> bool {
    let mut seen = HashSet::new();
    for value in values.flatten() {
        if seen.insert(value) && seen.len() > limit {
            return false;
        }
    }
    true
}

/// Whether a block's column of `rows` rows is kept as a dictionary, compressed to
/// `dictionary_bytes`, rather than as plain strings compressed to `plain_bytes`: unless the
/// dictionary costs more than one bit per row over the strings.
pub(crate) fn keep(dictionary_bytes: usize, plain_bytes: usize, rows: usize) -> bool {
    dictionary_bytes <= plain_bytes + rows.div_ceil(8)
}

/// A block's column decoded as stored, in its table type `ty` (a dictionary is cast back to
/// strings; arrays of that type already are returned as they are).
pub(crate) fn in_table_type(array: ArrayRef, ty: &DataType) -> Result<ArrayRef> {
    if array.data_type() == ty {
        return Ok(array);
    }
    if let (Some(keyed), DataType::Utf8View) = (array.as_any_dictionary_opt(), ty) {
        // Each distinct string's view is made once and each row takes a copy of its key's
        // (16 bytes, pointing into the same data): a cast would make a view per row.
        let views = cast(keyed.values(), ty)?;
        return Ok(take(views.as_ref(), keyed.keys(), None)?);
    }
    Ok(cast(&array, ty)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{StringArray, StringViewArray};
    use std::sync::Arc;

    #[test]
    fn few_distinct_strings_become_a_dictionary_and_come_back_equal() {
        let modes = ["AIR", "MAIL", "SHIP", "", "é", "longer than twelve bytes"];
        let values: Vec<Option<&str>> = (0..1_000)
            .map(|i| (i % 7 != 0).then_some(modes[i % modes.len()]))
            .collect();
        for array in [
            Arc::new(StringArray::from(values.clone())) as ArrayRef,
            Arc::new(StringViewArray::from(values.clone())) as ArrayRef,
        ] {
            let dictionary = candidate(&array).expect("6 distinct values in 1,000 rows");
            assert_eq!(dictionary.data_type(), &dictionary_type());
            let back = in_table_type(dictionary, array.data_type()).unwrap();
            assert_eq!(back.as_ref(), array.as_ref());
        }
    }

    #[test]
    fn many_distinct_strings_or_other_types_stay_as_they_are() {
        let distinct: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..1_000).map(|i| format!("v{}", i % 300)),
        ));
        assert!(candidate(&distinct).is_none(), "300 distinct in 1,000 rows");
        let ints: ArrayRef = Arc::new(arrow::array::Int32Array::from(vec![1; 1_000]));
        assert!(candidate(&ints).is_none());
        let tiny: ArrayRef = Arc::new(StringArray::from(vec!["a", "b", "a"]));
        assert!(candidate(&tiny).is_none(), "fewer than four rows a value");
    }

    #[test]
    fn the_dictionary_is_kept_unless_it_costs_more_than_a_bit_a_row() {
        assert!(keep(100, 200, 64));
        assert!(keep(208, 200, 64));
        assert!(!keep(209, 200, 64));
    }
}
