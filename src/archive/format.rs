//! The `.czip` archive: many columns of many batches, written and read as streams.
//!
//! ```text
//! magic "CZIP" | version u8 (1) | source u8 (0 raw, 1 Arrow IPC, 2 Parquet) | raw type u8
//! | schema length varint | schema (field count varint, fields as in the column container)
//! batch* := 0x01 | rows varint | per column: container length varint | column container
//! end    := 0x00 | flags u8 (bit 0: a utf8-lines file ended with '\n') | batch count varint
//! ```
//! Each column container checks itself (CRC-32C over its bytes, xxh3 of every part), and
//! the end record proves the archive was not cut short.

use std::io::{Read, Write};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema, SchemaRef};

use super::input::RawType;
use crate::codec::{Placement, varint};
use crate::column::{self, CodecChoice, CompressedColumn};
use crate::{Error, Result};

pub const MAGIC: &[u8; 4] = b"CZIP";
pub const VERSION: u8 = 1;

/// What the archived data was before it was compressed (and what it becomes again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Raw(RawType),
    ArrowIpc,
    Parquet,
}

impl Source {
    pub fn name(self) -> String {
        match self {
            Source::Raw(raw) => format!("raw {}", raw.name()),
            Source::ArrowIpc => "Arrow IPC".into(),
            Source::Parquet => "Parquet".into(),
        }
    }
}

/// Compresses a batch of `schema`'s columns, all their parts in one batched call per
/// codec (on the GPU when `placement` says so for the call's size).
pub fn compress_batch(
    schema: &SchemaRef,
    batch: &RecordBatch,
    codec: &CodecChoice,
    placement: Placement,
) -> Result<Vec<CompressedColumn>> {
    if batch.schema().fields() != schema.fields() {
        return Err(Error::format("a batch's schema differs from the archive's"));
    }
    let pairs: Vec<(&arrow::datatypes::Field, &dyn arrow::array::Array)> = schema
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(field, array)| (field.as_ref(), array.as_ref()))
        .collect();
    column::compress_columns_on(&pairs, codec, placement)
}

/// Writes an archive batch by batch.
pub struct ArchiveWriter<W: Write> {
    out: W,
    schema: SchemaRef,
    batches: u64,
}

impl<W: Write> ArchiveWriter<W> {
    /// Writes the header.
    pub fn new(mut out: W, schema: SchemaRef, source: Source) -> Result<Self> {
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        header.push(VERSION);
        let (kind, raw) = match source {
            Source::Raw(raw) => (0, raw.tag()),
            Source::ArrowIpc => (1, 0),
            Source::Parquet => (2, 0),
        };
        header.extend_from_slice(&[kind, raw]);
        let mut fields = Vec::new();
        varint::write_u64(&mut fields, schema.fields().len() as u64);
        for field in schema.fields() {
            column::write_field(&mut fields, field)?;
        }
        varint::write_u64(&mut header, fields.len() as u64);
        header.extend_from_slice(&fields);
        out.write_all(&header)?;
        Ok(ArchiveWriter {
            out,
            schema,
            batches: 0,
        })
    }

    /// Compresses (on the CPU) and appends one batch; returns its compressed columns.
    pub fn write_batch(
        &mut self,
        batch: &RecordBatch,
        codec: &CodecChoice,
    ) -> Result<Vec<CompressedColumn>> {
        self.write_batch_on(batch, codec, Placement::CPU)
    }

    /// [`Self::write_batch`] with the codecs placed by `placement`.
    pub fn write_batch_on(
        &mut self,
        batch: &RecordBatch,
        codec: &CodecChoice,
        placement: Placement,
    ) -> Result<Vec<CompressedColumn>> {
        let columns = compress_batch(&self.schema, batch, codec, placement)?;
        self.append(batch.num_rows(), &columns)?;
        Ok(columns)
    }

    /// Appends a batch of `rows` rows already compressed (by [`compress_batch`]).
    pub fn append(&mut self, rows: usize, columns: &[CompressedColumn]) -> Result<()> {
        if columns.len() != self.schema.fields().len() {
            return Err(Error::format("a batch's columns differ from the archive's"));
        }
        let mut record = vec![1u8];
        varint::write_u64(&mut record, rows as u64);
        self.out.write_all(&record)?;
        for compressed in columns {
            let mut len = Vec::new();
            varint::write_u64(&mut len, compressed.encoded_len()? as u64);
            self.out.write_all(&len)?;
            compressed.write_to(&mut self.out)?;
        }
        self.batches += 1;
        Ok(())
    }

    /// Writes the end record and returns the writer.
    pub fn finish(mut self, trailing_newline: bool) -> Result<W> {
        let mut end = vec![0u8, u8::from(trailing_newline)];
        varint::write_u64(&mut end, self.batches);
        self.out.write_all(&end)?;
        self.out.flush()?;
        Ok(self.out)
    }
}

/// Reads an archive batch by batch.
pub struct ArchiveReader<R: Read> {
    input: R,
    schema: SchemaRef,
    source: Source,
    batches: u64,
    trailing_newline: Option<bool>,
}

