//! CSV files as typed columns: the schema is inferred (arrow-csv's inference, as
//! DataFusion's) from the whole file, so that no value read later fails the types chosen
//! from a sample; the file is then read in batches of that schema.

use std::fs::File;
use std::path::Path;

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow_csv::reader::{Format, ReaderBuilder};

use super::{CsvOptions, TextBatches, after_inference, text_batches};
use crate::{Error, Result};

/// Opens `file` (at `path`, named in errors) as CSV read `options`' way, in batches of
/// `batch_rows` rows (fewer for many columns).
pub(super) fn open(
    mut file: File,
    path: &Path,
    options: CsvOptions,
    batch_rows: usize,
) -> Result<(SchemaRef, TextBatches)> {
    let format = Format::default()
        .with_header(options.header)
        .with_delimiter(options.delimiter);
    let (schema, _) = format
        .infer_schema(&mut file, None)
        .map_err(|e| csv_error(path, e))?;
    let no_columns = "no CSV columns (the file is empty)";
    let (schema, batch_rows) = after_inference(schema, &mut file, path, no_columns, batch_rows)?;
    let reader = ReaderBuilder::new(schema.clone())
        .with_format(format)
        .with_batch_size(batch_rows)
        .build(file)
        .map_err(|e| csv_error(path, e))?;
    Ok((schema, text_batches(reader, path, csv_error)))
}

/// A CSV error naming the file (arrow-csv's messages name the line).
fn csv_error(path: &Path, error: ArrowError) -> Error {
    let message = match error {
        ArrowError::CsvError(message) | ArrowError::ParseError(message) => message,
        other => other.to_string(),
    };
    Error::format(format!("{}: bad CSV: {message}", path.display()))
}
