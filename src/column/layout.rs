//! Checks a container's nodes before anything in them is decoded: the parts each data
//! type must have, their raw lengths against the row count, and each codec stream's own
//! claim (validated against the stream's bytes) against the part's raw length. So every
//! length the decoders are later given is backed by the bytes that will produce it, and
//! a bad container fails before any output is allocated.

use arrow::datatypes::{DataType, UnionMode};

use super::plain::PartRole;
use super::{CompressedNode, CompressedPart};
use crate::codec::CodecId;
use crate::{Error, Result};

/// Checks `node` (and its children) as the node of a `data_type` array.
pub(super) fn check_node(data_type: &DataType, node: &CompressedNode) -> Result<()> {
    let rows = node.rows;
    let mut parts = node.parts.iter().peekable();
    let validity = parts.next_if(|p| p.role == PartRole::Validity);
    match validity {
        Some(part) => {
            if node.null_count == 0 {
                return Err(Error::format("a validity part without nulls"));
            }
            expect(part, &[1], Some(rows.div_ceil(8)))?;
        }
        None if node.null_count > 0 => {
            return Err(Error::format("null count without a validity part"));
        }
        None => {}
    }
    let mut take = |role: PartRole| {
        parts
            .next()
            .filter(|p| p.role == role)
            .ok_or_else(|| Error::format(format!("{data_type}: missing the {} part", role.name())))
    };
    let children = match data_type {
        DataType::Null => {
            if validity.is_some() {
                return Err(Error::format("a Null column with a validity part"));
            }
            0
        }
        DataType::Boolean => {
            expect(take(PartRole::Values)?, &[1], Some(rows.div_ceil(8)))?;
            0
        }
        DataType::Utf8
        | DataType::Binary
        | DataType::LargeUtf8
        | DataType::LargeBinary
        | DataType::Utf8View
        | DataType::BinaryView => {
            expect_lengths(take(PartRole::Lengths)?, rows)?;
            expect(take(PartRole::Data)?, &[1], None)?;
            0
        }
        DataType::Dictionary(key, value) => {
            let width = key.primitive_width().unwrap_or(0) as u32;
            expect(
                take(PartRole::Values)?,
                &[width],
                rows.checked_mul(width as usize),
            )?;
            let child = node
                .children
                .first()
                .ok_or_else(|| Error::format("dictionary without its values"))?;
            check_node(value, child)?;
            1
        }
        DataType::List(field)
        | DataType::LargeList(field)
        | DataType::ListView(field)
        | DataType::LargeListView(field)
        | DataType::Map(field, _) => {
            expect_lengths(take(PartRole::Lengths)?, rows)?;
            // The child's rows are checked against the lengths' total once decoded.
            check_children(data_type, node, 1)?;
            check_node(field.data_type(), &node.children[0])?;
            1
        }
        DataType::FixedSizeList(field, size) => {
            check_children(data_type, node, 1)?;
            let child = &node.children[0];
            let expected = usize::try_from(*size)
                .ok()
                .and_then(|size| rows.checked_mul(size));
            if expected != Some(child.rows) {
                return Err(Error::format(format!(
                    "{data_type}: {} values for {rows} rows",
                    child.rows
                )));
            }
            check_node(field.data_type(), child)?;
            1
        }
        DataType::Struct(fields) => {
            check_children(data_type, node, fields.len())?;
            for (field, child) in fields.iter().zip(&node.children) {
                if child.rows != rows {
                    return Err(Error::format(format!(
                        "struct field '{}': {} rows, the struct has {rows}",
                        field.name(),
                        child.rows
                    )));
                }
                check_node(field.data_type(), child)?;
            }
            fields.len()
        }
        DataType::Union(fields, mode) => {
            if validity.is_some() {
                return Err(Error::format(format!("{data_type}: a validity part")));
            }
            expect(take(PartRole::Values)?, &[1], Some(rows))?;
            if *mode == UnionMode::Dense {
                // Each offset is checked against its child's rows once decoded.
                expect(take(PartRole::Values)?, &[4], rows.checked_mul(4))?;
            }
            check_children(data_type, node, fields.len())?;
            for ((_, field), child) in fields.iter().zip(&node.children) {
                if *mode == UnionMode::Sparse && child.rows != rows {
                    return Err(Error::format(format!(
                        "sparse union field '{}': {} rows, the union has {rows}",
                        field.name(),
                        child.rows
                    )));
                }
                check_node(field.data_type(), child)?;
            }
            fields.len()
        }
        DataType::RunEndEncoded(run_ends, values) => {
            if validity.is_some() {
                return Err(Error::format(format!("{data_type}: a validity part")));
            }
            check_children(data_type, node, 1)?;
            let child = &node.children[0];
            // Runs are at least one row long, and rows come in runs.
            if child.rows > rows || (child.rows == 0) != (rows == 0) {
                return Err(Error::format(format!(
                    "{data_type}: {} runs for {rows} rows",
                    child.rows
                )));
            }
            let width = run_ends.data_type().primitive_width().unwrap_or(0);
            expect(
                take(PartRole::Values)?,
                &[width as u32],
                child.rows.checked_mul(width),
            )?;
            check_node(values.data_type(), child)?;
            1
        }
        other => {
            let width = match other {
                DataType::FixedSizeBinary(width) => usize::try_from(*width).ok(),
                _ => other.primitive_width(),
            }
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "Arrow type {other} is not supported by the column layer"
                ))
            })?;
            let values = take(PartRole::Values)?;
            // Decimal128/256 may be stored narrower (sign-extended on decode).
            let widths: &[u32] = match other {
                DataType::Decimal128(..) => &[4, 8, 16],
                DataType::Decimal256(..) => &[4, 8, 16, 32],
                _ => &[width as u32],
            };
            expect(values, widths, rows.checked_mul(values.width as usize))?;
            0
        }
    };
    if let Some(extra) = parts.next() {
        return Err(Error::format(format!(
            "{data_type}: unexpected {} part",
            extra.role.name()
        )));
    }
    check_children(data_type, node, children)
}

