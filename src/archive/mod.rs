//! Files of compressed columns (`.czip` archives) and the conversions the CLI offers:
//! raw typed files, Arrow IPC and Parquet in; the same kinds out.
//!
//! ```no_run
//! use std::path::Path;
//! use colzip::archive::{self, InputKind, RawType};
//! use colzip::column::CodecChoice;
//! use colzip::gpu::Backend;
//!
//! let input = Path::new("prices.bin");
//! let kind = InputKind::detect(input, RawType::Int64)?;
//! let (codec, backend) = (CodecChoice::Auto, Backend::Auto);
//! let summary = archive::compress_file(input, Path::new("prices.czip"), kind, &codec, backend, &mut |_| {})?;
//! println!("ratio {:.2}", summary.ratio());
//! archive::decompress_file(Path::new("prices.czip"), Path::new("prices.out"), None, backend, &mut |_| {})?;
//! # Ok::<(), colzip::Error>(())
//! ```

mod format;
mod input;
mod output;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::codec::Placement;
use crate::column::CodecChoice;
use crate::gpu::Backend;
use crate::{Error, Result};
pub use format::{ArchiveReader, ArchiveWriter, Source};
pub use input::{InputKind, RawType};
pub use output::OutputKind;

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
}

impl Summary {
    /// Plain bytes over archive bytes.
    pub fn ratio(&self) -> f64 {
        self.plain_bytes as f64 / self.archive_bytes.max(1) as f64
    }
}

/// Progress after each batch: plain bytes handled so far.
pub type Progress<'a> = &'a mut dyn FnMut(u64);

/// Writes to `path.partial` and renames on success, so a failure never leaves a
/// half-written file under the name asked for.
fn write_atomically<T>(path: &Path, write: impl FnOnce(File) -> Result<T>) -> Result<T> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let result = File::create(&partial).map_err(Error::from).and_then(write);
    match result {
        Ok(value) => {
            std::fs::rename(&partial, path)?;
            Ok(value)
        }
        Err(error) => {
            let _ = std::fs::remove_file(&partial);
            Err(error)
        }
    }
}

/// Compresses a file into an archive, batch by batch, on `backend` (resolved once, before
/// anything is read or written: `Backend::Gpu` without a usable GPU is an error).
pub fn compress_file(
    input: &Path,
    output: &Path,
    kind: InputKind,
    codec: &CodecChoice,
    backend: Backend,
    progress: Progress<'_>,
) -> Result<Summary> {
    let placement = Placement::new(backend)?;
    let source = input::open(input, kind, BATCH_BYTES, BATCH_ROWS)?;
    let archive_source = match kind {
        InputKind::Raw(raw) => Source::Raw(raw),
        InputKind::ArrowIpc => Source::ArrowIpc,
        #[cfg(feature = "parquet")]
        InputKind::Parquet => Source::Parquet,
    };
    let mut summary = Summary::default();
    write_atomically(output, |file| {
        let mut writer =
            ArchiveWriter::new(BufWriter::new(file), source.schema.clone(), archive_source)?;
        for batch in source.batches {
            let batch = batch?;
            let columns = writer.write_batch_on(&batch, codec, placement)?;
            summary.batches += 1;
            summary.rows += batch.num_rows() as u64;
            summary.plain_bytes += columns.iter().map(|c| c.plain_bytes() as u64).sum::<u64>();
            progress(summary.plain_bytes);
        }
        let trailing = source
            .trailing_newline
            .load(std::sync::atomic::Ordering::Relaxed);
        writer
            .finish(trailing)?
            .into_inner()
            .map_err(|e| Error::Io(e.into_error()))?;
        Ok(())
    })?;
    summary.archive_bytes = std::fs::metadata(output)?.len();
    Ok(summary)
}

/// Decompresses an archive into a file of `to` (by default what it was made from), on
/// `backend` (resolved once, first).
pub fn decompress_file(
    input: &Path,
    output: &Path,
    to: Option<OutputKind>,
    backend: Backend,
    progress: Progress<'_>,
) -> Result<Summary> {
    let placement = Placement::new(backend)?;
    let mut reader = ArchiveReader::new(BufReader::new(File::open(input)?))?;
    let kind = to.unwrap_or_else(|| OutputKind::for_source(reader.source()));
    let mut summary = Summary {
        archive_bytes: std::fs::metadata(input)?.len(),
        ..Default::default()
    };
    write_atomically(output, |file| {
        let mut sink = output::sink(kind, BufWriter::new(file), reader.schema())?;
        while let Some(batch) = reader.next_batch_on(placement)? {
            sink.write(&batch)?;
            summary.batches += 1;
            summary.rows += batch.num_rows() as u64;
            summary.plain_bytes += batch.get_array_memory_size() as u64;
            progress(summary.plain_bytes);
        }
        sink.finish(reader.trailing_newline().unwrap_or(false))
    })?;
    Ok(summary)
}

/// One column of an archive, summed over its batches.
#[derive(Clone, Debug, Serialize)]
pub struct ColumnInfo {
    pub name: String,
    pub arrow_type: String,
    pub rows: u64,
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
}

/// Reads an archive's structure (every container is checked, nothing is decompressed).
pub fn info(path: &Path) -> Result<ArchiveInfo> {
    let mut reader = ArchiveReader::new(BufReader::new(File::open(path)?))?;
    let schema = reader.schema();
    let mut columns: Vec<ColumnInfo> = schema
        .fields()
        .iter()
        .map(|f| ColumnInfo {
            name: f.name().clone(),
            arrow_type: f.data_type().to_string(),
            rows: 0,
            plain_bytes: 0,
            compressed_bytes: 0,
            ratio: 0.0,
            codecs: BTreeMap::new(),
        })
        .collect();
    let (mut batches, mut rows) = (0, 0);
    while let Some((batch_rows, compressed)) = reader.next_compressed()? {
        batches += 1;
        rows += batch_rows as u64;
        for (info, column) in columns.iter_mut().zip(&compressed) {
            info.rows += column.len() as u64;
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
    Ok(ArchiveInfo {
        source: reader.source().name(),
        batches,
        rows,
        archive_bytes: std::fs::metadata(path)?.len(),
        columns,
    })
}
