#!/usr/bin/env python3
"""nvCOMP's typed codecs (Cascaded, Bitcomp) on integer column files at their best options.

../shared/tools/peers.py runs Cascaded and Bitcomp with nvCOMP's default options, which
are far from their best on some columns (Bitcomp without `data_type` is 1.00 on
l_extendedprice, 2.70 with it). This script gives them the element type explicitly
(`data_type`) and tries each option set below, one JSON row per (file, peer,
options) to stdout: ratio and compress / decompress GB/s (uncompressed bytes over the
median of --runs device-synchronised calls, data on the GPU), and whether it round-trips.
A set nvCOMP refuses gets a row with its error. Runs on the GPU machine like peers.py
(same wheels, same PYTHONPATH).

Usage: typed-peers.py DIR [--runs 5] [--only l_quantity,l_shipdate]
DIR holds .i32 / .i64 files (what `colzip bench --write-columns DIR` writes).
"""
import json, os, statistics, sys, time

import cupy as cp
import numpy as np
from nvidia import nvcomp

args = sys.argv[1:]
folder = args[0]
runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
only = set(args[args.index("--only") + 1].split(",")) if "--only" in args else None
TYPES = {"i32": "<i4", "i64": "<i8"}

# Cascaded (nvCOMP 6 options): asymmetric mode (per-chunk stage choice, ratio first) at
# each compression level, and symmetric mode with and without frame of reference.
def cascaded_option_sets():
    mode = getattr(nvcomp, "CascadedMode", None)
    fine = getattr(nvcomp, "CascadedFineGrainedEncoding", None)
    sets = [dict()] + [dict(compression_level=level) for level in (1, 2, 4, 5)]
    if mode is not None:
        sets.append(dict(mode=mode.SYMMETRIC))
        try:
            sets.append(dict(mode=mode.SYMMETRIC,
                             fine_grained_encodings=int(fine.DELTA) | int(fine.RLE) | int(fine.FOR)))
        except (AttributeError, TypeError, ValueError):
            pass  # this nvCOMP has no frame-of-reference stage to ask for
    return sets


CASCADED = cascaded_option_sets()
# Bitcomp: its default and its sparse algorithm.
BITCOMP = [dict(algorithm_type=a) for a in (0, 1)]


def timed(fn):
    out = fn()
    cp.cuda.runtime.deviceSynchronize()
    times = []
    for _ in range(runs):
        cp.cuda.runtime.deviceSynchronize()
        start = time.perf_counter()
        out = fn()
        cp.cuda.runtime.deviceSynchronize()
        times.append(time.perf_counter() - start)
    return out, statistics.median(times)


print(json.dumps(dict(nvcomp=nvcomp.__version__)), file=sys.stderr)
rows = []
for name in sorted(os.listdir(folder)):
    column, _, ext = name.partition(".")
    if ext not in TYPES or (only is not None and column not in only):
        continue
    host = open(os.path.join(folder, name), "rb").read()
    n = len(host)
    typed = cp.asarray(np.frombuffer(host, dtype=np.dtype(TYPES[ext])))
    as_bytes = typed.view(cp.uint8)
    for algo, option_sets in (("Cascaded", CASCADED), ("Bitcomp", BITCOMP)):
        for options in option_sets:
            row = dict(column=column, file=name, peer=f"nvcomp-{algo.lower()}",
                       options={k: str(v) for k, v in options.items()}, raw_bytes=n)
            try:
                codec = nvcomp.Codec(algorithm=algo, data_type=TYPES[ext], **options)
                array = nvcomp.as_array(typed)
                encoded, t_comp = timed(lambda: codec.encode(array))
                size = encoded.buffer_size
                decoded, t_dec = timed(lambda: codec.decode(encoded))
                back = cp.asarray(decoded).view(cp.uint8).ravel()[:n]
                row.update(compressed_bytes=int(size), ratio=n / size,
                           compress_gbps=n / t_comp / 1e9, decompress_gbps=n / t_dec / 1e9,
                           roundtrip=bool(cp.array_equal(back, as_bytes)))
            except Exception as error:  # an option set nvCOMP refuses: say so, go on
                row["error"] = str(error)[:200]
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
print(json.dumps(rows))
