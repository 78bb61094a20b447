//! The bytes a scan reads, fetched through the object store (async, no thread blocked):
//! a file's footer, checked before the parquet crate trusts it, optionally its page
//! index, and the column chunks of one row group, held as a sparse [`ChunkReader`].

use std::ops::Range;
use std::sync::Arc;

use bytes::{Buf, Bytes};
use datafusion::object_store::{ObjectMeta, ObjectStore, ObjectStoreExt};
use parquet::errors::ParquetError;
use parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use parquet::file::reader::{ChunkReader, Length};

use crate::parquet::footer;
use crate::{Error, Result};

/// Bytes fetched from the end of a file first: the footer usually fits.
const TAIL_GUESS: u64 = 64 << 10;

/// Parts of a file of `len` bytes, as a [`ChunkReader`] that reads only within them.
pub(super) struct FileParts {
    len: u64,
    /// (offset in the file, bytes), sorted by offset.
    parts: Vec<(u64, Bytes)>,
}

impl FileParts {
    pub(super) fn new(len: u64, mut parts: Vec<(u64, Bytes)>) -> Self {
        parts.sort_by_key(|(start, _)| *start);
        FileParts { len, parts }
    }

    /// `length` bytes at `start` (to the end of the part holding `start` when `None`).
    fn slice(&self, start: u64, length: Option<usize>) -> parquet::errors::Result<Bytes> {
        let outside = || {
            ParquetError::General(format!(
                "the reader asked for bytes at {start} that the column chunks do not hold: \
                 the file is corrupt"
            ))
        };
        let after = self.parts.partition_point(|(offset, _)| *offset <= start);
        let (offset, bytes) = after
            .checked_sub(1)
            .and_then(|i| self.parts.get(i))
            .ok_or_else(outside)?;
        let begin = usize::try_from(start - offset).map_err(|_| outside())?;
        let end = match length {
            Some(length) => begin.checked_add(length).ok_or_else(outside)?,
            None => bytes.len(),
        };
        if begin > bytes.len() || end > bytes.len() {
            return Err(outside());
        }
        Ok(bytes.slice(begin..end))
    }
}

impl Length for FileParts {
    fn len(&self) -> u64 {
        self.len
    }
}

impl ChunkReader for FileParts {
    type T = bytes::buf::Reader<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(self.slice(start, None)?.reader())
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        self.slice(start, Some(length))
    }
}

/// Reads and checks the footer of `object` (see [`footer`]: the parquet crate panics on
/// some corrupt footers); with `page_index`, also its column and offset indexes, where
/// the file has them (an index that is not valid is ignored: pruning is optional).
pub(super) async fn load_metadata(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    page_index: bool,
) -> Result<ParquetMetaData> {
    let size = object.size;
    let invalid = |reason: String| {
        Error::format(format!(
            "{} is not a valid Parquet file: {reason}",
            object.location
        ))
    };
    if size < 12 {
        return Err(invalid(format!("{size} bytes")));
    }
    let tail_len = size.min(TAIL_GUESS);
    let tail = store
        .get_range(&object.location, size - tail_len..size)
        .await
        .map_err(datafusion::error::DataFusionError::from)?;
    let last8: &[u8; 8] = tail[tail.len().saturating_sub(8)..]
        .try_into()
        .map_err(|_| invalid("short read".into()))?;
    let len = footer::metadata_len(last8).map_err(|e| invalid(e.to_string()))? as u64;
    if len > size - 12 {
        return Err(invalid(format!(
            "a footer of {len} bytes in a file of {size}"
        )));
    }
    let bytes = if len + 8 <= tail_len {
        let end = tail.len() - 8;
        tail.slice(end - len as usize..end)
    } else {
        store
            .get_range(&object.location, size - 8 - len..size - 8)
            .await
            .map_err(datafusion::error::DataFusionError::from)?
    };
    let metadata = footer::decode_metadata(&bytes, size).map_err(|e| invalid(e.to_string()))?;
    if !page_index {
        return Ok(metadata);
    }
    let Some(range) = page_index_range(&metadata, size - 8 - len) else {
        return Ok(metadata);
    };
    let index = store
        .get_range(&object.location, range.clone())
        .await
        .map_err(datafusion::error::DataFusionError::from)?;
    let parts = FileParts::new(size, vec![(range.start, index)]);
    let with_index = footer::guarded("page index", || {
        let mut reader = ParquetMetaDataReader::new_with_metadata(metadata.clone())
            .with_page_index_policy(PageIndexPolicy::Optional);
        reader.read_page_indexes_sized(&parts, size)?;
        Ok(reader.finish()?)
    });
    // A page index that does not decode only costs the page pruning.
    Ok(with_index.unwrap_or(metadata))
}

/// The bytes the column and offset indexes of every chunk span, when the file has them
/// and they lie before the footer (which starts at `footer_start`).
fn page_index_range(metadata: &ParquetMetaData, footer_start: u64) -> Option<Range<u64>> {
    let mut span: Option<Range<u64>> = None;
    for group in metadata.row_groups() {
        for chunk in group.columns() {
            let indexes = [
                (chunk.column_index_offset(), chunk.column_index_length()),
                (chunk.offset_index_offset(), chunk.offset_index_length()),
            ];
            for (offset, length) in indexes {
                let (Some(offset), Some(length)) = (offset, length) else {
                    continue;
                };
                let start = u64::try_from(offset).ok()?;
                let end = start.checked_add(u64::try_from(length).ok()?)?;
                span = Some(match span {
                    None => start..end,
                    Some(s) => s.start.min(start)..s.end.max(end),
                });
            }
        }
    }
    span.filter(|s| s.start < s.end && s.end <= footer_start)
}

/// Fetches the byte ranges of the given column chunks of row group `index`.
pub(super) async fn fetch_chunks(
    store: &Arc<dyn ObjectStore>,
    object: &ObjectMeta,
    metadata: &ParquetMetaData,
    index: usize,
    columns: &[usize],
) -> Result<FileParts> {
    let group = metadata.row_group(index);
    let ranges: Vec<Range<u64>> = columns
        .iter()
        .map(|&c| {
            // Within the file: the footer check made sure.
            let (start, len) = group.column(c).byte_range();
            start..start + len
        })
        .collect();
    let bytes = store
        .get_ranges(&object.location, &ranges)
        .await
        .map_err(datafusion::error::DataFusionError::from)?;
    Ok(FileParts::new(
        object.size,
        ranges.iter().map(|r| r.start).zip(bytes).collect(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_read_only_within_their_bytes() {
        let parts = FileParts::new(
            100,
            vec![
                (50, Bytes::from_static(b"world")),
                (10, Bytes::from_static(b"hello")),
            ],
        );
        assert_eq!(parts.get_bytes(11, 3).unwrap(), Bytes::from_static(b"ell"));
        assert_eq!(
            parts.get_bytes(50, 5).unwrap(),
            Bytes::from_static(b"world")
        );
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut parts.get_read(52).unwrap(), &mut rest).unwrap();
        assert_eq!(rest, "rld");
        assert!(parts.get_bytes(9, 1).is_err());
        assert!(parts.get_bytes(12, 4).is_err());
        assert!(parts.get_bytes(15, 1).is_err());
        assert!(parts.get_bytes(u64::MAX, usize::MAX).is_err());
    }
}
