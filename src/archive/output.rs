//! Writing decompressed archives back out: raw bytes, Arrow IPC, Parquet, or (with the
//! `csv-json` feature) CSV and JSON lines.

use std::io::Write;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};

use super::format::Source;
use super::parquet_options::{ParquetCodec, ParquetOptions};
use crate::{Error, Result};

/// The file kind `colzip decompress` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// The raw bytes a raw archive was made from, byte for byte.
    Raw,
    /// An Arrow IPC file.
    ArrowIpc,
    /// A Parquet file (written by the parquet crate) with the source Parquet file's codec
    /// when the archive records it, else ZSTD ([`ParquetCodec::DEFAULT`]).
    #[cfg(feature = "parquet")]
    Parquet,
    /// CSV with a header line: the source CSV file's delimiter, else a comma.
    #[cfg(feature = "csv-json")]
    Csv,
    /// One JSON object per row and line (null values left out).
    #[cfg(feature = "csv-json")]
    JsonLines,
}

impl OutputKind {
    /// What an archive of `source` turns back into by default.
    pub fn for_source(source: Source) -> Self {
        match source {
            Source::Raw(_) => OutputKind::Raw,
            Source::ArrowIpc => OutputKind::ArrowIpc,
            #[cfg(feature = "parquet")]
            Source::Parquet => OutputKind::Parquet,
            #[cfg(not(feature = "parquet"))]
            Source::Parquet => OutputKind::ArrowIpc,
            #[cfg(feature = "csv-json")]
            Source::Csv(_) => OutputKind::Csv,
            #[cfg(feature = "csv-json")]
            Source::JsonLines => OutputKind::JsonLines,
            #[cfg(not(feature = "csv-json"))]
            Source::Csv(_) | Source::JsonLines => OutputKind::ArrowIpc,
        }
    }
}

impl OutputKind {
    /// The kinds `--to` takes, for messages.
    const NAMES: &'static str = if cfg!(feature = "csv-json") && cfg!(feature = "parquet") {
        "raw, arrow, parquet, csv or json"
    } else if cfg!(feature = "parquet") {
        "raw, arrow or parquet"
    } else if cfg!(feature = "csv-json") {
        "raw, arrow, csv or json"
    } else {
        "raw or arrow"
    };
}

impl std::str::FromStr for OutputKind {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "raw" => Ok(OutputKind::Raw),
            "arrow" | "ipc" => Ok(OutputKind::ArrowIpc),
            #[cfg(feature = "parquet")]
            "parquet" => Ok(OutputKind::Parquet),
            #[cfg(feature = "csv-json")]
            "csv" => Ok(OutputKind::Csv),
            #[cfg(feature = "csv-json")]
            "json" | "jsonl" | "ndjson" => Ok(OutputKind::JsonLines),
            other => Err(Error::format(format!(
                "unknown output kind '{other}' (expected {})",
                Self::NAMES
            ))),
        }
    }
}

/// How a Parquet output is written: the codec and where it comes from, and the rest of
/// the source file's options the archive records.
#[derive(Clone, Debug, PartialEq)]
pub struct ParquetWrite {
    pub codec: ParquetCodec,
    /// Why this codec: "chosen", "the source file's", or the default and why.
    pub origin: String,
    /// Codecs of single leaf columns (dotted paths) that differ from `codec`.
    pub columns: Vec<(String, ParquetCodec)>,
    /// Rows per row group at most (0: the parquet crate's default).
    pub max_row_group_rows: u64,
}

impl ParquetWrite {
    /// What to write: `chosen` when given, else what the archive recorded of its source
    /// (`recorded`), else [`ParquetCodec::DEFAULT`].
    pub fn resolve(chosen: Option<ParquetCodec>, recorded: Option<&ParquetOptions>) -> Self {
        let max_row_group_rows = recorded.map_or(0, |r| r.max_row_group_rows);
        if let Some(codec) = chosen {
            return ParquetWrite {
                codec,
                origin: "chosen".into(),
                columns: Vec::new(),
                max_row_group_rows,
            };
        }
        let Some(recorded) = recorded else {
            return ParquetWrite {
                codec: ParquetCodec::DEFAULT,
                origin: "the default: the archive does not record a source Parquet codec".into(),
                columns: Vec::new(),
                max_row_group_rows,
            };
        };
        let (codec, origin) = match recorded.compression.parse::<ParquetCodec>() {
            Ok(codec) => (codec, "the source file's".to_string()),
            Err(_) => (
                ParquetCodec::DEFAULT,
                format!(
                    "the default: the source file's {} is not a codec colzip writes",
                    recorded.compression
                ),
            ),
        };
        let columns = recorded
            .column_compression
            .iter()
            .filter_map(|(column, name)| Some((column.clone(), name.parse().ok()?)))
            .collect();
        ParquetWrite {
            codec,
            origin,
            columns,
            max_row_group_rows,
        }
    }

