//! Reading the files `colzip compress` takes: raw typed files, Arrow IPC, Parquet, and
//! (with the `csv-json` feature) CSV and JSON lines in `csv.rs` and `json.rs`.

mod blocks;
#[cfg(feature = "csv-json")]
mod csv;
#[cfg(feature = "csv-json")]
mod json;

use std::fs::File;
use std::io::{BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Arc;

use arrow::array::{ArrayRef, PrimitiveArray, RecordBatch, StringArray, UInt8Array};
use arrow::buffer::Buffer;
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Field, Float32Type, Float64Type, Int8Type, Int16Type, Int32Type,
    Int64Type, Schema, SchemaRef, UInt16Type, UInt32Type, UInt64Type,
};

use crate::{Error, Result};

/// How the bytes of a raw file are read as a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RawType {
    /// Plain bytes (a UInt8 column).
    Bytes,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float32,
    Float64,
    /// UTF-8 text, one value per line (`\n`); the final newline is remembered.
    Utf8Lines,
}

impl RawType {
    pub const ALL: [RawType; 12] = [
        RawType::Bytes,
        RawType::Int8,
        RawType::Int16,
        RawType::Int32,
        RawType::Int64,
        RawType::UInt8,
        RawType::UInt16,
        RawType::UInt32,
        RawType::UInt64,
        RawType::Float32,
        RawType::Float64,
        RawType::Utf8Lines,
    ];

    pub fn name(self) -> &'static str {
        match self {
            RawType::Bytes => "bytes",
            RawType::Int8 => "int8",
            RawType::Int16 => "int16",
            RawType::Int32 => "int32",
            RawType::Int64 => "int64",
            RawType::UInt8 => "uint8",
            RawType::UInt16 => "uint16",
            RawType::UInt32 => "uint32",
            RawType::UInt64 => "uint64",
            RawType::Float32 => "float32",
            RawType::Float64 => "float64",
            RawType::Utf8Lines => "utf8-lines",
        }
    }

    /// The id stored in archives.
    pub fn tag(self) -> u8 {
        RawType::ALL
            .iter()
            .position(|&t| t == self)
            .expect("listed") as u8
    }

    pub fn from_tag(tag: u8) -> Option<Self> {
        RawType::ALL.get(tag as usize).copied()
    }

    pub fn data_type(self) -> DataType {
        match self {
            RawType::Bytes | RawType::UInt8 => DataType::UInt8,
            RawType::Int8 => DataType::Int8,
            RawType::Int16 => DataType::Int16,
            RawType::Int32 => DataType::Int32,
            RawType::Int64 => DataType::Int64,
            RawType::UInt16 => DataType::UInt16,
            RawType::UInt32 => DataType::UInt32,
            RawType::UInt64 => DataType::UInt64,
            RawType::Float32 => DataType::Float32,
            RawType::Float64 => DataType::Float64,
            RawType::Utf8Lines => DataType::Utf8,
        }
    }

    /// Bytes per value, `None` for lines.
    pub fn width(self) -> Option<usize> {
        match self {
            RawType::Utf8Lines => None,
            other => other.data_type().primitive_width(),
        }
    }

    /// The schema of the single column a raw file becomes.
    pub fn schema(self) -> SchemaRef {
        let name = if self == RawType::Utf8Lines {
            "line"
        } else {
            "value"
        };
        Arc::new(Schema::new(vec![Field::new(name, self.data_type(), false)]))
    }
}

impl FromStr for RawType {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        RawType::ALL
            .into_iter()
            .find(|t| t.name() == text.to_ascii_lowercase())
            .ok_or_else(|| {
                let names: Vec<_> = RawType::ALL.iter().map(|t| t.name()).collect();
                Error::format(format!(
                    "unknown raw type '{text}' (expected one of {})",
                    names.join(", ")
                ))
            })
    }
}

/// How a CSV file is read (DataFusion's CSV options of the same names).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CsvOptions {
    /// Whether the first line names the columns (else they are `column_1`, `column_2`, …).
    pub header: bool,
    /// The byte between fields.
    pub delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            header: true,
            delimiter: b',',
        }
    }
}

