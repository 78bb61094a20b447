//! Codec specifications as text (`name[:key=value,…]`) and the numeric ids streams carry.
//!
//! ```
//! use colzip::codec::CodecSpec;
//! let spec: CodecSpec = "lzss:s=2,w=128,c=2048".parse().unwrap();
//! assert_eq!(spec.to_string(), "lzss:s=2,w=128,c=2048");
//! assert_eq!("gmatch".parse::<CodecSpec>().unwrap().to_string(), "gmatch:raw");
//! assert!("lzss:s=3".parse::<CodecSpec>().is_err());
//! ```
//!
//! Where a codec runs is a [`Placement`]: the CPU, or the process's GPU for the codecs
//! that have a GPU path ([`CodecId::has_gpu_path`]). Both write the same bytes.
//!
//! ```
//! use colzip::codec::{CodecSpec, Placement};
//! use colzip::gpu::Backend;
//! let placement = Placement::new(Backend::Auto)?; // the GPU when usable, else the CPU
//! let spec: CodecSpec = "lzss:s=4".parse()?;
//! let data: Vec<u8> = (0..4096u32).flat_map(|v| (v / 8).to_le_bytes()).collect();
//! let gpu = placement.gpu_for(spec.id(), data.len());
//! let stream = spec.compress_on(&data, 4, gpu)?;
//! assert_eq!(stream, spec.compress(&data, 4)?);
//! assert_eq!(spec.id().decompress_on(&stream, data.len(), gpu)?, data);
//! # Ok::<(), colzip::Error>(())
//! ```

use std::fmt;
use std::str::FromStr;

use super::bwt::{self, BwtParams};
use super::error::{CodecError, Result};
use super::gmatch;
use super::lzss::{self, LzssParams};
use crate::gpu::{Backend, Gpu};

/// Which of Snappy's two formats gmatch writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum SnappyFormat {
    /// One stream per buffer (what Parquet pages hold).
    #[default]
    Raw,
    /// The framing format: 64 KiB chunks with masked CRC-32C.
    Framed,
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
}

/// The codec of a stream, as one byte in containers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum CodecId {
    Stored = 0,
    Lzss = 1,
    GmatchRaw = 2,
    GmatchFramed = 3,
    Bwt = 4,
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
            _ => return None,
        })
    }

    /// The short name (`stored`, `lzss`, `gmatch:raw`, `gmatch:framed`, `bwt`).
    pub fn name(self) -> &'static str {
        match self {
            CodecId::Stored => "stored",
            CodecId::Lzss => "lzss",
            CodecId::GmatchRaw => "gmatch:raw",
            CodecId::GmatchFramed => "gmatch:framed",
            CodecId::Bwt => "bwt",
        }
    }

    /// Whether the codec has a GPU path: [`CodecSpec::compress_on`] and
    /// [`CodecId::decompress_on`] run it on the GPU when given one (but for a single
    /// `gmatch:raw` stream's decoding, which stays on the CPU: see `decompress_on`). The
    /// codecs without one run on the CPU whatever the backend. (A new GPU path is one arm in each of those
    /// two dispatches plus its id here.)
    pub fn has_gpu_path(self) -> bool {
        matches!(
            self,
            CodecId::Lzss | CodecId::GmatchRaw | CodecId::GmatchFramed
        )
    }

    /// Decodes `stream` on the CPU, which must hold exactly `expected_len` bytes of output.
    /// Nothing larger than `expected_len` is allocated.
    pub fn decompress(self, stream: &[u8], expected_len: usize) -> Result<Vec<u8>> {
        let out = match self {
            CodecId::Stored => stream.to_vec(),
            CodecId::Lzss => lzss::decompress_with_limit(stream, expected_len)?,
            CodecId::GmatchRaw => gmatch::decompress_raw_with_limit(stream, expected_len)?,
            CodecId::GmatchFramed => gmatch::decompress_framed_with_limit(stream, expected_len)?,
            CodecId::Bwt => bwt::decompress_with_limit(stream, expected_len)?,
        };
        self.check_len(out, expected_len)
    }

    /// [`Self::decompress`] on `gpu` when one is given and the codec has a GPU path, else
    /// on the CPU. GPU errors (CUDA failures, streams the GPU decoder rejects) are returned,
    /// never retried on the CPU.
    ///
    /// A single `gmatch:raw` stream is decoded on the CPU even with a GPU: its elements
    /// form one chain, which the GPU decoder gives one warp (tens of MB/s; on the H100 a
    /// TPC-H query scanning a compressed `o_comment` took 60× the CPU's time). Many raw
    /// streams at once (Parquet pages) decode well on the GPU, with
    /// `codec::gmatch::gpu::decompress_raw_batch`; framed streams go to the GPU chunk by
    /// chunk.
    pub fn decompress_on(
        self,
        stream: &[u8],
        expected_len: usize,
        gpu: Option<&Gpu>,
    ) -> crate::Result<Vec<u8>> {
        let out = match (self, gpu) {
            (CodecId::Lzss, Some(gpu)) => lzss::gpu::decompress(gpu, stream, expected_len)?,
            (CodecId::GmatchFramed, Some(gpu)) => {
                gmatch::gpu::decompress_framed(gpu, stream, expected_len)?
            }
            _ => return Ok(self.decompress(stream, expected_len)?),
        };
        Ok(self.check_len(out, expected_len)?)
    }

    fn check_len(self, out: Vec<u8>, expected_len: usize) -> Result<Vec<u8>> {
        if out.len() != expected_len {
            return Err(CodecError::corrupt(
                self.name(),
                format!("decoded {} bytes, expected {expected_len}", out.len()),
            ));
        }
        Ok(out)
    }
}

