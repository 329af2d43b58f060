"""The install rule: `cmake --install <build> --component python` (here under a
DESTDIR) writes the whole package, extension and subpackages, where the
interpreter imports it from, and nothing of the C++ library besides."""

import os
import subprocess
import sys
import tempfile
import unittest

BUILD_DIR = os.environ.get("MEMOPT_BUILD_DIR", "")
SOURCE_PACKAGE = os.path.join(os.path.dirname(__file__), "..", "memopt")


@unittest.skipUnless(BUILD_DIR, "MEMOPT_BUILD_DIR (set by ctest) names the build to install")
class InstallTest(unittest.TestCase):
    def test_component_python_installs_an_importable_package(self):
        with tempfile.TemporaryDirectory() as destdir:
            subprocess.run(["cmake", "--install", BUILD_DIR, "--component", "python"], check=True,
                           env=dict(os.environ, DESTDIR=destdir), capture_output=True)
            installed = [os.path.join(root, f) for root, _, files in os.walk(destdir) for f in files]
            package_dirs = {os.path.dirname(p) for p in installed if p.endswith(os.sep + "memopt" + os.sep + "__init__.py")}
            self.assertEqual(len(package_dirs), 1, installed)
            package = package_dirs.pop()
            self.assertTrue(all(p.startswith(package + os.sep) for p in installed), installed)
            for root, _, files in os.walk(SOURCE_PACKAGE):
                for f in files:
                    if f.endswith(".py"):
                        relative = os.path.relpath(os.path.join(root, f), SOURCE_PACKAGE)
                        self.assertIn(os.path.join(package, relative), installed)
            check = ("import sys; sys.path.insert(0, sys.argv[1]); import memopt; "
                     "assert memopt.__file__.startswith(sys.argv[1]), memopt.__file__; "
                     "g = memopt.Graph(); g.add_node('a', outputs=[7]); print(memopt.peak(g).peak_bytes)")
            run = subprocess.run([sys.executable, "-I", "-c", check, os.path.dirname(package)], check=True,
                                 capture_output=True, text=True)
            self.assertEqual(run.stdout.strip(), "7")


if __name__ == "__main__":
    unittest.main()
