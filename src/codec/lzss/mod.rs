//! `lzss`: multi-byte LZSS after GPULZ (Zhang et al., ICS '23), CPU reference.
//!
//! The input is read as symbols of `S` bytes (1, 2, 4 or 8: the column's width) and cut
//! into chunks of `C` bytes (2048..=16384) that are matched, parsed, encoded and decoded
//! independently, one GPU thread block (or one rayon task) per chunk. Inside a chunk a
//! symbol is either a literal or part of a match `(length, distance)` measured in symbols,
//! with the distance at most the window `W` (1..=255) and the source inside the chunk.
//!
//! Stream (all integers little-endian; `docs/FORMAT.md`, section `lzss`, is the spec):
//!
//! ```text
//! version=1 | S | W | C: u16 | N: varint          header (N = uncompressed bytes)
//! size[0..k]: u16 each                            k = ceil((N - N % S) / C) chunks
//! chunk payloads, size[i] bytes each              raw when size[i] == the chunk's length
//! tail: N % S bytes, raw                          the bytes that do not fill a symbol
//! ```
//!
//! An encoded chunk is `T: u16 | flags: ceil(T/8) bytes | literals: L*S bytes | lengths: M
//! bytes | distances: M bytes`, where `T = L + M` tokens, flag bit `t` (LSB first) is 1 for
//! a match, a length byte stores `len - min_match_len(S)` and a distance byte stores `d`.
//! Every token's input and output position follows from prefix sums over the flags and the
//! lengths, so a warp can decode a chunk in parallel.
//!
//! Matching rule (exactly what a GPU thread computes for its position `i`): the longest
//! common prefix, in symbols, of the symbols at `i` and at `i - d` for `d` in
//! `1..=min(W, i)`, capped at `min(max_match_len(S), m - i)` (`m` = symbols in the chunk);
//! the source may overlap position `i` (runs compress); ties go to the smallest `d`. The
//! parse is greedy from the chunk start: a match when its length is at least
//! [`min_match_len`] (3 for S=1, 2 for S=2, 1 for S=4 and S=8), else a literal. A chunk
//! whose encoding is not strictly smaller than its bytes is stored raw.
//!
//! Speed (release, one core of the build machine): see `docs/FORMAT.md`; the compressor
//! only computes matches at the positions the parse visits (hash chains over the first
//! `min_match_len` symbols, giving the same matches as the exhaustive rule).
//!
//! [`gpu`] compresses and decompresses the same streams on the GPU.

mod decode;
mod encode;
mod family;
pub mod gpu;
mod matching;
mod parse;
#[cfg(test)]
mod tests;

pub use decode::*;
pub use encode::*;
pub(crate) use family::Lzss;
pub use family::LzssOptions;
pub use matching::*;
pub use parse::*;

pub(crate) use rayon::prelude::*;

pub(crate) use super::error::{CodecError, Result};
pub(crate) use super::varint;

/// The codec's name in errors and containers.
pub const NAME: &str = "lzss";
/// The stream version this module writes and reads.
pub const VERSION: u8 = 1;
/// Smallest chunk size in bytes.
pub const MIN_CHUNK_SIZE: u32 = 2048;
/// Largest chunk size in bytes (chunk and token counts then fit a `u16`).
pub const MAX_CHUNK_SIZE: u32 = 16384;
/// Bytes of the fixed part of the header: version, S, W and C as a `u16`.
const FIXED_HEADER_LEN: usize = 5;
/// Bytes of an encoded chunk's token count.
const TOKEN_COUNT_LEN: usize = 2;

/// Parameters of an `lzss` stream; all three are stored in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LzssParams {
    /// Symbol width `S` in bytes: 1, 2, 4 or 8.
    pub symbol_width: u8,
    /// Sliding window `W` in symbols: 1..=255 (the distance byte).
    pub window: u8,
    /// Chunk size `C` in bytes: 2048..=16384, a multiple of 8.
    pub chunk_size: u32,
}

impl Default for LzssParams {
    /// GPULZ's defaults: `S = 1`, `W = 128`, `C = 2048`.
    fn default() -> Self {
        LzssParams {
            symbol_width: 1,
            window: 128,
            chunk_size: 2048,
        }
    }
}

impl LzssParams {
    /// Checked constructor.
    pub fn new(symbol_width: u8, window: u8, chunk_size: u32) -> Result<Self> {
        let params = LzssParams {
            symbol_width,
            window,
            chunk_size,
        };
        params.validate()?;
        Ok(params)
    }

