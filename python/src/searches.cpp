// _memopt's schedules and arenas: the registries' algorithms by name, the
// searches run with the GIL released and ended by Ctrl-C with their best.

#include "bindings.hpp"
#include "json_value.hpp"
#include "released.hpp"

#include <plan/arena.hpp>
#include <plan/schedule.hpp>

#include <pybind11/stl.h>

namespace memopt::python {

namespace {

py::object schedule(graph_document& d, const std::string& algo, std::optional<double> time_limit,
                    std::optional<std::uint64_t> work_limit, bool alias) {
  static_cast<void>(schedule::by_name(algo));
  std::atomic<bool> stop{false};
  const search_limits limits{.time_limit_seconds = time_limit, .work_limit = work_limit, .stop = &stop};
  return to_python(run_on_graph(d.graph(alias), d.label(), stop, on_interrupt::stop_search,
                                [&](const io::file_graph& g) { return plan::schedule_json(g, algo, limits); }));
}

/// The request of memopt.arena; `stop` the flag its searches read.
plan::arena_request arena_request(const std::string& algo, std::optional<std::uint64_t> capacity,
                                  std::optional<double> time_limit, std::optional<std::uint64_t> work_limit,
                                  const std::atomic<bool>& stop) {
  static_cast<void>(heap::by_name(algo));
  return {.algo = algo, .capacity = capacity, .time_limit = time_limit, .work_limit = work_limit, .stop = &stop};
}

py::object arena(graph_document& d, const std::string& algo, const std::string& schedule,
                 const std::optional<std::vector<std::string>>& order, std::optional<std::uint64_t> capacity,
                 std::uint64_t alignment, std::optional<double> time_limit, std::optional<std::uint64_t> work_limit,
                 bool alias, bool may_alias) {
  std::atomic<bool> stop{false};
  auto request = arena_request(algo, capacity, time_limit, work_limit, stop);
  static_cast<void>(schedule::by_name(schedule));
  request.schedule = schedule;
  request.alignment = alignment;
  return to_python(run_on_graph(d.graph(alias, may_alias), d.label(), stop, on_interrupt::stop_search, [&](const io::file_graph& g) {
    if (order) request.order = order_named(g, order);
    return plan::arena_json(plan::graph_arena_input(g, request), request, &g).first;
  }));
}

/// The rows of a MiniMalloc CSV; a fault is a FormatError naming the file and line.
io::csv_problem read_csv(const std::string& path) {
  try {
    return io::read_minimalloc_csv(path);
  } catch (const error& e) {
    throw python_error(error_kind::format, e.what());
  }
}

py::object arena_csv(const std::string& path, const std::string& algo, std::optional<std::uint64_t> capacity,
                     std::optional<double> time_limit, std::optional<std::uint64_t> work_limit) {
  std::atomic<bool> stop{false};
  const auto request = arena_request(algo, capacity, time_limit, work_limit, stop);
  const plan::arena_input in{.problem = read_csv(path)};
  return to_python(run_released(stop, on_interrupt::stop_search, [&] {
    try {
      return plan::arena_json(in, request).first;
    } catch (const error& e) {
      throw python_error(kind_of(e), path + ": " + e.what());
    }
  }));
}

py::list csv_rows(const std::string& path) {
  const auto problem = read_csv(path);
  py::list rows;
  for (std::size_t b = 0; b < problem.buffers.size(); ++b) {
    const auto& buffer = problem.buffers[b];
    py::dict row;
    row["id"] = problem.ids[b];
    row["lower"] = buffer.lower;
    row["upper"] = buffer.upper;
    row["size"] = buffer.bytes;
    row["alignment"] = buffer.alignment;
    rows.append(std::move(row));
  }
  return rows;
}

}  // namespace

void bind_searches(py::module_& m) {
  m.def("schedulers", &schedule::names, "The schedulers' names, as memopt.schedule's algo takes them.");
  m.def("arena_algorithms", &heap::names, "The heap algorithms' names, as memopt.arena's algo takes them.");
  m.def("schedule", &schedule, py::arg("graph"), py::arg("algo"), py::arg("time_limit"), py::arg("work_limit"),
        py::arg("alias"));
  m.def("arena", &arena, py::arg("graph"), py::arg("algo"), py::arg("schedule"), py::arg("order"), py::arg("capacity"),
        py::arg("alignment"), py::arg("time_limit"), py::arg("work_limit"), py::arg("alias"), py::arg("may_alias"));
  m.def("arena_csv", &arena_csv, py::arg("path"), py::arg("algo"), py::arg("capacity"), py::arg("time_limit"),
        py::arg("work_limit"));
  m.def("read_minimalloc_csv", &csv_rows, py::arg("path"),
        "The rows of a MiniMalloc CSV as dicts: id, lower, upper (exclusive), size, alignment.");
}

}  // namespace memopt::python
