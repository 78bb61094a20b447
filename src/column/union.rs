//! Union arrays (sparse and dense) <-> plain nodes.
//!
//! A union has no validity of its own (Arrow keeps its nulls in the children), so its
//! node never has a validity part. Its parts are the type ids, one `i8` per row (a values
//! part 1 byte wide), and for a dense union the offsets into the children, one `i32` per
//! row (a values part 4 bytes wide). Its children are one node per field, in the order
//! of the union's fields, each encoded recursively by [`plain::encode`]:
//!
//! - Sparse: every child has the union's rows (a sliced union's children are sliced
//!   with it).
//! - Dense: each child is cut to the rows the union refers to, from the smallest offset
//!   of its type id to the largest, and the offsets are rebased to that range; a child no
//!   row refers to is empty. So a sliced dense union stores only the children's rows it
//!   can reach, and repeated or out-of-order offsets are kept as they are.
//!
//! Decoding checks every type id against the declared ids, every dense offset against
//! its child's rows (and that each child's first and last row are referred to, as the
//! writer cuts them), and a sparse child's rows against the union's, before Arrow's
//! validating [`UnionArray::try_new`] sees them.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, UnionArray};
use arrow::buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow::datatypes::{DataType, UnionFields, UnionMode};

use super::plain::{self, PartRole, Parts, PlainNode, PlainPart, aligned, expect_len};
use crate::{Error, Result};

/// Type ids are `0..=127`; a table indexed by `id as u8` has room for every `i8`.
const IDS: usize = 256;

/// Appends the parts (type ids, dense offsets) and children of a union array.
pub(super) fn encode(
    array: &dyn Array,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    let union = array.as_union();
    let DataType::Union(fields, _) = union.data_type() else {
        return Err(Error::Unsupported(format!(
            "{} is not a union",
            union.data_type()
        )));
    };
    let type_ids = union.type_ids();
    parts.push(PlainPart {
        role: PartRole::Values,
        width: 1,
        // Already sliced to the union's rows.
        bytes: type_ids.inner().clone(),
    });
    let Some(offsets) = union.offsets() else {
        // Sparse: the children are sliced with the union.
        for (type_id, _) in fields.iter() {
            children.push(plain::encode(union.child(type_id).as_ref())?);
        }
        return Ok(());
    };
    // Per type id, the range of child rows referred to: [first, last].
    let mut ranges = [(usize::MAX, 0usize); IDS];
    for (&type_id, &offset) in type_ids.iter().zip(offsets.iter()) {
        let range = &mut ranges[usize::from(type_id as u8)];
        let offset = offset.max(0) as usize;
        *range = (range.0.min(offset), range.1.max(offset));
    }
    let rebased: Vec<i32> = type_ids
        .iter()
        .zip(offsets.iter())
        .map(|(&type_id, &offset)| offset - ranges[usize::from(type_id as u8)].0 as i32)
        .collect();
    parts.push(PlainPart {
        role: PartRole::Values,
        width: 4,
        bytes: Buffer::from_vec(rebased),
    });
    for (type_id, _) in fields.iter() {
        let child = union.child(type_id);
        let (first, last) = ranges[usize::from(type_id as u8)];
        let used = if first == usize::MAX {
            child.slice(0, 0)
        } else {
            child.slice(first, last - first + 1)
        };
        children.push(plain::encode(used.as_ref())?);
    }
    Ok(())
}

