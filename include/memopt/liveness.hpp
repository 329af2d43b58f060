#pragma once
// Umbrella for liveness/: the memory model.
#include <memopt/liveness/liveness.hpp>
