//! `colzip bench --plot FILE.svg --peers FILE.json`: the ratio/speed picture of the
//! bench's rows and the peers', drawn from CPU rows on a tiny scale factor (no GPU
//! needed); a bad peers file is an error of one line before the run; an existing plot is
//! replaced only with --force.
#![cfg(feature = "cli")]

mod cli_run;

use cli_run::{colzip, fails_with, s, svg_elements};

/// A bench of CPU rows alone that takes a second in the debug build: intpack on one
/// column.
const TINY: &[&str] = &[
    "bench",
    "--backend",
    "cpu",
    "--sf",
    "0.002",
    "--suites",
    "intpack",
    "--columns",
    "l_quantity",
    "--runs",
    "1",
];

/// What peers.py prints: a row per (column, peer), or the peer's error.
const PEERS: &str = r#"[
{"column": "l_quantity", "file": "l_quantity.i32", "peer": "nvcomp-cascaded", "raw_bytes": 48000,
 "compressed_bytes": 16000, "ratio": 3.0, "compress_gbps": 150.5, "decompress_gbps": 240.0,
 "roundtrip": true},
{"column": "l_quantity", "file": "l_quantity.i32", "peer": "streamlz-l5", "error": "unsupported"},
{"column": "l_comment", "file": "l_comment.txt", "peer": "nvcomp-lz4", "raw_bytes": 48000,
 "compressed_bytes": 24000, "ratio": 2.0, "compress_gbps": 60.0, "decompress_gbps": 200.0,
 "roundtrip": true}
]"#;

#[test]
fn bench_rows_and_peers_are_drawn_and_an_existing_plot_needs_force() {
    let dir = tempfile::tempdir().unwrap();
    let peers = dir.path().join("peers.json");
    std::fs::write(&peers, PEERS).unwrap();
    let svg = dir.path().join("bench.svg");
    let args = [TINY, &["--plot", s(&svg), "--peers", s(&peers)]].concat();
    let out = colzip(&args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains(&format!("wrote the plot to {}", s(&svg))),
        "{stderr}"
    );
    // What the peers file held that is not drawn is said.
    assert!(stderr.contains("1 rows where the peer failed"), "{stderr}");
    assert!(
        stderr.contains("1 peer rows of columns this run did not measure (l_comment)"),
        "{stderr}"
    );
    let picture = std::fs::read_to_string(&svg).unwrap();
    let elements = svg_elements(&picture);
    // The CPU's intpack row in each panel and the legend's marker, as hollow squares
    // (rect, as the background); the peer's row in each panel and the legend's, as
    // triangles; no GPU discs.
    assert_eq!(elements.iter().filter(|e| *e == "polygon").count(), 3);
    assert_eq!(elements.iter().filter(|e| *e == "circle").count(), 0);
    for text in [
        "colzip bench --sf 0.002: l_quantity",
        "colzip on the CPU (wall-clock GB/s, all cores)",
        "peers (GB/s of device-to-device calls)",
        "compression GB/s (log scale): device-to-device calls for peers, wall-clock on the CPU",
        "nvcomp-cascaded",
        "intpack",
    ] {
        assert!(picture.contains(text), "no {text:?} in {picture}");
    }
    assert!(!picture.contains("nvcomp-lz4"), "a peer of another column");
    assert!(
        !picture.contains("colzip on the GPU"),
        "a legend entry without points"
    );

    // Drawn again: refused before the run without --force, the picture left as it was.
    let stderr = fails_with(1, &args);
    assert!(
        stderr.contains("exists (use --force to overwrite)"),
        "{stderr}"
    );
    assert_eq!(std::fs::read_to_string(&svg).unwrap(), picture);
    let out = colzip(&[&args[..], &["--force"]].concat());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // No temporary file is left beside it.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

#[test]
fn a_bad_peers_file_is_a_one_line_error_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let svg = dir.path().join("bench.svg");
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    let cases = [
        (
            dir.path().join("missing.json"),
            "cannot read the peers file",
        ),
        (write("garbage.json", "nvcomp,1.5\n"), "not a JSON document"),
        (
            write("object.json", r#"{"rows": []}"#),
            "expected a JSON array of peer rows",
        ),
        (
            write(
                "fields.json",
                r#"[{"column": "l_quantity", "peer": "nvcomp-lz4", "ratio": 2.0}]"#,
            ),
            "row 1: nvcomp-lz4 on l_quantity: no \"compress_gbps\"",
        ),
        (
            write(
                "ratio.json",
                r#"[{"column": "l_quantity", "peer": "nvcomp-lz4", "ratio": "2",
                     "compress_gbps": 1, "decompress_gbps": 1}]"#,
            ),
            "\"ratio\" is a string, not a number",
        ),
    ];
    for (peers, expected) in &cases {
        let args = [TINY, &["--plot", s(&svg), "--peers", s(peers)]].concat();
        let stderr = fails_with(1, &args);
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(stderr.contains(expected), "{expected:?} not in {stderr}");
        assert!(stderr.contains(s(peers)), "the file is not named: {stderr}");
        assert!(!svg.exists(), "drawn despite {stderr}");
    }
    // --peers goes with --plot: a usage error.
    let out = colzip(&[TINY, &["--peers", s(&cases[1].0)]].concat());
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--plot"));
}
