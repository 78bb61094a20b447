//! Files of compressed columns (`.czip` archives) and the conversions the CLI offers:
//! raw typed files, Arrow IPC, Parquet, CSV and JSON lines in; the same kinds out.
//!
//! ```no_run
//! use std::path::Path;
//! use colzip::archive::{self, InputKind, RawType};
//! use colzip::codec::Placement;
//! use colzip::column::CodecChoice;
//! use colzip::gpu::Backend;
//!
//! // Resolved once, before any file is touched: `Backend::Gpu` without a GPU fails here.
//! let placement = Placement::new(Backend::Auto)?;
//! let input = Path::new("prices.bin");
//! let kind = InputKind::detect(input, RawType::Int64)?;
//! let codec = CodecChoice::Auto;
//! let overwrite = true; // replace prices.czip if it exists (a regular file)
//! let summary = archive::compress_file(input, Path::new("prices.czip"), kind, &codec, placement, overwrite, &mut |_| {})?;
//! println!("ratio {:.2}", summary.ratio());
//! archive::decompress_file(Path::new("prices.czip"), Path::new("prices.out"), None, placement, &mut |_| {})?;
//! # Ok::<(), colzip::Error>(())
//! ```

mod format;
mod input;
pub mod interrupted;
mod nested_text;
mod output;
mod parquet_options;
mod partial;
mod remove_tree;
mod safe_file;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::Path;

use serde::Serialize;

use crate::codec::Placement;
use crate::column::{self, CodecChoice};
use crate::trace::{self, Busy};
use crate::{Error, Result};
pub use format::{ArchiveReader, ArchiveWriter, Source, compress_batch, decompress_batch};
pub use input::{CsvOptions, InputKind, RawType};
pub use nested_text::nested_as_text;
pub use output::{OutputKind, ParquetWrite};
pub use parquet_options::{ParquetCodec, ParquetOptions};
pub use partial::{on_stale_partial_removed, remove_stale_dirs};
pub use safe_file::{set_flush_before_rename, write_atomically};

/// Rows per batch read from Arrow IPC and Parquet files.
pub const BATCH_ROWS: usize = 1 << 20;
/// Bytes per batch read from raw files.
pub const BATCH_BYTES: usize = 64 << 20;

/// What a compression or decompression did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub batches: u64,
    pub rows: u64,
    /// Bytes of the columns' plain parts.
    pub plain_bytes: u64,
    /// Bytes of the archive file.
    pub archive_bytes: u64,
    /// A Parquet output's codec (as `colzip decompress --parquet-compression` names it)
    /// and why it was chosen.
    pub parquet_codec: Option<String>,
    pub parquet_codec_origin: Option<String>,
}

impl Summary {
    /// Plain bytes over archive bytes.
    pub fn ratio(&self) -> f64 {
        self.plain_bytes as f64 / self.archive_bytes.max(1) as f64
    }
}

/// Progress after each batch: plain bytes handled so far.
pub type Progress<'a> = &'a mut dyn FnMut(u64);

/// Batches queued between two stages of a file pipeline: none (a hand-over), so at most
/// one batch is being read, one coded and one written, plus the one each stage holds while
/// it waits to hand it over. Decoding an archive then holds at most two decoded batches:
/// a bound of twice the largest block.
const IN_FLIGHT: usize = 0;

/// Batches a file compression codes at once: while the host stages of one batch run
/// (bwt's Huffman coding, gathering into pinned staging), the GPU works on the next.
/// Costs one more batch of memory; decompression keeps one (the bound above).
const COMPRESSING_AT_ONCE: usize = 2;

