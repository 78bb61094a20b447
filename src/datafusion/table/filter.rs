//! The filters a compressed scan evaluates itself, so that DataFusion drops its own filter
//! above the scan (`Exact` pushdown): comparisons, `BETWEEN`, `IN` lists, `IS [NOT] NULL`,
//! `LIKE` with a literal pattern, boolean columns, and `AND` / `OR` / `NOT` of these, over
//! columns and literals of integer, float, decimal, date, time, timestamp, boolean and
//! string types (and casts between them, which type coercion inserts), and over a few
//! string functions of one column with literal arguments (`STRING_FUNCTIONS`, such as
//! TPC-H Q22's `substring(c_phone, 1, 2) IN (…)`). The scan evaluates every one of them
//! with DataFusion's own physical expression or, where it is plain, an equivalent test,
//! so its answers are DataFusion's.
//!
//! How the scan evaluates them is the `row_filter` module's.

use arrow::datatypes::{DataType, Schema};
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::expr::{Between, InList, Like, ScalarFunction};
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
        Expr::ScalarFunction(f) => {
            STRING_PREDICATES.contains(&f.name()) && string_function_of_a_column(f, schema)
        }
        // DataFusion's simplifier writes some predicates as a `CASE` (`v NOT LIKE '%'`
        // becomes `CASE v IS NOT NULL WHEN true THEN false END`).
        Expr::Case(case) => {
            let value = |e: &Expr| predicate(e, schema) || operand(e, schema);
            case.expr.as_deref().is_none_or(value)
                && case
                    .when_then_expr
                    .iter()
                    .all(|(when, then)| value(when) && value(then))
                && case.else_expr.as_deref().is_none_or(value)
        }
        _ => false,
    }
}

/// String functions whose value of one column a pushed filter may compare: deterministic,
/// and given that column and literals, they fail on no row that DataFusion's own filter
/// would not fail on too.
const STRING_FUNCTIONS: [&str; 13] = [
    "substr",
    "substring",
    "left",
    "right",
    "lower",
    "upper",
    "btrim",
    "ltrim",
    "rtrim",
    "length",
    "char_length",
    "character_length",
    "octet_length",
];

/// String functions that are predicates themselves.
const STRING_PREDICATES: [&str; 2] = ["starts_with", "ends_with"];

/// Whether `f` reads one column of a supported type as its first argument, and
/// literals as the rest; a substring's length, when given, is not negative (DataFusion
/// fails on one that is, and the scan, which may skip a block without testing it, would
/// not always fail alike).
fn string_function_of_a_column(f: &ScalarFunction, schema: &Schema) -> bool {
    let Some((first, rest)) = f.args.split_first() else {
        return false;
    };
    let length_not_negative = match (f.name(), rest) {
        ("substr" | "substring", [_, Expr::Literal(length, _)]) => {
            length.is_null()
                || length
                    .clone()
                    .cast_to(&DataType::Int64)
                    .is_ok_and(|v| v >= ScalarValue::Int64(Some(0)))
        }
        _ => true,
    };
    operand(first, schema)
        && reads_a_column(first)
        && rest.iter().all(|a| literal(a).is_some())
        && length_not_negative
}

/// A value a comparison reads: a column or a literal of a supported type, or a cast of
/// one to a supported type.
fn operand(expr: &Expr, schema: &Schema) -> bool {
    match expr {
        Expr::Column(c) => column_type(c, schema).is_some_and(supported),
        Expr::Literal(..) => literal(expr).is_some(),
        Expr::Cast(cast) => supported(cast.field.data_type()) && operand(&cast.expr, schema),
        Expr::TryCast(cast) => supported(cast.field.data_type()) && operand(&cast.expr, schema),
        Expr::ScalarFunction(f) => {
            STRING_FUNCTIONS.contains(&f.name()) && string_function_of_a_column(f, schema)
        }
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
        Expr::ScalarFunction(f) => f.args.first().is_some_and(reads_a_column),
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
    use datafusion::functions::expr_fn::{length, starts_with, substring, upper};
    use datafusion::logical_expr::{col, lit, when};

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
            substring(col("s"), lit(1i64), lit(2i64)).in_list(vec![lit("13"), lit("31")], false),
            length(col("s")).gt(lit(3i32)),
            starts_with(col("s"), lit("ab")),
            upper(col("s")).eq(lit("A")),
            when(col("s").is_not_null(), lit(false)).end().unwrap(),
        ];
        let no = [
            col("l").is_null(),
            (col("i") + lit(1i64)).gt(lit(3i64)),
            col("s").ilike(lit("ab%")),
            col("s").like(col("s")),
            col("i").in_list(vec![col("i")], false),
            lit(1i64).eq(lit(1i64)),
            col("missing").eq(lit(1i64)),
            // Arguments other than literals, functions not listed, no column read.
            substring(col("s"), col("i"), lit(2i64)).eq(lit("ab")),
            substring(col("s"), lit(1i64), lit(-1i64)).eq(lit("ab")),
            datafusion::functions::expr_fn::md5(col("s")).eq(lit("A")),
            upper(lit("a")).eq(lit("A")),
            starts_with(lit("abc"), lit("ab")),
            when(col("l").is_null(), lit(false)).end().unwrap(),
        ];
        for e in &yes {
            assert!(evaluable(e, &schema), "{e}");
        }
        for e in &no {
            assert!(!evaluable(e, &schema), "{e}");
        }
    }
}
