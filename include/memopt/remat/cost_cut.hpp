#pragma once
// The cut network of one step of the cost floor (remat/cost_floor.hpp): a
// minimum cut per lambda over keeping or remaking what the step's descendants
// read, the best lambda's bound, and the branch and bound over the makers
// that closes the gap the best lambda leaves. Internal to the cost floor.

#include <memopt/detail/flow_network.hpp>
#include <memopt/remat/floor.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/rewrite/graph.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <queue>
#include <tuple>
#include <utility>
#include <vector>

namespace memopt::remat::detail {

/// The cut network of one step: availability of the needed storages and
/// copies of their makers, closed over the makers' inputs.
class cost_cut {
 public:
  /// `needed`: storages (roots) read after v and not live there; `free`, by
  /// root: live at v (or persistent, or empty).
  cost_cut(const graph_facts& f, const step_measure& m, const std::vector<operand>& needed,
           const std::vector<std::vector<bool>>& free) {
    source_ = net_.add_vertex();
    sink_ = net_.add_vertex();
    std::vector<std::vector<std::size_t>> node(f.size());
    std::vector<std::size_t> copy(f.size(), no_vertex);
    std::vector<operand> stack;
    const auto available = [&](operand r) {
      auto& slot = node[r.vertex];
      if (slot.empty()) slot.assign(f.outputs[r.vertex].size(), no_vertex);
      if (slot[r.port] == no_vertex) {
        slot[r.port] = net_.add_vertex();
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
        copy[maker] = net_.add_vertex();
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
    std::vector<bool> copied = {};  ///< by maker
  };

  /// The minimum cut at lambda: flops + lambda bytes, capacities rounded
  /// down in units of 2^-50 of the total; lambda infinite: bytes alone,
  /// exactly (value: the fewest bytes any closure keeps).
  [[nodiscard]] cut solve(double lambda) {
    const bool bytes_only = std::isinf(lambda);
    const double total = total_flops_ + (bytes_only ? 0 : lambda * total_bytes_);
    const double unit = bytes_only ? 1 : std::max(total / std::ldexp(1.0, 50), std::numeric_limits<double>::min());
    const std::int64_t infinite = std::int64_t{1} << 62;
    for (const auto& e : edges_) {
      net_.capacity(e.arc) = e.infinite ? infinite
                             : bytes_only ? static_cast<std::int64_t>(e.bytes)
                                          : static_cast<std::int64_t>(std::floor((e.flops + lambda * static_cast<double>(e.bytes)) / unit));
    }
    for (std::size_t k = 0; k < forced_.size(); ++k) {  // copied: joined to the sink; kept: to the source
      if (forced_[k] == forced::copied) net_.capacity(edges_[sink_edges_ + k].arc) = infinite;
      if (forced_[k] == forced::kept) net_.capacity(edges_[makers_[k].edge].arc) = infinite;
    }
    const auto flow = net_.max_flow(source_, sink_);
    const std::vector<bool> reached = net_.source_side(source_);
    cut c{.value = static_cast<double>(flow) * unit};
    for (const auto& e : edges_) {
      if (e.infinite || !reached[net_.from(e.arc)] || reached[net_.to(e.arc)]) continue;
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
    memopt::detail::flow_network::arc_id arc;
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
    edges_.push_back({net_.add_arc(from, to), flops, bytes, infinite});
  }

  memopt::detail::flow_network net_;
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

}  // namespace memopt::remat::detail
