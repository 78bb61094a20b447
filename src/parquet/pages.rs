//! The page compression service: turns the page payloads of the row groups written
//! together into Snappy raw streams with `gmatch`, or decodes a row group's Snappy
//! payloads, in ONE batched call of the codec interface — on the GPU when the placement
//! says so for the batch's total (a page is often a few KiB to 1 MiB, far too small to pay
//! a launch each), else on the CPU's cores. Both sides give the same bytes (gmatch's CPU
//! compressor defines them), so a file does not depend on where it was written. The
//! outputs are slices of one allocation.

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use parquet::column::page::{Page, PageReader};
use parquet::file::metadata::ColumnChunkMetaData;
use parquet::file::reader::ChunkReader;
use parquet::file::serialized_reader::SerializedPageReader;

use crate::codec::{Codec, CodecId, Direction, Packed, Placement, SnappyFormat, gmatch};
use crate::{Error, Result};

/// What one batched call did, for the writer's and reader's summaries.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct BatchStats {
    pub seconds: f64,
    pub on_gpu: bool,
}

/// Every buffer of `packed` as a slice of one shared allocation.
fn shared(packed: Packed) -> Vec<Bytes> {
    let ranges = packed.ranges().to_vec();
    let bytes = Bytes::from(packed.into_bytes());
    ranges.into_iter().map(|r| bytes.slice(r)).collect()
}

/// Compresses every buffer into a Snappy raw stream (gmatch's bytes), all in one call.
pub(crate) fn compress_all(
    placement: &Placement,
    buffers: &[&[u8]],
) -> Result<(Vec<Bytes>, BatchStats)> {
    let start = Instant::now();
    let total = buffers.iter().map(|b| b.len()).sum();
    let codec = Codec::Gmatch(SnappyFormat::Raw);
    let packed = codec.compress_batch(placement, buffers)?;
    let stats = BatchStats {
        seconds: start.elapsed().as_secs_f64(),
        on_gpu: placement
            .gpu_for(codec.id(), Direction::Compress, total)
            .is_some(),
    };
    Ok((shared(packed), stats))
}

/// Decodes Snappy raw streams (anyone's, not only gmatch's), each of which must decode
/// to at most `limit` bytes (the column chunk's uncompressed size: no page is larger, so
/// a corrupt length claim allocates nothing beyond it). Returns the outputs in order.
pub(crate) fn decompress_all(
    placement: &Placement,
    streams: &[&[u8]],
    limits: &[usize],
) -> Result<(Vec<Bytes>, BatchStats)> {
    let start = Instant::now();
    let mut claimed = Vec::with_capacity(streams.len());
    for (stream, &limit) in streams.iter().zip(limits) {
        let len = gmatch::raw_decompressed_len(stream)?;
        if len > limit {
            return Err(Error::format(format!(
                "a SNAPPY page claims {len} bytes, more than its column chunk's \
                 uncompressed size ({limit}): the file is corrupt"
            )));
        }
        claimed.push(len);
    }
    let total = claimed.iter().sum();
    let packed = CodecId::GmatchRaw.decompress_batch(placement, streams, &claimed)?;
    let stats = BatchStats {
        seconds: start.elapsed().as_secs_f64(),
        on_gpu: placement
            .gpu_for(CodecId::GmatchRaw, Direction::Decompress, total)
            .is_some(),
    };
    Ok((shared(packed), stats))
}

/// The pages of one column chunk, as stored (the writer's UNCOMPRESSED scratch chunks, the
/// reader's SNAPPY ones).
pub(crate) fn read_chunk_pages<R: ChunkReader + 'static>(
    reader: &Arc<R>,
    chunk: &ColumnChunkMetaData,
    rows: usize,
) -> Result<Vec<Page>> {
    let mut pages = Vec::new();
    let mut chunk_reader = SerializedPageReader::new(Arc::clone(reader), chunk, rows, None)?;
    while let Some(page) = chunk_reader.get_next_page()? {
        pages.push(page);
    }
    Ok(pages)
}

/// Bytes at the start of a page that are never compressed: data page v2's levels.
pub(crate) fn levels_len(page: &Page) -> usize {
    match page {
        Page::DataPageV2 {
            def_levels_byte_len,
            rep_levels_byte_len,
            ..
        } => (*def_levels_byte_len as usize).saturating_add(*rep_levels_byte_len as usize),
        _ => 0,
    }
}

/// `page` with its payload replaced: the whole buffer of a v1 or dictionary page, the
/// values after a v2 page's levels (which are kept, and `v2_compressed` says whether the
/// new values are compressed). The caller has checked that the levels fit the buffer.
pub(crate) fn with_payload(page: Page, payload: Bytes, v2_compressed: bool) -> Page {
    match page {
        Page::DataPage {
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            statistics,
            ..
        } => Page::DataPage {
            buf: payload,
            num_values,
            encoding,
            def_level_encoding,
            rep_level_encoding,
            statistics,
        },
        Page::DictionaryPage {
            num_values,
            encoding,
            is_sorted,
            ..
        } => Page::DictionaryPage {
            buf: payload,
            num_values,
            encoding,
            is_sorted,
        },
        Page::DataPageV2 {
            buf,
            num_values,
            encoding,
            num_nulls,
            num_rows,
            def_levels_byte_len,
            rep_levels_byte_len,
            statistics,
            ..
        } => {
            let levels = (def_levels_byte_len as usize)
                .saturating_add(rep_levels_byte_len as usize)
                .min(buf.len());
            let mut joined = Vec::with_capacity(levels + payload.len());
            joined.extend_from_slice(&buf[..levels]);
            joined.extend_from_slice(&payload);
            Page::DataPageV2 {
                buf: Bytes::from(joined),
                num_values,
                encoding,
                num_nulls,
                num_rows,
                def_levels_byte_len,
                rep_levels_byte_len,
                is_compressed: v2_compressed,
                statistics,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_batch_matches_single_calls_and_snap_decodes_it() {
        let a: Vec<u8> = (0..100_000u32)
            .flat_map(|v| (v / 7).to_le_bytes())
            .collect();
        let b = b"short".to_vec();
        let c: Vec<u8> = Vec::new();
        let buffers = [&a[..], &b[..], &c[..]];
        let (streams, stats) = compress_all(&Placement::CPU, &buffers).unwrap();
        assert!(!stats.on_gpu);
        for (stream, buffer) in streams.iter().zip(buffers) {
            assert_eq!(&stream[..], &gmatch::compress_raw(buffer).unwrap()[..]);
            assert_eq!(
                snap::raw::Decoder::new().decompress_vec(stream).unwrap(),
                buffer
            );
        }
        let refs: Vec<&[u8]> = streams.iter().map(|s| &s[..]).collect();
        let limits = vec![a.len(); 3];
        let (back, _) = decompress_all(&Placement::CPU, &refs, &limits).unwrap();
        assert_eq!(
            back,
            vec![Bytes::from(a.clone()), Bytes::from(b), Bytes::from(c)]
        );
        // A claim above the limit is refused before anything is allocated.
        assert!(decompress_all(&Placement::CPU, &refs[..1], &[a.len() - 1]).is_err());
    }
}
