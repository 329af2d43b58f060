"""memopt-graph/1 nodes from a running torch.fx graph.

`Builder` collects nodes (sizes, flops, views and in-place results found by
storage sharing) while `make_recorder`'s fx Interpreter runs the graph on real
tensors; `Builder.origin` remembers which fx node each memopt node came from,
so that a plan made on the graph can be applied to the fx graph again.
"""

import math
import operator
import re

import torch
from torch.fx.node import _get_qualified_name, map_aggregate, map_arg
from torch.fx.passes.shape_prop import ShapeProp, _extract_tensor_metadata

from memopt import Error


class TraceError(Error):
    """The model could not be traced or recorded; the message says why."""


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

    def __init__(self, param_names, buffer_ids):
        self.nodes = []            # node dicts in program order
        self.by_name = {}
        self.param_names = param_names  # id(tensor) -> qualified name
        self.buffer_ids = buffer_ids    # ids of buffers (kind "buffer")
        self.param_refs = {}       # id(tensor) -> Ref of its emitted parameter node
        self.keep_alive = []       # tensors whose ids are used as keys
        self.persistent = set()    # names of persistent nodes
        self.phase = None          # "forward" / "backward" when tracing a training step
        self.origin = {}           # op node name -> the fx node it records

    # --- emission
    def add(self, node):
        if node["name"] in self.by_name:
            raise TraceError(f"duplicate node name {node['name']!r}")
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
        if key in self.buffer_ids or not isinstance(tensor, torch.nn.Parameter):
            attrs["kind"] = "buffer"
        self.add({"name": qual, "op": "parameter", "outputs": [tensor.numel() * tensor.element_size()],
                  "persistent": True, "attrs": attrs})
        self.keep_alive.append(tensor)
        ref = Ref(qual + ":0")
        self.param_refs[key] = ref
        return ref

    def input(self, name, value):
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
    try:
        return _get_qualified_name(target)
    except Exception:  # noqa: BLE001
        return getattr(target, "__name__", str(target))


def make_recorder(gm, builder, placeholder_names, placeholder_params, loss_node=None):
    """An fx Interpreter (ShapeProp) that emits graph nodes as it runs.

    Node by node, with the real tensors at hand: shapes (node.meta["tensor_meta"] as
    ShapeProp stores them), sizes, flops and aliasing (storage shared with an input of
    the same node, which is alive at that moment).  Values are freed after their last
    use as in any fx Interpreter, so the memory high-water mark is the model's own."""

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
            builder.origin[name] = n
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


def param_maps(model):
    names, buffers = {}, set()
    for qual, p in model.named_parameters():
        names.setdefault(id(p), qual)
    for qual, b in model.named_buffers():
        if b is not None:
            names.setdefault(id(b), qual)
            buffers.add(id(b))
    return names, buffers
