"""memopt from Python: the memory of computation graphs planned by memopt's C++ library.

    import memopt
    g = memopt.Graph("toy")
    g.add_node("x", outputs=[100])
    g.add_node("w", outputs=[400], persistent=True)
    g.add_node("y", inputs=["x", "w"], outputs=[200])
    g.add_node("z", inputs=["y"], outputs=[50])
    g.add_output("z")
    memopt.peak(g)                     # peak_bytes=300 peak_step=2 ...
    memopt.schedule(g, "best").order   # ['x', 'w', 'y', 'z'] or another best order

A graph is built node by node (Graph), from a memopt-graph/1 dict
(Graph.from_json) or read from a file (read_graph: .json, .json.gz, .onnx).
Each function returns a result whose attributes are the fields of the
memopt-plan subcommand's JSON of the same name (docs/graph-format.md,
docs/cli.md); to_dict() gives them all. alias=False counts
every output apart (memopt-plan's --no-alias). Bad input raises memopt.Error
(or its kinds FormatError, OrderError, UnknownAlgorithmError) with the
message memopt-plan prints. Searches run with the GIL released; Ctrl-C ends
one with its best so far, and its result says interrupted=True.
"""

import math as _math
import numbers as _numbers

from . import _memopt
from ._memopt import (Error, FormatError, Graph, OrderError, UnknownAlgorithmError, arena_algorithms,
                      read_minimalloc_csv, rewrite_modes, schedulers)
from ._results import (ArenaResult, CurveResult, PeakResult, Result, RewriteResult, ScheduleResult,
                       SharingResult, SimulationResult)

__all__ = ["Error", "FormatError", "OrderError", "UnknownAlgorithmError", "Graph", "read_graph",
           "read_minimalloc_csv", "peak", "schedulers", "schedule", "arena_algorithms", "arena", "share",
           "simulate", "rewrite_modes", "rewrite", "remat_curve", "Result", "PeakResult", "ScheduleResult",
           "ArenaResult", "SharingResult", "SimulationResult", "RewriteResult", "CurveResult"]


def _whole(name, value, least=0):
    """value as a whole number from `least` (None stays None)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, _numbers.Integral):
        raise TypeError(f"{name} must be a whole number, not {type(value).__name__}")
    if value < least:
        raise Error(f"{name} is {value}, not a whole number from {least}")
    if value > 2**64 - 1:
        raise Error(f"{name} is {value}, larger than 2^64 - 1")
    return int(value)


def _seconds(name, value):
    """value as a number of seconds above 0 (None stays None)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not (value > 0 and _math.isfinite(value)):
        raise Error(f"{name} is {value}, not a number of seconds above 0")
    return float(value)


def _names(name, value):
    """value as a list of node names (None stays None)."""
    if value is None:
        return None
    if isinstance(value, str):
        raise TypeError(f"{name} must be a list of node names, not a string")
    return list(value)


def read_graph(path, dims=None):
    """The graph of a memopt-graph/1 file (.json, or gzipped), or of an ONNX model
    (.onnx), whose dynamic dimensions `dims` sizes, e.g. {"batch": 32}."""
    return _memopt.read_graph(str(path), dict(dims or {}))


def peak(graph, order=None, *, timeline=False, alias=True):
    """memopt-plan peak: the peak live bytes of `order` (node names; default the
    graph's own order), where they are reached, and with timeline=True the live
    bytes at every step."""
    return PeakResult(_memopt.peak(graph, _names("order", order), bool(timeline), bool(alias)))


def schedule(graph, algo="best", *, time_limit=None, work_limit=None, alias=True):
    """memopt-plan schedule: an order of the ops with a low peak, by the scheduler
    `algo` (memopt.schedulers()). exact and best search within time_limit
    seconds and work_limit states; a work limit alone gives the same order on
    any machine. order: node names."""
    return ScheduleResult(_memopt.schedule(graph, algo, _seconds("time_limit", time_limit),
                                           _whole("work_limit", work_limit), bool(alias)))


def arena(graph, algo="best", *, schedule="best", order=None, capacity=None, alignment=None, time_limit=None,
          work_limit=None, alias=True, may_alias=False):
    """memopt-plan arena: an offset for every transient buffer in one arena, by the
    heap algorithm `algo` (memopt.arena_algorithms()), for the lifetimes of
    `order` (node names) or else of the scheduler `schedule`. `graph` may also be
    the path of a MiniMalloc CSV. offsets: "node:port" -> offset, size, and the
    lifetime [lower, upper) in steps of the result's order. may_alias=True turns on
    in-place reuse (--in-place): an output marked may_alias takes over its input's
    storage where its op reads it last, in the schedule and the arena alike."""
    capacity = _whole("capacity", capacity)
    time_limit = _seconds("time_limit", time_limit)
    work_limit = _whole("work_limit", work_limit)
    if isinstance(graph, Graph):
        alignment = _whole("alignment", 1 if alignment is None else alignment, least=1)
        return ArenaResult(_memopt.arena(graph, algo, schedule, _names("order", order), capacity, alignment,
                                         time_limit, work_limit, bool(alias), bool(may_alias)))
    if order is not None or alignment is not None:
        raise Error("order and alignment apply to a graph, not to a MiniMalloc CSV")
    return ArenaResult(_memopt.arena_csv(str(graph), algo, capacity, time_limit, work_limit))


