#pragma once
// The eviction choice of the rematerialisation planner's run (remat/run.hpp):
// a storage's score, the recompute flops of its whole rebuild per byte freed
// and per step of idleness until its next use (raised to the options'
// idle_weight), weighted by how often it was rebuilt (Belady's rule weighted
// by cost, as in DTR); candidates wait in a
// heap by their last score and are measured again when taken; evict_for
// drops the best until the next step fits the budget, keeping what their
// rebuilds read resident until then.

#include <memopt/remat/run.hpp>
#include <memopt/rewrite/naming.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace memopt::remat::detail {

/// Storage s's score now, as a candidate (older measures of it lapse).
template <rewrite_naming Naming>
void remat_run<Naming>::measure(std::size_t s) {
  if (version_.size() <= s) version_.resize(storages_.size(), 0);
  ++version_[s];
  if (!storages_[s].resident) return;
  if (const auto score = eviction_score(s, {})) candidates_.push({*score, s, version_[s]});
}

/// Whether storage s may be dropped now to be recomputed later, and at what score (lower goes first).
template <rewrite_naming Naming>
std::optional<double> remat_run<Naming>::eviction_score(std::size_t s, const std::vector<std::size_t>& locked) {
  const storage& st = storages_[s];
  if (!st.resident || !st.counted || st.pending > 0 || st.writes > 0 || st.bytes == 0 ||
      std::ranges::find(locked, s) != locked.end()) {
    return std::nullopt;
  }
  double cost = 0;
  std::size_t next = never;
  std::vector<std::size_t> gone;  // vertices whose dropped outputs a rebuild recomputes too
  for (const operand& t : st.tensors) {
    if (lost_in_[t.vertex][t.port] == s && (pinned_[t.vertex][t.port] || next_static_use(t) != never)) {
      return std::nullopt;  // read as it is, later
    }
    if (holder_[t.vertex][t.port] != s) continue;
    if (pinned_[t.vertex][t.port] || !recomputable_[t.vertex] || step_ < kept_until_[t.vertex]) return std::nullopt;
    const auto rebuild = rebuild_cost(t.vertex, s, gone);
    if (!rebuild) return std::nullopt;
    cost += *rebuild;
    next = std::min(next, next_use(t));
  }
  // A tensor this very step reads but has not yet taken may go too: it is
  // rebuilt when the step takes it (it then counts as one step idle).
  if (next == never || next < step_) return std::nullopt;
  if (options_.max_rebuild_ratio < std::numeric_limits<double>::infinity()) {
    std::uint64_t remade = 0;
    for (const std::size_t u : gone) {
      for (const tensor_output& out : f_.outputs[u]) remade += out.shares ? 0 : out.bytes;
    }
    if (static_cast<double>(remade) > options_.max_rebuild_ratio * static_cast<double>(st.bytes)) return std::nullopt;
  }
  const double steps = static_cast<double>(std::max<std::size_t>(next - step_, 1));
  const double idle = options_.idle_weight == 1 ? steps : std::pow(steps, options_.idle_weight);
  // A tensor dropped and rebuilt before is likely to be again: it weighs more each time.
  double rebuilt = 1;
  for (const operand& t : st.tensors) {
    if (holder_[t.vertex][t.port] == s) rebuilt += static_cast<double>(copies_of(t.vertex));
  }
  return (cost + 1.0) * rebuilt / (static_cast<double>(st.bytes) * idle);
}

