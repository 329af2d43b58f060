#pragma once
// Umbrella for share/: buffer sharing plans (linear free list, DAG recycling)
// and their validator.
#include <memopt/share/check.hpp>
#include <memopt/share/dag.hpp>
#include <memopt/share/linear.hpp>
#include <memopt/share/plan.hpp>
#include <memopt/share/policy.hpp>
#include <memopt/share/registry.hpp>
