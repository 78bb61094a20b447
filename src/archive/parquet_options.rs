//! What an archive made from a Parquet file keeps of how that file was written, and the
//! codec `decompress --to parquet` writes.

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use crate::{Error, Result};

/// A Parquet compression codec colzip can write, with its level where it has one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParquetCodec {
    Uncompressed,
    Snappy,
    /// GZIP at level 0..=9 (Parquet's default 6).
    Gzip(u32),
    /// LZ4 (Hadoop framing, deprecated by Parquet).
    Lz4,
    Lz4Raw,
    /// ZSTD at level 1..=22 (Parquet's default 1).
    Zstd(i32),
}

impl ParquetCodec {
    /// What `decompress --to parquet` writes when the archive does not record its
    /// source's codec (archives made before colzip recorded it, and Arrow IPC or raw
    /// sources): ZSTD at level 1.
    pub const DEFAULT: ParquetCodec = ParquetCodec::Zstd(1);

    /// The codec's name as Parquet spells it (levels are not stored in Parquet files).
    pub fn parquet_name(self) -> &'static str {
        match self {
            ParquetCodec::Uncompressed => "UNCOMPRESSED",
            ParquetCodec::Snappy => "SNAPPY",
            ParquetCodec::Gzip(_) => "GZIP",
            ParquetCodec::Lz4 => "LZ4",
            ParquetCodec::Lz4Raw => "LZ4_RAW",
            ParquetCodec::Zstd(_) => "ZSTD",
        }
    }
}

impl fmt::Display for ParquetCodec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParquetCodec::Uncompressed => write!(f, "uncompressed"),
            ParquetCodec::Snappy => write!(f, "snappy"),
            ParquetCodec::Gzip(level) => write!(f, "gzip({level})"),
            ParquetCodec::Lz4 => write!(f, "lz4"),
            ParquetCodec::Lz4Raw => write!(f, "lz4_raw"),
            ParquetCodec::Zstd(level) => write!(f, "zstd({level})"),
        }
    }
}

impl FromStr for ParquetCodec {
    type Err = Error;

    /// `uncompressed`, `snappy`, `gzip[(0..9)]`, `lz4`, `lz4_raw`, `zstd[(1..22)]`, in any
    /// case (Parquet's own names, such as `ZSTD`, included).
    ///
    /// ```
    /// use colzip::archive::ParquetCodec;
    /// assert_eq!("snappy".parse::<ParquetCodec>()?, ParquetCodec::Snappy);
    /// assert_eq!("ZSTD".parse::<ParquetCodec>()?, ParquetCodec::Zstd(1));
    /// assert_eq!("zstd(9)".parse::<ParquetCodec>()?.to_string(), "zstd(9)");
    /// assert!("zstd(40)".parse::<ParquetCodec>().is_err());
    /// # Ok::<(), colzip::Error>(())
    /// ```
    fn from_str(text: &str) -> Result<Self> {
        let bad = |why: String| {
            Error::format(format!(
                "'{text}' is not a Parquet codec colzip writes ({why}; expected uncompressed, \
                 snappy, gzip[(0..9)], lz4, lz4_raw or zstd[(1..22)])"
            ))
        };
        let lower = text.trim().to_ascii_lowercase();
        let (name, level) = match lower.split_once('(') {
            Some((name, rest)) => {
                let level = rest
                    .strip_suffix(')')
                    .and_then(|l| l.trim().parse::<i64>().ok())
                    .ok_or_else(|| bad("a level is a whole number in parentheses".into()))?;
                (name.trim(), Some(level))
            }
            None => (lower.as_str(), None),
        };
        let no_level = |codec: ParquetCodec| match level {
            None => Ok(codec),
            Some(_) => Err(bad(format!("{name} takes no level"))),
        };
        match name {
            "uncompressed" | "none" => no_level(ParquetCodec::Uncompressed),
            "snappy" => no_level(ParquetCodec::Snappy),
            "lz4" => no_level(ParquetCodec::Lz4),
            "lz4_raw" => no_level(ParquetCodec::Lz4Raw),
            "gzip" => match level.unwrap_or(6) {
                level @ 0..=9 => Ok(ParquetCodec::Gzip(level as u32)),
                other => Err(bad(format!("gzip level {other} is outside 0..9"))),
            },
            "zstd" => match level.unwrap_or(1) {
                level @ 1..=22 => Ok(ParquetCodec::Zstd(level as i32)),
                other => Err(bad(format!("zstd level {other} is outside 1..22"))),
            },
            other => Err(bad(format!("unknown codec '{other}'"))),
        }
    }
}

