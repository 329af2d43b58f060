#pragma once
// from_property_map(pm): a Boost.Graph property map as a callable, so that
// per-call data (a vertex index, a size override) is passed the same way
// whether it lives in the graph or in the caller's code.

#include <boost/property_map/property_map.hpp>

#include <concepts>
#include <utility>

namespace memopt {

/// A property map called as a function: f(key) is get(map, key). Callable
/// only with the map's own key type, so concepts can tell it apart from other
/// callables.
template <class PropertyMap>
struct property_map_function {
  PropertyMap map;

  template <std::convertible_to<typename boost::property_traits<PropertyMap>::key_type> Key>
  decltype(auto) operator()(const Key& key) const {
    return get(map, key);
  }
};

/// Wraps `pm` so that `f(key)` is `get(pm, key)`.
template <class PropertyMap>
[[nodiscard]] property_map_function<PropertyMap> from_property_map(PropertyMap pm) {
  return {std::move(pm)};
}

}  // namespace memopt
