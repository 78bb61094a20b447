//! The `colzip` binary: round trips through files, Snappy interop, errors and exit codes.
#![cfg(feature = "cli")]

use std::io::Read;
use std::path::Path;
use std::process::{Command, Output};

mod cli_run;
use cli_run::{colzip, fails, ok, s};

#[test]
fn raw_typed_files_round_trip_byte_exact() {
    let dir = tempfile::tempdir().unwrap();
    let ints: Vec<u8> = (0..100_000i32)
        .flat_map(|i| (i / 10).to_le_bytes())
        .collect();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("int32", ints.clone()),
        ("int64", ints.clone()),
        ("float32", ints.clone()),
        ("bytes", b"hello hello hello world".to_vec()),
        ("bytes", Vec::new()),
        ("utf8-lines", b"alpha\nbeta\n\ngamma\n".to_vec()),
        ("utf8-lines", b"no final newline\nsecond".to_vec()),
        ("utf8-lines", b"\n".to_vec()),
        ("utf8-lines", Vec::new()),
    ];
    for (i, (raw_type, data)) in cases.into_iter().enumerate() {
        for codec in ["auto", "lzss", "gmatch", "bwt"] {
            let input = dir.path().join(format!("in{i}-{codec}.bin"));
            let archive = dir.path().join(format!("in{i}-{codec}.czip"));
            let output = dir.path().join(format!("out{i}-{codec}.bin"));
            std::fs::write(&input, &data).unwrap();
            ok(&[
                "compress",
                s(&input),
                "-o",
                s(&archive),
                "--type",
                raw_type,
                "--codec",
                codec,
            ]);
            let info = ok(&["info", s(&archive), "--format", "json"]);
            let info: serde_json::Value = serde_json::from_str(&info).unwrap();
            assert_eq!(info["columns"].as_array().unwrap().len(), 1);
            ok(&["decompress", s(&archive), "-o", s(&output)]);
            assert_eq!(std::fs::read(&output).unwrap(), data, "{raw_type} {codec}");
        }
    }
}

#[test]
fn default_names_and_overwrite_protection() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![7u8; 10_000]).unwrap();
    ok(&["compress", s(&input)]);
    let archive = dir.path().join("values.bin.czip");
    assert!(archive.exists());
    let err = fails(&["compress", s(&input)]);
    assert!(err.contains("--force"), "{err}");
    ok(&["compress", s(&input), "--force"]);
    std::fs::remove_file(&input).unwrap();
    ok(&["decompress", s(&archive)]);
    assert_eq!(std::fs::read(&input).unwrap(), vec![7u8; 10_000]);
}

#[test]
fn snappy_streams_interoperate_with_snap() {
    let dir = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..300_000u32)
        .flat_map(|i| format!("row {} {}\n", i % 1000, i % 7).into_bytes())
        .collect();
    let input = dir.path().join("text.txt");
    std::fs::write(&input, &data).unwrap();

    let raw = dir.path().join("text.snappy");
    ok(&["compress", s(&input), "--snappy", "raw", "-o", s(&raw)]);
    let stream = std::fs::read(&raw).unwrap();
    assert_eq!(
        snap::raw::Decoder::new().decompress_vec(&stream).unwrap(),
        data
    );

    let framed = dir.path().join("text.sz");
    ok(&[
        "compress",
        s(&input),
        "--snappy",
        "framed",
        "-o",
        s(&framed),
    ]);
    let mut decoded = Vec::new();
    snap::read::FrameDecoder::new(std::fs::File::open(&framed).unwrap())
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, data);

    // And colzip reads what snap writes.
    let theirs = dir.path().join("theirs.snappy");
    std::fs::write(
        &theirs,
        snap::raw::Encoder::new().compress_vec(&data).unwrap(),
    )
    .unwrap();
    let back = dir.path().join("theirs.out");
    ok(&["decompress", s(&theirs), "--snappy", "raw", "-o", s(&back)]);
    assert_eq!(std::fs::read(&back).unwrap(), data);
}

#[test]
fn arrow_ipc_files_round_trip() {
    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("table.arrow");
    let batch = RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..5000)) as ArrayRef,
        ),
        (
            "name",
            Arc::new(StringArray::from_iter(
                (0..5000).map(|i| (i % 3 != 0).then(|| format!("n{}", i % 50))),
            )),
        ),
    ])
    .unwrap();
    let mut writer = arrow::ipc::writer::FileWriter::try_new(
        std::fs::File::create(&input).unwrap(),
        &batch.schema(),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    let archive = dir.path().join("table.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);
    let output = dir.path().join("back.arrow");
    ok(&["decompress", s(&archive), "-o", s(&output)]);
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&output).unwrap(), None)
            .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(batches, vec![batch]);
}

#[test]
fn bad_arguments_and_inputs_fail_with_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("odd.bin");
    std::fs::write(&input, [1u8, 2, 3]).unwrap();
    let err = fails(&["compress", s(&input), "--type", "int32"]);
    assert!(err.contains("multiple of 4"), "{err}");
    assert!(
        !dir.path().join("odd.bin.czip").exists(),
        "no partial output left"
    );
    assert!(fails(&["compress", s(&input), "--codec", "lzss:s=3"]).contains("symbol width 3"));
    assert!(fails(&["compress", s(&input), "--type", "int33"]).contains("unknown raw type"));
    assert!(fails(&["compress", s(&dir.path().join("missing"))]).contains("not a readable file"));
    assert!(
        fails(&["decompress", s(&input), "-o", s(&dir.path().join("x"))])
            .contains("not a colzip archive")
    );
    assert!(
        fails(&[
            "decompress",
            s(&input),
            "--snappy",
            "raw",
            "-o",
            s(&dir.path().join("y"))
        ])
        .contains("gmatch")
    );
    assert!(fails(&["tpch", "--sf", "0"]).contains("scale factor"));
    assert!(fails(&["tpch", "--tables", "lineitems"]).contains("unknown TPC-H table"));
    assert!(fails(&["tpch", "--codecs", "zip"]).contains("unknown codec"));
    assert!(fails(&["tpch", "--format", "xml"]).contains("unknown format"));
    fails(&["frobnicate"]);
}

#[test]
fn bad_option_values_exit_2_naming_the_choices() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.bin");
    std::fs::write(&input, [1u8, 2, 3, 4]).unwrap();
    let input = s(&input);
    let cases: [(&[&str], &str); 13] = [
        (
            &["compress", input, "--codec", "zip"],
            "(expected auto, lzss, gmatch, bwt, intpack or stored)",
        ),
        (&["compress", input, "--type", "int7"], "utf8-lines"),
        (
            &["compress", input, "--format", "yaml"],
            "table, json or csv",
        ),
        (
            &["decompress", input, "--to", "xml"],
            "raw, arrow, parquet, csv or json",
        ),
        (&["info", input, "--format", "xml"], "table, json or csv"),
        (&["bench", "--type", "int7"], "utf8-lines"),
        (
            &["sql", "--format", "xml", "-c", "select 1"],
            "table, json, csv",
        ),
        (&["tpch", "--sf", "0"], "scale factor"),
        (&["tpch", "--sf", "nan"], "scale factor"),
        (&["queries", "--sf=-1"], "scale factor"),
        (&["tpch", "--threads", "100000"], "thread count"),
        (&["bench", "--runs", "0"], "run count"),
        (&["head", input, "-n", "1000000000000000000"], "row count"),
    ];
    for (args, expected) in cases {
        let out = colzip(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "colzip {args:?}: {stderr}");
        assert!(stderr.contains(expected), "colzip {args:?}: {stderr}");
    }
}

/// Options that parse but do not go together, or do not fit the input, are bad arguments
/// too: exit status 2, one line naming the option, nothing written.
#[test]
fn options_that_do_not_fit_the_input_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("t.parquet");
    parquet_file(&table, 10, 10, parquet::basic::Compression::SNAPPY);
    let raw = dir.path().join("v.bin");
    std::fs::write(&raw, [1u8, 2, 3, 4]).unwrap();
    let archive = dir.path().join("v.czip");
    ok(&["compress", s(&raw), "--type", "bytes", "-o", s(&archive)]);
    let out = dir.path().join("out");
    let cases: [(&[&str], &str); 5] = [
        (
            &["compress", s(&table), "--type", "int32", "-o", s(&out)],
            "--type applies to raw",
        ),
        (
            &["compress", s(&raw), "--type", "bytes", "--delimiter", ";"],
            "--delimiter apply to CSV inputs",
        ),
        (
            &["decompress", s(&raw), "--snappy", "raw", "--to", "arrow"],
            "not to --snappy streams",
        ),
        (&["decompress", s(&raw)], "give one with -o"),
        (
            &[
                "decompress",
                s(&archive),
                "--to",
                "arrow",
                "--parquet-compression",
                "lz4",
                "-o",
                s(&out),
            ],
            "applies to Parquet output",
        ),
    ];
    for (args, expected) in cases {
        let run = colzip(args);
        let stderr = String::from_utf8_lossy(&run.stderr);
        assert_eq!(run.status.code(), Some(2), "colzip {args:?}: {stderr}");
        assert!(stderr.starts_with("colzip: error: "), "{stderr}");
        assert!(stderr.contains(expected), "colzip {args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
    assert!(!out.exists());
}

#[test]
fn a_snappy_stream_given_as_an_archive_gets_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.bin");
    std::fs::write(&input, b"snappy snappy snappy snappy".repeat(1000)).unwrap();
    let framed = dir.path().join("v.data");
    ok(&[
        "compress",
        s(&input),
        "--snappy",
        "framed",
        "-o",
        s(&framed),
    ]);
    let out = dir.path().join("v.out");
    for args in [
        vec!["decompress", s(&framed), "-o", s(&out)],
        vec!["info", s(&framed)],
    ] {
        let err = fails(&args);
        assert!(
            err.contains(s(&framed)) && err.contains("add --snappy framed"),
            "{args:?}: {err}"
        );
    }
    assert!(!out.exists(), "no output is left behind");
}

