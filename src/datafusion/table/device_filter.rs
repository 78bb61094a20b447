//! A scan's exact filter evaluated on the GPU, where the window's columns are decoded:
//! when every conjunct reads one column, and that column is fixed-width values without
//! nulls tested on its plain parts (`plain_test`) or a dictionary in every block of the
//! window, the window's parts go to the GPU compressed, the tests and the copying of the
//! passing rows run there ([`column::select`]), and only the passing rows come back, with
//! a bitmap of them.
//!
//! A dictionary's conjunct is evaluated on the host on each block's dictionary values
//! (a few thousand at most) by DataFusion's own expression, and the GPU tests the keys
//! against those answers: equality, `IN`, `LIKE` and any other one-column predicate on a
//! low-cardinality string never decode a string on the GPU. Its passing keys come back
//! and the host makes the strings from them, decoding each block's dictionary once a
//! window.
//!
//! The passing rows come back at their stored widths (a decimal at four or eight bytes,
//! a dictionary's two-byte keys), and the host widens decimals and takes strings' views
//! by key. Building them on the GPU instead (16 bytes a row for both) is slower
//! (docs/PERFORMANCE.md): four to eight times the bytes cross PCIe, through one copy
//! engine for all the partitions, to save host work of a nanosecond or two a row.
//!
//! Projected columns of other forms (strings without a dictionary, nulls) are decoded on
//! the host, only for blocks with passing rows, and filtered with that bitmap. A scan
//! without a filter takes the same path with no test, so that its fixed-width and
//! dictionary columns are decoded from the streams resident on the GPU rather than
//! uploaded again. The answers are those of the tests on the host, which are
//! DataFusion's: a value passes a test exactly when it does there, and these columns hold
//! no NULLs.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::buffer::BooleanBuffer;
use arrow::datatypes::{DataType, Schema, SchemaRef};
use cudarc::driver::CudaView;
use datafusion::error::{DataFusionError, Result};
use rayon::prelude::*;

use super::Block;
use super::dictionary;
use super::plain_test;
use super::plain_test::PlainTest;
use super::row_filter::RowFilter;
use crate::column::{self, PlainNode, select};
use crate::gpu::Gpu;

/// A filter's tests as the GPU evaluates them, by table column.
pub(super) struct DeviceTests {
    tests: Vec<(usize, DeviceTest)>,
    /// The filter the tests come from, for those evaluated on dictionaries.
    filter: Option<Arc<RowFilter>>,
}

/// One conjunct as the GPU tests it.
#[derive(Clone)]
enum DeviceTest {
    /// A test on the column's plain values.
    Value(select::ValueTest),
    /// Conjunct `index` of the filter, evaluated on each block's dictionary values; the
    /// GPU then tests the keys against the answers.
    Dictionary(usize),
}

impl DeviceTests {
    /// The tests of `filter` when every conjunct reads one column.
    pub(super) fn of(filter: &Arc<RowFilter>) -> Option<DeviceTests> {
        let tests = filter
            .one_column_conjuncts()?
            .into_iter()
            .map(|(column, plain, index)| {
                let test = match plain {
                    Some(test) => DeviceTest::Value(value_test(test)),
                    None => DeviceTest::Dictionary(index),
                };
                (column, test)
            })
            .collect();
        Some(DeviceTests {
            tests,
            filter: Some(filter.clone()),
        })
    }

    /// No test: every row passes. A scan without a filter decodes its fixed-width
    /// columns this way from the streams resident on the GPU.
    pub(super) fn every_row() -> DeviceTests {
        DeviceTests {
            tests: Vec::new(),
            filter: None,
        }
    }

    /// The tests of `window`'s blocks as the GPU runs them, by table column: a
    /// dictionary test becomes a lookup of each block's answers. `None` when a column a
    /// test reads is not in the form the GPU tests in every block.
    fn for_window(
        &self,
        window: &Window<'_>,
        dictionaries: &Dictionaries,
    ) -> Result<Option<Vec<(usize, select::ValueTest)>>> {
        let mut out = Vec::with_capacity(self.tests.len());
        for (c, test) in &self.tests {
            let c = *c;
            let test = match test {
                DeviceTest::Value(test) if on_device(window, c) => test.clone(),
                DeviceTest::Dictionary(index) if dictionary_on_device(window, c) => {
                    let Some(filter) = &self.filter else {
                        return Ok(None);
                    };
                    let mut passing = Vec::with_capacity(window.blocks.len());
                    for values in dictionaries.of(c)? {
                        passing.push(filter.answers_on_values(*index, values.clone())?);
                    }
                    select::ValueTest::Lookup(passing)
                }
                _ => {
                    crate::trace::line(|| {
                        format!(
                            "device filter: column {} is not fixed-width values or dictionary keys without nulls in every block; the window is filtered on the host",
                            window.table.field(c).name()
                        )
                    });
                    return Ok(None);
                }
            };
            out.push((c, test));
        }
        Ok(Some(out))
    }

