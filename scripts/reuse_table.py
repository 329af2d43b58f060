#!/usr/bin/python3
"""The table of docs/onnx.md "Cell stacks and RandWire under the runtime's rule": for each ONNX
model, the model's own order, memopt's exact order and the single-op bound, with in-place
reuse (ONNX's default: an element-wise output takes over an input its op reads last, as ONNX
Runtime plans it) and without it (--no-in-place).

Usage:
  scripts/reuse_table.py --plan BUILD/examples/memopt-plan [--time-limit S] MODEL.onnx...

`memopt-plan peak` gives the model order's peak and the single-op bound (`op_bound_bytes`),
`memopt-plan schedule --algo exact --time-limit S` memopt's order, its certified lower bound and
whether it is proved optimal.  Prints one Markdown row per model and rule.
"""

import argparse
import json
import os
import subprocess


def plan(binary, args):
    run = subprocess.run([binary] + args, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        raise SystemExit(" ".join(args) + ": " + (run.stderr.strip() or "memopt-plan failed"))
    return json.loads(run.stdout)


def percent(value, base):
    return f"{100.0 * (value - base) / base:+.1f} %"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", required=True, help="the memopt-plan binary")
    parser.add_argument("--time-limit", default="60", help="seconds for the exact scheduler (default 60)")
    parser.add_argument("models", nargs="+", help="ONNX models")
    args = parser.parse_args()
    print("| model | rule | nodes | model order (B) | memopt exact (B) | vs model order | single-op bound (B) "
          "| exact above the bound | proved optimal | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for model in args.models:
        for rule, flags in (("in place", []), ("apart", ["--no-in-place"])):
            peak = plan(args.plan, ["peak", model] + flags)
            exact = plan(args.plan, ["schedule", model, "--algo", "exact", "--time-limit", args.time_limit] + flags)
            bound = max(peak["op_bound_bytes"], exact["lower_bound_bytes"])
            gap = "proved" if exact["proved_optimal"] else percent(exact["peak_bytes"], bound) + " (certified)"
            print(f"| `{os.path.basename(model)}` | {rule} | {peak['nodes']} | {peak['peak_bytes']:,} "
                  f"| {exact['peak_bytes']:,} | {percent(exact['peak_bytes'], peak['peak_bytes'])} "
                  f"| {peak['op_bound_bytes']:,} | {percent(exact['peak_bytes'], peak['op_bound_bytes'])} "
                  f"| {'yes' if exact['proved_optimal'] else 'no: ' + gap} | {exact['seconds']:.2f} |")


if __name__ == "__main__":
    main()
