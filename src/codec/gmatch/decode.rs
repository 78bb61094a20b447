//! The Snappy raw decoder: any valid stream, not only G-match's.
//!
//! Checks, each an `Err` (never a panic): varint preamble (truncated, over 32 bits),
//! claimed length over the caller's limit ([`CodecError::TooLarge`]) or over what the
//! stream could produce (at most 64 output bytes per 3 stream bytes), truncated tags,
//! literal lengths or literal bytes, literals or copies running past the claimed
//! length, copy offsets of 0 or reaching before the output start, and a stream that ends
//! before the claimed length. The output buffer is allocated after those checks on the
//! claimed length, at most 8 bytes per stream byte at first, and grows only while the
//! elements fill it.
//!
//! The elements away from both ends of the stream and of the output go through the fast
//! loop of `decode_fast.rs`, which needs no checks there; it hands every other element
//! (near an end, a literal over 60 bytes, a copy-4, a bad offset) to the checked decoder
//! here, one at a time, so every error is reported here.

use std::ops::ControlFlow;

use super::super::error::{CodecError, Result};
use super::super::output::grow;
use super::super::varint;
use super::NAME;
use super::decode_fast::decode_fast;

/// The uncompressed length a raw stream claims (its varint preamble).
pub fn raw_decompressed_len(stream: &[u8]) -> Result<usize> {
    let (len, _) = varint::read_u32(stream, NAME)?;
    usize::try_from(len)
        .map_err(|_| CodecError::corrupt(NAME, "claimed length does not fit in memory"))
}

/// The uncompressed length a raw stream claims, checked against what its elements can
/// produce (nothing is decoded).
pub fn raw_output_len(stream: &[u8]) -> Result<usize> {
    Ok(raw_elements(stream, usize::MAX)?.1)
}

/// Decodes a Snappy raw stream.
pub fn decompress_raw(stream: &[u8]) -> Result<Vec<u8>> {
    decompress_raw_with_limit(stream, usize::MAX)
}

/// Decodes a Snappy raw stream whose claimed length must not exceed `max_output`. The
/// output starts at what typical data needs (8 bytes per stream byte) and grows
/// (fallibly) while the elements produce more, so a claim the elements do not back
/// costs no memory.
pub fn decompress_raw_with_limit(stream: &[u8], max_output: usize) -> Result<Vec<u8>> {
    let (body, len) = raw_elements(stream, max_output)?;
    let mut out = Vec::new();
    let first = len.min(body.len().saturating_mul(8).max(1 << 16));
    grow(&mut out, first, NAME)?;
    let (mut s, mut d) = (0, 0);
    loop {
        match decode_some(body, s, &mut out, d)? {
            Step::Done(end) => {
                if end != len {
                    return Err(ends_early(end, len));
                }
                return Ok(out);
            }
            Step::Full {
                tag,
                at,
                need,
                what,
            } => {
                if need > len {
                    return Err(corrupt(what));
                }
                let more = out.len().saturating_mul(2).max(need).min(len) - out.len();
                grow(&mut out, more, NAME)?;
                (s, d) = (tag, at);
            }
        }
    }
}

/// Decodes a Snappy raw stream into `out`, which must be exactly its claimed length (a
/// caller that knows the length decodes in place, with no buffer grown and copied). A
/// claim over `out.len()` is refused with [`CodecError::TooLarge`], one under it as
/// corrupt, both before decoding.
pub fn decompress_raw_into(stream: &[u8], out: &mut [u8]) -> Result<()> {
    let (body, len) = raw_elements(stream, out.len())?;
    if len != out.len() {
        return Err(CodecError::corrupt(
            NAME,
            format!("stream claims {len} bytes, expected {}", out.len()),
        ));
    }
    decode_elements(body, out)
}

/// A raw stream's element bytes and claimed length, checked before anything is decoded
/// (by the CPU here and by the GPU path): the length within `max_output` and producible.
pub(crate) fn raw_elements(stream: &[u8], max_output: usize) -> Result<(&[u8], usize)> {
    let (len, header) = varint::read_u32(stream, NAME)?;
    if u64::from(len) > max_output as u64 {
        return Err(CodecError::TooLarge {
            codec: NAME,
            claimed: u64::from(len),
            limit: max_output as u64,
        });
    }
    let body = &stream[header..];
    check_producible(u64::from(len), body.len())?;
    Ok((body, len as usize))
}

