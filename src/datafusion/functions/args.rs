//! Argument checks shared by the SQL functions: arity, string and blob types, codec
//! literals, the types the column layer compresses. Every error is a planning error that
//! names the function, the argument and what would be accepted.

use arrow::array::new_empty_array;
use arrow::datatypes::DataType;
use datafusion::common::{DataFusionError, Result, ScalarValue, plan_err};
use datafusion::logical_expr::{Expr, ReturnFieldArgs, Signature, TypeSignature, Volatility};

use crate::codec::{CodecError, CodecSpec, Placement, registry};
use crate::column::{self, CodecChoice};
use crate::gpu::Backend;

/// The codec forms a codec argument accepts (docs/CODECS.md's specifications), from the
/// codec registry.
pub(super) fn codec_forms() -> String {
    format!("auto, {}", registry::syntax_list())
}

/// The signature of colzip's scalar and aggregate functions: every call passes coercion
/// unchanged (`coerce_types` returns the argument types as they are; the checks are made
/// where the return type is found, so that each error is a planning error naming the
/// argument rather than DataFusion's error of a failed signature), and `examples` are the
/// argument types DataFusion's information schema lists. Without example types a
/// function has no rows in `information_schema.parameters`, and `SHOW FUNCTIONS`, which
/// joins the routines with their parameters, leaves it out. `Nullary` lets a call without
/// arguments reach the arity check too.
pub(super) fn listed_signature(examples: Vec<Vec<DataType>>) -> Signature {
    let mut forms = vec![TypeSignature::UserDefined, TypeSignature::Nullary];
    forms.extend(examples.into_iter().map(TypeSignature::Exact));
    Signature::one_of(forms, Volatility::Immutable)
}

/// Example value types of a value argument (any type colzip compresses) for
/// [`listed_signature`].
pub(super) fn example_value_types() -> [DataType; 4] {
    [
        DataType::Int64,
        DataType::Float64,
        DataType::Utf8,
        DataType::Binary,
    ]
}

/// Whether `args` is the information schema's probe of an example signature rather than a
/// call in a query: its fields are named `arg_0`, `arg_1`, … without metadata and no
/// argument is a literal. The probe has no codec or type literal to check, yet the function
/// is listed only when the probe gets a return type. (A query whose columns have exactly
/// those names and are passed where a literal belongs is caught when it runs, by the same
/// literal checks.)
pub(super) fn is_information_schema_probe(args: &ReturnFieldArgs) -> bool {
    args.scalar_arguments.iter().all(Option::is_none)
        && args
            .arg_fields
            .iter()
            .enumerate()
            .all(|(i, f)| f.metadata().is_empty() && *f.name() == format!("arg_{i}"))
}

/// Refuses a call with fewer than `min` or more than `max` arguments; `usage` shows the
/// call's forms, e.g. `colzip_ratio(column, 'codec')`.
pub(super) fn check_arity(
    function: &str,
    got: usize,
    min: usize,
    max: usize,
    usage: &str,
) -> Result<()> {
    if (min..=max).contains(&got) {
        return Ok(());
    }
    let expected = if min == max {
        format!("{min}")
    } else {
        format!("{min} or {max}")
    };
    plan_err!("{function} takes {expected} arguments ({usage}), got {got}")
}

pub(super) fn is_string(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
    )
}

pub(super) fn is_binary(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView
    )
}

/// Refuses a non-string type for the string argument `position` (1-based) called `name`.
pub(super) fn check_string_type(
    function: &str,
    position: usize,
    name: &str,
    data_type: &DataType,
) -> Result<()> {
    if is_string(data_type) {
        return Ok(());
    }
    plan_err!(
        "{function}: argument {position} ({name}) must be a string literal, got a value of type {data_type}"
    )
}

/// Refuses a type the column layer cannot compress (it is checked on an empty array, so
/// the check costs nothing).
pub(super) fn check_compressible(
    function: &str,
    position: usize,
    data_type: &DataType,
) -> Result<()> {
    let empty = new_empty_array(data_type);
    match column::compress(&empty, &CodecChoice::Spec(CodecSpec::Stored)) {
        Ok(_) => Ok(()),
        Err(e) => plan_err!(
            "{function}: argument {position} has type {data_type}, which colzip cannot compress ({e})"
        ),
    }
}

/// The literal of a logical argument, `None` for any other expression.
pub(super) fn literal_of(expr: &Expr) -> Option<&ScalarValue> {
    match expr {
        Expr::Literal(value, _) => Some(value),
        _ => None,
    }
}

/// The text of the string literal argument `position` (1-based) called `name`; `None`
/// (the argument is not a literal), NULL and non-string literals are errors.
pub(super) fn string_literal<'a>(
    function: &str,
    position: usize,
    name: &str,
    value: Option<&'a ScalarValue>,
) -> Result<&'a str> {
    let Some(value) = value else {
        return plan_err!(
            "{function}: argument {position} ({name}) must be a string literal such as 'bwt', not an expression or a column"
        );
    };
    match value {
        ScalarValue::Utf8(Some(text))
        | ScalarValue::LargeUtf8(Some(text))
        | ScalarValue::Utf8View(Some(text)) => Ok(text),
        ScalarValue::Utf8(None) | ScalarValue::LargeUtf8(None) | ScalarValue::Utf8View(None) => {
            plan_err!("{function}: argument {position} ({name}) must not be NULL")
        }
        other => plan_err!(
            "{function}: argument {position} ({name}) must be a string literal, got {} of type {}",
            other,
            other.data_type()
        ),
    }
}

/// Parses the codec argument (argument 2 of every function that takes one).
pub(super) fn parse_codec(function: &str, text: &str) -> Result<CodecChoice> {
    text.parse::<CodecChoice>().map_err(|e| {
        let reason = match e {
            crate::Error::Codec(CodecError::Spec { reason, .. }) => reason,
            other => other.to_string(),
        };
        DataFusionError::Plan(format!(
            "{function}: invalid codec '{text}' in argument 2: {reason}; accepted forms: {}",
            codec_forms()
        ))
    })
}

/// The codec of a call from its second argument's literal (`None` when not a literal).
pub(super) fn codec_argument(function: &str, value: Option<&ScalarValue>) -> Result<CodecChoice> {
    parse_codec(function, string_literal(function, 2, "codec", value)?)
}

/// Where the codecs run, resolved from the backend chosen at registration.
pub(super) fn placement(backend: Backend) -> Result<Placement> {
    Ok(Placement::new(backend)?)
}
