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

const HEADER: [&str; 11] = [
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

fn cells(row: &Row) -> [String; 11] {
    [
        row.table.clone(),
        row.column.clone(),
        row.arrow_type.clone(),
        row.rows.to_string(),
        row.raw_bytes.to_string(),
        row.codec.clone(),
        row.backend.clone(),
        row.compressed_bytes.to_string(),
        format!("{:.3}", row.ratio),
        format!("{:.3}", row.compress_gbps),
        format!("{:.3}", row.decompress_gbps),
    ]
}

/// Renders `rows` in `format` (JSON: one array of row objects).
pub fn render(rows: &[Row], format: Format) -> Result<String> {
    Ok(match format {
        Format::Json => {
            serde_json::to_string_pretty(rows).map_err(|e| Error::format(e.to_string()))? + "\n"
        }
        Format::Csv => {
            let mut out = HEADER.join(",") + "\n";
            for row in rows {
                let line: Vec<String> = cells(row).into_iter().map(|c| csv_cell(&c)).collect();
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

fn table(rows: &[Row]) -> String {
    let all: Vec<[String; 11]> = rows.iter().map(cells).collect();
    let widths: Vec<usize> = (0..HEADER.len())
        .map(|i| {
            all.iter()
                .map(|r| r[i].len())
                .chain([HEADER[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let numeric = |i: usize| matches!(i, 3 | 4 | 7 | 8 | 9 | 10);
    let mut out = String::new();
    let mut line = |cells: &[String]| {
        let mut text = String::new();
        for (i, cell) in cells.iter().enumerate() {
            if numeric(i) {
                let _ = write!(text, "{:>w$}  ", cell, w = widths[i]);
            } else {
                let _ = write!(text, "{:<w$}  ", cell, w = widths[i]);
            }
        }
        out += text.trim_end();
        out += "\n";
    };
    line(&HEADER.map(String::from));
    for row in &all {
        line(row);
    }
    out
}
