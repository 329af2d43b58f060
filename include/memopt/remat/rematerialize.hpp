#pragma once
// Budget-driven rematerialisation: given a byte budget, which tensors to drop
// and recompute, and the order to run the result in, so that the peak fits
// at little extra compute. The planner runs the graph in a fixed order (the
// best schedule of the original, or the caller's) over memopt's memory model
// and, whenever the next step would pass the budget, evicts resident storages
// in order of least recompute cost per byte and per step of idleness until
// their next use (Belady's rule weighted by cost, as in DTR); a step that
// needs an evicted tensor first recomputes it, recursively through evicted
// inputs, as a copy of its producer (Recomputed/<node>, then
// Recomputed_<k>/<node> for the k-th copy) reading the inputs' current
// copies. Each copy waits (a control edge) for the op run just before it, so
// it runs where the plan put it. The plan passes check_plan: every copy runs
// its original's op on the same values.
//
// Never dropped: graph outputs (the loss, what the caller fetches),
// persistent storages, storages an in-place op has still to write, and what
// cannot be recomputed to the same value: sources (no data inputs:
// parameters, inputs), random draws (default_unrepeatable_ops), fed
// vertices, ops that read a value after an in-place write over it, and what
// the caller excludes. A view costs nothing: dropping a storage drops its
// views with it, bringing a view back recomputes its source first, and the
// reads of a view count as reads of its source (it stays while a view of it
// is to be rebuilt). An in-place write makes the values it overwrites
// unavailable. A copy of an in-place op writes in place only into a copy's
// storage that nothing else reads and no original writes any more, and its
// output is then declared a view (in-place hazards follow vertex order,
// where copies come after every original); otherwise it writes a new tensor,
// since writing in place would clobber what its original's readers still
// read. No copy reads a storage an in-place op has still to write (the
// write would have to come first).
//
// The cost of dropping a storage counts its whole rebuild (dropped ancestors
// too, up to max_rebuild_walk vertices) and grows with each rebuild of it;
// dropping one keeps what its rebuild reads resident until then. A run that
// still needs a tensor it cannot rebuild runs again keeping it (a permanent
// repair, so this ends).
// max_rebuild_ratio bounds the bytes a rebuild remakes per byte its drop
// frees: a deep rebuild (a block's output remade from the layer before)
// makes its own peak; rematerialize_best tries bounded rebuilds first.
//
// A vertex reading a copy instead of its original's output still waits for
// that original (a control edge): the graph's own vertices keep a
// topological order of the graph in every schedule of the result, so
// rematerialisation_floor (remat/floor.hpp) bounds its peak.
//
// Candidates wait in a heap by their score when last measured (after each
// step that touches them, and when what their rebuild needs changes); the
// one taken is measured again and kept only if still no worse than the next
// (scores mostly grow as the run goes on), and once a step with none left,
// every resident storage is measured again. About O((steps + evictions) x
// log storages) plus the rebuild walks (at most max_rebuild_walk vertices
// each): a 100,000-vertex training graph in under half a second
// (bench/remat_bench).

#include <memopt/remat/block_chain.hpp>
#include <memopt/remat/chain.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/remat/floor.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/runs.hpp>

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

