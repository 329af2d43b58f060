#pragma once
// Rematerialisation on a chain of blocks, the programme: a block chain's
// stages (remat/block_chain.hpp finds them in a graph and turns the schedule
// into a plan) and solve_blocks, the dynamic programme of Rotor (Beaumont et
// al.) over them.
//
// solve_blocks is Rotor's programme: to make the gradients of stages s+1..t
// from stage s's output and the gradients into stage t's backward within m
// bytes, either run stage s+1 keeping what its backward reads, solve s+1..t
// in what is left, and run its backward; or run stages s+1..k keeping only
// their outputs, solve k..t with stage s's output kept, then s..k. Stage t
// alone reruns its forward (unless its backward reads none of it) and runs
// its backward. The bytes each choice needs are counted by stage (its
// forward's peak keeping its output or also what its backward reads, its
// backward's peak, the gradients crossing, the outputs kept, the storages no
// copy remakes), conservatively: a checkpoint counts until its subproblem
// ends. The programme minimises the forward flops run among these persistent
// schedules, in units of at most max_slots per budget (rounded up).

#include <memopt/remat/chain.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt::remat {

/// A stage of a block chain; bytes as solve_blocks counts them.
struct block_stage {
  std::vector<std::size_t> forward;   ///< its forward vertices, in the order given
  std::vector<std::size_t> rerun;     ///< those a copy may rerun
  std::vector<std::size_t> backward;  ///< its backward vertices, in the order given
  std::uint64_t output = 0;                ///< the storage crossing the cut after it (0: none)
  std::uint64_t saved = 0;                 ///< its other storages its backward reads
  std::uint64_t forward_peak = 0;          ///< its storages live at once while it runs, keeping only the output
  std::uint64_t forward_peak_saving = 0;   ///< the same, keeping `saved` too
  std::uint64_t backward_peak = 0;         ///< live at once while its backward runs, but the stage's input and what stays
  std::uint64_t gradients_in = 0;          ///< made by later stages' backward, read by its own or earlier ones
  std::uint64_t kept = 0;                  ///< graph outputs its backward makes
  std::uint64_t fixed = 0;                 ///< its storages no copy remakes
  double flops = 0;                        ///< of `rerun`
  bool backward_reads_it = false;          ///< its backward reads a storage it makes
};

struct block_chain {
  std::vector<std::size_t> persistent;  ///< run first, in the order given
  std::vector<block_stage> stages;
  std::uint64_t kept = 0;  ///< graph outputs the forward part makes
};

enum class block_op : unsigned char { forward, backward };

struct block_step {
  block_op op = block_op::forward;
  std::size_t stage = 0;  ///< 1..n
  friend bool operator==(const block_step&, const block_step&) = default;
};

struct block_solution {
  bool feasible = false;
  std::vector<block_step> steps;
  double forward_flops = 0;  ///< of every forward run
  double extra_flops = 0;    ///< beyond one run of each stage
  bool exact = true;         ///< no size was rounded to a coarser unit
};

namespace detail {

/// Rotor's programme over sizes in units (see the header comment).
class block_solver {
 public:
  block_solver(const block_chain& c, std::uint64_t unit) : c_(c) {
    const std::size_t n = c.stages.size();
    const auto units = [unit](std::uint64_t bytes) { return (bytes + unit - 1) / unit; };
    output_.assign(n + 1, 0);
    held_.assign(n + 1, 0);
    staying_.assign(n + 1, 0);
    // Before stage t's backward: outputs of later backward stages, the
    // forward's outputs and every unremakable storage of stages up to t.
    std::uint64_t kept_after = units(c.kept);
    std::vector<std::uint64_t> fixed_upto(n + 1, 0);
    for (std::size_t i = 1; i <= n; ++i) fixed_upto[i] = fixed_upto[i - 1] + units(c.stages[i - 1].fixed);
    for (std::size_t t = n; t >= 1; --t) {
      const block_stage& st = c.stages[t - 1];
      output_[t] = units(st.output);
      staying_[t] = kept_after + fixed_upto[t];
      held_[t] = staying_[t] + units(st.gradients_in);
      kept_after += units(st.kept);
    }
    for (const block_stage& st : c.stages) {
      saved_.push_back(units(st.saved));
      forward_.push_back(units(st.forward_peak));
      forward_saving_.push_back(units(st.forward_peak_saving));
      backward_.push_back(units(st.backward_peak));
    }
  }

