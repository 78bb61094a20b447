//! The 22 TPC-H queries over several stores of the same data, every result checked
//! against the plain in-memory one: what `colzip queries` runs.
//!
//! The eight tables are generated once, in-process, and held by each [`Store`]:
//!
//! - `memory`: DataFusion `MemTable`s of the generated batches;
//! - `compressed`: colzip [`CompressedTable`](colzip::datafusion::table::CompressedTable)s,
//!   every column compressed with the chosen codec on the chosen backend;
//! - `parquet`: one SNAPPY Parquet file per table, written by DataFusion
//!   (`DataFrame::write_parquet`) and read by DataFusion's stock Parquet reader;
//! - `colzip-parquet`: one Parquet file per table written by colzip (`COPY … STORED AS
//!   COLZIP_PARQUET`, gmatch's SNAPPY pages), read by colzip's Parquet scan
//!   ([`colzip::datafusion::parquet_scan`]: each row group's pages decompressed in one
//!   batched call); the `COPY` on the chosen backend, the scan's decompression on the GPU
//!   only with `gpu` (under `auto` the scan decompresses on the CPU: see `parquet_scan`).
//!
//! Each query runs once to warm up, then [`Config::runs`] timed runs (planning and
//! execution; the median counts). Every run's result, the warm-up's included, is compared
//! with the reference store's ([`same_result::difference`]: values as printed, floats with a
//! relative tolerance). The reference ([`Config::reference`]) runs first: by default the
//! `memory` store; when it is not among the stores asked for, each query runs on it once,
//! untimed, and it is not reported. With the `parquet` reference no table is held whole
//! (each is generated a few parts at a time, written to Parquet files and compressed as
//! it comes), so the compressed store can be measured at scale factors whose plain tables
//! do not fit in memory. For the Parquet stores, each store's row also gives the time its file
//! scans took and, for `colzip-parquet`, the part of it spent decompressing pages (both
//! summed over partitions, per run). Stores run one after another, each holding only its own data while its
//! queries run (the generated batches are dropped once the other stores are loaded), so
//! each store's peak resident memory is its own.

use colzip::codec::Placement;
use colzip::tpch::{self, Table};
use colzip::{Error, Result};

mod config;
mod measure;
mod report;
mod same_result;
mod streamed;

pub use config::{Config, Store};
use measure::{ParquetDir, measure};
pub use report::{Event, QueryRow, Report, StoreRow, comparisons};