    #[cfg(feature = "parquet")]
    fn properties(&self) -> parquet::file::properties::WriterProperties {
        let mut builder = parquet::file::properties::WriterProperties::builder()
            .set_compression(self.codec.to_parquet());
        for (column, codec) in &self.columns {
            let path = parquet::schema::types::ColumnPath::new(
                column.split('.').map(str::to_string).collect(),
            );
            builder = builder.set_column_compression(path, codec.to_parquet());
        }
        if let Ok(rows) = usize::try_from(self.max_row_group_rows)
            && rows > 0
        {
            builder = builder.set_max_row_group_row_count(Some(rows));
        }
        builder.build()
    }
}

impl Default for ParquetWrite {
    fn default() -> Self {
        ParquetWrite::resolve(None, None)
    }
}

/// A sink for decompressed batches (written on a thread of its own).
pub trait BatchSink: Send {
    fn write(&mut self, batch: &RecordBatch) -> Result<()>;
    fn finish(self: Box<Self>, trailing_newline: bool) -> Result<()>;
}

/// Opens a sink of `kind` writing to `file`: raw fixed-width values go through a mapping
/// of the file, copied on all cores (one core's write() fills the page cache at a few
/// GB/s); every other kind through a buffered writer. `delimiter` is a CSV output's.
pub fn file_sink(
    kind: OutputKind,
    file: std::fs::File,
    schema: SchemaRef,
    buffer: usize,
    parquet: &ParquetWrite,
    delimiter: u8,
) -> Result<Box<dyn BatchSink>> {
    let fixed_width =
        schema.fields().len() == 1 && schema.field(0).data_type().primitive_width().is_some();
    if kind == OutputKind::Raw && fixed_width {
        return Ok(Box::new(MappedRawSink::new(file)));
    }
    let seen = SeenIoError::default();
    let out = KeepsIoError {
        inner: file,
        seen: seen.clone(),
    };
    let inner = sink(
        kind,
        std::io::BufWriter::with_capacity(buffer, out),
        schema,
        parquet,
        delimiter,
    )
    .map_err(|e| as_io_error(&seen, e))?;
    Ok(Box::new(IoErrorSink { inner, seen }))
}

/// The first I/O error a file sink's writer met, shared between the writer and the sink.
type SeenIoError = std::sync::Arc<std::sync::Mutex<Option<std::io::Error>>>;

/// A writer that keeps the first I/O error it returns. Arrow's and parquet's writers wrap
/// such an error in their own types (`Arrow error: Csv error: No space left on device`),
/// where the caller cannot tell an I/O error, nor name the file it failed on.
struct KeepsIoError<W> {
    inner: W,
    seen: SeenIoError,
}

impl<W> KeepsIoError<W> {
    fn keep(&self, error: std::io::Error) -> std::io::Error {
        let copy = match error.raw_os_error() {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(error.kind(), error.to_string()),
        };
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        seen.get_or_insert(error);
        copy
    }
}

impl<W: Write> Write for KeepsIoError<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.inner.write(bytes).map_err(|e| self.keep(e))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush().map_err(|e| self.keep(e))
    }
}

/// A file sink whose errors are the I/O error its writer met, when it met one: a full
/// disk is then reported as `cannot write PATH: No space left on device` by
/// [`super::write_atomically`], whatever the output's format.
struct IoErrorSink {
    inner: Box<dyn BatchSink>,
    seen: SeenIoError,
}

fn as_io_error(seen: &SeenIoError, error: Error) -> Error {
    if matches!(error, Error::Io(_) | Error::File { .. }) {
        return error;
    }
    let io = seen.lock().unwrap_or_else(|p| p.into_inner()).take();
    io.map_or(error, Error::Io)
}

