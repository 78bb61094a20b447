//! Nested Arrow arrays <-> plain nodes: lists, list views, fixed-size lists, structs, maps.
//!
//! A nested array keeps its own validity (as every node does) and, for the list-like
//! types, a lengths part (one length per row, as strings store theirs); what it holds
//! becomes child nodes, encoded recursively by [`plain::encode`], so every leaf part gets
//! its own codec choice. Children are cut to exactly the rows the parent uses:
//!
//! - List, LargeList, Map: one child, the values (a map's entries struct) from the first
//!   offset to the last; offsets are rebuilt from the lengths, starting at 0.
//! - ListView, LargeListView: one child, each row's range of values concatenated in row
//!   order (a slice when the views are already contiguous), so overlapping or out-of-order
//!   views decode to contiguous ones with the same values.
//! - FixedSizeList(n): one child of `rows × n` values.
//! - Struct: one child per field, each of `rows` values.
//!
//! So sliced arrays (offsets not starting at 0, sliced children) decode to equal, unsliced
//! arrays. Decoding checks every child's row count against its parent's lengths before
//! Arrow's validating constructors see them.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, FixedSizeListArray, GenericListArray, GenericListViewArray, MapArray,
    MutableArrayData, OffsetSizeTrait, StructArray, make_array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, FieldRef};

use super::plain::{self, Parts, PlainNode, PlainPart, lengths_part};
use crate::{Error, Result};

/// True for the types this module encodes.
pub(super) fn is_nested(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::List(_)
            | DataType::LargeList(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
    )
}

/// Appends the parts (after the validity, already pushed) and children of a nested array.
pub(super) fn encode(
    array: &dyn Array,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    match array.data_type() {
        DataType::List(_) => encode_list(array.as_list::<i32>(), parts, children),
        DataType::LargeList(_) => encode_list(array.as_list::<i64>(), parts, children),
        DataType::ListView(_) => encode_list_view(array.as_list_view::<i32>(), parts, children),
        DataType::LargeListView(_) => {
            encode_list_view(array.as_list_view::<i64>(), parts, children)
        }
        DataType::FixedSizeList(..) => {
            // A sliced fixed-size list's values are sliced with it.
            children.push(plain::encode(array.as_fixed_size_list().values().as_ref())?);
            Ok(())
        }
        DataType::Struct(_) => {
            // A sliced struct's columns are sliced with it.
            for column in array.as_struct().columns() {
                children.push(plain::encode(column.as_ref())?);
            }
            Ok(())
        }
        DataType::Map(..) => {
            let map = array.as_map();
            let entries: ArrayRef = Arc::new(map.entries().clone());
            encode_ranged(map.value_offsets(), &entries, parts, children)
        }
        other => Err(Error::Unsupported(format!(
            "{other} is not a nested type of the column layer"
        ))),
    }
}

fn encode_list<O: OffsetSizeTrait>(
    list: &GenericListArray<O>,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    encode_ranged(list.value_offsets(), list.values(), parts, children)
}

/// The lengths from `offsets` (one more than the rows) and the values they cover.
fn encode_ranged<O: OffsetSizeTrait>(
    offsets: &[O],
    values: &ArrayRef,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    let rows = offsets.len() - 1;
    let lengths = offsets.windows(2).map(|w| (w[1] - w[0]).as_usize() as u64);
    parts.push(lengths_part(lengths, rows));
    let (first, last) = (offsets[0].as_usize(), offsets[rows].as_usize());
    children.push(plain::encode(values.slice(first, last - first).as_ref())?);
    Ok(())
}

fn encode_list_view<O: OffsetSizeTrait>(
    list: &GenericListViewArray<O>,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    let (offsets, sizes) = (list.value_offsets(), list.value_sizes());
    parts.push(lengths_part(
        sizes.iter().map(|s| s.as_usize() as u64),
        list.len(),
    ));
    let start = offsets.first().map_or(0, |o| o.as_usize());
    let mut end = start;
    let contiguous = offsets.iter().zip(sizes).all(|(offset, size)| {
        let at = offset.as_usize() == end;
        end += size.as_usize();
        at
    });
    let values = if contiguous {
        list.values().slice(start, end - start)
    } else {
        let source = list.values().to_data();
        let total = sizes.iter().map(|s| s.as_usize()).sum();
        let mut gathered = MutableArrayData::new(vec![&source], false, total);
        for (offset, size) in offsets.iter().zip(sizes) {
            let offset = offset.as_usize();
            gathered.try_extend(0, offset, offset + size.as_usize())?;
        }
        make_array(gathered.freeze())
    };
    children.push(plain::encode(values.as_ref())?);
    Ok(())
}