fn read_exact_vec(input: &mut impl Read, len: u64, what: &str) -> Result<Vec<u8>> {
    // Up to 256 MiB: one zeroed buffer (mapped lazily, in huge pages, so a corrupt length
    // costs address space, not memory) read in one go.
    if len <= 256 << 20 {
        let mut buf = crate::gpu::zeroed(len as usize);
        input.read_exact(&mut buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => {
                Error::format(format!("archive truncated inside {what}"))
            }
            _ => Error::Io(e),
        })?;
        return Ok(buf);
    }
    // Larger: room is reserved a bounded piece at a time, so a corrupt length cannot force
    // a huge allocation, and a real one is read without the copies of a doubling buffer.
    const PIECE: u64 = 64 << 20;
    let mut buf = Vec::new();
    let mut left = len;
    while left > 0 {
        let piece = left.min(PIECE);
        buf.reserve_exact(piece as usize);
        let read = input.take(piece).read_to_end(&mut buf)? as u64;
        if read < piece {
            return Err(Error::format(format!("archive truncated inside {what}")));
        }
        left -= piece;
    }
    Ok(buf)
}

fn read_varint(input: &mut impl Read) -> Result<u64> {
    let mut bytes = Vec::with_capacity(10);
    loop {
        let mut byte = [0u8];
        if input.read(&mut byte)? == 0 {
            return Err(Error::format("archive truncated inside a length"));
        }
        bytes.push(byte[0]);
        if byte[0] & 0x80 == 0 || bytes.len() == 10 {
            return Ok(varint::read_u64(&bytes, "archive")?.0);
        }
    }
}

impl<R: Read> ArchiveReader<R> {
    /// Reads and checks the header.
    pub fn new(mut input: R) -> Result<Self> {
        let mut head = [0u8; 7];
        input
            .read_exact(&mut head)
            .map_err(|_| Error::format("not a colzip archive (too short)"))?;
        if &head[..4] != MAGIC {
            return Err(Error::format("not a colzip archive (bad magic)"));
        }
        if head[4] != VERSION {
            return Err(Error::format(format!(
                "archive version {} is not supported (this build reads {VERSION})",
                head[4]
            )));
        }
        let source = match head[5] {
            0 => Source::Raw(
                RawType::from_tag(head[6])
                    .ok_or_else(|| Error::format("unknown raw type in archive"))?,
            ),
            1 => Source::ArrowIpc,
            2 => Source::Parquet,
            other => return Err(Error::format(format!("unknown archive source {other}"))),
        };
        let len = read_varint(&mut input)?;
        let fields = read_exact_vec(&mut input, len, "the schema")?;
        let schema = Arc::new(Schema::new(column::read_fields(&fields)?));
        Ok(ArchiveReader {
            input,
            schema,
            source,
            batches: 0,
            trailing_newline: None,
        })
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// Whether a `utf8-lines` file ended with a newline; known after the last batch.
    pub fn trailing_newline(&self) -> Option<bool> {
        self.trailing_newline
    }

    /// The next batch's compressed columns, or `None` at the end record.
    pub fn next_compressed(&mut self) -> Result<Option<(usize, Vec<CompressedColumn>)>> {
        if self.trailing_newline.is_some() {
            return Ok(None);
        }
        let mut marker = [0u8];
        self.input
            .read_exact(&mut marker)
            .map_err(|_| Error::format("archive truncated: no end record"))?;
        match marker[0] {
            0 => {
                let mut flags = [0u8];
                self.input
                    .read_exact(&mut flags)
                    .map_err(|_| Error::format("archive truncated in the end record"))?;
                let count = read_varint(&mut self.input)?;
                if count != self.batches {
                    return Err(Error::format(format!(
                        "end record counts {count} batches, {} read",
                        self.batches
                    )));
                }
                self.trailing_newline = Some(flags[0] & 1 != 0);
                Ok(None)
            }
            1 => {
                let rows = usize::try_from(read_varint(&mut self.input)?)
                    .map_err(|_| Error::format("row count too large"))?;
                let mut columns = Vec::with_capacity(self.schema.fields().len());
                for field in self.schema.fields() {
                    let len = read_varint(&mut self.input)?;
                    let bytes = read_exact_vec(&mut self.input, len, "a column")?;
                    let column =
                        CompressedColumn::from_buffer(arrow::buffer::Buffer::from_vec(bytes))?;
                    if column.field() != field.as_ref() || column.len() != rows {
                        return Err(Error::format(format!(
                            "column '{}' does not match the archive's schema",
                            field.name()
                        )));
                    }
                    columns.push(column);
                }
                self.batches += 1;
                Ok(Some((rows, columns)))
            }
            other => Err(Error::format(format!(
                "bad record marker {other} in archive"
            ))),
        }
    }

    /// The next batch, decompressed on the CPU.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        self.next_batch_on(Placement::CPU)
    }

    /// [`Self::next_batch`] with the codecs placed by `placement`.
    pub fn next_batch_on(&mut self, placement: Placement) -> Result<Option<RecordBatch>> {
        let Some((rows, columns)) = self.next_compressed()? else {
            return Ok(None);
        };
        decompress_batch(&self.schema, rows, &columns, placement).map(Some)
    }
}

/// Decompresses a batch's columns (all their parts in one batched call per codec) into a
/// record batch of `schema`.
pub fn decompress_batch(
    schema: &SchemaRef,
    rows: usize,
    columns: &[CompressedColumn],
    placement: Placement,
) -> Result<RecordBatch> {
    let refs: Vec<&CompressedColumn> = columns.iter().collect();
    let arrays = column::decompress_columns_on(&refs, placement)?;
    let options = arrow::array::RecordBatchOptions::new().with_row_count(Some(rows));
    Ok(RecordBatch::try_new_with_options(
        schema.clone(),
        arrays,
        &options,
    )?)
}
