//! Arrow memory of record batches, each buffer counted once.

use std::collections::HashSet;

use arrow::array::{Array, ArrayData, RecordBatch};

/// Bytes of Arrow memory that `batches` hold: the capacity of every distinct buffer they
/// reference. Slices of one array share its buffers, so a table cut into slices of a
/// generated column counts that column once (`get_array_memory_size` would count it once
/// per slice).
///
/// ```
/// use std::sync::Arc;
/// use arrow::array::{Int64Array, RecordBatch};
/// use colzip::datafusion::table::arrow_memory;
///
/// let batch = RecordBatch::try_from_iter([(
///     "k",
///     Arc::new(Int64Array::from_iter_values(0..1000)) as _,
/// )])?;
/// let whole = arrow_memory(std::slice::from_ref(&batch));
/// assert!(whole >= 8000);
/// // Two halves of the same batch share its buffer.
/// assert_eq!(arrow_memory(&[batch.slice(0, 500), batch.slice(500, 500)]), whole);
/// # Ok::<(), arrow::error::ArrowError>(())
/// ```
pub fn arrow_memory(batches: &[RecordBatch]) -> usize {
    let mut seen = HashSet::new();
    let mut total = 0;
    for batch in batches {
        for column in batch.columns() {
            total += data_memory(&column.to_data(), &mut seen);
        }
    }
    total
}

fn data_memory(data: &ArrayData, seen: &mut HashSet<usize>) -> usize {
    let mut total = 0;
    let nulls = data.nulls().map(|n| n.buffer());
    for buffer in data.buffers().iter().chain(nulls) {
        if seen.insert(buffer.data_ptr().as_ptr() as usize) {
            total += buffer.capacity();
        }
    }
    for child in data.child_data() {
        total += data_memory(child, seen);
    }
    total
}
