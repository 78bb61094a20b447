//! `colzip queries` (issue 15 item 3): the 22 TPC-H queries over the memory, compressed,
//! parquet and colzip-parquet stores at a small scale factor give the memory store's
//! results; the JSON report's shape; the Parquet stores' files; refused stores and
//! queries.
#![cfg(all(feature = "cli", feature = "datafusion"))]

mod common;

use common::dir_listing;
use std::process::Command;

mod cli_run;
use cli_run::{colzip, ok};

/// The smallest scale factor at which every query returns rows (tests/tpch_queries.rs).
const SF: &str = "0.01";

fn json(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"))
}

fn store<'a>(report: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    report["stores"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["store"] == name)
        .unwrap_or_else(|| panic!("no store {name} in {report}"))
}

#[test]
fn all_queries_on_every_store_equal_the_memory_store() {
    // The parquet store's temporary directory goes under TMPDIR and is removed at the end.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_colzip"))
        .args([
            "queries",
            "--sf",
            SF,
            "--stores",
            "memory,compressed,parquet,colzip-parquet",
            "--runs",
            "1",
            "--format",
            "json",
            "--backend",
            "cpu",
        ])
        .env("TMPDIR", tmp.path())
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        dir_listing(tmp.path()).is_empty(),
        "{:?}",
        dir_listing(tmp.path())
    );
    // Progress on stderr, the report alone on stdout.
    for line in [
        "generating lineitem",
        "loading the parquet store",
        "loading the colzip-parquet store",
        "Q22 on compressed",
        "Q22 on colzip-parquet",
    ] {
        assert!(stderr.contains(line), "no '{line}' in {stderr}");
    }
    let report = json(&String::from_utf8(out.stdout).unwrap());
    assert_eq!(report["sf"], 0.01);
    assert_eq!(report["backend"], "cpu");
    assert_eq!(report["gpu"], serde_json::Value::Null);
    assert_eq!(report["codec"], "auto");
    assert_eq!(report["runs"], 1);
    assert_eq!(report["scan_filters"], true);
    // Every store against memory and against parquet, query by query.
    let comparisons = report["comparisons"].as_array().unwrap();
    assert_eq!(comparisons.len(), 3 + 3, "{comparisons:?}");
    for c in comparisons {
        assert_eq!(c["queries"], 22, "{c}");
        let (mean, worst) = (
            c["geometric_mean"].as_f64().unwrap(),
            c["worst_ratio"].as_f64().unwrap(),
        );
        assert!(mean > 0.0 && mean <= worst, "{c}");
    }
    let queries = report["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 22 * 4);
    let order = ["memory", "compressed", "parquet", "colzip-parquet"];
    for (i, row) in queries.iter().enumerate() {
        let (store, query) = (order[i / 22], i % 22 + 1);
        assert_eq!(row["store"], store, "{row}");
        assert_eq!(row["query"], query, "{row}");
        assert_eq!(row["equal"], true, "{row}");
        assert!(row["seconds"].as_f64().unwrap() > 0.0, "{row}");
        // Every query returns rows at this scale factor, the same number on every store.
        let rows = row["rows"].as_u64().unwrap();
        assert!(rows > 0, "{row}");
        assert_eq!(rows, queries[query - 1]["rows"].as_u64().unwrap(), "{row}");
        // Scan times for the Parquet stores; decompression only in colzip's scan.
        assert_eq!(
            row.get("scan_seconds").is_some(),
            store.contains("parquet"),
            "{row}"
        );
        assert_eq!(
            row.get("decompress_seconds").is_some(),
            store == "colzip-parquet",
            "{row}"
        );
    }
    assert_eq!(queries[0]["rows"], 4, "Q1 has 4 flag/status groups");
    assert_eq!(queries[5]["rows"], 1, "Q6 is one sum");
    let stores = report["stores"].as_array().unwrap();
    assert_eq!(stores.len(), 4);
    let held = |name| store(&report, name)["bytes_held"].as_u64().unwrap();
    assert!(held("compressed") < held("memory"), "{report}");
    // SNAPPY Parquet holds the tables smaller than Arrow memory too.
    assert!(
        held("parquet") > 0 && held("parquet") < held("memory"),
        "{report}"
    );
    assert!(
        held("colzip-parquet") > 0 && held("colzip-parquet") < held("memory"),
        "{report}"
    );
    // colzip's scan decompressed pages, and says how long that took.
    let ours = store(&report, "colzip-parquet");
    assert!(ours["scan_seconds"].as_f64().unwrap() > 0.0, "{ours}");
    assert!(ours["decompress_seconds"].as_f64().unwrap() > 0.0, "{ours}");
    assert_eq!(store(&report, "parquet").get("decompress_seconds"), None);
    for row in stores {
        assert!(row["load_seconds"].as_f64().unwrap() >= 0.0, "{row}");
        if cfg!(target_os = "linux") {
            let peak = row["peak_rss_bytes"].as_u64().unwrap();
            assert!(peak >= row["rss_before_bytes"].as_u64().unwrap(), "{row}");
        }
    }
    if cfg!(target_os = "linux") {
        // The memory store's queries run with the plain tables held.
        let peak = |name| store(&report, name)["peak_rss_bytes"].as_u64().unwrap();
        assert!(peak("memory") > held("memory"), "{report}");
    }
}

