//! Compression: the same bytes as [`crate::codec::gmatch::compress_raw`] and
//! [`crate::codec::gmatch::compress_framed`], for one buffer or a batch of buffers in
//! one launch per 64 MiB. Every 64 KiB block of every buffer is a CUDA block of the block
//! kernel (`kernels/gmatch_compress.cu`); the host reads back only the blocks' element
//! sizes, lays the output out (raw: the elements one after another; framed: a chunk
//! header, the masked CRC-32C computed on the GPU and the elements, or the bytes stored
//! when that is not an eighth smaller), and the assembly kernel writes the finished bytes,
//! which are all that cross PCIe back.

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use super::super::frame::{
    CHUNK_COMPRESSED, CHUNK_UNCOMPRESSED, STREAM_IDENTIFIER, push_chunk_header, stores,
};
use super::super::{BLOCK_SIZE, NAME};
use crate::codec::error::CodecError;
use crate::codec::varint;
use crate::gpu::gmatch::{
    AssembleBatch, AssembleRecord, BlockBatch, GmatchKernels, INPUT_PADDING, RECORD_BYTES,
    SCRATCH_BYTES, SLOT_BYTES, enqueue_assemble, enqueue_blocks, enqueue_crc,
};
use crate::gpu::{
    Gpu, LaneGuard, copy_to_device, copy_to_host, gpu_error, parallel_concat, parallel_copy,
    time_on_device,
};
use crate::{Error, Result};

/// The Snappy format of an output.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// One raw stream per buffer (`varint(len)` and elements), as Parquet pages hold.
    Raw,
    /// The framing format (stream identifier, then a checksummed chunk per 64 KiB).
    Framed,
}

/// Blocks per launch (64 MiB of input): bounds the device memory of a call to about
/// 0.5 GB (index array, matches and element slot of every block).
const GROUP_BLOCKS: usize = 1024;

/// Compresses `input` into a Snappy raw stream (the bytes of `gmatch::compress_raw`).
pub fn compress_raw(gpu: &Gpu, input: &[u8]) -> Result<Vec<u8>> {
    Ok(compress_batch(gpu, &[input], Format::Raw)?.swap_remove(0))
}

/// Compresses each buffer into its own raw stream, all in the same launches.
pub fn compress_raw_batch(gpu: &Gpu, buffers: &[&[u8]]) -> Result<Vec<Vec<u8>>> {
    compress_batch(gpu, buffers, Format::Raw)
}

/// Compresses `input` into the Snappy framing format (the bytes of
/// `gmatch::compress_framed`), CRCs computed on the GPU.
pub fn compress_framed(gpu: &Gpu, input: &[u8]) -> Result<Vec<u8>> {
    Ok(compress_batch(gpu, &[input], Format::Framed)?.swap_remove(0))
}

/// Compresses each buffer in `format`; the outputs are in the buffers' order.
pub fn compress_batch(gpu: &Gpu, buffers: &[&[u8]], format: Format) -> Result<Vec<Vec<u8>>> {
    let mut outputs = headers(buffers, format)?;
    let blocks = blocks_of(buffers);
    if blocks.is_empty() {
        return Ok(outputs);
    }
    let mut encoding = Encoding::new(gpu, format)?;
    for blocks in blocks.chunks(GROUP_BLOCKS) {
        let mut group = encoding.upload(blocks)?;
        encoding.enqueue_blocks(&mut group)?;
        let records = encoding.records(&group, blocks)?;
        encoding.prepare_assembly(&mut group, &records)?;
        encoding.enqueue_assemble(&mut group)?;
        encoding.finish(group, blocks, &records, &mut outputs)?;
    }
    Ok(outputs)
}

