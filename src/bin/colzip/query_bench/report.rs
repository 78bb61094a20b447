//! What a run measured: a row per query and store, a row per store, the comparisons
//! between stores, the progress events, and the report as a table or JSON.

use std::collections::HashMap;

use serde::Serialize;

use super::Store;
use colzip::Result;
use colzip::tpch::Table;

/// One query on one store.
#[derive(Clone, Debug, Serialize)]
pub struct QueryRow {
    pub store: Store,
    pub query: usize,
    /// Median of the timed runs, planning and execution, in seconds.
    pub seconds: f64,
    /// Median of the timed runs' planning (parsing, logical and physical planning), in
    /// seconds: the part of `seconds` before execution began.
    pub plan_seconds: f64,
    /// Rows the query returned.
    pub rows: usize,
    /// Whether every run's result equals the reference store's ([`Report::reference`]).
    pub equal: bool,
    /// The first difference, when not equal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub difference: Option<String>,
    /// For the Parquet stores: the time its file scans took, summed over their
    /// partitions (the timed runs' mean), in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_seconds: Option<f64>,
    /// For `colzip-parquet`: the part of `scan_seconds` spent decompressing pages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompress_seconds: Option<f64>,
    /// The largest resident set size of the process while the query ran (every run),
    /// where the platform reports it: what the store's data and this query's working
    /// memory held together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peak_rss_bytes: Option<u64>,
}

/// One store: what it holds and what its queries took.
#[derive(Clone, Debug, Serialize)]
pub struct StoreRow {
    pub store: Store,
    /// Memory the tables hold (`memory`: Arrow memory of the batches, `compressed`: the
    /// codec streams), or for the Parquet stores the files' bytes on disk.
    pub bytes_held: u64,
    /// Peak resident memory of the process while the store's queries ran (sampled every
    /// 10 ms); `null` where it cannot be read (not Linux).
    pub peak_rss_bytes: Option<u64>,
    /// Resident memory when the store's queries began: what the peak rose from.
    pub rss_before_bytes: Option<u64>,
    /// Time to build the store from the generated tables (compression; writing the
    /// Parquet files), in seconds.
    pub load_seconds: f64,
    /// For the compressed store: the part of `bytes_held` also kept in GPU memory after
    /// its queries (the blocks whose rows were selected there); the rest is host memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gpu_resident_bytes: Option<u64>,
    /// For the compressed store: the pinned host memory the GPU's buffer pool held after
    /// its queries (idle buffers included), part of the resident memory above.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned_pool_bytes: Option<u64>,
    /// For the Parquet stores: the time the file scans of its queries took, summed over
    /// the scans' partitions, per run (the timed runs' mean), in seconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scan_seconds: Option<f64>,
    /// For `colzip-parquet`: the part of `scan_seconds` spent in batched page
    /// decompression.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub decompress_seconds: Option<f64>,
}

/// What [`run`](super::run) measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub sf: f64,
    /// The `compressed` store's backend, as asked for: auto, cpu or gpu.
    pub backend: String,
    /// The GPU that backend may use, if any.
    pub gpu: Option<String>,
    /// The `compressed` store's codec.
    pub codec: String,
    /// Whether the `compressed` store's scans evaluated the filters they can.
    pub scan_filters: bool,
    /// Whether they applied partitioned joins' filters too.
    pub partitioned_join_filters: bool,
    pub runs: usize,
    /// The store every result was compared with ([`Config::reference`](super::Config::reference)).
    pub reference: Store,
    /// One row per store and query, store by store in [`Config::stores`](super::Config::stores) order.
    pub queries: Vec<QueryRow>,
    /// One row per store, in [`Config::stores`](super::Config::stores) order.
    pub stores: Vec<StoreRow>,
    /// Each store's per-query times against the `memory` and `parquet` stores' (those
    /// measured).
    pub comparisons: Vec<Comparison>,
}

/// One store's query times relative to another's, query by query: totals hide a store
/// that is slow on most queries behind one query that is slow elsewhere.
#[derive(Clone, Debug, Serialize)]
pub struct Comparison {
    pub store: Store,
    /// The store compared with.
    pub against: Store,
    /// The geometric mean of the per-query ratios of medians (below 1: faster).
    pub geometric_mean: f64,
    /// The query with the largest ratio, and that ratio.
    pub worst_query: usize,
    pub worst_ratio: f64,
    /// How many queries both stores ran.
    pub queries: usize,
}

