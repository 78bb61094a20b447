//! Files of JSON objects, one per line, as typed columns: the schema is inferred
//! (arrow-json's inference) from the whole file, so that no value read later fails the
//! types chosen from a sample; the file is then read in batches of that schema.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow_json::reader::{ReaderBuilder, infer_json_schema_from_seekable};

use super::{TextBatches, after_inference, text_batches};
use crate::{Error, Result};

/// Opens `file` (at `path`, named in errors) as JSON lines, in batches of `batch_rows`
/// rows (fewer for many columns).
pub(super) fn open(file: File, path: &Path, batch_rows: usize) -> Result<(SchemaRef, TextBatches)> {
    let mut file = BufReader::new(file);
    let (schema, _) =
        infer_json_schema_from_seekable(&mut file, None).map_err(|e| json_error(path, e))?;
    let no_columns = "no JSON fields (the file has no objects, or only empty ones)";
    let (schema, batch_rows) = after_inference(schema, &mut file, path, no_columns, batch_rows)?;
    let reader = ReaderBuilder::new(schema.clone())
        .with_batch_size(batch_rows)
        .build(file)
        .map_err(|e| json_error(path, e))?;
    Ok((schema, text_batches(reader, path, json_error)))
}

/// A JSON error naming the file.
fn json_error(path: &Path, error: ArrowError) -> Error {
    let message = match error {
        ArrowError::JsonError(message) | ArrowError::ParseError(message) => message,
        other => other.to_string(),
    };
    Error::format(format!("{}: bad JSON lines: {message}", path.display()))
}
