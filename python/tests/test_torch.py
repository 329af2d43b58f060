"""memopt.torch: plans traced from PyTorch, run in PyTorch, measured.

Small models on CPU: a GPT-like decoder with dropout (scripts/models/gpt.py)
and a residual MLP with batch norm. Each plan is run: its outputs (loss and
every gradient) must be bit-identical to the traced step's, and the profiler's
peak must match memopt's prediction.
"""

import os
import re
import sys
import unittest

try:
    import torch
    import torchvision  # noqa: F401 - the README journey's model
    from torch import nn
except ImportError:
    raise unittest.SkipTest("PyTorch for this interpreter is not installed (scripts/install-deps.sh installs it)")

import memopt
import memopt.torch as mt

REPO = os.environ.get("MEMOPT_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts", "models"))
from gpt import gpt  # noqa: E402


class ResidualMLP(nn.Module):
    def __init__(self, width=256, depth=4, classes=10):
        super().__init__()
        self.blocks = nn.ModuleList(
            nn.Sequential(nn.Linear(width, width), nn.BatchNorm1d(width), nn.ReLU(), nn.Dropout(0.2))
            for _ in range(depth))
        self.head = nn.Linear(width, classes)

    def forward(self, x):
        for block in self.blocks:
            x = x + block(x)
        return self.head(x)


def run(module, inputs, seed=7):
    torch.manual_seed(seed)
    return module(*inputs)


def identical(a, b):
    return len(a) == len(b) and all(torch.equal(x, y) for x, y in zip(a, b))


