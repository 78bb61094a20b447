//! A partitioned hash join's filter, evaluated by routing each row once.
//!
//! A join whose two sides are repartitioned by hash hands the scan of its probe side a
//! `CASE hash(keys) % n WHEN 0 THEN <test of partition 0> … ELSE false END`: each row is
//! tested against the build side of the partition it will be sent to. DataFusion
//! evaluates such a `CASE` branch by branch, each branch comparing the remaining rows with
//! its value, filtering them and merging its answers into the result: for 16 partitions
//! that costs more than the join's probe of the rows it saves (the `CASE` machinery is
//! then about half of a query's profile).
//!
//! [`RoutedCase`] gives the same answers in one pass: it evaluates the routing expression
//! once, buckets the rows by branch, evaluates each branch's test on its own rows only (a
//! batch of the columns the `CASE` reads, gathered once per branch) and scatters the
//! answers back.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray, BooleanArray, RecordBatch, UInt32Array};
use arrow::buffer::BooleanBuffer;
use arrow::compute::kernels::numeric::rem;
use arrow::compute::{cast, take_record_batch};
use arrow::datatypes::{DataType, UInt64Type};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Operator;
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{BinaryExpr, CaseExpr, Column, Literal};
use datafusion::physical_expr::utils::collect_columns;

use super::row_filter::true_rows;

/// A `CASE <routing> WHEN <integer literal> THEN <test> … [ELSE <test>] END` whose answers
/// are computed by routing each row once (see the module's documentation).
#[derive(Debug)]
pub(super) struct RoutedCase {
    /// The `CASE` itself, evaluated as it is when its routing gives no integers.
    case: Arc<dyn PhysicalExpr>,
    /// The columns of the scan's batches the `CASE` reads, ascending: the batch every
    /// expression below is evaluated on.
    columns: Vec<usize>,
    routing: Arc<dyn PhysicalExpr>,
    /// Each branch's routing value and its test.
    branches: Vec<(u64, Arc<dyn PhysicalExpr>)>,
    /// Which branch takes each routing value.
    routes: Routes,
    /// The test of rows no branch takes (`None`: NULL, which drops them).
    otherwise: Option<Arc<dyn PhysicalExpr>>,
    /// The routing as `dividend % modulus` (a hash partition's number), when it has that
    /// form with a positive integer literal for the modulus.
    remainder: Option<Box<Remainder>>,
}

impl RoutedCase {
    /// `filter` as a routed `CASE`, when it is one: a `CASE` at its root with a routing
    /// expression and only non-negative integer literals to compare it with.
    pub(super) fn of(filter: &Arc<dyn PhysicalExpr>) -> Option<RoutedCase> {
        let case = filter.downcast_ref::<CaseExpr>()?;
        let routing = case.expr()?.clone();
        let mut columns: Vec<usize> = collect_columns(filter).iter().map(|c| c.index()).collect();
        columns.sort_unstable();
        columns.dedup();
        let narrowed = |e: &Arc<dyn PhysicalExpr>| narrow(e, &columns);
        let mut branches = Vec::with_capacity(case.when_then_expr().len());
        for (when, then) in case.when_then_expr() {
            let value = when
                .downcast_ref::<Literal>()
                .and_then(|l| routing_value(l.value()))?;
            branches.push((value, narrowed(then)?));
        }
        let otherwise = match case.else_expr() {
            Some(e) => Some(narrowed(e)?),
            None => None,
        };
        let routing = narrowed(&routing)?;
        Some(RoutedCase {
            routes: Routes::new(&branches),
            case: filter.clone(),
            remainder: remainder(&routing).map(Box::new),
            routing,
            columns,
            branches,
            otherwise,
        })
    }

