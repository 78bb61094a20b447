//! A statement's result printed as its batches arrive, so that memory does not grow with
//! the result and its first rows show while the rest is computed: CSV and JSON write each
//! batch at once; a table waits only for the rows it needs to size its columns
//! ([`super::table`]). Each batch is formatted into a buffer of its own and then written,
//! so a write's I/O error (a closed pipe, a full disk) reaches the caller as it is.

use std::io::Write;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::arrow::{csv, json};
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use super::Format;
use crate::Result;

/// Prints `stream`'s batches to `out` in `format` (at most `max_rows` rows of a table),
/// flushing after each; returns the result's row count.
pub(super) async fn print(
    schema: &SchemaRef,
    stream: SendableRecordBatchStream,
    format: Format,
    max_rows: Option<usize>,
    out: &mut dyn Write,
) -> Result<usize> {
    match format {
        Format::Csv => print_csv(schema, stream, out).await,
        Format::Json => print_json(stream, out).await,
        Format::Table => super::table::print(schema, stream, max_rows, out).await,
    }
}

/// Runs `stream` to its end, printing nothing (a statement without columns).
pub(super) async fn drain(mut stream: SendableRecordBatchStream) -> Result<()> {
    while let Some(batch) = stream.next().await {
        batch?;
    }
    Ok(())
}

async fn print_csv(
    schema: &SchemaRef,
    mut stream: SendableRecordBatchStream,
    out: &mut dyn Write,
) -> Result<usize> {
    let mut rows = 0;
    let mut header = true;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        out.write_all(&csv_bytes(&batch, header)?)?;
        out.flush()?;
        header = false;
        rows += batch.num_rows();
    }
    if header {
        // No batch came: the header alone, from the schema.
        out.write_all(&csv_bytes(&RecordBatch::new_empty(schema.clone()), true)?)?;
        out.flush()?;
    }
    Ok(rows)
}

/// `batch` as CSV lines, after a header line when `header`; nested values are written as
/// their text, quoted where CSV needs it.
pub(super) fn csv_bytes(batch: &RecordBatch, header: bool) -> Result<Vec<u8>> {
    let batch = crate::archive::nested_as_text(batch)?;
    let mut bytes = Vec::new();
    csv::WriterBuilder::new()
        .with_header(header)
        .build(&mut bytes)
        .write(&batch)?;
    Ok(bytes)
}

/// One JSON array of row objects on one line, written a batch at a time: the same text
/// arrow's array writer makes of the whole result (`[{…},{…}]`, `[]` without rows).
async fn print_json(mut stream: SendableRecordBatchStream, out: &mut dyn Write) -> Result<usize> {
    let mut rows = 0;
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        if batch.num_rows() == 0 {
            continue;
        }
        // Every key in every object: a NULL is `null`, not a missing key.
        let mut lines = Vec::new();
        let mut writer = json::WriterBuilder::new()
            .with_explicit_nulls(true)
            .build::<_, json::writer::LineDelimited>(&mut lines);
        writer.write(&batch)?;
        writer.finish()?;
        drop(writer);
        let mut text = Vec::with_capacity(lines.len() + 1);
        // JSON text escapes the line ends in its strings: each line is one object.
        for object in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            text.push(if rows == 0 { b'[' } else { b',' });
            text.extend_from_slice(object);
            rows += 1;
        }
        out.write_all(&text)?;
        out.flush()?;
    }
    out.write_all(if rows == 0 { b"[]\n" } else { b"]\n" })?;
    out.flush()?;
    Ok(rows)
}
