#pragma once
// The exact reference for rematerialisation: Checkmate's mixed-integer
// programme (Jain et al., MLSys 2020) solved with CBC. Tests and benchmarks
// only; the library never depends on a solver.
//
// Setting: the graph's transient vertices run in a given topological order,
// stage t running vertex t last; before it, stage t may recompute any
// earlier vertex (in order) from values held or recomputed in the stage.
// Checkmate counts a vertex's output as one value; here each output is one
// (memopt's model frees them apart). Variables, for stage t: R(t,i) = vertex
// i runs in stage t, S(t,v) = value v is held into stage t, FREE(t,v,k) = v
// is freed after k runs in stage t, U(t,k) = bytes live while k runs in
// stage t (the op's inputs and outputs with everything held). Minimise the
// flops of the recomputations subject to U <= budget. FREE and U are
// continuous: FREE is bounded by each reason to keep v (k does not run, v
// is held into the next stage, a later reader runs in the stage) and the
// solver raises it as far as they allow, since freeing only helps. Values
// no later stage reads, nor anything recomputed for one, get no variables.
//
// The graph must have no views and no control edges; persistent vertices
// are weights read from anywhere, outside the peak as in the liveness model,
// run first. Graph outputs are held to the end.

#include <memopt/rewrite/graph.hpp>
#include <memopt/remat/runs.hpp>

#include <coin/Cbc_C_Interface.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace memopt::testing {

struct checkmate_result {
  enum class outcome { optimal, feasible, infeasible, unknown };
  outcome status = outcome::unknown;
  double extra_flops = 0;  ///< the best plan's (optimal or feasible)
  double bound = 0;        ///< no plan needs fewer extra flops
  std::vector<std::size_t> runs;  ///< the best plan as vertex runs (remat/runs.hpp)
};

struct checkmate_limits {
  double seconds = 60;
  int nodes = 1'000'000;  ///< branch-and-bound nodes: a limit that repeats
};