/// The columns' plain bytes in all, from `colzip info --format json`'s columns.
fn plain_bytes_of(info: &serde_json::Value) -> u64 {
    info["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["plain_bytes"].as_u64().unwrap())
        .sum()
}

#[test]
fn compress_and_info_name_the_file_ratio_and_the_plain_ratio() {
    let dir = tempfile::tempdir().unwrap();
    // Repetitive int64 values: several times smaller, so both ratios are well above one.
    let data: Vec<u8> = (0..50_000i64)
        .flat_map(|i| (i % 100).to_le_bytes())
        .collect();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, &data).unwrap();
    let archive = dir.path().join("values.czip");
    let summary = ok(&["compress", s(&input), "-o", s(&archive), "--type", "int64"]);
    let input_bytes = data.len() as u64;
    let archive_bytes = std::fs::metadata(&archive).unwrap().len();
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(&archive), "--format", "json"])).unwrap();
    let plain = plain_bytes_of(&info);
    let file_ratio = input_bytes as f64 / archive_bytes as f64;
    let plain_ratio = plain as f64 / archive_bytes as f64;
    assert!(file_ratio > 2.0, "{summary}");
    // The file ratio first, in the sizes a file manager shows, then the plain ratio.
    let file_at = summary.find("file 400.0 kB -> ").expect(&summary);
    let plain_at = summary.find("; plain data ").expect(&summary);
    assert!(file_at < plain_at, "{summary}");
    assert!(
        summary.contains(&format!("({file_ratio:.2}x smaller)"))
            && summary.contains(&format!("(plain ratio {plain_ratio:.2})")),
        "{summary}"
    );

    // JSON: the earlier names, and the new ones for the same values.
    let again = dir.path().join("again.czip");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "compress",
        s(&input),
        "-o",
        s(&again),
        "--type",
        "int64",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["input_file_bytes"], input_bytes);
    assert_eq!(json["archive_file_bytes"], archive_bytes);
    assert_eq!(json["compressed_bytes"], archive_bytes);
    assert_eq!(json["plain_bytes"], plain);
    assert!((json["file_ratio"].as_f64().unwrap() - file_ratio).abs() < 1e-9);
    assert!((json["plain_ratio"].as_f64().unwrap() - plain_ratio).abs() < 1e-9);
    assert_eq!(json["ratio"], json["plain_ratio"]);

    // From standard input: the input bytes are the bytes read.
    let piped_archive = dir.path().join("piped.czip");
    let out = piped(
        &[
            "compress",
            "-",
            "-o",
            s(&piped_archive),
            "--type",
            "int64",
            "--format",
            "json",
        ],
        &data,
    );
    let json: serde_json::Value = serde_json::from_slice(&out).unwrap();
    let piped_bytes = std::fs::metadata(&piped_archive).unwrap().len();
    assert_eq!(json["input_file_bytes"], input_bytes);
    assert_eq!(json["archive_file_bytes"], piped_bytes);
    assert!(
        (json["file_ratio"].as_f64().unwrap() - input_bytes as f64 / piped_bytes as f64).abs()
            < 1e-9
    );

    // info: the archive file's size and the plain ratio, named; no file ratio, since the
    // archive does not record its input's size.
    assert_eq!(info["archive_bytes"], archive_bytes);
    assert_eq!(info["plain_bytes"], plain);
    assert!((info["plain_ratio"].as_f64().unwrap() - plain_ratio).abs() < 1e-9);
    let table = ok(&["info", s(&archive)]);
    let header = table.lines().next().unwrap();
    assert!(
        header.contains("archive file ")
            && header.contains(&format!("({archive_bytes} bytes)"))
            && header.contains("; plain data ")
            && header.contains(&format!("(plain ratio {plain_ratio:.2})"))
            && !header.contains("file ratio"),
        "{header}"
    );
}

/// Runs `colzip args` with `stdin` on its standard input, which must succeed; its stdout.
fn piped(args: &[&str], stdin: &[u8]) -> Vec<u8> {
    let out = cli_run::with_stdin(args, stdin);
    assert!(
        out.status.success(),
        "colzip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

#[test]
fn pipes_round_trip_byte_exact() {
    let lines: Vec<u8> = (0..200_000)
        .flat_map(|i| format!("{i}\n").into_bytes())
        .collect();
    let ints: Vec<u8> = (0..100_000i64)
        .flat_map(|i| (i / 7).to_le_bytes())
        .collect();
    // `-` in, and with no -o the archive goes to stdout; `decompress -` likewise.
    let archive = piped(&["compress", "-", "--type", "utf8-lines"], &lines);
    assert!(archive.len() < lines.len() / 2, "{} bytes", archive.len());
    assert!(piped(&["decompress", "-"], &archive) == lines);
    let archive = piped(
        &[
            "compress", "-", "-o", "-", "--type", "int64", "--codec", "lzss",
        ],
        &ints,
    );
    assert!(piped(&["decompress", "-", "-o", "-"], &archive) == ints);
    // A file in, stdout out, and back into a file.
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("ints.bin");
    std::fs::write(&input, &ints).unwrap();
    let archive = piped(&["compress", s(&input), "-o", "-", "--type", "int64"], &[]);
    let back = dir.path().join("back.bin");
    piped(&["decompress", "-", "-o", s(&back)], &archive);
    assert!(std::fs::read(&back).unwrap() == ints);
    // Snappy streams too.
    for format in ["raw", "framed"] {
        let stream = piped(&["compress", "-", "--snappy", format], &lines);
        assert!(piped(&["decompress", "-", "--snappy", format], &stream) == lines);
    }
}

#[test]
fn tpch_ends_with_per_codec_totals() {
    let args = [
        "tpch",
        "--sf",
        "0.001",
        "--tables",
        "region,nation",
        "--codecs",
        "gmatch,bwt",
    ];
    let table = ok(&args);
    assert!(table.contains("per codec, over all"), "{table}");
    // Without a terminal, progress is plain lines on stderr.
    let out = colzip(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in [
        "colzip tpch: generating region at SF 0.001",
        "colzip tpch: nation: 25 rows",
    ] {
        assert!(stderr.contains(line), "no '{line}' in {stderr}");
    }
    let json = ok(&[&args[..], &["--format", "json"]].concat());
    let rows: Vec<serde_json::Value> = serde_json::from_str(&json).unwrap();
    let totals = ok(&[&args[..], &["--format", "json", "--summary"]].concat());
    let totals: Vec<serde_json::Value> = serde_json::from_str(&totals).unwrap();
    assert_eq!(totals.len(), 2);
    // --plot draws the totals as SVG, one labelled point per codec in each panel.
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("codecs.svg");
    ok(&[&args[..], &["--summary", "--plot", s(&svg)]].concat());
    let picture = std::fs::read_to_string(&svg).unwrap();
    let elements = cli_run::svg_elements(&picture);
    assert_eq!(
        elements.iter().filter(|e| *e == "circle").count(),
        4,
        "2 codecs x 2 panels"
    );
    assert!(picture.contains("gmatch") && picture.contains("bwt"));
    let err = fails(&[&args[..], &["--plot", "codecs.png"]].concat());
    assert!(err.contains("SVG"), "{err}");
    for total in &totals {
        let mine: Vec<_> = rows
            .iter()
            .filter(|r| r["codec"] == total["codec"])
            .collect();
        let sum = |field: &str| mine.iter().map(|r| r[field].as_u64().unwrap()).sum::<u64>();
        assert_eq!(total["columns"].as_u64().unwrap(), mine.len() as u64);
        assert_eq!(total["raw_bytes"].as_u64().unwrap(), sum("raw_bytes"));
        assert_eq!(
            total["compressed_bytes"].as_u64().unwrap(),
            sum("compressed_bytes")
        );
        let ratio = sum("raw_bytes") as f64 / sum("compressed_bytes") as f64;
        assert!((total["ratio"].as_f64().unwrap() - ratio).abs() < 1e-9);
    }
}

#[test]
fn corrupt_archives_fail_without_losing_the_archive() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("v.bin");
    std::fs::write(
        &input,
        (0..50_000u32)
            .flat_map(|i| (i % 300).to_le_bytes())
            .collect::<Vec<_>>(),
    )
    .unwrap();
    let archive = dir.path().join("v.czip");
    ok(&["compress", s(&input), "-o", s(&archive), "--type", "uint32"]);
    let mut bytes = std::fs::read(&archive).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x10;
    std::fs::write(&archive, &bytes).unwrap();
    let out = dir.path().join("v.out");
    let err = fails(&["decompress", s(&archive), "-o", s(&out)]);
    assert!(err.contains("checksum") || err.contains("corrupt"), "{err}");
    assert!(!out.exists());
    assert_eq!(
        std::fs::read(&archive).unwrap(),
        bytes,
        "the archive is untouched"
    );
    assert!(fails(&["info", s(&archive)]).contains("colzip: error"));
}

#[test]
fn tpch_json_has_the_documented_fields() {
    let out = ok(&[
        "tpch",
        "--sf",
        "0.01",
        "--tables",
        "nation,region",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_str(&out).unwrap();
    let fields = [
        "table",
        "column",
        "arrow_type",
        "rows",
        "raw_bytes",
        "codec",
        "backend",
        "compressed_bytes",
        "ratio",
        "compress_gbps",
        "decompress_gbps",
    ];
    // nation has 4 columns, region 3; 3 codecs and 5 baselines each.
    assert_eq!(rows.len(), 7 * 8);
    for row in &rows {
        let mut keys: Vec<&str> = row.keys().map(String::as_str).collect();
        keys.sort();
        let mut expected = fields.to_vec();
        expected.sort();
        assert_eq!(keys, expected);
    }
    let codecs: std::collections::BTreeSet<&str> =
        rows.iter().map(|r| r["codec"].as_str().unwrap()).collect();
    for codec in [
        "lzss", "gmatch", "bwt", "snap", "lz4", "zstd-1", "zstd-3", "bzip2-9",
    ] {
        assert!(codecs.contains(codec), "{codec} missing");
    }
    let csv = ok(&[
        "tpch",
        "--sf",
        "0.01",
        "--tables",
        "region",
        "--codecs",
        "lzss:s=1,w=64,gmatch",
        "--format",
        "csv",
    ]);
    assert_eq!(csv.lines().count(), 1 + 3 * 2);
    assert!(csv.contains("\"lzss:s=1,w=64,c=2048\""), "{csv}");
}

#[cfg(feature = "parquet")]
#[test]
fn parquet_files_round_trip() {
    use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("table.parquet");
    let batch = RecordBatch::try_from_iter(vec![
        (
            "price",
            Arc::new(Float64Array::from_iter_values(
                (0..3000).map(|i| (i % 97) as f64 * 0.25),
            )) as ArrayRef,
        ),
        (
            "label",
            Arc::new(StringArray::from_iter(
                (0..3000).map(|i| (i % 4 != 0).then(|| format!("l{}", i % 9))),
            )),
        ),
    ])
    .unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&input).unwrap(),
        batch.schema(),
        None,
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    let archive = dir.path().join("table.czip");
    let summary = ok(&[
        "compress",
        s(&input),
        "-o",
        s(&archive),
        "--codec",
        "gmatch",
    ]);
    // Two ratios, each named: of the Parquet file's size and of the columns' plain bytes.
    let file_bytes = std::fs::metadata(&input).unwrap().len();
    let archive_bytes = std::fs::metadata(&archive).unwrap().len();
    assert!(
        summary.contains("plain ratio")
            && summary.contains(&format!(
                "({:.2}x smaller)",
                file_bytes as f64 / archive_bytes as f64
            )),
        "{summary}"
    );
    let again = dir.path().join("again.czip");
    let json: serde_json::Value = serde_json::from_str(&ok(&[
        "compress",
        s(&input),
        "-o",
        s(&again),
        "--codec",
        "gmatch",
        "--format",
        "json",
    ]))
    .unwrap();
    assert_eq!(json["input_file_bytes"], file_bytes);
    assert_eq!(json["compressed_bytes"], archive_bytes);
    let file_ratio = json["file_ratio"].as_f64().unwrap();
    assert!((file_ratio - file_bytes as f64 / archive_bytes as f64).abs() < 1e-9);
    assert!(json["ratio"].as_f64().unwrap() > file_ratio, "{json}");
    // --type is for raw files: on a Parquet file it is an error, not ignored.
    let err = fails(&[
        "compress",
        s(&input),
        "-o",
        s(&dir.path().join("t.czip")),
        "--type",
        "int64",
    ]);
    assert!(
        err.contains("--type applies to raw") && err.contains("Parquet"),
        "{err}"
    );
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(&archive), "--format", "json"])).unwrap();
    assert_eq!(info["source"], "Parquet");
    assert_eq!(info["rows"], 3000);
    let output = dir.path().join("back.parquet");
    ok(&["decompress", s(&archive), "-o", s(&output)]);
    assert_eq!(read_parquet(&output, &batch.schema()), batch);
}

