#pragma once
// The cost floor of rematerialisation: extra flops no plan within a budget
// goes below (with what remat_options lets copies remake), so a user knows
// how far a plan can be from the cheapest one, on graphs of any size.
//
// Take a step v of any plan that runs the graph's vertices once each, in a
// topological order, copies anywhere (the premise of floor.hpp). Live
// at v are the floor's storages (step_measure::live_at); every other storage
// made by an ancestor of v and read by a descendant of v is either live at v
// too, or remade after v by a copy of its maker, which needs its own inputs
// the same way. A copy after v is an extra run: the maker of a storage needed
// before v also ran before it. So, with cap = budget - floor(v), the plan
// adds at least
//     min flops(R)  over kept storages K and remade makers R, closed as
//     above, with bytes(K) <= cap.
// For any lambda >= 0, min flops(R) + lambda bytes(K) - lambda cap is below
// that: a minimum cut (node per storage "available after v", node per maker
// "copied after v"; keeping a storage cuts lambda x its bytes, copying a
// maker cuts its flops, reading needs availability: infinite). The best
// lambda is found by intersecting the lines of the cuts at two lambdas
// (the function is concave and piecewise linear); every lambda tried is a
// valid bound. Capacities are rounded down to integers (a bound still).
// Where the best lambda leaves a gap (the cuts on either side of the cap keep
// too much or pay for much more than the cap asks: one large tensor or five
// of a quarter its size at the same flops per byte), a branch and bound over
// the makers closes it: a maker forced copied or kept, each branch bounded by
// its own best lambda, the cheapest closure within the cap found so far
// above; what it proves is the least bound of the branches left open.
// Storages are counted by root, views free; a storage that a random draw or
// a fed vertex writes is never remade. The bound takes the best step among
// those tried: all of them within the work limit, most bytes live in one
// topological order first; then the branch and bound, with a work limit of
// its own, at the steps whose bound may still rise above the best.

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/remat/floor.hpp>
#include <memopt/remat/options.hpp>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace memopt::remat {

struct remat_cost_floor {
  double extra_flops = 0;          ///< no plan within the budget adds fewer
  std::size_t vertex = no_vertex;  ///< the step that shows it (none when 0)
  std::size_t steps_measured = 0;  ///< steps tried, of the graph's
  bool complete = true;            ///< final: every step was tried, or one shows no plan fits (else the work limit stopped it)
  /// At `vertex`: the makers the cheapest way found to make room there copies
  /// (after it), and their flops, no fewer than extra_flops; a plan that
  /// recomputes only these may fit (rematerialize_best tries one).
  std::vector<std::size_t> cheapest_copies;
  double cheapest_copies_flops = std::numeric_limits<double>::infinity();
};

namespace detail {

/// The cut network of one step: availability of the needed storages and
/// copies of their makers, closed over the makers' inputs.
class cost_cut {
 public:
  using traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
  using network = boost::adjacency_list<
      boost::vecS, boost::vecS, boost::directedS,
      boost::property<boost::vertex_color_t, boost::default_color_type,
                      boost::property<boost::vertex_distance_t, long,
                                      boost::property<boost::vertex_predecessor_t, traits::edge_descriptor>>>,
      boost::property<boost::edge_capacity_t, std::int64_t,
                      boost::property<boost::edge_residual_capacity_t, std::int64_t,
                                      boost::property<boost::edge_reverse_t, traits::edge_descriptor>>>>;

  /// `needed`: storages (roots) read after v and not live there; `free`, by
  /// root: live at v (or persistent, or empty).
  cost_cut(const graph_facts& f, const step_measure& m, const std::vector<operand>& needed,
           const std::vector<std::vector<bool>>& free) {
    source_ = boost::add_vertex(g_);
    sink_ = boost::add_vertex(g_);
    std::vector<std::vector<std::size_t>> node(f.size());
    std::vector<std::size_t> copy(f.size(), no_vertex);
    std::vector<operand> stack;
    const auto available = [&](operand r) {
      auto& slot = node[r.vertex];
      if (slot.empty()) slot.assign(f.outputs[r.vertex].size(), no_vertex);
      if (slot[r.port] == no_vertex) {
        slot[r.port] = boost::add_vertex(g_);
        stack.push_back(r);
      }
      return slot[r.port];
    };
    for (const operand& r : needed) link(available(r), sink_, 0, 0, true);
    while (!stack.empty()) {
      const operand r = stack.back();
      stack.pop_back();
      const std::size_t a = node[r.vertex][r.port];
      const std::uint64_t bytes = m.bytes_of(r);
      const std::size_t maker = r.vertex;
      if (!remakable(m, r)) {
        link(source_, a, 0, bytes, false);  // kept, or nothing
        continue;
      }
      if (copy[maker] == no_vertex) {
        copy[maker] = boost::add_vertex(g_);
        makers_.push_back({maker, copy[maker], edges_.size()});
        link(source_, copy[maker], f.flops[maker], 0, false);
        const bool reads_inputs = !reads_shape_only(f, maker);  // else its copy reads no input
        for (const operand& o : f.operands[maker]) {
          const operand q = m.root()[o.vertex][o.port];
          if (reads_inputs && !free[q.vertex][q.port]) link(available(q), copy[maker], 0, 0, true);
        }
      }
      link(copy[maker], a, 0, bytes, false);  // kept when not copied
    }
    for (const auto& e : edges_) {
      total_flops_ += e.flops;
      total_bytes_ += static_cast<double>(e.bytes);
    }
  }