/// Runs `produce` (reading), `transform` (the codecs) and `consume` (writing) on threads
/// joined by bounded queues, so batch n+1 is read and batch n-1 written while batch n is
/// compressed or decompressed; up to `coders` batches are transformed at once, each on
/// its own thread, and handed on in order, `account` seeing each as it is handed on.
/// The first error stops all stages.
fn pipeline<A: Send, B: Send, C: Send>(
    coders: usize,
    produce: impl FnOnce(&dyn Fn(A) -> bool) -> Result<()> + Send,
    transform: impl Fn(A) -> Result<B> + Sync,
    mut account: impl FnMut(&B),
    consume: impl FnOnce(&mut dyn Iterator<Item = B>) -> Result<C> + Send,
) -> Result<C> {
    use std::collections::VecDeque;
    use std::sync::Mutex;
    use std::sync::mpsc::sync_channel;
    let started = std::time::Instant::now();
    let coding = Mutex::new(Busy::default());
    let result = std::thread::scope(|scope| {
        let (in_tx, in_rx) = sync_channel::<A>(IN_FLIGHT);
        let (out_tx, out_rx) = sync_channel::<B>(IN_FLIGHT);
        let reader = scope.spawn(move || produce(&|item| in_tx.send(item).is_ok()));
        let writer = scope.spawn(move || consume(&mut out_rx.into_iter()));
        let (transform, coding) = (&transform, &coding);
        let mut running = VecDeque::new();
        let mut failed = None;
        // Hands the oldest transformed batch to the writer; false when the pipeline stops.
        let mut hand_on = |running: &mut VecDeque<std::thread::ScopedJoinHandle<'_, Result<B>>>| {
            let Some(oldest) = running.pop_front() else {
                return false;
            };
            match oldest.join() {
                Ok(Ok(out)) => {
                    account(&out);
                    out_tx.send(out).is_ok()
                }
                Ok(Err(e)) => {
                    failed = Some(e);
                    false
                }
                Err(_) => {
                    failed = Some(Error::format("a coding thread panicked"));
                    false
                }
            }
        };
        let mut stopped = false;
        for item in in_rx {
            running.push_back(scope.spawn(move || {
                let mut busy = Busy::default();
                let out = busy.time(|| transform(item));
                let mut total = coding.lock().unwrap_or_else(|e| e.into_inner());
                total.add(&busy);
                out
            }));
            if running.len() >= coders.max(1) && !hand_on(&mut running) {
                stopped = true;
                break;
            }
        }
        while !stopped && !running.is_empty() {
            stopped = !hand_on(&mut running);
        }
        // Batches still running after a failure are joined (and dropped) by the scope.
        drop(running);
        drop(out_tx);
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(Error::format("the writing thread panicked")));
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(Error::format("the reading thread panicked")));
        match failed {
            Some(e) => Err(e),
            None => read.and(written),
        }
    });
    let coding = coding.into_inner().unwrap_or_else(|e| e.into_inner());
    trace::line(|| {
        format!(
            "file pipeline in {:.3} s: codecs busy {:.3} s",
            started.elapsed().as_secs_f64(),
            coding.seconds(),
        )
    });
    result
}

