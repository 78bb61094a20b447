//! The CPU compressors colzip is measured against: snap, lz4_flex, zstd, bzip2.
//!
//! Each compresses a buffer in independent 4 MiB pieces on the rayon pool, so that it
//! uses all cores as colzip's own CPU codecs do (bzip2's blocks are 900 KB anyway).

use std::fmt;
use std::io::{Read, Write};
use std::str::FromStr;

use rayon::prelude::*;

use crate::{Error, Result};

/// A baseline compressor.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Baseline {
    Snap,
    Lz4,
    Zstd(i32),
    Bzip2(u32),
}

/// Bytes per independently compressed piece.
const PIECE: usize = 4 << 20;

impl Baseline {
    pub const DEFAULTS: [Baseline; 5] = [
        Baseline::Snap,
        Baseline::Lz4,
        Baseline::Zstd(1),
        Baseline::Zstd(3),
        Baseline::Bzip2(9),
    ];

    /// Compresses `input` into pieces.
    pub fn compress(self, input: &[u8]) -> Result<Vec<Vec<u8>>> {
        input
            .par_chunks(PIECE)
            .map(|piece| self.compress_piece(piece))
            .collect()
    }

    /// Decompresses pieces back into one buffer of `len` bytes, each piece straight into
    /// its own slice of it.
    pub fn decompress(self, pieces: &[Vec<u8>], len: usize) -> Result<Vec<u8>> {
        if pieces.len() != len.div_ceil(PIECE) {
            return Err(Error::format(format!(
                "{self}: {} pieces for {len} bytes",
                pieces.len()
            )));
        }
        let mut out = vec![0u8; len];
        out.par_chunks_mut(PIECE)
            .zip(pieces.par_iter())
            .try_for_each(|(slice, piece)| self.decompress_piece(piece, slice))?;
        Ok(out)
    }

    fn compress_piece(self, piece: &[u8]) -> Result<Vec<u8>> {
        Ok(match self {
            Baseline::Snap => snap::raw::Encoder::new()
                .compress_vec(piece)
                .map_err(|e| Error::format(e.to_string()))?,
            Baseline::Lz4 => lz4_flex::block::compress(piece),
            Baseline::Zstd(level) => zstd::bulk::compress(piece, level)?,
            Baseline::Bzip2(level) => {
                let mut encoder =
                    bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
                encoder.write_all(piece)?;
                encoder.finish()?
            }
        })
    }

    fn decompress_piece(self, piece: &[u8], out: &mut [u8]) -> Result<()> {
        let written = match self {
            Baseline::Snap => snap::raw::Decoder::new()
                .decompress(piece, out)
                .map_err(|e| Error::format(e.to_string()))?,
            Baseline::Lz4 => lz4_flex::block::decompress_into(piece, out)
                .map_err(|e| Error::format(e.to_string()))?,
            Baseline::Zstd(_) => zstd::bulk::decompress_to_buffer(piece, out)?,
            Baseline::Bzip2(_) => {
                bzip2::read::BzDecoder::new(piece).read_exact(out)?;
                out.len()
            }
        };
        if written != out.len() {
            return Err(Error::format(format!(
                "{self}: a piece decoded to {written} bytes, expected {}",
                out.len()
            )));
        }
        Ok(())
    }
}

impl fmt::Display for Baseline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Baseline::Snap => write!(f, "snap"),
            Baseline::Lz4 => write!(f, "lz4"),
            Baseline::Zstd(level) => write!(f, "zstd-{level}"),
            Baseline::Bzip2(level) => write!(f, "bzip2-{level}"),
        }
    }
}

impl FromStr for Baseline {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let lower = text.trim().to_ascii_lowercase();
        let level = |prefix: &str| lower.strip_prefix(prefix).and_then(|l| l.parse().ok());
        match lower.as_str() {
            "snap" | "snappy-cpu" => Ok(Baseline::Snap),
            "lz4" | "lz4_flex" => Ok(Baseline::Lz4),
            "zstd" => Ok(Baseline::Zstd(3)),
            "bzip2" => Ok(Baseline::Bzip2(9)),
            _ => {
                if let Some(level) = level("zstd-").filter(|l| (1..=22).contains(l)) {
                    Ok(Baseline::Zstd(level))
                } else if let Some(level) = level("bzip2-").filter(|l| (1..=9).contains(l)) {
                    Ok(Baseline::Bzip2(level as u32))
                } else {
                    Err(Error::format(format!("unknown baseline '{text}'")))
                }
            }
        }
    }
}
