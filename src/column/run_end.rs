//! Run-end encoded arrays <-> plain nodes.
//!
//! A run-end encoded array has no validity of its own (Arrow keeps its nulls in the
//! values), so its node never has a validity part. Its one part is the run ends, one per
//! run, as wide as the run-end type (a values part 2, 4 or 8 bytes wide); its one child
//! is the values, one per run, encoded recursively by [`plain::encode`]. The node's row
//! count is the array's logical length.
//!
//! A sliced array is stored as the runs its rows touch: the run ends shifted to start at
//! its first row and the last one cut to its length, the values sliced to those runs. So
//! it decodes to an unsliced array with the same logical values.
//!
//! Decoding checks that the run ends are positive and strictly increasing and that the
//! last one is the row count (the writer never leaves runs past the end), before Arrow's
//! validating [`RunArray::try_new`] sees them.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray, RunArray, make_array};
use arrow::buffer::{Buffer, NullBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowNativeType, DataType, Int16Type, Int32Type, Int64Type, RunEndIndexType,
};

use super::plain::{self, PartRole, Parts, PlainNode, PlainPart, aligned, expect_len};
use crate::{Error, Result};

/// Appends the run ends part and the values child of a run-end encoded array.
pub(super) fn encode(
    array: &dyn Array,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    match array.data_type() {
        DataType::RunEndEncoded(run_ends, _) => match run_ends.data_type() {
            DataType::Int16 => encode_runs(array.as_run::<Int16Type>(), parts, children),
            DataType::Int32 => encode_runs(array.as_run::<Int32Type>(), parts, children),
            DataType::Int64 => encode_runs(array.as_run::<Int64Type>(), parts, children),
            other => Err(Error::Unsupported(format!("run ends of type {other}"))),
        },
        other => Err(Error::Unsupported(format!(
            "{other} is not a run-end encoded type"
        ))),
    }
}

fn encode_runs<R: RunEndIndexType>(
    runs: &RunArray<R>,
    parts: &mut Vec<PlainPart>,
    children: &mut Vec<PlainNode>,
) -> Result<()> {
    let ends = runs.run_ends();
    let whole = ends.offset() == 0 && ends.max_value() == ends.len();
    let bytes = if whole {
        ends.inner().inner().clone()
    } else {
        // Shifted by the slice's offset, the last one cut to its length.
        Buffer::from_vec(ends.sliced_values().collect::<Vec<R::Native>>())
    };
    parts.push(PlainPart {
        role: PartRole::Values,
        width: std::mem::size_of::<R::Native>() as u32,
        bytes,
    });
    children.push(plain::encode(runs.values_slice().as_ref())?);
    Ok(())
}

/// Rebuilds a run-end encoded array of `rows` logical rows from its parts and child.
pub(super) fn decode(
    data_type: &DataType,
    rows: usize,
    nulls: Option<NullBuffer>,
    parts: &mut Parts,
    children: &mut impl Iterator<Item = PlainNode>,
) -> Result<ArrayRef> {
    let DataType::RunEndEncoded(run_ends, values) = data_type else {
        return Err(Error::Unsupported(format!(
            "{data_type} is not a run-end encoded type"
        )));
    };
    if nulls.is_some() {
        return Err(Error::format(format!(
            "{data_type}: a run-end encoded array has no validity part"
        )));
    }
    let ends = parts.take(PartRole::Values)?;
    let child = children
        .next()
        .ok_or_else(|| Error::format(format!("{data_type} without its values")))?;
    let decoded = match run_ends.data_type() {
        DataType::Int16 => decode_runs::<Int16Type>(data_type, rows, ends, child, values)?,
        DataType::Int32 => decode_runs::<Int32Type>(data_type, rows, ends, child, values)?,
        DataType::Int64 => decode_runs::<Int64Type>(data_type, rows, ends, child, values)?,
        other => {
            return Err(Error::format(format!("run ends of type {other}")));
        }
    };
    Ok(decoded)
}

fn decode_runs<R: RunEndIndexType>(
    data_type: &DataType,
    rows: usize,
    ends: PlainPart,
    child: PlainNode,
    values_field: &arrow::datatypes::FieldRef,
) -> Result<ArrayRef> {
    let width = std::mem::size_of::<R::Native>();
    if ends.width as usize != width {
        return Err(Error::format(format!(
            "{} run ends stored {} bytes wide",
            R::DATA_TYPE,
            ends.width
        )));
    }
    let runs = child.rows;
    expect_len("run ends", ends.bytes.len(), runs.saturating_mul(width))?;
    let ends = ScalarBuffer::<R::Native>::new(aligned::<R::Native>(ends.bytes), 0, runs);
    let mut previous = 0usize;
    for (run, &end) in ends.iter().enumerate() {
        // Negative ends have no usize.
        match end.to_usize().filter(|&end| end > previous) {
            Some(end) => previous = end,
            None => {
                return Err(Error::format(format!(
                    "run {run} ends at {end:?}, after the previous run's end {previous}: \
                     run ends must be positive and strictly increasing"
                )));
            }
        }
    }
    if previous != rows {
        return Err(Error::format(format!(
            "the last run ends at {previous}, the array has {rows} rows"
        )));
    }
    let values = plain::decode(values_field.data_type(), child)?;
    let run_ends = PrimitiveArray::<R>::try_new(ends, None)?;
    let array = RunArray::<R>::try_new(&run_ends, values.as_ref())?;
    if array.data_type() == data_type {
        return Ok(Arc::new(array));
    }
    // `try_new` names its fields "run_ends" and "values" (nullable); the declared fields
    // (names, nullability, metadata) are kept, and Arrow validates the data again.
    let data = array
        .into_data()
        .into_builder()
        .data_type(data_type.clone())
        .build()?;
    Ok(make_array(data))
}
