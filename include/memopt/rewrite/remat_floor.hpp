#pragma once
// The rematerialisation floor: a peak no plan goes below, whatever it
// recomputes (with what remat_options lets copies remake).
//
// The floor is the largest, over the steps v of the graph, of the transient
// storages live at v in every plan that runs the graph's own vertices in a
// topological order of the graph, copies anywhere (as Checkmate's
// formulation does, and as every plan of rematerialize runs):
//   - the storages v reads and writes (a step's inputs and outputs are live
//     together);
//   - the storages holding a value no copy can remake (a source such as the
//     input batch, a random draw, a fed vertex, what the caller excludes),
//     made by an ancestor of v and read by a descendant of v: every order
//     runs the maker before v and the reader after it;
//   - the graph outputs (the loss, the gradients) made by an ancestor of v:
//     kept to the end.
// Views share their source's storage and count once. The floor names its
// step and the storages that make it, so a user sees why a budget is out of
// reach. O((V + E) * U / 64 + V * L) for U storages of the last two kinds
// and L of them live at a step on average (bit sets over U in blocks).

#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/rewrite/remat_options.hpp>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace memopt::rewrite {

struct remat_floor {
  std::uint64_t bytes = 0;
  std::size_t vertex = no_vertex;  ///< the step where it is reached
  std::vector<operand> storages;   ///< the storages (by root tensor) live there, largest first
};

namespace detail {

/// By vertex and port: the root (vertex, port) of the tensor's storage.
inline std::vector<std::vector<operand>> storage_roots(const graph_facts& f) {
  std::vector<std::vector<operand>> root(f.size());
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      operand t{v, port};
      for (std::size_t hops = 0; hops <= f.size(); ++hops) {
        const auto& shares = f.outputs[t.vertex][t.port].shares;
        if (!shares) break;
        t = shares->source;
      }
      root[v].push_back(t);
    }
  }
  return root;
}

/// The storages every plan keeps once made (see the header comment), with
/// who fixes them (makes a value no copy remakes, or a graph output) and who
/// reads them.
struct kept_storages {
  std::vector<operand> root;                    ///< by id
  std::vector<std::uint64_t> bytes;             ///< by id
  std::vector<bool> to_the_end;                 ///< by id: holds a graph output
  std::vector<std::vector<std::size_t>> fixes;  ///< by vertex: ids it fixes
  std::vector<std::vector<std::size_t>> reads;  ///< by vertex: ids it reads
  std::vector<std::vector<std::size_t>> id;     ///< by root tensor (vertex, port): its id, or no_vertex
};

inline kept_storages find_kept_storages(const graph_facts& f, const std::vector<std::vector<operand>>& root,
                                        const std::vector<bool>& recomputable) {
  kept_storages k;
  k.fixes.resize(f.size());
  k.reads.resize(f.size());
  auto& id = k.id;
  id.resize(f.size());
  for (std::size_t v = 0; v < f.size(); ++v) id[v].assign(f.outputs[v].size(), no_vertex);
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (std::size_t port = 0; port < f.outputs[v].size(); ++port) {
      const operand r = root[v][port];
      const bool fixed = !recomputable[v] || f.outputs[v][port].live_out;
      if (!fixed || f.persistent[r.vertex] || f.outputs[r.vertex][r.port].bytes == 0) continue;
      std::size_t& s = id[r.vertex][r.port];
      if (s == no_vertex) {
        s = k.root.size();
        k.root.push_back(r);
        k.bytes.push_back(f.outputs[r.vertex][r.port].bytes);
        k.to_the_end.push_back(false);
      }
      if (f.outputs[v][port].live_out) k.to_the_end[s] = true;
      k.fixes[v].push_back(s);
    }
  }
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (const operand& o : f.operands[v]) {
      const operand r = root[o.vertex][o.port];
      if (const std::size_t s = id[r.vertex][r.port]; s != no_vertex) k.reads[v].push_back(s);
    }
  }
  return k;
}

/// The storages v reads or writes, by root, each once.
inline std::vector<operand> step_storages(const graph_facts& f, const std::vector<std::vector<operand>>& root,
                                          std::size_t v) {
  std::vector<operand> own;
  for (const operand& o : f.operands[v]) own.push_back(root[o.vertex][o.port]);
  for (std::size_t port = 0; port < f.outputs[v].size(); ++port) own.push_back(root[v][port]);
  std::ranges::sort(own, [](operand a, operand b) { return std::pair(a.vertex, a.port) < std::pair(b.vertex, b.port); });
  own.erase(std::unique(own.begin(), own.end()), own.end());
  std::erase_if(own, [&](operand r) { return f.persistent[r.vertex] || f.outputs[r.vertex][r.port].bytes == 0; });
  return own;
}

}  // namespace detail