/// Kernel time of compressing `buffers` in one launch of each kernel (median of `runs`,
/// seconds: block kernel and CRCs, then assembly; the host's layout step between them is
/// not counted), with the outputs. For benchmarks: all the scratch is on the device at
/// once (about 7 bytes per input byte).
pub fn time_compress(
    gpu: &Gpu,
    buffers: &[&[u8]],
    format: Format,
    runs: usize,
) -> Result<(f64, Vec<Vec<u8>>)> {
    let mut outputs = headers(buffers, format)?;
    let blocks = blocks_of(buffers);
    if blocks.is_empty() {
        return Ok((0.0, outputs));
    }
    let mut encoding = Encoding::new(gpu, format)?;
    let mut group = encoding.upload(&blocks)?;
    let stream = encoding.lane.stream().clone();
    let matching = time_on_device(gpu, &stream, runs, || encoding.enqueue_blocks(&mut group))?;
    let records = encoding.records(&group, &blocks)?;
    encoding.prepare_assembly(&mut group, &records)?;
    let assembly = time_on_device(gpu, &stream, runs, || encoding.enqueue_assemble(&mut group))?;
    encoding.finish(group, &blocks, &records, &mut outputs)?;
    Ok((matching + assembly, outputs))
}

/// Each buffer's output before its blocks: the raw stream's length varint or the
/// framing format's stream identifier. `Err` for a raw buffer longer than the format's
/// `u32::MAX` bytes.
fn headers(buffers: &[&[u8]], format: Format) -> Result<Vec<Vec<u8>>> {
    buffers
        .iter()
        .map(|buffer| match format {
            Format::Raw => {
                let len = u32::try_from(buffer.len()).map_err(|_| CodecError::TooLarge {
                    codec: NAME,
                    claimed: buffer.len() as u64,
                    limit: u64::from(u32::MAX),
                })?;
                let mut out = Vec::new();
                varint::write_u64(&mut out, u64::from(len));
                Ok(out)
            }
            Format::Framed => Ok(STREAM_IDENTIFIER.to_vec()),
        })
        .collect()
}

/// A 64 KiB (or shorter, last) block of a buffer.
#[derive(Clone, Copy, Debug)]
struct Block<'a> {
    buffer: usize,
    bytes: &'a [u8],
}

fn blocks_of<'a>(buffers: &[&'a [u8]]) -> Vec<Block<'a>> {
    buffers
        .iter()
        .enumerate()
        .flat_map(|(buffer, bytes)| {
            bytes
                .chunks(BLOCK_SIZE)
                .map(move |bytes| Block { buffer, bytes })
        })
        .collect()
}

/// The kernels and the lane of one call.
struct Encoding<'g> {
    gpu: &'g Gpu,
    lane: LaneGuard<'g>,
    kernels: GmatchKernels,
    format: Format,
}

/// A group of blocks on the device: their bytes one after another, offsets and lengths,
/// scratch, slots, element sizes, CRCs and, once laid out, the records and the output.
struct Group {
    count: usize,
    block_in: Vec<u64>,
    input: CudaSlice<u8>,
    scratch: CudaSlice<u8>,
    slots: CudaSlice<u8>,
    d_block_in: CudaSlice<u64>,
    d_block_len: CudaSlice<u32>,
    d_block_len64: CudaSlice<u64>,
    sizes: CudaSlice<u32>,
    crcs: CudaSlice<u32>,
    records: Option<CudaSlice<u8>>,
    output: Option<CudaSlice<u8>>,
}

impl<'g> Encoding<'g> {
    fn new(gpu: &'g Gpu, format: Format) -> Result<Self> {
        Ok(Encoding {
            gpu,
            lane: gpu.lane()?,
            kernels: GmatchKernels::new(gpu)?,
            format,
        })
    }

