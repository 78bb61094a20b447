//! CSV and JSON-lines files through the `colzip` binary: typed columns in, the same
//! values out, clear errors for malformed files, and the warning for files of no known
//! kind.
#![cfg(all(feature = "cli", feature = "csv-json"))]

use std::path::Path;

mod cli_run;
use cli_run::{colzip, ok};

fn s(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// The (name, Arrow type) of each column `colzip info` lists.
fn columns(archive: &Path) -> Vec<(String, String)> {
    let info: serde_json::Value =
        serde_json::from_str(&ok(&["info", s(archive), "--format", "json"])).unwrap();
    info["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().to_string(),
                c["arrow_type"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Compresses `input` (a file of a known kind) to `input.czip`, which it returns: the
/// command succeeds without a word on stderr (no warning).
fn compress_quietly(input: &Path) -> std::path::PathBuf {
    let out = colzip(&["compress", s(input)]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut archive = input.as_os_str().to_owned();
    archive.push(".czip");
    archive.into()
}

const CSV: &str = "id,name,price,paid,day\n\
                   1,ann,2.5,true,2024-01-02\n\
                   2,bob,3.25,false,2024-02-03\n\
                   3,,4.0,true,2024-03-04\n\
                   40000000000,\"dee, jr\",-1.125,false,1999-12-31\n";

#[test]
fn a_csv_file_becomes_typed_columns_and_comes_back_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("t.csv");
    std::fs::write(&input, CSV).unwrap();
    let archive = compress_quietly(&input);
    assert_eq!(
        columns(&archive),
        [
            ("id", "Int64"),
            ("name", "Utf8"),
            ("price", "Float64"),
            ("paid", "Boolean"),
            ("day", "Date32"),
        ]
        .map(|(n, t)| (n.to_string(), t.to_string()))
    );
    let info = ok(&["info", s(&archive)]);
    assert!(info.contains("CSV archive, 4 rows"), "{info}");
    let head = ok(&["head", s(&archive), "-n", "2", "--format", "json"]);
    let head: serde_json::Value = serde_json::from_str(&head).unwrap();
    assert_eq!(head[1]["name"], "bob");
    assert_eq!(head[1]["price"], 3.25);
    // Back to CSV: the same text (a header, the values as written, the empty field null).
    let back = dir.path().join("back.csv");
    ok(&["decompress", s(&archive), "-o", s(&back)]);
    assert_eq!(std::fs::read_to_string(&back).unwrap(), CSV);
    let explicit = dir.path().join("back2");
    ok(&["decompress", s(&archive), "-o", s(&explicit), "--to", "csv"]);
    assert_eq!(std::fs::read_to_string(&explicit).unwrap(), CSV);
}

#[test]
fn csv_options_choose_the_delimiter_and_the_header() {
    let dir = tempfile::tempdir().unwrap();
    // A .tsv name reads tabs.
    let tsv = dir.path().join("t.tsv");
    std::fs::write(&tsv, "a\tb\n1\tx y\n2\tz\n").unwrap();
    ok(&["compress", s(&tsv)]);
    let archive = dir.path().join("t.tsv.czip");
    assert_eq!(
        columns(&archive),
        [("a", "Int64"), ("b", "Utf8")].map(|(n, t)| (n.to_string(), t.to_string()))
    );
    let back = dir.path().join("back.tsv");
    ok(&["decompress", s(&archive), "-o", s(&back)]);
    assert_eq!(
        std::fs::read_to_string(&back).unwrap(),
        "a\tb\n1\tx y\n2\tz\n"
    );
    // --type csv on any name, with a delimiter and no header line.
    let text = dir.path().join("t.txt");
    std::fs::write(&text, "1;x\n2;y\n").unwrap();
    let archive = dir.path().join("t.czip");
    ok(&[
        "compress",
        s(&text),
        "-o",
        s(&archive),
        "--type",
        "csv",
        "--delimiter",
        ";",
        "--csv-header",
        "false",
    ]);
    assert_eq!(
        columns(&archive),
        [("column_1", "Int64"), ("column_2", "Utf8")].map(|(n, t)| (n.to_string(), t.to_string()))
    );
    // The options are for CSV: elsewhere they are an error, not ignored.
    let raw = dir.path().join("v.bin");
    std::fs::write(&raw, [1u8, 2, 3]).unwrap();
    let out = colzip(&["compress", s(&raw), "--type", "bytes", "--delimiter", ";"]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--delimiter apply to CSV inputs"),
        "{stderr}"
    );
}

#[test]
fn a_json_lines_file_becomes_typed_columns() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("events.jsonl");
    let lines = "{\"id\":1,\"kind\":\"open\",\"tags\":[\"a\"]}\n\
                 {\"id\":2,\"kind\":null,\"tags\":[]}\n\
                 {\"id\":3,\"kind\":\"close\",\"score\":0.5}\n";
    std::fs::write(&input, lines).unwrap();
    let archive = compress_quietly(&input);
    let found = columns(&archive);
    let names: Vec<&str> = found.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["id", "kind", "tags", "score"]);
    assert_eq!(found[0].1, "Int64");
    assert_eq!(found[1].1, "Utf8");
    assert!(found[2].1.starts_with("List("), "{}", found[2].1);
    assert_eq!(found[3].1, "Float64");
    let info = ok(&["info", s(&archive)]);
    assert!(info.contains("JSON lines archive, 3 rows"), "{info}");
    // Back as JSON lines: the same objects (nulls left out).
    let back = dir.path().join("back.jsonl");
    ok(&["decompress", s(&archive), "-o", s(&back)]);
    let objects = |text: &str| -> Vec<serde_json::Value> {
        text.lines()
            .map(|l| {
                let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
                v.as_object_mut().unwrap().retain(|_, x| !x.is_null());
                v
            })
            .collect()
    };
    assert_eq!(
        objects(&std::fs::read_to_string(&back).unwrap()),
        objects(lines)
    );
}

#[test]
fn a_malformed_csv_file_is_a_one_line_error_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("bad.csv");
    std::fs::write(&input, "a,b\n1,2\n3,4,5\n6,7\n").unwrap();
    let out = colzip(&["compress", s(&input)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("colzip: error: "), "{stderr}");
    assert!(
        stderr.contains("bad.csv") && stderr.contains("line 3"),
        "{stderr}"
    );
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(!dir.path().join("bad.csv.czip").exists());
    // Not UTF-8.
    std::fs::write(&input, b"a,b\n1,\xff\xfe\n").unwrap();
    let out = colzip(&["compress", s(&input)]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("bad.csv"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_file_of_no_known_kind_is_compressed_as_bytes_with_a_warning() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("data.dat");
    std::fs::write(&input, "a,b\n1,2\n").unwrap();
    let out = colzip(&["compress", s(&input)]);
    assert!(out.status.success());
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.starts_with("colzip: warning: "), "{stderr}");
    assert!(stderr.contains("data.dat"), "{stderr}");
    for choice in ["--type", "csv", "json", "bytes", "utf8-lines", "int64"] {
        assert!(stderr.contains(choice), "{choice}: {stderr}");
    }
    // The behaviour is kept: one UInt8 column of the file's bytes.
    let archive = dir.path().join("data.dat.czip");
    assert_eq!(
        columns(&archive),
        [("value".to_string(), "UInt8".to_string())]
    );
    // Chosen with --type: no warning.
    let out = colzip(&["compress", s(&input), "--type", "bytes", "--force"]);
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A file of 3,000 columns compresses within 2 GiB of address space (the readers'
/// batches would otherwise claim room for a million rows of every column up front: tens
/// of GB, an abort or the OOM killer) and round-trips.
#[test]
fn a_file_of_thousands_of_columns_compresses_in_bounded_memory() {
    use std::os::unix::process::CommandExt;
    let dir = tempfile::tempdir().unwrap();
    let width = 3000;
    let header: Vec<String> = (0..width).map(|i| format!("c{i}")).collect();
    let values: Vec<String> = (0..width).map(|i| i.to_string()).collect();
    let csv = dir.path().join("wide.csv");
    std::fs::write(
        &csv,
        format!("{}\n{}\n", header.join(","), values.join(",")),
    )
    .unwrap();
    let pairs: Vec<String> = (0..width).map(|i| format!("\"c{i}\":{i}")).collect();
    let json = dir.path().join("wide.jsonl");
    std::fs::write(&json, format!("{{{}}}\n", pairs.join(","))).unwrap();
    for input in [&csv, &json] {
        let archive = dir.path().join("wide.czip");
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_colzip"));
        command
            .args(["compress", s(input), "-o", s(&archive), "--force"])
            .env_remove("RUST_BACKTRACE");
        // SAFETY: setrlimit is async-signal-safe, called in the child before exec.
        unsafe {
            command.pre_exec(|| {
                let limit = libc::rlimit {
                    rlim_cur: 2 << 30,
                    rlim_max: 2 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let out = command.output().unwrap();
        assert!(
            out.status.success(),
            "{}: {:?} {}",
            input.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(columns(&archive).len(), width);
    }
}
