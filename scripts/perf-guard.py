#!/usr/bin/env python3
"""perf-guard: compare a `colzip bench --format json` run with a reference baseline.

Usage
-----
    scripts/perf-guard.py BENCH.json [--baseline docs/perf/baseline-h100.json]
                          [--tolerance 0.10] [--require-all] [--json]

    scripts/perf-guard.py BENCH.json --update OUT [--baseline docs/perf/baseline-h100.json]
                          [--machine "1x H100 80GB, ..."] [--commit abc1234]
                          [--command "colzip bench --sf 10 ... --format json"]
                          [--accept-losses "reason text"] [--tolerance 0.10]

Rows are keyed by (table, column, codec, backend). For each of the six throughput
figures present (a number > 0; `null` is "not measured") in both the baseline row and
the run row, a figure is a *regression* when

    current < (1 - tolerance) * baseline

The figures and their forms:

    compress_gbps / decompress_gbps          kernel    (data resident on the GPU)
    compress_e2e_gbps / decompress_e2e_gbps  pinned    (host -> host, pinned buffers)
    compress_vec_gbps / decompress_vec_gbps  ordinary  (the public call on `Vec`s)

For backend `cpu` the three forms carry one wall-clock figure, so a CPU row is
compared once per direction, on the kernel field (`compress_gbps`, `decompress_gbps`),
reported as form "cpu wall" (falling back to the pinned, then the ordinary field when
the kernel field is absent).

A row whose `ratio` differs from the baseline's by more than 0.1% (relative) is a
"ratio changed" finding and a failure: the bytes must not change silently. Rows of
the baseline absent from the run are listed as "not measured" (a failure only with
`--require-all`); rows only in the run are ignored (counted in the summary). The
tolerance defaults to the baseline's `tolerance` field, else 0.10.

The output is a table of every finding, then one summary line:

    perf-guard: N figures compared, K below baseline by more than 10%, M ratios changed, U not measured, E only in the run

`--json` prints {"findings": [...], "summary": {...}} instead.

Exit status: 0 no regression; 1 any regression or ratio change (or a missing row
under `--require-all`, or a refused `--update`); 2 bad input (unreadable file, not
JSON, run not a JSON array, baseline of the wrong shape, bad option), with a one-line
message on stderr.

Baseline format
---------------
`docs/perf/baseline-h100.json` (made from a real GPU run with `--update`):

    {
      "machine": "1x NVIDIA H100 80GB HBM3, ...",
      "commit": "c03bb9d",
      "command": "colzip bench --sf 10 ... --format json",
      "date": "2025-01-31T12:00:00+00:00",      # UTC, when the baseline was written
      "tolerance": 0.10,                        # default --tolerance for comparisons
      "accepted_losses": [                      # history, oldest first
        {"reason": "...", "date": "...", "commit": "...",
         "figures": [ findings as printed by --json ]}
      ],
      "rows": [ rows exactly as `colzip bench --format json` writes them ]
    }

The loader also accepts a bare JSON array as a baseline (rows only, no metadata).

Update policy
-------------
`--update OUT` builds a new baseline from the run's rows (in the run's order) with the
metadata of `--machine`, `--commit` (default: `git rev-parse --short HEAD`) and
`--command`, carrying over the existing baseline's `accepted_losses`. Before writing,
the run is compared with the existing `--baseline`: when any throughput figure falls
by more than the tolerance, or any ratio falls by more than 0.1% (worse compression),
the update is refused (exit 1, listing the losses) unless `--accept-losses "reason"`
is given; the reason, the date, the commit and the accepted figures are then appended
to `accepted_losses`. Ratio increases do not block an update. Baseline rows absent
from the run are dropped from the new baseline (listed on stderr); under
`--require-all` they refuse the update. When the `--baseline` file does not exist the
update simply writes the first baseline. OUT may be the baseline file itself; it is
written atomically.
"""

import argparse
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile

DEFAULT_BASELINE = "docs/perf/baseline-h100.json"
DEFAULT_TOLERANCE = 0.10
RATIO_TOLERANCE = 0.001  # 0.1% relative

KEY_FIELDS = ("table", "column", "codec", "backend")

