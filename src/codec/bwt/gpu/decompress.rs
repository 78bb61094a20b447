//! Decompression on the GPU of a batch of `bwt` streams, through the step pipeline.
//!
//! The host reads what the CPU decoder reads before decoding, with the same code and the
//! same checks: each stream's header and block directory, and each block's auxiliary
//! indices, side information (alphabet, tables, gap array, selectors) and bitstream
//! bounds ([`parse_block`]). Stored blocks are copied and their CRCs checked here. The
//! coded blocks go to the device in steps of whole blocks (about [`Gpu::step_bytes`] of
//! output): their bitstreams and descriptions up, every stage of the decoder and the
//! CRCs in kernels (`launch.rs`), the bytes and the verdicts back.

use cudarc::driver::CudaSlice;
use rayon::prelude::*;

use super::launch::{
    BlockInfo, BwtDecodeError, DecodeKernels, DecodeLaunch, MTF_CHUNK, PIECE, enqueue_decompress,
};
use crate::codec::batch::Sink;
use crate::codec::bwt::huffman::DEVICE_TABLE_BYTES;
use crate::codec::bwt::{
    Entry, Header, KIND_BWT, KIND_RAW, NAME, ParsedBlock, parse_block, parse_header, read_directory,
};
use crate::codec::error::{CodecError, Result};
use crate::gpu::{
    ArrayPack, Gpu, HostMemory, Lane, PinnedBuffer, Stages, copy_to_host, run_pipeline,
    upload_pieces,
};

/// One block of a stream: which stream, its index there, its directory entry, where its
/// payload starts in the stream and its bytes in the stream's output.
struct Block {
    stream: usize,
    index: usize,
    entry: Entry,
    payload_at: usize,
    out_at: usize,
}

impl Block {
    fn kind(&self) -> u8 {
        self.entry.0
    }
    fn payload<'s>(&self, inputs: &[&'s [u8]]) -> &'s [u8] {
        let (_, off, len, _, _) = self.entry;
        &inputs[self.stream][self.payload_at + off..self.payload_at + off + len]
    }
    fn n(&self) -> usize {
        self.entry.3
    }
    fn crc(&self) -> u32 {
        self.entry.4
    }
}

/// Decodes `inputs` (each decoding to exactly `lens[i]` bytes) into `sink`.
pub(crate) fn decompress(
    gpu: &Gpu,
    inputs: &[&[u8]],
    lens: &[usize],
    memory: HostMemory,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let mut headers = Vec::with_capacity(inputs.len());
    let mut blocks = Vec::new();
    for (i, (stream, &len)) in inputs.iter().zip(lens).enumerate() {
        let header = parse_header(stream)?;
        if header.length != len as u64 {
            return Err(CodecError::corrupt(
                NAME,
                format!("stream {i} claims {} bytes, expected {len}", header.length),
            ));
        }
        let (entries, payload_at) = read_directory(stream, &header)?;
        let bs = header.block_size as usize;
        blocks.extend(entries.into_iter().enumerate().map(|(index, entry)| Block {
            stream: i,
            index,
            entry,
            payload_at,
            out_at: index * bs,
        }));
        headers.push(header);
    }
    sink.expect_outputs(lens, NAME)?;
    for block in blocks.iter().filter(|b| b.kind() == KIND_RAW) {
        let payload = block.payload(inputs);
        let out = &mut sink.output(block.stream)[block.out_at..block.out_at + block.n()];
        out.copy_from_slice(payload);
        check_crc(block.crc(), crc32c::crc32c(out))?;
    }
    let coded: Vec<Block> = blocks
        .into_iter()
        .filter(|b| b.kind() == KIND_BWT)
        .collect();
    let steps = plan_steps(&coded, gpu.step_bytes());
    let mut stages = DecodeStages {
        gpu,
        kernels: DecodeKernels::new(gpu)?,
        inputs,
        headers: &headers,
        blocks: &coded,
        memory,
        sink,
    };
    run_pipeline(gpu, steps, &mut stages)
}

