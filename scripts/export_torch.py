#!/usr/bin/python3
"""Export a PyTorch model as a memopt-graph/1 JSON graph (and optionally ONNX).

Usage:
  scripts/export_torch.py MODEL [--train] [--batch N] [--output FILE]
                          [--onnx FILE [--onnx-weights]] [--input-shape 3,224,224]
                          [--seed S] [--tracer auto|fx|aten] [--model-arg KEY=VALUE ...]

MODEL is either
  * a torchvision model name (resnet18, mobilenet_v2, vit_b_16, ... anything in
    torchvision.models), built with weights=None, or
  * "module:callable", where module is a dotted importable module or the path of
    a .py file (e.g. scripts/models/cell_stacks.py:nasnet_a).  The callable
    returns an nn.Module, or a tuple (module, example_inputs_tuple).  If it has
    a parameter `batch` (or `batch_size`), a given --batch is passed to it.
--model-arg KEY=VALUE (repeatable) passes keyword arguments to the model
constructor / callable (VALUE is a Python literal, else a string).

Default input: float32 [N,3,224,224] (inception_v3: 299x299); --input-shape
replaces the per-sample shape (without the batch dimension).  Inputs returned by
a callable are used as they are.

Graph (memopt-graph/1, see docs/graph-format.md), produced exactly as the
shipped graphs were (examples/data/README.md, "How the graphs were made"):
  * inference, tracer fx (default): torch.fx.symbolic_trace + ShapeProp in
    eval mode; torch.nn leaf modules are one node each, their parameters and
    buffers are "op": "parameter" persistent nodes emitted just before their
    first reader and listed after the data operands.
  * inference, tracer aten: make_fx (ATen level) over functional_call, grad
    mode on.  Chosen automatically when symbolic_trace fails, for torchvision
    vit_*/swin_*/maxvit_* (attention inside leaf modules or fx.wrap'ped
    functions) and when the fx graph contains a composite torch.nn leaf module
    (nn.MultiheadAttention, nn.TransformerEncoder[Layer], ...) or a wrapped
    "*attention*" function.  --tracer fx|aten forces one.
  * --train: one make_fx trace of loss = cross_entropy(model(x), target) and
    torch.autograd.grad(loss, params) in train mode; backward nodes are named
    gradients/<node>, attrs.phase is forward/backward, top-level outputs are
    the loss then one gradient per parameter.  Inputs are x and target (int64
    class ids sized from the model output: [N] for [N,C] logits, [N,H,W] for
    dense [N,C,H,W] outputs, [N,L] for token models' [N,L,V] logits, which are
    flattened to [N*L,V] for the loss).  A tuple/namedtuple/dict output uses
    its first tensor (.logits, ["out"]).
Sizes are numel * element_size; aliasing (views / in-place results, found by
storage sharing during the ShapeProp run) is recorded in attrs.alias with
attrs.view or attrs.inplace; flops use the README formula.
Details that the shipped graphs (examples/data/*.json) pin down, and this script
reproduces byte for byte for every torchvision file there:
  * an output that is the very input object (ReLU(inplace=True), eval Dropout,
    Identity, x += y, ATen ops writing an argument) is inplace, another tensor
    on an input's storage is a view; a multi-output node lists one source per
    port (null if it owns its storage) without view/inplace flags; an alias of
    a persistent tensor is persistent;
  * outputs that are None or have no elements get no port (ports are numbered
    over the remaining tensors); non-tensor results give "outputs": [] and
    their readers a control edge;
  * unread view nodes and unread nodes without outputs (batch norm's empty
    reserve, _assert) are dropped; unread in-place nodes stay;
  * flops: pooling out_numel * window only for nn pooling modules (functional
    and ATen pooling take the generic rule); batch norm 4 * numel only for
    nn.BatchNorm*/F.batch_norm; convolution_backward = forward flops times the
    number of requested gradients (output_mask); views omit "flops".

Output: --output FILE (gzip if FILE ends in .gz); default <name>.json in the
current directory, name = <model>_<infer|train>_b<N>.  If --onnx is given
without --output, only the ONNX file is written.

ONNX (--onnx FILE): torch.onnx.export of the model in eval mode, opset 13,
training=TrainingMode.PRESERVE (BatchNormalization is kept, not fused into
Conv), do_constant_folding=False, fixed batch size, input "x" (x0, x1, ... for
several inputs), output "y".  Without --onnx-weights the file is graph-only:
every initializer keeps name, dims and data_type but its data is declared as
external data in "<stem>.weights" (offset/length) which is NOT written, so the
file stays small and is enough for shape-only readers.  --onnx-weights writes
a normal self-contained model.  The result is checked with onnx.checker and
onnx.shape_inference (all value shapes static).

Errors (unknown model, bad module:callable, trace or export failure) print one
line on stderr and exit with status 1.

Use Debian's /usr/bin/python3 (torch 1.13, torchvision 0.14, onnx 1.12).
"""

import argparse
import ast
import gzip
import importlib
import importlib.util
import inspect
import io
import json
import math
import operator
import os
import re
import sys
import time


class ExportError(Exception):
    """An error reported to the user as one line on stderr (exit status 1)."""


# --------------------------------------------------------------------------
# model loading

