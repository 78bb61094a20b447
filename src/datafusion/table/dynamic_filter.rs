//! Filters a join hands the scan of its probe side once its build side is known
//! (DataFusion's `DynamicFilterPhysicalExpr`: the build keys' bounds and a membership
//! test). The scan tests them on its decoding threads, on the key columns alone, before
//! the other projected columns are built ([`Snapshot`]), so neither that work nor the
//! repartition and the join above see the rows they reject; the plain memory table
//! ignores these filters. Testing a row costs about what the join's probe of it costs, so a filter
//! pays only where it drops many rows: the scan tries each on its first rows and stops
//! testing those that drop fewer than a quarter (docs/PERFORMANCE.md has the figures). A
//! partitioned join's filter, a `CASE` over each row's partition, is tested last and by
//! routing each row once (`routed_filter`).
//!
//! The filters are advisory: the join still tests every row it receives, so applying a
//! filter early, late or not at all changes the work done, never the answer.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, NullArray, RecordBatch,
    RecordBatchOptions,
};
use arrow::buffer::BooleanBuffer;
use arrow::compute::{concat, filter_record_batch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::ScalarValue;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::{DataFusionError, Result};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_expr::expressions::{CaseExpr, DynamicFilterPhysicalExpr, Literal};
use datafusion::physical_expr::utils::collect_columns;
use datafusion::physical_expr_common::physical_expr::{
    snapshot_generation, snapshot_physical_expr,
};

use super::routed_filter::RoutedCase;
use super::row_filter::true_rows;

/// The dynamic filters pushed into one scan, in the scan's output schema.
#[derive(Clone, Debug)]
pub(super) struct DynamicFilters {
    filters: Vec<Arc<dyn PhysicalExpr>>,
    /// Whether partitioned joins' filters are tested (by routing each row once).
    routed: bool,
    /// The columns of the scan's output.
    width: usize,
    /// Rows each filter has seen and dropped, over every partition of the scan.
    tally: Arc<Vec<Tally>>,
}

#[derive(Debug, Default)]
struct Tally {
    seen: AtomicU64,
    dropped: AtomicU64,
}

/// Rows a filter is tried on before the scan judges whether it pays.
const TRIAL_ROWS: u64 = 1 << 16;

impl Tally {
    /// Whether the filter has dropped too few of the rows it saw to pay for testing
    /// them: the join above tests them anyway.
    fn not_worth_it(&self) -> bool {
        let seen = self.seen.load(Ordering::Relaxed);
        seen >= TRIAL_ROWS && self.dropped.load(Ordering::Relaxed) * 4 < seen
    }

    fn add(&self, seen: usize, dropped: usize) {
        self.seen.fetch_add(seen as u64, Ordering::Relaxed);
        self.dropped.fetch_add(dropped as u64, Ordering::Relaxed);
    }
}

/// What a window's batches were filtered with: the filters' generation at the time
/// (0: not filtered).
pub(super) type Generation = u64;

/// A filter as it stands now, with its index among the scan's.
type Indexed = (usize, Test);

/// How a filter is tested.
enum Test {
    /// DataFusion's evaluation of the expression.
    Expr(Arc<dyn PhysicalExpr>),
    /// A partitioned join's `CASE`, by routing each row once.
    Routed(RoutedCase),
}

impl Test {
    /// How `filter` is tested in a scan of `width` columns; `None` when it is left to
    /// the join:
    /// - a partitioned join's, unless `routed` and the scan has columns besides the
    ///   filter's keys. Routing a row and testing it costs more than the join's probe of
    ///   it, so it pays only where the rows it drops save other work: the columns they
    ///   would not be built for, the operators before the join. A scan of the keys alone
    ///   feeds the join directly (routing it is slower: docs/PERFORMANCE.md);
    /// - a `CASE` deeper inside an expression, which DataFusion would evaluate branch by
    ///   branch, at a cost above the join's probe of the rows it saves.
    fn of(filter: Arc<dyn PhysicalExpr>, routed: bool, width: usize) -> Option<Test> {
        if routed
            && let Some(case) = RoutedCase::of(&filter)
            && case.columns().len() < width
        {
            return Some(Test::Routed(case));
        }
        (!hashes_rows(&filter)).then_some(Test::Expr(filter))
    }
}

impl Test {
    /// The columns of the scan's schema the test reads.
    fn columns(&self) -> Vec<usize> {
        match self {
            Test::Expr(filter) => collect_columns(filter).iter().map(|c| c.index()).collect(),
            Test::Routed(routed) => routed.columns().to_vec(),
        }
    }
}

impl DynamicFilters {
    /// Whether `filter` is one the scan takes: a dynamic filter at its root. Other pushed
    /// filters reach the scan through the table provider, where it says which it applies.
    pub(super) fn accepts(filter: &Arc<dyn PhysicalExpr>) -> bool {
        filter.downcast_ref::<DynamicFilterPhysicalExpr>().is_some()
    }

    /// The dynamic `filters` of a scan of `width` columns; with `routed`, partitioned
    /// joins' filters are tested too (where the scan has other columns than their keys),
    /// else they are left to the join.
    pub(super) fn new(
        filters: Vec<Arc<dyn PhysicalExpr>>,
        routed: bool,
        width: usize,
    ) -> Option<Self> {
        let tally = Arc::new(filters.iter().map(|_| Tally::default()).collect());
        (!filters.is_empty()).then_some(DynamicFilters {
            filters,
            routed,
            width,
            tally,
        })
    }

    pub(super) fn exprs(&self) -> &[Arc<dyn PhysicalExpr>] {
        &self.filters
    }

    /// The filters the scan tests as they stand now (with their index), and their
    /// generation; none while they still let every row through (a join that has not
    /// finished its build side).
    fn current(&self) -> Result<(Vec<Indexed>, Generation)> {
        let mut live = Vec::with_capacity(self.filters.len());
        let mut generation: Generation = 0;
        for (i, filter) in self.filters.iter().enumerate() {
            generation = generation.wrapping_add(snapshot_generation(filter));
            let now = snapshot_physical_expr(filter.clone())?;
            if is_true(&now) {
                continue;
            }
            if let Some(test) = Test::of(now, self.routed, self.width) {
                live.push((i, test));
            }
        }
        // The routed tests last: they hash every row, so they see only the rows the
        // others kept.
        live.sort_by_key(|(i, test)| (matches!(test, Test::Routed(_)), *i));
        let generation = if live.is_empty() {
            0
        } else {
            generation.max(1)
        };
        Ok((live, generation))
    }

    /// Whether batches filtered at `applied` would be filtered further by the filters as
    /// they stand now.
    pub(super) fn has_moved_since(&self, applied: Generation) -> Result<bool> {
        let (live, generation) = self.current()?;
        Ok(!live.is_empty() && generation != applied)
    }

    /// The filters as they stand now, to test a window's rows with before its other
    /// columns are built; `None` while they let every row through, and once every one
    /// has shown it drops too few rows to pay (its tally no longer grows then).
    pub(super) fn snapshot(&self) -> Result<Option<Snapshot>> {
        let (mut tests, generation) = self.current()?;
        tests.retain(|(i, _)| !self.tally[*i].not_worth_it());
        if tests.is_empty() {
            return Ok(None);
        }
        let mut columns: Vec<usize> = tests.iter().flat_map(|(_, t)| t.columns()).collect();
        columns.sort_unstable();
        columns.dedup();
        Ok(Some(Snapshot {
            tests,
            generation,
            columns,
        }))
    }

    /// Which rows of `keys` the filters of `snapshot` keep: `keys` has the scan's schema,
    /// with at least the columns the filters read ([`Snapshot::columns`]; the others may
    /// be [`Snapshot::stand_ins`]). Each filter is tested only on the rows the ones before
    /// it kept, and not at all once it has shown it drops too few to pay.
    pub(super) fn keep(&self, snapshot: &Snapshot, keys: &RecordBatch) -> Result<BooleanBuffer> {
        let rows = keys.num_rows();
        let mut keep = BooleanBuffer::new_set(rows);
        let mut remaining = keys.clone();
        for (i, test) in &snapshot.tests {
            let tally = &self.tally[*i];
            if tally.not_worth_it() {
                continue;
            }
            let before = remaining.num_rows();
            let truths = truths(test, &remaining)?;
            let kept = truths.count_set_bits();
            tally.add(before, before - kept);
            if kept == before {
                continue;
            }
            keep = narrow(&keep, &truths);
            if kept == 0 {
                break;
            }
            remaining = filter_record_batch(&remaining, &BooleanArray::new(truths, None))?;
        }
        Ok(keep)
    }

    /// `batches` without the rows the filters reject now, and the generation applied (0
    /// when the filters still let every row through). Returns the rows dropped too.
    ///
    /// The batches' keys are tested together, not batch by batch: each branch of a
    /// partitioned join's filter sees its share of the rows, and the fixed cost of
    /// evaluating it is paid once per window instead of once per batch.
    pub(super) fn apply(
        &self,
        batches: Vec<RecordBatch>,
    ) -> Result<(Vec<RecordBatch>, Generation, usize)> {
        let Some(snapshot) = self.snapshot()? else {
            return Ok((batches, 0, 0));
        };
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        let Some(first) = batches.first() else {
            return Ok((batches, snapshot.generation, 0));
        };
        let schema = first.schema();
        let keys = snapshot
            .columns()
            .iter()
            .map(|&c| {
                // One batch's column is handed back as it is, without a copy.
                let arrays: Vec<&dyn Array> =
                    batches.iter().map(|b| b.column(c).as_ref()).collect();
                Ok(concat(&arrays)?)
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let keep = self.keep(&snapshot, &snapshot.stand_ins(&schema, keys, rows)?)?;
        let mut dropped = 0;
        let mut at = 0;
        let mut out = Vec::with_capacity(batches.len());
        for batch in batches {
            let rows = batch.num_rows();
            let keep = keep.slice(at, rows);
            at += rows;
            let kept = keep.count_set_bits();
            dropped += rows - kept;
            if kept == rows {
                out.push(batch);
            } else if kept > 0 {
                out.push(filter_record_batch(&batch, &BooleanArray::new(keep, None))?);
            }
        }
        Ok((out, snapshot.generation, dropped))
    }
}

/// The dynamic filters as they stood when a window was tested.
pub(super) struct Snapshot {
    tests: Vec<Indexed>,
    generation: Generation,
    /// The columns of the scan's schema the filters read, ascending.
    columns: Vec<usize>,
}

impl Snapshot {
    /// The columns of the scan's schema the filters read, ascending.
    pub(super) fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// The generation of the filters tested.
    pub(super) fn generation(&self) -> Generation {
        self.generation
    }

    /// A batch of `rows` rows in the shape of `schema` (the scan's) holding `keys` (the
    /// arrays of [`Self::columns`], in that order) and, in the place of every other
    /// column, a typeless column of NULLs that costs nothing to make: what
    /// [`DynamicFilters::keep`] tests, since the filters read no other column.
    pub(super) fn stand_ins(
        &self,
        schema: &SchemaRef,
        keys: Vec<ArrayRef>,
        rows: usize,
    ) -> Result<RecordBatch> {
        let mut keys = keys.into_iter();
        let mut fields = Vec::with_capacity(schema.fields().len());
        let mut arrays = Vec::with_capacity(schema.fields().len());
        for (i, field) in schema.fields().iter().enumerate() {
            if self.columns.binary_search(&i).is_ok() {
                let array = keys.next().ok_or_else(|| {
                    DataFusionError::Internal("fewer key arrays than the filters read".into())
                })?;
                fields.push(field.clone());
                arrays.push(array);
            } else {
                fields.push(Arc::new(Field::new(field.name(), DataType::Null, true)));
                arrays.push(Arc::new(NullArray::new(rows)) as ArrayRef);
            }
        }
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        Ok(RecordBatch::try_new_with_options(
            Arc::new(Schema::new(fields)),
            arrays,
            &options,
        )?)
    }
}

/// The rows of `outer`'s set bits that `inner` keeps: `inner` has a bit for each set bit
/// of `outer`, in order.
pub(super) fn narrow(outer: &BooleanBuffer, inner: &BooleanBuffer) -> BooleanBuffer {
    if inner.len() == outer.len() {
        return outer & inner;
    }
    let mut out = BooleanBufferBuilder::new(outer.len());
    out.append_n(outer.len(), false);
    for (row, kept) in outer.set_indices().zip(inner.iter()) {
        if kept {
            out.set_bit(row, true);
        }
    }
    out.finish()
}

/// Where `test` is TRUE on `batch` (NULL counts as false, as in a WHERE clause).
fn truths(test: &Test, batch: &RecordBatch) -> Result<BooleanBuffer> {
    let rows = batch.num_rows();
    match test {
        Test::Expr(filter) => {
            let keep = filter.evaluate(batch)?.into_array(rows)?;
            let keep = keep.as_boolean_opt().ok_or_else(|| {
                DataFusionError::Internal(format!(
                    "a dynamic filter gave {} values, not booleans",
                    keep.data_type()
                ))
            })?;
            Ok(true_rows(keep))
        }
        Test::Routed(routed) => routed.truths(batch),
    }
}

/// Whether `filter` picks its test by a `CASE` over the rows (a partitioned join's).
fn hashes_rows(filter: &Arc<dyn PhysicalExpr>) -> bool {
    let mut found = false;
    let _ = filter.apply(|e| {
        found = e.downcast_ref::<CaseExpr>().is_some();
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

impl std::fmt::Display for DynamicFilters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, filter) in self.filters.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{filter}")?;
        }
        Ok(())
    }
}

fn is_true(expr: &Arc<dyn PhysicalExpr>) -> bool {
    expr.downcast_ref::<Literal>()
        .is_some_and(|l| l.value() == &ScalarValue::Boolean(Some(true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;
    use arrow::datatypes::{Field, Schema};
    use datafusion::logical_expr::Operator;
    use datafusion::physical_expr::expressions::{binary, case, col, lit};

    fn batch(values: impl Iterator<Item = i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from_iter_values(values))]).unwrap()
    }

    fn compare(op: Operator, value: i64) -> Arc<dyn PhysicalExpr> {
        let schema = batch(0..1).schema();
        binary(col("a", &schema).unwrap(), op, lit(value), &schema).unwrap()
    }

    fn dynamic() -> (Arc<DynamicFilterPhysicalExpr>, DynamicFilters) {
        dynamic_routed(true, 2)
    }

    /// A filter over column `a` of a scan of `width` columns (the batches tested hold
    /// `a` alone: the filters read nothing else).
    fn dynamic_routed(
        routed: bool,
        width: usize,
    ) -> (Arc<DynamicFilterPhysicalExpr>, DynamicFilters) {
        let schema = batch(0..1).schema();
        let filter = Arc::new(DynamicFilterPhysicalExpr::new(
            vec![col("a", &schema).unwrap()],
            lit(true),
        ));
        let filters =
            DynamicFilters::new(vec![filter.clone() as Arc<dyn PhysicalExpr>], routed, width)
                .unwrap();
        (filter, filters)
    }

    #[test]
    fn rows_pass_until_the_join_has_its_filter_then_only_those_it_keeps() {
        let (filter, filters) = dynamic();
        let (out, generation, dropped) = filters.apply(vec![batch(0..100)]).unwrap();
        assert_eq!((out[0].num_rows(), generation, dropped), (100, 0, 0));
        assert!(!filters.has_moved_since(0).unwrap());

        filter.update(compare(Operator::Lt, 10)).unwrap();
        assert!(filters.has_moved_since(0).unwrap());
        let (out, generation, dropped) = filters.apply(vec![batch(0..100)]).unwrap();
        assert_eq!((out[0].num_rows(), dropped), (10, 90));
        assert!(!filters.has_moved_since(generation).unwrap());
        // A batch whose rows all fail is left out.
        let (out, _, dropped) = filters.apply(vec![batch(50..60)]).unwrap();
        assert!(out.is_empty());
        assert_eq!(dropped, 10);

        filter.update(compare(Operator::Lt, 5)).unwrap();
        assert!(filters.has_moved_since(generation).unwrap());
    }

    #[test]
    fn a_filter_that_drops_few_rows_stops_being_tested_after_its_trial() {
        let (filter, filters) = dynamic();
        // Drops 1 row in 10: under the quarter a filter must drop to pay.
        filter.update(compare(Operator::GtEq, 10)).unwrap();
        let rows = TRIAL_ROWS as i64;
        let (_, _, dropped) = filters.apply(vec![batch(0..100), batch(0..rows)]).unwrap();
        assert_eq!(dropped, 20);
        let (out, _, dropped) = filters.apply(vec![batch(0..100)]).unwrap();
        assert_eq!((out[0].num_rows(), dropped), (100, 0));
    }

    #[test]
    fn a_filter_that_drops_many_rows_keeps_being_tested() {
        let (filter, filters) = dynamic();
        filter.update(compare(Operator::Lt, 10)).unwrap();
        let rows = TRIAL_ROWS as i64;
        filters.apply(vec![batch(0..rows)]).unwrap();
        let (out, _, dropped) = filters.apply(vec![batch(0..100)]).unwrap();
        assert_eq!((out[0].num_rows(), dropped), (10, 90));
    }

    /// The batches of a window are tested together: each keeps exactly its own rows that
    /// pass, in order, a wholly rejected batch is left out, and a batch that loses no row
    /// (an empty one too) is handed on as it was.
    #[test]
    fn a_windows_batches_are_tested_together_and_each_keeps_its_own_rows() {
        let (filter, filters) = dynamic();
        let schema = batch(0..1).schema();
        let routing = binary(
            col("a", &schema).unwrap(),
            Operator::Modulo,
            lit(3i64),
            &schema,
        )
        .unwrap();
        // The CASE's own answer: a branch's test where one takes the row, else the ELSE's.
        let passes = |v: i64| match v % 3 {
            0 => v < 40,
            2 => v >= 70,
            _ => v < 3,
        };
        let by_case = case(
            Some(routing),
            vec![
                (lit(0i64), compare(Operator::Lt, 40)),
                (lit(2i64), compare(Operator::GtEq, 70)),
            ],
            Some(compare(Operator::Lt, 3)),
        )
        .unwrap();
        filter.update(by_case).unwrap();
        let spans = [0..2, 3..3, 2..37, 41..43, 37..41, 43..120, 120..121];
        let batches: Vec<RecordBatch> = spans.iter().map(|r| batch(r.clone())).collect();
        let untouched = batches[0].column(0).clone();
        let (out, generation, dropped) = filters.apply(batches).unwrap();
        assert_ne!(generation, 0);
        let expected: Vec<Vec<i64>> = spans
            .iter()
            .filter_map(|r| {
                let kept: Vec<i64> = r.clone().filter(|&v| passes(v)).collect();
                (r.is_empty() || !kept.is_empty()).then_some(kept)
            })
            .collect();
        let got: Vec<Vec<i64>> = out
            .iter()
            .map(|b| {
                b.column(0)
                    .as_primitive::<arrow::datatypes::Int64Type>()
                    .values()
                    .to_vec()
            })
            .collect();
        assert_eq!(got, expected);
        let total: usize = spans.iter().map(|r| r.clone().count()).sum();
        let kept: usize = expected.iter().map(Vec::len).sum();
        assert_eq!(dropped, total - kept);
        // 0..2 passes whole: the same array, not a filtered copy.
        assert!(Arc::ptr_eq(out[0].column(0), &untouched));
    }

    #[test]
    fn a_partitioned_joins_filter_is_tested_by_routing_when_asked_and_a_deeper_case_left_out() {
        let (filter, filters) = dynamic();
        let schema = batch(0..1).schema();
        let routing = binary(
            col("a", &schema).unwrap(),
            Operator::Modulo,
            lit(2i64),
            &schema,
        )
        .unwrap();
        // Even rows below 10 and odd rows of 50 or more.
        let by_case = case(
            Some(routing),
            vec![
                (lit(0i64), compare(Operator::Lt, 10)),
                (lit(1i64), compare(Operator::GtEq, 50)),
            ],
            Some(lit(false)),
        )
        .unwrap();
        filter.update(by_case.clone()).unwrap();
        let (out, generation, dropped) = filters.apply(vec![batch(0..100)]).unwrap();
        let kept = out[0]
            .column(0)
            .as_primitive::<arrow::datatypes::Int64Type>();
        let expected: Vec<i64> = (0..100)
            .filter(|v| (v % 2 == 0 && *v < 10) || (v % 2 == 1 && *v >= 50))
            .collect();
        assert_eq!(kept.values().to_vec(), expected);
        assert_eq!(dropped, 100 - expected.len());
        assert_ne!(generation, 0);

        // Without routing, the same filter is left to the join; and so it is in a scan
        // of its key alone, which feeds the join directly.
        for (routed, width) in [(false, 2), (true, 1)] {
            let (unrouted, unrouted_filters) = dynamic_routed(routed, width);
            unrouted.update(by_case.clone()).unwrap();
            let (out, generation, dropped) = unrouted_filters.apply(vec![batch(0..100)]).unwrap();
            assert_eq!((out[0].num_rows(), generation, dropped), (100, 0, 0));
        }

        let deeper = binary(compare(Operator::GtEq, 0), Operator::And, by_case, &schema).unwrap();
        filter.update(deeper).unwrap();
        let (out, generation, dropped) = filters.apply(vec![batch(0..100)]).unwrap();
        assert_eq!((out[0].num_rows(), generation, dropped), (100, 0, 0));
    }
}
