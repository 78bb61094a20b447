//! `colzip bench --peers FILE.json`: the rows other GPU codecs measured on the columns
//! `colzip bench --write-columns` wrote, as `../shared/tools/peers.py` (nvCOMP,
//! StreamLZ) and `scripts/typed-peers.py` (nvCOMP's typed codecs at each option set)
//! print them.
//!
//! The file is one JSON array of objects. Each has `peer` (the codec: `nvcomp-lz4`,
//! `streamlz-l1`, …) and `column` (the column file's stem: `l_comment`), and either
//! `ratio`, `compress_gbps` and `decompress_gbps` (numbers; `null` for a direction not
//! measured) or `error` (the peer failed on that column: the row is left out). Optional:
//! `options` (an object: typed-peers.py's option set, with which nvCOMP was given the
//! column's element type; the peer is shown as `PEER typed key=value…`, as
//! scripts/bench-vs-peers.sh shows it, so that it is not taken for peers.py's run of the
//! same codec on bytes) and `roundtrip` (`false` leaves the row out: a codec that does
//! not give the column back has no ratio worth drawing). Other fields (`file`,
//! `raw_bytes`, …) are ignored.

use std::path::Path;

use colzip::{Error, Result};
use serde_json::Value;

/// One peer's figures on one column.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerRow {
    /// The peer, and its options where it has them: `nvcomp-cascaded typed
    /// compression_level=2`.
    pub peer: String,
    pub column: String,
    pub ratio: f64,
    /// Uncompressed bytes per second, 10^9; `NaN` where not measured.
    pub compress_gbps: f64,
    pub decompress_gbps: f64,
}

/// The rows of a peers file, and how many it left out and why.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PeerRows {
    pub rows: Vec<PeerRow>,
    /// Rows with an `error`: the peer failed on that column.
    pub failed: usize,
    /// Rows with `"roundtrip": false`.
    pub not_round_tripped: usize,
}

/// Reads the peers file at `path`. A file that cannot be read, is not JSON or holds a
/// row without the fields above is an error of one line naming the file (and the row).
pub fn read_peers(path: &Path) -> Result<PeerRows> {
    let text = std::fs::read_to_string(path).map_err(Error::file("read the peers file", path))?;
    parse_peers(&text).map_err(|e| Error::format(format!("{}: {e}", path.display())))
}

/// The rows of a peers file's text; an error says what is wrong, without the file.
pub fn parse_peers(text: &str) -> std::result::Result<PeerRows, String> {
    let document: Value =
        serde_json::from_str(text).map_err(|e| format!("not a JSON document: {e}"))?;
    let Value::Array(items) = document else {
        return Err(format!("{EXPECTED}, not {}", kind_of(&document)));
    };
    let mut rows = PeerRows::default();
    for (i, item) in items.iter().enumerate() {
        let row = peer_row(item).map_err(|e| format!("row {}: {e}", i + 1))?;
        match row {
            Outcome::Row(row) => rows.rows.push(row),
            Outcome::Failed => rows.failed += 1,
            Outcome::NotRoundTripped => rows.not_round_tripped += 1,
        }
    }
    Ok(rows)
}

/// What a peers file must hold, for errors.
const EXPECTED: &str = "expected a JSON array of peer rows (as peers.py and typed-peers.py print)";

enum Outcome {
    Row(PeerRow),
    Failed,
    NotRoundTripped,
}

