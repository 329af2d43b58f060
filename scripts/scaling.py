#!/usr/bin/env python3
"""The scaling table of docs/performance.md from scaling_bench's JSON output.

usage: flags="--benchmark_format=json --benchmark_min_warmup_time=1 --benchmark_repetitions=5 \
              --benchmark_enable_random_interleaving=true --benchmark_report_aggregates_only=true"
       GLIBC_TUNABLES=glibc.malloc.mmap_threshold=4294967295:glibc.malloc.trim_threshold=4294967295 \
           build-bench/bench/scaling_bench $flags > kept.json
       build-bench/bench/scaling_bench $flags > default.json
       scripts/scaling.py kept.json [default.json]

kept.json is the run whose heap keeps the pages it got, so that no call pays
page faults for memory an earlier call gave back (docs/performance.md says why).
For each benchmark: CPU milliseconds at 10^3..10^6 vertices, the ratio to
boost::topological_sort on the same graph at 10^6, the log-log slope between
10^5 and 10^6 (1.0 is linear), the same slope less topological_sort's (what the
algorithm adds to the memory system's own growth), the peak heap the call
holds per vertex and all it allocates per vertex, and the ratio issue 35 sets
as the target. default.json, the same run under glibc's default heap, adds its
time and ratio at 10^6. With repetitions, each figure is the median of the
repetitions (the ratio: of medians from the same run). The repetitions of all
benchmarks run interleaved in a random order, so that a slow minute of a
shared machine falls on every row alike rather than on one; the spread of a
row's repetitions at 10^6 (their coefficient of variation) is shown, and a
verdict whose ratio lies within the row's and the sort's spreads of the target
says so: on a shared machine such a verdict can go either way from run to run.
"""
import json
import math
import sys
from collections import defaultdict

# Ratio to boost::topological_sort at 10^6 vertices that each algorithm aims at.
TARGETS = {"liveness": 1.5, "arena_best_fit": 3, "dag_share": 3,
           "simulate_composite": 5, "simulate_fifo": 5}
SCHEDULER_TARGET = 3  # every list and DFS scheduler
# The table's rows: the references first, then each family (interleaved runs
# report in a random order); a benchmark not listed follows by name.
ROWS = ["topological_sort", "read_edge_bundles", "fresh_memory", "liveness", "list_schedule",
        "dfs_schedule", "post_order_schedule", "bfs_schedule", "dfs_size_schedule",
        "lpmf_schedule", "arena_best_fit", "dag_share", "simulate_composite", "simulate_fifo"]


def read(path):
    """CPU milliseconds, heap bytes per vertex and the repetitions' coefficient
    of variation (0 without repetitions), by benchmark and size."""
    runs = json.load(open(path))["benchmarks"]
    spread = defaultdict(lambda: defaultdict(float))
    if any(r.get("run_type") == "aggregate" for r in runs):
        for r in runs:
            if r.get("aggregate_name") == "cv":
                name, size = r["run_name"].split("/")
                spread[name][int(size)] = r["cpu_time"]
        runs = [r for r in runs if r.get("aggregate_name") == "median"]
    times = defaultdict(dict)
    per_vertex = defaultdict(dict)
    for r in runs:
        name, size = r.get("run_name", r["name"]).split("/")
        times[name][int(size)] = r["cpu_time"]
        per_vertex[name][int(size)] = (r.get("bytes_per_vertex", 0), r.get("allocated_per_vertex", 0))
    return times, per_vertex, spread


def verdict(ratio, target, spread):
    """Met or not, and whether the run's spread (a fraction) reaches across the target."""
    said = "met" if ratio <= target else "not met"
    return said + (" within the spread" if abs(ratio - target) <= spread * ratio else "")


def main():
    times, per_vertex, spread = read(sys.argv[1])
    default, _, default_spread = read(sys.argv[2]) if len(sys.argv) > 2 else (None, None, None)
    sizes = sorted(next(iter(times.values())))
    base = times["BM_topological_sort"]

    def slope(t):
        return math.log10(t[sizes[-1]] / t[sizes[-2]]) / math.log10(sizes[-1] / sizes[-2])

    last = sizes[-1]

    def ratio_spread(spreads, name):
        """A ratio's spread at 10^6: its own repetitions' and the sort's, added."""
        return spreads[name][last] + spreads["BM_topological_sort"][last]

    default_columns = " | default heap: ms at 10^6 | vs topological_sort" if default else ""
    print("| algorithm | " + " | ".join(f"10^{round(math.log10(n))} ms" for n in sizes)
          + " | vs topological_sort at 10^6" + default_columns
          + " | target | spread at 10^6 | slope 10^5→10^6 | slope less topological_sort's"
          + " | heap bytes/vertex held | allocated |")
    print("|---" * (len(sizes) + 8 + (2 if default else 0)) + "|")
    def row(name):
        short = name.removeprefix("BM_")
        return (ROWS.index(short), "") if short in ROWS else (len(ROWS), short)

    for name in sorted(times, key=row):
        t = times[name]
        short = name.removeprefix("BM_")
        target = TARGETS.get(short, SCHEDULER_TARGET if short.endswith("_schedule") else None)
        ratio = t[last] / base[last]
        cells = [f"{t[n]:.3g}" for n in sizes] + [f"{ratio:.1f}"]
        met = [] if target is None else [verdict(ratio, target, ratio_spread(spread, name))]
        if default:
            default_ratio = default[name][last] / default["BM_topological_sort"][last]
            cells += [f"{default[name][last]:.3g}", f"{default_ratio:.1f}"]
            met += [] if target is None else [verdict(default_ratio, target, ratio_spread(default_spread, name))
                                              + " under the default heap"]
        target_cell = "" if target is None else f"≤ {target} ({', '.join(met)})"
        print(f"| {short} | " + " | ".join(cells)
              + f" | {target_cell} | {spread[name][last]:.0%} | {slope(t):.2f} | {slope(t) - slope(base):+.2f}"
              + " | {:.0f} | {:.0f} |".format(*per_vertex[name][last]))


if __name__ == "__main__":
    main()