/// What kind of file an input is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InputKind {
    Raw(RawType),
    ArrowIpc,
    #[cfg(feature = "parquet")]
    Parquet,
    /// CSV, its columns' types inferred from the whole file.
    #[cfg(feature = "csv-json")]
    Csv(CsvOptions),
    /// One JSON object per line, its columns' types inferred from the whole file.
    #[cfg(feature = "csv-json")]
    JsonLines,
}

impl InputKind {
    /// Arrow IPC or Parquet by their magic bytes, else a raw file of `raw` values.
    pub fn detect(path: &Path, raw: RawType) -> Result<Self> {
        let mut magic = [0u8; 6];
        let mut file = File::open(path).map_err(Error::file("open", path))?;
        let read = file.read(&mut magic).map_err(Error::file("read", path))?;
        if read >= 6 && &magic == b"ARROW1" {
            return Ok(InputKind::ArrowIpc);
        }
        #[cfg(feature = "parquet")]
        if read >= 4 && &magic[..4] == b"PAR1" {
            return Ok(InputKind::Parquet);
        }
        // An Arrow IPC stream starts with a continuation marker.
        if read >= 4 && magic[..4] == [0xff; 4] && path.extension().is_some_and(|e| e == "arrows") {
            return Ok(InputKind::ArrowIpc);
        }
        Ok(InputKind::Raw(raw))
    }

    /// The text kind a file's name gives: CSV for `.csv`, tab-separated CSV for `.tsv`
    /// (`csv`'s delimiter unless it was chosen), JSON lines for `.json`, `.jsonl` and
    /// `.ndjson`; `None` for other names (case is ignored).
    #[cfg(feature = "csv-json")]
    pub fn from_extension(path: &Path, csv: CsvOptions) -> Option<Self> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "csv" => Some(InputKind::Csv(csv)),
            "tsv" if csv.delimiter == CsvOptions::default().delimiter => {
                Some(InputKind::Csv(CsvOptions {
                    delimiter: b'\t',
                    ..csv
                }))
            }
            "tsv" => Some(InputKind::Csv(csv)),
            "json" | "jsonl" | "ndjson" => Some(InputKind::JsonLines),
            _ => None,
        }
    }

    /// For a file whose schema gives its types (Arrow IPC, Parquet), the phrase that names
    /// its kind ("an Arrow IPC"); `None` for a raw file and for CSV and JSON, whose types
    /// are inferred.
    pub fn schema_file(self) -> Option<&'static str> {
        match self {
            InputKind::Raw(_) => None,
            InputKind::ArrowIpc => Some("an Arrow IPC"),
            #[cfg(feature = "parquet")]
            InputKind::Parquet => Some("a Parquet"),
            #[cfg(feature = "csv-json")]
            InputKind::Csv(_) | InputKind::JsonLines => None,
        }
    }
}

/// Record batches read from a file, with their schema.
pub struct Input {
    pub schema: SchemaRef,
    pub batches: Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
    /// Set after the last batch of a `utf8-lines` file: whether it ended with `\n`.
    pub trailing_newline: Arc<std::sync::atomic::AtomicBool>,
    /// For a Parquet file: how it was written (its codec), which the archive records.
    pub parquet: Option<super::ParquetOptions>,
}

/// The most fields (rows times columns, nested ones counted) in one batch of a CSV or
/// JSON-lines input: arrow-csv and arrow-json allocate room for every field of a batch up
/// front, so a file of thousands of columns would otherwise claim tens of GB, or abort,
/// before reading a line.
#[cfg(feature = "csv-json")]
const MAX_TEXT_BATCH_FIELDS: usize = 1 << 24;

/// `batch_rows`, fewer for a text input of many columns ([`MAX_TEXT_BATCH_FIELDS`]).
#[cfg(feature = "csv-json")]
fn text_batch_rows(batch_rows: usize, schema: &arrow::datatypes::Schema) -> usize {
    let fields = schema.flattened_fields().len().max(1);
    batch_rows.min((MAX_TEXT_BATCH_FIELDS / fields).max(1))
}

/// Batches of rows read from a text file (CSV or JSON lines).
#[cfg(feature = "csv-json")]
type TextBatches = Box<dyn Iterator<Item = Result<RecordBatch>> + Send>;

