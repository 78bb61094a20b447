//! The CLI's output formats and the one renderer of rows as a table, JSON or CSV, which
//! every report shares: `colzip tpch`, `colzip bench`, `colzip queries`' JSON and the
//! commands' own output. Names only the crate's `Error`, so every layer may use it.
//!
//! ```
//! use colzip::reporting::{Format, ReportRow, render};
//!
//! #[derive(serde::Serialize)]
//! struct Size { name: String, bytes: u64 }
//!
//! impl ReportRow for Size {
//!     const HEADER: &'static [&'static str] = &["name", "bytes"];
//!     fn cells(&self) -> Vec<String> { vec![self.name.clone(), self.bytes.to_string()] }
//!     fn numeric(i: usize) -> bool { i == 1 }
//! }
//!
//! let rows = [Size { name: "a,b".into(), bytes: 7 }, Size { name: "c".into(), bytes: 1234 }];
//! assert_eq!(render(&rows, Format::Table)?, "name  bytes\na,b       7\nc      1234\n");
//! assert_eq!(render(&rows, Format::Csv)?, "name,bytes\n\"a,b\",7\nc,1234\n");
//! assert_eq!("JSON".parse::<Format>()?, Format::Json);
//! # Ok::<(), colzip::Error>(())
//! ```

use std::fmt::Write as _;
use std::str::FromStr;

use crate::{Error, Result};

/// Output format of reports and of SQL results.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    /// Aligned text columns (reports) or a boxed table (SQL results).
    #[default]
    Table,
    /// JSON: an array of row objects.
    Json,
    /// CSV with a header line.
    Csv,
}

impl FromStr for Format {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "table" => Ok(Format::Table),
            "json" => Ok(Format::Json),
            "csv" => Ok(Format::Csv),
            other => Err(Error::format(format!(
                "unknown format '{other}' (expected table, json or csv)"
            ))),
        }
    }
}

/// A row that can be printed as a table, JSON or CSV.
pub trait ReportRow: serde::Serialize {
    /// Column names, also the JSON field names.
    const HEADER: &'static [&'static str];
    /// The row's cells, in `HEADER` order.
    fn cells(&self) -> Vec<String>;
    /// Whether column `i` is right-aligned in tables.
    fn numeric(i: usize) -> bool;
}

/// Renders `rows` in `format` (JSON: one array of row objects).
pub fn render<R: ReportRow>(rows: &[R], format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => json(rows)? + "\n",
        Format::Csv => {
            let mut out = R::HEADER.join(",") + "\n";
            for row in rows {
                let line: Vec<String> = row.cells().iter().map(|c| csv_cell(c)).collect();
                out += &(line.join(",") + "\n");
            }
            out
        }
        Format::Table => table(rows),
    })
}

/// `value` as pretty-printed JSON, without a closing newline.
pub fn json<T: serde::Serialize + ?Sized>(value: &T) -> Result<String> {
    serde_json::to_string_pretty(value).map_err(|e| Error::format(e.to_string()))
}

fn csv_cell(cell: &str) -> String {
    if cell.contains([',', '"', '\n']) {
        format!("\"{}\"", cell.replace('"', "\"\""))
    } else {
        cell.to_string()
    }
}

fn table<R: ReportRow>(rows: &[R]) -> String {
    let header = R::HEADER;
    let all: Vec<Vec<String>> = rows.iter().map(ReportRow::cells).collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            all.iter()
                .map(|r| r[i].len())
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if R::numeric(i) {
                let _ = write!(text, "{:>w$}  ", cell, w = widths[i]);
            } else {
                let _ = write!(text, "{:<w$}  ", cell, w = widths[i]);
            }
        }
        out += text.trim_end();
        out += "\n";
    };
    line(&header.iter().map(|h| h.to_string()).collect::<Vec<_>>());
    for row in &all {
        line(row);
    }
    out
}
