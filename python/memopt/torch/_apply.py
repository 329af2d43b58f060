"""A memopt plan applied to a traced step: a new torch.fx graph.

`build_module(step, order, copies, redirects)` emits the step's fx nodes in
memopt's order. A recomputed copy runs its original's op again on the inputs
the plan names; a redirected input reads the copy instead of the original. A
copy that reads no input is of an op reading only its input's shape
(empty_like, zeros_like, ...): it makes a fresh tensor with the traced size,
strides and type on the step's device and fills it as the op does.
fx frees every value after its last use in the new graph, so values live as
memopt's model says. A copy of a random draw replays the generator state its
original drew from (as torch.utils.checkpoint does); the originals keep their
relative order (trace chains them), so every draw is the traced one.
"""

import operator

import torch
import torch.fx

from memopt.torch._record import LazyParam, Ref, TraceError


def rng_state():
    """The generator states a draw depends on: the CPU one, and the current CUDA device's once CUDA is in use."""
    cuda = torch.cuda.get_rng_state() if torch.cuda.is_available() and torch.cuda.is_initialized() else None
    return torch.get_rng_state(), cuda


def replaying(op):
    """A function running `op` drawn from a saved generator state, leaving the generators as they were."""
    def replay(state, *args, **kwargs):
        cpu, cuda = state
        devices = [torch.cuda.current_device()] if cuda is not None else []
        with torch.random.fork_rng(devices=devices):
            torch.set_rng_state(cpu)
            if cuda is not None:
                torch.cuda.set_rng_state(cuda)
            return op(*args, **kwargs)
    replay.__name__ = "replay_" + str(op).replace(".", "_")
    return replay


def swap_out(tensor):
    """A host copy of a device tensor (a swap plan's swap_out)."""
    return tensor.to("cpu", copy=True)


def swap_in(tensor, device):
    """The host copy back on `device` (a swap plan's swap_in)."""
    return tensor.to(device, copy=True)


# How each ATen op that reads only its input's shape fills the tensor it makes (None: it does
# not); the C++ side's default_shape_only_ops() lists the same ops.
_SHAPE_ONLY_FILLS = {
    "empty_like": None, "new_empty": None, "new_empty_strided": None,
    "zeros_like": lambda t, args: t.zero_(), "new_zeros": lambda t, args: t.zero_(),
    "ones_like": lambda t, args: t.fill_(1), "new_ones": lambda t, args: t.fill_(1),
    "full_like": lambda t, args: t.fill_(args[1]), "new_full": lambda t, args: t.fill_(args[2]),
    "rand_like": lambda t, args: t.uniform_(), "randn_like": lambda t, args: t.normal_(),
    # randint_like(x, high) or randint_like(x, low, high)
    "randint_like": lambda t, args: t.random_(*((0, args[1]) if len(args) == 2 else args[1:3])),
}


def remade_from_shape(op, size, stride, dtype, device, args):
    """What `op` (an ATen op reading only its input's shape: empty_like, zeros_like, ...) made,
    given its output's size, strides and type and its arguments (the input's place is None): a
    fresh tensor laid out as the traced one, filled as the op fills it (a draw from the
    current generator state)."""
    if op not in _SHAPE_ONLY_FILLS:
        raise TraceError(f"memopt.torch cannot remake {op!r} from its input's shape alone")
    out = torch.empty_strided(size, stride, dtype=dtype, device=device)
    fill = _SHAPE_ONLY_FILLS[op]
    if fill is not None:
        fill(out, args)
    return out


def release(value):
    """Nothing: a value nobody reads is handed here so that fx frees it at once (fx keeps unread values to the end)."""
    del value


def is_random(fx_node):
    target = fx_node.target
    return isinstance(target, torch._ops.OpOverload) and torch.Tag.nondeterministic_seeded in target.tags