/// A Parquet file's rows as one batch of `schema`, read by the parquet crate.
#[cfg(feature = "parquet")]
fn read_parquet(path: &Path, schema: &arrow::datatypes::SchemaRef) -> arrow::array::RecordBatch {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).unwrap(),
    )
    .unwrap()
    .build()
    .unwrap();
    let batches: Vec<arrow::array::RecordBatch> = reader.map(|b| b.unwrap()).collect();
    arrow::compute::concat_batches(schema, &batches).unwrap()
}

fn colzip_env(args: &[&str], backend_env: &str) -> Output {
    cli_run::command()
        .args(args)
        .env("COLZIP_BACKEND", backend_env)
        .output()
        .expect("colzip runs")
}

#[test]
fn backend_choice_flows_through_compress_decompress_and_tpch() {
    let dir = tempfile::tempdir().unwrap();
    // 2 MiB of int32: under `auto`, a file this small stays on the CPU even with a GPU
    // (`--backend gpu` below takes it there).
    let data: Vec<u8> = (0..(1 << 19) as u32)
        .flat_map(|i| (i / 16).to_le_bytes())
        .collect();
    let input = dir.path().join("ints.bin");
    std::fs::write(&input, &data).unwrap();
    let mut archives = Vec::new();
    for backend in ["cpu", "auto"] {
        let archive = dir.path().join(format!("ints-{backend}.czip"));
        ok(&[
            "compress",
            s(&input),
            "-o",
            s(&archive),
            "--type",
            "int32",
            "--codec",
            "lzss",
            "--backend",
            backend,
        ]);
        for decoder in ["cpu", "auto"] {
            let output = dir.path().join(format!("ints-{backend}-{decoder}.out"));
            ok(&[
                "decompress",
                s(&archive),
                "-o",
                s(&output),
                "--backend",
                decoder,
            ]);
            assert_eq!(std::fs::read(&output).unwrap(), data, "{backend} {decoder}");
        }
        archives.push(std::fs::read(&archive).unwrap());
    }
    // The same bytes whichever backend wrote them.
    assert_eq!(archives[0], archives[1]);
    // `--verbose` says where `auto` ran the codecs, and why.
    let auto_archive = dir.path().join("ints-auto.czip");
    let compress_auto = [
        "--verbose",
        "compress",
        s(&input),
        "-o",
        "-",
        "--type",
        "int32",
        "--force",
    ];
    let decompress_auto = ["--verbose", "decompress", s(&auto_archive), "-o", "-"];
    let verbose_runs = [compress_auto.as_slice(), decompress_auto.as_slice()];
    for args in verbose_runs {
        let out = cli_run::command().args(args).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(
            stderr.contains(
                "is below the 1.1 GB from which the GPU's start-up pays for itself: \
                 the codecs run on the CPU"
            ),
            "{stderr}"
        );
    }

    // The environment variable sets the default; a bad value there is an error too.
    let from_env = dir.path().join("ints-env.czip");
    let args = ["compress", s(&input), "-o", s(&from_env), "--type", "int32"];
    let out = colzip_env(&args, "cpu");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = colzip_env(&["tpch", "--tables", "region"], "cuda");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("unknown backend 'cuda'"), "{stderr}");

    let tpch = ok(&[
        "tpch",
        "--sf",
        "0.01",
        "--tables",
        "region",
        "--codecs",
        "lzss,snap",
        "--format",
        "json",
        "--backend",
        "cpu",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&tpch).unwrap();
    assert_eq!(rows.len(), 3 * 2);
    assert!(rows.iter().all(|r| r["backend"] == "cpu"), "{tpch}");

    // A value that is not a backend is refused with the accepted ones.
    for command in ["compress", "decompress"] {
        let err = fails(&[command, s(&input), "--backend", "cuda"]);
        assert!(err.contains("unknown backend 'cuda'"), "{err}");
        assert!(err.contains("expected auto, cpu or gpu"), "{err}");
    }
    assert!(fails(&["tpch", "--backend", "cuda"]).contains("unknown backend 'cuda'"));

    // `gpu` without a GPU: a one-line error saying why, and no output left behind. (On a
    // machine with a GPU it succeeds and writes the CPU's bytes.)
    let forced = dir.path().join("ints-gpu.czip");
    let compress_gpu = [
        "compress",
        s(&input),
        "-o",
        s(&forced),
        "--type",
        "int32",
        "--codec",
        "lzss",
        "--backend",
        "gpu",
    ];
    let back = dir.path().join("ints-gpu.out");
    let decompress_gpu = ["decompress", s(&forced), "-o", s(&back), "--backend", "gpu"];
    let tpch_gpu = [
        "tpch",
        "--sf",
        "0.01",
        "--tables",
        "region",
        "--backend",
        "gpu",
    ];
    match colzip::gpu::Gpu::get() {
        Err(_) => {
            let err = fails(&compress_gpu);
            assert!(err.contains("GPU"), "{err}");
            assert_eq!(err.trim_end().lines().count(), 1, "{err}");
            assert!(!forced.exists(), "no output without a GPU");
            std::fs::write(&forced, &archives[0]).unwrap();
            let err = fails(&decompress_gpu);
            assert!(err.contains("GPU"), "{err}");
            assert!(!back.exists(), "no output without a GPU");
            assert!(fails(&tpch_gpu).contains("GPU"));
        }
        Ok(_) => {
            ok(&compress_gpu);
            assert_eq!(std::fs::read(&forced).unwrap(), archives[0]);
            ok(&decompress_gpu);
            assert_eq!(std::fs::read(&back).unwrap(), data);
            ok(&tpch_gpu);
        }
    }
}

