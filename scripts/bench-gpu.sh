#!/usr/bin/env bash
# Runs on the device machine: `colzip bench` (built by scripts/build-gpu.sh) with the
# given arguments; the rows go to $OUT/bench-NAME.json and a table to stdout.
# Usage: scripts/bench-gpu.sh NAME [colzip bench arguments...]
#   e.g. scripts/bench-gpu.sh ints --sf 10 --columns l_quantity,l_shipdate,l_orderkey
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1
shift
out=${OUT:-/tmp/colzip-gpu}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader || true
.gpu/colzip bench "$@" --format json > "$out/bench-$name.json"
python3 - "$out/bench-$name.json" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))
cols = ["column", "codec", "backend", "ratio", "compress_gbps", "decompress_gbps",
        "compress_e2e_gbps", "decompress_e2e_gbps"]
print("  ".join(cols))
for r in rows:
    print("  ".join(f"{r[c]:.3f}" if isinstance(r[c], float) else str(r[c]) for c in cols))
PY
