//! The scalars `colzip_compress(value, 'codec')` → Binary and `colzip_decompress(blob [,
//! 'type'])` → the value.
//!
//! A blob is the column container ([`CompressedColumn::to_bytes`]) of a one-value array:
//! self-describing (it records the value's Arrow type) and checked (xxh3 of every part),
//! at a fixed cost of about 40–80 bytes per value, so it pays for long text and binary
//! values. A NULL value gives a NULL blob, and a NULL blob a NULL value.
//!
//! `colzip_decompress`'s return type must be known when the query is planned, before any
//! blob is read. `colzip_compress` records the value's type in its result field's
//! metadata (key [`TYPE_METADATA_KEY`]), which DataFusion carries through projections,
//! subqueries and tables made from them, so `colzip_decompress(colzip_compress(x, 'bwt'))`
//! has `x`'s type. Blobs without that metadata (read from a file, say) take the type as a
//! second argument in Arrow's notation, `colzip_decompress(blob, 'Utf8')`, which also
//! overrides the metadata; a blob whose value has another type is cast to it (an error
//! when the cast fails).
//!
//! A blob records the value's type with string and binary views replaced by their classic
//! forms ([`blob_type`]: `Utf8View` → `Utf8`, `BinaryView` → `Binary`, inside nested
//! types too). DataFusion switches between the two by configuration (Ballista reads
//! Parquet strings as `Utf8`, a local session as `Utf8View`), and both give the same
//! parts, so the same value gives the same blob wherever it is compressed;
//! `colzip_decompress` casts back to the planned type. The container's field has a fixed
//! name (empty) and is nullable, whatever the argument's column is called. Blobs of views
//! written before still decode.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, new_null_array};
use arrow::compute::{CastOptions, can_cast_types, cast, cast_with_options, concat};
use arrow::datatypes::{DataType, Field, FieldRef, Fields, UnionFields};
use datafusion::common::{DataFusionError, Result, exec_err, internal_err, plan_err};
use datafusion::logical_expr::{
    ColumnarValue, Documentation, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDFImpl, Signature,
};
use rayon::prelude::*;

use super::args::{
    check_arity, check_compressible, check_string_type, codec_argument, example_value_types,
    is_binary, is_information_schema_probe, listed_signature, placement, string_literal,
};
use crate::codec::Placement;
use crate::column::{self, CompressedColumn};
use crate::gpu::Backend;

/// Field metadata key under which `colzip_compress` records its value's Arrow type.
pub const TYPE_METADATA_KEY: &str = "colzip.arrow_type";

const COMPRESS: &str = "colzip_compress";
const COMPRESS_USAGE: &str = "colzip_compress(value, 'codec')";
const DECOMPRESS: &str = "colzip_decompress";
const DECOMPRESS_USAGE: &str = "colzip_decompress(blob [, 'arrow type'])";

/// The type a blob records for a value of `data_type`: string and binary views as
/// `Utf8` and `Binary`, in nested types too; every other type as it is. (The column layer
/// stores a view and its classic form as the same parts: only the type differs.)
pub fn blob_type(data_type: &DataType) -> DataType {
    fn field(f: &FieldRef) -> FieldRef {
        Arc::new(f.as_ref().clone().with_data_type(blob_type(f.data_type())))
    }
    fn fields(fs: &Fields) -> Fields {
        fs.iter().map(field).collect()
    }
    match data_type {
        DataType::Utf8View => DataType::Utf8,
        DataType::BinaryView => DataType::Binary,
        DataType::List(f) => DataType::List(field(f)),
        DataType::LargeList(f) => DataType::LargeList(field(f)),
        DataType::ListView(f) => DataType::ListView(field(f)),
        DataType::LargeListView(f) => DataType::LargeListView(field(f)),
        DataType::FixedSizeList(f, n) => DataType::FixedSizeList(field(f), *n),
        DataType::Struct(fs) => DataType::Struct(fields(fs)),
        DataType::Map(f, sorted) => DataType::Map(field(f), *sorted),
        DataType::Dictionary(k, v) => DataType::Dictionary(k.clone(), Box::new(blob_type(v))),
        DataType::RunEndEncoded(r, v) => DataType::RunEndEncoded(Arc::clone(r), field(v)),
        DataType::Union(fs, mode) => {
            let (ids, children): (Vec<i8>, Vec<FieldRef>) =
                fs.iter().map(|(id, f)| (id, field(f))).unzip();
            match UnionFields::try_new(ids, children) {
                Ok(fs) => DataType::Union(fs, *mode),
                Err(_) => data_type.clone(),
            }
        }
        other => other.clone(),
    }
}

/// `values` as [`blob_type`] says (unchanged where Arrow cannot cast it so).
fn blob_values(values: ArrayRef) -> Result<ArrayRef> {
    let target = blob_type(values.data_type());
    if &target == values.data_type() || !can_cast_types(values.data_type(), &target) {
        return Ok(values);
    }
    Ok(cast(&values, &target)?)
}

/// `colzip_compress(value, 'codec')`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Compress {
    signature: Signature,
    backend: Backend,
}