    /// The window of GPULZ's compression levels 1..=4: 32, 64, 128, 255 symbols.
    pub fn window_for_level(level: u8) -> Result<u8> {
        match level {
            1 => Ok(32),
            2 => Ok(64),
            3 => Ok(128),
            4 => Ok(255),
            _ => Err(CodecError::invalid(
                NAME,
                format!("level {level} is not in 1..=4"),
            )),
        }
    }

    /// Checks the ranges documented on the fields.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.symbol_width, 1 | 2 | 4 | 8) {
            return Err(CodecError::invalid(
                NAME,
                format!("symbol width {} is not 1, 2, 4 or 8", self.symbol_width),
            ));
        }
        if self.window == 0 {
            return Err(CodecError::invalid(NAME, "window of 0 symbols"));
        }
        if !(MIN_CHUNK_SIZE..=MAX_CHUNK_SIZE).contains(&self.chunk_size)
            || !self.chunk_size.is_multiple_of(8)
        {
            return Err(CodecError::invalid(
                NAME,
                format!(
                    "chunk size {} is not a multiple of 8 in {MIN_CHUNK_SIZE}..={MAX_CHUNK_SIZE}",
                    self.chunk_size
                ),
            ));
        }
        Ok(())
    }

    /// Shortest match the parse takes for these parameters, in symbols.
    pub fn min_match_len(&self) -> usize {
        min_match_len(self.symbol_width)
    }

    /// Longest match the length byte can carry, in symbols.
    pub fn max_match_len(&self) -> usize {
        max_match_len(self.symbol_width)
    }
}

/// Shortest match taken, in symbols: a match costs 2 bytes and a flag bit, a literal `S`
/// bytes and a flag bit, so a match must cover at least 3 symbols at S=1, 2 at S=2 and 1
/// at S=4 and S=8 to save space. The length byte stores `len - min_match_len(S)`.
pub const fn min_match_len(symbol_width: u8) -> usize {
    match symbol_width {
        1 => 3,
        2 => 2,
        _ => 1,
    }
}

/// Longest match, in symbols: `255 + min_match_len(S)` (a chunk's end may cut it shorter).
pub const fn max_match_len(symbol_width: u8) -> usize {
    255 + min_match_len(symbol_width)
}

/// Largest stream `compress` can return for `len` input bytes: the header, two bytes per
/// chunk and the input itself.
pub fn max_compressed_len(len: usize, params: &LzssParams) -> usize {
    let s = usize::from(params.symbol_width.max(1));
    let chunk = params.chunk_size.max(1) as usize;
    let body = len - len % s;
    let mut varint = Vec::with_capacity(10);
    varint::write_u64(&mut varint, len as u64);
    FIXED_HEADER_LEN + varint.len() + 2 * body.div_ceil(chunk) + len
}

// The stream.

/// Compresses `input`. Infallible for valid parameters.
///
/// # Panics
/// If `params` fails [`LzssParams::validate`] (use [`try_compress`] to get an error).
pub fn compress(input: &[u8], params: &LzssParams) -> Vec<u8> {
    match try_compress(input, params) {
        Ok(stream) => stream,
        Err(e) => panic!("{e}"),
    }
}

/// [`compress`], returning an error for invalid parameters instead of panicking.
pub fn try_compress(input: &[u8], params: &LzssParams) -> Result<Vec<u8>> {
    params.validate()?;
    Ok(match params.symbol_width {
        1 => compress_impl::<1>(input, params),
        2 => compress_impl::<2>(input, params),
        4 => compress_impl::<4>(input, params),
        _ => compress_impl::<8>(input, params),
    })
}

/// Bytes of input per rayon task: enough chunks to amortise the task's scratch.
const TASK_BYTES: usize = 1 << 17;