def _literal(text):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_model_args(items):
    kwargs = {}
    for item in items or []:
        if "=" not in item:
            raise ExportError(f"--model-arg expects KEY=VALUE, got {item!r}")
        key, value = item.split("=", 1)
        kwargs[key.strip()] = _literal(value.strip())
    return kwargs


def _import_user_module(spec):
    if spec.endswith(".py") or os.sep in spec or "/" in spec:
        path = os.path.abspath(spec)
        if not os.path.isfile(path):
            raise ExportError(f"model module file not found: {spec}")
        directory = os.path.dirname(path)
        if directory not in sys.path:
            sys.path.insert(0, directory)
        name = "_export_user_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
        module_spec = importlib.util.spec_from_file_location(name, path)
        if module_spec is None or module_spec.loader is None:
            raise ExportError(f"cannot import {spec}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as e:  # noqa: BLE001 - reported to the user
            raise ExportError(f"cannot import {spec}: {type(e).__name__}: {e}") from e
        return module
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return importlib.import_module(spec)
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"cannot import module {spec!r}: {type(e).__name__}: {e}") from e


def _has_param(fn, name):
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def load_model(spec, batch, input_shape, model_kwargs):
    """Returns (module, inputs tuple, model description, short name)."""
    import torch
    import torchvision

    if ":" in spec and not re.match(r"^[A-Za-z]:[\\/]", spec):
        mod_spec, _, attr = spec.rpartition(":")
        if not mod_spec or not attr:
            raise ExportError(f"bad model spec {spec!r}: expected module:callable")
        module = _import_user_module(mod_spec)
        fn = module
        for part in attr.split("."):
            if not hasattr(fn, part):
                raise ExportError(f"{mod_spec} has no attribute {attr!r}")
            fn = getattr(fn, part)
        if not callable(fn):
            raise ExportError(f"{spec} is not callable")
        kwargs = dict(model_kwargs)
        for key in ("batch", "batch_size"):
            if batch is not None and key not in kwargs and _has_param(fn, key):
                kwargs[key] = batch
        try:
            made = fn(**kwargs)
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"{spec} failed: {type(e).__name__}: {e}") from e
        inputs = None
        if isinstance(made, tuple):
            if len(made) != 2 or not isinstance(made[0], torch.nn.Module):
                raise ExportError(f"{spec} must return an nn.Module or (module, example_inputs)")
            made, inputs = made
            if isinstance(inputs, torch.Tensor):
                inputs = (inputs,)
            inputs = tuple(inputs)
        if not isinstance(made, torch.nn.Module):
            raise ExportError(f"{spec} returned {type(made).__name__}, not an nn.Module")
        args = ", ".join(f"{k}={v!r}" for k, v in model_kwargs.items())
        doc = (inspect.getdoc(fn) or "").strip().splitlines()
        desc = f"{spec}({args})" + (f" [{doc[0].rstrip('.')}]" if doc and doc[0] else "")
        short = attr.split(".")[-1]
        if inputs is None:
            shape = list(input_shape) if input_shape else [3, 224, 224]
            inputs = (torch.randn([batch or 1] + shape),)
        return made, inputs, desc, short

    name = spec
    builders = torchvision.models
    fn = getattr(builders, name, None)
    if fn is None or not callable(fn) or name.startswith("_") or not name[:1].islower() \
            or inspect.ismodule(fn):
        try:
            fn = torchvision.models.get_model_builder(name)
        except Exception:  # noqa: BLE001
            raise ExportError(f"unknown model {name!r}: not a torchvision.models name and not module:callable")
    try:
        made = fn(weights=None, **model_kwargs)
    except TypeError:
        try:
            made = fn(pretrained=False, **model_kwargs)
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"cannot build torchvision model {name!r}: {type(e).__name__}: {e}") from e
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"cannot build torchvision model {name!r}: {type(e).__name__}: {e}") from e
    if not isinstance(made, torch.nn.Module):
        raise ExportError(f"torchvision.models.{name} is not a model builder")
    if input_shape:
        shape = list(input_shape)
    elif name == "inception_v3":
        shape = [3, 299, 299]
    else:
        shape = [3, 224, 224]
    inputs = (torch.randn([batch or 1] + shape),)
    args = "".join(f", {k}={v!r}" for k, v in model_kwargs.items())
    return made, inputs, f"torchvision.models.{name}(weights=None{args})", name


# --------------------------------------------------------------------------
# graph building

def snake(name):
    """Module class name -> op name: Conv2d -> conv2d, BatchNorm2d -> batch_norm2d, ReLU6 -> relu6."""
    out = []
    for i, c in enumerate(name):
        if c.isupper() and 0 < i < len(name) - 1 and (name[i - 1].islower() or name[i - 1].isdigit()) \
                and name[i + 1].islower():
            out.append("_")
        out.append(c.lower())
    return "".join(out)


class Ref:
    """A tensor port "name:port"."""
    __slots__ = ("ref",)

    def __init__(self, ref):
        self.ref = ref


class Ctrl:
    """A non-tensor value (or a None / zero-element output) of node `name`."""
    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name


class LazyParam:
    """A get_attr tensor, emitted as a parameter node before its first reader."""
    __slots__ = ("tensor", "name")

    def __init__(self, tensor, name):
        self.tensor = tensor
        self.name = name