impl BatchSink for IoErrorSink {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        self.inner
            .write(batch)
            .map_err(|e| as_io_error(&self.seen, e))
    }

    fn finish(self: Box<Self>, trailing_newline: bool) -> Result<()> {
        let seen = self.seen;
        self.inner
            .finish(trailing_newline)
            .map_err(|e| as_io_error(&seen, e))
    }
}

/// Raw fixed-width values written through a shared mapping of the output file, each
/// batch's bytes copied into it on all cores; the page cache writes them back as it
/// would after write(). The file's blocks are allocated before the mapping is touched, so
/// a full disk is an error here, not a SIGBUS in the copy. Where they cannot be allocated
/// ahead (a file system without `fallocate`), a store into the mapping could still meet a
/// full disk, as a SIGBUS that kills the process: the sink then writes with `pwrite`,
/// which reports it as an error.
struct MappedRawSink {
    file: std::fs::File,
    len: u64,
    /// Whether the bytes still go through a mapping (until an allocation ahead fails).
    mapped: bool,
}

impl MappedRawSink {
    fn new(file: std::fs::File) -> MappedRawSink {
        MappedRawSink {
            file,
            len: 0,
            mapped: true,
        }
    }

    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        const PAGE: u64 = 4096;
        let start = self.len;
        let end = start + bytes.len() as u64;
        self.mapped = self.mapped && reserve(&self.file, start, end)?;
        if !self.mapped {
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(bytes, start)?;
            self.len = end;
            return Ok(());
        }
        let from = start / PAGE * PAGE;
        // SAFETY: the file is this sink's own temporary output, which nothing else maps
        // or changes; the mapping covers [from, end), within the file's new length.
        let mut map = unsafe {
            memmap2::MmapOptions::new()
                .offset(from)
                .len((end - from) as usize)
                .map_mut(&self.file)
        }?;
        crate::memory::parallel_copy(&mut map[(start - from) as usize..], bytes);
        self.len = end;
        Ok(())
    }
}

/// Grows `file` from `start` to `end` bytes with its blocks allocated: a full disk is
/// `ENOSPC` here. Whether the blocks are allocated: `false` where the file system cannot
/// allocate ahead, and the file is left as it was. The system call itself, not
/// `posix_fallocate`: glibc's stands in for a missing `fallocate` by writing one byte per
/// block, which reserves nothing on a copy-on-write or compressing file system.
fn reserve(file: &std::fs::File, start: u64, end: u64) -> Result<bool> {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let (Ok(offset), Ok(len)) = (
            libc::off_t::try_from(start),
            libc::off_t::try_from(end - start),
        ) else {
            return Err(Error::format(format!("an output of {end} bytes")));
        };
        loop {
            // SAFETY: a plain system call on this sink's own open file descriptor.
            if unsafe { libc::fallocate(file.as_raw_fd(), 0, offset, len) } == 0 {
                return Ok(true);
            }
            let error = std::io::Error::last_os_error();
            match error.raw_os_error() {
                Some(libc::EINTR) => continue,
                Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL) => return Ok(false),
                _ => return Err(error.into()),
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (file, start, end);
        Ok(false)
    }
}

impl BatchSink for MappedRawSink {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let array = batch.column(0);
        let width = array.data_type().primitive_width().ok_or_else(|| {
            Error::format(format!(
                "raw output cannot write {} values",
                array.data_type()
            ))
        })?;
        let data = array.to_data();
        let start = data.offset() * width;
        self.append(&data.buffers()[0].as_slice()[start..start + array.len() * width])
    }

    fn finish(mut self: Box<Self>, trailing_newline: bool) -> Result<()> {
        if trailing_newline {
            self.append(b"\n")?;
        }
        Ok(())
    }
}

