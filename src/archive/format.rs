//! The `.czip` archive: many columns of many batches, written and read as streams.
//!
//! ```text
//! header := magic "CZIP" | version u8 (2) | source u8 (0 raw, 1 Arrow IPC, 2 Parquet,
//!             3 CSV, 4 JSON lines)
//!           | raw type u8 (raw: the type; Parquet: 1 when options follow, else 0;
//!             CSV: its delimiter byte; else 0)
//!           | schema length varint
//!           | schema (field count varint, fields as in the column container)
//!           | [Parquet options: length varint | count varint | (key, value strings)*]
//!           | crc u32
//! batch  := 0x01 | rows varint | per column: container length varint | column container | crc u32
//! end    := 0x00 | flags u8 | batch count varint | crc u32
//! ```
//! Every `crc` is the CRC-32C of **all the archive's bytes before it but the earlier
//! CRCs**, so the header, the source kind, the flags, the order of the batches and the end
//! record's place after exactly these batches are all covered: a changed byte, a
//! reordered or repeated batch, or an end record from another archive fails the next
//! CRC. (The CRC fields stay out of the hash: CRC-32C over a message followed by its own
//! CRC is a constant, which would restart the chain at every record. For the same reason
//! each column container's own trailing CRC-32C stays out of it: hashed, it would cancel
//! the container's bytes, and two containers of one length would hash alike. Version 2
//! hashed it; such archives are still read, by their rule.) The only flag (bit 0 of `flags`: the file ended with `\n`) exists for
//! `utf8-lines` archives; elsewhere, and for any other bit, the flags must be 0. Each
//! column container checks itself besides (CRC-32C over its bytes, xxh3 of every part).

use std::io::{Read, Write};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{Schema, SchemaRef};

use super::input::RawType;
use super::parquet_options::ParquetOptions;
use crate::codec::{Placement, varint};
use crate::column::{self, CodecChoice, CompressedColumn};
use crate::{Error, Result};

pub const MAGIC: &[u8; 4] = b"CZIP";
/// The archive version this build writes. Version 2 (colzip up to this codec's
/// introduction) hashed each container's own CRC into the chain, which made the chain
/// blind to a container swapped for another of the same length; it is still read.
/// Version 1 (colzip up to commit 56f86d5) had no CRCs over its header, flags and batch
/// order; it is refused by name.
pub const VERSION: u8 = 3;
/// The oldest archive version this build reads.
const OLDEST_READ: u8 = 2;
/// Bytes of a column container's own CRC, at its end.
const CONTAINER_CRC: usize = 4;

const BATCH: u8 = 1;
const END: u8 = 0;
/// End-record flag: a `utf8-lines` file ended with `\n`.
const FLAG_TRAILING_NEWLINE: u8 = 1;
/// The header's second source byte of a Parquet archive: Parquet options follow the schema.
const PARQUET_OPTIONS: u8 = 1;

