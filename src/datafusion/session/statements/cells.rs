//! Wide cells in table output: a string longer than [`MAX_CELL_BYTES`] is cut, with a note
//! of what was left out. The table renderer measures and pads every character of every
//! cell, so one 10 MB value took over ten seconds and printed a screenful per line. CSV
//! and JSON print whole values (the note says so).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};

use crate::{Error, Result};

/// The most bytes of a string a table cell shows.
pub const MAX_CELL_BYTES: usize = 10_000;

/// `batches` with every string cell longer than [`MAX_CELL_BYTES`] cut (those columns
/// become `Utf8`); batches without such a cell are returned as they are.
pub fn clip_wide_cells(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    batches.iter().map(clip_batch).collect()
}

fn clip_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    let mut clipped_any = false;
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        match clip_strings(column) {
            Some(clipped) => {
                clipped_any = true;
                fields.push(Arc::new(
                    Field::new(field.name(), DataType::Utf8, field.is_nullable())
                        .with_metadata(field.metadata().clone()),
                ));
                columns.push(clipped);
            }
            None => {
                fields.push(field.clone());
                columns.push(column.clone());
            }
        }
    }
    if !clipped_any {
        return Ok(batch.clone());
    }
    RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)
        .map_err(|e| Error::format(format!("clipping wide cells: {e}")))
}

/// The string column `column` with its long values cut, or `None` when it is not a
/// string column or has no value to cut.
fn clip_strings(column: &ArrayRef) -> Option<ArrayRef> {
    let values: Vec<Option<&str>> = match column.data_type() {
        DataType::Utf8 => column.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => column.as_string::<i64>().iter().collect(),
        DataType::Utf8View => column.as_string_view().iter().collect(),
        _ => return None,
    };
    if values.iter().flatten().all(|v| v.len() <= MAX_CELL_BYTES) {
        return None;
    }
    let clipped: StringArray = values.into_iter().map(|value| value.map(clip)).collect();
    Some(Arc::new(clipped))
}

/// `value` cut to at most [`MAX_CELL_BYTES`] (at a character boundary), with a note.
fn clip(value: &str) -> String {
    if value.len() <= MAX_CELL_BYTES {
        return value.to_string();
    }
    let mut end = MAX_CELL_BYTES;
    while !value.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{}… ({} more bytes; --format csv or json prints whole values)",
        &value[..end],
        value.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StringViewArray};

    #[test]
    fn long_strings_are_cut_with_a_note_and_others_kept() {
        let long = "é".repeat(MAX_CELL_BYTES); // two bytes a character
        let batch = RecordBatch::try_from_iter([
            ("n", Arc::new(Int32Array::from(vec![1, 2, 3])) as ArrayRef),
            (
                "s",
                Arc::new(StringViewArray::from(vec![
                    Some("short"),
                    None,
                    Some(&long),
                ])) as _,
            ),
            ("t", Arc::new(StringArray::from(vec!["a", "b", "c"])) as _),
        ])
        .unwrap();
        let out = clip_wide_cells(std::slice::from_ref(&batch)).unwrap();
        let s = out[0].column(1).as_string::<i32>();
        assert_eq!(s.value(0), "short");
        assert!(s.is_null(1));
        let cut = s.value(2);
        assert!(cut.starts_with(&"é".repeat(MAX_CELL_BYTES / 2)));
        assert!(cut.ends_with(&format!(
            "({} more bytes; --format csv or json prints whole values)",
            2 * MAX_CELL_BYTES - MAX_CELL_BYTES
        )));
        // Untouched columns keep their arrays and types.
        assert_eq!(out[0].column(0).as_ref(), batch.column(0).as_ref());
        assert_eq!(out[0].schema().field(2).data_type(), &DataType::Utf8);
        // A batch without a long value comes back as it was.
        let small = batch.slice(0, 2);
        assert_eq!(
            clip_wide_cells(std::slice::from_ref(&small)).unwrap()[0],
            small
        );
    }
}
