//! `colzip sql`: statements from -c, --file and stdin, the three output formats, errors and
//! exit codes, TPC-H tables plain and compressed giving the same answers, and CREATE
//! TABLE making compressed tables with --compressed.
#![cfg(all(feature = "cli", feature = "datafusion"))]

use std::process::Output;

mod cli_run;

use colzip::tpch::{self, Table, queries};

fn colzip(args: &[&str], stdin: &str) -> Output {
    cli_run::with_stdin(args, stdin.as_bytes())
}

fn ok(args: &[&str]) -> String {
    let out = colzip(args, "");
    assert!(
        out.status.success(),
        "colzip {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn fails(args: &[&str], stdin: &str) -> String {
    let out = colzip(args, stdin);
    assert!(!out.status.success(), "colzip {args:?} should fail");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

#[test]
fn tpch_count_as_json() {
    let out = ok(&[
        "sql",
        "--tpch",
        "0.01",
        "-c",
        "select count(*) as n from lineitem",
        "--format",
        "json",
    ]);
    let rows: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    let generated = tpch::generate(Table::Lineitem, 0.01).unwrap().rows();
    assert_eq!(rows, serde_json::json!([{ "n": generated }]));
}

#[test]
fn compressed_tables_give_the_same_answers() {
    // Q1 (decimals, dates), Q13 (outer join on a string filter), Q22 (substrings).
    let sql: String = [1, 13, 22]
        .iter()
        .map(|&n| format!("{};\n", queries::query(n).unwrap()))
        .collect();
    let plain = ok(&["sql", "--tpch", "0.01", "-c", &sql, "--format", "csv"]);
    for codec in ["auto", "gmatch"] {
        let compressed = ok(&[
            "sql",
            "--tpch",
            "0.01",
            "--compressed",
            "--codec",
            codec,
            "-c",
            &sql,
            "--format",
            "csv",
        ]);
        assert_eq!(plain, compressed, "--codec {codec}");
    }
    // Three CSV results, each with its header, separated by empty lines.
    let results: Vec<&str> = plain.trim_end().split("\n\n").collect();
    assert_eq!(results.len(), 3, "{plain}");
    assert!(results[0].starts_with("l_returnflag,l_linestatus,sum_qty"));
    assert!(results[1].starts_with("c_count,custdist"));
    assert!(results[2].starts_with("cntrycode,numcust,totacctbal"));
}

#[test]
fn statements_from_a_file_run_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("script.sql");
    std::fs::write(
        &file,
        "-- a table, then a query over it\n\
         CREATE TABLE t AS VALUES (1, 'x'), (2, 'y'), (3, 'x');\n\
         SELECT column2 AS tag, sum(column1) AS total FROM t GROUP BY column2 ORDER BY tag;\n",
    )
    .unwrap();
    let out = ok(&["sql", "--file", file.to_str().unwrap()]);
    let expected = "+-----+-------+\n\
                    | tag | total |\n\
                    +-----+-------+\n\
                    | x   | 4     |\n\
                    | y   | 2     |\n\
                    +-----+-------+\n";
    assert_eq!(out, expected);
    // CREATE TABLE prints nothing, so there is no result before the query to separate.
    let out = ok(&["sql", "--file", file.to_str().unwrap(), "--format", "csv"]);
    assert_eq!(out, "tag,total\nx,4\ny,2\n");

    let missing = dir.path().join("missing.sql");
    let stderr = fails(&["sql", "--file", missing.to_str().unwrap()], "");
    assert!(stderr.contains("missing.sql"), "{stderr}");
    // `-f` means --force in colzip, never --file.
    let stderr = fails(&["sql", "-f", file.to_str().unwrap()], "");
    assert!(stderr.contains("'-f'"), "{stderr}");
}

#[test]
fn bad_sql_fails_with_the_error() {
    let stderr = fails(&["sql", "-c", "select * from no_such_table"], "");
    assert!(stderr.contains("no_such_table"), "{stderr}");
    let stderr = fails(&["sql", "-c", "selec 1"], "");
    assert!(stderr.starts_with("colzip: error:"), "{stderr}");
    // The statements before the failing one ran and printed.
    let out = colzip(
        &["sql", "-c", "select 7 as a; select nope", "--format", "csv"],
        "",
    );
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "a\n7\n");
    let stderr = fails(&["sql", "-c", "select 1", "--format", "xml"], "");
    assert!(stderr.contains("xml"), "{stderr}");
    let stderr = fails(
        &[
            "sql",
            "--tpch",
            "0.01",
            "--compressed",
            "--codec",
            "lzss:s=3",
            "-c",
            "select 1",
        ],
        "",
    );
    assert!(stderr.contains("lzss:s=3"), "{stderr}");
}