  cost_cut(const cost_cut&) = delete;  // its edges point into its own graph
  cost_cut& operator=(const cost_cut&) = delete;

  [[nodiscard]] std::size_t size() const noexcept { return edges_.size(); }

  /// The makers a copy may remake, in the order the network met them.
  [[nodiscard]] std::size_t num_makers() const noexcept { return makers_.size(); }
  [[nodiscard]] std::size_t maker(std::size_t k) const { return makers_[k].vertex; }
  [[nodiscard]] double flops_of(std::size_t k) const { return edges_[makers_[k].edge].flops; }

  /// What the cuts must do with a maker: choose, copy it, or keep its storages.
  enum class forced : std::uint8_t { free, copied, kept };
  /// By maker (num_makers()); empty: all free. The first call joins each
  /// maker's copy to the sink (the edge a forced copy fills).
  void force(std::vector<forced> makers) {
    if (sink_edges_ == 0) {
      sink_edges_ = edges_.size();
      for (const remade_by& m : makers_) link(m.copy, sink_, 0, 0, false);
    }
    forced_ = std::move(makers);
  }

  struct cut {
    double value = 0;  ///< a lower bound of min flops + lambda bytes
    double flops = 0;  ///< of the cut found
    double bytes = 0;
    std::vector<bool> copied;  ///< by maker
  };

  /// The minimum cut at lambda: flops + lambda bytes, capacities rounded
  /// down in units of 2^-50 of the total; lambda infinite: bytes alone,
  /// exactly (value: the fewest bytes any closure keeps).
  [[nodiscard]] cut solve(double lambda) {
    const bool bytes_only = std::isinf(lambda);
    const double total = total_flops_ + (bytes_only ? 0 : lambda * total_bytes_);
    const double unit = bytes_only ? 1 : std::max(total / std::ldexp(1.0, 50), std::numeric_limits<double>::min());
    const std::int64_t infinite = std::int64_t{1} << 62;
    auto capacity = boost::get(boost::edge_capacity, g_);
    for (const auto& e : edges_) {
      capacity[e.forward] = e.infinite ? infinite
                            : bytes_only ? static_cast<std::int64_t>(e.bytes)
                                         : static_cast<std::int64_t>(std::floor((e.flops + lambda * static_cast<double>(e.bytes)) / unit));
      capacity[e.backward] = 0;
    }
    for (std::size_t k = 0; k < forced_.size(); ++k) {  // copied: joined to the sink; kept: to the source
      if (forced_[k] == forced::copied) capacity[edges_[sink_edges_ + k].forward] = infinite;
      if (forced_[k] == forced::kept) capacity[edges_[makers_[k].edge].forward] = infinite;
    }
    const auto flow = boost::boykov_kolmogorov_max_flow(g_, source_, sink_);
    // The source side: what the residual network reaches from the source.
    auto residual = boost::get(boost::edge_residual_capacity, g_);
    std::vector<bool> reached(boost::num_vertices(g_), false);
    std::vector<std::size_t> stack{source_};
    reached[source_] = true;
    while (!stack.empty()) {
      const std::size_t u = stack.back();
      stack.pop_back();
      for (const auto e : boost::make_iterator_range(boost::out_edges(u, g_))) {
        const std::size_t w = boost::target(e, g_);
        if (!reached[w] && residual[e] > 0) {
          reached[w] = true;
          stack.push_back(w);
        }
      }
    }
    cut c{.value = static_cast<double>(flow) * unit};
    for (const auto& e : edges_) {
      if (e.infinite || !reached[boost::source(e.forward, g_)] || reached[boost::target(e.forward, g_)]) continue;
      c.flops += e.flops;
      c.bytes += static_cast<double>(e.bytes);
    }
    c.copied.resize(makers_.size());
    for (std::size_t k = 0; k < makers_.size(); ++k) c.copied[k] = !reached[makers_[k].copy];
    return c;
  }

