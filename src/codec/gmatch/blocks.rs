//! The blocks format: gmatch's form inside colzip's containers, a sequence of independent
//! raw Snappy streams with a size table, so that one part decodes as a batch of blocks
//! (on the GPU, or on all cores) where a single raw stream is one chain of elements.
//!
//! ```text
//! varint(N)                  uncompressed length (LEB128, up to 10 bytes)
//! size[0..K]: u32 LE         K = ceil(N / 65536): size[i] = bytes of block i's stream
//! block streams, in order    block i: the Snappy raw stream (varint(len) + elements) of
//!                            input bytes [i·65536, min(N, (i+1)·65536)), exactly
//!                            `gmatch::compress_raw` of those bytes
//! ```
//! Every block stream is readable by any Snappy decoder. The table costs 4 bytes per
//! 64 KiB (0.006%). Decoding checks the table against the stream before anything is
//! decoded: each size at least 1, the sizes adding up to the bytes after the table, and
//! each block's preamble equal to its length.

use rayon::prelude::*;

use super::super::error::{CodecError, Result};
use super::super::varint;
use super::decode::{decode_elements, raw_elements};
use super::encode::{compress_block_here, max_compressed_len};
use super::{BLOCK_SIZE, NAME};

/// Bytes of a size-table entry.
pub const BLOCK_TABLE_ENTRY: usize = 4;

/// Where block `block_start / 65536`'s table entry is in the output of an `len`-byte input.
pub(crate) fn table_entry_at(len: usize, block_start: usize) -> usize {
    varint::encoded_len(len as u64) + BLOCK_TABLE_ENTRY * (block_start / BLOCK_SIZE)
}

/// The largest stream an `len`-byte input can take.
pub fn max_blocks_len(len: usize) -> usize {
    // Per block: its table entry, its preamble (3 bytes) and the elements' worst case.
    let blocks = len.div_ceil(BLOCK_SIZE);
    varint::encoded_len(len as u64)
        .saturating_add(blocks.saturating_mul(BLOCK_TABLE_ENTRY + 3 + 32))
        .saturating_add(len)
        .saturating_add(len / 6)
}

/// Compresses `input` into the blocks format; blocks in parallel.
pub fn compress_blocks(input: &[u8]) -> Vec<u8> {
    let streams: Vec<Vec<u8>> = input
        .par_chunks(BLOCK_SIZE)
        .map(|block| {
            let mut stream = Vec::with_capacity(3 + max_compressed_len(block.len()));
            varint::write_u64(&mut stream, block.len() as u64);
            compress_block_here(block, &mut stream);
            stream
        })
        .collect();
    let body: usize = streams.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(10 + BLOCK_TABLE_ENTRY * streams.len() + body);
    varint::write_u64(&mut out, input.len() as u64);
    for stream in &streams {
        out.extend_from_slice(&(stream.len() as u32).to_le_bytes());
    }
    for stream in &streams {
        out.extend_from_slice(stream);
    }
    out
}

/// The length a blocks stream claims, checked against its table (which must lie within
/// the stream and add up to exactly the bytes after it); nothing is decoded.
pub fn blocks_output_len(stream: &[u8]) -> Result<u64> {
    let (len, header) = varint::read_u64(stream, NAME)?;
    let count = len.div_ceil(BLOCK_SIZE as u64);
    let table_len = count
        .checked_mul(BLOCK_TABLE_ENTRY as u64)
        .filter(|&t| t <= (stream.len() - header) as u64)
        .ok_or_else(|| CodecError::corrupt(NAME, "blocks stream shorter than its size table"))?
        as usize;
    let body = (stream.len() - header - table_len) as u64;
    let sizes: u64 = stream[header..header + table_len]
        .chunks_exact(BLOCK_TABLE_ENTRY)
        .map(|e| u64::from(u32::from_le_bytes(e.try_into().expect("4 bytes"))))
        .sum();
    if sizes != body {
        return Err(CodecError::corrupt(
            NAME,
            format!("the size table says {sizes} bytes of blocks, the stream holds {body}"),
        ));
    }
    Ok(len)
}

/// A checked blocks stream: each block's stream (preamble included) and its length.
pub(crate) struct BlocksLayout<'a> {
    pub len: usize,
    pub blocks: Vec<&'a [u8]>,
}

