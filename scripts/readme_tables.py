#!/usr/bin/env python3
"""The tables of schedules, arenas and sharing on the shipped graphs (docs/schedule.md,
docs/heap.md, docs/sharing.md).

usage: scripts/readme_tables.py PLAN DATA_DIR [--no-alias] [--exact-seconds S | --work-limit N]
                                [--tables schedule,arena,share]

PLAN is a Release memopt-plan, DATA_DIR holds the graphs (*.json). With
--no-alias every output is counted apart (the model before storages). With
--work-limit the searches (exact and best schedules, the exact packer) stop on
work instead of time, so the tables repeat exactly on any machine. Prints
Markdown tables on stdout; each cell is what `memopt-plan` answers, so a row
is reproduced by the command its page names above the table.
"""
import argparse
import json
import pathlib
import subprocess
import sys

SCHEDULERS = ["program", "list", "dfs", "post-order", "xla", "lpmf", "bfs", "dfs-size", "best", "exact"]
HEAPS = ["first-fit", "best-fit", "xla-size", "xla-area", "greedy-size", "greedy-breadth", "best", "exact"]


def run(plan, *args):
    out = subprocess.run([plan, *args], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def mib(b):
    return "%.1f MiB" % (b / 2**20)


def schedule_table(plan, graphs, model, limits):
    head = SCHEDULERS + ["lower bound", "proved", "exact s"]
    print("| graph | " + " | ".join(head) + " |")
    print("|---" * (len(head) + 1) + "|")
    for g in graphs:
        runs = {}
        for algo in SCHEDULERS:
            # best keeps its own 3 s unless the tables run on work limits.
            extra = limits if algo == "exact" or (algo == "best" and limits[0] == "--work-limit") else []
            runs[algo] = run(plan, "schedule", str(g), "--algo", algo, *model, *extra)
        lowest = min(r["peak_bytes"] for r in runs.values())
        cells = [f"**{r['peak_bytes']}**" if r["peak_bytes"] == lowest else str(r["peak_bytes"])
                 for r in runs.values()]
        exact = runs["exact"]
        cells += [str(exact["lower_bound_bytes"]), "yes" if exact["proved_optimal"] else "no",
                  "%.2f" % exact["seconds"]]
        print(f"| {g.stem} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


def arena_table(plan, graphs, model, limits):
    print("| graph | max-live | " + " | ".join(HEAPS) + " |")
    print("|---" * (len(HEAPS) + 2) + "|")
    for g in graphs:
        cells, lower = [], None
        for algo in HEAPS:
            extra = limits if algo == "exact" else []
            r = run(plan, "arena", str(g), "--algo", algo, "--schedule", "program", *model, *extra)
            lower = r["lower_bound_bytes"]
            over = 0 if lower == 0 else 100.0 * (r["arena_bytes"] - lower) / lower
            cell = "+0%" if r["arena_bytes"] == lower else "+%.2f%%" % over
            if algo == "exact" and r["proved_optimal"]:
                cell += ", proved"
            cells.append(cell)
        print(f"| {g.stem} | {lower} | " + " | ".join(cells) + " |")
        sys.stdout.flush()


def share_table(plan, graphs, model):
    print("| graph | buffers | bytes, no sharing | linear storages | linear bytes | DAG storages | DAG bytes "
          "| lower bound (peak) |")
    print("|---|---|---|---|---|---|---|---|")
    for g in graphs:
        linear = run(plan, "share", str(g), "--algo", "linear", *model)
        dag = run(plan, "share", str(g), "--algo", "dag", *model)
        buffers = sum(len(s["buffers"]) for s in linear["storages"])
        print(f"| {g.stem} | {buffers} | {mib(linear['unshared_bytes'])} | {len(linear['storages'])} | "
              f"{mib(linear['total_bytes'])} | {len(dag['storages'])} | {mib(dag['total_bytes'])} | "
              f"{mib(linear['peak_bytes'])} |")
        sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("plan")
    parser.add_argument("data_dir")
    parser.add_argument("--no-alias", action="store_true")
    parser.add_argument("--exact-seconds", type=float, default=60)
    parser.add_argument("--work-limit", type=int)
    parser.add_argument("--tables", default="schedule,arena,share")
    args = parser.parse_args()
    graphs = sorted(pathlib.Path(args.data_dir).glob("*.json"))
    model = ["--no-alias"] if args.no_alias else []
    limits = ["--work-limit", str(args.work_limit)] if args.work_limit else ["--time-limit", str(args.exact_seconds)]
    for table in args.tables.split(","):
        print(f"\n### {table}{' (--no-alias)' if args.no_alias else ''}\n")
        if table == "schedule":
            schedule_table(args.plan, graphs, model, limits)
        elif table == "arena":
            arena_table(args.plan, graphs, model, limits)
        elif table == "share":
            share_table(args.plan, graphs, model)
        else:
            sys.exit(f"unknown table {table}")


if __name__ == "__main__":
    main()
