#!/usr/bin/env bash
# Runs on the device machine: every GPU test binary in .gpu/ with COLZIP_REQUIRE_GPU=1
# (a missing GPU fails instead of skipping), logs under $OUT when set.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/colzip-gpu}
mkdir -p "$out"
export COLZIP_REQUIRE_GPU=1
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
.gpu/colzip gpu --format json | tee "$out/gpu.json" || status=1
for test in .gpu/gpu_*; do
  echo "== $test"
  "$test" --test-threads=1 2>&1 | tee "$out/$(basename "$test").log" || status=1
done
# Kernel I has two matchers that must give the same bytes: test each one forced.
for matcher in ballot chains; do
  echo "== .gpu/gpu_lzss with COLZIP_LZSS_MATCHER=$matcher"
  COLZIP_LZSS_MATCHER=$matcher .gpu/gpu_lzss --test-threads=4 2>&1 | tee "$out/gpu_lzss.$matcher.log" || status=1
done
exit $status