 private:
  struct remade_by {
    std::size_t vertex;
    std::size_t copy;  ///< its node
    std::size_t edge;  ///< in edges_: source to copy
  };
  struct edge {
    traits::edge_descriptor forward;
    traits::edge_descriptor backward;
    double flops;
    std::uint64_t bytes;
    bool infinite;
  };

  /// Whether a copy of its maker after v remakes storage r: the maker can be
  /// copied, and no vertex run before v wrote into it what no copy remakes
  /// (a writer after v runs after the copy, as the original does).
  static bool remakable(const step_measure& m, operand r) {
    if (!m.recomputable()[r.vertex]) return false;
    const std::size_t s = m.kept().id[r.vertex][r.port];
    return s == no_vertex || std::ranges::none_of(m.kept().fixers[s], [&](std::size_t u) { return m.ancestor(u); });
  }

  void link(std::size_t from, std::size_t to, double flops, std::uint64_t bytes, bool infinite) {
    const auto forward = boost::add_edge(from, to, g_).first;
    const auto backward = boost::add_edge(to, from, g_).first;
    auto reverse = boost::get(boost::edge_reverse, g_);
    reverse[forward] = backward;
    reverse[backward] = forward;
    edges_.push_back({forward, backward, flops, bytes, infinite});
  }

  network g_;
  std::size_t source_ = 0;
  std::size_t sink_ = 0;
  std::vector<edge> edges_;
  std::vector<remade_by> makers_;
  std::vector<forced> forced_;
  std::size_t sink_edges_ = 0;  ///< in edges_: the first of the copies' edges to the sink, once forced
  double total_flops_ = 0;
  double total_bytes_ = 0;
};

/// The cheapest closure found within a step's cap: its flops (infinite:
/// none yet) and its copies, by maker.
struct closure {
  double flops = std::numeric_limits<double>::infinity();
  std::vector<bool> copied;

