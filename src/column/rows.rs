//! Some rows of a decoded column: the array of only the rows a mask keeps, built from the
//! plain parts. A scan whose filter keeps few rows of a block pays for those rows only:
//! fixed-width values are filtered at their stored width and only then widened (a
//! decimal stored in 4 bytes costs 4 bytes a kept row, not 16 for every row).

use arrow::array::{Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, PrimitiveArray};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, Decimal128Type, Int8Type, Int16Type, Int32Type, Int64Type};

use super::plain::{self, PartRole, PlainNode, PlainPart};
use crate::{Error, Result};

/// The array of `data_type` of the rows of `node` where `keep` is set, in order (`keep`
/// has one bit per row of `node`). Equal to decoding the whole node and filtering it.
pub fn decode_rows(
    data_type: &DataType,
    node: PlainNode,
    keep: &BooleanBuffer,
) -> Result<ArrayRef> {
    if keep.len() != node.rows {
        return Err(Error::format(format!(
            "a selection of {} rows for a column of {}",
            keep.len(),
            node.rows
        )));
    }
    if keep.count_set_bits() == node.rows {
        return plain::decode(data_type, node);
    }
    if let Some(node) = gather_fixed_width(data_type, &node, keep)? {
        return plain::decode(data_type, node);
    }
    let array = plain::decode(data_type, node)?;
    Ok(arrow::compute::filter(
        &array,
        &BooleanArray::new(keep.clone(), None),
    )?)
}

/// The node of only the kept rows, for a fixed-width column without children (`None` for
/// other columns, which are decoded whole and filtered). The parts' sizes are checked
/// before any is read; the gathered node goes through the usual decode and its checks.
fn gather_fixed_width(
    data_type: &DataType,
    node: &PlainNode,
    keep: &BooleanBuffer,
) -> Result<Option<PlainNode>> {
    let fixed = matches!(
        data_type,
        DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::UInt8
            | DataType::UInt16
            | DataType::UInt32
            | DataType::UInt64
            | DataType::Float16
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Date64
            | DataType::Time32(_)
            | DataType::Time64(_)
            | DataType::Timestamp(..)
            | DataType::Duration(_)
            | DataType::Decimal32(..)
            | DataType::Decimal64(..)
            | DataType::Decimal128(..)
            | DataType::Decimal256(..)
    );
    if !fixed || !node.children.is_empty() {
        return Ok(None);
    }
    let (validity, values) = match node.parts.as_slice() {
        [values] if values.role == PartRole::Values => (None, values),
        [validity, values]
            if validity.role == PartRole::Validity && values.role == PartRole::Values =>
        {
            (Some(validity), values)
        }
        _ => return Ok(None),
    };
    let rows = node.rows;
    let width = values.width as usize;
    if values.bytes.len() != rows.saturating_mul(width) {
        // Left to the full decode, which names what is wrong.
        return Ok(None);
    }
    let nulls = match validity {
        Some(validity) if validity.bytes.len() == rows.div_ceil(8) => Some(NullBuffer::new(
            BooleanBuffer::new(validity.bytes.clone(), 0, rows),
        )),
        Some(_) => return Ok(None),
        None => None,
    };
    // The stored values filtered as integers of their width, by Arrow's filter kernel
    // (which picks its way by the selection's density).
    let keep = BooleanArray::new(keep.clone(), None);
    let (bytes, nulls) = match width {
        1 => kept_values::<Int8Type>(&values.bytes, rows, nulls, &keep)?,
        2 => kept_values::<Int16Type>(&values.bytes, rows, nulls, &keep)?,
        4 => kept_values::<Int32Type>(&values.bytes, rows, nulls, &keep)?,
        8 => kept_values::<Int64Type>(&values.bytes, rows, nulls, &keep)?,
        16 => kept_values::<Decimal128Type>(&values.bytes, rows, nulls, &keep)?,
        _ => return Ok(None),
    };
    let kept = keep.true_count();
    let null_count = nulls.as_ref().map_or(0, NullBuffer::null_count);
    let mut parts = Vec::with_capacity(2);
    if let Some(nulls) = nulls.filter(|n| n.null_count() > 0) {
        parts.push(PlainPart {
            role: PartRole::Validity,
            width: 1,
            bytes: nulls.inner().sliced(),
        });
    }
    parts.push(PlainPart {
        role: PartRole::Values,
        width: values.width,
        bytes,
    });
    Ok(Some(PlainNode {
        rows: kept,
        null_count,
        parts,
        children: Vec::new(),
    }))
}

