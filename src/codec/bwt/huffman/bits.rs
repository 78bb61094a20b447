//! Bit I/O: MSB-first writer and readers (bit `i` is bit `7 - i % 8` of byte `i / 8`).

use super::*;

/// MSB-first bit writer.
#[derive(Default)]
pub struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nbits: u32,
}

impl BitWriter {
    pub fn with_capacity(bytes: usize) -> Self {
        BitWriter {
            out: Vec::with_capacity(bytes),
            acc: 0,
            nbits: 0,
        }
    }

    /// Appends the low `n` bits of `v` (`n <= 32`, `v < 2^n`).
    #[inline]
    pub fn put(&mut self, v: u32, n: u32) {
        debug_assert!(n <= 32 && (n == 32 || v >> n == 0));
        if n == 0 {
            return;
        }
        self.acc = (self.acc << n) | u64::from(v);
        self.nbits += n;
        if self.nbits >= 32 {
            self.nbits -= 32;
            self.out
                .extend_from_slice(&((self.acc >> self.nbits) as u32).to_be_bytes());
        }
    }

    pub fn bit_len(&self) -> u64 {
        self.out.len() as u64 * 8 + u64::from(self.nbits)
    }

    /// Pads with zero bits to a byte boundary and returns the bytes.
    pub fn finish(mut self) -> Vec<u8> {
        while self.nbits >= 8 {
            self.nbits -= 8;
            self.out.push((self.acc >> self.nbits) as u8);
        }
        if self.nbits > 0 {
            self.out.push((self.acc << (8 - self.nbits)) as u8);
        }
        self.out
    }
}

#[inline]
pub(super) fn load_be64(data: &[u8], byte: usize) -> u64 {
    match data.get(byte..byte + 8) {
        Some(s) => u64::from_be_bytes(s.try_into().unwrap()),
        None => {
            let mut buf = [0u8; 8];
            if byte < data.len() {
                let tail = &data[byte..];
                buf[..tail.len()].copy_from_slice(tail);
            }
            u64::from_be_bytes(buf)
        }
    }
}

/// The `n` bits (`1..=32`) at bit `pos`, zero-filled past the end.
#[inline]
pub(super) fn peek(data: &[u8], pos: u64, n: u32) -> u32 {
    let byte = (pos >> 3) as usize;
    ((load_be64(data, byte) << (pos & 7)) >> (64 - n)) as u32
}

/// MSB-first sequential bit reader with bounds checks.
pub struct BitReader<'a> {
    data: &'a [u8],
    pos: u64,
}

impl<'a> BitReader<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        BitReader { data, pos: 0 }
    }

    /// Bits left to read.
    pub fn remaining_bits(&self) -> u64 {
        (self.data.len() as u64 * 8).saturating_sub(self.pos)
    }

    /// Reads `n` bits (`1..=32`).
    pub fn read(&mut self, n: u32) -> Result<u32> {
        if self.pos + u64::from(n) > self.data.len() as u64 * 8 {
            return Err(corrupt("truncated block side information"));
        }
        let v = peek(self.data, self.pos, n);
        self.pos += u64::from(n);
        Ok(v)
    }

    pub fn bit(&mut self) -> Result<bool> {
        Ok(self.read(1)? == 1)
    }

    /// Bits consumed so far.
    pub fn bit_pos(&self) -> u64 {
        self.pos
    }
}
