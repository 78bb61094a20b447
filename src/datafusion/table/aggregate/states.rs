//! Per-group running states of `sum`, `avg` and `count`, written out as the state columns
//! DataFusion's own partial aggregation emits, so its final aggregation merges them
//! unchanged:
//! - `sum` of a decimal or `Int64`: the sum (wrapping, as DataFusion's `add_wrapping`),
//!   null for a group without a non-null value;
//! - `avg` of a decimal: `[count: UInt64, sum: Decimal128]`, both null for such a group
//!   when grouped, the count 0 and the sum null without grouping;
//! - `count`: an `Int64` of the non-null values (of every row for a literal).

use std::sync::Arc;

use arrow::array::{ArrayRef, Decimal128Array, Int64Array, UInt64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, FieldRef};
use datafusion::error::{DataFusionError, Result};

use super::expr::{FixedPointExpr, Values};

/// Which aggregate, with its argument.
#[derive(Debug, Clone)]
pub(super) enum Function {
    /// `sum` of a decimal (state `Decimal128`) or integer (state `Int64`) argument.
    Sum(FixedPointExpr),
    /// `avg` of a decimal argument.
    Avg(FixedPointExpr),
    /// `count` of an argument (`None`: of a literal, which counts every row).
    Count(Option<FixedPointExpr>),
}

impl Function {
    /// The argument whose values [`Accumulator::update`] takes (`None`: count every row).
    pub(super) fn argument(&self) -> Option<&FixedPointExpr> {
        match self {
            Function::Sum(expr) | Function::Avg(expr) => Some(expr),
            Function::Count(expr) => expr.as_ref(),
        }
    }
}

/// One aggregate's states for every group, and its state fields.
#[derive(Debug)]
pub(super) struct Accumulator {
    function: Function,
    fields: Vec<FieldRef>,
    /// Sums (unscaled), by group.
    sums: Vec<i128>,
    /// Non-null values counted, by group.
    counts: Vec<u64>,
}

impl Accumulator {
    /// An accumulator of `function` whose states are written as `fields` (the partial
    /// aggregation's state fields of this aggregate, in order); `None` when those are not
    /// the states computed here (a sum kept as `Decimal256`, say).
    pub(super) fn new(function: Function, fields: Vec<FieldRef>) -> Option<Self> {
        let types: Vec<&DataType> = fields.iter().map(|f| f.data_type()).collect();
        let supported = matches!(
            (&function, types.as_slice()),
            (
                Function::Sum(_),
                [DataType::Decimal128(..) | DataType::Int64]
            ) | (
                Function::Avg(_),
                [DataType::UInt64, DataType::Decimal128(..)]
            ) | (Function::Count(_), [DataType::Int64])
        );
        supported.then_some(Accumulator {
            function,
            fields,
            sums: Vec::new(),
            counts: Vec::new(),
        })
    }

    /// Adds a batch's rows to their groups: `groups[row]` (each below `group_count`) and
    /// the argument's `values` (`None` when it has none). The work is per row, never per
    /// group: a batch may touch few of a million groups.
    pub(super) fn update(
        &mut self,
        values: Option<&Values<'_>>,
        groups: &[usize],
        group_count: usize,
    ) {
        self.sums.resize(group_count, 0);
        self.counts.resize(group_count, 0);
        let counting = matches!(self.function, Function::Count(_));
        let wraps_at_64 = !counting
            && self
                .fields
                .last()
                .is_some_and(|f| f.data_type() == &DataType::Int64);
        let (sums, counts) = (&mut self.sums, &mut self.counts);
        let add = |sum: &mut i128, value: i128| {
            *sum = if wraps_at_64 {
                i128::from((*sum as i64).wrapping_add(value as i64))
            } else {
                sum.wrapping_add(value)
            }
        };
        let values = match values {
            // A scalar is added once per row, as DataFusion's accumulators add it.
            Some(Values::Scalar(value)) if !counting => {
                for &group in groups {
                    add(&mut sums[group], *value);
                    counts[group] += 1;
                }
                return;
            }
            None | Some(Values::Scalar(_)) => {
                for &group in groups {
                    counts[group] += 1;
                }
                return;
            }
            Some(values) => values,
        };
        let slice = values.slice().unwrap_or_default();
        match (values.nulls(), counting, wraps_at_64) {
            (None, true, _) => {
                for &group in groups {
                    counts[group] += 1;
                }
            }
            (None, false, false) => {
                for (&group, &value) in groups.iter().zip(slice) {
                    sums[group] = sums[group].wrapping_add(value);
                    counts[group] += 1;
                }
            }
            (None, false, true) => {
                for (&group, &value) in groups.iter().zip(slice) {
                    add(&mut sums[group], value);
                    counts[group] += 1;
                }
            }
            (Some(nulls), ..) => {
                for row in nulls.valid_indices() {
                    let group = groups[row];
                    if !counting {
                        add(&mut sums[group], slice[row]);
                    }
                    counts[group] += 1;
                }
            }
        }
    }

    /// The state columns of groups `0..group_count`, which are then forgotten (their
    /// vectors become the arrays); `grouped` is whether the aggregation has a GROUP BY
    /// (without one, `avg`'s count is never null).
    pub(super) fn take_states(
        &mut self,
        group_count: usize,
        grouped: bool,
    ) -> Result<Vec<ArrayRef>> {
        let mut counts = std::mem::take(&mut self.counts);
        counts.resize(group_count, 0);
        let mut sums = std::mem::take(&mut self.sums);
        sums.resize(group_count, 0);
        let seen = NullBuffer::from(counts.iter().map(|&c| c > 0).collect::<Vec<_>>());
        let seen = (seen.null_count() > 0).then_some(seen);
        let sum = |field: &FieldRef, sums: Vec<i128>| -> Result<ArrayRef> {
            Ok(match field.data_type() {
                DataType::Int64 => Arc::new(Int64Array::new(
                    sums.iter().map(|&s| s as i64).collect(),
                    seen.clone(),
                )),
                ty @ DataType::Decimal128(..) => Arc::new(
                    Decimal128Array::new(sums.into(), seen.clone()).with_data_type(ty.clone()),
                ),
                other => {
                    return Err(DataFusionError::Internal(format!(
                        "a sum state of type {other}"
                    )));
                }
            })
        };
        Ok(match &self.function {
            Function::Sum(_) => vec![sum(&self.fields[0], sums)?],
            Function::Avg(_) => {
                let count_nulls = if grouped { seen.clone() } else { None };
                vec![
                    Arc::new(UInt64Array::new(counts.into(), count_nulls)) as ArrayRef,
                    sum(&self.fields[1], sums)?,
                ]
            }
            Function::Count(_) => vec![Arc::new(Int64Array::from_iter_values(
                counts.iter().map(|&c| c as i64),
            )) as ArrayRef],
        })
    }
}