impl Compress {
    /// The backend the codecs run on.
    pub(super) fn backend(&self) -> Backend {
        self.backend
    }

    pub(super) fn new(backend: Backend) -> Self {
        let examples = example_value_types()
            .into_iter()
            .map(|value| vec![value, DataType::Utf8])
            .collect();
        Compress {
            signature: listed_signature(examples),
            backend,
        }
    }
}

impl ScalarUDFImpl for Compress {
    fn name(&self) -> &str {
        COMPRESS
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(super::docs::compress())
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // Checked in return_field_from_args (see listed_signature).
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Binary)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        check_arity(COMPRESS, args.arg_fields.len(), 2, 2, COMPRESS_USAGE)?;
        check_compressible(COMPRESS, 1, args.arg_fields[0].data_type())?;
        check_string_type(COMPRESS, 2, "codec", args.arg_fields[1].data_type())?;
        if is_information_schema_probe(&args) {
            return Ok(Arc::new(Field::new(COMPRESS, DataType::Binary, true)));
        }
        codec_argument(COMPRESS, args.scalar_arguments[1])?;
        let value_type = args.arg_fields[0].data_type().to_string();
        Ok(Arc::new(
            Field::new(COMPRESS, DataType::Binary, true)
                .with_metadata(HashMap::from([(TYPE_METADATA_KEY.to_string(), value_type)])),
        ))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let codec = match &args.args[1] {
            ColumnarValue::Scalar(value) => codec_argument(COMPRESS, Some(value))?,
            ColumnarValue::Array(_) => codec_argument(COMPRESS, None)?,
        };
        let placement = placement(self.backend)?;
        let values = blob_values(args.args[0].to_array(args.number_rows)?)?;
        let blobs = (0..values.len())
            .into_par_iter()
            .map(|row| {
                if values.is_null(row) {
                    return Ok(None);
                }
                let one = values.slice(row, 1);
                column::compress_on(one.as_ref(), &codec, placement)
                    .and_then(|c| c.to_bytes())
                    .map(Some)
                    .map_err(DataFusionError::from)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(ColumnarValue::Array(Arc::new(BinaryArray::from_iter(
            blobs,
        ))))
    }
}

/// `colzip_decompress(blob [, 'arrow type'])`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct Decompress {
    signature: Signature,
    backend: Backend,
}

impl Decompress {
    /// The backend the codecs run on.
    pub(super) fn backend(&self) -> Backend {
        self.backend
    }

    pub(super) fn new(backend: Backend) -> Self {
        let examples = vec![
            vec![DataType::Binary],
            vec![DataType::Binary, DataType::Utf8],
        ];
        Decompress {
            signature: listed_signature(examples),
            backend,
        }
    }
}

/// Marks the return field given to the information schema's probe, whose type (Null) stands
/// for "the value's type, known when a query is planned": a call planned with it cannot
/// decode anything and fails when it runs.
const PROBE_METADATA_KEY: &str = "colzip.unplanned_type";

/// The value type of `colzip_decompress`'s call: the second argument's, else the blob
/// field's metadata.
fn value_type(args: &ReturnFieldArgs) -> Result<DataType> {
    let (text, source) = match args.arg_fields.get(1) {
        Some(_) => (
            string_literal(DECOMPRESS, 2, "arrow type", args.scalar_arguments[1])?,
            "argument 2 (arrow type)",
        ),
        None => match args.arg_fields[0].metadata().get(TYPE_METADATA_KEY) {
            Some(text) => (text.as_str(), "the blob's field metadata"),
            None => return plan_err!("{}", unknown_type()),
        },
    };
    let data_type: DataType = text.parse().map_err(|e| {
        DataFusionError::Plan(format!(
            "{DECOMPRESS}: '{text}' in {source} is not an Arrow type ({e}); expected e.g. 'Utf8', 'Int64', 'Decimal128(15, 2)'"
        ))
    })?;
    check_buildable(&data_type).map_err(|why| {
        DataFusionError::Plan(format!(
            "{DECOMPRESS}: '{text}' in {source} is not a type Arrow arrays can have: {why}"
        ))
    })?;
    check_compressible(DECOMPRESS, 1, &data_type)?;
    Ok(data_type)
}

/// The error of a call whose value type is neither given nor recorded.
fn unknown_type() -> String {
    format!(
        "{DECOMPRESS}: the type of the blobs in argument 1 is unknown when the query is planned \
         (they do not come from colzip_compress in this query); give it as the second argument \
         in Arrow's notation, e.g. {DECOMPRESS}(blob, 'Utf8') or {DECOMPRESS}(blob, 'Decimal128(15, 2)')"
    )
}