#[test]
fn statements_from_stdin_until_quit() {
    let script = "select 1\n  + 1 as b;\nselect 'p,q' as s;\n\\q\nselect 99;\n";
    let out = colzip(&["sql", "--format", "csv"], script);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "b\n2\ns\n\"p,q\"\n");

    // Piped input goes on after an error but the exit status reports it.
    let out = colzip(
        &["sql", "--format", "json"],
        "select nope;\nselect 3 as c;\n",
    );
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "[{\"c\":3}]\n");
    assert!(String::from_utf8(out.stderr).unwrap().contains("nope"));
}

#[test]
fn oversized_sql_from_stdin_is_skipped_with_one_error_and_reading_goes_on() {
    let most = colzip::limits::MOST_SQL_BYTES;
    // One line longer than the limit, then a statement over it in lines of 1 MiB (a
    // string literal holding a `;`, which must not end it early), then a small one.
    let mut script = format!("select '{}';\nselect 1 as a;\n", "x".repeat(most));
    script.push_str("select '");
    for _ in 0..(most >> 20) + 1 {
        script.push_str(&"y;".repeat(1 << 19));
        script.push('\n');
    }
    script.push_str("' as b;\nselect 2 as c;\n");
    let out = colzip(&["sql", "--format", "csv"], &script);
    assert!(!out.status.success());
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "a\n1\nc\n2\n");
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 3, "{stderr}");
    assert!(stderr.contains("2 statement(s) failed"), "{stderr}");
    assert!(stderr.contains("a line of over 16 MB of SQL"), "{stderr}");
    assert!(
        stderr.contains("a statement of over 16 MB of SQL"),
        "{stderr}"
    );
}

/// The plan of this CASE says Utf8 while its batches carry Utf8View: `--compressed` once
/// refused it ("column 's' is Utf8 in the table but Utf8View in a batch").
#[test]
fn create_table_with_compressed_takes_a_case_of_literals_and_concat() {
    let out = ok(&[
        "sql",
        "--compressed",
        "--backend",
        "cpu",
        "--format",
        "csv",
        "-c",
        "CREATE TABLE c AS SELECT CASE value % 2 WHEN 0 THEN 'a' \
         ELSE concat('b', CAST(value AS VARCHAR)) END AS s FROM generate_series(1, 10); \
         SELECT s FROM c ORDER BY s",
    ]);
    assert!(
        out.ends_with("s\na\na\na\na\na\nb1\nb3\nb5\nb7\nb9\n"),
        "{out}"
    );
}