/// `node` must have exactly `expected` children.
fn check_children(data_type: &DataType, node: &CompressedNode, expected: usize) -> Result<()> {
    if node.children.len() != expected {
        return Err(Error::format(format!(
            "{data_type}: {} child nodes, expected {expected}",
            node.children.len()
        )));
    }
    Ok(())
}

/// Checks a part's width, its raw length (when the type fixes it) and its stream's claim.
/// A lengths part: one length per row, 1, 2, 4 or 8 bytes each.
fn expect_lengths(part: &CompressedPart, rows: usize) -> Result<()> {
    expect(part, &[1, 2, 4, 8], rows.checked_mul(part.width as usize))
}

fn expect(part: &CompressedPart, widths: &[u32], raw_len: Option<usize>) -> Result<()> {
    let role = part.role.name();
    if !widths.contains(&part.width) {
        return Err(Error::format(format!(
            "{role} part {} bytes wide (expected one of {widths:?})",
            part.width
        )));
    }
    if let Some(expected) = raw_len.filter(|&expected| expected != part.raw_len) {
        return Err(Error::format(format!(
            "{role} part of {} bytes, the row count makes it {expected}",
            part.raw_len
        )));
    }
    let claimed = stream_claim(part.codec, &part.bytes)?;
    if claimed != part.raw_len as u64 {
        return Err(Error::format(format!(
            "{role} part: its {} stream holds {claimed} bytes, the container says {}",
            part.codec.name(),
            part.raw_len
        )));
    }
    Ok(())
}

/// The output a codec stream claims, checked against its own bytes (headers, size tables
/// and directories; nothing is decoded).
fn stream_claim(codec: CodecId, stream: &[u8]) -> Result<u64> {
    Ok(codec.claimed_len(stream)?)
}
