//! Packed fields: `count` unsigned integers of `b` bits each (`0 <= b <= 64`), least
//! significant bit first. Value `j` occupies bits `[j*b, (j+1)*b)` of the field, bit `p`
//! being bit `p mod 8` of byte `p / 8`; the bits after the last value are 0. A value's
//! offset follows from its position alone, which is what lets a GPU thread per value
//! unpack a field.

use super::{CodecError, NAME, Result};

/// Bytes of a packed field of `count` values of `b` bits: `ceil(count * b / 8)`.
pub const fn packed_len(count: usize, b: u32) -> usize {
    (count * b as usize).div_ceil(8)
}

/// The mask of the low `b` bits (`1 <= b <= 64`).
#[inline(always)]
fn low_bits(b: u32) -> u64 {
    u64::MAX >> (64 - b)
}

/// Appends the field of `values` at `b` bits each ([`packed_len`] bytes). Bits of a value
/// above its low `b` are dropped; `b = 0` appends nothing.
///
/// ```
/// use colzip::codec::intpack::{pack, unpack};
/// let mut field = Vec::new();
/// pack([1, 2, 3, 7], 3, &mut field);
/// // 1 = 001 in bits 0..3, 2 = 010 in bits 3..6, 3 = 011 in bits 6..9, 7 = 111 in 9..12.
/// assert_eq!(field, [0b1101_0001, 0b0000_1110]);
/// let mut back = [0u64; 4];
/// unpack(&field, 3, &mut back)?;
/// assert_eq!(back, [1, 2, 3, 7]);
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn pack<I>(values: I, b: u32, out: &mut Vec<u8>)
where
    I: IntoIterator<Item = u64>,
    I::IntoIter: ExactSizeIterator,
{
    let values = values.into_iter();
    let count = values.len();
    if b == 0 || count == 0 {
        return;
    }
    let b = b.min(64);
    let mask = low_bits(b);
    let bytes = packed_len(count, b);
    let start = out.len();
    // Whole words are written; the slack after the field is cut off at the end.
    out.resize(start + bytes + 8, 0);
    let field = &mut out[start..];
    // `acc` holds the `fill` bits not yet written, always fewer than 64.
    let mut acc = 0u64;
    let mut fill = 0u32;
    let mut at = 0;
    for value in values.take(count) {
        let value = value & mask;
        acc |= value << fill;
        fill += b;
        if fill >= 64 {
            field[at..at + 8].copy_from_slice(&acc.to_le_bytes());
            at += 8;
            fill -= 64;
            // The value's bits that did not fit in the word just written (none when
            // it ended the word: a shift by b).
            acc = value.checked_shr(b - fill).unwrap_or(0);
        }
    }
    field[at..at + 8].copy_from_slice(&acc.to_le_bytes());
    out.truncate(start + bytes);
}

/// Unpacks `out.len()` values of `b` bits from `field`, which must hold at least
/// [`packed_len`]`(out.len(), b)` bytes, with `b <= 64`.
pub fn unpack(field: &[u8], b: u32, out: &mut [u64]) -> Result<()> {
    if b > 64 {
        return Err(CodecError::invalid(NAME, format!("{b} bits per value")));
    }
    let need = packed_len(out.len(), b);
    if field.len() < need {
        return Err(CodecError::corrupt(
            NAME,
            format!(
                "a field of {} values at {b} bits needs {need} bytes, got {}",
                out.len(),
                field.len()
            ),
        ));
    }
    unpack_field(&field[..need], b, out);
    Ok(())
}

/// [`unpack`] for a field the caller checked: `b <= 64` and `field` exactly
/// `packed_len(out.len(), b)` bytes (or more).
#[inline]
pub(crate) fn unpack_field(field: &[u8], b: u32, out: &mut [u64]) {
    if b == 0 {
        out.fill(0);
        return;
    }
    let width = b as usize;
    let mask = low_bits(b);
    let len = field.len();
    // Values whose 8-byte (or 16-byte) window lies inside the field are read with one
    // load; the last few, near the end, byte by byte.
    let mut done = 0;
    if b <= 56 && len >= 8 {
        // Value j reads bytes [j*b/8, j*b/8 + 8); (j*b/8) + 8 <= len.
        let fast = out.len().min((8 * (len - 8) + 7) / width + 1);
        for (j, slot) in out[..fast].iter_mut().enumerate() {
            let p = j * width;
            let at = p >> 3;
            let word = u64::from_le_bytes(field[at..at + 8].try_into().unwrap());
            *slot = (word >> (p & 7)) & mask;
        }
        done = fast;
    } else if b > 56 && len >= 16 {
        let fast = out.len().min((8 * (len - 16) + 7) / width + 1);
        for (j, slot) in out[..fast].iter_mut().enumerate() {
            let p = j * width;
            let at = p >> 3;
            let word = u128::from_le_bytes(field[at..at + 16].try_into().unwrap());
            *slot = ((word >> (p & 7)) as u64) & mask;
        }
        done = fast;
    }
    for (k, slot) in out[done..].iter_mut().enumerate() {
        *slot = read_bits(field, (done + k) * width, mask);
    }
}

/// The `mask`-wide value at bit `p`, from the bytes there (fewer than 16 near the end).
fn read_bits(field: &[u8], p: usize, mask: u64) -> u64 {
    let at = (p >> 3).min(field.len());
    let end = (at + 16).min(field.len());
    let mut window = [0u8; 16];
    window[..end - at].copy_from_slice(&field[at..end]);
    ((u128::from_le_bytes(window) >> (p & 7)) as u64) & mask
}
