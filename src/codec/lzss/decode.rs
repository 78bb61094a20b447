//! Decoding: the stream's size table locates every chunk; each chunk decodes on its own.

use super::*;
/// Decompresses a stream of any claimed size (validated against the stream's own sizes
/// before anything is allocated).
pub fn decompress(stream: &[u8]) -> Result<Vec<u8>> {
    decompress_with_limit(stream, usize::MAX)
}

/// The uncompressed length a stream claims, once its header and size table are checked
/// against its bytes (nothing is decoded).
pub fn decompressed_len(stream: &[u8]) -> Result<usize> {
    Ok(read_layout(stream, usize::MAX)?.len)
}

/// Where the parts of a validated stream lie; the CPU and GPU decoders both start here.
pub(crate) struct StreamLayout {
    pub(crate) params: LzssParams,
    /// Uncompressed bytes (`N`), and the part of them that is whole symbols.
    pub(crate) len: usize,
    pub(crate) body: usize,
    /// Byte offsets in the stream of the size table and of the first payload.
    pub(crate) table_at: usize,
    pub(crate) payload_at: usize,
    /// Payload offset of every chunk from `payload_at`, and the payloads' total last.
    pub(crate) offsets: Vec<usize>,
}

/// Validates the header, the size table (every size in `1..=` its chunk's length) and the
/// total length, refusing with [`CodecError::TooLarge`] a stream that claims more than
/// `max_output` bytes, before anything is allocated for the output.
pub(crate) fn read_layout(stream: &[u8], max_output: usize) -> Result<StreamLayout> {
    let (params, claimed, header_len) = parse_header(stream)?;
    if claimed > max_output as u64 {
        return Err(CodecError::TooLarge {
            codec: NAME,
            claimed,
            limit: max_output as u64,
        });
    }
    let n = usize::try_from(claimed)
        .map_err(|_| CodecError::corrupt(NAME, "length does not fit in memory"))?;
    let s = usize::from(params.symbol_width);
    let c = params.chunk_size as usize;
    let body = n - n % s;
    let chunks = body.div_ceil(c);
    let table_end = chunks
        .checked_mul(2)
        .and_then(|t| t.checked_add(header_len))
        .filter(|&end| end <= stream.len())
        .ok_or_else(|| CodecError::corrupt(NAME, "chunk size table runs past the stream"))?;

    // The payloads must tile the rest of the stream up to the tail.
    let mut offsets = Vec::with_capacity(chunks + 1);
    let mut total = 0usize;
    for (i, entry) in stream[header_len..table_end].chunks_exact(2).enumerate() {
        let size = usize::from(u16::from_le_bytes([entry[0], entry[1]]));
        let raw = c.min(body - i * c);
        if size == 0 || size > raw {
            return Err(CodecError::corrupt(
                NAME,
                format!("chunk {i}: size {size} not in 1..={raw}"),
            ));
        }
        // Checked before the output is allocated: a few bytes cannot claim a whole chunk.
        if size < raw && size < min_encoded_size(raw / s, params.symbol_width) {
            return Err(CodecError::corrupt(
                NAME,
                format!("chunk {i}: {size} bytes cannot encode {raw}"),
            ));
        }
        offsets.push(total);
        total += size;
    }
    offsets.push(total);
    let expected = (table_end + total).saturating_add(n % s);
    if expected != stream.len() {
        return Err(CodecError::corrupt(
            NAME,
            format!(
                "stream is {} bytes, its header and size table say {expected}",
                stream.len()
            ),
        ));
    }
    Ok(StreamLayout {
        params,
        len: n,
        body,
        table_at: header_len,
        payload_at: table_end,
        offsets,
    })
}

/// A lower bound on the size of an encoded chunk of `m` symbols of `s` bytes: the first
/// token is a literal (a match needs earlier output), every other token covers at most
/// `max_match_len(s)` symbols and costs at least `min(s, 2)` bytes (a literal `s`, a
/// match 2); plus the token count and the flags.
pub(super) fn min_encoded_size(m: usize, s: u8) -> usize {
    let tokens = 1 + m.saturating_sub(1).div_ceil(max_match_len(s));
    let s = usize::from(s);
    TOKEN_COUNT_LEN + tokens.div_ceil(8) + s + (tokens - 1) * s.min(2)
}