fn check_crc(stored: u32, computed: u32) -> Result<()> {
    if stored != computed {
        return Err(CodecError::Checksum {
            codec: NAME,
            stored,
            computed,
        });
    }
    Ok(())
}

/// Runs of consecutive blocks of at most `step` output bytes (at least one block each).
fn plan_steps(blocks: &[Block], step: usize) -> Vec<std::ops::Range<usize>> {
    let mut steps = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (i, block) in blocks.iter().enumerate() {
        if i > start && bytes + block.n() > step {
            steps.push(start..i);
            (start, bytes) = (i, 0);
        }
        bytes += block.n();
    }
    if start < blocks.len() {
        steps.push(start..blocks.len());
    }
    steps
}

struct DecodeStages<'s, 'a, 'b> {
    gpu: &'s Gpu,
    kernels: DecodeKernels,
    inputs: &'s [&'s [u8]],
    headers: &'s [Header],
    blocks: &'s [Block],
    memory: HostMemory,
    sink: &'s mut Sink<'a, 'b>,
}

/// A step's descriptions: the arrays of [`DecodeLaunch`] on the host.
#[derive(Default)]
struct StepLayout {
    infos: Vec<u8>,
    sub_block: Vec<u32>,
    chunk_block: Vec<u32>,
    piece_block: Vec<u32>,
    aux_block: Vec<u32>,
    gaps: Vec<u8>,
    selectors: Vec<u8>,
    tables: Vec<u8>,
    alphabets: Vec<u8>,
    aux: Vec<u32>,
    out_offsets: Vec<u64>,
    out_lens: Vec<u64>,
    out_len: usize,
}

impl StepLayout {
    fn new(parsed: &[ParsedBlock<'_>], blocks: &[Block], headers: &[Header]) -> Result<Self> {
        let mut s = StepLayout::default();
        let mut bits_at = 0usize;
        let narrow = |v: usize, what: &str| {
            u32::try_from(v)
                .map_err(|_| CodecError::invalid(NAME, format!("too many {what} in one GPU step")))
        };
        for (b, (p, block)) in parsed.iter().zip(blocks).enumerate() {
            let n = block.n();
            let geo = headers[block.stream].geo;
            let index = narrow(b, "blocks")?;
            let chunks = n.div_ceil(MTF_CHUNK);
            let pieces = n.div_ceil(PIECE);
            let info = BlockInfo {
                bits_at: bits_at as u64,
                out_at: s.out_len as u64,
                n: narrow(n, "bytes")?,
                total_bits: narrow(p.total_bits as usize, "bits")?,
                sub_first: narrow(s.sub_block.len(), "subsequences")?,
                nsub: narrow(p.side.gaps.len(), "subsequences")?,
                sel_at: narrow(s.selectors.len(), "segments")?,
                table_first: narrow(s.tables.len() / DEVICE_TABLE_BYTES, "tables")?,
                chunk_first: narrow(s.chunk_block.len(), "chunks")?,
                piece_first: narrow(s.piece_block.len(), "pieces")?,
                aux_at: narrow(s.aux.len(), "indices")?,
                naux: narrow(p.aux.len(), "indices")?,
                used: p.alphabet.len() as u32,
                seg_log2: geo.seg_log2,
                sub_log2: geo.sub_log2,
                aux_log2: headers[block.stream].aux_log2,
            };
            info.write(&mut s.infos);
            s.sub_block
                .extend(std::iter::repeat_n(index, p.side.gaps.len()));
            s.gaps.extend_from_slice(&p.side.gaps);
            s.selectors.extend_from_slice(&p.side.selectors);
            for table in &p.side.tables {
                table.write_device_image(&mut s.tables);
            }
            let mut alphabet = [0u8; 256];
            alphabet[..p.alphabet.len()].copy_from_slice(&p.alphabet);
            s.alphabets.extend_from_slice(&alphabet);
            s.chunk_block.extend(std::iter::repeat_n(index, chunks));
            s.piece_block.extend(std::iter::repeat_n(index, pieces));
            s.aux_block.extend(std::iter::repeat_n(index, p.aux.len()));
            s.aux.extend_from_slice(&p.aux);
            s.out_offsets.push(s.out_len as u64);
            s.out_lens.push(n as u64);
            s.out_len += n;
            bits_at += p.bits.len();
        }
        Ok(s)
    }
}

struct Submitted {
    step: std::ops::Range<usize>,
    out_len: usize,
    verdicts: PinnedBuffer,
    staged: Option<PinnedBuffer>,
    device: Vec<(&'static str, CudaSlice<u8>)>,
}

/// Names of the step's device buffers (kept by the lane between steps and calls).
const BITS: &str = "bwt.bits";
const META: &str = "bwt.meta";
const COUNTS: &str = "bwt.counts";
const SYMBOLS: &str = "bwt.symbols";
const VALUES: &str = "bwt.values";
const LISTS: &str = "bwt.lists";
const PIECE_COUNTS: &str = "bwt.pieces";
const ENTRIES: &str = "bwt.entries";
const OUT: &str = "bwt.out";
const VERDICTS: &str = "bwt.verdicts";
const STAGED: &str = "bwt.staged";

impl Stages for DecodeStages<'_, '_, '_> {
    type Step = std::ops::Range<usize>;
    type Submitted = Submitted;
    type Collected = Submitted;
    type Error = CodecError;

