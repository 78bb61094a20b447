//! The filters a compressed scan evaluates itself, so that DataFusion drops its own filter
//! above the scan (`Exact` pushdown): comparisons, `BETWEEN`, `IN` lists, `IS [NOT] NULL`,
//! `LIKE` with a literal pattern, boolean columns, and `AND` / `OR` / `NOT` of these, over
//! columns and literals of integer, float, decimal, date, time, timestamp, boolean and
//! string types (and casts between them, which type coercion inserts).
//!
//! How the scan evaluates them is the `row_filter` module's.

use arrow::datatypes::{DataType, Schema};
use datafusion::common::Column;
use datafusion::logical_expr::expr::{Between, InList, Like};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator};

/// Whether the scan evaluates `filter` itself (pushed down as `Exact`), judged against the
/// table's `schema`.
pub(crate) fn evaluable(filter: &Expr, schema: &Schema) -> bool {
    predicate(filter, schema)
}

/// A boolean expression the scan evaluates.
fn predicate(expr: &Expr, schema: &Schema) -> bool {
    match expr {
        Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
            Operator::And | Operator::Or => predicate(left, schema) && predicate(right, schema),
            Operator::Eq
            | Operator::NotEq
            | Operator::Lt
            | Operator::LtEq
            | Operator::Gt
            | Operator::GtEq
            | Operator::IsDistinctFrom
            | Operator::IsNotDistinctFrom => {
                operand(left, schema)
                    && operand(right, schema)
                    && (reads_a_column(left) || reads_a_column(right))
            }
            _ => false,
        },
        Expr::Not(inner)
        | Expr::IsTrue(inner)
        | Expr::IsFalse(inner)
        | Expr::IsUnknown(inner)
        | Expr::IsNotTrue(inner)
        | Expr::IsNotFalse(inner)
        | Expr::IsNotUnknown(inner) => predicate(inner, schema),
        Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
            operand(inner, schema) && reads_a_column(inner)
        }
        Expr::Between(Between {
            expr, low, high, ..
        }) => {
            operand(expr, schema)
                && reads_a_column(expr)
                && literal(low).is_some()
                && literal(high).is_some()
        }
        Expr::InList(InList { expr, list, .. }) => {
            operand(expr, schema)
                && reads_a_column(expr)
                && !list.is_empty()
                && list.iter().all(|e| literal(e).is_some())
        }
        Expr::Like(Like {
            expr,
            pattern,
            escape_char,
            case_insensitive,
            ..
        }) => {
            !case_insensitive
                && escape_char.is_none()
                && operand(expr, schema)
                && reads_a_column(expr)
                && matches!(
                    literal(pattern),
                    Some(DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
                )
        }
        Expr::Column(c) => column_type(c, schema) == Some(&DataType::Boolean),
        _ => false,
    }
}

/// A value a comparison reads: a column or a literal of a supported type, or a cast of
/// one to a supported type.
fn operand(expr: &Expr, schema: &Schema) -> bool {
    match expr {
        Expr::Column(c) => column_type(c, schema).is_some_and(supported),
        Expr::Literal(..) => literal(expr).is_some(),
        Expr::Cast(cast) => supported(cast.field.data_type()) && operand(&cast.expr, schema),
        Expr::TryCast(cast) => supported(cast.field.data_type()) && operand(&cast.expr, schema),
        _ => false,
    }
}

/// The type of a literal of a supported type (a typed NULL included).
fn literal(expr: &Expr) -> Option<DataType> {
    match expr {
        Expr::Literal(value, _) => {
            let ty = value.data_type();
            (supported(&ty) || ty == DataType::Null).then_some(ty)
        }
        _ => None,
    }
}

fn reads_a_column(expr: &Expr) -> bool {
    match expr {
        Expr::Column(_) => true,
        Expr::Cast(cast) => reads_a_column(&cast.expr),
        Expr::TryCast(cast) => reads_a_column(&cast.expr),
        _ => false,
    }
}

fn column_type<'a>(column: &Column, schema: &'a Schema) -> Option<&'a DataType> {
    schema
        .field_with_name(&column.name)
        .ok()
        .map(|f| f.data_type())
}

/// The value types a pushed filter may compare.
fn supported(ty: &DataType) -> bool {
    use DataType::*;
    matches!(
        ty,
        Boolean
            | Int8
            | Int16
            | Int32
            | Int64
            | UInt8
            | UInt16
            | UInt32
            | UInt64
            | Float16
            | Float32
            | Float64
            | Decimal32(..)
            | Decimal64(..)
            | Decimal128(..)
            | Decimal256(..)
            | Date32
            | Date64
            | Time32(_)
            | Time64(_)
            | Timestamp(..)
            | Utf8
            | LargeUtf8
            | Utf8View
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::datatypes::Field;
    use datafusion::logical_expr::{col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("f", DataType::Float64, true),
            Field::new("s", DataType::Utf8View, true),
            Field::new("b", DataType::Boolean, true),
            Field::new("d", DataType::Decimal128(15, 2), true),
            Field::new("l", DataType::new_list(DataType::Int32, true), true),
        ])
    }

    #[test]
    fn the_listed_shapes_are_evaluable_and_others_are_not() {
        let schema = schema();
        let yes = [
            col("i").gt(lit(3i64)),
            lit(3i64).lt_eq(col("i")),
            col("i").eq(col("f")),
            col("f").gt(lit(-0.0f64)).or(col("i").is_null()),
            col("d").between(lit(1i64), lit(5i64)),
            col("s").in_list(vec![lit("a"), lit("")], true),
            col("s").like(lit("ab%")),
            col("b"),
            col("b").is_not_true(),
            col("i").is_not_null().and(col("s").not_eq(lit("x"))),
        ];
        let no = [
            col("l").is_null(),
            (col("i") + lit(1i64)).gt(lit(3i64)),
            col("s").ilike(lit("ab%")),
            col("s").like(col("s")),
            col("i").in_list(vec![col("i")], false),
            lit(1i64).eq(lit(1i64)),
            datafusion::functions::expr_fn::upper(col("s")).eq(lit("A")),
            col("missing").eq(lit(1i64)),
        ];
        for e in &yes {
            assert!(evaluable(e, &schema), "{e}");
        }
        for e in &no {
            assert!(!evaluable(e, &schema), "{e}");
        }
    }
}