/// The floor (see the header comment), with what `options` lets copies
/// remake. Throws bad_plan_error for a cyclic graph or a fed vertex that does
/// not exist.
[[nodiscard]] inline remat_floor rematerialisation_floor(const graph_facts& f, const remat_options& options = {}) {
  const std::size_t n = f.size();
  const auto root = detail::storage_roots(f);
  const auto kept = detail::find_kept_storages(f, root, detail::recomputable_vertices(f, options));
  const auto position = detail::topological_positions(f);
  std::vector<std::size_t> order(n);
  for (std::size_t v = 0; v < n; ++v) {
    if (position[v] == n) throw bad_plan_error({"rematerialisation_floor: the graph has a cycle through '" + f.name[v] + "'"});
    order[position[v]] = v;
  }
  const auto step_bytes = [&](std::size_t v) {
    std::uint64_t bytes = 0;
    for (const operand& r : detail::step_storages(f, root, v)) bytes += f.outputs[r.vertex][r.port].bytes;
    return bytes;
  };
  // By vertex: the bytes of kept storages live there, besides its own; in
  // blocks of 1024 storages, a bit set of those an ancestor fixed (before)
  // and of those a descendant reads (after).
  std::vector<std::uint64_t> across(n, 0);
  constexpr std::size_t words = 16;
  constexpr std::size_t block = words * 64;
  std::vector<std::uint64_t> before(n * words), after(n * words);
  std::vector<std::vector<std::size_t>> own(n);  // by vertex: the kept storages it reads or writes
  for (std::size_t v = 0; v < n; ++v) {
    for (const operand& r : detail::step_storages(f, root, v)) {
      if (const std::size_t s = kept.id[r.vertex][r.port]; s != no_vertex) own[v].push_back(s);
    }
  }
  for (std::size_t first = 0; first < kept.root.size(); first += block) {
    const auto mark = [&](std::uint64_t* bits, const std::vector<std::size_t>& ids) {
      for (const std::size_t s : ids) {
        if (s >= first && s < first + block) bits[(s - first) / 64] |= std::uint64_t{1} << ((s - first) % 64);
      }
    };
    std::ranges::fill(before, 0);
    std::ranges::fill(after, 0);
    for (const std::size_t v : order) {
      std::uint64_t* bits = &before[v * words];
      for (const std::size_t u : detail::inputs_of(f, v)) {
        const std::uint64_t* in = &before[u * words];
        for (std::size_t w = 0; w < words; ++w) bits[w] |= in[w];
        mark(bits, kept.fixes[u]);
      }
    }
    for (auto k = n; k-- > 0;) {
      const std::size_t v = order[k];
      std::uint64_t* bits = &after[v * words];
      for (const std::size_t c : f.consumers[v]) {
        const std::uint64_t* out = &after[c * words];
        for (std::size_t w = 0; w < words; ++w) bits[w] |= out[w];
        mark(bits, kept.reads[c]);
      }
      for (std::size_t s = first; s < std::min(first + block, kept.root.size()); ++s) {
        if (kept.to_the_end[s]) bits[(s - first) / 64] |= std::uint64_t{1} << ((s - first) % 64);
      }
    }
    for (std::size_t v = 0; v < n; ++v) {
      for (std::size_t w = 0; w < words; ++w) {
        for (std::uint64_t live = before[v * words + w] & after[v * words + w]; live != 0; live &= live - 1) {
          const std::size_t s = first + w * 64 + static_cast<std::size_t>(std::countr_zero(live));
          if (std::ranges::find(own[v], s) == own[v].end()) across[v] += kept.bytes[s];  // own ones count with the step
        }
      }
    }
  }
  remat_floor floor;
  for (std::size_t v = 0; v < n; ++v) {
    const std::uint64_t bytes = step_bytes(v) + across[v];
    if (bytes > floor.bytes || floor.vertex == no_vertex) floor = {bytes, v, {}};
  }
  if (floor.vertex == no_vertex) return floor;
  // The storages of the step that makes it, found again for that step alone.
  floor.storages = detail::step_storages(f, root, floor.vertex);
  std::vector<bool> ancestor(n, false), descendant(n, false);
  for (auto k = position[floor.vertex]; k-- > 0;) {
    const std::size_t u = order[k];
    ancestor[u] = std::ranges::any_of(f.consumers[u], [&](std::size_t c) { return c == floor.vertex || ancestor[c]; });
  }
  for (std::size_t k = position[floor.vertex] + 1; k < n; ++k) {
    const std::size_t w = order[k];
    const auto in = detail::inputs_of(f, w);
    descendant[w] = std::ranges::any_of(in, [&](std::size_t u) { return u == floor.vertex || descendant[u]; });
  }
  std::vector<bool> fixed(kept.root.size(), false), read(kept.to_the_end);
  for (std::size_t v = 0; v < n; ++v) {
    for (const std::size_t s : kept.fixes[v]) fixed[s] = fixed[s] || ancestor[v];
    for (const std::size_t s : kept.reads[v]) read[s] = read[s] || descendant[v];
  }
  for (std::size_t s = 0; s < kept.root.size(); ++s) {
    if (fixed[s] && read[s] && std::ranges::find(own[floor.vertex], s) == own[floor.vertex].end()) {
      floor.storages.push_back(kept.root[s]);
    }
  }
  std::ranges::stable_sort(floor.storages, std::greater<>(), [&](operand r) { return f.outputs[r.vertex][r.port].bytes; });
  return floor;
}

}  // namespace memopt::rewrite
