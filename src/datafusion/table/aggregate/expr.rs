//! Aggregate arguments evaluated as unscaled integers: decimal and integer columns,
//! literals, and decimal `+`, `-` and `*`, with the results and errors of Arrow's decimal
//! kernels (which DataFusion's `BinaryExpr` calls).
//!
//! Arrow computes a product of two `Decimal128` arrays with `i128::checked_mul`, a call
//! into the compiler's runtime for every row. Here a product of two values that fit in
//! 64 bits (every TPC-H decimal, and any stored narrow) is one 64×64→128-bit multiply,
//! which cannot overflow; only other values take the checked path.

use std::rc::Rc;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Int8Type, Int16Type, Int32Type, Int64Type, Schema};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, CastExpr, Column, Literal};

/// An argument of an aggregate in the forms evaluated here.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum FixedPointExpr {
    /// A `Decimal128` or signed integer column of the input, by index.
    Column(usize),
    /// A non-null decimal or integer literal, unscaled.
    Literal(i128),
    /// Decimal `left * left_scale ± right * right_scale` (each side brought to the
    /// result's scale), checked as Arrow checks it.
    AddOrSub {
        subtract: bool,
        left: Box<FixedPointExpr>,
        left_scale: i128,
        right: Box<FixedPointExpr>,
        right_scale: i128,
    },
    /// Decimal `left * right` (the scales add), checked.
    Multiply(Box<FixedPointExpr>, Box<FixedPointExpr>),
}

/// What an expression gives: its value type in the input's terms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum ValueType {
    /// `Decimal128(precision, scale)`.
    Decimal(u8, i8),
    /// A signed integer of this many bits.
    Integer(u32),
}

impl ValueType {
    pub(super) fn of(ty: &DataType) -> Option<ValueType> {
        match ty {
            DataType::Decimal128(p, s) => Some(ValueType::Decimal(*p, *s)),
            DataType::Int8 => Some(ValueType::Integer(8)),
            DataType::Int16 => Some(ValueType::Integer(16)),
            DataType::Int32 => Some(ValueType::Integer(32)),
            DataType::Int64 => Some(ValueType::Integer(64)),
            _ => None,
        }
    }
}

/// A batch's values of an expression, unscaled: one for every row, or a column's own
/// `Decimal128` values, or computed ones (shared, so an expression met twice in a batch is
/// computed once). Values at null rows are unspecified.
#[derive(Clone)]
pub(super) enum Values<'a> {
    Scalar(i128),
    Borrowed(&'a [i128], Option<NullBuffer>),
    Computed(Rc<Vec<i128>>, Option<NullBuffer>),
}

impl Values<'_> {
    /// The values row by row, `None` for a scalar.
    pub(super) fn slice(&self) -> Option<&[i128]> {
        match self {
            Values::Scalar(_) => None,
            Values::Borrowed(values, _) => Some(values),
            Values::Computed(values, _) => Some(values),
        }
    }

    pub(super) fn nulls(&self) -> Option<&NullBuffer> {
        match self {
            Values::Scalar(_) => None,
            Values::Borrowed(_, nulls) | Values::Computed(_, nulls) => nulls.as_ref(),
        }
    }
}

/// One batch's evaluation of several expressions, each distinct subexpression once.
pub(super) struct Evaluation<'a, 'e> {
    batch: &'a RecordBatch,
    done: Vec<(&'e FixedPointExpr, Values<'a>)>,
}

impl<'a, 'e> Evaluation<'a, 'e> {
    pub(super) fn new(batch: &'a RecordBatch) -> Self {
        Evaluation {
            batch,
            done: Vec::new(),
        }
    }

