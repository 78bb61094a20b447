//! Conjuncts tested on a column's plain parts, without building its array: a comparison,
//! `BETWEEN` or `IN` list of a column of an integer-valued type (integers, dates, times,
//! timestamps, durations, decimals) with literals of the column's own type, and `IS [NOT]
//! NULL` of any column. Decimals are compared as their unscaled integers at the width they
//! are stored in (often 4 or 8 bytes, not 16), so a filter-only decimal column is never
//! widened. These are the shapes DataFusion's simplifier leaves for most predicates
//! (`l_shipdate < DATE '1995-01-01'`, `l_discount BETWEEN 0.05 AND 0.07`); every other
//! conjunct is evaluated by DataFusion's physical expression on the array.
//!
//! SQL's rule: a row is kept only where the conjunct is TRUE, so a NULL value fails every
//! comparison and `IN` list.

use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Schema};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::expr::{Between, InList};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

use crate::column::{PartRole, PlainNode};

/// A test of one column's values.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum PlainTest {
    /// `lo <= value <= hi` (bounds in the column's integer domain; empty when `lo > hi`).
    Range { lo: i128, hi: i128 },
    /// `value <> x`.
    NotEqual(i128),
    /// `value IN (...)`, or `NOT IN` when `negated` (the list sorted, without NULLs).
    In { values: Vec<i128>, negated: bool },
    /// `IS NULL`, or `IS NOT NULL` when `negated`.
    IsNull { negated: bool },
}

/// The column (by name) and test of `conjunct` when it has one of the shapes above over a
/// column of `schema`.
pub(crate) fn plain_test(conjunct: &Expr, schema: &Schema) -> Option<(String, PlainTest)> {
    match conjunct {
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
            let Expr::Column(column) = inner.as_ref() else {
                return None;
            };
            schema.field_with_name(&column.name).ok()?;
            let negated = matches!(conjunct, Expr::IsNotNull(_));
            Some((column.name.clone(), PlainTest::IsNull { negated }))
        }
        Expr::BinaryExpr(BinaryExpr {
            op: Operator::Or, ..
        }) => equalities_of_one_column(conjunct, schema),
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => {
            let (column, op, value) = match (left.as_ref(), right.as_ref()) {
                (Expr::Column(c), Expr::Literal(v, _)) => (c, *op, v),
                (Expr::Literal(v, _), Expr::Column(c)) => (c, op.swap()?, v),
                _ => return None,
            };
            let ty = integer_column(&column.name, schema)?;
            let x = integer_value(value, ty)?;
            let test = match op {
                Operator::Eq => PlainTest::Range { lo: x, hi: x },
                Operator::NotEq => PlainTest::NotEqual(x),
                Operator::Lt => PlainTest::Range {
                    lo: i128::MIN,
                    hi: x.checked_sub(1)?,
                },
                Operator::LtEq => PlainTest::Range {
                    lo: i128::MIN,
                    hi: x,
                },
                Operator::Gt => PlainTest::Range {
                    lo: x.checked_add(1)?,
                    hi: i128::MAX,
                },
                Operator::GtEq => PlainTest::Range {
                    lo: x,
                    hi: i128::MAX,
                },
                _ => return None,
            };
            Some((column.name.clone(), test))
        }
        Expr::Between(Between {
            expr,
            negated: false,
            low,
            high,
        }) => {
            let (Expr::Column(column), Expr::Literal(low, _), Expr::Literal(high, _)) =
                (expr.as_ref(), low.as_ref(), high.as_ref())
            else {
                return None;
            };
            let ty = integer_column(&column.name, schema)?;
            let test = PlainTest::Range {
                lo: integer_value(low, ty)?,
                hi: integer_value(high, ty)?,
            };
            Some((column.name.clone(), test))
        }
        Expr::InList(InList {
            expr,
            list,
            negated,
        }) => {
            let Expr::Column(column) = expr.as_ref() else {
                return None;
            };
            let ty = integer_column(&column.name, schema)?;
            let mut values = list
                .iter()
                .map(|item| match item {
                    Expr::Literal(v, _) => integer_value(v, ty),
                    _ => None,
                })
                .collect::<Option<Vec<i128>>>()?;
            values.sort_unstable();
            values.dedup();
            let test = PlainTest::In {
                values,
                negated: *negated,
            };
            Some((column.name.clone(), test))
        }
        _ => None,
    }
}

