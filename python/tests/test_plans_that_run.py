"""The five models of scripts/plans_that_run.py, small: every plan run, measured and compared.

ResNet-18, MobileNet-v2 and RandWire at 2×3×64×64, the token encoder and the GPT-like
decoder (both with dropout) at batch 2: the program order, the best order and the ½ and ⅓
budgets are each run; the outputs (loss and every gradient) are bit-identical to the traced
step's, the measured peak is within 0.5 % of the prediction, and a plan that fits measures
at most 1.005 × its budget (one that does not fit says why).
"""

import os
import sys
import unittest

try:
    import torch  # noqa: F401
    import torchvision  # noqa: F401
except ImportError:
    raise unittest.SkipTest("PyTorch for this interpreter is not installed (scripts/install-deps.sh installs it)")

REPO = os.environ.get("MEMOPT_REPO") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "scripts"))
import plans_that_run  # noqa: E402


class PlansThatRun(unittest.TestCase):
    def check(self, name):
        row = plans_that_run.row(name, batch=2, image=64, baselines=False)
        self.assertEqual(set(row["plans"]), {"program", "best", "1/2", "1/3"})
        for label, plan in row["plans"].items():
            with self.subTest(plan=label):
                self.assertTrue(plan["identical"], "outputs differ from the traced step's")
                self.assertLessEqual(abs(plan["measured"] - plan["predicted"]), 0.005 * plan["predicted"],
                                     f"measured {plan['measured']}, predicted {plan['predicted']}")
                if plan["budget"] is None:
                    continue
                if plan["fits"]:
                    self.assertLessEqual(plan["measured"], 1.005 * plan["budget"])
                else:
                    self.assertTrue(plan["out_of_reach"], "a plan over its budget says why")
        self.assertLessEqual(row["plans"]["best"]["predicted"], row["plans"]["program"]["predicted"])

    def test_resnet18(self):
        self.check("resnet18")

    def test_mobilenet_v2(self):
        self.check("mobilenet_v2")

    def test_encoder(self):
        self.check("encoder")

    def test_gpt(self):
        self.check("gpt")

    def test_randwire(self):
        self.check("randwire")


if __name__ == "__main__":
    unittest.main()
