//! The device-resident form: buffers uploaded once and kept on the GPU, compressed or
//! decoded there by the kernels alone, for callers that keep their data in GPU memory
//! and for `colzip bench`'s kernel figures. Every block of every buffer is in one launch.

use std::ops::Range;

use cudarc::driver::{CudaSlice, CudaView, DevicePtr};

use super::BlockCodec;
use super::launch::ReasonCode;
use super::launch::{
    CompressLaunch, DecodeLaunch, decode_failure, enqueue_compress, enqueue_decompress,
};
use crate::codec::error::{CodecError, Result};
use crate::codec::interface::DeviceJob;
use crate::gpu::{ArrayPack, Gpu, Lane, Piece, copy_to_device, copy_to_host, gather};

/// Compression of resident buffers.
pub(crate) struct DeviceCompress<C: BlockCodec> {
    kernels: C::Encoder,
    codec: C,
    blocks: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    spans: [Range<usize>; 2],
    scratch: CudaSlice<u8>,
    sizes: CudaSlice<u8>,
    offsets: CudaSlice<u8>,
    out: CudaSlice<u8>,
}

/// Every buffer's whole values at a multiple of 8 of one device buffer, with its blocks'
/// places and [`BlockCodec::block_len`]s.
fn place_blocks<C: BlockCodec>(codec: &C, inputs: &[&[u8]]) -> (Vec<u8>, Vec<u64>, Vec<u16>) {
    let (w, block_bytes) = (codec.value_width(), codec.block_bytes());
    let mut joined = Vec::new();
    let (mut block_in, mut block_lens) = (Vec::new(), Vec::new());
    for input in inputs {
        joined.resize(joined.len().div_ceil(8) * 8, 0);
        let body = input.len() - input.len() % w;
        for k in 0..body.div_ceil(block_bytes) {
            block_in.push((joined.len() + k * block_bytes) as u64);
            block_lens.push(codec.block_len(body, k));
        }
        joined.extend_from_slice(&input[..body]);
    }
    (joined, block_in, block_lens)
}

/// Uploads `inputs` for compression with `codec` (its parameters validated).
pub(crate) fn device_compress<C: BlockCodec>(
    gpu: &Gpu,
    lane: &mut Lane,
    codec: C,
    inputs: &[&[u8]],
) -> Result<DeviceCompress<C>> {
    let (joined, block_in, block_lens) = place_blocks(&codec, inputs);
    let blocks = block_in.len();
    let mut meta = ArrayPack::new();
    let spans = [meta.push_u64(&block_in), meta.push_u16(&block_lens)].map(|id| meta.span(id));
    let mut input = lane.take_device("resident.in", joined.len() + 8)?;
    copy_to_device(lane.stream(), &joined, &mut input)?;
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    let slot = codec.slot_bytes();
    let job = DeviceCompress {
        kernels: codec.encoder(gpu)?,
        codec,
        blocks,
        input,
        meta,
        spans,
        scratch: lane.take_device("resident.scratch", blocks * slot)?,
        sizes: lane.take_device("resident.sizes", 2 * blocks)?,
        offsets: lane.take_device("resident.offsets", 8 * (blocks + 1))?,
        out: lane.take_device("resident.out", codec.out_bytes(blocks, joined.len()))?,
    };
    lane.synchronize()?;
    Ok(job)
}

