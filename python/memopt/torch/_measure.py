"""What a call really allocates: `measure(module, inputs)`.

On CPU the profiler's memory events (every allocation and free during the
call, in time order); on CUDA torch.cuda.max_memory_allocated. The peak is
counted from what was allocated when the call began, so the inputs handed to
it are not in it, and the outputs it returns are. With per_node, a second run
through an fx Interpreter names the node each allocation happened in.
"""

import bisect
import statistics
import time

import torch
import torch.fx
from torch.autograd import DeviceType, profiler


def memory_events(prof):
    """(start_us, bytes) of every allocation (+) and free (-), in the order they happened."""
    events = [e for e in prof.kineto_results.events() if e.name() == "[memory]" and e.device_type() == DeviceType.CPU]
    # the list is in recording order per thread; a stable sort by time keeps it within a microsecond
    events.sort(key=lambda e: e.start_us())
    return [(e.start_us(), e.nbytes()) for e in events]


def _peak(deltas):
    live = peak = 0
    for d in deltas:
        live += d
        peak = max(peak, live)
    return peak


def _cpu_peak(call):
    with profiler.profile(profile_memory=True) as prof:
        result = call()
    return _peak(d for _, d in memory_events(prof)), result


def _cuda_peak(call, device):
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    base = torch.cuda.memory_allocated(device)
    result = call()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - base, result


class _NamedRanges(torch.fx.Interpreter):
    """Runs each node inside a profiler range named after it.

    The range is opened through the profiler op that returns a handle object:
    record_function's own handle is a tensor, an allocation in every range."""

    def run_node(self, n):
        handle = torch.ops.profiler._record_function_enter_new("memopt::" + n.name, None)
        try:
            return super().run_node(n)
        finally:
            torch.ops.profiler._record_function_exit._RecordFunction(handle)


def _per_node(module, inputs):
    with profiler.profile(profile_memory=True) as prof:
        _NamedRanges(module).run(*inputs)
    ranges = sorted((e.start_us(), e.start_us() + e.duration_us(), e.name()[len("memopt::"):])
                    for e in prof.kineto_results.events() if e.name().startswith("memopt::"))
    starts = [r[0] for r in ranges]
    rows = {name: {"node": name, "allocated_bytes": 0, "freed_bytes": 0, "live_bytes": 0, "peak_bytes": 0}
            for _, _, name in ranges}
    live = 0
    for at, delta in memory_events(prof):
        live += delta
        i = bisect.bisect_right(starts, at) - 1
        if i < 0 or at > ranges[i][1]:
            continue
        row = rows[ranges[i][2]]
        row["allocated_bytes" if delta > 0 else "freed_bytes"] += abs(delta)
        row["live_bytes"] = live
        row["peak_bytes"] = max(row["peak_bytes"], live)
        row["touched"] = True
    # a node without memory events leaves what was live before it
    live = 0
    for _, _, name in ranges:
        row = rows[name]
        if not row.pop("touched", False):
            row["live_bytes"] = row["peak_bytes"] = live
        live = row["live_bytes"]
    return [rows[name] for _, _, name in ranges]


def measure(module, inputs, *, per_node=False, repeat=3):
    """The real peak of what `module(*inputs)` allocates, and its wall time.

    Returns a dict: peak_bytes, device, seconds (median wall time of `repeat`
    calls without the profiler), and with per_node a list "nodes" of
    {node, allocated_bytes, freed_bytes, live_bytes (allocated since the call
    began, at the node's last event), peak_bytes (the most live during the
    node)} in run order (fx modules only)."""
    inputs = tuple(inputs)
    tensors = [t for t in inputs if isinstance(t, torch.Tensor)]
    device = tensors[0].device if tensors else torch.device("cpu")
    call = lambda: module(*inputs)  # noqa: E731
    if device.type == "cuda":
        peak, _ = _cuda_peak(call, device)
    else:
        peak, _ = _cpu_peak(call)
    times = []
    for _ in range(max(1, repeat)):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t0 = time.perf_counter()
        call()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - t0)
    out = {"peak_bytes": int(peak), "device": str(device), "seconds": statistics.median(times)}
    if per_node:
        if device.type == "cuda":
            raise ValueError("per-node allocations are measured on CPU only")
        if not isinstance(module, torch.fx.GraphModule):
            raise TypeError("per-node allocations need a torch.fx.GraphModule")
        out["nodes"] = _per_node(module, inputs)
    return out
