//! Codec specifications as text (`name[:key=value,…]`), the form the CLI and SQL take.
//!
//! ```
//! use colzip::codec::CodecSpec;
//! let spec: CodecSpec = "lzss:s=2,w=128,c=2048".parse().unwrap();
//! assert_eq!(spec.to_string(), "lzss:s=2,w=128,c=2048");
//! assert_eq!("gmatch".parse::<CodecSpec>().unwrap().to_string(), "gmatch");
//! assert_eq!("gmatch:raw".parse::<CodecSpec>().unwrap().to_string(), "gmatch:raw");
//! assert_eq!("intpack:w=4".parse::<CodecSpec>().unwrap().to_string(), "intpack:w=4");
//! assert!("lzss:s=3".parse::<CodecSpec>().is_err());
//! ```
//!
//! A spec leaves parameters that depend on the data open (lzss's symbol width,
//! intpack's value width);
//! [`CodecSpec::settle`] fixes them and gives the [`Codec`] the batched calls run.

use std::fmt;
use std::str::FromStr;

use super::batch::Codec;
use super::bwt::{self, BwtParams};
use super::error::{CodecError, Result};
use super::gmatch;
use super::id::CodecId;
use super::intpack::{self, IntpackParams};
use super::lzss::{self, LzssParams};
use super::placement::Placement;

/// Which of its formats gmatch writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SnappyFormat {
    /// Independent raw Snappy streams of 64 KiB blocks with a size table: what
    /// containers store, decodable in parallel (`gmatch`, the default).
    #[default]
    Blocks,
    /// One Snappy raw stream per buffer (what Parquet pages hold; `gmatch:raw`).
    Raw,
    /// The Snappy framing format: 64 KiB chunks with masked CRC-32C (`gmatch:framed`).
    Framed,
}

impl SnappyFormat {
    /// The id of the streams gmatch writes in this format.
    pub fn id(self) -> CodecId {
        match self {
            SnappyFormat::Blocks => CodecId::GmatchBlocks,
            SnappyFormat::Raw => CodecId::GmatchRaw,
            SnappyFormat::Framed => CodecId::GmatchFramed,
        }
    }

    /// The format of a gmatch stream id (`None` for the other codecs).
    pub fn of(id: CodecId) -> Option<Self> {
        match id {
            CodecId::GmatchBlocks => Some(SnappyFormat::Blocks),
            CodecId::GmatchRaw => Some(SnappyFormat::Raw),
            CodecId::GmatchFramed => Some(SnappyFormat::Framed),
            _ => None,
        }
    }
}

/// A codec and its parameters, as a user names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CodecSpec {
    /// No compression (what the container falls back to when a codec would expand data).
    Stored,
    /// Multi-byte LZSS; `symbol_width: None` lets the caller pick it from the data type.
    Lzss {
        symbol_width: Option<u8>,
        window: u8,
        chunk_size: u32,
    },
    /// G-match, writing Snappy.
    Gmatch(SnappyFormat),
    /// BWT + move-to-front + Huffman.
    Bwt(BwtParams),
    /// Integers by frame of reference, delta, runs and dictionary, bit-packed; `width:
    /// None` takes the value width from the data type.
    Intpack { width: Option<u8> },
}

impl CodecSpec {
    /// The id of the streams this spec writes.
    pub fn id(&self) -> CodecId {
        match self {
            CodecSpec::Stored => CodecId::Stored,
            CodecSpec::Lzss { .. } => CodecId::Lzss,
            CodecSpec::Gmatch(format) => format.id(),
            CodecSpec::Bwt(_) => CodecId::Bwt,
            CodecSpec::Intpack { .. } => CodecId::Intpack,
        }
    }