    /// About what share of `block`'s rows pass, from its zones alone: the product, over
    /// the tests, of the share of the column's `[min, max]` each keeps, as if the values
    /// were spread evenly there. It only sizes a scan's windows; a column without a zone
    /// counts as keeping every row.
    pub(super) fn passing_share(&self, block: &Block, table: &Schema) -> f64 {
        self.tests
            .iter()
            .map(|(c, test)| {
                let DeviceTest::Value(test) = test else {
                    return 1.0;
                };
                let Some(zone) = block.zones.get(*c).and_then(Option::as_ref) else {
                    return 1.0;
                };
                let ty = table.field(*c).data_type();
                let (min, max) = zone.bounds();
                match (
                    plain_test::integer_value(min, ty),
                    plain_test::integer_value(max, ty),
                ) {
                    (Some(min), Some(max)) if min <= max => share_of_zone(test, min, max),
                    _ => 1.0,
                }
            })
            .product::<f64>()
            .clamp(0.0, 1.0)
    }
}

/// The share of the integers `min..=max` that `test` keeps.
fn share_of_zone(test: &select::ValueTest, min: i128, max: i128) -> f64 {
    use select::ValueTest;
    let span = (max - min + 1) as f64;
    match test {
        ValueTest::Range { lo, hi } => {
            let (lo, hi) = (i128::from(*lo).max(min), i128::from(*hi).min(max));
            if lo > hi {
                0.0
            } else {
                (hi - lo + 1) as f64 / span
            }
        }
        ValueTest::In {
            values,
            negated: false,
        } => {
            let inside = values
                .iter()
                .filter(|&&v| (min..=max).contains(&i128::from(v)))
                .count();
            (inside as f64 / span).min(1.0)
        }
        ValueTest::Never => 0.0,
        ValueTest::NotEqual(_)
        | ValueTest::In { negated: true, .. }
        | ValueTest::Always
        | ValueTest::Lookup(_) => 1.0,
    }
}

/// `test` on values without NULLs, in 64-bit arithmetic: every value a selectable column
/// holds fits an i64, so bounds beyond it clamp (or leave nothing to pass).
fn value_test(test: &PlainTest) -> select::ValueTest {
    use select::ValueTest;
    let fits = |x: i128| i64::try_from(x).ok();
    match test {
        PlainTest::Range { lo, hi } => {
            let (lo, hi) = ((*lo).max(i64::MIN.into()), (*hi).min(i64::MAX.into()));
            match (fits(lo), fits(hi)) {
                (Some(lo), Some(hi)) if lo <= hi => ValueTest::Range { lo, hi },
                _ => ValueTest::Never,
            }
        }
        PlainTest::NotEqual(x) => fits(*x).map_or(ValueTest::Always, ValueTest::NotEqual),
        PlainTest::In { values, negated } => ValueTest::In {
            values: values.iter().filter_map(|&v| fits(v)).collect(),
            negated: *negated,
        },
        PlainTest::IsNull { negated: true } => ValueTest::Always,
        PlainTest::IsNull { negated: false } => ValueTest::Never,
    }
}

/// What a window's selection on the GPU gave.
pub(super) struct Selected {
    /// The passing rows of each block.
    pub masks: Vec<BooleanBuffer>,
    /// Each block's passing rows of the columns selected on the GPU ([`Self::outputs`]),
    /// at their stored widths: built into arrays by [`Selected::array`].
    nodes: Vec<Vec<PlainNode>>,
    /// The projected table columns the GPU selected, in the order of each block's nodes.
    outputs: Vec<usize>,
    /// The dictionaries of those stored as dictionaries.
    dictionaries: Dictionaries,
    /// The projected table columns the GPU does not select from (strings,
    /// dictionaries, columns with nulls): the caller decodes them on the host for the
    /// blocks with passing rows and keeps those rows.
    pub host_columns: Vec<usize>,
    /// Compressed bytes sent to the GPU, and bytes brought back.
    pub bytes_to_device: usize,
    pub bytes_from_device: usize,
}