    /// The columns of the scan's batches the `CASE` reads, ascending.
    pub(super) fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Where the `CASE` is TRUE on `batch` (NULL counts as false, as in a `WHERE` clause).
    pub(super) fn truths(&self, batch: &RecordBatch) -> Result<BooleanBuffer> {
        let rows = batch.num_rows();
        let whole = batch;
        let batch = whole.project(&self.columns)?;
        let Some(bucket_of) = self.buckets(&batch)? else {
            // Casting other values to integers could match branches they do not equal.
            return Ok(true_rows(&evaluate(&self.case, whole)?));
        };
        // The rows ordered by branch (a counting sort), the rows no branch takes (NULL
        // included) last: one gather of the columns, and each branch tests a slice.
        let unrouted = self.branches.len();
        let mut starts = vec![0usize; unrouted + 2];
        for &bucket in &bucket_of {
            starts[bucket as usize + 1] += 1;
        }
        for b in 1..starts.len() {
            starts[b] += starts[b - 1];
        }
        let mut next = starts.clone();
        let mut order = vec![0u32; rows];
        for (row, &bucket) in bucket_of.iter().enumerate() {
            let at = &mut next[bucket as usize];
            order[*at] = row as u32;
            *at += 1;
        }
        let order = UInt32Array::from(order);
        let sorted = take_record_batch(&batch, &order)?;
        let mut truths = arrow::buffer::MutableBuffer::new_null(rows);
        for bucket in 0..=unrouted {
            let (start, end) = (starts[bucket], starts[bucket + 1]);
            if start == end {
                continue;
            }
            let test = match self.branches.get(bucket) {
                Some((_, test)) => test,
                None => match &self.otherwise {
                    Some(test) => test,
                    None => continue,
                },
            };
            let answers = true_rows(&evaluate(test, &sorted.slice(start, end - start))?);
            let bits = truths.as_slice_mut();
            // Only the rows that pass are visited: a join's filter passes few.
            let rows_of_branch = &order.values()[start..end];
            for i in answers.set_indices() {
                arrow::util::bit_util::set_bit(bits, rows_of_branch[i] as usize);
            }
        }
        Ok(BooleanBuffer::new(truths.into(), 0, rows))
    }

    /// Each row's branch (`branches.len()` for rows no branch takes), or `None` when the
    /// routing gives no integers. A routing of the form `e % m` (a hash partition's
    /// number) computes `e` alone; unsigned values without NULLs take the remainder here,
    /// in the same pass, others through Arrow's kernel, as the `CASE` would.
    fn buckets(&self, batch: &RecordBatch) -> Result<Option<Vec<u32>>> {
        let rows = batch.num_rows();
        let unrouted = self.branches.len() as u32;
        let routes = &self.routes;
        let routed = match &self.remainder {
            Some(remainder) => {
                let values = remainder.dividend.evaluate(batch)?.into_array(rows)?;
                if let Some(values) = values.as_primitive_opt::<UInt64Type>()
                    && values.null_count() == 0
                {
                    let modulus = remainder.modulus;
                    return Ok(Some(
                        values
                            .values()
                            .iter()
                            .map(|&v| routes.bucket(v % modulus, unrouted))
                            .collect(),
                    ));
                }
                rem(&values, &remainder.literal.to_scalar()?)?
            }
            None => self.routing.evaluate(batch)?.into_array(rows)?,
        };
        if !routed.data_type().is_integer() {
            return Ok(None);
        }
        // Negative values become NULL, which no branch's value equals.
        let routed = cast(&routed, &DataType::UInt64)?;
        let routed = routed.as_primitive::<UInt64Type>();
        Ok(Some(
            (0..rows)
                .map(|row| {
                    if routed.is_null(row) {
                        unrouted
                    } else {
                        routes.bucket(routed.value(row), unrouted)
                    }
                })
                .collect(),
        ))
    }
}

