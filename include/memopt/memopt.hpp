#pragma once
// Everything memopt offers.
#include <memopt/graph.hpp>
#include <memopt/colocate.hpp>
#include <memopt/liveness.hpp>
