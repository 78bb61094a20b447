#!/usr/bin/env bash
# The long fuzz run: every decoder's harness (tests/fuzz) on 10^6 inputs by default,
# release build, one process per target, up to JOBS at a time (default: the cores).
# Usage: scripts/fuzz.sh [INPUTS] [TARGETS]   e.g. scripts/fuzz.sh 1000000 lzss,bwt
# Logs go to $OUT (default target/fuzz); the exit status is non-zero when any input failed.
set -uo pipefail
cd "$(dirname "$0")/.."
inputs=${1:-1000000}
targets=${2:-lzss,gmatch-raw,gmatch-framed,snappy,bwt,intpack,container,archive,parquet}
jobs=${JOBS:-$(nproc)}
out=${OUT:-target/fuzz}
mkdir -p "$out"
# Without DataFusion (the harness does not need it): a much shorter release build.
exe=$(cargo test --release --no-default-features --features parquet --test fuzz --no-run --message-format=json \
  | python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "fuzz":
        print(msg["executable"])')
[ -x "$exe" ] || { echo "fuzz: no harness binary" >&2; exit 1; }
echo "fuzz: $inputs inputs per target, $jobs at a time, harness $exe, logs in $out"
status=0
pids=()
for target in ${targets//,/ }; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do sleep 1; done
  COLZIP_FUZZ_TARGETS=$target COLZIP_FUZZ_INPUTS=$inputs COLZIP_FUZZ_SEED=${COLZIP_FUZZ_SEED:-1} \
    "$exe" >"$out/$target.log" 2>&1 &
  pids+=("$!:$target")
done
for entry in "${pids[@]}"; do
  pid=${entry%%:*}
  target=${entry#*:}
  if ! wait "$pid"; then
    status=1
    echo "fuzz: $target FAILED (see $out/$target.log)"
  fi
  grep '^fuzz ' "$out/$target.log" || tail -5 "$out/$target.log"
done
exit $status
