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