    /// Copies the blocks' bytes to the device, one after another, and their offsets and
    /// lengths; takes the lane's buffers for them.
    fn upload(&mut self, blocks: &[Block<'_>]) -> Result<Group> {
        let stream = self.lane.stream().clone();
        let count = blocks.len();
        let mut block_in = Vec::with_capacity(count);
        let mut total = 0usize;
        for block in blocks {
            block_in.push(total as u64);
            total += block.bytes.len();
        }
        let mut staging = self.lane.take_pinned(self.gpu, "gmatch.in", total)?;
        let pieces: Vec<&[u8]> = blocks.iter().map(|block| block.bytes).collect();
        parallel_concat(&mut staging.as_mut_slice()[..total], &pieces);
        let mut input = self.lane.take_device("gmatch.in", total + INPUT_PADDING)?;
        copy_to_device(&stream, &staging.as_slice()[..total], &mut input, 0)?;
        let lens: Vec<u32> = blocks.iter().map(|b| b.bytes.len() as u32).collect();
        let lens64: Vec<u64> = lens.iter().map(|&l| u64::from(l)).collect();
        let to_device = |e| gpu_error("copy to device", e);
        let zeros = |n: usize| {
            stream
                .alloc_zeros::<u32>(n.max(1))
                .map_err(|e| gpu_error("device allocation", e))
        };
        let group = Group {
            count,
            d_block_in: stream.clone_htod(&block_in).map_err(&to_device)?,
            d_block_len: stream.clone_htod(&lens).map_err(&to_device)?,
            d_block_len64: stream.clone_htod(&lens64).map_err(&to_device)?,
            block_in,
            input,
            scratch: self
                .lane
                .take_device("gmatch.scratch", count * SCRATCH_BYTES)?,
            slots: self.lane.take_device("gmatch.slots", count * SLOT_BYTES)?,
            sizes: zeros(count)?,
            crcs: zeros(count)?,
            records: None,
            output: None,
        };
        // The staging buffer is read by the queued copy until the lane next waits.
        self.lane.synchronize()?;
        self.lane.put_pinned("gmatch.in", staging);
        Ok(group)
    }

    /// Queues the block kernel (and, framed, the blocks' CRCs).
    fn enqueue_blocks(&self, group: &mut Group) -> Result<()> {
        let stream = self.lane.stream();
        enqueue_blocks(
            stream,
            &self.kernels,
            BlockBatch {
                input: &group.input,
                block_in: &group.d_block_in,
                block_len: &group.d_block_len,
                scratch: &mut group.scratch,
                slots: &mut group.slots,
                sizes: &mut group.sizes,
                count: group.count as u64,
            },
        )?;
        if self.format == Format::Framed {
            enqueue_crc(
                stream,
                &self.kernels,
                &group.input,
                &group.d_block_in,
                &group.d_block_len64,
                group.count as u64,
                &mut group.crcs,
            )?;
        }
        Ok(())
    }

    /// Waits for the element sizes and lays the output out: one record per block.
    fn records(&self, group: &Group, blocks: &[Block<'_>]) -> Result<Vec<AssembleRecord>> {
        let sizes = self
            .lane
            .stream()
            .clone_dtoh(&group.sizes)
            .map_err(|e| gpu_error("copy to host", e))?;
        self.lane.synchronize()?;
        let mut dst = 0u64;
        let mut records = Vec::with_capacity(blocks.len());
        for (k, block) in blocks.iter().enumerate() {
            let size = sizes[k];
            // (The kernel's overflow mark, `gpu::gmatch::SLOT_OVERFLOW`, is larger than any slot.)
            if size as usize > SLOT_BYTES {
                return Err(Error::Gpu(format!(
                    "gmatch block {k}: the kernel reported elements larger than their slot"
                )));
            }
            let len = block.bytes.len();
            let record = match self.format {
                Format::Raw => AssembleRecord {
                    dst,
                    src: 0,
                    body_len: size,
                    stored: false,
                    crc: false,
                    prefix: Vec::new(),
                },
                Format::Framed => {
                    let mut preamble = Vec::new();
                    varint::write_u64(&mut preamble, len as u64);
                    let raw_len = preamble.len() + size as usize;
                    let stored = stores(len, raw_len);
                    let mut prefix = Vec::with_capacity(16);
                    let (kind, body) = if stored {
                        (CHUNK_UNCOMPRESSED, len)
                    } else {
                        (CHUNK_COMPRESSED, raw_len)
                    };
                    push_chunk_header(&mut prefix, kind, 4 + body);
                    prefix.extend_from_slice(&[0; 4]); // the CRC, written by the kernel
                    if !stored {
                        prefix.extend_from_slice(&preamble);
                    }
                    AssembleRecord {
                        dst,
                        src: group.block_in[k],
                        body_len: if stored { len as u32 } else { size },
                        stored,
                        crc: true,
                        prefix,
                    }
                }
            };
            dst += record.len() as u64;
            records.push(record);
        }
        Ok(records)
    }

    /// Uploads the records once and takes the output buffer for them.
    fn prepare_assembly(&mut self, group: &mut Group, records: &[AssembleRecord]) -> Result<()> {
        let mut encoded = Vec::with_capacity(records.len() * RECORD_BYTES);
        for record in records {
            record.encode(&mut encoded);
        }
        let total: usize = records.iter().map(AssembleRecord::len).sum();
        group.records = Some(
            self.lane
                .stream()
                .clone_htod(&encoded)
                .map_err(|e| gpu_error("copy to device", e))?,
        );
        group.output = Some(self.lane.take_device("gmatch.out", total)?);
        Ok(())
    }

    /// Queues the assembly of the finished bytes.
    fn enqueue_assemble(&self, group: &mut Group) -> Result<()> {
        let (Some(records), Some(output)) = (&group.records, &mut group.output) else {
            return Err(Error::Gpu(
                "gmatch assembly queued before its layout".into(),
            ));
        };
        enqueue_assemble(
            self.lane.stream(),
            &self.kernels,
            AssembleBatch {
                records,
                count: group.count as u64,
                slots: &group.slots,
                input: &group.input,
                crcs: &group.crcs,
                output,
            },
        )
    }

    /// Downloads the finished bytes and appends each block's to its buffer's output;
    /// gives the group's buffers back to the lane.
    fn finish(
        &mut self,
        group: Group,
        blocks: &[Block<'_>],
        records: &[AssembleRecord],
        outputs: &mut [Vec<u8>],
    ) -> Result<()> {
        let total: usize = records.iter().map(AssembleRecord::len).sum();
        let mut staging = self.lane.take_pinned(self.gpu, "gmatch.out", total)?;
        let Group {
            input,
            scratch,
            slots,
            output,
            ..
        } = group;
        if let Some(output) = &output {
            copy_to_host(
                self.lane.stream(),
                output,
                0..total,
                &mut staging.as_mut_slice()[..total],
            )?;
        }
        self.lane.synchronize()?;
        // Consecutive blocks of one buffer are one range of the output; a buffer has one
        // range in a group, so the ranges go to their outputs in parallel.
        let finished = &staging.as_slice()[..total];
        let mut targets = Vec::new();
        let mut numbered = outputs.iter_mut().enumerate();
        let mut k = 0;
        while k < blocks.len() {
            let buffer = blocks[k].buffer;
            let start = records[k].dst as usize;
            let mut end = start;
            while k < blocks.len() && blocks[k].buffer == buffer {
                end = records[k].dst as usize + records[k].len();
                k += 1;
            }
            // (Blocks come in their buffers' order, so the search only moves forward.)
            let (_, output) = numbered
                .find(|(n, _)| *n == buffer)
                .ok_or_else(|| Error::Gpu("gmatch blocks out of their buffers' order".into()))?;
            targets.push((output, &finished[start..end]));
        }
        targets
            .into_par_iter()
            .for_each(|(output, bytes)| append(output, bytes));
        self.lane.put_pinned("gmatch.out", staging);
        self.lane.put_device("gmatch.in", input);
        self.lane.put_device("gmatch.scratch", scratch);
        self.lane.put_device("gmatch.slots", slots);
        if let Some(output) = output {
            self.lane.put_device("gmatch.out", output);
        }
        Ok(())
    }
}

/// Appends `bytes` to `out`, copying with all cores when large.
fn append(out: &mut Vec<u8>, bytes: &[u8]) {
    let at = out.len();
    out.resize(at + bytes.len(), 0);
    parallel_copy(&mut out[at..], bytes);
}
