//! Row selection on the GPU over compressed columns of fixed-width integers: the columns'
//! parts are decoded into device memory, a conjunction of tests on their values is
//! evaluated there, and only the rows that pass, of the columns asked for, are copied
//! together on the device and brought to the host, with a bitmap of the passing rows.
//! What crosses PCIe is the compressed streams one way and the passing rows the other.
//!
//! The columns are those whose node is one part of values of 1, 2, 4 or 8 bytes, without
//! nulls ([`selectable`]): integers, dates, times, timestamps, durations, decimals at
//! their stored width, floats (copied, never tested). The caller evaluates anything else
//! on the host. The codecs' decoders check every stream on the device as they do on the
//! host; the parts' checksums, which only the host computes, are not checked on this
//! path.
//!
//! The rows come back on one buffer of the [`PinnedPool`] when it has room (ordinary
//! memory otherwise): the device writes them there, and each block's nodes are slices of
//! it.

mod device_parts;
mod launch;
mod resident;

use arrow::buffer::{BooleanBuffer, Buffer};
use cudarc::driver::CudaView;

use super::{CompressedColumn, PartRole, PlainNode, PlainPart};
use crate::codec::CodecId;
use crate::gpu::{ArrayPack, Gpu, GpuError, Lane, PinnedPool, copy_to_host};
use crate::{Error, Result};
use device_parts::{VALUES, address, decode_parts};
use launch::{CompactLaunch, SelectKernels, TILE_ROWS, TestLaunch, Tiles};

pub use launch::SELECT;
pub use resident::{ResidentColumns, make_resident};

/// A test of a column's values, read as 64-bit integers (sign- or zero-extended).
#[derive(Clone, Debug, PartialEq)]
pub enum ValueTest {
    /// `lo <= value <= hi`.
    Range { lo: i64, hi: i64 },
    /// `value <> x`.
    NotEqual(i64),
    /// `value IN (values)`, or `NOT IN` when `negated`.
    In { values: Vec<i64>, negated: bool },
    /// No row passes.
    Never,
    /// Every row passes.
    Always,
    /// A value `v` of block `b` passes when `passing[b][v]` is true; values outside the
    /// block's table fail. A dictionary's keys are tested this way, with the answer of
    /// each of the block's dictionary values.
    Lookup(Vec<Vec<bool>>),
}

/// A test of one column of a selection.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnTest {
    /// The column, an index into each block's columns.
    pub column: usize,
    pub test: ValueTest,
    /// Whether the values are signed (read sign-extended).
    pub signed: bool,
}

/// What [`select_on_gpu`] gives for each block.
#[derive(Debug)]
pub struct SelectedBlock {
    /// The rows that pass, one bit per row of the block.
    pub passing: BooleanBuffer,
    /// The passing rows of each output column, in the order asked for.
    pub nodes: Vec<PlainNode>,
}

/// Whether `column` is in the form [`select_on_gpu`] reads: one part of values, 1, 2, 4
/// or 8 bytes each, no nulls, no children (a dictionary's keys, whose values are its one
/// child), stored or compressed with a codec whose device-resident decoder leaves its
/// outputs in device memory (intpack, lzss).
pub fn selectable(column: &CompressedColumn) -> bool {
    values_part(column).is_some()
}

fn values_part(column: &CompressedColumn) -> Option<&super::CompressedPart> {
    let root = column.root();
    let children = match column.data_type() {
        arrow::datatypes::DataType::Dictionary(..) => 1,
        _ => 0,
    };
    match root.parts.as_slice() {
        [part]
            if root.null_count == 0
                && root.children.len() == children
                && part.role == PartRole::Values
                && matches!(part.width, 1 | 2 | 4 | 8)
                && Some(part.raw_len) == root.rows.checked_mul(part.width as usize)
                && (part.codec == CodecId::Stored || part.codec.decodes_into_device_memory()) =>
        {
            Some(part)
        }
        _ => None,
    }
}