#[cfg(feature = "parquet")]
impl ParquetCodec {
    /// The parquet crate's codec.
    pub fn to_parquet(self) -> parquet::basic::Compression {
        use parquet::basic::{Compression, GzipLevel, ZstdLevel};
        match self {
            ParquetCodec::Uncompressed => Compression::UNCOMPRESSED,
            ParquetCodec::Snappy => Compression::SNAPPY,
            ParquetCodec::Gzip(level) => {
                Compression::GZIP(GzipLevel::try_new(level).unwrap_or_default())
            }
            ParquetCodec::Lz4 => Compression::LZ4,
            ParquetCodec::Lz4Raw => Compression::LZ4_RAW,
            ParquetCodec::Zstd(level) => {
                Compression::ZSTD(ZstdLevel::try_new(level).unwrap_or_default())
            }
        }
    }
}

/// How the Parquet file an archive was made from was written, as far as its metadata
/// says: what `colzip decompress --to parquet` writes again. Parquet files do not store
/// compression levels, so a recorded codec is written at its default level.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ParquetOptions {
    /// The codec of the file's column chunks as Parquet names it (`SNAPPY`, `ZSTD`,
    /// `GZIP`, ...): the one most chunks use.
    pub compression: String,
    /// Leaf columns (dotted paths) whose chunks use another codec, with that codec.
    pub column_compression: Vec<(String, String)>,
    /// Rows in the file's largest row group (0: the file has none).
    pub max_row_group_rows: u64,
}

impl ParquetOptions {
    /// The key-value pairs the archive header stores (see `docs/FORMAT.md`).
    pub(crate) fn to_pairs(&self) -> Vec<(String, String)> {
        let mut pairs = vec![
            ("compression".to_string(), self.compression.clone()),
            (
                "max_row_group_rows".into(),
                self.max_row_group_rows.to_string(),
            ),
        ];
        for (column, codec) in &self.column_compression {
            pairs.push((format!("compression:{column}"), codec.clone()));
        }
        pairs
    }

    /// Reads the pairs [`Self::to_pairs`] wrote; keys it does not know (from a later
    /// colzip) are ignored.
    pub(crate) fn from_pairs(pairs: &[(String, String)]) -> Result<Self> {
        let mut options = ParquetOptions::default();
        for (key, value) in pairs {
            let number = || {
                value.parse::<i64>().map_err(|_| {
                    Error::format(format!(
                        "archive: Parquet option {key} = '{value}' is not a number"
                    ))
                })
            };
            match key.as_str() {
                "compression" => options.compression = value.clone(),
                "max_row_group_rows" => options.max_row_group_rows = number()?.max(0) as u64,
                _ => {
                    if let Some(column) = key.strip_prefix("compression:") {
                        options
                            .column_compression
                            .push((column.to_string(), value.clone()));
                    }
                }
            }
        }
        Ok(options)
    }

    /// What a Parquet file's metadata says of how it was written.
    #[cfg(feature = "parquet")]
    pub fn from_metadata(metadata: &parquet::file::metadata::ParquetMetaData) -> Self {
        let mut counts: Vec<(String, usize)> = Vec::new();
        let mut per_column: Vec<(String, String)> = Vec::new();
        for group in metadata.row_groups() {
            for chunk in group.columns() {
                let name = codec_name(chunk.compression());
                match counts.iter_mut().find(|(n, _)| *n == name) {
                    Some((_, count)) => *count += 1,
                    None => counts.push((name.clone(), 1)),
                }
                let path = chunk.column_path().string();
                if !per_column.iter().any(|(p, _)| *p == path) {
                    per_column.push((path, name));
                }
            }
        }
        let compression = counts
            .iter()
            .max_by_key(|(_, count)| *count)
            .map(|(name, _)| name.clone())
            .unwrap_or_else(|| ParquetCodec::DEFAULT.parquet_name().to_string());
        ParquetOptions {
            column_compression: per_column
                .into_iter()
                .filter(|(_, codec)| *codec != compression)
                .collect(),
            compression,
            max_row_group_rows: metadata
                .row_groups()
                .iter()
                .map(|g| g.num_rows().max(0) as u64)
                .max()
                .unwrap_or(0),
        }
    }
}

/// A chunk's codec as Parquet names it, without the level the parquet crate fills in.
#[cfg(feature = "parquet")]
fn codec_name(compression: parquet::basic::Compression) -> String {
    let text = compression.to_string();
    text.split('(').next().unwrap_or(&text).to_string()
}
