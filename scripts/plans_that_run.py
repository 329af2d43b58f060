#!/usr/bin/python3
"""Runs memopt's plans in PyTorch and measures them beside PyTorch's own answers.

    scripts/plans_that_run.py [--models resnet18,mobilenet_v2,encoder,gpt,randwire]
                              [--batch N] [--json FILE]

For each model, a training step (forward, cross-entropy loss, gradients of
every parameter) is traced with memopt.torch and run, on CPU, as:
  * traced: the trace as make_fx recorded it (the reference for outputs and time);
  * program, best: memopt's program order and best order, no recomputation;
  * 1/2, 1/3: memopt.torch.plan at that fraction of the best peak (random draws
    replayed);
and, in the same run, PyTorch's own: the eager step (autograd), the eager step
with torch.utils.checkpoint around every block, and functorch's
min_cut_rematerialization_partition (aot_function, no compiler).
Each cell: memopt's predicted peak and the measured one (the profiler's
allocations during the call, inputs and weights not counted), whether every
output (the loss and every gradient) is bit-identical to the traced step's,
and the wall time over the traced step's, medians of three calls side by side.
Prints a Markdown table; --json writes every figure.
"""

import argparse
import json
import os
import sys
import time

import torch
import torch.nn.functional as F
import torchvision
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "models"))

import memopt.torch as mt  # noqa: E402


