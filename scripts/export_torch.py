#!/usr/bin/python3
"""Export a PyTorch model as a memopt-graph/1 JSON graph (and optionally ONNX).

Usage:
  scripts/export_torch.py MODEL [--train] [--batch N] [--output FILE]
                          [--onnx FILE [--onnx-weights]] [--input-shape 3,224,224]
                          [--seed S] [--tracer auto|fx|aten] [--model-arg KEY=VALUE ...]
                          [--opset N] [--scratch]

A command line over memopt.torch's tracers (python/memopt/torch/): the package
README command 1 installs, or PYTHONPATH=<build>/python.

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
attrs.view or attrs.inplace; flops use the README formula.  --scratch runs the
traced module once more, node by node under the profiler, and records what each
op allocates and frees before it returns as its "scratch_bytes" (what torch
allocates depends on the kernel it picks, so it is measured).
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

ONNX (--onnx FILE): torch.onnx.export of the model in eval mode, opset 13
(--opset N for another),
training=TrainingMode.PRESERVE (BatchNormalization is kept, not fused into
Conv), do_constant_folding=False, fixed batch size, input "x" (x0, x1, ... for
several inputs), output "y".  Without --onnx-weights the file is graph-only:
every initializer keeps name, dims and data_type but its data is declared as
external data in "<stem>.weights" (offset/length) which is NOT written, so the
file stays small and is enough for shape-only readers.  --onnx-weights writes
a normal self-contained model (over protobuf's 2 GiB, with its weights in
"<stem>.data" beside it, as ONNX's external data).  The export runs with
gradients enabled, so that attention in eval mode is exported op by op rather
than as the fused kernel ONNX has no op for.  The result is checked with onnx.checker and
onnx.shape_inference (strict); shapes it leaves unknown behind shape arithmetic
(Shape, Gather, Concat, ... feeding Reshape or Slice) are left to the reader
(memopt's importer computes them: docs/onnx.md).

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
import json
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
# ONNX

def export_onnx(model, inputs, path, with_weights, opset=13):
    import tempfile

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
    _register_missing_symbolics(opset)
    with tempfile.TemporaryDirectory() as tmp:
        # through a file: a model over protobuf's 2 GiB is exported with its weights
        # beside it (ONNX external data), which an in-memory export refuses
        exported = os.path.join(tmp, "model.onnx")
        try:
            # with gradients enabled: nn.MultiheadAttention in eval mode takes its fused
            # fast path (which the exporter cannot export) only when they are not
            torch.onnx.export(model, tuple(inputs), exported, opset_version=opset,
                              training=torch.onnx.TrainingMode.PRESERVE,
                              do_constant_folding=False, input_names=input_names,
                              output_names=["y"], export_params=True)
        except Exception as e:  # noqa: BLE001
            raise ExportError(f"ONNX export failed: {type(e).__name__}: "
                              f"{str(e).strip().splitlines()[0] if str(e).strip() else ''}") from e
        # consistent shapes (checked with the data, through the file: it may be over 2 GiB)
        shape_inference.infer_shapes_path(exported, os.path.join(tmp, "inferred.onnx"), check_type=True,
                                          strict_mode=True, data_prop=True)
        onnx.checker.check_model(exported)
        proto = onnx.load(exported, load_external_data=False)
        large = any(t.data_location == onnx.TensorProto.EXTERNAL for t in proto.graph.initializer)
        if with_weights:
            if large:
                onnx.load_external_data_for_model(proto, tmp)
                stem = os.path.splitext(os.path.basename(path))[0]
                onnx.save_model(proto, path, save_as_external_data=True, location=stem + ".data")
                return proto
        else:
            _refer_to_unwritten_weights(proto, path, tmp)
            # the graph-only model must still infer shapes, and pass the checker
            # where no data is needed: a copy declaring the initializers as typed graph
            # inputs instead (the checker would try to open the unwritten .weights file)
            shape_inference.infer_shapes(proto, check_type=True, strict_mode=True, data_prop=True)
            onnx.checker.check_model(_without_initializers(proto))
    _write_bytes(path, proto.SerializeToString())
    return proto


def _register_missing_symbolics(opset):
    """ONNX translations torch 1.13's exporter lacks: aten::zero, Tensor.zero_ on a slice
    (Swin-v2 zeroes its key bias so), as ONNX's zeros_like."""
    import torch
    from torch.onnx import symbolic_opset9
    torch.onnx.register_custom_op_symbolic("aten::zero", lambda g, self: symbolic_opset9.zeros_like(g, self), opset)


def _refer_to_unwritten_weights(proto, path, exported_dir):
    """Points every initializer at <stem>.weights (page-aligned offsets, its real length), data dropped."""
    import onnx
    location = os.path.splitext(os.path.basename(path))[0] + ".weights"
    offset = 0
    for t in proto.graph.initializer:
        length = _stored_length(t, exported_dir)
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


