//! `colzip compress` / `decompress` carry an Arrow IPC file with nested columns (List,
//! Struct, Map) through an archive unchanged.
#![cfg(feature = "cli")]

use std::sync::Arc;

use arrow::array::{
    ArrayRef, Int32Array, Int64Builder, ListBuilder, MapBuilder, RecordBatch, StringArray,
    StringBuilder, StructArray,
};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, Fields};

mod cli_run;
use cli_run::ok;

const ROWS: usize = 3000;

fn nested_batch() -> RecordBatch {
    let mut tags = ListBuilder::new(StringBuilder::new());
    let mut props = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
    for i in 0..ROWS {
        for k in 0..i % 3 {
            tags.values().append_value(format!("t{}", (i + k) % 7));
            props.keys().append_value(format!("k{k}"));
            props
                .values()
                .append_option((i % 4 != 0).then_some(i as i64));
        }
        tags.append(i % 6 != 1);
        props.append(i % 9 != 2).unwrap();
    }
    let point = StructArray::try_new(
        Fields::from(vec![
            Field::new("x", DataType::Int32, true),
            Field::new("name", DataType::Utf8, false),
        ]),
        vec![
            Arc::new(Int32Array::from_iter(
                (0..ROWS).map(|i| (i % 5 != 0).then_some(i as i32 % 100)),
            )),
            Arc::new(StringArray::from_iter_values(
                (0..ROWS).map(|i| format!("n{}", i % 40)),
            )),
        ],
        Some(NullBuffer::from(
            (0..ROWS).map(|i| i % 8 != 3).collect::<Vec<_>>(),
        )),
    )
    .unwrap();
    RecordBatch::try_from_iter_with_nullable([
        ("tags", Arc::new(tags.finish()) as ArrayRef, true),
        ("point", Arc::new(point) as ArrayRef, true),
        ("props", Arc::new(props.finish()) as ArrayRef, true),
    ])
    .unwrap()
}

#[test]
fn arrow_ipc_files_with_nested_columns_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("nested.arrow");
    let batch = nested_batch();
    // Two batches, the second a slice: nested columns with offsets not starting at 0.
    let batches = vec![batch.slice(0, 1000), batch.slice(1000, ROWS - 1000)];
    let mut writer = arrow::ipc::writer::FileWriter::try_new(
        std::fs::File::create(&input).unwrap(),
        &batch.schema(),
    )
    .unwrap();
    for b in &batches {
        writer.write(b).unwrap();
    }
    writer.finish().unwrap();
    let archive = dir.path().join("nested.czip");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    ok(&["compress", &path(&input), "-o", &path(&archive)]);
    let output = dir.path().join("back.arrow");
    ok(&["decompress", &path(&archive), "-o", &path(&output)]);
    let reader =
        arrow::ipc::reader::FileReader::try_new(std::fs::File::open(&output).unwrap(), None)
            .unwrap();
    let back: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    assert_eq!(back, batches);
}

/// Nested columns are written to CSV as their values' text, quoted where CSV needs it
/// (arrow's CSV writer refuses them): by `decompress --to csv`, by `head --format csv`
/// and by `sql --format csv`. A NULL value is an empty field; a NULL inside one, `null`.
#[test]
fn nested_columns_are_written_to_csv_as_their_text() {
    let dir = tempfile::tempdir().unwrap();
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let input = dir.path().join("nested.arrow");
    let batch = nested_batch().slice(0, 4);
    let mut writer = arrow::ipc::writer::FileWriter::try_new(
        std::fs::File::create(&input).unwrap(),
        &batch.schema(),
    )
    .unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    let archive = dir.path().join("nested.czip");
    ok(&["compress", &path(&input), "-o", &path(&archive)]);
    // Rows 0 to 3: tags [] / NULL / [t2, t3] / []; point with a NULL x (0) and NULL
    // itself (3); props {} / {k0: 1} / NULL / {}.
    let csv = dir.path().join("nested.csv");
    ok(&[
        "decompress",
        &path(&archive),
        "--to",
        "csv",
        "-o",
        &path(&csv),
    ]);
    let written = std::fs::read_to_string(&csv).unwrap();
    let head = ok(&["head", &path(&archive), "--format", "csv"]);
    assert_eq!(written, head, "decompress and head agree");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines[0], "tags,point,props");
    assert_eq!(lines[1], "[],\"{x: null, name: n0}\",{}");
    assert_eq!(lines[2], ",\"{x: 1, name: n1}\",{k0: 1}");
    assert_eq!(lines[3], "\"[t2, t3]\",\"{x: 2, name: n2}\",");
    assert_eq!(lines[4], "[],,{}");
    assert_eq!(lines.len(), 5);

    #[cfg(feature = "datafusion")]
    {
        let out = ok(&[
            "sql",
            "--format",
            "csv",
            "-c",
            "SELECT make_array(1, NULL, 3) AS l, named_struct('x', 1, 's', 'a,b') AS p, \
             map(['k'], [2]) AS m",
        ]);
        assert_eq!(out, "l,p,m\n\"[1, null, 3]\",\"{x: 1, s: a,b}\",{k: 2}\n");
    }
}
