//! A Parquet file's footer read without trusting it. The parquet crate panics on some
//! corrupt footers (a column chunk of negative start or length, an embedded Arrow schema
//! with types Arrow has not got) where it should return an error; here every call into
//! it that decodes the footer runs under `catch_unwind`, and what later readers (ours and
//! DataFusion's) compute from it is computed once here, so that a corrupt footer is an
//! error before any reader sees it.

use parquet::file::metadata::{FooterTail, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::ChunkReader;

use crate::{Error, Result};

/// Runs `f`, turning a panic inside the parquet crate into an error about `what`.
pub(crate) fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let reason = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::format(format!("corrupt Parquet {what}: {reason}")))
    })
}

/// Reads and checks the footer of the file `reader` holds.
pub fn read_metadata<R: ChunkReader>(reader: &R) -> Result<ParquetMetaData> {
    guarded("footer", || {
        let metadata = ParquetMetaDataReader::new().parse_and_finish(reader)?;
        check(&metadata, reader.len())?;
        Ok(metadata)
    })
}

/// The metadata length the last 8 bytes of a file give.
pub fn metadata_len(tail: &[u8; 8]) -> Result<usize> {
    Ok(FooterTail::try_new(tail)?.metadata_length())
}

/// Decodes and checks the footer metadata `bytes` (the `metadata_len` bytes before the
/// last 8) of a file of `file_len` bytes.
pub fn decode_metadata(bytes: &[u8], file_len: u64) -> Result<ParquetMetaData> {
    guarded("footer", || {
        let metadata = ParquetMetaDataReader::decode_metadata(bytes)?;
        check(&metadata, file_len)?;
        Ok(metadata)
    })
}

/// What readers compute from the metadata and the parquet crate may panic on: every
/// column chunk's byte range (within the file), every row count, and the Arrow schema
/// (the embedded one included). Call under [`guarded`].
fn check(metadata: &ParquetMetaData, file_len: u64) -> Result<()> {
    for (g, group) in metadata.row_groups().iter().enumerate() {
        if group.num_rows() < 0 {
            return Err(Error::format(format!(
                "Parquet row group {g} has a negative row count"
            )));
        }
        for (c, chunk) in group.columns().iter().enumerate() {
            let (start, len) = chunk.byte_range();
            if start.checked_add(len).is_none_or(|end| end > file_len) {
                return Err(Error::format(format!(
                    "Parquet row group {g}, column {c}: bytes {start}+{len} lie outside the \
                     file of {file_len} bytes"
                )));
            }
        }
    }
    let file = metadata.file_metadata();
    parquet::arrow::parquet_to_arrow_schema(file.schema_descr(), file.key_value_metadata())?;
    Ok(())
}
