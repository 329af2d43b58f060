#!/usr/bin/python3
"""Real exports through memopt's ONNX importer, made at test time (ctest onnx_exports).

ShuffleNet-v2 x0.5 (64x64 input) and a 2-layer nn.TransformerEncoder
(scripts/models/transformer.py), batch 1, exported by scripts/export_torch.py at opsets 13
and 17: ONNX 1.12's own shape inference leaves tensors of each without a shape (checked),
memopt-plan imports every one, the two opsets of the same network have the same peak, and
`convert --schedule best` writes a model that onnx.checker accepts, with the same nodes, in
an order whose peak is the schedule's.  Needs MEMOPT_PLAN (ctest sets it) and Debian's
/usr/bin/python3 with torch, torchvision and onnx.  About 30 s.
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest

import onnx
from onnx import helper, shape_inference

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXPORTER = os.path.join(REPO, "scripts", "export_torch.py")
MODELS = {"shufflenet": ["shufflenet_v2_x0_5", "--input-shape", "3,64,64"],
          "encoder": [os.path.join(REPO, "scripts", "models", "transformer.py") + ":encoder"]}
PLAN = os.environ.get("MEMOPT_PLAN")


def plan(*args):
    run = subprocess.run([PLAN, *args], capture_output=True, text=True, timeout=300)
    if run.returncode != 0:
        raise AssertionError(f"memopt-plan {' '.join(args)}: {run.stderr.strip()}")
    return json.loads(run.stdout)


def unsized_by_onnx(path):
    """How many node outputs ONNX's own inference (data propagation on) leaves without a static shape."""
    model = without_initializers(onnx.load(path, load_external_data=False))
    inferred = shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    sized = {v.name for v in list(inferred.graph.value_info) + list(inferred.graph.output)
             if v.type.tensor_type.HasField("shape")
             and all(d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)}
    return sum(1 for n in inferred.graph.node for o in n.output if o and o not in sized)


def without_initializers(model):
    """The model with its initializers (data not written: graph-only) declared as typed inputs."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for t in copy.graph.initializer:
        copy.graph.input.append(helper.make_tensor_value_info(t.name, t.data_type, list(t.dims)))
    del copy.graph.initializer[:]
    return copy


@unittest.skipUnless(PLAN, "MEMOPT_PLAN names the memopt-plan binary")
class OnnxExports(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.TemporaryDirectory()
        cls.files = {}
        for name, args in MODELS.items():
            for opset in (13, 17):
                path = os.path.join(cls.dir.name, f"{name}.opset{opset}.onnx")
                subprocess.run([sys.executable, EXPORTER, *args, "--batch", "1", "--onnx", path, "--opset", str(opset),
                                "--quiet"], check=True, timeout=300)
                cls.files[name, opset] = path

    @classmethod
    def tearDownClass(cls):
        cls.dir.cleanup()

    def test_every_export_imports_where_onnx_inference_stops(self):
        for (name, opset), path in self.files.items():
            with self.subTest(model=name, opset=opset):
                self.assertGreater(unsized_by_onnx(path), 0)
                self.assertGreater(plan("peak", path)["peak_bytes"], 0)

    def test_both_opsets_of_shufflenet_have_the_same_graph_and_peak(self):
        at13 = plan("peak", self.files["shufflenet", 13])
        at17 = plan("peak", self.files["shufflenet", 17])
        self.assertEqual(at13["nodes"], at17["nodes"])
        self.assertEqual(at13["peak_bytes"], at17["peak_bytes"])

    def test_convert_schedule_writes_a_valid_model_in_that_order(self):
        for name in MODELS:
            with self.subTest(model=name):
                source = self.files[name, 17]
                written = os.path.join(self.dir.name, f"{name}.best.onnx")
                summary = plan("convert", source, "--schedule", "best", "--work-limit", "100000", "--output", written)
                original = onnx.load(source, load_external_data=False)
                model = onnx.load(written, load_external_data=False)
                onnx.checker.check_model(without_initializers(model))
                self.assertEqual(sorted(n.output[0] for n in model.graph.node),
                                 sorted(n.output[0] for n in original.graph.node))
                self.assertEqual(list(model.graph.initializer), list(original.graph.initializer))
                self.assertEqual(plan("peak", written)["peak_bytes"], summary["peak_bytes"])


if __name__ == "__main__":
    unittest.main()