/// What a window's selection needs of the scan.
pub(super) struct Window<'a> {
    pub blocks: &'a [&'a Block],
    pub table: &'a SchemaRef,
    pub projection: &'a [usize],
    /// Whether blocks not yet on the GPU stay there once uploaded.
    pub keep_resident: bool,
}

/// Whether table column `c` of every block of `window` is one the GPU selects from, in
/// the table's own type.
fn on_device(window: &Window<'_>, c: usize) -> bool {
    window.blocks.iter().all(|block| {
        let column = &block.columns[c];
        select::selectable(column) && column.data_type() == window.table.field(c).data_type()
    })
}

/// Whether every block of `window` stores table column `c` as a dictionary whose keys the
/// GPU selects from (the host makes the column's values from the keys and the
/// dictionary).
fn dictionary_on_device(window: &Window<'_>, c: usize) -> bool {
    window.blocks.iter().all(|block| {
        let column = &block.columns[c];
        matches!(column.data_type(), DataType::Dictionary(..)) && select::selectable(column)
    })
}

/// The dictionary values of `block`'s column `c` (stored as a dictionary), in the table's
/// type `ty`.
fn dictionary_values(block: &Block, c: usize, ty: &DataType) -> Result<ArrayRef> {
    let column = &block.columns[c];
    let DataType::Dictionary(_, value_type) = column.data_type() else {
        return Err(DataFusionError::Internal(format!(
            "column {c} of a block is {}, not a dictionary",
            column.data_type()
        )));
    };
    let child = column.root().children.first().ok_or_else(|| {
        DataFusionError::Internal("a dictionary column without its values".into())
    })?;
    let plain = column::decompress_node(child).map_err(DataFusionError::from)?;
    let values = column::plain::decode(value_type, plain).map_err(DataFusionError::from)?;
    dictionary::in_table_type(values, ty).map_err(DataFusionError::from)
}

/// The dictionary values, in the table's type, of each block of a window, for the
/// columns that every block stores as a dictionary the GPU selects from: decoded once a
/// window, for its tests and its outputs both.
#[derive(Default)]
struct Dictionaries(HashMap<usize, Vec<ArrayRef>>);

impl Dictionaries {
    /// Decodes those of `columns` not decoded yet.
    fn decode(&mut self, window: &Window<'_>, columns: impl Iterator<Item = usize>) -> Result<()> {
        for c in columns {
            if self.0.contains_key(&c) || !dictionary_on_device(window, c) {
                continue;
            }
            let ty = window.table.field(c).data_type();
            let values = window
                .blocks
                .par_iter()
                .map(|block| dictionary_values(block, c, ty))
                .collect::<Result<Vec<_>>>()?;
            self.0.insert(c, values);
        }
        Ok(())
    }

    /// Each block's values of table column `c`.
    fn of(&self, c: usize) -> Result<&[ArrayRef]> {
        self.0.get(&c).map(Vec::as_slice).ok_or_else(|| {
            DataFusionError::Internal(format!("column {c}'s dictionaries were not decoded"))
        })
    }
}