/// A Parquet file of `rows` rows (a price, and a label that is null every 4th row) in row
/// groups of `group_rows`, written with `compression`.
fn parquet_file(
    path: &Path,
    rows: usize,
    group_rows: usize,
    compression: parquet::basic::Compression,
) -> arrow::array::RecordBatch {
    use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let batch = RecordBatch::try_from_iter(vec![
        (
            "price",
            Arc::new(Float64Array::from_iter_values(
                (0..rows).map(|i| (i % 97) as f64 * 0.25),
            )) as ArrayRef,
        ),
        (
            "label",
            Arc::new(StringArray::from_iter(
                (0..rows).map(|i| (i % 4 != 0).then(|| format!("l{}", i % 9))),
            )),
        ),
    ])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(group_rows))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(path).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    batch
}

/// The codecs of a Parquet file's column chunks and its row groups' row counts.
fn parquet_layout(path: &Path) -> (Vec<String>, Vec<i64>) {
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
        std::fs::File::open(path).unwrap(),
    )
    .unwrap();
    let metadata = builder.metadata();
    let mut codecs: Vec<String> = metadata
        .row_groups()
        .iter()
        .flat_map(|g| g.columns().iter().map(|c| c.compression().to_string()))
        .map(|c| c.split('(').next().unwrap().to_string())
        .collect();
    codecs.dedup();
    let groups = metadata.row_groups().iter().map(|g| g.num_rows()).collect();
    (codecs, groups)
}

#[test]
fn parquet_round_trip_keeps_the_source_codec_unless_told() {
    use parquet::basic::Compression;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("snappy.parquet");
    let batch = parquet_file(&input, 3000, 1000, Compression::SNAPPY);
    let archive = dir.path().join("snappy.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);

    // The source's codec and row groups, said on stdout.
    let back = dir.path().join("back.parquet");
    let said = ok(&["decompress", s(&archive), "-o", s(&back)]);
    assert!(said.contains("snappy (the source file's)"), "{said}");
    assert_eq!(
        parquet_layout(&back),
        (vec!["SNAPPY".to_string()], vec![1000; 3])
    );
    assert_eq!(read_parquet(&back, &batch.schema()), batch);

    // Chosen by --parquet-compression.
    let said = ok(&[
        "decompress",
        s(&archive),
        "-o",
        s(&back),
        "--force",
        "--parquet-compression",
        "zstd(3)",
    ]);
    assert!(said.contains("zstd(3) (chosen)"), "{said}");
    assert_eq!(parquet_layout(&back).0, vec!["ZSTD".to_string()]);
    let gzip = dir.path().join("gzip.parquet");
    parquet_file(&gzip, 100, 1000, Compression::GZIP(Default::default()));
    ok(&["compress", s(&gzip)]);
    let said = ok(&[
        "decompress",
        &format!("{}.czip", s(&gzip)),
        "-o",
        s(&back),
        "--force",
    ]);
    assert!(said.contains("gzip(6) (the source file's)"), "{said}");
    assert_eq!(parquet_layout(&back).0, vec!["GZIP".to_string()]);

    // A bad codec is a usage error naming the choices.
    let out = colzip(&[
        "decompress",
        s(&archive),
        "-o",
        s(&back),
        "--force",
        "--parquet-compression",
        "brotli",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("snappy") && err.contains("zstd"), "{err}");
    // ... and one for another output kind is an error too.
    let err = fails(&[
        "decompress",
        s(&archive),
        "-o",
        s(&dir.path().join("back.arrow")),
        "--to",
        "arrow",
        "--parquet-compression",
        "snappy",
    ]);
    assert!(err.contains("Parquet output"), "{err}");

    // An archive that records no codec (as every archive before this change) still
    // decompresses, to ZSTD, and says why.
    let old = dir.path().join("old.czip");
    {
        use colzip::archive::{ArchiveWriter, Source};
        let mut writer = ArchiveWriter::new(
            std::fs::File::create(&old).unwrap(),
            batch.schema(),
            Source::Parquet,
        )
        .unwrap();
        writer
            .write_batch(&batch, &colzip::column::CodecChoice::Auto)
            .unwrap();
        writer.finish(false).unwrap();
    }
    let said = ok(&["decompress", s(&old), "-o", s(&back), "--force"]);
    assert!(said.contains("zstd(1) (the default"), "{said}");
    assert_eq!(parquet_layout(&back).0, vec!["ZSTD".to_string()]);
}

#[test]
fn info_shows_rows_nulls_and_types_and_head_prints_the_first_rows() {
    use parquet::basic::Compression;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.parquet");
    parquet_file(&input, 3000, 1000, Compression::SNAPPY);
    let archive = dir.path().join("t.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(&archive), "--format", "json"])).unwrap();
    let columns = info["columns"].as_array().unwrap();
    assert_eq!(columns[0]["arrow_type"], "Float64");
    assert_eq!(columns[1]["arrow_type"], "Utf8");
    assert_eq!(columns[0]["rows"], 3000);
    assert_eq!(columns[0]["null_count"], 0);
    assert_eq!(columns[1]["null_count"], 750);
    let table = ok(&["info", s(&archive)]);
    let label = table.lines().find(|l| l.starts_with("label")).unwrap();
    let fields: Vec<&str> = label.split_whitespace().collect();
    assert_eq!(&fields[1..4], &["Utf8", "3000", "750"], "{table}");

    // An archive of three batches of 1000 rows whose last batch is corrupt: head reads
    // only the batches it prints, so it does not notice.
    let ids = dir.path().join("ids.czip");
    {
        use arrow::array::{Int64Array, RecordBatch};
        use colzip::archive::{ArchiveWriter, Source};
        use std::sync::Arc;
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            arrow::datatypes::Field::new("id", arrow::datatypes::DataType::Int64, false),
        ]));
        let mut writer = ArchiveWriter::new(
            std::fs::File::create(&ids).unwrap(),
            schema.clone(),
            Source::ArrowIpc,
        )
        .unwrap();
        for start in [0i64, 1000, 2000] {
            let values = Arc::new(Int64Array::from_iter_values(start..start + 1000));
            let batch = RecordBatch::try_new(schema.clone(), vec![values]).unwrap();
            writer
                .write_batch(&batch, &colzip::column::CodecChoice::Auto)
                .unwrap();
        }
        writer.finish(false).unwrap();
    }
    let mut bytes = std::fs::read(&ids).unwrap();
    let at = bytes.len() - 20;
    bytes[at] ^= 0x55;
    std::fs::write(&ids, &bytes).unwrap();
    assert!(!colzip(&["info", s(&ids)]).status.success());

    let csv = ok(&["head", s(&ids), "-n", "1500", "--format", "csv"]);
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 1501, "a header and 1500 rows");
    assert_eq!((lines[0], lines[1], lines[1500]), ("id", "0", "1499"));
    let json: serde_json::Value =
        serde_json::from_str(&ok(&["head", s(&ids), "-n", "3", "--format", "json"])).unwrap();
    assert_eq!(json, serde_json::json!([{"id": 0}, {"id": 1}, {"id": 2}]));
    let table = ok(&["head", s(&archive)]);
    // Labels are `l0`..`l7`; the header's `| label` is not one.
    assert_eq!(
        table.matches("| l").count() - table.matches("| label").count(),
        7,
        "10 rows, every 4th label null: {table}"
    );
    assert!(table.contains("| price"), "{table}");
    // A NULL shows as NULL (not as an empty string would), and JSON keeps its key.
    assert_eq!(table.matches("| NULL").count(), 3, "{table}");
    let rows: serde_json::Value =
        serde_json::from_str(&ok(&["head", s(&archive), "-n", "1", "--format", "json"])).unwrap();
    assert_eq!(rows[0]["label"], serde_json::Value::Null, "{rows}");
    assert!(rows[0].as_object().unwrap().contains_key("label"), "{rows}");
    // Asking for rows in the corrupt batch fails, naming what is wrong.
    let err = fails(&["head", s(&ids), "-n", "2500"]);
    assert!(
        err.contains("batch 2") || err.contains("CRC") || err.contains("checksum"),
        "{err}"
    );
}

