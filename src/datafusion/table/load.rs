//! Loading a table: batches cut into blocks, each block's columns compressed (in windows
//! of blocks, one batched call per codec on the GPU, or block by block on the cores), and
//! string columns tried as dictionaries.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, SchemaRef};
use rayon::prelude::*;

use super::block::{Block, Partitions};
use super::options::CompressOptions;
use super::{dictionary, window, zones};
use crate::codec::Placement;
use crate::column::{self, CodecChoice, CompressedColumn};
use crate::trace::Counter;
use crate::{Error, Result};

/// Cuts each partition's batches into blocks and compresses all blocks in parallel.
pub(super) fn compress_partitions(
    schema: &SchemaRef,
    partitions: Vec<Vec<RecordBatch>>,
    options: &CompressOptions,
) -> Result<Partitions> {
    let codecs: Vec<CodecChoice> = schema
        .fields()
        .iter()
        .map(|f| options.codec_for(f.name()))
        .collect();
    for name in options.columns.keys() {
        if schema.field_with_name(name).is_err() {
            return Err(Error::format(format!(
                "a codec was given for column '{name}', which the table does not have"
            )));
        }
    }
    warm_kernels(&options.placement);
    let blocks: Vec<Vec<RecordBatch>> = partitions
        .into_iter()
        .map(|batches| cut_blocks(schema, batches, options.block_rows))
        .collect::<Result<_>>()?;
    if options.placement.gpu().is_some() {
        return compress_windows_on_gpu(schema, blocks, &codecs, options.placement);
    }
    blocks
        .into_par_iter()
        .map(|partition| {
            partition
                .into_par_iter()
                .map(|batch| compress_block(schema, &batch, &codecs, options.placement))
                .collect::<Result<Vec<_>>>()
        })
        .collect()
}

/// Plain bytes of the blocks compressed together in one batched call when a GPU may run
/// them: as large as a scan's window, so the GPU gets calls it can fill.
const COMPRESS_WINDOW_BYTES: usize = window::WINDOW_BYTES;

/// [`compress_partitions`]' GPU path: the blocks of every partition in windows of about
/// [`COMPRESS_WINDOW_BYTES`], each window's columns in one batched call, the windows on
/// all of rayon's workers at once: calls of 64 MiB fill the GPU, where one call per block
/// (64K rows) left it waiting on launches; windows at once overlap one window's host
/// stages (sampling for `auto`, plain encoding, checksums) with others' GPU work, which
/// one window after another would leave idle (docs/PERFORMANCE.md).
fn compress_windows_on_gpu(
    schema: &SchemaRef,
    partitions: Vec<Vec<RecordBatch>>,
    codecs: &[CodecChoice],
    placement: Placement,
) -> Result<Partitions> {
    let partition_count = partitions.len();
    let mut windows: Vec<(usize, Vec<RecordBatch>)> = Vec::new();
    for (partition, blocks) in partitions.into_iter().enumerate() {
        let mut window: Vec<RecordBatch> = Vec::new();
        let mut window_bytes = 0;
        for block in blocks {
            window_bytes += block.get_array_memory_size();
            window.push(block);
            if window_bytes >= COMPRESS_WINDOW_BYTES {
                windows.push((partition, std::mem::take(&mut window)));
                window_bytes = 0;
            }
        }
        if !window.is_empty() {
            windows.push((partition, window));
        }
    }
    // `collect` keeps the windows' order, so each partition's blocks stay in order.
    let compressed: Vec<(usize, Vec<Arc<Block>>)> = windows
        .into_par_iter()
        .map(|(partition, window)| {
            Ok((
                partition,
                compress_blocks(schema, &window, codecs, placement)?,
            ))
        })
        .collect::<Result<_>>()?;
    let mut out: Partitions = vec![Vec::new(); partition_count];
    for (partition, blocks) in compressed {
        out[partition].extend(blocks);
    }
    Ok(out)
}

fn compress_block(
    schema: &SchemaRef,
    batch: &RecordBatch,
    codecs: &[CodecChoice],
    placement: Placement,
) -> Result<Arc<Block>> {
    Ok(compress_blocks(schema, std::slice::from_ref(batch), codecs, placement)?.remove(0))
}

