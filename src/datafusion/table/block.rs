//! A table's blocks: up to a block's rows with every column compressed and each column's
//! zone, and the statistics a scan reports from them (row and null counts, sizes, value
//! ranges) without decoding anything.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::DataType;
use datafusion::common::stats::Precision;
use datafusion::common::{ColumnStatistics, ScalarValue, Statistics};

use super::zones;
use crate::column::CompressedColumn;
use crate::column::select::ResidentColumns;

/// Up to [`CompressOptions::block_rows`] rows of a table, every column compressed, with
/// each column's zone (minimum and maximum) for pruning.
#[derive(Debug)]
pub(crate) struct Block {
    pub(super) rows: usize,
    pub(super) columns: Vec<CompressedColumn>,
    pub(super) zones: Vec<Option<zones::Zone>>,
    /// The compressed streams of the block's columns of fixed-width values on a GPU,
    /// uploaded by the first scan that selects its rows there (`device_filter`) and
    /// decoded there by every later one; `None` inside when the GPU had no room.
    pub(super) resident: OnceLock<Option<ResidentColumns>>,
}

impl Block {
    pub(super) fn new(
        rows: usize,
        columns: Vec<CompressedColumn>,
        zones: Vec<Option<zones::Zone>>,
    ) -> Block {
        Block {
            rows,
            columns,
            zones,
            resident: OnceLock::new(),
        }
    }

    /// Device bytes the block holds on a GPU.
    pub(super) fn resident_bytes(&self) -> usize {
        self.resident
            .get()
            .and_then(Option::as_ref)
            .map_or(0, ResidentColumns::bytes)
    }

    pub(super) fn compressed_bytes(&self) -> usize {
        self.columns.iter().map(|c| c.compressed_bytes()).sum()
    }
}

/// The partitions of a table: lists of shared blocks (a scan takes a snapshot of them).
pub(super) type Partitions = Vec<Vec<Arc<Block>>>;

/// The nulls of `column` as queries count them (`IS NULL`, `count(column)`: Arrow's
/// logical nulls), when its container tells them without decoding anything. The root
/// node's null count is its validity's; a Null column has none but every row is null,
/// and a union's or a run-end encoded array's nulls are in its children, a dictionary's
/// also in its values: those are unknown (`None`) unless the values have no nulls.
pub(super) fn sql_null_count(column: &CompressedColumn) -> Option<usize> {
    let root = column.root();
    let own_nulls_only =
        |t: &DataType| !matches!(t, DataType::Union(..) | DataType::RunEndEncoded(..));
    match column.data_type() {
        DataType::Null => Some(root.rows),
        DataType::Dictionary(_, values) => {
            let clean = root.children.first().is_some_and(|v| v.null_count == 0)
                && own_nulls_only(values)
                && !matches!(values.as_ref(), DataType::Null);
            clean.then_some(root.null_count)
        }
        other => own_nulls_only(other).then_some(root.null_count),
    }
}

/// Statistics of `blocks` for the columns in `projection`: exact row counts, exact null
/// counts where the containers tell them ([`sql_null_count`]), byte sizes as
/// decompressed (what the scan produces, which join planning compares).
pub(super) fn block_statistics<'a>(
    blocks: impl Iterator<Item = &'a Arc<Block>>,
    projection: &[usize],
    limit: Option<usize>,
) -> Statistics {
    let mut rows = 0;
    let mut columns = vec![(Some(0usize), 0usize); projection.len()];
    let mut ranges = vec![ColumnRange::Empty; projection.len()];
    for block in blocks {
        rows += block.rows;
        for ((stat, range), &i) in columns.iter_mut().zip(&mut ranges).zip(projection) {
            let column = &block.columns[i];
            stat.0 = stat.0.zip(sql_null_count(column)).map(|(a, b)| a + b);
            stat.1 += column.plain_bytes();
            range.widen(block.zones[i].as_ref(), block.rows);
        }
    }
    let total: usize = columns.iter().map(|c| c.1).sum();
    let mut statistics = Statistics {
        num_rows: Precision::Exact(rows),
        total_byte_size: Precision::Inexact(total),
        column_statistics: columns
            .into_iter()
            .zip(ranges)
            .map(|((nulls, bytes), range)| {
                let mut c = ColumnStatistics::new_unknown();
                c.null_count = nulls.map_or(Precision::Absent, Precision::Exact);
                c.byte_size = Precision::Inexact(bytes);
                // Bounds, not necessarily attained (inexact): DataFusion estimates a
                // join's size from its keys' ranges, as it does from Parquet's statistics.
                if let ColumnRange::Known(min, max) = range {
                    c.min_value = Precision::Inexact(min);
                    c.max_value = Precision::Inexact(max);
                }
                c
            })
            .collect(),
    };
    if let Some(limit) = limit.filter(|&l| l < rows) {
        statistics.num_rows = Precision::Exact(limit);
        let scale = |bytes: usize| (bytes as f64 * limit as f64 / rows as f64) as usize;
        statistics.total_byte_size = Precision::Inexact(scale(total));
        for c in &mut statistics.column_statistics {
            c.null_count = Precision::Absent;
            c.byte_size = c.byte_size.map(scale);
        }
    }
    statistics
}

/// The range of a column's values over some blocks, from their zones.
#[derive(Clone)]
enum ColumnRange {
    /// No block with rows yet.
    Empty,
    Known(ScalarValue, ScalarValue),
    /// Some block with rows has no zone (a type without one, or only NULLs).
    Unknown,
}

impl ColumnRange {
    /// Takes in a block of `rows` rows whose zone for the column is `zone`.
    fn widen(&mut self, zone: Option<&zones::Zone>, rows: usize) {
        if rows == 0 {
            return;
        }
        let Some((min, max)) = zone.map(zones::Zone::bounds) else {
            *self = ColumnRange::Unknown;
            return;
        };
        *self = match std::mem::replace(self, ColumnRange::Unknown) {
            ColumnRange::Empty => ColumnRange::Known(min.clone(), max.clone()),
            ColumnRange::Known(low, high) => {
                let (Some(below), Some(above)) = (min.partial_cmp(&low), max.partial_cmp(&high))
                else {
                    return;
                };
                ColumnRange::Known(
                    if below.is_lt() { min.clone() } else { low },
                    if above.is_gt() { max.clone() } else { high },
                )
            }
            ColumnRange::Unknown => ColumnRange::Unknown,
        };
    }
}
