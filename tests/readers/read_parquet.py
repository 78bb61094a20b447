#!/usr/bin/env python3
"""Reads a Parquet file with pyarrow and with DuckDB and compares both with the values
the Rust test expected (a JSON file: {"num_rows": N, "columns": {name: [values]}}).

Values are normalised to JSON-like Python values: dates as ISO strings, decimals as
their plain string, structs as dicts, lists as lists. Also checks that every column
chunk says SNAPPY. Exit codes: 0 equal, 1 mismatch, 3 pyarrow or duckdb missing.
"""
import datetime
import decimal
import json
import sys


def norm(value):
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    if isinstance(value, dict):
        return {k: norm(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [norm(v) for v in value]
    if isinstance(value, bytes):
        return value.hex()
    return value


def compare(reader, columns, num_rows, expected):
    problems = []
    if num_rows != expected["num_rows"]:
        problems.append(f"{reader}: {num_rows} rows, expected {expected['num_rows']}")
    for name, want in expected["columns"].items():
        got = columns.get(name)
        if got is None:
            problems.append(f"{reader}: no column {name}")
            continue
        got = [norm(v) for v in got]
        if got != want:
            first = next(i for i, (g, w) in enumerate(zip(got + [None] * len(want), want)) if g != w)
            problems.append(
                f"{reader}: column {name} differs first at row {first}: "
                f"{got[first] if first < len(got) else 'missing'!r} != {want[first]!r}"
            )
    return problems


def main():
    path, expected_path = sys.argv[1], sys.argv[2]
    missing = []
    try:
        import pyarrow.parquet as pq
    except ImportError:
        missing.append("pyarrow")
    try:
        import duckdb
    except ImportError:
        missing.append("duckdb")
    if missing:
        print("python modules missing: " + ", ".join(missing))
        return 3
    with open(expected_path) as f:
        expected = json.load(f)

    problems = []
    metadata = pq.ParquetFile(path).metadata
    for rg in range(metadata.num_row_groups):
        for col in range(metadata.num_columns):
            chunk = metadata.row_group(rg).column(col)
            if chunk.compression != "SNAPPY":
                problems.append(f"row group {rg} column {chunk.path_in_schema}: {chunk.compression}")

    table = pq.read_table(path)
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    problems += compare("pyarrow", columns, table.num_rows, expected)

    con = duckdb.connect()
    rows = con.execute("SELECT * FROM read_parquet(?)", [path]).fetchall()
    names = [d[0] for d in con.description]
    columns = {name: [row[i] for row in rows] for i, name in enumerate(names)}
    problems += compare("duckdb", columns, len(rows), expected)

    if problems:
        print("\n".join(problems))
        return 1
    print(f"pyarrow {pq.__name__ and __import__('pyarrow').__version__} and duckdb "
          f"{duckdb.__version__} read {metadata.num_rows} rows in "
          f"{metadata.num_row_groups} row groups, all SNAPPY, equal")
    return 0


if __name__ == "__main__":
    sys.exit(main())