/// Reads and checks a blocks stream's header and table; its length must be `expected`.
pub(crate) fn blocks_layout(stream: &[u8], expected: usize) -> Result<BlocksLayout<'_>> {
    let (len, header) = varint::read_u64(stream, NAME)?;
    if len != expected as u64 {
        return Err(CodecError::corrupt(
            NAME,
            format!("blocks stream claims {len} bytes, expected {expected}"),
        ));
    }
    let count = expected.div_ceil(BLOCK_SIZE);
    let table_len = count
        .checked_mul(BLOCK_TABLE_ENTRY)
        .filter(|&t| t <= stream.len() - header)
        .ok_or_else(|| CodecError::corrupt(NAME, "blocks stream shorter than its size table"))?;
    let table = &stream[header..header + table_len];
    let mut rest = &stream[header + table_len..];
    let mut blocks = Vec::with_capacity(count);
    for entry in table.chunks_exact(BLOCK_TABLE_ENTRY) {
        let size = u32::from_le_bytes(entry.try_into().expect("4 bytes")) as usize;
        if size == 0 || size > rest.len() {
            return Err(CodecError::corrupt(
                NAME,
                "a block size of 0 or past the end of the stream",
            ));
        }
        let (block, tail) = rest.split_at(size);
        blocks.push(block);
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(CodecError::corrupt(
            NAME,
            "bytes after the last block of a blocks stream",
        ));
    }
    Ok(BlocksLayout {
        len: expected,
        blocks,
    })
}

/// The element bytes of block `index` of a layout, its preamble checked against the
/// block's length.
pub(crate) fn block_elements<'a>(layout: &BlocksLayout<'a>, index: usize) -> Result<&'a [u8]> {
    let want = (layout.len - index * BLOCK_SIZE).min(BLOCK_SIZE);
    let (elements, len) = raw_elements(layout.blocks[index], want)?;
    if len != want {
        return Err(CodecError::corrupt(
            NAME,
            format!("block {index} claims {len} bytes, expected {want}"),
        ));
    }
    Ok(elements)
}

/// Decodes a blocks stream into `out` (exactly its length); blocks in parallel.
pub fn decompress_blocks_into(stream: &[u8], out: &mut [u8]) -> Result<()> {
    let layout = blocks_layout(stream, out.len())?;
    out.par_chunks_mut(BLOCK_SIZE)
        .enumerate()
        .try_for_each(|(i, target)| decode_elements(block_elements(&layout, i)?, target))
}

/// Decodes a blocks stream whose length must be `expected`.
pub fn decompress_blocks(stream: &[u8], expected: usize) -> Result<Vec<u8>> {
    // Checked before the output is allocated: the table bounds the claim by the stream's
    // bytes (64 KiB per 4-byte entry).
    blocks_layout(stream, expected)?;
    let mut out = crate::memory::try_zeroed(expected).ok_or(CodecError::OutOfMemory {
        codec: NAME,
        bytes: expected as u64,
    })?;
    decompress_blocks_into(stream, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::gmatch::compress_raw;

    fn sample(len: usize) -> Vec<u8> {
        (0..len)
            .map(|i| ((i / 7) % 251) as u8 ^ (i % 3) as u8)
            .collect()
    }

    #[test]
    fn every_block_is_the_raw_stream_of_its_bytes() {
        for len in [0, 1, 65535, 65536, 65537, 200_000] {
            let input = sample(len);
            let stream = compress_blocks(&input);
            assert!(stream.len() <= max_blocks_len(len), "len {len}");
            let layout = blocks_layout(&stream, len).unwrap();
            for (i, block) in layout.blocks.iter().enumerate() {
                let bytes = &input[i * BLOCK_SIZE..((i + 1) * BLOCK_SIZE).min(len)];
                assert_eq!(*block, &compress_raw(bytes).unwrap()[..]);
                assert_eq!(
                    snap::raw::Decoder::new().decompress_vec(block).unwrap(),
                    bytes
                );
            }
            assert_eq!(decompress_blocks(&stream, len).unwrap(), input);
        }
    }

    #[test]
    fn damaged_tables_and_lengths_are_errors() {
        let input = sample(150_000);
        let stream = compress_blocks(&input);
        assert!(decompress_blocks(&stream, input.len() - 1).is_err());
        let mut zero = stream.clone();
        zero[3..7].copy_from_slice(&0u32.to_le_bytes());
        assert!(decompress_blocks(&zero, input.len()).is_err());
        let mut long = stream.clone();
        long[3..7].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(decompress_blocks(&long, input.len()).is_err());
        assert!(decompress_blocks(&stream[..stream.len() - 1], input.len()).is_err());
        let mut extra = stream.clone();
        extra.push(0);
        assert!(decompress_blocks(&extra, input.len()).is_err());
        assert!(decompress_blocks(&stream[..5], input.len()).is_err());
        assert_eq!(table_entry_at(input.len(), 65536), 3 + 4);
        assert_eq!(varint::encoded_len(0), 1);
        assert_eq!(varint::encoded_len(127), 1);
        assert_eq!(varint::encoded_len(128), 2);
    }
}
