//! CSV files as typed columns: the schema is inferred (arrow-csv's inference, as
//! DataFusion's) from the whole file, so that no value read later fails the types chosen
//! from a sample; the file is then read in batches of that schema.

use std::fs::File;
use std::io::{Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow_csv::reader::{Format, ReaderBuilder};

use super::CsvOptions;
use crate::{Error, Result};

/// Batches of rows read from a CSV file.
pub(super) type Batches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// Opens `file` (at `path`, named in errors) as CSV read `options`' way, in batches of
/// `batch_rows` rows.
pub(super) fn open(
    mut file: File,
    path: &Path,
    options: CsvOptions,
    batch_rows: usize,
) -> Result<(SchemaRef, Batches)> {
    let format = Format::default()
        .with_header(options.header)
        .with_delimiter(options.delimiter);
    let (schema, _) = format
        .infer_schema(&mut file, None)
        .map_err(|e| csv_error(path, e))?;
    if schema.fields().is_empty() {
        return Err(Error::format(format!(
            "{}: no CSV columns (the file is empty)",
            path.display()
        )));
    }
    file.seek(SeekFrom::Start(0))
        .map_err(Error::file("read", path))?;
    let schema = Arc::new(schema);
    let batch_rows = super::text_batch_rows(batch_rows, &schema);
    let reader = ReaderBuilder::new(schema.clone())
        .with_format(format)
        .with_batch_size(batch_rows)
        .build(file)
        .map_err(|e| csv_error(path, e))?;
    let path = path.to_path_buf();
    Ok((
        schema,
        Box::new(reader.map(move |batch| batch.map_err(|e| csv_error(&path, e)))),
    ))
}

/// A CSV error naming the file (arrow-csv's messages name the line).
fn csv_error(path: &Path, error: ArrowError) -> Error {
    let message = match error {
        ArrowError::CsvError(message) | ArrowError::ParseError(message) => message,
        other => other.to_string(),
    };
    Error::format(format!("{}: bad CSV: {message}", path.display()))
}
