"""memopt.Graph: built from Python, to and from memopt-graph/1, read from files
(.json, .json.gz, .onnx), and the errors of bad graphs, worded as memopt-plan words them."""

import os
import tempfile
import unittest

import memopt
from support import WITH_ONNX, data, plan_error, quickstart_graph


class GraphTest(unittest.TestCase):
    def test_built_node_by_node(self):
        g = quickstart_graph()
        self.assertEqual(len(g), 4)
        self.assertEqual(g.nodes, ["x", "w", "y", "z"])
        self.assertEqual(g.name, "quickstart")
        doc = g.to_json()
        self.assertEqual(doc["format"], "memopt-graph/1")
        self.assertEqual(doc["nodes"][2], {"name": "y", "inputs": ["x:0", "w:0"], "outputs": [200]})
        self.assertEqual(doc["nodes"][1]["persistent"], True)
        self.assertEqual(doc["outputs"], ["z:0"])
        self.assertIn("4 nodes", repr(g))

    def test_every_node_field(self):
        g = memopt.Graph()
        g.add_node("a", op="input", outputs=[8, 16], device="/gpu:0", flops=2.5, attrs={"shape": [2, (1, 2)], "k": None})
        g.add_node("b", op="view", inputs=["a:1"], control=["a"], outputs=[16], scratch_bytes=100,
                   attrs={"alias": "a:1", "view": True})
        node_a, node_b = g.to_json()["nodes"]
        self.assertEqual(node_a, {"name": "a", "op": "input", "outputs": [8, 16], "flops": 2.5, "device": "/gpu:0",
                                  "attrs": {"shape": [2, [1, 2]], "k": None}})
        self.assertEqual(node_b["control"], ["a"])
        self.assertEqual(node_b["scratch_bytes"], 100)
        peak = memopt.peak(g)
        self.assertEqual(peak.aliased_outputs, 1)  # b lives in a's port 1
        self.assertEqual(peak.peak_bytes, 116)  # at b: a's port 1 and b's scratch (a's port 0 died unread)
        self.assertEqual(memopt.peak(g, alias=False).peak_bytes, 132)  # b's own 16 bytes too

    def test_json_round_trip_and_the_cache_follows_changes(self):
        g = quickstart_graph()
        self.assertEqual(memopt.peak(g).peak_bytes, 300)
        copy = memopt.Graph.from_json(g.to_json())
        self.assertEqual(copy.to_json(), g.to_json())
        import json
        self.assertEqual(memopt.Graph.from_json(json.dumps(g.to_json())).nodes, g.nodes)
        g.add_node("big", inputs=["z"], outputs=[1000])
        self.assertEqual(memopt.peak(g).peak_bytes, 1050)  # the graph was rebuilt
        self.assertEqual(memopt.peak(copy).peak_bytes, 300)

    def test_write_and_read_json_and_gzip(self):
        g = quickstart_graph()
        with tempfile.TemporaryDirectory() as tmp:
            for name in ("g.json", "g.json.gz"):
                path = os.path.join(tmp, name)
                g.write(path)
                back = memopt.read_graph(path)
                self.assertEqual(back.to_json(), g.to_json())
            with open(os.path.join(tmp, "g.json.gz"), "rb") as f:
                self.assertEqual(f.read(2), b"\x1f\x8b")

    def test_read_shipped_graphs(self):
        g = memopt.read_graph(data("small", "diamond.json"))
        self.assertEqual(memopt.peak(g).peak_bytes, 21)
        train = memopt.read_graph(data("resnet18_train_b32.json"))
        self.assertGreater(len(train), 100)

    @unittest.skipUnless(WITH_ONNX, "built without ONNX import")
    def test_read_onnx_with_dims(self):
        g = memopt.read_graph(data("onnx", "resnet18_b1.onnx"))
        self.assertGreater(len(g), 40)
        self.assertGreater(memopt.peak(g).peak_bytes, 0)
        with self.assertRaisesRegex(memopt.Error, "dims apply to ONNX models only"):
            memopt.read_graph(data("small", "diamond.json"), dims={"batch": 2})
        with self.assertRaisesRegex(memopt.Error, "not a size from 1"):
            memopt.read_graph(data("onnx", "resnet18_b1.onnx"), dims={"batch": 0})


class GraphErrorTest(unittest.TestCase):
    """Each bad graph: a FormatError with memopt-plan's message (the graph's file
    names it there; a graph built in Python is named by its name)."""

    def check_as_cli(self, g, fragment):
        with self.assertRaises(memopt.FormatError) as raised:
            memopt.peak(g)
        message = str(raised.exception)
        self.assertIn(fragment, message)
        self.assertTrue(message.startswith(g.name + ": "), message)
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "graph.json")
            g.write(path)
            with self.assertRaises(memopt.FormatError) as from_file:
                memopt.read_graph(path)
            self.assertEqual(str(from_file.exception), path + message[len(g.name):])
            self.assertEqual(plan_error(["peak", path]), str(from_file.exception))

    def test_cycle(self):
        g = memopt.Graph("cyclic")
        g.add_node("a", inputs=["b"], outputs=[1])
        g.add_node("b", inputs=["a"], outputs=[1])
        self.check_as_cli(g, "the graph has a cycle: '")

    def test_bad_port(self):
        g = quickstart_graph()
        g.add_node("bad", inputs=["z:3"], outputs=[1])
        self.check_as_cli(g, "node 'bad': input \"z:3\" reads port 3 of 'z', which has 1 output")

    def test_unknown_input(self):
        g = quickstart_graph()
        g.add_node("bad", inputs=["ghost:0"], outputs=[1])
        self.check_as_cli(g, "names node 'ghost', which does not exist")

    def test_duplicate_name_and_negative_size(self):
        g = quickstart_graph()
        g.add_node("x", outputs=[1])
        self.check_as_cli(g, "node 'x': duplicate node name")
        h = memopt.Graph("negative")
        h.add_node("a", outputs=[-4])
        self.check_as_cli(h, "node 'a': size -4 is negative")
        s = memopt.Graph("negative_scratch")
        s.add_node("a", outputs=[4], scratch_bytes=-1)
        self.check_as_cli(s, "node 'a': scratch_bytes -1 is negative")

    def test_bad_documents_and_values(self):
        with self.assertRaisesRegex(memopt.FormatError, "format is \"memopt-graph/2\""):
            memopt.Graph.from_json({"format": "memopt-graph/2", "nodes": []})
        with self.assertRaisesRegex(memopt.FormatError, "not JSON"):
            memopt.Graph.from_json("{nodes")
        with self.assertRaisesRegex(memopt.FormatError, "cannot open"):
            memopt.read_graph("/nonexistent/graph.json")
        with self.assertRaisesRegex(TypeError, "node 'a' attrs.f is a builtin_function_or_method, which JSON has no form for"):
            memopt.Graph().add_node("a", outputs=[1], attrs={"f": len})
        with self.assertRaisesRegex(TypeError, "which does not fit 64 bits"):
            memopt.Graph().add_node("a", outputs=[2 ** 70])
        with self.assertRaises(TypeError):
            memopt.Graph().add_node("a", outputs=[1], inputs="x:0")


if __name__ == "__main__":
    unittest.main()
