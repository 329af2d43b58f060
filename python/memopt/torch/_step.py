"""A traced step: the fx module, its inputs, and the memopt graph of what a call allocates.

`trace(model, inputs, train=True)` records the model (forward, and with train
a cross-entropy loss and the gradients of every parameter) at the ATen level.
The memopt graph `Step.graph` is the exporter's graph with the facts of the
call added: the tensors handed to it (inputs, weights) are allocated before it
and held by the caller, so they are persistent; the random draws keep their
traced order (control edges chain them), since each one reads and advances
the same generator; and each op's scratch, measured (_scratch.py).
"""

import copy

import torch

import memopt
from memopt.torch._apply import is_random
from memopt.torch._record import TraceError
from memopt.torch._scratch import node_scratch
from memopt.torch._trace import export_aten


class Step:
    """One traced call: `module(*inputs)` returns what the model step returns.

    module: torch.fx.GraphModule taking its inputs flat (parameters, buffers,
    the model's inputs, and with train the target); graph: the memopt.Graph
    planned for it; document: the memopt-graph/1 dict the exporter writes
    (inputs not persistent, random draws unchained); inputs: the flat tuple;
    device: where the inputs live; scratch: {memopt node: scratch bytes}
    measured (empty when trace was told not to measure)."""

    def __init__(self, recording, document, measure_scratch):
        builder = recording.builder
        self.module = recording.module
        # the step computes its gradients itself: autograd must not record it (nor keep what it saves)
        self.inputs = tuple(t.detach() if isinstance(t, torch.Tensor) else t for t in recording.inputs)
        self.document = document
        self.struct = recording.struct
        kept = {n["name"] for n in document["nodes"]}
        self.origin = {name: n for name, n in builder.origin.items() if name in kept}
        self.name_of = {n: name for name, n in self.origin.items()}
        self.operands = {n["name"]: list(n.get("inputs", [])) for n in document["nodes"]}
        self._param_refs = builder.param_refs
        tensors = [t for t in self.inputs if isinstance(t, torch.Tensor)]
        self.device = tensors[0].device if tensors else torch.device("cpu")
        self.scratch = node_scratch(self.module, self.inputs, self.name_of) if measure_scratch else {}
        self.graph = memopt.Graph.from_json(planning_document(document, self.origin, self.scratch))

    def param_ref(self, tensor):
        ref = self._param_refs.get(id(tensor))
        return ref.ref if ref is not None else None

    @property
    def input_bytes(self):
        """Bytes of the tensors handed to the call (inputs and weights)."""
        return sum(t.numel() * t.element_size() for t in self.inputs if isinstance(t, torch.Tensor))

    def __repr__(self):
        return (f"<memopt.torch.Step {self.document['name']!r}: {len(self.document['nodes'])} nodes, "
                f"{len(self.inputs)} inputs on {self.device}>")


def planning_document(document, origin, scratch):
    """The exporter's graph as a call sees it: inputs persistent, random draws chained, scratch counted."""
    doc = copy.deepcopy(document)
    previous_draw = None
    for node in doc["nodes"]:
        if node["op"] == "input":
            node["persistent"] = True
        if node["name"] in scratch:
            node["scratch_bytes"] = scratch[node["name"]]
        fx_node = origin.get(node["name"])
        if fx_node is not None and is_random(fx_node):
            if previous_draw is not None:
                producers = {r.rsplit(":", 1)[0] for r in node.get("inputs", [])}
                control = node.setdefault("control", [])
                if previous_draw not in producers and previous_draw not in control:
                    control.append(previous_draw)
            previous_draw = node["name"]
    return doc


def trace(model, inputs, train=True, *, seed=0, name=None, scratch=True):
    """Traces `model` on `inputs` (a tensor or a tuple of them) into a Step.

    With train, the step is loss = cross_entropy(model(*inputs), target) and
    torch.autograd.grad(loss, parameters) in train mode, the target drawn from
    `seed` as scripts/export_torch.py draws it; without, the forward in eval mode.
    scratch: run the step once more, node by node, to measure each op's scratch."""
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    inputs = tuple(inputs)
    if not isinstance(model, torch.nn.Module):
        raise TraceError(f"trace takes a torch.nn.Module, not {type(model).__name__}")
    try:
        recording = export_aten(model, inputs, train, seed)
    except memopt.Error:
        raise
    except Exception as e:  # noqa: BLE001 - a failure of torch's tracer, reported as one line
        first = next((line.strip() for line in str(e).splitlines() if line.strip()), type(e).__name__)
        raise TraceError(f"make_fx {'training ' if train else ''}trace failed: {type(e).__name__}: {first}") from e
    label = name or f"{type(model).__name__.lower()}_{'train' if train else 'infer'}"
    source = (f"memopt.torch.trace of {type(model).__module__}.{type(model).__qualname__}, "
              f"{'training step' if train else 'inference'}, torch {torch.__version__}")
    document = recording.builder.finish(recording.outputs, label, source)
    return Step(recording, document, scratch)
