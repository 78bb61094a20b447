//! Writing decompressed archives back out: raw bytes, Arrow IPC, or Parquet.

use std::io::Write;

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};

use super::format::Source;
use crate::{Error, Result};

/// The file kind `colzip decompress` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OutputKind {
    /// The raw bytes a raw archive was made from, byte for byte.
    Raw,
    /// An Arrow IPC file.
    ArrowIpc,
    /// A Parquet file (written by the parquet crate, ZSTD-compressed).
    #[cfg(feature = "parquet")]
    Parquet,
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
        }
    }
}

impl std::str::FromStr for OutputKind {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        match text.to_ascii_lowercase().as_str() {
            "raw" => Ok(OutputKind::Raw),
            "arrow" | "ipc" => Ok(OutputKind::ArrowIpc),
            #[cfg(feature = "parquet")]
            "parquet" => Ok(OutputKind::Parquet),
            other => Err(Error::format(format!(
                "unknown output kind '{other}' (expected raw, arrow or parquet)"
            ))),
        }
    }
}

/// A sink for decompressed batches.
pub trait BatchSink {
    fn write(&mut self, batch: &RecordBatch) -> Result<()>;
    fn finish(self: Box<Self>, trailing_newline: bool) -> Result<()>;
}

/// Opens a sink of `kind` writing to `out`.
pub fn sink<W: Write + Send + 'static>(
    kind: OutputKind,
    out: W,
    schema: SchemaRef,
) -> Result<Box<dyn BatchSink>> {
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
            let props = parquet::file::properties::WriterProperties::builder()
                .set_compression(parquet::basic::Compression::ZSTD(Default::default()))
                .build();
            Box::new(parquet::arrow::ArrowWriter::try_new(
                out,
                schema,
                Some(props),
            )?)
        }
    })
}

struct RawSink<W> {
    out: W,
    first_line: bool,
    /// Whether the column is lines of text: only they can end with a newline.
    lines: bool,
}

impl<W: Write> BatchSink for RawSink<W> {
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

#[cfg(feature = "parquet")]
impl<W: Write + Send> BatchSink for parquet::arrow::ArrowWriter<W> {
    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        Ok(parquet::arrow::ArrowWriter::write(self, batch)?)
    }

    fn finish(self: Box<Self>, _: bool) -> Result<()> {
        self.close()?;
        Ok(())
    }
}