/// What the text readers do once a file's schema is inferred: refuse a schema without
/// columns (`no_columns` says why, after the file's name), rewind the file for the
/// reading pass, and size a batch for the schema. The schema and the rows of a batch.
#[cfg(feature = "csv-json")]
fn after_inference(
    schema: arrow::datatypes::Schema,
    file: &mut impl std::io::Seek,
    path: &Path,
    no_columns: &str,
    batch_rows: usize,
) -> Result<(SchemaRef, usize)> {
    if schema.fields().is_empty() {
        return Err(Error::format(format!("{}: {no_columns}", path.display())));
    }
    file.seek(std::io::SeekFrom::Start(0))
        .map_err(Error::file("read", path))?;
    let batch_rows = text_batch_rows(batch_rows, &schema);
    Ok((Arc::new(schema), batch_rows))
}

/// A text reader's batches, each error worded by `error` (which names the file).
#[cfg(feature = "csv-json")]
fn text_batches(
    reader: impl Iterator<Item = std::result::Result<RecordBatch, arrow::error::ArrowError>>
    + Send
    + 'static,
    path: &Path,
    error: fn(&Path, arrow::error::ArrowError) -> Error,
) -> TextBatches {
    let path = path.to_path_buf();
    Box::new(reader.map(move |batch| batch.map_err(|e| error(&path, e))))
}

/// Opens `path` as `kind`, reading batches of about `batch_bytes` of raw data
/// (`batch_rows` rows for Arrow IPC and Parquet files).
pub fn open(path: &Path, kind: InputKind, batch_bytes: usize, batch_rows: usize) -> Result<Input> {
    let file = File::open(path).map_err(Error::file("open", path))?;
    let trailing_newline = Arc::new(std::sync::atomic::AtomicBool::new(false));
    #[cfg_attr(not(feature = "parquet"), allow(unused_mut))]
    let mut parquet_options = None;
    let (schema, batches): (
        SchemaRef,
        Box<dyn Iterator<Item = Result<RecordBatch>> + Send>,
    ) = match kind {
        InputKind::Raw(raw) if raw != RawType::Utf8Lines && file.metadata()?.len() > 0 => (
            raw.schema(),
            Box::new(FixedWidthReader::new(file, path, raw, batch_bytes)?),
        ),
        InputKind::Raw(raw) => {
            let reader = RawReader::new(file, raw, batch_bytes, trailing_newline.clone())?;
            (raw.schema(), Box::new(reader))
        }
        InputKind::ArrowIpc => {
            let mut file = file;
            let mut magic = [0u8; 6];
            let is_file = file.read(&mut magic)? == 6 && &magic == b"ARROW1";
            file.seek(SeekFrom::Start(0))?;
            if is_file {
                let reader = arrow::ipc::reader::FileReader::try_new(BufReader::new(file), None)?;
                (
                    reader.schema(),
                    Box::new(reader.map(|b| b.map_err(Error::from))),
                )
            } else {
                let reader = arrow::ipc::reader::StreamReader::try_new(BufReader::new(file), None)?;
                (
                    reader.schema(),
                    Box::new(reader.map(|b| b.map_err(Error::from))),
                )
            }
        }
        #[cfg(feature = "parquet")]
        InputKind::Parquet => {
            let builder =
                parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)?;
            parquet_options = Some(super::ParquetOptions::from_metadata(builder.metadata()));
            let reader = builder.with_batch_size(batch_rows).build()?;
            let schema = arrow::array::RecordBatchReader::schema(&reader);
            (schema, Box::new(reader.map(|b| b.map_err(Error::from))))
        }
        #[cfg(feature = "csv-json")]
        InputKind::Csv(options) => csv::open(file, path, options, batch_rows)?,
        #[cfg(feature = "csv-json")]
        InputKind::JsonLines => json::open(file, path, batch_rows)?,
    };
    let _ = batch_rows;
    Ok(Input {
        schema,
        batches,
        trailing_newline,
        parquet: parquet_options,
    })
}

/// A raw file of fixed-width values, read a block at a time into aligned buffers. Read,
/// not mapped: a file truncated while it is read gives an error naming it, where a
/// mapping's missing pages would kill the process with SIGBUS.
struct FixedWidthReader {
    file: File,
    path: PathBuf,
    raw: RawType,
    /// The file's size when opened, a multiple of the value width.
    len: u64,
    block: usize,
    at: u64,
    blocks: blocks::Blocks,
}

