//! The `colzip` binary against hostile inputs (issue 13): empty raw inputs of every type,
//! safe output files on every failure path, `--max-output`, `info --verify`, and the SQL
//! shell's corrupt Parquet footers, unwritable `COPY` targets, oversized `--tpch` and
//! multi-line errors. Every failure is an error of one line (or an indented block under
//! one), never a panic or an abort.
#![cfg(feature = "cli")]

mod cli_run;
mod crafted;

mod common;

use common::dir_listing;
use std::path::Path;

use cli_run::{fails_with, ok, s};

/// Issue 13: `colzip compress` of an empty file with `--type int32` (and int16, int64,
/// float64) panicked ("Memory pointer is not aligned").
#[test]
fn empty_files_of_every_type_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.bin");
    std::fs::write(&empty, b"").unwrap();
    for raw in [
        "bytes",
        "int8",
        "int16",
        "int32",
        "int64",
        "uint8",
        "uint16",
        "uint32",
        "uint64",
        "float32",
        "float64",
        "utf8-lines",
    ] {
        let archive = dir.path().join(format!("{raw}.czip"));
        let back = dir.path().join(format!("{raw}.out"));
        ok(&["compress", s(&empty), "--type", raw, "-o", s(&archive)]);
        ok(&["decompress", s(&archive), "-o", s(&back)]);
        assert_eq!(std::fs::read(&back).unwrap(), b"", "{raw}");
    }
}

/// Issue 13: `OUT.partial` was opened following symlinks, and left behind by failing
/// runs, the `--snappy` ones included.
#[test]
fn outputs_never_follow_symlinks_and_failures_leave_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.bin");
    std::fs::write(&input, b"some bytes some bytes some bytes".repeat(100)).unwrap();
    let victim = dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let archive = dir.path().join("data.czip");
    #[cfg(unix)]
    std::os::unix::fs::symlink(&victim, dir.path().join("data.czip.partial")).unwrap();
    ok(&["compress", s(&input), "-o", s(&archive)]);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");

    // Corrupt inputs on every path: an archive, a raw and a framed Snappy stream.
    let garbage = dir.path().join("garbage.sz");
    std::fs::write(
        &garbage,
        b"\xff\x06\x00\x00sNaPpY\x00\x08\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08",
    )
    .unwrap();
    let before = dir_listing(dir.path());
    let out = dir.path().join("out");
    fails_with(1, &["decompress", s(&garbage), "-o", s(&out)]);
    fails_with(
        1,
        &["decompress", s(&garbage), "--snappy", "raw", "-o", s(&out)],
    );
    fails_with(
        1,
        &[
            "decompress",
            s(&garbage),
            "--snappy",
            "framed",
            "-o",
            s(&out),
        ],
    );
    assert_eq!(dir_listing(dir.path()), before, "a failed run left a file");

    // I/O errors name the path.
    let nowhere = dir.path().join("no/such/dir/out.czip");
    let err = fails_with(1, &["compress", s(&input), "-o", s(&nowhere)]);
    assert!(err.contains("no/such/dir"), "{err}");
    let err = fails_with(
        1,
        &[
            "compress",
            s(&input),
            "--snappy",
            "framed",
            "-o",
            s(&nowhere),
        ],
    );
    assert!(err.contains("no/such/dir"), "{err}");
}

#[test]
fn max_output_refuses_large_claims_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("zeros.bin");
    std::fs::write(&input, vec![0u8; 1 << 20]).unwrap();
    let archive = dir.path().join("zeros.czip");
    ok(&[
        "compress",
        s(&input),
        "-o",
        s(&archive),
        "--codec",
        "bwt:block=64k",
    ]);
    let out = dir.path().join("zeros.out");
    let err = fails_with(
        1,
        &[
            "decompress",
            s(&archive),
            "-o",
            s(&out),
            "--max-output",
            "64k",
        ],
    );
    assert!(
        err.contains("more than the limit") && err.contains("--max-output"),
        "{err}"
    );
    assert!(!out.exists());
    ok(&[
        "decompress",
        s(&archive),
        "-o",
        s(&out),
        "--max-output",
        "1m",
    ]);
    assert_eq!(std::fs::read(&out).unwrap().len(), 1 << 20);
    // The same for Snappy streams.
    let framed = dir.path().join("zeros.sz");
    ok(&[
        "compress",
        s(&input),
        "--snappy",
        "framed",
        "-o",
        s(&framed),
    ]);
    let back = dir.path().join("zeros.back");
    let err = fails_with(
        1,
        &[
            "decompress",
            s(&framed),
            "--snappy",
            "framed",
            "-o",
            s(&back),
            "--max-output",
            "1000",
        ],
    );
    assert!(err.contains("limit"), "{err}");
    // A bad size is a bad argument.
    fails_with(
        2,
        &[
            "decompress",
            s(&archive),
            "-o",
            s(&out),
            "--force",
            "--max-output",
            "lots",
        ],
    );
}