/// Compresses a file into an archive on `placement`, which the caller resolves once,
/// before any file is touched (so `Backend::Gpu` without a usable GPU fails first).
/// Reading, compressing and writing overlap: batch n+1 is read and batch n-1 written
/// while batch n is compressed, all its columns' parts in one batched call per codec. An existing regular file at
/// `output` is replaced only with `overwrite` (anything else there is never replaced).
pub fn compress_file(
    input: &Path,
    output: &Path,
    kind: InputKind,
    codec: &CodecChoice,
    placement: Placement,
    overwrite: bool,
    progress: Progress<'_>,
) -> Result<Summary> {
    let source = input::open(input, kind, BATCH_BYTES, BATCH_ROWS).map_err(read_error(input))?;
    let archive_source = match kind {
        InputKind::Raw(raw) => Source::Raw(raw),
        InputKind::ArrowIpc => Source::ArrowIpc,
        #[cfg(feature = "parquet")]
        InputKind::Parquet => Source::Parquet,
        #[cfg(feature = "csv-json")]
        InputKind::Csv(options) => Source::Csv(options.delimiter),
        #[cfg(feature = "csv-json")]
        InputKind::JsonLines => Source::JsonLines,
    };
    let schema = source.schema.clone();
    let trailing_newline = source.trailing_newline.clone();
    let parquet_options = source.parquet;
    let batches = source.batches;
    let mut summary = Summary::default();
    write_atomically(output, overwrite, |file| {
        let out = BufWriter::with_capacity(WRITE_BUFFER, file);
        let writer = match &parquet_options {
            Some(options) => ArchiveWriter::for_parquet(out, schema.clone(), options)?,
            None => ArchiveWriter::new(out, schema.clone(), archive_source)?,
        };
        let writer = pipeline(
            COMPRESSING_AT_ONCE,
            |send| {
                let mut batches = batches;
                let mut reading = Busy::default();
                while let Some(batch) = reading.time(|| batches.next()) {
                    let failed = batch.is_err();
                    if !send(batch) || failed {
                        break;
                    }
                }
                trace::line(|| format!("reading busy {:.3} s", reading.seconds()));
                Ok(())
            },
            |batch: Result<arrow::array::RecordBatch>| {
                let batch = batch.map_err(read_error(input))?;
                let columns = compress_batch(&schema, &batch, codec, placement)?;
                Ok((batch.num_rows(), columns))
            },
            |(rows, columns): &(usize, Vec<column::CompressedColumn>)| {
                summary.batches += 1;
                summary.rows += *rows as u64;
                summary.plain_bytes += columns.iter().map(|c| c.plain_bytes() as u64).sum::<u64>();
                progress(summary.plain_bytes);
            },
            |compressed: &mut dyn Iterator<Item = (usize, Vec<column::CompressedColumn>)>| {
                let mut writer = writer;
                let mut writing = Busy::default();
                for (rows, columns) in compressed {
                    writing.time(|| writer.append(rows, &columns))?;
                }
                trace::line(|| format!("writing busy {:.3} s", writing.seconds()));
                Ok(writer)
            },
        )?;
        let trailing = trailing_newline.load(std::sync::atomic::Ordering::Relaxed);
        writer
            .finish(trailing)?
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        Ok(())
    })?;
    summary.archive_bytes = std::fs::metadata(output)
        .map_err(Error::file("read the metadata of", output))?
        .len();
    Ok(summary)
}

/// Bytes of the buffered writers and readers of archives and outputs (few large system
/// calls).
const WRITE_BUFFER: usize = 4 << 20;

/// For `map_err` on reads of `path`: an I/O error without a path gets this one.
fn read_error(path: &Path) -> impl Fn(Error) -> Error + '_ {
    move |error| match error {
        Error::Io(source) => Error::File {
            action: "read",
            path: path.to_path_buf(),
            source,
        },
        other => other,
    }
}

/// Opens an archive for reading, refusing it as soon as a batch would bring the decoded
/// bytes over `max_output`.
fn open_archive(path: &Path, max_output: u64) -> Result<ArchiveReader<BufReader<File>>> {
    let file = File::open(path).map_err(Error::file("open", path))?;
    let len = file
        .metadata()
        .map_err(Error::file("read the metadata of", path))?
        .len();
    Ok(ArchiveReader::new(BufReader::new(file))
        .map_err(read_error(path))?
        .with_input_len(len)
        .with_max_output(max_output))
}

/// Decompresses an archive into a file of `to` (by default what it was made from), on
/// `placement`. Reading, decompressing and writing overlap as in [`compress_file`].
pub fn decompress_file(
    input: &Path,
    output: &Path,
    to: Option<OutputKind>,
    placement: Placement,
    progress: Progress<'_>,
) -> Result<Summary> {
    decompress_file_with_limit(input, output, to, placement, u64::MAX, progress)
}

