#!/usr/bin/python3
"""memopt's predicted peak of a traced PyTorch training step against the peak PyTorch's CPU allocator measures.

    PYTHONPATH=build/python /usr/bin/python3 scripts/measure_torch_peaks.py [MODEL:BATCH ...]
                            [--input-shape C,H,W] [--threads N] [--json]

Without models, the five rows of issue 32: mobilenet_v2:4 densenet121:2
efficientnet_b0:4 resnet50:4 resnet18:8 (torchvision, 3x224x224 inputs). For
each: memopt.torch.trace of the training step (make_fx of forward,
cross-entropy and torch.autograd.grad, as scripts/export_torch.py --train);
memopt's program-order peak of the step's graph with and without each op's
measured scratch (the step's inputs and weights are persistent: the call does
not allocate them); and the traced module run once under the profiler
(memopt.torch.measure). Prints a Markdown table, or the rows as JSON.
"""

import argparse
import json
import sys

import torch
import torchvision

import memopt
import memopt.torch as mt

ROWS = ["mobilenet_v2:4", "densenet121:2", "efficientnet_b0:4", "resnet50:4", "resnet18:8"]


def measure_row(spec, input_shape, seed=0):
    name, _, batch = spec.partition(":")
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)()
    x = torch.randn([int(batch or 1)] + (input_shape or [3, 224, 224]))
    step = mt.trace(model, x, train=True, seed=seed)
    document = step.graph.to_json()
    for node in document["nodes"]:
        node.pop("scratch_bytes", None)
    predicted = memopt.peak(step.graph).peak_bytes
    measured = mt.measure(step.module, step.inputs, repeat=1)["peak_bytes"]
    return {"model": name, "batch": int(batch or 1), "threads": torch.get_num_threads(),
            "memopt_without_scratch": memopt.peak(memopt.Graph.from_json(document)).peak_bytes,
            "memopt": predicted, "measured": measured, "ratio": measured / predicted,
            "scratch_nodes": len(step.scratch), "scratch_bytes_total": sum(step.scratch.values())}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("rows", nargs="*", default=ROWS, help="MODEL:BATCH (torchvision names)")
    p.add_argument("--input-shape", default=None, help="C,H,W of the input (default 3,224,224)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    shape = [int(v) for v in args.input_shape.split(",")] if args.input_shape else None
    rows = [measure_row(r, shape) for r in args.rows]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print("| model, batch | memopt, no scratch | memopt, with scratch | PyTorch, measured | measured / memopt |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        print(f"| {r['model']}, {r['batch']} | {r['memopt_without_scratch']:,} | {r['memopt']:,} | "
              f"{r['measured']:,} | {r['ratio']:.5f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
