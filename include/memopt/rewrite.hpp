#pragma once
// The rewrite family: grappler's memory optimizer generalised. Every pass
// returns a plan (a value); check_plan validates it, apply builds the new
// graph without touching the old, evaluate measures it with the schedule
// family, prune_plan keeps only the parts of a plan that lower the peak.

#include <memopt/rewrite/accumulate.hpp>
#include <memopt/rewrite/apply.hpp>
#include <memopt/rewrite/check.hpp>
#include <memopt/rewrite/evaluate.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>
#include <memopt/rewrite/plan.hpp>
#include <memopt/rewrite/prune.hpp>
#include <memopt/rewrite/recompute.hpp>
#include <memopt/rewrite/relax.hpp>
#include <memopt/rewrite/swap.hpp>