/// Output decoded per step: memory grows with the chunks actually decoded, so a stream
/// whose header claims much more than its chunks hold fails before it is all allocated.
const STEP_BYTES: usize = 8 << 20;

/// Decompresses a stream, refusing with [`CodecError::TooLarge`] one whose header claims
/// more than `max_output` bytes. The output grows step by step (fallibly) as chunks decode.
pub fn decompress_with_limit(stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    let layout = read_layout(stream, max_output)?;
    let c = layout.params.chunk_size as usize;
    let chunks = layout.offsets.len() - 1;
    let per_step = (STEP_BYTES / c).max(1);
    let mut out = Vec::new();
    let mut first = 0;
    while first < chunks {
        let last = (first + per_step).min(chunks);
        let start = first * c;
        let end = (last * c).min(layout.body);
        super::super::output::grow(&mut out, end - start, NAME)?;
        decode_chunks(stream, &layout, first..last, &mut out[start..end])?;
        first = last;
    }
    let tail = layout.len - layout.body;
    super::super::output::grow(&mut out, tail, NAME)?;
    copy_tail(stream, &layout, &mut out[layout.body..]);
    Ok(out)
}

/// Decompresses a stream into `out`, which must be exactly its uncompressed length (a
/// caller that knows the length, as a container does, allocates once and every core
/// decodes in place). A stream that claims more than `out` holds is refused with
/// [`CodecError::TooLarge`] and one that claims less as corrupt, both before decoding.
pub fn decompress_into(stream: &[u8], out: &mut [u8]) -> Result<()> {
    let layout = read_layout(stream, out.len())?;
    if layout.len != out.len() {
        return Err(CodecError::corrupt(
            NAME,
            format!("stream claims {} bytes, expected {}", layout.len, out.len()),
        ));
    }
    let chunks = layout.offsets.len() - 1;
    let (body, tail) = out.split_at_mut(layout.body);
    decode_chunks(stream, &layout, 0..chunks, body)?;
    copy_tail(stream, &layout, tail);
    Ok(())
}

/// Decodes chunks `range` of a validated stream into `out` (exactly their bytes), in
/// parallel; the first failing chunk in stream order is the error.
fn decode_chunks(
    stream: &[u8],
    layout: &StreamLayout,
    range: std::ops::Range<usize>,
    out: &mut [u8],
) -> Result<()> {
    let s = usize::from(layout.params.symbol_width);
    let c = layout.params.chunk_size as usize;
    let window = layout.params.window;
    let first = range.start;
    let failure = out
        .par_chunks_mut(c)
        .zip(layout.offsets[range.start..=range.end].par_windows(2))
        .enumerate()
        .with_min_len((TASK_BYTES / c).max(1))
        .map(|(k, (dst, w))| {
            let payload = &stream[layout.payload_at + w[0]..layout.payload_at + w[1]];
            let res = match s {
                1 => decode_chunk_impl::<1>(payload, dst, window),
                2 => decode_chunk_impl::<2>(payload, dst, window),
                4 => decode_chunk_impl::<4>(payload, dst, window),
                _ => decode_chunk_impl::<8>(payload, dst, window),
            };
            res.map_err(|reason| {
                CodecError::corrupt(NAME, format!("chunk {}: {reason}", first + k))
            })
        })
        .find_first(|r| r.is_err());
    match failure {
        Some(Err(e)) => Err(e),
        _ => Ok(()),
    }
}

/// Copies the bytes after the last whole symbol, stored plain after the payloads.
fn copy_tail(stream: &[u8], layout: &StreamLayout, out: &mut [u8]) {
    let chunks = layout.offsets.len() - 1;
    let pos = layout.payload_at + layout.offsets[chunks];
    out.copy_from_slice(&stream[pos..]);
}

