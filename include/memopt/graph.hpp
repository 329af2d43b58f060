#pragma once
// Umbrella for graph/: concepts, tensor traits, buffers, orders and cycles.
#include <memopt/error.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/concepts.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/property.hpp>
#include <memopt/graph/storage.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/graph/topology.hpp>