class _Emitter:
    """Builds the new graph; `env` maps each old fx node to its value in the new one."""

    def __init__(self, step):
        self.step = step
        self.old = step.module.graph
        self.graph = torch.fx.Graph()
        self.env = {}
        self.copy_values = {}   # "copy:port" -> new fx node
        self.rng_states = {}    # old random fx node -> new node holding the state it drew from
        self.waiting = {}       # old node not in memopt's graph -> inputs not yet emitted
        mapped = set(step.origin.values())
        for n in self.old.nodes:
            if n.op not in ("placeholder", "output") and n not in mapped:
                self.waiting[n] = len(set(n.all_input_nodes))
        # "node:port" -> the old fx node holding that value
        self.holder = {}
        for n in self.old.nodes:
            s = step.struct.get(n)
            if isinstance(s, LazyParam):
                ref = step.param_ref(s.tensor)
                if ref is not None:
                    self.holder.setdefault(ref, n)
            elif isinstance(s, Ref):
                self.holder.setdefault(s.ref, n)

    # --- values
    def value(self, ref):
        if ref in self.copy_values:
            return self.copy_values[ref]
        if ref not in self.holder:
            raise TraceError(f"the plan reads tensor {ref!r}, which the traced step does not hold")
        holder = self.holder[ref]
        if holder not in self.env:
            raise TraceError(f"the plan reads tensor {ref!r} before its producer runs")
        return self.env[holder]

    def args_of(self, n, substitute):
        """n's arguments in the new graph, reading `substitute[ref]` where the plan says so."""
        def arg(a):
            s = self.step.struct.get(a)
            if isinstance(s, Ref) and s.ref in substitute:
                return self.value(substitute[s.ref])
            if isinstance(s, (tuple, list, dict)) and _reads_any(s, substitute):
                raise TraceError(f"fx node {n.name!r} reads {a.name!r} whole, and the plan replaces a part of it")
            if a not in self.env:
                raise TraceError(f"fx node {n.name!r} reads {a.name!r} before it runs in the plan's order")
            return self.env[a]
        return torch.fx.node.map_arg(n.args, arg), torch.fx.node.map_arg(n.kwargs, arg)

    # --- emission
    def emitted(self, old_node, new_node):
        self.env[old_node] = new_node
        for u in [u for u in old_node.users if u in self.waiting]:
            self.waiting[u] -= 1
            if self.waiting[u] == 0:
                del self.waiting[u]
                self.emit_as_traced(u)

    def emit_as_traced(self, n):
        self.emitted(n, self.graph.node_copy(n, lambda a: self.env[a]))

    def emit_original(self, n, substitute, draws_again):
        if draws_again and n not in self.rng_states:
            self.rng_states[n] = self.graph.call_function(rng_state)
        args, kwargs = self.args_of(n, substitute)
        new = self.graph.create_node(n.op, n.target, args, kwargs, name=n.name)
        new.meta = dict(n.meta)
        self.emitted(n, new)

    def remake_from_shape(self, n):
        """The function and arguments remaking n's tensor from its traced layout (remade_from_shape)."""
        meta = n.meta.get("tensor_meta")
        if not hasattr(meta, "shape") or not isinstance(n.target, torch._ops.OpOverload):
            raise TraceError(f"cannot recompute {n.name!r} from shapes alone: it is not an ATen op making one tensor")
        op = n.target._schema.name.split("::")[-1]
        if op not in _SHAPE_ONLY_FILLS:
            raise TraceError(f"memopt.torch cannot remake {n.name!r} ({op}) from its input's shape alone")
        if any(isinstance(a, torch.fx.Node) for a in n.args[1:]):
            raise TraceError(f"cannot recompute {n.name!r} from shapes alone: an argument besides its input is computed")
        return (op, tuple(meta.shape), tuple(meta.stride), meta.dtype, self.step.device, (None,) + tuple(n.args[1:])), {}

    def emit_copy(self, name, original, substitute, replay, shape_only=False):
        target = remade_from_shape if shape_only else original.target
        args, kwargs = self.remake_from_shape(original) if shape_only else self.args_of(original, substitute)
        if replay:
            if original not in self.rng_states:
                raise TraceError(f"copy {name!r} replays a draw its original {original.name!r} never made")
            new = self.graph.create_node("call_function", replaying(target),
                                         (self.rng_states[original],) + args, kwargs, name=name)
        else:
            new = self.graph.create_node("call_function" if shape_only else original.op, target, args, kwargs, name=name)
        new.meta = dict(original.meta)
        self.copy_values[f"{name}:0"] = new
        # the copy's other ports: the original's folded getitem chains, re-rooted on the copy
        prefix = f"{self.step.name_of[original]}:"
        for ref, holder in self.holder.items():
            if ref.startswith(prefix) and holder is not original:
                port = ref[len(prefix):]
                self.copy_values[f"{name}:{port}"] = self.reroot(holder, original, new)

    def reroot(self, holder, original, new_root):
        if holder is original:
            return new_root
        if holder.op != "call_function" or holder.target not in (operator.getitem, getattr):
            raise TraceError(f"cannot recompute {original.name!r}: its output {holder.name!r} is not an element of it")
        parent = self.reroot(holder.args[0], original, new_root)
        return self.graph.call_function(holder.target, (parent,) + tuple(holder.args[1:]))