/// Selects rows of `blocks` (each a list of columns, every list alike) on `gpu`: the
/// rows for which every test of `tests` holds (every row without tests), and of those
/// the values of the columns `outputs` (indexes into a block's list), each at the widest
/// of its blocks' widths (a decimal narrowed to four bytes in some blocks and eight in
/// others comes back eight bytes wide, sign-extended). Every column a test or output
/// names must be [`selectable`]. `resident`, when not empty, gives for each
/// block and column its compressed stream already on `gpu` ([`ResidentColumns`]), which
/// is then decoded from there instead of being uploaded.
pub fn select_on_gpu(
    gpu: &Gpu,
    blocks: &[Vec<&CompressedColumn>],
    resident: &[Vec<Option<CudaView<'_, u8>>>],
    tests: &[ColumnTest],
    outputs: &[usize],
) -> Result<Vec<SelectedBlock>> {
    if blocks.is_empty() {
        return Ok(Vec::new());
    }
    let mut columns: Vec<usize> = tests
        .iter()
        .map(|t| t.column)
        .chain(outputs.iter().copied())
        .collect();
    columns.sort_unstable();
    columns.dedup();
    let mut rows = Vec::with_capacity(blocks.len());
    let mut parts = Vec::with_capacity(blocks.len() * columns.len());
    let mut streams: Vec<Option<CudaView<'_, u8>>> = Vec::with_capacity(parts.capacity());
    // The width of each block's values of each column, block by block.
    let mut widths = Vec::with_capacity(blocks.len() * columns.len());
    for block in blocks {
        let mut block_rows = None;
        for &k in &columns {
            let column = block.get(k).ok_or_else(|| {
                Error::Usage(format!(
                    "a selection names column {k} of a block of {}",
                    block.len()
                ))
            })?;
            let part = values_part(column).ok_or_else(|| {
                Error::Unsupported(format!(
                    "column {k} of a selection is not fixed-width values without nulls"
                ))
            })?;
            if *block_rows.get_or_insert(column.len()) != column.len() {
                return Err(Error::format("the columns of a block differ in rows"));
            }
            widths.push(part.width);
            parts.push(part);
            let b = rows.len();
            streams.push(
                resident
                    .get(b)
                    .and_then(|r| r.get(k))
                    .and_then(|v| v.as_ref().map(|v| v.slice(..))),
            );
        }
        rows.push(block_rows.unwrap_or(0));
    }
    if let Some(t) = tests
        .iter()
        .find(|t| matches!(&t.test, ValueTest::Lookup(passing) if passing.len() != rows.len()))
    {
        return Err(Error::Usage(format!(
            "a lookup test of column {} does not cover the selection's {} blocks",
            t.column,
            rows.len()
        )));
    }
    let column_of = |k: usize| columns.binary_search(&k).expect("a listed column");
    let width_of = |b: usize, at: usize| widths[b * columns.len() + at];
    // Each output's width: the widest of its blocks'.
    let output_widths: Vec<u32> = outputs
        .iter()
        .map(|&k| {
            let at = column_of(k);
            (0..rows.len()).map(|b| width_of(b, at)).max().unwrap_or(1)
        })
        .collect();
    let layout = Layout::new(&rows);
    if layout.tiles.is_empty() {
        return Ok(rows
            .iter()
            .map(|_| SelectedBlock {
                passing: BooleanBuffer::new_unset(0),
                nodes: output_widths.iter().map(|&w| empty_node(w)).collect(),
            })
            .collect());
    }
    let started = std::time::Instant::now();
    let mut lane = gpu.lane()?;
    let lane: &mut Lane = &mut lane;
    let waited = started.elapsed();
    let device = decode_parts(gpu, lane, &parts, &streams)?;
    let decoded = started.elapsed();
    let base = address(lane, &device.values, 0);
    let place = |b: usize, at: usize| base + device.offsets[b * columns.len() + at] as u64;
    let selected = run_kernels(gpu, lane, &layout, |pack| {
        let columns: Vec<(usize, usize)> = (0..columns.len())
            .map(|at| {
                let addresses: Vec<u64> = (0..rows.len()).map(|b| place(b, at)).collect();
                let block_widths: Vec<u32> = (0..rows.len()).map(|b| width_of(b, at)).collect();
                (pack.push_u64(&addresses), pack.push_u32(&block_widths))
            })
            .collect();
        let tests = tests
            .iter()
            .map(|t| (columns[column_of(t.column)], t))
            .collect();
        let outputs = outputs
            .iter()
            .zip(&output_widths)
            .map(|(&k, &width)| (columns[column_of(k)], width))
            .collect();
        (tests, outputs)
    });
    lane.put_device(VALUES, device.values);
    crate::trace::line(|| {
        format!(
            "select: {} rows of {} blocks, {} parts: lane {:.2} ms, parts decoded {:.2} ms, \
             selected {:.2} ms",
            layout.total,
            rows.len(),
            parts.len(),
            waited.as_secs_f64() * 1e3,
            (decoded - waited).as_secs_f64() * 1e3,
            (started.elapsed() - decoded).as_secs_f64() * 1e3
        )
    });
    selected
}

/// The window's rows as the kernels see them: where each block starts in the mask and in
/// the bitmap, and the tiles.
struct Layout {
    rows: Vec<usize>,
    /// Each block's first row in the mask.
    base: Vec<u64>,
    /// Each block's first u32 word in the bitmap.
    bits_at: Vec<u64>,
    words: usize,
    /// (block, first row, rows) of each tile.
    tiles: Vec<(u32, u32, u32)>,
    total: usize,
}

impl Layout {
    fn new(rows: &[usize]) -> Layout {
        let (mut base, mut bits_at, mut tiles) = (Vec::new(), Vec::new(), Vec::new());
        let (mut total, mut words) = (0usize, 0usize);
        for (b, &n) in rows.iter().enumerate() {
            base.push(total as u64);
            bits_at.push(words as u64);
            for start in (0..n).step_by(TILE_ROWS) {
                tiles.push((b as u32, start as u32, TILE_ROWS.min(n - start) as u32));
            }
            total += n;
            words += n.div_ceil(32);
        }
        Layout {
            rows: rows.to_vec(),
            base,
            bits_at,
            words,
            tiles,
            total,
        }
    }
}

/// A test's list of values in the pack (`IN` lists; one zero for the others, which the
/// kernel does not read). A lookup's list is, for each of its blocks, the word where its
/// bitmap starts and the values it covers, then the bitmaps (bit `v % 64` of word `v / 64`
/// for value `v`).
fn list_of(test: &ValueTest) -> (Vec<u64>, u32, u32, i64, i64) {
    match test {
        ValueTest::Lookup(passing) => {
            let blocks = passing.len();
            let mut list = vec![0u64; 2 * blocks];
            for (b, answers) in passing.iter().enumerate() {
                list[2 * b] = list.len() as u64;
                list[2 * b + 1] = answers.len() as u64;
                let mut words = vec![0u64; answers.len().div_ceil(64)];
                for (v, _) in answers.iter().enumerate().filter(|(_, pass)| **pass) {
                    words[v / 64] |= 1 << (v % 64);
                }
                list.extend(words);
            }
            if list.is_empty() {
                list.push(0);
            }
            let len = list.len() as u32;
            (list, len, 6, 0, 0)
        }
        ValueTest::Range { lo, hi } if lo > hi => (vec![0], 0, 4, 0, 0),
        ValueTest::Range { lo, hi } => (vec![0], 0, 0, *lo, *hi),
        ValueTest::NotEqual(x) => (vec![0], 0, 1, *x, 0),
        ValueTest::In { values, negated } => {
            let mut sorted = values.clone();
            sorted.sort_unstable();
            sorted.dedup();
            let len = sorted.len() as u32;
            let list = if sorted.is_empty() {
                vec![0]
            } else {
                sorted.iter().map(|&v| v as u64).collect()
            };
            (list, len, if *negated { 3 } else { 2 }, 0, 0)
        }
        ValueTest::Never => (vec![0], 0, 4, 0, 0),
        ValueTest::Always => (vec![0], 0, 5, 0, 0),
    }
}

/// A column's places in the meta pack: the spans of its blocks' addresses and widths.
type PackedColumn = (usize, usize);

/// The tests' and outputs' places in the meta pack: per test (its column, the test), per
/// output (its column, its width).
type Columns<'t> = (
    Vec<(PackedColumn, &'t ColumnTest)>,
    Vec<(PackedColumn, u32)>,
);

/// Runs the tests, the count and the copies of the passing rows, and brings them to the
/// host. `columns` adds the columns' addresses to the pack and says where they are.
fn run_kernels<'t>(
    gpu: &Gpu,
    lane: &mut Lane,
    layout: &Layout,
    columns: impl FnOnce(&mut ArrayPack) -> Columns<'t>,
) -> Result<Vec<SelectedBlock>> {
    let started = std::time::Instant::now();
    let kernels = SelectKernels::new(gpu)?;
    let mut pack = ArrayPack::new();
    let spans = [
        pack.push_u32(&layout.tiles.iter().map(|t| t.0).collect::<Vec<_>>()),
        pack.push_u32(&layout.tiles.iter().map(|t| t.1).collect::<Vec<_>>()),
        pack.push_u32(&layout.tiles.iter().map(|t| t.2).collect::<Vec<_>>()),
        pack.push_u64(&layout.base),
        pack.push_u64(&layout.bits_at),
    ];
    let (tests, outputs) = columns(&mut pack);
    let lists: Vec<_> = tests
        .iter()
        .map(|(_, t)| {
            let (list, len, op, lo, hi) = list_of(&t.test);
            (pack.push_u64(&list), len, op, lo, hi)
        })
        .collect();
    // Without tests one pass marks every row; it reads no value, but its arguments are
    // a column's (the blocks' bases, eight bytes wide).
    let every_row_widths = tests
        .is_empty()
        .then(|| pack.push_u32(&vec![8; layout.rows.len()]));
    let meta = pack.upload(gpu, lane, "select.meta", "select.meta")?;
    let view = |index: usize| meta.slice(pack.span(index));
    let tiles = Tiles {
        count: layout.tiles.len(),
        block: view(spans[0]),
        start: view(spans[1]),
        rows: view(spans[2]),
        base: view(spans[3]),
    };
    let stream = lane.stream().clone();
    let mut mask = lane.take_device("select.mask", layout.total)?;
    for (i, (((addresses, widths), test), (list, list_len, op, lo, hi))) in
        tests.iter().zip(&lists).enumerate()
    {
        let launch = TestLaunch {
            column: view(*addresses),
            widths: view(*widths),
            signed: test.signed,
            op: *op,
            lo: *lo,
            hi: *hi,
            list: view(*list),
            list_len: *list_len,
            first: i == 0,
        };
        launch::enqueue_test(&stream, &kernels, &tiles, &launch, &mut mask)?;
    }
    if let Some(widths) = every_row_widths {
        let launch = TestLaunch {
            column: view(spans[3]),
            widths: view(widths),
            signed: true,
            op: 5,
            lo: 0,
            hi: 0,
            list: view(spans[3]),
            list_len: 0,
            first: true,
        };
        launch::enqueue_test(&stream, &kernels, &tiles, &launch, &mut mask)?;
    }
    let mut bits = lane.take_device("select.bits", 4 * layout.words.max(1))?;
    let mut counts = lane.take_device("select.counts", 4 * layout.tiles.len())?;
    launch::enqueue_count(
        &stream,
        &kernels,
        &tiles,
        &mask,
        &view(spans[4]),
        &mut bits,
        &mut counts,
    )?;
    let mut tile_counts = vec![0u8; 4 * layout.tiles.len()];
    copy_to_host(
        &stream,
        &counts.slice(..tile_counts.len()),
        &mut tile_counts,
    )?;
    lane.synchronize()?;
    let counted = started.elapsed();

    // Where each tile's passing rows go, and how many each block has.
    let mut out_at = Vec::with_capacity(layout.tiles.len());
    let mut passing = vec![0usize; layout.rows.len()];
    let mut total = 0u64;
    for (tile, count) in layout.tiles.iter().zip(tile_counts.as_chunks::<4>().0) {
        let count = u32::from_le_bytes(*count);
        out_at.push(total);
        total += u64::from(count);
        passing[tile.0 as usize] += count as usize;
    }
    let total = total as usize;
    let mut places = ArrayPack::new();
    let out_at_span = places.push_u64(&out_at);
    let out_at = places.upload(gpu, lane, "select.places", "select.places")?;

    // On the device each output has room for every row; on the host for the passing ones.
    let mut device_at = Vec::with_capacity(outputs.len());
    let mut end = 0usize;
    for &(_, width) in &outputs {
        device_at.push(end);
        end = (end + layout.total * width as usize).div_ceil(64) * 64;
    }
    let mut out = lane.take_device("select.out", end.max(64))?;
    for (&((addresses, widths), out_width), &at) in outputs.iter().zip(&device_at) {
        let mut place = out.slice_mut(at..at + layout.total * out_width as usize);
        let compact = CompactLaunch {
            column: view(addresses),
            widths: view(widths),
            out_width,
        };
        launch::enqueue_compact(
            &stream,
            &kernels,
            &tiles,
            &mask,
            &out_at.slice(places.span(out_at_span)),
            &compact,
            &mut place,
        )?;
    }
    let mut ranges = Vec::with_capacity(1 + outputs.len());
    ranges.push(0..4 * layout.words);
    for &(_, width) in &outputs {
        let start = ranges.last().map_or(0, |r| r.end).div_ceil(64) * 64;
        ranges.push(start..start + total * width as usize);
    }
    let host_len = ranges.last().map_or(0, |r| r.end);
    let copy = |host: &mut [u8]| -> Result<()> {
        copy_to_host(
            &stream,
            &bits.slice(..ranges[0].len()),
            &mut host[ranges[0].clone()],
        )?;
        for (k, &at) in device_at.iter().enumerate() {
            let range = ranges[k + 1].clone();
            copy_to_host(&stream, &out.slice(at..at + range.len()), &mut host[range])?;
        }
        stream
            .synchronize()
            .map_err(|e| GpuError::driver("synchronize", e))?;
        Ok(())
    };
    let compacted = started.elapsed();
    let pooled = PinnedPool::global().take(gpu, host_len);
    let taken = started.elapsed();
    let pinned = pooled.is_some();
    let buffers = match pooled {
        Some(mut pooled) => {
            copy(pooled.as_mut_slice())?;
            pooled.into_buffers(&ranges)
        }
        None => {
            let mut host = vec![0u8; host_len];
            copy(&mut host)?;
            let host = Buffer::from_vec(host);
            ranges
                .iter()
                .map(|r| host.slice_with_length(r.start, r.len()))
                .collect()
        }
    };
    crate::trace::line(|| {
        format!(
            "select kernels: counted {:.2} ms, compacts queued {:.2} ms, host buffer {:.2} ms \
             ({}), {} bytes copied {:.2} ms",
            counted.as_secs_f64() * 1e3,
            (compacted - counted).as_secs_f64() * 1e3,
            (taken - compacted).as_secs_f64() * 1e3,
            if pinned { "pinned" } else { "ordinary" },
            host_len,
            (started.elapsed() - taken).as_secs_f64() * 1e3
        )
    });
    for (name, buffer) in [
        ("select.mask", mask),
        ("select.bits", bits),
        ("select.counts", counts),
        ("select.out", out),
        ("select.meta", meta),
        ("select.places", out_at),
    ] {
        lane.put_device(name, buffer);
    }
    let widths: Vec<u32> = outputs.iter().map(|o| o.1).collect();
    Ok(blocks_of(layout, &passing, &buffers, &widths))
}

