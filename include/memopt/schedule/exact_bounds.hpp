#pragma once
// memory_every_order_sees: for each vertex of a segment, the bytes live
// during its step whatever the order, from ancestry alone (cut_bound.hpp has
// the sharper and costlier bound): the exact search's admissible bound (the
// most any remaining vertex must see) and, over a whole graph, a lower bound
// on every order's peak (static_bound).

#include <memopt/schedule/segments.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <vector>

namespace memopt::detail {

/// For each vertex of the segment, the bytes live during its step in every
/// order: its outputs (less what they may reuse in place), each buffer made by one of its ancestors (or before
/// the segment) and still needed by it or one of its descendants, and the
/// smaller side of each step unordered with it (below). Ancestry by bitsets,
/// O(k^2 / 64 + buffers * k / 64) plus at most 2^24 pairs of steps for the
/// last part; past 8192 vertices, only the vertex's own reads and outputs.
inline std::vector<std::uint64_t> memory_every_order_sees(const segment& seg) {
  const std::size_t k = seg.size();
  std::vector<std::uint64_t> sees(k, seg.base);
  for (std::size_t u = 0; u < k; ++u) sees[u] += seg.least_step_bytes(u);  // its reuses may save the rest
  constexpr std::size_t max_vertices = 8192;
  if (k > max_vertices) {
    std::vector<std::size_t> counted(seg.bytes.size(), k);
    for (std::size_t u = 0; u < k; ++u) {
      for (const auto* buffers : {&seg.reads[u], &seg.materialises[u]}) {
        for (const auto x : *buffers) {
          if (counted[x] != u) sees[u] += seg.bytes[x];
          counted[x] = u;
        }
      }
    }
    return sees;
  }
  const std::size_t words = (k + 63) / 64;
  // up[u]: u and its ancestors; down[u]: u and its descendants (local indices
  // follow a topological order).
  std::vector<std::uint64_t> up(k * words, 0), down(k * words, 0);
  const auto row = [&](std::vector<std::uint64_t>& bits, std::size_t u) { return bits.data() + u * words; };
  for (std::size_t u = 0; u < k; ++u) {
    row(up, u)[u / 64] |= std::uint64_t{1} << (u % 64);
    for (const auto p : seg.preds[u]) {
      for (std::size_t w = 0; w < words; ++w) row(up, u)[w] |= row(up, p)[w];
    }
  }
  for (std::size_t u = k; u-- > 0;) {
    row(down, u)[u / 64] |= std::uint64_t{1} << (u % 64);
    for (const auto p : seg.preds[u]) {
      for (std::size_t w = 0; w < words; ++w) row(down, p)[w] |= row(down, u)[w];
    }
  }
  std::vector<std::size_t> maker(seg.bytes.size(), k);  // k: made before the segment
  for (std::size_t u = 0; u < k; ++u) {
    for (const auto x : seg.produces[u]) maker[x] = u;
  }
  std::vector<std::uint64_t> made(words), needed(words);
  for (std::size_t x = 0; x < seg.bytes.size(); ++x) {
    // Steps by which x exists in every order, and steps after which it is still needed.
    if (!seg.triggers[x].empty()) {
      std::fill(made.begin(), made.end(), 0);  // a trigger is u or an ancestor of u
      for (const auto t : seg.triggers[x]) {
        for (std::size_t w = 0; w < words; ++w) made[w] |= row(down, t)[w];
      }
    } else if (maker[x] < k) {
      std::copy_n(row(down, maker[x]), words, made.begin());
    } else {
      std::fill(made.begin(), made.end(), ~std::uint64_t{0});
    }
    if (seg.keep[x]) {
      std::fill(needed.begin(), needed.end(), ~std::uint64_t{0});
    } else {
      std::fill(needed.begin(), needed.end(), 0);
      for (const auto r : seg.readers[x]) {
        for (std::size_t w = 0; w < words; ++w) needed[w] |= row(up, r)[w];
      }
    }
    for (std::size_t u = 0; u < k; ++u) {
      if (u == maker[x]) continue;  // counted in its step bytes
      if ((made[u / 64] >> (u % 64) & 1U) && (needed[u / 64] >> (u % 64) & 1U)) sees[u] += seg.bytes[x];
    }
  }
  // A vertex c unordered with u that reads buffers made before u but needed
  // by nothing after it, and makes buffers needed after u: at u's step either
  // c has not run (its inputs are live) or it has (its outputs are), so the
  // smaller side is live too (autograd's `clone` of a tensor an in-place op
  // then overwrites). Each buffer counts for one such c at most. The vertices
  // that see most come first, within max_pairs pairs (u, c): all of them up
  // to 4096 vertices.
  const auto has = [&](const std::uint64_t* bits, std::size_t v) { return (bits[v / 64] >> (v % 64) & 1U) != 0; };
  const auto needed_after = [&](std::size_t x, std::size_t u) {
    return seg.keep[x] != 0 || std::ranges::any_of(seg.readers[x], [&](std::size_t r) { return has(row(down, u), r); });
  };
  constexpr std::size_t max_pairs = std::size_t{1} << 24;
  std::vector<std::size_t> by_sees(k);
  std::iota(by_sees.begin(), by_sees.end(), std::size_t{0});
  std::ranges::stable_sort(by_sees, [&](std::size_t a, std::size_t b) { return sees[a] > sees[b]; });
  std::vector<std::size_t> counted_for(seg.bytes.size(), k);  // the u a buffer counts for already
  std::vector<std::size_t> inputs;
  for (std::size_t n = 0; n < k && n * k < max_pairs; ++n) {
    const std::size_t u = by_sees[n];
    for (std::size_t c = 0; c < k; ++c) {
      if (has(row(up, u), c) || has(row(down, u), c)) continue;
      inputs.clear();
      for (const auto x : seg.reads[c]) {
        // By u's step in every order (u's own outputs are in its step bytes).
        const bool made_before =
            seg.triggers[x].empty()
                ? maker[x] != u && (maker[x] == k || has(row(up, u), maker[x]))
                : std::ranges::any_of(seg.triggers[x], [&](std::size_t t) { return has(row(up, u), t); });
        if (made_before && counted_for[x] != u && std::ranges::find(inputs, x) == inputs.end() && !needed_after(x, u)) {
          inputs.push_back(x);
        }
      }
      if (inputs.empty()) continue;
      std::uint64_t outputs = 0;
      for (const auto y : seg.produces[c]) outputs += needed_after(y, u) ? seg.bytes[y] : 0;
      if (outputs == 0) continue;
      std::uint64_t input_bytes = 0;
      for (const auto x : inputs) {
        input_bytes += seg.bytes[x];
        counted_for[x] = u;
      }
      sees[u] += std::min(input_bytes, outputs);
    }
  }
  return sees;
}

/// A lower bound on the segment's peak without search: the most memory any
/// of its steps sees in every order, or what is live before the first.
inline std::uint64_t static_bound(const segment& seg) {
  const auto sees = memory_every_order_sees(seg);
  return std::max(seg.start_bytes, sees.empty() ? 0 : std::ranges::max(sees));
}

}  // namespace memopt::detail