#[test]
fn create_table_with_compressed_makes_compressed_tables() {
    let sql = "CREATE TABLE t AS SELECT value AS id, value % 3 AS r, concat('v', value % 5) AS s \
               FROM generate_series(1, 1000);\n\
               INSERT INTO t VALUES (0, 0, 'zero');\n\
               CREATE TABLE e (id BIGINT, s VARCHAR);\n\
               INSERT INTO e SELECT id, s FROM t WHERE r = 2;\n\
               SELECT r, count(*) AS n, max(s) AS top FROM t GROUP BY r ORDER BY r;\n\
               SELECT count(*) AS n FROM e;\n\
               EXPLAIN SELECT id FROM t;";
    let compressed = ok(&[
        "sql",
        "--compressed",
        "--codec",
        "gmatch",
        "-c",
        sql,
        "--format",
        "csv",
    ]);
    let plain = ok(&["sql", "-c", sql, "--format", "csv"]);
    // The inserts' counts, the two queries, EXPLAIN (each without the newline before
    // the empty line that separates them).
    let results = |out: &str| -> Vec<String> {
        let parts: Vec<String> = out.split("\n\n").map(String::from).collect();
        assert_eq!(parts.len(), 5, "{out}");
        parts
    };
    let (compressed, plain) = (results(&compressed), results(&plain));
    assert_eq!(compressed[..4], plain[..4]);
    assert_eq!(compressed[0], "count\n1");
    assert_eq!(compressed[1], "count\n333");
    assert_eq!(compressed[2], "r,n,top\n0,334,zero\n1,334,v4\n2,333,v4");
    assert_eq!(compressed[3], "n\n333");
    // The plan scans a compressed table only with --compressed.
    assert!(
        compressed[4].contains("CompressedScanExec"),
        "{}",
        compressed[4]
    );
    assert!(!plain[4].contains("CompressedScanExec"), "{}", plain[4]);

    // DataFusion's rules for existing tables.
    let stderr = fails(
        &[
            "sql",
            "--compressed",
            "-c",
            "CREATE TABLE t AS SELECT 1 AS a; CREATE TABLE t AS SELECT 2 AS a",
        ],
        "",
    );
    assert!(stderr.contains("already exists"), "{stderr}");
    let out = ok(&[
        "sql",
        "--compressed",
        "-c",
        "CREATE TABLE t AS SELECT 1 AS a; CREATE TABLE IF NOT EXISTS t AS SELECT 2 AS a; \
         SELECT a FROM t; CREATE OR REPLACE TABLE t AS SELECT 3 AS a; SELECT a FROM t",
        "--format",
        "json",
    ]);
    assert_eq!(out, "[{\"a\":1}]\n[{\"a\":3}]\n");
}

#[test]
fn stdin_statements_end_at_semicolons_of_code_only() {
    // A ';' at a line's end inside a string, a quoted identifier or a comment does not
    // end the statement.
    let script = "select 'first;\nsecond' as \"a;\nb\", -- not the end;\n 'it''s;\n' as c;\n\
                  select 2 as d; -- the end\n";
    let out = colzip(&["sql", "--format", "json"], script);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8(out.stdout).unwrap(),
        "[{\"a;\\nb\":\"first;\\nsecond\",\"c\":\"it's;\\n\"}]\n[{\"d\":2}]\n"
    );
}

#[test]
fn timing_gives_each_statements_rows_and_seconds_on_stderr() {
    let sql = "SELECT 1 AS a; SELECT * FROM (VALUES (1), (2)) t(a); CREATE TABLE t (a INT)";
    for (args, stdin) in [
        (vec!["sql", "--timing", "-c", sql], String::new()),
        (vec!["sql", "--timing"], format!("{sql};\n")),
    ] {
        let out = colzip(&args, &stdin);
        assert!(out.status.success(), "{args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        let lines: Vec<&str> = stderr.lines().collect();
        assert_eq!(lines.len(), 3, "{args:?}: {stderr}");
        for (line, start) in lines.iter().zip(["1 row in ", "2 rows in ", "done in "]) {
            let seconds = line
                .strip_prefix(start)
                .and_then(|rest| rest.strip_suffix(" s"))
                .unwrap_or_else(|| panic!("{args:?}: {line}"));
            assert!(seconds.parse::<f64>().unwrap() >= 0.0, "{line}");
        }
        // Results stay on stdout, without timings.
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.contains('2') && !stdout.contains(" s\n"), "{stdout}");
    }
    // Without --timing, nothing on stderr.
    let out = colzip(&["sql", "-c", "SELECT 1"], "");
    assert!(out.stderr.is_empty());
}

