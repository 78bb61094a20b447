//! AVX2 kernels for frames of 4- and 8-byte values: 8 fields of `b` bits are exactly `b`
//! bytes, so each group of 8 values starts on a byte and every lane's byte offset and bit
//! shift within the group depend on `b` alone. They are computed once per frame; per
//! group, two 16-byte loads per half-vector, a byte shuffle placing each lane's bytes,
//! a per-lane shift, a mask, the reference added, one 32-byte store.
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

/// Writes as many whole groups of 8 values of `out` as the field's bytes allow the
/// kernels' 16-byte loads to read, and returns the values written (0 where the kernels do
/// not apply). Preconditions as [`super::fused::unpack_frame_into`], with `b >= 1`.
#[inline]
pub(crate) fn unpack_frame_groups<T: Word>(
    field: &[u8],
    b: u32,
    reference: T,
    out: &mut [u8],
) -> usize {
    let lanes_fit = match T::BYTES {
        4 => b <= MAX_BITS_32,
        8 => b <= MAX_BITS_64,
        _ => false,
    };
    if !lanes_fit || !std::arch::is_x86_feature_detected!("avx2") {
        return 0;
    }
    let step = b as usize;
    // The last byte a group's loads read, from the group's start: the last half-vector's
    // first byte (the 4th of 8 values, or the 6th for 8-byte lanes) plus 16.
    let reach = if T::BYTES == 4 {
        4 * step / 8
    } else {
        6 * step / 8
    } + 16;
    let by_field = if field.len() >= reach {
        (field.len() - reach) / step + 1
    } else {
        0
    };
    let groups = by_field.min(out.len() / (8 * T::BYTES));
    if groups == 0 {
        return 0;
    }
    // SAFETY: AVX2 is present (checked above). Group g reads field[g*b .. g*b + reach),
    // inside the field for g < by_field, and writes out[g*8W .. (g+1)*8W), inside `out`
    // for g < out.len() / 8W; `groups` is the smaller of the two.
    unsafe {
        if T::BYTES == 4 {
            frame_groups_u32(field, b, reference.to_u64() as u32, out, groups);
        } else {
            frame_groups_u64(field, b, reference.to_u64(), out, groups);
        }
    }
    8 * groups
}

/// Byte shuffle and shifts placing fields `first..first + lanes` of a group of 8 into
/// lanes of `lane_bytes` bytes: each 16-byte half of the vector is loaded from the byte
/// of the half's first field (its offset from the group is returned), and a lane takes
/// `lane_bytes` bytes from its field's first byte, shifted right by the field's bit.
struct Lanes {
    shuffle: [u8; 32],
    shifts: [u64; 4],
    shifts32: [u32; 8],
    half_at: [usize; 2],
}

fn lanes(b: u32, first: usize, lane_bytes: usize) -> Lanes {
    let per_half = 16 / lane_bytes;
    let mut lanes = Lanes {
        shuffle: [0; 32],
        shifts: [0; 4],
        shifts32: [0; 8],
        half_at: [0; 2],
    };
    for half in 0..2 {
        let half_first = first + half * per_half;
        let base = half_first * b as usize / 8;
        lanes.half_at[half] = base;
        for lane in 0..per_half {
            let bit = (half_first + lane) * b as usize;
            let start = bit / 8 - base;
            let index = half * per_half + lane;
            for byte in 0..lane_bytes {
                // Within 16: the lane's last byte is at most its field's shift (< 8) plus
                // b bits past the half's first byte, checked by the widths allowed.
                lanes.shuffle[16 * half + lane * lane_bytes + byte] = (start + byte) as u8;
            }
            if lane_bytes == 4 {
                lanes.shifts32[index] = (bit % 8) as u32;
            } else {
                lanes.shifts[index] = (bit % 8) as u64;
            }
        }
    }
    lanes
}

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

/// `groups` groups of 8 fields of `b <= 25` bits into 4-byte values plus `reference`.
///
/// # Safety
/// AVX2; `field` holds `(groups - 1) * b + b/2 + 16` bytes and `out` `32 * groups`.
#[target_feature(enable = "avx2")]
unsafe fn frame_groups_u32(field: &[u8], b: u32, reference: u32, out: &mut [u8], groups: usize) {
    let lanes = lanes(b, 0, 4);
    // SAFETY: the loads and stores stay inside the ranges the caller guarantees; the
    // table loads read the 32-byte arrays of `lanes`.
    unsafe {
        let shuffle = _mm256_loadu_si256(lanes.shuffle.as_ptr().cast());
        let shifts = _mm256_loadu_si256(lanes.shifts32.as_ptr().cast());
        let mask = _mm256_set1_epi32((u32::MAX >> (32 - b)) as i32);
        let reference = _mm256_set1_epi32(reference as i32);
        let (src, dst) = (field.as_ptr(), out.as_mut_ptr());
        for g in 0..groups {
            let bytes = load_halves(src.add(g * b as usize), lanes.half_at);
            let fields = _mm256_srlv_epi32(_mm256_shuffle_epi8(bytes, shuffle), shifts);
            let values = _mm256_add_epi32(_mm256_and_si256(fields, mask), reference);
            _mm256_storeu_si256(dst.add(32 * g).cast(), values);
        }
    }
}

/// `groups` groups of 8 fields of `b <= 56` bits into 8-byte values plus `reference`.
///
/// # Safety
/// AVX2; `field` holds `(groups - 1) * b + 6b/8 + 16` bytes and `out` `64 * groups`.
#[target_feature(enable = "avx2")]
unsafe fn frame_groups_u64(field: &[u8], b: u32, reference: u64, out: &mut [u8], groups: usize) {
    let (front, back) = (lanes(b, 0, 8), lanes(b, 4, 8));
    // SAFETY: as in `frame_groups_u32`.
    unsafe {
        let shuffle_front = _mm256_loadu_si256(front.shuffle.as_ptr().cast());
        let shuffle_back = _mm256_loadu_si256(back.shuffle.as_ptr().cast());
        let shifts_front = _mm256_loadu_si256(front.shifts.as_ptr().cast());
        let shifts_back = _mm256_loadu_si256(back.shifts.as_ptr().cast());
        let mask = _mm256_set1_epi64x((u64::MAX >> (64 - b)) as i64);
        let reference = _mm256_set1_epi64x(reference as i64);
        let (src, dst) = (field.as_ptr(), out.as_mut_ptr());
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
