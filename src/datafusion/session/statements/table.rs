//! Table output in bounded memory. An aligned table needs its column widths before its
//! first line, and they depend on every row. A result of up to [`PREVIEW_ROWS`] rows (and
//! [`PREVIEW_BYTES`]) is held and printed whole, exactly as arrow prints a table. A longer
//! one is sized by the rows held, which are then printed with the rest as they arrive:
//! a later cell wider than its column is cut, ending in `…`. Line ends and tabs in a cell
//! of a streamed table read `\n`, `\r` and `\t`, so that each row stays on one line.
//! Rows past `--maxrows` are counted, not held.

use std::io::Write;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use arrow::util::display::ArrayFormatter;
use datafusion::physical_plan::SendableRecordBatchStream;
use futures::StreamExt;

use super::Format;
use super::cells::{MAX_CELL_BYTES, bounded_text, format_options};
use crate::Result;

/// The rows held to size a table's columns; a result this long or shorter prints whole.
pub const PREVIEW_ROWS: usize = 1000;
/// The most memory the held rows take before the table starts streaming.
pub const PREVIEW_BYTES: usize = 64 << 20;

/// Prints `stream` as a table of at most `max_rows` rows (then a line saying how many
/// there were); returns the result's row count.
pub(super) async fn print(
    schema: &SchemaRef,
    mut stream: SendableRecordBatchStream,
    max_rows: Option<usize>,
    out: &mut dyn Write,
) -> Result<usize> {
    let limit = max_rows.unwrap_or(usize::MAX);
    let mut preview = Vec::new();
    let (mut preview_rows, mut preview_bytes) = (0, 0);
    let mut streaming: Option<Streamed> = None;
    let (mut shown, mut total) = (0, 0);
    while let Some(batch) = stream.next().await {
        let batch = batch?;
        total += batch.num_rows();
        let take = batch.num_rows().min(limit - shown);
        if take == 0 {
            continue;
        }
        let batch = batch.slice(0, take);
        shown += take;
        match &streaming {
            Some(table) => {
                table.rows(&batch, out)?;
                out.flush()?;
            }
            None => {
                // Held up to PREVIEW_ROWS; a row past them starts the streaming.
                let held = take.min(PREVIEW_ROWS - preview_rows);
                if held > 0 {
                    let kept = batch.slice(0, held);
                    preview_rows += held;
                    preview_bytes += kept.get_array_memory_size();
                    preview.push(kept);
                }
                if held < take || preview_bytes > PREVIEW_BYTES {
                    let table = Streamed::new(schema, &preview)?;
                    table.header(out)?;
                    for kept in preview.drain(..) {
                        table.rows(&kept, out)?;
                    }
                    table.rows(&batch.slice(held, take - held), out)?;
                    out.flush()?;
                    streaming = Some(table);
                }
            }
        }
    }
    match &streaming {
        None => out.write_all(super::render(schema, &preview, Format::Table)?.as_bytes())?,
        Some(table) => table.border(out)?,
    }
    if total > limit {
        writeln!(
            out,
            "({limit} of {total} rows shown; --maxrows sets how many)"
        )?;
    }
    out.flush()?;
    Ok(total)
}

/// A table printed a batch at a time, with widths fixed by its first rows.
struct Streamed {
    names: Vec<String>,
    widths: Vec<usize>,
}

/// Each cell of `batch`, row by row, on one line and at most [`MAX_CELL_BYTES`] long (a
/// longer value is formatted only that far).
fn cells(batch: &RecordBatch) -> Result<Vec<Vec<String>>> {
    let options = format_options();
    let formatters = batch
        .columns()
        .iter()
        .map(|column| ArrayFormatter::try_new(column.as_ref(), &options))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    let mut rows = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let mut cells = Vec::with_capacity(formatters.len());
        for formatter in &formatters {
            let (text, _) = bounded_text(formatter, row)?;
            cells.push(one_line(&text));
        }
        rows.push(cells);
    }
    Ok(rows)
}

/// `text` with its line ends and tabs escaped, cut to at most [`MAX_CELL_BYTES`].
fn one_line(text: &str) -> String {
    let mut line = String::with_capacity(text.len().min(MAX_CELL_BYTES));
    for c in text.chars() {
        let escaped = match c {
            '\n' => "\\n",
            '\r' => "\\r",
            '\t' => "\\t",
            _ => {
                if line.len() + c.len_utf8() > MAX_CELL_BYTES {
                    break;
                }
                line.push(c);
                continue;
            }
        };
        if line.len() + escaped.len() > MAX_CELL_BYTES {
            break;
        }
        line.push_str(escaped);
    }
    line
}

impl Streamed {
    /// A table of `schema`'s columns as wide as the widest of their names and of
    /// `preview`'s cells.
    fn new(schema: &SchemaRef, preview: &[RecordBatch]) -> Result<Streamed> {
        let names: Vec<String> = schema.fields().iter().map(|f| one_line(f.name())).collect();
        let mut widths: Vec<usize> = names.iter().map(|n| n.chars().count()).collect();
        for batch in preview {
            for row in cells(batch)? {
                for (width, cell) in widths.iter_mut().zip(&row) {
                    *width = (*width).max(cell.chars().count());
                }
            }
        }
        Ok(Streamed { names, widths })
    }

    /// `+---+---+`
    fn border(&self, out: &mut dyn Write) -> Result<()> {
        let mut line = String::from("+");
        for &width in &self.widths {
            line.extend(std::iter::repeat_n('-', width + 2));
            line.push('+');
        }
        line.push('\n');
        out.write_all(line.as_bytes())?;
        Ok(())
    }

    /// `| a | b |`, each cell padded or cut to its column's width.
    fn line(&self, cells: &[String], into: &mut String) {
        into.push('|');
        for (cell, &width) in cells.iter().zip(&self.widths) {
            into.push(' ');
            let length = cell.chars().count();
            if length <= width {
                into.push_str(cell);
                into.extend(std::iter::repeat_n(' ', width - length));
            } else {
                into.extend(cell.chars().take(width.saturating_sub(1)));
                into.push('…');
            }
            into.push_str(" |");
        }
        into.push('\n');
    }

    fn header(&self, out: &mut dyn Write) -> Result<()> {
        self.border(out)?;
        let mut line = String::new();
        self.line(&self.names, &mut line);
        out.write_all(line.as_bytes())?;
        self.border(out)
    }

    fn rows(&self, batch: &RecordBatch, out: &mut dyn Write) -> Result<()> {
        let mut text = String::new();
        for row in cells(batch)? {
            self.line(&row, &mut text);
        }
        out.write_all(text.as_bytes())?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_stay_on_one_line_and_within_the_cell_limit() {
        assert_eq!(one_line("a\nb\tc\r"), "a\\nb\\tc\\r");
        let long = "é".repeat(MAX_CELL_BYTES);
        assert_eq!(one_line(&long).len(), MAX_CELL_BYTES);
    }

    #[test]
    fn a_streamed_line_pads_short_cells_and_cuts_long_ones() {
        let table = Streamed {
            names: vec!["a".into(), "bb".into()],
            widths: vec![3, 4],
        };
        let mut line = String::new();
        table.line(&["x".into(), "toolong".into()], &mut line);
        assert_eq!(line, "| x   | too… |\n");
        let mut border = Vec::new();
        table.border(&mut border).unwrap();
        assert_eq!(border, b"+-----+------+\n");
    }
}
