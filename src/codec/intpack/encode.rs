//! Encoding: each block analysed and written in its shortest scheme; blocks are
//! independent, so groups of them are encoded in parallel and their sizes gathered into
//! the table.

use rayon::prelude::*;

use super::bits::pack;
use super::frame::{frame_bits, push_word, write_empty_frame, write_frame};
use super::scheme::{Analysis, POSITION_BITS, Scheme, index_bits};
use super::word::Word;
use super::{BLOCK_VALUES, CodecError, IntpackParams, NAME, Result, VERSION, varint};

/// Compresses `input` as values of `params.width` bytes. Infallible for valid parameters.
///
/// # Panics
/// If `params` fails [`IntpackParams::validate`] (use [`try_compress`] to get an error).
///
/// ```
/// use colzip::codec::intpack::{self, IntpackParams};
/// let quantities: Vec<u8> = (0..4096u64).flat_map(|i| (1 + i * 7 % 50).to_le_bytes()).collect();
/// let stream = intpack::compress(&quantities, &IntpackParams::new(8)?);
/// // 6 bits per value and a few bytes per block of 1024 values.
/// assert!(stream.len() < 4096 * 6 / 8 + 64);
/// assert_eq!(intpack::decompress(&stream, quantities.len())?, quantities);
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn compress(input: &[u8], params: &IntpackParams) -> Vec<u8> {
    match try_compress(input, params) {
        Ok(stream) => stream,
        Err(e) => panic!("{e}"),
    }
}

/// [`compress`], returning an error for invalid parameters instead of panicking.
pub fn try_compress(input: &[u8], params: &IntpackParams) -> Result<Vec<u8>> {
    params.validate()?;
    Ok(match params.width {
        // Signed integers: their order is the format's.
        1 => compress_impl::<i8>(input),
        2 => compress_impl::<i16>(input),
        4 => compress_impl::<i32>(input),
        _ => compress_impl::<i64>(input),
    })
}

/// Encodes one block as [`compress`] does: `values` is `1..=1024` values of `width`
/// bytes. Appends the encoding to `out` and returns its scheme.
///
/// ```
/// use colzip::codec::intpack::{Scheme, encode_block};
/// let mut out = Vec::new();
/// let same: Vec<u8> = [7u16; 100].iter().flat_map(|v| v.to_le_bytes()).collect();
/// assert_eq!(encode_block(&same, 2, &mut out)?, Scheme::Frame);
/// assert_eq!(out, [0, 0, 7, 0]); // scheme 0, b = 0, ref = 7
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn encode_block(values: &[u8], width: u8, out: &mut Vec<u8>) -> Result<Scheme> {
    IntpackParams::new(width)?;
    let w = usize::from(width);
    let n = values.len() / w;
    if !values.len().is_multiple_of(w) || !(1..=BLOCK_VALUES).contains(&n) {
        return Err(CodecError::invalid(
            NAME,
            format!("a block of {} bytes is not 1..=1024 values", values.len()),
        ));
    }
    Ok(match width {
        1 => BlockEncoder::<i8>::new().encode(values, out),
        2 => BlockEncoder::<i16>::new().encode(values, out),
        4 => BlockEncoder::<i32>::new().encode(values, out),
        _ => BlockEncoder::<i64>::new().encode(values, out),
    })
}

/// Blocks per rayon task: enough to amortise the task's scratch.
const TASK_BLOCKS: usize = 32;

fn compress_impl<T: Word>(input: &[u8]) -> Vec<u8> {
    let w = T::BYTES;
    let block_bytes = BLOCK_VALUES * w;
    let body = input.len() - input.len() % w;
    let parts: Vec<(Vec<u8>, Vec<u16>)> = input[..body]
        .par_chunks(TASK_BLOCKS * block_bytes)
        .map(|group| {
            let mut encoder = BlockEncoder::<T>::new();
            let mut payload = Vec::with_capacity(group.len() / 2);
            let mut sizes = Vec::with_capacity(group.len().div_ceil(block_bytes));
            for block in group.chunks(block_bytes) {
                let start = payload.len();
                encoder.encode(block, &mut payload);
                // A block is at most 2 + W + 1024 W = 8202 bytes: it fits the u16.
                sizes.push((payload.len() - start) as u16);
            }
            (payload, sizes)
        })
        .collect();
    assemble(w, input.len(), &parts, &input[body..])
}