#[test]
fn an_archive_is_a_table_by_its_path() {
    let dir = tempfile::tempdir().unwrap();
    let values: Vec<i64> = (0..300_000).map(|i| (i * 7) % 1000).collect();
    let raw = dir.path().join("values.bin");
    std::fs::write(
        &raw,
        values
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let lines = dir.path().join("lines.txt");
    std::fs::write(&lines, "b\na\nb\n").unwrap();
    let lines = lines.to_str().unwrap();
    cli_run::ok(&["compress", raw.to_str().unwrap(), "--type", "int64"]);
    cli_run::ok(&["compress", lines, "--type", "utf8-lines"]);
    let archive = format!("{}.czip", raw.display());
    let sum: i64 = values.iter().sum();
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "-c",
        &format!("SELECT count(*) AS n, sum(value) AS s, max(value) AS m FROM '{archive}'"),
    ]);
    assert_eq!(out, format!("n,s,m\n300000,{sum},999\n"));
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "-c",
        &format!("SELECT line, count(*) AS n FROM '{lines}.czip' GROUP BY line ORDER BY line"),
    ]);
    assert_eq!(out, "line,n\na,1\nb,2\n");
    // A damaged archive is an error naming it, not an empty table.
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0xff;
    let bad = dir.path().join("bad.czip");
    std::fs::write(&bad, bytes).unwrap();
    let stderr = fails(
        &[
            "sql",
            "-c",
            &format!("SELECT count(*) FROM '{}'", bad.display()),
        ],
        "",
    );
    assert!(stderr.contains("bad.czip"), "{stderr}");
}

/// A file named as a table that is not there is named as a missing file, not as a table
/// `datafusion.public.<path>` that was not found; a registered table of such a name is
/// still found, and a missing name without a file's extension is still a missing table.
#[test]
fn a_missing_file_named_as_a_table_is_said_to_be_missing() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["nope.parquet", "nope.csv", "nope.czip"] {
        let path = dir.path().join(name);
        let stderr = fails(
            &["sql", "-c", &format!("SELECT * FROM '{}'", path.display())],
            "",
        );
        assert!(
            stderr.contains(&format!("{}: no such file or directory", path.display())),
            "{stderr}"
        );
        assert!(!stderr.contains("datafusion.public"), "{stderr}");
    }
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "-c",
        "CREATE TABLE \"t.csv\" AS SELECT 1 AS a; SELECT a FROM \"t.csv\"",
    ]);
    assert!(out.ends_with("a\n1\n"), "{out}");
    let stderr = fails(&["sql", "-c", "SELECT * FROM nope"], "");
    assert!(stderr.contains("not found"), "{stderr}");
}

#[test]
fn backend_gpu_fails_the_same_way_for_every_statement_without_a_gpu() {
    let gpu: serde_json::Value =
        serde_json::from_slice(&cli_run::colzip(&["gpu", "--format", "json"]).stdout).unwrap();
    let has_gpu = gpu["available"] == true;
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("t.parquet");
    let copy = format!(
        "COPY (SELECT 1 AS a) TO '{}' STORED AS COLZIP_PARQUET",
        target.display()
    );
    let copy_with_option = format!("{copy} OPTIONS ('backend' 'gpu')");
    let statements = [
        "SELECT 1",
        "SELECT colzip_ratio(x, 'gmatch') FROM (VALUES ('a'), ('b')) t(x)",
        copy.as_str(),
    ];
    // `--backend gpu`, the environment's default, and the COPY option: each names the
    // reason the same way, and writes nothing.
    let mut runs: Vec<(&str, Output)> = statements
        .iter()
        .map(|sql| (*sql, colzip(&["sql", "--backend", "gpu", "-c", sql], "")))
        .collect();
    for sql in statements {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_colzip"))
            .args(["sql", "-c", sql])
            .env("COLZIP_BACKEND", "gpu")
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        runs.push((sql, out));
    }
    runs.push((
        copy_with_option.as_str(),
        colzip(&["sql", "--backend", "cpu", "-c", &copy_with_option], ""),
    ));
    // Compressed tables on the GPU backend too.
    let create = "CREATE TABLE t AS SELECT 1 AS a";
    runs.push((
        create,
        colzip(
            &["sql", "--compressed", "--backend", "gpu", "-c", create],
            "",
        ),
    ));
    let compress = cli_run::colzip(&["compress", "-", "--backend", "gpu"]);
    let expected = String::from_utf8_lossy(&compress.stderr).into_owned();
    for (sql, out) in runs {
        let stderr = String::from_utf8_lossy(&out.stderr);
        if has_gpu {
            assert!(out.status.success(), "{sql}: {stderr}");
            continue;
        }
        // Word for word what compress --backend gpu says: one line saying why.
        assert_eq!(out.status.code(), Some(1), "{sql}: {stderr}");
        assert!(
            stderr.starts_with("colzip: error: no usable GPU for backend 'gpu': "),
            "{sql}: {stderr}"
        );
        assert_eq!(stderr, expected, "{sql}");
        assert!(!target.exists(), "{sql}: wrote {}", target.display());
    }
}

