#pragma once
// Rematerialisation on a chain of blocks: a training graph whose forward part
// reduces to a chain through its articulation points (residual networks,
// transformers, most sequential models), solved by the dynamic programme of
// Rotor (Beaumont et al.) over its stages.
//
// block_chain_of finds the chain. The loss is the first graph output (in the
// order given) that something reads; the backward part is everything that
// depends on it and what only the backward part reads, writing nothing in
// place and reading nothing written later (the views the backward takes of
// saved tensors); the forward part is the rest. A cut of the forward part (a
// point of the order restricted to it) where at most one storage that a copy
// can remake is made before and read after, and not written in place after,
// is a stage boundary: that storage is the stage's output, the checkpoint the
// stages after it are recomputed from (a storage no copy remakes, a source or
// a random draw, stays live throughout and is never a reason to refuse a
// cut). Each stage carries at least 1/max_stages of the forward's flops. Each
// backward vertex belongs to the last stage whose storages it reads (else to
// the earliest stage of the backward vertices it reads); the graph is a block
// chain when every backward vertex reads, of the stages before its own, only
// the output of the one just before, and no backward vertex reads one of a
// stage after its own. Storages by root: a view is free and an in-place write
// is a read of the storage it writes.
//
// solve_blocks, Rotor's programme over the stages, is in
// remat/block_programme.hpp.
//
// rematerialize_blocks turns the schedule into runs (remat/runs.hpp: a rerun
// of a stage copies the vertices a copy may rerun, the others run once) and
// measures the plan's peak exactly. Since the programme's count is mostly
// above the exact peak (and misses what it does not model: an unremakable
// storage lives only until its last read, a view may keep an older copy), it
// searches the budget to give the programme (up to a quarter above the
// budget, eight times by default) for the plan of fewest extra flops that
// fits.

#include <memopt/remat/block_programme.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/runs.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <tuple>
#include <utility>
#include <vector>

namespace memopt::remat {

namespace detail {

/// The largest sum of bytes live at once among intervals [birth, death] of steps.
inline std::uint64_t interval_peak(std::size_t steps, const std::vector<std::tuple<std::size_t, std::size_t, std::uint64_t>>& live) {
  std::vector<std::int64_t> delta(steps + 1, 0);
  for (const auto& [birth, death, bytes] : live) {
    delta[birth] += static_cast<std::int64_t>(bytes);
    delta[death + 1] -= static_cast<std::int64_t>(bytes);
  }
  std::int64_t now = 0, peak = 0;
  for (std::size_t k = 0; k < steps; ++k) peak = std::max(peak, now += delta[k]);
  return static_cast<std::uint64_t>(peak);
}

/// The storages of a graph by root: bytes, maker, whether a graph output
/// lives in it, and who reads or writes it.
struct storage_table {
  std::vector<std::vector<std::size_t>> id;  // by vertex and port
  std::vector<std::uint64_t> bytes;
  std::vector<std::size_t> maker;
  std::vector<bool> live_out;
  std::vector<std::vector<std::size_t>> users;  // by storage: vertices reading or writing it in place, each once

  explicit storage_table(const graph_facts& f) : id(f.size()) {
    const auto root = rewrite::detail::storage_roots(f);
    for (std::size_t v = 0; v < f.size(); ++v) {
      id[v].assign(f.outputs[v].size(), no_vertex);
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
        if (root[v][port] != operand{v, port}) continue;
        id[v][port] = bytes.size();
        bytes.push_back(f.outputs[v][port].bytes);
        maker.push_back(v);
        live_out.push_back(false);
      }
    }
    users.resize(bytes.size());
    for (std::size_t v = 0; v < f.size(); ++v) {
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
        const std::size_t s = id[v][port] = id[root[v][port].vertex][root[v][port].port];
        live_out[s] = live_out[s] || f.outputs[v][port].live_out;
        const auto& shares = f.outputs[v][port].shares;
        if (shares && shares->in_place) users[s].push_back(v);
      }
      for (const operand& o : f.operands[v]) users[id[o.vertex][o.port]].push_back(v);
    }
    for (auto& u : users) {
      std::ranges::sort(u);
      u.erase(std::unique(u.begin(), u.end()), u.end());
    }
  }
};

}  // namespace detail

