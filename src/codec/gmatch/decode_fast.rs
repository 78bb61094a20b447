//! The raw decoder's fast loop, for the elements away from both ends.
//!
//! An element whose tag lies at least [`SRC_SLOP`] bytes before the end of the elements
//! and whose output starts at least [`DST_SLOP`] bytes before the end of the output can
//! read and write that far without a check: a short literal's bytes, a copy's offset
//! bytes and everything it stores lie within those margins. So the loop moves 16, 32 or
//! 64 bytes whatever the element's length; the bytes stored past its end are rewritten
//! by the elements that follow (or, at the end, by the checked decoder in `decode.rs`).
//!
//! Its speed is set by two things:
//!
//! - **The chain from tag to tag.** The next tag's position depends on this tag's byte
//!   alone. Both candidates (a literal's, a copy's) are computed from the byte and one
//!   taken by a conditional move, without a second load (a table lookup there adds a
//!   load's latency to every element).
//! - **Branches on the element's kind.** Literals and copies alternate unpredictably in
//!   real data (a date column: a 1-byte literal among 4-byte copies), and a mispredicted
//!   branch costs more than an element. So literals and copies that do not overlap their
//!   output take one path, with the source of the move (the stream or the output) and the
//!   next position chosen by `select_unpredictable` (which the compiler keeps a
//!   conditional move). A table lookup of the tag gives the length and offset, off the
//!   chain.
//!
//! Loads from the output are 16 bytes wide where the length allows: a wider load reaches
//! into more recent stores (which then cannot forward their bytes) and more cache lines.
//!
//! The loop leaves every element it does not handle (literals over 60 bytes, copy-4
//! elements, bad offsets) to the checked decoder and returns where it stopped, so every
//! error is that decoder's.

use std::hint::select_unpredictable;

/// Bytes from a tag to the end of the elements that the fast loop needs: the tag and the
/// 64 bytes after it (a short literal's move; a copy reads the 4 bytes after its tag).
pub(super) const SRC_SLOP: usize = 65;

/// Bytes from an element's output position to the end of the output that the fast loop
/// needs: every move stays within 64 bytes of it.
pub(super) const DST_SLOP: usize = 64;

/// What a literal's entry gives as its offset: with an output position of at least 64,
/// literals (at most 60 bytes) pass the test that lets a copy through the shared path
/// (`1 <= offset <= d` and `offset >= len`), with no test of the kind.
const LITERAL_OFFSET: u64 = 64;

/// Per tag byte: bits 0..8 the element's length (a literal of up to 60 bytes, a copy-1 or
/// a copy-2), 16..32 the offset bits the tag holds (copy-1's top 3) or
/// [`LITERAL_OFFSET`], 32..64 the mask of the 4 bytes after the tag that holds the rest
/// of the offset. 0 for the tags the loop leaves to the checked decoder: literals whose
/// length follows the tag, and copy-4 (which no writer of 64 KiB blocks needs).
static TAGS: [u64; 256] = tag_table();

const fn tag_table() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut tag = 0;
    while tag < 256 {
        let upper = (tag >> 2) as u64;
        table[tag] = match tag & 0b11 {
            0b00 if upper < 60 => (upper + 1) | LITERAL_OFFSET << 16,
            0b01 => (4 + (upper & 0b111)) | ((tag as u64 >> 5) << 8) << 16 | 0xff << 32,
            0b10 => (upper + 1) | 0xffff << 32,
            _ => 0,
        };
        tag += 1;
    }
    table
}

/// For a copy that overlaps its own output (`1 <= offset < len <= 64`), indexed by the
/// offset: the mask keeping the first `offset` bytes of 16 (all of them from 16 on) ...
static PATTERN_MASK: [u128; 64] = pattern_tables().0;
/// ... the factor that repeats those `offset` bytes over 16 (disjoint bytes, no carries) ...
static PATTERN_REPEAT: [u128; 64] = pattern_tables().1;
/// ... and the distance the following 16-byte moves copy from: the smallest multiple of
/// the offset that is at least 16, so each reads bytes already final, and less than
/// `16 + offset`, so none reads before the copy's source.
static PATTERN_STEP: [usize; 64] = pattern_tables().2;