def _storage_ptr(t):
    try:
        return t._storage().data_ptr()  # torch 1.13
    except AttributeError:
        return t.untyped_storage().data_ptr()


def _dtype_name(dtype):
    return str(dtype).replace("torch.", "")


def _numel(t):
    return t.numel()


_POOL_RE = re.compile(r"^(adaptive_)?(max|avg|lp)_pool([123])d$")
_BN_OPS = {"batch_norm", "batch_norm1d", "batch_norm2d", "batch_norm3d", "sync_batch_norm"}
_CONV_OPS = {"conv1d", "conv2d", "conv3d", "convolution", "_convolution",
             "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"}
_MATMUL_OPS = {"mm", "bmm", "matmul", "addmm", "baddbmm", "addbmm", "addmv", "mv"}
# ops that are pure views whatever their runtime storage says (only used when the
# storage test finds no sharing, e.g. zero-size tensors): none; storage decides.


def _prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


def _arg(args, kwargs, index, key, default=None):
    if len(args) > index:
        return args[index]
    return kwargs.get(key, default)


def _as_tuple(v, d):
    if isinstance(v, (list, tuple)):
        return tuple(int(x) for x in v)
    return (int(v),) * d


def estimate_flops(op, module, args, kwargs, in_tensors, out_tensors):
    """The README's flops formula (views are handled by the caller)."""
    import torch
    out_numel = sum(t.numel() for t in out_tensors)
    first_out = out_tensors[0].numel() if out_tensors else 0
    if op in _CONV_OPS:
        weight = module.weight if module is not None else _arg(args, kwargs, 1, "weight")
        transposed = op.startswith("conv_transpose") or (
            op in ("convolution", "_convolution") and bool(_arg(args, kwargs, 6, "transposed", False)))
        if isinstance(weight, torch.Tensor):
            inp = in_tensors[0] if in_tensors else None
            if transposed and inp is not None:
                return 2.0 * inp.numel() * _prod(weight.shape[1:])
            return 2.0 * first_out * _prod(weight.shape[1:])
    if op == "convolution_backward":
        grad_out = _arg(args, kwargs, 0, "grad_output")
        inp = _arg(args, kwargs, 1, "input")
        weight = _arg(args, kwargs, 2, "weight")
        # convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
        #                      dilation, transposed, output_padding, groups, output_mask)
        transposed = bool(_arg(args, kwargs, 7, "transposed", False))
        mask = _arg(args, kwargs, 10, "output_mask", [True, True, True])
        if isinstance(weight, torch.Tensor) and isinstance(grad_out, torch.Tensor):
            numel = inp.numel() if transposed and isinstance(inp, torch.Tensor) else grad_out.numel()
            forward = 2.0 * numel * _prod(weight.shape[1:])
            return forward * sum(1 for m in mask if m)
    if op == "linear":
        weight = module.weight if module is not None else _arg(args, kwargs, 1, "weight")
        if isinstance(weight, torch.Tensor):
            k = weight.shape[-1] if weight.dim() > 0 else 1
            return 2.0 * first_out * k
    if op in _MATMUL_OPS:
        a = _arg(args, kwargs, 1, "mat1") if op in ("addmm", "baddbmm", "addbmm", "addmv") else _arg(args, kwargs, 0, "input")
        if isinstance(a, torch.Tensor) and a.dim() > 0:
            return 2.0 * first_out * a.shape[-1]
    if op in _BN_OPS:
        return 4.0 * first_out
    # pooling: module calls only (nn.MaxPool2d, nn.AdaptiveAvgPool2d, ...); the
    # functional / ATen forms (F.max_pool2d, avg_pool2d, max_pool2d_with_indices)
    # take the generic rule below, as in the shipped graphs (inception_v3, resnet18 train)
    m = _POOL_RE.match(op) if module is not None else None
    if m and out_tensors:
        d = int(m.group(3))
        if m.group(1):  # adaptive: window = input extent / output extent per spatial dim
            inp = in_tensors[0] if in_tensors else None
            if inp is not None and inp.dim() >= d:
                window = _prod(math.ceil(i / max(o, 1)) for i, o in
                               zip(inp.shape[-d:], out_tensors[0].shape[-d:]))
                return float(first_out * window)
        else:
            k = getattr(module, "kernel_size", None)
            if k is not None:
                return float(first_out * _prod(_as_tuple(k, d)))
    in_numel = sum(t.numel() for t in in_tensors)
    return float(max(in_numel, out_numel))