/// Flops to recompute vertex v and, transitively, its inputs that are gone
/// or in storage `dropping` (none if one of them cannot be); `seen` holds
/// the vertices counted already; `frontier` gets the held tensors the
/// rebuild reads.
template <rewrite_naming Naming>
std::optional<double> remat_run<Naming>::rebuild_cost(std::size_t v, std::size_t dropping, std::vector<std::size_t>& seen, std::vector<operand>* frontier) const {
  if (std::ranges::find(seen, v) != seen.end()) return 0.0;
  seen.push_back(v);
  double cost = f_.flops[v];
  if (reads_shape_only(f_, v)) return cost;  // its copy reads no input
  for (const operand& o : f_.operands[v]) {
    // A copy reading a storage an in-place op has still to write would have to wait for the write.
    if (const std::size_t s = holder_[o.vertex][o.port]; s != no_holder && s != dropping) {
      if (storages_[s].writes > 0) return std::nullopt;
      if (frontier != nullptr) frontier->push_back(o);
      continue;
    }
    if (!recomputable_[o.vertex] || seen.size() > options_.max_rebuild_walk) return std::nullopt;
    const auto inputs = rebuild_cost(o.vertex, dropping, seen, frontier);
    if (!inputs) return std::nullopt;
    cost += *inputs;
  }
  return cost;
}

template <rewrite_naming Naming>
void remat_run<Naming>::evict_for(std::uint64_t needed, const std::vector<std::size_t>& locked) {
  const std::size_t max_copies = options_.max_copies > 0 ? options_.max_copies : 4 * f_.size();
  while (resident_bytes_ + needed > options_.budget && result_.plan.nodes.size() < max_copies) {
    if (candidates_.empty() && rescanned_ != step_) {
      // A storage can become a candidate unmeasured (what its rebuild
      // reads came back): once a step, when none is left, all are measured.
      rescanned_ = step_;
      for (const std::size_t s : resident_) measure(s);
    }
    // The candidates by score as last measured, lowest first: measured
    // again when taken, and kept when still no worse than the next.
    const auto take_best = [&]() -> std::optional<candidate> {
      while (!candidates_.empty()) {
        const candidate top = candidates_.top();
        candidates_.pop();
        if (top.version != version_[top.storage] || !storages_[top.storage].resident) continue;
        const auto score = eviction_score(top.storage, locked);
        if (!score) continue;  // back when it is next measured
        if (!candidates_.empty() && candidate{*score, top.storage, 0} > candidates_.top()) {
          candidates_.push({*score, top.storage, top.version});
        } else {
          return candidate{*score, top.storage, top.version};
        }
      }
      return std::nullopt;
    };
    // remat_options::only_bytes_lacking: bytes beyond what the step still
    // lacks free nothing it needs.
    const double lacking = static_cast<double>(resident_bytes_ + needed - options_.budget);
    const auto per_byte_that_counts = [&](const candidate& c) {
      const double bytes = static_cast<double>(storages_[c.storage].bytes);
      return c.score * bytes / std::min(bytes, lacking);
    };
    std::vector<candidate> runners_up;
    auto chosen = take_best();
    while (options_.only_bytes_lacking && chosen && static_cast<double>(storages_[chosen->storage].bytes) > lacking &&
           runners_up.size() < 8) {
      const auto next = take_best();
      if (!next) break;
      if (per_byte_that_counts(*next) < per_byte_that_counts(*chosen)) {
        runners_up.push_back(*chosen);
        chosen = next;
      } else {
        runners_up.push_back(*next);
      }
    }
    for (const candidate& c : runners_up) candidates_.push(c);
    if (!chosen) return;  // nothing more can go: the budget is out of reach at this step
    const std::size_t best = chosen->storage;
    // Their rebuilds read again what is held now, through inputs gone too:
    // it stays until then (a rebuild comes no later than the use planned).
    std::vector<std::size_t> frontier_storages;
    for (const operand& t : storages_[best].tensors) {
      const std::size_t when = holder_[t.vertex][t.port] == best ? next_use(t) : never;
      if (when == never) continue;
      std::vector<std::size_t> seen;
      std::vector<operand> frontier;
      (void)rebuild_cost(t.vertex, best, seen, &frontier);
      for (const operand& o : frontier) {
        later_[o.vertex][o.port].insert({when, {t.vertex, t.port}});
        planned_reads_[{t.vertex, t.port}].push_back({o, when});
        expiring_[when].push_back(o);
        frontier_storages.push_back(holder_[o.vertex][o.port]);
      }
    }
    drop(best);
    for (const std::size_t s : frontier_storages) measure(s);  // a use planned: it may go until then
  }
}

}  // namespace memopt::remat::detail
