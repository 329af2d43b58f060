"""Ctrl-C during a search: SIGINT, sent by a timer to this process while an exact
schedule with a long time limit runs, ends it at once with its best order, and
the result says interrupted; a signal handler raising another exception stops
the search and that exception reaches the caller."""

import os
import signal
import threading
import time
import unittest

import memopt
from support import is_topological_order, random_dag

DELAY = 0.5  # seconds before the signal


def signal_later():
    timer = threading.Timer(DELAY, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    return timer


class InterruptTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graph = random_dag(600, seed=1, name="interrupted")

    def test_sigint_ends_an_exact_schedule_with_its_best(self):
        started = time.monotonic()
        timer = signal_later()
        r = memopt.schedule(self.graph, "exact", time_limit=600)
        elapsed = time.monotonic() - started
        timer.join()
        self.assertTrue(r.interrupted)
        self.assertLess(elapsed, DELAY + 5)
        self.assertTrue(is_topological_order(self.graph, r.order))
        self.assertEqual(memopt.peak(self.graph, r.order).peak_bytes, r.peak_bytes)

    def test_an_exception_from_a_signal_handler_stops_the_search(self):
        def handler(signum, frame):
            raise RuntimeError("stopped by the handler")

        previous = signal.signal(signal.SIGINT, handler)
        try:
            started = time.monotonic()
            timer = signal_later()
            with self.assertRaisesRegex(RuntimeError, "stopped by the handler"):
                memopt.schedule(self.graph, "exact", time_limit=600)
            self.assertLess(time.monotonic() - started, DELAY + 5)
            timer.join()
        finally:
            signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    unittest.main()
