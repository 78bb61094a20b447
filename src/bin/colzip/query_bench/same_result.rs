//! Whether two query results are the same: the same rows in the same order, each value
//! compared as printed text, except floating-point values, which may differ in their last
//! bits when two plans aggregate in different orders and are compared with a relative
//! tolerance of [`FLOAT_TOLERANCE`]. Column names and types are not compared: a Parquet
//! scan reads strings as `Utf8View` where a `MemTable` holds `Utf8`, and both print alike.

use arrow::array::{Array, Float64Array, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};

use colzip::Result;

/// The largest relative difference, `|a - b| / max(|a|, |b|)`, at which two floating-point
/// values count as equal in [`difference`].
pub const FLOAT_TOLERANCE: f64 = 1e-9;

/// One value of a result, as it is compared.
#[derive(Debug, PartialEq)]
enum Cell {
    Null,
    Float(f64),
    Text(String),
}

impl Cell {
    fn same(&self, other: &Cell) -> bool {
        match (self, other) {
            (Cell::Float(a), Cell::Float(b)) => {
                a == b
                    || (a.is_nan() && b.is_nan())
                    || (a - b).abs() <= FLOAT_TOLERANCE * a.abs().max(b.abs())
            }
            (a, b) => a == b,
        }
    }

    fn shown(&self) -> String {
        match self {
            Cell::Null => "NULL".into(),
            Cell::Float(x) => x.to_string(),
            Cell::Text(text) => format!("{text:?}"),
        }
    }
}

/// The values of every column of `batches`, column by column.
fn cells(batches: &[RecordBatch]) -> Result<Vec<Vec<Cell>>> {
    let width = batches.first().map_or(0, |b| b.num_columns());
    let mut columns: Vec<Vec<Cell>> = (0..width).map(|_| Vec::new()).collect();
    let options = FormatOptions::default();
    for batch in batches {
        for (column, array) in columns.iter_mut().zip(batch.columns()) {
            if matches!(
                array.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            ) {
                let floats = cast(array, &DataType::Float64)?;
                let floats = floats
                    .as_any()
                    .downcast_ref::<Float64Array>()
                    .expect("a cast to Float64 gives a Float64Array");
                column.extend(floats.iter().map(|x| x.map_or(Cell::Null, Cell::Float)));
            } else {
                let formatter = ArrayFormatter::try_new(array.as_ref(), &options)?;
                column.extend((0..array.len()).map(|i| {
                    if array.is_null(i) {
                        Cell::Null
                    } else {
                        Cell::Text(formatter.value(i).to_string())
                    }
                }));
            }
        }
    }
    Ok(columns)
}

/// `None` when `actual` is the same result as `expected` (see the [module docs](self)),
/// else the first difference in words.
pub fn difference(expected: &[RecordBatch], actual: &[RecordBatch]) -> Result<Option<String>> {
    let rows = |batches: &[RecordBatch]| batches.iter().map(|b| b.num_rows()).sum::<usize>();
    let (expected_rows, actual_rows) = (rows(expected), rows(actual));
    if expected_rows != actual_rows {
        return Ok(Some(format!(
            "{actual_rows} rows where {expected_rows} were expected"
        )));
    }
    if expected_rows == 0 {
        return Ok(None);
    }
    let (expected, actual) = (cells(expected)?, cells(actual)?);
    if expected.len() != actual.len() {
        return Ok(Some(format!(
            "{} columns where {} were expected",
            actual.len(),
            expected.len()
        )));
    }
    for row in 0..expected_rows {
        for (column, (e, a)) in expected.iter().zip(&actual).enumerate() {
            if !e[row].same(&a[row]) {
                return Ok(Some(format!(
                    "row {}, column {}: {} where {} was expected",
                    row + 1,
                    column + 1,
                    a[row].shown(),
                    e[row].shown()
                )));
            }
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Decimal128Array, Float32Array, Int64Array};

    use super::*;

    fn floats(values: Vec<Option<f64>>) -> Vec<RecordBatch> {
        vec![
            RecordBatch::try_from_iter([("x", Arc::new(Float64Array::from(values)) as _)]).unwrap(),
        ]
    }

    #[test]
    fn floats_match_within_the_tolerance_only() {
        let a = floats(vec![Some(1e12), Some(f64::NAN), None, Some(0.0)]);
        let close = floats(vec![Some(1e12 + 1e2), Some(f64::NAN), None, Some(0.0)]);
        let far = floats(vec![Some(1e12 + 1e4), Some(f64::NAN), None, Some(0.0)]);
        assert_eq!(difference(&a, &close).unwrap(), None);
        assert!(difference(&a, &far).unwrap().unwrap().contains("row 1"));
        let null = floats(vec![Some(1e12), Some(f64::NAN), Some(0.0), Some(0.0)]);
        assert!(difference(&a, &null).unwrap().unwrap().contains("row 3"));
        let zero = floats(vec![Some(1e12), Some(f64::NAN), None, Some(1e-300)]);
        assert!(difference(&a, &zero).unwrap().unwrap().contains("row 4"));
        // Float32 against Float64: compared as numbers.
        let single = vec![
            RecordBatch::try_from_iter([("x", Arc::new(Float32Array::from(vec![0.5f32])) as _)])
                .unwrap(),
        ];
        assert_eq!(difference(&floats(vec![Some(0.5)]), &single).unwrap(), None);
    }

    #[test]
    fn decimals_and_integers_are_exact_and_batches_do_not_matter() {
        let decimals = |values: Vec<i128>| {
            RecordBatch::try_from_iter([(
                "d",
                Arc::new(
                    Decimal128Array::from(values)
                        .with_precision_and_scale(15, 2)
                        .unwrap(),
                ) as _,
            )])
            .unwrap()
        };
        let whole = vec![decimals(vec![100, 250, 399])];
        let split = vec![decimals(vec![100]), decimals(vec![250, 399])];
        assert_eq!(difference(&whole, &split).unwrap(), None);
        let off = vec![decimals(vec![100, 250, 398])];
        let text = difference(&whole, &off).unwrap().unwrap();
        assert!(text.contains("row 3") && text.contains("3.98"), "{text}");
        let ints = vec![
            RecordBatch::try_from_iter([("i", Arc::new(Int64Array::from(vec![1, 2])) as _)])
                .unwrap(),
        ];
        assert!(
            difference(&whole, &ints)
                .unwrap()
                .unwrap()
                .contains("2 rows")
        );
        assert_eq!(difference(&[], &[]).unwrap(), None);
    }

    #[test]
    fn strings_compare_as_printed_whatever_their_type() {
        use arrow::array::{StringArray, StringViewArray};
        let batch = |x: f64, name: Arc<dyn Array>| {
            RecordBatch::try_from_iter([
                ("x", Arc::new(Float64Array::from(vec![x])) as _),
                ("name", name),
            ])
            .unwrap()
        };
        let a = batch(0.1 + 0.2, Arc::new(StringArray::from(vec!["a"])));
        let b = batch(0.3, Arc::new(StringViewArray::from(vec!["a"])));
        assert_eq!(difference(std::slice::from_ref(&a), &[b]).unwrap(), None);
        let c = batch(0.3001, Arc::new(StringArray::from(vec!["a"])));
        assert!(
            difference(&[a], &[c])
                .unwrap()
                .unwrap()
                .contains("row 1, column 1")
        );
    }

    #[test]
    fn the_order_of_rows_counts() {
        let a = floats(vec![Some(1.0), Some(2.0)]);
        let b = floats(vec![Some(2.0), Some(1.0)]);
        assert!(difference(&a, &b).unwrap().is_some());
    }
}