class TokenEncoder(nn.Module):
    """Token ids -> nn.TransformerEncoder (dropout 0.1) -> logits over the vocabulary."""

    def __init__(self, vocab=2048, d=256, heads=4, layers=4, seq=128):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(seq, d))
        layer = nn.TransformerEncoderLayer(d, heads, dim_feedforward=4 * d, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        return self.head(self.encoder(self.embed(ids) + self.pos))


def make(name, batch, image=224):
    """(model, inputs, the blocks torch.utils.checkpoint wraps); image: the CNNs' input side."""
    g = torch.Generator().manual_seed(0)
    if name in ("resnet18", "mobilenet_v2"):
        model = getattr(torchvision.models, name)()
        x = torch.randn(batch, 3, image, image, generator=g)
        blocks = ([b for layer in (model.layer1, model.layer2, model.layer3, model.layer4) for b in layer]
                  if name == "resnet18" else list(model.features))
        return model, (x,), blocks
    if name == "encoder":
        model = TokenEncoder()
        return model, (torch.randint(0, 2048, (batch, 128), generator=g),), list(model.encoder.layers)
    if name == "gpt":
        from gpt import gpt
        model, (ids,) = gpt(batch=batch, vocab=4096, seq=128, d=256, heads=4, layers=4, dropout=0.1)
        return model, (ids,), list(model.blocks)
    if name == "randwire":
        from randwire import randwire
        model = randwire(seed=0, channels=32, nodes=16)
        return model, (torch.randn(batch, 3, image, image, generator=g),), list(model.stages)
    raise SystemExit(f"plans_that_run.py: unknown model {name!r}")


def timed(call, seed):
    """Median wall time of three calls, each from the same generator state."""
    times = []
    for _ in range(3):
        torch.manual_seed(seed)
        t0 = time.perf_counter()
        call()
        times.append(time.perf_counter() - t0)
    return sorted(times)[1]


def measured(call, seed):
    """Peak and time of a call, after one call unmeasured (functorch compiles on its first call)."""
    torch.manual_seed(seed)
    call()
    torch.manual_seed(seed)
    return mt.measure(call, (), repeat=1)["peak_bytes"], timed(call, seed)


def eager_step(model, inputs, target, blocks=()):
    """The step as PyTorch runs it: forward (blocks checkpointed), loss, autograd.grad."""
    originals = [b.forward for b in blocks]
    for b in blocks:
        b.forward = (lambda f: lambda *a, **k: torch.utils.checkpoint.checkpoint(f, *a, use_reentrant=False, **k))(
            b.forward)
    params = [p for p in model.parameters() if p.requires_grad]

    def call():
        out = model(*inputs)
        loss = F.cross_entropy(out.reshape(-1, out.shape[-1]) if out.dim() == 3 else out, target.reshape(-1)
                               if out.dim() == 3 else target)
        return (loss,) + torch.autograd.grad(loss, params)
    return call, lambda: [setattr(b, "forward", f) for b, f in zip(blocks, originals)]


def min_cut_step(model, inputs, target):
    from functorch.compile import aot_function, min_cut_rematerialization_partition, nop
    from torch.nn.utils import stateless
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    params = [dict(model.named_parameters())[n] for n in names]
    buffers = dict(model.named_buffers())

    def loss_of(*args):
        ps, xs = args[:len(names)], args[len(names):]
        out = stateless.functional_call(model, {**dict(zip(names, ps)), **buffers}, xs)
        return F.cross_entropy(out.reshape(-1, out.shape[-1]) if out.dim() == 3 else out,
                               target.reshape(-1) if out.dim() == 3 else target)
    compiled = aot_function(loss_of, fw_compiler=nop, bw_compiler=nop, partition_fn=min_cut_rematerialization_partition)

    def call():
        loss = compiled(*params, *inputs)
        return (loss,) + torch.autograd.grad(loss, params)
    return call


def row(name, batch, image=224, baselines=True):
    """One model's figures; baselines: also PyTorch's eager step, checkpoint and min-cut."""
    model, inputs, blocks = make(name, batch, image)
    model.train()
    step = mt.trace(model, inputs, train=True, name=f"{name}_train_b{batch}")
    seed = 1234
    torch.manual_seed(seed)
    reference = step.module(*step.inputs)
    base_time = timed(lambda: step.module(*step.inputs), seed)
    traced_peak, _ = measured(lambda: step.module(*step.inputs), seed)
    out = {"model": name, "batch": batch, "nodes": len(step.document["nodes"]), "traced_peak": traced_peak,
           "traced_seconds": base_time, "plans": {}}
    best_peak = None
    for label, budget, algo in (("program", None, "program"), ("best", None, "best"),
                                ("1/2", 0.5, None), ("1/3", 1 / 3, None)):
        if budget is not None:
            budget = int(budget * best_peak)
        chosen = mt.plan(step, budget, algo=algo or "best")
        if label == "best":
            best_peak = chosen.predicted_peak_bytes
        gm = mt.apply(step, chosen)
        torch.manual_seed(seed)
        same = all(torch.equal(a, b) for a, b in zip(reference, gm(*step.inputs)))
        peak = mt.measure(gm, step.inputs, repeat=1)["peak_bytes"]
        seconds = timed(lambda: gm(*step.inputs), seed)
        out["plans"][label] = {"budget": budget, "predicted": chosen.predicted_peak_bytes, "measured": peak,
                               "fits": chosen.fits, "extra_flops_percent": chosen.extra_flops_percent,
                               "random": chosen.random, "identical": same, "time_ratio": seconds / base_time,
                               "method": chosen.method,
                               "out_of_reach": chosen.rewrite.to_dict().get("out_of_reach") if chosen.rewrite else None}
    if not baselines:
        return out
    target = step.inputs[-1]
    call, restore = eager_step(model, inputs, target)
    out["eager"] = dict(zip(("measured", "seconds"), measured(call, seed)))
    call, restore = eager_step(model, inputs, target, blocks)
    out["checkpoint"] = dict(zip(("measured", "seconds"), measured(call, seed)), blocks=len(blocks))
    restore()
    try:
        out["min_cut"] = dict(zip(("measured", "seconds"), measured(min_cut_step(model, inputs, target), seed)))
    except Exception as e:  # noqa: BLE001 - functorch's partitioner is experimental in torch 1.13: say why it failed
        out["min_cut"] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"}
    return out


def mb(n):
    return f"{n / 2**20:,.1f}"


def markdown(rows):
    lines = ["| model, batch | program: predicted / measured MiB | best | ½: budget: predicted / measured, extra flops, "
             "time | ⅓ | outputs identical | eager | checkpoint per block | min-cut (functorch) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r["plans"]
        cells = [f"{r['model']}, {r['batch']}",
                 f"{mb(p['program']['predicted'])} / {mb(p['program']['measured'])}",
                 f"{mb(p['best']['predicted'])} / {mb(p['best']['measured'])}"]
        for k in ("1/2", "1/3"):
            c = p[k]
            cells.append(f"{mb(c['budget'])}: {mb(c['predicted'])} / {mb(c['measured'])}"
                         f"{'' if c['fits'] else ' (no fit)'}, +{c['extra_flops_percent']:.1f} %, {c['time_ratio']:.2f}×")
        cells.append("yes" if all(c["identical"] for c in p.values()) else "NO")
        for k in ("eager", "checkpoint", "min_cut"):
            c = r[k]
            cells.append(c["error"] if "error" in c else
                         f"{mb(c['measured'])} MiB, {c['seconds'] / r['traced_seconds']:.2f}×")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="resnet18,mobilenet_v2,encoder,gpt,randwire")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--json")
    args = p.parse_args()
    rows = []
    for name in args.models.split(","):
        t0 = time.time()
        rows.append(row(name, args.batch))
        print(f"plans_that_run.py: {name} in {time.time() - t0:.0f} s", file=sys.stderr)
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}, {threads} thread{'' if threads == 1 else 's'}, CPU")
    print(markdown(rows))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