const fn pattern_tables() -> ([u128; 64], [u128; 64], [usize; 64]) {
    let mut mask = [u128::MAX; 64];
    let mut repeat = [1u128; 64];
    let mut step = [16usize; 64];
    let mut offset = 1;
    while offset < 64 {
        if offset < 16 {
            mask[offset] = (1u128 << (8 * offset)) - 1;
            let mut factor = 0u128;
            let mut shift = 0;
            while shift < 128 {
                factor |= 1 << shift;
                shift += 8 * offset;
            }
            repeat[offset] = factor;
            step[offset] = offset * 16usize.div_ceil(offset);
        } else {
            step[offset] = offset;
        }
        offset += 1;
    }
    (mask, repeat, step)
}

/// Decodes the elements of `src` from `s` into `dst` from `d` while both margins hold;
/// returns the positions of the first element it did not decode (the end of `src` when
/// it decoded them all).
///
/// `s` must be at a tag, and `dst[..d]` what the elements before it decoded to (copies
/// read it).
#[inline(always)]
pub(super) fn decode_fast(
    src: &[u8],
    mut s: usize,
    dst: &mut [u8],
    mut d: usize,
) -> (usize, usize) {
    let (Some(src_last), Some(dst_last)) = (
        src.len().checked_sub(SRC_SLOP),
        dst.len().checked_sub(DST_SLOP),
    ) else {
        return (s, d);
    };
    let src_ptr = src.as_ptr();
    let dst_ptr = dst.as_mut_ptr();
    while s <= src_last && d <= dst_last {
        // SAFETY (every access below): `s + 65 <= src.len()`, so the tag and the 64 bytes
        // after it are in `src`; `d + 64 <= dst.len()`, and every store is within 64
        // bytes of `d`. Every load from `dst` starts at or after `d - offset`, with
        // `1 <= offset <= d` checked first, and ends within those 64 bytes too. `src`
        // and `dst` are distinct borrows, so a literal's move does not overlap; a copy's
        // loads and stores all go through `dst_ptr`.
        let tag = usize::from(unsafe { *src_ptr.add(s) });
        let at = unsafe { dst_ptr.add(d) };
        let kind = tag & 0b11;
        // A literal takes its length and the tag; a copy-1 2 bytes, a copy-2 3.
        let next = select_unpredictable(kind == 0, s + (tag >> 2) + 2, s + kind + 1);
        let entry = TAGS[tag];
        let after = u32::from_le(unsafe { src_ptr.add(s + 1).cast::<u32>().read_unaligned() });
        let len = (entry & 0xff) as usize;
        let offset = ((u64::from(after) & (entry >> 32)) | ((entry >> 16) & 0xffff)) as usize;
        if offset.wrapping_sub(1) < d && offset >= len {
            // A literal, or a copy whose source ends at or before `d`: every byte it
            // reads is final, and each move loads before it stores. (Both sources are
            // computed; a literal's `d - 64` is within `dst` too.)
            let from = select_unpredictable(kind == 0, unsafe { src_ptr.add(s + 1) }, unsafe {
                at.sub(offset).cast_const()
            });
            unsafe {
                if len <= 16 {
                    move16(from, at);
                } else {
                    move32(from, at);
                    if len > 32 {
                        move32(from.add(32), at.add(32));
                    }
                }
            }
        } else if entry == 0 {
            break;
        } else if kind == 0 {
            // A literal within the output's first 64 bytes.
            unsafe {
                move32(src_ptr.add(s + 1), at);
                move32(src_ptr.add(s + 33), at.add(32));
            }
        } else if offset == 0 || offset > d {
            break;
        } else {
            // A copy that overlaps its output: the first 16 bytes are the `offset` bytes
            // before `d` repeated, then 16-byte moves from a multiple of the offset back,
            // 64 bytes in all.
            debug_assert!(offset < len && len <= 64);
            let offset = offset & 63;
            unsafe {
                let word = u128::from_le_bytes(at.sub(offset).cast::<[u8; 16]>().read_unaligned());
                let first = (word & PATTERN_MASK[offset]).wrapping_mul(PATTERN_REPEAT[offset]);
                let first = first.to_le_bytes();
                at.cast::<[u8; 16]>().write_unaligned(first);
                let step = PATTERN_STEP[offset];
                if step == 16 {
                    // The pattern repeats every 16 bytes (offsets 1, 2, 4, 8, 16): stores
                    // of the register, not loads of the bytes just stored.
                    at.add(16).cast::<[u8; 16]>().write_unaligned(first);
                    at.add(32).cast::<[u8; 16]>().write_unaligned(first);
                    at.add(48).cast::<[u8; 16]>().write_unaligned(first);
                } else {
                    move16(at.add(16).sub(step), at.add(16));
                    move16(at.add(32).sub(step), at.add(32));
                    move16(at.add(48).sub(step), at.add(48));
                }
            }
        }
        s = next;
        d += len;
    }
    (s, d)
}

