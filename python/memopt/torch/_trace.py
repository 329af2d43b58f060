"""Tracing a model into a torch.fx graph and a memopt graph of it.

`fx_trace` (module level, inference), `export_fx` and `export_aten` (ATen level
through make_fx; with train=True one trace of forward, cross-entropy loss and
torch.autograd.grad over the parameters). Each export returns a `Recording`:
the graph builder, the graph outputs, the fx module run, its flat inputs and
what each fx node holds in memopt's terms (a "node:port" reference, a
parameter, a structure of them, or a non-tensor).
"""

import collections
import inspect
import operator
import re

import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch.nn.utils import stateless

from memopt.torch._record import Builder, TraceError, make_recorder, param_maps

Recording = collections.namedtuple("Recording", "builder outputs module inputs struct")


def _input_names(model, n_inputs):
    try:
        params = [p for p in inspect.signature(model.forward).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        names = [p.name for p in params[:n_inputs]]
    except (TypeError, ValueError):
        names = []
    while len(names) < n_inputs:
        names.append(f"x{len(names)}")
    return names


def fx_trace(model):
    try:
        return torch.fx.symbolic_trace(model), None
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().split("\n")[0]
        msg = re.split(r"(?<=[a-z])\. ", msg)[0].rstrip(".")
        return None, msg or type(e).__name__


def needs_aten(gm):
    """True if attention hides inside a leaf module or a wrapped function."""
    for n in gm.graph.nodes:
        if n.op == "call_module":
            mod = gm.get_submodule(n.target)
            if any(True for _ in mod.children()) and type(mod).__module__.startswith("torch.nn"):
                return True
            if "attention" in type(mod).__name__.lower():
                return True
        elif n.op == "call_function":
            name = getattr(n.target, "__name__", "")
            if "attention" in name.lower() and not isinstance(n.target, torch._ops.OpOverload):
                return True
    return False


def export_fx(model, gm, inputs):
    names, buffers = param_maps(model)
    builder = Builder(names, buffers)
    rec = make_recorder(gm, builder, {}, {})
    with torch.no_grad():
        rec.propagate(*inputs)
    return Recording(builder, rec.outputs, gm, tuple(inputs), rec.struct)


def _first_output(out):
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, dict):
        return _first_output(out.get("out", next(iter(out.values()))))
    if isinstance(out, (tuple, list)):
        return _first_output(out[0])
    raise TraceError(f"model output of type {type(out).__name__} has no tensor")


def export_aten(model, inputs, train, seed):
    params = dict(model.named_parameters())
    buffers = {k: v for k, v in model.named_buffers() if v is not None}
    names = _input_names(model, len(inputs))

    if train:
        model.train()
        with torch.no_grad():
            probe = _first_output(model(*inputs))
        # class dimension: 1 for [N, C] logits and dense [N, C, H, W...] outputs, the last
        # one for token models' [N, L, V]; the target holds one class id per prediction
        if probe.dim() == 3:
            classes, tshape = probe.shape[-1], list(probe.shape[:-1])
        elif probe.dim() >= 2:
            classes, tshape = probe.shape[1], [probe.shape[0]] + list(probe.shape[2:])
        else:
            raise TraceError(f"model output of shape {list(probe.shape)} has no class dimension")
        torch.manual_seed(seed + 1)
        target = torch.randint(0, classes, tshape, dtype=torch.int64)
        grad_params = [k for k, v in params.items() if v.requires_grad]

        def step(params, buffers, *args):
            x, target = args[:-1], args[-1]
            out = _first_output(stateless.functional_call(model, {**params, **buffers}, x))
            if out.dim() == 3:
                loss = F.cross_entropy(out.reshape(-1, out.shape[-1]), target.reshape(-1))
            else:
                loss = F.cross_entropy(out, target)
            grads = torch.autograd.grad(loss, [params[k] for k in grad_params], allow_unused=True)
            return (loss,) + tuple(g for g in grads if g is not None)

        torch.manual_seed(seed + 2)
        gm = make_fx(step)(params, buffers, *inputs, target)
        run_inputs = list(params.values()) + list(buffers.values()) + list(inputs) + [target]
        names = names + ["target"]
    else:
        model.eval()

        def fwd(params, buffers, *args):
            return stateless.functional_call(model, {**params, **buffers}, args)

        gm = make_fx(fwd)(params, buffers, *inputs)
        run_inputs = list(params.values()) + list(buffers.values()) + list(inputs)

    qual = list(params.keys()) + list(buffers.keys())
    placeholder_params = {i: q for i, q in enumerate(qual)}
    placeholder_names = {len(qual) + i: nm for i, nm in enumerate(names)}
    pnames, pbuffers = param_maps(model)
    builder = Builder(pnames, pbuffers)

    loss_node = None
    if train:
        builder.phase = "forward"
        out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
        loss_node = out_node.args[0][0]
        # the node producing the loss (through a folded getitem)
        while loss_node.op == "call_function" and loss_node.target is operator.getitem:
            loss_node = loss_node.args[0]

    rec = make_recorder(gm, builder, placeholder_names, placeholder_params, loss_node)
    with torch.no_grad():
        rec.propagate(*run_inputs)
    # the module takes its inputs flat, as the recorder ran it
    gm.graph._codegen = torch.fx.graph.CodeGen()
    gm.recompile()
    return Recording(builder, rec.outputs, gm, tuple(run_inputs), rec.struct)
