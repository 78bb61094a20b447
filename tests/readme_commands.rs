//! Every command in the shell code blocks of the README and of the user documents it
//! links to (docs/CLI.md, docs/SQL.md), run as written.
//!
//! The list below must equal, in order and character for character, the commands those
//! files' ```` ```sh ```` blocks hold (README first, then the documents in `DOCUMENTS`
//! order; comments after ` #` left out): a change to them fails here until this list
//! follows it. Each command runs in one scratch directory, in that order, through `sh -c`
//! with the built `colzip` first on `PATH` and the input files the documents presuppose
//! made beforehand. Commands whose full size would take minutes in CI's debug build run
//! at a smaller scale factor (`Smaller`: only the scale and run counts change, the
//! document's text is still checked); `cargo` commands are not run (`cargo test` is this
//! suite). Commands that need a GPU run too: without one they must fail with exit status
//! 1 and a message naming the GPU, not as a usage error.
#![cfg(all(unix, feature = "cli", feature = "datafusion"))]

use std::path::Path;
use std::process::Command;

/// How the test runs a README command.
enum Run {
    /// As written.
    AsWritten,
    /// This smaller command instead (the README's is the same but for its size).
    Smaller(&'static str),
    /// Not run, for this reason.
    Not(&'static str),
}
use Run::*;

const COMMANDS: &[(&str, Run)] = &[
    // README.md: the quick start, the tests, one example each of the CLI and SQL.
    (
        "cargo install --locked --path .",
        Not("a release build of its own; this test runs the debug build's colzip"),
    ),
    ("colzip compress table.parquet", AsWritten),
    ("colzip info table.parquet.czip", AsWritten),
    (
        "colzip sql -c \"SELECT count(*) FROM 'table.parquet.czip'\"",
        AsWritten,
    ),
    (
        "cargo run --release -- tpch --sf 0.1",
        Smaller("colzip tpch --sf 0.002"),
    ),
    ("cargo test", Not("this test runs under it")),
    ("colzip compress data.csv", AsWritten),
    ("colzip decompress data.csv.czip -o back.csv", AsWritten),
    (
        "colzip sql --tpch 0.1 -c \"SELECT colzip_ratio(l_comment, 'bwt') AS bwt, colzip_ratio(l_comment, 'gmatch') AS gmatch FROM lineitem\"",
        Smaller(
            "colzip sql --tpch 0.002 -c \"SELECT colzip_ratio(l_comment, 'bwt') AS bwt, colzip_ratio(l_comment, 'gmatch') AS gmatch FROM lineitem\"",
        ),
    ),
    // docs/CLI.md: colzip tpch, the file commands, colzip bench.
    (
        "colzip tpch --sf 1 --tables lineitem,orders --format json",
        Smaller("colzip tpch --sf 0.002 --tables lineitem,orders --format json"),
    ),
    (
        "colzip tpch --codecs lzss:s=2,w=128,c=2048,gmatch,snap --format csv",
        Smaller("colzip tpch --sf 0.002 --codecs lzss:s=2,w=128,c=2048,gmatch,snap --format csv"),
    ),
    (
        "colzip tpch --peer-forms --tables lineitem",
        Smaller("colzip tpch --sf 0.002 --peer-forms --tables lineitem"),
    ),
    ("colzip compress prices.bin --type int64", AsWritten),
    (
        "colzip compress lines.txt --type utf8-lines --codec bwt",
        AsWritten,
    ),
    (
        "colzip compress data.txt --type csv --delimiter ';' --csv-header false",
        AsWritten,
    ),
    ("colzip info table.parquet.czip", AsWritten),
    ("colzip info table.parquet.czip --format json", AsWritten),
    ("colzip info table.parquet.czip --verify", AsWritten),
    ("colzip head table.parquet.czip -n 5", AsWritten),
    (
        "colzip decompress table.parquet.czip -o back.parquet",
        AsWritten,
    ),
    (
        "colzip decompress table.parquet.czip -o back.zstd.parquet --parquet-compression zstd",
        AsWritten,
    ),
    (
        "colzip decompress table.parquet.czip -o back.arrow --to arrow",
        AsWritten,
    ),
    ("colzip compress data.bin --snappy raw", AsWritten),
    ("colzip compress data.bin --snappy framed", AsWritten),
    (
        "colzip decompress data.bin.sz --snappy framed -o data.copy.bin",
        AsWritten,
    ),
    (
        "colzip compress prices.bin --type int64 --codec lzss --backend gpu -o prices.gpu.czip",
        AsWritten,
    ),
    (
        "colzip compress lines.txt --type utf8-lines --codec gmatch --backend gpu -o lines.gpu.czip",
        AsWritten,
    ),
    // colzip bench (without a GPU: the CPU rows alone; --no-cpu then fails saying so).
    (
        "colzip bench --sf 10 --columns l_quantity,l_comment",
        Smaller("colzip bench --sf 0.002 --columns l_quantity,l_comment"),
    ),
    (
        "colzip bench --sf 10 --s 2,4 --w 32,128 --c 2048 --runs 5 --format json",
        Smaller("colzip bench --sf 0.002 --s 2,4 --w 32,128 --c 2048 --runs 1 --format json"),
    ),
    (
        "colzip bench --sf 1 --no-cpu --format csv",
        Smaller("colzip bench --sf 0.002 --no-cpu --format csv"),
    ),
    (
        "colzip bench --sf 1 --backend cpu --suites gmatch,lzss,intpack",
        Smaller("colzip bench --sf 0.002 --backend cpu --suites gmatch,lzss,intpack --runs 1"),
    ),
    (
        "colzip bench --sf 10 --suites gmatch --columns l_comment",
        Smaller("colzip bench --sf 0.002 --suites gmatch --columns l_comment"),
    ),
    (
        "colzip bench --file prices.bin --type int64 --suites gmatch",
        AsWritten,
    ),
    (
        "colzip bench --sf 10 --suites none --write-columns cols/",
        Smaller("colzip bench --sf 0.002 --suites none --write-columns cols/"),
    ),
    (
        "colzip bench --sf 1 --suites gmatch --plot bench.svg",
        Smaller("colzip bench --sf 0.002 --suites gmatch --runs 1 --plot bench.svg"),
    ),
    (
        "colzip bench --sf 1 --suites intpack --columns l_quantity,l_shipdate --plot ints.svg --peers peers.json",
        Smaller(
            "colzip bench --sf 0.002 --suites intpack --columns l_quantity,l_shipdate --runs 1 --plot ints.svg --peers peers.json",
        ),
    ),
    // docs/SQL.md: colzip sql, colzip queries, a cluster (processes that run until
    // stopped, in a build with the `ballista` feature; tests/cluster.rs starts them and runs
    // `colzip sql --remote`).
    (
        "colzip sql --tpch 0.1 --compressed --file q1.sql --format json",
        Smaller("colzip sql --tpch 0.002 --compressed --file q1.sql --format json"),
    ),
    (
        "colzip sql --tpch 0.1 -c \"COPY (SELECT * FROM orders) TO 'orders.parquet' STORED AS COLZIP_PARQUET\"",
        Smaller(
            "colzip sql --tpch 0.002 -c \"COPY (SELECT * FROM orders) TO 'orders.parquet' STORED AS COLZIP_PARQUET\"",
        ),
    ),
    (
        "colzip sql --compressed --codec gmatch -c \"CREATE TABLE t AS SELECT value AS id FROM generate_series(1, 1000000); SELECT count(*) FROM t\"",
        AsWritten,
    ),
    (
        "colzip sql -c \"SELECT o_orderstatus, count(*) FROM 'orders.parquet' GROUP BY 1\"",
        AsWritten,
    ),
    ("colzip sql", AsWritten),
    // colzip queries.
    (
        "colzip queries --sf 1",
        Smaller("colzip queries --sf 0.002 --queries 1,6 --runs 1"),
    ),
    (
        "colzip queries --sf 10 --stores compressed,parquet --queries 1,6 --runs 5 --codec gmatch --backend gpu",
        Smaller(
            "colzip queries --sf 0.002 --stores compressed,parquet --queries 1,6 --runs 1 --codec gmatch --backend gpu",
        ),
    ),
    (
        "colzip queries --sf 0.1 --format json --dir pq/",
        Smaller("colzip queries --sf 0.002 --queries 1,6 --runs 1 --format json --dir pq/"),
    ),
    (
        "colzip queries --sf 0.1 --queries 1,3,6 --plot queries.svg",
        Smaller("colzip queries --sf 0.002 --queries 1,3,6 --runs 1 --plot queries.svg"),
    ),
    (
        "colzip queries --sf 50 --stores compressed --reference parquet --runs 1 --dir /data/tpch",
        Smaller(
            "colzip queries --sf 0.002 --stores compressed --reference parquet --queries 1,6 --runs 1 --dir tpch-parts",
        ),
    ),
    (
        "cargo build --release --features ballista",
        Not("a build of its own; CI builds the feature for tests/cluster.rs"),
    ),
    (
        "colzip cluster scheduler &",
        Not("runs until stopped; tests/cluster.rs starts one"),
    ),
    (
        "colzip cluster executor --gpu 0 &",
        Not("runs until stopped; tests/cluster.rs starts two"),
    ),
    (
        "colzip cluster executor --bind 127.0.0.1:50052 --gpu 1 &",
        Not("runs until stopped; tests/cluster.rs starts two"),
    ),
    (
        "colzip sql --remote df://127.0.0.1:50050 --file q1_ratio.sql",
        Not("needs the cluster above; tests/cluster.rs runs colzip sql --remote"),
    ),
];

/// The input files the README's commands take as the reader's own.
fn make_inputs(dir: &Path) {
    let prices: Vec<u8> = (0..20_000i64)
        .flat_map(|i| (i / 7 * 25).to_le_bytes())
        .collect();
    std::fs::write(dir.join("prices.bin"), prices).unwrap();
    let lines: String = (0..5_000)
        .map(|i| format!("line {} of the file\n", i % 300))
        .collect();
    std::fs::write(dir.join("lines.txt"), &lines).unwrap();
    std::fs::write(dir.join("data.bin"), lines.repeat(3)).unwrap();
    let csv: String = (0..2_000)
        .map(|i| format!("{i},item {},{}.25\n", i % 17, i % 90))
        .collect();
    std::fs::write(dir.join("data.csv"), format!("id,name,price\n{csv}")).unwrap();
    std::fs::write(dir.join("data.txt"), csv.replace(',', ";")).unwrap();
    // What ../shared/tools/peers.py prints.
    std::fs::write(
        dir.join("peers.json"),
        r#"[{"column": "l_quantity", "file": "l_quantity.i32", "peer": "nvcomp-cascaded",
             "raw_bytes": 24000, "compressed_bytes": 8000, "ratio": 3.0,
             "compress_gbps": 150.0, "decompress_gbps": 240.0, "roundtrip": true},
            {"column": "l_shipdate", "file": "l_shipdate.i32", "peer": "streamlz-l5",
             "error": "SLZ_ERROR_UNSUPPORTED"}]"#,
    )
    .unwrap();
    std::fs::write(
        dir.join("q1.sql"),
        "SELECT l_returnflag, l_linestatus, sum(l_quantity) AS qty, count(*) AS n \
         FROM lineitem GROUP BY 1, 2 ORDER BY 1, 2;\n",
    )
    .unwrap();
    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let batch = RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..4000)) as ArrayRef,
        ),
        (
            "name",
            Arc::new(StringArray::from_iter(
                (0..4000).map(|i| (i % 5 != 0).then(|| format!("n{}", i % 13))),
            )),
        ),
    ])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(parquet::basic::Compression::SNAPPY)
        .build();
    let file = std::fs::File::create(dir.join("table.parquet")).unwrap();
    let mut writer =
        parquet::arrow::ArrowWriter::try_new(file, batch.schema(), Some(props)).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

