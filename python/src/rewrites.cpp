// _memopt's rewrites: the budget-driven rematerialisation planner and the
// seed's passes (recompute, swap, accumulate), their rewritten graph, and the
// planner's trade-off curve.

#include "bindings.hpp"
#include "json_value.hpp"
#include "released.hpp"

#include <plan/rewrite.hpp>

#include <pybind11/stl.h>

#include <cmath>

namespace memopt::python {

namespace {

/// (the JSON, the rewritten graph in the order reaching peak_after, that order's node names).
py::tuple rewrite(graph_document& d, std::optional<std::uint64_t> budget_bytes, std::optional<double> budget_fraction,
                  const std::string& mode, const std::string& recompute, const std::string& scope,
                  const std::vector<std::string>& feed, const py::object& config, std::uint64_t work_limit,
                  std::size_t rounds, std::size_t local_search, bool replay_random, bool alias) {
  check_name("rewrite mode", mode, plan::rewrite_modes());
  check_name("recompute mode", recompute, plan::recompute_modes());
  std::atomic<bool> stop{false};
  plan::rewrite_request request{.budget = budget_bytes.value_or(0), .mode = mode, .recompute = recompute, .scope = scope,
                                .feed = feed, .work_limit = work_limit, .rounds = rounds,
                                .local_search_trials = local_search, .replay_random = replay_random, .stop = &stop};
  if (!config.is_none()) request.config = plan::parse_simulation_config(nlohmann::json(to_json(config, "config")), "config");
  auto rewritten = run_on_graph(d.graph(alias), d.label(), stop, on_interrupt::stop_search, [&](const io::file_graph& g) {
    if (budget_fraction) {
      const auto best = exact_schedule(g, {.time_limit_seconds = std::nullopt, .work_limit = work_limit, .stop = &stop});
      request.budget = static_cast<std::uint64_t>(std::floor(*budget_fraction * static_cast<double>(best.peak_bytes)));
    }
    const auto answer = plan::rewrite_json(g, request);
    return std::pair(answer.json, plan::rewritten_graph_json(g, answer.report.graph, answer.plan, answer.report.order_after));
  });
  graph_document result(std::move(rewritten.second), "");
  py::list order(result.document()["nodes"].size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = to_python(result.document()["nodes"][k]["name"]);
  return py::make_tuple(to_python(rewritten.first), std::move(result), std::move(order));
}

py::object remat_curve(graph_document& d, const std::vector<std::string>& feed, std::uint64_t work_limit,
                       bool replay_random, bool alias) {
  std::atomic<bool> stop{false};
  const plan::rewrite_request request{.feed = feed, .work_limit = work_limit, .replay_random = replay_random, .stop = &stop};
  return to_python(run_on_graph(d.graph(alias), d.label(), stop, on_interrupt::stop_search, [&](const io::file_graph& g) {
    const auto s = plan::rewrite_setting_for(g, request);
    return plan::remat_curve_json(s.facts, plan::remat_curve_points(g, s.facts, s.remat, s.search));
  }));
}

}  // namespace

void bind_rewrites(py::module_& m) {
  m.def("rewrite_modes", &plan::rewrite_modes, "The modes memopt.rewrite takes.");
  m.def("rewrite", &rewrite, py::arg("graph"), py::arg("budget_bytes"), py::arg("budget_fraction"), py::arg("mode"),
        py::arg("recompute"), py::arg("scope"), py::arg("feed"), py::arg("config"), py::arg("work_limit"),
        py::arg("rounds"), py::arg("local_search"), py::arg("replay_random"), py::arg("alias"));
  m.def("remat_curve", &remat_curve, py::arg("graph"), py::arg("feed"), py::arg("work_limit"), py::arg("replay_random"),
        py::arg("alias"));
}

}  // namespace memopt::python
