#!/usr/bin/env bash
# Builds the GPU test binaries (with Parquet, without DataFusion; gpu_sql_* with it) and the CLI here, and puts them
# stripped into .gpu/ for the device machine (run there with scripts/run-gpu.sh).
# Usage: scripts/build-gpu.sh [release|dev]   (default release)
set -euo pipefail
cd "$(dirname "$0")/.."
profile=${1:-release}
# The exclude file of this checkout (a linked worktree's .git is a file, not a folder).
exclude=$(git rev-parse --git-path info/exclude)
grep -qx '/.gpu/' "$exclude" 2>/dev/null || { mkdir -p "$(dirname "$exclude")"; echo '/.gpu/' >> "$exclude"; }
rm -rf .gpu && mkdir -p .gpu
# Copies the test executables of cargo's JSON messages on stdin into .gpu/.
copy_tests() {
  python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["kind"] == ["test"]:
        print(msg["target"]["name"], msg["executable"])
' | while read -r name exe; do cp "$exe" ".gpu/$name"; done
}
# Test binaries whose name starts with gpu_ hold the GPU tests.
cargo test --profile "$profile" --no-default-features --features parquet --no-run --message-format=json --test 'gpu_*' \
  | copy_tests
# The GPU tests of SQL (gpu_sql_*) need DataFusion, and so do gpu_devices' tests of the SQL
# aggregates: built again with the default features (replacing gpu_devices above).
cargo test --profile "$profile" --no-run --message-format=json --test 'gpu_sql_*' --test gpu_devices \
  | copy_tests
cargo build --profile "$profile" --no-default-features --features cli --bin colzip --message-format=json \
  | python3 -c '
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if msg.get("reason") == "compiler-artifact" and msg.get("executable"):
        print(msg["executable"])
' | while read -r exe; do cp "$exe" .gpu/colzip; done
strip .gpu/* 2>/dev/null || true
ls -la .gpu
