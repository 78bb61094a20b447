//! Wide cells in table output: a cell whose text is longer than [`MAX_CELL_BYTES`] is cut,
//! with a note of what was left out. The table renderer measures and pads every character
//! of every cell: uncut, one 10 MB string takes over ten seconds and prints a screenful
//! per line, and a 10 MB binary value (twice that in hex) or a list of millions of
//! numbers takes minutes. A value is formatted only up to the limit, whatever its size.
//! CSV and JSON print whole values (the note says so).

use std::fmt;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::{Error, Result};

/// The most bytes of a value's text a table cell shows.
pub const MAX_CELL_BYTES: usize = 10_000;

/// How table cells are written: NULL as datafusion-cli shows it, so that it differs from
/// an empty string; a value that cannot be formatted as its error.
pub fn format_options() -> FormatOptions<'static> {
    FormatOptions::default()
        .with_display_error(true)
        .with_null("NULL")
}

/// A text that takes at most [`MAX_CELL_BYTES`] bytes and then refuses more, which ends
/// the formatting of a longer value there.
#[derive(Default)]
struct Bounded {
    text: String,
    cut: bool,
}

impl fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = MAX_CELL_BYTES - self.text.len();
        if s.len() <= room {
            self.text.push_str(s);
            return Ok(());
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.text.push_str(&s[..end]);
        self.cut = true;
        Err(fmt::Error)
    }
}

/// The text of `formatter`'s value at `row`, at most [`MAX_CELL_BYTES`] long, and whether
/// it was cut.
pub fn bounded_text(formatter: &ArrayFormatter, row: usize) -> Result<(String, bool)> {
    let mut out = Bounded::default();
    match formatter.value(row).write(&mut out) {
        Ok(()) => Ok((out.text, false)),
        Err(_) if out.cut => Ok((out.text, true)),
        Err(e) => Err(Error::format(format!("cannot format a value: {e}"))),
    }
}

/// `batches` with every cell whose text is longer than [`MAX_CELL_BYTES`] cut (those
/// columns become `Utf8`, their other cells the text they had); batches without such a
/// cell are returned as they are.
pub fn clip_wide_cells(batches: &[RecordBatch]) -> Result<Vec<RecordBatch>> {
    batches.iter().map(clip_batch).collect()
}

fn clip_batch(batch: &RecordBatch) -> Result<RecordBatch> {
    let mut clipped_any = false;
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, column) in batch.schema().fields().iter().zip(batch.columns()) {
        let clipped = match column.data_type() {
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => clip_strings(column),
            data_type if may_be_wide(data_type) => clip_texts(column)?,
            _ => None,
        };
        match clipped {
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

/// Whether a value of `data_type` can have a text of any length (numbers, dates and
/// the like cannot).
fn may_be_wide(data_type: &DataType) -> bool {
    matches!(
        data_type,
        DataType::Binary
            | DataType::LargeBinary
            | DataType::BinaryView
            | DataType::FixedSizeBinary(_)
            | DataType::List(_)
            | DataType::LargeList(_)
            | DataType::ListView(_)
            | DataType::LargeListView(_)
            | DataType::FixedSizeList(..)
            | DataType::Struct(_)
            | DataType::Map(..)
            | DataType::Union(..)
            | DataType::Dictionary(..)
            | DataType::RunEndEncoded(..)
    )
}

/// The string column `column` with its long values cut, or `None` when it has no value
/// to cut.
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

/// `column` as the texts of its values, with the long ones cut, or `None` when no text
/// is too long. Each value is formatted only up to the limit.
fn clip_texts(column: &ArrayRef) -> Result<Option<ArrayRef>> {
    let options = format_options();
    let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
    let mut texts = Vec::with_capacity(column.len());
    let mut cut_any = false;
    for row in 0..column.len() {
        if column.is_null(row) {
            texts.push(None);
            continue;
        }
        let (mut text, cut) = bounded_text(&formatter, row)?;
        if cut {
            cut_any = true;
            text.push_str("… (more; --format csv or json prints whole values)");
        }
        texts.push(Some(text));
    }
    Ok(cut_any.then(|| Arc::new(StringArray::from(texts)) as ArrayRef))
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

    #[test]
    fn long_binary_and_list_values_are_cut_and_formatted_only_up_to_the_limit() {
        use arrow::array::{BinaryArray, Int64Array, ListArray};
        use arrow::datatypes::Int64Type;
        let blob = vec![0xabu8; 3 * MAX_CELL_BYTES];
        let numbers = 10_000_000i64;
        let list = ListArray::from_iter_primitive::<Int64Type, _, _>([
            Some((0..numbers).map(Some).collect::<Vec<_>>()),
            None,
            Some(vec![Some(1), Some(2)]),
        ]);
        let batch = RecordBatch::try_from_iter([
            (
                "b",
                Arc::new(BinaryArray::from(vec![
                    Some(&b"\x01"[..]),
                    None,
                    Some(&blob[..]),
                ])) as ArrayRef,
            ),
            ("l", Arc::new(list) as _),
            ("n", Arc::new(Int64Array::from(vec![1, 2, 3])) as _),
        ])
        .unwrap();
        let started = std::time::Instant::now();
        let out = clip_wide_cells(std::slice::from_ref(&batch)).unwrap();
        // Ten million numbers are about 90 MB of text: formatting them all takes seconds.
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{:?}",
            started.elapsed()
        );
        let note = "… (more; --format csv or json prints whole values)";
        let b = out[0].column(0).as_string::<i32>();
        assert_eq!(b.value(0), "01");
        assert!(b.is_null(1));
        assert_eq!(
            b.value(2),
            format!("{}{note}", "ab".repeat(MAX_CELL_BYTES / 2))
        );
        let l = out[0].column(1).as_string::<i32>();
        assert!(
            l.value(0).starts_with("[0, 1, 2, "),
            "{}",
            &l.value(0)[..20]
        );
        assert!(l.value(0).ends_with(note));
        assert!(l.value(0).len() <= MAX_CELL_BYTES + note.len());
        assert!(l.is_null(1));
        assert_eq!(l.value(2), "[1, 2]");
        assert_eq!(out[0].column(2).as_ref(), batch.column(2).as_ref());
        // Short values of these types keep their arrays.
        let small = batch.slice(1, 1);
        assert_eq!(
            clip_wide_cells(std::slice::from_ref(&small)).unwrap()[0],
            small
        );
    }
}