/// The planner's run (see the header comment).
template <rewrite_naming Naming>
class remat_run {
 public:
  remat_run(const graph_facts& f, const std::vector<std::size_t>& order, const remat_options& options, const Naming& naming,
            const remat_repairs& repairs)
      : f_(f), order_(order), options_(options), naming_(naming) {
    const std::size_t n = f.size();
    std::vector<std::size_t> position(n, 0);
    for (std::size_t k = 0; k < order.size(); ++k) position[order[k]] = k;
    holder_.resize(n);
    where_.resize(n);
    uses_.resize(n);
    later_.resize(n);
    for (std::size_t v = 0; v < n; ++v) {
      later_[v].resize(f.outputs[v].size());
      holder_[v].assign(f.outputs[v].size(), no_holder);
      lost_in_.emplace_back(f.outputs[v].size(), no_holder);
      where_[v].resize(f.outputs[v].size());
      uses_[v].resize(f.outputs[v].size());
    }
    for (std::size_t v = 0; v < n; ++v) {
      for (const operand& o : f.operands[v]) uses_[o.vertex][o.port].push_back(position[v]);
    }
    // A view is rebuilt from its source: reads of the view are reads of the source too.
    for (auto k = order.size(); k-- > 0;) {
      const std::size_t v = order[k];
      for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
        const auto& shares = f.outputs[v][port].shares;
        if (!shares || shares->in_place) continue;
        auto& source = uses_[shares->source.vertex][shares->source.port];
        source.insert(source.end(), uses_[v][port].begin(), uses_[v][port].end());
      }
    }
    for (auto& by_port : uses_) {
      for (auto& positions : by_port) std::ranges::sort(positions, std::greater<>());  // the next use last
    }
    recomputable_ = recomputable_vertices(f, options);
    pinned_.resize(n);
    writers_.resize(n);
    root_ = rewrite::detail::storage_roots(f);
    const auto& root = root_;
    for (std::size_t v = 0; v < n; ++v) {
      pinned_[v].resize(f.outputs[v].size());
      writers_[v].resize(f.outputs[v].size());
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
    expiring_.resize(order.size());
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
    result_.method = "eviction";
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
    auto& positions = uses_[t.vertex][t.port];
    while (!positions.empty() && positions.back() < step_) positions.pop_back();
    std::size_t next = positions.empty() ? never : positions.back();
    auto& planned = later_[t.vertex][t.port];
    while (!planned.empty() && planned.begin()->first < step_) planned.erase(planned.begin());
    if (!planned.empty()) next = std::min(next, planned.begin()->first);
    return next;
  }

  std::size_t next_static_use(operand t) {
    auto& positions = uses_[t.vertex][t.port];
    while (!positions.empty() && positions.back() < step_) positions.pop_back();
    return positions.empty() ? never : positions.back();
  }

