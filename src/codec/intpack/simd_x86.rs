//! AVX2 kernels for frames of 4- and 8-byte values: 8 fields of `b` bits are exactly `b`
//! bytes, so each group of 8 values starts on a byte and every lane's byte offset and bit
//! shift within the group depend on `b` alone (tables built at compile time). Per group:
//! two 16-byte loads per vector, a byte shuffle placing each lane's bytes, a per-lane
//! shift, a mask, the reference added, one 32-byte store.
//!
//! 4-byte lanes hold a field whose shift (at most 7) plus `b` fits 32 bits: `b <= 25`.
//! 8-byte lanes: `b <= 56`. Wider fields, 1- and 2-byte values (AVX2 has no per-lane
//! shift of 16-bit lanes) and CPUs without AVX2 take the scalar loop.

use std::arch::x86_64::{
    __m256i, _mm_loadu_si128, _mm256_add_epi32, _mm256_add_epi64, _mm256_and_si256,
    _mm256_castsi128_si256, _mm256_inserti128_si256, _mm256_loadu_si256, _mm256_set1_epi32,
    _mm256_set1_epi64x, _mm256_shuffle_epi8, _mm256_srlv_epi32, _mm256_srlv_epi64,
    _mm256_storeu_si256,
};

use super::word::Word;

/// Widest field of 4-byte lanes and of 8-byte lanes.
const MAX_BITS_32: u32 = 25;
const MAX_BITS_64: u32 = 56;

/// Bytes of the staging buffers the last groups of a frame go through: 8 groups of the
/// widest fields plus a load's reach (`7 * 56 + 42 + 16 = 450`), and 64 values of 8 bytes.
const STAGE: usize = 512;

/// Decodes the whole frame with the vector kernels and returns `true`, or returns `false`
/// (writing nothing) where they do not apply. Preconditions as
/// [`super::fused::unpack_frame_into`], with `b >= 1`.
#[inline]
pub(crate) fn unpack_frame<T: Word>(field: &[u8], b: u32, reference: T, out: &mut [u8]) -> bool {
    let lanes_fit = match T::BYTES {
        4 => b <= MAX_BITS_32,
        8 => b <= MAX_BITS_64,
        _ => false,
    };
    if !lanes_fit || !std::arch::is_x86_feature_detected!("avx2") {
        return false;
    }
    let reference = reference.to_u64();
    let step = b as usize;
    let n = out.len() / T::BYTES;
    let reach = group_reach(b, T::BYTES);
    let by_field = if field.len() >= reach {
        (field.len() - reach) / step + 1
    } else {
        0
    };
    let groups = by_field.min(n / 8);
    // SAFETY: AVX2 is present (checked above). Group g reads field[g*b .. g*b + reach),
    // inside the field for g < by_field, and writes out[g*8W .. (g+1)*8W), inside `out`
    // for g < n / 8.
    unsafe { frame_groups::<T>(field.as_ptr(), b, reference, out.as_mut_ptr(), groups) };
    // The last values, whose loads would pass the field's end: up to 64 at a time from a
    // zero-padded copy of their bytes into a staging buffer.
    let mut done = 8 * groups;
    while done < n {
        let at = done * step / 8;
        let mut padded = [0u8; STAGE];
        let take = (field.len() - at).min(STAGE);
        padded[..take].copy_from_slice(&field[at..at + take]);
        let values = (n - done).min(64);
        let mut staged = [0u8; STAGE];
        let groups = values.div_ceil(8);
        // SAFETY: AVX2 is present; at most 8 groups read (8 - 1) * b + reach <= 450
        // bytes of `padded` and write 8 * 8W <= 512 bytes of `staged`.
        unsafe { frame_groups::<T>(padded.as_ptr(), b, reference, staged.as_mut_ptr(), groups) };
        let bytes = values * T::BYTES;
        out[done * T::BYTES..][..bytes].copy_from_slice(&staged[..bytes]);
        done += values;
    }
    true
}

/// The kernel of `T`'s width.
///
/// # Safety
/// As [`frame_groups_u32`] or [`frame_groups_u64`], whichever `T::BYTES` selects.
#[inline]
unsafe fn frame_groups<T: Word>(
    src: *const u8,
    b: u32,
    reference: u64,
    dst: *mut u8,
    groups: usize,
) {
    // SAFETY: the caller's.
    unsafe {
        if T::BYTES == 4 {
            frame_groups_u32(src, b, reference as u32, dst, groups);
        } else {
            frame_groups_u64(src, b, reference, dst, groups);
        }
    }
}

/// Bytes a group's loads read from the group's first byte: the last 16-byte load starts
/// at the byte of the 4th field (4-byte lanes) or the 6th (8-byte lanes).
const fn group_reach(b: u32, lane_bytes: usize) -> usize {
    let last_half = if lane_bytes == 4 { 4 } else { 6 };
    last_half * b as usize / 8 + 16
}

/// Byte shuffle and shifts placing fields `first..first + 16 / lane_bytes * 2` of a group
/// into lanes of `lane_bytes` bytes: each 16-byte half of the vector is loaded from the
/// byte of the half's first field (`half_at`, from the group's first byte), and a lane
/// takes `lane_bytes` bytes from its field's first byte, shifted right by the field's bit.
#[derive(Clone, Copy)]
struct Lanes {
    shuffle: [u8; 32],
    /// As 8 lanes of 4 bytes or 4 lanes of 8 bytes, little-endian.
    shifts: [u8; 32],
    half_at: [usize; 2],
}

