#!/usr/bin/env bash
# Runs on the device machine: `colzip bench` with the given arguments, writing the plain
# columns it measures, then the GPU peers (nvCOMP 6, StreamLZ: ../shared/tools/peers.py)
# on the very same files, in one run. Rows go to $OUT/bench-NAME.json and
# $OUT/peers-NAME.json; nvCOMP's typed codecs at each of their option sets on the integer
# files (scripts/typed-peers.py) to $OUT/typed-peers-NAME.json; a table of all, best ratio
# first per column (a typed codec by its best round-tripping option set), to stdout.
# Usage: scripts/bench-vs-peers.sh NAME [colzip bench arguments...]
#   e.g. scripts/bench-vs-peers.sh ints --sf 10 --suites intpack \
#          --columns l_quantity,l_shipdate,l_orderkey,l_extendedprice,l_partkey,l_suppkey,l_discount
# Environment: COLZIP (the binary; default .gpu/colzip), PEERS (peers.py; default
# ../shared/tools/peers.py), WHEELS (the peers' wheels, see peers.py's header; default
# .whl), RUNS (peers' timed runs; default 5).
set -euo pipefail
cd "$(dirname "$0")/.."
name=$1
shift
out=${OUT:-/tmp/colzip-gpu}
colzip=${COLZIP:-.gpu/colzip}
peers=${PEERS:-../shared/tools/peers.py}
wheels=${WHEELS:-.whl}
columns=$(mktemp -d)
trap 'rm -rf "$columns"' EXIT
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
"$colzip" bench "$@" --write-columns "$columns" --format json > "$out/bench-$name.json"
if [ -d "$wheels" ]; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/colzip-peers-site "$wheels"/*.whl
  export PYTHONPATH=/tmp/colzip-peers-site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 "$peers" "$columns" --runs "${RUNS:-5}" > "$out/peers-$name.json" 2>/dev/null
if ls "$columns" | grep -q -E '\.i(32|64)$'; then
  python3 scripts/typed-peers.py "$columns" --runs "${RUNS:-5}" > "$out/typed-peers-$name.json" 2>/dev/null
else
  echo '[]' > "$out/typed-peers-$name.json"
fi
python3 - "$out/bench-$name.json" "$out/peers-$name.json" "$out/typed-peers-$name.json" <<'PY'
import json, sys
rows = [dict(column=r["column"], who=f'colzip {r["codec"]} ({r["backend"]})', ratio=r["ratio"],
             c=r["compress_gbps"], d=r["decompress_gbps"]) for r in json.load(open(sys.argv[1]))]
rows += [dict(column=r["column"], who=r["peer"], ratio=r["ratio"], c=r["compress_gbps"],
              d=r["decompress_gbps"]) for r in json.load(open(sys.argv[2])) if "ratio" in r]
best = {}
for r in json.load(open(sys.argv[3])):
    key = (r["column"], r["peer"])
    if r.get("roundtrip") and r["ratio"] > best.get(key, {}).get("ratio", 0):
        best[key] = r
rows += [dict(column=r["column"], who=" ".join([r["peer"], "typed"] + [f"{k}={v}" for k, v in r["options"].items()]),
              ratio=r["ratio"], c=r["compress_gbps"], d=r["decompress_gbps"]) for r in best.values()]
print(f'{"column":<18}{"codec":<46}{"ratio":>8}{"comp GB/s":>11}{"decomp GB/s":>13}')
for r in sorted(rows, key=lambda r: (r["column"], -r["ratio"])):
    print(f'{r["column"]:<18}{r["who"]:<46}{r["ratio"]:>8.2f}{r["c"]:>11.1f}{r["d"]:>13.1f}')
print("(GB/s: colzip kernel figures, data on the GPU; peers: device-to-device calls)")
PY