impl<C: BlockCodec> DeviceJob for DeviceCompress<C> {
    fn enqueue(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<()> {
        enqueue_compress(
            lane.stream(),
            &self.codec,
            &self.kernels,
            CompressLaunch {
                blocks: self.blocks,
                input: self.input.slice(..),
                block_in: self.meta.slice(self.spans[0].clone()),
                block_lens: self.meta.slice(self.spans[1].clone()),
                scratch: self.scratch.slice_mut(..),
                sizes: self.sizes.slice_mut(..),
                offsets: self.offsets.slice_mut(..),
                out: self.out.slice_mut(..),
            },
        )?;
        Ok(())
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let mut total = [0u8; 8];
        let at = 8 * self.blocks;
        copy_to_host(lane.stream(), &self.offsets.slice(at..at + 8), &mut total)?;
        lane.synchronize()?;
        Ok(2 * self.blocks + u64::from_le_bytes(total) as usize)
    }
}

/// Decoding of resident streams (all of one parameter set).
pub(crate) struct DeviceDecompress<C: BlockCodec> {
    kernels: C::Decoder,
    blocks: usize,
    payload_len: usize,
    input: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    spans: [Range<usize>; 2],
    offsets: CudaSlice<u8>,
    out: CudaSlice<u8>,
    error: CudaSlice<u8>,
    out_len: usize,
    /// Each stream's output in `out`.
    ranges: Vec<Range<usize>>,
}

/// Uploads `streams` (each of `lens[i]` bytes once decoded) for decoding; `read` gives a
/// stream's validated layout from the stream and its length. With `resident`, the same
/// streams already in device memory (`resident[i]` holds `streams[i]`'s bytes), the job's
/// input is gathered there, device to device, and nothing crosses PCIe.
pub(crate) fn device_decompress<C: BlockCodec>(
    gpu: &Gpu,
    lane: &mut Lane,
    streams: &[&[u8]],
    resident: Option<&[CudaView<'_, u8>]>,
    lens: &[usize],
    read: impl Fn(&[u8], usize) -> Result<C::Layout>,
) -> Result<DeviceDecompress<C>> {
    let words = &C::WORDS;
    let mut laps = crate::trace::Laps::start();
    if resident.is_some_and(|r| r.len() != streams.len()) {
        return Err(CodecError::invalid(
            words.codec,
            "resident streams do not match the streams",
        ));
    }
    let (mut tables, mut payloads) = (Vec::new(), Vec::new());
    // Each stream's (table, payload) byte ranges, for the device-to-device gathering.
    let mut pieces = Vec::with_capacity(streams.len());
    let (mut tables_len, mut payload_len) = (0usize, 0usize);
    let (mut block_out, mut block_lens) = (Vec::new(), Vec::new());
    let mut codec = None;
    let mut at = 0usize;
    let mut ranges = Vec::with_capacity(streams.len());
    for (stream, &len) in streams.iter().zip(lens) {
        let layout = read(stream, len)?;
        let set = C::of_layout(&layout);
        if *codec.get_or_insert(set) != set {
            return Err(CodecError::invalid(
                words.codec,
                format!(
                    "the device-resident form decodes streams of {}",
                    words.one_set
                ),
            ));
        }
        let table = C::table(&layout);
        let (blocks, block_bytes) = (table.blocks(), set.block_bytes());
        let (table_at, payload_at) = (table.table_at, table.payload_at);
        let table_bytes = table_at..table_at + 2 * blocks;
        let payload_bytes = payload_at..payload_at + table.offsets[blocks];
        tables_len += table_bytes.len();
        payload_len += payload_bytes.len();
        if resident.is_none() {
            tables.extend_from_slice(&stream[table_bytes.clone()]);
            payloads.extend_from_slice(&stream[payload_bytes.clone()]);
        }
        pieces.push((table_bytes, payload_bytes));
        at = at.div_ceil(8) * 8;
        for k in 0..blocks {
            block_out.push((at + k * block_bytes) as u64);
            block_lens.push(set.block_len(table.body, k));
        }
        ranges.push(at..at + table.body);
        at += table.body;
    }
    let Some(codec) = codec else {
        return Err(CodecError::invalid(words.codec, "no stream to decode"));
    };
    let blocks = block_out.len();
    laps.lap("layouts");
    let mut meta = ArrayPack::new();
    let spans = [meta.push_u64(&block_out), meta.push_u16(&block_lens)].map(|id| meta.span(id));
    let mut input = lane.take_device("resident.in", (tables_len + payload_len).max(1))?;
    laps.lap("input buffer");
    match resident {
        None => {
            tables.extend_from_slice(&payloads);
            copy_to_device(lane.stream(), &tables, &mut input)?;
        }
        Some(resident) => {
            // Every stream's table and payload in place, in one launch.
            let (mut table_to, mut payload_to) = (0usize, tables_len);
            let base = {
                let (base, _record) = input.device_ptr(lane.stream());
                base
            };
            let mut gathered = Vec::with_capacity(2 * resident.len());
            for (source, (table_bytes, payload_bytes)) in resident.iter().zip(&pieces) {
                let (start, _record) = source.device_ptr(lane.stream());
                for (from, to) in [
                    (table_bytes, &mut table_to),
                    (payload_bytes, &mut payload_to),
                ] {
                    if from.end > source.len() {
                        return Err(CodecError::invalid(
                            words.codec,
                            "a resident stream is shorter than its layout",
                        ));
                    }
                    gathered.push(Piece {
                        src: start + from.start as u64,
                        dst: base + *to as u64,
                        len: from.len() as u64,
                    });
                    *to += from.len();
                }
            }
            gather(gpu, lane, &gathered)?;
        }
    }
    laps.lap("input");
    let meta = meta.upload(gpu, lane, "resident.meta", "resident.meta")?;
    laps.lap("meta");
    let job = DeviceDecompress {
        kernels: codec.decoder(gpu)?,
        blocks,
        payload_len,
        input,
        meta,
        spans,
        offsets: lane.take_device("resident.offsets", 8 * (blocks + 1))?,
        out: lane.take_device("resident.out", at.max(1))?,
        error: lane.take_device("resident.error", 8)?,
        out_len: at,
        ranges,
    };
    laps.lap("buffers");
    lane.synchronize()?;
    laps.lap("synchronized");
    laps.finish(|| {
        format!(
            "device decode job: {} streams, {blocks} blocks",
            streams.len()
        )
    });
    Ok(job)
}

impl<C: BlockCodec> DeviceJob for DeviceDecompress<C> {
    fn enqueue(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<()> {
        enqueue_decompress::<C>(
            lane.stream(),
            &self.kernels,
            DecodeLaunch {
                blocks: self.blocks,
                table_and_payload: self.input.slice(..),
                payload_len: self.payload_len,
                offsets: self.offsets.slice_mut(..),
                block_out: self.meta.slice(self.spans[0].clone()),
                block_lens: self.meta.slice(self.spans[1].clone()),
                out: self.out.slice_mut(..),
                error: self.error.slice_mut(..8),
            },
        )?;
        Ok(())
    }

    fn output_bytes(&mut self, _gpu: &Gpu, lane: &mut Lane) -> Result<usize> {
        let mut status = [0u8; 8];
        copy_to_host(lane.stream(), &self.error.slice(..8), &mut status)?;
        lane.synchronize()?;
        if let Some((code, block)) = decode_failure(&status) {
            return Err(CodecError::corrupt(
                C::WORDS.codec,
                format!(
                    "{} {block}: {} (GPU)",
                    C::WORDS.block,
                    C::Reason::reason_of(code)
                ),
            ));
        }
        Ok(self.out_len)
    }

    fn stream_outputs(&self) -> Option<(&CudaSlice<u8>, &[Range<usize>])> {
        Some((&self.out, &self.ranges))
    }

    fn give_back(self: Box<Self>, lane: &mut Lane) {
        lane.put_device("resident.in", self.input);
        lane.put_device("resident.meta", self.meta);
        lane.put_device("resident.offsets", self.offsets);
        lane.put_device("resident.out", self.out);
        lane.put_device("resident.error", self.error);
    }
}
