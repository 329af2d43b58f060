#pragma once
// The simulation family: grappler's virtual scheduler generalised. A graph,
// a placement and a machine (devices, links) run under a cost model and a
// ready policy; the result gives time, transfers and memory per device (the
// one memory model), and a Chrome trace. Times in microseconds.

#include <memopt/simulate/cost_model.hpp>
#include <memopt/simulate/errors.hpp>
#include <memopt/simulate/machine.hpp>
#include <memopt/simulate/op_traits.hpp>
#include <memopt/simulate/ready_policy.hpp>
#include <memopt/simulate/result.hpp>
#include <memopt/simulate/run.hpp>
#include <memopt/simulate/tasks.hpp>
#include <memopt/simulate/trace.hpp>
