"""Rewrites from Python: rematerialisation at a fraction of the best peak, its
rewritten graph checked against the figures it claims, the seed's passes, the
trade-off curve, and bad arguments."""

import unittest

import memopt
from support import data, is_topological_order, training_chain


class RewriteTest(unittest.TestCase):
    def test_remat_at_half_the_best_peak_fits_and_its_graph_reaches_peak_after(self):
        g = training_chain(12)
        best = memopt.schedule(g, "exact", work_limit=200_000).peak_bytes
        r = memopt.rewrite(g, 0.5)
        self.assertEqual(r.peak_before, best)
        self.assertEqual(r.budget, best // 2)
        self.assertTrue(r.fits)
        self.assertLessEqual(r.peak_after, r.budget)
        self.assertGreater(r.nodes_added, 0)
        self.assertEqual(r.nodes_added, len(r.graph) - len(g))
        self.assertEqual(r.order, r.graph.nodes)
        self.assertTrue(is_topological_order(r.graph, r.order))
        self.assertEqual(memopt.peak(r.graph, r.order).peak_bytes, r.peak_after)
        copies = [n for n in r.graph.to_json()["nodes"] if "copy_of" in n.get("attrs", {})]
        self.assertEqual(len(copies), r.nodes_added)
        self.assertTrue(all(n["attrs"]["rewrite"] for n in copies))
        self.assertEqual(len(r.plan["nodes"]), r.nodes_added)
        self.assertEqual(r.to_dict()["graph"], "mlp_train")

    def test_budget_in_bytes_out_of_reach(self):
        g = memopt.read_graph(data("rewrite", "bn_relu_train.json"))
        r = memopt.rewrite(g, 300)
        self.assertEqual((r.budget, r.peak_before), (300, 508))
        self.assertFalse(r.fits)
        self.assertIn("no plan fits", r.out_of_reach)
        self.assertEqual(r.floor["bytes"], 408)
        self.assertEqual(memopt.peak(r.graph, r.order).peak_bytes, r.peak_after)

    def test_the_seed_passes(self):
        g = memopt.read_graph(data("rewrite", "bn_relu_train.json"))
        for mode in memopt.rewrite_modes():
            with self.subTest(mode):
                r = memopt.rewrite(g, 450, mode)
                self.assertEqual(r.mode, mode)
                self.assertTrue(is_topological_order(r.graph, r.order))
                self.assertEqual(memopt.peak(r.graph, r.order).peak_bytes, r.peak_after)

    def test_curve(self):
        c = memopt.remat_curve(training_chain(6))
        self.assertEqual(len(c.curve), 11)
        self.assertEqual(c.curve[0]["budget"], c.peak_before)
        self.assertTrue(c.curve[0]["fits"])
        budgets = [p["budget"] for p in c.curve]
        self.assertEqual(budgets, sorted(budgets, reverse=True))
        self.assertTrue(all(p["peak"] >= c.floor["bytes"] for p in c.curve))  # nothing goes below the floor
        self.assertEqual(c.curve[-1]["budget"], c.floor["bytes"])

    def test_bad_arguments(self):
        g = training_chain(2)
        with self.assertRaisesRegex(memopt.Error, "budget is -1, not a whole number from 0"):
            memopt.rewrite(g, -1)
        with self.assertRaisesRegex(memopt.Error, r"budget 1.5 is a float, so a fraction of the best peak, and must be in \(0, 1\]"):
            memopt.rewrite(g, 1.5)
        with self.assertRaises(TypeError):
            memopt.rewrite(g, "half")
        with self.assertRaisesRegex(memopt.UnknownAlgorithmError, "unknown rewrite mode 'magic'"):
            memopt.rewrite(g, 100, "magic")
        with self.assertRaisesRegex(memopt.Error, "--feed names 'ghost', which is not a node of the graph"):
            memopt.rewrite(g, 100, feed=["ghost"])
        with self.assertRaisesRegex(memopt.Error, "local_search is -1, not a whole number from 0"):
            memopt.rewrite(g, 100, local_search=-1)

    def test_local_search_off_is_never_cheaper(self):
        g = training_chain(12)
        searched = memopt.rewrite(g, 0.4)
        greedy = memopt.rewrite(g, 0.4, local_search=0)
        self.assertNotIn("local search", greedy.method)
        self.assertEqual(greedy.budget, searched.budget)
        self.assertLessEqual(searched.extra_flops, greedy.extra_flops)


if __name__ == "__main__":
    unittest.main()
