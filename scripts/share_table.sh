#!/bin/bash
# The README table of buffer sharing: for each graph of DATA_DIR, storages and
# bytes without sharing, with the linear pass (file order, LIFO), with the DAG
# pass (every order, best fit), and the arena lower bound (the peak of the
# file order, which no sharing of that order can beat).
# usage: scripts/share_table.sh build/examples/memopt-plan examples/data
set -euo pipefail
plan=$1
dir=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| graph | buffers | bytes, no sharing | linear storages | linear bytes | DAG storages | DAG bytes | lower bound (peak) |"
echo "|---|---|---|---|---|---|---|---|"
for f in "$dir"/*.json; do
  "$plan" share "$f" --algo linear > "$tmp/linear.json"
  "$plan" share "$f" --algo dag > "$tmp/dag.json"
  python3 - "$f" "$tmp/linear.json" "$tmp/dag.json" <<'PY'
import json, os, sys
linear, dag = (json.load(open(p)) for p in sys.argv[2:4])
buffers = sum(len(s["buffers"]) for s in linear["storages"])
mib = lambda b: "%.1f MiB" % (b / 2**20)
print(f"| {os.path.basename(sys.argv[1])} | {buffers} | {mib(linear['unshared_bytes'])} | "
      f"{len(linear['storages'])} | {mib(linear['total_bytes'])} | {len(dag['storages'])} | "
      f"{mib(dag['total_bytes'])} | {mib(linear['peak_bytes'])} |")
PY
done
