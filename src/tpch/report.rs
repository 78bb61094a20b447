//! Printing experiment rows as a table, JSON or CSV.

use std::fmt::Write as _;
use std::str::FromStr;

use super::experiment::Row;
use crate::{Error, Result};

/// Output format of reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Format {
    #[default]
    Table,
    Json,
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

impl ReportRow for Row {
    const HEADER: &'static [&'static str] = &[
        "table",
        "column",
        "arrow_type",
        "rows",
        "raw_bytes",
        "codec",
        "backend",
        "compressed_bytes",
        "ratio",
        "compress_gbps",
        "decompress_gbps",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.table.clone(),
            self.column.clone(),
            self.arrow_type.clone(),
            self.rows.to_string(),
            self.raw_bytes.to_string(),
            self.codec.clone(),
            self.backend.clone(),
            self.compressed_bytes.to_string(),
            format!("{:.3}", self.ratio),
            format!("{:.3}", self.compress_gbps),
            format!("{:.3}", self.decompress_gbps),
        ]
    }

    fn numeric(i: usize) -> bool {
        matches!(i, 3 | 4 | 7 | 8 | 9 | 10)
    }
}

/// Renders `rows` in `format` (JSON: one array of row objects).
pub fn render<R: ReportRow>(rows: &[R], format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => {
            serde_json::to_string_pretty(rows).map_err(|e| Error::format(e.to_string()))? + "\n"
        }
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