# (field, direction, form) in report order.
FIGURES = (
    ("compress_gbps", "compress", "kernel"),
    ("decompress_gbps", "decompress", "kernel"),
    ("compress_e2e_gbps", "compress", "pinned"),
    ("decompress_e2e_gbps", "decompress", "pinned"),
    ("compress_vec_gbps", "compress", "ordinary"),
    ("decompress_vec_gbps", "decompress", "ordinary"),
)
# For CPU rows: one figure per direction, the kernel field first.
CPU_FIGURES = {
    "compress": ("compress_gbps", "compress_e2e_gbps", "compress_vec_gbps"),
    "decompress": ("decompress_gbps", "decompress_e2e_gbps", "decompress_vec_gbps"),
}
NUMERIC_FIELDS = tuple(f for f, _, _ in FIGURES) + ("ratio",)

REGRESSION = "regression"
RATIO_CHANGED = "ratio changed"
NOT_MEASURED = "not measured"


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit status 2."""


# ---------------------------------------------------------------- loading


def row_key(row):
    return tuple(row[f] for f in KEY_FIELDS)


def validate_rows(rows, what):
    """Check that `rows` is a list of bench rows; raise InputError otherwise."""
    if not isinstance(rows, list):
        raise InputError(f"{what}: expected a JSON array of rows, got {type(rows).__name__}")
    seen = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError(f"{what}: row {i} is not an object")
        for f in KEY_FIELDS:
            if not isinstance(row.get(f), str):
                raise InputError(f"{what}: row {i} has no string field {f!r}")
        for f in NUMERIC_FIELDS:
            v = row.get(f)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise InputError(f"{what}: row {i} field {f!r} is not a number or null")
        k = row_key(row)
        if k in seen:
            raise InputError(f"{what}: duplicate row for {'/'.join(k)}")
        seen.add(k)
    return rows


def load_rows(data, what="run"):
    """Rows of a bench run: `data` must be a JSON array of row objects."""
    if not isinstance(data, list):
        raise InputError(f"{what}: not a JSON array (a `colzip bench --format json` output)")
    return validate_rows(data, what)


def load_baseline(data, what="baseline"):
    """(metadata, rows) of a baseline: the object format, or a bare array of rows."""
    if isinstance(data, list):
        return {}, validate_rows(data, what)
    if isinstance(data, dict):
        if "rows" not in data:
            raise InputError(f"{what}: object without a 'rows' array")
        rows = validate_rows(data["rows"], what + " rows")
        meta = {k: v for k, v in data.items() if k != "rows"}
        if not isinstance(meta.get("accepted_losses", []), list):
            raise InputError(f"{what}: 'accepted_losses' is not a list")
        tol = meta.get("tolerance")
        if tol is not None and (isinstance(tol, bool) or not isinstance(tol, (int, float))):
            raise InputError(f"{what}: 'tolerance' is not a number")
        return meta, rows
    raise InputError(f"{what}: expected an object with 'rows' or a JSON array, got {type(data).__name__}")


def read_json(path, what):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise InputError(f"{what}: cannot read {path}: {e.strerror or e}")
    except (ValueError, UnicodeDecodeError) as e:
        raise InputError(f"{what}: {path} is not valid JSON: {e}")


# ---------------------------------------------------------------- comparing


def measured(v):
    """A figure that was measured: a finite number > 0 (null/NaN: not measured)."""
    return (
        isinstance(v, (int, float))
        and not isinstance(v, bool)
        and math.isfinite(v)
        and v > 0
    )


def figures_of(row):
    """[(field, form, value)] of the row's throughput figures to compare, measured or not.

    CPU rows give one figure per direction (the kernel field, or the first measured
    of the three forms), with form "cpu wall"."""
    if row.get("backend") == "cpu":
        out = []
        for direction, fields in CPU_FIGURES.items():
            value = None
            for f in fields:
                if measured(row.get(f)):
                    value = row.get(f)
                    break
            out.append((fields[0], "cpu wall", value))
        return out
    return [(f, form, row.get(f)) for f, _, form in FIGURES]


def _finding(kind, row, figure=None, form=None, baseline=None, current=None):
    rel = None
    if measured(baseline) and isinstance(current, (int, float)) and not isinstance(current, bool):
        rel = current / baseline
    return {
        "kind": kind,
        "table": row["table"],
        "column": row["column"],
        "codec": row["codec"],
        "backend": row["backend"],
        "figure": figure,
        "form": form,
        "baseline": baseline,
        "current": current,
        "relative": rel,
    }


def compare(baseline_rows, run_rows, tolerance=DEFAULT_TOLERANCE):
    """Compare run rows with baseline rows.

    Returns (findings, summary): findings are dicts with `kind` in
    {"regression", "ratio changed", "not measured"} (in that order, then baseline
    order); summary counts them."""
    run = {row_key(r): r for r in run_rows}
    base_keys = set()
    findings = []
    compared = regressions = ratios = missing = 0
    for b in baseline_rows:
        k = row_key(b)
        base_keys.add(k)
        r = run.get(k)
        if r is None:
            missing += 1
            findings.append(_finding(NOT_MEASURED, b))
            continue
        cur = {field: value for field, _, value in figures_of(r)}
        for field, form, bv in figures_of(b):
            cv = cur.get(field)
            if not (measured(bv) and measured(cv)):
                continue
            compared += 1
            if cv < (1.0 - tolerance) * bv:
                regressions += 1
                findings.append(_finding(REGRESSION, b, field, form, bv, cv))
        bratio, cratio = b.get("ratio"), r.get("ratio")
        if measured(bratio) and measured(cratio):
            if abs(cratio - bratio) > RATIO_TOLERANCE * bratio:
                ratios += 1
                findings.append(_finding(RATIO_CHANGED, b, "ratio", None, bratio, cratio))
    extra = sum(1 for k in run if k not in base_keys)
    order = {REGRESSION: 0, RATIO_CHANGED: 1, NOT_MEASURED: 2}
    findings.sort(key=lambda f: order[f["kind"]])  # stable: baseline order within a kind
    summary = {
        "compared": compared,
        "regressions": regressions,
        "ratios_changed": ratios,
        "not_measured": missing,
        "only_in_run": extra,
        "tolerance": tolerance,
    }
    return findings, summary


def failed(findings, require_all=False):
    """Whether the findings fail the guard."""
    return any(
        f["kind"] in (REGRESSION, RATIO_CHANGED) or (require_all and f["kind"] == NOT_MEASURED)
        for f in findings
    )


def losses(findings, require_all=False):
    """Findings that block an --update: throughput regressions, ratio decreases and,
    under require_all, baseline rows absent from the run."""
    out = []
    for f in findings:
        if f["kind"] == REGRESSION:
            out.append(f)
        elif f["kind"] == RATIO_CHANGED and f["current"] < f["baseline"]:
            out.append(f)
        elif f["kind"] == NOT_MEASURED and require_all:
            out.append(f)
    return out


# ---------------------------------------------------------------- reporting


def _pct(tolerance):
    return f"{tolerance * 100:g}%"


def summary_line(summary):
    return (
        f"perf-guard: {summary['compared']} figures compared, "
        f"{summary['regressions']} below baseline by more than {_pct(summary['tolerance'])}, "
        f"{summary['ratios_changed']} ratios changed, "
        f"{summary['not_measured']} not measured, "
        f"{summary['only_in_run']} only in the run"
    )


def _num(v, digits):
    if v is None:
        return "-"
    return f"{v:.{digits}f}"


def format_table(findings):
    """Text table of the findings (empty string when none)."""
    if not findings:
        return ""
    header = ("column", "codec", "backend", "figure", "baseline", "current", "cur/base")
    lines = []
    for f in findings:
        if f["kind"] == REGRESSION:
            fig = f"{f['figure']} ({f['form']})"
            lines.append((f["column"], f["codec"], f["backend"], fig,
                          _num(f["baseline"], 2), _num(f["current"], 2), _num(f["relative"], 3)))
        elif f["kind"] == RATIO_CHANGED:
            lines.append((f["column"], f["codec"], f["backend"], "ratio changed",
                          _num(f["baseline"], 4), _num(f["current"], 4), _num(f["relative"], 4)))
        else:
            lines.append((f["column"], f["codec"], f["backend"], "not measured", "-", "-", "-"))
    widths = [max(len(str(x)) for x in col) for col in zip(header, *lines)]
    right = {4, 5, 6}

    def fmt(cells):
        return "  ".join(
            str(c).rjust(w) if i in right else str(c).ljust(w)
            for i, (c, w) in enumerate(zip(cells, widths))
        ).rstrip()

    out = [fmt(header), fmt(["-" * w for w in widths])]
    out.extend(fmt(l) for l in lines)
    return "\n".join(out)


# ---------------------------------------------------------------- updating


def _clean(v):
    """NaN/inf (which serde writes as null) become null so the output is strict JSON."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_clean(x) for x in v]
    return v