/// Opens a sink of `kind` writing to `out` (`delimiter` between a CSV output's fields).
pub fn sink<W: Write + Send + 'static>(
    kind: OutputKind,
    out: W,
    schema: SchemaRef,
    parquet: &ParquetWrite,
    delimiter: u8,
) -> Result<Box<dyn BatchSink>> {
    #[cfg(not(feature = "parquet"))]
    let _ = parquet;
    #[cfg(not(feature = "csv-json"))]
    let _ = delimiter;
    Ok(match kind {
        OutputKind::Raw => {
            if schema.fields().len() != 1 {
                return Err(Error::format(format!(
                    "raw output needs exactly one column, the archive has {}",
                    schema.fields().len()
                )));
            }
            Box::new(RawSink {
                out,
                first_line: true,
                lines: schema.field(0).data_type() == &DataType::Utf8,
            })
        }
        OutputKind::ArrowIpc => Box::new(arrow::ipc::writer::FileWriter::try_new(out, &schema)?),
        #[cfg(feature = "parquet")]
        OutputKind::Parquet => {
            let properties = parquet.properties();
            let group_rows = properties
                .max_row_group_row_count()
                .filter(|&rows| rows > 0);
            Box::new(ParquetSink {
                writer: parquet::arrow::ArrowWriter::try_new(out, schema, Some(properties))?,
                group_rows,
            })
        }
        #[cfg(feature = "csv-json")]
        OutputKind::Csv => Box::new(
            arrow_csv::WriterBuilder::new()
                .with_header(true)
                .with_delimiter(delimiter)
                .build(out),
        ),
        #[cfg(feature = "csv-json")]
        OutputKind::JsonLines => Box::new(arrow_json::LineDelimitedWriter::new(out)),
    })
}

/// A Parquet writer fed pieces that each fit the open row group. `ArrowWriter::write`
/// splits a batch that overflows the row group by calling itself on the rest, one stack
/// frame per row group: a batch of 10,000 rows for a file of one-row row groups (as the
/// source file had) would overflow the writing thread's stack.
#[cfg(feature = "parquet")]
struct ParquetSink<W: Write + Send> {
    writer: parquet::arrow::ArrowWriter<W>,
    group_rows: Option<usize>,
}

struct RawSink<W> {
    out: W,
    first_line: bool,
    /// Whether the column is lines of text: only they can end with a newline.
    lines: bool,
}

impl<W: Write + Send> BatchSink for RawSink<W> {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let array = batch.column(0);
        match array.data_type() {
            DataType::Utf8 => {
                // Lines are joined by '\n'; the final one is added by `finish` if the file had it.
                for line in array.as_string::<i32>().iter() {
                    if !self.first_line {
                        self.out.write_all(b"\n")?;
                    }
                    self.first_line = false;
                    self.out.write_all(line.unwrap_or("").as_bytes())?;
                }
            }
            data_type => {
                let width = data_type.primitive_width().ok_or_else(|| {
                    Error::format(format!("raw output cannot write {data_type} values"))
                })?;
                let data = array.to_data();
                let start = data.offset() * width;
                self.out
                    .write_all(&data.buffers()[0].as_slice()[start..start + array.len() * width])?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>, trailing_newline: bool) -> Result<()> {
        if trailing_newline && self.lines {
            self.out.write_all(b"\n")?;
        }
        self.out.flush()?;
        Ok(())
    }
}

impl<W: Write + Send> BatchSink for arrow::ipc::writer::FileWriter<W> {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Ok(arrow::ipc::writer::FileWriter::write(self, batch)?)
    }

    fn finish(mut self: Box<Self>, _: bool) -> Result<()> {
        Ok(arrow::ipc::writer::FileWriter::finish(&mut self)?)
    }
}

#[cfg(feature = "csv-json")]
impl<W: Write + Send> BatchSink for arrow_csv::Writer<W> {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        // Arrow's CSV writer refuses nested columns: they are written as their text.
        let batch = super::nested_text::nested_as_text(batch)?;
        Ok(arrow_csv::Writer::write(self, &batch)?)
    }

    fn finish(self: Box<Self>, _: bool) -> Result<()> {
        self.into_inner().flush()?;
        Ok(())
    }
}

#[cfg(feature = "csv-json")]
impl<W: Write + Send> BatchSink for arrow_json::LineDelimitedWriter<W> {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Ok(arrow_json::LineDelimitedWriter::write(self, batch)?)
    }

    fn finish(mut self: Box<Self>, _: bool) -> Result<()> {
        arrow_json::LineDelimitedWriter::finish(&mut self)?;
        self.into_inner().flush()?;
        Ok(())
    }
}

