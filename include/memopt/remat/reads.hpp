#pragma once
// Where each tensor is read in a fixed order, for the planner's run
// (remat/run.hpp): the positions of its reads, a read of a view counting as
// one of its source (a view is rebuilt from it), latest first so that the
// next read is the last; all lists in one array.

#include <memopt/detail/per_output.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/rewrite/graph.hpp>

#include <algorithm>
#include <cstddef>
#include <functional>
#include <span>
#include <utility>
#include <vector>

namespace memopt::remat::detail {

struct read_positions {
  std::vector<std::size_t> all;  ///< every list, tensor after tensor
  /// By tensor: its list, a part of `all` (a move keeps them valid, a copy would not).
  memopt::detail::per_output<std::span<std::size_t>> of;

  read_positions() = default;
  read_positions(std::vector<std::size_t> lists, memopt::detail::per_output<std::span<std::size_t>> by_tensor)
      : all(std::move(lists)), of(std::move(by_tensor)) {}
  read_positions(read_positions&&) = default;
  read_positions& operator=(read_positions&&) = default;
  read_positions(const read_positions&) = delete;
  read_positions& operator=(const read_positions&) = delete;
};

/// The reads of every tensor of f in `order` (position[v]: v's place in it);
/// output_first: output_offsets(f.outputs).
[[nodiscard]] inline read_positions positions_of_reads(const graph_facts& f, const std::vector<std::size_t>& order,
                                                       const std::vector<std::size_t>& position,
                                                       const memopt::detail::output_offsets_ptr& output_first) {
  const auto tensor = [&](operand o) { return (*output_first)[o.vertex] + o.port; };
  const auto source_of_view = [&](std::size_t v, std::size_t port) -> const operand* {
    const auto& shares = f.outputs[v][port].shares;
    return shares && !shares->in_place ? &shares->source : nullptr;
  };
  // Sizes, then places: each view's reads join its source's, views of views
  // first (order reversed), as each view's list is complete by then.
  std::vector<std::size_t> start(output_first->back() + 1, 0);
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (const operand& o : f.operands[v]) ++start[tensor(o) + 1];
  }
  for (auto k = order.size(); k-- > 0;) {
    for (std::size_t port = 0; port < f.outputs[order[k]].size(); ++port) {
      if (const operand* source = source_of_view(order[k], port)) {
        start[tensor(*source) + 1] += start[tensor({order[k], port}) + 1];
      }
    }
  }
  for (std::size_t t = 0; t + 1 < start.size(); ++t) start[t + 1] += start[t];
  read_positions r{std::vector<std::size_t>(start.back()), memopt::detail::per_output<std::span<std::size_t>>(output_first, {})};
  std::vector<std::size_t> end(start.begin(), start.end() - 1);
  for (std::size_t v = 0; v < f.size(); ++v) {
    for (const operand& o : f.operands[v]) r.all[end[tensor(o)]++] = position[v];
  }
  for (auto k = order.size(); k-- > 0;) {
    for (std::size_t port = 0; port < f.outputs[order[k]].size(); ++port) {
      const operand* source = source_of_view(order[k], port);
      if (!source) continue;
      const std::size_t view = tensor({order[k], port});
      std::size_t& into = end[tensor(*source)];
      into = static_cast<std::size_t>(std::copy(r.all.begin() + static_cast<std::ptrdiff_t>(start[view]),
                                                r.all.begin() + static_cast<std::ptrdiff_t>(end[view]),
                                                r.all.begin() + static_cast<std::ptrdiff_t>(into)) - r.all.begin());
    }
  }
  auto& lists = r.of.values();
  for (std::size_t t = 0; t < lists.size(); ++t) {
    lists[t] = std::span<std::size_t>(r.all.data() + start[t], end[t] - start[t]);
    std::ranges::sort(lists[t], std::greater<>());
  }
  return r;
}

}  // namespace memopt::remat::detail
