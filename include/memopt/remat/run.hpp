#pragma once
// The rematerialisation planner's run (detail::remat_run): one pass over a
// fixed order under a byte budget, materialising storages as memopt's memory
// model counts them, evicting when the next step would pass the budget and
// recomputing what a step needs as copies of its producers (the rules are in
// remat/rematerialize.hpp, whose rematerialize drives it). Which storage to
// evict is decided by the members remat/eviction.hpp defines, how a step's
// inputs are rebuilt by those of remat/rebuild.hpp: include
// remat/rematerialize.hpp to run it.

#include <memopt/detail/per_output.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/reads.hpp>
#include <memopt/rewrite/copy.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace memopt::remat {

namespace detail {

/// A tensor the run dropped and then needed where it cannot be recomputed;
/// rematerialize runs again with it kept.
struct unrebuildable {
  operand tensor;
};

/// Tensors to keep resident once made, and vertices not to recompute: what
/// earlier runs learnt.
struct remat_repairs {
  std::set<std::pair<std::size_t, std::size_t>> kept;
  std::set<std::size_t> not_recomputed;
};

/// The planner's run (see remat/rematerialize.hpp's header comment).
template <rewrite_naming Naming>
class remat_run {
 public:
  remat_run(const graph_facts& f, const std::vector<std::size_t>& order, const remat_options& options, const Naming& naming,
            const remat_repairs& repairs)
      : f_(f), order_(order), options_(options), naming_(naming), output_first_(memopt::detail::output_offsets(f.outputs)),
        later_(output_first_, {}), retained_until_(output_first_, 0),
        pinned_(output_first_, 0), writers_(output_first_, 0), holder_(output_first_, no_holder),
        where_(output_first_, {}), lost_in_(output_first_, no_holder) {
    const std::size_t n = f.size();
    std::vector<std::size_t> position(n, 0);
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    uses_ = positions_of_reads(f, order, position, output_first_);
    expiring_.resize(order.size());
    kept_until_.assign(n, 0);
    if (options.kept_until) {
      for (std::size_t v = 0; v < n; ++v) {
        if (const std::size_t u = options.kept_until(v); u < n) kept_until_[v] = position[u];
      }
    }
    for (std::size_t v = 0; v < n; ++v) {
      if (!options.retain || !options.retain(v)) continue;
      // Until the last read of what its consumers make: a rebuild of those reads it.
      std::size_t until = 0;
      for (const std::size_t c : f.consumers[v]) {
        for (const auto& positions : uses_.of[c]) until = std::max(until, positions.empty() ? 0 : positions.front());
      }
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
        retained_until_[v][port] = until;
        expiring_[until].push_back({v, port});
      }
    }
    recomputable_ = recomputable_vertices(f, options);
    root_ = rewrite::detail::storage_roots(f);
    const auto& root = root_;
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) pinned_[v][port] = f.outputs[v][port].live_out;
    }
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
        const auto& shares = f.outputs[v][port].shares;
        if (shares && shares->in_place) ++writers_[root[v][port].vertex][root[v][port].port];
      }
    }
    writes_left_ = writers_;
    for (const auto& [v, port] : repairs.kept) pinned_[v][port] = true;
    for (const std::size_t v : repairs.not_recomputed) recomputable_[v] = false;
  }

  remat_result run() {
    for (step_ = 0; step_ < order_.size(); ++step_) {
      // Recompute reads planned for the step before expire with it.
      if (step_ > 0) release_expired(step_ - 1);
      const std::size_t v = order_[step_];
      // What reads a value after an in-place write over it cannot be recomputed
      // from copies, which hold values as they were made.
      if (std::ranges::any_of(f_.operands[v], [&](operand o) { return lost_in_[o.vertex][o.port] != no_holder; })) {
        recomputable_[v] = false;
      }
      const auto inputs = ensure_inputs(v, false);
      compute(v, rewrite::original(v), inputs);
      for (std::size_t k = 0; k < inputs.size(); ++k) {
        if (!inputs[k].tensor.node.added) continue;
        result_.plan.redirects.push_back({v, k, inputs[k].tensor});
        // The original producer still runs first: originals keep a topological
        // order of the graph in every schedule (the floor's premise).
        const node_ref producer = rewrite::original(f_.operands[v][k].vertex);
        if (result_.plan.controls.empty() || result_.plan.controls.back().from != producer ||
            result_.plan.controls.back().to != rewrite::original(v)) {
          result_.plan.controls.push_back({producer, rewrite::original(v)});
        }
      }
    }
    result_.method = "eviction" + rule_name(options_);
    result_.idle_weight = options_.idle_weight;
    result_.only_bytes_lacking = options_.only_bytes_lacking;
    return std::move(result_);
  }

 private:
  static constexpr std::size_t no_holder = std::numeric_limits<std::size_t>::max();
  static constexpr std::size_t never = std::numeric_limits<std::size_t>::max();

  /// A storage as materialised now.
  struct storage {
    std::uint64_t bytes = 0;
    bool counted = true;           ///< transient (not persistent)
    bool made_by_copy = false;
    bool resident = true;
    std::size_t pending = 0;       ///< reads by steps under way (ensured, not yet run)
    std::size_t writes = 0;        ///< in-place writes into it still to run
    std::vector<operand> tensors;  ///< the original tensors it holds
  };

  /// Next use of original tensor t at this step or later (a position in the order), or never.
  std::size_t next_use(operand t) {
    auto& positions = uses_.of[t.vertex][t.port];
    while (!positions.empty() && positions.back() < step_) positions = positions.first(positions.size() - 1);
    std::size_t next = positions.empty() ? never : positions.back();
    auto& planned = later_[t.vertex][t.port];
    while (!planned.empty() && planned.begin()->first < step_) planned.erase(planned.begin());
    if (!planned.empty()) next = std::min(next, planned.begin()->first);
    return next;
  }

  std::size_t next_static_use(operand t) {
    auto& positions = uses_.of[t.vertex][t.port];
    while (!positions.empty() && positions.back() < step_) positions = positions.first(positions.size() - 1);
    return positions.empty() ? never : positions.back();
  }

  bool needed_later(std::size_t s) {
    storage& st = storages_[s];
    if (!st.counted || st.pending > 0) return true;
    return std::ranges::any_of(st.tensors, [&](operand t) {
      if (holder_[t.vertex][t.port] == s) {
        return pinned_[t.vertex][t.port] || next_use(t) != never || step_ < retained_until_[t.vertex][t.port];
      }
      // A value overwritten here: only originals still read it here (copies
      // recompute it), and a graph output keeps its storage to the end.
      return lost_in_[t.vertex][t.port] == s && (pinned_[t.vertex][t.port] || next_static_use(t) != never);
    });
  }

  /// v's outputs are rebuilt: the reads planned for their rebuilds are done.
  void cancel_planned_reads(std::size_t v) {
    for (std::size_t port = 0; port < f_.outputs[v].size(); ++port) {
      const auto it = planned_reads_.find(tensor_key{v, port});
      if (it == planned_reads_.end()) continue;
      for (const auto& [o, when] : it->second) {
        auto& planned = later_[o.vertex][o.port];
        if (const auto entry = planned.find({when, tensor_key{v, port}}); entry != planned.end()) planned.erase(entry);
        if (const std::size_t s = holder_[o.vertex][o.port]; s != no_holder) measure(s);  // its next use may be later now
      }
      planned_reads_.erase(it);
    }
  }

  void release_expired(std::size_t position) {
    for (const operand& t : expiring_[position]) {
      if (holder_[t.vertex][t.port] != no_holder) release_if_dead(holder_[t.vertex][t.port]);
    }
  }

  void release_if_dead(std::size_t s) {
    if (storages_[s].resident && !needed_later(s)) drop(s);
  }

  /// Frees storage s; its tensors have no holder until recomputed.
  void drop(std::size_t s) {
    storage& st = storages_[s];
    st.resident = false;
    if (st.counted) resident_bytes_ -= st.bytes;
    const std::size_t last = resident_.back();  // out of the resident list, in O(1)
    resident_[slot_[s]] = last;
    slot_[last] = slot_[s];
    resident_.pop_back();
    for (const operand& t : st.tensors) {
      if (holder_[t.vertex][t.port] == s) holder_[t.vertex][t.port] = no_holder;
    }
  }

  /// Where a step reads an input: the tensor and its storage.
  struct input_ref {
    tensor_ref tensor;
    std::size_t storage = 0;
  };

  /// Where v's data inputs are read, recomputing dropped ones (for a copy,
  /// also values an in-place write has overwritten); each is marked pending
  /// as it is taken, in operand order, but for the dropped ones among
  /// themselves (rebuild_order). A copy of an op reading only its inputs'
  /// shapes reads none.
  std::vector<input_ref> ensure_inputs(std::size_t v, bool for_copy);

  /// Where a step can read tensor t now without recomputing it, if anywhere.
  std::optional<input_ref> held(operand t, bool for_copy) const {
    // An original reading a tensor after an in-place write reads the storage as it is.
    if (const std::size_t s = lost_in_[t.vertex][t.port]; !for_copy && s != no_holder && storages_[s].resident) {
      return input_ref{{rewrite::original(t.vertex), t.port}, s};
    }
    if (const std::size_t s = holder_[t.vertex][t.port]; s != no_holder) return input_ref{where_[t.vertex][t.port], s};
    return std::nullopt;
  }

  /// Where tensor t is read, recomputed (its inputs first) when gone.
  input_ref ensure(operand t, bool for_copy);

  /// A rebuild's bytes: the most it holds at once, and what it leaves (the storage read).
  struct rebuild_need {
    std::uint64_t peak = 0;
    std::uint64_t left = 0;
    /// What it holds beyond what it leaves: Sethi and Ullman's key.
    [[nodiscard]] std::int64_t surplus() const { return static_cast<std::int64_t>(peak) - static_cast<std::int64_t>(left); }
  };
  using rebuild_walk = std::map<std::pair<std::size_t, std::size_t>, rebuild_need>;  ///< by (vertex, port) rebuilt
  /// What rebuilding tensor t, gone, holds, its inputs rebuilt in
  /// rebuild_order; `walk` gets every tensor the rebuild remakes.
  rebuild_need measure_rebuild(operand t, rebuild_walk& walk) const;
  /// The order to rebuild `operands[k]` for k in `gone` (remat/rebuild.hpp).
  std::vector<std::size_t> rebuild_order(const std::vector<operand>& operands, const std::vector<std::size_t>& gone) const;

  std::size_t copies_of(std::size_t v) const {
    const auto it = copies_.find(v);
    return it == copies_.end() ? 0 : it->second;
  }

  std::size_t operand_index(std::size_t v, operand source) const {
    return static_cast<std::size_t>(std::ranges::find(f_.operands[v], source) - f_.operands[v].begin());
  }

  /// Runs `node` (vertex v, or a copy of it) on its ensured inputs: its new
  /// storages take memory, evicting what the budget asks, and hold v's
  /// tensors not held elsewhere; then what the step was the last to need
  /// goes, but for output `requested` (a copy's, which its requester reads next).
  void compute(std::size_t v, node_ref node, const std::vector<input_ref>& inputs,
               std::optional<std::size_t> requested = std::nullopt) {
    std::vector<std::size_t> locked;  // storages this step reads or makes
    locked.reserve(inputs.size() + f_.outputs[v].size());
    for (const input_ref& in : inputs) locked.push_back(in.storage);
    std::uint64_t needed = 0;
    std::vector<std::size_t> output_storage(f_.outputs[v].size());
    for (std::size_t port = 0; port < f_.outputs[v].size(); ++port) {
      const auto& out = f_.outputs[v][port];
      const bool in_place = out.shares && out.shares->in_place;
      const std::size_t source = out.shares ? operand_index(v, out.shares->source) : 0;
      // A copy of an in-place op writes anew unless what it overwrites is a
      // copy's that nothing else reads. Its output is then declared a view:
      // in-place hazards follow vertex order, where copies come after every
      // original, and nothing reads the value it overwrites.
      if (out.shares && (!in_place || !node.added || overwritable(locked[source], root_[v][port]))) {
        output_storage[port] = locked[source];
        if (in_place) overwrite(output_storage[port], node.added);
        if (in_place && node.added) result_.plan.nodes[node.index].outputs[port].alias_operand = source;
        if (in_place && !node.added) --writes_left_[root_[v][port].vertex][root_[v][port].port];
      } else {
        output_storage[port] = storages_.size();
        storages_.push_back({.bytes = out.bytes, .counted = !f_.persistent[v], .made_by_copy = node.added,
                             .writes = node.added ? 0 : writers_[v][port]});
        slot_.push_back(resident_.size());
        resident_.push_back(output_storage[port]);
        if (!f_.persistent[v]) needed += out.bytes;
      }
      locked.push_back(output_storage[port]);
    }
    const std::uint64_t scratch = f_.scratch[v];  // the op's own, live during this step only
    evict_for(needed + scratch, locked);
    resident_bytes_ += needed;
    result_.planned_peak = std::max(result_.planned_peak, resident_bytes_ + scratch);
    result_.planned_bytes.push_back(resident_bytes_ + scratch);
    for (std::size_t port = 0; port < f_.outputs[v].size(); ++port) {
      if (holder_[v][port] != no_holder) continue;  // a copy of a node whose other outputs are gone
      holder_[v][port] = output_storage[port];
      where_[v][port] = {node, port};
      storages_[output_storage[port]].tensors.push_back({v, port});
    }
    result_.order.push_back(node);
    last_run_ = node;
    if (node.added) cancel_planned_reads(v);
    for (std::size_t k = 0; k < inputs.size(); ++k) --storages_[locked[k]].pending;
    if (!node.added) {  // v's own reads of this step are done, and those of the sources of the views it reads
      for (operand o : f_.operands[v]) {
        for (std::size_t hops = 0; hops <= f_.size(); ++hops) {
          auto& positions = uses_.of[o.vertex][o.port];
          while (!positions.empty() && positions.back() <= step_) positions = positions.first(positions.size() - 1);
          const auto& shares = f_.outputs[o.vertex][o.port].shares;
          if (!shares || shares->in_place) break;
          o = shares->source;
          if (const std::size_t s = holder_[o.vertex][o.port]; s != no_holder) locked.push_back(s);
        }
      }
    }
    const std::size_t keep = requested ? holder_[v][*requested] : no_holder;
    for (const std::size_t s : locked) {
      if (s != keep) release_if_dead(s);
    }
    for (const std::size_t s : locked) measure(s);
  }

  /// An in-place write into storage s: the values it held are gone (a
  /// copy's write takes only values that copies made, rebuilt if needed again).
  void overwrite(std::size_t s, bool by_copy) {
    storage& st = storages_[s];
    for (const operand& t : st.tensors) {
      if (holder_[t.vertex][t.port] != s) continue;
      holder_[t.vertex][t.port] = no_holder;
      if (!by_copy) lost_in_[t.vertex][t.port] = s;
    }
    if (by_copy) return;
    // What was read from s before this write can be rebuilt now (no copy
    // waits for a write still to come): measure it again.
    if (--st.writes == 0) {
      for (const operand& t : st.tensors) {
        for (const std::size_t reader : f_.consumers[t.vertex]) {
          for (const std::size_t h : holder_[reader]) {
            if (h != no_holder && h != s) measure(h);
          }
        }
      }
    }
  }

  /// Whether a copy may write in place into storage s, where original
  /// storage `root` lives: a copy made it, the writer is its only reader now,
  /// no value it holds is read again, and no original writes there any more.
  bool overwritable(std::size_t s, operand root) {
    const storage& st = storages_[s];
    return st.made_by_copy && st.pending == 1 && writes_left_[root.vertex][root.port] == 0 &&
           std::ranges::all_of(st.tensors, [&](operand t) {
             return holder_[t.vertex][t.port] != s || (!pinned_[t.vertex][t.port] && next_use(t) == never);
           });
  }

  /// An eviction candidate: storage, score when measured, the storage's version then.
  struct candidate {
    double score = 0;
    std::size_t storage = 0;
    std::size_t version = 0;
    friend bool operator>(const candidate& a, const candidate& b) {
      return std::pair(a.score, a.storage) > std::pair(b.score, b.storage);
    }
  };

  /// Storage s's score now, as a candidate (older measures of it lapse).
  void measure(std::size_t s);
  /// Whether storage s may be dropped now to be recomputed later, and at what score (lower goes first).
  std::optional<double> eviction_score(std::size_t s, const std::vector<std::size_t>& locked);
  /// Flops to recompute vertex v and, transitively, its inputs that are gone
  /// or in storage `dropping` (none if one of them cannot be); `seen` holds
  /// the vertices counted already; `frontier` gets the held tensors the
  /// rebuild reads.
  std::optional<double> rebuild_cost(std::size_t v, std::size_t dropping, std::vector<std::size_t>& seen, std::vector<operand>* frontier = nullptr) const;
  void evict_for(std::uint64_t needed, const std::vector<std::size_t>& locked);

  const graph_facts& f_;
  const std::vector<std::size_t>& order_;
  const remat_options& options_;
  const Naming& naming_;
  // By tensor (vertex, port), in one array each:
  template <class T>
  using by_tensor = memopt::detail::per_output<T>;
  const memopt::detail::output_offsets_ptr output_first_;  ///< the offsets they share
  read_positions uses_;  ///< its readers' positions, the next last
  /// (position, dropped tensor) of the rebuilds that will read it by then; a
  /// rebuild done takes its reads back (planned_reads_).
  using tensor_key = std::pair<std::size_t, std::size_t>;  ///< (vertex, port)
  by_tensor<std::multiset<std::pair<std::size_t, tensor_key>>> later_;
  by_tensor<std::size_t> retained_until_;  ///< kept resident until this position (options.retain)
  by_tensor<char> pinned_;
  by_tensor<std::size_t> writers_;      ///< of a root tensor: in-place writes into its storage
  by_tensor<std::size_t> writes_left_;  ///< of a root tensor: those of writers_ not run yet
  by_tensor<std::size_t> holder_;       ///< the storage holding it, or no_holder
  by_tensor<tensor_ref> where_;         ///< the node output holding it
  by_tensor<std::size_t> lost_in_;      ///< the storage an in-place write took it from
  rewrite::detail::storage_root_table root_;  ///< by tensor: the root of its storage
  std::map<tensor_key, std::vector<std::pair<operand, std::size_t>>> planned_reads_;  ///< by dropped tensor
  std::vector<std::vector<operand>> expiring_;  ///< by position: tensors with a recompute read planned there, or retained until there
  std::vector<std::size_t> kept_until_;         ///< by vertex: its outputs not dropped before this position (options.kept_until)
  std::vector<bool> recomputable_;
  std::vector<storage> storages_;
  std::priority_queue<candidate, std::vector<candidate>, std::greater<>> candidates_;
  std::vector<std::size_t> version_;  ///< by storage: how often it was measured
  std::size_t rescanned_ = never;     ///< the step when every resident storage was last measured
  std::vector<std::size_t> resident_;  ///< the storages resident now, in no order
  std::vector<std::size_t> slot_;      ///< by storage: its place in resident_
  std::uint64_t resident_bytes_ = 0;
  std::size_t step_ = 0;
  std::optional<node_ref> last_run_;
  std::map<std::size_t, std::size_t> copies_;  ///< copies made of each vertex
  remat_result result_;
};

}  // namespace detail

}  // namespace memopt::remat
