//! A bounds-checked reader over container bytes: every read is an `Err` past the end.

use crate::codec::varint;
use crate::{Error, Result};

/// Reads little-endian integers, varints and slices from a byte slice.
pub struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, pos: 0 }
    }

    pub fn is_empty(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub fn take(&mut self, len: usize) -> Result<&'a [u8]> {
        let end = self
            .pos
            .checked_add(len)
            .filter(|&end| end <= self.bytes.len())
            .ok_or_else(|| {
                Error::format(format!(
                    "truncated: {len} bytes needed at offset {}",
                    self.pos
                ))
            })?;
        let slice = &self.bytes[self.pos..end];
        self.pos = end;
        Ok(slice)
    }

    pub fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }

    pub fn u64_le(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }

    pub fn varint(&mut self) -> Result<u64> {
        let (value, len) = varint::read_u64(&self.bytes[self.pos..], "container")?;
        self.pos += len;
        Ok(value)
    }

    /// A varint that must fit in `usize`.
    pub fn varint_usize(&mut self) -> Result<usize> {
        let value = self.varint()?;
        usize::try_from(value)
            .map_err(|_| Error::format(format!("length {value} does not fit in memory")))
    }

    pub fn string(&mut self) -> Result<String> {
        let len = self.varint_usize()?;
        let bytes = self.take(len)?;
        String::from_utf8(bytes.to_vec()).map_err(|_| Error::format("string is not UTF-8"))
    }
}
