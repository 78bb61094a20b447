//! Values of `W` bytes as Rust integers of that width. The format's arithmetic is modulo
//! `2^(8W)` (wrapping) and its order is the signed one. The encoder's analysis works on
//! the signed integers (`i8`..`i64`), whose order is the format's; the decoder and the
//! 2-byte run lengths use the unsigned ones, for which [`Word::flip`] (toggling the sign
//! bit) maps signed order to unsigned order and back. Differences are the same either
//! way: `a - b` wraps to the same bits.

use std::fmt::Debug;

/// An integer of `BYTES` bytes holding one value of the stream.
pub(crate) trait Word: Copy + Ord + Default + Debug + Send + Sync + 'static {
    /// `W`.
    const BYTES: usize;
    /// `8W`.
    const BITS: u32;
    /// The smallest and the largest value in this type's order.
    const LOWEST: Self;
    const HIGHEST: Self;

    /// The value in the first `BYTES` bytes of `bytes`, little-endian.
    fn load(bytes: &[u8]) -> Self;
    /// Writes the value into the first `BYTES` bytes of `out`, little-endian.
    fn store(self, out: &mut [u8]);
    /// The bits as an unsigned number (zero-extended).
    fn to_u64(self) -> u64;
    /// The low `BITS` bits of `value`.
    fn from_u64(value: u64) -> Self;
    fn add(self, other: Self) -> Self;
    fn sub(self, other: Self) -> Self;
    /// A value read from the stream to the form whose order is the format's signed
    /// order, and back: toggles the sign bit for unsigned types, nothing for signed ones.
    fn flip(self) -> Self;
    /// Significant bits of the bits as an unsigned number (`bits(0) = 0`).
    fn bits(self) -> u32;
}

macro_rules! word {
    ($t:ty, $unsigned:ty, $flip:expr) => {
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const BITS: u32 = <$t>::BITS;
            const LOWEST: Self = <$t>::MIN;
            const HIGHEST: Self = <$t>::MAX;

            #[inline(always)]
            fn load(bytes: &[u8]) -> Self {
                let mut le = [0u8; std::mem::size_of::<$t>()];
                le.copy_from_slice(&bytes[..Self::BYTES]);
                <$t>::from_le_bytes(le)
            }

            #[inline(always)]
            fn store(self, out: &mut [u8]) {
                out[..Self::BYTES].copy_from_slice(&self.to_le_bytes());
            }

            #[inline(always)]
            fn to_u64(self) -> u64 {
                self as $unsigned as u64
            }

            #[inline(always)]
            fn from_u64(value: u64) -> Self {
                value as $t
            }

            #[inline(always)]
            fn add(self, other: Self) -> Self {
                self.wrapping_add(other)
            }

            #[inline(always)]
            fn sub(self, other: Self) -> Self {
                self.wrapping_sub(other)
            }

            #[inline(always)]
            fn flip(self) -> Self {
                let flip: fn($t) -> $t = $flip;
                flip(self)
            }

            #[inline(always)]
            fn bits(self) -> u32 {
                <$t>::BITS - (self as $unsigned).leading_zeros()
            }
        }
    };
}

word!(u8, u8, |v| v ^ (1 << 7));
word!(u16, u16, |v| v ^ (1 << 15));
word!(u32, u32, |v| v ^ (1 << 31));
word!(u64, u64, |v| v ^ (1 << 63));
word!(i8, u8, |v| v);
word!(i16, u16, |v| v);
word!(i32, u32, |v| v);
word!(i64, u64, |v| v);
