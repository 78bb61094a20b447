#!/usr/bin/env bash
# Runs on the device machine: whole-process timings of `colzip compress` and
# `colzip decompress` (bash's `time`, process start included, input in the page cache) on
# column files that `colzip bench --write-columns DIR` wrote, for each codec and backend;
# every round trip is checked with cmp. Outputs are removed before each timed run (freeing
# an overwritten file's pages is the kernel's work, not colzip's). One line per run: file
# codec backend direction seconds GB/s (uncompressed bytes / wall time).
# Usage: scripts/cli-gpu.sh DIR FILE:TYPE... [-- CODECS...]
#   e.g. scripts/cli-gpu.sh /tmp/cols l_comment.txt:bytes l_quantity.i32:int32
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
files=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do files+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
if [ $# -gt 0 ]; then codecs=("$@"); else codecs=(gmatch lzss); fi
work=${CLI_WORK:-/tmp/colzip-cli}
mkdir -p "$work"
TIMEFORMAT=%R
for spec in "${files[@]}"; do
  file=${spec%%:*}
  type=${spec##*:}
  src="$dir/$file"
  bytes=$(stat -c %s "$src")
  cat "$src" > /dev/null
  for codec in "${codecs[@]}"; do
    for backend in gpu cpu; do
      for run in 1 2 3; do
        rm -f "$work/a.czip" "$work/a.out"
        t=$( { time .gpu/colzip compress "$src" -o "$work/a.czip" --type "$type" --codec "$codec" --backend "$backend" --force > /dev/null; } 2>&1 )
        echo "$file $codec $backend compress run$run $t $(python3 -c "print(f'{$bytes/$t/1e9:.3f}')")"
        sync
        t=$( { time .gpu/colzip decompress "$work/a.czip" -o "$work/a.out" --backend "$backend" --force > /dev/null; } 2>&1 )
        echo "$file $codec $backend decompress run$run $t $(python3 -c "print(f'{$bytes/$t/1e9:.3f}')")"
        cmp "$src" "$work/a.out"
      done
    done
  done
done