def _stored_length(t, directory):
    """Bytes of an initializer's data, in the proto or in the external file the export wrote."""
    import onnx
    from onnx import numpy_helper
    if t.data_location == onnx.TensorProto.EXTERNAL:
        entries = {e.key: e.value for e in t.external_data}
        if "length" in entries:
            return int(entries["length"])
        return os.path.getsize(os.path.join(directory, entries["location"])) - int(entries.get("offset", 0))
    if t.HasField("raw_data"):
        return len(t.raw_data)
    return numpy_helper.to_array(t).nbytes


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
    parts = [f"{list(t.shape)} {str(t.dtype).replace('torch.', '')}" if isinstance(t, torch.Tensor) else repr(t)
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
    p.add_argument("--onnx-weights", action="store_true", help="write the ONNX file with the weights (beside it over 2 GiB)")
    p.add_argument("--opset", type=int, default=13, help="ONNX opset of --onnx (default 13)")
    p.add_argument("--input-shape", help="per-sample input shape without the batch, e.g. 3,224,224")
    p.add_argument("--seed", type=int, default=0, help="random seed (weights, inputs, targets; default 0)")
    p.add_argument("--tracer", choices=("auto", "fx", "aten"), default="auto",
                   help="inference tracer: fx (symbolic_trace), aten (make_fx) or auto (default)")
    p.add_argument("--model-arg", action="append", metavar="KEY=VALUE",
                   help="keyword argument for the model builder / callable (repeatable)")
    p.add_argument("--name", help="graph name (default <model>_<infer|train>_b<N>)")
    p.add_argument("--scratch", action="store_true",
                   help="measure each op's scratch (memory it frees before returning) and record it as scratch_bytes")
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


def tracing():
    """memopt.torch's tracers (the package python/memopt, which README command 1 installs)."""
    try:
        from memopt.torch import _trace
    except ImportError as e:
        raise ExportError(f"cannot import memopt.torch ({e}): run README command 1, or set "
                          "PYTHONPATH to a build's python/ folder") from e
    return _trace


def aten_trace(model, inputs, train, seed):
    """export_aten's graph builder and outputs; a failure of the trace itself is an ExportError."""
    t = tracing()
    try:
        recording = t.export_aten(model, inputs, train, seed)
    except t.TraceError as e:
        raise ExportError(str(e)) from e
    except Exception as e:  # noqa: BLE001
        what = "make_fx training trace" if train else "make_fx trace"
        raise ExportError(f"{what} failed: {type(e).__name__}: {_one_line(e)}") from e
    return recording


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
        export_onnx(model, inputs, args.onnx, args.onnx_weights, args.opset)
        written.append(args.onnx)
        if not args.output:
            return written, name, None, time.time() - t0

    head = (f"PyTorch: {torch_versions()}; model {desc}; batch {batch}; {describe_inputs(inputs)}; "
            f"dtype float32; mode {'training step' if args.train else 'inference'}; ")
    torch.manual_seed(args.seed + 3)
    if args.train:
        recording = aten_trace(model, inputs, True, args.seed)
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
            gm, why = tracing().fx_trace(model)
            if gm is None:
                if args.tracer == "fx":
                    raise ExportError(f"torch.fx.symbolic_trace failed: {why}")
                use_aten = True
            elif args.tracer == "auto" and tracing().needs_aten(gm):
                use_aten = True
                gm = None
        if use_aten:
            recording = aten_trace(model, inputs, False, args.seed)
            trace = "torch.fx.experimental.proxy_tensor.make_fx (ATen-level) forward trace, eval mode, + ShapeProp shapes"
            if why:
                trace = f"torch.fx.symbolic_trace failed ({why}); fell back to " + trace
            tracer = "aten"
        else:
            try:
                recording = tracing().export_fx(model, gm, inputs)
            except ExportError:
                raise
            except tracing().TraceError as e:
                raise ExportError(str(e)) from e
            except Exception as e:  # noqa: BLE001
                raise ExportError(f"ShapeProp run of the fx graph failed: {type(e).__name__}: {_one_line(e)}") from e
            trace = ("torch.fx.symbolic_trace (module-level) + torch.fx.passes.shape_prop.ShapeProp, eval mode")
            tracer = "fx"
        source = head + trace + "; random init"
    graph = recording.builder.finish(recording.outputs, name, source)
    if args.scratch:
        record_scratch(graph, recording)
    out = args.output or f"{name}.json"
    write_graph(graph, out)
    written.append(out)
    return written, name, (graph, tracer), time.time() - t0


def record_scratch(graph, recording):
    """Adds each op's scratch, measured by running the traced module node by node, as "scratch_bytes"."""
    from memopt.torch._scratch import node_scratch
    nodes = {n["name"]: n for n in graph["nodes"]}
    name_of = {fx: name for name, fx in recording.builder.origin.items() if name in nodes}
    try:
        for name, bytes_ in node_scratch(recording.module, recording.inputs, name_of).items():
            nodes[name]["scratch_bytes"] = bytes_
    except tracing().TraceError as e:
        raise ExportError(str(e)) from e


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
