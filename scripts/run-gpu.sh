#!/usr/bin/env bash
# Runs on the device machine: every GPU test binary in .gpu/ with COLZIP_REQUIRE_GPU=1
# (a missing GPU fails instead of skipping), logs under $OUT when set.
#
# --sanitize: runs them under NVIDIA compute-sanitizer instead, and fails on any error it
# reports: memcheck for every binary (encoders, decoders, corrupt streams; both lzss
# matchers), and racecheck on the tests that launch every kernel, since every kernel uses
# shared memory (kernels/README.md). Pipeline steps are 1 MiB there (COLZIP_GPU_STEP_MIB),
# so multi-step paths run on a few MiB. $COMPUTE_SANITIZER names the tool when it is not on the PATH or
# in /usr/local/cuda/bin; SANITIZE_TOOLS (default "memcheck racecheck") picks the tools.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-/tmp/colzip-gpu}
mkdir -p "$out"
export COLZIP_REQUIRE_GPU=1
sanitize=0
for arg in "$@"; do
  case "$arg" in
    --sanitize) sanitize=1 ;;
    *) echo "usage: scripts/run-gpu.sh [--sanitize]" >&2; exit 2 ;;
  esac
done
status=0
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true

if [ "$sanitize" = 1 ]; then
  sanitizer=${COMPUTE_SANITIZER:-$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | head -1)}
  if [ -z "$sanitizer" ] || [ ! -x "$sanitizer" ]; then
    echo "run-gpu: compute-sanitizer not found (set COMPUTE_SANITIZER)" >&2
    exit 1
  fi
  "$sanitizer" --version | tail -1
  # Steps of 1 MiB: the tests that cross pipeline steps then do so with a few MiB, which
  # the sanitizer's slowed kernels get through in minutes, not hours.
  export COLZIP_GPU_STEP_MIB=${COLZIP_GPU_STEP_MIB:-1}
  # Fewer cases in the randomized tests (tests/common `cases`), and line tables in the
  # kernels so that a report names its source line.
  export COLZIP_UNDER_SANITIZER=1 COLZIP_KERNEL_LINEINFO=1
  # Runs "$@" under one sanitizer tool; fails when the tool reports any error (its exit
  # code) or the program fails, and when the summary line counts errors.
  run_tool() {
    local tool=$1 log=$2
    shift 2
    local extra=()
    [ "$tool" = racecheck ] && extra=(--racecheck-report all)
    echo "== $tool: $*"
    "$sanitizer" --tool "$tool" "${extra[@]}" --error-exitcode 86 --print-limit 50 "$@" >"$log" 2>&1
    local rc=$?
    tail -3 "$log"
    if [ $rc -ne 0 ] || grep -Eq "ERROR SUMMARY: [1-9]|RACECHECK SUMMARY: [1-9]" "$log"; then
      echo "run-gpu: $tool FAILED ($rc) for $* (log $log)"
      return 1
    fi
  }
  for tool in ${SANITIZE_TOOLS:-memcheck racecheck}; do
    run_tool "$tool" "$out/gpu.$tool.log" .gpu/colzip gpu --format json || status=1
    if [ "$tool" = racecheck ]; then
      # Racecheck slows shared-memory kernels a thousandfold: it runs the tests that
      # launch every kernel (each lzss matcher, gmatch's compressor, the Snappy decoder on
      # raw, framed and corrupt streams, lzss decoding of corrupt streams, bwt's decoder) rather than
      # every parameter grid, which memcheck covers.
      run_tool racecheck "$out/gpu_runtime.racecheck.log" .gpu/gpu_runtime --test-threads=1 || status=1
      for matcher in ballot chains; do
        COLZIP_LZSS_MATCHER=$matcher run_tool racecheck "$out/gpu_lzss.$matcher.racecheck.log" \
          .gpu/gpu_lzss --test-threads=1 gpu_compression_of_a_few_chunks corrupt_streams || status=1
      done
      run_tool racecheck "$out/gpu_gmatch.racecheck.log" .gpu/gpu_gmatch --test-threads=1 \
        gpu_compression_writes_the_cpu_bytes gpu_decodes corrupt_streams || status=1
      run_tool racecheck "$out/gpu_bwt.racecheck.log" .gpu/gpu_bwt --test-threads=1 \
        gpu_decodes_the_cpu_streams corrupt_streams || status=1
      continue
    fi
    for test in .gpu/gpu_*; do
      name=$(basename "$test")
      [ "$name" = gpu_lzss ] && continue  # once per matcher, below
      run_tool "$tool" "$out/$name.$tool.log" "$test" --test-threads=1 || status=1
    done
    for matcher in ballot chains; do
      COLZIP_LZSS_MATCHER=$matcher run_tool "$tool" "$out/gpu_lzss.$matcher.$tool.log" \
        .gpu/gpu_lzss --test-threads=1 || status=1
    done
  done
  exit $status
fi

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