/// Why arrays of `data_type` cannot exist, where Arrow's parser accepts the notation but
/// building an array panics: a dictionary's keys must be an integer type, a run-end
/// encoded array's run ends Int16, Int32 or Int64 (at any depth).
fn check_buildable(data_type: &DataType) -> std::result::Result<(), String> {
    match data_type {
        DataType::Dictionary(keys, values) => {
            if !keys.is_dictionary_key_type() {
                return Err(format!(
                    "dictionary keys must be an integer type, not {keys}"
                ));
            }
            check_buildable(values)
        }
        DataType::RunEndEncoded(run_ends, values) => {
            if !matches!(
                run_ends.data_type(),
                DataType::Int16 | DataType::Int32 | DataType::Int64
            ) {
                return Err(format!(
                    "run ends must be Int16, Int32 or Int64, not {}",
                    run_ends.data_type()
                ));
            }
            check_buildable(values.data_type())
        }
        DataType::List(field)
        | DataType::LargeList(field)
        | DataType::ListView(field)
        | DataType::LargeListView(field)
        | DataType::FixedSizeList(field, _)
        | DataType::Map(field, _) => check_buildable(field.data_type()),
        DataType::Struct(fields) => fields
            .iter()
            .try_for_each(|f| check_buildable(f.data_type())),
        DataType::Union(fields, _) => fields
            .iter()
            .try_for_each(|(_, f)| check_buildable(f.data_type())),
        _ => Ok(()),
    }
}

/// The blobs of a binary (or all-NULL) array, row by row.
fn blob_rows(array: &ArrayRef) -> Result<Vec<Option<&[u8]>>> {
    Ok(match array.data_type() {
        DataType::Binary => array.as_binary::<i32>().iter().collect(),
        DataType::LargeBinary => array.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => array.as_binary_view().iter().collect(),
        DataType::Null => vec![None; array.len()],
        other => return exec_err!("{DECOMPRESS}: argument 1 must be binary, got {other}"),
    })
}

/// One blob's value as a one-row array of `target`.
fn decode(row: usize, blob: &[u8], target: &DataType, placement: Placement) -> Result<ArrayRef> {
    let column = CompressedColumn::from_bytes(blob).map_err(|e| {
        DataFusionError::Execution(format!("{DECOMPRESS}: row {row} is not a colzip blob: {e}"))
    })?;
    if column.len() != 1 {
        return exec_err!(
            "{DECOMPRESS}: row {row} holds a column of {} values, not one value made by colzip_compress",
            column.len()
        );
    }
    let value = column::decompress_on(&column, placement).map_err(DataFusionError::from)?;
    if value.data_type() == target {
        return Ok(value);
    }
    let options = CastOptions {
        safe: false,
        ..CastOptions::default()
    };
    cast_with_options(&value, target, &options).map_err(|e| {
        DataFusionError::Execution(format!(
            "{DECOMPRESS}: row {row} holds a {} value, which does not cast to {target}: {e}",
            value.data_type()
        ))
    })
}

impl ScalarUDFImpl for Decompress {
    fn name(&self) -> &str {
        DECOMPRESS
    }

    fn documentation(&self) -> Option<&Documentation> {
        Some(super::docs::decompress())
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        // Checked in return_field_from_args (see listed_signature).
        Ok(arg_types.to_vec())
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        internal_err!("{DECOMPRESS}: the return type comes from return_field_from_args")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        check_arity(DECOMPRESS, args.arg_fields.len(), 1, 2, DECOMPRESS_USAGE)?;
        let blob = args.arg_fields[0].data_type();
        if !is_binary(blob) && blob != &DataType::Null {
            return plan_err!(
                "{DECOMPRESS}: argument 1 (blob) must be binary (what colzip_compress returns), got {blob}"
            );
        }
        if let Some(type_name) = args.arg_fields.get(1) {
            check_string_type(DECOMPRESS, 2, "arrow type", type_name.data_type())?;
        }
        if is_information_schema_probe(&args) {
            let marker = HashMap::from([(PROBE_METADATA_KEY.to_string(), String::new())]);
            return Ok(Arc::new(
                Field::new(DECOMPRESS, DataType::Null, true).with_metadata(marker),
            ));
        }
        Ok(Arc::new(Field::new(DECOMPRESS, value_type(&args)?, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args
            .return_field
            .metadata()
            .contains_key(PROBE_METADATA_KEY)
        {
            // Planned as the information schema's probe: no type literal was there.
            return match args.args.len() {
                1 => exec_err!("{}", unknown_type()),
                _ => exec_err!(
                    "{DECOMPRESS}: argument 2 (arrow type) must be a string literal such as 'Utf8', not an expression or a column"
                ),
            };
        }
        let target = args.return_field.data_type().clone();
        let blobs = args.args[0].to_array(args.number_rows)?;
        let rows = blob_rows(&blobs)?;
        let placement = placement(self.backend)?;
        let values = rows
            .par_iter()
            .enumerate()
            .map(|(row, blob)| match blob {
                None => Ok(new_null_array(&target, 1)),
                Some(blob) => decode(row, blob, &target, placement),
            })
            .collect::<Result<Vec<_>>>()?;
        let values = match values.as_slice() {
            [] => arrow::array::new_empty_array(&target),
            parts => concat(&parts.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
        };
        // Views concatenated from one-row arrays point into one buffer per row: compact.
        let values: ArrayRef = match values.data_type() {
            DataType::Utf8View => Arc::new(values.as_string_view().gc()),
            DataType::BinaryView => Arc::new(values.as_binary_view().gc()),
            _ => values,
        };
        Ok(ColumnarValue::Array(values))
    }
}