/// `test`'s answers on the rows of `batch`.
fn evaluate(test: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Result<BooleanArray> {
    let rows = batch.num_rows();
    let value = match test.downcast_ref::<Literal>() {
        // ELSE false, and a branch whose partition has no build rows.
        Some(literal) => literal.value().to_array_of_size(rows)?,
        None => test.evaluate(batch)?.into_array(rows)?,
    };
    value.as_boolean_opt().cloned().ok_or_else(|| {
        DataFusionError::Internal(format!(
            "a branch of a join's filter gave {} values, not booleans",
            value.data_type()
        ))
    })
}

/// Which branch takes a routing value: the first with that value, as in a `CASE`.
#[derive(Debug)]
enum Routes {
    /// By value, for values up to [`Routes::MOST_DIRECT`] (a hash partition's number);
    /// `u32::MAX` where no branch takes the value.
    Direct(Vec<u32>),
    Map(HashMap<u64, u32>),
}

impl Routes {
    const MOST_DIRECT: u64 = 1 << 16;

    fn new(branches: &[(u64, Arc<dyn PhysicalExpr>)]) -> Routes {
        let largest = branches.iter().map(|(v, _)| *v).max().unwrap_or(0);
        if largest < Self::MOST_DIRECT {
            let mut direct = vec![u32::MAX; largest as usize + 1];
            for (i, (value, _)) in branches.iter().enumerate().rev() {
                direct[*value as usize] = i as u32;
            }
            Routes::Direct(direct)
        } else {
            let mut map = HashMap::with_capacity(branches.len());
            for (i, (value, _)) in branches.iter().enumerate() {
                map.entry(*value).or_insert(i as u32);
            }
            Routes::Map(map)
        }
    }

    /// The branch that takes `value`, or `unrouted` when none does.
    fn bucket(&self, value: u64, unrouted: u32) -> u32 {
        match self {
            Routes::Direct(direct) => usize::try_from(value)
                .ok()
                .and_then(|v| direct.get(v))
                .map_or(unrouted, |&b| b.min(unrouted)),
            Routes::Map(map) => map.get(&value).copied().unwrap_or(unrouted),
        }
    }
}

/// A routing `dividend % literal` whose literal is a positive integer (`modulus`).
#[derive(Debug)]
struct Remainder {
    dividend: Arc<dyn PhysicalExpr>,
    literal: ScalarValue,
    modulus: u64,
}

/// `routing` as `dividend % modulus` with a positive integer literal for the modulus.
fn remainder(routing: &Arc<dyn PhysicalExpr>) -> Option<Remainder> {
    let binary = routing.downcast_ref::<BinaryExpr>()?;
    if *binary.op() != Operator::Modulo {
        return None;
    }
    let literal = binary.right().downcast_ref::<Literal>()?.value().clone();
    let modulus = routing_value(&literal).filter(|&m| m > 0)?;
    Some(Remainder {
        dividend: binary.left().clone(),
        literal,
        modulus,
    })
}

/// A routing value as the branch compares it: a non-negative integer.
fn routing_value(value: &ScalarValue) -> Option<u64> {
    match value {
        ScalarValue::UInt64(Some(v)) => Some(*v),
        ScalarValue::UInt32(Some(v)) => Some(u64::from(*v)),
        ScalarValue::UInt16(Some(v)) => Some(u64::from(*v)),
        ScalarValue::UInt8(Some(v)) => Some(u64::from(*v)),
        ScalarValue::Int64(Some(v)) => u64::try_from(*v).ok(),
        ScalarValue::Int32(Some(v)) => u64::try_from(*v).ok(),
        ScalarValue::Int16(Some(v)) => u64::try_from(*v).ok(),
        ScalarValue::Int8(Some(v)) => u64::try_from(*v).ok(),
        _ => None,
    }
}

/// `expr` reading a batch of only `columns` (ascending) of the batch it was made for.
fn narrow(expr: &Arc<dyn PhysicalExpr>, columns: &[usize]) -> Option<Arc<dyn PhysicalExpr>> {
    expr.clone()
        .transform_down(|e| {
            let Some(column) = e.downcast_ref::<Column>() else {
                return Ok(Transformed::no(e));
            };
            let index = columns.binary_search(&column.index()).map_err(|_| {
                DataFusionError::Internal(format!("column {} not collected", column.name()))
            })?;
            Ok(Transformed::yes(
                Arc::new(Column::new(column.name(), index)) as Arc<dyn PhysicalExpr>,
            ))
        })
        .map(|t| t.data)
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};
    use datafusion::physical_expr::expressions::{binary, case, col, is_null, lit};

    fn batch(keys: Vec<Option<i64>>) -> RecordBatch {
        let rows = keys.len();
        let schema = Arc::new(Schema::new(vec![
            Field::new("other", DataType::Utf8, true),
            Field::new("k", DataType::Int64, true),
        ]));
        let other: ArrayRef = Arc::new(StringArray::from_iter_values(
            (0..rows).map(|i| format!("r{i}")),
        ));
        RecordBatch::try_new(schema, vec![other, Arc::new(Int64Array::from(keys))]).unwrap()
    }

    /// `CASE k % 4 WHEN 0 THEN k < 20 WHEN 1 THEN k > 50 WHEN 3 THEN k IS NULL WHEN 1
    /// THEN true [ELSE …] END`: three partitions' tests, a partition without a branch, a
    /// repeated value (the first branch wins) and NULL keys, whose routing is NULL.
    fn partitioned(otherwise: Option<Arc<dyn PhysicalExpr>>) -> Arc<dyn PhysicalExpr> {
        let schema = batch(vec![Some(0)]).schema();
        let k = || col("k", &schema).unwrap();
        let compare = |op, v: i64| binary(k(), op, lit(v), &schema).unwrap();
        let routing = binary(k(), Operator::Modulo, lit(4i64), &schema).unwrap();
        case(
            Some(routing),
            vec![
                (lit(0i64), compare(Operator::Lt, 20)),
                (lit(1i64), compare(Operator::Gt, 50)),
                (lit(3i64), is_null(k()).unwrap()),
                (lit(1i64), lit(true)),
            ],
            otherwise,
        )
        .unwrap()
    }

    /// What DataFusion's own evaluation of `filter` keeps (NULL as false).
    fn expected(filter: &Arc<dyn PhysicalExpr>, batch: &RecordBatch) -> Vec<bool> {
        let value = filter
            .evaluate(batch)
            .unwrap()
            .into_array(batch.num_rows())
            .unwrap();
        let value = value.as_boolean();
        (0..value.len())
            .map(|i| value.is_valid(i) && value.value(i))
            .collect()
    }

    #[test]
    fn routed_answers_equal_the_case_expressions_own() {
        let schema = batch(vec![Some(0)]).schema();
        let keys: Vec<Option<i64>> = (-30..100).map(|v| (v % 7 != 0).then_some(v)).collect();
        let batch = batch(keys);
        let otherwise = [
            None,
            Some(lit(false)),
            Some(lit(true)),
            Some(lit(ScalarValue::Boolean(None))),
            Some(
                binary(
                    col("k", &schema).unwrap(),
                    Operator::GtEq,
                    lit(90i64),
                    &schema,
                )
                .unwrap(),
            ),
        ];
        for otherwise in otherwise {
            let filter = partitioned(otherwise);
            let routed = RoutedCase::of(&filter).expect("a routed CASE");
            let got: Vec<bool> = routed.truths(&batch).unwrap().iter().collect();
            assert_eq!(got, expected(&filter, &batch), "{filter}");
        }
        // Every row in one branch, and no rows at all.
        let filter = partitioned(Some(lit(false)));
        let routed = RoutedCase::of(&filter).unwrap();
        let zeros = self::batch((0..10).map(|i| Some(i * 4)).collect());
        let got: Vec<bool> = routed.truths(&zeros).unwrap().iter().collect();
        assert_eq!(got, expected(&filter, &zeros));
        assert_eq!(routed.truths(&self::batch(vec![])).unwrap().len(), 0);

        // Routing values too large to index branches by value.
        let k = || col("k", &schema).unwrap();
        let routing = binary(k(), Operator::Modulo, lit(100_000i64), &schema).unwrap();
        let large = case(
            Some(routing),
            vec![
                (lit(70_000i64), lit(true)),
                (
                    lit(3i64),
                    binary(k(), Operator::Gt, lit(0i64), &schema).unwrap(),
                ),
            ],
            Some(lit(false)),
        )
        .unwrap();
        let keys = [70_000, 170_000, 3, -3, 100_003, 4, 69_999]
            .map(Some)
            .to_vec();
        let keyed = self::batch(keys);
        let routed = RoutedCase::of(&large).unwrap();
        let got: Vec<bool> = routed.truths(&keyed).unwrap().iter().collect();
        assert_eq!(got, expected(&large, &keyed));
        assert_eq!(got, [true, true, true, false, true, false, false]);
    }

    /// A routing of unsigned values modulo a literal, as a hash partitioning's, is computed
    /// in one pass (the remainder taken while bucketing): its answers are the `CASE`'s own,
    /// for values above `i64::MAX`, a modulus that no branch covers fully, and NULLs (which
    /// take the general path).
    #[test]
    fn unsigned_remainder_routing_equals_the_case_expressions_own() {
        use arrow::array::UInt64Array;
        let schema = Arc::new(Schema::new(vec![
            Field::new("other", DataType::Utf8, true),
            Field::new("h", DataType::UInt64, true),
        ]));
        let h = || col("h", &schema).unwrap();
        let routing = binary(h(), Operator::Modulo, lit(6u64), &schema).unwrap();
        let over = |v: u64| binary(h(), Operator::Gt, lit(v), &schema).unwrap();
        let filter = case(
            Some(routing),
            vec![
                (lit(0u64), over(1 << 40)),
                (lit(2u64), lit(true)),
                (lit(5u64), over(100)),
                (lit(2u64), lit(false)),
            ],
            Some(lit(false)),
        )
        .unwrap();
        let routed = RoutedCase::of(&filter).expect("a routed CASE");
        assert!(routed.remainder.is_some());
        let values: Vec<u64> = (0..500u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i << 3))
            .chain([u64::MAX, u64::MAX - 1, 0, 1 << 63, 6 * 1000 + 5])
            .collect();
        for nulls in [false, true] {
            let keys: UInt64Array = values
                .iter()
                .enumerate()
                .map(|(i, &v)| (!nulls || i % 9 != 4).then_some(v))
                .collect();
            let rows = keys.len();
            let other: ArrayRef = Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("r{i}")),
            ));
            let batch = RecordBatch::try_new(schema.clone(), vec![other, Arc::new(keys)]).unwrap();
            let got: Vec<bool> = routed.truths(&batch).unwrap().iter().collect();
            let want = expected(&filter, &batch);
            assert_eq!(got, want, "nulls: {nulls}");
            assert!(want.iter().any(|&b| b) && want.iter().any(|&b| !b));
        }
    }

    #[test]
    fn other_shapes_are_not_routed() {
        let schema = batch(vec![Some(0)]).schema();
        let k = col("k", &schema).unwrap();
        // No routing expression (CASE WHEN <condition> …), a non-literal or negative
        // branch value, or no CASE at the root.
        let searched = case(
            None,
            vec![(
                binary(k.clone(), Operator::Lt, lit(3i64), &schema).unwrap(),
                lit(true),
            )],
            None,
        )
        .unwrap();
        assert!(RoutedCase::of(&searched).is_none());
        let by_column = case(Some(k.clone()), vec![(k.clone(), lit(true))], None).unwrap();
        assert!(RoutedCase::of(&by_column).is_none());
        let negative = case(Some(k.clone()), vec![(lit(-1i64), lit(true))], None).unwrap();
        assert!(RoutedCase::of(&negative).is_none());
        assert!(RoutedCase::of(&binary(k, Operator::Lt, lit(3i64), &schema).unwrap()).is_none());
    }
}
