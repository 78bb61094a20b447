//! A frame's fields decoded straight into the output: each `b`-bit field unpacked, the
//! frame's `ref` added and the `W`-byte value stored in one pass, with no intermediate
//! array of fields. The vector kernels decode the frame where the CPU has them and the
//! width suits their lanes ([`super::simd_x86`]); the scalar loop here everywhere else.

use super::word::Word;

/// Writes `ref + field[j]` (wrapping) for every value `j` of `out` (`out.len() / W`
/// values of `T::BYTES` bytes). `field` must hold at least
/// [`packed_len`](super::bits::packed_len)`(out.len() / W, b)` bytes and `b <= 8W`; the
/// callers check both against the stream before calling.
#[inline]
pub(crate) fn unpack_frame_into<T: Word>(field: &[u8], b: u32, reference: T, out: &mut [u8]) {
    debug_assert!(b <= T::BITS);
    debug_assert!(field.len() >= super::bits::packed_len(out.len() / T::BYTES, b));
    if b == 0 {
        for slot in out.chunks_exact_mut(T::BYTES) {
            reference.store(slot);
        }
        return;
    }
    if !unpack_frame_vector(field, b, reference, out) {
        unpack_frame_scalar(field, b, reference, out);
    }
}

/// Whether the vector kernels decoded the frame (`false`, nothing written, where they do
/// not apply: another CPU, another width, or `b` too wide for their lanes).
#[inline]
fn unpack_frame_vector<T: Word>(field: &[u8], b: u32, reference: T, out: &mut [u8]) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        super::simd_x86::unpack_frame(field, b, reference, out)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (field, b, reference, out);
        false
    }
}

/// The scalar loop: one unaligned 8-byte window per value
/// (16 bytes when `b > 56`), and a zero-padded window for the last few near the field's
/// end.
fn unpack_frame_scalar<T: Word>(field: &[u8], b: u32, reference: T, out: &mut [u8]) {
    let width = b as usize;
    let mask = u64::MAX >> (64 - b);
    let len = field.len();
    let slots = out.chunks_exact_mut(T::BYTES).enumerate();
    // Value j's window [j*b/8, j*b/8 + 8) lies inside the field for j < fast.
    let fast = if b <= 56 && len >= 8 {
        (8 * (len - 8) + 7) / width + 1
    } else if b > 56 && len >= 16 {
        (8 * (len - 16) + 7) / width + 1
    } else {
        0
    };
    for (j, slot) in slots {
        let p = j * width;
        let at = p >> 3;
        let u = if j < fast && b <= 56 {
            let window = u64::from_le_bytes(field[at..at + 8].try_into().unwrap());
            (window >> (p & 7)) & mask
        } else if j < fast {
            let window = u128::from_le_bytes(field[at..at + 16].try_into().unwrap());
            ((window >> (p & 7)) as u64) & mask
        } else {
            read_bits_padded(field, p, mask)
        };
        reference.add(T::from_u64(u)).store(slot);
    }
}

/// The `mask`-wide value at bit `p`, from the bytes there (fewer than 16 near the end).
fn read_bits_padded(field: &[u8], p: usize, mask: u64) -> u64 {
    let at = (p >> 3).min(field.len());
    let end = (at + 16).min(field.len());
    let mut window = [0u8; 16];
    window[..end - at].copy_from_slice(&field[at..end]);
    ((u128::from_le_bytes(window) >> (p & 7)) as u64) & mask
}

/// Turns `out`, holding `first` in its first value and the differences after it, into the
/// running sums: value `j` becomes `first + d[1] + ... + d[j]` (wrapping).
#[inline]
pub(crate) fn prefix_sum_in_place<T: Word>(out: &mut [u8]) {
    let mut slots = out.chunks_exact_mut(T::BYTES);
    let Some(head) = slots.next() else { return };
    let mut x = T::load(head);
    for slot in slots {
        x = x.add(T::load(slot));
        x.store(slot);
    }
}
