#!/usr/bin/env python3
"""Tests of scripts/perf-guard.py (stdlib unittest).

Run from the repository root:  python3 scripts/test_perf_guard.py
"""

import copy
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "perf-guard.py")

_spec = importlib.util.spec_from_file_location("perf_guard", SCRIPT)
pg = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(pg)

FIELDS = (
    "compress_gbps", "decompress_gbps",
    "compress_e2e_gbps", "decompress_e2e_gbps",
    "compress_vec_gbps", "decompress_vec_gbps",
)


def gpu_row(column="l_orderkey", codec="gmatch:raw", **over):
    row = {
        "table": "lineitem", "column": column, "arrow_type": "Int64",
        "rows": 59986052, "raw_bytes": 479888416, "codec": codec, "backend": "gpu",
        "compressed_bytes": 73125815, "ratio": 6.56,
        "compress_gbps": 32.5, "decompress_gbps": 143.7,
        "compress_e2e_gbps": 24.2, "decompress_e2e_gbps": 42.3,
        "compress_vec_gbps": 15.6, "decompress_vec_gbps": 12.1,
    }
    row.update(over)
    return row


def cpu_row(column="l_orderkey", codec="gmatch:raw", c=5.0, d=12.0, **over):
    row = gpu_row(column, codec, backend="cpu",
                  compress_gbps=c, decompress_gbps=d,
                  compress_e2e_gbps=c, decompress_e2e_gbps=d,
                  compress_vec_gbps=c, decompress_vec_gbps=d)
    row.update(over)
    return row


def scaled(row, factor, fields=FIELDS):
    out = copy.deepcopy(row)
    for f in fields:
        out[f] = row[f] * factor
    return out


def kinds(findings, kind):
    return [f for f in findings if f["kind"] == kind]