/// Inputs smaller than this stay on the CPU under [`Backend::Auto`], even with a GPU: below
/// about 1 MiB the kernel launches (three per LZSS block), the host↔device copies and the
/// synchronisation cost more than the CPU takes to compress the bytes, and the many small
/// parts of a column (validity bitmaps, string lengths) are compressed in parallel on the
/// CPU's cores anyway. An explicit [`Backend::Gpu`] uses the GPU for every size.
pub const GPU_MIN_BYTES: usize = 1 << 20;

/// Where codecs run: a [`Backend`] resolved once, so the per-part decision neither fails
/// nor looks for a device again. Cheap to copy; pass it down to every part.
///
/// ```
/// use colzip::codec::{CodecId, Placement, GPU_MIN_BYTES};
/// use colzip::gpu::Backend;
/// let cpu = Placement::new(Backend::Cpu)?;
/// assert!(cpu.gpu().is_none() && cpu.gpu_for(CodecId::Lzss, 1 << 30).is_none());
/// let auto = Placement::new(Backend::Auto)?;
/// // Small inputs and codecs without a GPU path always run on the CPU under auto.
/// assert!(auto.gpu_for(CodecId::Lzss, GPU_MIN_BYTES - 1).is_none());
/// assert!(auto.gpu_for(CodecId::Bwt, 1 << 30).is_none());
/// # Ok::<(), colzip::Error>(())
/// ```
#[derive(Clone, Copy)]
pub struct Placement {
    gpu: Option<&'static Gpu>,
    /// Inputs below this many bytes run on the CPU.
    min_bytes: usize,
}

impl Placement {
    /// Everything on the CPU.
    pub const CPU: Placement = Placement {
        gpu: None,
        min_bytes: usize::MAX,
    };

    /// Resolves `backend`: `Cpu` runs everything on the CPU; `Gpu` runs every input of a
    /// codec with a GPU path on the GPU, and is an error naming the reason when no GPU is
    /// usable; `Auto` uses the GPU, when there is one, for inputs of at least
    /// [`GPU_MIN_BYTES`].
    pub fn new(backend: Backend) -> crate::Result<Placement> {
        Ok(match backend {
            Backend::Cpu => Placement::CPU,
            Backend::Gpu => match backend.resolve() {
                Ok(gpu) => Placement { gpu, min_bytes: 0 },
                Err(crate::Error::Gpu(reason)) => {
                    return Err(crate::Error::Gpu(format!(
                        "backend 'gpu' was chosen but no GPU is usable: {reason}"
                    )));
                }
                Err(other) => return Err(other),
            },
            Backend::Auto => Placement {
                gpu: backend.resolve()?,
                min_bytes: GPU_MIN_BYTES,
            },
        })
    }

    /// The GPU, if any, that this placement may use.
    pub fn gpu(&self) -> Option<&'static Gpu> {
        self.gpu
    }

    /// The GPU to run `codec` on for an input of `len` bytes (the uncompressed length, for
    /// decompression too), or `None` for the CPU.
    pub fn gpu_for(&self, codec: CodecId, len: usize) -> Option<&'static Gpu> {
        self.gpu
            .filter(|_| codec.has_gpu_path() && len >= self.min_bytes)
    }
}

impl Default for Placement {
    /// [`Placement::CPU`]: the default of the functions without a placement.
    fn default() -> Self {
        Placement::CPU
    }
}

impl fmt::Debug for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Placement")
            .field("gpu", &self.gpu.map(|g| g.info().name.as_str()))
            .field("min_bytes", &self.min_bytes)
            .finish()
    }
}

