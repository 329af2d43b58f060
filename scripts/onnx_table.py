#!/usr/bin/python3
"""The ONNX import table of docs/onnx.md: every torchvision classification model and
torch.nn.Transformer / TransformerEncoder, exported by torch.onnx.export at each opset,
imported by memopt-plan.

Usage:
  scripts/onnx_table.py --plan BUILD/examples/memopt-plan [--work DIR] [--opsets 13,17]
                        [--models NAME,...] [--export-only]

Each model is exported once per opset with scripts/export_torch.py (--batch 1, default
input, graph-only ONNX) to DIR/<model>.opset<N>.onnx (kept: a second run reuses it), then
read by `memopt-plan peak` (the model's order) and `memopt-plan schedule --algo best
--work-limit 100000` (memopt's order, the same on any machine).  Prints one Markdown
row per model and opset: ONNX nodes, memopt graph nodes (ONNX nodes + initializers +
graph inputs - shape nodes), shape nodes folded away, the two peaks, or what refused
the model.  Use Debian's /usr/bin/python3 (torch, torchvision,
onnx).
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
EXPORTER = os.path.join(HERE, "export_torch.py")
WORK_LIMIT = "100000"
TRANSFORMERS = {"nn.TransformerEncoder": os.path.join(HERE, "models", "transformer.py") + ":encoder",
                "nn.Transformer": os.path.join(HERE, "models", "transformer.py") + ":transformer"}


def target_models():
    import torchvision.models as models
    return models.list_models(module=models) + list(TRANSFORMERS)


def export(model, opset, path):
    """Exports `model` at `opset` to `path` unless it is there; returns an error line or None."""
    if os.path.exists(path):
        return None
    spec = TRANSFORMERS.get(model, model)
    run = subprocess.run([sys.executable, EXPORTER, spec, "--batch", "1", "--onnx", path, "--opset", str(opset),
                          "--quiet"], capture_output=True, text=True)
    if run.returncode != 0:
        return (run.stderr.strip().splitlines() or ["export failed"])[-1]
    return None


def plan(binary, args):
    run = subprocess.run([binary] + args, capture_output=True, text=True)
    if run.returncode != 0:
        return None, (run.stderr.strip().splitlines() or ["memopt-plan failed"])[-1]
    return json.loads(run.stdout), None


def onnx_counts(path):
    """ONNX nodes, and the graph nodes memopt makes besides them (initializers, other graph inputs)."""
    import onnx
    graph = onnx.load(path, load_external_data=False).graph
    initializers = {t.name for t in graph.initializer}
    return len(graph.node), len(initializers) + sum(1 for i in graph.input if i.name not in initializers)


def row(binary, model, opset, path):
    failed = export(model, opset, path)
    if failed:
        return f"| {model} | {opset} | | | | | | export: {failed} |"
    if binary is None:
        return None
    nodes, sources = onnx_counts(path)
    peak, refused = plan(binary, ["peak", path])
    if refused:
        return f"| {model} | {opset} | {nodes} | | | | | refused: {refused} |"
    best, refused = plan(binary, ["schedule", path, "--algo", "best", "--work-limit", WORK_LIMIT])
    if refused:
        return f"| {model} | {opset} | {nodes} | {peak['nodes']} | | {peak['peak_bytes']:,} | | {refused} |"
    folded = nodes + sources - peak["nodes"]
    return (f"| {model} | {opset} | {nodes} | {peak['nodes']} | {folded} | {peak['peak_bytes']:,} | "
            f"{best['peak_bytes']:,} | |")


def main(argv):
    p = argparse.ArgumentParser(prog="onnx_table.py", description=__doc__.splitlines()[0])
    p.add_argument("--plan", help="the memopt-plan binary (required unless --export-only)")
    p.add_argument("--work", default="/tmp/onnx_work", help="where the exported models go (default /tmp/onnx_work)")
    p.add_argument("--opsets", default="13,17", help="comma-separated opsets (default 13,17)")
    p.add_argument("--models", help="comma-separated model names (default: the whole target set)")
    p.add_argument("--export-only", action="store_true", help="export the models, print no table")
    args = p.parse_args(argv)
    if not args.plan and not args.export_only:
        p.error("--plan BINARY is required unless --export-only")
    os.makedirs(args.work, exist_ok=True)
    models = args.models.split(",") if args.models else target_models()
    print("| model | opset | ONNX nodes | memopt nodes | shape nodes folded | model order peak (B) "
          "| memopt best peak (B) | refusal |")
    print("|---|---|---|---|---|---|---|---|")
    for model in models:
        for opset in (int(o) for o in args.opsets.split(",")):
            line = row(None if args.export_only else args.plan, model, opset,
                       os.path.join(args.work, f"{model}.opset{opset}.onnx"))
            if line:
                print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
