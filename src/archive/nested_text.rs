//! Nested values (lists, structs, maps, unions) as text, for outputs that hold only flat
//! cells: arrow's CSV writer refuses a nested column outright. Each such column becomes a
//! string column of the values' display text (`[1, 2, null]`, `{x: 1, name: a}`), which
//! the CSV writer then quotes as any string that needs it; a NULL value stays NULL, and a
//! NULL inside a value reads `null`.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, StringBuilder};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::util::display::{ArrayFormatter, FormatOptions};

use crate::{Error, Result};

/// `batch` with every nested column replaced by its values' display text (a `Utf8`
/// column of the same name); a batch without nested columns comes back as it is.
pub fn nested_as_text(batch: &RecordBatch) -> Result<RecordBatch> {
    let schema = batch.schema();
    if !schema.fields().iter().any(|f| f.data_type().is_nested()) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(schema.fields().len());
    let mut columns = Vec::with_capacity(schema.fields().len());
    for (field, column) in schema.fields().iter().zip(batch.columns()) {
        if field.data_type().is_nested() {
            fields.push(Arc::new(
                Field::new(field.name(), DataType::Utf8, field.is_nullable())
                    .with_metadata(field.metadata().clone()),
            ));
            columns.push(as_text(column)?);
        } else {
            fields.push(field.clone());
            columns.push(column.clone());
        }
    }
    RecordBatch::try_new(
        Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone())),
        columns,
    )
    .map_err(|e| Error::format(format!("nested values as text: {e}")))
}

/// The display text of each value of `column`, NULL where the value is NULL.
fn as_text(column: &ArrayRef) -> Result<ArrayRef> {
    let options = FormatOptions::default().with_null("null");
    let formatter = ArrayFormatter::try_new(column.as_ref(), &options)
        .map_err(|e| Error::format(format!("cannot write {} as text: {e}", column.data_type())))?;
    let mut text = StringBuilder::with_capacity(column.len(), column.len() * 16);
    let mut cell = String::new();
    for row in 0..column.len() {
        if column.is_null(row) {
            text.append_null();
            continue;
        }
        cell.clear();
        formatter.value(row).write(&mut cell).map_err(|e| {
            Error::format(format!("cannot write a {} value: {e}", column.data_type()))
        })?;
        text.append_value(&cell);
    }
    Ok(Arc::new(text.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{AsArray, Int32Array, Int64Builder, ListBuilder, StructArray};
    use arrow::datatypes::Fields;

    #[test]
    fn nested_columns_become_their_text_and_flat_ones_stay() {
        let mut list = ListBuilder::new(Int64Builder::new());
        list.values().append_value(1);
        list.values().append_null();
        list.append(true);
        list.append(false);
        let point = StructArray::try_new(
            Fields::from(vec![Field::new("x", DataType::Int32, true)]),
            vec![Arc::new(Int32Array::from(vec![Some(7), None]))],
            None,
        )
        .unwrap();
        let batch = RecordBatch::try_from_iter([
            ("n", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
            ("l", Arc::new(list.finish()) as _),
            ("p", Arc::new(point) as _),
        ])
        .unwrap();
        let text = nested_as_text(&batch).unwrap();
        assert_eq!(text.column(0).as_ref(), batch.column(0).as_ref());
        let l = text.column(1).as_string::<i32>();
        assert_eq!(l.value(0), "[1, null]");
        assert!(l.is_null(1));
        let p = text.column(2).as_string::<i32>();
        assert_eq!(p.value(0), "{x: 7}");
        assert_eq!(p.value(1), "{x: null}");
        assert_eq!(text.schema().field(1).name(), "l");
        // Without nested columns: the same batch.
        let flat = batch.project(&[0]).unwrap();
        assert_eq!(nested_as_text(&flat).unwrap(), flat);
    }
}