    fn submit(&mut self, lane: &mut Lane, step: Self::Step) -> Result<Submitted> {
        let blocks = &self.blocks[step.clone()];
        let inputs = self.inputs;
        let headers = self.headers;
        let parsed: Vec<ParsedBlock<'_>> = blocks
            .par_iter()
            .map(|b| parse_block(b.payload(inputs), b.n(), &headers[b.stream]))
            .collect::<Result<_>>()?;
        let layout = StepLayout::new(&parsed, blocks, headers)?;
        let count = blocks.len();
        let out_len = layout.out_len;

        let bit_pieces: Vec<&[u8]> = parsed.iter().map(|p| p.bits).collect();
        let bits_len: usize = bit_pieces.iter().map(|p| p.len()).sum();
        let mut bits = lane.take_device(BITS, bits_len)?;
        upload_pieces(self.gpu, lane, &bit_pieces, self.memory, BITS, &mut bits)?;

        let mut meta = ArrayPack::new();
        let ids = [
            meta.push_u8(&layout.infos),
            meta.push_u32(&layout.sub_block),
            meta.push_u32(&layout.chunk_block),
            meta.push_u32(&layout.piece_block),
            meta.push_u32(&layout.aux_block),
            meta.push_u8(&layout.gaps),
            meta.push_u8(&layout.selectors),
            meta.push_u8(&layout.tables),
            meta.push_u8(&layout.alphabets),
            meta.push_u32(&layout.aux),
            meta.push_u64(&layout.out_offsets),
            meta.push_u64(&layout.out_lens),
            meta.push_zeros(8 * count), // status, then the CRCs
        ];
        let spans = ids.map(|id| meta.span(id));
        let mut meta_device = meta.upload(self.gpu, lane, META, META)?;
        let subs = layout.sub_block.len();
        let chunks = layout.chunk_block.len();
        let pieces = layout.piece_block.len();
        let mut counts = lane.take_device(COUNTS, 4 * (subs + count))?;
        let mut symbols = lane.take_device(SYMBOLS, 2 * out_len)?;
        let mut values = lane.take_device(VALUES, 8 * chunks)?;
        let mut lists = lane.take_device(LISTS, 256 * chunks)?;
        let mut piece_counts = lane.take_device(PIECE_COUNTS, 1024 * pieces)?;
        let mut entries = lane.take_device(ENTRIES, 8 * (out_len + count))?;
        let mut out = lane.take_device(OUT, out_len)?;
        {
            let (meta_in, mut verdicts) = meta_device.split_at_mut(spans[12].start);
            let (status, crcs) = verdicts.split_at_mut(4 * count);
            let view = |k: usize| meta_in.slice(spans[k].clone());
            let (counts_view, sym_counts) = counts.split_at_mut(4 * subs);
            enqueue_decompress(
                lane.stream(),
                &self.kernels,
                DecodeLaunch {
                    blocks: count,
                    subs,
                    chunks,
                    pieces,
                    auxs: layout.aux.len(),
                    bits: bits.slice(..),
                    infos: view(0),
                    sub_block: view(1),
                    chunk_block: view(2),
                    piece_block: view(3),
                    aux_block: view(4),
                    gaps: view(5),
                    selectors: view(6),
                    tables: view(7),
                    alphabets: view(8),
                    aux: view(9),
                    out_offsets: view(10),
                    out_lens: view(11),
                    counts: counts_view,
                    sym_counts,
                    symbols: symbols.slice_mut(..),
                    values: values.slice_mut(..),
                    lists: lists.slice_mut(..),
                    piece_counts: piece_counts.slice_mut(..),
                    entries: entries.slice_mut(..),
                    status,
                    crcs,
                    out: out.slice_mut(..),
                    out_len,
                },
            )?;
        }
        let mut verdicts = lane.take_pinned(self.gpu, VERDICTS, 8 * count)?;
        copy_to_host(
            lane.stream(),
            &meta_device.slice(spans[12].clone()),
            &mut verdicts.as_mut_slice()[..8 * count],
        )?;
        let staged = if self.sink.staged() {
            let mut staging = lane.take_pinned(self.gpu, STAGED, out_len)?;
            copy_to_host(
                lane.stream(),
                &out.slice(..out_len),
                &mut staging.as_mut_slice()[..out_len],
            )?;
            Some(staging)
        } else {
            let mut at = 0;
            for block in blocks {
                let target =
                    &mut self.sink.output(block.stream)[block.out_at..block.out_at + block.n()];
                copy_to_host(lane.stream(), &out.slice(at..at + block.n()), target)?;
                at += block.n();
            }
            None
        };
        Ok(Submitted {
            step,
            out_len,
            verdicts,
            staged,
            device: vec![
                (BITS, bits),
                (META, meta_device),
                (COUNTS, counts),
                (SYMBOLS, symbols),
                (VALUES, values),
                (LISTS, lists),
                (PIECE_COUNTS, piece_counts),
                (ENTRIES, entries),
                (OUT, out),
            ],
        })
    }