#[cfg(feature = "parquet")]
impl<W: Write + Send> BatchSink for ParquetSink<W> {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let Some(group_rows) = self.group_rows else {
            return Ok(self.writer.write(batch)?);
        };
        let mut at = 0;
        while at < batch.num_rows() {
            let room = group_rows
                .saturating_sub(self.writer.in_progress_rows())
                .max(1);
            let rows = room.min(batch.num_rows() - at);
            self.writer.write(&batch.slice(at, rows))?;
            at += rows;
        }
        Ok(())
    }

    fn finish(self: Box<Self>, _: bool) -> Result<()> {
        self.writer.close()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file sink's write error on a full disk (`/dev/full`) is the I/O error itself, for
    /// every format: arrow and parquet would wrap it in their own errors, without the path
    /// that `write_atomically` adds to an I/O error.
    #[cfg(target_os = "linux")]
    #[test]
    fn a_full_disk_is_an_io_error_whatever_the_format() {
        use std::sync::Arc;
        let batch = RecordBatch::try_from_iter([
            (
                "n",
                Arc::new(arrow::array::Int64Array::from_iter_values(0..10_000))
                    as arrow::array::ArrayRef,
            ),
            (
                "s",
                Arc::new(arrow::array::StringArray::from_iter_values(
                    (0..10_000).map(|i| format!("row {i}")),
                )),
            ),
        ])
        .unwrap();
        let kinds = [
            OutputKind::ArrowIpc,
            #[cfg(feature = "parquet")]
            OutputKind::Parquet,
            #[cfg(feature = "csv-json")]
            OutputKind::Csv,
            #[cfg(feature = "csv-json")]
            OutputKind::JsonLines,
        ];
        for kind in kinds {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let written = file_sink(
                kind,
                full,
                batch.schema(),
                4096,
                &ParquetWrite::default(),
                b',',
            )
            .and_then(|mut sink| {
                sink.write(&batch)?;
                sink.finish(false)
            });
            match written {
                Err(Error::Io(e)) => assert_eq!(e.raw_os_error(), Some(libc::ENOSPC), "{kind:?}"),
                other => panic!("{kind:?}: {:?}", other.map_err(|e| e.to_string())),
            }
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_raw_output_has_its_blocks_allocated_before_it_is_mapped() {
        use std::os::unix::fs::MetadataExt;
        let file = tempfile::tempfile().unwrap();
        assert!(reserve(&file, 0, 1 << 20).unwrap());
        let metadata = file.metadata().unwrap();
        assert_eq!(metadata.len(), 1 << 20);
        // Allocated, not a hole that the mapping's first write would have to fill (and,
        // on a full disk, die with SIGBUS for).
        assert!(
            metadata.blocks() * 512 >= 1 << 20,
            "{} blocks",
            metadata.blocks()
        );
    }

    /// Where blocks cannot be allocated ahead, the raw sink writes with `pwrite`: the
    /// bytes land where they belong, and a full disk is an ENOSPC error (through a
    /// mapping it would be a SIGBUS).
    #[test]
    fn a_raw_output_that_cannot_be_allocated_ahead_is_written_plainly() {
        use std::io::Read;
        let mut sink = MappedRawSink::new(tempfile::tempfile().unwrap());
        sink.mapped = false;
        sink.append(b"abc").unwrap();
        sink.append(&[7u8; 10_000]).unwrap();
        let mut written = Vec::new();
        let mut file = sink.file.try_clone().unwrap();
        std::io::Seek::rewind(&mut file).unwrap();
        file.read_to_end(&mut written).unwrap();
        assert_eq!(&written[..3], b"abc");
        assert_eq!(&written[3..], &[7u8; 10_000]);

        #[cfg(target_os = "linux")]
        {
            let full = std::fs::OpenOptions::new()
                .write(true)
                .open("/dev/full")
                .unwrap();
            let mut sink = MappedRawSink::new(full);
            sink.mapped = false;
            match sink.append(b"abc") {
                Err(Error::Io(e)) => assert_eq!(e.raw_os_error(), Some(libc::ENOSPC)),
                other => panic!("{:?}", other.map_err(|e| e.to_string())),
            }
        }
    }
}