/// Each block's bitmap and passing rows, slices of `buffers` (the bitmap, then each
/// output's passing rows of every block, in block order).
fn blocks_of(
    layout: &Layout,
    passing: &[usize],
    buffers: &[Buffer],
    widths: &[u32],
) -> Vec<SelectedBlock> {
    let mut before = 0usize;
    layout
        .rows
        .iter()
        .zip(passing)
        .zip(&layout.bits_at)
        .map(|((&rows, &n), &word)| {
            let bits = buffers[0].slice_with_length(4 * word as usize, 4 * rows.div_ceil(32));
            let nodes = widths
                .iter()
                .zip(&buffers[1..])
                .map(|(&width, buffer)| {
                    let w = width as usize;
                    let bytes = buffer.slice_with_length(before * w, n * w);
                    PlainNode {
                        rows: n,
                        null_count: 0,
                        parts: vec![PlainPart {
                            role: PartRole::Values,
                            width,
                            bytes,
                        }],
                        children: Vec::new(),
                    }
                })
                .collect();
            before += n;
            SelectedBlock {
                passing: BooleanBuffer::new(bits, 0, rows),
                nodes,
            }
        })
        .collect()
}

fn empty_node(width: u32) -> PlainNode {
    PlainNode {
        rows: 0,
        null_count: 0,
        parts: vec![PlainPart {
            role: PartRole::Values,
            width,
            bytes: Buffer::from_vec(Vec::<u8>::new()),
        }],
        children: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::{self, CodecChoice};
    use arrow::array::{ArrayRef, Date32Array, Int32Array, StringArray};
    use std::sync::Arc;

    #[test]
    fn tiles_stay_inside_blocks_and_bitmaps_start_on_words() {
        let layout = Layout::new(&[5_000, 0, 4_096, 33]);
        assert_eq!(
            layout.tiles,
            vec![(0, 0, 4_096), (0, 4_096, 904), (2, 0, 4_096), (3, 0, 33)]
        );
        assert_eq!(layout.base, vec![0, 5_000, 5_000, 9_096]);
        // ceil(rows / 32) words per block.
        assert_eq!(layout.bits_at, vec![0, 157, 157, 285]);
        assert_eq!((layout.words, layout.total), (287, 9_129));
        assert!(layout.tiles.iter().all(|t| t.1.is_multiple_of(32)));
    }

    #[test]
    fn tests_become_op_codes_with_sorted_lists() {
        assert_eq!(list_of(&ValueTest::Range { lo: -3, hi: 9 }).2, 0);
        assert_eq!(list_of(&ValueTest::Range { lo: 9, hi: -3 }).2, 4);
        assert_eq!(list_of(&ValueTest::NotEqual(7)).2, 1);
        assert_eq!(list_of(&ValueTest::NotEqual(7)).3, 7);
        let (list, len, op, _, _) = list_of(&ValueTest::In {
            values: vec![5, -1, 5, 2],
            negated: true,
        });
        assert_eq!((len, op), (3, 3));
        assert_eq!(list, vec![-1i64 as u64, 2, 5]);
        // An empty list still gives the kernel an element to point at.
        let (list, len, op, _, _) = list_of(&ValueTest::In {
            values: Vec::new(),
            negated: false,
        });
        assert_eq!((list.len(), len, op), (1, 0, 2));
        assert_eq!(list_of(&ValueTest::Never).2, 4);
        assert_eq!(list_of(&ValueTest::Always).2, 5);
        // A lookup: each block's bitmap start and length, then the bitmaps.
        let mut many = vec![false; 70];
        many[0] = true;
        many[69] = true;
        let (list, len, op, _, _) = list_of(&ValueTest::Lookup(vec![
            vec![false, true, true],
            Vec::new(),
            many,
        ]));
        assert_eq!(op, 6);
        assert_eq!(list, vec![6, 3, 7, 0, 7, 70, 0b110, 1, 1 << 5]);
        assert_eq!(len as usize, list.len());
    }

    #[test]
    fn fixed_width_columns_without_nulls_are_selectable() {
        let ints: ArrayRef = Arc::new(Int32Array::from_iter_values((0..5000).map(|i| i % 97)));
        let dates: ArrayRef = Arc::new(Date32Array::from_iter_values(0..5000));
        let nulls: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(3)]));
        let strings: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        // (`auto` may choose gmatch, whose decoder has no outputs on the device.)
        for codec in ["lzss", "intpack", "stored"] {
            let choice: CodecChoice = codec.parse().unwrap();
            for array in [&ints, &dates] {
                let compressed = column::compress(array, &choice).unwrap();
                assert!(selectable(&compressed), "{codec} {}", array.data_type());
            }
            let compressed = column::compress(&nulls, &choice).unwrap();
            assert!(!selectable(&compressed), "{codec} with nulls");
        }
        let compressed = column::compress(&strings, &CodecChoice::Auto).unwrap();
        assert!(!selectable(&compressed));
        // A dictionary's keys are, with or without nulls among its values.
        let keyed: ArrayRef = Arc::new(
            (0..5000)
                .map(|i| ["x", "yy", ""][i % 3])
                .collect::<arrow::array::DictionaryArray<arrow::datatypes::Int16Type>>(),
        );
        for codec in ["lzss", "stored"] {
            let compressed = column::compress(&keyed, &codec.parse().unwrap()).unwrap();
            assert!(selectable(&compressed), "{codec} dictionary");
        }
        let null_keys: ArrayRef = Arc::new(
            [Some("x"), None, Some("y")]
                .into_iter()
                .collect::<arrow::array::DictionaryArray<arrow::datatypes::Int16Type>>(),
        );
        let compressed = column::compress(&null_keys, &CodecChoice::Auto).unwrap();
        assert!(!selectable(&compressed), "dictionary with null keys");
        let gmatch = column::compress(&ints, &"gmatch".parse().unwrap()).unwrap();
        assert!(!selectable(&gmatch), "gmatch has no device outputs");
    }
}
