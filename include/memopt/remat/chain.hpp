#pragma once
// Rematerialisation on a chain, exactly. A training chain has forward
// stages 1..n (stage i reads activation a_(i-1), makes a_i; a_0 is the
// input), a loss (reads a_n, makes gradient g_n) and backward stages n..1
// (stage i reads a_(i-1) and g_i, makes g_(i-1); g_0 is the result). A
// schedule is the sequence of stages run; the loss and each backward stage
// run once, in order, and forward stages as often as the schedule
// recomputes them. Each run makes a new tensor, freed after the last step
// that reads it (g_0 is kept to the end): memopt's memory model, so a
// schedule's peak is the liveness peak of the graph it describes.
//
// solve_chain is the dynamic programme of Revolve and Rotor (Griewank &
// Walther; Beaumont et al.) for heterogeneous sizes: to make g_s from a_s
// and g_t within m bytes, either run backward stage t (t = s + 1), or run
// forward to some a_k, keep it, solve (k, t) in m - a_s, then (s, k) in m.
// It minimises the forward flops run among the schedules that keep each
// checkpoint until the backward pass reaches it: on chains of equal sizes
// these include an optimal schedule (checked against an exhaustive search);
// with unequal sizes, dropping a checkpoint and remaking it later from an
// earlier one is occasionally cheaper (3 of 600 small random chains in the
// tests). Sizes are counted in a unit dividing them and the budget into
// at most max_slots; otherwise they are rounded up to a coarser unit (the
// schedule still fits; `exact` is false). O(n^3 x slots) at worst, memoised
// over the states reached.
//
// chain_of recognises the chain in a graph (a source, one-input forward
// vertices, a loss, backward vertices reading their stage's input and the
// gradient after them, weights as persistent inputs anywhere), and
// rematerialize_chain returns the schedule as a rewrite plan and order, as
// rematerialize does.

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/runs.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt::remat {

struct chain_problem {
  std::vector<std::uint64_t> activation;  ///< a_0 (the input) .. a_n, bytes
  std::vector<std::uint64_t> gradient;    ///< g_0 .. g_n (g_n: the loss's output), bytes
  std::vector<double> forward_flops;      ///< stage i at i - 1
  [[nodiscard]] std::size_t stages() const noexcept { return forward_flops.size(); }
};

enum class chain_op : unsigned char { forward, loss, backward };

struct chain_step {
  chain_op op = chain_op::forward;
  std::size_t stage = 0;  ///< 1..n (the loss: n + 1)
  friend bool operator==(const chain_step&, const chain_step&) = default;
};

struct chain_solution {
  bool feasible = false;
  std::vector<chain_step> steps;
  std::vector<std::uint64_t> bytes;  ///< live by step (chain_memory)
  std::uint64_t peak = 0;
  double extra_flops = 0;  ///< forward flops run beyond one forward pass
  bool exact = true;       ///< no size was rounded (see the header comment)
};

namespace detail {

inline void check_chain(const chain_problem& p) {
  const std::size_t n = p.stages();
  if (p.activation.size() != n + 1 || p.gradient.size() != n + 1) {
    throw bad_plan_error({"chain of " + std::to_string(n) + " stages needs " + std::to_string(n + 1) +
                          " activation and gradient sizes"});
  }
}

}  // namespace detail

/// Bytes live at each step of `steps` (the memory model of the header
/// comment); throws bad_plan_error, naming the step, for a schedule that reads
/// what is not made yet or does not run the loss and the backward stages once
/// each, in order. The chain's validator. O(steps).
[[nodiscard]] inline std::vector<std::uint64_t> chain_memory(const chain_problem& p, const std::vector<chain_step>& steps) {
  detail::check_chain(p);
  const std::size_t n = p.stages();
  // Tensors made: bytes, made at, last read at.
  struct made {
    std::uint64_t bytes;
    std::size_t first;
    std::size_t last;
  };
  std::vector<made> tensors{{p.activation[0], 0, 0}};  // the input, there from the start
  std::vector<std::size_t> current(n + 1, std::numeric_limits<std::size_t>::max());
  current[0] = 0;
  std::size_t gradient = std::numeric_limits<std::size_t>::max();  // the tensor holding the next gradient
  std::size_t next_backward = n + 1;  // the loss first
  const auto fault = [&](std::size_t k, const std::string& what) {
    return bad_plan_error({"chain step " + std::to_string(k) + ": " + what});
  };
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const chain_step s = steps[k];
    if (s.stage == 0 || s.stage > n + 1 || (s.op == chain_op::forward && s.stage > n) ||
        (s.op == chain_op::loss) != (s.stage == n + 1)) {
      throw fault(k, "no such stage " + std::to_string(s.stage));
    }
    const std::size_t input = current[s.stage - 1];
    if (input == std::numeric_limits<std::size_t>::max()) throw fault(k, "a_" + std::to_string(s.stage - 1) + " is not made yet");
    tensors[input].last = k;
    if (s.op == chain_op::forward) {
      current[s.stage] = tensors.size();
      tensors.push_back({p.activation[s.stage], k, k});
      continue;
    }
    if (s.stage != next_backward) throw fault(k, "backward stage " + std::to_string(s.stage) + " out of turn");
    if (gradient != std::numeric_limits<std::size_t>::max()) tensors[gradient].last = k;
    gradient = tensors.size();
    tensors.push_back({p.gradient[s.stage - 1], k, k});
    --next_backward;
  }
  if (next_backward != 0) throw fault(steps.size(), "backward stage " + std::to_string(next_backward) + " never runs");
  tensors[gradient].last = steps.size();  // the result, kept to the end
  std::vector<std::int64_t> delta(steps.size() + 2, 0);
  for (const made& t : tensors) {
    delta[t.first] += static_cast<std::int64_t>(t.bytes);
    delta[std::min(t.last, steps.size() - 1) + 1] -= static_cast<std::int64_t>(t.bytes);
  }
  std::vector<std::uint64_t> bytes(steps.size());
  std::int64_t live = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) bytes[k] = static_cast<std::uint64_t>(live += delta[k]);
  return bytes;
}