    /// `expr`'s values for the batch's rows. Errors as Arrow's kernels do: an overflow
    /// at a valid row fails the query.
    pub(super) fn values(&mut self, expr: &'e FixedPointExpr) -> Result<Values<'a>> {
        if let Some((_, values)) = self.done.iter().find(|(e, _)| *e == expr) {
            return Ok(values.clone());
        }
        let values = match expr {
            FixedPointExpr::Column(index) => column_values(self.batch.column(*index))?,
            FixedPointExpr::Literal(value) => Values::Scalar(*value),
            FixedPointExpr::AddOrSub {
                subtract,
                left,
                left_scale,
                right,
                right_scale,
            } => {
                let a = self.values(left)?;
                let b = self.values(right)?;
                let (l, r, subtract) = (*left_scale, *right_scale, *subtract);
                combine(&a, &b, move |x, y| {
                    let x = if l == 1 { Some(x) } else { multiply(x, l) }?;
                    let y = if r == 1 { Some(y) } else { multiply(y, r) }?;
                    if subtract {
                        x.checked_sub(y)
                    } else {
                        x.checked_add(y)
                    }
                })?
            }
            FixedPointExpr::Multiply(left, right) => {
                let a = self.values(left)?;
                let b = self.values(right)?;
                combine(&a, &b, multiply)?
            }
        };
        self.done.push((expr, values.clone()));
        Ok(values)
    }
}

/// `op` of `a` and `b` row by row; an overflow fails only at a valid row (a null row's
/// values are unspecified, and Arrow computes only valid rows).
fn combine<'a>(
    a: &Values<'a>,
    b: &Values<'a>,
    op: impl Fn(i128, i128) -> Option<i128> + Copy,
) -> Result<Values<'a>> {
    let nulls = NullBuffer::union(a.nulls(), b.nulls());
    let check = |x: i128, y: i128, row: usize| -> Result<()> {
        match op(x, y) {
            None if nulls.as_ref().is_none_or(|n| n.is_valid(row)) => Err(overflow()),
            _ => Ok(()),
        }
    };
    let out = match (a, b) {
        (Values::Scalar(x), Values::Scalar(y)) => {
            return Ok(Values::Scalar(op(*x, *y).ok_or_else(overflow)?));
        }
        (_, Values::Scalar(y)) => {
            let xs = a.slice().unwrap_or_default();
            let (out, overflowed) = unchecked(xs.iter().map(|&x| op(x, *y)));
            if overflowed {
                for (row, &x) in xs.iter().enumerate() {
                    check(x, *y, row)?;
                }
            }
            out
        }
        (Values::Scalar(x), _) => {
            let ys = b.slice().unwrap_or_default();
            let (out, overflowed) = unchecked(ys.iter().map(|&y| op(*x, y)));
            if overflowed {
                for (row, &y) in ys.iter().enumerate() {
                    check(*x, y, row)?;
                }
            }
            out
        }
        _ => {
            let (xs, ys) = (a.slice().unwrap_or_default(), b.slice().unwrap_or_default());
            let (out, overflowed) = unchecked(xs.iter().zip(ys).map(|(&x, &y)| op(x, y)));
            if overflowed {
                for (row, (&x, &y)) in xs.iter().zip(ys).enumerate() {
                    check(x, y, row)?;
                }
            }
            out
        }
    };
    Ok(Values::Computed(Rc::new(out), nulls))
}

/// The values, zero where one overflowed (`None`), and whether one did: one pass without
/// a branch out of the loop, the rows looked at again only when one overflowed.
fn unchecked(values: impl Iterator<Item = Option<i128>>) -> (Vec<i128>, bool) {
    let mut overflowed = false;
    let out = values
        .map(|value| {
            overflowed |= value.is_none();
            value.unwrap_or(0)
        })
        .collect();
    (out, overflowed)
}

