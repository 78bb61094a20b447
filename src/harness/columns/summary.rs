//! The per-codec totals of a run and the report rows of its measurements.

use super::experiment::Row;
use crate::reporting::ReportRow;

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

/// One codec over every measured column: the totals of its rows (`colzip tpch`'s
/// closing summary). The ratio is total raw bytes / total compressed bytes, and GB/s total
/// raw bytes / the summed time of the columns (what one pass over all of them takes).
#[derive(Clone, Debug, serde::Serialize, PartialEq)]
pub struct CodecSummary {
    pub codec: String,
    pub columns: u64,
    pub raw_bytes: u64,
    pub compressed_bytes: u64,
    pub ratio: f64,
    pub compress_gbps: f64,
    pub decompress_gbps: f64,
}

/// The per-codec totals of `rows`, in the order the codecs first appear.
///
/// ```
/// use colzip::harness::columns::{Row, summarize};
/// let row = |codec: &str, raw: u64, compressed: u64, gbps: f64| Row {
///     table: "t".into(), column: "c".into(), arrow_type: "Int32".into(), rows: 1,
///     raw_bytes: raw, codec: codec.into(), backend: "cpu".into(), compressed_bytes: compressed,
///     ratio: raw as f64 / compressed as f64, compress_gbps: gbps, decompress_gbps: 2.0 * gbps,
/// };
/// let totals = summarize(&[row("lzss", 1000, 100, 1.0), row("lzss", 3000, 900, 3.0)]);
/// assert_eq!((totals[0].raw_bytes, totals[0].compressed_bytes, totals[0].ratio), (4000, 1000, 4.0));
/// assert_eq!(totals[0].compress_gbps, 2.0); // 4000 bytes in 1000 ns + 1000 ns
/// ```
pub fn summarize(rows: &[Row]) -> Vec<CodecSummary> {
    let mut order: Vec<String> = Vec::new();
    for row in rows {
        if !order.contains(&row.codec) {
            order.push(row.codec.clone());
        }
    }
    order
        .into_iter()
        .map(|codec| {
            let mine: Vec<&Row> = rows.iter().filter(|r| r.codec == codec).collect();
            let raw: u64 = mine.iter().map(|r| r.raw_bytes).sum();
            let compressed: u64 = mine.iter().map(|r| r.compressed_bytes).sum();
            // Seconds per row from its own raw bytes and GB/s.
            let seconds = |gbps: fn(&Row) -> f64| -> f64 {
                mine.iter()
                    .map(|r| r.raw_bytes as f64 / (gbps(r) * 1e9).max(f64::MIN_POSITIVE))
                    .sum()
            };
            let gbps = |secs: f64| raw as f64 / secs.max(1e-12) / 1e9;
            CodecSummary {
                codec,
                columns: mine.len() as u64,
                raw_bytes: raw,
                compressed_bytes: compressed,
                ratio: raw as f64 / compressed.max(1) as f64,
                compress_gbps: gbps(seconds(|r| r.compress_gbps)),
                decompress_gbps: gbps(seconds(|r| r.decompress_gbps)),
            }
        })
        .collect()
}

impl ReportRow for CodecSummary {
    const HEADER: &'static [&'static str] = &[
        "codec",
        "columns",
        "raw_bytes",
        "compressed_bytes",
        "ratio",
        "compress_gbps",
        "decompress_gbps",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.codec.clone(),
            self.columns.to_string(),
            self.raw_bytes.to_string(),
            self.compressed_bytes.to_string(),
            format!("{:.3}", self.ratio),
            format!("{:.3}", self.compress_gbps),
            format!("{:.3}", self.decompress_gbps),
        ]
    }

    fn numeric(i: usize) -> bool {
        i >= 1
    }
}