#[test]
fn a_parquet_dir_keeps_the_files_and_is_not_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("tpch");
    let files_arg = files.to_str().unwrap();
    let args = [
        "queries",
        "--sf",
        SF,
        "--stores",
        "parquet,colzip-parquet",
        "--queries",
        "6,1",
        "--runs",
        "2",
        "--dir",
        files_arg,
        "--format",
        "json",
    ];
    let report = json(&ok(&args));
    // The memory store gives the reference but is not reported.
    let queries = report["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 4);
    for (row, (store, query)) in queries.iter().zip([
        ("parquet", 6),
        ("parquet", 1),
        ("colzip-parquet", 6),
        ("colzip-parquet", 1),
    ]) {
        assert_eq!(row["store"], store, "{row}");
        assert_eq!(row["query"], query, "{row}");
        assert_eq!(row["equal"], true, "{row}");
    }
    assert_eq!(report["stores"].as_array().unwrap().len(), 2);
    let tables = [
        "customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier",
    ];
    let mut expected: Vec<String> = tables
        .iter()
        .flat_map(|t| [format!("{t}.parquet"), format!("{t}.colzip.parquet")])
        .collect();
    expected.sort();
    assert_eq!(dir_listing(&files), expected);
    for (name, suffix) in [
        ("parquet", ".parquet"),
        ("colzip-parquet", ".colzip.parquet"),
    ] {
        let mut bytes = 0;
        for table in tables {
            let file = format!("{table}{suffix}");
            let data = std::fs::read(files.join(&file)).unwrap();
            assert!(
                data.starts_with(b"PAR1") && data.ends_with(b"PAR1"),
                "{file}"
            );
            bytes += data.len() as u64;
        }
        assert_eq!(store(&report, name)["bytes_held"], bytes);
    }
    // A second run does not overwrite them.
    let out = colzip(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("customer.parquet exists"), "{stderr}");
}

#[test]
fn the_parquet_reference_streams_the_tables_through_files() {
    let dir = tempfile::tempdir().unwrap();
    let files = dir.path().join("tpch");
    let report = json(&ok(&[
        "queries",
        "--sf",
        SF,
        "--stores",
        "compressed",
        "--reference",
        "parquet",
        "--runs",
        "1",
        "--dir",
        files.to_str().unwrap(),
        "--format",
        "json",
        "--backend",
        "cpu",
    ]));
    assert_eq!(report["reference"], "parquet", "{report}");
    // Only the compressed store is reported; every query equals DataFusion's answer over
    // the Parquet files, which hold every generated row.
    let queries = report["queries"].as_array().unwrap();
    assert_eq!(queries.len(), 22);
    for row in queries {
        assert_eq!(row["store"], "compressed", "{row}");
        assert_eq!(row["equal"], true, "{row}");
        assert!(row["rows"].as_u64().unwrap() > 0, "{row}");
    }
    assert_eq!(queries[0]["rows"], 4, "Q1 has 4 flag/status groups");
    assert!(store(&report, "compressed")["bytes_held"].as_u64().unwrap() > 0);
    // A directory of part files per table.
    let mut tables = dir_listing(&files);
    tables.sort();
    assert_eq!(
        tables,
        [
            "customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"
        ]
    );
    let parts = dir_listing(&files.join("lineitem"));
    assert!(
        parts.contains(&"part-000001.parquet".to_string()),
        "{parts:?}"
    );

    // The memory store needs the plain tables, which the parquet reference never holds.
    let out = colzip(&[
        "queries",
        "--sf",
        SF,
        "--stores",
        "memory,compressed",
        "--reference",
        "parquet",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("leave memory out of the stores"),
        "{stderr}"
    );

    // A scale factor whose plain tables cannot fit points to the parquet reference.
    let out = colzip(&["queries", "--sf", "5000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("more than this machine") && stderr.contains("--reference parquet"),
        "{stderr}"
    );
}

#[test]
fn the_table_names_every_query_and_store() {
    let text = ok(&[
        "queries",
        "--sf",
        SF,
        "--stores",
        "compressed,memory",
        "--queries",
        "14",
        "--runs",
        "1",
        "--codec",
        "gmatch",
    ]);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].contains("codec gmatch"), "{text}");
    let header: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(header[..3], ["query", "compressed", "memory"], "{text}");
    assert!(
        lines[2].starts_with("Q14 ") && lines[2].ends_with("yes"),
        "{text}"
    );
    assert!(lines[3].starts_with("total "), "{text}");
    assert!(text.lines().any(|l| l.starts_with("compressed ")), "{text}");
    assert!(text.lines().any(|l| l.starts_with("memory ")), "{text}");
}