/// The block chain of f over `order` (a topological order of every vertex),
/// if f is one with at least two stages (see the header comment). Throws
/// bad_plan_error for an order that is not one or a fed vertex that does
/// not exist. O(V + E + storages x stages).
[[nodiscard]] inline std::optional<block_chain> block_chain_of(const graph_facts& f, const std::vector<std::size_t>& order,
                                                               const remat_options& options, std::size_t max_stages = 64) {
  detail::check_order(f, order, "block_chain_of");
  const std::size_t n = f.size();
  const auto recomputable = detail::recomputable_vertices(f, options);
  const detail::storage_table storages(f);
  const std::size_t none = no_vertex;
  block_chain c;
  // The loss, the backward part (what depends on it) and the forward part.
  std::size_t loss = none;
  for (const std::size_t v : order) {
    if (f.persistent[v]) {
      c.persistent.push_back(v);
    } else if (loss == none && !f.consumers[v].empty() &&
               std::ranges::any_of(f.outputs[v], [](const tensor_output& o) { return o.live_out; })) {
      loss = v;
    }
  }
  if (loss == none) return std::nullopt;
  // By vertex: reached from the loss along `next` (its readers or its inputs).
  const auto reached = [&](bool with_loss, const auto& next) {
    std::vector<bool> seen(n, false);
    seen[loss] = with_loss;
    for (std::vector<std::size_t> stack{loss}; !stack.empty();) {
      const std::size_t v = stack.back();
      stack.pop_back();
      for (const std::size_t w : next(v)) {
        if (!seen[w]) stack.push_back(w), seen[w] = true;
      }
    }
    return seen;
  };
  std::vector<bool> backward = reached(false, [&](std::size_t v) -> const std::vector<std::size_t>& { return f.consumers[v]; });
  const std::vector<bool> before_loss = reached(true, [&](std::size_t v) { return rewrite::detail::inputs_of(f, v); });
  // By storage: where in the order its last in-place write is, and whether
  // no copy remakes it (a making or a write no copy repeats). By vertex:
  // whether a copy reads what it read (nothing it reads is such a storage
  // written later).
  const std::size_t storage_count = storages.bytes.size();
  std::vector<std::size_t> position(n), last_write(storage_count, none);
  for (std::size_t k = 0; k < n; ++k) position[order[k]] = k;
  const auto writes = [&](std::size_t v, std::size_t port) {
    const auto& shares = f.outputs[v][port].shares;
    return shares && shares->in_place;
  };
  for (const std::size_t v : order) {
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      if (writes(v, port)) last_write[storages.id[v][port]] = position[v];
    }
  }
  const auto written_from = [&](std::size_t s, std::size_t v) { return last_write[s] != none && last_write[s] >= position[v]; };
  std::vector<bool> rerunnable(n, false), fixed(storage_count, false);
  for (const std::size_t v : order) {
    rerunnable[v] = recomputable[v] && std::ranges::none_of(f.operands[v], [&](const operand& o) {
                      const std::size_t s = storages.id[o.vertex][o.port];
                      return fixed[s] && written_from(s, v);
                    });
    for (std::size_t port = 0; port < f.outputs[v].size() && !rerunnable[v]; ++port) {
      if (!f.outputs[v][port].shares || writes(v, port)) fixed[storages.id[v][port]] = true;
    }
  }
  // What neither leads to the loss nor follows it (a view the backward takes
  // of a saved tensor, say) belongs to the backward part when only the
  // backward part reads it, and it writes nothing in place nor reads what is
  // written after it.
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const std::size_t v = *it;
    if (backward[v] || before_loss[v] || f.persistent[v] || f.consumers[v].empty()) continue;
    bool moves = std::ranges::all_of(f.consumers[v], [&](std::size_t w) { return backward[w]; });
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) moves = moves && !writes(v, port);
    for (const operand& o : f.operands[v]) moves = moves && !written_from(storages.id[o.vertex][o.port], v);
    backward[v] = moves;
  }
  std::vector<std::size_t> forward_part, backward_part;
  for (const std::size_t v : order) {
    if (!f.persistent[v]) (backward[v] ? backward_part : forward_part).push_back(v);
  }
  // Storages that stages are cut around: made by the forward part, remakable,
  // neither persistent nor a graph output (those stay anyway).
  const auto cuttable = [&](std::size_t s) {
    const std::size_t maker = storages.maker[s];
    return !f.persistent[maker] && !backward[maker] && !fixed[s] && !storages.live_out[s];
  };
  std::vector<std::size_t> forward_position(n, none);
  for (std::size_t k = 0; k < forward_part.size(); ++k) forward_position[forward_part[k]] = k;
  // By cut k (before forward_part[k]): how many cuttable storages cross it, and
  // the sum of their ids (the id when one does).
  std::vector<std::int64_t> crossing(forward_part.size() + 1, 0), id_sum(forward_part.size() + 1, 0);
  for (std::size_t s = 0; s < storage_count; ++s) {
    if (!cuttable(s)) continue;
    const std::size_t made = forward_position[storages.maker[s]];
    std::size_t last = made;
    for (const std::size_t u : storages.users[s]) {
      if (forward_position[u] != none) last = std::max(last, forward_position[u]);
    }
    crossing[made + 1] += 1, crossing[last + 1] -= 1;
    id_sum[made + 1] += static_cast<std::int64_t>(s), id_sum[last + 1] -= static_cast<std::int64_t>(s);
  }
  double total_flops = 0;
  for (const std::size_t v : forward_part) total_flops += rerunnable[v] ? f.flops[v] : 0;
  const double stage_flops = total_flops / static_cast<double>(std::max<std::size_t>(max_stages, 1));
  std::vector<std::size_t> stage_of(n, none), cut_storage{none};  // by cut 0..n: the storage crossing it
  {
    std::int64_t count = 0, ids = 0;
    double since = 0;
    std::size_t stage = 1;
    for (std::size_t k = 0; k < forward_part.size(); ++k) {
      count += crossing[k], ids += id_sum[k];
      const std::size_t one = count == 1 ? static_cast<std::size_t>(ids) : none;
      const bool cut = k > 0 && since > 0 && since >= stage_flops && stage < max_stages &&
                       (count == 0 || (count == 1 && !written_from(one, forward_part[k])));
      if (cut) {
        cut_storage.push_back(one);
        ++stage;
        since = 0;
      }
      stage_of[forward_part[k]] = stage;
      since += rerunnable[forward_part[k]] ? f.flops[forward_part[k]] : 0;
    }
    cut_storage.push_back(none);
  }
  const std::size_t stage_count = cut_storage.size() - 1;
  if (stage_count < 2) return std::nullopt;
  const auto storage_stage = [&](std::size_t s) { return cuttable(s) ? stage_of[storages.maker[s]] : 0; };
  // The backward vertices' stages, checked.
  for (const std::size_t b : backward_part) {
    std::size_t read = 0, after = none;
    for (const operand& o : f.operands[b]) read = std::max(read, storage_stage(storages.id[o.vertex][o.port]));
    for (const std::size_t p : rewrite::detail::inputs_of(f, b)) {
      if (backward[p]) after = std::min(after, stage_of[p]);
    }
    stage_of[b] = read > 0 ? read : after != none ? after : stage_count;
    if (after != none && after < stage_of[b]) return std::nullopt;  // reads a gradient made after its stage's backward
    for (const operand& o : f.operands[b]) {
      const std::size_t s = storages.id[o.vertex][o.port];
      const std::size_t made = storage_stage(s);
      if (made > 0 && made < stage_of[b] && cut_storage[stage_of[b] - 1] != s) return std::nullopt;
    }
  }
  c.stages.resize(stage_count);
  for (const std::size_t v : forward_part) {
    block_stage& st = c.stages[stage_of[v] - 1];
    st.forward.push_back(v);
    if (rerunnable[v]) st.rerun.push_back(v), st.flops += f.flops[v];
  }
  for (const std::size_t b : backward_part) c.stages[stage_of[b] - 1].backward.push_back(b);
  // Positions within a stage's forward or backward list, for the peaks.
  std::vector<std::size_t> step(n, none);
  for (const block_stage& st : c.stages) {
    for (std::size_t k = 0; k < st.forward.size(); ++k) step[st.forward[k]] = k;
    for (std::size_t k = 0; k < st.backward.size(); ++k) step[st.backward[k]] = k;
  }
  for (std::size_t i = 1; i <= stage_count; ++i) {
    if (cut_storage[i] != none) c.stages[i - 1].output = storages.bytes[cut_storage[i]];
  }
  // Per stage, intervals of storages live in its forward (keeping the output;
  // keeping what its backward reads too) and in its backward.
  using intervals = std::vector<std::tuple<std::size_t, std::size_t, std::uint64_t>>;
  std::vector<intervals> forward_live(stage_count), saving_live(stage_count), backward_live(stage_count);
  const auto backward_end = [&](std::size_t stage) { return std::max<std::size_t>(c.stages[stage - 1].backward.size(), 1) - 1; };
  for (std::size_t s = 0; s < storage_count; ++s) {
    const std::size_t maker = storages.maker[s];
    const std::uint64_t bytes = storages.bytes[s];
    if (f.persistent[maker]) continue;
    if (storages.live_out[s]) {
      if (backward[maker]) {
        c.stages[stage_of[maker] - 1].kept += bytes;
        backward_live[stage_of[maker] - 1].emplace_back(step[maker], backward_end(stage_of[maker]), bytes);
      } else {
        c.kept += bytes;
      }
      continue;
    }
    if (!backward[maker] && fixed[s]) {
      c.stages[stage_of[maker] - 1].fixed += bytes;
      continue;
    }
    // Last user by (part, stage): forward users of the maker's stage, backward users by stage.
    const std::size_t home = stage_of[maker];
    std::size_t last_forward = step[maker], first_backward_stage = none;
    std::vector<std::pair<std::size_t, std::size_t>> backward_users;  // (stage, step)
    for (const std::size_t u : storages.users[s]) {
      if (backward[u]) {
        backward_users.emplace_back(stage_of[u], step[u]);
        first_backward_stage = std::min(first_backward_stage, stage_of[u]);
      } else if (stage_of[u] == home) {
        last_forward = std::max(last_forward, step[u]);
      }
    }
    const auto last_in = [&](std::size_t stage) {
      std::size_t last = none;
      for (const auto& [st, k] : backward_users) {
        if (st == stage) last = last == none ? k : std::max(last, k);
      }
      return last;
    };
    if (backward[maker]) {  // a gradient: live in its stage's backward, and into earlier stages' until read
      const std::size_t stage = stage_of[maker];
      const std::size_t last_here = last_in(stage);
      const bool leaves = first_backward_stage < stage;
      backward_live[stage - 1].emplace_back(step[maker], leaves ? backward_end(stage) : last_here == none ? step[maker] : last_here, bytes);
      for (std::size_t j = stage - 1; leaves && j >= first_backward_stage; --j) {
        c.stages[j - 1].gradients_in += bytes;
        backward_live[j - 1].emplace_back(0, j == first_backward_stage ? last_in(j) : backward_end(j), bytes);
      }
      continue;
    }
    block_stage& st = c.stages[home - 1];
    const bool output = s == cut_storage[home];
    const std::size_t last_home_backward = last_in(home);
    const std::size_t end = st.forward.size() - 1;
    forward_live[home - 1].emplace_back(step[maker], output ? end : last_forward, bytes);
    if (last_home_backward != none) {
      st.backward_reads_it = true;
      if (!output) st.saved += bytes;
      backward_live[home - 1].emplace_back(0, last_home_backward, bytes);
    }
    saving_live[home - 1].emplace_back(step[maker], output || last_home_backward != none ? end : last_forward, bytes);
  }
  for (std::size_t i = 0; i < stage_count; ++i) {
    block_stage& st = c.stages[i];
    st.forward_peak = detail::interval_peak(st.forward.size(), forward_live[i]);
    st.forward_peak_saving = detail::interval_peak(st.forward.size(), saving_live[i]);
    st.backward_peak = detail::interval_peak(std::max<std::size_t>(st.backward.size(), 1), backward_live[i]);
  }
  return c;
}