namespace detail {

/// The checkpoint step of Revolve's and Rotor's programmes, for making the
/// gradients of stages s+1..t from a_s: run forward stages s+1..k, keep a_k,
/// solve (k, t) with a_s (`kept` units) still held, then (s, k). Into
/// best/choice when some k is cheaper. runs_forward(k): stage k's forward fits
/// after stages s+1..k-1; flops(k): its flops; cost(s, t, m): the programme.
template <class RunsForward, class Flops, class Cost>
void best_checkpoint(std::size_t s, std::size_t t, std::uint64_t m, std::uint64_t kept, RunsForward runs_forward, Flops flops,
                     Cost cost, double& best, std::size_t& choice) {
  double forward = 0;
  for (std::size_t k = s + 1; k < t; ++k) {
    if (!runs_forward(k)) break;
    forward += flops(k);
    if (forward >= best) break;
    const double after = cost(k, t, m - kept);
    if (after == std::numeric_limits<double>::infinity()) continue;
    const double before = cost(s, k, m);
    if (forward + after + before < best) {
      best = forward + after + before;
      choice = k;
    }
  }
}

/// The dynamic programme over sizes in units (see the header comment).
class chain_solver {
 public:
  chain_solver(std::vector<std::uint64_t> a, std::vector<std::uint64_t> g, const std::vector<double>& flops)
      : a_(std::move(a)), g_(std::move(g)), flops_(flops) {
    g_.push_back(0);  // g_(n+1): nothing before the loss
  }

  /// Least forward flops to make g_s from a_s and g_t in m units (infinity if none).
  double cost(std::size_t s, std::size_t t, std::uint64_t m) {
    const std::uint64_t key = (static_cast<std::uint64_t>(s) << 44) | (static_cast<std::uint64_t>(t) << 24) | m;
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second.first;
    double best = infinity;
    std::size_t choice = 0;
    if (t == s + 1) {
      if (a_[s] + g_[t] + g_[s] <= m) best = 0;
    } else if (a_[s] + g_[t] <= m) {
      // Forward stage k runs with a_s kept, g_t, a_(k-1) (unless it is a_s) and a_k.
      best_checkpoint(
          s, t, m, a_[s], [&](std::size_t k) { return a_[s] + g_[t] + (k - 1 > s ? a_[k - 1] : 0) + a_[k] <= m; },
          [&](std::size_t k) { return flops_[k - 1]; }, [&](std::size_t i, std::size_t j, std::uint64_t mm) { return cost(i, j, mm); },
          best, choice);
    }
    memo_[key] = {best, choice};
    return best;
  }