/// [`decompress_file`] refusing, before decoding it, a batch that would bring the decoded
/// bytes (what the column containers claim) over `max_output`. Memory stays that of one
/// batch: each is written out before the next is read.
pub fn decompress_file_with_limit(
    input: &Path,
    output: &Path,
    to: Option<OutputKind>,
    placement: Placement,
    max_output: u64,
    progress: Progress<'_>,
) -> Result<Summary> {
    let options = DecompressOptions {
        to,
        max_output,
        ..DecompressOptions::default()
    };
    decompress_file_with(input, output, placement, &options, progress)
}

/// How [`decompress_file_with`] decompresses (where the codecs run is its own argument,
/// a [`Placement`] resolved once by the caller).
#[derive(Clone, Debug)]
pub struct DecompressOptions {
    /// The output's kind [default: what the archive was made from].
    pub to: Option<OutputKind>,
    /// Refuse a batch that would take the decoded bytes over this many.
    pub max_output: u64,
    /// A Parquet output's codec [default: the source Parquet file's, when the archive
    /// records it, else [`ParquetCodec::DEFAULT`]].
    pub parquet_codec: Option<ParquetCodec>,
    /// Replace an existing regular file at the output [default: true]; anything else
    /// there (a device, FIFO, socket or directory) is never replaced.
    pub overwrite: bool,
}

impl Default for DecompressOptions {
    fn default() -> Self {
        DecompressOptions {
            to: None,
            max_output: u64::MAX,
            parquet_codec: None,
            overwrite: true,
        }
    }
}

/// Decompresses an archive into a file on `placement`, as `options` say. A Parquet
/// output keeps the codec (and row group size) of the Parquet file the archive was made
/// from, where the archive records them; [`Summary::parquet_codec`] says which codec was
/// written.
///
/// ```no_run
/// use std::path::Path;
/// use colzip::archive::{self, DecompressOptions, OutputKind};
/// use colzip::codec::Placement;
/// use colzip::gpu::Backend;
///
/// let placement = Placement::new(Backend::Auto)?;
/// let options = DecompressOptions {
///     to: Some(OutputKind::Parquet),
///     parquet_codec: Some("zstd(3)".parse()?),
///     ..DecompressOptions::default()
/// };
/// let summary = archive::decompress_file_with(
///     Path::new("table.parquet.czip"), Path::new("back.parquet"), placement, &options, &mut |_| {})?;
/// assert_eq!(summary.parquet_codec.as_deref(), Some("zstd(3)"));
/// # Ok::<(), colzip::Error>(())
/// ```
pub fn decompress_file_with(
    input: &Path,
    output: &Path,
    placement: Placement,
    options: &DecompressOptions,
    progress: Progress<'_>,
) -> Result<Summary> {
    let mut reader = open_archive(input, options.max_output)?;
    let kind = options
        .to
        .unwrap_or_else(|| OutputKind::for_source(reader.source()));
    let schema = reader.schema();
    let parquet = ParquetWrite::resolve(options.parquet_codec, reader.parquet_options());
    #[cfg(feature = "parquet")]
    let writes_parquet = kind == OutputKind::Parquet;
    #[cfg(not(feature = "parquet"))]
    let writes_parquet = false;
    if options.parquet_codec.is_some() && !writes_parquet {
        return Err(Error::usage(
            "--parquet-compression applies to Parquet output (--to parquet)",
        ));
    }
    let mut summary = Summary {
        archive_bytes: std::fs::metadata(input)
            .map_err(Error::file("read the metadata of", input))?
            .len(),
        parquet_codec: writes_parquet.then(|| parquet.codec.to_string()),
        parquet_codec_origin: writes_parquet.then(|| parquet.origin.clone()),
        ..Default::default()
    };
    write_atomically(output, options.overwrite, |file| {
        let delimiter = match reader.source() {
            Source::Csv(delimiter) => delimiter,
            _ => b',',
        };
        let sink = output::file_sink(
            kind,
            file,
            schema.clone(),
            WRITE_BUFFER,
            &parquet,
            delimiter,
        )?;
        let (sink, trailing) = pipeline(
            1,
            |send| {
                let mut reading = Busy::default();
                while let Some(batch) =
                    reading.time(|| reader.next_compressed().map_err(read_error(input)))?
                {
                    if !send(batch) {
                        break;
                    }
                }
                trace::line(|| format!("reading busy {:.3} s", reading.seconds()));
                Ok(())
            },
            |(rows, columns): (usize, Vec<column::CompressedColumn>)| {
                decompress_batch(&schema, rows, &columns, placement)
            },
            |batch: &arrow::array::RecordBatch| {
                summary.batches += 1;
                summary.rows += batch.num_rows() as u64;
                summary.plain_bytes += batch.get_array_memory_size() as u64;
                progress(summary.plain_bytes);
            },
            |batches: &mut dyn Iterator<Item = arrow::array::RecordBatch>| {
                let mut sink = sink;
                let mut writing = Busy::default();
                for batch in batches {
                    writing.time(|| sink.write(&batch))?;
                }
                trace::line(|| format!("writing busy {:.3} s", writing.seconds()));
                Ok(sink)
            },
        )
        .map(|sink| (sink, reader.trailing_newline()))?;
        sink.finish(trailing.unwrap_or(false))
    })?;
    Ok(summary)
}