class Builder:
    """Collects memopt-graph nodes while an fx Interpreter runs the graph."""

    def __init__(self, param_names, buffer_ids, phase_split=False):
        self.nodes = []            # node dicts in program order
        self.by_name = {}
        self.param_names = param_names  # id(tensor) -> qualified name
        self.buffer_ids = buffer_ids    # ids of buffers (kind "buffer")
        self.param_refs = {}       # id(tensor) -> Ref of its emitted parameter node
        self.keep_alive = []       # tensors whose ids are used as keys
        self.persistent = set()    # names of persistent nodes
        self.phase = None          # "forward" / "backward" when tracing a training step

    # --- emission
    def add(self, node):
        if node["name"] in self.by_name:
            raise ExportError(f"duplicate node name {node['name']!r}")
        self.nodes.append(node)
        self.by_name[node["name"]] = node
        if node.get("persistent"):
            self.persistent.add(node["name"])
        return node

    @staticmethod
    def tensor_attrs(tensors):
        if len(tensors) == 1:
            return {"shape": list(tensors[0].shape), "dtype": _dtype_name(tensors[0].dtype)}
        return {"shapes": [list(t.shape) for t in tensors], "dtypes": [_dtype_name(t.dtype) for t in tensors]}

    def param(self, tensor, name=None):
        """Ref of the parameter node of `tensor`, emitting it now if needed."""
        key = id(tensor)
        if key in self.param_refs:
            return self.param_refs[key]
        qual = self.param_names.get(key, name)
        if qual is None:
            qual = f"_param_{len(self.param_refs)}"
        base, k = qual, 1
        while qual in self.by_name:
            qual = f"{base}_{k}"
            k += 1
        attrs = self.tensor_attrs([tensor])
        import torch
        if key in self.buffer_ids or not isinstance(tensor, torch.nn.Parameter):
            attrs["kind"] = "buffer"
        self.add({"name": qual, "op": "parameter", "outputs": [tensor.numel() * tensor.element_size()],
                  "persistent": True, "attrs": attrs})
        self.keep_alive.append(tensor)
        ref = Ref(qual + ":0")
        self.param_refs[key] = ref
        return ref

    def input(self, name, value):
        import torch
        if isinstance(value, torch.Tensor):
            self.add({"name": name, "op": "input", "outputs": [value.numel() * value.element_size()],
                      "attrs": self.tensor_attrs([value])})
            return Ref(name + ":0")
        self.add({"name": name, "op": "input", "outputs": []})
        return Ctrl(name)

    # --- structures
    def flatten_pair(self, struct, value, out):
        """Walks a node's struct and runtime value together; appends (leaf, value) pairs."""
        if isinstance(struct, (tuple, list)):
            vals = value if isinstance(value, (tuple, list)) else [None] * len(struct)
            for s, v in zip(struct, vals):
                self.flatten_pair(s, v, out)
        elif isinstance(struct, dict):
            for k, s in struct.items():
                self.flatten_pair(s, value.get(k) if isinstance(value, dict) else None, out)
        elif struct is not None:
            out.append((struct, value))

    def op_node(self, name, op, target, arg_pairs, extra_params, result, *, module=None,
                args=(), kwargs=None, schema_inplace=frozenset()):
        """Emits one op node; returns the struct describing its result."""
        import torch
        kwargs = kwargs or {}
        inputs, in_tensors, control = [], [], []
        for leaf, value in arg_pairs:
            if isinstance(leaf, LazyParam):
                ref = self.param(leaf.tensor, leaf.name)
                inputs.append(ref.ref)
                in_tensors.append(leaf.tensor)
            elif isinstance(leaf, Ref):
                inputs.append(leaf.ref)
                in_tensors.append(value)
            elif isinstance(leaf, Ctrl):
                if leaf.name not in control:
                    control.append(leaf.name)
        for tensor in extra_params:
            inputs.append(self.param(tensor).ref)
            in_tensors.append(tensor)
        data_producers = {r.rsplit(":", 1)[0] for r in inputs}
        control = [c for c in control if c not in data_producers]

        # outputs: tensor leaves with elements get ports
        ports = []

        def walk(v):
            if isinstance(v, torch.Tensor):
                if v.numel() > 0:
                    ports.append(v)
                    return Ref(f"{name}:{len(ports) - 1}")
                return Ctrl(name)
            if isinstance(v, (tuple, list)) and not isinstance(v, torch.Size):
                return type(v)(walk(x) for x in v) if not hasattr(v, "_fields") else tuple(walk(x) for x in v)
            if isinstance(v, dict):
                return {k: walk(x) for k, x in v.items()}
            return Ctrl(name)

        struct = walk(result)
        node = {"name": name, "op": op, "inputs": inputs}
        if control:
            node["control"] = control
        node["outputs"] = [t.numel() * t.element_size() for t in ports]

        # aliasing: an output sharing storage with an input of this node
        aliases, view, inplace, persistent = [], False, False, bool(ports)
        in_ptrs = []
        for ref, t in zip(inputs, in_tensors):
            if isinstance(t, torch.Tensor) and t.numel() > 0:
                in_ptrs.append((ref, t, _storage_ptr(t)))
        for k, t in enumerate(ports):
            src = None
            ptr = _storage_ptr(t)
            same = [(ref, it) for ref, it, p in in_ptrs if it is t]
            if same:
                src, inplace = same[0][0], True
            else:
                for ref, it, p in in_ptrs:
                    if p == ptr and ptr != 0:
                        src = ref
                        if k in schema_inplace:
                            inplace = True
                        else:
                            view = True
                        break
            aliases.append(src)
            if src is None or src.rsplit(":", 1)[0] not in self.persistent:
                persistent = False
        is_view_only = bool(ports) and view and not inplace and all(a is not None for a in aliases)

        if ports:
            flops = 0.0 if is_view_only else estimate_flops(op, module, args, kwargs, in_tensors, ports)
            if flops:
                node["flops"] = float(flops)
        if persistent:
            node["persistent"] = True
        attrs = self.tensor_attrs(ports) if ports else {}
        if any(a is not None for a in aliases):
            if len(ports) == 1:
                attrs["alias"] = aliases[0]
                if view:
                    attrs["view"] = True
                if inplace:
                    attrs["inplace"] = True
            else:
                # one source per port (null: owns its storage), no flags (as split
                # has in the shipped graphs)
                attrs["alias"] = aliases
        if self.phase:
            attrs["phase"] = self.phase
        attrs["target"] = target
        node["attrs"] = attrs
        self.add(node)
        if persistent:
            self.keep_alive.append(result)
        return struct

    # --- finishing
    def finish(self, outputs, name, source):
        # drop view nodes nobody reads (e.g. autograd's detach of saved tensors)
        # and nodes without outputs nobody reads (e.g. the empty reserve tensor of
        # batch norm, an _assert), repeatedly
        out_names = {o.rsplit(":", 1)[0] for o in outputs}
        while True:
            read = set(out_names)
            for n in self.nodes:
                read.update(r.rsplit(":", 1)[0] for r in n.get("inputs", []))
                read.update(n.get("control", []))
            drop = [n for n in self.nodes
                    if n["name"] not in read and n["op"] not in ("input", "parameter")
                    and (not n["outputs"]
                         or (n.get("attrs", {}).get("view") and not n["attrs"].get("inplace")))]
            if not drop:
                break
            gone = {n["name"] for n in drop}
            self.nodes = [n for n in self.nodes if n["name"] not in gone]
        return {"format": "memopt-graph/1", "name": name, "source": source,
                "nodes": self.nodes, "outputs": list(outputs)}


