"""Scratch memory of a traced step's ops: what an op allocates and frees before it returns.

oneDNN's reordered copies of a convolution's input and weight, a batch norm's
temporaries: memopt counts such bytes during the op's step only (the node field
"scratch_bytes", docs/graph-format.md). What torch allocates depends on the
kernel it picks (shapes, thread count, CPU), so it is measured, not guessed:
each fx node runs alone under the profiler, and its scratch is the peak of its
allocations above what it still holds when it returns (its outputs).
"""

import torch
import torch.fx
from torch.autograd import profiler

from memopt.torch._measure import memory_events
from memopt.torch._record import TraceError


def _peak_above_kept(deltas):
    live = peak = 0
    for d in deltas:
        live += d
        peak = max(peak, live)
    return peak - max(live, 0)


class _ScratchMeter(torch.fx.Interpreter):
    def __init__(self, module):
        super().__init__(module)
        self.scratch = {}

    def run_node(self, n):
        with profiler.profile(profile_memory=True) as prof:
            result = super().run_node(n)
        self.scratch[n] = _peak_above_kept(d for _, d in memory_events(prof))
        return result


def scratch_bytes(module, inputs):
    """{fx node: scratch bytes} of one run of `module` (an fx GraphModule taking `inputs` flat)."""
    meter = _ScratchMeter(module)
    with torch.no_grad():
        meter.run(*inputs)
    return {n: b for n, b in meter.scratch.items() if b > 0}


def node_scratch(module, inputs, name_of):
    """{memopt node name: scratch bytes}, name_of mapping fx nodes to memopt names.

    An fx node memopt's graph leaves out (a folded getitem, a view nobody reads)
    must allocate nothing: one that does is an error naming it."""
    scratch = {}
    for fx_node, bytes_ in scratch_bytes(module, inputs).items():
        if fx_node not in name_of:
            raise TraceError(f"fx node {fx_node.name!r} allocates {bytes_} bytes of scratch "
                             "but has no node in memopt's graph")
        scratch[name_of[fx_node]] = bytes_
    return scratch