/// One column of an archive, summed over its batches.
#[derive(Clone, Debug, Serialize)]
pub struct ColumnInfo {
    pub name: String,
    /// The Arrow data type, as Arrow prints it.
    pub arrow_type: String,
    /// Whether the field allows nulls.
    pub nullable: bool,
    pub rows: u64,
    /// Null values of the column itself (its validity; a dictionary's values, a list's
    /// items, a union's children and a run-end encoded array's values are not counted,
    /// so unions and run-end encoded columns show none), from the containers' headers:
    /// nothing is decoded.
    pub null_count: u64,
    pub plain_bytes: u64,
    pub compressed_bytes: u64,
    pub ratio: f64,
    /// Compressed bytes per codec used by the column's parts.
    pub codecs: BTreeMap<String, u64>,
}

/// What `colzip info` shows of an archive.
#[derive(Clone, Debug, Serialize)]
pub struct ArchiveInfo {
    pub source: String,
    pub batches: u64,
    pub rows: u64,
    pub archive_bytes: u64,
    pub columns: Vec<ColumnInfo>,
    /// Whether every part was decoded and checked ([`info_verified`]).
    pub verified: bool,
    /// What was checked, and what was not.
    pub checked: Vec<&'static str>,
    pub not_checked: Vec<&'static str>,
}

/// What reading an archive's structure checks.
pub const STRUCTURE_CHECKS: [&str; 3] = [
    "the archive's CRC-32C over its header, every batch and the end record (source kind, flags, batch order)",
    "every column container's CRC-32C and structure: field and type, rows, part lengths",
    "every codec stream's header and size table or directory against its bytes and the part's length",
];
/// What decoding every part checks besides.
pub const DECODE_CHECKS: [&str; 3] = [
    "every part decoded and its xxh3-64 compared",
    "the codecs' own checksums: bwt block CRC-32C, Snappy framed chunk CRC-32C",
    "every column rebuilt as an Arrow array (offsets, UTF-8, dictionary keys validated)",
];

/// Reads an archive's structure: every CRC over the archive and its containers and
/// every stream header is checked; nothing is decoded ([`ArchiveInfo::not_checked`]
/// says what that leaves out).
pub fn info(path: &Path) -> Result<ArchiveInfo> {
    info_with(path, false, u64::MAX)
}

/// [`info`], and every part decoded with every checksum checked (what `colzip info
/// --verify` does), refusing batches that would decode to more than `max_output` bytes
/// in all. Memory stays that of one batch.
pub fn info_verified(path: &Path, max_output: u64) -> Result<ArchiveInfo> {
    info_with(path, true, max_output)
}

