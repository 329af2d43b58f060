#pragma once
// What the rematerialisation planners (remat/rematerialize.hpp, remat/chain.hpp)
// and the floor (remat/floor.hpp) share: the options saying what may
// be recomputed, and the result, a plan with the order to run it in.

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace memopt::remat {

// The rewrite family's vocabulary, which the planners read and write: a
// graph's facts, its tensors, the plans they emit and the error they throw.
using rewrite::added_node;
using rewrite::bad_plan_error;
using rewrite::control_change;
using rewrite::graph_facts;
using rewrite::no_vertex;
using rewrite::node_ref;
using rewrite::operand;
using rewrite::reads_shape_only;
using rewrite::rewrite_naming;
using rewrite::rewrite_plan;
using rewrite::rewritten_graph;
using rewrite::seed_naming;
using rewrite::tensor_ref;

/// Op types whose outputs differ from run to run (random draws), TF and ATen
/// names: never recomputed, unless the runtime replays the generator's state
/// as torch.utils.checkpoint does (then pass no unrepeatable ops). An
/// uninitialised buffer (empty) is recomputed as a new allocation: a
/// well-formed program writes it before reading it.
[[nodiscard]] inline std::vector<std::string> default_unrepeatable_ops() {
  return {// TensorFlow
          "RandomUniform", "RandomUniformInt", "RandomStandardNormal", "TruncatedNormal", "RandomShuffle",
          "Multinomial", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "Dropout",
          // ATen
          "bernoulli", "bernoulli_", "dropout", "native_dropout", "rand", "rand_like", "randn", "randn_like",
          "randint", "randint_like", "randperm", "normal", "normal_", "uniform_", "exponential_", "geometric_",
          "log_normal_", "cauchy_", "random_", "multinomial", "poisson"};
}

struct remat_options {
  std::uint64_t budget = 0;                    ///< the peak to fit, bytes
  std::vector<std::size_t> feed;               ///< fed vertices: never recomputed
  std::vector<std::string> unrepeatable_ops = default_unrepeatable_ops();  ///< never recomputed
  std::function<bool(std::size_t)> may_recompute;  ///< also required of a vertex to recompute it, when set
  /// Vertices whose outputs stay resident past their last read, until the
  /// last read of what their consumers make (rebuilds of those read them),
  /// when set; dropped earlier only if read again. rematerialize_best's
  /// local search sets it.
  std::function<bool(std::size_t)> retain;
  /// By vertex, when set: an original vertex before which the vertex's
  /// outputs are not dropped to make room (no_vertex: no such bound).
  /// rematerialize_best's local search sets it.
  std::function<std::size_t(std::size_t)> kept_until;
  /// A work limit: once this many copies are made (0: four per vertex), no
  /// more storages are dropped; those dropped already are still rebuilt.
  std::size_t max_copies = 0;
  /// A storage is never dropped when its rebuild would make more than this
  /// many bytes (its own and those of the dropped inputs it remakes) per byte
  /// the drop frees: such a rebuild makes a peak of its own.
  double max_rebuild_ratio = std::numeric_limits<double>::infinity();
  /// A storage is never dropped when its rebuild would recompute more than
  /// about this many vertices (its maker and the dropped ancestors it needs).
  /// Deeper rebuilds (a transformer layer's output remade from the layer
  /// before) reach lower peaks, but chosen online they are often repeated:
  /// rematerialize_best tries them only where nothing fits.
  std::size_t max_rebuild_walk = 32;
  /// The eviction score divides a drop's rebuild flops by the bytes it frees
  /// times (steps until their next use)^idle_weight: 1 is Belady's rule
  /// weighted by cost, as in DTR; 0 counts flops per byte alone. Which is
  /// best depends on the graph: rematerialize_best tries 1, 0.5, 0 and 0.25.
  double idle_weight = 1;
  /// When the best drop frees more than the step still lacks, the next few
  /// are weighed too, counting only the bytes lacking: a smaller drop that
  /// frees enough may cost less. rematerialize_best tries it at idle weight 0.
  bool only_bytes_lacking = false;
  /// rematerialize_best's local search: at most this many trials (each the
  /// eviction runs again), fewer on large graphs; 0: none.
  std::size_t local_search_trials = 48;
  /// rematerialize_best, where its plan misses or costs more than the cost
  /// floor (on graphs larger than its local search affords: more than 1 % of
  /// the flops): also the eviction runs recomputing only the cost floor's
  /// cheapest copies at its step and what costs fewer flops a byte than the
  /// dearest of those.
  bool cost_floor_copies = true;
};

/// rematerialisation_cost_floor's answer (cost_floor.hpp).
struct remat_cost_floor {
  double extra_flops = 0;          ///< no plan within the budget adds fewer
  std::size_t vertex = no_vertex;  ///< the step that shows it (none when 0)
  std::size_t steps_measured = 0;  ///< steps tried, of the graph's
  bool complete = true;            ///< final: every step was tried, or one shows no plan fits (else the work limit stopped it)
  /// At `vertex`: the makers the cheapest way found to make room there copies
  /// (after it), and their flops, no fewer than extra_flops; a plan that
  /// recomputes only these may fit (rematerialize_best tries one).
  std::vector<std::size_t> cheapest_copies = {};
  double cheapest_copies_flops = std::numeric_limits<double>::infinity();
};

struct remat_result {
  rewrite_plan plan;
  std::vector<node_ref> order;  ///< the order to run the rewritten graph in
  std::uint64_t planned_peak = 0;  ///< the peak the planner's run reached
  std::vector<std::uint64_t> planned_bytes;  ///< by step of `order`: the bytes the planner counted live
  double extra_flops = 0;
  double idle_weight = 1;  ///< the eviction runs': remat_options::idle_weight
  bool only_bytes_lacking = false;  ///< the eviction runs': remat_options::only_bytes_lacking
  /// Who made it: "eviction" (rematerialize), "chain" (solve_chain),
  /// "blocks" (solve_blocks) or "runs" (plan_of_runs on a caller's runs),
  /// then ", idle weight W" for an eviction plan whose idle_weight is not 1
  /// and ", only bytes lacking" for one that counted only those (rule_name),
  /// then ", the cost floor's copies and cheaper" for one allowed to recompute
  /// only those and cheaper makers (remat_options::cost_floor_copies), then ", local search (N moves)" when rematerialize_best's local search
  /// changed the plan N times (a vertex kept from being recomputed, retained,
  /// its inputs retained, or kept longer), then ", pruned" when copies it
  /// could do without were dropped.
  std::string method;
  /// The cost floor at the budget, with the result's options, when
  /// rematerialize_best computed it (where its plan misses or is costly):
  /// a caller that reports the floor need not compute it again.
  std::optional<remat_cost_floor> cost_floor = {};
};

namespace detail {

/// An eviction rule: remat_options::idle_weight and only_bytes_lacking.
struct eviction_rule {
  double idle_weight = 1;
  bool only_bytes_lacking = false;
  friend bool operator==(const eviction_rule&, const eviction_rule&) = default;
};

/// The rule of a remat_options or a remat_result.
template <class OptionsOrResult>
eviction_rule rule_of(const OptionsOrResult& x) {
  return {x.idle_weight, x.only_bytes_lacking};
}

/// The eviction rule's part of remat_result::method: ", idle weight W"
/// unless W is 1, then ", only bytes lacking" when set.
inline std::string rule_name(const remat_options& o) {
  std::ostringstream rule;
  if (o.idle_weight != 1) rule << ", idle weight " << o.idle_weight;
  if (o.only_bytes_lacking) rule << ", only bytes lacking";
  return rule.str();
}

/// The bytes vertex v's outputs take when it runs: all but views (an
/// in-place output counts the storage it writes).
[[nodiscard]] inline std::uint64_t bytes_made(const graph_facts& f, std::size_t v) {
  std::uint64_t bytes = 0;
  for (const tensor_output& out : f.outputs[v]) bytes += out.shares && !out.shares->in_place ? 0 : out.bytes;
  return bytes;
}

/// By vertex: whether a copy of it computes the same values. Throws
/// bad_plan_error for a fed vertex that does not exist.
inline std::vector<bool> recomputable_vertices(const graph_facts& f, const remat_options& options) {
  std::vector<bool> fed(f.size(), false);
  for (const std::size_t v : options.feed) {
    if (v >= f.size()) throw bad_plan_error({"rematerialize: fed vertex " + std::to_string(v) + " does not exist"});
    fed[v] = true;
  }
  std::vector<bool> recomputable(f.size(), false);
  for (std::size_t v = 0; v < f.size(); ++v) {
    recomputable[v] = !f.operands[v].empty() && !fed[v] && !f.persistent[v] &&
                      std::ranges::find(options.unrepeatable_ops, f.op[v]) == options.unrepeatable_ops.end() &&
                      (!options.may_recompute || options.may_recompute(v));
  }
  return recomputable;
}

/// Throws bad_plan_error, saying `who` needs it, unless `order` lists every
/// vertex of f once, each after its data and control inputs.
inline void check_order(const graph_facts& f, const std::vector<std::size_t>& order, const std::string& who) {
  if (order.size() != f.size()) {
    throw bad_plan_error({who + " needs an order of all " + std::to_string(f.size()) + " vertices, not " + std::to_string(order.size())});
  }
  std::vector<bool> seen(f.size(), false);
  for (const std::size_t v : order) {
    if (v >= f.size() || seen[v]) throw bad_plan_error({who + ": the order lists vertex " + std::to_string(v) + " twice or out of range"});
    for (const operand& o : f.operands[v]) {
      if (!seen[o.vertex]) throw bad_plan_error({who + ": the order runs '" + f.name[v] + "' before its input '" + f.name[o.vertex] + "'"});
    }
    for (const std::size_t c : f.control[v]) {
      if (!seen[c]) throw bad_plan_error({who + ": the order runs '" + f.name[v] + "' before '" + f.name[c] + "'"});
    }
    seen[v] = true;
  }
}

}  // namespace detail

}  // namespace memopt::remat