    /// The codec family's name, without parameters.
    pub fn family(&self) -> &'static str {
        match self {
            CodecSpec::Stored => "stored",
            CodecSpec::Lzss { .. } => lzss::NAME,
            CodecSpec::Gmatch(_) => gmatch::NAME,
            CodecSpec::Bwt(_) => bwt::NAME,
            CodecSpec::Intpack { .. } => intpack::NAME,
        }
    }

    /// LZSS parameters with the symbol width settled: the one given, else the best for
    /// data of `type_width` bytes per value judged on `sample` (GPULZ §3.2.3).
    pub fn lzss_params(&self, type_width: usize, sample: &[u8]) -> Option<LzssParams> {
        match *self {
            CodecSpec::Lzss {
                symbol_width,
                window,
                chunk_size,
            } => {
                let s = symbol_width.unwrap_or_else(|| {
                    lzss::choose_symbol_width(sample, type_width, window, chunk_size)
                });
                LzssParams::new(s, window, chunk_size).ok()
            }
            _ => None,
        }
    }

    /// The codec with its parameters settled for data of `type_width` bytes per value
    /// (1 for plain bytes), judged on `sample` where the spec leaves them open (lzss's
    /// symbol width; intpack's value width is the largest of 8, 4, 2 and 1 dividing
    /// `type_width`).
    pub fn settle(&self, type_width: usize, sample: &[u8]) -> Result<Codec> {
        Ok(match *self {
            CodecSpec::Stored => Codec::Stored,
            CodecSpec::Lzss { .. } => {
                let sample = &sample[..sample.len().min(SYMBOL_WIDTH_SAMPLE)];
                Codec::Lzss(
                    self.lzss_params(type_width, sample)
                        .ok_or_else(|| CodecError::invalid(lzss::NAME, "bad parameters"))?,
                )
            }
            CodecSpec::Gmatch(format) => Codec::Gmatch(format),
            CodecSpec::Bwt(params) => Codec::Bwt(params),
            CodecSpec::Intpack { width } => Codec::Intpack(match width {
                Some(width) => IntpackParams::new(width)?,
                None => IntpackParams::for_type_width(type_width),
            }),
        })
    }

    /// Compresses `input` on the CPU (a batch of one); its values are `type_width` bytes
    /// wide (1 for plain bytes).
    pub fn compress(&self, input: &[u8], type_width: usize) -> Result<Vec<u8>> {
        self.settle(type_width, input)?
            .compress_one(&Placement::CPU, input)
    }

    /// The default LZSS spec: symbol width from the data, GPULZ's W=128 and C=2048.
    pub fn lzss_default() -> Self {
        let defaults = LzssParams::default();
        CodecSpec::Lzss {
            symbol_width: None,
            window: defaults.window,
            chunk_size: defaults.chunk_size,
        }
    }
}

/// Bytes looked at when choosing the LZSS symbol width.
const SYMBOL_WIDTH_SAMPLE: usize = 256 * 1024;

impl fmt::Display for CodecSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CodecSpec::Stored => write!(f, "stored"),
            CodecSpec::Lzss {
                symbol_width,
                window,
                chunk_size,
            } => {
                match symbol_width {
                    Some(s) => write!(f, "lzss:s={s}")?,
                    None => write!(f, "lzss:s=auto")?,
                }
                write!(f, ",w={window},c={chunk_size}")
            }
            CodecSpec::Gmatch(SnappyFormat::Blocks) => write!(f, "gmatch"),
            CodecSpec::Gmatch(SnappyFormat::Raw) => write!(f, "gmatch:raw"),
            CodecSpec::Gmatch(SnappyFormat::Framed) => write!(f, "gmatch:framed"),
            CodecSpec::Bwt(params) => write!(f, "bwt:block={}", params.block_size),
            CodecSpec::Intpack { width: None } => write!(f, "intpack"),
            CodecSpec::Intpack { width: Some(w) } => write!(f, "intpack:w={w}"),
        }
    }
}

impl FromStr for CodecSpec {
    type Err = crate::Error;