/// `x = a OR x = b OR …` as `x IN (a, b, …)`: DataFusion's simplifier writes short `IN`
/// lists that way. A NULL `x` fails both forms.
fn equalities_of_one_column(disjunction: &Expr, schema: &Schema) -> Option<(String, PlainTest)> {
    let mut pending = vec![disjunction];
    let mut name: Option<String> = None;
    let mut values = Vec::new();
    while let Some(expr) = pending.pop() {
        if let Expr::BinaryExpr(BinaryExpr {
            left,
            op: Operator::Or,
            right,
        }) = expr
        {
            pending.extend([left.as_ref(), right.as_ref()]);
            continue;
        }
        let (column, PlainTest::Range { lo, hi }) = plain_test(expr, schema)? else {
            return None;
        };
        if lo != hi || name.as_ref().is_some_and(|n| *n != column) {
            return None;
        }
        name = Some(column);
        values.push(lo);
    }
    values.sort_unstable();
    values.dedup();
    Some((
        name?,
        PlainTest::In {
            values,
            negated: false,
        },
    ))
}

/// The type of `name` in `schema` when its values are integers the plain parts hold as
/// they are (or, for decimals, narrowed and sign-extended).
fn integer_column<'a>(name: &str, schema: &'a Schema) -> Option<&'a DataType> {
    use DataType::*;
    let ty = schema.field_with_name(name).ok()?.data_type();
    matches!(
        ty,
        Int8 | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(..)
            | Duration(_)
            | Decimal32(..)
            | Decimal64(..)
            | Decimal128(..)
    )
    .then_some(ty)
}

/// `value` as an integer of `ty`'s domain: a non-NULL literal of that very type (decimals:
/// of the same scale, whose unscaled integers then compare as the decimals do).
pub(super) fn integer_value(value: &ScalarValue, ty: &DataType) -> Option<i128> {
    use ScalarValue as S;
    let same_type = value.data_type() == *ty;
    let x: i128 = match (value, ty) {
        (S::Decimal32(Some(v), _, s), DataType::Decimal32(_, scale)) if s == scale => {
            return Some((*v).into());
        }
        (S::Decimal64(Some(v), _, s), DataType::Decimal64(_, scale)) if s == scale => {
            return Some((*v).into());
        }
        (S::Decimal128(Some(v), _, s), DataType::Decimal128(_, scale)) if s == scale => {
            return Some(*v);
        }
        _ if !same_type => return None,
        (S::Int8(Some(v)), _) => (*v).into(),
        (S::Int16(Some(v)), _) => (*v).into(),
        (S::Int32(Some(v)), _) => (*v).into(),
        (S::Int64(Some(v)), _) => (*v).into(),
        (S::UInt8(Some(v)), _) => (*v).into(),
        (S::UInt16(Some(v)), _) => (*v).into(),
        (S::UInt32(Some(v)), _) => (*v).into(),
        (S::Date32(Some(v)), _) => (*v).into(),
        (S::Date64(Some(v)), _) => (*v).into(),
        (S::Time32Second(Some(v)) | S::Time32Millisecond(Some(v)), _) => (*v).into(),
        (S::Time64Microsecond(Some(v)) | S::Time64Nanosecond(Some(v)), _) => (*v).into(),
        (
            S::TimestampSecond(Some(v), _)
            | S::TimestampMillisecond(Some(v), _)
            | S::TimestampMicrosecond(Some(v), _)
            | S::TimestampNanosecond(Some(v), _),
            _,
        ) => (*v).into(),
        (
            S::DurationSecond(Some(v))
            | S::DurationMillisecond(Some(v))
            | S::DurationMicrosecond(Some(v))
            | S::DurationNanosecond(Some(v)),
            _,
        ) => (*v).into(),
        _ => return None,
    };
    Some(x)
}

