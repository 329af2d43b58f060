#!/usr/bin/python3
"""Tests of scripts/export_torch.py (and scripts/models/cell_stacks.py, randwire.py, gpt.py).

Run with Debian's interpreter (torch 1.13, torchvision 0.14, onnx 1.12):
    /usr/bin/python3 -m unittest tests/scripts/test_export_torch.py
    /usr/bin/python3 tests/scripts/test_export_torch.py
from the repository root (or set MEMOPT_REPO to it).  About 35 s on 2 cores (the
exports run in this process, the command line is run for resnet18 and the errors).

What is checked:
  * resnet18 inference batch 1 re-exported equals examples/data/resnet18_infer_b1.json
    node for node (names, ops, inputs, outputs, flops, attrs, order) and has the
    program-order peaks of examples/data/peaks.tsv / peaks_alias.tsv;
  * resnet18 --train --batch 2 has the structure of examples/data/resnet18_train_b32.json
    (same nodes, edges, attrs apart from sizes and shapes), gradients/ naming, phases,
    outputs = loss + one gradient per parameter (shapes match), aliases name inputs;
  * a tiny custom module given as path.py:callable: multi-output ports, folded getitem,
    non-tensor size() node with a control edge, in-place and view aliases, training;
  * graph-only ONNX of resnet18: small file, initializers as external data (name, dims,
    data type kept), BatchNormalization not fused, static shapes by onnx.shape_inference;
  * with MEMOPT_PLAN set (ctest does), the ONNX export planned by memopt-plan has the traced
    graph's peaks and optimum;
  * exit status 1 with one line on stderr for an unknown model and a bad module:callable;
  * nasnet_a and darts (scripts/models/cell_stacks.py) export to JSON and ONNX;
  * scripts/models/gpt.py remakes the shipped GPT-like decoder (its structure at batch 2)
    and exports a training step.
"""

import collections
import contextlib
import importlib.util
import io
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