/// Issue 16: a short flag means one thing in every subcommand (`-f` was `--force` in
/// `compress` and `--file` in `sql`; `-c` was `--codec` in `compress` and `--command` in
/// `sql`).
#[test]
fn short_flags_mean_one_thing_across_subcommands() {
    let top = ok(&["--help"]);
    let subcommands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|&name| name != "help")
        .collect();
    assert!(subcommands.len() >= 8, "{top}");
    let mut meanings: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        Default::default();
    for sub in &subcommands {
        let help = ok(&[sub, "--help"]);
        for line in help.lines() {
            let line = line.trim_start();
            // "-c, --command <COMMAND>  …"
            if let Some(rest) = line.strip_prefix('-')
                && let Some((short, long)) = rest.split_once(", --")
                && short.len() == 1
            {
                let long = long.split_whitespace().next().unwrap_or("");
                meanings
                    .entry(short.to_string())
                    .or_default()
                    .insert(long.to_string());
            }
        }
    }
    assert!(
        meanings.contains_key("o") && meanings.contains_key("c"),
        "{meanings:?}"
    );
    for (short, longs) in &meanings {
        assert_eq!(longs.len(), 1, "-{short} means {longs:?}");
    }
}

/// Every option of every subcommand says what it does in `--help` (`decompress --force`
/// once had no text).
#[test]
fn every_option_has_help_text() {
    let top = ok(&["--help"]);
    let subcommands: Vec<&str> = top
        .lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|&name| name != "help")
        .collect();
    for sub in subcommands {
        let help = ok(&[sub, "--help"]);
        for line in help.lines().filter(|l| l.trim_start().starts_with('-')) {
            // "  -f, --force  Replace …": the flag, two or more spaces, then the text.
            let described = line
                .trim()
                .split_once("  ")
                .is_some_and(|(_, text)| !text.trim().is_empty());
            assert!(described, "colzip {sub} --help: no text for {line:?}");
        }
        // A file the help names is in the repository.
        for word in help.split(|c: char| c.is_whitespace() || "(),;`'".contains(c)) {
            let word = word.trim_end_matches(['.', ':']);
            if word.contains('/')
                && [".sh", ".md", ".py", ".rs"]
                    .iter()
                    .any(|e| word.ends_with(e))
            {
                assert!(
                    Path::new(env!("CARGO_MANIFEST_DIR")).join(word).exists(),
                    "colzip {sub} --help names {word}, which is not in the repository"
                );
            }
        }
    }
    // docs/CODECS.md lists the codec forms `compress --help` lists, as written there.
    let help = ok(&["compress", "--help"]);
    let forms = help
        .lines()
        .find_map(|l| l.split_once("--codec <CODEC>"))
        .and_then(|(_, text)| text.split_once("Codec: "))
        .and_then(|(_, text)| text.split_once(" [default"))
        .map(|(forms, _)| forms.to_string())
        .expect("compress --help lists the codec forms");
    let docs =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/CODECS.md"))
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
    let forms: Vec<&str> = forms
        .split(", ")
        .map(|f| f.trim_end_matches(" (integers)"))
        .collect();
    assert!(forms.len() >= 6, "{forms:?}");
    for form in forms {
        assert!(
            docs.contains(&format!("`{form}`")),
            "{form} is not in docs/CODECS.md"
        );
    }
}

/// Without the `ballista` feature, the cluster commands exist but say how to get them.
#[cfg(all(feature = "datafusion", not(feature = "ballista")))]
#[test]
fn cluster_commands_need_the_ballista_feature() {
    for args in [
        &["cluster", "scheduler", "--bind", "127.0.0.1:0"][..],
        &[
            "cluster",
            "executor",
            "--scheduler",
            "127.0.0.1:1",
            "--bind",
            "127.0.0.1:0",
        ],
        &["sql", "--remote", "df://127.0.0.1:1", "-c", "SELECT 1"],
        // Addresses are optional (127.0.0.1 by default).
        &["cluster", "scheduler"],
        &["cluster", "executor"],
    ] {
        let out = colzip(args);
        assert_eq!(out.status.code(), Some(1), "colzip {args:?}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains("--features ballista"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
    }
}

#[test]
fn force_replaces_only_regular_files_and_keeps_their_mode() {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![3u8; 50_000]).unwrap();
    let archive = dir.path().join("values.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);
    let expected = std::fs::read(&archive).unwrap();

    // A private output stays private when replaced.
    std::fs::set_permissions(&archive, std::fs::Permissions::from_mode(0o600)).unwrap();
    ok(&["compress", s(&input), "-o", s(&archive), "--force"]);
    let mode = std::fs::metadata(&archive).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    assert_eq!(std::fs::read(&archive).unwrap(), expected);

    // A directory and a socket are refused, even with --force, and stay what they were.
    let sub = dir.path().join("sub");
    std::fs::create_dir(&sub).unwrap();
    let err = fails(&["compress", s(&input), "-o", s(&sub), "--force"]);
    assert!(err.contains("is a directory, not a regular file"), "{err}");
    assert!(sub.is_dir());
    let socket = dir.path().join("socket");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let err = fails(&["decompress", s(&archive), "-o", s(&socket), "--force"]);
    assert!(err.contains("is a socket, not a regular file"), "{err}");
    assert!(socket.symlink_metadata().unwrap().file_type().is_socket());

    // A FIFO is a stream: the archive goes into it, and it stays a FIFO.
    let fifo = dir.path().join("fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    ok(&["compress", s(&input), "-o", s(&fifo), "--force"]);
    assert_eq!(reader.join().unwrap(), expected);
    assert!(fifo.symlink_metadata().unwrap().file_type().is_fifo());
    // No temporary file is left behind by any of these.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.ends_with(".partial")), "{names:?}");
}

#[test]
fn a_missing_output_directory_is_named_not_a_temporary_file() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![3u8; 1000]).unwrap();
    let output = dir.path().join("nowhere").join("values.czip");
    let err = fails(&["compress", s(&input), "-o", s(&output)]);
    assert!(err.contains("does not exist"), "{err}");
    assert!(err.contains("nowhere"), "{err}");
    assert!(!err.contains(".partial"), "{err}");
}

/// Starts `colzip compress - -o OUT` with `TMPDIR` at `dir`, writes part of its input and
/// keeps standard input open; returns once the spool of that input exists, with its
/// directory.
fn spooling(
    dir: &Path,
    out: &Path,
) -> (
    std::process::Child,
    std::process::ChildStdin,
    std::path::PathBuf,
) {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = cli_run::command()
        .args(["compress", "-", "--type", "bytes", "-o", s(out)])
        .env("TMPDIR", dir)
        .env_remove("RUST_BACKTRACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&[5u8; 100_000]).unwrap();
    stdin.flush().unwrap();
    for _ in 0..1000 {
        if let Some(spool) = spools(dir).first()
            && spool.join("stdin").exists()
        {
            return (child, stdin, spool.clone());
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("no spool directory appeared while stdin was read");
}

/// The spool directories colzip made in `dir`.
fn spools(dir: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("colzip-pipe")
        })
        .collect()
}

#[test]
fn pipe_spools_are_private_and_removed() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.czip");
    let (child, stdin, spool) = spooling(dir.path(), &out);
    let mode = |p: &Path| p.metadata().unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&spool), 0o700);
    assert_eq!(mode(&spool.join("stdin")), 0o600);
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(out.exists());
    assert!(
        spools(dir.path()).is_empty(),
        "the spool is removed at the end"
    );
}

#[test]
fn the_next_piped_run_removes_the_spools_a_killed_run_left() {
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = tempfile::tempdir().unwrap();
    // The pid of a process that has ended: a child, waited for.
    let gone = std::process::Command::new("true").spawn().unwrap();
    let gone_pid = gone.id();
    let mut gone = gone;
    gone.wait().unwrap();
    let make = |name: &str| {
        let spool = dir.path().join(name);
        std::fs::DirBuilder::new()
            .mode(0o700)
            .create(&spool)
            .unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(spool.join("stdin"))
            .unwrap();
        spool
    };
    let stale = make(&format!("colzip-pipe.{gone_pid}.Ab12Cd"));
    // This test's own process is alive: its spool stays, as does a name of another form.
    let live = make(&format!("colzip-pipe.{}.Ef34Gh", std::process::id()));
    let other = make("colzip-pipe-not-a-spool");
    let out = dir.path().join("out.czip");
    let (child, stdin, _spool) = spooling(dir.path(), &out);
    drop(stdin);
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!stale.exists(), "the killed run's spool is removed");
    assert!(live.join("stdin").exists() && other.join("stdin").exists());
}

#[test]
fn ctrl_c_sigterm_and_sighup_remove_the_spools() {
    use std::os::unix::process::ExitStatusExt;
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out.czip");
        let (mut child, stdin, _spool) = spooling(dir.path(), &out);
        // SAFETY: kill sends a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
        let status = child.wait().unwrap();
        drop(stdin);
        // Ended by the signal itself (the handler re-raises it), after removing the spool.
        assert_eq!(status.signal(), Some(signal), "{status:?}");
        assert!(spools(dir.path()).is_empty(), "signal {signal}: spool left");
        assert!(!out.exists());
    }
}