/// The rows of `node` (a column of `ty`, as stored) that pass `test`; `None` when the node
/// is not in the form the test reads (the caller then evaluates the conjunct on the
/// array, whose decode names anything wrong).
pub(crate) fn evaluate(test: &PlainTest, ty: &DataType, node: &PlainNode) -> Option<BooleanBuffer> {
    let rows = node.rows;
    let validity = match node.parts.first() {
        Some(part) if part.role == PartRole::Validity => {
            if part.bytes.len() != rows.div_ceil(8) {
                return None;
            }
            Some(BooleanBuffer::new(part.bytes.clone(), 0, rows))
        }
        _ if node.null_count > 0 => return None,
        _ => None,
    };
    if let PlainTest::IsNull { negated } = test {
        return Some(match (validity, negated) {
            (Some(valid), true) => valid,
            (Some(valid), false) => !&valid,
            (None, negated) => BooleanBuffer::collect_bool(rows, |_| *negated),
        });
    }
    let values = match node.parts.as_slice() {
        [.., values] if values.role == PartRole::Values && node.children.is_empty() => values,
        _ => return None,
    };
    let width = values.width as usize;
    if values.bytes.len() != rows.checked_mul(width)? {
        return None;
    }
    let signed = !matches!(ty, DataType::UInt8 | DataType::UInt16 | DataType::UInt32);
    let passing = match (width, signed) {
        (1, true) => test_values(&values.bytes, rows, test, |b: [u8; 1]| i8::from_le_bytes(b)),
        (2, true) => test_values(&values.bytes, rows, test, i16::from_le_bytes),
        (4, true) => test_values(&values.bytes, rows, test, i32::from_le_bytes),
        (8, true) => test_values(&values.bytes, rows, test, i64::from_le_bytes),
        (16, true) => test_values(&values.bytes, rows, test, i128::from_le_bytes),
        (1, false) => test_values(&values.bytes, rows, test, |b: [u8; 1]| b[0]),
        (2, false) => test_values(&values.bytes, rows, test, u16::from_le_bytes),
        (4, false) => test_values(&values.bytes, rows, test, u32::from_le_bytes),
        _ => return None,
    };
    Some(match validity {
        Some(valid) => &passing & &valid,
        None => passing,
    })
}

