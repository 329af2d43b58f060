#pragma once
// Umbrella for schedule/: orders of the ops that keep the peak low.
#include <memopt/schedule/best_of.hpp>
#include <memopt/schedule/dfs.hpp>
#include <memopt/schedule/exact.hpp>
#include <memopt/schedule/inductor.hpp>
#include <memopt/schedule/list.hpp>
#include <memopt/schedule/result.hpp>
#include <memopt/schedule/registry.hpp>