#[test]
fn compressed_data_is_not_written_to_a_terminal() {
    use expectrl::{Eof, Expect, Session};
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![9u8; 1000]).unwrap();
    // Standard output a terminal, and the terminal named as the output file.
    for redirect in ["- <", "-o /dev/stdout"] {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(format!(
                "'{}' compress {redirect} '{}'; echo \"exit=$?\"",
                env!("CARGO_BIN_EXE_colzip"),
                s(&input)
            ))
            .env_remove("RUST_BACKTRACE");
        let mut session = Session::spawn(command).unwrap();
        session.set_expect_timeout(Some(std::time::Duration::from_secs(60)));
        session
            .expect("refusing to write compressed data to a terminal")
            .unwrap();
        session.expect("exit=1").unwrap();
        session.expect(Eof).unwrap();
    }
}

/// Runs `sh -c script` on a pseudo-terminal and returns everything it printed there.
fn on_a_terminal(script: &str) -> String {
    use expectrl::{Eof, Expect, Session};
    let mut command = Command::new("sh");
    command.arg("-c").arg(script).env_remove("RUST_BACKTRACE");
    let mut session = Session::spawn(command).unwrap();
    session.set_expect_timeout(Some(std::time::Duration::from_secs(60)));
    let captured = session.expect(Eof).unwrap();
    String::from_utf8_lossy(captured.get(0).unwrap_or_default()).into_owned()
}

#[test]
fn binary_output_is_not_written_to_a_terminal_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let ints = dir.path().join("ints.bin");
    let values: Vec<u8> = (0..1000i64).flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(&ints, &values).unwrap();
    let lines = dir.path().join("lines.txt");
    std::fs::write(&lines, "alpha\nbeta\n").unwrap();
    let ints_archive = dir.path().join("ints.czip");
    let lines_archive = dir.path().join("lines.czip");
    ok(&[
        "compress",
        s(&ints),
        "--type",
        "int64",
        "-o",
        s(&ints_archive),
    ]);
    ok(&[
        "compress",
        s(&lines),
        "--type",
        "utf8-lines",
        "-o",
        s(&lines_archive),
    ]);
    let exe = env!("CARGO_BIN_EXE_colzip");
    let refused = [
        // Standard output a terminal, and the terminal named as the output file.
        (
            format!("'{exe}' decompress - < '{}'", s(&ints_archive)),
            "raw int64 values",
        ),
        (
            format!("'{exe}' decompress '{}' -o /dev/stdout", s(&ints_archive)),
            "raw int64 values",
        ),
        (
            format!("'{exe}' decompress '{}' -o - --to arrow", s(&lines_archive)),
            "an Arrow IPC file",
        ),
    ];
    for (command, what) in refused {
        let screen = on_a_terminal(&format!("{command}; echo \"exit=$?\""));
        assert!(
            screen.contains(&format!(
                "colzip: error: refusing to write {what} to a terminal"
            )),
            "{command}: {screen}"
        );
        assert!(screen.contains("exit=1"), "{command}: {screen}");
        assert!(!screen.contains("ARROW1"), "{command}: {screen}");
    }
    // Text is shown, as `gzip -dc` shows it; --force writes binary output anyway.
    let screen = on_a_terminal(&format!(
        "'{exe}' decompress - < '{}'; echo \"exit=$?\"",
        s(&lines_archive)
    ));
    assert!(
        screen.contains("beta") && screen.contains("exit=0"),
        "{screen}"
    );
    let screen = on_a_terminal(&format!(
        "'{exe}' decompress '{}' -o - --to arrow --force | head -c 6; echo; echo \"exit=$?\"",
        s(&lines_archive)
    ));
    assert!(
        screen.contains("ARROW1") && screen.contains("exit=0"),
        "{screen}"
    );
}

/// `-o /dev/stdout > FILE` (here a link of the test's own to `/proc/self/fd/1`, so that a
/// regression replaces that link, not `/dev/stdout`): the data goes through standard
/// output, in its append mode, and the link stays a link.
#[test]
fn an_output_naming_standard_output_is_written_through_it_never_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines.txt");
    std::fs::write(&lines, "alpha\nbeta\n").unwrap();
    let archive = dir.path().join("lines.czip");
    ok(&[
        "compress",
        s(&lines),
        "--type",
        "utf8-lines",
        "-o",
        s(&archive),
    ]);
    let link = dir.path().join("stdout");
    std::os::unix::fs::symlink("/proc/self/fd/1", &link).unwrap();
    let target = dir.path().join("out.txt");
    std::fs::write(&target, "kept\n").unwrap();
    let run = cli_run::command()
        .args(["decompress", s(&archive), "-o", s(&link), "--force"])
        .stdout(
            std::fs::OpenOptions::new()
                .append(true)
                .open(&target)
                .unwrap(),
        )
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert!(link.symlink_metadata().unwrap().file_type().is_symlink());
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "kept\nalpha\nbeta\n"
    );
}

#[test]
fn colzip_gpu_exits_non_zero_without_a_gpu() {
    let out = colzip(&["gpu", "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    if report["available"] == true {
        assert!(out.status.success(), "{stderr}");
    } else {
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("error: no usable GPU: "), "{stderr}");
        // The text form says it on stderr too, and nothing on stdout.
        let text = colzip(&["gpu"]);
        assert_eq!(text.status.code(), Some(1));
        assert!(text.stdout.is_empty());
    }
}

#[test]
fn info_on_what_is_not_an_archive_says_what_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let err = fails(&["info", s(dir.path())]);
    assert!(
        err.contains("is a directory, not a colzip archive"),
        "{err}"
    );
    let parquet = dir.path().join("t.parquet");
    std::fs::write(&parquet, b"PAR1 and then some bytes PAR1").unwrap();
    let err = fails(&["info", s(&parquet)]);
    assert!(err.contains("it is a Parquet file"), "{err}");
    assert!(err.contains("colzip compress"), "{err}");
}

#[test]
fn a_parquet_file_of_ten_thousand_one_row_groups_round_trips() {
    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray};
    use std::sync::Arc;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("tiny.parquet");
    let rows = 10_000;
    let batch = RecordBatch::try_from_iter(vec![
        (
            "id",
            Arc::new(Int64Array::from_iter_values(0..rows as i64)) as ArrayRef,
        ),
        (
            "label",
            Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("x{i}")),
            )),
        ),
    ])
    .unwrap();
    let props = parquet::file::properties::WriterProperties::builder()
        .set_max_row_group_row_count(Some(1))
        .build();
    let mut writer = parquet::arrow::ArrowWriter::try_new(
        std::fs::File::create(&input).unwrap(),
        batch.schema(),
        Some(props),
    )
    .unwrap();
    // A row at a time: one write of the whole batch would recurse once per row group.
    for row in 0..rows {
        writer.write(&batch.slice(row, 1)).unwrap();
    }
    writer.close().unwrap();
    let archive = dir.path().join("tiny.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);
    let back = dir.path().join("back.parquet");
    // Decoded as one batch of 10,000 rows, written back as the source's one-row groups
    // (ArrowWriter alone would recurse once per row group, past the thread's stack).
    ok(&["decompress", s(&archive), "-o", s(&back)]);
    let (_, groups) = parquet_layout(&back);
    assert_eq!(groups.len(), rows);
    let read = read_parquet(&back, &batch.schema());
    assert_eq!(read.column(0), batch.column(0));
    assert_eq!(
        read.column(1).as_ref(),
        &arrow::compute::cast(batch.column(1), read.column(1).data_type()).unwrap()
    );
}

#[test]
fn bench_measures_the_cpu_rows_alone_without_a_gpu() {
    let help = ok(&["bench", "--help"]);
    assert!(!help.contains("Needs a GPU"), "{help}");
    assert!(help.contains("Without a GPU (or with --backend cpu), the CPU rows alone"));
    let out = ok(&[
        "bench",
        "--backend",
        "cpu",
        "--sf",
        "0.002",
        "--suites",
        "gmatch,lzss,intpack",
        "--columns",
        "l_quantity",
        "--s",
        "2",
        "--w",
        "32",
        "--c",
        "2048",
        "--runs",
        "1",
        "--format",
        "json",
    ]);
    let rows: Vec<serde_json::Value> = serde_json::from_str(&out).unwrap();
    let codecs: Vec<&str> = rows.iter().map(|r| r["codec"].as_str().unwrap()).collect();
    // gmatch's four kinds (raw pages, blocks, framed, snap's pages), one lzss and intpack.
    assert_eq!(rows.len(), 6, "{codecs:?}");
    for codec in [
        "gmatch:raw",
        "gmatch",
        "gmatch:framed",
        "snap-stream:raw",
        "intpack",
    ] {
        assert!(codecs.contains(&codec), "{codec} in {codecs:?}");
    }
    assert!(codecs.contains(&"lzss:s=2,w=32,c=2048"), "{codecs:?}");
    for row in &rows {
        assert_eq!(row["backend"], "cpu", "{row}");
        assert_eq!(row["gpus"], 0, "{row}");
        assert!(row["ratio"].as_f64().unwrap() > 1.0, "{row}");
        assert!(row["decompress_gbps"].as_f64().unwrap() > 0.0, "{row}");
    }
    let err = fails(&["bench", "--backend", "cpu", "--no-cpu", "--sf", "0.002"]);
    assert!(err.contains("nothing to measure"), "{err}");
}