def share(graph, algo="dag", *, order=None, policy=None, alias=True, exact_precedence_vertices=None,
          exact_block_vertices=None):
    """memopt-plan share: which buffers may share storage: "linear" for one order
    (`order`, default the graph's own), "dag" for every order; policy: lifo,
    best-fit or caffe2 (default: the algorithm's). dag knows every path on graphs
    of at most exact_precedence_vertices vertices (default 16384), on larger ones
    those within blocks of exact_block_vertices ops of its walk (default 2048);
    its result's exact_precedence says whether it knew every path."""
    if algo == "dag" and order is not None:
        raise Error("share: order applies to algo 'linear' only")
    if algo == "linear" and (exact_precedence_vertices is not None or exact_block_vertices is not None):
        raise Error("share: exact_precedence_vertices and exact_block_vertices apply to algo 'dag' only")
    return SharingResult(_memopt.share(graph, algo, _names("order", order), policy or "", bool(alias),
                                       _whole("exact_precedence_vertices", exact_precedence_vertices),
                                       _whole("exact_block_vertices", exact_block_vertices, least=1)))


def simulate(graph, config=None, *, policy="composite", arena=False, alias=True):
    """memopt-plan simulate: the graph run as grappler's virtual scheduler would,
    on the machine of `config` (a dict as memopt-plan simulate's CONFIG file;
    default one device), under the ready policy `policy`; arena=True also plans
    each device's arena."""
    return SimulationResult(_memopt.simulate(graph, config, policy, bool(arena), bool(alias)))


def _budget(value):
    """(bytes, None) for a whole number of bytes, (None, fraction) for a float in (0, 1]."""
    if isinstance(value, bool) or not isinstance(value, _numbers.Real):
        raise TypeError(f"budget must be bytes (int) or a fraction of the best peak (float), "
                        f"not {type(value).__name__}")
    if isinstance(value, _numbers.Integral):
        return _whole("budget", value), None
    if not 0 < value <= 1:
        raise Error(f"budget {value} is a float, so a fraction of the best peak, and must be in (0, 1]")
    return None, float(value)


def rewrite(graph, budget, mode="remat", *, recompute="heuristic", scope="gradients/", feed=None, config=None,
            replay_random=False, work_limit=200_000, rounds=25, local_search=48, alias=True):
    """memopt-plan rewrite: a plan that lowers the graph's peak under `budget`.

    budget: bytes (an int), or a fraction of the best schedule's peak (a float in
    (0, 1]; 0.5 is half of peak_before). mode: "remat" (the budget-driven
    rematerialisation planner) or the memory optimizer's passes "recompute",
    "swap", "accumulate", "all" (memopt.rewrite_modes()); recompute, scope,
    feed (node names never recomputed), config (memopt-plan simulate's, as a
    dict), replay_random (recomputed random draws are replayed, as
    torch.utils.checkpoint does), work_limit (states of each schedule search),
    rounds and local_search (trials of the remat planner's local search, 0:
    none) as memopt-plan rewrite's options. The seed's passes are guarded:
    only the groups of their plan that lower the best peak are kept (the fields
    dropped and guard say what went). The result also has .graph,
    the rewritten memopt.Graph with its nodes in the order reaching peak_after
    (copies carry attrs.copy_of and attrs.rewrite), and .order, their names.
    """
    budget_bytes, budget_fraction = _budget(budget)
    fields, rewritten, order = _memopt.rewrite(graph, budget_bytes, budget_fraction, mode, recompute, scope,
                                               _names("feed", feed) or [], config,
                                               _whole("work_limit", work_limit), _whole("rounds", rounds, least=1),
                                               _whole("local_search", local_search), bool(replay_random), bool(alias))
    return RewriteResult(fields, rewritten, order)


def remat_curve(graph, *, feed=None, replay_random=False, work_limit=200_000, alias=True):
    """memopt-plan rewrite --curve: the rematerialisation planner at eleven budgets
    from the best peak down to the floor (curve: budget, peak, fits, extra_flops,
    extra_flops_percent, extra_flops_floor_percent, nodes_added)."""
    return CurveResult(_memopt.remat_curve(graph, _names("feed", feed) or [], _whole("work_limit", work_limit),
                                           bool(replay_random), bool(alias)))