/// Issue 13: the bwt directory bomb of the issue (14 KB claiming 64 GiB) as a raw
/// archive: an error, not `memory allocation of 68719476736 bytes failed`.
#[test]
fn decompression_bombs_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bomb = dir.path().join("bomb.czip");
    std::fs::write(&bomb, crafted::bwt_bomb_archive(1024).0).unwrap();
    let out = dir.path().join("bomb.out");
    fails_with(1, &["decompress", s(&bomb), "-o", s(&out)]);
    assert!(!out.exists());
}

#[test]
fn info_says_what_it_checked() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.bin");
    std::fs::write(
        &input,
        (0..10_000u32)
            .flat_map(|i| (i / 9).to_le_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let archive = dir.path().join("v.czip");
    ok(&["compress", s(&input), "-o", s(&archive), "--type", "uint32"]);
    let plain = ok(&["info", s(&archive)]);
    assert!(plain.contains("not checked (use --verify)"), "{plain}");
    let verified = ok(&["info", s(&archive), "--verify"]);
    assert!(
        !verified.contains("not checked") && verified.contains("xxh3"),
        "{verified}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(&archive), "--verify", "--format", "json"])).unwrap();
    assert_eq!(json["verified"], true);
    // --max-output needs --verify.
    fails_with(2, &["info", s(&archive), "--max-output", "1k"]);
}

#[cfg(feature = "datafusion")]
mod sql {
    use super::*;

    /// Arrow's parser accepts `Dictionary(Utf8, Int32)` (keys of strings), but building
    /// such an array panics: refused when the query is planned.
    #[test]
    fn colzip_decompress_to_a_type_arrays_cannot_have_is_an_error() {
        let err = fails_with(
            1,
            &[
                "sql",
                "-c",
                "SELECT colzip_decompress(colzip_compress('abc', 'lzss'), 'Dictionary(Utf8, Int32)')",
            ],
        );
        assert!(
            err.contains("dictionary keys must be an integer type"),
            "{err}"
        );
        // A valid dictionary type still decodes.
        let out = ok(&[
            "sql",
            "--format",
            "csv",
            "-c",
            "SELECT colzip_decompress(colzip_compress('abc', 'lzss'), 'Dictionary(Int32, Utf8)') AS v",
        ]);
        assert_eq!(out, "v\nabc\n");
    }

    /// `SET datafusion.execution.target_partitions = 1000000` would take tens of GB.
    #[test]
    fn a_million_partitions_are_refused() {
        let err = fails_with(
            1,
            &[
                "sql",
                "-c",
                "SET datafusion.execution.target_partitions = 1000000",
            ],
        );
        assert!(err.contains("partitions"), "{err}");
        // A sensible count is still taken.
        let out = ok(&[
            "sql",
            "--format",
            "csv",
            "-c",
            "SET datafusion.execution.target_partitions = 3; SELECT 1 AS one",
        ]);
        assert!(out.ends_with("one\n1\n"), "{out}");
    }

    /// `format.max_row_group_size '0'` would reach an assertion in the parquet crate.
    #[test]
    fn copy_with_row_groups_of_zero_rows_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("z.parquet");
        let err = fails_with(
            1,
            &[
                "sql",
                "-c",
                &format!(
                    "COPY (SELECT 1 AS a) TO '{}' STORED AS PARQUET OPTIONS ('format.max_row_group_size' '0')",
                    s(&target)
                ),
            ],
        );
        assert!(err.contains("max_row_group_size"), "{err}");
        assert!(!target.exists());
    }

    /// A Parquet file with a corrupt footer panicked the shell through `CREATE EXTERNAL
    /// TABLE … ; SELECT *`, in colzip's reader and in DataFusion's (`STORED AS PARQUET`).
    /// (Fixtures found by the fuzz harness: a column chunk of negative start, and an
    /// embedded Arrow schema with a 56-bit int; and 20 bytes ending in the magic, whose
    /// metadata length points before the file's start.)
    #[test]
    fn corrupt_parquet_footers_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let short = dir.path().join("short.parquet");
        std::fs::write(
            &short,
            b"PAR1\xff\xff\xff\x7f\x00\x01\x02\x03\x10\x00\x00\x80PAR1",
        )
        .unwrap();
        let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
        for path in [
            data.join("footer_negative_column_start.parquet"),
            data.join("footer_bad_arrow_schema.parquet"),
            short,
        ] {
            for format in ["COLZIP_PARQUET", "PARQUET"] {
                let sql = format!(
                    "CREATE EXTERNAL TABLE t STORED AS {format} LOCATION '{}'; SELECT * FROM t",
                    path.display()
                );
                let err = fails_with(1, &["sql", "-c", &sql]);
                assert!(
                    err.contains("not a valid Parquet file") && !err.contains("internal error"),
                    "{format} {}: {err}",
                    path.display()
                );
            }
        }
    }

    /// Issue 13: `COPY … TO '/proc/x.parquet'` spun forever.
    #[cfg(target_os = "linux")]
    #[test]
    fn copy_to_an_unwritable_place_fails() {
        let start = std::time::Instant::now();
        let err = fails_with(
            1,
            &[
                "sql",
                "-c",
                "COPY (SELECT 1 AS a) TO '/proc/colzip-test.parquet' STORED AS COLZIP_PARQUET",
            ],
        );
        assert!(err.contains("/proc/colzip-test.parquet"), "{err}");
        assert!(start.elapsed().as_secs() < 60);
        // Every format, into a directory that exists but takes no new file.
        for (format, name) in [
            ("CSV", "x.csv"),
            ("PARQUET", "x.parquet"),
            ("JSON", "x.json"),
        ] {
            let sql = format!("COPY (SELECT 1 AS a) TO '/proc/self/{name}' STORED AS {format}");
            let out = within_a_minute(&["sql", "-c", &sql]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{format}: {stderr}");
            assert!(stderr.contains(&format!("/proc/self/{name}")), "{stderr}");
        }
    }

    /// Runs colzip, killing it (and failing) when it has not ended within a minute.
    fn within_a_minute(args: &[&str]) -> std::process::Output {
        let mut child = cli_run::command()
            .args(args)
            .env_remove("RUST_BACKTRACE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let start = std::time::Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed().as_secs() > 60 {
                let _ = child.kill();
                let _ = child.wait();
                panic!("colzip {args:?} did not end within a minute");
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        child.wait_with_output().unwrap()
    }

    /// Issue 13: `--tpch 1e9` aborted on an allocation.
    #[test]
    fn tpch_scale_factors_that_cannot_fit_are_refused() {
        let err = fails_with(1, &["sql", "--tpch", "1e9", "-c", "SELECT 1"]);
        assert!(
            err.contains("scale factor") && err.contains("memory"),
            "{err}"
        );
        let err = fails_with(1, &["tpch", "--sf", "1e9"]);
        assert!(err.contains("memory"), "{err}");
    }

    /// Issue 13: several errors spanned many lines; they print as one block.
    #[test]
    fn multi_line_errors_are_one_block() {
        let err = fails_with(1, &["sql", "-c", "SELECT abs(1, 2, 3)"]);
        assert!(err.lines().count() > 1, "{err}");
    }

    /// Issue 13: `colzip_decompress(blob, 'Int32')` of a blob claiming 64 GiB aborted
    /// the SQL process.
    #[test]
    fn colzip_decompress_of_a_bomb_is_an_error() {
        let (stream, claim) = crafted::bwt_directory_bomb(1024);
        let blob = crafted::container(
            "",
            true,
            crafted::INT32,
            1,
            &[crafted::Part {
                role: 2,
                width: 4,
                codec: 4,
                raw_len: claim,
                stream: &stream,
                xxh3: 0,
            }],
        );
        let hex: String = blob.iter().map(|b| format!("{b:02x}")).collect();
        let sql = format!("SELECT colzip_decompress(X'{hex}', 'Int32') AS v");
        let err = fails_with(1, &["sql", "-c", &sql]);
        assert!(
            err.contains("not a colzip blob") && err.contains("row count"),
            "{err}"
        );
    }

    /// A 10,000-term `1+1+…` overflowed the main thread's stack (exit 134, no message);
    /// 10,000 ORs too. Chains deeper than colzip plans are refused before planning, and a
    /// file of SQL over the size limit before it is read.
    #[test]
    fn deep_or_huge_sql_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("deep.sql");
        let sum = vec!["1"; 10_000].join("+");
        std::fs::write(&deep, format!("SELECT {sum};")).unwrap();
        let started = std::time::Instant::now();
        let err = fails_with(1, &["sql", "--file", s(&deep)]);
        assert!(
            err.contains("nests 10000 levels deep; the limit is 1000"),
            "{err}"
        );
        assert!(err.contains("SET colzip.max_expression_depth = N"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        // Refused before planning, which would take minutes.
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
        let ors = vec!["x = 1"; 10_000].join(" OR ");
        let err = fails_with(
            1,
            &[
                "sql",
                "-c",
                &format!("SELECT 1 FROM (VALUES (1)) AS t(x) WHERE {ors}"),
            ],
        );
        assert!(err.contains("x IN (1, 2, …)"), "{err}");

        // Ten sums each at the depth limit plan in ten times one's time: the statement's
        // nesting in all bounds them.
        let sums = vec![vec!["1"; 1_000].join("+"); 10].join(", ");
        let many = dir.path().join("many.sql");
        std::fs::write(&many, format!("SELECT {sums};")).unwrap();
        let started = std::time::Instant::now();
        let err = fails_with(1, &["sql", "--file", s(&many)]);
        assert!(err.contains("levels in all; the limit is 3000000"), "{err}");
        assert!(err.contains("SET colzip.max_nesting = N"), "{err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());

        let unions = vec!["SELECT 1 AS n"; 1_002].join(" UNION ALL ");
        let err = fails_with(1, &["sql", "-c", &unions]);
        assert!(
            err.contains("holds 1001 set operations (UNION, INTERSECT, EXCEPT); the limit is 1000"),
            "{err}"
        );
        huge_sql_is_refused_before_it_is_read(dir.path());
    }

    /// The worst statements the default limits let through plan in seconds: an expression
    /// at the deepest nesting allowed, and a chain of as many `UNION ALL`s as allowed.
    /// (DataFusion's planning time grows with the square of either; a 5,000-term sum takes
    /// over 30 s.)
    #[test]
    fn statements_at_the_default_limits_plan_in_seconds() {
        let default = |option: &str| -> usize {
            let out = ok(&["sql", "--format", "csv", "-c", &format!("SHOW {option}")]);
            let line = out.lines().find(|l| l.starts_with(option)).unwrap();
            line.rsplit(',').next().unwrap().parse().unwrap()
        };
        let depth = default("colzip.max_expression_depth");
        let set_operations = default("colzip.max_set_operations");
        let dir = tempfile::tempdir().unwrap();
        let deep = dir.path().join("deep.sql");
        let sum = vec!["1"; depth].join("+");
        std::fs::write(&deep, format!("SELECT {sum} AS n;")).unwrap();
        let unions = dir.path().join("unions.sql");
        let selects = vec!["SELECT 1 AS n"; set_operations + 1].join(" UNION ALL ");
        std::fs::write(&unions, format!("SELECT count(*) AS c FROM ({selects});")).unwrap();
        let (terms, rows) = (depth.to_string(), (set_operations + 1).to_string());
        for (file, expected) in [(&deep, &terms), (&unions, &rows)] {
            let started = std::time::Instant::now();
            let out = ok(&["sql", "--format", "csv", "--file", s(file)]);
            let took = started.elapsed();
            assert!(out.lines().any(|l| l == expected.as_str()), "{out}");
            // About 1 s each in a release build on an idle 2-core machine; the bound
            // leaves room for a debug build on a busy one.
            assert!(took.as_secs() < 30, "{}: {took:?}", file.display());
        }
    }

    /// The limits are session options: a SET before a statement, in the same text,
    /// applies to it; a statement at the limit runs and one a level past it does not.
    #[test]
    fn sql_size_limits_are_session_options() {
        let set = "SET colzip.max_expression_depth = 300; SET colzip.max_set_operations = 20";
        let sum = |terms: usize| vec!["1"; terms].join("+");
        let out = ok(&[
            "sql",
            "--format",
            "csv",
            "-c",
            &format!("{set}; SELECT {} AS n", sum(300)),
        ]);
        assert!(out.contains("300"), "{out}");
        let err = fails_with(1, &["sql", "-c", &format!("{set}; SELECT {}", sum(301))]);
        assert!(
            err.contains("nests 301 levels deep; the limit is 300"),
            "{err}"
        );

        let unions = |selects: usize| vec!["SELECT 1 AS n"; selects].join(" UNION ALL ");
        let out = ok(&[
            "sql",
            "--format",
            "csv",
            "-c",
            &format!("{set}; SELECT count(*) AS c FROM ({})", unions(21)),
        ]);
        assert!(out.contains("21"), "{out}");
        let err = fails_with(1, &["sql", "-c", &format!("{set}; {}", unions(22))]);
        assert!(err.contains("holds 21 set operations"), "{err}");
    }

    fn huge_sql_is_refused_before_it_is_read(dir: &std::path::Path) {
        let huge = dir.join("huge.sql");
        let file = std::fs::File::create(&huge).unwrap();
        file.set_len(17 << 20).unwrap();
        let err = fails_with(1, &["sql", "--file", s(&huge)]);
        assert!(err.contains("over the 16 MB colzip plans at once"), "{err}");
    }
}