/// Decodes one chunk payload into `out` (exactly the chunk's uncompressed bytes).
pub fn decode_chunk(payload: &[u8], out: &mut [u8], params: &LzssParams) -> Result<()> {
    params.validate()?;
    let s = usize::from(params.symbol_width);
    if !out.len().is_multiple_of(s) || out.len() > params.chunk_size as usize {
        return Err(CodecError::invalid(
            NAME,
            "chunk output is not whole symbols within the chunk size",
        ));
    }
    let res = match s {
        1 => decode_chunk_impl::<1>(payload, out, params.window),
        2 => decode_chunk_impl::<2>(payload, out, params.window),
        4 => decode_chunk_impl::<4>(payload, out, params.window),
        _ => decode_chunk_impl::<8>(payload, out, params.window),
    };
    res.map_err(|reason| CodecError::corrupt(NAME, reason))
}

pub(super) fn decode_chunk_impl<const S: usize>(
    payload: &[u8],
    out: &mut [u8],
    window: u8,
) -> std::result::Result<(), &'static str> {
    if payload.len() == out.len() {
        out.copy_from_slice(payload);
        return Ok(());
    }
    if payload.len() > out.len() {
        return Err("payload larger than the chunk");
    }
    let m = out.len() / S;
    let Some((count, rest)) = payload.split_first_chunk::<2>() else {
        return Err("truncated token count");
    };
    let tokens = usize::from(u16::from_le_bytes(*count));
    if tokens == 0 || tokens > m {
        return Err("token count not in 1..=symbols");
    }
    let flag_len = tokens.div_ceil(8);
    if rest.len() < flag_len {
        return Err("truncated flags");
    }
    let (flags, rest) = rest.split_at(flag_len);
    let pad = tokens % 8;
    if pad != 0 && flags[flag_len - 1] >> pad != 0 {
        return Err("flag padding bits set");
    }
    let matches: usize = flags.iter().map(|f| f.count_ones() as usize).sum();
    let literal_bytes = (tokens - matches) * S;
    if rest.len() != literal_bytes + 2 * matches {
        return Err("section sizes do not add up to the payload");
    }
    let lit_start = payload.len() - rest.len();
    let (lengths, dists) = rest[literal_bytes..].split_at(matches);

    let bias = min_match_len(S as u8);
    let window = usize::from(window) * S;
    let end = out.len();
    let (mut o, mut lit, mut t, mut mi) = (0usize, lit_start, 0usize, 0usize);
    while t < tokens {
        // Up to 64 tokens' flags at once (the bits past `tokens` are zero).
        let shift = t & 7;
        let mut word = flag_word(flags, t >> 3) >> shift;
        let mut left = (64 - shift).min(tokens - t);
        loop {
            // The run of literals from token `t`.
            let run = (word.trailing_zeros() as usize).min(left);
            let bytes = run * S;
            if bytes > end - o {
                return Err("literals pass the chunk end");
            }
            copy_literals(out, o, payload, lit, bytes);
            o += bytes;
            lit += bytes;
            t += run;
            left -= run;
            if left == 0 {
                break; // the end, or more tokens in the next word
            }
            // Token `t` is a match (`run < left <= 64`, so the shift is in range).
            word = (word >> run) >> 1;
            left -= 1;
            t += 1;
            let (Some(&len), Some(&dist)) = (lengths.get(mi), dists.get(mi)) else {
                return Err("more matches than lengths");
            };
            mi += 1;
            let len = (usize::from(len) + bias) * S;
            let dist = usize::from(dist) * S;
            if dist == 0 || dist > window {
                return Err("match distance not in 1..=window");
            }
            if dist > o {
                return Err("match reaches before the chunk start");
            }
            if len > end - o {
                return Err("match passes the chunk end");
            }
            copy_match(out, o, dist, len);
            o += len;
        }
    }
    if o != end {
        return Err("tokens do not fill the chunk");
    }
    Ok(())
}