    fn from_str(spec: &str) -> std::result::Result<Self, Self::Err> {
        let fail = |reason: String| crate::Error::CodecSpec {
            spec: spec.to_string(),
            reason,
        };
        let (name, options) = match spec.trim().split_once(':') {
            Some((name, options)) => (name, options),
            None => (spec.trim(), ""),
        };
        let options: Vec<(&str, Option<&str>)> = options
            .split(',')
            .map(str::trim)
            .filter(|o| !o.is_empty())
            .map(|o| match o.split_once('=') {
                Some((k, v)) => (k.trim(), Some(v.trim())),
                None => (o, None),
            })
            .collect();
        let invalid = |e: CodecError| fail(e.to_string());
        match name.to_ascii_lowercase().as_str() {
            "stored" | "none" => {
                if let Some((key, _)) = options.first() {
                    return Err(fail(format!("stored takes no option, got '{key}'")));
                }
                Ok(CodecSpec::Stored)
            }
            "lzss" => {
                let defaults = LzssParams::default();
                let (mut s, mut w, mut c) = (None, defaults.window, defaults.chunk_size);
                for (key, value) in options {
                    let value =
                        value.ok_or_else(|| fail(format!("option '{key}' needs a value")))?;
                    match key {
                        "s" => {
                            s = match value {
                                "auto" => None,
                                v => Some(v.parse().map_err(|_| {
                                    fail(format!("s must be 1, 2, 4, 8 or auto, got '{v}'"))
                                })?),
                            }
                        }
                        "w" => {
                            w = value
                                .parse()
                                .map_err(|_| fail(format!("w must be 1..=255, got '{value}'")))?
                        }
                        "level" => {
                            let level = value
                                .parse()
                                .map_err(|_| fail(format!("level must be 1..=4, got '{value}'")))?;
                            w = LzssParams::window_for_level(level).map_err(invalid)?;
                        }
                        "c" => {
                            c = crate::memory::parse_byte_size(value)
                                .and_then(|c| u32::try_from(c).ok())
                                .ok_or_else(|| {
                                    fail(format!("c must be a chunk size in bytes, got '{value}'"))
                                })?
                        }
                        other => {
                            return Err(fail(format!(
                                "unknown lzss option '{other}' (expected s, w, c or level)"
                            )));
                        }
                    }
                }
                // Validate with the width the spec names, or the narrowest when automatic.
                LzssParams::new(s.unwrap_or(1), w, c).map_err(invalid)?;
                Ok(CodecSpec::Lzss {
                    symbol_width: s,
                    window: w,
                    chunk_size: c,
                })
            }
            "gmatch" | "snappy" => {
                let mut format = SnappyFormat::Blocks;
                for (key, value) in options {
                    format = match (key, value) {
                        ("blocks", None) | ("format", Some("blocks")) => SnappyFormat::Blocks,
                        ("raw", None) | ("format", Some("raw")) => SnappyFormat::Raw,
                        ("framed", None) | ("format", Some("framed")) => SnappyFormat::Framed,
                        _ => {
                            return Err(fail(format!(
                                "unknown gmatch option '{key}' (expected blocks, raw or framed)"
                            )));
                        }
                    }
                }
                Ok(CodecSpec::Gmatch(format))
            }
            "bwt" => {
                let mut params = BwtParams::default();
                for (key, value) in options {
                    match (key, value) {
                        ("block", Some(value)) => {
                            let size = crate::memory::parse_byte_size(value)
                                .and_then(|c| u32::try_from(c).ok())
                                .ok_or_else(|| {
                                    fail(format!("block must be a size in bytes, got '{value}'"))
                                })?;
                            params = BwtParams::new(size).map_err(invalid)?;
                        }
                        _ => {
                            return Err(fail(format!(
                                "unknown bwt option '{key}' (expected block=SIZE)"
                            )));
                        }
                    }
                }
                Ok(CodecSpec::Bwt(params))
            }
            "intpack" => {
                let mut width = None;
                for (key, value) in options {
                    match (key, value) {
                        ("w", Some("auto")) => width = None,
                        ("w", Some(value)) => {
                            let w = value.parse().map_err(|_| {
                                fail(format!("w must be 1, 2, 4, 8 or auto, got '{value}'"))
                            })?;
                            IntpackParams::new(w).map_err(invalid)?;
                            width = Some(w);
                        }
                        _ => {
                            return Err(fail(format!(
                                "unknown intpack option '{key}' (expected w=1|2|4|8)"
                            )));
                        }
                    }
                }
                Ok(CodecSpec::Intpack { width })
            }
            other => Err(fail(format!(
                "unknown codec '{other}' (expected lzss, gmatch, bwt, intpack or stored)"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print() {
        for (text, canonical) in [
            ("lzss", "lzss:s=auto,w=128,c=2048"),
            ("lzss:level=1,s=4", "lzss:s=4,w=32,c=2048"),
            ("lzss:c=16k", "lzss:s=auto,w=128,c=16384"),
            ("gmatch:framed", "gmatch:framed"),
            ("gmatch:raw", "gmatch:raw"),
            ("gmatch:blocks", "gmatch"),
            ("snappy", "gmatch"),
            ("bwt:block=1m", "bwt:block=1048576"),
            ("intpack", "intpack"),
            ("intpack:w=4", "intpack:w=4"),
            ("INTPACK:w=auto", "intpack"),
            ("none", "stored"),
        ] {
            let spec: CodecSpec = text.parse().unwrap();
            assert_eq!(spec.to_string(), canonical);
            assert_eq!(canonical.parse::<CodecSpec>().unwrap(), spec);
        }
    }

    #[test]
    fn bad_specs_say_why() {
        for bad in [
            "zip",
            "lzss:s=3",
            "lzss:w=0",
            "lzss:c=100",
            "lzss:q=1",
            "gmatch:fast",
            "bwt:block=x",
            "lzss:level=9",
            "intpack:w=3",
            "intpack:w=x",
            "intpack:s=4",
            "intpack:w",
        ] {
            let err = bad.parse::<CodecSpec>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }

    #[test]
    fn intpack_takes_its_width_from_the_type() {
        let spec: CodecSpec = "intpack".parse().unwrap();
        for (type_width, width) in [(1, 1), (2, 2), (4, 4), (8, 8), (16, 8), (12, 4), (3, 1)] {
            assert_eq!(
                spec.settle(type_width, &[]).unwrap(),
                Codec::Intpack(IntpackParams { width }),
                "type width {type_width}"
            );
        }
        let fixed: CodecSpec = "intpack:w=2".parse().unwrap();
        assert_eq!(
            fixed.settle(8, &[]).unwrap(),
            Codec::Intpack(IntpackParams { width: 2 })
        );
        assert_eq!(fixed.id(), CodecId::Intpack);
        assert_eq!(fixed.family(), "intpack");
    }
}