impl FixedWidthReader {
    fn new(file: File, path: &Path, raw: RawType, block: usize) -> Result<Self> {
        let width = raw.width().expect("fixed width");
        let len = file.metadata().map_err(Error::file("read", path))?.len();
        if !len.is_multiple_of(width as u64) {
            return Err(Error::format(format!(
                "the file's size is not a multiple of {width} bytes, the width of {}",
                raw.name()
            )));
        }
        Ok(FixedWidthReader {
            file,
            path: path.to_path_buf(),
            raw,
            len,
            // Whole values (pages are whole values of every width).
            block: (block.max(4096) / 4096) * 4096,
            at: 0,
            blocks: blocks::Blocks::default(),
        })
    }

    /// The `len` bytes at `at`, read in pieces on all cores into a block whose memory
    /// earlier batches may have used (see `blocks`).
    fn read_block(&mut self, at: u64, len: usize) -> Result<Buffer> {
        use rayon::prelude::*;
        use std::os::unix::fs::FileExt;
        const PIECE: usize = 4 << 20;
        let mut block = self.blocks.take(len);
        let file = &self.file;
        block
            .as_mut_slice()
            .par_chunks_mut(PIECE)
            .enumerate()
            .try_for_each(|(k, piece)| file.read_exact_at(piece, at + (k * PIECE) as u64))
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::UnexpectedEof {
                    Error::format(format!(
                        "{} shrank while it was read (it had {} bytes)",
                        self.path.display(),
                        self.len
                    ))
                } else {
                    Error::file("read", &self.path)(e)
                }
            })?;
        Ok(block.into_buffer())
    }
}

impl Iterator for FixedWidthReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.len {
            return None;
        }
        let len = (self.block as u64).min(self.len - self.at) as usize;
        let at = self.at;
        self.at += len as u64;
        Some(
            self.read_block(at, len)
                .and_then(|buffer| raw_batch(self.raw, buffer)),
        )
    }
}

fn raw_batch(raw: RawType, buffer: Buffer) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(
        raw.schema(),
        vec![raw_array(raw, buffer)?],
    )?)
}

/// Fixed-width values as an array of `raw`'s type.
fn raw_array(raw: RawType, buffer: Buffer) -> Result<ArrayRef> {
    let width = raw
        .width()
        .ok_or_else(|| Error::format("utf8-lines has no fixed width"))?;
    let rows = buffer.len() / width;
    Ok(match raw {
        RawType::Bytes | RawType::UInt8 => Arc::new(UInt8Array::new(buffer.into(), None)),
        RawType::Int8 => primitive::<Int8Type>(buffer, rows),
        RawType::Int16 => primitive::<Int16Type>(buffer, rows),
        RawType::Int32 => primitive::<Int32Type>(buffer, rows),
        RawType::Int64 => primitive::<Int64Type>(buffer, rows),
        RawType::UInt16 => primitive::<UInt16Type>(buffer, rows),
        RawType::UInt32 => primitive::<UInt32Type>(buffer, rows),
        RawType::UInt64 => primitive::<UInt64Type>(buffer, rows),
        RawType::Float32 => primitive::<Float32Type>(buffer, rows),
        RawType::Float64 => primitive::<Float64Type>(buffer, rows),
        RawType::Utf8Lines => {
            return Err(Error::format("utf8-lines files are read, not mapped"));
        }
    })
}

/// Reads a raw file in blocks, each one record batch of one column.
struct RawReader {
    file: BufReader<File>,
    raw: RawType,
    block: usize,
    /// Bytes read but not yet made into values (a partial value or line).
    pending: Vec<u8>,
    line: u64,
    any_bytes: bool,
    done: bool,
    trailing_newline: Arc<std::sync::atomic::AtomicBool>,
}

impl RawReader {
    fn new(
        file: File,
        raw: RawType,
        block: usize,
        trailing_newline: Arc<std::sync::atomic::AtomicBool>,
    ) -> Result<Self> {
        let width = raw.width().unwrap_or(1);
        Ok(RawReader {
            file: BufReader::new(file),
            raw,
            block: (block.max(width) / width) * width,
            pending: Vec::new(),
            line: 0,
            any_bytes: false,
            done: false,
            trailing_newline,
        })
    }