class CompareTest(unittest.TestCase):
    def test_equal_figures_pass(self):
        base = [gpu_row(), cpu_row()]
        findings, summary = pg.compare(base, copy.deepcopy(base), 0.10)
        self.assertEqual(findings, [])
        self.assertFalse(pg.failed(findings))
        self.assertEqual(summary["compared"], 6 + 2)
        self.assertEqual(summary["regressions"], 0)

    def test_eleven_percent_below_fails_with_ratio_and_form(self):
        base = [gpu_row()]
        run = [gpu_row(decompress_e2e_gbps=42.3 * 0.89)]
        findings, summary = pg.compare(base, run, 0.10)
        regs = kinds(findings, pg.REGRESSION)
        self.assertEqual(len(regs), 1)
        f = regs[0]
        self.assertEqual(f["figure"], "decompress_e2e_gbps")
        self.assertEqual(f["form"], "pinned")
        self.assertEqual((f["column"], f["codec"], f["backend"]), ("l_orderkey", "gmatch:raw", "gpu"))
        self.assertAlmostEqual(f["relative"], 0.89, places=9)
        self.assertEqual(f["baseline"], 42.3)
        self.assertTrue(pg.failed(findings))
        self.assertEqual(summary["regressions"], 1)
        table = pg.format_table(findings)
        self.assertIn("decompress_e2e_gbps (pinned)", table)
        self.assertIn("0.890", table)

    def test_forms_named(self):
        base = [gpu_row()]
        findings, _ = pg.compare(base, [scaled(base[0], 0.5)], 0.10)
        forms = {f["figure"]: f["form"] for f in findings}
        self.assertEqual(forms, {
            "compress_gbps": "kernel", "decompress_gbps": "kernel",
            "compress_e2e_gbps": "pinned", "decompress_e2e_gbps": "pinned",
            "compress_vec_gbps": "ordinary", "decompress_vec_gbps": "ordinary",
        })

    def test_nine_percent_below_passes(self):
        base = [gpu_row(), cpu_row()]
        run = [scaled(base[0], 0.91), scaled(base[1], 0.91)]
        findings, summary = pg.compare(base, run, 0.10)
        self.assertEqual(findings, [])
        self.assertEqual(summary["compared"], 8)

    def test_tolerance_option(self):
        base = [gpu_row()]
        run = [scaled(base[0], 0.96)]
        self.assertEqual(pg.compare(base, run, 0.10)[0], [])
        self.assertEqual(len(pg.compare(base, run, 0.03)[0]), 6)

    def test_better_figure_passes(self):
        base = [gpu_row(), cpu_row()]
        run = [scaled(base[0], 3.0), scaled(base[1], 1.5)]
        findings, _ = pg.compare(base, run, 0.10)
        self.assertEqual(findings, [])

    def test_null_and_nan_figures_skipped(self):
        base = [gpu_row(compress_vec_gbps=None, decompress_gbps=float("nan"))]
        run = [gpu_row(compress_vec_gbps=1.0, decompress_gbps=1.0,
                       compress_e2e_gbps=None, decompress_e2e_gbps=float("nan"))]
        findings, summary = pg.compare(base, run, 0.10)
        self.assertEqual(findings, [])
        # compared: compress_gbps and decompress_vec_gbps only
        self.assertEqual(summary["compared"], 2)

    def test_zero_figure_skipped(self):
        base = [gpu_row(compress_gbps=0.0)]
        run = [gpu_row(compress_gbps=0.0)]
        _, summary = pg.compare(base, run, 0.10)
        self.assertEqual(summary["compared"], 5)

    def test_ratio_change_reported(self):
        base = [gpu_row()]
        run = [gpu_row(ratio=6.56 * 1.002)]
        findings, summary = pg.compare(base, run, 0.10)
        rc = kinds(findings, pg.RATIO_CHANGED)
        self.assertEqual(len(rc), 1)
        self.assertEqual(rc[0]["baseline"], 6.56)
        self.assertEqual(summary["ratios_changed"], 1)
        self.assertTrue(pg.failed(findings))
        self.assertIn("ratio changed", pg.format_table(findings))

    def test_tiny_ratio_difference_passes(self):
        base = [gpu_row()]
        run = [gpu_row(ratio=6.56 * 1.0005)]
        self.assertEqual(pg.compare(base, run, 0.10)[0], [])

    def test_missing_rows_not_measured(self):
        base = [gpu_row(), gpu_row(column="l_partkey")]
        run = [gpu_row(), gpu_row(column="l_suppkey"), cpu_row()]
        findings, summary = pg.compare(base, run, 0.10)
        nm = kinds(findings, pg.NOT_MEASURED)
        self.assertEqual([f["column"] for f in nm], ["l_partkey"])
        self.assertEqual(summary["not_measured"], 1)
        self.assertEqual(summary["only_in_run"], 2)
        self.assertFalse(pg.failed(findings))
        self.assertTrue(pg.failed(findings, require_all=True))

    def test_cpu_rows_once_per_direction(self):
        base = [cpu_row(c=5.0, d=12.0)]
        run = [cpu_row(c=4.0, d=10.0)]
        findings, summary = pg.compare(base, run, 0.10)
        self.assertEqual(summary["compared"], 2)
        regs = kinds(findings, pg.REGRESSION)
        self.assertEqual(sorted(f["figure"] for f in regs), ["compress_gbps", "decompress_gbps"])
        self.assertTrue(all(f["form"] == "cpu wall" for f in regs))
        self.assertIn("compress_gbps (cpu wall)", pg.format_table(findings))

    def test_key_includes_backend_and_codec(self):
        base = [gpu_row(), cpu_row()]
        run = [gpu_row(), cpu_row(c=1.0, d=1.0), gpu_row(codec="gmatch", compress_gbps=1.0)]
        findings, summary = pg.compare(base, run, 0.10)
        self.assertEqual({(f["backend"], f["codec"]) for f in findings}, {("cpu", "gmatch:raw")})
        self.assertEqual(summary["only_in_run"], 1)

    def test_summary_line(self):
        base = [gpu_row(), gpu_row(column="x")]
        run = [gpu_row(compress_gbps=1.0, ratio=7.0)]
        _, summary = pg.compare(base, run, 0.10)
        self.assertEqual(
            pg.summary_line(summary),
            "perf-guard: 6 figures compared, 1 below baseline by more than 10%, "
            "1 ratios changed, 1 not measured, 0 only in the run",
        )


