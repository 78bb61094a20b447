//! The codec of a stream, as the one byte containers store, and the single-stream
//! conveniences over the batched interface.

use super::error::Result;
use super::interface::Packed;
use super::placement::{Direction, Placement};

/// The codec of a stream, as one byte in containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CodecId {
    Stored = 0,
    Lzss = 1,
    /// One Snappy raw stream (Parquet pages, `--snappy raw`).
    GmatchRaw = 2,
    /// The Snappy framing format.
    GmatchFramed = 3,
    Bwt = 4,
    /// gmatch's blocks format: independent raw Snappy streams with a size table (what
    /// containers store for `gmatch`).
    GmatchBlocks = 5,
    /// Integers by frame of reference, delta, runs and dictionary, bit-packed.
    Intpack = 6,
}

impl CodecId {
    /// The id stored in a container byte, or `None` for an unknown one.
    pub fn from_u8(byte: u8) -> Option<Self> {
        Some(match byte {
            0 => CodecId::Stored,
            1 => CodecId::Lzss,
            2 => CodecId::GmatchRaw,
            3 => CodecId::GmatchFramed,
            4 => CodecId::Bwt,
            5 => CodecId::GmatchBlocks,
            6 => CodecId::Intpack,
            _ => return None,
        })
    }

    /// The short name (`stored`, `lzss`, `gmatch`, `gmatch:raw`, `gmatch:framed`, `bwt`,
    /// `intpack`).
    pub fn name(self) -> &'static str {
        match self {
            CodecId::Stored => "stored",
            CodecId::Lzss => "lzss",
            CodecId::GmatchRaw => "gmatch:raw",
            CodecId::GmatchFramed => "gmatch:framed",
            CodecId::Bwt => "bwt",
            CodecId::GmatchBlocks => "gmatch",
            CodecId::Intpack => "intpack",
        }
    }

    /// Whether the codec has a GPU path in `direction`: the batched calls run it on the
    /// GPU when their [`Placement`] says so. The others run on the CPU whatever the
    /// backend. (Every codec but `stored` has one in both directions; `bwt` compresses
    /// with its transform on the GPU and the stages after it on the host's cores.)
    pub fn has_gpu_path(self, _direction: Direction) -> bool {
        match self {
            CodecId::Lzss
            | CodecId::GmatchRaw
            | CodecId::GmatchFramed
            | CodecId::GmatchBlocks
            | CodecId::Bwt
            | CodecId::Intpack => true,
            CodecId::Stored => false,
        }
    }

    /// Decodes one stream on the CPU, which must hold exactly `expected_len` bytes of
    /// output (nothing larger is allocated).
    pub fn decompress(self, stream: &[u8], expected_len: usize) -> Result<Vec<u8>> {
        self.decompress_one(&Placement::CPU, stream, expected_len)
    }

    /// Decodes one stream where `placement` says (a batch of one).
    pub fn decompress_one(
        self,
        placement: &Placement,
        stream: &[u8],
        expected_len: usize,
    ) -> Result<Vec<u8>> {
        let packed: Packed = self.decompress_batch(placement, &[stream], &[expected_len])?;
        Ok(packed.into_bytes())
    }
}
