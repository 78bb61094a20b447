//! What `colzip queries` runs: the stores and the configuration.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use serde::Serialize;

use colzip::codec::Placement;
use colzip::column::CodecChoice;
use colzip::datafusion::table::{CompressOptions, Residence};
use colzip::gpu::Backend;
use colzip::{Error, Result};

/// Where the tables are held; see the [module docs](super).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Store {
    /// DataFusion `MemTable`s.
    Memory,
    /// colzip `CompressedTable`s.
    Compressed,
    /// SNAPPY Parquet files written and read by DataFusion.
    Parquet,
    /// Parquet files written by colzip, read by colzip's scan.
    #[serde(rename = "colzip-parquet")]
    ColzipParquet,
}

impl Store {
    /// The four stores, in their default order.
    pub const ALL: [Store; 4] = [
        Store::Memory,
        Store::Compressed,
        Store::Parquet,
        Store::ColzipParquet,
    ];

    /// Whether the store reads Parquet files.
    pub fn is_parquet(self) -> bool {
        matches!(self, Store::Parquet | Store::ColzipParquet)
    }

    /// The store's name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Store::Memory => "memory",
            Store::Compressed => "compressed",
            Store::Parquet => "parquet",
            Store::ColzipParquet => "colzip-parquet",
        }
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Store {
    type Err = Error;

    /// A store by name.
    fn from_str(text: &str) -> Result<Store> {
        let lower = text.trim().to_ascii_lowercase();
        Store::ALL
            .into_iter()
            .find(|s| s.name() == lower)
            .ok_or_else(|| {
                Error::format(format!(
                    "unknown store '{text}' (expected memory, compressed, parquet or \
                     colzip-parquet)"
                ))
            })
    }
}

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// TPC-H scale factor.
    pub sf: f64,
    /// The stores to measure, in the order they run and are reported (no repeats).
    pub stores: Vec<Store>,
    /// The queries, 1 to 22 (no repeats).
    pub queries: Vec<usize>,
    /// Timed runs per query and store, after one warm-up run (at least 1).
    pub runs: usize,
    /// Codec of the `compressed` store.
    pub codec: CodecChoice,
    /// Where the `compressed` store's codecs and the `colzip-parquet` store's page
    /// compression run; its scans decompress on the GPU only with [`Backend::Gpu`].
    pub backend: Backend,
    /// Directory for the Parquet stores' files (`<table>.parquet` for `parquet`,
    /// `<table>.colzip.parquet` for `colzip-parquet`, which must not exist yet; they are
    /// kept); `None`: a temporary directory, removed at the end.
    pub dir: Option<PathBuf>,
    /// Whether the `compressed` store's scans evaluate the filters they can
    /// ([`CompressOptions::scan_filters`](colzip::datafusion::table::CompressOptions::scan_filters)).
    pub scan_filters: bool,
    /// Whether the `compressed` store's scans apply partitioned joins' filters too
    /// ([`CompressOptions::partitioned_join_filters`](colzip::datafusion::table::CompressOptions::partitioned_join_filters)).
    pub partitioned_join_filters: bool,
    /// Where the `compressed` store keeps its blocks
    /// ([`CompressOptions::residence`](colzip::datafusion::table::CompressOptions::residence)).
    pub residence: Residence,
    /// The store every result is compared with, `memory` or `parquet`. With `memory` the
    /// eight tables are generated whole and held in memory while the stores are built.
    /// With `parquet` no table is ever held whole: each is generated a few parts at a
    /// time, each part written to a Parquet file of its own (`<dir>/<table>/`, the
    /// `parquet` store) and compressed into the `compressed` store as it comes, so the
    /// compressed store can be measured at scale factors whose plain tables would not fit
    /// in memory; the `memory` store cannot run then.
    pub reference: Store,
}

impl Config {
    /// The options the `compressed` store's tables are made with, codecs placed by
    /// `placement` (the backend resolved).
    pub(super) fn compress_options(&self, placement: Placement) -> CompressOptions {
        CompressOptions {
            codec: self.codec,
            placement,
            scan_filters: self.scan_filters,
            partitioned_join_filters: self.partitioned_join_filters,
            residence: self.residence,
            ..CompressOptions::default()
        }
    }
}

impl Default for Config {
    /// SF 0.1, the four stores, the 22 queries, 3 runs, `auto` on the CPU, the memory
    /// store as the reference.
    fn default() -> Self {
        Config {
            sf: 0.1,
            stores: Store::ALL.to_vec(),
            queries: (1..=22).collect(),
            runs: 3,
            codec: CodecChoice::Auto,
            backend: Backend::Cpu,
            dir: None,
            scan_filters: true,
            partitioned_join_filters: true,
            residence: Residence::Auto,
            reference: Store::Memory,
        }
    }
}
