//! The checksum of a part's raw bytes: xxh3-64 over the xxh3-64 digests of its 1 MiB
//! pieces (little-endian, in order), so a part of any size is hashed on all cores at
//! memory speed and still has one 64-bit value. (Container version 1 hashed the whole
//! part in one pass.)

use rayon::prelude::*;
use xxhash_rust::xxh3::xxh3_64;

/// Bytes per hashed piece.
pub const PIECE: usize = 1 << 20;

/// The checksum of `bytes`.
pub fn part_checksum(bytes: &[u8]) -> u64 {
    let digests: Vec<u8> = if bytes.len() <= 4 * PIECE {
        bytes
            .chunks(PIECE)
            .flat_map(|piece| xxh3_64(piece).to_le_bytes())
            .collect()
    } else {
        bytes
            .par_chunks(PIECE)
            .map(|piece| xxh3_64(piece).to_le_bytes())
            .collect::<Vec<_>>()
            .concat()
    };
    xxh3_64(&digests)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_decide_the_value() {
        let bytes: Vec<u8> = (0..3 * PIECE + 5).map(|i| (i % 251) as u8).collect();
        let expected = xxh3_64(
            &bytes
                .chunks(PIECE)
                .flat_map(|p| xxh3_64(p).to_le_bytes())
                .collect::<Vec<_>>(),
        );
        assert_eq!(part_checksum(&bytes), expected);
        let big: Vec<u8> = (0..9 * PIECE).map(|i| (i % 13) as u8).collect();
        let serial = xxh3_64(
            &big.chunks(PIECE)
                .flat_map(|p| xxh3_64(p).to_le_bytes())
                .collect::<Vec<_>>(),
        );
        assert_eq!(part_checksum(&big), serial);
        assert_ne!(part_checksum(b""), part_checksum(b"\\0"));
    }
}