  /// Least forward flops to make stage s's gradients from its output and the
  /// gradients into stage t's backward in m units (infinity if none).
  double cost(std::size_t s, std::size_t t, std::uint64_t m) {
    const std::uint64_t key = (static_cast<std::uint64_t>(s) << 44) | (static_cast<std::uint64_t>(t) << 24) | m;
    if (const auto it = memo_.find(key); it != memo_.end()) return it->second.first;
    double best = infinity;
    std::size_t choice = 0;  // 0: keep stage s + 1's saved storages; k: checkpoint at k
    const std::uint64_t a = output_[s];
    const auto fits = [m](std::uint64_t bytes) { return bytes <= m; };
    if (t == s + 1) {
      const bool rerun = needs_forward(t);
      if (fits(a + held_[t] + (rerun ? forward_saving_[t - 1] : 0)) && fits(a + staying_[t] + backward_[t - 1])) {
        best = rerun ? c_.stages[t - 1].flops : 0;
      }
    } else {
      if (fits(a + held_[t] + forward_saving_[s]) && fits(a + staying_[s + 1] + backward_[s]) && fits(a + saved_[s])) {
        const double after = cost(s + 1, t, m - a - saved_[s]);
        if (after != infinity) best = c_.stages[s].flops + after;
      }
      best_checkpoint(
          s, t, m, a, [&](std::size_t k) { return fits(a + held_[t] + (k - 1 > s ? output_[k - 1] : 0) + forward_[k - 1]); },
          [&](std::size_t k) { return c_.stages[k - 1].flops; },
          [&](std::size_t i, std::size_t j, std::uint64_t mm) { return cost(i, j, mm); }, best, choice);
    }
    memo_[key] = {best, choice};
    return best;
  }

  /// The steps of the best schedule for (s, t, m), appended to `out`.
  void steps(std::size_t s, std::size_t t, std::uint64_t m, std::vector<block_step>& out) {
    if (t == s + 1) {
      if (needs_forward(t)) out.push_back({block_op::forward, t});
      out.push_back({block_op::backward, t});
      return;
    }
    (void)cost(s, t, m);
    const std::size_t k = memo_.at((static_cast<std::uint64_t>(s) << 44) | (static_cast<std::uint64_t>(t) << 24) | m).second;
    if (k == 0) {
      out.push_back({block_op::forward, s + 1});
      steps(s + 1, t, m - output_[s] - saved_[s], out);
      out.push_back({block_op::backward, s + 1});
      return;
    }
    for (std::size_t j = s + 1; j <= k; ++j) out.push_back({block_op::forward, j});
    steps(k, t, m - output_[s], out);
    steps(s, k, m, out);
  }

  static constexpr double infinity = std::numeric_limits<double>::infinity();

 private:
  // The last stage's forward always runs there: nothing ran it before.
  [[nodiscard]] bool needs_forward(std::size_t t) const {
    return t == c_.stages.size() || c_.stages[t - 1].backward_reads_it;
  }

  const block_chain& c_;
  std::vector<std::uint64_t> output_;  // by stage 0..n (0: none)
  std::vector<std::uint64_t> held_;    // by stage 1..n: live around stage t's forward runs
  std::vector<std::uint64_t> staying_; // by stage 1..n: live around stage t's backward, beside its peak
  std::vector<std::uint64_t> saved_, forward_, forward_saving_, backward_;  // by stage - 1
  std::unordered_map<std::uint64_t, std::pair<double, std::size_t>> memo_;
};

}  // namespace detail

/// The persistent schedule of least forward flops that the programme counts
/// within `budget` (see the header comment); infeasible (no steps) when none
/// does. Throws bad_plan_error for a chain without stages or of more than
/// 4,096.
[[nodiscard]] inline block_solution solve_blocks(const block_chain& c, std::uint64_t budget, std::size_t max_slots = 1024) {
  const std::size_t n = c.stages.size();
  if (n == 0 || n > 4096) throw bad_plan_error({"solve_blocks: " + std::to_string(n) + " stages, not 1 to 4,096"});
  max_slots = std::clamp<std::size_t>(max_slots, 1, (std::size_t{1} << 24) - 1);  // a state key has 24 bits for it
  std::uint64_t unit = std::gcd(budget, c.kept);
  for (const block_stage& st : c.stages) {
    for (const std::uint64_t b : {st.output, st.saved, st.forward_peak, st.forward_peak_saving, st.backward_peak,
                                  st.gradients_in, st.kept, st.fixed}) {
      unit = std::gcd(unit, b);
    }
  }
  block_solution out;
  if (unit == 0) unit = 1;
  if (budget / unit > max_slots) {
    unit = (budget + max_slots - 1) / max_slots;
    out.exact = false;
  }
  detail::block_solver solver(c, unit);
  const std::uint64_t m = budget / unit;
  const double forward = solver.cost(0, n, m);
  if (forward == detail::block_solver::infinity) return out;
  solver.steps(0, n, m, out.steps);
  out.feasible = true;
  out.forward_flops = forward;
  double once = 0;
  for (const block_stage& st : c.stages) once += st.flops;
  out.extra_flops = std::max(0.0, forward - once);
  return out;
}

}  // namespace memopt::remat