#[test]
fn unknown_stores_and_bad_values_exit_2() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["queries", "--stores", "disk"],
            "expected memory, compressed, parquet or colzip-parquet",
        ),
        (&["queries", "--queries", "1,23"], "1..=22"),
        (&["queries", "--runs", "0"], "1.."),
        (&["queries", "--format", "csv"], "table, json"),
    ];
    for (args, expected) in cases {
        let out = colzip(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "colzip {args:?}: {stderr}");
        assert!(stderr.contains(expected), "colzip {args:?}: {stderr}");
        assert!(out.stdout.is_empty(), "colzip {args:?}");
    }
    // Refused before any table is generated.
    let out = colzip(&["queries", "--stores", "parquet,parquet", "--sf", "1000000"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("named twice"), "{stderr}");
}

/// The temporary directories `colzip queries` made in `tmp`.
fn temporary_dirs(tmp: &std::path::Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("colzip-queries")
        })
        .collect()
}

/// Ctrl-C, SIGTERM or SIGHUP while the Parquet reference's files are written or queried
/// removes their temporary directory with everything in it, and the process still ends
/// by the signal; a directory left by a killed run (its process gone) is removed by the
/// next run, one of a live process is not.
#[test]
fn ctrl_c_sigterm_and_sighup_remove_the_temporary_parquet_files() {
    use std::os::unix::process::ExitStatusExt;
    let tmp = tempfile::tempdir().unwrap();
    let gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let stale = tmp.path().join(format!("colzip-queries.{gone_pid}.Ab12Cd"));
    std::fs::create_dir_all(stale.join("lineitem")).unwrap();
    std::fs::write(stale.join("lineitem/part-000001.parquet"), b"x").unwrap();
    let live = tmp
        .path()
        .join(format!("colzip-queries.{}.Ef34Gh", std::process::id()));
    std::fs::create_dir(&live).unwrap();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut child = cli_run::command()
            .args([
                "queries",
                "--sf",
                SF,
                "--stores",
                "compressed",
                "--reference",
                "parquet",
                "--queries",
                "1",
                "--runs",
                "100000",
                "--backend",
                "cpu",
            ])
            .env("TMPDIR", tmp.path())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Until a Parquet file is in this run's directory.
        let started = std::time::Instant::now();
        let written = |dir: &std::path::Path| {
            std::fs::read_dir(dir).is_ok_and(|tables| {
                tables.flatten().any(|table| {
                    std::fs::read_dir(table.path()).is_ok_and(|mut parts| parts.next().is_some())
                })
            })
        };
        while !temporary_dirs(tmp.path())
            .iter()
            .any(|d| d != &live && d != &stale && written(d))
        {
            assert!(
                child.try_wait().unwrap().is_none(),
                "signal {signal}: ended"
            );
            assert!(
                started.elapsed().as_secs() < 120,
                "signal {signal}: no Parquet file was written"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: kill sends a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert_eq!(
            temporary_dirs(tmp.path()),
            std::slice::from_ref(&live),
            "signal {signal}: a temporary directory is left"
        );
    }
    assert!(!stale.exists());
}
