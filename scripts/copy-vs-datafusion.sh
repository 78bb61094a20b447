#!/usr/bin/env bash
# The Parquet COPY of TPC-H lineitem, colzip's COLZIP_PARQUET against DataFusion's own SNAPPY
# Parquet, RUNS times each, alternating, in one `colzip sql` session (the tables generated
# once); each statement's seconds come from --timing on stderr, then the medians.
# Usage: scripts/copy-vs-datafusion.sh [SF] [RUNS] [DIR] [COLZIP]   (defaults: 10 5 a temp dir, colzip on PATH)
set -euo pipefail
sf=${1:-10}
runs=${2:-5}
dir=${3:-$(mktemp -d)}
colzip=${4:-colzip}
mkdir -p "$dir"
sql=""
for k in $(seq "$runs"); do
  sql+="COPY (SELECT * FROM lineitem) TO '$dir/colzip$k.parquet' STORED AS COLZIP_PARQUET;"$'\n'
  sql+="COPY (SELECT * FROM lineitem) TO '$dir/datafusion$k.parquet' STORED AS PARQUET OPTIONS ('compression' 'snappy');"$'\n'
done
times=$(printf '%s' "$sql" | "$colzip" sql --tpch "$sf" --timing 2>&1 >/dev/null | sed -n 's/^.* in \([0-9.]*\) s$/\1/p')
python3 - "$times" <<'PY'
import statistics, sys
t = [float(x) for x in sys.argv[1].split()]
ours, theirs = t[0::2], t[1::2]
print("COLZIP_PARQUET:", ours, "median", statistics.median(ours))
print("DataFusion SNAPPY:", theirs, "median", statistics.median(theirs))
print("speedup (medians): %.2fx" % (statistics.median(theirs) / statistics.median(ours)))
PY
ls -l "$dir" | head -3