/// The block chain's schedule for `budget` as a plan and the order to run it
/// in, as rematerialize returns, its peak measured on the rewritten graph:
/// the one of least extra flops that fits, else the lowest peak, among the
/// programme's answers for at most max_attempts budgets up to a quarter above
/// `budget` (see the header comment). None when the programme finds no
/// schedule there, or none under `beat` extra flops (the cost of a plan at
/// hand: the programme's flops only fall as its budget grows, so one solve
/// settles it). Throws bad_plan_error as plan_of_runs does for a chain not
/// of f. O(max_attempts x (the programme + runs + E)).
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] std::optional<remat_result> rematerialize_blocks(const graph_facts& f, const block_chain& c, std::uint64_t budget,
                                                               const Naming& naming = {}, int max_attempts = 8,
                                                               double beat = std::numeric_limits<double>::infinity()) {
  constexpr std::size_t slots = 256;
  const std::uint64_t ceiling = budget + budget / 4;
  if (const block_solution cheapest = solve_blocks(c, ceiling, slots); !cheapest.feasible || cheapest.extra_flops >= beat) {
    return std::nullopt;
  }
  std::optional<remat_result> best;
  // The programme counts conservatively, and rounds: search the budget to
  // give it for the largest that still fits once measured. Known: the
  // largest budget that fitted, the largest the programme found nothing in,
  // the smallest whose plan did not fit.
  std::optional<std::uint64_t> fitted, empty, over;
  std::uint64_t target = budget;
  const std::uint64_t precision = std::max<std::uint64_t>(budget / slots, 1);
  for (int attempt = 0; attempt < max_attempts; ++attempt) {
    const block_solution solution = solve_blocks(c, target, slots);
    if (!solution.feasible) {
      empty = std::max(empty.value_or(0), target);
    } else {
      std::vector<std::size_t> runs = c.persistent;
      std::vector<bool> ran(c.stages.size(), false);
      for (const block_step s : solution.steps) {
        const block_stage& st = c.stages[s.stage - 1];
        const auto& vertices = s.op == block_op::backward ? st.backward : ran[s.stage - 1] ? st.rerun : st.forward;
        runs.insert(runs.end(), vertices.begin(), vertices.end());
        if (s.op == block_op::forward) ran[s.stage - 1] = true;
      }
      remat_result r = plan_of_runs(f, runs, naming);
      r.method = "blocks";
      const bool fits = r.planned_peak <= budget;
      (fits ? fitted : over) = fits ? std::max(fitted.value_or(0), target) : std::min(over.value_or(target), target);
      const bool best_fits = best && best->planned_peak <= budget;
      if (!best || (fits && (!best_fits || r.extra_flops < best->extra_flops)) ||
          (!fits && !best_fits && r.planned_peak < best->planned_peak)) {
        best = std::move(r);
      }
    }
    // Between what fitted (or found nothing) and what did not fit; upwards
    // by a quarter while nothing is above; downwards likewise.
    const std::uint64_t low = fitted ? *fitted : empty.value_or(0);
    std::uint64_t next = 0;
    if (over && (fitted || empty)) {
      next = low + (*over - low) / 2;
    } else if (over) {
      next = *over - *over / 4;
    } else {
      next = std::min(ceiling, low + std::max<std::uint64_t>(low / 4, 1));
    }
    if (next <= low || (over && (next >= *over || *over - low <= precision))) break;
    target = next;
  }
  return best;
}

}  // namespace memopt::remat