/// Moves 16 bytes.
///
/// # Safety
/// `from..from + 16` readable, `to..to + 16` writable.
#[inline(always)]
unsafe fn move16(from: *const u8, to: *mut u8) {
    // SAFETY: the caller's.
    unsafe {
        let bytes = from.cast::<[u8; 16]>().read_unaligned();
        to.cast::<[u8; 16]>().write_unaligned(bytes);
    }
}

/// Moves 32 bytes, all loaded before any is stored.
///
/// # Safety
/// `from..from + 32` readable, `to..to + 32` writable.
#[inline(always)]
unsafe fn move32(from: *const u8, to: *mut u8) {
    // SAFETY: the caller's.
    unsafe {
        let bytes = from.cast::<[u8; 32]>().read_unaligned();
        to.cast::<[u8; 32]>().write_unaligned(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::super::super::varint;
    use super::super::decode::{decompress_raw, decompress_raw_into};

    /// The Snappy raw format decoded the plain way, one byte at a time: the reference.
    fn reference(stream: &[u8]) -> Option<Vec<u8>> {
        let (len, header) = varint::read_u32(stream, "test").ok()?;
        let len = len as usize;
        let mut out = Vec::new();
        let mut s = header;
        while s < stream.len() {
            let tag = stream[s];
            s += 1;
            let upper = usize::from(tag >> 2);
            let (offset, n) = match tag & 0b11 {
                0 => {
                    let mut n = upper + 1;
                    if n > 60 {
                        let extra = n - 60;
                        let bytes = stream.get(s..s + extra)?;
                        n = bytes
                            .iter()
                            .rev()
                            .fold(0usize, |v, &b| v << 8 | usize::from(b))
                            + 1;
                        s += extra;
                    }
                    out.extend_from_slice(stream.get(s..s.checked_add(n)?)?);
                    s += n;
                    if out.len() > len {
                        return None;
                    }
                    continue;
                }
                1 => (
                    usize::from(tag >> 5) << 8 | usize::from(*stream.get(s)?),
                    4 + (upper & 7),
                ),
                2 => (
                    usize::from(u16::from_le_bytes(stream.get(s..s + 2)?.try_into().ok()?)),
                    upper + 1,
                ),
                _ => (
                    u32::from_le_bytes(stream.get(s..s + 4)?.try_into().ok()?) as usize,
                    upper + 1,
                ),
            };
            s += [0, 1, 2, 4][usize::from(tag & 0b11)];
            if offset == 0 || offset > out.len() || out.len() + n > len {
                return None;
            }
            for _ in 0..n {
                out.push(out[out.len() - offset]);
            }
        }
        (out.len() == len).then_some(out)
    }

    /// Both ways in (the growing decoder and decoding in place) against the reference:
    /// the same bytes, or both refusing.
    fn check(stream: &[u8], what: &str) {
        let expected = reference(stream);
        let got = decompress_raw(stream).ok();
        assert_eq!(got, expected, "{what}");
        if let Some(expected) = &expected {
            let mut out = vec![0xa5; expected.len()];
            decompress_raw_into(stream, &mut out).unwrap();
            assert_eq!(&out, expected, "{what} (in place)");
        }
    }

    fn literal(out: &mut Vec<u8>, bytes: &[u8]) {
        let n = bytes.len() - 1;
        if n < 60 {
            out.push((n as u8) << 2);
        } else {
            let extra = (usize::BITS - n.leading_zeros()).div_ceil(8) as usize;
            out.push(((59 + extra) as u8) << 2);
            out.extend_from_slice(&n.to_le_bytes()[..extra]);
        }
        out.extend_from_slice(bytes);
    }

    fn copy(out: &mut Vec<u8>, kind: u8, offset: usize, len: usize) {
        match kind {
            1 => out.extend_from_slice(&[
                ((offset >> 8) as u8) << 5 | ((len - 4) as u8) << 2 | 1,
                offset as u8,
            ]),
            2 => {
                out.push(((len - 1) as u8) << 2 | 2);
                out.extend_from_slice(&(offset as u16).to_le_bytes());
            }
            _ => {
                out.push(((len - 1) as u8) << 2 | 3);
                out.extend_from_slice(&(offset as u32).to_le_bytes());
            }
        }
    }

    fn stream_of(claimed: usize, elements: &[u8]) -> Vec<u8> {
        let mut stream = Vec::new();
        varint::write_u64(&mut stream, claimed as u64);
        stream.extend_from_slice(elements);
        stream
    }

    /// Literal bytes, varied so that a copy from the wrong place shows.
    fn bytes(len: usize, seed: usize) -> Vec<u8> {
        (0..len)
            .map(|i| (i * 7 + seed * 13 + (i >> 3)) as u8)
            .collect()
    }

    #[test]
    fn every_element_at_every_distance_from_both_ends() {
        // A literal of `head` bytes, the element under test, then a tail that leaves it a
        // chosen distance from the end of the output (literal bytes, which count in the
        // stream too) or of the stream (copies of 64 bytes, 3 stream bytes each), across
        // the fast loop's margins. Copies reaching before the output start are refused.
        let heads = [1usize, 64, 100];
        let mut elements = Vec::new();
        for len in (1..=70).chain([255, 256, 300]) {
            elements.push((0u8, 0usize, len));
        }
        for offset in (1..=20).chain([31, 32, 33, 47, 48, 63, 64, 65, 100, 101, 2047]) {
            for len in 1..=64 {
                elements.push((2, offset, len));
                elements.push((3, offset, len));
                if (4..=11).contains(&len) && offset < 2048 {
                    elements.push((1, offset, len));
                }
            }
        }
        for &(kind, offset, len) in &elements {
            for &head in &heads {
                let tails = (0..=66).map(|t| (t, 0)).chain((1..=22).map(|t| (t, 1)));
                for (tail, tail_kind) in tails {
                    let mut body = Vec::new();
                    literal(&mut body, &bytes(head, tail));
                    let mut produced = head;
                    if kind == 0 {
                        literal(&mut body, &bytes(len, len));
                    } else {
                        copy(&mut body, kind, offset, len);
                    }
                    produced += len;
                    if tail_kind == 0 {
                        if tail > 0 {
                            literal(&mut body, &bytes(tail, 3));
                            produced += tail;
                        }
                    } else {
                        for _ in 0..tail {
                            copy(&mut body, 2, 1, 64);
                            produced += 64;
                        }
                    }
                    let what = format!(
                        "kind {kind} offset {offset} len {len} head {head} tail {tail}/{tail_kind}"
                    );
                    check(&stream_of(produced, &body), &what);
                    if tail == 0 {
                        // Claims one byte more or less than the elements produce.
                        check(&stream_of(produced + 1, &body), &what);
                        check(&stream_of(produced - 1, &body), &what);
                    }
                }
            }
        }
    }

    #[test]
    fn random_element_sequences() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..20_000 {
            let mut body = Vec::new();
            let mut produced = 0;
            for _ in 0..next(40) {
                match next(8) {
                    0..=2 => {
                        let most = if next(4) == 0 { 300 } else { 40 };
                        let len = 1 + next(most);
                        literal(&mut body, &bytes(len, round));
                        produced += len;
                    }
                    kind => {
                        let kind = [1, 2, 2, 2, 3][kind - 3];
                        let len = if kind == 1 { 4 + next(8) } else { 1 + next(64) };
                        // Mostly valid offsets, some 0 or beyond the output.
                        let offset = match next(20) {
                            0 => 0,
                            1 => produced + 1 + next(3),
                            _ if produced == 0 => 1,
                            _ if next(2) == 0 => 1 + next(produced.min(20)),
                            _ => 1 + next(produced.min(2047)),
                        };
                        copy(&mut body, kind, offset, len);
                        produced += len;
                    }
                }
            }
            let claimed = match next(10) {
                0 => produced.saturating_sub(1 + next(5)),
                1 => produced + 1 + next(5),
                _ => produced,
            };
            let stream = stream_of(claimed, &body);
            check(&stream, &format!("round {round}"));
            let cut = next(stream.len() + 1);
            check(&stream[..cut], &format!("round {round} cut at {cut}"));
        }
    }
}
