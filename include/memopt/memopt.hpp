#pragma once
// Everything memopt offers.
#include <memopt/graph.hpp>
#include <memopt/liveness.hpp>
#include <memopt/heap.hpp>