/// The stream from the tasks' encodings (payload and block sizes each, in order) and the
/// tail. Each task's sizes and payload are copied to their places in parallel: one core
/// copying every payload would cost a third of the input's bytes or more in serial
/// copies, for columns that compress 3:1 or less.
fn assemble(w: usize, len: usize, parts: &[(Vec<u8>, Vec<u16>)], tail: &[u8]) -> Vec<u8> {
    let mut header = Vec::with_capacity(2 + 10);
    header.push(VERSION);
    header.push(w as u8);
    varint::write_u64(&mut header, len as u64);
    let payload_len: usize = parts.iter().map(|(p, _)| p.len()).sum();
    let blocks: usize = parts.iter().map(|(_, s)| s.len()).sum();
    let mut out = vec![0u8; header.len() + 2 * blocks + payload_len + tail.len()];
    let (head, rest) = out.split_at_mut(header.len());
    head.copy_from_slice(&header);
    let (mut table, rest) = rest.split_at_mut(2 * blocks);
    let (mut payloads, tail_out) = rest.split_at_mut(payload_len);
    tail_out.copy_from_slice(tail);
    let mut places = Vec::with_capacity(parts.len());
    for part in parts {
        let (sizes_to, table_rest) = std::mem::take(&mut table).split_at_mut(2 * part.1.len());
        let (payload_to, payloads_rest) = std::mem::take(&mut payloads).split_at_mut(part.0.len());
        (table, payloads) = (table_rest, payloads_rest);
        places.push((part, sizes_to, payload_to));
    }
    places
        .into_par_iter()
        .for_each(|((payload, sizes), sizes_to, payload_to)| {
            for (entry, size) in sizes_to.chunks_exact_mut(2).zip(sizes) {
                entry.copy_from_slice(&size.to_le_bytes());
            }
            payload_to.copy_from_slice(payload);
        });
    out
}

/// Per-task scratch of the encoder.
struct BlockEncoder<T: Word> {
    analysis: Analysis<T>,
    /// Positions and high bits of a frame's exceptions (scheme 5).
    exceptions: Exceptions,
}

/// Scratch for scheme 5's exception fields.
#[derive(Default)]
struct Exceptions {
    positions: Vec<u64>,
    highs: Vec<u64>,
}

impl<T: Word> BlockEncoder<T> {
    fn new() -> Self {
        BlockEncoder {
            analysis: Analysis::new(),
            exceptions: Exceptions::default(),
        }
    }

    /// Appends the encoding of `block` (`1..=1024` whole values) in its shortest scheme.
    fn encode(&mut self, block: &[u8], out: &mut Vec<u8>) -> Scheme {
        self.analysis.run(block);
        let scheme = self.analysis.scheme;
        out.push(scheme as u8);
        match scheme {
            Scheme::Frame => {
                let a = &self.analysis;
                write_frame(out, a.min, a.max, a.values.iter().copied());
            }
            Scheme::Delta => {
                let a = &self.analysis;
                write_delta_frame(out, &a.values, a.delta_min, a.delta_max);
            }
            Scheme::RunsFrame | Scheme::RunsDelta => {
                self.analysis.measure_runs();
                let a = &self.analysis;
                out.extend_from_slice(&(a.run_values.len() as u16).to_le_bytes());
                if scheme == Scheme::RunsFrame {
                    // The run values' range is the block's.
                    write_frame(out, a.min, a.max, a.run_values.iter().copied());
                } else {
                    // Their differences are the block's nonzero ones.
                    write_delta_frame(out, &a.run_values, a.step_min, a.step_max);
                }
                // Lengths are below 2^15: as 2-byte values their signed order is theirs.
                write_frame(
                    out,
                    a.run_length_min.flip(),
                    a.run_length_max.flip(),
                    a.run_lengths.iter().map(|l| l.flip()),
                );
            }
            Scheme::Dictionary => {
                self.analysis.build_dictionary();
                let a = &self.analysis;
                let d = a.dictionary.len();
                out.extend_from_slice(&(d as u16).to_le_bytes());
                write_delta_frame(out, &a.dictionary, a.gap_min, a.gap_max);
                let indices = a.values.iter().map(|&v| a.index_of(v) as u64);
                pack(indices, index_bits(d), out);
            }
            Scheme::FrameExceptions => {
                let a = &self.analysis;
                let b = a.exception_bits;
                write_exceptions_frame(out, &a.values, a.min, a.max, b, &mut self.exceptions);
            }
        }
        scheme
    }
}

/// Appends the delta frame of `values` (ordered form, at least one), whose differences
/// have the minimum and maximum `delta_min` and `delta_max`.
fn write_delta_frame<T: Word>(out: &mut Vec<u8>, values: &[T], delta_min: T, delta_max: T) {
    push_word(out, values[0].flip());
    if values.len() == 1 {
        write_empty_frame::<T>(out);
        return;
    }
    let deltas = values.windows(2).map(|p| p[1].sub(p[0]).flip());
    write_frame(out, delta_min, delta_max, deltas);
}

/// Appends scheme 5's fields for `values` (ordered form) in `min..=max` with low width
/// `b` (below the frame's): `b`, `ref`, `e`, `h`, the low bits of every value, then the
/// positions and high bits of the values that need more than `b` bits.
fn write_exceptions_frame<T: Word>(
    out: &mut Vec<u8>,
    values: &[T],
    min: T,
    max: T,
    b: u32,
    scratch: &mut Exceptions,
) {
    let h = frame_bits(min, max) - b;
    let offsets = || values.iter().map(move |&v| v.sub(min).to_u64());
    let Exceptions { positions, highs } = scratch;
    positions.clear();
    highs.clear();
    for (j, u) in offsets().enumerate() {
        if u >> b != 0 {
            positions.push(j as u64);
            highs.push(u >> b);
        }
    }
    out.push(b as u8);
    push_word(out, min.flip());
    out.extend_from_slice(&(positions.len() as u16).to_le_bytes());
    out.push(h as u8);
    // `pack` keeps each value's low b bits.
    pack(offsets(), b, out);
    pack(positions.iter().copied(), POSITION_BITS, out);
    pack(highs.iter().copied(), h, out);
}