/// Generates the tables, builds the stores and runs the queries on each, as `config`
/// says, reporting progress to `progress`. Builds its own tokio runtime: call it from
/// outside one. An error stops the run; results that differ do not (see
/// [`Report::all_equal`]).
pub fn run(config: &Config, progress: &(dyn Fn(Event<'_>) + Sync)) -> Result<Report> {
    check(config)?;
    // Before minutes of work: `--backend gpu` without a GPU, a bad scale factor, a
    // Parquet directory that cannot be used.
    let placement = Placement::new(config.backend)?;
    tpch::check_generable(&Table::ALL, config.sf)?;
    if config.reference == Store::Memory {
        tpch::check_fits_memory(&Table::ALL, config.sf).map_err(|e| {
            Error::format(format!(
                "{e}; the parquet reference (--reference parquet, without the memory store) \
                 never holds the plain tables"
            ))
        })?;
    }
    let parquet_dir =
        if config.reference == Store::Parquet || config.stores.iter().any(|s| s.is_parquet()) {
            Some(ParquetDir::new(config.dir.as_deref())?)
        } else {
            None
        };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let (queries, stores) = runtime.block_on(measure(config, placement, parquet_dir, progress))?;
    Ok(Report {
        comparisons: comparisons(&queries, &stores),
        sf: config.sf,
        backend: config.backend.to_string(),
        gpu: placement.gpu().map(|g| g.info().name.clone()),
        codec: config.codec.to_string(),
        scan_filters: config.scan_filters,
        partitioned_join_filters: config.partitioned_join_filters,
        runs: config.runs,
        reference: config.reference,
        queries,
        stores,
    })
}

fn check(config: &Config) -> Result<()> {
    if config.stores.is_empty() {
        return Err(Error::format("no store to measure"));
    }
    if config.queries.is_empty() {
        return Err(Error::format("no query to run"));
    }
    if config.runs == 0 {
        return Err(Error::format("at least one timed run is needed"));
    }
    match config.reference {
        Store::Parquet if config.stores.contains(&Store::Memory) => {
            return Err(Error::format(
                "the memory store cannot run with the parquet reference, which never holds \
                 the plain tables: leave memory out of the stores",
            ));
        }
        Store::Memory | Store::Parquet => {}
        other => {
            return Err(Error::format(format!(
                "the reference store is memory or parquet, not {other}"
            )));
        }
    }
    for (i, store) in config.stores.iter().enumerate() {
        if config.stores[..i].contains(store) {
            return Err(Error::format(format!("store {store} is named twice")));
        }
    }
    for (i, &query) in config.queries.iter().enumerate() {
        if tpch::queries::query(query).is_none() {
            return Err(Error::format(format!(
                "there is no TPC-H query {query} (1 to 22)"
            )));
        }
        if config.queries[..i].contains(&query) {
            return Err(Error::format(format!("query {query} is named twice")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_configs_are_refused() {
        let bad = |config: Config| check(&config).unwrap_err().to_string();
        assert!(
            bad(Config {
                stores: vec![],
                ..Config::default()
            })
            .contains("no store")
        );
        assert!(
            bad(Config {
                queries: vec![23],
                ..Config::default()
            })
            .contains("query 23")
        );
        assert!(
            bad(Config {
                queries: vec![1, 1],
                ..Config::default()
            })
            .contains("twice")
        );
        assert!(
            bad(Config {
                stores: vec![Store::Parquet, Store::Parquet],
                ..Config::default()
            })
            .contains("twice")
        );
        assert!(
            bad(Config {
                runs: 0,
                ..Config::default()
            })
            .contains("timed run")
        );
        assert_eq!("parquet".parse::<Store>().unwrap(), Store::Parquet);
        assert_eq!(
            "colzip-parquet".parse::<Store>().unwrap(),
            Store::ColzipParquet
        );
        assert!(
            "disk"
                .parse::<Store>()
                .unwrap_err()
                .to_string()
                .contains("expected memory")
        );
    }

    #[test]
    fn a_small_run_compares_every_store_with_the_reference() {
        let config = Config {
            sf: 0.001,
            stores: vec![Store::Memory, Store::Compressed],
            queries: vec![1, 6],
            runs: 1,
            ..Config::default()
        };
        let report = run(&config, &|_| {}).unwrap();
        assert!(report.all_equal());
        assert_eq!(report.queries.len(), 4);
        assert!(report.stores[1].bytes_held < report.stores[0].bytes_held);
    }

    #[test]
    fn the_table_shows_differences_and_totals() {
        let row = |store: Store, query, seconds, equal: bool| QueryRow {
            store,
            query,
            seconds,
            plan_seconds: seconds / 10.0,
            rows: 3,
            equal,
            difference: (!equal).then(|| "row 1, column 2: 5 where 4 was expected".into()),
            scan_seconds: store.is_parquet().then_some(2.0),
            decompress_seconds: (store == Store::ColzipParquet).then_some(0.5),
            peak_rss_bytes: None,
        };
        let store = |store: Store, bytes_held| StoreRow {
            store,
            bytes_held,
            peak_rss_bytes: Some(3_000_000),
            rss_before_bytes: None,
            load_seconds: 0.5,
            gpu_resident_bytes: (store == Store::Compressed).then_some(1_500_000),
            pinned_pool_bytes: (store == Store::Compressed).then_some(64 << 20),
            scan_seconds: store.is_parquet().then_some(4.0),
            decompress_seconds: (store == Store::ColzipParquet).then_some(1.0),
        };
        let mut report = Report {
            comparisons: Vec::new(),
            scan_filters: true,
            partitioned_join_filters: false,
            sf: 0.5,
            backend: "cpu".into(),
            gpu: None,
            codec: "gmatch".into(),
            runs: 3,
            reference: Store::Memory,
            queries: vec![
                row(Store::Memory, 6, 1.0, true),
                row(Store::Memory, 1, 2.0, true),
                row(Store::Parquet, 6, 1.5, true),
                row(Store::Parquet, 1, 4.0, false),
                row(Store::ColzipParquet, 6, 1.0, true),
                row(Store::ColzipParquet, 1, 3.0, true),
            ],
            stores: vec![
                store(Store::Memory, 8_000_000),
                store(Store::Parquet, 2_000_000),
                store(Store::ColzipParquet, 2_500_000),
            ],
        };
        report.comparisons = comparisons(&report.queries, &report.stores);
        assert!(!report.all_equal());
        assert_eq!(report.total_seconds(Store::Parquet), 5.5);
        // colzip-parquet against memory: Q6 1.0x, Q1 1.5x; against parquet: 0.667x, 0.75x.
        assert!(
            text_has(
                &report.to_table(),
                "colzip-parquet against memory: per-query geometric mean 1.22x, worst Q1 1.50x (2 queries)"
            ),
            "{}",
            report.to_table()
        );
        assert!(text_has(
            &report.to_table(),
            "colzip-parquet against parquet: per-query geometric mean 0.71x, worst Q1 0.75x"
        ));
        assert!(text_has(
            &report.to_table(),
            "parquet against memory: per-query geometric mean 1.73x, worst Q1 2.00x"
        ));
        let text = report.to_table();
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains("SF 0.5") && lines[0].contains("codec gmatch"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("Q6 ") && lines[2].ends_with("yes"),
            "{text}"
        );
        assert!(
            lines[3].starts_with("Q1 ") && lines[3].ends_with("NO: parquet"),
            "{text}"
        );
        assert!(
            lines[4].contains("3.000") && lines[4].contains("5.500"),
            "{text}"
        );
        let parquet = lines.iter().find(|l| l.starts_with("parquet ")).unwrap();
        assert!(
            parquet.contains("4.00x") && parquet.contains("1.83x"),
            "{text}"
        );
        let ours = lines
            .iter()
            .find(|l| l.starts_with("colzip-parquet "))
            .unwrap();
        assert!(ours.contains("3.20x") && ours.contains("1.33x"), "{text}");
        // The share of scan time spent decompressing; the stock reader has no such part.
        assert!(
            text.contains("colzip-parquet: file scans 4.000 s a run")
                && text.contains("(25.0% of it)"),
            "{text}"
        );
        assert!(
            text.contains("parquet: file scans 4.000 s a run (summed over partitions)\n"),
            "{text}"
        );
        assert!(text.ends_with(
            "Q1 on parquet differs from memory: row 1, column 2: 5 where 4 was expected\n"
        ));
        let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
        assert_eq!(json["stores"][2]["store"], "colzip-parquet");
        assert_eq!(json["stores"][2]["decompress_seconds"], 1.0);
        assert_eq!(json["stores"][1].get("decompress_seconds"), None);
        assert_eq!(json["queries"][5]["decompress_seconds"], 0.5);
        assert_eq!(json["queries"][3]["equal"], false);
        let query = &json["queries"][3];
        assert_eq!(
            query["plan_seconds"].as_f64().unwrap(),
            query["seconds"].as_f64().unwrap() / 10.0
        );
        assert_eq!(json["queries"][0].get("difference"), None);
        assert_eq!(
            json["stores"][1]["rss_before_bytes"],
            serde_json::Value::Null
        );
        assert_eq!(json["comparisons"][0]["store"], "parquet");
        assert_eq!(json["comparisons"][0]["against"], "memory");
        assert_eq!(json["comparisons"][0]["worst_query"], 1);
        assert_eq!(json["stores"][0].get("gpu_resident_bytes"), None);

        // The compressed store says how much of what it holds is on the GPU.
        report.stores.push(store(Store::Compressed, 2_000_000));
        let text = report.to_table();
        assert!(
            text.contains(
                "compressed: 1.5 MB of the 2.0 MB held are also in GPU memory (columns whose rows were selected there)"
            ),
            "{text}"
        );
        let json: serde_json::Value = serde_json::from_str(&report.to_json().unwrap()).unwrap();
        assert_eq!(json["stores"][3]["gpu_resident_bytes"], 1_500_000);
        assert_eq!(json["stores"][3]["pinned_pool_bytes"], 64 << 20);
        assert_eq!(json["stores"][0].get("pinned_pool_bytes"), None);
    }

    fn text_has(text: &str, line_start: &str) -> bool {
        text.lines().any(|l| l.starts_with(line_start))
    }

    #[test]
    fn a_given_parquet_dir_is_made_and_its_files_are_not_overwritten() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path().join("new/sub");
        assert!(ParquetDir::new(Some(&dir)).is_ok());
        assert!(dir.is_dir());
        std::fs::write(dir.join("orders.parquet"), b"mine").unwrap();
        let error = ParquetDir::new(Some(&dir)).err().unwrap().to_string();
        assert!(error.contains("orders.parquet exists"), "{error}");
    }
}