#[test]
fn outputs_are_the_same_with_or_without_the_flush_before_rename() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(
        &input,
        (0..50_000u32)
            .flat_map(|i| (i / 3).to_le_bytes())
            .collect::<Vec<u8>>(),
    )
    .unwrap();
    let flushed = dir.path().join("flushed.czip");
    let unflushed = dir.path().join("unflushed.czip");
    ok(&["compress", s(&input), "-o", s(&flushed)]);
    // A global flag: before or after the command.
    ok(&["--no-fsync", "compress", s(&input), "-o", s(&unflushed)]);
    assert_eq!(
        std::fs::read(&flushed).unwrap(),
        std::fs::read(&unflushed).unwrap()
    );
    let back = dir.path().join("back.bin");
    ok(&["decompress", s(&unflushed), "-o", s(&back), "--no-fsync"]);
    assert_eq!(
        std::fs::read(&back).unwrap(),
        std::fs::read(&input).unwrap()
    );
}

/// Runs `colzip args` with standard output a pipe whose reader is already gone (as after
/// `| head -1`), standard input `stdin`, and `TMPDIR` at `tmp`.
fn into_closed_pipe(args: &[&str], stdin: &Path, tmp: &Path) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    cli_run::command()
        .args(args)
        .env("TMPDIR", tmp)
        .env_remove("RUST_BACKTRACE")
        .stdin(std::fs::File::open(stdin).unwrap())
        .stdout(writer)
        .output()
        .unwrap()
}

#[test]
fn a_closed_standard_output_ends_the_process_quietly() {
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let lines = dir.path().join("lines.txt");
    let text: String = (0..20_000).map(|i| format!("{i}\n")).collect();
    std::fs::write(&lines, text).unwrap();
    let archive = dir.path().join("lines.czip");
    ok(&[
        "compress",
        s(&lines),
        "--type",
        "utf8-lines",
        "-o",
        s(&archive),
    ]);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let cases: [&[&str]; 7] = [
        &["info", s(&archive)],
        &["info", s(&archive), "--format", "json"],
        &["head", s(&archive), "-n", "1000"],
        &["decompress", s(&archive), "-o", "-"],
        &["decompress", "-"],
        &["compress", "-", "--type", "utf8-lines"],
        &["sql", "-c", "SELECT * FROM generate_series(1, 100000)"],
    ];
    for args in cases {
        let stdin = if args.contains(&"decompress") {
            &archive
        } else {
            &lines
        };
        let out = into_closed_pipe(args, stdin, &tmp);
        let stderr = String::from_utf8_lossy(&out.stderr);
        // Ended by SIGPIPE, as `cat` and `gzip` are (the shell's status 141), saying nothing
        // (a warning about the input may still come first).
        assert_eq!(
            out.status.signal(),
            Some(libc::SIGPIPE),
            "colzip {args:?}: {:?} {stderr}",
            out.status
        );
        assert!(!stderr.contains("error"), "colzip {args:?}: {stderr}");
        assert!(
            std::fs::read_dir(&tmp).unwrap().next().is_none(),
            "colzip {args:?} left a spool"
        );
    }
}

/// The temporary files next to `dir`'s outputs.
fn partials(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect();
    names.sort();
    names
}

#[test]
fn the_next_run_removes_what_a_killed_run_left() {
    let dir = tempfile::tempdir().unwrap();
    let ints = dir.path().join("ints.bin");
    let values: Vec<u8> = (0..4_000_000i64)
        .flat_map(|v| (v * 7919 % 100_003).to_le_bytes())
        .collect();
    std::fs::write(&ints, &values).unwrap();
    let archive = dir.path().join("ints.czip");
    ok(&["compress", s(&ints), "--type", "int64", "-o", s(&archive)]);
    let csv = dir.path().join("ints.csv");
    // SIGKILL a decompression once its temporary file exists: nothing can remove it then.
    let mut killed = None;
    for _ in 0..20 {
        let mut child = cli_run::command()
            .args(["decompress", s(&archive), "--to", "csv", "-o", s(&csv)])
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        while partials(dir.path()).is_empty()
            && child.try_wait().unwrap().is_none()
            && started.elapsed().as_secs() < 30
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        child.kill().unwrap_or_default();
        let status = child.wait().unwrap();
        if !status.success() && !partials(dir.path()).is_empty() {
            killed = Some(child.id());
            break;
        }
        // It finished first: again, with the output out of the way.
        let _ = std::fs::remove_file(&csv);
    }
    let pid = killed.expect("a run killed while writing");
    let left = partials(dir.path());
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0].starts_with(&format!(".ints.csv.{pid}.")),
        "the writer's pid in the name: {left:?}"
    );
    // A live writer's file (this test's pid) and another output's stay.
    let live = format!(".ints.csv.{}.aB3xYz.partial", std::process::id());
    let other = format!(".other.csv.{pid}.aB3xYz.partial");
    for name in [&live, &other] {
        std::fs::write(dir.path().join(name), b"").unwrap();
    }
    let run = colzip(&[
        "decompress",
        s(&archive),
        "--to",
        "csv",
        "-o",
        s(&csv),
        "--verbose",
    ]);
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("removed {}", s(&dir.path().join(&left[0])))),
        "{stderr}"
    );
    let mut kept = vec![live, other];
    kept.sort();
    assert_eq!(partials(dir.path()), kept);
    assert!(csv.exists());
}

/// Runs `script` under `sh` in a private mount namespace where `small` (made here) is a
/// 1 MiB tmpfs, with `$SMALL` naming it and `$COLZIP` the binary; `None` where this
/// machine does not let a test mount one (no `unshare`, or no right to mount).
fn on_a_small_disk(small: &Path, script: &str) -> Option<Output> {
    std::fs::create_dir(small).unwrap();
    let out = Command::new("unshare")
        .args(["--mount", "sh", "-c"])
        .arg(format!(
            "mount -t tmpfs -o size=1m colzip-test \"$SMALL\" || exit 77\necho mounted\n{script}"
        ))
        .env("SMALL", small)
        .env("COLZIP", env!("CARGO_BIN_EXE_colzip"))
        .env_remove("RUST_BACKTRACE")
        .output()
        .ok()?;
    if !String::from_utf8_lossy(&out.stdout).starts_with("mounted\n") {
        eprintln!(
            "skipped: no small file system here: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        return None;
    }
    Some(out)
}

/// On a full disk every kind of output fails with exit 1 and one line naming the output
/// and the cause, never a SIGBUS (exit 135) from a mapped raw output; it leaves no
/// temporary file, and an output it would have replaced keeps its bytes.
#[cfg(target_os = "linux")]
#[test]
fn a_full_disk_is_a_one_line_error_naming_the_output_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    // 4 MB of int32 values, and 2 MB that do not compress: each output is over 1 MiB.
    let ints = dir.path().join("ints.bin");
    let values: Vec<u8> = (0..1_000_000i32)
        .flat_map(|v| (v.wrapping_mul(7919) % 100_003).to_le_bytes())
        .collect();
    std::fs::write(&ints, &values).unwrap();
    let archive = dir.path().join("ints.czip");
    ok(&["compress", s(&ints), "--type", "int32", "-o", s(&archive)]);
    let mut noise = Vec::with_capacity(2_000_000);
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    while noise.len() < 2_000_000 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        noise.extend_from_slice(&x.to_le_bytes());
    }
    let noise_file = dir.path().join("noise.bin");
    std::fs::write(&noise_file, &noise).unwrap();
    let errors = dir.path().join("errors");
    std::fs::create_dir(&errors).unwrap();
    // (name, arguments, the output on the small disk)
    let cases = [
        (
            "raw",
            format!("decompress '{}' --force", s(&archive)),
            "ints.bin",
        ),
        (
            "csv",
            format!("decompress '{}' --to csv", s(&archive)),
            "ints.csv",
        ),
        (
            "arrow",
            format!("decompress '{}' --to arrow", s(&archive)),
            "ints.arrow",
        ),
        (
            "parquet",
            format!("decompress '{}' --to parquet", s(&archive)),
            "ints.parquet",
        ),
        (
            "archive",
            format!("compress '{}' --type bytes", s(&noise_file)),
            "noise.czip",
        ),
    ];
    // An existing output, replaced by the raw case's --force were there room.
    let mut script = String::from("printf keep > \"$SMALL/ints.bin\"\n");
    for (name, args, output) in &cases {
        script.push_str(&format!(
            "\"$COLZIP\" {args} -o \"$SMALL/{output}\" 2> '{}/{name}'; echo \"{name}=$?\"\n",
            s(&errors)
        ));
    }
    script.push_str("ls -A \"$SMALL\"; echo; cat \"$SMALL/ints.bin\"\n");
    let small = dir.path().join("small");
    let Some(out) = on_a_small_disk(&small, &script) else {
        return;
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    for (name, _, output) in &cases {
        assert!(stdout.contains(&format!("{name}=1\n")), "{name}: {stdout}");
        let stderr = std::fs::read_to_string(errors.join(name)).unwrap();
        assert_eq!(stderr.lines().count(), 1, "{name}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "colzip: error: cannot write {}: No space left on device",
                s(&small.join(output))
            )),
            "{name}: {stderr}"
        );
    }
    // Nothing but the output that was there, with its bytes.
    let tail: Vec<&str> = stdout.lines().skip(1 + cases.len()).collect();
    assert_eq!(tail, ["ints.bin", "", "keep"], "{stdout}");
}