/// Eight flag bytes from byte `at` as a little-endian word, zero past the flags.
#[inline(always)]
fn flag_word(flags: &[u8], at: usize) -> u64 {
    match flags.get(at..at + 8) {
        Some(bytes) => u64::from_le_bytes(bytes.try_into().unwrap()),
        None => {
            let mut buf = [0u8; 8];
            let rest = &flags[at.min(flags.len())..];
            buf[..rest.len()].copy_from_slice(rest);
            u64::from_le_bytes(buf)
        }
    }
}

/// `out[o..o + bytes] = payload[lit..lit + bytes]` (callers checked `o + bytes <=
/// out.len()`; the literals section bounds `lit + bytes`). Short runs, the common case,
/// copy one or two fixed blocks of 16 bytes where both sides have room: the bytes past
/// the run are rewritten by later tokens.
#[inline(always)]
fn copy_literals(out: &mut [u8], o: usize, payload: &[u8], lit: usize, bytes: usize) {
    let room = (out.len() - o).min(payload.len() - lit);
    if bytes <= 16 && room >= 16 {
        let src: [u8; 16] = payload[lit..lit + 16].try_into().unwrap();
        out[o..o + 16].copy_from_slice(&src);
    } else if bytes <= 32 && room >= 32 {
        let src: [u8; 32] = payload[lit..lit + 32].try_into().unwrap();
        out[o..o + 32].copy_from_slice(&src);
    } else {
        out[o..o + bytes].copy_from_slice(&payload[lit..lit + bytes]);
    }
}

/// `out[o + k] = out[o - dist + k]` for `k` in `0..len`, in order (so an overlapping
/// copy repeats the last `dist` bytes). Callers checked `1 <= dist <= o` and
/// `o + len <= out.len()`. Where the chunk has room it writes whole blocks of 16 or 8
/// bytes, up to 15 bytes past `o + len` that later tokens rewrite (a chunk's tokens must
/// fill it, or it is an error).
#[inline(always)]
pub(super) fn copy_match(out: &mut [u8], o: usize, dist: usize, len: usize) {
    let src = o - dist;
    let room = out.len() - o;
    if room >= len + 15 {
        if dist >= 16 || dist >= len {
            // Each block's first `min(dist, 16)` bytes are already final, and a block
            // needs no more: either blocks are at most `dist` apart, or there is one.
            let mut k = 0;
            while k < len {
                let block: [u8; 16] = out[src + k..src + k + 16].try_into().unwrap();
                out[o + k..o + k + 16].copy_from_slice(&block);
                k += 16;
            }
        } else if dist >= 8 {
            let mut k = 0;
            while k < len {
                let block: [u8; 8] = out[src + k..src + k + 8].try_into().unwrap();
                out[o + k..o + k + 8].copy_from_slice(&block);
                k += 8;
            }
        } else {
            // Spread the `dist` source bytes over a word (`src + 8 <= o + 7 < out.len()`),
            // then store it every `step` bytes, a multiple of `dist` so each store starts
            // in phase: a few stores instead of a byte-by-byte chain of loads from fresh
            // stores.
            let head = u64::from_le_bytes(out[src..src + 8].try_into().unwrap());
            let mut word = head & ((1u64 << (8 * dist)) - 1);
            let mut n = dist;
            while n < 8 {
                word |= word << (8 * n);
                n *= 2;
            }
            let bytes = word.to_le_bytes();
            let step = 8 - 8 % dist;
            let mut k = 0;
            while k < len {
                out[o + k..o + k + 8].copy_from_slice(&bytes);
                k += step;
            }
        }
    } else if dist >= len {
        out.copy_within(src..src + len, o);
    } else {
        // The written region is periodic with period `dist`: double the step each round.
        let mut done = 0;
        let mut step = dist;
        while done < len {
            let n = step.min(len - done);
            let from = o + done - step;
            out.copy_within(from..from + n, o + done);
            done += n;
            step *= 2;
        }
    }
}
