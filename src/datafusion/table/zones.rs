//! Zone maps: each block keeps the minimum and maximum of its columns, taken from the plain
//! arrays before compression, so that a scan skips (never decompresses) the blocks a
//! pushed filter rules out. DataFusion's [`PruningPredicate`] reads them through
//! [`PruningStatistics`], as it reads Parquet row groups' statistics. Pruning only saves
//! work: the rows of the blocks scanned are still filtered, by the scan (the filters it
//! evaluates itself) or above it (the others).

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, ArrowPrimitiveType, AsArray, BooleanArray, PrimitiveArray, UInt64Array,
    downcast_primitive_array,
};
use arrow::compute;
use arrow::datatypes::{DataType, Schema};
use datafusion::common::pruning::PruningStatistics;
use datafusion::common::{Column, ScalarValue};
use datafusion::physical_optimizer::pruning::PruningPredicate;

use super::{Block, sql_null_count};

/// The smallest and largest non-null value of one column of a block.
#[derive(Clone, Debug)]
pub(crate) struct Zone {
    min: ScalarValue,
    max: ScalarValue,
}

impl Zone {
    /// The smallest and the largest non-null value.
    pub(crate) fn bounds(&self) -> (&ScalarValue, &ScalarValue) {
        (&self.min, &self.max)
    }

    /// The zone of `array`, or `None` for types without one here (floats, whose NaNs
    /// order differently in Arrow and SQL; nested and binary types) and arrays without a
    /// non-null value.
    pub(crate) fn of(array: &dyn Array) -> Option<Zone> {
        fn primitive<T: ArrowPrimitiveType>(a: &PrimitiveArray<T>) -> Option<Zone> {
            let ty = a.data_type();
            Some(Zone {
                min: ScalarValue::new_primitive::<T>(Some(compute::min(a)?), ty).ok()?,
                max: ScalarValue::new_primitive::<T>(Some(compute::max(a)?), ty).ok()?,
            })
        }
        let text =
            |min: Option<&str>, max: Option<&str>, wrap: fn(Option<String>) -> ScalarValue| {
                Some(Zone {
                    min: wrap(Some(min?.to_string())),
                    max: wrap(Some(max?.to_string())),
                })
            };
        match array.data_type() {
            DataType::Float16 | DataType::Float32 | DataType::Float64 => None,
            DataType::Utf8 => {
                let a = array.as_string::<i32>();
                text(
                    compute::min_string(a),
                    compute::max_string(a),
                    ScalarValue::Utf8,
                )
            }
            DataType::LargeUtf8 => {
                let a = array.as_string::<i64>();
                text(
                    compute::min_string(a),
                    compute::max_string(a),
                    ScalarValue::LargeUtf8,
                )
            }
            DataType::Utf8View => {
                let a = array.as_string_view();
                text(
                    compute::min_string_view(a),
                    compute::max_string_view(a),
                    ScalarValue::Utf8View,
                )
            }
            _ => downcast_primitive_array!(
                array => primitive(array),
                _ => None
            ),
        }
    }
}

/// The zones of a run of blocks, as the containers a [`PruningPredicate`] prunes.
pub(crate) struct BlockZones<'a> {
    pub blocks: &'a [Arc<Block>],
    pub schema: &'a Schema,
}

impl BlockZones<'_> {
    /// Every block's `pick` of its zone of `column` (typed nulls where a block has none);
    /// `None` when no block has one.
    fn values(&self, column: &Column, pick: fn(&Zone) -> &ScalarValue) -> Option<ArrayRef> {
        let index = self.schema.index_of(&column.name).ok()?;
        if self.blocks.iter().all(|b| b.zones[index].is_none()) {
            return None;
        }
        let null = ScalarValue::try_from(self.schema.field(index).data_type()).ok()?;
        let values = self.blocks.iter().map(|b| {
            b.zones[index]
                .as_ref()
                .map_or_else(|| null.clone(), |z| pick(z).clone())
        });
        ScalarValue::iter_to_array(values).ok()
    }
}

impl PruningStatistics for BlockZones<'_> {
    fn min_values(&self, column: &Column) -> Option<ArrayRef> {
        self.values(column, |z| &z.min)
    }

    fn max_values(&self, column: &Column) -> Option<ArrayRef> {
        self.values(column, |z| &z.max)
    }

    fn num_containers(&self) -> usize {
        self.blocks.len()
    }

    /// Null counts as queries count them; a block whose container does not tell them
    /// (a union's, say) has a null entry, which prunes nothing.
    fn null_counts(&self, column: &Column) -> Option<ArrayRef> {
        let index = self.schema.index_of(&column.name).ok()?;
        let counts = self
            .blocks
            .iter()
            .map(|b| sql_null_count(&b.columns[index]).map(|n| n as u64));
        Some(Arc::new(UInt64Array::from_iter(counts)))
    }

    fn row_counts(&self) -> Option<ArrayRef> {
        let rows = self.blocks.iter().map(|b| b.rows as u64);
        Some(Arc::new(UInt64Array::from_iter_values(rows)))
    }

    fn contained(&self, _column: &Column, _values: &HashSet<ScalarValue>) -> Option<BooleanArray> {
        None
    }
}

/// Which of `blocks` may hold rows `predicate` keeps (all of them when it cannot tell).
pub(crate) fn blocks_to_scan(
    predicate: &PruningPredicate,
    blocks: &[Arc<Block>],
    schema: &Schema,
) -> Vec<bool> {
    predicate
        .prune(&BlockZones { blocks, schema })
        .unwrap_or_else(|_| vec![true; blocks.len()])
}
