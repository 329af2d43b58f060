#!/usr/bin/python3
"""memopt's predicted peak of a traced PyTorch training step against the peak PyTorch's CPU allocator measures.

    /usr/bin/python3 scripts/measure_torch_peaks.py [--plan build/examples/memopt-plan] [MODEL:BATCH ...]

Without models, the five rows of issue 32: mobilenet_v2:4 densenet121:2
efficientnet_b0:4 resnet50:4 resnet18:8 (3x224x224 inputs; --input-shape
changes it). For each: the exporter's training trace (make_fx of forward,
cross-entropy and torch.autograd.grad) as memopt-graph/1, with and without
each op's scratch (scripts/torch_scratch.py); `memopt-plan peak` of both, less
the bytes of the input x (allocated before the call); and the measured peak:
the traced fx module run once under torch.autograd.profiler.profile(
profile_memory=True), the running sum of its allocation events in time order,
counted from the start of the call (inputs, target and weights were allocated
before it). Prints a table; --json prints the rows as JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import torch  # noqa: E402
from torch.autograd import profiler  # noqa: E402

import export_torch  # noqa: E402
from torch_scratch import record_scratch  # noqa: E402

ROWS = ["mobilenet_v2:4", "densenet121:2", "efficientnet_b0:4", "resnet50:4", "resnet18:8"]


def training_trace(model, inputs, seed):
    """The exporter's training trace: (memopt-graph/1 document, fx module, its flat inputs)."""
    if hasattr(export_torch, "tracing"):  # the exporter over memopt.torch
        rec = export_torch.tracing().export_aten(model, inputs, True, seed)
        return rec.builder.finish(rec.outputs, "step", "measure_torch_peaks"), rec.module, rec.inputs
    # the exporter's own recorder: keep the module and inputs it runs
    seen = {}
    make_recorder = export_torch._make_recorder

    def keeping(gm, *args, **kwargs):
        rec = make_recorder(gm, *args, **kwargs)
        propagate = rec.propagate

        def run(*inputs_):
            seen["module"], seen["inputs"] = gm, inputs_
            return propagate(*inputs_)
        rec.propagate = run
        return rec

    export_torch._make_recorder = keeping
    try:
        builder, outputs = export_torch.aten_trace(model, inputs, True, seed)
    finally:
        export_torch._make_recorder = make_recorder
    module = seen["module"]
    module.graph._codegen = torch.fx.graph.CodeGen()  # called with its inputs flat, as the recorder ran it
    module.recompile()
    return builder.finish(outputs, "step", "measure_torch_peaks"), module, seen["inputs"]


def measured_peak(module, inputs):
    """Peak of the running sum of the allocations made during module(*inputs)."""
    with torch.no_grad(), profiler.profile(profile_memory=True) as prof:
        result = module(*inputs)
        del result
    deltas = sorted((e.start_us(), e.nbytes()) for e in prof.kineto_results.events() if e.name() == "[memory]")
    live = peak = 0
    for _, d in deltas:
        live += d
        peak = max(peak, live)
    return peak


def planned_peak(plan, document):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(document, f)
    try:
        out = subprocess.run([plan, "peak", f.name], check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)["peak_bytes"]


def measure_row(spec, plan, input_shape, seed=0):
    name, _, batch = spec.partition(":")
    torch.manual_seed(seed)
    model, inputs, _, _ = export_torch.load_model(name, int(batch or 1), input_shape, {})
    torch.manual_seed(seed + 3)
    document, module, flat = training_trace(model, inputs, seed)
    # the flat inputs end with the model's inputs and the target; x is the first model input
    x_bytes = inputs[0].numel() * inputs[0].element_size()
    without = planned_peak(plan, document) - x_bytes
    scratch = record_scratch(document, module, flat)
    with_scratch = planned_peak(plan, document) - x_bytes
    measured = measured_peak(module, flat)
    return {"model": name, "batch": int(batch or 1), "threads": torch.get_num_threads(),
            "memopt_without_scratch": without, "memopt": with_scratch, "measured": measured,
            "ratio": measured / with_scratch, "scratch_nodes": sum(1 for n in document["nodes"] if "scratch_bytes" in n),
            "scratch_bytes_total": scratch}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("rows", nargs="*", default=ROWS, help="MODEL:BATCH (torchvision names)")
    p.add_argument("--plan", default=os.path.join(HERE, "..", "build", "examples", "memopt-plan"),
                   help="memopt-plan executable")
    p.add_argument("--input-shape", default=None, help="C,H,W of the input (default 3,224,224)")
    p.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    shape = [int(v) for v in args.input_shape.split(",")] if args.input_shape else None
    rows = [measure_row(r, args.plan, shape) for r in args.rows]
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
