"""Peaks, schedules, arenas, sharing and simulation from Python: exact figures on
hand-checked graphs, every scheduler's order checked, arena offsets checked."""

import os
import tempfile
import unittest

import memopt
from support import data, is_topological_order, plan_error, quickstart_graph, random_dag

# examples/data/small/README.md: (file, peak of the file's order, optimum).
SMALL = [("chain", 35, 35), ("diamond", 21, 12), ("fanout6", 25, 10), ("xla_counterexample", 5, 5),
         ("persistent", 40, 40), ("outputs_dead", 102, 101), ("control", 21, 21), ("multiport", 12, 12),
         ("greedy_trap", 15, 14)]


class PeakTest(unittest.TestCase):
    def test_quickstart(self):
        r = memopt.peak(quickstart_graph(), timeline=True)
        self.assertEqual((r.peak_bytes, r.peak_step, r.peak_node), (300, 2, "y"))
        self.assertEqual(r.persistent_bytes, 400)
        self.assertEqual(r.live_at_peak, ["x:0", "y:0"])
        self.assertEqual(r.timeline, [100, 100, 300, 250])
        self.assertEqual((r.nodes, r.edges, r.buffers, r.storages, r.aliased_outputs), (4, 3, 4, 4, 0))
        self.assertEqual(r.to_dict()["op_bound_bytes"], 300)
        self.assertIn("peak_bytes=300", repr(r))
        with self.assertRaises(AttributeError):
            r.no_such_field

    def test_small_graphs_and_their_optimum(self):
        for name, program, optimum in SMALL:
            with self.subTest(name):
                g = memopt.read_graph(data("small", name + ".json"))
                self.assertEqual(memopt.peak(g).peak_bytes, program)
                exact = memopt.schedule(g, "exact")
                self.assertEqual(exact.peak_bytes, optimum)
                self.assertTrue(exact.proved_optimal)
                self.assertEqual(memopt.peak(g, exact.order).peak_bytes, optimum)

    def test_order_errors_as_the_cli_words_them(self):
        g = quickstart_graph()
        with self.assertRaisesRegex(memopt.Error, "the order names 'ghost', which is not a node of the graph"):
            memopt.peak(g, ["x", "ghost"])
        with self.assertRaises(memopt.OrderError) as raised:
            memopt.peak(g, ["z", "y", "x", "w"])
        message = str(raised.exception)
        self.assertTrue(message.startswith("quickstart: "), message)
        with tempfile.TemporaryDirectory() as tmp:
            graph, order = os.path.join(tmp, "g.json"), os.path.join(tmp, "order.txt")
            g.write(graph)
            with open(order, "w") as f:
                f.write("z\ny\nx\nw\n")
            self.assertEqual(plan_error(["peak", graph, "--order", order]), graph + message[len("quickstart"):])
        with self.assertRaises(TypeError):
            memopt.peak(g, "xywz")


class ScheduleTest(unittest.TestCase):
    def test_every_scheduler_gives_a_valid_order_and_its_peak(self):
        g = random_dag(40, seed=7)
        names = memopt.schedulers()
        self.assertIn("exact", names)
        self.assertIn("best", names)
        for algo in names:
            with self.subTest(algo):
                r = memopt.schedule(g, algo, work_limit=20_000)
                self.assertEqual(r.algo, algo)
                self.assertTrue(is_topological_order(g, r.order))
                self.assertEqual(memopt.peak(g, r.order).peak_bytes, r.peak_bytes)
                self.assertLessEqual(r.lower_bound_bytes, r.peak_bytes)
                self.assertFalse(r.interrupted)

    def test_exact_with_a_work_limit_repeats(self):
        g = random_dag(60, seed=3)
        first = memopt.schedule(g, "exact", work_limit=5_000)
        second = memopt.schedule(g, "exact", work_limit=5_000)
        self.assertEqual(first.order, second.order)
        self.assertEqual(first.peak_bytes, second.peak_bytes)
        self.assertFalse(first.stopped_by_clock)

    def test_bad_arguments(self):
        g = quickstart_graph()
        with self.assertRaisesRegex(memopt.UnknownAlgorithmError, "unknown scheduler 'fastest'; known: program"):
            memopt.schedule(g, "fastest")
        with self.assertRaisesRegex(memopt.Error, "work_limit is -1, not a whole number from 0"):
            memopt.schedule(g, "exact", work_limit=-1)
        with self.assertRaisesRegex(memopt.Error, r"work_limit is 18446744073709551616, larger than 2\^64 - 1"):
            memopt.schedule(g, "exact", work_limit=2**64)
        huge = memopt.Graph("huge")
        huge.add_node("x", outputs=[1e30])
        with self.assertRaisesRegex(memopt.Error, r"node 'x': size 1e\+30 is larger than 2\^64 - 1 bytes"):
            memopt.peak(huge)
        with self.assertRaisesRegex(memopt.Error, "time_limit is 0, not a number of seconds above 0"):
            memopt.schedule(g, "exact", time_limit=0)
        with self.assertRaises(TypeError):
            memopt.schedule(g, "exact", work_limit="many")