/// `test` over `rows` values of `N` bytes each in `bytes` (exactly `rows * N` long).
fn test_values<const N: usize, T: Into<i128> + Copy>(
    bytes: &[u8],
    rows: usize,
    test: &PlainTest,
    read: impl Fn([u8; N]) -> T,
) -> BooleanBuffer {
    let (chunks, _) = bytes.as_chunks::<N>();
    let value = |i: usize| -> i128 { read(chunks[i]).into() };
    match test {
        PlainTest::Range { lo, hi } if lo > hi => BooleanBuffer::new_unset(rows),
        PlainTest::Range { lo, hi } if N <= 8 => {
            // Values of up to 8 bytes are tested in i64 arithmetic, one unsigned compare
            // a value; bounds beyond i64 clamp to it (or leave nothing to pass).
            let (min, max) = (i128::from(i64::MIN), i128::from(i64::MAX));
            if *lo > max || *hi < min {
                return BooleanBuffer::new_unset(rows);
            }
            let (lo, hi) = ((*lo).max(min) as i64, (*hi).min(max) as i64);
            let span = hi.wrapping_sub(lo) as u64;
            BooleanBuffer::collect_bool(rows, |i| {
                let v = read(chunks[i]).into() as i64;
                (v.wrapping_sub(lo) as u64) <= span
            })
        }
        PlainTest::Range { lo, hi } => {
            BooleanBuffer::collect_bool(rows, |i| (*lo..=*hi).contains(&value(i)))
        }
        PlainTest::NotEqual(x) => BooleanBuffer::collect_bool(rows, |i| value(i) != *x),
        PlainTest::In { values, negated } => BooleanBuffer::collect_bool(rows, |i| {
            values.binary_search(&value(i)).is_ok() != *negated
        }),
        PlainTest::IsNull { .. } => unreachable!("answered from the validity alone"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::plain;
    use arrow::array::{Array, ArrayRef, Decimal128Array, Int32Array, UInt8Array};
    use arrow::datatypes::Field;
    use datafusion::prelude::{col, lit};
    use std::sync::Arc;

    fn passing(expr: Expr, array: ArrayRef) -> Vec<bool> {
        let schema = Schema::new(vec![Field::new("x", array.data_type().clone(), true)]);
        let (name, test) = plain_test(&expr, &schema).expect("a plain test");
        assert_eq!(name, "x");
        let node = plain::encode(array.as_ref()).unwrap();
        evaluate(&test, array.data_type(), &node)
            .unwrap()
            .iter()
            .collect()
    }

    #[test]
    fn comparisons_between_and_in_lists_drop_nulls() {
        let ints: ArrayRef = Arc::new(Int32Array::from(vec![
            Some(-5),
            None,
            Some(0),
            Some(7),
            Some(i32::MAX),
        ]));
        let run = |e: Expr| passing(e, ints.clone());
        assert_eq!(run(col("x").lt(lit(0))), [true, false, false, false, false]);
        assert_eq!(
            run(lit(0).lt_eq(col("x"))),
            [false, false, true, true, true]
        );
        assert_eq!(
            run(col("x").not_eq(lit(7))),
            [true, false, true, false, true]
        );
        assert_eq!(
            run(col("x").between(lit(-5), lit(0))),
            [true, false, true, false, false]
        );
        assert_eq!(
            run(col("x").in_list(vec![lit(7), lit(-5)], false)),
            [true, false, false, true, false]
        );
        assert_eq!(
            run(col("x").in_list(vec![lit(7), lit(-5)], true)),
            [false, false, true, false, true]
        );
        assert_eq!(
            run(col("x").eq(lit(7)).or(lit(-5).eq(col("x")))),
            [true, false, false, true, false]
        );
        assert_eq!(run(col("x").is_null()), [false, true, false, false, false]);
        assert_eq!(run(col("x").gt(lit(i32::MAX))), [false; 5]);
    }

    #[test]
    fn decimals_compare_unscaled_at_their_stored_width() {
        let decimals: ArrayRef = Arc::new(
            Decimal128Array::from(vec![5, 6, 7, 8, -1])
                .with_precision_and_scale(15, 2)
                .unwrap(),
        );
        let between = col("x").between(
            lit(ScalarValue::Decimal128(Some(5), 15, 2)),
            lit(ScalarValue::Decimal128(Some(7), 15, 2)),
        );
        assert_eq!(
            passing(between, decimals.clone()),
            [true, true, true, false, false]
        );
        // Another scale is left to DataFusion.
        let schema = Schema::new(vec![Field::new("x", decimals.data_type().clone(), true)]);
        let other_scale = col("x").lt(lit(ScalarValue::Decimal128(Some(5), 15, 3)));
        assert!(plain_test(&other_scale, &schema).is_none());
    }

    #[test]
    fn unsigned_values_are_not_read_as_negative() {
        let bytes: ArrayRef = Arc::new(UInt8Array::from(vec![0, 200, 255]));
        assert_eq!(passing(col("x").gt(lit(100u8)), bytes), [false, true, true]);
    }

    #[test]
    fn literals_of_another_type_and_other_shapes_are_left_to_datafusion() {
        let schema = Schema::new(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("f", DataType::Float64, true),
        ]);
        assert!(plain_test(&col("x").lt(lit(3i64)), &schema).is_none());
        assert!(plain_test(&col("f").lt(lit(3.0)), &schema).is_none());
        assert!(plain_test(&col("x").lt(col("x")), &schema).is_none());
        // Disjunctions other than equalities of one column.
        assert!(plain_test(&col("x").eq(lit(1)).or(col("x").lt(lit(0))), &schema).is_none());
        assert!(plain_test(&col("x").eq(lit(1)).or(col("y").eq(lit(2))), &schema).is_none());
        assert!(plain_test(&col("x").lt(lit(ScalarValue::Int32(None))), &schema).is_none());
    }
}