/// A full device as the output (`/dev/full` fails every write with ENOSPC) goes through
/// the stream path: exit 1, one line naming it, no spool left; standard output on one is
/// named too.
#[cfg(target_os = "linux")]
#[test]
fn a_full_device_as_the_output_is_a_one_line_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![7u8; 200_000]).unwrap();
    let archive = dir.path().join("values.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    let full = || {
        std::fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap()
    };
    let typed = ["--type", "bytes"];
    // (arguments, whether standard output is /dev/full too, how the error names the output)
    let cases: [(&[&str], bool, &str); 4] = [
        (
            &["compress", s(&input), "-o", "/dev/full"],
            false,
            "/dev/full",
        ),
        (
            &["decompress", s(&archive), "-o", "/dev/full"],
            false,
            "/dev/full",
        ),
        (
            &["decompress", s(&archive), "-o", "-"],
            true,
            "standard output",
        ),
        (&["compress", s(&input), "-o", "-"], true, "standard output"),
    ];
    for (args, on_stdout, named) in cases {
        let out = cli_run::command()
            .args(args)
            .args(if args[0] == "compress" {
                &typed[..]
            } else {
                &[]
            })
            .env("TMPDIR", &tmp)
            .stdout(if on_stdout {
                full().into()
            } else {
                std::process::Stdio::null()
            })
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with(&format!(
                "colzip: error: cannot write {named}: No space left on device"
            )),
            "{args:?}: {stderr}"
        );
        assert!(
            std::fs::read_dir(&tmp).unwrap().next().is_none(),
            "{args:?} left a spool"
        );
    }
    use std::os::unix::fs::FileTypeExt;
    let kind = Path::new("/dev/full")
        .symlink_metadata()
        .unwrap()
        .file_type();
    assert!(kind.is_char_device());
}

/// `--force` onto a character device writes into it as a stream and leaves it a device;
/// onto a block device it is refused, and the node stays. Device nodes are made here (as
/// /dev/null's 1:3, and an unused block number), where this machine allows `mknod`.
#[cfg(target_os = "linux")]
#[test]
fn force_writes_into_a_character_device_and_refuses_a_block_device() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let null = dir.path().join("null");
    let block = dir.path().join("block");
    let made = Command::new("mknod")
        .args([s(&null), "c", "1", "3"])
        .status()
        .is_ok_and(|st| st.success())
        && Command::new("mknod")
            .args([s(&block), "b", "7", "250"])
            .status()
            .is_ok_and(|st| st.success());
    if !made {
        eprintln!("skipped: mknod is not allowed here");
        return;
    }
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![3u8; 50_000]).unwrap();
    let archive = dir.path().join("values.czip");
    ok(&["compress", s(&input), "-o", s(&archive)]);
    ok(&["compress", s(&input), "-o", s(&null), "--force"]);
    ok(&["decompress", s(&archive), "-o", s(&null), "--force"]);
    assert!(
        null.symlink_metadata()
            .unwrap()
            .file_type()
            .is_char_device()
    );
    for args in [
        ["compress", s(&input), "-o", s(&block), "--force"],
        ["decompress", s(&archive), "-o", s(&block), "--force"],
    ] {
        let err = fails(&args);
        assert!(err.contains("is a device, not a regular file"), "{err}");
        assert!(
            block
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_block_device()
        );
    }
    assert!(partials(dir.path()).is_empty());
}

/// Ctrl-C, SIGTERM or SIGHUP while an output file is written removes its temporary file,
/// which is private (0600) while it exists; the process still ends by the signal, and no
/// output appears.
#[test]
fn ctrl_c_sigterm_and_sighup_remove_a_partial_output() {
    use std::os::unix::fs::PermissionsExt;
    use std::os::unix::process::ExitStatusExt;
    let dir = tempfile::tempdir().unwrap();
    let ints = dir.path().join("ints.bin");
    let values: Vec<u8> = (0..4_000_000i64)
        .flat_map(|v| (v * 7919 % 100_003).to_le_bytes())
        .collect();
    std::fs::write(&ints, &values).unwrap();
    let archive = dir.path().join("ints.czip");
    ok(&["compress", s(&ints), "--type", "int64", "-o", s(&archive)]);
    let csv = dir.path().join("ints.csv");
    let mut modes = Vec::new();
    for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        let mut interrupted = false;
        for _ in 0..20 {
            let mut child = cli_run::command()
                .args(["decompress", s(&archive), "--to", "csv", "-o", s(&csv)])
                .spawn()
                .unwrap();
            let started = std::time::Instant::now();
            let mut seen = None;
            while seen.is_none()
                && child.try_wait().unwrap().is_none()
                && started.elapsed().as_secs() < 30
            {
                seen = partials(dir.path()).pop();
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
            if let Some(mode) = seen
                .and_then(|name| dir.path().join(name).metadata().ok())
                .map(|m| m.permissions().mode() & 0o777)
            {
                modes.push(mode);
            }
            // SAFETY: kill sends a signal to the child this test started.
            unsafe { libc::kill(child.id() as libc::pid_t, signal) };
            let status = child.wait().unwrap();
            if status.signal() == Some(signal) {
                interrupted = true;
                assert!(
                    partials(dir.path()).is_empty(),
                    "signal {signal}: {:?}",
                    partials(dir.path())
                );
                assert!(!csv.exists(), "signal {signal}: an output appeared");
                break;
            }
            // It finished first: again, with the output out of the way.
            let _ = std::fs::remove_file(&csv);
        }
        assert!(interrupted, "signal {signal}: no run was interrupted");
    }
    assert!(!modes.is_empty(), "no temporary file was seen");
    assert!(modes.iter().all(|&m| m == 0o600), "{modes:?}");
}

/// The finished output is flushed to disk before it is renamed into place, and
/// `--no-fsync` leaves the flush out (observed with strace, where it can trace).
#[cfg(target_os = "linux")]
#[test]
fn outputs_are_flushed_before_the_rename_unless_no_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("values.bin");
    std::fs::write(&input, vec![5u8; 100_000]).unwrap();
    let traced = |flag: Option<&str>, output: &Path| -> Option<Vec<String>> {
        let log = dir.path().join("strace.log");
        let mut command = Command::new("strace");
        command
            .args([
                "-f",
                "-qq",
                "-e",
                "trace=fsync,fdatasync,rename,renameat,renameat2,link,linkat",
                "-o",
            ])
            .arg(&log)
            .arg(env!("CARGO_BIN_EXE_colzip"))
            .args(flag)
            .args(["compress", s(&input), "-o", s(output)])
            .env_remove("RUST_BACKTRACE");
        let run = command.output().ok()?;
        if !run.status.success() || !log.exists() {
            eprintln!(
                "skipped: strace cannot trace here: {}",
                String::from_utf8_lossy(&run.stderr)
            );
            return None;
        }
        let calls = std::fs::read_to_string(&log).unwrap();
        // Each call's name, in order (lines are `PID name(args) = result`).
        Some(
            calls
                .lines()
                .filter_map(|l| {
                    l.split_whitespace()
                        .nth(1)?
                        .split('(')
                        .next()
                        .map(String::from)
                })
                .collect(),
        )
    };
    let Some(flushed) = traced(None, &dir.path().join("a.czip")) else {
        return;
    };
    let rename = flushed
        .iter()
        .position(|c| c.starts_with("rename") || c.starts_with("link"))
        .unwrap_or_else(|| panic!("no rename: {flushed:?}"));
    assert!(
        flushed[..rename]
            .iter()
            .any(|c| c == "fsync" || c == "fdatasync"),
        "{flushed:?}"
    );
    let unflushed = traced(Some("--no-fsync"), &dir.path().join("b.czip")).unwrap();
    assert!(
        !unflushed.iter().any(|c| c == "fsync" || c == "fdatasync"),
        "{unflushed:?}"
    );
    assert!(dir.path().join("b.czip").exists());
}

/// A `--plot` file in a directory that does not exist is refused before the run (which
/// may take minutes), and a drawn plot is named on stderr; `bench --suites none
/// --write-columns` says how many files it wrote and where, instead of an empty table.
#[test]
fn plots_are_checked_before_the_run_and_outputs_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "tpch", "--sf", "0.001", "--tables", "region", "--codecs", "gmatch",
    ];
    let missing = dir.path().join("missing").join("codecs.svg");
    let out = colzip(&[&args[..], &["--plot", s(&missing)]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("does not exist"), "{stderr}");
    assert!(
        !stderr.contains("generating"),
        "refused after the run: {stderr}"
    );
    let svg = dir.path().join("codecs.svg");
    let out = colzip(&[&args[..], &["--plot", s(&svg)]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("wrote the plot to {}", s(&svg))),
        "{stderr}"
    );
    assert!(svg.exists());

    let columns = dir.path().join("cols");
    let out = colzip(&[
        "bench",
        "--sf",
        "0.002",
        "--suites",
        "none",
        "--write-columns",
        s(&columns),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(out.stdout.is_empty(), "an empty table");
    let written = std::fs::read_dir(&columns).unwrap().count();
    assert!(written > 0);
    assert!(
        stderr.contains(&format!("wrote {written} column files to {}", s(&columns))),
        "{stderr}"
    );
}