  /// The steps of the best schedule for (s, t, m), appended to `out`.
  void steps(std::size_t s, std::size_t t, std::uint64_t m, std::vector<chain_step>& out) {
    const std::size_t n = flops_.size();
    if (t == s + 1) {
      out.push_back({t == n + 1 ? chain_op::loss : chain_op::backward, t});
      return;
    }
    (void)cost(s, t, m);
    const std::size_t k = memo_.at((static_cast<std::uint64_t>(s) << 44) | (static_cast<std::uint64_t>(t) << 24) | m).second;
    for (std::size_t j = s + 1; j <= k; ++j) out.push_back({chain_op::forward, j});
    steps(k, t, m - a_[s], out);
    steps(s, k, m, out);
  }

  static constexpr double infinity = std::numeric_limits<double>::infinity();

 private:
  std::vector<std::uint64_t> a_;
  std::vector<std::uint64_t> g_;
  const std::vector<double>& flops_;
  std::unordered_map<std::uint64_t, std::pair<double, std::size_t>> memo_;
};

}  // namespace detail

/// The schedule of least extra forward flops whose peak is at most `budget`
/// (see the header comment); infeasible (feasible false, no steps) when none
/// fits. Throws bad_plan_error for sizes that do not match the stages, or a
/// chain of more than 10,000 stages (the programme recurses once per stage).
[[nodiscard]] inline chain_solution solve_chain(const chain_problem& p, std::uint64_t budget, std::size_t max_slots = 4096) {
  detail::check_chain(p);
  const std::size_t n = p.stages();
  if (n > 10'000) throw bad_plan_error({"solve_chain: " + std::to_string(n) + " stages, more than 10,000"});
  max_slots = std::clamp<std::size_t>(max_slots, 1, (std::size_t{1} << 24) - 1);  // a state key has 24 bits for it
  std::uint64_t unit = budget;
  for (const std::uint64_t b : p.activation) unit = std::gcd(unit, b);
  for (const std::uint64_t b : p.gradient) unit = std::gcd(unit, b);
  chain_solution out;
  if (unit == 0) unit = 1;
  if (budget / unit > max_slots) {
    unit = (budget + max_slots - 1) / max_slots;
    out.exact = false;
  }
  const auto units = [unit](std::uint64_t bytes) { return (bytes + unit - 1) / unit; };
  std::vector<std::uint64_t> a, g;
  for (const std::uint64_t b : p.activation) a.push_back(units(b));
  for (const std::uint64_t b : p.gradient) g.push_back(units(b));
  detail::chain_solver solver(std::move(a), std::move(g), p.forward_flops);
  const std::uint64_t m = budget / unit;
  const double forward = solver.cost(0, n + 1, m);
  if (forward == detail::chain_solver::infinity) return out;
  solver.steps(0, n + 1, m, out.steps);
  out.feasible = true;
  out.bytes = chain_memory(p, out.steps);
  out.peak = out.bytes.empty() ? 0 : *std::ranges::max_element(out.bytes);
  double once = 0;
  for (const double f : p.forward_flops) once += f;
  out.extra_flops = std::max(0.0, forward - once);
  return out;
}

/// A chain in a graph (see the header comment), by vertex.
struct chain_graph {
  std::size_t input = no_vertex;
  std::vector<std::size_t> forward;   ///< stage i at i - 1
  std::size_t loss = no_vertex;
  std::vector<std::size_t> backward;  ///< stage i at i - 1
  std::vector<std::size_t> others;    ///< persistent vertices (weights)
};

/// The chain g is, if it is one: every transient vertex one output and no
/// view, no control edge, the result (backward stage 1's output) the only
/// graph output. O(V + E).
[[nodiscard]] inline std::optional<chain_graph> chain_of(const graph_facts& f) {
  const std::size_t n = f.size();
  chain_graph c;
  std::vector<std::vector<std::size_t>> transient_inputs(n);
  for (std::size_t v = 0; v < n; ++v) {
    if (!f.control[v].empty()) return std::nullopt;
    if (f.persistent[v]) {
      c.others.push_back(v);
      continue;
    }
    if (f.outputs[v].size() != 1 || f.outputs[v][0].shares) return std::nullopt;
    for (const operand& o : f.operands[v]) {
      if (!f.persistent[o.vertex]) transient_inputs[v].push_back(o.vertex);
    }
    if (transient_inputs[v].empty()) {
      if (c.input != no_vertex) return std::nullopt;
      c.input = v;
    }
  }
  if (c.input == no_vertex) return std::nullopt;
  const auto position = rewrite::detail::topological_positions(f);  // weights first, in an order they can run in
  std::ranges::sort(c.others, [&](std::size_t x, std::size_t y) { return position[x] < position[y]; });
  // The one-input vertices from the input on: the forward stages, then the loss.
  const auto reader = [&](std::size_t v, std::size_t inputs) {
    std::size_t found = no_vertex;
    for (const std::size_t w : f.consumers[v]) {
      if (transient_inputs[w].size() != inputs) continue;
      if (found != no_vertex) return no_vertex - 1;  // two: not a chain
      found = w;
    }
    return found;
  };
  std::vector<std::size_t> run{c.input};
  for (std::size_t next = reader(c.input, 1); next < no_vertex - 1; next = reader(run.back(), 1)) run.push_back(next);
  if (run.size() < 3) return std::nullopt;  // a forward stage at least
  c.loss = run.back();
  c.forward.assign(run.begin() + 1, run.end() - 1);
  // Backward stage i reads a_(i-1) and the gradient after it.
  c.backward.resize(c.forward.size());
  std::size_t gradient = c.loss;
  for (std::size_t i = c.forward.size(); i >= 1; --i) {
    const std::size_t b = reader(gradient, 2);
    if (b >= no_vertex - 1) return std::nullopt;
    const std::size_t activation = run[i - 1];
    if (std::ranges::find(transient_inputs[b], activation) == transient_inputs[b].end()) return std::nullopt;
    c.backward[i - 1] = gradient = b;
  }
  if (c.forward.size() + c.backward.size() + 2 + c.others.size() != n) return std::nullopt;
  for (std::size_t v = 0; v < n; ++v) {
    if (f.outputs[v].size() == 1 && f.outputs[v][0].live_out && v != c.backward.front()) return std::nullopt;
  }
  if (!f.outputs[c.backward.front()][0].live_out) return std::nullopt;
  return c;
}

/// The chain's sizes and flops.
[[nodiscard]] inline chain_problem chain_sizes(const graph_facts& f, const chain_graph& c) {
  chain_problem p;
  p.activation.push_back(f.outputs[c.input][0].bytes);
  for (const std::size_t v : c.forward) {
    p.activation.push_back(f.outputs[v][0].bytes);
    p.forward_flops.push_back(f.flops[v]);
  }
  for (const std::size_t v : c.backward) p.gradient.push_back(f.outputs[v][0].bytes);
  p.gradient.push_back(f.outputs[c.loss][0].bytes);
  return p;
}

/// solve_chain's schedule for chain c of f as a plan and the order to run it
/// in (persistent vertices first), as rematerialize returns; none when no
/// schedule fits the budget.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] std::optional<remat_result> rematerialize_chain(const graph_facts& f, const chain_graph& c, std::uint64_t budget,
                                                              const Naming& naming = {}) {
  const auto solution = solve_chain(chain_sizes(f, c), budget);
  if (!solution.feasible) return std::nullopt;
  std::vector<std::size_t> runs = c.others;
  runs.push_back(c.input);
  for (const chain_step s : solution.steps) {
    runs.push_back(s.op == chain_op::forward ? c.forward[s.stage - 1] : s.op == chain_op::loss ? c.loss : c.backward[s.stage - 1]);
  }
  auto r = plan_of_runs(f, runs, naming);
  r.method = "chain";
  return r;
}

}  // namespace memopt::remat
