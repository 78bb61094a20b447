//! What decoding a run of `bwt` blocks on the GPU takes, shared by the step pipeline
//! (`decompress.rs`) and the device-resident form (`device.rs`): the blocks of a batch
//! read from their streams' headers and directories ([`plan_blocks`]), a run of them
//! described for the kernels ([`StepLayout`]), uploaded with the scratch of every stage
//! ([`StepBuffers`]), and the kernels' verdicts checked ([`check_verdicts`]).

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, CudaView};

use super::launch::{
    BlockInfo, BwtDecodeError, DecodeKernels, DecodeLaunch, MTF_CHUNK, PIECE, enqueue_decompress,
    unmask_crc,
};
use crate::codec::bwt::huffman::DEVICE_TABLE_BYTES;
use crate::codec::bwt::{Entry, Header, NAME, ParsedBlock, parse_header, read_directory};
use crate::codec::error::{CodecError, Result};
use crate::gpu::{ArrayPack, Gpu, HostMemory, Lane, upload_pieces};

/// One block of a stream: which stream, its index there, its directory entry, where its
/// payload starts in the stream and its bytes in the stream's output.
pub(super) struct Block {
    pub stream: usize,
    pub index: usize,
    pub entry: Entry,
    pub payload_at: usize,
    pub out_at: usize,
}

impl Block {
    pub fn kind(&self) -> u8 {
        self.entry.0
    }
    pub fn payload<'s>(&self, inputs: &[&'s [u8]]) -> &'s [u8] {
        let (_, off, len, _, _) = self.entry;
        &inputs[self.stream][self.payload_at + off..self.payload_at + off + len]
    }
    pub fn n(&self) -> usize {
        self.entry.3
    }
    pub fn crc(&self) -> u32 {
        self.entry.4
    }
}

/// Every stream's header and every block of the batch, read with the CPU decoder's code
/// and checks; each stream must decode to exactly `lens[i]` bytes.
pub(super) fn plan_blocks(inputs: &[&[u8]], lens: &[usize]) -> Result<(Vec<Header>, Vec<Block>)> {
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
    Ok((headers, blocks))
}

pub(super) fn check_crc(stored: u32, computed: u32) -> Result<()> {
    if stored != computed {
        return Err(CodecError::Checksum {
            codec: NAME,
            stored,
            computed,
        });
    }
    Ok(())
}

/// Checks the kernels' verdicts on `blocks`: a u32 status per block, then its masked CRC.
pub(super) fn check_verdicts(blocks: &[Block], verdicts: &[u8]) -> Result<()> {
    let count = blocks.len();
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
        let computed = unmask_crc(word(count + k));
        check_crc(block.crc(), computed)?;
    }
    Ok(())
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

/// Names of the device buffers of a run of blocks (the pipeline's lane keeps them between
/// steps and calls).
const BITS: &str = "bwt.bits";
const META: &str = "bwt.meta";
const COUNTS: &str = "bwt.counts";
const SYMBOLS: &str = "bwt.symbols";
const VALUES: &str = "bwt.values";
const LISTS: &str = "bwt.lists";
const PIECE_COUNTS: &str = "bwt.pieces";
const ENTRIES: &str = "bwt.entries";
const OUT: &str = "bwt.out";

/// A run of coded blocks on the device: their bitstreams and descriptions uploaded, the
/// scratch of every stage, the verdicts and the output; the kernels can run over them
/// any number of times.
pub(super) struct StepBuffers {
    count: usize,
    subs: usize,
    chunks: usize,
    pieces: usize,
    auxs: usize,
    pub out_len: usize,
    spans: [Range<usize>; 13],
    bits: CudaSlice<u8>,
    meta: CudaSlice<u8>,
    counts: CudaSlice<u8>,
    symbols: CudaSlice<u8>,
    values: CudaSlice<u8>,
    lists: CudaSlice<u8>,
    piece_counts: CudaSlice<u8>,
    entries: CudaSlice<u8>,
    pub out: CudaSlice<u8>,
}