/// Compresses `batches` (blocks of `schema`): the columns sharing a codec choice, over
/// all the blocks, in one batched call.
fn compress_blocks(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    codecs: &[CodecChoice],
    placement: Placement,
) -> Result<Vec<Arc<Block>>> {
    // The columns sharing a codec choice (usually all of them) go in one batched call:
    // fewer, larger calls keep the GPU busy.
    let mut groups: Vec<(CodecChoice, Vec<usize>)> = Vec::new();
    for (i, codec) in codecs.iter().enumerate() {
        match groups.iter_mut().find(|(c, _)| c == codec) {
            Some((_, members)) => members.push(i),
            None => groups.push((*codec, vec![i])),
        }
    }
    let width = codecs.len();
    let mut columns: Vec<Option<CompressedColumn>> = vec![None; width * batches.len()];
    for (codec, members) in groups {
        let inputs: Vec<(&Field, &dyn Array)> = batches
            .iter()
            .flat_map(|batch| {
                members
                    .iter()
                    .map(move |&i| (schema.field(i), batch.column(i).as_ref()))
            })
            .collect();
        let compressed = crate::trace::count(Counter::LoadCompress, || {
            column::compress_columns_on(&inputs, &codec, placement)
        })?;
        let slots = (0..batches.len()).flat_map(|b| members.iter().map(move |&i| b * width + i));
        for (slot, column) in slots.zip(compressed) {
            columns[slot] = Some(column);
        }
        if matches!(codec, CodecChoice::Auto | CodecChoice::AutoAmong(_)) {
            crate::trace::count(Counter::LoadDictionaries, || {
                try_dictionaries(schema, batches, &members, &codec, placement, &mut columns)
            })?;
        }
    }
    let mut columns = columns.into_iter();
    batches
        .iter()
        .map(|batch| {
            let block_columns = columns
                .by_ref()
                .take(width)
                .map(|c| c.expect("every column is in one group"))
                .collect();
            let zones = crate::trace::count(Counter::LoadZones, || {
                batch
                    .columns()
                    .par_iter()
                    .map(|array| zones::Zone::of(array.as_ref()))
                    .collect()
            });
            Ok(Arc::new(Block::new(batch.num_rows(), block_columns, zones)))
        })
        .collect()
}

/// Under `auto`, the low-cardinality string columns among `members` of each of `batches`
/// are compressed as dictionaries too (one batched call), and the dictionary replaces the
/// plain column in `columns` (block-major, a slot per table column) where
/// [`dictionary::keep`] says.
fn try_dictionaries(
    schema: &SchemaRef,
    batches: &[RecordBatch],
    members: &[usize],
    codec: &CodecChoice,
    placement: Placement,
    columns: &mut [Option<CompressedColumn>],
) -> Result<()> {
    let width = schema.fields().len();
    let candidates: Vec<(usize, usize, ArrayRef)> = batches
        .par_iter()
        .enumerate()
        .flat_map_iter(|(b, batch)| {
            members.iter().filter_map(move |&i| {
                dictionary::candidate(batch.column(i)).map(|d| (b * width + i, batch.num_rows(), d))
            })
        })
        .collect();
    if candidates.is_empty() {
        return Ok(());
    }
    let fields: Vec<Field> = candidates
        .iter()
        .map(|(slot, _, array)| {
            let field = schema.field(slot % width);
            Field::new(field.name(), array.data_type().clone(), field.is_nullable())
        })
        .collect();
    let inputs: Vec<(&Field, &dyn Array)> = fields
        .iter()
        .zip(&candidates)
        .map(|(field, (_, _, array))| (field, array.as_ref()))
        .collect();
    let compressed = column::compress_columns_on(&inputs, codec, placement)?;
    for ((slot, rows, _), dictionary) in candidates.iter().zip(compressed) {
        let plain = columns[*slot].as_ref().map_or(0, |c| c.compressed_bytes());
        if dictionary::keep(dictionary.compressed_bytes(), plain, *rows) {
            columns[*slot] = Some(dictionary);
        }
    }
    Ok(())
}

/// The batches of one partition as blocks of `block_rows` rows (the last one shorter),
/// each checked against `schema`. A batch of exactly one block is kept as it is.
fn cut_blocks(
    schema: &SchemaRef,
    batches: Vec<RecordBatch>,
    block_rows: usize,
) -> Result<Vec<RecordBatch>> {
    let mut blocks = Vec::new();
    let mut pending: Vec<RecordBatch> = Vec::new();
    let mut pending_rows = 0;
    for batch in batches {
        let mut rest = conform(schema, batch)?;
        while rest.num_rows() > 0 {
            let take = (block_rows - pending_rows).min(rest.num_rows());
            pending.push(rest.slice(0, take));
            pending_rows += take;
            rest = rest.slice(take, rest.num_rows() - take);
            if pending_rows == block_rows {
                blocks.push(join(schema, std::mem::take(&mut pending))?);
                pending_rows = 0;
            }
        }
    }
    if pending_rows > 0 {
        blocks.push(join(schema, pending)?);
    }
    Ok(blocks)
}