/// Appends a varint length and the string's UTF-8 bytes.
fn write_str(out: &mut Vec<u8>, text: &str) {
    varint::write_u64(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

/// The key-value pairs of a Parquet options block (count, then key and value strings).
fn encode_pairs(pairs: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    varint::write_u64(&mut out, pairs.len() as u64);
    for (key, value) in pairs {
        write_str(&mut out, key);
        write_str(&mut out, value);
    }
    out
}

/// Reads what [`encode_pairs`] wrote, all of it.
fn decode_pairs(bytes: &[u8]) -> Result<Vec<(String, String)>> {
    let mut reader = crate::column::Reader::new(bytes);
    let count = reader.varint()?;
    let mut pairs = Vec::new();
    for _ in 0..count {
        let key = reader.string()?;
        let value = reader.string()?;
        pairs.push((key, value));
    }
    if !reader.is_empty() {
        return Err(Error::format("bytes after the archive's Parquet options"));
    }
    Ok(pairs)
}

/// What the archived data was before it was compressed (and what it becomes again).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Raw(RawType),
    ArrowIpc,
    Parquet,
    /// A CSV file with this delimiter (never 0).
    Csv(u8),
    /// A file of JSON objects, one per line.
    JsonLines,
}

impl Source {
    pub fn name(self) -> String {
        match self {
            Source::Raw(raw) => format!("raw {}", raw.name()),
            Source::ArrowIpc => "Arrow IPC".into(),
            Source::Parquet => "Parquet".into(),
            Source::Csv(b',') => "CSV".into(),
            Source::Csv(b'\t') => "TSV".into(),
            Source::Csv(delimiter) => format!("CSV (delimiter {:?})", delimiter as char),
            Source::JsonLines => "JSON lines".into(),
        }
    }

    /// A raw file becomes exactly one column of [`RawType::schema`]; other sources take
    /// any schema.
    fn check_schema(self, schema: &Schema) -> Result<()> {
        match self {
            Source::Raw(raw) if schema != raw.schema().as_ref() => Err(Error::format(format!(
                "a raw {} archive holds one column '{}' of {}, not this schema",
                raw.name(),
                raw.schema().field(0).name(),
                raw.data_type()
            ))),
            _ => Ok(()),
        }
    }
}

/// A writer that keeps the CRC-32C of everything written through it.
struct Crc<W> {
    inner: W,
    crc: u32,
}

impl<W: Write> Write for Crc<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(bytes)?;
        self.crc = crc32c::crc32c_append(self.crc, &bytes[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A column container written into the archive: every byte goes out, and all but its
/// last [`CONTAINER_CRC`] (its own CRC) go into the archive's chain. The last bytes are
/// held back from the hash until more arrive, so the writes may be of any size.
struct ChainedContainer<'a, W> {
    out: &'a mut Crc<W>,
    held: [u8; CONTAINER_CRC],
    held_len: usize,
}

impl<'a, W: Write> ChainedContainer<'a, W> {
    fn new(out: &'a mut Crc<W>) -> Self {
        ChainedContainer {
            out,
            held: [0; CONTAINER_CRC],
            held_len: 0,
        }
    }
}

impl<W: Write> Write for ChainedContainer<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.out.inner.write_all(bytes)?;
        let total = self.held_len + bytes.len();
        let hashed = total.saturating_sub(CONTAINER_CRC);
        let from_held = hashed.min(self.held_len);
        let from_bytes = hashed - from_held;
        let crc = crc32c::crc32c_append(self.out.crc, &self.held[..from_held]);
        self.out.crc = crc32c::crc32c_append(crc, &bytes[..from_bytes]);
        let mut held = [0; CONTAINER_CRC];
        let kept = self.held_len - from_held;
        held[..kept].copy_from_slice(&self.held[from_held..self.held_len]);
        held[kept..total - hashed].copy_from_slice(&bytes[from_bytes..]);
        (self.held, self.held_len) = (held, total - hashed);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

impl<W: Write> Crc<W> {
    fn put(&mut self, bytes: &[u8]) -> Result<()> {
        self.write_all(bytes)?;
        Ok(())
    }

    /// Writes the CRC of everything written before it but the earlier CRCs. (Were the CRC
    /// fields hashed too, the running CRC would restart at a constant after each one, CRC's
    /// residue property, and records could be reordered undetected.)
    fn write_crc(&mut self) -> Result<()> {
        self.inner.write_all(&self.crc.to_le_bytes())?;
        Ok(())
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
    out: Crc<W>,
    schema: SchemaRef,
    source: Source,
    batches: u64,
    /// The version written ([`VERSION`]; older ones only in tests of the reader).
    version: u8,
}

impl<W: Write> ArchiveWriter<W> {
    /// Writes the header.
    pub fn new(out: W, schema: SchemaRef, source: Source) -> Result<Self> {
        Self::with_options(out, schema, source, None, VERSION)
    }

    /// [`Self::new`] for an archive of a Parquet file, recording how that file was
    /// written (`decompress --to parquet` writes it so again).
    pub fn for_parquet(out: W, schema: SchemaRef, options: &ParquetOptions) -> Result<Self> {
        Self::with_options(out, schema, Source::Parquet, Some(options), VERSION)
    }

    fn with_options(
        out: W,
        schema: SchemaRef,
        source: Source,
        parquet: Option<&ParquetOptions>,
        version: u8,
    ) -> Result<Self> {
        source.check_schema(&schema)?;
        let mut header = Vec::new();
        header.extend_from_slice(MAGIC);
        header.push(version);
        let (kind, raw) = match source {
            Source::Raw(raw) => (0, raw.tag()),
            Source::ArrowIpc => (1, 0),
            Source::Parquet if parquet.is_some() => (2, PARQUET_OPTIONS),
            Source::Parquet => (2, 0),
            Source::Csv(0) => return Err(Error::format("a CSV delimiter cannot be 0")),
            Source::Csv(delimiter) => (3, delimiter),
            Source::JsonLines => (4, 0),
        };
        header.extend_from_slice(&[kind, raw]);
        let mut fields = Vec::new();
        varint::write_u64(&mut fields, schema.fields().len() as u64);
        for field in schema.fields() {
            column::write_field(&mut fields, field)?;
        }
        varint::write_u64(&mut header, fields.len() as u64);
        header.extend_from_slice(&fields);
        if let Some(options) = parquet {
            let block = encode_pairs(&options.to_pairs());
            varint::write_u64(&mut header, block.len() as u64);
            header.extend_from_slice(&block);
        }
        let mut out = Crc { inner: out, crc: 0 };
        out.put(&header)?;
        out.write_crc()?;
        Ok(ArchiveWriter {
            out,
            schema,
            source,
            batches: 0,
            version,
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
        let mut record = vec![BATCH];
        varint::write_u64(&mut record, rows as u64);
        self.out.put(&record)?;
        for compressed in columns {
            let mut len = Vec::new();
            varint::write_u64(&mut len, compressed.encoded_len()? as u64);
            self.out.put(&len)?;
            // Straight from the parts' buffers, the CRC accumulated on the way (all but
            // the container's own CRC).
            if self.version >= 3 {
                compressed.write_to(&mut ChainedContainer::new(&mut self.out))?;
            } else {
                compressed.write_to(&mut self.out)?;
            }
        }
        self.out.write_crc()?;
        self.batches += 1;
        Ok(())
    }

    /// Writes the end record and returns the writer. `trailing_newline` (the file ended
    /// with `\n`) is recorded for `utf8-lines` archives, and must be false for others.
    pub fn finish(mut self, trailing_newline: bool) -> Result<W> {
        let flags = match (trailing_newline, self.source) {
            (true, Source::Raw(RawType::Utf8Lines)) => FLAG_TRAILING_NEWLINE,
            (true, other) => {
                return Err(Error::format(format!(
                    "a trailing newline means nothing in a {} archive (utf8-lines only)",
                    other.name()
                )));
            }
            (false, _) => 0,
        };
        let mut end = vec![END, flags];
        varint::write_u64(&mut end, self.batches);
        self.out.put(&end)?;
        self.out.write_crc()?;
        self.out.inner.flush()?;
        Ok(self.out.inner)
    }
}

/// A reader that keeps the CRC-32C of everything read through it, and the count.
struct CrcReader<R> {
    inner: R,
    crc: u32,
    read: u64,
}

impl<R: Read> Read for CrcReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.read += n as u64;
        Ok(n)
    }
}

impl<R: Read> CrcReader<R> {
    /// Reads a stored CRC (not hashed itself: see `Crc::write_crc`) and checks it against
    /// the bytes read before it.
    fn check_crc(&mut self, what: impl Fn() -> String) -> Result<()> {
        let computed = self.crc;
        let mut stored = [0u8; 4];
        self.inner
            .read_exact(&mut stored)
            .map_err(|_| Error::format(format!("archive truncated in the CRC of {}", what())))?;
        self.read += 4;
        if u32::from_le_bytes(stored) != computed {
            return Err(Error::Checksum { what: what() });
        }
        Ok(())
    }
}

/// Reads an archive batch by batch.
pub struct ArchiveReader<R: Read> {
    input: CrcReader<R>,
    schema: SchemaRef,
    source: Source,
    parquet: Option<ParquetOptions>,
    batches: u64,
    trailing_newline: Option<bool>,
    /// Decoded bytes the batches read so far claim, and the most they may claim.
    claimed: u64,
    max_output: u64,
    /// The input's length, when known (a file): what bounds a container's length.
    input_len: Option<u64>,
    /// Whether the chain leaves each container's own CRC out (version 3 on).
    chain_skips_container_crc: bool,
}

/// Reads `len` bytes. With `left`, the bytes the input has left (a file's size), a length
/// within them is read into one buffer of that size in one go (it cannot claim more than
/// the input holds); otherwise the buffer grows with the data actually read, so a corrupt
/// length cannot force a large allocation.
fn read_exact_vec(
    input: &mut impl Read,
    len: u64,
    left: Option<u64>,
    what: &str,
) -> Result<Vec<u8>> {
    let truncated = || Error::format(format!("archive truncated inside {what}"));
    if let Some(left) = left {
        if len > left {
            return Err(truncated());
        }
        let mut buf = crate::memory::try_zeroed(len as usize).ok_or_else(truncated)?;
        input.read_exact(&mut buf).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => truncated(),
            _ => Error::Io(e),
        })?;
        return Ok(buf);
    }
    let mut buf = Vec::new();
    input.take(len).read_to_end(&mut buf)?;
    if buf.len() as u64 != len {
        return Err(truncated());
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
    pub fn new(input: R) -> Result<Self> {
        let mut input = CrcReader {
            inner: input,
            crc: 0,
            read: 0,
        };
        let mut head = [0u8; 7];
        input
            .read_exact(&mut head[..5])
            .map_err(|_| Error::format("not a colzip archive (too short)"))?;
        if &head[..4] != MAGIC {
            return Err(Error::format("not a colzip archive (bad magic)"));
        }
        let version = head[4];
        if !(OLDEST_READ..=VERSION).contains(&version) {
            let why = if version == 1 {
                " (version 1, from colzip up to commit 56f86d5, has no CRC over its header, \
                 flags and batch order; decompress it with that colzip)"
            } else {
                ""
            };
            return Err(Error::format(format!(
                "archive version {version} is not supported: this build reads versions \
                 {OLDEST_READ} to {VERSION}{why}"
            )));
        }
        input
            .read_exact(&mut head[5..])
            .map_err(|_| Error::format("archive truncated in its header"))?;
        let source = match (head[5], head[6]) {
            (0, raw) => Source::Raw(
                RawType::from_tag(raw)
                    .ok_or_else(|| Error::format(format!("unknown raw type {raw} in archive")))?,
            ),
            (1, 0) => Source::ArrowIpc,
            (2, 0 | PARQUET_OPTIONS) => Source::Parquet,
            (3, delimiter) if delimiter != 0 => Source::Csv(delimiter),
            (4, 0) => Source::JsonLines,
            (3, _) => return Err(Error::format("CSV archive without a delimiter")),
            (1 | 2 | 4, raw) => {
                return Err(Error::format(format!(
                    "raw type {raw} given for a source that is not raw"
                )));
            }
            (other, _) => return Err(Error::format(format!("unknown archive source {other}"))),
        };
        let len = read_varint(&mut input)?;
        let fields = read_exact_vec(&mut input, len, None, "the schema")?;
        let parquet = if (head[5], head[6]) == (2, PARQUET_OPTIONS) {
            let len = read_varint(&mut input)?;
            let block = read_exact_vec(&mut input, len, None, "the Parquet options")?;
            Some(block)
        } else {
            None
        };
        input.check_crc(|| "the archive header".into())?;
        let parquet = match parquet {
            Some(block) => Some(ParquetOptions::from_pairs(&decode_pairs(&block)?)?),
            None => None,
        };
        let schema = Arc::new(Schema::new(column::read_fields(&fields)?));
        source.check_schema(&schema)?;
        Ok(ArchiveReader {
            input,
            schema,
            source,
            parquet,
            batches: 0,
            trailing_newline: None,
            claimed: 0,
            max_output: u64::MAX,
            input_len: None,
            chain_skips_container_crc: version >= 3,
        })
    }

    /// Tells the reader how long its input is (a file's size), so containers are read
    /// into buffers of their stated length at once (a length beyond the input is refused
    /// as truncation) instead of growing with the data.
    pub fn with_input_len(mut self, len: u64) -> Self {
        self.input_len = Some(len);
        self
    }

    /// Refuses, before decoding it, a batch that would bring the archive's decoded bytes
    /// (the plain bytes its column containers claim, summed over the batches) over `max`.
    pub fn with_max_output(mut self, max: u64) -> Self {
        self.max_output = max;
        self
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// How the Parquet file the archive was made from was written, when the archive says
    /// (archives of Parquet files made before colzip recorded it do not).
    pub fn parquet_options(&self) -> Option<&ParquetOptions> {
        self.parquet.as_ref()
    }

    /// Whether a `utf8-lines` file ended with a newline; known after the last batch.
    pub fn trailing_newline(&self) -> Option<bool> {
        self.trailing_newline
    }

    /// The next batch's compressed columns, or `None` at the end record. The batch's CRC
    /// is checked, and its claimed output against the limit, before it is returned.
    pub fn next_compressed(&mut self) -> Result<Option<(usize, Vec<CompressedColumn>)>> {
        if self.trailing_newline.is_some() {
            return Ok(None);
        }
        let mut marker = [0u8];
        self.input
            .read_exact(&mut marker)
            .map_err(|_| Error::format("archive truncated: no end record"))?;
        match marker[0] {
            END => {
                let mut flags = [0u8];
                self.input
                    .read_exact(&mut flags)
                    .map_err(|_| Error::format("archive truncated in the end record"))?;
                let count = read_varint(&mut self.input)?;
                self.input.check_crc(|| "the end record".into())?;
                if count != self.batches {
                    return Err(Error::format(format!(
                        "end record counts {count} batches, {} read",
                        self.batches
                    )));
                }
                let allowed = match self.source {
                    Source::Raw(RawType::Utf8Lines) => FLAG_TRAILING_NEWLINE,
                    _ => 0,
                };
                if flags[0] & !allowed != 0 {
                    return Err(Error::format(format!(
                        "end record flags {:#04x} mean nothing in a {} archive",
                        flags[0],
                        self.source.name()
                    )));
                }
                // Nothing follows the end record: bytes after it (another archive
                // appended, say) would otherwise be ignored without a word.
                let mut after = [0u8];
                if self.input.read(&mut after)? != 0 {
                    return Err(Error::format("bytes after the archive's end record"));
                }
                self.trailing_newline = Some(flags[0] & FLAG_TRAILING_NEWLINE != 0);
                Ok(None)
            }
            BATCH => {
                let index = self.batches;
                let rows = usize::try_from(read_varint(&mut self.input)?)
                    .map_err(|_| Error::format("row count too large"))?;
                let mut containers = Vec::with_capacity(self.schema.fields().len());
                for _ in self.schema.fields() {
                    let len = read_varint(&mut self.input)?;
                    let left = self
                        .input_len
                        .map(|total| total.saturating_sub(self.input.read));
                    let container = if self.chain_skips_container_crc {
                        // Read past the chain, then hash all but the container's own CRC.
                        let bytes = read_exact_vec(&mut self.input.inner, len, left, "a column")?;
                        let hashed = bytes.len().saturating_sub(CONTAINER_CRC);
                        self.input.crc = crc32c::crc32c_append(self.input.crc, &bytes[..hashed]);
                        self.input.read += len;
                        bytes
                    } else {
                        read_exact_vec(&mut self.input, len, left, "a column")?
                    };
                    containers.push(container);
                }
                self.input.check_crc(|| format!("archive batch {index}"))?;
                let mut columns = Vec::with_capacity(containers.len());
                for (field, bytes) in self.schema.fields().iter().zip(containers) {
                    // The parts stay slices of the container's buffer.
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
                let claimed: u64 = columns.iter().map(|c| c.plain_bytes() as u64).sum();
                // A batch is decoded in memory: one larger than the machine's cannot be.
                if let Some(memory) = crate::memory::physical_bytes()
                    && claimed > memory
                {
                    return Err(Error::TooLarge {
                        what: format!("archive batch {index} (in a machine of {memory} bytes)"),
                        claimed,
                        limit: memory,
                    });
                }
                self.claimed = self.claimed.saturating_add(claimed);
                if self.claimed > self.max_output {
                    return Err(Error::TooLarge {
                        what: format!("archive batch {index}"),
                        claimed: self.claimed,
                        limit: self.max_output,
                    });
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

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{ArrayRef, Int32Array};

    /// An archive of `batches` batches of int32 runs starting at `from`, written as
    /// `version`.
    fn archive(version: u8, from: i32, batches: usize) -> Vec<u8> {
        let schema = RawType::Int32.schema();
        let source = Source::Raw(RawType::Int32);
        let mut writer =
            ArchiveWriter::with_options(Vec::new(), schema.clone(), source, None, version).unwrap();
        for b in 0..batches {
            let values: ArrayRef = Arc::new(Int32Array::from_iter_values(
                (0..2000).map(|i| from + i / 3 + b as i32 * 1000),
            ));
            let batch = RecordBatch::try_new(schema.clone(), vec![values]).unwrap();
            writer.write_batch(&batch, &CodecChoice::Auto).unwrap();
        }
        writer.finish(false).unwrap()
    }

    fn read_all(bytes: &[u8]) -> Result<usize> {
        let mut reader = ArchiveReader::new(bytes)?;
        let mut rows = 0;
        while let Some(batch) = reader.next_batch()? {
            rows += batch.num_rows();
        }
        Ok(rows)
    }

    #[test]
    fn container_crc_stays_out_of_the_chain_whatever_the_writes() {
        let bytes: Vec<u8> = (0..23u8).collect();
        let expected = crc32c::crc32c(&bytes[..bytes.len() - CONTAINER_CRC]);
        for cuts in [
            vec![23],
            vec![1, 22],
            vec![3, 1, 1, 18],
            vec![19, 4],
            vec![20, 2, 1],
        ] {
            let mut out = Crc {
                inner: Vec::new(),
                crc: 0,
            };
            let mut container = ChainedContainer::new(&mut out);
            let mut at = 0;
            for cut in cuts {
                container.write_all(&bytes[at..at + cut]).unwrap();
                at += cut;
            }
            assert_eq!(out.crc, expected);
            assert_eq!(out.inner, bytes);
        }
    }

    #[test]
    fn version_2_archives_still_read() {
        // (tests/bad_input.rs checks that version 3 refuses a foreign end record.)
        assert_eq!(read_all(&archive(2, 0, 2)).unwrap(), 4000);
        assert_eq!(read_all(&archive(3, 0, 2)).unwrap(), 4000);
        let mut damaged = archive(2, 0, 2);
        let last = damaged.len() - 1;
        damaged[last] ^= 1;
        assert!(read_all(&damaged).is_err());
    }
}