class ArenaTest(unittest.TestCase):
    def check_offsets(self, g, r):
        """Every transient output has its size; no two buffers live at one step share an address."""
        sizes = {}
        for node in g.to_json()["nodes"]:
            if not node.get("persistent"):
                for port, size in enumerate(node["outputs"]):
                    sizes[f"{node['name']}:{port}"] = size
        self.assertEqual({k: v["size"] for k, v in r.offsets.items()}, sizes)
        self.assertTrue(is_topological_order(g, r.order))
        blocks = [b for b in r.offsets.values() if b["size"] > 0 and b["lower"] < b["upper"]]
        for k, a in enumerate(blocks):
            self.assertLessEqual(a["offset"] + a["size"], r.arena_bytes)
            for b in blocks[k + 1:]:
                if a["lower"] < b["upper"] and b["lower"] < a["upper"]:
                    self.assertTrue(a["offset"] + a["size"] <= b["offset"] or b["offset"] + b["size"] <= a["offset"],
                                    (a, b))

    def test_every_heap_algorithm_on_a_random_graph(self):
        g = random_dag(60, seed=11)
        for algo in memopt.arena_algorithms():
            with self.subTest(algo):
                r = memopt.arena(g, algo, schedule="program", work_limit=2_000)
                self.check_offsets(g, r)
                self.assertEqual(r.lower_bound_bytes, memopt.peak(g).peak_bytes)
                self.assertGreaterEqual(r.arena_bytes, r.lower_bound_bytes)

    def test_given_order_alignment_and_capacity(self):
        g = random_dag(30, seed=5)
        order = memopt.schedule(g, "dfs").order
        r = memopt.arena(g, "best-fit", order=order, alignment=64, capacity=10 ** 9)
        self.assertEqual(r.order, order)
        self.assertTrue(r.fits)
        self.assertTrue(all(b["offset"] % 64 == 0 for b in r.offsets.values()))
        self.check_offsets(g, r)

    def test_minimalloc_csv_as_the_cli_reads_it(self):
        csv = data("minimalloc", "examples", "input.12.csv")
        rows = memopt.read_minimalloc_csv(csv)
        self.assertEqual(len(rows), 5)
        self.assertEqual(set(rows[0]), {"id", "lower", "upper", "size", "alignment"})
        r = memopt.arena(csv, "exact")
        self.assertEqual((r.arena_bytes, r.proved_optimal), (12, True))
        self.assertEqual({row["id"] for row in rows}, set(r.offsets))
        with self.assertRaisesRegex(memopt.UnknownAlgorithmError, "unknown heap algorithm 'worst-fit'"):
            memopt.arena(csv, "worst-fit")


class ShareAndSimulateTest(unittest.TestCase):
    def test_sharing_plans(self):
        g = memopt.read_graph(data("small", "diamond.json"))
        for algo in ("linear", "dag"):
            with self.subTest(algo):
                r = memopt.share(g, algo)
                self.assertGreaterEqual(r.total_bytes, r.peak_bytes)
                self.assertLessEqual(r.total_bytes, r.unshared_bytes)
                buffers = [b for s in r.storages for b in s["buffers"]]
                self.assertEqual(len(buffers), len(set(buffers)))
        self.assertEqual(memopt.share(g, "linear", policy="best-fit").policy, "best-fit")
        with self.assertRaisesRegex(memopt.Error, "order applies to algo 'linear' only"):
            memopt.share(g, "dag", order=g.nodes)

    def test_sharing_says_whether_every_path_was_known(self):
        g = memopt.read_graph(data("nasnet_like_infer_b32.json"))
        exact = memopt.share(g, "dag")
        walk = memopt.share(g, "dag", exact_precedence_vertices=0, exact_block_vertices=1)
        self.assertTrue(exact.exact_precedence)
        self.assertFalse(walk.exact_precedence)
        self.assertEqual((exact.total_bytes, walk.total_bytes), (761197568, 1002443776))
        with self.assertRaisesRegex(memopt.Error, "exact_block_vertices apply to algo 'dag' only"):
            memopt.share(g, "linear", exact_precedence_vertices=8)
        with self.assertRaisesRegex(memopt.Error, "exact_block_vertices is 0"):
            memopt.share(g, "dag", exact_block_vertices=0)
        with self.assertRaisesRegex(memopt.Error, "exact_precedence_vertices is -1"):
            memopt.share(g, "dag", exact_precedence_vertices=-1)

    def test_simulation(self):
        g = quickstart_graph()
        r = memopt.simulate(g, {"devices": [{"name": "gpu", "memory_bytes": 1000}]}, arena=True)
        self.assertEqual(r.devices[0]["name"], "gpu")
        self.assertEqual(r.devices[0]["peak_bytes"], 300)
        self.assertTrue(is_topological_order(g, [run["node"] for run in r.schedule]))
        with self.assertRaisesRegex(memopt.Error, "config field 'devices' must be a non-empty list"):
            memopt.simulate(g, {"devices": []})
        with self.assertRaisesRegex(memopt.UnknownAlgorithmError, "unknown simulation policy 'random'"):
            memopt.simulate(g, policy="random")


if __name__ == "__main__":
    unittest.main()
