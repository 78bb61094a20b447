//! How a compressed scan evaluates its exact filters, block by block, on the decoded
//! columns: the conjunction is split into conjuncts, each evaluated the cheapest way it
//! can be, and a row passes where every conjunct is TRUE (NULL drops it, as `WHERE` does).
//!
//! - A comparison, `BETWEEN`, `IN` list or `IS [NOT] NULL` of one integer-valued column with
//!   literals of its type is tested on the column's plain parts (`plain_test`).
//! - Any other conjunct of one column whose block stores it as a dictionary is evaluated
//!   once per dictionary value (and once for NULL), and each row takes its value's answer:
//!   equality, `IN` and `LIKE` on low-cardinality strings never make a string.
//! - Every other conjunct is DataFusion's own physical expression on the arrays.
//!
//! Each way answers exactly what DataFusion's expression does (NULL, NaN, ±0.0, decimal
//! scales, collation of strings): the first two only in the shapes where that is plain.
//! Conjuncts are evaluated cheapest first, and a block stops at the first that leaves no
//! row.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, RecordBatch, RecordBatchOptions, new_null_array,
};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use datafusion::catalog::Session;
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::Expr;
use datafusion::logical_expr::expr_rewriter::unnormalize_col;
use datafusion::logical_expr::utils::{expr_to_columns, split_conjunction};
use datafusion::physical_expr::PhysicalExpr;

use super::decoded::DecodedBlock;
use super::dictionary;
use super::plain_test::{self, PlainTest};

/// The conjunction of a scan's exact filters, ready to evaluate on blocks.
pub(crate) struct RowFilter {
    /// The table columns the filters read, ascending.
    columns: Vec<usize>,
    /// Cheapest first.
    conjuncts: Vec<Conjunct>,
    /// The logical filters, for display.
    text: String,
}

/// One conjunct of the filter.
struct Conjunct {
    /// The table columns it reads, ascending.
    columns: Vec<usize>,
    /// Those columns' fields in the table's types: what `predicate` is evaluated on.
    schema: SchemaRef,
    predicate: Arc<dyn PhysicalExpr>,
    /// The test on the plain parts, for a conjunct of that shape.
    plain: Option<PlainTest>,
    text: String,
}

impl RowFilter {
    /// The filter of `filters` (each `filter::evaluable`) over `table`'s columns, `None`
    /// when there are none.
    pub(crate) fn try_new(
        state: &dyn Session,
        table: &SchemaRef,
        filters: &[Expr],
    ) -> Result<Option<RowFilter>> {
        let filters: Vec<Expr> = filters.iter().cloned().map(unnormalize_col).collect();
        let mut conjuncts = Vec::new();
        for filter in &filters {
            for conjunct in split_conjunction(filter) {
                conjuncts.push(Conjunct::try_new(state, table, conjunct)?);
            }
        }
        if conjuncts.is_empty() {
            return Ok(None);
        }
        // Plain tests first, then conjuncts of one column, then the rest.
        conjuncts.sort_by_key(|c| match (&c.plain, c.columns.len()) {
            (Some(_), _) => 0,
            (None, 1) => 1,
            _ => 2,
        });
        let mut columns: Vec<usize> = conjuncts.iter().flat_map(|c| c.columns.clone()).collect();
        columns.sort_unstable();
        columns.dedup();
        // The conjunction's own display puts parentheses where precedence needs them.
        let text = datafusion::logical_expr::utils::conjunction(filters)
            .map(|e| e.to_string())
            .unwrap_or_default();
        Ok(Some(RowFilter {
            columns,
            conjuncts,
            text,
        }))
    }

    /// The table columns the filter reads, ascending.
    pub(crate) fn columns(&self) -> &[usize] {
        &self.columns
    }

    /// Each conjunct as its one column, its test on the plain parts where it has one, and
    /// its index for [`Self::answers_on_values`], when every conjunct reads one column
    /// (the filter can then be evaluated on the GPU: `device_filter`; a conjunct without a
    /// plain test there, only on a column a block stores as a dictionary).
    pub(crate) fn one_column_conjuncts(&self) -> Option<Vec<(usize, Option<&PlainTest>, usize)>> {
        self.conjuncts
            .iter()
            .enumerate()
            .map(|(i, c)| match c.columns.as_slice() {
                &[column] => Some((column, c.plain.as_ref(), i)),
                _ => None,
            })
            .collect()
    }

    /// Whether conjunct `index` (of one column) is TRUE for each of `values`, that
    /// column's values in the table's type (a block's dictionary values).
    pub(crate) fn answers_on_values(&self, index: usize, values: ArrayRef) -> Result<Vec<bool>> {
        let conjunct = self.conjuncts.get(index).ok_or_else(|| {
            DataFusionError::Internal(format!("the pushed filter has no conjunct {index}"))
        })?;
        let rows = values.len();
        // A dictionary's values may hold a NULL whatever the column's nullability.
        let field = conjunct
            .schema
            .field(0)
            .as_ref()
            .clone()
            .with_nullable(true);
        let schema = Arc::new(Schema::new(vec![field]));
        Ok(conjunct
            .truths(&schema, vec![values], rows)?
            .iter()
            .collect())
    }