def _module_params(mod):
    tensors, seen = [], set()
    for _, p in mod.named_parameters():
        if id(p) not in seen:
            seen.add(id(p))
            tensors.append(p)
    for _, b in mod.named_buffers():
        if b is not None and id(b) not in seen:
            seen.add(id(b))
            tensors.append(b)
    return tensors


def _qualified_target(target):
    from torch.fx.node import _get_qualified_name
    try:
        return _get_qualified_name(target)
    except Exception:  # noqa: BLE001
        return getattr(target, "__name__", str(target))


def _make_recorder(gm, builder, placeholder_names, placeholder_params, loss_node=None):
    """An fx Interpreter (ShapeProp) that emits graph nodes as it runs.

    Node by node, with the real tensors at hand: shapes (node.meta["tensor_meta"] as
    ShapeProp stores them), sizes, flops and aliasing (storage shared with an input of
    the same node, which is alive at that moment).  Values are freed after their last
    use as in any fx Interpreter, so the memory high-water mark is the model's own."""
    import torch
    from torch.fx.passes.shape_prop import ShapeProp, _extract_tensor_metadata
    from torch.fx.node import map_arg, map_aggregate

    class Recorder(ShapeProp):
        def __init__(self, module):
            super().__init__(module)
            self.struct = {}
            self.outputs = []
            self.placeholder_index = 0

        def run_node(self, n):
            args, kwargs = self.fetch_args_kwargs_from_env(n)
            # ShapeProp.run_node without its traceback print on failure
            result = torch.fx.Interpreter.run_node(self, n)
            found = []

            def meta(obj):
                if isinstance(obj, torch.Tensor):
                    found.append(True)
                    return _extract_tensor_metadata(obj)
                return obj
            tensor_meta = map_aggregate(result, meta)
            if found:
                n.meta["tensor_meta"] = tensor_meta
            n.meta["type"] = type(result)
            self.record(n, args, kwargs, result)
            return result

        def arg_pairs(self, n):
            nodes = []
            map_arg(n.args, lambda a: nodes.append(a))
            map_arg(n.kwargs, lambda a: nodes.append(a))
            pairs = []
            for a in nodes:
                builder.flatten_pair(self.struct[a], self.env.get(a), pairs)
            return pairs

        def record(self, n, args, kwargs, result):
            if n.op == "placeholder":
                i = self.placeholder_index
                self.placeholder_index += 1
                if i in placeholder_params:
                    self.struct[n] = builder.param(result, placeholder_params[i])
                else:
                    self.struct[n] = builder.input(placeholder_names.get(i, n.name), result)
                return
            if n.op == "get_attr":
                if isinstance(result, torch.Tensor):
                    self.struct[n] = LazyParam(result, n.target)
                    builder.keep_alive.append(result)
                else:
                    self.struct[n] = Ctrl(n.name)
                return
            if n.op == "output":
                pairs = []
                map_arg(n.args, lambda a: builder.flatten_pair(self.struct[a], self.env.get(a), pairs))
                for leaf, _ in pairs:
                    if isinstance(leaf, LazyParam):
                        leaf = builder.param(leaf.tensor, leaf.name)
                    if isinstance(leaf, Ref):
                        self.outputs.append(leaf.ref)
                return
            # getitem picking an element of a multi-output node: fold into node:port
            if n.op == "call_function" and n.target is operator.getitem and isinstance(n.args[0], torch.fx.Node):
                src = self.struct[n.args[0]]
                if isinstance(src, (tuple, list, dict)) and _has_ref(src):
                    try:
                        self.struct[n] = src[n.args[1]]
                        return
                    except (IndexError, KeyError, TypeError):
                        pass
            # getattr of a field of a namedtuple output (e.g. InceptionOutputs.logits): fold too
            if n.op == "call_function" and n.target is getattr and isinstance(n.args[0], torch.fx.Node):
                src, value = self.struct[n.args[0]], self.env.get(n.args[0])
                fields = getattr(value, "_fields", None)
                if isinstance(src, tuple) and fields and n.args[1] in fields and _has_ref(src):
                    self.struct[n] = src[fields.index(n.args[1])]
                    return
            module, extra, schema_inplace = None, [], frozenset()
            if n.op == "call_module":
                module = gm.get_submodule(n.target)
                cls = type(module)
                op = snake(cls.__name__)
                target = f"module:{cls.__module__}.{cls.__qualname__}"
                extra = _module_params(module)
            elif n.op == "call_method":
                op = n.target
                target = f"method:Tensor.{n.target}"
            else:
                t = n.target
                if isinstance(t, torch._ops.OpOverload):
                    op = t.overloadpacket.__name__
                    target = str(t)
                    schema_inplace = frozenset(
                        i for i, r in enumerate(t._schema.returns)
                        if r.alias_info is not None and r.alias_info.is_write)
                else:
                    op = getattr(t, "__name__", str(t))
                    target = _qualified_target(t)
            # training step: every node traced after the loss is backward
            name = "gradients/" + n.name if builder.phase == "backward" else n.name
            self.struct[n] = builder.op_node(
                name, op, target, self.arg_pairs(n), extra, result, module=module,
                args=args, kwargs=kwargs, schema_inplace=schema_inplace)
            if n is loss_node:
                builder.phase = "backward"

    return Recorder(gm)