/// The GPU the first block of `window` is resident on, when it is.
fn home_gpu(window: &Window<'_>) -> Option<&'static Gpu> {
    let ordinal = window.blocks.first()?.resident.get()?.as_ref()?.ordinal();
    Gpu::all()
        .ok()?
        .iter()
        .find(|gpu| gpu.info().ordinal == ordinal)
}

/// Selects `window`'s rows on `gpu` with `tests`; `None` when a column the tests read is
/// not in a form the GPU tests (the caller then filters on the host).
pub(super) fn select_window(
    gpu: &Gpu,
    tests: &DeviceTests,
    window: &Window<'_>,
) -> Result<Option<Selected>> {
    // The tested columns' dictionaries first: a window the GPU cannot test decodes no
    // other.
    let mut dictionaries = Dictionaries::default();
    dictionaries.decode(window, tests.tests.iter().map(|(c, _)| *c))?;
    let Some(window_tests) = tests.for_window(window, &dictionaries)? else {
        return Ok(None);
    };
    let mut tested: Vec<usize> = window_tests.iter().map(|(c, _)| *c).collect();
    tested.sort_unstable();
    tested.dedup();
    let (device_outputs, mut host_columns): (Vec<usize>, Vec<usize>) =
        window.projection.iter().partition(|&&c| {
            tested.binary_search(&c).is_ok()
                || on_device(window, c)
                || dictionary_on_device(window, c)
        });
    host_columns.sort_unstable();
    host_columns.dedup();
    if tested.is_empty() && device_outputs.is_empty() {
        // Nothing for the GPU to test or decode.
        return Ok(None);
    }
    dictionaries.decode(window, device_outputs.iter().copied())?;
    let mut columns: Vec<usize> = tested.iter().chain(&device_outputs).copied().collect();
    columns.sort_unstable();
    columns.dedup();
    let lists: Vec<Vec<&column::CompressedColumn>> = window
        .blocks
        .iter()
        .map(|block| columns.iter().map(|&c| &block.columns[c]).collect())
        .collect();
    // The blocks' columns stay on the GPU that first selected from them.
    let gpu = home_gpu(window).unwrap_or(gpu);
    let mut uploaded = 0;
    for block in window.blocks.iter().filter(|_| window.keep_resident) {
        block.resident.get_or_init(|| {
            let all: Vec<&column::CompressedColumn> = block.columns.iter().collect();
            let resident = select::make_resident(gpu, &all).ok().flatten();
            uploaded += resident.as_ref().map_or(0, |r| r.bytes());
            resident
        });
    }
    let streams: Vec<Vec<Option<CudaView<'_, u8>>>> = window
        .blocks
        .iter()
        .map(|block| {
            let resident = block
                .resident
                .get()
                .and_then(Option::as_ref)
                .filter(|r| r.ordinal() == gpu.info().ordinal);
            columns
                .iter()
                .map(|&c| resident.and_then(|r| r.stream(c)))
                .collect()
        })
        .collect();
    crate::trace::line(|| {
        let resident = streams.iter().flatten().filter(|s| s.is_some()).count();
        format!(
            "device filter: {} blocks, {resident} of {} column streams resident, {uploaded} bytes made resident",
            window.blocks.len(),
            streams.iter().map(Vec::len).sum::<usize>()
        )
    });
    let at = |c: usize| columns.binary_search(&c).expect("a listed column");
    let column_tests: Vec<select::ColumnTest> = window_tests
        .into_iter()
        .map(|(c, test)| select::ColumnTest {
            column: at(c),
            test,
            // A dictionary's keys are read as its key type; other tested columns are
            // stored in the table's type.
            signed: match lists.first().map(|columns| columns[at(c)].data_type()) {
                Some(DataType::Dictionary(key_type, _)) => signed(key_type),
                _ => signed(window.table.field(c).data_type()),
            },
        })
        .collect();
    let outputs: Vec<usize> = device_outputs.iter().map(|&c| at(c)).collect();
    let selected = match select::select_on_gpu(gpu, &lists, &streams, &column_tests, &outputs) {
        Ok(selected) => selected,
        // The host path decodes the window as the placement says (there, a batch the
        // GPU has no memory for runs on the CPU under `auto`, or fails under `gpu`).
        Err(e) if out_of_device_memory(&e) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    // What crossed PCIe for this window: the blocks made resident now, and the streams
    // of blocks that are not.
    let bytes_to_device = uploaded
        + lists
            .iter()
            .flatten()
            .zip(streams.iter().flatten())
            .filter(|(_, resident)| resident.is_none())
            .map(|(c, _)| c.compressed_bytes())
            .sum::<usize>();
    let bytes_from_device = selected
        .iter()
        .map(|block| {
            block.passing.inner().len() + block.nodes.iter().map(|n| n.plain_bytes()).sum::<usize>()
        })
        .sum();
    let (masks, nodes) = selected
        .into_iter()
        .map(|block| (block.passing, block.nodes))
        .unzip();
    Ok(Some(Selected {
        masks,
        nodes,
        outputs: device_outputs,
        dictionaries,
        host_columns,
        bytes_to_device,
        bytes_from_device,
    }))
}

impl Selected {
    /// Whether table column `c` is one the GPU selected (the others are
    /// [`Self::host_columns`]).
    pub fn on_device(&self, c: usize) -> bool {
        self.outputs.contains(&c)
    }

    /// The rows of table column `c` (one the GPU selected) of the window's block `b` (of
    /// `block`), in the table's type `ty`: its passing rows, or of those the ones `keep`
    /// marks (a bit for each passing row). Only the rows returned are widened, and only
    /// their strings made from a dictionary's keys.
    pub fn array(
        &self,
        block: &Block,
        b: usize,
        c: usize,
        ty: &DataType,
        keep: Option<&BooleanBuffer>,
    ) -> Result<ArrayRef> {
        let at = self.outputs.iter().position(|&o| o == c).ok_or_else(|| {
            DataFusionError::Internal(format!("column {c} was not selected on the GPU"))
        })?;
        let node = self
            .nodes
            .get(b)
            .and_then(|nodes| nodes.get(at))
            .ok_or_else(|| {
                DataFusionError::Internal(format!("block {b} has no selected column {c}"))
            })?
            .clone();
        let decode = |ty: &DataType| match keep {
            Some(keep) => column::decode_rows(ty, node.clone(), keep),
            None => column::plain::decode(ty, node.clone()),
        };
        match block.columns[c].data_type() {
            DataType::Dictionary(key_type, _) => {
                let keys = decode(key_type).map_err(DataFusionError::from)?;
                keyed_values(&keys, &self.dictionaries.of(c)?[b])
            }
            _ => {
                let array = decode(ty).map_err(DataFusionError::from)?;
                dictionary::in_table_type(array, ty).map_err(DataFusionError::from)
            }
        }
    }
}

/// Each of `keys` (a dictionary's keys, without nulls) replaced by its value of `values`.
fn keyed_values(keys: &ArrayRef, values: &ArrayRef) -> Result<ArrayRef> {
    Ok(arrow::compute::take(values.as_ref(), keys.as_ref(), None)?)
}

fn out_of_device_memory(error: &crate::Error) -> bool {
    use crate::codec::CodecError;
    use crate::gpu::GpuError;
    matches!(
        error,
        crate::Error::Gpu(GpuError::OutOfMemory { .. })
            | crate::Error::Codec(CodecError::Gpu(GpuError::OutOfMemory { .. }))
    )
}

/// Whether the values of `ty` are read sign-extended.
fn signed(ty: &DataType) -> bool {
    !matches!(
        ty,
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use select::ValueTest;

    #[test]
    fn zones_give_the_share_a_test_keeps() {
        let range = ValueTest::Range { lo: 10, hi: 19 };
        assert_eq!(share_of_zone(&range, 0, 99), 0.1);
        assert_eq!(share_of_zone(&range, 15, 24), 0.5);
        assert_eq!(share_of_zone(&range, 20, 99), 0.0);
        let wide = ValueTest::Range {
            lo: i64::MIN,
            hi: i64::MAX,
        };
        assert_eq!(share_of_zone(&wide, i64::MIN.into(), i64::MAX.into()), 1.0);
        let list = ValueTest::In {
            values: vec![1, 5, 500],
            negated: false,
        };
        assert_eq!(share_of_zone(&list, 0, 9), 0.2);
        assert_eq!(share_of_zone(&list, 1, 1), 1.0);
        assert_eq!(share_of_zone(&ValueTest::NotEqual(3), 0, 9), 1.0);
        assert_eq!(share_of_zone(&ValueTest::Never, 0, 9), 0.0);
    }

    #[test]
    fn tests_clamp_to_64_bits_and_nulls_are_absent() {
        let big = i128::from(i64::MAX) + 5;
        assert_eq!(
            value_test(&PlainTest::Range { lo: 3, hi: big }),
            ValueTest::Range {
                lo: 3,
                hi: i64::MAX
            }
        );
        assert_eq!(
            value_test(&PlainTest::Range { lo: big, hi: big }),
            ValueTest::Never
        );
        assert_eq!(
            value_test(&PlainTest::Range { lo: 4, hi: 3 }),
            ValueTest::Never
        );
        assert_eq!(value_test(&PlainTest::NotEqual(big)), ValueTest::Always);
        assert_eq!(
            value_test(&PlainTest::In {
                values: vec![1, big],
                negated: true
            }),
            ValueTest::In {
                values: vec![1],
                negated: true
            }
        );
        assert_eq!(
            value_test(&PlainTest::IsNull { negated: false }),
            ValueTest::Never
        );
    }
}