/// Checkmate's programme for f with its transient vertices run in the order
/// they have in `order` (a topological order of every vertex); vertices
/// with recomputable[v] false run once. `start`, when given, is a plan as
/// vertex runs (remat/runs.hpp) for the solver to start from, used when
/// it runs the originals in that order and fits the programme. Throws
/// std::invalid_argument for a graph outside the setting.
inline checkmate_result checkmate(const rewrite::graph_facts& f, std::span<const std::size_t> order,
                                  const std::vector<bool>& recomputable, std::uint64_t budget,
                                  checkmate_limits limits = {}, std::span<const std::size_t> start = {}) {
  // Transient vertices by position; their outputs as values.
  std::vector<std::size_t> vertex, position(f.size(), f.size()), weights;
  std::vector<std::size_t> producer;          // by value: its vertex's position
  std::vector<double> bytes;                  // by value
  std::vector<bool> live_out;                 // by value
  std::vector<std::vector<std::size_t>> outs; // by position: its values
  for (const std::size_t v : order) {
    if (!f.control[v].empty()) throw std::invalid_argument("checkmate: control edges into '" + f.name[v] + "'");
    if (f.persistent[v]) {
      weights.push_back(v);
      continue;
    }
    position[v] = vertex.size();
    outs.emplace_back();
    for (const auto& out : f.outputs[v]) {
      if (out.shares) throw std::invalid_argument("checkmate: '" + f.name[v] + "' has a view output");
      outs.back().push_back(producer.size());
      producer.push_back(vertex.size());
      bytes.push_back(static_cast<double>(out.bytes));
      live_out.push_back(out.live_out);
    }
    vertex.push_back(v);
  }
  const std::size_t m = vertex.size(), values = producer.size();
  std::vector<std::vector<std::size_t>> deps(m), users(values);  // values read by position; positions reading a value
  for (std::size_t k = 0; k < m; ++k) {
    for (const rewrite::operand& o : f.operands[vertex[k]]) {
      if (f.persistent[o.vertex]) continue;
      if (position[o.vertex] >= k) throw std::invalid_argument("checkmate: the order runs '" + f.name[vertex[k]] + "' before its input");
      const std::size_t v = outs[position[o.vertex]][o.port];
      if (std::ranges::find(deps[k], v) == deps[k].end()) {
        deps[k].push_back(v);
        users[v].push_back(k);
      }
    }
  }
  const auto may_rerun = [&](std::size_t i) { return recomputable[vertex[i]]; };

  // Only values stage t or a later one reads, and what recomputing them
  // reads, can matter in stage t.
  std::vector<std::size_t> last_read(values);
  for (std::size_t v = 0; v < values; ++v) last_read[v] = live_out[v] ? m : users[v].empty() ? producer[v] : users[v].back();
  std::vector<std::vector<bool>> matters(m);  // by stage and value
  for (std::size_t t = 0; t < m; ++t) {
    matters[t].assign(values, false);
    for (std::size_t v = 0; v < values; ++v) matters[t][v] = producer[v] < t && last_read[v] >= t;
    for (const std::size_t v : deps[t]) matters[t][v] = true;
    // Inputs of what matters and may be recomputed (later values first: inputs come before readers).
    for (std::size_t v = values; v-- > 0;) {
      if (!matters[t][v] || !may_rerun(producer[v])) continue;
      for (const std::size_t d : deps[producer[v]]) matters[t][d] = true;
    }
  }

  const std::unique_ptr<Cbc_Model, void (*)(Cbc_Model*)> model(Cbc_newModel(), Cbc_deleteModel);
  Cbc_Model* const cbc = model.get();
  int columns = 0;
  const auto column = [&](double lower, double upper, double cost, bool integer) {
    const std::string name = "x" + std::to_string(columns);  // CBC matches a start's values by column name
    Cbc_addCol(cbc, name.c_str(), lower, upper, cost, integer ? 1 : 0, 0, nullptr, nullptr);
    return columns++;
  };
  constexpr int absent = -1;  // a variable fixed at 0
  const auto row = [&](const std::vector<std::pair<int, double>>& terms, char sense, double rhs) {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (const auto& [c, a] : terms) {
      if (c == absent) continue;
      cols.push_back(c);
      coefs.push_back(a);
    }
    if (!cols.empty()) Cbc_addRow(cbc, "", static_cast<int>(cols.size()), cols.data(), coefs.data(), sense, rhs);
  };
  // R(t,i) for positions i <= t; S(t,v) for values made before stage t; S(m,v) = 0 (nothing after the last stage).
  std::vector<std::vector<int>> R(m), S(m + 1, std::vector<int>(values, absent));
  for (std::size_t t = 0; t < m; ++t) {
    R[t].assign(t + 1, absent);
    for (std::size_t v = 0; v < values; ++v) {
      if (!matters[t][v]) continue;
      S[t][v] = column(live_out[v] ? 1 : 0, 1, 0, true);
      const std::size_t i = producer[v];
      if (may_rerun(i) && R[t][i] == absent) R[t][i] = column(0, 1, f.flops[vertex[i]], true);
    }
    R[t][t] = column(1, 1, 0, true);
  }
  const auto made_in = [&](std::size_t t, std::size_t v) { return producer[v] <= t ? R[t][producer[v]] : absent; };
  for (std::size_t t = 0; t < m; ++t) {
    // A vertex run in the stage has its inputs held or made before it.
    for (std::size_t k = 0; k <= t; ++k) {
      if (R[t][k] == absent) continue;
      for (const std::size_t v : deps[k]) {
        if (made_in(t, v) == absent && S[t][v] == absent) throw std::logic_error("checkmate: an input that cannot be there");
        row({{R[t][k], 1}, {made_in(t, v), -1}, {S[t][v], -1}}, 'L', 0);
      }
    }
    // A value held into the next stage was held into this one or made in it.
    for (std::size_t v = 0; v < values; ++v) {
      if (S[t + 1][v] != absent) row({{S[t + 1][v], 1}, {made_in(t, v), -1}, {S[t][v], -1}}, 'L', 0);
    }
    // Memory: U(t,first) = held + what first makes; U(t,k) = U(t,previous) - freed after previous + what k makes.
    int previous = absent;
    std::vector<std::pair<int, double>> freed_before;  // FREE columns after the previous run, with their bytes
    for (std::size_t k = 0; k <= t; ++k) {
      if (R[t][k] == absent) continue;
      double made = 0;
      for (const std::size_t v : outs[k]) made += bytes[v];
      const int u = column(0, static_cast<double>(budget), 0, false);
      std::vector<std::pair<int, double>> terms{{u, 1}, {R[t][k], -made}};
      if (previous == absent) {
        for (std::size_t v = 0; v < values; ++v) terms.emplace_back(S[t][v], -bytes[v]);
      } else {
        terms.emplace_back(previous, -1);
        for (const auto& [c, b] : freed_before) terms.emplace_back(c, b);
      }
      row(terms, 'E', 0);
      previous = u;
      freed_before.clear();
      // FREE(t,v,k) for k's inputs and outputs: no reason left to keep v.
      std::vector<std::size_t> candidates = deps[k];
      candidates.insert(candidates.end(), outs[k].begin(), outs[k].end());
      for (const std::size_t v : candidates) {
        if (live_out[v]) continue;
        const int free = column(0, 1, 0, false);
        freed_before.emplace_back(free, bytes[v]);
        row({{free, 1}, {R[t][k], -1}}, 'L', 0);
        if (S[t + 1][v] != absent) row({{free, 1}, {S[t + 1][v], 1}}, 'L', 1);
        for (const std::size_t j : users[v]) {
          if (j > k && j <= t) row({{free, 1}, {R[t][j], 1}}, 'L', 1);
        }
      }
    }
  }
  if (!start.empty()) {
    // The start's runs by stage (originals in order), then what each stage holds.
    std::vector<int> set;
    std::vector<std::size_t> made(values, m), read_until(values, 0);  // the latest make of v: its stage, its last reader's
    std::vector<bool> ran(m, false);
    std::size_t stage = 0;
    bool fits = true;
    const auto held = [&](std::size_t v) {  // the latest make of v is held from its stage to its last reader's
      for (std::size_t t = made[v] + 1; t <= (live_out[v] ? m - 1 : read_until[v]); ++t) {
        fits = fits && S[t][v] != absent;
        if (fits) set.push_back(S[t][v]);
      }
    };
    for (const std::size_t w : start) {
      if (f.persistent[w]) continue;
      const std::size_t p = position[w];
      const bool first = !ran[p];
      ran[p] = true;
      if (first ? p != stage : stage >= m || R[stage][p] == absent) {
        fits = false;
        break;
      }
      for (const std::size_t v : deps[p]) read_until[v] = std::max(read_until[v], stage);
      for (const std::size_t v : outs[p]) {
        if (!first) held(v);
        made[v] = stage;
        read_until[v] = stage;
      }
      set.push_back(R[stage][p]);
      if (first) ++stage;
    }
    for (std::size_t v = 0; fits && v < values; ++v) held(v);
    if (fits && stage == m) {
      // Every integer column: those the start sets at 1, the others at 0.
      std::vector<double> value(static_cast<std::size_t>(columns), 0);
      for (const int c : set) value[static_cast<std::size_t>(c)] = 1;
      std::vector<int> cols;
      for (const auto& stage_columns : R) cols.insert(cols.end(), stage_columns.begin(), stage_columns.end());
      for (const auto& stage_columns : S) cols.insert(cols.end(), stage_columns.begin(), stage_columns.end());
      std::erase(cols, absent);
      std::vector<double> start_values;
      for (const int c : cols) start_values.push_back(value[static_cast<std::size_t>(c)]);
      Cbc_setMIPStartI(cbc, static_cast<int>(cols.size()), cols.data(), start_values.data());
    }
  }
  Cbc_setLogLevel(cbc, 0);
  Cbc_setMaximumSeconds(cbc, limits.seconds);
  Cbc_setMaximumNodes(cbc, limits.nodes);
  Cbc_solve(cbc);

  checkmate_result r;
  if (Cbc_isProvenInfeasible(cbc) != 0) {
    r.status = checkmate_result::outcome::infeasible;
    return r;
  }
  r.bound = Cbc_getBestPossibleObjValue(cbc);
  const double* solution = Cbc_bestSolution(cbc);
  if (solution == nullptr) return r;
  r.status = Cbc_isProvenOptimal(cbc) != 0 ? checkmate_result::outcome::optimal : checkmate_result::outcome::feasible;
  r.extra_flops = Cbc_getObjValue(cbc);
  r.runs = weights;
  for (std::size_t t = 0; t < m; ++t) {
    for (std::size_t i = 0; i <= t; ++i) {
      if (R[t][i] != absent && solution[R[t][i]] > 0.5) r.runs.push_back(vertex[i]);
    }
  }
  return r;
}

}  // namespace memopt::testing