def _has_ref(struct):
    if isinstance(struct, (Ref, LazyParam)):
        return True
    if isinstance(struct, (tuple, list)):
        return any(_has_ref(s) for s in struct)
    if isinstance(struct, dict):
        return any(_has_ref(s) for s in struct.values())
    return False


def _param_maps(model):
    names, buffers = {}, set()
    for qual, p in model.named_parameters():
        names.setdefault(id(p), qual)
    for qual, b in model.named_buffers():
        if b is not None:
            names.setdefault(id(b), qual)
            buffers.add(id(b))
    return names, buffers


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


# --------------------------------------------------------------------------
# tracers

def fx_trace(model):
    import torch
    try:
        return torch.fx.symbolic_trace(model), None
    except Exception as e:  # noqa: BLE001
        msg = str(e).strip().split("\n")[0]
        msg = re.split(r"(?<=[a-z])\. ", msg)[0].rstrip(".")
        return None, msg or type(e).__name__


def needs_aten(gm):
    """True if attention hides inside a leaf module or a wrapped function."""
    import torch
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
    import torch
    names, buffers = _param_maps(model)
    builder = Builder(names, buffers)
    rec = _make_recorder(gm, builder, {}, {})
    with torch.no_grad():
        rec.propagate(*inputs)
    return builder, rec.outputs


def _first_output(out):
    import torch
    if isinstance(out, torch.Tensor):
        return out
    if hasattr(out, "logits"):
        return out.logits
    if isinstance(out, dict):
        return _first_output(out.get("out", next(iter(out.values()))))
    if isinstance(out, (tuple, list)):
        return _first_output(out[0])
    raise ExportError(f"model output of type {type(out).__name__} has no tensor")


def export_aten(model, inputs, train, seed):
    import torch
    import torch.nn.functional as F
    from torch.fx.experimental.proxy_tensor import make_fx
    from torch.nn.utils import stateless

    params = dict(model.named_parameters())
    buffers = {k: v for k, v in model.named_buffers() if v is not None}
    names = _input_names(model, len(inputs))
    n_params, n_buffers = len(params), len(buffers)

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
            raise ExportError(f"model output of shape {list(probe.shape)} has no class dimension")
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
    pnames, pbuffers = _param_maps(model)
    builder = Builder(pnames, pbuffers)

    loss_node = None
    if train:
        builder.phase = "forward"
        out_node = [n for n in gm.graph.nodes if n.op == "output"][0]
        loss_node = out_node.args[0][0]
        # the node producing the loss (through a folded getitem)
        while loss_node.op == "call_function" and loss_node.target is operator.getitem:
            loss_node = loss_node.args[0]

    rec = _make_recorder(gm, builder, placeholder_names, placeholder_params, loss_node)
    with torch.no_grad():
        rec.propagate(*run_inputs)
    return builder, rec.outputs, n_params, n_buffers


# --------------------------------------------------------------------------
# ONNX