/// `child`'s exit status once it exits; killed, and the test failed with `stuck`, when it
/// has not within `limit`.
fn exit_within(
    child: &mut std::process::Child,
    limit: std::time::Duration,
    stuck: &str,
) -> std::process::ExitStatus {
    let waited = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if waited.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{stuck}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// A result is printed as it is computed, in every format: the first rows of one that
/// would take hours (and more memory than the machine has) to collect whole come at
/// once, and closing the pipe after them ends the run quietly, by SIGPIPE as `cat` ends.
#[test]
fn results_stream_so_an_endless_ones_first_rows_come_at_once() {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    use std::time::Duration;
    let sql = "SELECT value AS v FROM generate_series(1, 1000000000000)";
    // (format, the first bytes it prints)
    for (format, first) in [
        ("csv", "v\n1\n2\n"),
        ("json", "[{\"v\":1},{\"v\":2}"),
        ("table", "+-"),
    ] {
        let mut child = cli_run::command()
            .args(["sql", "--format", format, "-c", sql])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdout = child.stdout.take().unwrap();
        let (sender, received) = std::sync::mpsc::channel();
        let want = first.len();
        std::thread::spawn(move || {
            let mut start = vec![0u8; want];
            let read = stdout.read_exact(&mut start).map(|()| start);
            // Dropping the pipe's only reader here: the next write fails.
            drop(stdout);
            let _ = sender.send(read);
        });
        let start = received.recv_timeout(Duration::from_secs(60));
        let Ok(Ok(start)) = start else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("--format {format}: no first rows within 60 s: {start:?}");
        };
        assert_eq!(String::from_utf8_lossy(&start), first, "--format {format}");
        let status = exit_within(
            &mut child,
            Duration::from_secs(60),
            &format!("--format {format}: still running after its reader went"),
        );
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGPIPE), "{format}: {stderr}");
        assert!(stderr.is_empty(), "--format {format}: {stderr}");
    }
}

/// Statements piped in without end (`yes 'SELECT 1;' | colzip sql | head -1`): once the
/// output's reader has gone, the run ends quietly by SIGPIPE instead of reading and
/// failing statements for as long as the input comes.
#[test]
fn piped_statements_stop_when_the_output_is_closed() {
    use std::io::{Read, Write};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    use std::time::Duration;
    let mut child = cli_run::command()
        .args(["sql", "--format", "csv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The statements keep coming, as from `yes`, until the process stops reading them.
    let writer =
        std::thread::spawn(move || while stdin.write_all(b"SELECT 1 AS one;\n").is_ok() {});
    let mut stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0u8; 6];
    stdout.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"one\n1\n");
    // The only reader of the output goes.
    drop(stdout);
    let status = exit_within(
        &mut child,
        Duration::from_secs(30),
        "colzip sql still reads its input 30 s after its output closed",
    );
    // Its input closed with it: the writer's next write failed.
    writer.join().unwrap();
    let stderr = errors.join().unwrap();
    assert_eq!(status.signal(), Some(libc::SIGPIPE), "{stderr}");
    assert!(stderr.is_empty(), "{stderr}");
}

/// `COPY … TO` a file that exists replaces it, in every format, as DataFusion's COPY does
/// (docs/SQL.md).
#[test]
fn copy_to_an_existing_file_replaces_it() {
    let dir = tempfile::tempdir().unwrap();
    for (format, name) in [
        ("PARQUET", "x.parquet"),
        ("CSV", "x.csv"),
        ("JSON", "x.json"),
        ("COLZIP_PARQUET", "y.parquet"),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, b"old bytes").unwrap();
        let target = path.to_str().unwrap();
        ok(&[
            "sql",
            "-c",
            &format!("COPY (SELECT 41 + 1 AS v) TO '{target}' STORED AS {format}"),
        ]);
        let back = ok(&[
            "sql",
            "--format",
            "csv",
            "-c",
            &format!("SELECT v FROM '{target}'"),
        ]);
        assert_eq!(back, "v\n42\n", "{format}");
    }
}

