#pragma once
// Umbrella for heap/: arena offsets for fixed lifetimes, or for a graph and an order.
#include <memopt/heap/algorithm.hpp>
#include <memopt/heap/aliasing.hpp>
#include <memopt/heap/check.hpp>
#include <memopt/heap/choose_best.hpp>
#include <memopt/heap/exact.hpp>
#include <memopt/heap/global_fit.hpp>
#include <memopt/heap/graph.hpp>
#include <memopt/heap/lifetimes.hpp>
#include <memopt/heap/online_fit.hpp>
#include <memopt/heap/problem.hpp>
#include <memopt/heap/registry.hpp>