def _git_commit():
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True, text=True, timeout=10,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def build_baseline(run_rows, machine, commit, command, tolerance,
                   previous_meta=None, accepted=None, reason=None, date=None):
    """The new baseline object (see the module docstring)."""
    date = date or datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()
    history = list((previous_meta or {}).get("accepted_losses", []))
    if accepted:
        history.append({"reason": reason, "date": date, "commit": commit, "figures": accepted})
    return _clean({
        "machine": machine,
        "commit": commit,
        "command": command,
        "date": date,
        "tolerance": tolerance,
        "accepted_losses": history,
        "rows": run_rows,
    })


def write_json_atomic(path, obj):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".perf-guard-", suffix=".json", dir=d)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, indent=2, allow_nan=False)
            f.write("\n")
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


# ---------------------------------------------------------------- main


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise InputError(message)


def parse_args(argv):
    p = _Parser(
        prog="perf-guard.py",
        description="Compare a `colzip bench --format json` output with a baseline.",
    )
    p.add_argument("bench", metavar="BENCH.json", help="output of `colzip bench --format json`")
    p.add_argument("--baseline", default=DEFAULT_BASELINE,
                   help=f"baseline file (default {DEFAULT_BASELINE})")
    p.add_argument("--tolerance", type=float, default=None,
                   help="allowed fall of a figure, as a fraction "
                        "(default: the baseline's, else 0.10)")
    p.add_argument("--require-all", action="store_true",
                   help="baseline rows absent from the run fail")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--update", metavar="OUT", help="write a new baseline built from the run")
    p.add_argument("--machine", default="unknown", help="--update: machine description")
    p.add_argument("--commit", default=None, help="--update: commit (default: git HEAD)")
    p.add_argument("--command", default="unknown", help="--update: the bench command line")
    p.add_argument("--accept-losses", metavar="REASON", default=None,
                   help="--update: accept figures that fall, recording REASON")
    return p.parse_args(argv)