fn peer_row(item: &Value) -> std::result::Result<Outcome, String> {
    let Value::Object(fields) = item else {
        return Err(format!("expected an object, not {}", kind_of(item)));
    };
    let text = |name: &str| match fields.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.trim().to_string()),
        Some(other) => Err(format!("\"{name}\" is {}, not a name", kind_of(other))),
        None => Err(format!("no \"{name}\"")),
    };
    let peer = text("peer")?;
    let column = text("column")?;
    let named = |e: String| format!("{peer} on {column}: {e}");
    if fields.get("error").is_some_and(|e| !e.is_null()) {
        return Ok(Outcome::Failed);
    }
    match fields.get("roundtrip") {
        None | Some(Value::Null) | Some(Value::Bool(true)) => {}
        Some(Value::Bool(false)) => return Ok(Outcome::NotRoundTripped),
        Some(other) => {
            return Err(named(format!(
                "\"roundtrip\" is {}, not true or false",
                kind_of(other)
            )));
        }
    }
    let number = |name: &str, nullable: bool| match fields.get(name) {
        Some(Value::Number(n)) => n
            .as_f64()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("\"{name}\" is {n}, not a number of 0 or more")),
        Some(Value::Null) if nullable => Ok(f64::NAN),
        Some(other) => Err(format!("\"{name}\" is {}, not a number", kind_of(other))),
        None => Err(format!(
            "no \"{name}\" (a row without figures needs an \"error\")"
        )),
    };
    let ratio = number("ratio", false).map_err(named)?;
    if ratio == 0.0 {
        return Err(named("\"ratio\" is 0".to_string()));
    }
    let compress_gbps = number("compress_gbps", true).map_err(named)?;
    let decompress_gbps = number("decompress_gbps", true).map_err(named)?;
    let options = match fields.get("options") {
        None | Some(Value::Null) => String::new(),
        Some(Value::Object(options)) => std::iter::once(" typed".to_string())
            .chain(options.iter().map(|(key, value)| match value {
                Value::String(s) => format!(" {key}={s}"),
                other => format!(" {key}={other}"),
            }))
            .collect(),
        Some(other) => {
            return Err(named(format!(
                "\"options\" is {}, not an object",
                kind_of(other)
            )));
        }
    };
    Ok(Outcome::Row(PeerRow {
        peer: format!("{peer}{options}"),
        column,
        ratio,
        compress_gbps,
        decompress_gbps,
    }))
}

/// A JSON value's kind, for errors: "a string", "an array", ….
fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_peers_py_and_typed_peers_py_are_read() {
        let text = r#"[
{"column": "l_comment", "file": "l_comment.txt", "peer": "nvcomp-lz4", "raw_bytes": 100,
 "compressed_bytes": 40, "ratio": 2.5, "compress_gbps": 80.0, "decompress_gbps": 300.5,
 "roundtrip": true},
{"column": "l_comment", "file": "l_comment.txt", "peer": "streamlz-l5", "error": "too large"},
{"column": "l_quantity", "file": "l_quantity.i32", "peer": "nvcomp-cascaded",
 "options": {"compression_level": "2"}, "raw_bytes": 100, "compressed_bytes": 10,
 "ratio": 10.0, "compress_gbps": 200, "decompress_gbps": null, "roundtrip": true},
{"column": "l_quantity", "peer": "nvcomp-bitcomp", "ratio": 3.0, "compress_gbps": 1,
 "decompress_gbps": 1, "roundtrip": false}
]"#;
        let rows = parse_peers(text).unwrap();
        assert_eq!(rows.failed, 1);
        assert_eq!(rows.not_round_tripped, 1);
        assert_eq!(rows.rows.len(), 2);
        assert_eq!(rows.rows[0].peer, "nvcomp-lz4");
        assert_eq!(rows.rows[0].decompress_gbps, 300.5);
        assert_eq!(
            rows.rows[1].peer,
            "nvcomp-cascaded typed compression_level=2"
        );
        assert!(rows.rows[1].decompress_gbps.is_nan());
        assert_eq!(parse_peers("[]").unwrap(), PeerRows::default());
    }

    #[test]
    fn bad_peers_files_name_what_is_wrong_in_one_line() {
        for (text, expected) in [
            ("", "not a JSON document"),
            ("[{\"peer\": ", "not a JSON document"),
            ("{\"rows\": []}", "expected a JSON array"),
            ("[3]", "row 1: expected an object, not a number"),
            ("[{\"column\": \"c\"}]", "row 1: no \"peer\""),
            (
                "[{\"peer\": \"p\", \"column\": 5}]",
                "\"column\" is a number",
            ),
            (
                "[{\"peer\": \"p\", \"column\": \"c\", \"ratio\": 2}]",
                "row 1: p on c: no \"compress_gbps\"",
            ),
            (
                "[{\"peer\": \"p\", \"column\": \"c\", \"ratio\": \"2\", \"compress_gbps\": 1, \"decompress_gbps\": 1}]",
                "\"ratio\" is a string",
            ),
            (
                "[{\"peer\": \"p\", \"column\": \"c\", \"ratio\": -1, \"compress_gbps\": 1, \"decompress_gbps\": 1}]",
                "\"ratio\" is -1",
            ),
            (
                "[{\"peer\": \"p\", \"column\": \"c\", \"ratio\": 2, \"compress_gbps\": 1, \"decompress_gbps\": 1, \"roundtrip\": \"yes\"}]",
                "\"roundtrip\" is a string",
            ),
        ] {
            let error = parse_peers(text).unwrap_err();
            assert!(error.contains(expected), "{text}: {error}");
            assert!(!error.contains('\n'), "{text}: {error}");
        }
    }
}