/// Rebuilds a union array of `rows` rows from its parts and child nodes.
pub(super) fn decode(
    data_type: &DataType,
    rows: usize,
    nulls: Option<NullBuffer>,
    parts: &mut Parts,
    children: &mut impl Iterator<Item = PlainNode>,
) -> Result<ArrayRef> {
    let DataType::Union(fields, mode) = data_type else {
        return Err(Error::Unsupported(format!("{data_type} is not a union")));
    };
    if nulls.is_some() {
        return Err(Error::format(format!(
            "{data_type}: a union has no validity part"
        )));
    }
    let type_ids = parts.take(PartRole::Values)?;
    if type_ids.width != 1 {
        return Err(Error::format(format!(
            "union type ids stored {} bytes wide",
            type_ids.width
        )));
    }
    expect_len("union type ids", type_ids.bytes.len(), rows)?;
    let type_ids = ScalarBuffer::<i8>::new(type_ids.bytes, 0, rows);
    // Which child each type id selects.
    let mut child_of = [None; IDS];
    for (index, (type_id, _)) in fields.iter().enumerate() {
        child_of[usize::from(type_id as u8)] = Some(index);
    }
    let mut nodes = Vec::with_capacity(fields.len());
    for (_, field) in fields.iter() {
        nodes.push(children.next().ok_or_else(|| {
            Error::format(format!(
                "{data_type} without its child for field '{}'",
                field.name()
            ))
        })?);
    }
    let mut child_index = Vec::new();
    child_index
        .try_reserve_exact(rows)
        .map_err(|_| Error::format(format!("no memory for the type ids of {rows} rows")))?;
    for &type_id in type_ids.iter() {
        match child_of[usize::from(type_id as u8)] {
            Some(index) => child_index.push(index),
            None => {
                return Err(Error::format(format!(
                    "union type id {type_id} is not one of the declared ids {:?}",
                    fields.iter().map(|(id, _)| id).collect::<Vec<_>>()
                )));
            }
        }
    }
    let offsets = match mode {
        UnionMode::Sparse => {
            check_sparse(fields, &nodes, rows)?;
            None
        }
        UnionMode::Dense => Some(dense_offsets(fields, &nodes, &child_index, rows, parts)?),
    };
    let columns = fields
        .iter()
        .zip(nodes)
        .map(|((_, field), node)| plain::decode(field.data_type(), node))
        .collect::<Result<Vec<_>>>()?;
    Ok(Arc::new(UnionArray::try_new(
        fields.clone(),
        type_ids,
        offsets,
        columns,
    )?))
}

/// A sparse union's children each have the union's rows.
fn check_sparse(fields: &UnionFields, nodes: &[PlainNode], rows: usize) -> Result<()> {
    for ((_, field), node) in fields.iter().zip(nodes) {
        if node.rows != rows {
            return Err(Error::format(format!(
                "sparse union field '{}': {} rows, the union has {rows}",
                field.name(),
                node.rows
            )));
        }
    }
    Ok(())
}

/// A dense union's offsets part, each offset checked against its child's rows; every
/// child's first and last row must be referred to (the writer cuts children so).
fn dense_offsets(
    fields: &UnionFields,
    nodes: &[PlainNode],
    child_index: &[usize],
    rows: usize,
    parts: &mut Parts,
) -> Result<ScalarBuffer<i32>> {
    let offsets = parts.take(PartRole::Values)?;
    if offsets.width != 4 {
        return Err(Error::format(format!(
            "dense union offsets stored {} bytes wide",
            offsets.width
        )));
    }
    expect_len(
        "dense union offsets",
        offsets.bytes.len(),
        rows.saturating_mul(4),
    )?;
    let offsets = ScalarBuffer::<i32>::new(aligned::<i32>(offsets.bytes), 0, rows);
    let mut ranges = vec![(usize::MAX, 0usize); nodes.len()];
    for (row, (&index, &offset)) in child_index.iter().zip(offsets.iter()).enumerate() {
        let child_rows = nodes[index].rows;
        let within = usize::try_from(offset)
            .ok()
            .filter(|&offset| offset < child_rows);
        let Some(offset) = within else {
            return Err(Error::format(format!(
                "dense union row {row}: offset {offset} outside field '{}' of {child_rows} rows",
                fields.iter().nth(index).map_or("?", |(_, f)| f.name())
            )));
        };
        let range = &mut ranges[index];
        *range = (range.0.min(offset), range.1.max(offset));
    }
    for (((_, field), node), (first, last)) in fields.iter().zip(nodes).zip(ranges) {
        let cut = if first == usize::MAX {
            node.rows == 0
        } else {
            first == 0 && last + 1 == node.rows
        };
        if !cut {
            return Err(Error::format(format!(
                "dense union field '{}': {} rows, not all of them referred to",
                field.name(),
                node.rows
            )));
        }
    }
    Ok(offsets)
}
