#!/usr/bin/env python3
"""The scaling table of docs/performance.md from scaling_bench's JSON output.

usage: build-bench/bench/scaling_bench --benchmark_format=json \
           --benchmark_repetitions=3 --benchmark_report_aggregates_only=true > scaling.json
       scripts/scaling.py scaling.json

For each benchmark: CPU milliseconds at 10^3..10^6 vertices, the ratio to
boost::topological_sort on the same graph at 10^6, the log-log slope between
10^5 and 10^6 (1.0 is linear), the same slope less topological_sort's (what the
algorithm adds to the memory system's own growth), the peak heap the call
holds per vertex, and the ratio issue 35 sets as the target. With repetitions,
each figure is the median of the repetitions (the ratio: of medians from the
same run).
"""
import json
import math
import sys
from collections import defaultdict

# Ratio to boost::topological_sort at 10^6 vertices that each algorithm aims at.
TARGETS = {"liveness": 1.5, "arena_best_fit": 3, "dag_share": 3,
           "simulate_composite": 5, "simulate_fifo": 5}
SCHEDULER_TARGET = 3  # every list and DFS scheduler


def main():
    runs = json.load(open(sys.argv[1]))["benchmarks"]
    if any(r.get("run_type") == "aggregate" for r in runs):
        runs = [r for r in runs if r.get("aggregate_name") == "median"]
    times = defaultdict(dict)
    per_vertex = defaultdict(dict)
    for r in runs:
        name, size = r.get("run_name", r["name"]).split("/")
        times[name][int(size)] = r["cpu_time"]
        per_vertex[name][int(size)] = r.get("bytes_per_vertex", 0)
    sizes = sorted(next(iter(times.values())))
    base = times["BM_topological_sort"]

    def slope(t):
        return math.log10(t[sizes[-1]] / t[sizes[-2]]) / math.log10(sizes[-1] / sizes[-2])

    print("| algorithm | " + " | ".join(f"10^{round(math.log10(n))} ms" for n in sizes)
          + " | vs topological_sort at 10^6 | target | slope 10^5→10^6 | slope less topological_sort's"
          + " | heap bytes/vertex |")
    print("|---" * (len(sizes) + 6) + "|")
    for name, t in times.items():
        short = name.removeprefix("BM_")
        target = TARGETS.get(short, SCHEDULER_TARGET if short.endswith("_schedule") else None)
        ratio = t[sizes[-1]] / base[sizes[-1]]
        verdict = "" if target is None else f"≤ {target} ({'met' if ratio <= target else 'not met'})"
        cells = [f"{t[n]:.3g}" for n in sizes]
        print(f"| {short} | " + " | ".join(cells)
              + f" | {ratio:.1f} | {verdict} | {slope(t):.2f} | {slope(t) - slope(base):+.2f}"
              + f" | {per_vertex[name][sizes[-1]]:.0f} |")


if __name__ == "__main__":
    main()