/// Rejects a claimed length that `body_len` bytes of elements cannot produce: the
/// densest element is a copy-2 of 64 bytes in 3 bytes.
pub(crate) fn check_producible(claimed: u64, body_len: usize) -> Result<()> {
    let most = (body_len as u64).saturating_mul(64) / 3;
    if claimed > most {
        return Err(CodecError::corrupt(
            NAME,
            format!(
                "claims {claimed} bytes but {body_len} bytes of elements produce at most {most}"
            ),
        ));
    }
    Ok(())
}

fn corrupt(reason: &'static str) -> CodecError {
    CodecError::corrupt(NAME, reason)
}

fn ends_early(end: usize, len: usize) -> CodecError {
    CodecError::corrupt(
        NAME,
        format!("stream ends after {end} of {len} claimed bytes"),
    )
}

/// Decodes the elements `src` into exactly `dst.len()` bytes.
pub fn decode_elements(src: &[u8], dst: &mut [u8]) -> Result<()> {
    match decode_some(src, 0, dst, 0)? {
        Step::Done(end) if end == dst.len() => Ok(()),
        Step::Done(end) => Err(ends_early(end, dst.len())),
        Step::Full { what, .. } => Err(corrupt(what)),
    }
}

/// Where [`decode_some`] stopped.
enum Step {
    /// Every element decoded; the output position reached.
    Done(usize),
    /// The element whose tag is at `tag` needs output up to `need`, past `dst`'s end;
    /// the output position is `at`. `what` is the error if `dst` is the whole output.
    Full {
        tag: usize,
        at: usize,
        need: usize,
        what: &'static str,
    },
}

/// Decodes elements from `src[s..]` into `dst` from position `d`, until the elements end
/// or one does not fit: the fast loop while it can, and one checked element where it
/// stops (near either end, a literal over 60 bytes, a copy-4, or an error to report).
#[inline(always)]
fn decode_some(src: &[u8], mut s: usize, dst: &mut [u8], mut d: usize) -> Result<Step> {
    loop {
        (s, d) = decode_fast(src, s, dst, d);
        if s >= src.len() {
            return Ok(Step::Done(d));
        }
        match decode_one(src, s, dst, d)? {
            ControlFlow::Continue(next) => (s, d) = next,
            ControlFlow::Break(full) => return Ok(full),
        }
    }
}

