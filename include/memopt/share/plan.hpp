#pragma once
// sharing_plan: which buffers share one storage (a "blob"), without offsets.
// A storage's size is its largest member; total_bytes sums the storages.
// The graph's own storages (views and in-place results: buffer_table) are the
// unit that is shared: an alias sits in the blob of the tensor owning its
// storage, adds no bytes, and never counts as a second occupant.
// Persistent buffers are in no storage (they live for the whole run and are
// reported apart, as in the memory model); every other buffer is in exactly
// one. Static buffers (graph outputs, graph inputs, a caller's don't-share
// set) are never recycled: each sits alone in its own storage.
//
// share_options carries what both passes and check_sharing need to agree on:
// the don't-share set, each buffer's device (no storage mixes devices) and
// whether graph inputs (outputs of vertices without predecessors) may be
// recycled. storage_members(plan) lists each storage's buffers, O(buffers).

#include <memopt/detail/checked.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/liveness/liveness.hpp>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace memopt {

/// The storage of a buffer that has none (a persistent buffer).
inline constexpr std::size_t no_storage = std::numeric_limits<std::size_t>::max();

struct share_options {
  std::vector<bool> dont_share;       ///< by buffer id: never recycled (empty: none); an alias follows its root
  std::vector<std::uint32_t> device;  ///< by buffer id: its device (empty: all on one); an alias follows its root
  bool share_graph_inputs = false;    ///< may outputs of vertices without predecessors be recycled?
  std::size_t max_candidates = 64;    ///< free storages dag_share examines per output (not counting exact refusals)
  std::size_t max_free = 4096;        ///< free storages dag_share keeps per device (oldest forgotten)
  /// dag_share knows every path on graphs of at most this many vertices (each
  /// vertex's descendants as bits: V^2/16 bytes); on larger ones it may miss some.
  std::size_t exact_precedence_vertices = 16384;
  /// On larger graphs, it knows every path between ops within a block of this
  /// many consecutive ops of its walk (block^2/16 bytes at a time) and asks
  /// the walk's stack about the others.
  std::size_t exact_block_vertices = 2048;
};

struct sharing_plan {
  buffer_table buffers;
  std::vector<std::size_t> storage_of;        ///< by buffer; no_storage for persistent ones
  std::vector<std::uint64_t> storage_bytes;   ///< by storage: its largest member
  std::uint64_t total_bytes = 0;              ///< sum of storage_bytes
  std::uint64_t unshared_bytes = 0;           ///< sum of the transient buffers: one storage each
  /// dag_share knew every path (one block held the graph: at most
  /// exact_precedence_vertices or exact_block_vertices vertices), so no reuse
  /// was missed for want of one; false for linear_share.
  bool exact_precedence = false;

  [[nodiscard]] std::size_t num_storages() const noexcept { return storage_bytes.size(); }
};

/// Buffers of each storage, by increasing buffer id.
[[nodiscard]] inline csr_rows<buffer_id> storage_members(const sharing_plan& plan) {
  const std::size_t storages = plan.num_storages();
  csr_rows<buffer_id> members;
  members.first.assign(storages + 1, 0);
  for (const std::size_t s : plan.storage_of) {
    if (s < storages) ++members.first[s + 1];
  }
  for (std::size_t s = 0; s < storages; ++s) members.first[s + 1] += members.first[s];
  std::vector<std::size_t> next(members.first.begin(), members.first.end() - 1);
  members.items.resize(members.first.back());
  for (buffer_id b = 0; b < plan.storage_of.size(); ++b) {
    if (plan.storage_of[b] < storages) members.items[next[plan.storage_of[b]]++] = b;
  }
  return members;
}

namespace detail {

/// The device of buffer b under `options`.
inline std::uint32_t device_of(const share_options& options, buffer_id b) {
  return options.device.empty() ? 0 : options.device[b];
}

/// True when buffer b may never be recycled: a graph output, a buffer the
/// caller listed, or (unless options say otherwise) a graph input. The root of
/// b's storage decides for the whole storage.
inline bool is_static(const compact_graph& c, const share_options& options, buffer_id b) {
  b = c.buffers.storage[b];
  if (c.buffers.live_out[b]) return true;
  if (!options.dont_share.empty() && options.dont_share[b]) return true;
  return !options.share_graph_inputs && c.predecessors.size(c.buffers.owner[b]) == 0;
}

/// Places the outputs of vertex i: each transient one goes into the storage
/// offer(b) returns (growing it to fit), or into a new storage when offer has
/// none or b is static; an alias goes where its storage's root is. Counts
/// them in unshared_bytes.
template <class Offer>
void place_outputs(const compact_graph& c, const share_options& options, std::size_t i,
                   sharing_plan& plan, Offer&& offer) {
  const buffer_table& buffers = c.buffers;
  for (buffer_id b = buffers.first[i]; b < buffers.first[i + 1]; ++b) {
    if (buffers.persistent[b]) continue;
    if (!buffers.owns_storage(b)) {
      plan.storage_of[b] = plan.storage_of[buffers.storage[b]];
      continue;
    }
    plan.unshared_bytes = checked_add(plan.unshared_bytes, buffers.bytes[b], i);
    const std::optional<std::size_t> reused =
        is_static(c, options, b) ? std::nullopt : offer(b);
    if (reused) {
      plan.storage_of[b] = *reused;
      plan.storage_bytes[*reused] = std::max(plan.storage_bytes[*reused], buffers.bytes[b]);
    } else {
      plan.storage_of[b] = plan.storage_bytes.size();
      plan.storage_bytes.push_back(buffers.bytes[b]);
    }
  }
}

/// Sets total_bytes, the sum of the storages.
inline void sum_storages(sharing_plan& plan) {
  plan.total_bytes = 0;
  for (const std::uint64_t bytes : plan.storage_bytes) {
    plan.total_bytes = checked_add(plan.total_bytes, bytes, 0);
  }
}

/// Throws std::invalid_argument when a per-buffer option has the wrong length.
inline void check_option_sizes(const share_options& options, std::size_t buffers) {
  if (!options.dont_share.empty() && options.dont_share.size() != buffers) {
    throw std::invalid_argument("share_options::dont_share has " +
                                std::to_string(options.dont_share.size()) + " entries for " +
                                std::to_string(buffers) + " buffers");
  }
  if (!options.device.empty() && options.device.size() != buffers) {
    throw std::invalid_argument("share_options::device has " + std::to_string(options.device.size()) +
                                " entries for " + std::to_string(buffers) + " buffers");
  }
}

}  // namespace detail

}  // namespace memopt
