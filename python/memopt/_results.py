"""Results of memopt's functions: the fields of a memopt-plan subcommand's JSON
as attributes (nested objects as dicts and lists), and to_dict() for them all."""


class Result:
    """Fields by attribute; repr shows the scalar ones and the length of the others."""

    def __init__(self, fields):
        object.__setattr__(self, "_fields", fields)

    def __getattr__(self, name):
        try:
            return self._fields[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r} "
                                 f"(fields: {', '.join(self._fields)})") from None

    def __setattr__(self, name, value):
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __dir__(self):
        return sorted(set(super().__dir__()) | set(self._fields))

    def to_dict(self):
        """The fields as memopt-plan prints them (a new dict; nested values are shared)."""
        return dict(self._fields)

    def __repr__(self):
        shown = []
        for key, value in self._fields.items():
            if isinstance(value, (list, dict)):
                shown.append(f"{key}=<{len(value)} {'items' if isinstance(value, list) else 'fields'}>")
            else:
                shown.append(f"{key}={value!r}")
        return f"<memopt.{type(self).__name__} {' '.join(shown)}>"


class PeakResult(Result):
    """memopt-plan peak: the peak live bytes of one order."""


class ScheduleResult(Result):
    """memopt-plan schedule: an order of the ops and its peak."""


class ArenaResult(Result):
    """memopt-plan arena: offsets of every buffer in one arena."""


class SharingResult(Result):
    """memopt-plan share: which buffers share storage."""


class SimulationResult(Result):
    """memopt-plan simulate: a simulated run, per device."""


class CurveResult(Result):
    """memopt-plan rewrite --curve: rematerialisation at budgets from the best peak down to the floor."""


class RewriteResult(Result):
    """memopt-plan rewrite: the plan and its figures, plus .graph (the rewritten
    memopt.Graph, nodes in the order reaching peak_after, as --output writes it)
    and .order (its node names in that order). The JSON's own "graph" field, the
    graph's name, stays in to_dict()."""

    def __init__(self, fields, graph, order):
        super().__init__(fields)
        object.__setattr__(self, "graph", graph)
        object.__setattr__(self, "order", order)
