"""memopt for PyTorch: trace a step, plan its memory, run the plan, measure it.

    import memopt.torch as mt
    step = mt.trace(model, inputs, train=True)  # .module, .graph, .inputs
    plan = mt.plan(step, budget=0.5)            # a fraction of the best peak, or bytes; None: best order only
    gm = mt.apply(step, plan)                   # gm(*step.inputs) returns what step.module returns
    m = mt.measure(gm, step.inputs)             # m["peak_bytes"]: the real peak of the call's allocations

`plan.predicted_peak_bytes` is the peak memopt predicts for what the call
allocates (the inputs and weights handed to it are not in it), the figure
`measure` checks. docs/python.md has the details.
"""

import collections

import memopt
from memopt.torch._apply import build_module, is_random, rng_state
from memopt.torch._measure import measure
from memopt.torch._record import TraceError
from memopt.torch._step import Step, trace

__all__ = ["Plan", "Step", "TraceError", "apply", "fit", "measure", "plan", "trace"]


class Plan:
    """What `plan` decided, as values.

    order: node names in run order (copies included); predicted_peak_bytes;
    budget (bytes, None for the best order alone); fits; extra_flops and
    extra_flops_percent (recomputation); method (the scheduler or planner that
    made it); proved_optimal and lower_bound_bytes (for the order alone: the
    exact scheduler's proof); peak_before (the best order's peak without
    rewriting); random: "replayed" (recomputed draws replay their generator
    state), "kept" (draws are never recomputed) or "none" (no copy draws);
    copies: {copy: original}; rewrite: memopt.rewrite's whole result, or None."""

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def to_dict(self):
        return {k: v for k, v in self.__dict__.items() if k not in ("graph", "rewrite")}

    def __repr__(self):
        budget = "best order" if self.budget is None else f"budget {self.budget:,} B"
        return (f"<memopt.torch.Plan {budget}: predicted peak {self.predicted_peak_bytes:,} B, fits {self.fits}, "
                f"+{self.extra_flops_percent:.2f} % flops, {len(self.copies)} copies, method {self.method!r}>")


def plan(step, budget=None, *, replay_random=True, algo="best", work_limit=None, time_limit=None):
    """A run order for `step`, and with a budget the recomputations that bring its peak under it.

    budget: None (the best order memopt finds, `algo` of memopt.schedulers()),
    a float in (0, 1] (that fraction of the best order's peak) or bytes (an int).
    replay_random: a recomputed random draw replays its generator state (True,
    as torch.utils.checkpoint does) or draws are never recomputed (False)."""
    if not isinstance(step, Step):
        raise TypeError(f"plan takes a memopt.torch.Step, not {type(step).__name__}")
    if budget is None:
        s = memopt.schedule(step.graph, algo=algo, work_limit=work_limit, time_limit=time_limit)
        return Plan(order=list(s.order), predicted_peak_bytes=s.peak_bytes, budget=None, fits=True,
                    extra_flops=0.0, extra_flops_percent=0.0, method=s.method,
                    proved_optimal=s.proved_optimal, lower_bound_bytes=s.lower_bound_bytes,
                    peak_before=s.peak_bytes, random="none", copies={}, graph=step.graph, rewrite=None)
    if isinstance(budget, float):
        if not 0 < budget <= 1:
            raise memopt.Error(f"a fractional budget is in (0, 1], not {budget}")
        best = memopt.schedule(step.graph, algo="best", work_limit=work_limit, time_limit=time_limit)
        budget = int(budget * best.peak_bytes)
    # a replayed draw keeps its generator state until its last copy: leave room for every state at once
    draws = sum(1 for n in step.origin.values() if is_random(n)) if replay_random else 0
    limits = {} if work_limit is None else {"work_limit": work_limit}
    r = memopt.rewrite(step.graph, max(1, budget - draws * _generator_state_bytes(step)),
                       replay_random=replay_random, **limits)
    copies = {n["name"]: n["copy_of"] for n in r.plan["nodes"] if n.get("copy_of")}
    replayed = {o for o in copies.values() if o in step.origin and is_random(step.origin[o])}
    graph, order = r.graph, list(r.order)
    if replayed:
        graph, order = _with_generator_states(step, graph, order, copies, replayed)
    predicted = memopt.peak(graph, order).peak_bytes
    return Plan(order=order, predicted_peak_bytes=predicted, budget=budget, fits=predicted <= budget,
                extra_flops=r.extra_flops, extra_flops_percent=r.extra_flops_percent, method=r.method,
                proved_optimal=r.proved_after, lower_bound_bytes=None, peak_before=r.peak_before,
                random="replayed" if replayed else ("kept" if not replay_random else "none"),
                copies=copies, graph=graph, rewrite=r)


def _generator_state_bytes(step):
    """What saving the generator state costs the step's device: host memory, so nothing on an accelerator."""
    if step.device.type != "cpu":
        return 0
    return sum(t.numel() * t.element_size() for t in rng_state() if t is not None)


def _with_generator_states(step, graph, order, copies, replayed):
    """The plan's graph and order with the generator state each replayed draw keeps.

    apply saves the state right before the original draw and its copies read
    it: a node "<draw>/generator_state" (op "generator_state"), read by every
    copy. On an accelerator the state is host memory and costs the device nothing."""
    state_bytes = _generator_state_bytes(step)
    document = graph.to_json()
    nodes = []
    for node in document["nodes"]:
        if node["name"] in replayed:
            nodes.append({"name": f"{node['name']}/generator_state", "op": "generator_state",
                          "outputs": [state_bytes]})
        if copies.get(node["name"]) in replayed:
            node = dict(node, inputs=list(node.get("inputs", [])) + [f"{copies[node['name']]}/generator_state:0"])
        nodes.append(node)
    document["nodes"] = nodes
    with_states = []
    for name in order:
        if name in replayed:
            with_states.append(f"{name}/generator_state")
        with_states.append(name)
    return memopt.Graph.from_json(document), with_states


def apply(step, plan):
    """The torch.fx.GraphModule that runs `step` as `plan` says; it takes step.inputs and returns what step.module returns."""
    if not isinstance(step, Step) or not isinstance(plan, Plan):
        raise TypeError("apply takes a memopt.torch.Step and a memopt.torch.Plan")
    copies, redirects = {}, collections.defaultdict(dict)
    if plan.rewrite is not None:
        for n in plan.rewrite.plan["nodes"]:
            original = n.get("copy_of")
            replay = original is not None and original in step.origin and is_random(step.origin[original])
            copies[n["name"]] = (original, list(n["inputs"]), replay, n["role"])
        if plan.rewrite.plan.get("changes"):
            raise TraceError("the plan changes ops (accumulation), which memopt.torch cannot run")
        for r in plan.rewrite.plan["redirects"]:
            redirects[r["node"]][r["input"]] = r["from"]
    return build_module(step, plan.order, copies, redirects)


Fit = collections.namedtuple("Fit", "module step plan")


def fit(model, inputs, budget, *, train=True, replay_random=True, work_limit=None):
    """trace, plan and apply in one: a Fit(module, step, plan); module(*step.inputs) runs the step."""
    step = trace(model, inputs, train=train)
    chosen = plan(step, budget, replay_random=replay_random, work_limit=work_limit)
    return Fit(apply(step, chosen), step, chosen)