  void offer(const cost_cut::cut& c, double cap) {
    if (c.bytes <= cap && c.flops < flops) {
      flops = c.flops;
      copied = c.copied;
    }
  }
};

/// What the best lambda shows of one step: a bound, the cheapest closure
/// found within the cap, and the cuts on either side of it.
struct lambda_bound {
  double bound = 0;
  closure cheapest;
  cost_cut::cut low;   ///< keeps more than the cap
  cost_cut::cut high;  ///< keeps at most the cap
};

/// The best bound of one step: the lines of the cuts at two lambdas, one
/// keeping more than `cap`, one less, intersected until no cut lies below the
/// intersection. `work` counts network edges per cut solved. Infinite when
/// even the cut of fewest bytes keeps more than `cap`.
inline lambda_bound best_lambda(cost_cut& network, double cap, std::size_t& work) {
  lambda_bound r;
  cost_cut::cut mid;
  const auto bound_at = [&](double lambda, cost_cut::cut& c) {
    c = network.solve(lambda);
    work += network.size();
    r.cheapest.offer(c, cap);
    return std::max(0.0, c.value - lambda * cap);
  };
  r.bound = bound_at(0, r.low);
  if (r.low.bytes <= cap) {  // the forced copies alone make room
    r.high = r.low;
    return r;
  }
  r.high = network.solve(std::numeric_limits<double>::infinity());
  work += network.size();
  if (r.high.value > cap) {
    r.bound = std::numeric_limits<double>::infinity();
    return r;
  }
  r.cheapest.offer(r.high, cap);
  for (int round = 0; round < 40 && r.low.bytes > r.high.bytes; ++round) {
    const double lambda = (r.high.flops - r.low.flops) / (r.low.bytes - r.high.bytes);
    if (!(lambda > 0) || !std::isfinite(lambda)) break;
    r.bound = std::max(r.bound, bound_at(lambda, mid));
    // The intersection's value is reached: lambda is the best.
    if (mid.flops + lambda * mid.bytes >= r.low.flops + lambda * r.low.bytes - 1e-9 * (r.low.flops + lambda * r.low.bytes)) break;
    (mid.bytes > cap ? r.low : r.high) = std::move(mid);
  }
  return r;
}

/// The step's bound closed by branch and bound: best first over the makers
/// the cuts either side of the cap disagree on (most flops first), each
/// branch bounded by its best lambda, until the least open bound meets the
/// cheapest closure found or `work` reaches `work_limit`. Returns the least
/// open bound (at least `root.bound`, at most the cheapest closure), and
/// leaves the cheapest closure in `cheapest`.
inline double closed_bound(cost_cut& network, double cap, lambda_bound root, closure& cheapest, std::size_t& work,
                           std::size_t work_limit) {
  using forced = cost_cut::forced;
  struct branch {
    double bound;
    std::size_t made;  ///< ties: the branch made first
    std::vector<forced> makers;
    lambda_bound cuts;
    bool operator<(const branch& other) const {  // the queue's top: the least bound
      return std::tie(bound, made) > std::tie(other.bound, other.made);
    }
  };
  cheapest = root.cheapest;
  std::size_t made = 0;
  std::priority_queue<branch> open;
  open.push({root.bound, made++, std::vector<forced>(network.num_makers(), forced::free), std::move(root)});
  const auto split_on = [&](const branch& b) {  // most flops among the makers the two cuts disagree on
    std::size_t chosen = network.num_makers();
    for (std::size_t k = 0; k < network.num_makers(); ++k) {
      if (b.makers[k] != forced::free || b.cuts.low.copied[k] == b.cuts.high.copied[k]) continue;
      if (chosen == network.num_makers() || network.flops_of(k) > network.flops_of(chosen)) chosen = k;
    }
    return chosen;
  };
  double unsplit = std::numeric_limits<double>::infinity();  // the least bound of branches no cut splits
  while (!open.empty() && open.top().bound < std::min(cheapest.flops, unsplit) && work < work_limit) {
    branch b = open.top();
    open.pop();
    const std::size_t k = split_on(b);
    if (k == network.num_makers()) {
      unsplit = b.bound;
      continue;
    }
    for (const forced way : {forced::copied, forced::kept}) {
      std::vector<forced> makers = b.makers;
      makers[k] = way;
      network.force(makers);
      lambda_bound cuts = best_lambda(network, cap, work);
      if (cuts.cheapest.flops < cheapest.flops) cheapest = cuts.cheapest;
      const double bound = std::max(cuts.bound, b.bound);
      if (bound < cheapest.flops) open.push({bound, made++, std::move(makers), std::move(cuts)});
    }
  }
  return std::min({cheapest.flops, unsplit, open.empty() ? cheapest.flops : open.top().bound});
}

/// By step: the transient bytes made before it and read after it in the
/// measure's topological order (what is live there when nothing is
/// recomputed). O(V + E).
inline std::vector<std::uint64_t> bytes_across(const graph_facts& f, const step_measure& m) {
  const std::size_t n = f.size();
  std::vector<std::vector<std::size_t>> last_read;  // by root tensor: position of its last reader
  last_read.reserve(n);
  for (const auto& outputs : f.outputs) last_read.emplace_back(outputs.size(), 0);
  for (std::size_t w = 0; w < n; ++w) {
    for (const operand& o : f.operands[w]) {
      const operand r = m.root()[o.vertex][o.port];
      last_read[r.vertex][r.port] = std::max(last_read[r.vertex][r.port], m.position()[w]);
    }
  }
  std::vector<std::int64_t> delta(n + 1, 0);
  for (std::size_t v = 0; v < n; ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size() && !f.persistent[v]; ++port) {
      if (last_read[v][port] <= m.position()[v]) continue;
      delta[m.position()[v]] += static_cast<std::int64_t>(f.outputs[v][port].bytes);
      delta[last_read[v][port]] -= static_cast<std::int64_t>(f.outputs[v][port].bytes);
    }
  }
  std::vector<std::uint64_t> across(n);
  std::int64_t live = 0;
  for (std::size_t k = 0; k < n; ++k) across[m.order()[k]] = static_cast<std::uint64_t>(live += delta[k]);
  return across;
}

}  // namespace detail