/// `colzip_decompress(blob, 'type')` casts a value of another type to the type given
/// (it overrides the type the blob records), and a value that does not cast is an error
/// naming the row and both types (docs/SQL.md).
#[test]
fn colzip_decompress_casts_to_the_type_given_or_fails() {
    let out = ok(&[
        "sql",
        "--format",
        "csv",
        "-c",
        "SELECT colzip_decompress(colzip_compress(CAST(-7 AS INT), 'lzss'), 'Utf8') AS t, \
         arrow_typeof(colzip_decompress(colzip_compress(CAST(-7 AS INT), 'lzss'), 'Utf8')) AS ty, \
         colzip_decompress(colzip_compress('12', 'bwt'), 'Int64') + 1 AS n",
    ]);
    assert_eq!(out, "t,ty,n\n-7,Utf8,13\n");
    let stderr = fails(
        &[
            "sql",
            "-c",
            "SELECT colzip_decompress(colzip_compress('abc', 'lzss'), 'Int32')",
        ],
        "",
    );
    assert!(
        stderr
            .contains("colzip_decompress: row 0 holds a Utf8 value, which does not cast to Int32"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A table longer than the rows held to size it streams: one header, every row padded to
/// the widths of the first rows (a later, wider cell cut with `…`), one closing border;
/// with --maxrows the rest are counted, not printed.
#[test]
fn a_long_table_streams_with_the_widths_of_its_first_rows() {
    let sql = "SELECT value AS v, CASE WHEN value = 1500 THEN 'wider than the rest' \
               ELSE 'x' END AS s FROM generate_series(1, 1500)";
    let out = ok(&["sql", "-c", sql]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1500 + 4, "{}", &out[..200]);
    assert_eq!(lines[0], "+------+---+");
    assert_eq!(lines[1], "| v    | s |");
    assert_eq!(lines[2], lines[0]);
    assert_eq!(lines[3], "| 1    | x |");
    assert_eq!(lines[1502], "| 1500 | … |");
    assert_eq!(lines[1503], lines[0]);
    let out = ok(&["sql", "--maxrows", "1200", "-c", sql]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 1200 + 4 + 1);
    assert_eq!(
        lines[1204],
        "(1200 of 1500 rows shown; --maxrows sets how many)"
    );
}

/// Huge cells print in bounded time and space on a table: a 10 MB string, a 10 MB binary
/// value (20 MB of hex) and a list of two million numbers, each cut at 10,000 bytes with
/// a note; and a 10 MB string that comes after the first 1,000 rows, when the table
/// streams. Formatted whole, the binary and the list take minutes and print 20 and 17 MB.
#[test]
fn huge_cells_are_cut_on_a_table() {
    let sql = "SELECT repeat('x', 10000000) AS s, \
               colzip_compress(repeat('y', 10000000), 'stored') AS b, \
               (SELECT array_agg(value) FROM generate_series(1, 2000000)) AS l";
    let started = std::time::Instant::now();
    let out = ok(&["sql", "-c", sql]);
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    // Three columns about 10,000 characters wide: five lines of borders, names and cells.
    assert!(out.len() < 200_000, "{} bytes", out.len());
    assert!(
        out.contains("… (9990000 more bytes; --format csv or json prints whole values)"),
        "{}",
        &out[..out.len().min(300)]
    );
    assert_eq!(
        out.matches("… (more; --format csv or json prints whole values)")
            .count(),
        2,
        "the blob and the list"
    );
    let streamed = "SELECT value AS v, CASE WHEN value = 1500 THEN repeat('x', 10000000) \
                    ELSE 'x' END AS s FROM generate_series(1, 1500)";
    let started = std::time::Instant::now();
    let out = ok(&["sql", "-c", streamed]);
    assert!(started.elapsed().as_secs() < 60, "{:?}", started.elapsed());
    assert!(out.len() < 100_000, "{} bytes", out.len());
    assert!(out.contains("| 1500 | … |"), "{}", &out[out.len() - 300..]);
}
