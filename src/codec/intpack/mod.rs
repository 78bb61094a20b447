//! `intpack`: integers by frame of reference, delta, runs and dictionary, bit-packed; CPU
//! reference.
//!
//! The input is read as values of `W` bytes (1, 2, 4 or 8: the column's width) and cut
//! into blocks of [`BLOCK_VALUES`] values that are analysed, encoded and decoded
//! independently, one GPU thread block (or one rayon task's turn) per block. Each block
//! is written in whichever of six schemes is shortest, computed exactly; every scheme
//! ends in bit-packed fields that a GPU thread per value unpacks from its own bit offset.
//!
//! Stream (all integers little-endian; `docs/FORMAT.md`, section `intpack`, is the spec):
//!
//! ```text
//! version=1 | W | N: varint                    header (N = uncompressed bytes)
//! size[0..K]: u16 each                         K = ceil(M / 1024), M = N / W values
//! block encodings, size[i] bytes each
//! tail: N % W bytes, raw                       the bytes that do not fill a value
//! ```
//!
//! A *frame* of `c` values is `b: u8 | ref: w bytes | pack(x - ref, b)`: `ref` is the
//! minimum in signed order, `b` the bits of `max - ref`, and `pack` stores the `b`-bit
//! fields least significant bit first. A *delta frame* is the first value followed by the
//! frame of the `c - 1` differences. A block is its scheme byte, then:
//!
//! | scheme | name | body |
//! |---|---|---|
//! | 0 | frame of reference | frame of the values |
//! | 1 | delta | delta frame of the values |
//! | 2 | runs, frame values | `r: u16` · frame of run values · frame of run lengths (`w = 2`) |
//! | 3 | runs, delta values | `r: u16` · delta frame of run values · frame of run lengths |
//! | 4 | dictionary | `d: u16` · delta frame of the sorted distinct values · `pack(index, bits(d - 1))` |
//! | 5 | frame with exceptions | `b` · `ref` · `e: u16` · `h: u8` · `pack(low, b)` · `pack(position, 10)` · `pack(high, h)` |
//!
//! Values are `W`-byte integers with wrapping arithmetic; the lowest scheme wins a tie.
//! [`scheme_lengths`] and [`choose_scheme`] are the normative choice, for the GPU's tests.
//!
//! [`gpu`] compresses and decompresses the same streams on the GPU.
//!
//! Speed: `cargo bench --bench intpack_cpu` measures each core count against the
//! machine's fill and copy bandwidth. The encoder computes a scheme's exact length only
//! where it can win (runs only when there are fewer runs than values; the dictionary only
//! when its smallest possible length beats the others) and counts distinct values with a
//! bitmap when the block's range is small. The decoder writes every frame's values
//! straight into the output, 8 fields at a time with AVX2 where the CPU has it
//! (`fused` and `simd_x86`), so a block's bytes are written once.
//!
//! ```
//! use colzip::codec::intpack::{self, IntpackParams};
//! let dates: Vec<u8> = (0..10_000i32).flat_map(|i| (8_000 + i / 7).to_le_bytes()).collect();
//! let stream = intpack::compress(&dates, &IntpackParams::new(4)?);
//! assert!(stream.len() * 20 < dates.len());
//! assert_eq!(intpack::decompressed_len(&stream)?, dates.len());
//! assert_eq!(intpack::decompress(&stream, dates.len())?, dates);
//! # Ok::<(), colzip::codec::CodecError>(())
//! ```

mod bits;
mod decode;
mod encode;
mod family;
mod frame;
mod fused;
pub mod gpu;
mod scheme;
#[cfg(target_arch = "x86_64")]
mod simd_x86;
#[cfg(test)]
mod tests;
mod word;

pub use bits::{pack, packed_len, unpack};
pub use decode::*;
pub use encode::*;
pub(crate) use family::Intpack;
pub use family::IntpackOptions;
pub use frame::{delta_frame_len, frame_len};
pub use scheme::{SCHEMES, Scheme, choose_scheme, scheme_lengths};

pub(crate) use super::error::{CodecError, Result};
pub(crate) use super::varint;

/// The codec's name in errors and containers.
pub const NAME: &str = "intpack";
/// The stream version this module writes and reads.
pub const VERSION: u8 = 1;
/// Values per block (only the last block may hold fewer).
pub const BLOCK_VALUES: usize = 1024;
/// Bytes of the fixed part of the header: version and `W`.
const FIXED_HEADER_LEN: usize = 2;

/// Parameters of an `intpack` stream; the width is stored in its header.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct IntpackParams {
    /// Value width `W` in bytes: 1, 2, 4 or 8.
    pub width: u8,
}

impl IntpackParams {
    /// Checked constructor.
    pub fn new(width: u8) -> Result<Self> {
        let params = IntpackParams { width };
        params.validate()?;
        Ok(params)
    }

    /// The width for values of `type_width` bytes: the largest of 8, 4, 2 and 1 dividing
    /// it (16-byte decimals are read as pairs of 8-byte values, 3-byte fixed-size binary
    /// as bytes).
    pub fn for_type_width(type_width: usize) -> Self {
        let width = [8usize, 4, 2, 1]
            .into_iter()
            .find(|&w| type_width.is_multiple_of(w) && type_width > 0)
            .unwrap_or(1) as u8;
        IntpackParams { width }
    }

    /// Checks that the width is 1, 2, 4 or 8.
    pub fn validate(&self) -> Result<()> {
        if !matches!(self.width, 1 | 2 | 4 | 8) {
            return Err(CodecError::invalid(
                NAME,
                format!("value width {} is not 1, 2, 4 or 8", self.width),
            ));
        }
        Ok(())
    }
}

/// Largest stream [`compress`] can return for `len` input bytes: the header, and per
/// block its size entry and scheme 0 with `b = 8W` (`2 + 2 + W` bytes besides the
/// values), and the input itself.
///
/// ```
/// use colzip::codec::intpack::{self, IntpackParams};
/// let params = IntpackParams::new(8)?;
/// let noise: Vec<u8> = (0..9_001u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8).collect();
/// assert!(intpack::compress(&noise, &params).len() <= intpack::max_compressed_len(noise.len(), &params));
/// # Ok::<(), colzip::codec::CodecError>(())
/// ```
pub fn max_compressed_len(len: usize, params: &IntpackParams) -> usize {
    let w = usize::from(params.width.max(1));
    let blocks = (len / w).div_ceil(BLOCK_VALUES);
    FIXED_HEADER_LEN + super::varint::encoded_len(len as u64) + blocks * (2 + 2 + w) + len
}