    /// Which rows of `block` pass (it holds every column of [`Self::columns`]).
    pub(crate) fn evaluate(&self, block: &DecodedBlock<'_>) -> Result<BooleanBuffer> {
        let rows = block.rows();
        let mut passing: Option<BooleanBuffer> = None;
        for conjunct in &self.conjuncts {
            if passing.as_ref().is_some_and(|p| p.count_set_bits() == 0) {
                break;
            }
            let these = conjunct.evaluate(block)?;
            if these.len() != rows {
                return Err(DataFusionError::Internal(format!(
                    "the pushed filter {} gave {} rows for {rows}",
                    conjunct.text,
                    these.len()
                )));
            }
            passing = Some(match passing {
                Some(p) => &p & &these,
                None => these,
            });
        }
        Ok(passing.unwrap_or_else(|| BooleanBuffer::new_set(rows)))
    }
}

impl Conjunct {
    fn try_new(state: &dyn Session, table: &SchemaRef, expr: &Expr) -> Result<Conjunct> {
        let mut used = HashSet::new();
        expr_to_columns(expr, &mut used)?;
        let mut columns = used
            .iter()
            .map(|c| table.index_of(&c.name).map_err(DataFusionError::from))
            .collect::<Result<Vec<usize>>>()?;
        columns.sort_unstable();
        columns.dedup();
        let schema = Arc::new(table.project(&columns)?);
        let df_schema = DFSchema::try_from(schema.as_ref().clone())?;
        let plain = plain_test::plain_test(expr, &schema).map(|(_, test)| test);
        let predicate = state.create_physical_expr(expr.clone(), &df_schema)?;
        Ok(Conjunct {
            columns,
            schema,
            predicate,
            plain,
            text: expr.to_string(),
        })
    }

    /// Which rows of `block` make this conjunct TRUE.
    fn evaluate(&self, block: &DecodedBlock<'_>) -> Result<BooleanBuffer> {
        if let [column] = self.columns[..] {
            let stored = block.stored_type(column);
            if let Some(test) = &self.plain
                && stored == block.table_type(column)
                && let Some(passing) = plain_test::evaluate(test, stored, block.node(column)?)
            {
                return Ok(passing);
            }
            if matches!(stored, DataType::Dictionary(..)) {
                return self.evaluate_on_dictionary(block, column);
            }
        }
        let arrays = self
            .columns
            .iter()
            .map(|&c| block.array(c))
            .collect::<Result<Vec<ArrayRef>>>()?;
        self.truths(&self.schema, arrays, block.rows())
    }

    /// The conjunct evaluated on each value of the dictionary `column`'s block stores (and
    /// on NULL), each row taking its key's answer.
    fn evaluate_on_dictionary(
        &self,
        block: &DecodedBlock<'_>,
        column: usize,
    ) -> Result<BooleanBuffer> {
        let stored = block.stored_array(column)?;
        let keyed = stored.as_any_dictionary();
        let values = dictionary::in_table_type(keyed.values().clone(), block.table_type(column))
            .map_err(DataFusionError::from)?;
        let null = new_null_array(values.data_type(), 1);
        let candidates = arrow::compute::concat(&[values.as_ref(), null.as_ref()])?;
        // The NULL candidate needs a nullable field, whatever the column's.
        let field = self.schema.field(0).as_ref().clone().with_nullable(true);
        let schema = Arc::new(Schema::new(vec![field]));
        let answers = self.truths(&schema, vec![candidates], values.len() + 1)?;
        let null_answer = answers.value(values.len());
        let keys = keyed.normalized_keys();
        let nulls = keyed.nulls();
        Ok(BooleanBuffer::collect_bool(keys.len(), |i| {
            if nulls.is_some_and(|n| n.is_null(i)) {
                null_answer
            } else {
                answers.value(keys[i])
            }
        }))
    }

    /// Where the predicate is TRUE on `arrays` (this conjunct's columns as `schema` has
    /// them, `rows` rows).
    fn truths(
        &self,
        schema: &SchemaRef,
        arrays: Vec<ArrayRef>,
        rows: usize,
    ) -> Result<BooleanBuffer> {
        let options = RecordBatchOptions::new().with_row_count(Some(rows));
        let batch = RecordBatch::try_new_with_options(schema.clone(), arrays, &options)?;
        let value = self.predicate.evaluate(&batch)?.into_array(rows)?;
        let mask = value.as_boolean_opt().ok_or_else(|| {
            DataFusionError::Internal(format!(
                "the pushed filter {} gave {} instead of booleans",
                self.text,
                value.data_type()
            ))
        })?;
        Ok(true_rows(mask))
    }
}

/// The rows where `answers` is TRUE: NULL counts as false, as in a `WHERE` clause.
pub(super) fn true_rows(answers: &BooleanArray) -> BooleanBuffer {
    match answers.nulls() {
        Some(nulls) if nulls.null_count() > 0 => answers.values() & nulls.inner(),
        _ => answers.values().clone(),
    }
}

impl fmt::Display for RowFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