fn info_with(path: &Path, verify: bool, max_output: u64) -> Result<ArchiveInfo> {
    let mut reader = open_archive(path, max_output)?;
    let schema = reader.schema();
    let mut columns: Vec<ColumnInfo> = schema
        .fields()
        .iter()
        .map(|f| ColumnInfo {
            name: f.name().clone(),
            arrow_type: f.data_type().to_string(),
            nullable: f.is_nullable(),
            rows: 0,
            null_count: 0,
            plain_bytes: 0,
            compressed_bytes: 0,
            ratio: 0.0,
            codecs: BTreeMap::new(),
        })
        .collect();
    let (mut batches, mut rows) = (0, 0);
    while let Some((batch_rows, compressed)) = reader.next_compressed().map_err(read_error(path))? {
        batches += 1;
        rows += batch_rows as u64;
        for (info, column) in columns.iter_mut().zip(&compressed) {
            if verify {
                // Decoding checks each part's xxh3 and the codecs' CRCs; the array is
                // validated as it is built. Parts decode on the CPU.
                let at = || format!("batch {}, column '{}'", batches - 1, info.name);
                crate::column::decompress(column).map_err(|e| match e {
                    Error::Format(m) => Error::Format(format!("{}: {m}", at())),
                    Error::Checksum { what } => Error::Checksum {
                        what: format!("{}, {what}", at()),
                    },
                    other => other,
                })?;
            }
            info.rows += column.len() as u64;
            info.null_count += column.root().null_count as u64;
            info.plain_bytes += column.plain_bytes() as u64;
            info.compressed_bytes += column.compressed_bytes() as u64;
            for part in column.root().all_parts() {
                *info
                    .codecs
                    .entry(part.codec.name().to_string())
                    .or_default() += part.bytes.len() as u64;
            }
        }
    }
    for info in &mut columns {
        info.ratio = info.plain_bytes as f64 / info.compressed_bytes.max(1) as f64;
    }
    let mut checked = STRUCTURE_CHECKS.to_vec();
    let mut not_checked = Vec::new();
    if verify {
        checked.extend(DECODE_CHECKS);
    } else {
        not_checked.extend(DECODE_CHECKS);
    }
    Ok(ArchiveInfo {
        source: reader.source().name(),
        batches,
        rows,
        archive_bytes: std::fs::metadata(path)
            .map_err(Error::file("read the metadata of", path))?
            .len(),
        columns,
        verified: verify,
        checked,
        not_checked,
    })
}

/// The first `rows` rows of an archive (fewer when it holds fewer), decoding only the
/// batches they are in (what `colzip head` prints): the batches after them are not read.
///
/// ```
/// use std::sync::Arc;
/// use arrow::array::{Int64Array, RecordBatch};
/// use arrow::datatypes::{DataType, Field, Schema};
/// use colzip::archive::{self, ArchiveWriter, Source};
/// use colzip::column::CodecChoice;
///
/// let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("ids.czip");
/// let mut writer = ArchiveWriter::new(std::fs::File::create(&path)?, schema.clone(), Source::ArrowIpc)?;
/// for start in [0i64, 1000] {
///     let ids = Arc::new(Int64Array::from_iter_values(start..start + 1000));
///     writer.write_batch(&RecordBatch::try_new(schema.clone(), vec![ids])?, &CodecChoice::Auto)?;
/// }
/// writer.finish(false)?;
/// let (_, batches) = archive::head(&path, 3, colzip::codec::Placement::CPU)?;
/// assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn head(
    path: &Path,
    rows: usize,
    placement: Placement,
) -> Result<(arrow::datatypes::SchemaRef, Vec<arrow::array::RecordBatch>)> {
    let mut reader = open_archive(path, u64::MAX)?;
    let schema = reader.schema();
    let mut batches = Vec::new();
    let mut left = rows;
    while left > 0 {
        let Some(batch) = reader.next_batch_on(placement).map_err(read_error(path))? else {
            break;
        };
        let take = batch.num_rows().min(left);
        left -= take;
        batches.push(batch.slice(0, take));
    }
    Ok((schema, batches))
}