class GptDecoder(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        model, (ids,) = gpt(batch=4, vocab=512, seq=32, d=64, heads=4, layers=2, dropout=0.1)
        cls.step = mt.trace(model, ids)
        cls.reference = run(cls.step.module, cls.step.inputs)

    def check(self, plan, tolerance):
        gm = mt.apply(self.step, plan)
        self.assertTrue(identical(run(gm, self.step.inputs), self.reference), "outputs differ from the traced step")
        torch.manual_seed(7)
        measured = mt.measure(gm, self.step.inputs, repeat=1)["peak_bytes"]
        self.assertLessEqual(abs(measured - plan.predicted_peak_bytes), tolerance * plan.predicted_peak_bytes,
                             f"measured {measured}, predicted {plan.predicted_peak_bytes}")
        return measured

    def test_step_graph_is_what_the_call_allocates(self):
        graph = self.step.graph.to_json()
        inputs = [n for n in graph["nodes"] if n["op"] == "input"]
        self.assertEqual([n["name"] for n in inputs], ["x", "target"])
        self.assertTrue(all(n.get("persistent") for n in inputs))
        draws = [n for n in graph["nodes"] if n["op"] == "bernoulli_"]
        self.assertEqual(len(draws), 6)  # attention and two branches, in each of two blocks
        for before, after in zip(draws, draws[1:]):
            self.assertIn(before["name"], after.get("control", []))
        # the exporter's document stays as scripts/export_torch.py writes it
        self.assertFalse(any(n.get("persistent") for n in self.step.document["nodes"] if n["op"] == "input"))

    def test_program_order_is_measured_exactly(self):
        plan = mt.plan(self.step, algo="program")
        self.assertEqual(plan.predicted_peak_bytes, memopt.peak(self.step.graph).peak_bytes)
        self.assertEqual(self.check(plan, 0.0), plan.predicted_peak_bytes)
        self.assertEqual(mt.measure(self.step.module, self.step.inputs, repeat=1)["peak_bytes"],
                         plan.predicted_peak_bytes)

    def test_best_order(self):
        plan = mt.plan(self.step)
        self.assertIsNone(plan.budget)
        self.assertEqual(plan.copies, {})
        self.assertLessEqual(plan.predicted_peak_bytes, memopt.peak(self.step.graph).peak_bytes)
        self.check(plan, 0.0)

    def test_half_budget_replays_dropout(self):
        plan = mt.plan(self.step, budget=0.5)
        self.assertTrue(plan.fits)
        self.assertEqual(plan.random, "replayed")
        self.assertGreater(plan.extra_flops, 0)
        self.assertTrue(any(self.step.origin[o].target == torch.ops.aten.bernoulli_.float
                            for o in plan.copies.values()))
        # a mask's empty_like is remade from the traced shape alone: its copy reads nothing
        reading_nothing = [n["copy_of"] for n in plan.rewrite.plan["nodes"] if n.get("copy_of") and not n["inputs"]]
        self.assertTrue(reading_nothing)
        self.assertTrue(all(self.step.origin[o].target == torch.ops.aten.empty_like.default for o in reading_nothing))
        measured = self.check(plan, 0.005)
        self.assertLessEqual(measured, 1.005 * plan.budget)

    def test_third_of_the_bytes_budget(self):
        budget = mt.plan(self.step).predicted_peak_bytes // 3
        plan = mt.plan(self.step, budget=budget)
        self.assertEqual(plan.budget, budget)
        if plan.fits:
            self.assertLessEqual(self.check(plan, 0.01), 1.005 * budget)
        else:
            self.assertTrue(plan.rewrite.out_of_reach)

    def test_kept_draws_are_never_recomputed(self):
        plan = mt.plan(self.step, budget=0.5, replay_random=False)
        self.assertNotEqual(plan.random, "replayed")
        self.assertFalse(any(torch.Tag.nondeterministic_seeded in getattr(self.step.origin[o].target, "tags", ())
                             for o in plan.copies.values()))
        gm = mt.apply(self.step, plan)
        self.assertTrue(identical(run(gm, self.step.inputs), self.reference))

    def test_per_node_allocations(self):
        m = mt.measure(self.step.module, self.step.inputs, per_node=True, repeat=1)
        rows = {r["node"]: r for r in m["nodes"]}
        softmax = rows["_softmax"]
        self.assertEqual(softmax["allocated_bytes"], 4 * 4 * 32 * 32 * 4)  # batch, heads, seq, seq, float32


class ResidualMlp(unittest.TestCase):
    def test_fit_runs_the_step_in_half_the_memory(self):
        torch.manual_seed(0)
        model = ResidualMLP()
        x = torch.randn(512, 256)
        fitted = mt.fit(model, x, budget=0.5)
        reference = run(fitted.step.module, fitted.step.inputs)
        self.assertTrue(identical(run(fitted.module, fitted.step.inputs), reference))
        original = mt.measure(fitted.step.module, fitted.step.inputs, repeat=1)["peak_bytes"]
        measured = mt.measure(fitted.module, fitted.step.inputs, repeat=1)["peak_bytes"]
        self.assertTrue(fitted.plan.fits)
        self.assertLessEqual(measured, 1.005 * fitted.plan.budget)
        self.assertLess(measured, 0.6 * original)

    def test_inference_step(self):
        torch.manual_seed(0)
        model = ResidualMLP().eval()
        x = torch.randn(64, 256)
        step = mt.trace(model, x, train=False)
        with torch.no_grad():
            self.assertTrue(torch.equal(step.module(*step.inputs)[0], model(x)))
        plan = mt.plan(step)
        self.assertEqual(mt.measure(mt.apply(step, plan), step.inputs, repeat=1)["peak_bytes"],
                         plan.predicted_peak_bytes)


class Resnet18(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        torch.manual_seed(0)
        cls.step = mt.trace(torchvision.models.resnet18(), torch.randn(2, 3, 64, 64))

    def test_scratch_makes_the_prediction_exact(self):
        # oneDNN's convolutions copy their input and weight into blocked layouts while they
        # run, and their backward holds a blocked weight gradient: memory the outputs do not show
        step = self.step
        self.assertTrue(any(self.is_convolution(step, name) for name in step.scratch))
        without = step.graph.to_json()
        for node in without["nodes"]:
            node.pop("scratch_bytes", None)
        predicted = memopt.peak(step.graph).peak_bytes
        measured = mt.measure(step.module, step.inputs, repeat=1)["peak_bytes"]
        self.assertEqual(measured, predicted)
        self.assertLess(memopt.peak(memopt.Graph.from_json(without)).peak_bytes, measured)

    def test_a_recomputing_plan_keeps_every_scratch(self):
        # the rewritten graph: each original keeps its scratch, a copy runs its original's op again
        step = self.step
        plan = mt.plan(step, budget=0.5)
        scratch = {n["name"]: n.get("scratch_bytes", 0) for n in plan.graph.to_json()["nodes"]}
        for name, bytes_ in step.scratch.items():
            self.assertEqual(scratch[name], bytes_, name)
        self.assertTrue(plan.copies)
        self.assertTrue(any(step.scratch.get(original) for original in plan.copies.values()))
        for copy, original in plan.copies.items():
            self.assertEqual(scratch[copy], step.scratch.get(original, 0), copy)
        measured = mt.measure(mt.apply(step, plan), step.inputs, repeat=1)["peak_bytes"]
        self.assertEqual(measured, plan.predicted_peak_bytes)

    @staticmethod
    def is_convolution(step, name):
        return "convolution" in str(step.origin[name].target)


class RemadeFromShape(unittest.TestCase):
    """A copy of an op reading only its input's shape is remade from the traced layout: the same tensor."""

    def test_each_op_as_aten_makes_it(self):
        from memopt.torch._apply import remade_from_shape
        x = torch.randn(3, 5).t()  # strides (1, 5): the copy must keep them
        aten = torch.ops.aten
        cases = [("empty_like", aten.empty_like.default, (x,)), ("zeros_like", aten.zeros_like.default, (x,)),
                 ("ones_like", aten.ones_like.default, (x,)), ("full_like", aten.full_like.default, (x, 2.5)),
                 ("new_zeros", aten.new_zeros.default, (x, [2, 3])), ("new_ones", aten.new_ones.default, (x, [4])),
                 ("new_full", aten.new_full.default, (x, [2], 7.0)), ("rand_like", aten.rand_like.default, (x,)),
                 ("randn_like", aten.randn_like.default, (x,)), ("randint_like", aten.randint_like.default, (x, 9)),
                 ("randint_like", aten.randint_like.low_dtype, (x, 3, 9))]
        for name, op, args in cases:
            with self.subTest(op=name):
                torch.manual_seed(3)
                made = op(*args)
                torch.manual_seed(3)
                again = remade_from_shape(name, tuple(made.shape), made.stride(), made.dtype, made.device, (None,) + args[1:])
                self.assertEqual((again.shape, again.stride(), again.dtype), (made.shape, made.stride(), made.dtype))
                if name != "empty_like":
                    self.assertTrue(torch.equal(again, made))
        with self.assertRaises(mt.TraceError):
            remade_from_shape("add", (1,), (1,), torch.float32, x.device, (None,))


class Errors(unittest.TestCase):
    def test_trace_refuses_what_is_not_a_module(self):
        with self.assertRaises(memopt.Error) as caught:
            mt.trace(lambda x: x, torch.zeros(1))
        self.assertIn("torch.nn.Module", str(caught.exception))

    def test_plan_and_apply_check_their_arguments(self):
        with self.assertRaises(TypeError):
            mt.plan("not a step")
        torch.manual_seed(0)
        step = mt.trace(ResidualMLP(depth=1), torch.randn(8, 256))
        with self.assertRaises(TypeError):
            mt.apply(step, {"order": []})

    def test_an_order_leaving_nodes_out_is_refused(self):
        torch.manual_seed(0)
        step = mt.trace(ResidualMLP(depth=1), torch.randn(8, 256))
        plan = mt.plan(step)
        plan.order = plan.order[: len(plan.order) // 2]
        with self.assertRaises(memopt.Error) as caught:
            mt.apply(step, plan)
        self.assertIn("unrun", str(caught.exception))


class ReadmeJourney(unittest.TestCase):
    def test_the_readme_journey_runs(self):
        with open(os.path.join(REPO, "README.md")) as f:
            readme = f.read()
        blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
        journey = [b for b in blocks if "import memopt.torch" in b]
        self.assertEqual(len(journey), 1, "README.md has one Python block using memopt.torch")
        scope = {}
        exec(compile(journey[0], "README.md", "exec"), scope)  # noqa: S102 - the README's own example
        plan, measured = scope["plan"], scope["measured"]["peak_bytes"]
        self.assertTrue(plan.fits)
        self.assertLessEqual(measured, 1.005 * plan.budget)
        self.assertLessEqual(abs(measured - plan.predicted_peak_bytes), 0.005 * plan.predicted_peak_bytes)


if __name__ == "__main__":
    unittest.main()
