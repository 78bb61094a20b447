//! One block's columns as a filtered scan decodes them: the plain parts first, the arrays
//! built from them only when something needs them. A filter tested on the plain parts
//! never builds its columns' arrays; a block of which some rows fail builds only the
//! passing rows of its projected columns.

use std::sync::OnceLock;

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::error::{DataFusionError, Result};

use super::Block;
use super::dictionary;
use crate::column::{self, PlainNode};

/// A block's decoded columns, by table column.
pub(crate) struct DecodedBlock<'a> {
    block: &'a Block,
    table: &'a SchemaRef,
    columns: Vec<Option<Decoded>>,
}

struct Decoded {
    node: PlainNode,
    /// The array in the type the block stores (a dictionary for dictionary strings).
    stored: OnceLock<ArrayRef>,
    /// The array in the table's type.
    array: OnceLock<ArrayRef>,
}

impl<'a> DecodedBlock<'a> {
    pub(crate) fn new(block: &'a Block, table: &'a SchemaRef) -> Self {
        DecodedBlock {
            block,
            table,
            columns: (0..table.fields().len()).map(|_| None).collect(),
        }
    }

    /// Adds the plain node of table column `column`.
    pub(crate) fn insert(&mut self, column: usize, node: PlainNode) {
        self.columns[column] = Some(Decoded {
            node,
            stored: OnceLock::new(),
            array: OnceLock::new(),
        });
    }

    /// The block itself.
    pub(crate) fn block(&self) -> &'a Block {
        self.block
    }

    pub(crate) fn rows(&self) -> usize {
        self.block.rows
    }

    /// The type the block stores `column` in.
    pub(crate) fn stored_type(&self, column: usize) -> &DataType {
        self.block.columns[column].data_type()
    }

    /// The type of `column` in the table.
    pub(crate) fn table_type(&self, column: usize) -> &DataType {
        self.table.field(column).data_type()
    }

    fn decoded(&self, column: usize) -> Result<&Decoded> {
        self.columns
            .get(column)
            .and_then(Option::as_ref)
            .ok_or_else(|| {
                DataFusionError::Internal(format!("column {column} of a block was not decoded"))
            })
    }

    /// The plain node of `column`.
    pub(crate) fn node(&self, column: usize) -> Result<&PlainNode> {
        Ok(&self.decoded(column)?.node)
    }

    /// `column`'s array in the type the block stores it in.
    pub(crate) fn stored_array(&self, column: usize) -> Result<ArrayRef> {
        let decoded = self.decoded(column)?;
        if let Some(array) = decoded.stored.get() {
            return Ok(array.clone());
        }
        let array = column::plain::decode(self.stored_type(column), decoded.node.clone())
            .map_err(DataFusionError::from)?;
        Ok(decoded.stored.get_or_init(|| array).clone())
    }

    /// `column`'s array in the table's type.
    pub(crate) fn array(&self, column: usize) -> Result<ArrayRef> {
        let decoded = self.decoded(column)?;
        if let Some(array) = decoded.array.get() {
            return Ok(array.clone());
        }
        let array = dictionary::in_table_type(self.stored_array(column)?, self.table_type(column))
            .map_err(DataFusionError::from)?;
        Ok(decoded.array.get_or_init(|| array).clone())
    }

    /// The rows of `column` where `keep` is set, in the table's type. Fixed-width values
    /// are gathered from the plain parts and only the kept ones widened; a dictionary is
    /// filtered before its strings are made.
    pub(crate) fn kept_rows(&self, column: usize, keep: &BooleanBuffer) -> Result<ArrayRef> {
        let decoded = self.decoded(column)?;
        let filter = |array: &ArrayRef| -> Result<ArrayRef> {
            Ok(arrow::compute::filter(
                array,
                &BooleanArray::new(keep.clone(), None),
            )?)
        };
        let stored = if let Some(array) = decoded.array.get() {
            return filter(array);
        } else if let Some(array) = decoded.stored.get() {
            filter(array)?
        } else if matches!(self.stored_type(column), DataType::Dictionary(..)) {
            filter(&self.stored_array(column)?)?
        } else {
            column::decode_rows(self.stored_type(column), decoded.node.clone(), keep)
                .map_err(DataFusionError::from)?
        };
        if stored.len() != keep.count_set_bits() {
            return Err(DataFusionError::Internal(format!(
                "{} rows kept of a column for {} set bits",
                stored.len(),
                keep.count_set_bits()
            )));
        }
        dictionary::in_table_type(stored, self.table_type(column)).map_err(DataFusionError::from)
    }
}