fn compress_impl<const S: usize>(input: &[u8], params: &LzssParams) -> Vec<u8> {
    let c = params.chunk_size as usize;
    let window = usize::from(params.window);
    let body = input.len() - input.len() % S;
    let chunks = body.div_ceil(c);
    let task = (TASK_BYTES / c).max(1) * c;
    let mut header = Vec::with_capacity(FIXED_HEADER_LEN + 10);
    write_header(&mut header, params, input.len() as u64);
    let table_at = header.len();
    let payload_at = table_at + 2 * chunks;
    // Every task writes its chunks' payloads in place, at its input's offset (a payload
    // is never longer than its chunk), then the gaps are closed: no buffer per task and
    // no copy of it. Zeroed memory from the allocator is fresh pages for a large stream,
    // so only the pages that payloads reach are ever touched, by the tasks in parallel.
    let mut out = vec![0u8; payload_at + input.len()];
    out[..table_at].copy_from_slice(&header);
    let (head, payload) = out.split_at_mut(payload_at);
    let used: Vec<usize> = input[..body]
        .par_chunks(task)
        .zip(payload[..body].par_chunks_mut(task))
        .zip(head[table_at..].par_chunks_mut(2 * (task / c)))
        .map(|((group, dst), sizes)| {
            ChunkCompressor::with(|cc| {
                let mut at = 0;
                for (chunk, size) in group.chunks(c).zip(sizes.chunks_exact_mut(2)) {
                    let n = cc.compress::<S>(chunk, window, &mut dst[at..]);
                    size.copy_from_slice(&(n as u16).to_le_bytes());
                    at += n;
                }
                at
            })
        })
        .collect();
    let mut end = payload_at;
    for (k, &n) in used.iter().enumerate() {
        let from = payload_at + k * task;
        out.copy_within(from..from + n, end);
        end += n;
    }
    out.truncate(end);
    out.extend_from_slice(&input[body..]);
    out.shrink_to_fit();
    out
}

fn write_header(out: &mut Vec<u8>, params: &LzssParams, len: u64) {
    out.push(VERSION);
    out.push(params.symbol_width);
    out.push(params.window);
    out.extend_from_slice(&(params.chunk_size as u16).to_le_bytes());
    varint::write_u64(out, len);
}

/// Reads and validates the header: the parameters and the uncompressed length.
pub fn read_header(stream: &[u8]) -> Result<(LzssParams, u64)> {
    parse_header(stream).map(|(params, len, _)| (params, len))
}

/// Header fields and the header's length in bytes.
fn parse_header(stream: &[u8]) -> Result<(LzssParams, u64, usize)> {
    if stream.len() < FIXED_HEADER_LEN {
        return Err(CodecError::corrupt(NAME, "stream shorter than its header"));
    }
    if stream[0] != VERSION {
        return Err(CodecError::corrupt(
            NAME,
            format!("unknown version {}", stream[0]),
        ));
    }
    let params = LzssParams {
        symbol_width: stream[1],
        window: stream[2],
        chunk_size: u32::from(u16::from_le_bytes([stream[3], stream[4]])),
    };
    params
        .validate()
        .map_err(|e| CodecError::corrupt(NAME, format!("header: {e}")))?;
    let (len, used) = varint::read_u64(&stream[FIXED_HEADER_LEN..], NAME)?;
    Ok((params, len, FIXED_HEADER_LEN + used))
}

// Parameter selection (GPULZ §3.2.3).

/// Chooses the symbol width for a column of `type_width`-byte values from a sample of it.
///
/// Candidates are the powers of two up to `min(type_width, 8)` that divide `type_width`
/// (just 1 when `type_width` is odd or 0). GPULZ's rule is to use the type's width and to
/// fall back to single bytes when multi-byte matching compresses poorly; here each
/// candidate compresses the sample (same `window` and `chunk_size`) and the widest one
/// whose compressed size is within 2% of the smallest wins: the type's width whenever it
/// is about as good (it is the fastest: `S` times fewer positions to match), S=1 when the
/// wider symbols lose byte-level repetitions (small integers, whose zero bytes repeat
/// across values, often compress better at S=1), an intermediate width when that is what
/// the data repeats. This measures instead of using the paper's fixed threshold
/// (multi-byte while its ratio is at least 1.5). An empty
/// sample, or invalid `window`/`chunk_size`, gives the type's width.
pub fn choose_symbol_width(sample: &[u8], type_width: usize, window: u8, chunk_size: u32) -> u8 {
    let widest = [8usize, 4, 2, 1]
        .into_iter()
        .find(|&s| type_width.is_multiple_of(s) && s <= type_width.max(1))
        .unwrap_or(1) as u8;
    if widest == 1 || sample.is_empty() || LzssParams::new(1, window, chunk_size).is_err() {
        return widest;
    }
    let mut sizes = Vec::new();
    let mut s = widest;
    while s >= 1 {
        let params = LzssParams {
            symbol_width: s,
            window,
            chunk_size,
        };
        sizes.push((s, compress(sample, &params).len()));
        s /= 2;
    }
    let smallest = sizes.iter().map(|&(_, size)| size).min().unwrap_or(0);
    sizes
        .iter()
        .find(|&&(_, size)| size * 100 <= smallest * 102)
        .map_or(widest, |&(s, _)| s)
}