const fn lanes(b: u32, first: usize, lane_bytes: usize) -> Lanes {
    let per_half = 16 / lane_bytes;
    let mut lanes = Lanes {
        shuffle: [0; 32],
        shifts: [0; 32],
        half_at: [0; 2],
    };
    let mut half = 0;
    while half < 2 {
        let half_first = first + half * per_half;
        let base = half_first * b as usize / 8;
        lanes.half_at[half] = base;
        let mut lane = 0;
        while lane < per_half {
            let bit = (half_first + lane) * b as usize;
            let start = bit / 8 - base;
            let at = 16 * half + lane * lane_bytes;
            let mut byte = 0;
            while byte < lane_bytes {
                // Below 16 for the widths allowed: a 4-byte lane starts at most
                // 3 * 25 / 8 = 9 bytes into its half, an 8-byte one 56 / 8 = 7.
                lanes.shuffle[at + byte] = (start + byte) as u8;
                byte += 1;
            }
            lanes.shifts[at] = (bit % 8) as u8;
            lane += 1;
        }
        half += 1;
    }
    lanes
}

/// [`lanes`] of 4-byte lanes for every `b` up to [`MAX_BITS_32`].
static LANES_32: [Lanes; MAX_BITS_32 as usize + 1] = {
    let mut table = [lanes(0, 0, 4); MAX_BITS_32 as usize + 1];
    let mut b = 1;
    while b < table.len() {
        table[b] = lanes(b as u32, 0, 4);
        b += 1;
    }
    table
};

/// [`lanes`] of 8-byte lanes for the first and the last 4 fields of a group, for every
/// `b` up to [`MAX_BITS_64`].
static LANES_64: [[Lanes; 2]; MAX_BITS_64 as usize + 1] = {
    let mut table = [[lanes(0, 0, 8); 2]; MAX_BITS_64 as usize + 1];
    let mut b = 1;
    while b < table.len() {
        table[b] = [lanes(b as u32, 0, 8), lanes(b as u32, 4, 8)];
        b += 1;
    }
    table
};

/// Loads the two 16-byte halves at `at + half_at[0]` and `at + half_at[1]`.
///
/// # Safety
/// AVX2, and 16 readable bytes at both addresses.
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn load_halves(at: *const u8, half_at: [usize; 2]) -> __m256i {
    // SAFETY: the caller's.
    unsafe {
        let low = _mm_loadu_si128(at.add(half_at[0]).cast());
        let high = _mm_loadu_si128(at.add(half_at[1]).cast());
        _mm256_inserti128_si256::<1>(_mm256_castsi128_si256(low), high)
    }
}

/// `groups` groups of 8 fields of `1 <= b <= 25` bits at `src` into 4-byte values plus
/// `reference` at `dst`.
///
/// # Safety
/// AVX2; `src` readable for `(groups - 1) * b + group_reach(b, 4)` bytes and `dst`
/// writable for `32 * groups` (nothing is touched when `groups` is 0).
#[target_feature(enable = "avx2")]
unsafe fn frame_groups_u32(src: *const u8, b: u32, reference: u32, dst: *mut u8, groups: usize) {
    let lanes = &LANES_32[b as usize];
    // SAFETY: the loads and stores stay inside the ranges the caller guarantees; the
    // table loads read 32-byte arrays.
    unsafe {
        let shuffle = _mm256_loadu_si256(lanes.shuffle.as_ptr().cast());
        let shifts = _mm256_loadu_si256(lanes.shifts.as_ptr().cast());
        let mask = _mm256_set1_epi32((u32::MAX >> (32 - b)) as i32);
        let reference = _mm256_set1_epi32(reference as i32);
        for g in 0..groups {
            let bytes = load_halves(src.add(g * b as usize), lanes.half_at);
            let fields = _mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, shuffle), shifts);
            let values = _mm256_add_epi32(_mm256_and_si256(fields, mask), reference);
            _mm256_storeu_si256(dst.add(32 * g).cast(), values);
        }
    }
}

/// `groups` groups of 8 fields of `1 <= b <= 56` bits at `src` into 8-byte values plus
/// `reference` at `dst`.
///
/// # Safety
/// AVX2; `src` readable for `(groups - 1) * b + group_reach(b, 8)` bytes and `dst`
/// writable for `64 * groups` (nothing is touched when `groups` is 0).
#[target_feature(enable = "avx2")]
unsafe fn frame_groups_u64(src: *const u8, b: u32, reference: u64, dst: *mut u8, groups: usize) {
    let [front, back] = &LANES_64[b as usize];
    // SAFETY: as in `frame_groups_u32`.
    unsafe {
        let shuffle_front = _mm256_loadu_si256(front.shuffle.as_ptr().cast());
        let shuffle_back = _mm256_loadu_si256(back.shuffle.as_ptr().cast());
        let shifts_front = _mm256_loadu_si256(front.shifts.as_ptr().cast());
        let shifts_back = _mm256_loadu_si256(back.shifts.as_ptr().cast());
        let mask = _mm256_set1_epi64x((u64::MAX >> (64 - b)) as i64);
        let reference = _mm256_set1_epi64x(reference as i64);
        for g in 0..groups {
            let at = src.add(g * b as usize);
            let bytes = load_halves(at, front.half_at);
            let fields = _mm256_srlv_epi64(_mm256_shuffle_epi8(bytes, shuffle_front), shifts_front);
            let values = _mm256_add_epi64(_mm256_and_si256(fields, mask), reference);
            _mm256_storeu_si256(dst.add(64 * g).cast(), values);
            let bytes = load_halves(at, back.half_at);
            let fields = _mm256_srlv_epi64(_mm256_shuffle_epi8(bytes, shuffle_back), shifts_back);
            let values = _mm256_add_epi64(_mm256_and_si256(fields, mask), reference);
            _mm256_storeu_si256(dst.add(64 * g + 32).cast(), values);
        }
    }
}
