#pragma once
// Umbrella for io/ (memopt::io, a component of its own): memopt-graph/1 files,
// order files, MiniMalloc CSV, and a comparison as JSON. Not part of
// memopt.hpp: it needs nlohmann/json and zlib, which the core does not.
#include <memopt/io/compare_json.hpp>
#include <memopt/io/graph_file.hpp>
#include <memopt/io/minimalloc_csv.hpp>
#include <memopt/io/order_file.hpp>