impl CodecSpec {
    /// The id of the streams this spec writes.
    pub fn id(&self) -> CodecId {
        match self {
            CodecSpec::Stored => CodecId::Stored,
            CodecSpec::Lzss { .. } => CodecId::Lzss,
            CodecSpec::Gmatch(SnappyFormat::Raw) => CodecId::GmatchRaw,
            CodecSpec::Gmatch(SnappyFormat::Framed) => CodecId::GmatchFramed,
            CodecSpec::Bwt(_) => CodecId::Bwt,
        }
    }

    /// The codec family's name, without parameters.
    pub fn family(&self) -> &'static str {
        match self {
            CodecSpec::Stored => "stored",
            CodecSpec::Lzss { .. } => lzss::NAME,
            CodecSpec::Gmatch(_) => gmatch::NAME,
            CodecSpec::Bwt(_) => bwt::NAME,
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

    /// LZSS parameters for compressing `input` (the symbol width judged on its start).
    fn lzss_params_for(&self, input: &[u8], type_width: usize) -> Result<LzssParams> {
        let sample = &input[..input.len().min(SYMBOL_WIDTH_SAMPLE)];
        self.lzss_params(type_width, sample)
            .ok_or_else(|| CodecError::invalid(lzss::NAME, "bad parameters"))
    }

    /// Compresses `input` on the CPU; its values are `type_width` bytes wide (1 for plain
    /// bytes).
    pub fn compress(&self, input: &[u8], type_width: usize) -> Result<Vec<u8>> {
        Ok(match self {
            CodecSpec::Stored => input.to_vec(),
            CodecSpec::Lzss { .. } => {
                lzss::compress(input, &self.lzss_params_for(input, type_width)?)
            }
            CodecSpec::Gmatch(SnappyFormat::Raw) => gmatch::compress_raw(input)?,
            CodecSpec::Gmatch(SnappyFormat::Framed) => gmatch::compress_framed(input),
            CodecSpec::Bwt(params) => bwt::compress(input, params),
        })
    }

    /// [`Self::compress`] on `gpu` when one is given and the codec has a GPU path, else on
    /// the CPU: the same bytes either way. Parameters that depend on the data (LZSS's
    /// symbol width) are chosen on the CPU. GPU errors are returned, never retried on the
    /// CPU. Usually `gpu` is [`Placement::gpu_for`] of this spec's id and the input length.
    pub fn compress_on(
        &self,
        input: &[u8],
        type_width: usize,
        gpu: Option<&Gpu>,
    ) -> crate::Result<Vec<u8>> {
        match (self, gpu) {
            (CodecSpec::Lzss { .. }, Some(gpu)) => {
                lzss::gpu::compress(gpu, input, &self.lzss_params_for(input, type_width)?)
            }
            (CodecSpec::Gmatch(SnappyFormat::Raw), Some(gpu)) => {
                gmatch::gpu::compress_raw(gpu, input)
            }
            (CodecSpec::Gmatch(SnappyFormat::Framed), Some(gpu)) => {
                gmatch::gpu::compress_framed(gpu, input)
            }
            _ => Ok(self.compress(input, type_width)?),
        }
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
            CodecSpec::Gmatch(SnappyFormat::Raw) => write!(f, "gmatch:raw"),
            CodecSpec::Gmatch(SnappyFormat::Framed) => write!(f, "gmatch:framed"),
            CodecSpec::Bwt(params) => write!(f, "bwt:block={}", params.block_size),
        }
    }
}

/// Parses a byte size such as `4096`, `64k` or `4m`.
fn parse_size(text: &str) -> Option<u64> {
    let lower = text.to_ascii_lowercase();
    let (digits, multiplier) = match lower.strip_suffix(['k', 'm']) {
        Some(digits) if lower.ends_with('k') => (digits, 1024),
        Some(digits) => (digits, 1024 * 1024),
        None => (lower.as_str(), 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(multiplier)
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
                            c = parse_size(value)
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
                let mut format = SnappyFormat::Raw;
                for (key, value) in options {
                    format = match (key, value) {
                        ("raw", None) | ("format", Some("raw")) => SnappyFormat::Raw,
                        ("framed", None) | ("format", Some("framed")) => SnappyFormat::Framed,
                        _ => {
                            return Err(fail(format!(
                                "unknown gmatch option '{key}' (expected raw or framed)"
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
                            let size = parse_size(value)
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
            other => Err(fail(format!(
                "unknown codec '{other}' (expected lzss, gmatch, bwt or stored)"
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
            ("snappy", "gmatch:raw"),
            ("bwt:block=1m", "bwt:block=1048576"),
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
        ] {
            let err = bad.parse::<CodecSpec>().unwrap_err().to_string();
            assert!(err.contains(bad), "{err}");
        }
    }
}