def _reads_any(struct, refs):
    if isinstance(struct, Ref):
        return struct.ref in refs
    items = struct.values() if isinstance(struct, dict) else struct if isinstance(struct, (tuple, list)) else ()
    return any(_reads_any(s, refs) for s in items)


def build_module(step, order, copies, redirects):
    """The GraphModule running `step` in `order` (memopt node names).

    copies: name -> (original memopt node, its inputs as "node:port", replays a draw, role);
    redirects: original memopt node -> {operand index: "node:port"}."""
    em = _Emitter(step)
    for n in em.old.nodes:
        if n.op == "placeholder":
            em.emit_as_traced(n)
    for n in [n for n, count in em.waiting.items() if count == 0]:
        del em.waiting[n]
        em.emit_as_traced(n)  # reads nothing: a constant, or an empty tensor nobody reads
    originals_copied = {c[0] for c in copies.values() if c[2]}
    for name in order:
        if name in copies:
            original, inputs, replay, role = copies[name]
            if role == "recomputed":
                fx_original, operands = step.origin[original], step.operands[original]
                shape_only = not inputs and bool(operands)  # the planner's copy of an op reading shapes only
                if len(inputs) != len(operands) and not shape_only:
                    raise TraceError(f"copy {name!r} reads {len(inputs)} tensors, its original {original!r} {len(operands)}")
                em.emit_copy(name, fx_original, dict(zip(operands, inputs)), replay, shape_only)
            elif role == "swap_out":
                em.copy_values[f"{name}:0"] = em.graph.call_function(swap_out, (em.value(inputs[0]),))
            elif role == "swap_in":
                em.copy_values[f"{name}:0"] = em.graph.call_function(swap_in, (em.value(inputs[0]), step.device))
            elif role != "trigger":
                raise TraceError(f"plan node {name!r} has role {role!r}, which memopt.torch cannot run")
            continue
        fx_node = step.origin.get(name)
        if fx_node is None:
            continue  # an input or a parameter (a placeholder, already there), or a generator state (made with its draw)
        operands = step.operands[name]
        substitute = {}
        for index, ref in redirects.get(name, {}).items():
            substitute[operands[index]] = ref
        em.emit_original(fx_node, substitute, name in originals_copied)
    missing = [n.name for n in em.old.nodes if n.op not in ("placeholder", "output") and n not in em.env]
    if missing:
        raise TraceError(f"the plan's order leaves {len(missing)} traced node(s) unrun, first {missing[0]!r}")
    for n in list(em.graph.nodes):
        if not n.users and n.op in ("call_function", "call_method", "call_module"):
            with em.graph.inserting_after(n):
                em.graph.call_function(release, (n,))
    out = next(n for n in em.old.nodes if n.op == "output")
    em.graph.node_copy(out, lambda a: em.env[a])
    em.graph.lint()
    return torch.fx.GraphModule(step.module, em.graph)
