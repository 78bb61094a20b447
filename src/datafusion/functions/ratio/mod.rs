//! colzip's aggregates, in two forms:
//!
//! - `colzip_ratio(column, 'codec')` and `colzip_compressed_size(column, 'codec')` cut a
//!   group's values into chunks of about 4 MiB and compress each as one column
//!   ([`chunks`]); their partial state is three sums, so they cost a cluster's shuffle
//!   next to nothing.
//! - `colzip_ratio_exact` and `colzip_compressed_size_exact` compress the group's values
//!   as one column ([`exact`]); their partial state is the values themselves, for one
//!   process.
//!
//! Both report the column layer's plain bytes / compressed bytes, or the compressed bytes.

mod chunks;
mod exact;
mod row_bits;
#[cfg(test)]
mod test_arrays;

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{Result, ScalarValue, plan_err};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawAggregateExpr};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDFImpl, Documentation, Expr, Signature};
use datafusion::physical_expr::expressions::Literal;

use super::args::{
    check_arity, check_compressible, check_string_type, codec_argument, example_value_types,
    listed_signature, literal_of, placement,
};
use crate::gpu::Backend;

/// What an aggregate reports of the compressed group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Measure {
    /// Plain bytes / compressed bytes, Float64.
    Ratio,
    /// Bytes of codec streams, UInt64.
    CompressedSize,
}

impl Measure {
    fn data_type(self) -> DataType {
        match self {
            Measure::Ratio => DataType::Float64,
            Measure::CompressedSize => DataType::UInt64,
        }
    }

    /// The result of a group of `rows` rows whose compressed parts hold `compressed` of
    /// `plain` bytes. A group without rows compressed nothing: NULL, as SUM gives for no
    /// rows; so is the ratio of a column without plain bytes (the Null type), the only
    /// kind that compresses to nothing.
    fn result(self, rows: u64, plain: u64, compressed: u64) -> ScalarValue {
        match self {
            Measure::Ratio if rows == 0 || compressed == 0 => ScalarValue::Float64(None),
            Measure::Ratio => ScalarValue::Float64(Some(plain as f64 / compressed as f64)),
            Measure::CompressedSize if rows == 0 => ScalarValue::UInt64(None),
            Measure::CompressedSize => ScalarValue::UInt64(Some(compressed)),
        }
    }
}

/// How an aggregate compresses a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) enum Form {
    /// In chunks of about 4 MiB ([`chunks`]); the partial state is three sums.
    Chunks,
    /// As one column ([`exact`]); the partial state is the values.
    Exact,
}

/// One of colzip's aggregates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Function {
    pub measure: Measure,
    pub form: Form,
}

impl Function {
    /// Every aggregate, as [`super::register`] registers them.
    pub(super) const ALL: [Function; 4] = [
        Function::new(Measure::Ratio, Form::Chunks),
        Function::new(Measure::CompressedSize, Form::Chunks),
        Function::new(Measure::Ratio, Form::Exact),
        Function::new(Measure::CompressedSize, Form::Exact),
    ];

    const fn new(measure: Measure, form: Form) -> Self {
        Function { measure, form }
    }

    pub(super) fn name(self) -> &'static str {
        match (self.measure, self.form) {
            (Measure::Ratio, Form::Chunks) => "colzip_ratio",
            (Measure::CompressedSize, Form::Chunks) => "colzip_compressed_size",
            (Measure::Ratio, Form::Exact) => "colzip_ratio_exact",
            (Measure::CompressedSize, Form::Exact) => "colzip_compressed_size_exact",
        }
    }

    fn usage(self) -> String {
        format!("{}(column, 'codec')", self.name())
    }
}

/// The aggregate UDF of one [`Function`].
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct CompressionAggregate {
    function: Function,
    signature: Signature,
    backend: Backend,
}

impl CompressionAggregate {
    /// Which aggregate this is and the backend the codecs run on.
    pub(super) fn parts(&self) -> (Function, Backend) {
        (self.function, self.backend)
    }

    pub(super) fn new(function: Function, backend: Backend) -> Self {
        let examples = example_value_types()
            .into_iter()
            .map(|value| vec![value, DataType::Utf8])
            .collect();
        CompressionAggregate {
            function,
            // Types are checked in `return_type`, with errors that name the argument.
            signature: listed_signature(examples),
            backend,
        }
    }

    /// The checks SQL planning can make on a call's logical arguments (see
    /// [`CodecLiteralPlanner`]).
    fn check_call(&self, args: &[Expr], distinct: bool) -> Result<()> {
        let name = self.function.name();
        check_arity(name, args.len(), 2, 2, &self.function.usage())?;
        if distinct {
            return plan_err!("{name}: DISTINCT is not supported");
        }
        codec_argument(name, literal_of(&args[1])).map(|_| ())
    }
}

impl AggregateUDFImpl for CompressionAggregate {
    fn name(&self) -> &str {
        self.function.name()
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(match (self.function.measure, self.function.form) {
            (Measure::Ratio, Form::Chunks) => super::docs::ratio(),
            (Measure::CompressedSize, Form::Chunks) => super::docs::compressed_size(),
            (Measure::Ratio, Form::Exact) => super::docs::ratio_exact(),
            (Measure::CompressedSize, Form::Exact) => super::docs::compressed_size_exact(),
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
        let name = self.function.name();
        check_arity(name, arg_types.len(), 2, 2, &self.function.usage())?;
        check_compressible(name, 1, &arg_types[0])?;
        check_string_type(name, 2, "codec", &arg_types[1])?;
        Ok(self.function.measure.data_type())
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(match self.function.form {
            Form::Chunks => ["rows", "plain_bytes", "compressed_bytes"]
                .into_iter()
                .map(|sum| {
                    Arc::new(Field::new(
                        format_state_name(args.name, sum),
                        DataType::UInt64,
                        true,
                    ))
                })
                .collect(),
            Form::Exact => {
                let values = args.input_fields[0].data_type().clone();
                vec![Arc::new(Field::new(
                    format_state_name(args.name, "values"),
                    DataType::List(Arc::new(Field::new_list_field(values, true))),
                    true,
                ))]
            }
        })
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let name = self.function.name();
        check_arity(name, args.exprs.len(), 2, 2, &self.function.usage())?;
        if args.is_distinct {
            return plan_err!("{name}: DISTINCT is not supported");
        }
        // Calls built without SQL (the DataFrame API) are checked here.
        let literal = args.exprs[1].downcast_ref::<Literal>().map(Literal::value);
        let codec = codec_argument(name, literal)?;
        let (measure, placement) = (self.function.measure, placement(self.backend)?);
        Ok(match self.function.form {
            Form::Chunks => Box::new(chunks::ChunkAccumulator::new(
                measure,
                codec,
                placement,
                chunks::CHUNK_BITS,
            )),
            Form::Exact => Box::new(exact::WholeGroupAccumulator::new(
                measure,
                codec,
                placement,
                args.expr_fields[0].data_type().clone(),
            )),
        })
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
