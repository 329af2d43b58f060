#pragma once
// The remat family: rematerialisation under a byte budget. The planners
// (rematerialize, rematerialize_best; exactly on chains and chains of
// blocks) choose what to drop and recompute and emit rewrite plans that
// rewrite::check_plan validates and rewrite::apply builds; the floors bound
// the peak and the extra flops any plan can reach. Namespace memopt::remat.

#include <memopt/remat/best.hpp>
#include <memopt/remat/block_chain.hpp>
#include <memopt/remat/block_programme.hpp>
#include <memopt/remat/chain.hpp>
#include <memopt/remat/cost_floor.hpp>
#include <memopt/remat/floor.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/rematerialize.hpp>
#include <memopt/remat/runs.hpp>