fn join(schema: &SchemaRef, mut batches: Vec<RecordBatch>) -> Result<RecordBatch> {
    if batches.len() == 1 {
        return Ok(batches.pop().expect("one batch"));
    }
    Ok(arrow::compute::concat_batches(schema, &batches)?)
}

/// `batch` under `schema`, or an error naming the first column that does not match.
fn conform(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch> {
    if batch.num_columns() != schema.fields().len() {
        return Err(Error::format(format!(
            "a batch has {} columns but the table has {}",
            batch.num_columns(),
            schema.fields().len()
        )));
    }
    let mut columns = Vec::with_capacity(batch.num_columns());
    for (field, array) in schema.fields().iter().zip(batch.columns()) {
        if field.data_type() == array.data_type() {
            columns.push(array.clone());
        } else if same_values(field.data_type(), array.data_type()) {
            // A plan may say Utf8 where its operators hand out Utf8View (a CASE whose
            // branches differ, say): the same strings, in the table's layout.
            columns.push(arrow::compute::cast(array, field.data_type())?);
        } else {
            return Err(Error::format(format!(
                "column '{}' is {} in the table but {} in a batch",
                field.name(),
                field.data_type(),
                array.data_type()
            )));
        }
    }
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        columns,
        &options,
    )?)
}

/// Whether two types hold the same values in other layouts: the string types (Utf8,
/// LargeUtf8, Utf8View) among themselves, and the binary types likewise.
fn same_values(a: &DataType, b: &DataType) -> bool {
    use DataType::*;
    let strings = |t: &DataType| matches!(t, Utf8 | LargeUtf8 | Utf8View);
    let binaries = |t: &DataType| matches!(t, Binary | LargeBinary | BinaryView);
    (strings(a) && strings(b)) || (binaries(a) && binaries(b))
}

/// Starts loading every kernel a compressed table's load and scans may use on
/// `placement`'s GPUs, on background threads ([`crate::gpu::Gpu::warm_up`]): on a machine
/// whose kernel cache is empty NVRTC compiles them in parallel, while the load cuts its
/// blocks, instead of one at a time when each is first needed. Once per process; nothing
/// without a GPU.
pub fn warm_kernels(placement: &Placement) {
    for gpu in placement.gpus() {
        let mut builds = crate::codec::kernel_builds();
        builds.push((crate::column::select::SELECT, Vec::new()));
        builds.push((crate::gpu::GATHER, Vec::new()));
        gpu.warm_up(builds);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{BinaryViewArray, Int64Array, LargeStringArray, StringViewArray};
    use arrow::datatypes::Schema;

    fn schema(fields: Vec<Field>) -> SchemaRef {
        Arc::new(Schema::new(fields))
    }

    #[test]
    fn string_and_binary_layouts_are_cast_to_the_tables() {
        let table = schema(vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("l", DataType::Utf8, true),
            Field::new("b", DataType::Binary, true),
        ]);
        let given = schema(vec![
            Field::new("s", DataType::Utf8View, true),
            Field::new("l", DataType::LargeUtf8, true),
            Field::new("b", DataType::BinaryView, true),
        ]);
        let batch = RecordBatch::try_new(
            given,
            vec![
                Arc::new(StringViewArray::from(vec![Some("a"), None])),
                Arc::new(LargeStringArray::from(vec![Some("long"), Some("")])),
                Arc::new(BinaryViewArray::from(vec![Some(&b"\x00"[..]), None])),
            ],
        )
        .unwrap();
        let conformed = conform(&table, batch).unwrap();
        assert_eq!(conformed.schema(), table);
        assert_eq!(conformed.num_rows(), 2);
        assert!(conformed.column(0).is_null(1));
    }

    #[test]
    fn other_type_mismatches_stay_errors() {
        let table = schema(vec![Field::new("n", DataType::Utf8, true)]);
        let given = schema(vec![Field::new("n", DataType::Int64, true)]);
        let batch = RecordBatch::try_new(given, vec![Arc::new(Int64Array::from(vec![1]))]).unwrap();
        let error = conform(&table, batch).unwrap_err().to_string();
        assert!(
            error.contains("column 'n' is Utf8 in the table but Int64 in a batch"),
            "{error}"
        );
    }
}