class LoadTest(unittest.TestCase):
    def test_baseline_object_and_bare_array(self):
        rows = [gpu_row()]
        meta, got = pg.load_baseline({"machine": "m", "tolerance": 0.05, "rows": rows})
        self.assertEqual((meta["machine"], got), ("m", rows))
        meta, got = pg.load_baseline(rows)
        self.assertEqual((meta, got), ({}, rows))

    def test_bad_shapes(self):
        for bad in ({"machine": "m"}, {"rows": {}}, "x", 3, [1], [{"table": "t"}],
                    [gpu_row(), gpu_row()], [gpu_row(ratio="6.5")]):
            with self.assertRaises(pg.InputError, msg=repr(bad)):
                pg.load_baseline(bad)
        with self.assertRaises(pg.InputError):
            pg.load_rows({"rows": []})

    def test_example_file_against_itself(self):
        path = os.path.join(HERE, "..", "docs", "perf", "batched-sf10-h100-c03bb9d.json")
        if not os.path.exists(path):
            self.skipTest("example file absent")
        with open(path) as f:
            rows = pg.load_rows(json.load(f))
        findings, summary = pg.compare(rows, rows, 0.10)
        self.assertEqual(findings, [])
        self.assertGreater(summary["compared"], 0)


class UpdateTest(unittest.TestCase):
    def test_build_baseline_records_reason(self):
        base = [gpu_row()]
        run = [scaled(base[0], 0.5, ["compress_gbps"])]
        findings, _ = pg.compare(base, run, 0.10)
        lost = pg.losses(findings)
        self.assertEqual(len(lost), 1)
        new = pg.build_baseline(run, "h100", "abc", "cmd", 0.10,
                                previous_meta={"accepted_losses": [{"reason": "old"}]},
                                accepted=lost, reason="new kernel", date="D")
        self.assertEqual(new["rows"], run)
        self.assertEqual(new["accepted_losses"][0], {"reason": "old"})
        self.assertEqual(new["accepted_losses"][1]["reason"], "new kernel")
        self.assertEqual(new["accepted_losses"][1]["figures"][0]["figure"], "compress_gbps")

    def test_ratio_increase_is_not_a_loss(self):
        base = [gpu_row()]
        self.assertEqual(pg.losses(pg.compare(base, [gpu_row(ratio=7.0)], 0.1)[0]), [])
        self.assertEqual(len(pg.losses(pg.compare(base, [gpu_row(ratio=6.0)], 0.1)[0])), 1)


class CliTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def write(self, name, obj, raw=False):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(obj if raw else json.dumps(obj))
        return path

    def cli(self, *args):
        p = subprocess.run([sys.executable, SCRIPT, *args],
                           capture_output=True, text=True, timeout=30)
        return p.returncode, p.stdout, p.stderr

    def test_pass_and_fail_exit_codes(self):
        base = self.write("base.json", {"machine": "m", "rows": [gpu_row(), cpu_row()]})
        good = self.write("good.json", [gpu_row(), cpu_row()])
        rc, out, err = self.cli(good, "--baseline", base)
        self.assertEqual(rc, 0, err)
        self.assertIn("perf-guard: 8 figures compared, 0 below baseline", out)
        bad = self.write("bad.json", [gpu_row(compress_gbps=32.5 * 0.89), cpu_row()])
        rc, out, err = self.cli(bad, "--baseline", base)
        self.assertEqual(rc, 1)
        self.assertIn("compress_gbps (kernel)", out)
        self.assertIn("0.890", out)
        self.assertTrue(out.rstrip().splitlines()[-1].startswith("perf-guard: 8 figures compared, 1 below"))

    def test_require_all_cli(self):
        base = self.write("base.json", [gpu_row(), cpu_row()])
        run = self.write("run.json", [gpu_row()])
        rc, out, _ = self.cli(run, "--baseline", base)
        self.assertEqual(rc, 0)
        self.assertIn("not measured", out)
        self.assertIn("1 not measured", out)
        rc, _, _ = self.cli(run, "--baseline", base, "--require-all")
        self.assertEqual(rc, 1)

    def test_json_output(self):
        base = self.write("base.json", [gpu_row()])
        run = self.write("run.json", [gpu_row(ratio=7.0)])
        rc, out, _ = self.cli(run, "--baseline", base, "--json")
        self.assertEqual(rc, 1)
        doc = json.loads(out)
        self.assertEqual(doc["summary"]["ratios_changed"], 1)
        self.assertEqual(doc["findings"][0]["kind"], "ratio changed")

    def test_malformed_input_exits_2(self):
        base = self.write("base.json", [gpu_row()])
        run = self.write("run.json", [gpu_row()])
        cases = [
            (self.write("notjson.json", "{not json", raw=True), base),
            (self.write("obj.json", {"rows": [gpu_row()]}), base),
            (os.path.join(self.dir, "absent.json"), base),
            (run, self.write("wrongbase.json", {"machine": "m"})),
            (run, self.write("wrongrows.json", {"rows": [1, 2]})),
            (run, os.path.join(self.dir, "absent-base.json")),
        ]
        for bench, baseline in cases:
            rc, out, err = self.cli(bench, "--baseline", baseline)
            self.assertEqual(rc, 2, (bench, baseline, err))
            self.assertEqual(len(err.strip().splitlines()), 1, err)
            self.assertTrue(err.startswith("perf-guard: error:"), err)
            self.assertNotIn("Traceback", err)
        rc, _, err = self.cli(run, "--baseline", base, "--tolerance", "abc")
        self.assertEqual(rc, 2)
        self.assertEqual(len(err.strip().splitlines()), 1, err)

    def test_update_refuses_losses_then_records_reason(self):
        base = self.write("base.json", {"machine": "old", "commit": "c0", "command": "x",
                                        "date": "d", "tolerance": 0.1,
                                        "accepted_losses": [], "rows": [gpu_row(), cpu_row()]})
        run = self.write("run.json", [gpu_row(decompress_gbps=100.0), cpu_row()])
        out_path = os.path.join(self.dir, "new.json")
        rc, _, err = self.cli(run, "--baseline", base, "--update", out_path,
                              "--machine", "h100", "--commit", "c1", "--command", "bench")
        self.assertEqual(rc, 1)
        self.assertIn("refusing", err)
        self.assertIn("decompress_gbps", err)
        self.assertFalse(os.path.exists(out_path))

        rc, _, err = self.cli(run, "--baseline", base, "--update", out_path,
                              "--machine", "h100", "--commit", "c1", "--command", "bench",
                              "--accept-losses", "new decoder trades speed for size")
        self.assertEqual(rc, 0, err)
        with open(out_path) as f:
            new = json.load(f)
        self.assertEqual((new["machine"], new["commit"], new["command"]), ("h100", "c1", "bench"))
        self.assertEqual(new["tolerance"], 0.1)
        self.assertIn("date", new)
        self.assertEqual(len(new["rows"]), 2)
        self.assertEqual(new["rows"][0]["decompress_gbps"], 100.0)
        acc = new["accepted_losses"]
        self.assertEqual(len(acc), 1)
        self.assertEqual(acc[0]["reason"], "new decoder trades speed for size")
        self.assertEqual([f["figure"] for f in acc[0]["figures"]], ["decompress_gbps"])

        # The new baseline is a valid baseline: the run passes against it.
        rc, out, err = self.cli(run, "--baseline", out_path)
        self.assertEqual(rc, 0, out + err)

    def test_update_without_losses_and_first_baseline(self):
        run = self.write("run.json", [gpu_row(compress_gbps=None), cpu_row()])
        out_path = os.path.join(self.dir, "first.json")
        rc, _, err = self.cli(run, "--baseline", os.path.join(self.dir, "none.json"),
                              "--update", out_path, "--commit", "c1")
        self.assertEqual(rc, 0, err)
        with open(out_path) as f:
            new = json.load(f)
        self.assertEqual(new["accepted_losses"], [])
        self.assertIsNone(new["rows"][0]["compress_gbps"])
        self.assertEqual(new["tolerance"], 0.1)


if __name__ == "__main__":
    unittest.main()