/// The values (`rows` of `T`'s width in `bytes`) and nulls of the rows `keep` marks.
fn kept_values<T: ArrowPrimitiveType>(
    bytes: &Buffer,
    rows: usize,
    nulls: Option<NullBuffer>,
    keep: &BooleanArray,
) -> Result<(Buffer, Option<NullBuffer>)> {
    let values =
        ScalarBuffer::<T::Native>::new(plain::aligned::<T::Native>(bytes.clone()), 0, rows);
    let kept = arrow::compute::filter(&PrimitiveArray::<T>::new(values, nulls), keep)?;
    let kept = kept.as_primitive::<T>();
    Ok((kept.values().inner().clone(), kept.nulls().cloned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        Array, Decimal128Array, DictionaryArray, Int32Array, StringArray, TimestampSecondArray,
    };
    use arrow::datatypes::Int16Type;
    use std::sync::Arc;

    fn check(array: ArrayRef, keep: &[bool]) {
        let node = plain::encode(array.as_ref()).unwrap();
        let keep_bits = BooleanBuffer::from(keep.to_vec());
        let expected =
            arrow::compute::filter(&array, &BooleanArray::new(keep_bits.clone(), None)).unwrap();
        let got = decode_rows(array.data_type(), node, &keep_bits).unwrap();
        assert_eq!(&got, &expected, "{}", array.data_type());
    }

    #[test]
    fn kept_rows_equal_a_filter_of_the_whole_column() {
        let n = 300;
        let keep: Vec<bool> = (0..n)
            .map(|i| i % 7 == 0 || (100..140).contains(&i))
            .collect();
        let ints: ArrayRef = Arc::new(Int32Array::from_iter(
            (0..n).map(|i| (i % 5 != 0).then_some(i as i32 - 150)),
        ));
        // Narrowed to 4 bytes when stored, with nulls.
        let decimals: ArrayRef = Arc::new(
            Decimal128Array::from_iter((0..n).map(|i| (i % 3 != 0).then_some(i as i128 * 7 - 9)))
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let wide: ArrayRef = Arc::new(
            Decimal128Array::from_iter_values((0..n).map(|i| i as i128 * 10i128.pow(30)))
                .with_precision_and_scale(38, 0)
                .unwrap(),
        );
        let stamps: ArrayRef = Arc::new(
            TimestampSecondArray::from_iter_values((0..n).map(|i| i as i64 * 86_400))
                .with_timezone("+01:00"),
        );
        let strings: ArrayRef = Arc::new(StringArray::from_iter(
            (0..n).map(|i| (i % 4 != 0).then(|| format!("v{i}"))),
        ));
        let dictionary: ArrayRef = Arc::new(
            (0..n)
                .map(|i| ["a", "", "é"][i % 3])
                .collect::<DictionaryArray<Int16Type>>(),
        );
        for array in [ints, decimals, wide, stamps, strings, dictionary] {
            check(array.clone(), &keep);
            check(array.clone(), &vec![false; n]);
            check(array.clone(), &vec![true; n]);
            check(array.slice(10, 100), &keep[..100]);
        }
    }

    #[test]
    fn a_selection_of_another_length_is_an_error() {
        let array = Int32Array::from(vec![1, 2, 3]);
        let node = plain::encode(&array).unwrap();
        let keep = BooleanBuffer::from(vec![true, false]);
        assert!(decode_rows(&DataType::Int32, node, &keep).is_err());
        assert!(array.len() == 3);
    }
}