/// Decodes the element whose tag is at `src[s]` into `dst` at `d`, checking every bound;
/// returns the positions after it, or where it does not fit in `dst`.
#[inline(never)]
fn decode_one(
    src: &[u8],
    mut s: usize,
    dst: &mut [u8],
    d: usize,
) -> Result<ControlFlow<Step, (usize, usize)>> {
    let (src_len, dst_len) = (src.len(), dst.len());
    let tag_at = s;
    let tag = src[s];
    s += 1;
    let full = move |len: usize, what| {
        ControlFlow::Break(Step::Full {
            tag: tag_at,
            at: d,
            need: d + len,
            what,
        })
    };
    let (offset, len) = match tag & 0b11 {
        0b00 => {
            let mut len = usize::from(tag >> 2) + 1;
            if len > 60 {
                let extra = len - 60;
                if src_len - s < extra {
                    return Err(corrupt("truncated literal length"));
                }
                let mut value = 0u64;
                for (i, &byte) in src[s..s + extra].iter().enumerate() {
                    value |= u64::from(byte) << (8 * i);
                }
                s += extra;
                len =
                    usize::try_from(value + 1).map_err(|_| corrupt("literal length overflows"))?;
            }
            if len > src_len - s {
                return Err(corrupt("truncated literal"));
            }
            if len > dst_len - d {
                return Ok(full(len, "literal runs past the claimed length"));
            }
            dst[d..d + len].copy_from_slice(&src[s..s + len]);
            return Ok(ControlFlow::Continue((s + len, d + len)));
        }
        0b01 => {
            if s >= src_len {
                return Err(corrupt("truncated copy-1"));
            }
            let offset = (usize::from(tag >> 5) << 8) | usize::from(src[s]);
            s += 1;
            (offset, 4 + usize::from((tag >> 2) & 0b111))
        }
        0b10 => {
            if src_len - s < 2 {
                return Err(corrupt("truncated copy-2"));
            }
            let offset = usize::from(u16::from_le_bytes([src[s], src[s + 1]]));
            s += 2;
            (offset, 1 + usize::from(tag >> 2))
        }
        _ => {
            if src_len - s < 4 {
                return Err(corrupt("truncated copy-4"));
            }
            let offset = u32::from_le_bytes([src[s], src[s + 1], src[s + 2], src[s + 3]]);
            let offset = usize::try_from(offset)
                .map_err(|_| corrupt("copy offset before the output start"))?;
            s += 4;
            (offset, 1 + usize::from(tag >> 2))
        }
    };
    if len > dst_len - d {
        return Ok(full(len, "copy runs past the claimed length"));
    }
    if offset == 0 {
        return Err(corrupt("copy offset 0"));
    }
    if offset > d {
        return Err(corrupt("copy offset before the output start"));
    }
    // Moves from `d - offset`, each of all the bytes from there to where it writes: the
    // distance stays a multiple of the offset, and the moves double until `len` is done.
    let from = d - offset;
    let mut done = 0;
    while done < len {
        let n = (len - done).min(offset + done);
        dst.copy_within(from..from + n, d + done);
        done += n;
    }
    Ok(ControlFlow::Continue((s, d + len)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_every_element_kind() {
        // literal "abcd", copy-1 (o=4, l=4), copy-2 (o=8, l=8), copy-4 (o=1, l=2), literal "!".
        let stream = [
            19,
            3 << 2,
            b'a',
            b'b',
            b'c',
            b'd',
            0x01,
            4,
            (7 << 2) | 2,
            8,
            0,
            (1 << 2) | 3,
            1,
            0,
            0,
            0,
            0,
            b'!',
        ];
        assert_eq!(decompress_raw(&stream).unwrap(), b"abcdabcdabcdabcddd!");
        assert_eq!(raw_decompressed_len(&stream).unwrap(), 19);
    }

    #[test]
    fn copies_of_every_short_offset_and_length() {
        // A literal of 20 distinct bytes, then one copy-2 of (offset, len), decoded as the
        // last element and with a literal after it (the fast loop's cases are in
        // `decode_fast.rs`).
        for offset in 1..=20usize {
            for len in 1..=64usize {
                let literal = b"abcdefghijklmnopqrst";
                let mut expected = literal.to_vec();
                for i in 0..len {
                    expected.push(expected[literal.len() + i - offset]);
                }
                for tail in [0usize, 60] {
                    let mut stream = Vec::new();
                    varint::write_u64(&mut stream, (expected.len() + tail) as u64);
                    stream.push((literal.len() as u8 - 1) << 2);
                    stream.extend_from_slice(literal);
                    stream.extend_from_slice(&[(((len - 1) as u8) << 2) | 0b10, offset as u8, 0]);
                    let mut all = expected.clone();
                    if tail > 0 {
                        stream.push((tail as u8 - 1) << 2);
                        stream.extend(std::iter::repeat_n(b'z', tail));
                        all.extend(std::iter::repeat_n(b'z', tail));
                    }
                    assert_eq!(
                        decompress_raw(&stream).unwrap(),
                        all,
                        "offset {offset} len {len} tail {tail}"
                    );
                }
            }
        }
    }

    #[test]
    fn rejects_bad_offsets_and_lengths() {
        assert!(decompress_raw(&[4, 0x01, 0]).is_err()); // offset 0
        assert!(decompress_raw(&[5, 0, b'a', 0x01, 2]).is_err()); // offset beyond output
        assert!(decompress_raw(&[2, 8, b'a']).is_err()); // truncated literal
        assert!(decompress_raw(&[1, 4, b'a', b'b']).is_err()); // literal past claimed
        assert!(decompress_raw(&[3, 0, b'a']).is_err()); // ends early
        assert!(decompress_raw(&[1, 60 << 2]).is_err()); // truncated literal length
        assert!(decompress_raw(&[0xff, 0xff, 0xff, 0xff, 0x0f]).is_err()); // can't produce
        assert!(matches!(
            decompress_raw_with_limit(&[10, 0], 9),
            Err(CodecError::TooLarge { .. })
        ));
        assert_eq!(decompress_raw(&[0]).unwrap(), Vec::<u8>::new());
    }
}
