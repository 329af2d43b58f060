"""Scratch memory of the ops of a traced PyTorch program, for memopt-graph/1's "scratch_bytes".

An op may allocate memory that it frees before it returns: oneDNN's reordered
copies of a convolution's input and weight (and of its gradients), a batch
norm backward's temporary of the input's size. memopt counts it during the
op's step only (docs/graph-format.md). What torch allocates depends on the
kernel it picks (oneDNN or not: shapes, thread count, CPU), so the bytes are
measured, not guessed: each fx node is run alone under the profiler, and its
scratch is the peak of the allocations made during the node above what is
still allocated when it returns (its outputs).

    record_scratch(document, module, inputs)   # adds "scratch_bytes" to the document's nodes
"""

import torch
from torch.autograd import profiler


def _peak_above_kept(deltas):
    live = peak = 0
    for d in deltas:
        live += d
        peak = max(peak, live)
    return peak - max(live, 0)


class _ScratchMeter(torch.fx.Interpreter):
    """Runs an fx module node by node, each node under its own memory profile."""

    def __init__(self, module):
        super().__init__(module)
        self.scratch = {}

    def run_node(self, n):
        with profiler.profile(profile_memory=True) as prof:
            result = super().run_node(n)
        events = sorted((e.start_us(), e.nbytes()) for e in prof.kineto_results.events() if e.name() == "[memory]")
        self.scratch[n.name] = _peak_above_kept(d for _, d in events)
        return result


def node_scratch_bytes(module, inputs):
    """{fx node name: scratch bytes} of one run of `module` (a torch.fx.GraphModule taking `inputs` flat)."""
    meter = _ScratchMeter(module)
    with torch.no_grad():
        meter.run(*inputs)
    return meter.scratch


def record_scratch(document, module, inputs, graph_name=lambda fx_name: (fx_name, "gradients/" + fx_name)):
    """Adds "scratch_bytes" to each node of the memopt-graph/1 `document` whose op allocated some.

    graph_name(fx node name) gives the names the node may have in the document
    (the exporter prefixes backward nodes with "gradients/"). An fx node the
    document folded away (getitem, dropped views) must allocate nothing: one
    that did is a ValueError naming it. Returns the total scratch recorded."""
    by_name = {n["name"]: n for n in document["nodes"]}
    total = 0
    for fx_name, bytes_ in node_scratch_bytes(module, inputs).items():
        if bytes_ == 0:
            continue
        node = next((by_name[g] for g in graph_name(fx_name) if g in by_name), None)
        if node is None:
            raise ValueError(f"fx node {fx_name!r} used {bytes_} bytes of scratch but has no node in the graph")
        node["scratch_bytes"] = bytes_
        total += bytes_
    return total
