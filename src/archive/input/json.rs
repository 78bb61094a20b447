//! Files of JSON objects, one per line, as typed columns: the schema is inferred
//! (arrow-json's inference) from the whole file, so that no value read later fails the
//! types chosen from a sample; the file is then read in batches of that schema.

use std::fs::File;
use std::io::{BufReader, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;
use arrow_json::reader::{ReaderBuilder, infer_json_schema_from_seekable};

use crate::{Error, Result};

/// Batches of rows read from a JSON-lines file.
pub(super) type Batches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// Opens `file` (at `path`, named in errors) as JSON lines, in batches of `batch_rows`
/// rows.
pub(super) fn open(file: File, path: &Path, batch_rows: usize) -> Result<(SchemaRef, Batches)> {
    let mut file = BufReader::new(file);
    let (schema, _) =
        infer_json_schema_from_seekable(&mut file, None).map_err(|e| json_error(path, e))?;
    if schema.fields().is_empty() {
        return Err(Error::format(format!(
            "{}: no JSON fields (the file has no objects, or only empty ones)",
            path.display()
        )));
    }
    file.seek(SeekFrom::Start(0))
        .map_err(Error::file("read", path))?;
    let schema = Arc::new(schema);
    let batch_rows = super::text_batch_rows(batch_rows, &schema);
    let reader = ReaderBuilder::new(schema.clone())
        .with_batch_size(batch_rows)
        .build(file)
        .map_err(|e| json_error(path, e))?;
    let path = path.to_path_buf();
    Ok((
        schema,
        Box::new(reader.map(move |batch| batch.map_err(|e| json_error(&path, e)))),
    ))
}

/// A JSON error naming the file.
fn json_error(path: &Path, error: ArrowError) -> Error {
    let message = match error {
        ArrowError::JsonError(message) | ArrowError::ParseError(message) => message,
        other => other.to_string(),
    };
    Error::format(format!("{}: bad JSON lines: {message}", path.display()))
}
