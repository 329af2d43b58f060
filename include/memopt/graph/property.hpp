#pragma once
// from_property_map(pm): a Boost.Graph property map as a callable, so that
// per-call data (a vertex index, a size override) is passed the same way
// whether it lives in the graph or in the caller's code.

#include <boost/property_map/property_map.hpp>

#include <utility>

namespace memopt {

/// Wraps `pm` so that `f(key)` is `get(pm, key)`.
template <class PropertyMap>
[[nodiscard]] auto from_property_map(PropertyMap pm) {
  return [pm = std::move(pm)](const auto& key) { return get(pm, key); };
}

}  // namespace memopt