/// Every store against the `memory` and `parquet` stores, where both ran some query.
pub fn comparisons(queries: &[QueryRow], stores: &[StoreRow]) -> Vec<Comparison> {
    let mut out = Vec::new();
    for against in [Store::Memory, Store::Parquet] {
        for store in stores.iter().map(|s| s.store).filter(|&s| s != against) {
            let ratios: Vec<(usize, f64)> = queries
                .iter()
                .filter(|q| q.store == store)
                .filter_map(|q| {
                    let reference = queries
                        .iter()
                        .find(|r| r.store == against && r.query == q.query)?;
                    (q.seconds > 0.0 && reference.seconds > 0.0)
                        .then(|| (q.query, q.seconds / reference.seconds))
                })
                .collect();
            let Some(&(worst_query, worst_ratio)) =
                ratios.iter().max_by(|a, b| a.1.total_cmp(&b.1))
            else {
                continue;
            };
            let log_mean = ratios.iter().map(|r| r.1.ln()).sum::<f64>() / ratios.len() as f64;
            out.push(Comparison {
                store,
                against,
                geometric_mean: log_mean.exp(),
                worst_query,
                worst_ratio,
                queries: ratios.len(),
            });
        }
    }
    out
}

/// Progress of a [`run`](super::run).
#[derive(Debug)]
pub enum Event<'a> {
    /// A table is being generated.
    Generating(Table),
    /// A table was generated.
    Generated { table: Table, rows: usize },
    /// A store is being built.
    Loading(Store),
    /// A store was built: it holds `bytes_held` bytes, made in `seconds`.
    Loaded {
        store: Store,
        bytes_held: u64,
        seconds: f64,
    },
    /// The reference result of a query is being computed on the reference store
    /// ([`Config::reference`](super::Config::reference)), which was not asked for (so it
    /// is not timed).
    Reference { store: Store, query: usize },
    /// A query was measured on a store.
    Measured(&'a QueryRow),
    /// A store's queries are done.
    Done(&'a StoreRow),
}

impl Report {
    /// Whether every result of every store equals the reference store's.
    pub fn all_equal(&self) -> bool {
        self.queries.iter().all(|q| q.equal)
    }

    /// The report as one JSON document.
    pub fn to_json(&self) -> Result<String> {
        colzip::reporting::json(self)
    }

    /// The report as text: a row per query with a column of seconds per store and
    /// whether all stores agree, the totals, then a row per store, then any differences.
    pub fn to_table(&self) -> String {
        use std::fmt::Write;

        let stores: Vec<Store> = self.stores.iter().map(|s| s.store).collect();
        let mut by_query: Vec<usize> = Vec::new();
        let mut seconds: HashMap<(Store, usize), &QueryRow> = HashMap::new();
        for row in &self.queries {
            if !by_query.contains(&row.query) {
                by_query.push(row.query);
            }
            seconds.insert((row.store, row.query), row);
        }
        let mut out = String::new();
        let _ = writeln!(
            out,
            "TPC-H SF {}: median seconds of {} timed run(s) after a warm-up; compressed store: \
             codec {}, backend {}{}, filters {}",
            self.sf,
            self.runs,
            self.codec,
            self.backend,
            self.gpu
                .as_ref()
                .map_or(String::new(), |name| format!(" ({name})")),
            match (self.scan_filters, self.partitioned_join_filters) {
                (true, true) => "evaluated in the scan, partitioned joins' filters too",
                (true, false) => "evaluated in the scan",
                (false, true) => "above the scan, partitioned joins' filters in it",
                (false, false) => "above the scan",
            }
        );
        let _ = write!(out, "{:<6}", "query");
        for store in &stores {
            let _ = write!(out, " {:>14}", store.name());
        }
        let _ = writeln!(out, "  {:>4}  equal to {}", "rows", self.reference);
        for &query in &by_query {
            let _ = write!(out, "{:<6}", format!("Q{query}"));
            let mut rows = 0;
            let mut differ = Vec::new();
            for store in &stores {
                match seconds.get(&(*store, query)) {
                    Some(row) => {
                        let _ = write!(out, " {:>14.3}", row.seconds);
                        rows = row.rows.max(rows);
                        if !row.equal {
                            differ.push(store.name());
                        }
                    }
                    None => {
                        let _ = write!(out, " {:>14}", "-");
                    }
                }
            }
            let verdict = if differ.is_empty() {
                "yes".to_string()
            } else {
                format!("NO: {}", differ.join(", "))
            };
            let _ = writeln!(out, "  {rows:>4}  {verdict}");
        }
        let totals: Vec<f64> = stores.iter().map(|s| self.total_seconds(*s)).collect();
        let _ = write!(out, "{:<6}", "total");
        for total in &totals {
            let _ = write!(out, " {total:>14.3}");
        }
        let _ = writeln!(out);
        let _ = writeln!(out);
        let memory = self.stores.iter().find(|s| s.store == Store::Memory);
        let _ = writeln!(
            out,
            "{:<14} {:>12} {:>9} {:>12} {:>12} {:>9} {:>9} {:>9}",
            "store",
            "held MB",
            "vs memory",
            "peak RSS MB",
            "RSS before",
            "load s",
            "queries s",
            "vs memory"
        );
        let mb = |bytes: Option<u64>| {
            bytes.map_or("-".to_string(), |b| format!("{:.1}", b as f64 / 1e6))
        };
        for (row, total) in self.stores.iter().zip(&totals) {
            let (held_ratio, time_ratio) = match memory {
                Some(m) => (
                    format!("{:.2}x", m.bytes_held as f64 / row.bytes_held.max(1) as f64),
                    format!(
                        "{:.2}x",
                        total / self.total_seconds(Store::Memory).max(1e-9)
                    ),
                ),
                None => ("-".into(), "-".into()),
            };
            let _ = writeln!(
                out,
                "{:<14} {:>12} {:>9} {:>12} {:>12} {:>9.3} {:>9.3} {:>9}",
                row.store.name(),
                mb(Some(row.bytes_held)),
                held_ratio,
                mb(row.peak_rss_bytes),
                mb(row.rss_before_bytes),
                row.load_seconds,
                total,
                time_ratio
            );
        }
        let _ = writeln!(
            out,
            "(held: smaller by the factor shown; queries: the sum of the medians, slower by \
             the factor shown)"
        );
        for row in &self.stores {
            if let Some(gpu) = row.gpu_resident_bytes {
                let _ = writeln!(
                    out,
                    "{}: {} MB of the {} MB held are also in GPU memory (columns whose rows were selected there)",
                    row.store.name(),
                    mb(Some(gpu)),
                    mb(Some(row.bytes_held))
                );
            }
            if let Some(pinned) = row.pinned_pool_bytes {
                let _ = writeln!(
                    out,
                    "{}: the pinned buffer pool held {} MB of host memory after its queries",
                    row.store.name(),
                    mb(Some(pinned))
                );
            }
        }
        for row in &self.stores {
            let Some(scan) = row.scan_seconds else {
                continue;
            };
            let share = row.decompress_seconds.map_or(String::new(), |d| {
                format!(
                    ", decompressing pages {d:.3} s ({:.1}% of it)",
                    100.0 * d / scan.max(1e-9)
                )
            });
            let _ = writeln!(
                out,
                "{}: file scans {scan:.3} s a run (summed over partitions){share}",
                row.store.name()
            );
        }
        for c in &self.comparisons {
            let _ = writeln!(
                out,
                "{} against {}: per-query geometric mean {:.2}x, worst Q{} {:.2}x ({} queries)",
                c.store.name(),
                c.against.name(),
                c.geometric_mean,
                c.worst_query,
                c.worst_ratio,
                c.queries
            );
        }
        for row in self.queries.iter().filter(|q| !q.equal) {
            let _ = writeln!(
                out,
                "Q{} on {} differs from {}: {}",
                row.query,
                row.store,
                self.reference,
                row.difference.as_deref().unwrap_or("")
            );
        }
        out
    }

    /// The sum of the medians of `store`'s queries, in seconds.
    pub fn total_seconds(&self, store: Store) -> f64 {
        self.queries
            .iter()
            .filter(|q| q.store == store)
            .map(|q| q.seconds)
            .sum()
    }
}
