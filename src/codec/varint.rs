//! Little-endian base-128 varints (the encoding Snappy uses for its length preamble;
//! the lzss and bwt headers use it too).

use super::error::{CodecError, Result};

/// Bytes of the varint of `value` (1 for 0).
pub fn encoded_len(value: u64) -> usize {
    ((64 - value.max(1).leading_zeros()) as usize).div_ceil(7)
}

/// Appends `value` as a varint (1 to 10 bytes).
pub fn write_u64(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Reads a varint from the front of `input`; returns the value and the bytes it took.
/// Rejects truncated varints, varints longer than 10 bytes and values over `u64::MAX`.
pub fn read_u64(input: &[u8], codec: &'static str) -> Result<(u64, usize)> {
    let mut value = 0u64;
    for (i, &byte) in input.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return Err(CodecError::corrupt(codec, "varint overflows 64 bits"));
        }
        value |= bits << (7 * i);
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(CodecError::corrupt(
        codec,
        if input.len() < 10 {
            "truncated varint"
        } else {
            "varint longer than 10 bytes"
        },
    ))
}

/// Reads a varint that must fit in 32 bits and 5 bytes (Snappy's length preamble; the
/// reference decoder and the `snap` crate refuse longer encodings of small values too).
pub fn read_u32(input: &[u8], codec: &'static str) -> Result<(u32, usize)> {
    let (value, len) = read_u64(input, codec)?;
    let value =
        u32::try_from(value).map_err(|_| CodecError::corrupt(codec, "varint exceeds 32 bits"))?;
    if len > 5 {
        return Err(CodecError::corrupt(codec, "varint longer than 5 bytes"));
    }
    Ok((value, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_edges() {
        for v in [0u64, 1, 127, 128, 16383, 16384, u32::MAX as u64, u64::MAX] {
            let mut buf = Vec::new();
            write_u64(&mut buf, v);
            assert_eq!(read_u64(&buf, "test").unwrap(), (v, buf.len()));
        }
    }

    #[test]
    fn rejects_truncated_and_overlong() {
        assert!(read_u64(&[], "test").is_err());
        assert!(read_u64(&[0x80], "test").is_err());
        assert!(read_u64(&[0xff; 11], "test").is_err());
        assert!(
            read_u64(
                &[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02],
                "test"
            )
            .is_err()
        );
        assert!(read_u32(&[0x80, 0x80, 0x80, 0x80, 0x10], "test").is_err());
        // Found by the fuzz harness: 0 in 6 bytes is refused, as snap does.
        assert!(read_u32(&[0x80, 0x80, 0x80, 0x80, 0x80, 0x00], "test").is_err());
        assert_eq!(
            read_u32(&[0x80, 0x80, 0x80, 0x80, 0x00], "test").unwrap(),
            (0, 5)
        );
    }
}