  bool needed_later(std::size_t s) {
    storage& st = storages_[s];
    if (!st.counted || st.pending > 0) return true;
    return std::ranges::any_of(st.tensors, [&](operand t) {
      if (holder_[t.vertex][t.port] == s) return pinned_[t.vertex][t.port] || next_use(t) != never;
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
  /// until v runs.
  std::vector<input_ref> ensure_inputs(std::size_t v, bool for_copy) {
    std::vector<input_ref> inputs;
    for (const operand& o : f_.operands[v]) {
      inputs.push_back(ensure(o, for_copy));
      ++storages_[inputs.back().storage].pending;
    }
    return inputs;
  }

  input_ref ensure(operand t, bool for_copy) {
    // An original reading a tensor after an in-place write reads the storage as it is.
    if (const std::size_t s = lost_in_[t.vertex][t.port]; !for_copy && s != no_holder && storages_[s].resident) {
      return {{rewrite::original(t.vertex), t.port}, s};
    }
    if (const std::size_t s = holder_[t.vertex][t.port]; s != no_holder) return {where_[t.vertex][t.port], s};
    const std::size_t u = t.vertex;
    if (!recomputable_[u]) throw unrebuildable{t};  // rare: the walks at eviction missed a later drop
    const auto inputs = ensure_inputs(u, true);
    const std::size_t k = copies_[u]++;
    added_node node = rewrite::detail::recompute_copy(f_, u, k, naming_);
    for (const input_ref& in : inputs) node.inputs.push_back(in.tensor);
    if (last_run_) node.control.push_back(*last_run_);
    const node_ref copy = rewrite::added(result_.plan.nodes.size());
    result_.plan.nodes.push_back(std::move(node));
    result_.extra_flops += f_.flops[u];
    compute(u, copy, inputs, t.port);
    return {where_[t.vertex][t.port], holder_[t.vertex][t.port]};
  }

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
          auto& positions = uses_[o.vertex][o.port];
          while (!positions.empty() && positions.back() <= step_) positions.pop_back();
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
  void measure(std::size_t s) {
    if (version_.size() <= s) version_.resize(storages_.size(), 0);
    ++version_[s];
    if (!storages_[s].resident) return;
    if (const auto score = eviction_score(s, {})) candidates_.push({*score, s, version_[s]});
  }

  /// Whether storage s may be dropped now to be recomputed later, and at what score (lower goes first).
  std::optional<double> eviction_score(std::size_t s, const std::vector<std::size_t>& locked) {
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
      if (pinned_[t.vertex][t.port] || !recomputable_[t.vertex]) return std::nullopt;
      const auto rebuild = rebuild_cost(t.vertex, s, gone);
      if (!rebuild) return std::nullopt;
      cost += *rebuild;
      next = std::min(next, next_use(t));
    }
    if (next == never || next <= step_) return std::nullopt;
    if (options_.max_rebuild_ratio < std::numeric_limits<double>::infinity()) {
      std::uint64_t remade = 0;
      for (const std::size_t u : gone) {
        for (const tensor_output& out : f_.outputs[u]) remade += out.shares ? 0 : out.bytes;
      }
      if (static_cast<double>(remade) > options_.max_rebuild_ratio * static_cast<double>(st.bytes)) return std::nullopt;
    }
    const double idle = static_cast<double>(next - step_);
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
  std::optional<double> rebuild_cost(std::size_t v, std::size_t dropping, std::vector<std::size_t>& seen,
                                     std::vector<operand>* frontier = nullptr) const {
    if (std::ranges::find(seen, v) != seen.end()) return 0.0;
    seen.push_back(v);
    double cost = f_.flops[v];
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

  void evict_for(std::uint64_t needed, const std::vector<std::size_t>& locked) {
    const std::size_t max_copies = options_.max_copies > 0 ? options_.max_copies : 4 * f_.size();
    while (resident_bytes_ + needed > options_.budget && result_.plan.nodes.size() < max_copies) {
      // The candidates by score as last measured, lowest first: measured
      // again when taken, and kept when still no worse than the next.
      std::optional<std::size_t> best;
      if (candidates_.empty() && rescanned_ != step_) {
        // A storage can become a candidate unmeasured (what its rebuild
        // reads came back): once a step, when none is left, all are measured.
        rescanned_ = step_;
        for (const std::size_t s : resident_) measure(s);
      }
      while (!best && !candidates_.empty()) {
        const candidate top = candidates_.top();
        candidates_.pop();
        if (top.version != version_[top.storage] || !storages_[top.storage].resident) continue;
        const auto score = eviction_score(top.storage, locked);
        if (!score) continue;  // back when it is next measured
        if (!candidates_.empty() && candidate{*score, top.storage, 0} > candidates_.top()) {
          candidates_.push({*score, top.storage, top.version});
        } else {
          best = top.storage;
        }
      }
      if (!best) return;  // nothing more can go: the budget is out of reach at this step
      // Their rebuilds read again what is held now, through inputs gone too:
      // it stays until then (a rebuild comes no later than the use planned).
      std::vector<std::size_t> frontier_storages;
      for (const operand& t : storages_[*best].tensors) {
        const std::size_t when = holder_[t.vertex][t.port] == *best ? next_use(t) : never;
        if (when == never) continue;
        std::vector<std::size_t> seen;
        std::vector<operand> frontier;
        (void)rebuild_cost(t.vertex, *best, seen, &frontier);
        for (const operand& o : frontier) {
          later_[o.vertex][o.port].insert({when, {t.vertex, t.port}});
          planned_reads_[{t.vertex, t.port}].push_back({o, when});
          expiring_[when].push_back(o);
          frontier_storages.push_back(holder_[o.vertex][o.port]);
        }
      }
      drop(*best);
      for (const std::size_t s : frontier_storages) measure(s);  // a use planned: it may go until then
    }
  }

  const graph_facts& f_;
  const std::vector<std::size_t>& order_;
  const remat_options& options_;
  const Naming& naming_;
  std::vector<std::vector<std::vector<std::size_t>>> uses_;  ///< by tensor: its readers' positions, the next last
  /// By tensor: (position, dropped tensor) of the rebuilds that will read it
  /// by then; a rebuild done takes its reads back (planned_reads_).
  using tensor_key = std::pair<std::size_t, std::size_t>;  ///< (vertex, port)
  std::vector<std::vector<std::multiset<std::pair<std::size_t, tensor_key>>>> later_;
  std::map<tensor_key, std::vector<std::pair<operand, std::size_t>>> planned_reads_;  ///< by dropped tensor
  std::vector<std::vector<operand>> expiring_;               ///< by position: tensors with a recompute read planned there
  std::vector<bool> recomputable_;
  std::vector<std::vector<bool>> pinned_;
  std::vector<std::vector<std::size_t>> writers_;            ///< by root tensor: in-place writes into its storage
  std::vector<std::vector<std::size_t>> writes_left_;        ///< by root tensor: those of writers_ not run yet
  std::vector<std::vector<operand>> root_;                   ///< by tensor: the root of its storage
  std::vector<std::vector<std::size_t>> holder_;             ///< by tensor: the storage holding it, or no_holder
  std::vector<std::vector<tensor_ref>> where_;               ///< by tensor: the node output holding it
  std::vector<std::vector<std::size_t>> lost_in_;            ///< by tensor: the storage an in-place write took it from
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

/// The plan for `budget` over `order` (a topological order of the original
/// vertices, every one once). Throws bad_plan_error for an order that is not
/// one or a fed vertex that does not exist.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] remat_result rematerialize(const graph_facts& f, const std::vector<std::size_t>& order,
                                         const remat_options& options, const Naming& naming = {}) {
  detail::check_order(f, order, "rematerialize");
  (void)detail::recomputable_vertices(f, options);  // checks the fed vertices
  // A run that drops a tensor it cannot rebuild runs again keeping it (and
  // not recomputing what reads it): each repair is permanent, so this ends.
  detail::remat_repairs repairs;
  for (;;) {
    try {
      return detail::remat_run<Naming>(f, order, options, naming, repairs).run();
    } catch (const detail::unrebuildable& fault) {
      const operand t = fault.tensor;
      if (!repairs.kept.insert({t.vertex, t.port}).second) {
        throw bad_plan_error({"rematerialize: '" + f.name[t.vertex] + "' is needed again and cannot be recomputed"});
      }
      for (const std::size_t c : f.consumers[t.vertex]) repairs.not_recomputed.insert(c);
    }
  }
}

/// The best of the plans over several orders and rebuild bounds (at most four
/// times the bytes a drop frees, then the caller's bound; then, when the plan
/// costs more than 1 % of the graph's flops or does not fit, 2, 8, 1.5 and 3
/// times while their runs stay within about 500,000 vertices and edges: on
/// tight budgets the planner's result moves erratically with the bound),
/// then, where no plan fits, rebuilds walking four times as deep (within
/// the same work limit); of the exact schedule when the graph is a chain
/// (chain.hpp) and of the block programme's when it is a chain of blocks
/// (block_chain.hpp): one that fits the budget before one that does not; of
/// those that fit, the fewest extra flops; of the others, the lowest peak,
/// then the fewest flops.
/// When none fits, the planner also aims lower (a run that misses its target
/// can land above a run aiming lower) and then runs again aiming at the
/// lowest peak reached, so that steps which could not fit anyway no longer
/// drive evictions elsewhere: the same peak, usually for fewer flops. Last,
/// the four best plans lose the copies they can do without (runs.hpp), which
/// can rank them another way, and the cheapest is returned.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] remat_result rematerialize_best(const graph_facts& f, const std::vector<std::vector<std::size_t>>& orders,
                                              const remat_options& options, const Naming& naming = {}) {
  if (orders.empty()) throw bad_plan_error({"rematerialize_best needs at least one order"});
  constexpr double bounded_rebuild_ratio = 4;
  constexpr std::size_t extra_ratio_work = 500'000;
  const auto better = [](const remat_result& a, const remat_result& b, std::uint64_t budget) {
    const auto key = [budget](const remat_result& r) {
      const bool over = r.planned_peak > budget;
      return std::tuple(over, over ? r.planned_peak : 0, r.extra_flops);
    };
    return key(a) < key(b);
  };
  std::vector<double> ratios{std::min(options.max_rebuild_ratio, bounded_rebuild_ratio)};
  if (options.max_rebuild_ratio > bounded_rebuild_ratio) ratios.push_back(options.max_rebuild_ratio);
  std::vector<double> more_ratios;  // for plans that cost much or do not fit, within a work limit
  std::size_t edges = 0;
  for (const auto& operands : f.operands) edges += operands.size();
  const std::size_t run_work = orders.size() * (f.size() + edges);
  std::size_t work = 0;
  for (const double more : {2.0, 8.0, 1.5, 3.0}) {
    if (more >= options.max_rebuild_ratio) continue;
    if ((work += run_work) > extra_ratio_work) break;
    more_ratios.push_back(more);
  }
  const bool deeper_walks = run_work <= extra_ratio_work;
  double total_flops = 0;
  for (const double flops : f.flops) total_flops += flops;
  // The best plans, best first: pruning can rank them another way.
  constexpr std::size_t leaders_kept = 4;
  std::vector<remat_result> leaders;
  const auto offer = [&](remat_result r, std::uint64_t budget) {
    const auto at = std::ranges::find_if(leaders, [&](const remat_result& l) { return better(r, l, budget); });
    if (static_cast<std::size_t>(at - leaders.begin()) >= leaders_kept) return;
    leaders.insert(at, std::move(r));
    if (leaders.size() > leaders_kept) leaders.pop_back();
  };
  const auto best_for = [&](std::uint64_t target, std::uint64_t budget) {
    remat_options o = options;
    o.budget = target;
    // The other bounds where the plan costs more than 1 % of the graph's flops or does not fit.
    const auto costly = [&] {
      return leaders.front().planned_peak > budget || leaders.front().extra_flops > total_flops / 100;
    };
    for (const auto* bounds : {&ratios, &more_ratios}) {
      if (bounds == &more_ratios && !costly()) break;
      for (const double ratio : *bounds) {
        o.max_rebuild_ratio = ratio;
        for (const auto& order : orders) offer(rematerialize(f, order, o, naming), budget);
      }
    }
    // Deeper rebuilds where nothing fits yet: lower peaks, at a price.
    if (deeper_walks && leaders.front().planned_peak > budget) {
      o.max_rebuild_ratio = options.max_rebuild_ratio;
      o.max_rebuild_walk = 4 * std::min(options.max_rebuild_walk, std::numeric_limits<std::size_t>::max() / 4);
      for (const auto& order : orders) offer(rematerialize(f, order, o, naming), budget);
    }
  };
  best_for(options.budget, options.budget);
  // A chain is solved exactly, when its forward stages may be recomputed.
  if (const auto chain = chain_of(f)) {
    const auto recomputable = detail::recomputable_vertices(f, options);
    if (std::ranges::all_of(chain->forward, [&](std::size_t v) { return recomputable[v]; })) {
      if (auto exact = rematerialize_chain(f, *chain, options.budget, naming)) offer(std::move(*exact), options.budget);
    }
  }
  // A block chain by Rotor's programme over its stages.
  if (const auto blocks = block_chain_of(f, orders.front(), options)) {
    try {
      const remat_result& best = leaders.front();
      const double beat = best.planned_peak <= options.budget ? best.extra_flops : std::numeric_limits<double>::infinity();
      if (auto r = rematerialize_blocks(f, *blocks, options.budget, naming, 8, beat)) offer(std::move(*r), options.budget);
    } catch (const bad_plan_error&) {  // a rerun would read a storage in another state (in-place writes)
    }
  }
  // Then the best plans that fit `bound` without the copies they can do
  // without, each within a work limit of about a million steps of plan
  // building; the cheapest.
  const auto pruned = [&](std::uint64_t bound) {
    std::optional<remat_result> cheapest;
    for (remat_result& r : leaders) {
      if (cheapest && (r.planned_peak > bound || r.plan.nodes.empty())) break;
      const std::size_t trials = std::max<std::size_t>(4, 1'000'000 / (r.order.size() + f.size()));
      auto p = detail::without_needless_copies(f, std::move(r), bound, naming, trials);
      if (!cheapest || better(p, *cheapest, bound)) cheapest = std::move(p);
    }
    return std::move(*cheapest);
  };
  if (leaders.front().planned_peak <= options.budget) return pruned(options.budget);
  for (const double lower : {0.9, 0.8, 0.67, 0.5}) best_for(static_cast<std::uint64_t>(static_cast<double>(options.budget) * lower), options.budget);
  const std::uint64_t reached = leaders.front().planned_peak;
  // Aiming at the lowest peak reached, the plans are ranked against it.
  std::vector<remat_result> before = std::move(leaders);
  leaders.clear();
  for (remat_result& r : before) offer(std::move(r), reached);
  best_for(reached, reached);
  return pruned(reached);
}

}  // namespace memopt::remat
