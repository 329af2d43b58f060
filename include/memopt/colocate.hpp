#pragma once
// Umbrella for colocate/: device names, the device set and kernel registry,
// the colocation union-find, placement, its check and their errors.
#include <memopt/colocate/check.hpp>
#include <memopt/colocate/colocation_graph.hpp>
#include <memopt/colocate/device_name.hpp>
#include <memopt/colocate/devices.hpp>
#include <memopt/colocate/errors.hpp>
#include <memopt/colocate/placement.hpp>
#include <memopt/colocate/placement_traits.hpp>