def export_onnx(model, inputs, path, with_weights):
    import torch
    import onnx
    from onnx import shape_inference

    import copy
    # torch.onnx.export merges initializers with equal values (freshly initialised BN
    # weights/biases/running stats all are) into one, read through Identity nodes; a
    # small positive random offset on a copy keeps one initializer per parameter/buffer.
    model = copy.deepcopy(model).eval()
    with torch.no_grad():
        for t in model.state_dict().values():
            if t.is_floating_point():
                t.add_(torch.rand_like(t) * 1e-2)
    n = len(inputs)
    input_names = ["x"] if n == 1 else [f"x{i}" for i in range(n)]
    buf = io.BytesIO()
    try:
        with torch.no_grad():
            torch.onnx.export(model, tuple(inputs), buf, opset_version=13,
                              training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=False, input_names=input_names,
                              output_names=["y"], export_params=True)
    except Exception as e:  # noqa: BLE001
        raise ExportError(f"ONNX export failed: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}") from e
    proto = onnx.load_from_string(buf.getvalue())
    # static shapes everywhere (checked before the data is removed)
    inferred = shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
    _check_static(inferred)
    onnx.checker.check_model(proto)
    if not with_weights:
        stem = os.path.splitext(os.path.basename(path))[0]
        location = stem + ".weights"
        offset = 0
        for t in proto.graph.initializer:
            data = _tensor_bytes(t)
            length = len(data)
            t.ClearField("raw_data")
            for field in ("float_data", "int32_data", "string_data", "int64_data", "double_data", "uint64_data"):
                t.ClearField(field)
            del t.external_data[:]
            t.data_location = onnx.TensorProto.EXTERNAL
            for key, value in (("location", location), ("offset", str(offset)), ("length", str(length))):
                entry = t.external_data.add()
                entry.key = key
                entry.value = value
            offset += (length + 4095) // 4096 * 4096
        # the graph-only model must still infer static shapes, and pass the checker
        # where no data is needed: a copy declaring the initializers as typed graph
        # inputs instead (the checker would try to open the unwritten .weights file)
        _check_static(shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True))
        onnx.checker.check_model(_without_initializers(proto))
    _write_bytes(path, proto.SerializeToString())
    return proto


def _without_initializers(proto):
    import onnx
    from onnx import helper
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    inputs = {i.name for i in copy.graph.input}
    for t in copy.graph.initializer:
        if t.name not in inputs:
            copy.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    del copy.graph.initializer[:]
    return copy


def _tensor_bytes(t):
    from onnx import numpy_helper
    if t.HasField("raw_data"):
        return t.raw_data
    return numpy_helper.to_array(t).tobytes()


def _check_static(model):
    graph = model.graph
    infos = list(graph.value_info) + list(graph.output) + list(graph.input)
    known = {vi.name: vi for vi in infos}
    missing = []
    for node in graph.node:
        for out in node.output:
            if not out:
                continue
            vi = known.get(out)
            if vi is None or not _static(vi):
                missing.append(out)
    for vi in graph.output:
        if not _static(vi):
            missing.append(vi.name)
    if missing:
        raise ExportError(f"ONNX shape inference left {len(missing)} values without static shape (e.g. {missing[0]})")


def _static(vi):
    tt = vi.type.tensor_type
    if not tt.HasField("shape"):
        return False
    return all(d.HasField("dim_value") for d in tt.shape.dim)


# --------------------------------------------------------------------------
# output

def write_graph(graph, path):
    lines = ['{"format":' + json.dumps(graph["format"]) + ",",
             '"name":' + json.dumps(graph["name"]) + ",",
             '"source":' + json.dumps(graph["source"]) + ",",
             '"nodes":[']
    body = [json.dumps(n, separators=(",", ":")) for n in graph["nodes"]]
    text = "\n".join(lines) + "\n" + ",\n".join(body) + "\n],\n" + \
        '"outputs":' + json.dumps(graph["outputs"]) + "}\n"
    data = text.encode("utf-8")
    if path.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    _write_bytes(path, data)


def _write_bytes(path, data):
    """Writes a regular file atomically (temporary file + rename); anything else
    (/dev/stdout, a pipe, /dev/null) is written in place."""
    if os.path.exists(path) and not os.path.isfile(path):
        with open(path, "wb") as f:
            f.write(data)
        return
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def torch_versions():
    import torch
    import torchvision
    s = f"torch {torch.__version__}, torchvision {torchvision.__version__}"
    if torch.__file__.startswith("/usr/lib/python3/dist-packages"):
        s += " (Debian python3-torch/python3-torchvision)"
    return s


def describe_inputs(inputs):
    import torch
    parts = [f"{list(t.shape)} {_dtype_name(t.dtype)}" if isinstance(t, torch.Tensor) else repr(t)
             for t in inputs]
    return ("input " if len(parts) == 1 else "inputs ") + ", ".join(parts)


# --------------------------------------------------------------------------

FORCED_ATEN = re.compile(r"^(vit_|swin_|maxvit)")


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="export_torch.py",
        description="Export a PyTorch model as a memopt-graph/1 JSON graph (and optionally ONNX).",
        epilog="See the module docstring (head of this file) for the exact method.")
    p.add_argument("model", help="torchvision model name, or module:callable / path.py:callable")
    p.add_argument("--train", action="store_true", help="export one training step (forward + loss + gradients)")
    p.add_argument("--batch", type=int, default=None,
                   help="batch size N (default 1; for a callable with a `batch` argument, its own default)")
    p.add_argument("--output", "-o", help="output file (.json, or .json.gz for gzip); default <name>.json")
    p.add_argument("--onnx", help="also export the eval-mode model to this ONNX file (graph-only unless --onnx-weights)")
    p.add_argument("--onnx-weights", action="store_true", help="write a self-contained ONNX file with the weights")
    p.add_argument("--input-shape", help="per-sample input shape without the batch, e.g. 3,224,224")
    p.add_argument("--seed", type=int, default=0, help="random seed (weights, inputs, targets; default 0)")
    p.add_argument("--tracer", choices=("auto", "fx", "aten"), default="auto",
                   help="inference tracer: fx (symbolic_trace), aten (make_fx) or auto (default)")
    p.add_argument("--model-arg", action="append", metavar="KEY=VALUE",
                   help="keyword argument for the model builder / callable (repeatable)")
    p.add_argument("--name", help="graph name (default <model>_<infer|train>_b<N>)")
    p.add_argument("--quiet", "-q", action="store_true", help="no summary line on stderr")
    p.add_argument("--verbose", "-v", action="store_true",
                   help="show Python warnings and the traceback of an error")
    args = p.parse_args(argv)
    if args.onnx_weights and not args.onnx:
        p.error("--onnx-weights needs --onnx FILE")
    if args.batch is not None and args.batch < 1:
        p.error("--batch must be >= 1")
    if args.input_shape:
        try:
            args.input_shape = [int(v) for v in args.input_shape.replace("x", ",").split(",") if v.strip()]
        except ValueError:
            p.error(f"bad --input-shape {args.input_shape!r}")
    return args