#[test]
fn every_readme_command_runs_as_written() {
    let listed: Vec<&str> = COMMANDS.iter().map(|(command, _)| *command).collect();
    let readme = readme_commands();
    assert_eq!(
        readme, listed,
        "the shell commands of the README or docs/CLI.md / docs/SQL.md changed: update COMMANDS in this test to match"
    );

    let dir = tempfile::tempdir().unwrap();
    make_inputs(dir.path());
    // `colzip` on PATH: the binary under test.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_colzip"), bin.join("colzip")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = |command: &str| {
        Command::new("sh")
            .args(["-c", command])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("COLZIP_HISTORY", dir.path().join("history"))
            .env_remove("COLZIP_BACKEND")
            .env_remove("RUST_BACKTRACE")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    let gpu: serde_json::Value =
        serde_json::from_slice(&run("colzip gpu --format json").stdout).unwrap();
    let has_gpu = gpu["available"] == true;

    for (readme_command, how) in COMMANDS {
        let command = match how {
            AsWritten => *readme_command,
            Smaller(command) => command,
            Not(why) => {
                eprintln!("not run: {readme_command} ({why})");
                continue;
            }
        };
        let started = std::time::Instant::now();
        let out = run(command);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Without a GPU, colzip bench measures the CPU rows alone, unless --no-cpu leaves
        // nothing to measure.
        let needs_gpu = command.contains("--backend gpu")
            || (command.starts_with("colzip bench") && command.contains("--no-cpu"));
        if needs_gpu && !has_gpu {
            // Without a GPU: a one-line error that says so, not a usage error.
            assert_eq!(out.status.code(), Some(1), "{command}: {stderr}");
            assert!(stderr.to_lowercase().contains("gpu"), "{command}: {stderr}");
            assert!(!stderr.contains("panicked"), "{command}: {stderr}");
        } else {
            assert!(out.status.success(), "{command} failed: {stderr}");
        }
        eprintln!("{:6.1} s  {command}", started.elapsed().as_secs_f64());
    }

    // What the commands were to make.
    for made in [
        "prices.bin.czip",
        "lines.txt.czip",
        "table.parquet.czip",
        "data.txt.czip",
        "back.parquet",
        "back.zstd.parquet",
        "back.arrow",
        "data.bin.snappy",
        "data.bin.sz",
        "orders.parquet",
        "pq/lineitem.parquet",
        "queries.svg",
        "bench.svg",
        "ints.svg",
        "cols",
    ] {
        assert!(dir.path().join(made).exists(), "no {made}");
    }
    assert_eq!(
        std::fs::read_to_string(dir.path().join("back.csv")).unwrap(),
        std::fs::read_to_string(dir.path().join("data.csv")).unwrap()
    );
    assert_eq!(
        std::fs::read(dir.path().join("data.copy.bin")).unwrap(),
        std::fs::read(dir.path().join("data.bin")).unwrap()
    );
    let svg = std::fs::read_to_string(dir.path().join("queries.svg")).unwrap();
    let elements = cli_run::svg_elements(&svg);
    assert!(
        elements.iter().filter(|e| *e == "rect").count() >= 6,
        "3 queries x 3 stores"
    );
}

mod cli_run;

/// The user documents whose `sh` blocks this test runs, after the README, in this order.
const DOCUMENTS: &[&str] = &["docs/CLI.md", "docs/SQL.md"];

/// The commands of the `sh` code blocks of the README and then of `DOCUMENTS`, without
/// trailing comments.
fn readme_commands() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut commands = Vec::new();
    for document in std::iter::once("README.md").chain(DOCUMENTS.iter().copied()) {
        let text = std::fs::read_to_string(root.join(document)).expect(document);
        commands.extend(sh_commands(&text));
    }
    commands
}

/// The commands of `markdown`'s `sh` code blocks, without trailing comments.
fn sh_commands(markdown: &str) -> Vec<String> {
    let mut commands = Vec::new();
    let mut in_sh = false;
    for line in markdown.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") {
            in_sh = !in_sh && trimmed == "```sh";
            continue;
        }
        if in_sh && !trimmed.is_empty() {
            let command = match trimmed.find(" #") {
                Some(at) => &trimmed[..at],
                None => trimmed,
            };
            commands.push(command.trim_end().to_string());
        }
    }
    commands
}