/// Rebuilds a nested array of `rows` rows from its parts (the validity already read into
/// `nulls`) and child nodes.
pub(super) fn decode(
    data_type: &DataType,
    rows: usize,
    nulls: Option<NullBuffer>,
    parts: &mut Parts,
    children: &mut impl Iterator<Item = PlainNode>,
) -> Result<ArrayRef> {
    let mut child = |what: &str| {
        children
            .next()
            .ok_or_else(|| Error::format(format!("{data_type} without its {what}")))
    };
    Ok(match data_type {
        DataType::List(field) => {
            list::<i32>(data_type, field, rows, nulls, parts, child("values")?)?
        }
        DataType::LargeList(field) => {
            list::<i64>(data_type, field, rows, nulls, parts, child("values")?)?
        }
        DataType::ListView(field) => {
            list_view::<i32>(data_type, field, rows, nulls, parts, child("values")?)?
        }
        DataType::LargeListView(field) => {
            list_view::<i64>(data_type, field, rows, nulls, parts, child("values")?)?
        }
        DataType::Map(field, keys_sorted) => {
            let (offsets, entries) =
                ranged::<i32>(data_type, field, rows, parts, child("entries")?)?;
            let entries = entries
                .as_struct_opt()
                .ok_or_else(|| Error::format("map entries are not a struct"))?
                .clone();
            Arc::new(MapArray::try_new(
                field.clone(),
                offsets,
                entries,
                nulls,
                *keys_sorted,
            )?)
        }
        DataType::FixedSizeList(field, size) => {
            let size = usize::try_from(*size)
                .map_err(|_| Error::format(format!("{data_type}: negative size")))?;
            let values = child("values")?;
            let expected = rows.checked_mul(size);
            if expected != Some(values.rows) {
                return Err(Error::format(format!(
                    "{data_type}: {} values for {rows} rows",
                    values.rows
                )));
            }
            let values = plain::decode(field.data_type(), values)?;
            Arc::new(FixedSizeListArray::try_new_with_length(
                field.clone(),
                size as i32,
                values,
                nulls,
                rows,
            )?)
        }
        DataType::Struct(fields) => {
            let mut columns = Vec::new();
            for field in fields {
                let column = child(&format!("field '{}'", field.name()))?;
                if column.rows != rows {
                    return Err(Error::format(format!(
                        "struct field '{}': {} rows, the struct has {rows}",
                        field.name(),
                        column.rows
                    )));
                }
                columns.push(plain::decode(field.data_type(), column)?);
            }
            Arc::new(StructArray::try_new_with_length(
                fields.clone(),
                columns,
                nulls,
                rows,
            )?)
        }
        other => {
            return Err(Error::Unsupported(format!(
                "{other} is not a nested type of the column layer"
            )));
        }
    })
}

/// A list's offsets (from its lengths part, their total checked against the child's
/// rows) and its decoded values.
fn ranged<O: OffsetSizeTrait>(
    data_type: &DataType,
    field: &FieldRef,
    rows: usize,
    parts: &mut Parts,
    child: PlainNode,
) -> Result<(OffsetBuffer<O>, ArrayRef)> {
    let lengths = plain::read_lengths_only(parts, rows)?;
    let offsets = plain::offsets_from_lengths::<O>(data_type, &lengths)?;
    check_total(
        data_type,
        offsets.last().map_or(0, |o| o.as_usize()),
        &child,
    )?;
    let values = plain::decode(field.data_type(), child)?;
    // Non-negative and increasing by construction, which is all `new` asserts.
    Ok((OffsetBuffer::new(ScalarBuffer::from(offsets)), values))
}

fn list<O: OffsetSizeTrait>(
    data_type: &DataType,
    field: &FieldRef,
    rows: usize,
    nulls: Option<NullBuffer>,
    parts: &mut Parts,
    child: PlainNode,
) -> Result<ArrayRef> {
    let (offsets, values) = ranged::<O>(data_type, field, rows, parts, child)?;
    Ok(Arc::new(GenericListArray::<O>::try_new(
        field.clone(),
        offsets,
        values,
        nulls,
    )?))
}

fn list_view<O: OffsetSizeTrait>(
    data_type: &DataType,
    field: &FieldRef,
    rows: usize,
    nulls: Option<NullBuffer>,
    parts: &mut Parts,
    child: PlainNode,
) -> Result<ArrayRef> {
    let lengths = plain::read_lengths_only(parts, rows)?;
    let mut offsets = plain::offsets_from_lengths::<O>(data_type, &lengths)?;
    check_total(
        data_type,
        offsets.last().map_or(0, |o| o.as_usize()),
        &child,
    )?;
    offsets.pop();
    // Every length fits `O`: each is at most the total, which fit.
    let sizes: Vec<O> = lengths.iter().map(|&l| O::usize_as(l as usize)).collect();
    let values = plain::decode(field.data_type(), child)?;
    Ok(Arc::new(GenericListViewArray::<O>::try_new(
        field.clone(),
        ScalarBuffer::from(offsets),
        ScalarBuffer::from(sizes),
        values,
        nulls,
    )?))
}

/// The lengths' total must be the child's row count exactly (no values left over).
fn check_total(data_type: &DataType, total: usize, child: &PlainNode) -> Result<()> {
    if total == child.rows {
        Ok(())
    } else {
        Err(Error::format(format!(
            "{data_type}: lengths add up to {total}, the values have {} rows",
            child.rows
        )))
    }
}