impl FixedPointExpr {
    /// `expr` (over `schema`) in this form with its value type, or `None` when it has a
    /// node, type or operator not evaluated here.
    pub(super) fn compile(
        expr: &Arc<dyn PhysicalExpr>,
        schema: &Schema,
    ) -> Option<(FixedPointExpr, ValueType)> {
        let ty = ValueType::of(&expr.data_type(schema).ok()?)?;
        if let Some(column) = expr.downcast_ref::<Column>() {
            return Some((FixedPointExpr::Column(column.index()), ty));
        }
        if let Some(literal) = expr.downcast_ref::<Literal>() {
            let value = match *literal.value() {
                ScalarValue::Decimal128(Some(v), ..) => v,
                ScalarValue::Int8(Some(v)) => i128::from(v),
                ScalarValue::Int16(Some(v)) => i128::from(v),
                ScalarValue::Int32(Some(v)) => i128::from(v),
                ScalarValue::Int64(Some(v)) => i128::from(v),
                _ => return None,
            };
            return Some((FixedPointExpr::Literal(value), ty));
        }
        if let Some(cast) = expr.downcast_ref::<CastExpr>() {
            // A signed integer widened to a wider one keeps its value.
            let (inner, inner_ty) = Self::compile(cast.expr(), schema)?;
            return match (inner_ty, ty) {
                (ValueType::Integer(from), ValueType::Integer(to)) if from <= to => {
                    Some((inner, ty))
                }
                _ => None,
            };
        }
        let binary = expr.downcast_ref::<BinaryExpr>()?;
        let (left, left_ty) = Self::compile(binary.left(), schema)?;
        let (right, right_ty) = Self::compile(binary.right(), schema)?;
        // Integer arithmetic wraps or fails as the expression was planned, which its
        // public interface does not say; only decimals are evaluated here.
        let (ValueType::Decimal(_, s1), ValueType::Decimal(_, s2), ValueType::Decimal(_, s)) =
            (left_ty, right_ty, ty)
        else {
            return None;
        };
        let node = match binary.op() {
            Operator::Plus | Operator::Minus => {
                if s != s1.max(s2) {
                    return None;
                }
                FixedPointExpr::AddOrSub {
                    subtract: *binary.op() == Operator::Minus,
                    left: Box::new(left),
                    left_scale: power_of_ten(s - s1)?,
                    right: Box::new(right),
                    right_scale: power_of_ten(s - s2)?,
                }
            }
            Operator::Multiply => {
                if i16::from(s) != i16::from(s1) + i16::from(s2) {
                    return None;
                }
                FixedPointExpr::Multiply(Box::new(left), Box::new(right))
            }
            _ => return None,
        };
        Some((node, ty))
    }
}

/// `10^exponent` for a non-negative exponent that fits (Arrow fails the query otherwise,
/// so such an expression is left to it).
fn power_of_ten(exponent: i8) -> Option<i128> {
    10i128.checked_pow(u32::try_from(exponent).ok()?)
}

/// `x * y`, `None` on overflow. Factors that fit in 64 bits multiply without a check.
#[inline(always)]
fn multiply(x: i128, y: i128) -> Option<i128> {
    match (i64::try_from(x), i64::try_from(y)) {
        (Ok(x), Ok(y)) => Some(i128::from(x) * i128::from(y)),
        _ => x.checked_mul(y),
    }
}

fn overflow() -> DataFusionError {
    DataFusionError::ArrowError(
        Box::new(arrow::error::ArrowError::ArithmeticOverflow(
            "Overflow happened on decimal arithmetic in an aggregate's argument".into(),
        )),
        None,
    )
}

/// A column's values as unscaled `i128`s (a `Decimal128` column's own).
fn column_values(array: &ArrayRef) -> Result<Values<'_>> {
    let nulls = array.logical_nulls();
    let widened = match array.data_type() {
        DataType::Decimal128(..) => {
            let values = array
                .as_primitive::<arrow::datatypes::Decimal128Type>()
                .values();
            return Ok(Values::Borrowed(values, nulls));
        }
        DataType::Int8 => widened::<Int8Type>(array),
        DataType::Int16 => widened::<Int16Type>(array),
        DataType::Int32 => widened::<Int32Type>(array),
        DataType::Int64 => widened::<Int64Type>(array),
        other => {
            return Err(DataFusionError::Internal(format!(
                "a fixed-point aggregate argument of type {other}"
            )));
        }
    };
    Ok(Values::Computed(Rc::new(widened), nulls))
}

fn widened<T>(array: &ArrayRef) -> Vec<i128>
where
    T: arrow::datatypes::ArrowPrimitiveType,
    T::Native: Into<i128>,
{
    array
        .as_primitive::<T>()
        .values()
        .iter()
        .map(|&v| v.into())
        .collect()
}
