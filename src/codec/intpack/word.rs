//! Values of `W` bytes as the unsigned integer of that width: the format's arithmetic is
//! modulo `2^(8W)`, and its signed order is unsigned order once the sign bit is flipped
//! ("biased" values), so every minimum, maximum and difference is taken on unsigned
//! integers. Flipping the sign bit adds `2^(8W-1)`, so differences of biased values are
//! the differences of the values themselves.

use std::fmt::Debug;

/// An unsigned integer of `BYTES` bytes holding one value of the stream.
pub(crate) trait Word: Copy + Ord + Default + Debug + Send + Sync + 'static {
    /// `W`.
    const BYTES: usize;
    /// `8W`.
    const BITS: u32;
    /// The sign bit: `value ^ SIGN` is the biased value.
    const SIGN: Self;
    /// All ones.
    const MAX: Self;

    /// The value in the first `BYTES` bytes of `bytes`, little-endian.
    fn load(bytes: &[u8]) -> Self;
    /// Writes the value into the first `BYTES` bytes of `out`, little-endian.
    fn store(self, out: &mut [u8]);
    fn to_u64(self) -> u64;
    /// The low `BITS` bits of `value`.
    fn from_u64(value: u64) -> Self;
    fn add(self, other: Self) -> Self;
    fn sub(self, other: Self) -> Self;
    /// Toggles the sign bit: a value to its biased form and back.
    fn flip(self) -> Self;
    /// Significant bits (`bits(0) = 0`).
    fn bits(self) -> u32;
}

macro_rules! word {
    ($t:ty) => {
        impl Word for $t {
            const BYTES: usize = std::mem::size_of::<$t>();
            const BITS: u32 = <$t>::BITS;
            const SIGN: Self = 1 << (<$t>::BITS - 1);
            const MAX: Self = <$t>::MAX;

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
                self as u64
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
                self ^ Self::SIGN
            }

            #[inline(always)]
            fn bits(self) -> u32 {
                <$t>::BITS - self.leading_zeros()
            }
        }
    };
}

word!(u8);
word!(u16);
word!(u32);
word!(u64);