def aten_trace(model, inputs, train, seed):
    """export_aten's graph builder and outputs; a failure of the trace itself is an ExportError."""
    try:
        builder, outputs, _, _ = export_aten(model, inputs, train, seed)
    except ExportError:
        raise
    except Exception as e:  # noqa: BLE001
        what = "make_fx training trace" if train else "make_fx trace"
        raise ExportError(f"{what} failed: {type(e).__name__}: {_one_line(e)}") from e
    return builder, outputs


def run(args):
    import torch
    torch.manual_seed(args.seed)
    t0 = time.time()
    model, inputs, desc, short = load_model(args.model, args.batch, args.input_shape,
                                            parse_model_args(args.model_arg))
    first = inputs[0] if inputs else None
    batch = first.shape[0] if isinstance(first, torch.Tensor) and first.dim() > 0 else (args.batch or 1)
    name = args.name or f"{short}_{'train' if args.train else 'infer'}_b{batch}"
    written = []

    if args.onnx:
        export_onnx(model, inputs, args.onnx, args.onnx_weights)
        written.append(args.onnx)
        if not args.output:
            return written, name, None, time.time() - t0

    head = (f"PyTorch: {torch_versions()}; model {desc}; batch {batch}; {describe_inputs(inputs)}; "
            f"dtype float32; mode {'training step' if args.train else 'inference'}; ")
    torch.manual_seed(args.seed + 3)
    if args.train:
        builder, outputs = aten_trace(model, inputs, True, args.seed)
        source = head + ("torch.fx.experimental.proxy_tensor.make_fx joint trace of forward + cross_entropy loss"
                         " + torch.autograd.grad(loss, params) (train mode), ShapeProp shapes; random init")
        tracer = "aten"
    else:
        model.eval()
        use_aten = args.tracer == "aten"
        why = None
        gm = None
        if args.tracer == "auto" and FORCED_ATEN.match(short) and args.model == short:
            use_aten = True
        if not use_aten:
            gm, why = fx_trace(model)
            if gm is None:
                if args.tracer == "fx":
                    raise ExportError(f"torch.fx.symbolic_trace failed: {why}")
                use_aten = True
            elif args.tracer == "auto" and needs_aten(gm):
                use_aten = True
                gm = None
        if use_aten:
            builder, outputs = aten_trace(model, inputs, False, args.seed)
            trace = "torch.fx.experimental.proxy_tensor.make_fx (ATen-level) forward trace, eval mode, + ShapeProp shapes"
            if why:
                trace = f"torch.fx.symbolic_trace failed ({why}); fell back to " + trace
            tracer = "aten"
        else:
            try:
                builder, outputs = export_fx(model, gm, inputs)
            except ExportError:
                raise
            except Exception as e:  # noqa: BLE001
                raise ExportError(f"ShapeProp run of the fx graph failed: {type(e).__name__}: {_one_line(e)}") from e
            trace = ("torch.fx.symbolic_trace (module-level) + torch.fx.passes.shape_prop.ShapeProp, eval mode")
            tracer = "fx"
        source = head + trace + "; random init"
    graph = builder.finish(outputs, name, source)
    out = args.output or f"{name}.json"
    write_graph(graph, out)
    written.append(out)
    return written, name, (graph, tracer), time.time() - t0


def _one_line(e):
    s = [line.strip() for line in str(e).strip().splitlines() if line.strip()]
    return s[0] if s else type(e).__name__


def main(argv=None):
    import warnings
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        with warnings.catch_warnings():
            if not args.verbose:
                warnings.simplefilter("ignore")
            written, name, info, secs = run(args)
    except ExportError as e:
        if args.verbose:
            import traceback
            traceback.print_exc()
        print(f"export_torch.py: error: {_one_line(e)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        raise
    except Exception as e:  # noqa: BLE001
        if args.verbose:
            import traceback
            traceback.print_exc()
        print(f"export_torch.py: error: {type(e).__name__}: {_one_line(e)}", file=sys.stderr)
        return 1
    if not args.quiet:
        msg = f"export_torch.py: {name}: wrote {', '.join(written)} in {secs:.1f} s"
        if info:
            graph, tracer = info
            edges = sum(len(n.get("inputs", [])) + len(n.get("control", [])) for n in graph["nodes"])
            msg += f" ({len(graph['nodes'])} nodes, {edges} edges, tracer {tracer})"
        print(msg, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