    fn read_block(&mut self) -> Result<Option<RecordBatch>> {
        let mut buf = std::mem::take(&mut self.pending);
        let want = if buf.len() >= self.block {
            self.block
        } else {
            self.block - buf.len()
        };
        // Room for the whole block at once: no copies of a doubling buffer.
        buf.reserve_exact(want);
        let read = (&mut self.file).take(want as u64).read_to_end(&mut buf)?;
        let eof = read < want;
        self.any_bytes |= !buf.is_empty();
        let array: ArrayRef = match self.raw {
            RawType::Utf8Lines => {
                let cut = if eof {
                    buf.len()
                } else {
                    match buf.iter().rposition(|&b| b == b'\n') {
                        Some(pos) => pos + 1,
                        None => {
                            // A line longer than the block: keep reading.
                            self.pending = buf;
                            return if read == 0 {
                                Ok(None)
                            } else {
                                self.read_block()
                            };
                        }
                    }
                };
                self.pending = buf.split_off(cut);
                if eof {
                    self.done = true;
                    self.trailing_newline.store(
                        buf.last() == Some(&b'\n'),
                        std::sync::atomic::Ordering::Relaxed,
                    );
                }
                let mut lines: Vec<&[u8]> = buf.split(|&b| b == b'\n').collect();
                if buf.last() == Some(&b'\n') || buf.is_empty() {
                    lines.pop();
                }
                let mut values = Vec::with_capacity(lines.len());
                for line in lines {
                    self.line += 1;
                    values.push(std::str::from_utf8(line).map_err(|_| {
                        Error::format(format!(
                            "line {} is not UTF-8 (use --type bytes for binary files)",
                            self.line
                        ))
                    })?);
                }
                Arc::new(StringArray::from(values))
            }
            raw => {
                let width = raw.width().expect("fixed width");
                if eof {
                    self.done = true;
                    if !buf.len().is_multiple_of(width) {
                        return Err(Error::format(format!(
                            "the file's size is not a multiple of {width} bytes, the width of {}",
                            raw.name()
                        )));
                    }
                }
                raw_array(raw, Buffer::from_vec(buf))?
            }
        };
        if array.is_empty() && self.done && self.any_bytes {
            return Ok(None);
        }
        Ok(Some(RecordBatch::try_new(self.raw.schema(), vec![array])?))
    }
}

fn primitive<T: ArrowPrimitiveType>(buffer: Buffer, rows: usize) -> ArrayRef {
    // A `Vec<u8>`'s buffer (an empty one especially: a dangling pointer aligned to 1) need
    // not be aligned for `T`, which `ScalarBuffer` requires: copy it when it is not.
    let buffer = if buffer
        .as_ptr()
        .align_offset(std::mem::align_of::<T::Native>())
        == 0
    {
        buffer
    } else {
        Buffer::from_slice_ref(buffer.as_slice())
    };
    Arc::new(PrimitiveArray::<T>::new(
        arrow::buffer::ScalarBuffer::new(buffer, 0, rows),
        None,
    ))
}

impl Iterator for RawReader {
    type Item = Result<RecordBatch>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        let result = self.read_block();
        if result.is_err() {
            self.done = true;
        }
        result.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_raw_file_that_shrinks_while_it_is_read_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("values.i32");
        let values: Vec<u8> = (0..100_000i32).flat_map(i32::to_le_bytes).collect();
        std::fs::write(&path, &values).unwrap();
        let mut input = open(&path, InputKind::Raw(RawType::Int32), 4096, 1024).unwrap();
        let first = input.batches.next().unwrap().unwrap();
        assert_eq!(first.num_rows(), 1024);
        // Truncated underneath the reader: a mapping would die with SIGBUS here.
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(8192)
            .unwrap();
        let error = input
            .batches
            .find_map(|batch| batch.err())
            .expect("an error once the file ends early")
            .to_string();
        assert!(error.contains("shrank"), "{error}");
        assert!(error.contains("values.i32"), "{error}");
    }
}
