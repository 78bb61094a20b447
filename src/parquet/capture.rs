//! Taking an encoded column chunk's bytes straight from its encoder. An
//! `ArrowColumnWriter` keeps its serialized pages in a `PageStore` and only gives them up
//! by splicing them into a `SerializedRowGroupWriter`; with [`PageCapture`] as the
//! factory of those stores, the writer keeps a handle on every page blob too, so each
//! chunk is laid out in file order on its own thread (no shared scratch file, no second
//! pass through a row group writer).
//!
//! What the page writer stores (parquet 59's `ArrowPageWriter`): two blobs per page,
//! the serialized header then the data, in the order the pages were written. A
//! dictionary page is written after the data pages it serves but belongs first in the
//! chunk; its position in write order is the close result's `dictionary_page_offset`.
//! [`CapturedChunk::into_file_order`] checks both facts against the sizes it sees.

use std::sync::{Arc, Mutex, MutexGuard};

use bytes::Bytes;
use parquet::column::page_store::{PageKey, PageStore, PageStoreArgs, PageStoreFactory};
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;

use crate::{Error, Result};

/// The page blobs one column writer stored, in write order; shared between the writer's
/// store and us.
#[derive(Clone, Debug, Default)]
pub(crate) struct CapturedChunk(Arc<Mutex<Vec<Bytes>>>);

impl CapturedChunk {
    fn blobs(&self) -> MutexGuard<'_, Vec<Bytes>> {
        // A panic while pushing a blob leaves the vector whole: poisoning says nothing.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The chunk's bytes in file order (dictionary page first) and `close` with its page
    /// offsets moved to match (relative to the chunk's start, as the encoder recorded
    /// them). Call it once the column writer is closed.
    pub(crate) fn into_file_order(
        self,
        close: ColumnCloseResult,
    ) -> Result<(Bytes, ColumnCloseResult)> {
        let blobs = std::mem::take(&mut *self.blobs());
        let total: usize = blobs.iter().map(Bytes::len).sum();
        if total as i64 != close.metadata.compressed_size() {
            return Err(Error::format(format!(
                "the encoder stored {total} bytes for a chunk of {} bytes",
                close.metadata.compressed_size()
            )));
        }
        let mut bytes = Vec::with_capacity(total);
        let Some(dictionary_at) = close.metadata.dictionary_page_offset() else {
            for blob in &blobs {
                bytes.extend_from_slice(blob);
            }
            return Ok((Bytes::from(bytes), close));
        };
        // The dictionary page: the (header, data) pair that starts at its offset.
        let mut offset = 0i64;
        let mut dictionary = None;
        for (k, pair) in blobs.chunks(2).enumerate() {
            if offset == dictionary_at && pair.len() == 2 {
                dictionary = Some(2 * k);
                break;
            }
            offset += pair.iter().map(|blob| blob.len() as i64).sum::<i64>();
        }
        let Some(first) = dictionary else {
            return Err(Error::format(format!(
                "no stored page starts at the dictionary page's offset {dictionary_at}"
            )));
        };
        let (pages, dictionary) = (
            blobs[..first].iter().chain(&blobs[first + 2..]),
            &blobs[first..first + 2],
        );
        for blob in dictionary.iter().chain(pages) {
            bytes.extend_from_slice(blob);
        }
        let dictionary_len = dictionary[0].len() + dictionary[1].len();
        let close = close.update_dictionary_location(dictionary_len)?;
        Ok((Bytes::from(bytes), close))
    }
}

/// The store handed to one column writer: it keeps the blobs in the shared
/// [`CapturedChunk`] (and gives them back to a splice, should anything splice it).
struct CapturingStore(CapturedChunk);

impl PageStore for CapturingStore {
    fn put(&mut self, value: Bytes) -> parquet::errors::Result<PageKey> {
        let mut blobs = self.0.blobs();
        blobs.push(value);
        Ok(PageKey::new(blobs.len() as u64 - 1))
    }

    fn take(&mut self, key: PageKey) -> parquet::errors::Result<Bytes> {
        usize::try_from(key.get())
            .ok()
            .and_then(|k| self.0.blobs().get(k).cloned())
            .ok_or_else(|| ParquetError::General(format!("invalid page key {}", key.get())))
    }

    fn memory_size(&self) -> usize {
        self.0.blobs().iter().map(Bytes::len).sum()
    }
}

/// The page store factory of the writer's encoders: each store it makes is also listed
/// for [`Self::take_created`].
#[derive(Debug, Default)]
pub(crate) struct PageCapture {
    created: Mutex<Vec<(usize, CapturedChunk)>>,
}

impl PageStoreFactory for PageCapture {
    fn create(&self, args: &PageStoreArgs<'_>) -> parquet::errors::Result<Box<dyn PageStore>> {
        let chunk = CapturedChunk::default();
        self.created
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .push((args.column_index(), chunk.clone()));
        Ok(Box::new(CapturingStore(chunk)))
    }
}

impl PageCapture {
    /// The chunks of the stores made since the last call, which must be one per leaf
    /// column in order (the stores of one `create_column_writers` call).
    pub(crate) fn take_created(&self, leaves: usize) -> Result<Vec<CapturedChunk>> {
        let created = std::mem::take(
            &mut *self
                .created
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner()),
        );
        let in_order = created.len() == leaves
            && created
                .iter()
                .enumerate()
                .all(|(k, (column, _))| *column == k);
        if !in_order {
            return Err(Error::format(
                "the encoders' page stores do not match the leaf columns",
            ));
        }
        Ok(created.into_iter().map(|(_, chunk)| chunk).collect())
    }
}
