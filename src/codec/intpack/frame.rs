//! Frames and delta frames, the two shapes every scheme's values take.
//!
//! A frame of `c` values of `w` bytes is `b: u8 | ref: w bytes | pack(x - ref, b)` with
//! `ref` the minimum in signed order and `b = bits(max - ref)`; a frame of no values is
//! `b = 0` and a `ref` of zeros (which a decoder ignores). A delta frame of `c >= 1`
//! values is the first value followed by the frame of the `c - 1` differences.

use super::bits::{pack, packed_len, unpack_field};
use super::fused::{prefix_sum_in_place, unpack_frame_into};
use super::word::Word;

/// Bytes of a frame of `count` values of `w` bytes whose fields take `b` bits:
/// `1 + w + ceil(count * b / 8)`.
///
/// ```
/// use colzip::codec::intpack::{delta_frame_len, frame_len};
/// // 1024 quantities of 1..=50 in 8-byte integers: 6 bits each.
/// assert_eq!(frame_len(1024, 8, 6), 1 + 8 + 768);
/// // 1024 consecutive keys: the first, then 1023 differences all equal to the ref.
/// assert_eq!(delta_frame_len(1024, 8, 0), 8 + 1 + 8);
/// ```
pub const fn frame_len(count: usize, w: usize, b: u32) -> usize {
    1 + w + packed_len(count, b)
}

/// Bytes of a delta frame of `count >= 1` values of `w` bytes whose differences take `b`
/// bits: `w + frame_len(count - 1, w, b)`.
pub const fn delta_frame_len(count: usize, w: usize, b: u32) -> usize {
    w + frame_len(count.saturating_sub(1), w, b)
}

/// The `b` of a frame whose values (in ordered form, [`Word::flip`]) lie in `min..=max`.
#[inline(always)]
pub(crate) fn frame_bits<T: Word>(min: T, max: T) -> u32 {
    max.sub(min).bits()
}

/// Appends `value`, little-endian.
#[inline(always)]
pub(crate) fn push_word<T: Word>(out: &mut Vec<u8>, value: T) {
    let mut bytes = [0u8; 8];
    value.store(&mut bytes);
    out.extend_from_slice(&bytes[..T::BYTES]);
}

/// Appends the frame of values given in ordered form, whose minimum and maximum are `min`
/// and `max` (an empty iterator with any `min == max` writes the frame of no values).
pub(crate) fn write_frame<T: Word>(
    out: &mut Vec<u8>,
    min: T,
    max: T,
    ordered: impl ExactSizeIterator<Item = T>,
) {
    let b = frame_bits(min, max);
    out.push(b as u8);
    push_word(out, min.flip());
    pack(ordered.map(|v| v.sub(min).to_u64()), b, out);
}

/// Appends the frame of no values: `b = 0` and a `ref` of zeros.
pub(crate) fn write_empty_frame<T: Word>(out: &mut Vec<u8>) {
    out.push(0);
    push_word(out, T::default());
}

/// Reads one `T` at `*at`, moving past it.
#[inline]
pub(crate) fn read_word<T: Word>(
    block: &[u8],
    at: &mut usize,
) -> std::result::Result<T, &'static str> {
    let bytes = block
        .get(*at..*at + T::BYTES)
        .ok_or("block ends inside a value")?;
    *at += T::BYTES;
    Ok(T::load(bytes))
}

/// Reads the frame of `fields.len()` values at `*at` in `block`, moving past it: returns
/// its `ref` and leaves the unpacked fields (`x - ref`) in `fields`.
pub(crate) fn read_frame<T: Word>(
    block: &[u8],
    at: &mut usize,
    fields: &mut [u64],
) -> std::result::Result<T, &'static str> {
    let (b, reference, field) = read_frame_parts::<T>(block, at, fields.len())?;
    unpack_field(field, b, fields);
    Ok(reference)
}

/// Reads the frame of `out.len() / W` values at `*at` in `block`, moving past it, and
/// writes its values (`ref` plus each field) straight into `out`.
pub(crate) fn read_frame_into<T: Word>(
    block: &[u8],
    at: &mut usize,
    out: &mut [u8],
) -> std::result::Result<(), &'static str> {
    let (b, reference, field) = read_frame_parts::<T>(block, at, out.len() / T::BYTES)?;
    unpack_frame_into(field, b, reference, out);
    Ok(())
}

/// Reads the delta frame of `out.len() / W >= 1` values at `*at` in `block`, moving past
/// it, and writes its values straight into `out`: the first value, `ref` plus each
/// difference's field in every later slot, then the running sums in place (value `j` is
/// the first plus the sum of `ref + field` up to `j`).
pub(crate) fn read_delta_frame_into<T: Word>(
    block: &[u8],
    at: &mut usize,
    out: &mut [u8],
) -> std::result::Result<(), &'static str> {
    let first = read_word::<T>(block, at)?;
    let (head, rest) = out.split_at_mut(T::BYTES);
    first.store(head);
    read_frame_into::<T>(block, at, rest)?;
    prefix_sum_in_place::<T>(out);
    Ok(())
}

/// The `b`, `ref` and packed field of the frame of `count` values at `*at`, checked
/// against the block's bytes and the width; moves `*at` past the frame.
fn read_frame_parts<'a, T: Word>(
    block: &'a [u8],
    at: &mut usize,
    count: usize,
) -> std::result::Result<(u32, T, &'a [u8]), &'static str> {
    let b = u32::from(*block.get(*at).ok_or("block ends before a frame")?);
    if b > T::BITS {
        return Err("frame's b larger than 8w");
    }
    if count == 0 && b != 0 {
        return Err("frame of no values with b > 0");
    }
    *at += 1;
    let reference = read_word::<T>(block, at)?;
    let end = *at + packed_len(count, b);
    let field = block
        .get(*at..end)
        .ok_or("block ends inside a packed field")?;
    *at = end;
    Ok((b, reference, field))
}