    fn collect(&mut self, _lane: &mut Lane, s: Submitted) -> Result<Submitted> {
        Ok(s)
    }

    fn finish(&mut self, lane: &mut Lane, s: Submitted) -> Result<()> {
        lane.synchronize()?;
        let blocks = &self.blocks[s.step.clone()];
        let count = blocks.len();
        let verdicts = &s.verdicts.as_slice()[..8 * count];
        let word = |k: usize| u32::from_le_bytes(verdicts[4 * k..4 * k + 4].try_into().unwrap());
        for (k, block) in blocks.iter().enumerate() {
            let status = word(k);
            if status != 0 {
                let reason = BwtDecodeError::from_code(status)
                    .map_or("unknown decoder status", BwtDecodeError::reason);
                return Err(CodecError::corrupt(
                    NAME,
                    format!(
                        "stream {}, block {}: {reason} (GPU)",
                        block.stream, block.index
                    ),
                ));
            }
            // The kernel's CRCs are masked as the Snappy framing format masks them.
            let computed = word(count + k).wrapping_sub(0xa282_ead8).rotate_left(15);
            check_crc(block.crc(), computed)?;
        }
        if let Some(staging) = &s.staged {
            let bytes = &staging.as_slice()[..s.out_len];
            let mut at = 0;
            let pieces: Vec<(usize, usize, &[u8])> = blocks
                .iter()
                .map(|block| {
                    at += block.n();
                    (block.stream, block.out_at, &bytes[at - block.n()..at])
                })
                .collect();
            self.sink.scatter(&pieces);
        }
        if let Some(staging) = s.staged {
            lane.put_pinned(STAGED, staging);
        }
        lane.put_pinned(VERDICTS, s.verdicts);
        for (name, buffer) in s.device {
            lane.put_device(name, buffer);
        }
        Ok(())
    }
}
