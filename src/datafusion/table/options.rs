//! How a compressed table compresses its columns: the codec per column, the block size,
//! the placement, the scan's window, whether scans evaluate filters, and where the
//! blocks are kept.

use std::collections::HashMap;

use super::window;
use crate::Result;
use crate::codec::Placement;
use crate::column::{AutoCodecs, CodecChoice};
use crate::gpu::Backend;

/// Rows per compressed block unless [`CompressOptions::block_rows`] says otherwise: large
/// enough for the codecs to find repeats, small enough that a limit or a partition's
/// decompression does not touch much more than it needs.
pub const DEFAULT_BLOCK_ROWS: usize = 64 * 1024;

/// How a [`CompressedTable`](super::CompressedTable) compresses its columns.
#[derive(Clone, Debug)]
pub struct CompressOptions {
    /// The codec of every column not named in `columns`.
    pub codec: CodecChoice,
    /// Codecs of particular columns, by name.
    pub columns: HashMap<String, CodecChoice>,
    /// Where the codecs run, compressing and decompressing.
    pub placement: Placement,
    /// Rows per block: the input batches of a partition are cut and joined to this size.
    pub block_rows: usize,
    /// Plain bytes of the projected columns a scan decodes per batched call (a window of
    /// whole blocks, at least one): what a partition's scan holds, twice over, at a time.
    pub scan_window_bytes: usize,
    /// Where the table keeps its blocks between queries.
    pub residence: Residence,
    /// Whether scans evaluate the filters they can themselves (exact pushdown: the rows
    /// they hand out all pass, and the other columns are decoded only for blocks where
    /// some row does). When false, every filter stays above the scan, which only skips
    /// blocks by their zones.
    pub scan_filters: bool,
    /// Whether scans also apply the filters of joins that repartition both sides (a
    /// `CASE` over each row's hash partition), by routing each row once, where the scan
    /// has columns besides the join's keys (a scan of the keys alone leaves them to the
    /// join it feeds). On by default: they make the compressed store's TPC-H queries
    /// faster on the whole, a few of them slower (docs/PERFORMANCE.md). The filters of
    /// joins that build one table for every partition are applied either way.
    pub partitioned_join_filters: bool,
}

impl Default for CompressOptions {
    /// `auto` for every column, on the CPU, blocks of [`DEFAULT_BLOCK_ROWS`], scans by
    /// windows of [`window::WINDOW_BYTES`] that evaluate the filters they can.
    fn default() -> Self {
        CompressOptions {
            codec: CodecChoice::Auto,
            columns: HashMap::new(),
            placement: Placement::CPU,
            block_rows: DEFAULT_BLOCK_ROWS,
            scan_window_bytes: window::WINDOW_BYTES,
            scan_filters: true,
            partitioned_join_filters: true,
            residence: Residence::Auto,
        }
    }
}

/// Where a compressed table keeps its blocks between queries.
///
/// ```
/// use colzip::datafusion::table::Residence;
/// assert_eq!("host".parse::<Residence>()?, Residence::Host);
/// assert_eq!(Residence::default().to_string(), "auto");
/// assert!("disk".parse::<Residence>().is_err());
/// # Ok::<(), colzip::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Residence {
    /// The compressed streams of the fixed-width columns are uploaded to a GPU of the
    /// placement when the table is loaded or inserted into, while the GPU has room under
    /// its bound for resident bytes (half its memory); the rest stays on the host. On
    /// the CPU, this is `host`.
    #[default]
    Auto,
    /// As `auto`, but a placement without a GPU is an error.
    Gpu,
    /// Blocks stay on the host; scans on a GPU upload what they decode each time.
    Host,
}

impl std::str::FromStr for Residence {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "auto" => Ok(Residence::Auto),
            "gpu" => Ok(Residence::Gpu),
            "host" => Ok(Residence::Host),
            other => Err(crate::Error::Usage(format!(
                "unknown residence '{other}': expected auto, gpu or host"
            ))),
        }
    }
}

impl std::fmt::Display for Residence {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Residence::Auto => "auto",
            Residence::Gpu => "gpu",
            Residence::Host => "host",
        })
    }
}

impl CompressOptions {
    /// `codec` for every column, placed by `COLZIP_BACKEND` (the GPU when present unless
    /// it says `cpu`).
    ///
    /// ```
    /// use colzip::datafusion::table::CompressOptions;
    /// let options = CompressOptions::from_env("gmatch".parse()?)?.with_column("l_comment", "bwt".parse()?);
    /// assert_eq!(options.codec_for("l_comment"), "bwt".parse()?);
    /// assert_eq!(options.codec_for("l_orderkey"), "gmatch".parse()?);
    /// # Ok::<(), colzip::Error>(())
    /// ```
    pub fn from_env(codec: CodecChoice) -> Result<Self> {
        Ok(CompressOptions {
            codec,
            placement: Placement::new(Backend::from_env()?)?,
            ..CompressOptions::default()
        })
    }

    /// Compresses column `name` with `codec`.
    pub fn with_column(mut self, name: impl Into<String>, codec: CodecChoice) -> Self {
        self.columns.insert(name.into(), codec);
        self
    }

    /// The codec column `name` is compressed with. Plain `auto` leaves bwt out: a table is
    /// compressed to be scanned, and bwt is by far the slowest codec to decode, on the CPU
    /// and on the GPU alike: without it queries and loading take less time, for somewhat
    /// more memory held (docs/PERFORMANCE.md). Named codecs and `auto:among=` (bwt
    /// included, if asked) are kept as given.
    ///
    /// ```
    /// use colzip::codec::Placement;
    /// use colzip::column::{AutoCodecs, CodecChoice};
    /// use colzip::datafusion::table::CompressOptions;
    /// let options = CompressOptions { placement: Placement::CPU, ..CompressOptions::default() };
    /// let fast = AutoCodecs::parse("lzss+gmatch+intpack").unwrap();
    /// assert_eq!(options.codec_for("l_comment"), CodecChoice::AutoAmong(fast));
    /// # Ok::<(), colzip::Error>(())
    /// ```
    pub fn codec_for(&self, name: &str) -> CodecChoice {
        match self.columns.get(name).copied().unwrap_or(self.codec) {
            CodecChoice::Auto => {
                CodecChoice::AutoAmong(AutoCodecs::ALL.without(crate::codec::bwt::NAME))
            }
            choice => choice,
        }
    }
}
