#pragma once
// linear_share: buffer sharing for one order (Caffe2 memonger's inference
// pass on memopt's memory model). Walking the order, each op's outputs take a
// free storage (chosen by the policy: LIFO by default) or a new one; then the
// buffers whose lifetime ends at this op (inputs read for the last time,
// outputs nobody reads) free their storages. Freed storages join the pool only
// after the op's outputs are placed, so an op never writes into a dying input
// and the outputs of one op stay apart. An output that takes over a dying
// input's storage in this order (in-place reuse, liveness) joins that
// storage's blob. Static buffers (see plan.hpp) are never recycled. Valid
// for `order` only: check_sharing(g, plan, order).
//
// O((V + E) + B log B) for B buffers. Throws what liveness throws
// (not_topological_error, bad_port_error, size_overflow_error) and
// std::invalid_argument for options of the wrong length.

#include <memopt/graph/compact.hpp>
#include <memopt/liveness/liveness.hpp>
#include <memopt/share/plan.hpp>
#include <memopt/share/policy.hpp>

#include <cstddef>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace memopt {

template <tensor_graph G, reuse_policy Policy = lifo_reuse, vertex_index_map<G> Index = identity_index>
[[nodiscard]] sharing_plan linear_share(const G& g, std::span<const vertex_t<G>> order,
                                        Policy policy = {}, const share_options& options = {},
                                        Index index = {}) {
  auto live = liveness(g, order, index);
  compact_graph c = make_compact_graph(g, index);
  c.buffers = std::move(live.buffers);  // the order's storages: in-place reuse included
  const buffer_table& buffers = c.buffers;
  detail::check_option_sizes(options, buffers.size());

  sharing_plan plan;
  plan.storage_of.assign(buffers.size(), no_storage);
  detail::free_pool<Policy> pool(std::numeric_limits<std::size_t>::max(), std::move(policy));
  const auto anything = [](std::size_t) { return reuse_verdict::take; };
  std::vector<bool> released(buffers.size(), false);
  const auto release = [&](buffer_id b, std::size_t step) {
    b = buffers.storage[b];  // a read of a storage taken over reads its root
    if (buffers.persistent[b] || released[b] || live.intervals[b].last != step) return;
    if (detail::is_static(c, options, b)) return;
    released[b] = true;
    const std::size_t s = plan.storage_of[b];
    pool.add(s, plan.storage_bytes[s], detail::device_of(options, b));
  };

  for (std::size_t t = 0; t < order.size(); ++t) {
    const std::size_t i = index(order[t]);
    detail::place_outputs(c, options, i, plan, [&](buffer_id b) {
      return pool.take(buffers.bytes[b], detail::device_of(options, b), anything,
                       static_cast<std::size_t>(-1));
    });
    for (const buffer_id b : c.reads[i]) release(b, t);
    for (buffer_id b = buffers.first[i]; b < buffers.first[i + 1]; ++b) release(b, t);
  }
  detail::sum_storages(plan);
  plan.buffers = std::move(c.buffers);
  return plan;
}

}  // namespace memopt