def run(argv):
    args = parse_args(argv)
    if args.tolerance is not None and not (0.0 <= args.tolerance < 1.0):
        raise InputError(f"--tolerance must be in [0, 1), got {args.tolerance}")
    if args.accept_losses is not None and not args.accept_losses.strip():
        raise InputError("--accept-losses needs a non-empty reason")
    if args.accept_losses is not None and not args.update:
        raise InputError("--accept-losses only applies with --update")

    run_rows = load_rows(read_json(args.bench, "run"), "run")

    if args.update and not os.path.exists(args.baseline):
        meta, base_rows = {}, []
        print(f"perf-guard: no baseline at {args.baseline}; writing the first one",
              file=sys.stderr)
    else:
        meta, base_rows = load_baseline(read_json(args.baseline, "baseline"), "baseline")

    tolerance = args.tolerance
    if tolerance is None:
        tolerance = meta.get("tolerance", DEFAULT_TOLERANCE)
        if not (0.0 <= tolerance < 1.0):
            raise InputError(f"baseline: 'tolerance' must be in [0, 1), got {tolerance}")

    findings, summary = compare(base_rows, run_rows, tolerance)

    if args.json:
        print(json.dumps(_clean({"findings": findings, "summary": summary}), indent=2))
    else:
        table = format_table(findings)
        if table:
            print(table)
        print(summary_line(summary))
    if base_rows and summary["compared"] == 0:
        print("perf-guard: warning: no figure in common with the baseline", file=sys.stderr)

    if not args.update:
        return 1 if failed(findings, args.require_all) else 0

    lost = losses(findings, args.require_all)
    if lost and args.accept_losses is None:
        print(f"perf-guard: refusing to update {args.update}: {len(lost)} figure(s) fall "
              f"(pass --accept-losses \"reason\" to accept them):", file=sys.stderr)
        print(format_table(lost), file=sys.stderr)
        return 1
    dropped = [f for f in findings if f["kind"] == NOT_MEASURED]
    if dropped:
        print(f"perf-guard: {len(dropped)} baseline row(s) not in the run are dropped:",
              file=sys.stderr)
        for f in dropped:
            print(f"  {f['table']}.{f['column']} {f['codec']} {f['backend']}", file=sys.stderr)
    if args.accept_losses is not None and not lost:
        print("perf-guard: no losses to accept; the reason is not recorded", file=sys.stderr)
    commit = args.commit if args.commit is not None else _git_commit()
    new = build_baseline(
        run_rows, args.machine, commit, args.command, tolerance,
        previous_meta=meta, accepted=lost or None, reason=args.accept_losses,
    )
    try:
        write_json_atomic(args.update, new)
    except OSError as e:
        raise InputError(f"cannot write {args.update}: {e.strerror or e}")
    print(f"perf-guard: wrote {args.update} ({len(run_rows)} rows"
          + (f", {len(lost)} accepted losses" if lost else "") + ")", file=sys.stderr)
    return 0


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except InputError as e:
        print(f"perf-guard: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
