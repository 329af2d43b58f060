#pragma once
// Everything memopt offers.
#include <memopt/graph.hpp>
#include <memopt/colocate.hpp>
#include <memopt/liveness.hpp>
#include <memopt/schedule.hpp>
#include <memopt/share.hpp>
#include <memopt/heap.hpp>
#include <memopt/simulate.hpp>
#include <memopt/rewrite.hpp>
#include <memopt/remat.hpp>
#include <memopt/compare.hpp>
