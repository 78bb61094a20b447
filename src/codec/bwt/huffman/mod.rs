//! Length-limited canonical Huffman with several tables, selected per fixed-size bit
//! segment, and a gap array per fixed-size bit subsequence so that the bitstream decodes
//! in parallel.
//!
//! * Bits are written most significant first: bit `i` of a byte string is bit `7 - i % 8`
//!   of byte `i / 8`.
//! * Code lengths are `1..=MAX_CODE_LEN` for every symbol of the alphabet (a complete
//!   prefix code: the Kraft sum is exactly 1). Codes are canonical: ordered by
//!   (length, symbol), consecutive values within a length.
//! * The bitstream of `total_bits` bits is cut into segments of `2^seg_log2` bits. A
//!   codeword is coded with the table selected for the segment in which it *starts*.
//! * It is also cut into subsequences of `2^sub_log2` bits. `gap[s]` is the offset from
//!   the start of subsequence `s` to the first codeword starting at or after it (or to
//!   `total_bits` when none does). Gaps are `< MAX_CODE_LEN`, 4 bits each.
//! * Decoding subsequence `s` starts at `s * S + gap[s]` and decodes every codeword that
//!   starts before `min((s + 1) * S, total_bits)`; it must stop exactly where subsequence
//!   `s + 1` starts (`(s + 1) * S + gap[s + 1]`), or at `total_bits` for the last one.
//!   Subsequences are independent: this decoder runs them in parallel and concatenates.

use rayon::prelude::*;

use super::NAME;
use crate::codec::error::{CodecError, Result};

/// Longest codeword, in bits.
pub const MAX_CODE_LEN: u32 = 16;
/// Most tables per block.
pub const MAX_TABLES: usize = 8;
/// Width of one gap array entry.
pub const GAP_BITS: u32 = 4;
/// Bits resolved by the first-level decode lookup.
const LUT_BITS: u32 = 10;
/// Subsequences decoded per parallel task.
const SUBS_PER_TASK: usize = 256;

fn corrupt(reason: &str) -> CodecError {
    CodecError::corrupt(NAME, reason)
}

mod bits;
mod choice;
mod code;
mod decode;
mod encode;
mod side;
mod table;
#[cfg(test)]
mod tests;

pub use bits::*;
pub use choice::*;
pub use code::*;
pub use decode::*;
pub use encode::*;
pub use side::*;
pub use table::*;
