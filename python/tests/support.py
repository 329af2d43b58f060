"""What the Python tests share: where the data and memopt-plan are (ctest sets
MEMOPT_DATA_DIR and MEMOPT_PLAN), small graphs with known peaks, generated
graphs, and a check that an order is a topological order of a graph."""

import json
import os
import random
import subprocess

import memopt

DATA_DIR = os.environ.get("MEMOPT_DATA_DIR",
                          os.path.join(os.path.dirname(__file__), "..", "..", "examples", "data"))
MEMOPT_PLAN = os.environ.get("MEMOPT_PLAN", "")
WITH_ONNX = os.environ.get("MEMOPT_ONNX", "1") == "1"


def data(*parts):
    return os.path.join(DATA_DIR, *parts)


def quickstart_graph():
    """The README's quickstart: x (100 B), persistent w (400 B), y (200 B), output z (50 B); peak 300 at step 2."""
    g = memopt.Graph("quickstart")
    g.add_node("x", outputs=[100])
    g.add_node("w", outputs=[400], persistent=True)
    g.add_node("y", inputs=["x:0", "w"], outputs=[200])
    g.add_node("z", inputs=["y:0"], outputs=[50])
    g.add_output("z:0")
    return g


def random_dag(nodes, seed, name="random", max_inputs=3):
    """A connected random DAG in program order: each node reads up to max_inputs
    earlier outputs (one of the last few, so that it is deep), sizes 1..1000 B."""
    rng = random.Random(seed)
    g = memopt.Graph(name)
    for v in range(nodes):
        inputs = set()
        if v > 0:
            inputs.add(f"n{rng.randrange(max(0, v - 4), v)}:0")
            for _ in range(rng.randrange(max_inputs)):
                inputs.add(f"n{rng.randrange(v)}:0")
        g.add_node(f"n{v}", op="op", inputs=sorted(inputs), outputs=[rng.randrange(1, 1000)], flops=rng.randrange(1, 100))
    g.add_output(f"n{nodes - 1}")
    return g


def training_chain(layers, name="mlp_train"):
    """An MLP's training step: x, then per layer a weight and a matmul; a loss; then
    per layer, backwards, the gradient of its input (reading the layer's input) and
    of its weight. Activations 1000 B, weights 100 B, gradients of weights outputs."""
    g = memopt.Graph(name)
    g.add_node("x", op="input", outputs=[1000])
    act = "x"
    for k in range(layers):
        g.add_node(f"w{k}", op="parameter", outputs=[100], persistent=True)
        g.add_node(f"fc{k}", op="matmul", inputs=[act, f"w{k}"], outputs=[1000], flops=10_000)
        act = f"fc{k}"
    g.add_node("loss", op="sum", inputs=[act], outputs=[4], flops=1000)
    grad = "loss"
    for k in reversed(range(layers)):
        layer_input = "x" if k == 0 else f"fc{k - 1}"
        g.add_node(f"gradients/fc{k}", op="matmul_backward", inputs=[grad, f"w{k}"], outputs=[1000], flops=10_000,
                   attrs={"phase": "backward"})
        g.add_node(f"gradients/w{k}", op="matmul_backward", inputs=[grad, layer_input], outputs=[100], flops=10_000,
                   attrs={"phase": "backward"})
        g.add_output(f"gradients/w{k}")
        grad = f"gradients/fc{k}"
    return g


def is_topological_order(graph, order):
    """Whether `order` holds every node once, each after its data and control predecessors."""
    doc = graph.to_json()
    position = {name: k for k, name in enumerate(order)}
    if len(position) != len(order) or set(position) != {n["name"] for n in doc["nodes"]}:
        return False
    for node in doc["nodes"]:
        before = [ref.rsplit(":", 1)[0] for ref in node.get("inputs", [])] + node.get("control", [])
        if any(position[p] >= position[node["name"]] for p in before):
            return False
    return True


def plan_error(args, doc=None, tmp_dir=None):
    """The message memopt-plan prints after "memopt-plan: " when it refuses `args`
    (doc, when given, is written to tmp_dir/graph.json and takes the place of {graph})."""
    if doc is not None:
        path = os.path.join(tmp_dir, "graph.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        args = [path if a == "{graph}" else a for a in args]
    run = subprocess.run([MEMOPT_PLAN] + args, capture_output=True, text=True, check=False)
    assert run.returncode == 1, run
    prefix = "memopt-plan: "
    assert run.stderr.startswith(prefix), run.stderr
    return run.stderr[len(prefix):].rstrip("\n")