impl StepBuffers {
    /// Describes `blocks` (parsed as `parsed`) and queues their upload on `lane`, taking
    /// the device buffers from it; `memory` is where the bitstreams are.
    pub fn upload(
        gpu: &Gpu,
        lane: &mut Lane,
        parsed: &[ParsedBlock<'_>],
        blocks: &[Block],
        headers: &[Header],
        memory: HostMemory,
    ) -> Result<Self> {
        let layout = StepLayout::new(parsed, blocks, headers)?;
        let count = blocks.len();
        let out_len = layout.out_len;
        let bit_pieces: Vec<&[u8]> = parsed.iter().map(|p| p.bits).collect();
        let bits_len: usize = bit_pieces.iter().map(|p| p.len()).sum();
        let mut bits = lane.take_device(BITS, bits_len)?;
        upload_pieces(gpu, lane, &bit_pieces, memory, BITS, &mut bits)?;

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
        let meta = meta.upload(gpu, lane, META, META)?;
        let subs = layout.sub_block.len();
        let chunks = layout.chunk_block.len();
        let pieces = layout.piece_block.len();
        Ok(StepBuffers {
            count,
            subs,
            chunks,
            pieces,
            auxs: layout.aux.len(),
            out_len,
            spans,
            bits,
            meta,
            counts: lane.take_device(COUNTS, 4 * (subs + count))?,
            symbols: lane.take_device(SYMBOLS, 2 * out_len)?,
            values: lane.take_device(VALUES, 8 * chunks)?,
            lists: lane.take_device(LISTS, 256 * chunks)?,
            piece_counts: lane.take_device(PIECE_COUNTS, 1024 * pieces)?,
            entries: lane.take_device(ENTRIES, 8 * (out_len + count))?,
            out: lane.take_device(OUT, out_len)?,
        })
    }

    /// Queues every stage of the decoder on `stream`.
    pub fn enqueue(&mut self, stream: &Arc<CudaStream>, kernels: &DecodeKernels) -> Result<()> {
        let count = self.count;
        let (meta_in, mut verdicts) = self.meta.split_at_mut(self.spans[12].start);
        let (status, crcs) = verdicts.split_at_mut(4 * count);
        let spans = &self.spans;
        let view = |k: usize| meta_in.slice(spans[k].clone());
        let (counts, sym_counts) = self.counts.split_at_mut(4 * self.subs);
        enqueue_decompress(
            stream,
            kernels,
            DecodeLaunch {
                blocks: count,
                subs: self.subs,
                chunks: self.chunks,
                pieces: self.pieces,
                auxs: self.auxs,
                bits: self.bits.slice(..),
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
                counts,
                sym_counts,
                symbols: self.symbols.slice_mut(..),
                values: self.values.slice_mut(..),
                lists: self.lists.slice_mut(..),
                piece_counts: self.piece_counts.slice_mut(..),
                entries: self.entries.slice_mut(..),
                status,
                crcs,
                out: self.out.slice_mut(..),
                out_len: self.out_len,
            },
        )?;
        Ok(())
    }

    /// The verdicts [`check_verdicts`] reads (8 bytes per block).
    pub fn verdicts(&self) -> CudaView<'_, u8> {
        self.meta.slice(self.spans[12].clone())
    }

    /// Gives the device buffers back to `lane` for the next step.
    pub fn put_back(self, lane: &mut Lane) {
        for (name, buffer) in [
            (BITS, self.bits),
            (META, self.meta),
            (COUNTS, self.counts),
            (SYMBOLS, self.symbols),
            (VALUES, self.values),
            (LISTS, self.lists),
            (PIECE_COUNTS, self.piece_counts),
            (ENTRIES, self.entries),
            (OUT, self.out),
        ] {
            lane.put_device(name, buffer);
        }
    }
}
