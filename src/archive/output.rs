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

/// A sink for decompressed batches (written on a thread of its own).
pub trait BatchSink: Send {
    fn write(&mut self, batch: &RecordBatch) -> Result<()>;
    fn finish(self: Box<Self>, trailing_newline: bool) -> Result<()>;
}

/// Opens a sink of `kind` writing to `file`: raw fixed-width values go through a mapping
/// of the file, copied on all cores (one core's write() fills the page cache at a few
/// GB/s); every other kind through a buffered writer.
pub fn file_sink(
    kind: OutputKind,
    file: std::fs::File,
    schema: SchemaRef,
    buffer: usize,
) -> Result<Box<dyn BatchSink>> {
    let fixed_width =
        schema.fields().len() == 1 && schema.field(0).data_type().primitive_width().is_some();
    if kind == OutputKind::Raw && fixed_width {
        return Ok(Box::new(MappedRawSink { file, len: 0 }));
    }
    sink(
        kind,
        std::io::BufWriter::with_capacity(buffer, file),
        schema,
    )
}

/// Raw fixed-width values written through a shared mapping of the output file, each
/// batch's bytes copied into it on all cores; the page cache writes them back as it
/// would after write().
struct MappedRawSink {
    file: std::fs::File,
    len: u64,
}

impl MappedRawSink {
    fn append(&mut self, bytes: &[u8]) -> Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        const PAGE: u64 = 4096;
        let start = self.len;
        let end = start + bytes.len() as u64;
        self.file.set_len(end)?;
        let from = start / PAGE * PAGE;
        // SAFETY: the file is this sink's own temporary output, which nothing else maps
        // or changes; the mapping covers [from, end), within the file's new length.
        let mut map = unsafe {
            memmap2::MmapOptions::new()
                .offset(from)
                .len((end - from) as usize)
                .map_mut(&self.file)
        }?;
        crate::gpu::parallel_copy(&mut map[(start - from) as usize..], bytes);
        self.len = end;
        Ok(())
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