/// The cost floor at `budget` (see the header comment): extra flops no plan
/// within it adds; infinite when no plan fits (a budget below the floor of
/// floor.hpp, or a step whose fewest kept bytes exceed it). Steps are
/// tried until the work (vertices and operands visited per step, network
/// edges per cut) reaches `work_limit` (0: no limit); the first step is
/// always tried. The branch and bound then has `work_limit` of its own.
/// Throws bad_plan_error for a cyclic graph or a fed vertex that does not
/// exist.
[[nodiscard]] inline remat_cost_floor rematerialisation_cost_floor(const graph_facts& f, std::uint64_t budget,
                                                                   const remat_options& options = {},
                                                                   std::size_t work_limit = 10'000'000) {
  detail::step_measure measure(f, options);
  const std::size_t n = f.size();
  // The steps by bytes live across them in one topological order, most first.
  const auto across = detail::bytes_across(f, measure);
  std::vector<std::size_t> steps(n);
  for (std::size_t v = 0; v < n; ++v) steps[v] = v;
  std::ranges::stable_sort(steps, std::greater<>(), [&](std::size_t v) { return across[v]; });

  std::size_t step_work = n;  // measuring a step visits every vertex and operand
  for (const auto& operands : f.operands) step_work += operands.size();
  remat_cost_floor floor;
  std::size_t work = 0;
  // By root: available at every step without being counted (persistent, or empty).
  std::vector<std::vector<bool>> always_free(n);
  for (std::size_t u = 0; u < n; ++u) {
    for (const tensor_output& out : f.outputs[u]) always_free[u].push_back(f.persistent[u] || out.bytes == 0);
  }
  std::vector<std::vector<bool>> free;
  // Step v's network, with the live bytes every plan holds there (`base`);
  // none when what it needs fits, or when the base alone exceeds the budget.
  // Built in place: the network's edges point into it.
  const auto network_at = [&](std::size_t v, std::uint64_t& base, std::optional<detail::cost_cut>& network) {
    network.reset();
    const std::vector<operand> live = measure.live_at(v);
    base = 0;
    free = always_free;
    for (const operand& r : live) {
      base += measure.bytes_of(r);
      free[r.vertex][r.port] = true;
    }
    if (base > budget) return;
    // Storages made before v (by an ancestor) and read after it (by a descendant).
    std::vector<operand> needed;
    std::uint64_t needed_bytes = 0;
    for (std::size_t w = 0; w < n; ++w) {
      if (!measure.descendant(w)) continue;
      for (const operand& o : f.operands[w]) {
        const operand r = measure.root()[o.vertex][o.port];
        if (free[r.vertex][r.port] || !measure.ancestor(r.vertex)) continue;
        free[r.vertex][r.port] = true;  // listed once
        needed.push_back(r);
        needed_bytes += measure.bytes_of(r);
      }
    }
    for (const operand& r : needed) free[r.vertex][r.port] = false;
    if (base + needed_bytes <= budget) return;  // all of it fits: nothing to remake here
    network.emplace(f, measure, needed, free);
  };
  struct step_bounds {
    std::size_t vertex;
    double bound;
    double cheapest;  ///< the flops of the cheapest closure a cut found
  };
  std::vector<step_bounds> measured;
  std::optional<detail::cost_cut> network;
  // A step's bound: the floor's when above it (or its step's, with a cheaper closure).
  const auto record = [&](std::size_t v, double bound, const detail::closure& cheapest) {
    const bool same_step = v == floor.vertex && bound == floor.extra_flops;
    if (!(bound > floor.extra_flops) && !(same_step && cheapest.flops < floor.cheapest_copies_flops)) return;
    floor.extra_flops = bound;
    floor.vertex = v;
    floor.cheapest_copies.clear();
    floor.cheapest_copies_flops = cheapest.flops;
    for (std::size_t k = 0; k < cheapest.copied.size(); ++k) {
      if (cheapest.copied[k]) floor.cheapest_copies.push_back(network->maker(k));
    }
  };
  for (const std::size_t v : steps) {
    if (work_limit != 0 && work >= work_limit) {
      floor.complete = false;
      break;
    }
    ++floor.steps_measured;
    work += step_work;
    std::uint64_t base = 0;
    network_at(v, base, network);
    if (base > budget) return {std::numeric_limits<double>::infinity(), v, floor.steps_measured, floor.complete};
    if (!network) continue;
    const auto cuts = detail::best_lambda(*network, static_cast<double>(budget - base), work);
    measured.push_back({v, cuts.bound, cuts.cheapest.flops});
    record(v, cuts.bound, cuts.cheapest);
  }
  // The branch and bound, at the steps whose bound may still rise above the
  // best (their cheapest closure is above it), highest bound first.
  std::ranges::stable_sort(measured, std::greater<>(), &step_bounds::bound);
  std::size_t closing_work = 0;
  for (const step_bounds& step : measured) {
    if (std::isinf(floor.extra_flops) || (work_limit != 0 && closing_work >= work_limit)) break;
    if (step.cheapest <= floor.extra_flops) continue;
    closing_work += step_work;
    std::uint64_t base = 0;
    network_at(step.vertex, base, network);
    const double cap = static_cast<double>(budget - base);
    auto root = detail::best_lambda(*network, cap, closing_work);
    detail::closure cheapest;
    const double bound = detail::closed_bound(*network, cap, std::move(root), cheapest, closing_work,
                                              work_limit == 0 ? std::numeric_limits<std::size_t>::max() : work_limit);
    record(step.vertex, bound, cheapest);
  }
  return floor;
}

}  // namespace memopt::remat
