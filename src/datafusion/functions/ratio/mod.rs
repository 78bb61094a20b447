//! The aggregates `colzip_ratio(column, 'codec')` and `colzip_compressed_size(column,
//! 'codec')`: a group's values compressed as one column by the column layer.
//!
//! The accumulator keeps the group's arrays and compresses them, concatenated, when the
//! group is evaluated, so that the result is exactly what `column::compress` gives for
//! the group's values in the order they arrived (see the module docs of `functions` for
//! when that is table order). Its partial state is those values as a one-element list of the
//! column's own type: merging states appends lists, which is exact (a partial ratio or
//! size could not be merged). The memory this holds is the group's values (what
//! [`Accumulator::size`] reports to DataFusion's memory pool), and evaluation briefly adds
//! their concatenation and its compressed form.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, new_empty_array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::concat;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawAggregateExpr};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Documentation, Expr, Signature};
use datafusion::physical_expr::expressions::Literal;

use super::args::{
    check_arity, check_compressible, check_string_type, codec_argument, example_value_types,
    listed_signature, literal_of, placement,
};
use crate::codec::Placement;
use crate::column::{self, CodecChoice};
use crate::gpu::Backend;

/// What the aggregate reports of the compressed group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Measure {
    /// `colzip_ratio`: plain bytes / compressed bytes, Float64.
    Ratio,
    /// `colzip_compressed_size`: bytes of codec streams, UInt64.
    CompressedSize,
}

impl Measure {
    pub(super) fn name(self) -> &'static str {
        match self {
            Measure::Ratio => "colzip_ratio",
            Measure::CompressedSize => "colzip_compressed_size",
        }
    }

    fn data_type(self) -> DataType {
        match self {
            Measure::Ratio => DataType::Float64,
            Measure::CompressedSize => DataType::UInt64,
        }
    }

    fn usage(self) -> String {
        format!("{}(column, 'codec')", self.name())
    }
}

/// The aggregate UDF of one [`Measure`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct CompressionAggregate {
    measure: Measure,
    signature: Signature,
    backend: Backend,
}

impl CompressionAggregate {
    /// The measure (which function this is) and the backend the codecs run on.
    pub(super) fn parts(&self) -> (Measure, Backend) {
        (self.measure, self.backend)
    }

    pub(super) fn new(measure: Measure, backend: Backend) -> Self {
        let examples = example_value_types()
            .into_iter()
            .map(|value| vec![value, DataType::Utf8])
            .collect();
        CompressionAggregate {
            measure,
            // Types are checked in `return_type`, with errors that name the argument.
            signature: listed_signature(examples),
            backend,
        }
    }

    /// The checks SQL planning can make on a call's logical arguments (see
    /// [`CodecLiteralPlanner`]).
    fn check_call(&self, args: &[Expr], distinct: bool) -> Result<()> {
        let name = self.measure.name();
        check_arity(name, args.len(), 2, 2, &self.measure.usage())?;
        if distinct {
            return plan_err!("{name}: DISTINCT is not supported");
        }
        codec_argument(name, literal_of(&args[1])).map(|_| ())
    }
}

impl AggregateUDFImpl for CompressionAggregate {
    fn name(&self) -> &str {
        self.measure.name()
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(match self.measure {
            Measure::Ratio => super::docs::ratio(),
            Measure::CompressedSize => super::docs::compressed_size(),
        })
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // Checked in return_type (see listed_signature).
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        let name = self.measure.name();
        check_arity(name, arg_types.len(), 2, 2, &self.measure.usage())?;
        check_compressible(name, 1, &arg_types[0])?;
        check_string_type(name, 2, "codec", &arg_types[1])?;
        Ok(self.measure.data_type())
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let values = args.input_fields[0].data_type().clone();
        Ok(vec![Arc::new(Field::new(
            format_state_name(args.name, "values"),
            DataType::List(Arc::new(Field::new_list_field(values, true))),
            true,
        ))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let name = self.measure.name();
        check_arity(name, args.exprs.len(), 2, 2, &self.measure.usage())?;
        if args.is_distinct {
            return plan_err!("{name}: DISTINCT is not supported");
        }
        // Calls built without SQL (the DataFrame API) are checked here.
        let literal = args.exprs[1].downcast_ref::<Literal>().map(Literal::value);
        let codec = codec_argument(name, literal)?;
        Ok(Box::new(GroupAccumulator {
            measure: self.measure,
            codec,
            placement: placement(self.backend)?,
            data_type: args.expr_fields[0].data_type().clone(),
            arrays: Vec::new(),
            rows: 0,
        }))
    }
}

/// Checks the codec argument of colzip's aggregates while SQL is planned, so that a bad
/// codec is an error of `SessionContext::sql` rather than of the query's execution
/// (aggregate UDFs see only argument types until their accumulator is made).
#[derive(Debug)]
pub(super) struct CodecLiteralPlanner;

impl ExprPlanner for CodecLiteralPlanner {
    fn plan_aggregate(&self, expr: RawAggregateExpr) -> Result<PlannerResult<RawAggregateExpr>> {
        if let Some(aggregate) = expr.func.inner().downcast_ref::<CompressionAggregate>() {
            aggregate.check_call(&expr.args, expr.distinct)?;
        }
        Ok(PlannerResult::Original(expr))
    }
}

/// One group's values, compressed when evaluated.
#[derive(Debug)]
struct GroupAccumulator {
    measure: Measure,
    codec: CodecChoice,
    placement: Placement,
    data_type: DataType,
    arrays: Vec<ArrayRef>,
    rows: usize,
}

impl GroupAccumulator {
    fn push(&mut self, array: ArrayRef) {
        if !array.is_empty() {
            self.rows += array.len();
            self.arrays.push(array);
        }
    }

    /// The group's values as one array, in the order they arrived.
    fn values(&self) -> Result<ArrayRef> {
        Ok(match self.arrays.as_slice() {
            [] => new_empty_array(&self.data_type),
            [one] => Arc::clone(one),
            many => concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
        })
    }

    fn null(&self) -> ScalarValue {
        match self.measure {
            Measure::Ratio => ScalarValue::Float64(None),
            Measure::CompressedSize => ScalarValue::UInt64(None),
        }
    }
}

impl Accumulator for GroupAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.push(Arc::clone(&values[0]));
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for i in 0..lists.len() {
            if lists.is_valid(i) {
                self.push(lists.value(i));
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values = self.values()?;
        let field = Arc::new(Field::new_list_field(self.data_type.clone(), true));
        let list = ListArray::try_new(
            field,
            OffsetBuffer::from_lengths([values.len()]),
            values,
            None,
        )?;
        Ok(vec![ScalarValue::List(Arc::new(list))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        // A group without rows compressed nothing: NULL, as SUM gives for no rows.
        if self.rows == 0 {
            return Ok(self.null());
        }
        let values = self.values()?;
        let compressed = column::compress_on(values.as_ref(), &self.codec, self.placement)
            .map_err(DataFusionError::from)?;
        let (plain, streams) = (compressed.plain_bytes(), compressed.compressed_bytes());
        Ok(match self.measure {
            // Only columns without any plain bytes (the Null type) compress to nothing.
            Measure::Ratio if streams == 0 => ScalarValue::Float64(None),
            Measure::Ratio => ScalarValue::Float64(Some(plain as f64 / streams as f64)),
            Measure::CompressedSize => ScalarValue::UInt64(Some(streams as u64)),
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .arrays
                .iter()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }
}