REPO = os.environ.get("MEMOPT_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(REPO, "scripts", "export_torch.py")
CELLS = os.path.join(REPO, "scripts", "models", "cell_stacks.py")
DATA = os.path.join(REPO, "examples", "data")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable

# the exporter runs under PYTHON; this process needs onnx to read the ONNX files
HAVE_TORCH = all(importlib.util.find_spec(m) is not None for m in ("torch", "torchvision", "onnx"))
if HAVE_TORCH:
    import onnx


def run_export(*args, cwd=None):
    """The exporter as a command (exit status, stdout, stderr)."""
    return subprocess.run([PYTHON, SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=300)


_MODULE = None


def export(*args):
    """The exporter's main() in this process (saves the torch import of a new process);
    returns a CompletedProcess-like object."""
    global _MODULE
    if _MODULE is None:
        spec = importlib.util.spec_from_file_location("export_torch", SCRIPT)
        _MODULE = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_MODULE)
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        rc = _MODULE.main(list(args))
    return subprocess.CompletedProcess(args, rc, "", err.getvalue())


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def tsv(path):
    with open(path, encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f if line.strip()]
    return {r[0]: dict(zip(rows[0], r)) for r in rows[1:]}


def split_ref(ref):
    name, port = ref.rsplit(":", 1)
    return name, int(port)


def peak_bytes(graph):
    """Program-order peak, every output apart: allocate at the producer, free after
    the last reader, graph outputs never freed, persistent nodes left out."""
    nodes = graph["nodes"]
    last = {}
    for i, n in enumerate(nodes):
        for r in n.get("inputs", []):
            last[r] = i
    outputs = set(graph["outputs"])
    frees = collections.defaultdict(int)
    for i, n in enumerate(nodes):
        if n.get("persistent"):
            continue
        for p, size in enumerate(n["outputs"]):
            ref = f"{n['name']}:{p}"
            if ref not in outputs:
                frees[last.get(ref, i)] += size
    live = peak = 0
    for i, n in enumerate(nodes):
        if not n.get("persistent"):
            live += sum(n["outputs"])
        peak = max(peak, live)
        live -= frees[i]
    return peak


def alias_peak_bytes(graph):
    """Storage-aware program-order peak (peaks_alias.tsv): an aliasing output adds no
    bytes; a storage lives from its owner's step to the last step reading or defining
    any tensor aliasing it; aliases of persistent buffers cost nothing; aliases of
    graph outputs keep the storage to the end."""
    nodes = graph["nodes"]
    step = {n["name"]: i for i, n in enumerate(nodes)}
    persistent = {n["name"] for n in nodes if n.get("persistent")}
    size, parent = {}, {}
    for n in nodes:
        alias = n.get("attrs", {}).get("alias")
        for p, s in enumerate(n["outputs"]):
            ref = f"{n['name']}:{p}"
            size[ref] = s
            src = alias if isinstance(alias, str) and p == 0 else (alias[p] if isinstance(alias, list) else None)
            if src is not None:
                parent[ref] = src

    def root(ref):
        while ref in parent:
            ref = parent[ref]
        return ref

    last = {}
    for i, n in enumerate(nodes):
        for p in range(len(n["outputs"])):
            r = root(f"{n['name']}:{p}")
            last[r] = max(last.get(r, i), i)
        for ref in n.get("inputs", []):
            r = root(ref)
            last[r] = max(last.get(r, 0), i)
    for ref in graph["outputs"]:
        last[root(ref)] = len(nodes) - 1
    delta = collections.defaultdict(int)
    for ref, s in size.items():
        if root(ref) != ref:
            continue
        owner = split_ref(ref)[0]
        if owner in persistent:
            continue
        delta[step[owner]] += s
        delta[last.get(ref, step[owner]) + 1] -= s
    live = peak = 0
    for i in range(len(nodes)):
        live += delta[i]
        peak = max(peak, live)
    return peak


class GraphChecks(unittest.TestCase):
    def check_wellformed(self, graph):
        """Format rules of memopt-graph/1 plus the exporter's aliasing rules."""
        self.assertEqual(graph["format"], "memopt-graph/1")
        seen = {}
        for n in graph["nodes"]:
            self.assertNotIn(n["name"], seen, "duplicate name")
            for ref in n.get("inputs", []):
                name, port = split_ref(ref)
                self.assertIn(name, seen, f"{n['name']} reads {ref} before it is defined")
                self.assertLess(port, len(seen[name]["outputs"]), f"{n['name']}: bad port {ref}")
            for c in n.get("control", []):
                self.assertIn(c, seen)
            attrs = n.get("attrs", {})
            alias = attrs.get("alias")
            if alias is not None:
                sources = [alias] if isinstance(alias, str) else [a for a in alias if a is not None]
                if isinstance(alias, list):
                    self.assertEqual(len(alias), len(n["outputs"]))
                else:
                    self.assertTrue(attrs.get("view") or attrs.get("inplace"), n["name"])
                for src in sources:
                    self.assertIn(src, n["inputs"], f"{n['name']}: alias {src} is not an input")
            if len(n["outputs"]) == 1 and n["op"] not in ("input",):
                self.assertIn("shape", attrs)
            seen[n["name"]] = n
        for ref in graph["outputs"]:
            name, port = split_ref(ref)
            self.assertIn(name, seen)
            self.assertLess(port, len(seen[name]["outputs"]))
        return seen


@unittest.skipUnless(HAVE_TORCH, "needs torch, torchvision and onnx (Debian python3-torch ...)")
class ExportTorchTest(GraphChecks):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="export_torch_test_")
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def path(self, name):
        return os.path.join(self.dir, name)

    # ------------------------------------------------------------------ inference
    def test_resnet18_inference_matches_shipped(self):
        out = self.path("resnet18_infer_b1.json")
        proc = run_export("resnet18", "--batch", "1", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        mine = load(out)
        ref = load(os.path.join(DATA, "resnet18_infer_b1.json"))
        self.check_wellformed(mine)
        self.assertEqual(mine["name"], ref["name"])
        self.assertEqual(len(mine["nodes"]), len(ref["nodes"]))
        # node for node: names, ops, inputs, outputs (bytes), flops, attrs, order
        for a, b in zip(mine["nodes"], ref["nodes"]):
            self.assertEqual(a, b)
        self.assertEqual(mine["outputs"], ref["outputs"])
        # the source differs at most in the torch/torchvision version
        self.assertEqual(mine["source"].split("; model", 1)[1], ref["source"].split("; model", 1)[1])
        peaks = tsv(os.path.join(DATA, "peaks.tsv"))["resnet18_infer_b1.json"]
        self.assertEqual(peak_bytes(mine), int(peaks["peak_bytes"]))
        self.assertEqual(sum(sum(n["outputs"]) for n in mine["nodes"] if n.get("persistent")),
                         int(peaks["persistent_bytes"]))
        alias = tsv(os.path.join(DATA, "peaks_alias.tsv"))["resnet18_infer_b1.json"]
        self.assertEqual(alias_peak_bytes(mine), int(alias["alias_peak_bytes"]))
        self.assertEqual(sum(1 for n in mine["nodes"] if n.get("attrs", {}).get("alias") is not None),
                         int(alias["aliased_outputs"]))

    # ------------------------------------------------------------------ training
    def check_training(self, graph, params):
        nodes = self.check_wellformed(graph)
        order = list(nodes)
        # loss first, then one gradient per parameter in parameter order
        self.assertEqual(graph["outputs"][0], "nll_loss_forward:0")
        self.assertEqual(len(graph["outputs"]), 1 + len(params))
        loss_at = order.index("nll_loss_forward")
        for i, name in enumerate(order):
            n = nodes[name]
            if n["op"] in ("parameter", "input"):
                self.assertNotIn("phase", n.get("attrs", {}))
                continue
            phase = n["attrs"]["phase"]
            if i <= loss_at:
                self.assertEqual(phase, "forward", name)
                self.assertFalse(name.startswith("gradients/"), name)
            else:
                self.assertEqual(phase, "backward", name)
                self.assertTrue(name.startswith("gradients/"), name)
        for ref, param in zip(graph["outputs"][1:], params):
            name, port = split_ref(ref)
            self.assertTrue(name.startswith("gradients/"), ref)
            grad = nodes[name]
            shape = grad["attrs"]["shape"] if "shape" in grad["attrs"] else grad["attrs"]["shapes"][port]
            self.assertEqual(shape, param["attrs"]["shape"], f"{ref} vs {param['name']}")
            self.assertEqual(grad["outputs"][port], param["outputs"][0])
        self.assertEqual(nodes["x"]["op"], "input")
        self.assertEqual(nodes["target"]["attrs"]["dtype"], "int64")

    def test_resnet18_training_step(self):
        out = self.path("resnet18_train_b2.json")
        proc = export("resnet18", "--train", "--batch", "2", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        graph = load(out)
        self.assertEqual(graph["name"], "resnet18_train_b2")
        params = [n for n in graph["nodes"] if n["op"] == "parameter" and "kind" not in n["attrs"]]
        self.assertEqual(len(params), 62)
        self.check_training(graph, params)
        # same structure as the shipped batch-32 training graph: only sizes differ
        ref = load(os.path.join(DATA, "resnet18_train_b32.json"))

        def structure(n):
            attrs = {k: v for k, v in n.get("attrs", {}).items() if k not in ("shape", "shapes")}
            return (n["name"], n["op"], n.get("inputs"), n.get("control"), len(n["outputs"]),
                    n.get("persistent"), "flops" in n, attrs)
        self.assertEqual([structure(n) for n in graph["nodes"]], [structure(n) for n in ref["nodes"]])
        self.assertEqual(graph["outputs"], ref["outputs"])
        # detach views of forward tensors are kept only when the backward reads them
        readers = collections.Counter(split_ref(r)[0] for n in graph["nodes"] for r in n.get("inputs", []))
        for n in graph["nodes"]:
            if n["op"] == "detach":
                self.assertGreater(readers[n["name"]], 0)

    # ------------------------------------------------------------------ custom module
    TINY = textwrap.dedent('''
        import torch
        from torch import nn

        class Tiny(nn.Module):
            def __init__(self):
                super().__init__()
                self.conv = nn.Conv2d(3, 8, 3, padding=1)
                self.bn = nn.BatchNorm2d(8)
                self.w = nn.Parameter(torch.ones(2))
                self.fc = nn.Linear(4 * 8 * 8, 10)

            def forward(self, x):
                y = torch.relu_(self.bn(self.conv(x)))
                parts = torch.chunk(y, 2, dim=1)
                z = parts[0] * torch.sigmoid(self.w)[0] + parts[1]
                z = nn.functional.max_pool2d(z, 2)
                z = z.view(z.size(0), -1)
                return self.fc(z)

        def tiny(batch=4):
            """A tiny test network."""
            return Tiny(), (torch.randn(batch, 3, 16, 16),)
        ''')

    def test_custom_module_callable(self):
        src = self.path("tiny_model.py")
        with open(src, "w", encoding="utf-8") as f:
            f.write(self.TINY)
        out = self.path("tiny.json")
        proc = export(f"{src}:tiny", "--batch", "3", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        graph = load(out)
        nodes = self.check_wellformed(graph)
        self.assertEqual(graph["name"], "tiny_infer_b3")
        self.assertIn("torch.fx.symbolic_trace (module-level)", graph["source"])
        self.assertEqual(nodes["x"]["attrs"]["shape"], [3, 3, 16, 16])
        # multi-output chunk: one node, one port per piece, getitem folded into ports
        self.assertEqual(nodes["chunk"]["outputs"], [3 * 4 * 16 * 16 * 4] * 2)
        self.assertEqual(nodes["chunk"]["attrs"]["alias"], ["relu_:0", "relu_:0"])
        self.assertIn("chunk:1", nodes["add"]["inputs"])
        # getitem picking a chunk piece is folded; indexing a tensor (sigmoid(w)[0]) is a view node
        getitems = [n for n in nodes.values() if n["op"] == "getitem"]
        self.assertEqual(len(getitems), 1)
        self.assertEqual(getitems[0]["inputs"], ["sigmoid:0"])
        self.assertEqual(getitems[0]["attrs"]["alias"], "sigmoid:0")
        self.assertTrue(getitems[0]["attrs"]["view"])
        # in-place relu_, parameters just before their first reader, after the data operands
        self.assertEqual(nodes["relu_"]["attrs"]["alias"], "bn:0")
        self.assertTrue(nodes["relu_"]["attrs"]["inplace"])
        order = list(nodes)
        self.assertEqual(order.index("w") + 1, order.index("sigmoid"))
        self.assertEqual(nodes["conv"]["inputs"], ["x:0", "conv.weight:0", "conv.bias:0"])
        self.assertEqual(nodes["conv"]["flops"], 2.0 * 3 * 8 * 16 * 16 * 3 * 3 * 3)
        # non-tensor value: x.size() has no outputs and its reader depends on it by control
        self.assertEqual(nodes["size"]["outputs"], [])
        self.assertEqual(nodes["view"]["control"], ["size"])
        self.assertTrue(nodes["view"]["attrs"]["view"])
        self.assertNotIn("flops", nodes["view"])
        self.assertEqual(nodes["bn.num_batches_tracked"]["attrs"]["kind"], "buffer")

        out = self.path("tiny_train.json")
        proc = export(f"{src}:tiny", "--train", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        graph = load(out)
        self.assertEqual(graph["name"], "tiny_train_b4")
        params = [n for n in graph["nodes"] if n["op"] == "parameter" and "kind" not in n["attrs"]]
        self.assertEqual([p["name"] for p in params],
                         ["w", "conv.weight", "conv.bias", "bn.weight", "bn.bias", "fc.weight", "fc.bias"])
        self.check_training(graph, params)
        nodes = {n["name"]: n for n in graph["nodes"]}
        self.assertTrue(nodes["t"]["persistent"])     # t(fc.weight): view of a persistent tensor
        self.assertTrue(nodes["add_"]["persistent"])  # num_batches_tracked += 1
        self.assertTrue(nodes["add_"]["attrs"]["inplace"])

    # ------------------------------------------------------------------ ONNX
    def check_onnx_graph_only(self, path, batch, bn_count=None, max_size=None):
        from onnx import shape_inference
        if max_size is not None:
            self.assertLess(os.path.getsize(path), max_size)
        model = onnx.load(path, load_external_data=False)
        self.assertEqual([o.version for o in model.opset_import if o.domain in ("", "ai.onnx")], [13])
        stem = os.path.splitext(os.path.basename(path))[0]
        self.assertGreater(len(model.graph.initializer), 0)
        for t in model.graph.initializer:
            self.assertEqual(t.data_location, onnx.TensorProto.EXTERNAL, t.name)
            self.assertFalse(t.HasField("raw_data"), t.name)
            self.assertGreater(len(t.dims) + 1, 0)
            entries = {e.key: e.value for e in t.external_data}
            self.assertEqual(entries["location"], stem + ".weights")
            self.assertIn("offset", entries)
            self.assertIn("length", entries)
        self.assertFalse(os.path.exists(os.path.join(os.path.dirname(path), stem + ".weights")))
        ops = collections.Counter(n.op_type for n in model.graph.node)
        self.assertGreater(ops["BatchNormalization"], 0)
        if bn_count is not None:
            self.assertEqual(ops["BatchNormalization"], bn_count)
        self.assertEqual([i.name for i in model.graph.input], ["x"])
        self.assertEqual([o.name for o in model.graph.output], ["y"])
        dims = [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        self.assertEqual(dims[0], batch)
        inferred = shape_inference.infer_shapes(model, strict_mode=True)
        known = {v.name: v for v in list(inferred.graph.value_info) + list(inferred.graph.output)}
        for node in inferred.graph.node:
            for name in node.output:
                self.assertIn(name, known, f"no shape for {name}")
                shape = known[name].type.tensor_type.shape
                self.assertTrue(all(d.HasField("dim_value") for d in shape.dim), name)
        return model

    def test_onnx_graph_only_resnet18(self):
        path = self.path("resnet18_b1.onnx")
        proc = export("resnet18", "--onnx", path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        model = self.check_onnx_graph_only(path, 1, bn_count=20, max_size=100_000)
        names = {t.name: t for t in model.graph.initializer}
        self.assertEqual(list(names["conv1.weight"].dims), [64, 3, 7, 7])
        self.assertEqual(names["conv1.weight"].data_type, onnx.TensorProto.FLOAT)
        self.assertIn("bn1.running_var", names)
        self.assertEqual(collections.Counter(n.op_type for n in model.graph.node)["Conv"], 20)
        out = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
        self.assertEqual(out, [1, 1000])

    ATTENTION = textwrap.dedent('''
        import torch
        from torch import nn

        def attention():
            # batch_first: in eval mode without gradients torch takes the fused attention
            # kernel, which ONNX cannot express (ViT's encoder is built this way)
            layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, batch_first=True)
            return nn.TransformerEncoder(layer, 1, enable_nested_tensor=False), (torch.randn(2, 5, 16),)
        ''')

    def test_onnx_batch_first_attention_with_weights(self):
        src = self.path("attention_model.py")
        with open(src, "w", encoding="utf-8") as f:
            f.write(self.ATTENTION)
        path = self.path("attention.onnx")
        proc = export(f"{src}:attention", "--onnx", path, "--onnx-weights")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        model = onnx.load(path)
        onnx.checker.check_model(model, full_check=True)
        ops = collections.Counter(n.op_type for n in model.graph.node)
        self.assertEqual(ops["Softmax"], 1)
        self.assertTrue(all(t.data_location == onnx.TensorProto.DEFAULT and t.raw_data
                            for t in model.graph.initializer))
        self.assertFalse(any(name.endswith(".data") for name in os.listdir(os.path.dirname(path))))

    @unittest.skipUnless(os.environ.get("MEMOPT_PLAN") and os.environ.get("MEMOPT_ONNX") != "0",
                         "MEMOPT_PLAN names no memopt-plan reading ONNX (ctest sets it)")
    def test_onnx_resnet18_planned_like_the_traced_graph(self):
        # The same network through both front doors: the ONNX export read by memopt-plan has
        # the traced graph's program-order peak in both memory models, and the same optimum.
        path = self.path("resnet18_planned.onnx")
        self.assertEqual(export("resnet18", "--onnx", path).returncode, 0)
        plan = os.environ["MEMOPT_PLAN"]
        shipped = os.path.join(DATA, "resnet18_infer_b1.json")

        def plan_json(*args):
            proc = subprocess.run([plan, *args], capture_output=True, text=True, timeout=120)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            return json.loads(proc.stdout)

        for flags in ([], ["--no-alias"]):
            self.assertEqual(plan_json("peak", path, *flags)["peak_bytes"], plan_json("peak", shipped, *flags)["peak_bytes"])
        exact = plan_json("schedule", path, "--algo", "exact", "--work-limit", "100000")
        self.assertTrue(exact["proved_optimal"])
        self.assertEqual(exact["peak_bytes"], plan_json("schedule", shipped, "--algo", "exact", "--work-limit", "100000")["peak_bytes"])

    # ------------------------------------------------------------------ errors
    def check_error(self, proc):
        self.assertEqual(proc.returncode, 1)
        lines = proc.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, proc.stderr)
        self.assertTrue(lines[0].startswith("export_torch.py: error:"), lines[0])
        self.assertEqual(proc.stdout, "")

    def test_errors(self):
        proc = run_export("no_such_model_xyz", "--output", self.path("nothing.json"))
        self.check_error(proc)
        self.assertIn("unknown model", proc.stderr)
        self.assertFalse(os.path.exists(self.path("nothing.json")))
        self.check_error(run_export(f"{CELLS}:no_such_callable"))
        self.check_error(run_export("no_such_module_xyz.sub:fn"))

    # ------------------------------------------------------------------ cell stacks
    def export_cells(self, name, min_nodes, bn):
        out, onnx_path = self.path(f"{name}_infer_b1.json"), self.path(f"{name}_b1.onnx")
        proc = export(f"{CELLS}:{name}", "--output", out, "--onnx", onnx_path)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        graph = load(out)
        self.check_wellformed(graph)
        self.assertEqual(graph["name"], f"{name}_infer_b1")
        self.assertIn("torch.fx.symbolic_trace (module-level)", graph["source"])
        self.assertGreater(len(graph["nodes"]), min_nodes)
        self.assertGreater(peak_bytes(graph), 0)
        self.assertEqual(graph["nodes"][-1]["op"], "linear")
        model = self.check_onnx_graph_only(onnx_path, 1, max_size=1_000_000)
        self.assertEqual(collections.Counter(n.op_type for n in model.graph.node)["BatchNormalization"], bn)
        self.assertEqual(sum(1 for n in graph["nodes"] if n["op"] == "batch_norm2d"), bn)

    def test_randwire_matches_shipped(self):
        # scripts/models/randwire.py remakes the shipped RandWire graphs node for node
        try:
            import networkx  # noqa: F401  (python3-networkx)
        except ImportError:
            self.skipTest("python3-networkx is not installed")
        out = self.path("randwire_s1.json")
        model = os.path.join(REPO, "scripts", "models", "randwire.py") + ":randwire"
        proc = run_export(model, "--batch", "32", "--model-arg", "seed=1", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        mine = load(out)
        ref = load(os.path.join(DATA, "randwire_ws_s1_infer_b32.json"))
        self.check_wellformed(mine)
        self.assertEqual(len(mine["nodes"]), len(ref["nodes"]))
        for a, b in zip(mine["nodes"], ref["nodes"]):
            self.assertEqual(a, b)
        self.assertEqual(mine["outputs"], ref["outputs"])

    def test_gpt_matches_shipped(self):
        # scripts/models/gpt.py remakes the shipped GPT-like decoder: at batch 2 only sizes differ
        out = self.path("gpt_b2.json")
        proc = export(os.path.join(REPO, "scripts", "models", "gpt.py") + ":gpt", "--batch", "2", "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        graph = load(out)
        self.check_wellformed(graph)
        ref = load(os.path.join(DATA, "gpt_infer_b32.json"))

        def structure(n):
            attrs = {k: v for k, v in n.get("attrs", {}).items() if k not in ("shape", "shapes")}
            return (n["name"], n["op"], n.get("inputs"), n.get("control"), len(n["outputs"]), n.get("persistent"), attrs)
        self.assertEqual([structure(n) for n in graph["nodes"]], [structure(n) for n in ref["nodes"]])
        self.assertEqual(graph["outputs"], ref["outputs"])

    def test_gpt_training_step(self):
        # a small decoder's training step, its loss over every token
        out = self.path("gpt_train_b2.json")
        model = os.path.join(REPO, "scripts", "models", "gpt.py") + ":gpt"
        args = ["vocab=64", "seq=8", "d=32", "heads=2", "layers=2"]
        proc = export(model, "--train", "--batch", "2", *[a for kv in args for a in ("--model-arg", kv)], "--output", out)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        graph = load(out)
        params = [n for n in graph["nodes"] if n["op"] == "parameter" and "kind" not in n["attrs"]]
        self.assertEqual(len(params), 2 + 2 * 12 + 2 + 1)  # tok and pos, 2 blocks, final norm, head
        self.check_training(graph, params)
        nodes = {n["name"]: n for n in graph["nodes"]}
        self.assertEqual(nodes["x"]["attrs"]["shape"], [2, 8])
        self.assertEqual(nodes["target"]["attrs"]["shape"], [2, 8])  # a class id per token
        self.assertEqual(sum(1 for n in graph["nodes"] if n["op"] == "_log_softmax"), 1)

    def test_nasnet_a(self):
        self.export_cells("nasnet_a", 2000, 193)

    def test_darts(self):
        self.export_cells("darts", 1500, 163)


if __name__ == "__main__":
    if not HAVE_TORCH and os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        # run under Debian's interpreter, which has python3-torch (the pyenv python3 has not)
        os.execv("/usr/bin/python3", ["/usr/bin/python3", os.path.abspath(__file__), *sys.argv[1:]])
    unittest.main()
