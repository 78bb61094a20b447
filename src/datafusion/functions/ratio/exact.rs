//! The accumulator of `colzip_ratio_exact` and `colzip_compressed_size_exact`: a group's
//! values compressed as one column by the column layer.
//!
//! It keeps the group's arrays and compresses them, concatenated, when the group is
//! evaluated, so that the result is exactly what `column::compress` gives for the group's
//! values in the order they arrived (see the module docs of `functions` for when that is
//! table order). Its partial state is those values as a one-element list of the column's
//! own type: merging states appends lists, which is exact (a partial ratio or size could
//! not be merged), and makes every value cross a cluster's shuffle. The memory this holds
//! is the group's values (what [`Accumulator::size`] reports to DataFusion's memory pool),
//! and evaluation briefly adds their concatenation and its compressed form.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, new_empty_array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::concat;
use arrow::datatypes::{DataType, Field};
use datafusion::common::{DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::Accumulator;

use super::Measure;
use crate::codec::Placement;
use crate::column::{self, CodecChoice};

/// One group's values, compressed when evaluated.
#[derive(Debug)]
pub(super) struct WholeGroupAccumulator {
    measure: Measure,
    codec: CodecChoice,
    placement: Placement,
    data_type: DataType,
    arrays: Vec<ArrayRef>,
    rows: usize,
}

impl WholeGroupAccumulator {
    pub(super) fn new(
        measure: Measure,
        codec: CodecChoice,
        placement: Placement,
        data_type: DataType,
    ) -> Self {
        WholeGroupAccumulator {
            measure,
            codec,
            placement,
            data_type,
            arrays: Vec::new(),
            rows: 0,
        }
    }

    fn push(&mut self, array: ArrayRef) {
        if !array.is_empty() {
            self.rows += array.len();
            self.arrays.push(array);
        }
    }

    /// The group's values as one array, in the order they arrived.
    fn values(&self) -> Result<ArrayRef> {
        Ok(match self.arrays.as_slice() {
            [] => new_empty_array(&self.data_type),
            [one] => Arc::clone(one),
            many => concat(&many.iter().map(|a| a.as_ref()).collect::<Vec<_>>())?,
        })
    }
}

impl Accumulator for WholeGroupAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.push(Arc::clone(&values[0]));
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for i in 0..lists.len() {
            if lists.is_valid(i) {
                self.push(lists.value(i));
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values = self.values()?;
        let field = Arc::new(Field::new_list_field(self.data_type.clone(), true));
        let list = ListArray::try_new(
            field,
            OffsetBuffer::from_lengths([values.len()]),
            values,
            None,
        )?;
        Ok(vec![ScalarValue::List(Arc::new(list))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.rows == 0 {
            return Ok(self.measure.result(0, 0, 0));
        }
        let values = self.values()?;
        let compressed = column::compress_on(values.as_ref(), &self.codec, self.placement)
            .map_err(DataFusionError::from)?;
        Ok(self.measure.result(
            self.rows as u64,
            compressed.plain_bytes() as u64,
            compressed.compressed_bytes() as u64,
        ))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
            + self
                .arrays
                .iter()
                .map(|a| a.get_array_memory_size())
                .sum::<usize>()
    }
}
